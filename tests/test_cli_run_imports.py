"""``convbench run NAME`` imports NAME's benchmark only (the others' imports were most of a short run's
cost, #20), and the command line still reads and refuses exactly what it did (cli._parse)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from convbench_datasets import cli
from convbench_datasets.errors import ConvbenchError

RUN = ["run", "nc", "--model", "baseline:silence", "--judge", "baseline:smoke-judge", "--out", "o"]


def _loaded_after(argv: list[str]) -> list[str]:
    """The benchmark run modules a fresh interpreter has loaded after parsing ``argv``."""
    code = ("import json, sys; from convbench_datasets.cli import _parse; _parse(json.loads(sys.argv[1])); "
            "print(json.dumps(sorted(m for m in sys.modules if m.rsplit('.', 1)[-1] == 'run' "
            "and m != 'convbench_datasets.cli.run')))")  # the command group of `convbench run`, no benchmark
    out = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_a_run_imports_its_own_benchmark_only() -> None:
    assert _loaded_after(["-v", *RUN, "--limit", "3"]) == ["convbench_datasets.nc.run"]
    assert _loaded_after(["--log-level", "info", "run", "nico", "--model", "m", "--out", "o"]) == \
        ["convbench_datasets.nico.run"]


@pytest.mark.parametrize("argv", [
    [*RUN, "--limit", "3", "--rules", "released_script"],
    ["-q", *RUN, "--config", "basic"],
    ["--log-level", "warning", *RUN],
])
def test_the_narrow_parse_reads_what_the_full_parser_reads(argv: list[str]) -> None:
    narrow, full = vars(cli._parse(argv)), vars(cli._parser().parse_args(argv))
    assert narrow.pop("flags_of") == "nc" and full.pop("flags_of") is None
    # the full parser has every benchmark's flags (None, or False for a switch, when not given); the narrow one nc's only
    assert {k: v for k, v in full.items() if k in narrow} == narrow
    assert full.keys() > narrow.keys() and all(full[k] in (None, False) for k in full.keys() - narrow.keys())


def test_another_benchmarks_flag_is_still_refused_by_name() -> None:
    args = cli._parse([*RUN, "--task", "x"])  # --task is NICO's: the full parser reads it
    assert args.flags_of is None and args.task == "x"
    with pytest.raises(ConvbenchError, match="--task applies to nico only, not nc"):
        cli.run._benchmark_settings(cli.run._run_registry("nc")["nc"], args)


def test_a_mistake_gets_the_full_parsers_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli._parse([*RUN, "--rules", "x"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'x'" in err and "{nc,nico,cocoeval}" in err  # the full usage line names every benchmark


def test_a_run_does_not_import_the_build_api(nc_built, tmp_path) -> None:
    # `import convbench_datasets` loads build/load/install on first use: a run of a built folder needs none
    # of the builders' modules (~25 ms of every `convbench run`, #20)
    argv = ["run", "nc", "--config", "basic", "--limit", "3", "--model", "baseline:silence", "--judge",
            "baseline:smoke-judge", "--dataset", str(nc_built), "--out", str(tmp_path / "run"), "--cache",
            str(tmp_path / "c.sqlite"), "--no-progress"]
    code = ("import json, sys; from convbench_datasets.cli import main; code = main(json.loads(sys.argv[1])); "
            "print(json.dumps([code, sorted(m for m in ('convbench_datasets.api', 'convbench_datasets.building') "
            "if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout.splitlines()[-1]) == [0, []]
    import convbench_datasets

    assert convbench_datasets.load.__module__ == "convbench_datasets.api"  # still there, by its public name


def test_starting_a_run_imports_no_numpy_and_reads_no_entry_points() -> None:
    # numpy (~0.1 s) is the scoring tables' (nc/ncbench_action.py), imported when a run scores; reading each
    # judge answer as it arrives (nc/judge_reading.py) needs none of it
    code = ("import json, sys; from convbench_datasets.cli import _parse; _parse(json.loads(sys.argv[1])); "
            "from convbench_datasets.nc.judge_reading import judge_row; judge_row('Repeat', ['Repeat']); "
            "print(json.dumps(['numpy' in sys.modules, 'importlib.metadata' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(RUN)], check=True, capture_output=True, text=True)
    # and no entry points read (importlib.metadata and a scan of every installed distribution, ~35 ms): nc is
    # convbench's own name, which no entry point can change (convbench_datasets/registry.py)
    assert json.loads(out.stdout) == [False, False]


def test_the_cached_builds_key_is_read_without_importing_its_builder() -> None:
    # a run of the cached build hashes the builder's files for the build's folder name; importing the builder
    # (and the hub, citation and upstream modules it imports) cost ~5 ms of every run's start (#20)
    code = ("import json, sys; from convbench_datasets.building import builder_key; key = builder_key('nc'); "
            "print(json.dumps([key, 'convbench_datasets.nc.builder' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    key, imported = json.loads(out.stdout)
    assert imported is False
    from convbench_datasets import building, registry

    assert registry.builder_file("nc") == registry.builder("nc").__file__  # the same file the module is run from
    assert key == building.builder_key("nc")  # and the same key as a process that has imported the builder


def test_an_unknown_builder_is_refused_by_name() -> None:
    from convbench_datasets import registry
    from convbench_datasets.errors import BuildError

    with pytest.raises(BuildError, match=re.escape("unknown benchmark 'nope'; available: nc, nico, cocoeval")):
        registry.builder_file("nope")


def test_a_builder_without_a_file_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    # a namespace package has no folder of its own: hashing "its folder" would hash wherever the command runs
    from convbench_datasets import registry
    from convbench_datasets.errors import BuildError

    (tmp_path / "nsbuilder").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BUILDERS, "ns", "nsbuilder")
    with pytest.raises(BuildError, match="builder module 'nsbuilder' has no file"):
        registry.builder_file("ns")


def test_a_builder_module_made_by_hand_is_found_through_its_module(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import types

    from convbench_datasets import registry

    made = types.ModuleType("handmade_builder")  # no __spec__: find_spec refuses it; its __file__ still says where
    made.__file__ = str(tmp_path / "builder.py")
    monkeypatch.setitem(sys.modules, "handmade_builder", made)
    monkeypatch.setitem(registry.BUILDERS, "hand", "handmade_builder")
    assert registry.builder_file("hand") == str(tmp_path / "builder.py")


def test_the_narrow_parser_builds_the_run_command_only() -> None:
    # building every command's flags was 10 ms of each run's start (#20); the full parser keeps them all, in order
    def commands(parser) -> list[str]:
        return [list(action.choices) for action in parser._actions if action.dest == "command"][0]

    assert commands(cli._parser("nc")) == ["run"]
    assert commands(cli._parser()) == ["list", "build", "install", "agreement", "run", "sweep", "report", "compare",
                                       "publish", "metrics", "export", "merge", "score", "import-inspect",
                                       "lm-eval-path", "cache"]


def test_a_help_flag_among_short_flags_shows_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    # -vh is -v -h: _parse does not see the word -h, so the narrow parser must hand the help to the full one
    with pytest.raises(SystemExit):
        cli._parse(["-vh", *RUN])
    out = capsys.readouterr().out
    assert "sweep" in out and "score" in out and "install" in out
