"""Self-contained metric modules: exported (as `convbench publish metric` uploads them), they load with
evaluate in a process where convbench_datasets cannot be imported and give the package's numbers."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.standalone import _check_requirements, metric_names

# The expected numbers are the package's own scoring functions on the same inputs (computed below).
CASES = {
    "ncbench_action": {
        "predictions": ["Repeat", "Paraphrase", "PreClosing, Silence", "no idea"],
        "references": [["Repeat", "Partial Repeat"], ["Repeat", "Partial Repeat"], ["Silence"], ["Answer"]],
        "patterns": ["Repeat Request", "Repeat Request", "Closing", "Inquiry"],
        "sets": ["basic", "basic", "basic", "rag"],
    },
    "nico_generation": {
        "predictions": ["我今天很开心", "好啊，我同意！", "你好"],
        "references": ["我今天很开心", "行，我同意。", "再见了朋友"],
        "interaction_types": ["a", "b", "b"],
    },
    "unnatural_sentence_prf": {
        "predictions": ["无", "我对于此事表示赞同\n今天天气很好", "没有", "。"],  # "。": blank, no answer
        "references": [[], ["我对于此事表示赞同。"], ["这是一个句子。"], []],
        "match": "fuzzy",
        "threshold": 0.8,
    },
    "behavior_frequency": {
        "predictions": [["Repetition"], [], ["Off Topic", "Off Topic"]],
        "references": [["Repetition", "Off Topic"], ["Off Topic"], []],
        "behaviours": ["Repetition", "Off Topic"],
        "n_bootstrap": 50,
        "seed": 3,
    },
}

# Every exported metric in one process (importing evaluate imports transformers and torch, ~10 s a
# process): each is loaded from its own folder, and its result or error is kept by name.
LOAD = """
import json, sys, traceback
try:
    import convbench_datasets
except ImportError:
    pass
else:
    sys.exit("convbench_datasets is importable: the test would prove nothing")
import evaluate
out = {}
for folder, kwargs in json.loads(sys.argv[1]):
    try:
        out[folder] = {"scores": evaluate.load(folder).compute(**kwargs)}
    except Exception:
        out[folder] = {"error": traceback.format_exc()}
print(json.dumps(out))
"""


def _package_scores(name: str, kwargs: dict) -> dict:
    from convbench_datasets.cocoeval.behavior_frequency import score_frequencies
    from convbench_datasets.nc.ncbench_action import score_actions
    from convbench_datasets.nico.nico_generation import score_generation
    from convbench_datasets.nico.unnatural_prf import score_unnatural

    score = {"ncbench_action": score_actions, "nico_generation": score_generation,
             "unnatural_sentence_prf": score_unnatural, "behavior_frequency": score_frequencies}[name]
    return json.loads(json.dumps(score(**kwargs)))


def test_every_metric_has_a_case() -> None:
    assert sorted(CASES) == metric_names()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("standalone")
    done = subprocess.run([sys.executable, "-m", "convbench_datasets.cli", "metrics", "export", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def loaded_without_convbench(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Each exported metric loaded by evaluate from its folder and computed on its case, in a process where
    convbench_datasets cannot be imported: {name: {"scores": ...} or {"error": traceback}}."""
    tmp = tmp_path_factory.mktemp("no-convbench")
    # A stub first on the path makes `import convbench_datasets` fail, as on a machine without convbench.
    stub = tmp / "stub" / "convbench_datasets"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('convbench is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": str(stub.parent), "HF_HOME": str(tmp / "hf"), "HF_EVALUATE_OFFLINE": "1"}
    env.pop("HF_MODULES_CACHE", None)
    cases = [(str(exported / name), kwargs) for name, kwargs in sorted(CASES.items())]
    done = subprocess.run([sys.executable, "-c", LOAD, json.dumps(cases)], env=env, cwd=tmp, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {Path(folder).name: result for folder, result in json.loads(done.stdout).items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_exported_metric_runs_without_convbench(name: str, exported: Path, loaded_without_convbench: dict) -> None:
    folder = exported / name
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{name}.py", "_convbench_scoring.py", "README.md", "requirements.txt", ".convbench-build"])
    module = (folder / f"{name}.py").read_text()
    assert not re.search(r"^\s*(from|import)\s+convbench_datasets", module, re.M)
    assert re.search(r"^from \._convbench_scoring import ", module, re.M)  # one line: evaluate's loader copies that file
    result = loaded_without_convbench[name]
    assert "error" not in result, result.get("error")
    assert result["scores"] == _package_scores(name, CASES[name])


def test_requirements_must_cover_every_third_party_import(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("evaluate\n# optional: bert-score  (for bertscore=True)\n")
    _check_requirements(requirements, {"evaluate": "m.py:1", "bert_score": "s.py:9"})  # optional ones count
    with pytest.raises(ConvbenchError, match=r"does not list numpy, which s\.py:3 imports"):
        _check_requirements(requirements, {"numpy": "s.py:3"})
    requirements.write_text("convbench\n")  # what the Spaces said before: no package index serves it
    with pytest.raises(ConvbenchError, match="convbench is not on a package index"):
        _check_requirements(requirements, {})


def _export(out: Path, *names: str) -> subprocess.CompletedProcess:
    """`convbench metrics export` in this process (the ``exported`` fixture runs it as a command)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as printed:
        code = main(["metrics", "export", *names, "--out", str(out)])
    return subprocess.CompletedProcess(["convbench", "metrics", "export", *names], code, printed.getvalue(), err.getvalue())


def test_export_never_replaces_a_users_file(tmp_path: Path) -> None:
    # The project's first rule (issue #10): a folder that is not an earlier export is refused, naming it.
    target = tmp_path / "ncbench_action"
    target.mkdir()
    (target / "README.md").write_text("my notes\n")
    done = _export(tmp_path, "ncbench_action")
    assert done.returncode == 1
    assert f"output folder {target} is not empty and is not a convbench export" in done.stderr
    assert sorted(p.name for p in target.iterdir()) == ["README.md"]
    assert (target / "README.md").read_text() == "my notes\n"  # before the fix: the metric card
    assert [p.name for p in tmp_path.iterdir()] == ["ncbench_action"]  # no staging folder left behind


def test_reexport_replaces_an_earlier_export_and_keeps_hidden_entries(tmp_path: Path) -> None:
    assert _export(tmp_path, "ncbench_action").returncode == 0
    target = tmp_path / "ncbench_action"
    first = {p.name: p.read_bytes() for p in target.iterdir()}
    (target / ".git").mkdir()  # a clone of the Space stays a clone
    (target / "requirements.txt").write_text("edited\n")  # a file the export wrote: ours to replace
    again = _export(tmp_path, "ncbench_action")
    assert again.returncode == 0, again.stderr
    assert {p.name: p.read_bytes() for p in target.iterdir() if p.name != ".git"} == first
    assert (target / ".git").is_dir()
    (target / "notes.txt").write_text("mine\n")  # a file no export wrote: refused again
    refused = _export(tmp_path, "ncbench_action")
    assert refused.returncode == 1 and f"output folder {target} holds notes.txt" in refused.stderr
    assert (target / "notes.txt").read_text() == "mine\n"
