"""``convbench run``, ``sweep``, ``merge`` and ``score``: the flags of a run (the benchmarks' settings and the
model roles', read from their declarations), the run config they make, and what a run prints.
"""


import argparse
import sys
from typing import Any

from .._console import warn
from ..errors import ConvbenchError
from ..registry import RUNS
from ..engine.error_rate import TooManyErrors
from ._parsing import _command, _flag_attr
from .roles import _add_role_options, _judge_roles, _model_role, _params


def add_run(commands: Any, only: str | None) -> None:
    """``convbench run``: the flags of every benchmark, or of ``only`` (see :func:`_parse`)."""
    run = _command(commands, "run", "generate, judge and score a benchmark with a model")
    # the narrow parser names its benchmark only: listing RUNS would read every entry point (registry.py)
    run.add_argument("name", choices=[only] if only else list(RUNS), help="benchmark")
    run.add_argument("--model", required=True,
                     help="generator spec: hf:<path>, openai:<model>, anthropic:<model>, baseline:silence|repeat (nc), "
                          "baseline:cocoeval-sim (a cocoeval smoke test)")
    run.add_argument("--judge", action="append", metavar="SPEC",
                     help="judge spec, same forms; for a no-model smoke test baseline:smoke-judge (nc), "
                          "baseline:cocoeval-judge (cocoeval); nc: give it "
                          "twice (or more) to judge every row with each, the first primary, and report their agreement")
    _add_run_options(run)
    _add_role_options(run)
    _add_benchmark_options(run, only=only)
    run.set_defaults(flags_of=only)


def _add_run_options(run: argparse.ArgumentParser) -> None:
    """The run's own flags (rows, output, cache, policies), read from the run config's declarations
    (:func:`convbench_datasets.runs.run_config.run_flags`)."""
    from ..runs.run_config import run_flags

    for _, flag in run_flags():
        kwargs = {"help": flag.help.replace("%", "%%"), "type": flag.type, "metavar": flag.metavar,
                  "action": flag.action, "default": flag.parsed_default, "required": flag.required or None}
        run.add_argument(flag.flag, **{k: v for k, v in kwargs.items() if v is not None})


def add_sweep(commands: Any) -> None:
    """``convbench sweep``'s parser."""
    sweep = _command(commands, "sweep", "run models x benchmarks x settings from one YAML file (resumable: a rerun "
                                        "skips finished cells), then one report over them")
    sweep.add_argument("file", metavar="FILE.yaml", help="the sweep file (format: docs/sweeps.md)")
    sweep.add_argument("--dry-run", action="store_true", help="check the file and list its cells; run nothing")
    sweep.add_argument("--rerun", action="store_true",
                       help="run every cell again, finished or not (answers still come from the response cache)")
    sweep.add_argument("--no-progress", action="store_true", help="hide the runs' progress bars (a line per cell stays)")


def add_merge(commands: Any) -> None:
    """``convbench merge``'s parser."""
    merge = _command(commands, "merge", "join the shard folders of one run (`convbench run ... --shard I/N`) into "
                                        "one run folder, scored as `convbench score` does")
    merge.add_argument("rundirs", nargs="+", metavar="RUNDIR", help="every shard folder of the run, in any order")
    merge.add_argument("--out", required=True, help="run folder to write (missing, empty or an earlier run folder)")
    _add_limit_flags(merge)


def add_score(commands: Any) -> None:
    """``convbench score``'s parser."""
    score = _command(commands, "score", "re-score a run folder from its records (no model calls); with --from-lm-eval, "
                                        "judge and score NC-Bench answers lm-eval generated into a new run folder")
    score.add_argument("rundir", nargs="?", help="the run folder to re-score (none with --from-lm-eval)")
    _add_benchmark_options(score, "rescore_options")  # re-scoring choices (nc: --rules, --parsing)
    # --from-lm-eval: lm-eval generated NC-Bench answers (it runs no judge); judge and score them into a new run folder
    score.add_argument("--from-lm-eval", metavar="SAMPLES",
                       help="judge and score the NC-Bench answers of an lm-eval samples file (samples_convbench_nc*.jsonl "
                            "from lm_eval --log_samples) into --out, as `convbench run nc` would")
    score.add_argument("--judge", action="append", metavar="SPEC", help="--from-lm-eval: judge spec, as for `convbench run nc`")
    score.add_argument("--out", help="--from-lm-eval: run folder to write")
    score.add_argument("--judge-template", metavar="released|convbench|FILE", help="--from-lm-eval: judge prompt (default released)")
    score.add_argument("--judge-base-url", metavar="URL", help="--from-lm-eval: OpenAI-compatible server for the judge")
    score.add_argument("--judge-param", action="append", metavar="KEY=VALUE",
                       help="--from-lm-eval: a request field for the judge (repeat for more), read as `convbench "
                            "run --judge-param` reads it; part of the cache key and the run's signature")
    score.add_argument("--dataset", metavar="DIR", help="--from-lm-eval: the NC-Bench build lm-eval used (default: the cached build)")
    score.add_argument("--sources", metavar="DIR", help="--from-lm-eval: upstream mirror for building the dataset")
    score.add_argument("--cache", metavar="FILE", help="--from-lm-eval: response cache (default $CONVBENCH_CACHE/responses.sqlite)")
    _add_limit_flags(score)
    score.add_argument("--no-progress", action="store_true")


