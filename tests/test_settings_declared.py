"""Every benchmark setting is one declaration that reaches the flags, the sweep file, the signature and the
report's flags (convbench_datasets/settings.py).

The walk: for every declared field of every benchmark, a run's plan is made with another value; its signature
must differ from the default plan's, and the report's departures must gain a line for it unless the field
declares that no value changes a number (``EVERY_VALUE``). A new field without a paper value fails
``declared`` itself; one its plan does not write into the signature fails here.
"""

from __future__ import annotations

import dataclasses
import inspect
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from convbench_datasets.registry import RUNS, get_benchmark
from convbench_datasets.runs import api
from convbench_datasets.runs.sweep_file import read_sweep
from convbench_datasets.settings import EVERY_VALUE, declared, options, setting, setting_departures

BASE = {"nico": {"task": "open_domain"}}  # NICO's task has no default
# settings another setting needs beside it (the plan refuses it alone, or it changes a number only beside it:
# how a blank answer is read matters to the task that reads answers)
NEEDS = {("nc", "first_line_only"): {"template": "convbench"}, ("nico", "bertscore_layer"): {"bertscore": True},
         ("nico", "blank_answer"): {"task": "identify_unnatural"}}
SWEEP_NEEDS = {("nico", "bertscore_layer"): {"bertscore": "bert-base-chinese"}}  # a sweep spells it as the flag
# values a walk cannot derive from a field's type or choices
OTHER = {("nc", "config"): "basic", ("nc", "template"): "convbench", ("nico", "task"): "rewrite_unnatural",
         ("nico", "split"): "train", ("nico", "tokenizer"): "jieba", ("nico", "bleu_level"): "sentence",
         ("nico", "bleu_ngrams"): "individual", ("nico", "rouge_l_f"): "p/r", ("nico", "bertscore_model"): "my-bert",
         ("nico", "blank_answer"): "none",
         ("cocoeval", "config"): "iq2", ("cocoeval", "split"): "train"}


def _other(name: str, f: dataclasses.Field[Any], info: Any, tmp_path: Path) -> Any:
    if (name, f.name) in OTHER:
        return OTHER[(name, f.name)]
    if name == "cocoeval" and f.name == "taxonomy":  # a taxonomy file of the user's: the bundled one, copied
        from convbench_datasets import cocoeval

        path = tmp_path / "mine.yaml"
        shutil.copy(Path(cocoeval.__file__).parent / "taxonomy.yaml", path)
        return str(path)
    default = f.default
    if info.choices:
        return next(c for c in info.choices if c != default)
    if isinstance(default, bool):
        return not default
    if default is None or isinstance(default, int):
        return 7 if default is None else default + 1
    raise AssertionError(f"{name}.{f.name}: say in OTHER which other value the walk should try")


def _signature(bench: Any, settings: dict[str, Any], sources: Path | None) -> dict[str, Any]:
    plan = bench.plan({**BASE.get(bench.name, {}), **settings}, dataset=None, sources=sources)
    session = SimpleNamespace(judge_specs=["openai:judge"])  # what judge_params reads
    return plan.signature(session)


@pytest.fixture
def sources(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue("nc_sources")  # the released judge prompt is read from the mirror


@pytest.mark.parametrize("name", list(RUNS))
def test_every_setting_reaches_the_signature_and_the_report_flags(name: str, sources: Path, tmp_path: Path) -> None:
    bench = get_benchmark(name)
    base = _signature(bench, {}, sources)
    assert setting_departures(bench.settings, base) == [], "a default run departs from the paper"
    for f, info in declared(bench.settings):
        value = _other(name, f, info, tmp_path)
        needs = NEEDS.get((name, f.name), {})
        before = _signature(bench, needs, sources) if needs else base
        settings = info.to_settings(value) if info.to_settings and info.action is None else {f.name: value}
        signature = _signature(bench, {**needs, **settings}, sources)
        if info.recorded:
            assert signature != before, f"{name}.{f.name}={value!r} is not in the signature"
        else:  # recorded elsewhere (the metric's signature) or part of nothing that made the numbers
            assert info.why
            signature = {**signature, **({info.key or f.name: value} if info.paper is not EVERY_VALUE else {})}
        flags = setting_departures(bench.settings, signature)
        already = setting_departures(bench.settings, before)
        if info.paper is EVERY_VALUE:
            assert flags == already, (name, f.name)
        else:
            assert len(flags) == len(already) + 1, (name, f.name, flags)


@pytest.mark.parametrize("name", list(RUNS))
def test_every_setting_is_a_flag_a_sweep_key_and_a_run_keyword(name: str, sources: Path, tmp_path: Path) -> None:
    bench = get_benchmark(name)
    run_function = getattr(api, f"run_{name}")
    parameters = inspect.signature(run_function).parameters
    flags = {o.dest: o for o in bench.options}
    for f, info in declared(bench.settings):
        assert f.name in parameters, f"run_{name} takes no {f.name}"
        default = parameters[f.name].default
        assert f.default == (None if default is inspect.Parameter.empty else default), f.name
        if info.cli:
            assert flags[f.name].help == info.help
    # a sweep block sets each setting by its name: the file's keys are read from the same declarations
    for f, info in declared(bench.settings):
        if not info.cli or info.action is not None or info.to_settings is not None:
            continue
        value = _other(name, f, info, tmp_path)
        block = {**BASE.get(name, {}), **SWEEP_NEEDS.get((name, f.name), NEEDS.get((name, f.name), {})), f.name: value}
        sweep = read_sweep({"out": str(tmp_path / "s"), "sources": str(sources), "models": ["baseline:silence"],
                            **({"judges": ["baseline:silence"]} if bench.judges[0] else {}),
                            "benchmarks": {name: block}})
        assert [cell.settings[f.name] for cell in sweep.cells] == [value], f.name


def test_a_field_without_a_paper_value_or_a_reason_is_refused() -> None:
    @dataclasses.dataclass
    class Undeclared:
        shots: int = 0

    with pytest.raises(TypeError, match="Undeclared.shots is not declared with setting"):
        options(Undeclared)

    @dataclasses.dataclass
    class NoReason:
        progress: bool = setting(True, help="bars", paper=EVERY_VALUE)

    with pytest.raises(TypeError, match="needs why="):
        options(NoReason)
