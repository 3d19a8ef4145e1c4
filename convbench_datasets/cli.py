"""The ``convbench`` command. Each subcommand is a thin layer over the Python API.

Errors the user can act on are printed as one line (``convbench: error: ...``) with exit code 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__
from .errors import ConvbenchError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="convbench",
        description="Build, run and score conversation benchmarks (NC-Bench, NICO, CoCoEvalBench).",
    )
    parser.add_argument("--version", action="version", version=f"convbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("list", help="benchmarks, their configs, row counts and licenses")

    build = commands.add_parser("build", help="build a benchmark into a Hub-layout dataset folder")
    build.add_argument("name", help="benchmark name (see `convbench list`)")
    build.add_argument("--out", required=True, help="folder to write (replaced if it is an earlier build)")
    build.add_argument("--sources", metavar="DIR", help="local mirror of the upstream files (default: $CONVBENCH_SOURCES, else download)")
    build.add_argument("--data-dir", metavar="DIR", help="user-supplied data, for benchmarks that need it")
    build.add_argument("--no-progress", action="store_true", help="hide progress bars")
    agree = commands.add_parser("agreement", help="judge agreement: Cohen's kappa and % agreement of two raters' NC-Bench labels")
    agree.add_argument("rater_a", help="JSON Lines: id, set, and labels or judge_output (and passed, acceptable_labels or task)")
    agree.add_argument("rater_b", help="the same rows rated by the other rater")
    agree.add_argument("--label-mode", choices=["first", "set"], default="first",
                       help="compare each row's first label (default) or its whole label set")
    agree.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples (default 1000)")
    agree.add_argument("--seed", type=int, default=0)
    agree.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def _cmd_agreement(args: argparse.Namespace) -> None:
    import json

    from .scoring.agreement import agreement_files

    result = agreement_files(
        args.rater_a, args.rater_b, label_mode=args.label_mode, n_bootstrap=args.bootstrap, seed=args.seed
    )
    print(json.dumps(result.to_dict(), indent=2) if args.json else "\n".join(result.lines()))


def _cmd_list(args: argparse.Namespace) -> None:
    from .api import list_benchmarks

    for bench in list_benchmarks():
        print(f"{bench.name}: {bench.title}  [license: {bench.license}; {bench.needs}]")
        for config, splits in bench.configs.items():
            print(f"  {config:<20} " + "  ".join(f"{s}: {n} rows" for s, n in splits.items()))


def _cmd_build(args: argparse.Namespace) -> None:
    from .api import build

    summary = build(args.name, args.out, sources=args.sources, data_dir=args.data_dir, progress=not args.no_progress)
    print("\n".join(summary.lines()))


COMMANDS = {"list": _cmd_list, "build": _cmd_build, "agreement": _cmd_agreement}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        COMMANDS[args.command](args)
    except (ConvbenchError, OSError) as err:
        print(f"convbench: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("convbench: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