def _add_limit_flags(parser: argparse.ArgumentParser) -> None:
    """The run's limits (``--max-error-rate``, ``--max-empty-rate``, ``--max-unparsed-rate``), as `convbench run`
    declares them: a number printed by merge or score passes the same checks."""
    from ..runs.run_config import limit_flags

    for _, flag in limit_flags():
        parser.add_argument(flag.flag, help=flag.help.replace("%", "%%"), type=flag.type, metavar=flag.metavar,
                            default=flag.parsed_default)


def _limits(args: argparse.Namespace) -> dict[str, float]:
    from ..runs.run_config import limit_flags

    return {name: getattr(args, flag.flag.lstrip("-").replace("-", "_")) for name, flag in limit_flags()}


def _run_registry(only: str | None = None) -> dict[str, Any]:
    """Every runnable benchmark by name (their run objects declare their own flags), or benchmark ``only``."""
    from ..registry import get_benchmark, run_benchmarks

    return {bench.name: bench for bench in ([get_benchmark(only)] if only else run_benchmarks())}


def _add_benchmark_options(run: argparse.ArgumentParser, kind: str = "options", only: str | None = None) -> None:
    """The flags the benchmarks declare (``Option``s in ``options`` for run, ``rescore_options`` for score), one
    argument per flag: a flag two benchmarks share (``--config``) is declared alike by both and its help joins
    theirs; ``{default}`` in a help is the option's default. Values default to "not given"."""
    by_flag: dict[str, list[Any]] = {}
    for bench in _run_registry(only).values():
        for option in getattr(bench, kind):
            by_flag.setdefault(option.flag, []).append(option)
    for flag, options in by_flag.items():
        first = options[0]
        if any((o.action, o.type, o.choices) != (first.action, first.type, first.choices) for o in options):
            raise AssertionError(f"benchmarks declare {flag} differently")  # a developer's mistake, caught by the CLI tests
        helps = "; ".join(o.help.replace("{default}", str(o.default)) for o in options)
        kwargs: dict[str, Any] = {"dest": _flag_attr(flag), "help": helps.replace("%", "%%")}
        if first.action:
            kwargs["action"] = first.action
        else:
            kwargs.update(type=first.type, choices=first.choices, metavar=first.metavar)
        run.add_argument(flag, **{k: v for k, v in kwargs.items() if v is not None})


def _benchmark_settings(bench: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The run keywords from the benchmark's flags (a flag not given: the run function's default); a flag of
    another benchmark's is refused, by name."""
    declared = {option.flag for option in bench.options}
    foreign = []  # none when only this benchmark's flags were parsed (args.flags_of)
    for other in _run_registry(getattr(args, "flags_of", None)).values():
        for option in other.options:
            if option.flag not in declared and option.given(getattr(args, _flag_attr(option.flag))):
                foreign.append((option.flag, other.name))
    if foreign:
        flags = sorted({flag for flag, _ in foreign})
        owners = sorted({name for _, name in foreign})
        raise ConvbenchError(f"{' and '.join(flags)} appl{'ies' if len(flags) == 1 else 'y'} to {', '.join(owners)} "
                             f"only, not {bench.name}")
    settings: dict[str, Any] = {}
    for option in bench.options:
        settings.update(option.settings(getattr(args, _flag_attr(option.flag))))
    return settings


def _cmd_run(args: argparse.Namespace) -> None:
    from ..runs.pipeline import run_config
    from ..runs.run_config import Rows, RunConfig, bench_settings, flag_values

    bench = _run_registry(args.name)[args.name]
    settings = _benchmark_settings(bench, args)
    least, most = bench.judges
    judges = args.judge or []
    if len(judges) < least:
        raise ConvbenchError(f"convbench run {bench.name} needs --judge SPEC")
    if most is not None and len(judges) > most:
        raise ConvbenchError(f"convbench run {bench.name} takes {'no' if most == 0 else 'one' if most == 1 else most} "
                             f"--judge{'' if most == 1 else 's'}")
    if most == 0:
        given = [flag for flag, value in (("--judge-base-url", args.judge_base_url),
                                          ("--judge-model-id", args.judge_model_id),
                                          ("--judge-param", args.judge_param)) if value]
        if given:
            raise ConvbenchError(f"convbench run {bench.name} takes no judge: {' and '.join(given)} would be unused")
    run, rows = flag_values(args)
    config = RunConfig(benchmark=bench.name, model=_model_role(args), settings=bench_settings(bench, settings),
                       judges=tuple(_judge_roles(args) if judges else ()), rows=Rows(**rows), **run)
    try:
        result = run_config(config, bench)
    except TooManyErrors as err:  # the folder is written: show what it holds, then fail with the count
        if err.result is not None:
            _print_run(err.result)
        raise
    _print_run(result)


