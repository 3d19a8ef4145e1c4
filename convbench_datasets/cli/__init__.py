"""The ``convbench`` command. Each subcommand is a thin layer over the Python API.

Errors the user can act on are printed as one line (``convbench: error: ...``) with exit code 1.

One module per command group: :mod:`.run` (run, sweep, merge, score), :mod:`.data` (list, build, install,
publish, metrics, export, lm-eval-path), :mod:`.results` (agreement, report, compare, import-inspect), :mod:`.cache`.
"""


import argparse
import functools
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .._console import detach_stdout, plain_warnings, set_verbosity, stdout_closed
from .._version import __version__
from ..extras import missing_module_message
from ..errors import ConvbenchError
from ..registry import RUNS
from . import cache, data, results, run
from ._parsing import _verbosity_flags


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
    if only:  # the narrow parser (see _parse) reads `convbench run NAME ...` only: no other command to build
        run.add_run(commands, only)
        return parser
    for add in (data.add_list, data.add_build, data.add_install, results.add_agreement,
                lambda commands: run.add_run(commands, None), run.add_sweep, results.add_report, results.add_compare,
                data.add_publish, data.add_metrics, data.add_export, run.add_merge, run.add_score,
                results.add_import_inspect, data.add_lm_eval_path, cache.add_cache):
        add(commands)  # in the order of `convbench --help`
    return parser


COMMANDS = {
    "list": data._cmd_list,
    "build": data._cmd_build,
    "run": run._cmd_run,
    "score": run._cmd_score,
    "merge": run._cmd_merge,
    "report": results._cmd_report,
    "sweep": run._cmd_sweep,
    "publish": data._cmd_publish,
    "metrics": data._cmd_metrics,
    "install": data._cmd_install,
    "compare": results._cmd_compare,
    "cache": cache._cmd_cache,
    "agreement": results._cmd_agreement,
    "export": data._cmd_export,
    "import-inspect": results._cmd_import_inspect,
    "lm-eval-path": data._cmd_lm_eval_path,
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
