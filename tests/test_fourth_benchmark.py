"""A fourth benchmark is one new package and one registration line, nothing edited in convbench (#25).

The toy benchmark below is written into a temporary folder as a package of its own (``toybench``:
builder, card template, run object) with the entry point an installed package would carry
(``convbench.benchmarks``: ``toy = toybench``, in a ``.dist-info`` folder, which is what pip writes).
``convbench`` then builds, runs, re-scores and reports it in a fresh process, by name.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BUILDER = '''
from pathlib import Path

from convbench_datasets.hub import BuiltConfig, BuiltDataset
from convbench_datasets.registry import BenchmarkInfo

WORDS = ["w0", "w1", "w2", "w3", "w4"]


def info():
    return BenchmarkInfo(name="toy", title="Toy: say the word again", license="Apache-2.0",
                         configs={"words": {"test": len(WORDS)}}, needs="nothing")


def build(sources_dir=None, progress=True):
    import datasets

    features = datasets.Features({"id": datasets.Value("int64"), "word": datasets.Value("string"),
                                  "shown": datasets.Value("string")})
    # the assistant turn a model sees shows the word on even rows only
    rows = [{"id": i, "word": w, "shown": w if i % 2 == 0 else "other"} for i, w in enumerate(WORDS)]
    return BuiltDataset(name="toy", features=features, configs=[BuiltConfig("words", {"test": rows})],
                        card_template=Path(__file__).parent / "card.md")
'''

CARD = """---
pretty_name: Toy
license: apache-2.0
---
# Toy

Five words; a model is right when it says the row's word.
"""

RUN = '''
from dataclasses import dataclass

from convbench_datasets.benchmark import BenchmarkBase, Executed
from convbench_datasets.built_rows import dataset_rows
from convbench_datasets.engine.backends import GenerationParams


def accuracy(records):
    return 100.0 * sum(r["answer"] == r["word"] for r in records) / len(records)


@dataclass
class ToySettings:
    """The toy's settings: it has none."""


@dataclass
class ToyPlan(ToySettings):
    dataset: object = None

    def rows(self):
        return dataset_rows("toy", "words", "test", dataset=self.dataset)

    def execute(self, session, rows):
        prompts = [[{"role": "user", "content": "a word?"}, {"role": "assistant", "content": r["shown"]},
                    {"role": "user", "content": "again?"}] for r in rows]
        answered = session.ask(session.generator, prompts, GenerationParams(8), desc="toy")
        records = [{"id": r["id"], "word": r["word"], "answer": g.text, "error": g.error}
                   for r, g in zip(rows, answered.generations)]
        return Executed(records, {"model_calls": answered.model_calls})

    def signature(self, session):
        return {"config": "words"}

    def results(self, records, signature):
        return {"n": len(records), "accuracy": accuracy(records)}


class Toy(BenchmarkBase):
    name, title, settings, plan_class = "toy", "Toy", ToySettings, ToyPlan

    def rescore(self, records, signature, previous, options):
        return {"n": len(records), "accuracy": accuracy(records)}

    def summary(self, results, rescored=False):
        return [f"toy accuracy {results['accuracy']:.1f}%"]


