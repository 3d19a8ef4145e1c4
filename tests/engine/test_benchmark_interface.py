"""engine/ is benchmark-agnostic; each benchmark plugs in through the Benchmark interface (issue #14)."""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import fields
from pathlib import Path

import pytest

import convbench_datasets
from convbench_datasets.benchmark import Benchmark, Plan
from convbench_datasets.runs import api
from convbench_datasets.settings import Option
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.registry import RUNS, get_benchmark, run_benchmarks

RUNNER = Path(convbench_datasets.__file__).parent / "engine"
PACKAGES = {name: module.rsplit(".", 1)[0] for name, module in RUNS.items()}  # nc -> convbench_datasets.nc


def _imports(path: Path, package: str | None = None) -> list[str]:
    """Absolute module names a file imports (relative imports resolved from its package, by default the
    package the file lies in)."""
    if package is None:
        package = "convbench_datasets." + ".".join(path.relative_to(RUNNER.parent).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            names.append(".".join([*base, node.module or ""]).strip("."))
    return names


@pytest.mark.parametrize("path", sorted(RUNNER.rglob("*.py")), ids=lambda p: str(p.relative_to(RUNNER)))
def test_runner_imports_no_benchmark_package(path: Path) -> None:
    for name in _imports(path):
        assert not any(name == package or name.startswith(package + ".") for package in PACKAGES.values()), (path, name)


@pytest.mark.parametrize("path", sorted(RUNNER.rglob("*.py")), ids=lambda p: str(p.relative_to(RUNNER)))
def test_runner_names_no_benchmark(path: Path) -> None:
    words = [*RUNS, *(b.title for b in run_benchmarks()), "NC-Bench", "NICO", "CoCoEval"]
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)
    found = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not found, found


def test_the_import_check_sees_relative_imports(tmp_path: Path) -> None:
    # the check above would pass vacuously if _imports missed `from ...nc.run import x`
    probe = tmp_path / "probe.py"  # read as if it lay in engine/backends/
    probe.write_text("from ...nc.run import run_nc\nfrom .. import stage\n", encoding="utf-8")
    assert _imports(probe, "convbench_datasets.engine.backends") == ["convbench_datasets.nc.run", "convbench_datasets.engine"]


def _sources(name: str, request: pytest.FixtureRequest) -> Path | None:
    """NC-Bench's plan reads the released judge prompt (an upstream file): the mirror, else a download, else
    the test skips (conftest's nc_sources); the other plans read no upstream file."""
    return request.getfixturevalue("nc_sources") if name == "nc" else None


@pytest.mark.parametrize("name", list(RUNS))
def test_each_benchmark_implements_the_interface(name: str, request: pytest.FixtureRequest) -> None:
    bench = get_benchmark(name)
    assert isinstance(bench, Benchmark) and bench.name == name
    assert all(isinstance(option, Option) for option in bench.options)
    plan = bench.plan({"task": "open_domain"} if name == "nico" else {}, dataset=None, sources=_sources(name, request))
    assert isinstance(plan, Plan)


@pytest.mark.parametrize("name", list(RUNS))
def test_run_function_defaults_are_the_plans_and_the_flags(name: str, request: pytest.FixtureRequest) -> None:
    # the run function's keyword defaults, its plan's field defaults and its flags' defaults are one fact
    bench = get_benchmark(name)
    function = getattr(api, f"run_{name}")
    parameters = inspect.signature(function).parameters
    plan_type = type(bench.plan({"task": "open_domain"} if name == "nico" else {}, dataset=None,
                                sources=_sources(name, request)))
    for field in fields(plan_type):
        if field.init and field.name in parameters and field.name not in ("dataset", "sources"):
            default = parameters[field.name].default
            assert field.default == (None if default is inspect.Parameter.empty else default), field.name
    for option in bench.options:  # each flag sets a keyword of the run function, defaulting alike
        default = parameters[option.dest].default
        assert option.default == (None if default is inspect.Parameter.empty else default), option.flag


