"""The ``convbench`` command. Each subcommand is a thin layer over the Python API.

Errors the user can act on are printed as one line (``convbench: error: ...``) with exit code 1.
"""

from __future__ import annotations

import argparse
import functools
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ._console import LEVELS, detach_stdout, plain_warnings, set_verbosity, stdout_closed, warn
from ._version import __version__
from .counts import MAX_RESAMPLES, MAX_SEED, count_flag
from .settings import positive as _positive
from .extras import missing_module_message
from .errors import ConvbenchError
from .registry import RUNS
from .runner.error_rate import DEFAULT_MAX_ERROR_RATE, TooManyErrors


def _error_rate(text: str) -> float:
    from .runner.error_rate import parse_rate

    return parse_rate(text)


def _shard(text: str) -> tuple[int, int]:
    from .runner.shards import parse_shard

    try:
        return parse_shard(text)
    except ConvbenchError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _command(commands: Any, name: str, summary: str) -> argparse.ArgumentParser:
    """A subcommand whose one-line ``summary`` is both its line in ``convbench --help`` and the
    description of ``convbench NAME --help``. argparse %-formats help strings (a literal % must be
    doubled there) but not descriptions, so the summary is written once, as the user reads it. Prefixes of
    flags are not read as the flag (``allow_abbrev=False``): ``--api-key KEY`` would otherwise be
    ``--api-key-env KEY``, and the key then shown as a variable's name."""
    command = commands.add_parser(name, help=summary.replace("%", "%%"), description=summary, allow_abbrev=False)
    _verbosity_flags(command, argparse.SUPPRESS)  # after the command too: `convbench run ... -v`
    return command


