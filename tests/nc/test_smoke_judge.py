"""`baseline:smoke-judge`: the no-model NC-Bench judge that lets `convbench run nc` go end to end offline
(README, Set-up: the smoke test). Its rule (Silence / Repeat / Other) is in engine/backends/baseline.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.nc import judge_messages
from convbench_datasets.engine.backends import backend_from_spec
from convbench_datasets.nc.smoke_judge import smoke_judge_label
from convbench_datasets.engine.backends.baseline import previous_assistant_turn

ROW = {"messages": [{"role": "user", "content": "Which fund should I pick?"},
                    {"role": "assistant", "content": "Index funds are passively managed."},
                    {"role": "user", "content": "Sorry, what?"}],
       "label_set": ["Repeat", "Paraphrase", "Other", "Silence"], "request_details": "", "set": "basic",
       "task": "repeat request"}


@pytest.mark.parametrize(("response", "label"), [
    ("", "Silence"),                                        # rule 1: an empty turn
    ("index funds are passively managed", "Repeat"),        # rule 2: an earlier AGENT line again, case and punctuation aside
    ("They follow an index instead of a manager.", "Other"),  # rule 3: anything else
])
def test_labels_convbench_judge_prompts(response: str, label: str) -> None:
    assert smoke_judge_label(judge_messages(ROW, response, template="convbench")) == label


def test_without_a_numbered_transcript_it_answers_other() -> None:
    assert smoke_judge_label([{"role": "user", "content": "no transcript here"}]) == "Other"
    assert backend_from_spec("baseline:smoke-judge").spec == "baseline:smoke-judge"


def test_smoke_run_goes_end_to_end_offline(nc_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "smoke"
    code = main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:smoke-judge", "--dataset", str(nc_built),
                 "--out", str(out), "--cache", str(tmp_path / "cache.sqlite"), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "results.json").read_text())
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert results["n"] == len(records) == 720 and results["unparsed"] == 0  # NC-Bench's 720 rows, all labelled
    # The repeat baseline says the previous AGENT turn again: the smoke judge calls that Repeat (Silence when
    # there is none), so on Repeat Request rows the judge sanity check is 100%.
    assert results["judge_sanity"]["labelled_repeat"] == 100.0
    import datasets

    from convbench_datasets.class_labels import named_rows  # records carry the set's name; datasets its id

    rows = {(r["set"], r["id"]): r for r in named_rows(datasets.load_dataset(str(nc_built), "all", split="test"))}
    for record in records:
        said = previous_assistant_turn(rows[(record["set"], record["id"])]["messages"]).split("\n")[0]
        assert record["judge_output"] == ("Repeat" if said.strip() else "Silence"), record
