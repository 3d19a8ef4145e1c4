"""What every command's parser shares: a subcommand with its summary, the verbosity flags, flag value types."""

from __future__ import annotations

import argparse
from typing import Any

from .._console import LEVELS


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


def _flag_attr(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")