def _print_run(result: Any, rescored: bool = False, records_written: bool | None = None) -> None:
    """The run's summary as its benchmark presents it, its warnings, and what was written (``records_written``:
    default, not when re-scored)."""
    from ..registry import DEFAULT_RUN_BENCHMARK, get_benchmark

    bench = get_benchmark(result.results.get("signature", {}).get("benchmark", DEFAULT_RUN_BENCHMARK))
    for line in bench.summary(result.results, rescored=rescored):
        print(line)
    for line in bench.warnings(result.results):
        warn(line)
    both = not rescored if records_written is None else records_written
    print(f"wrote {result.path}/records.jsonl and {result.path}/results.json" if both else f"wrote {result.path}/results.json")


def _cmd_sweep(args: argparse.Namespace) -> None:
    """Cells' progress on stderr, the summary table on stdout; exit code 1 when a cell failed."""
    from ..runs.sweep import run_sweep

    result = run_sweep(args.file, dry_run=args.dry_run, rerun=args.rerun, progress=not args.no_progress,
                       echo=lambda line: print(line, file=sys.stderr, flush=True))
    print("\n".join(result.lines()))
    if result.failed:
        raise ConvbenchError(f"{len(result.failed)} of {len(result.cells)} cells failed (errors above and in "
                             f"{result.out / 'sweep.json'}); run the sweep again to retry them")
    if result.report_failed:
        raise ConvbenchError(f"every cell finished, but {result.report_note}")


def _cmd_score(args: argparse.Namespace) -> None:
    from ..runs.pipeline import score_run

    if args.from_lm_eval is not None:
        _cmd_score_lm_eval(args)
        return
    given = [flag for flag, value in (("--judge", args.judge), ("--out", args.out), ("--judge-template", args.judge_template),
                                      ("--judge-base-url", args.judge_base_url), ("--judge-param", args.judge_param),
                                      ("--dataset", args.dataset),
                                      ("--sources", args.sources), ("--cache", args.cache)) if value]
    if args.rundir is None or given:
        raise ConvbenchError("convbench score takes a run folder (RUNDIR [--rules] [--parsing]) or --from-lm-eval SAMPLES.jsonl "
                             f"--judge SPEC --out RUN{'; ' + ', '.join(given) + ' go with --from-lm-eval' if given else ''}")
    options = {option.dest: getattr(args, _flag_attr(option.flag)) for bench in _run_registry().values()
               for option in bench.rescore_options if option.given(getattr(args, _flag_attr(option.flag)))}
    try:
        result = score_run(args.rundir, **options, **_limits(args))
    except TooManyErrors as err:  # results.json is written: show what it holds, then fail with the count
        if err.result is not None:
            _print_run(err.result, rescored=True)
        raise
    _print_run(result, rescored=True)


def _cmd_merge(args: argparse.Namespace) -> None:
    from ..runs.shards import merge_runs

    try:
        result = merge_runs(args.rundirs, args.out, **_limits(args))
    except TooManyErrors as err:  # the merged folder is written: show what it holds, then fail with the count
        if err.result is not None:
            _print_run(err.result, rescored=True, records_written=True)
        raise
    print(f"merged {len(args.rundirs)} shards ({len(result.records)} rows) into {result.path}")
    _print_run(result, rescored=True, records_written=True)


def _cmd_score_lm_eval(args: argparse.Namespace) -> None:
    from ..runs.api import score_lm_eval_samples

    if args.rundir is not None or not args.judge or not args.out:
        raise ConvbenchError("convbench score --from-lm-eval SAMPLES.jsonl needs --judge SPEC (lm-eval runs no judge; "
                             "baseline:smoke-judge for a smoke test) and --out RUN, and no run folder")
    try:
        result = score_lm_eval_samples(
            args.from_lm_eval, judge=args.judge[0] if len(args.judge) == 1 else args.judge, out=args.out,
            template=args.judge_template or "released", rules=args.rules or "paper", parsing=args.parsing or "exact",
            dataset=args.dataset,
            sources=args.sources, cache=args.cache, judge_options=_lm_eval_judge_options(args),
            progress=not args.no_progress, **_limits(args),
        )
    except TooManyErrors as err:  # the folder is written: show what it holds, then fail with the count
        if err.result is not None:
            _print_run(err.result)
        raise
    _print_run(result)


def _lm_eval_judge_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The judge's backend options of ``score --from-lm-eval``: its server and --judge-param (checked as for run)."""
    options = {key: value for key, value in (("base_url", args.judge_base_url),
                                             ("params", _params(args.judge_param, "--judge-param"))) if value}
    return options or None