def _verbosity_flags(parser: argparse.ArgumentParser, default: Any) -> None:
    """``-v``/``-q``/``--log-level``; a subcommand's copy has no default of its own (SUPPRESS), so that it
    does not undo the same flag given before the command."""
    parser.add_argument("-v", "--verbose", action="count", default=default if default is argparse.SUPPRESS else 0,
                        help="say more: -v progress notes (info), -vv everything (debug)")
    parser.add_argument("-q", "--quiet", action="store_true", default=default if default is argparse.SUPPRESS else False,
                        help="errors only (no warnings)")
    parser.add_argument("--log-level", choices=LEVELS, default=default if default is argparse.SUPPRESS else None,
                        help="the least severe messages shown (default: warning)")


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: the benchmark whose flags ``run`` takes, in a parser of the run command
    alone (default: every command, and every benchmark's flags, each imported to read them; see :func:`_parse`)."""
    parser = (_Narrow if only else argparse.ArgumentParser)(
        prog="convbench",
        description="Build, run and score conversation benchmarks (NC-Bench, NICO, CoCoEvalBench).",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"convbench {__version__}")
    _verbosity_flags(parser, None)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if not only:  # the narrow parser (see _parse) reads `convbench run NAME ...` only: no other command to build
        _setup_commands(commands)
    _run_command(commands, only)
    if not only:
        _other_commands(commands)
    return parser


def _setup_commands(commands: Any) -> None:
    """list, build, install and agreement (before run in ``convbench --help``)."""
    _command(commands, "list", "benchmarks, their configs, row counts and licenses")

    build = _command(commands, "build", "build a benchmark into a Hub-layout dataset folder")
    build.add_argument("name", help="benchmark name (see `convbench list`)")
    build.add_argument("--out", required=True, help="folder to write (replaced if it is an earlier build)")
    build.add_argument("--sources", metavar="DIR", help="local mirror of the upstream files (default: $CONVBENCH_SOURCES, else download)")
    build.add_argument("--data-dir", metavar="DIR", help="user-supplied data, for benchmarks that need it")
    build.add_argument("--summarizer", metavar="SPEC", help="cocoeval: abstractive summaries by this model (default: extractive)")
    build.add_argument("--summarizer-base-url", metavar="URL", help="cocoeval: OpenAI-compatible server for --summarizer")
    build.add_argument("--cleaner", metavar="SPEC",
                       help="cocoeval: this model cleans QMSum Product and Academic after the rules, as the paper (default: rules only)")
    build.add_argument("--cleaner-base-url", metavar="URL", help="cocoeval: OpenAI-compatible server for --cleaner")
    build.add_argument("--metadata-model", metavar="SPEC",
                       help="cocoeval: this model writes every row's setting, participants' roles and goals (default: from the sources)")
    build.add_argument("--metadata-model-base-url", metavar="URL", help="cocoeval: OpenAI-compatible server for --metadata-model")
    for stage, flag in (("summarizer", "--summarizer"), ("cleaner", "--cleaner"), ("metadata_model", "--metadata-model")):
        build.add_argument(f"{flag}-param", action="append", metavar="KEY=VALUE", dest=f"{stage}_param",
                           help=f"cocoeval: a request field for {flag} (as convbench run --param); repeat for more")
    build.add_argument("--cache", metavar="FILE",
                       help="cocoeval: response cache of the model-made stages (default $CONVBENCH_CACHE/responses.sqlite)")
    build.add_argument("--retry-errors", action="store_true",
                       help="cocoeval: ask the model-made stages again the prompts that ended in a per-row error in an "
                            "earlier build (default: record the error again, the rule-made value kept)")
    build.add_argument("--max-error-rate", type=_error_rate, metavar="SHARE",
                       help="cocoeval: the share of a model-made stage's prompts that may end in an error (default "
                            "0.05, i.e. 5%%): with more, the build stops, exit 1, with their count")
    build.add_argument("--no-progress", action="store_true", help="hide progress bars")
    install = _command(commands, "install", "make load_dataset(\"convbench/NAME\") work offline on this machine")
    install.add_argument("name", help="benchmark name (see `convbench list`)")
    install.add_argument("--dataset", metavar="DIR", help="a folder from `convbench build` (default: build into the cache)")
    install.add_argument("--sources", metavar="DIR", help="upstream mirror for building the dataset")
    install.add_argument("--force", action="store_true",
                         help="install even beside a convbench/NAME that convbench did not install (kept, never deleted)")
    install.add_argument("--no-progress", action="store_true", help="hide progress bars")
    agree = _command(commands, "agreement", "judge agreement: Cohen's kappa and % agreement of two raters' NC-Bench labels; "
                     "with `cocoeval`, leave-one-out Spearman of a CoCoEval run's judge and of annotators with annotators")
    agree.usage = "%(prog)s [nc] A.jsonl B.jsonl [options]  |  %(prog)s cocoeval HUMANS.jsonl RUNDIR [options]"
    agree.add_argument("inputs", nargs="+", metavar="INPUT",
                       help="NC-Bench: two raters' JSON Lines, A and B (id, set, and labels or judge_output; and passed, "
                            "acceptable_labels or task), the same rows in both; CoCoEval: the word cocoeval, the human "
                            "ratings (JSON Lines, format in the CoCoEvalBench card) and a `convbench run cocoeval` folder")
    agree.add_argument("--label-mode", choices=["first", "set"],
                       help="nc: compare each row's first label (default) or its whole label set")
    agree.add_argument("--bootstrap", type=count_flag(0, MAX_RESAMPLES), default=1000, metavar="N",
                       help=f"bootstrap resamples (default 1000, at most {MAX_RESAMPLES:,})")
    agree.add_argument("--rules", choices=["paper", "released_script"],
                       help="nc: acceptable labels used when a row gives only set + task (default paper)")
    agree.add_argument("--taxonomy", metavar="FILE",
                       help="cocoeval: the run's taxonomy file, for runs whose signature does not record its groups")
    agree.add_argument("--bootstrap-unit", choices=["continuation", "source_conversation"],
                       help="cocoeval: what the bootstrap resamples: each rated continuation (default, the paper's "
                            "conversations) or whole source conversations (meetings, debates)")
    agree.add_argument("--seed", type=count_flag(0, MAX_SEED), default=0)
    agree.add_argument("--json", action="store_true", help="print the result as JSON")


def _run_command(commands: Any, only: str | None) -> None:
    """``convbench run``: the flags of every benchmark, or of ``only`` (see :func:`_parse`)."""
    run = _command(commands, "run", "generate, judge and score a benchmark with a model")
    # the narrow parser names its benchmark only: listing RUNS would read every entry point (registry.py)
    run.add_argument("name", choices=[only] if only else list(RUNS), help="benchmark")
    run.add_argument("--model", required=True, help="generator spec: hf:<path>, openai:<model>, anthropic:<model>, baseline:silence|repeat")
    run.add_argument("--judge", action="append", metavar="SPEC",
                     help="judge spec, same forms; baseline:smoke-judge for a no-model smoke test (nc); nc: give it "
                          "twice (or more) to judge every row with each, the first primary, and report their agreement")
    run.add_argument("--out", required=True, help="run folder for records.jsonl and results.json")
    run.add_argument("--limit", type=_positive, help="only the first N rows")
    run.add_argument("--sample", type=_positive, metavar="N",
                     help="N rows drawn across the benchmark's strata (NC-Bench's sets and patterns, NICO's interaction "
                          "types, CoCoEval's sources), seeded: a smoke-sized run that covers every kind of row")
    run.add_argument("--sample-seed", type=int, default=0, metavar="SEED", help="the seed of --sample (default 0)")
    run.add_argument("--shard", type=_shard, metavar="I/N",
                     help="only shard I of N (from 1) of the rows config and --limit select: the rows at positions "
                          "I-1, I-1+N, ...; join the shard folders with `convbench merge`")
    run.add_argument("--concurrency", type=_positive,
                     help="requests in flight for the whole run, over the model, its judges and all their replicas "
                          "together (openai:, anthropic:; default 8); a pipelined run's stages share them")
    _add_role_options(run)
    run.add_argument("--retry-errors", action="store_true",
                     help="ask again the prompts that ended in a per-row error in an earlier run (default: record the error again)")
    run.add_argument("--max-error-rate", type=_error_rate, default=DEFAULT_MAX_ERROR_RATE, metavar="SHARE",
                     help="the share of rows that may end in an error (0.05 or 5%%, the default; 0: none, 1: any): with "
                          "more, the run folder is still written, and the command exits 1 with their count")
    run.add_argument("--dataset", metavar="DIR", help="a folder from `convbench build` (default: build into the cache)")
    run.add_argument("--sources", metavar="DIR", help="upstream mirror for building the dataset")
    run.add_argument("--cache", metavar="FILE", help="response cache (default $CONVBENCH_CACHE/responses.sqlite)")
    run.add_argument("--no-progress", action="store_true")
    _add_benchmark_options(run, only=only)
    run.set_defaults(flags_of=only)


def _other_commands(commands: Any) -> None:
    """The commands after run in ``convbench --help``: sweep, report, compare, publish... cache."""
    sweep = _command(commands, "sweep", "run models x benchmarks x settings from one YAML file (resumable: a rerun "
                                        "skips finished cells), then one report over them")
    sweep.add_argument("file", metavar="FILE.yaml", help="the sweep file (format: docs/sweeps.md)")
    sweep.add_argument("--dry-run", action="store_true", help="check the file and list its cells; run nothing")
    sweep.add_argument("--rerun", action="store_true",
                       help="run every cell again, finished or not (answers still come from the response cache)")
    sweep.add_argument("--no-progress", action="store_true", help="hide the runs' progress bars (a line per cell stays)")

    report = _command(commands, "report", "HTML report, figures and tables from run folders")
    report.add_argument("rundirs", nargs="+", metavar="RUNDIR")
    report.add_argument("--out", required=True, help="folder for report.html, figures/ and tables/")
    report.add_argument("--no-reference", action="store_true",
                        help="nc: leave out the paper's published results (shown beside your runs by default)")

    compare = _command(commands, "compare", "paired significance test of two NC-Bench runs on the same rows")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--resamples", type=count_flag(1, MAX_RESAMPLES), default=1000,
                         help=f"bootstrap and randomisation resamples (default 1000, at most {MAX_RESAMPLES:,})")
    compare.add_argument("--seed", type=count_flag(0, MAX_SEED), default=0)

    publish = _command(commands, "publish", "upload a built dataset (or, with `metric`, a metric Space) to the Hub")
    publish.add_argument("what", nargs="+", metavar="NAME", help="a benchmark name, or: metric METRIC_NAME")
    publish.add_argument("--repo-id", required=True, help="ORG/NAME on the Hub")
    publish.add_argument("--folder", help="the built dataset folder (default hub/NAME)")
    publish.add_argument("--private", action="store_true")

    metrics = _command(commands, "metrics", "install convbench's evaluate modules for offline loading as convbench/NAME, "
                                            "or export self-contained copies that need no convbench")
    metrics.add_argument("action", choices=["install", "export"])
    metrics.add_argument("names", nargs="*", help="metrics to install or export (default: all)")
    metrics.add_argument("--out", metavar="DIR", help="export: write DIR/NAME/ per metric (evaluate.load(\"DIR/NAME\"))")

    export = _command(commands, "export", "write training data from a benchmark: cocoeval-sft, chat-format JSON Lines "
                                          "for fine-tuning a simulator on CoCoEval's train split")
    export.add_argument("what", choices=["cocoeval-sft"], help="what to write")
    export.add_argument("--turns-per-call", type=int, choices=[1, 5, 30], required=True,
                        help="turns the simulator writes per call (1 and 5: from a seeded random turn of the reference)")
    export.add_argument("--out", required=True, metavar="FILE",
                        help="JSON Lines file to write, with FILE.convbench.json beside it (a file convbench did not "
                             "write is refused)")
    export.add_argument("--config", default="all", help="a source or all (default)")
    export.add_argument("--prompt", choices=["vanilla", "taxonomy"], default="vanilla", help="the simulation prompt")
    export.add_argument("--taxonomy", metavar="FILE", help="your behaviour taxonomy (YAML), for --prompt taxonomy")
    export.add_argument("--seed", type=count_flag(0, MAX_SEED), default=0, help="seed of the random start turns (default 0)")
    export.add_argument("--no-repetition-countermeasure", action="store_true",
                        help="prompts and targets without the paper's copy of the last 5 turns first (the runner's "
                             "default has it; use this for runs with --no-repetition-countermeasure)")
    export.add_argument("--dataset", metavar="DIR", help="a folder from `convbench build` (default: build into the cache)")
    export.add_argument("--sources", metavar="DIR", help="upstream mirror for building the dataset")

    merge = _command(commands, "merge", "join the shard folders of one run (`convbench run ... --shard I/N`) into "
                                        "one run folder, scored as `convbench score` does")
    merge.add_argument("rundirs", nargs="+", metavar="RUNDIR", help="every shard folder of the run, in any order")
    merge.add_argument("--out", required=True, help="run folder to write (missing, empty or an earlier run folder)")

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
    score.add_argument("--max-error-rate", type=_error_rate, metavar="SHARE",
                       help="--from-lm-eval: as for `convbench run` (default 0.05, i.e. 5%%)")
    score.add_argument("--no-progress", action="store_true")

    imported = _command(commands, "import-inspect", "a run folder (records.jsonl, results.json) from an inspect_ai log "
                                                    "of a convbench task, for score, report and compare")
    imported.add_argument("log", help="an inspect log (.eval or .json) of inspect eval convbench/nc|nico|cocoeval")
    imported.add_argument("--out", required=True, help="run folder to write (missing, empty or an earlier run folder)")
    imported.add_argument("--epoch", type=_positive, default=1, help="the log's epoch that becomes the run (default 1)")
    _command(commands, "lm-eval-path", "the folder of convbench's lm-eval task configs (lm_eval --include_path)")

    cache = _command(commands, "cache", "inspect or clear the response cache (and the derived caches: kept rows, parsed YAML)")
    cache.add_argument("action", choices=["stats", "clear"])
    cache.add_argument("--cache", metavar="FILE", help="cache file (default $CONVBENCH_CACHE/responses.sqlite)")
    cache.add_argument("--model", help="clear: only this model's entries (MODEL or BACKEND:MODEL, as stats shows)")
    cache.add_argument("--derived", action="store_true",
                       help="clear: the derived caches in $CONVBENCH_CACHE (rows/, yaml/: made again when needed), "
                            "not the response cache")