def test_unknown_settings_and_judge_counts_are_refused(tmp_path: Path) -> None:
    from convbench_datasets.runs.pipeline import run

    with pytest.raises(ConvbenchError, match=r"NICO takes no setting 'config' \(its settings: task, "):
        run("nico", model="baseline:silence", out=tmp_path / "a", task="open_domain", config="basic")
    with pytest.raises(ConvbenchError, match="a NICO run takes no judge; got 1"):
        run("nico", model="baseline:silence", judge="baseline:silence", out=tmp_path / "b", task="open_domain")
    with pytest.raises(ConvbenchError, match="a CoCoEvalBench run takes one judge; got 2"):
        run("cocoeval", model="baseline:silence", judge=["baseline:silence"] * 2, out=tmp_path / "c")
    with pytest.raises(ConvbenchError, match="a NC-Bench run needs a judge"):
        run("nc", model="baseline:silence", out=tmp_path / "d")
    assert not any((tmp_path / d).exists() for d in "abcd")  # refused before the run folder is made


def test_cli_refuses_another_benchmarks_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from convbench_datasets.cli import main

    assert main(["run", "nico", "--task", "open_domain", "--model", "baseline:silence", "--out", "x",
                 "--rules", "paper", "--turns-per-call", "5"]) == 1
    assert "--rules and --turns-per-call apply to cocoeval, nc only, not nico" in capsys.readouterr().err
    assert main(["run", "nico", "--task", "open_domain", "--model", "baseline:silence", "--out", "x",
                 "--judge", "baseline:silence"]) == 1
    assert "convbench run nico takes no --judges" in capsys.readouterr().err
    assert main(["run", "nico", "--task", "open_domain", "--model", "baseline:silence", "--out", "x",
                 "--judge-base-url", "http://127.0.0.1:1/v1"]) == 1
    assert "convbench run nico takes no judge: --judge-base-url would be unused" in capsys.readouterr().err