BENCHMARK = Toy()
'''


def _toy_site(root: Path) -> Path:
    """A folder for sys.path holding the toybench package and the metadata of its (pretend) installation."""
    package = root / "toybench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A toy benchmark of its own package."""\n', encoding="utf-8")
    (package / "builder.py").write_text(BUILDER, encoding="utf-8")
    (package / "run.py").write_text(RUN, encoding="utf-8")
    (package / "card.md").write_text(CARD, encoding="utf-8")
    info = root / "toybench-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toybench\nVersion: 0.1\n", encoding="utf-8")
    # the registration: the one line a benchmark of its own package writes in its pyproject.toml
    (info / "entry_points.txt").write_text("[convbench.benchmarks]\ntoy = toybench\n", encoding="utf-8")
    return root


def _convbench(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "convbench_datasets.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_a_toy_benchmark_of_its_own_package_builds_runs_scores_and_reports(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    site = _toy_site(tmp_path / "site")
    listed = _convbench(site, tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    assert "toy" in listed.stdout
    built = _convbench(site, tmp_path, "build", "toy", "--out", "hub/toy")
    assert built.returncode == 0, built.stderr
    ran = _convbench(site, tmp_path, "run", "toy", "--model", "baseline:repeat", "--dataset", "hub/toy",
                     "--out", "runs/toy", "--cache", "c.sqlite", "--no-progress")
    assert ran.returncode == 0, ran.stderr
    # baseline:repeat says the shown turn again: the word on rows 0, 2 and 4, "other" on 1 and 3: 3 of 5 = 60%
    assert "toy accuracy 60.0%" in ran.stdout
    results = json.loads((tmp_path / "runs/toy/results.json").read_text(encoding="utf-8"))
    assert results["accuracy"] == 60.0 and results["signature"]["benchmark"] == "toy"
    records = [json.loads(line) for line in (tmp_path / "runs/toy/records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["answer"] for r in records] == ["w0", "other", "w2", "other", "w4"]
    scored = _convbench(site, tmp_path, "score", "runs/toy")
    assert scored.returncode == 0, scored.stderr
    assert "toy accuracy 60.0%" in scored.stdout
    reported = _convbench(site, tmp_path, "report", "runs/toy", "--out", "reports/toy")
    assert reported.returncode == 0, reported.stderr
    page = (tmp_path / "reports/toy/report.html").read_text(encoding="utf-8")
    assert "<h2>toy</h2>" in page
    with open(tmp_path / "reports/toy/tables/toy_results.csv", encoding="utf-8", newline="") as table:
        rows = {row["result"]: row["baseline:repeat"] for row in csv.DictReader(table)}
    assert float(rows["accuracy"]) == 60.0 and float(rows["n"]) == 5


def test_a_registered_name_that_exists_already_is_refused(tmp_path: Path) -> None:
    site = _toy_site(tmp_path / "site")
    (site / "toybench-0.1.dist-info" / "entry_points.txt").write_text("[convbench.benchmarks]\nnc = toybench\n",
                                                                     encoding="utf-8")
    listed = _convbench(site, tmp_path, "list")
    assert listed.returncode != 0
    assert "a benchmark named 'nc' exists already (convbench_datasets.nc)" in listed.stderr


def test_a_plugin_that_cannot_be_loaded_is_left_out_with_one_warning(tmp_path: Path) -> None:
    # reported: one broken entry point (a package whose import raises) made `convbench list` and `report` fail
    # for the built-in benchmarks too, with a traceback
    site = _toy_site(tmp_path / "site")
    for module in ("builder.py", "run.py"):
        (site / "toybench" / module).write_text("raise RuntimeError('toybench is broken')\n", encoding="utf-8")
    listed = _convbench(site, tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split(":")[0] for line in listed.stdout.splitlines() if not line.startswith(" ")] == ["nc", "nico",
                                                                                                     "cocoeval"]
    said = [line for line in listed.stderr.splitlines() if "toybench is broken" in line]
    assert len(said) == 1 and "benchmark 'toy' (entry point of group 'convbench.benchmarks', package 'toybench') " \
        "cannot be loaded: RuntimeError: toybench is broken; left out" in said[0]
    assert "Traceback" not in listed.stderr
    # a command that reads every benchmark's flags (score) still works for the others
    helped = _convbench(site, tmp_path, "score", "--help")
    assert helped.returncode == 0 and "--rules" in helped.stdout
    # naming the broken one is its error, one line
    ran = _convbench(site, tmp_path, "run", "toy", "--model", "baseline:repeat", "--out", "runs/toy")
    assert ran.returncode != 0 and "Traceback" not in ran.stderr
    assert ran.stderr.strip().splitlines()[-1].endswith("cannot be loaded: RuntimeError: toybench is broken")