def _add_role_options(run: argparse.ArgumentParser) -> None:
    """The model roles' flags, read from their declarations (:data:`.runner.backends.roles.OPTIONS`): a flag for the
    generator (every role's, unless the judges have their own) and the judges' own flag where there is one."""
    from .runner.backends.roles import role_options

    for name, option in role_options():
        for flag, text, repeated in ((option.flag, option.flag_help, option.repeated),
                                     (option.judge_flag, option.judge_help, True)):
            if flag is None:
                continue
            kwargs: dict[str, Any] = {"dest": _flag_attr(flag), "help": (text or option.help).replace("%", "%%"),
                                      "metavar": option.metavar, "type": option.type, "choices": option.choices}
            if repeated:
                kwargs["action"] = "append"
            run.add_argument(flag, **{k: v for k, v in kwargs.items() if v is not None})


def _role_values(args: argparse.Namespace, judge: bool) -> dict[str, Any]:
    """Each role option's parsed flag value for the generator's role or (``judge``) the judges': the judges' own
    flag where they have one (as given: a list when repeated), else the flag every role shares; without
    --judge-base-url the judges use --base-url. Request params are parsed from KEY=VALUE."""
    from .runner.backends.roles import role_options

    values: dict[str, Any] = {}
    for name, option in role_options():
        if option.flag is None:
            continue
        value = getattr(args, _flag_attr(option.flag))
        flag = option.flag
        if judge and option.judge_flag is not None:
            flag, own = option.judge_flag, getattr(args, _flag_attr(option.judge_flag))
            value = (own or value) if name == "base_url" else own
        values[name] = _params(value, flag) if name == "params" else value
    return values