def test_a_new_benchmark_plugs_in_without_touching_the_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A toy benchmark (echo: the answer must repeat the row's word) runs, writes, re-scores and merges
    through engine/ alone: the interface is all a benchmark needs."""
    import sys
    import types
    from dataclasses import dataclass

    from convbench_datasets import registry
    from convbench_datasets.benchmark import BenchmarkBase, Executed
    from convbench_datasets.engine.backends import GenerationParams
    from convbench_datasets.settings import setting
    from convbench_datasets.runs.pipeline import run, score_run
    from convbench_datasets.runs.shards import merge_runs

    @dataclass
    class EchoPlan:
        words: int = setting(5, help="echo: rows (default {default})", paper=5, type=int)

        def rows(self) -> list[dict]:
            return [{"id": i, "word": f"w{i}"} for i in range(self.words)]

        def execute(self, session, rows):  # type: ignore[no-untyped-def]
            prompts = [[{"role": "user", "content": "x"}, {"role": "assistant", "content": r["word"]},
                        {"role": "user", "content": "again?"}] for r in rows]
            answered = session.ask(session.generator, prompts, GenerationParams(8), desc="echo")
            return Executed([{"id": r["id"], "word": r["word"], "answer": g.text, "error": g.error}
                             for r, g in zip(rows, answered.generations)], {"model_calls": answered.model_calls})

        def signature(self, session) -> dict:  # type: ignore[no-untyped-def]
            return {"words": self.words}

        def results(self, records, signature):  # type: ignore[no-untyped-def]
            return {"n": len(records), "accuracy": 100.0 * sum(r["answer"] == r["word"] for r in records) / len(records)}

    class Echo(BenchmarkBase):  # what is its own: its name, its settings (the plan here) and its scores again
        name, title, settings = "echo", "Echo", EchoPlan

        def rescore(self, records, signature, previous, options):  # type: ignore[no-untyped-def]
            return EchoPlan().results(records, signature)

    module = types.ModuleType("echo_benchmark_for_test")
    module.BENCHMARK = Echo()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.RUNS, "echo", module.__name__)
    assert isinstance(module.BENCHMARK, Benchmark)
    cache = tmp_path / "c.sqlite"
    whole = run("echo", model="baseline:repeat", out=tmp_path / "whole", cache=cache, progress=False)
    assert whole.results["accuracy"] == 100.0 and whole.results["signature"]["words"] == 5
    assert [o.flag for o in Echo.options] == ["--words"]  # its flags, read from its settings
    assert whole.results["row_ids"] == ["0", "1", "2", "3", "4"] and whole.stats["model_calls"] == 5
    assert score_run(tmp_path / "whole").results["accuracy"] == 100.0
    shards = [run("echo", model="baseline:repeat", out=tmp_path / f"s{i}", cache=cache, shard=(i, 2), progress=False)
              for i in (1, 2)]
    assert [s.results["row_ids"] for s in shards] == [["0", "2", "4"], ["1", "3"]]
    merged = merge_runs([tmp_path / "s2", tmp_path / "s1"], tmp_path / "merged")
    assert merged.records == whole.records and merged.results["accuracy"] == 100.0


@pytest.mark.parametrize("name", ["nc", "nico"])
def test_a_run_does_not_import_datasets(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # a short run's CPU went mostly to imports: rows come from the built parquet through pyarrow
    import json
    import subprocess
    import sys

    built = request.getfixturevalue(f"{name}_built")
    argv = ["run", name, "--model", "baseline:repeat", "--limit", "3", "--dataset", str(built), "--no-progress",
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
            *(["--judge", "baseline:smoke-judge", "--config", "basic"] if name == "nc" else
              ["--task", "open_domain", "--split", "train"])]
    script = ("import json, sys\nfrom convbench_datasets.cli import main\n"
              f"code = main({argv!r})\n"
              "print(json.dumps([code, sorted(m for m in ('datasets', 'evaluate', 'torch', 'pandas') if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [0, []]


def test_layers_run_one_way() -> None:
    # the model-calling layer (backends, cache, stages, session) sits below the benchmark packages and the
    # pipeline above them: importing a benchmark, its builder or its model-made build stages loads no
    # pipeline (the run_* wrappers import it when a run starts)
    import json
    import subprocess
    import sys

    modules = [*RUNS.values(), "convbench_datasets.cocoeval.builder", "convbench_datasets.cocoeval.model_stage"]
    script = ("import importlib, json, sys\n"
              f"for name in {modules!r}: importlib.import_module(name)\n"
              "print(json.dumps(sorted(m for m in sys.modules if m in ('convbench_datasets.runs.pipeline', "
              "'convbench_datasets.runs.sweep', 'convbench_datasets.cli'))))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_a_run_never_writes_into_a_users_folder(tmp_path: Path) -> None:
    # --out pointing at a folder of the user's (not empty, no results.json) is refused before anything is written
    from convbench_datasets.runs.pipeline import run

    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "records.jsonl").write_text("my own lines\n", encoding="utf-8")
    with pytest.raises(ConvbenchError, match="is not empty and is not a run folder"):
        run("nico", model="baseline:silence", out=mine, task="open_domain")
    assert sorted(p.name for p in mine.iterdir()) == ["records.jsonl"]
    assert (mine / "records.jsonl").read_text(encoding="utf-8") == "my own lines\n"


def test_run_files_are_as_readable_as_any_new_file(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # written through a temporary file and a rename, yet with a plain file's permissions (0o666 less the
    # umask), not mkstemp's owner-only 0o600
    import os

    from convbench_datasets.atomic import umask
    from convbench_datasets.runs.pipeline import run

    result = run("nico", model="baseline:silence", out=tmp_path / "run", task="open_domain", split="train", limit=2,
                 dataset=request.getfixturevalue("nico_built"), cache=tmp_path / "c.sqlite", progress=False)
    for name in ("records.jsonl", "results.json"):
        assert os.stat(result.path / name).st_mode & 0o777 == 0o666 & ~umask(), name


@pytest.mark.parametrize("name", list(RUNS))
def test_the_run_function_forwards_every_keyword(name: str) -> None:
    # a keyword the thin run_* wrapper took but did not pass on would silently run with the plan's default
    bench = get_benchmark(name)
    function = getattr(api, f"run_{name}")
    tree = ast.parse(inspect.getsource(function))
    (call,) = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "run"]
    passed = {kw.arg: kw.value.id for kw in call.keywords if isinstance(kw.value, ast.Name)}
    assert passed == {parameter: parameter for parameter in inspect.signature(function).parameters}
