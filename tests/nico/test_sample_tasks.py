"""The bundled NICO sample lets every task run as the README shows, and a split without examples
is a one-line error that names the task and split and says which --split to use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.nico.builder import SAMPLE
from convbench_datasets.nico.tasks import TASKS

# Counted by hand from nico/sample/dialogues.jsonl and its seeded split (5% of 20 each for test and
# validation): test is sample-11, validation sample-19, each with one unnatural sentence; the 18 train
# dialogues hold 7 unnatural sentences (01, 05, 07, 12, 14, 18, 20). One example per dialogue for the
# other tasks, one per unnatural sentence for rewrite_unnatural.
EXPECTED = {
    "dialogs": {"train": 18, "validation": 1, "test": 1},
    "open_domain": {"train": 18, "validation": 1, "test": 1},
    "dialog_completion": {"train": 18, "validation": 1, "test": 1},
    "identify_unnatural": {"train": 18, "validation": 1, "test": 1},
    "rewrite_unnatural": {"train": 7, "validation": 1, "test": 1},
}


def test_every_config_has_examples_in_every_split(nico_built: Path) -> None:
    import datasets

    for config, expected in EXPECTED.items():
        loaded = datasets.load_dataset(str(nico_built), config)
        assert {split: ds.num_rows for split, ds in loaded.items()} == expected, config


@pytest.mark.parametrize("shots", ["0", "3"])
@pytest.mark.parametrize("task", TASKS)
def test_every_task_runs_on_the_default_split(task: str, shots: str, nico_built: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # the README's `convbench run nico --task T [--shots 3] --dataset hub/nico`, split test by default
    argv = ["run", "nico", "--task", task, "--shots", shots, "--model", "baseline:silence", "--dataset", str(nico_built),
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]
    assert main(argv) == 0, capsys.readouterr().err
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert results["n"] == 1 and results["signature"]["split"] == "test"


def test_rewrite_runs_without_a_dataset_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the command of the issue, with the sample built into the (test-private) convbench cache
    assert main(["run", "nico", "--task", "rewrite_unnatural", "--model", "baseline:silence", "--out", str(tmp_path / "run"),
                 "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))["n"] == 1


def _sample_lines() -> dict[str, str]:
    return {json.loads(line)["id"]: line for line in SAMPLE.read_text(encoding="utf-8").splitlines()}


def _build(tmp_path: Path, files: dict[str, list[str]]) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    lines = _sample_lines()
    for name, ids in files.items():
        (data / f"{name}.jsonl").write_text("".join(lines[i] + "\n" for i in ids), encoding="utf-8")
    assert main(["build", "nico", "--data-dir", str(data), "--out", str(tmp_path / "hub"), "--no-progress"]) == 0
    return tmp_path / "hub"


def test_a_split_without_examples_names_it_and_suggests_train(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # sample-01 has an unnatural sentence, sample-02 none: with sample-02 alone in test, rewrite_unnatural
    # has train examples only, and its test split is not published
    hub = _build(tmp_path, {"train": ["sample-01"], "test": ["sample-02"]})
    capsys.readouterr()
    assert main(["run", "nico", "--task", "rewrite_unnatural", "--model", "baseline:silence", "--dataset", str(hub),
                 "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (  # above it: datasets' own progress bars
        f"convbench: error: NICO rewrite_unnatural: no examples in split 'test' of the build at {hub} "
        "(splits with examples: train); try --split train")


def test_shots_without_train_examples_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the other way round: rewrite_unnatural has a test example but no train one to demonstrate with
    hub = _build(tmp_path, {"train": ["sample-02"], "test": ["sample-01"]})
    capsys.readouterr()
    assert main(["run", "nico", "--task", "rewrite_unnatural", "--shots", "3", "--model", "baseline:silence",
                 "--dataset", str(hub), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
                 "--no-progress"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"convbench: error: NICO rewrite_unnatural: 3-shot prompts take their demonstrations from the train split, "
        f"which has no examples in the build at {hub}; use --shots 0")