def _params(values: Sequence[str] | None, flag: str) -> dict[str, Any] | None:
    """The request fields of repeated ``flag KEY=VALUE`` options, checked (a one-line error names ``flag``)."""
    from .runner.backends import check_params, params_from_flags

    try:
        return check_params(params_from_flags(values, flag), flag)
    except ValueError as err:
        raise ConvbenchError(str(err)) from None


def _model_role(args: argparse.Namespace) -> Any:
    """The generator's role from the flags; --model-id only for a model behind a server (openai:, anthropic:)."""
    from .runner.backends import SERVED, make_role
    from .runner.backends.roles import served_kinds

    values = _role_values(args, judge=False)
    if values["model_id"] is not None and args.model.partition(":")[0] not in SERVED:
        raise ConvbenchError(f"--model-id applies to {served_kinds()} models only, not {args.model}")
    return make_role(args.model, values)


def _judge_roles(args: argparse.Namespace) -> list[Any]:
    """The judges' roles. With one --judge every --judge-base-url value (each perhaps a comma list) is a replica
    of it. With several, a judge's own repeated flag (--judge-base-url, --judge-model-id) is given once (for
    every judge; a comma list of URLs is one replica pool they all use) or once per --judge, in order (one
    value, perhaps a comma list, per judge); other counts are errors. Other flags (--timeout...) are every role's."""
    from .runner.backends import SERVED, make_role
    from .runner.backends.roles import role_options, served_kinds

    judges, values = args.judge, _role_values(args, judge=True)
    each: dict[str, list[Any]] = {}  # option -> one value per judge
    for name, option in role_options():
        if option.judge_flag is None or name == "params":
            continue
        given = values[name] or []
        if name == "base_url" and len(judges) == 1:
            continue  # every value a replica of the one judge
        if len(given) > 1 and len(given) != len(judges) and getattr(args, _flag_attr(option.judge_flag)):
            raise ConvbenchError(f"{option.judge_flag} is given {len(given)} times for {len(judges)} --judge: give it "
                                 "once (for every judge) or once per --judge, in the same order")
        if len(given) == len(judges) > 1 and getattr(args, _flag_attr(option.judge_flag)):
            each[name] = list(given)
        elif name == "model_id":
            values[name] = given[0] if given else None
    if args.judge_model_id and not any(spec.partition(":")[0] in SERVED for spec in judges):
        raise ConvbenchError(f"--judge-model-id applies to {served_kinds()} judges only, not {', '.join(judges)}")
    roles = []
    for k, spec in enumerate(judges):
        mine = {**values, **{name: per[k] for name, per in each.items()}}
        if spec.partition(":")[0] not in SERVED:  # another judge's name for the cache is not this one's
            mine["model_id"] = None
        roles.append(make_role(spec, mine))
    return roles


def _run_registry(only: str | None = None) -> dict[str, Any]:
    """Every runnable benchmark by name (their run objects declare their own flags), or benchmark ``only``."""
    from .registry import get_benchmark, run_benchmarks

    return {bench.name: bench for bench in ([get_benchmark(only)] if only else run_benchmarks())}


def _flag_attr(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


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
    from .runner.pipeline import run_config
    from .runner.run_config import Rows, RunConfig, bench_settings

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
    config = RunConfig(benchmark=bench.name, model=_model_role(args), out=args.out,
                       settings=bench_settings(bench, settings), judges=tuple(_judge_roles(args) if judges else ()),
                       rows=Rows(limit=args.limit, sample=args.sample, sample_seed=args.sample_seed, shard=args.shard),
                       cache=args.cache, dataset=args.dataset, sources=args.sources, progress=not args.no_progress,
                       retry_errors=args.retry_errors, max_error_rate=args.max_error_rate, concurrency=args.concurrency)
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
    from .registry import DEFAULT_RUN_BENCHMARK, get_benchmark

    bench = get_benchmark(result.results.get("signature", {}).get("benchmark", DEFAULT_RUN_BENCHMARK))
    for line in bench.summary(result.results, rescored=rescored):
        print(line)
    for line in bench.warnings(result.results):
        warn(line)
    both = not rescored if records_written is None else records_written
    print(f"wrote {result.path}/records.jsonl and {result.path}/results.json" if both else f"wrote {result.path}/results.json")


def _cmd_report(args: argparse.Namespace) -> None:
    try:
        from .report import write_report
    except ImportError as err:
        raise ConvbenchError(f"reports need the report extra: pip install 'convbench[report]' ({err})") from None
    print(f"wrote {write_report(args.rundirs, args.out, reference=not args.no_reference)}")


def _cmd_sweep(args: argparse.Namespace) -> None:
    """Cells' progress on stderr, the summary table on stdout; exit code 1 when a cell failed."""
    from .runner.sweep import run_sweep

    result = run_sweep(args.file, dry_run=args.dry_run, rerun=args.rerun, progress=not args.no_progress,
                       echo=lambda line: print(line, file=sys.stderr, flush=True))
    print("\n".join(result.lines()))
    if result.failed:
        raise ConvbenchError(f"{len(result.failed)} of {len(result.cells)} cells failed (errors above and in "
                             f"{result.out / 'sweep.json'}); run the sweep again to retry them")
    if result.report_failed:
        raise ConvbenchError(f"every cell finished, but {result.report_note}")


def _cmd_compare(args: argparse.Namespace) -> None:
    from .report.runs import load_runs
    from .nc.compare import compare_nc_runs

    a, b = load_runs([args.run_a, args.run_b])
    if a.benchmark != "nc" or b.benchmark != "nc":
        raise ConvbenchError(f"convbench compare takes two NC-Bench runs; got {a.benchmark} and {b.benchmark}")
    from .nc.run import run_parsing

    for key in ("dataset_fingerprint", "judge", "rules", "parsing", "judge_template", "judge_template_sha256",
                "fill_request_details", "first_line_only"):
        # the reading as each run was scored (older names and a reading not recorded: what they meant)
        seen = [run_parsing(r.signature) if key == "parsing" else r.signature.get(key) for r in (a, b)]
        if seen[0] != seen[1]:
            warn(f"the runs differ in {key}: {seen[0]!r} vs {seen[1]!r}")
    result = compare_nc_runs(a.records, b.records, n_resamples=args.resamples, seed=args.seed)
    print(f"{a.name} - {b.name} (accuracy points, {result['overall']['n']} rows)")
    for name, test in [("overall", result["overall"]), *result["per_set"].items(), *result["per_set_pattern"].items()]:
        flag = "" if test["significant"] else "  n.s."
        print(f"  {name:<24} {test['difference']:+6.1f}  95% [{test['interval'][0]:+.1f}, {test['interval'][1]:+.1f}]"
              f"  p(bootstrap) {test['p_bootstrap']:.3f}  p(randomisation) {test['p_randomization']:.3f}{flag}")


def _cmd_publish(args: argparse.Namespace) -> None:
    from .publish import publish_dataset, publish_metric

    if args.what[0] == "metric":
        if len(args.what) != 2:
            raise ConvbenchError("usage: convbench publish metric METRIC_NAME --repo-id ORG/NAME")
        print(f"published metric {args.what[1]}: {publish_metric(args.what[1], args.repo_id, private=args.private)}")
        return
    if len(args.what) != 1:
        raise ConvbenchError("usage: convbench publish NAME --repo-id ORG/NAME [--folder DIR]")
    folder = args.folder or f"hub/{args.what[0]}"
    print(f"published {folder}: {publish_dataset(folder, args.repo_id, private=args.private)}")


def _cmd_install(args: argparse.Namespace) -> None:
    from .api import install

    result = install(args.name, args.dataset, sources=args.sources, force=args.force, progress=not args.no_progress)
    print("\n".join(result.lines()))


def _cmd_metrics(args: argparse.Namespace) -> None:
    from .publish import install_metrics

    if args.action == "export":
        from pathlib import Path

        from .standalone import export_metric, metric_names

        if not args.out:
            raise ConvbenchError("usage: convbench metrics export [NAME ...] --out DIR")
        for name in args.names or metric_names():
            print(f"exported {export_metric(name, Path(args.out) / name)}")
        return
    if args.out:
        raise ConvbenchError("--out applies to `convbench metrics export` only")
    for path in install_metrics(args.names or None):
        print(f"installed {path}")


def _cmd_score(args: argparse.Namespace) -> None:
    from .runner import score_run

    if args.from_lm_eval is not None:
        _cmd_score_lm_eval(args)
        return
    given = [flag for flag, value in (("--judge", args.judge), ("--out", args.out), ("--judge-template", args.judge_template),
                                      ("--judge-base-url", args.judge_base_url), ("--judge-param", args.judge_param),
                                      ("--dataset", args.dataset),
                                      ("--sources", args.sources), ("--cache", args.cache),
                                      ("--max-error-rate", args.max_error_rate is not None)) if value]
    if args.rundir is None or given:
        raise ConvbenchError("convbench score takes a run folder (RUNDIR [--rules] [--parsing]) or --from-lm-eval SAMPLES.jsonl "
                             f"--judge SPEC --out RUN{'; ' + ', '.join(given) + ' go with --from-lm-eval' if given else ''}")
    options = {option.dest: getattr(args, _flag_attr(option.flag)) for bench in _run_registry().values()
               for option in bench.rescore_options if option.given(getattr(args, _flag_attr(option.flag)))}
    result = score_run(args.rundir, **options)
    _print_run(result, rescored=True)


def _cmd_merge(args: argparse.Namespace) -> None:
    from .runner.shards import merge_runs

    result = merge_runs(args.rundirs, args.out)
    print(f"merged {len(args.rundirs)} shards ({len(result.records)} rows) into {result.path}")
    _print_run(result, rescored=True, records_written=True)


def _cmd_score_lm_eval(args: argparse.Namespace) -> None:
    from .nc.lm_eval.samples import score_lm_eval_samples

    if args.rundir is not None or not args.judge or not args.out:
        raise ConvbenchError("convbench score --from-lm-eval SAMPLES.jsonl needs --judge SPEC (lm-eval runs no judge; "
                             "baseline:smoke-judge for a smoke test) and --out RUN, and no run folder")
    limit = {} if args.max_error_rate is None else {"max_error_rate": args.max_error_rate}
    try:
        result = score_lm_eval_samples(
            args.from_lm_eval, judge=args.judge[0] if len(args.judge) == 1 else args.judge, out=args.out,
            template=args.judge_template or "released", rules=args.rules or "paper", parsing=args.parsing or "exact",
            dataset=args.dataset,
            sources=args.sources, cache=args.cache, judge_options=_lm_eval_judge_options(args),
            progress=not args.no_progress, **limit,
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


def _cmd_lm_eval_path(args: argparse.Namespace) -> None:
    from .integrations.lm_eval import tasks_path

    print(tasks_path())


def _cmd_import_inspect(args: argparse.Namespace) -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise ConvbenchError("import-inspect needs inspect_ai: pip install \"convbench[inspect]\"") from None
    from .integrations.inspect.importer import import_inspect_log

    result = import_inspect_log(args.log, args.out, epoch=args.epoch)
    _print_run(result, rescored=True, records_written=True)


def _cmd_cache(args: argparse.Namespace) -> None:
    from .cache_dir import derived_entries
    from .runner.cache import DamagedCacheError, ResponseCache, delete_damaged_cache

    if args.derived:
        if args.action != "clear" or args.model or args.cache:
            raise ConvbenchError("--derived goes with `convbench cache clear` alone (no --model, no --cache)")
        deleted = 0
        for entries in derived_entries().values():
            for entry in entries:
                entry.unlink(missing_ok=True)
                deleted += 1
        print(f"deleted {deleted} derived cache entries (kept rows, parsed YAML); the next commands make them again")
        return
    try:
        with ResponseCache(args.cache) as cache:
            if args.action == "clear":
                deleted = cache.clear(args.model)
                print(f"deleted {deleted} entries from {cache.path}")
                if deleted == 0 and args.model:
                    warn(f"no entries for model {args.model!r}; `convbench cache stats` lists them")
                return
            stats = cache.stats()
    except DamagedCacheError as err:
        # a damaged cache cannot be emptied entry by entry: `clear` deletes the file (when it is ours)
        if args.action != "clear":
            raise
        if args.model:
            raise ConvbenchError(
                f"response cache {err.path} is damaged ({err.reason}), so one model's entries cannot be picked out; "
                "`convbench cache clear` without --model deletes the whole file"
            ) from None
        files = delete_damaged_cache(err.path)
        print(f"deleted the damaged cache {', '.join(map(str, files))}; the next run starts an empty one")
        return
    print(f"{stats['path']}: {stats['entries']} entries, {stats.get('errors', 0)} per-row errors, {stats['bytes']} bytes")
    for m in stats["models"]:
        print(f"  {m['backend']}:{m['model']}  {m['entries']} entries, {m['prompt_tokens']} prompt + "
              f"{m['completion_tokens']} completion tokens")
    derived = derived_entries()
    print("derived caches (made again when missing; `convbench cache clear --derived` deletes them): "
          + ", ".join(f"{name}/ {len(entries)} entries, {sum(_size(e) for e in entries)} bytes"
                      for name, entries in derived.items()))


def _size(path: Path) -> int:
    """A file's size, 0 when it went meanwhile (another process cleared it)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _cmd_agreement(args: argparse.Namespace) -> None:
    """``[nc] A B``: NC-Bench label agreement; ``cocoeval HUMANS RUNDIR``: CoCoEval judge-human agreement."""
    import json

    inputs = list(args.inputs)
    form = inputs.pop(0) if inputs[0] in ("nc", "cocoeval") else "nc"  # a file named so: ./nc
    if len(inputs) != 2:
        raise ConvbenchError("usage: convbench agreement [nc] A.jsonl B.jsonl, or convbench agreement cocoeval "
                             "HUMANS.jsonl RUNDIR")
    if form == "cocoeval":
        from .cocoeval.cocoeval_agreement import cocoeval_agreement

        for option in ("label_mode", "rules"):
            if getattr(args, option) is not None:
                raise ConvbenchError(f"--{option.replace('_', '-')} applies to NC-Bench agreement only")
        result: Any = cocoeval_agreement(inputs[0], inputs[1], taxonomy=args.taxonomy, n_bootstrap=args.bootstrap,
                                         seed=args.seed, bootstrap_unit=args.bootstrap_unit or "continuation")
    else:
        from .nc.agreement import agreement_files

        for option in ("taxonomy", "bootstrap_unit"):
            if getattr(args, option) is not None:
                raise ConvbenchError(f"--{option.replace('_', '-')} applies to `convbench agreement cocoeval` only")
        result = agreement_files(
            inputs[0], inputs[1], label_mode=args.label_mode or "first", n_bootstrap=args.bootstrap, seed=args.seed,
            rules=args.rules or "paper",
        )
    print(json.dumps(result.to_dict(), indent=2, allow_nan=False) if args.json else "\n".join(result.lines()))


def _cmd_export(args: argparse.Namespace) -> None:
    from .cocoeval.sft import export_sft

    done = export_sft(args.out, args.turns_per_call, config=args.config, seed=args.seed, style=args.prompt,
                      taxonomy=args.taxonomy, repetition_countermeasure=not args.no_repetition_countermeasure,
                      dataset=args.dataset, sources=args.sources)
    print(f"wrote {done.examples} examples ({args.turns_per_call} turns per call, {args.config} train split) to "
          f"{done.path}, signature in {done.path.name}.convbench.json")
    unlisted = done.signature["targets_with_unlisted_speakers"]["count"]
    if unlisted:
        warn(f"{unlisted} of {done.examples} targets name a speaker the prompt does not list (kept; ids in the signature)")


def _cmd_list(args: argparse.Namespace) -> None:
    from .api import list_benchmarks

    for bench in list_benchmarks():
        print(f"{bench.name}: {bench.title}  [license: {bench.license}; {bench.needs}]")
        for config, splits in bench.configs.items():
            print(f"  {config:<20} " + "  ".join(f"{s}: {'?' if n is None else n} rows" for s, n in splits.items()))


def _cmd_build(args: argparse.Namespace) -> None:
    from .api import build

    options: dict[str, Any] = {}
    for stage in ("summarizer", "cleaner", "metadata_model"):  # cocoeval's model-made stages
        spec, base_url = getattr(args, stage), getattr(args, f"{stage}_base_url")
        if spec or base_url:
            if args.name != "cocoeval":
                raise ConvbenchError(f"--{stage.replace('_', '-')} applies to cocoeval only")
            if not spec:
                raise ConvbenchError(f"--{stage.replace('_', '-')}-base-url needs --{stage.replace('_', '-')}")
            options[stage] = spec
            options[f"{stage}_options"] = {"base_url": base_url} if base_url else {}
        flag = f"--{stage.replace('_', '-')}-param"
        params = _params(getattr(args, f"{stage}_param"), flag)
        if params:
            if args.name != "cocoeval" or not spec:
                raise ConvbenchError(f"{flag} needs --{stage.replace('_', '-')} (cocoeval)")
            options[f"{stage}_options"]["params"] = params
    for flag, value in (("--cache", args.cache), ("--retry-errors", args.retry_errors),
                        ("--max-error-rate", args.max_error_rate)):
        if value not in (None, False):
            if args.name != "cocoeval":
                raise ConvbenchError(f"{flag} applies to cocoeval's model-made stages only")
            options[flag.lstrip("-").replace("-", "_")] = value
    summary = build(args.name, args.out, sources=args.sources, data_dir=args.data_dir, progress=not args.no_progress,
                    **options)
    print("\n".join(summary.lines()))


COMMANDS = {
    "list": _cmd_list,
    "build": _cmd_build,
    "run": _cmd_run,
    "score": _cmd_score,
    "merge": _cmd_merge,
    "report": _cmd_report,
    "sweep": _cmd_sweep,
    "publish": _cmd_publish,
    "metrics": _cmd_metrics,
    "install": _cmd_install,
    "compare": _cmd_compare,
    "cache": _cmd_cache,
    "agreement": _cmd_agreement,
    "export": _cmd_export,
    "import-inspect": _cmd_import_inspect,
    "lm-eval-path": _cmd_lm_eval_path,
}


def main(argv: Sequence[str] | None = None) -> int:
    """The ``convbench`` command on ``argv`` (default: the process's own arguments); the exit code.

    With the process's own arguments (the ``convbench`` script, ``python -m convbench_datasets.cli``), the
    interpreter's last garbage collection at exit is skipped: see :func:`_no_collection_at_exit`.
    """
    if argv is None:
        _no_collection_at_exit()
    with plain_warnings():
        return _main(argv)


@functools.cache  # once per process
def _no_collection_at_exit() -> None:
    """Freeze the objects alive when the process exits (:func:`gc.freeze`, as the last exit handler), so that
    the interpreter's teardown does not walk them all looking for reference cycles: about 0.1 s after a run
    (a tenth of a one-row run's cost, #20), for nothing a finished command needs. Every exit handler still
    runs, streams are still flushed and objects still freed by reference count; only objects held in cycles
    are left to the operating system, as Python never promises to finalize them at exit anyway."""
    import atexit
    import gc

    atexit.register(gc.freeze)  # registered before the command runs: the handlers it adds run first


# flags a user may try for the key itself (spelled without dashes, - or _), and cut-short --api-key-env:
# refused before argparse, whose "unrecognized arguments" error would print the key that follows
_KEY_FLAGS = {"apikey", "openaiapikey", "key", "token"}


def _key_flag(name: str) -> bool:
    spelled = name.lstrip("-").replace("-", "").replace("_", "").lower()
    return spelled in _KEY_FLAGS or (spelled.startswith("api") and spelled != "apikeyenv"
                                     and ("apikeyenv".startswith(spelled) or spelled.startswith("apikey")))


def _refuse_key_flags(argv: Sequence[str]) -> None:
    """Refuse ``--api-key KEY`` and the like by name, without showing the value given with it."""
    for arg in argv:
        if arg == "--":
            return
        name = arg.partition("=")[0]
        if name.startswith("--") and _key_flag(name):
            raise ConvbenchError(f"there is no {name} flag: a key on the command line stays in shell histories and "
                                 "logs; put it in an environment variable and name that variable with --api-key-env "
                                 "NAME (default OPENAI_API_KEY). The value given with it is not shown")


class _Narrow(argparse.ArgumentParser):
    """A parser of one benchmark's flags that gives up instead of printing an error (see :func:`_parse`)."""

    def error(self, message: str) -> NoReturn:
        raise _NotNarrow(message)

    def print_help(self, file: Any = None) -> None:  # a help flag _parse did not spot (-vh): the full parser's help
        raise _NotNarrow("help")


class _NotNarrow(Exception):
    pass


def _parse(argv: list[str]) -> argparse.Namespace:
    """The parsed command line. ``convbench run NAME ...`` is parsed first with NAME's flags only, so that a
    run imports its own benchmark, not every one (their imports are a short run's largest cost); whatever that
    parser would not take as typed (another benchmark's flag, a mistake, ``--help``) is parsed again by the
    full parser, whose messages and help are the same as ever."""
    # the words that are no flag (nor the value of --log-level, the one global flag that takes one)
    words = [w for i, w in enumerate(argv) if not w.startswith("-") and (i == 0 or argv[i - 1] != "--log-level")]
    name = words[1] if words[:1] == ["run"] and len(words) > 1 else None
    if name in RUNS and not {"-h", "--help"} & set(argv):
        try:
            args, extra = _parser(name).parse_known_args(argv)
            if not extra and args.command == "run" and args.name == name:
                return args
        except _NotNarrow:
            pass
    return _parser().parse_args(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        _refuse_key_flags(sys.argv[1:] if argv is None else argv)
        args = _parse(sys.argv[1:] if argv is None else list(argv))  # inside: `convbench --help | head -1` is a closed pipe too
        set_verbosity(args.verbose, args.quiet, args.log_level)
        COMMANDS[args.command](args)
        sys.stdout.flush()  # a reader that left shows here, not as a traceback at interpreter exit
    except (ConvbenchError, OSError, ValueError, sqlite3.Error) as err:
        if isinstance(err, BrokenPipeError) and stdout_closed():  # `convbench list | head -1`: not an error
            detach_stdout()
            return 0
        if os.environ.get("CONVBENCH_DEBUG"):
            raise
        print(f"convbench: error: {err}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as err:  # an optional dependency: one line naming the extra, never a traceback
        if os.environ.get("CONVBENCH_DEBUG"):
            raise
        print(f"convbench: error: {missing_module_message(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("convbench: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
