"""A usage error raised inside an lm-eval run: one line on the terminal, a ConvbenchError in Python.

lm-eval's command line prints the traceback of any exception a task raises; for a flag the user left
out (``--apply_chat_template``) the traceback hides the one line that matters. Under lm-eval's command
line such an error ends the process with that line (``SystemExit``, which prints no traceback); called
from Python (``lm_eval.simple_evaluate`` in a notebook) it stays a ConvbenchError to catch.
"""

from __future__ import annotations

import os
import sys

from ...errors import ConvbenchError

COMMANDS = ("lm_eval", "lm-eval")


class LmEvalUsageError(ConvbenchError):
    """A flag or option of the lm-eval run that convbench's task cannot work with."""


def under_lm_eval_cli() -> bool:
    """Whether this process is lm-eval's command line (``lm_eval ...`` or ``python -m lm_eval ...``)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return os.path.basename(sys.argv[0] if sys.argv else "") in COMMANDS or (
        spec is not None and spec.name.split(".")[0] == "lm_eval")


def usage_error(message: str) -> BaseException:
    """The error to raise for ``message``: a one-line exit under lm-eval's command line, else an exception."""
    if under_lm_eval_cli():
        return SystemExit(f"lm_eval: error: {message}")
    return LmEvalUsageError(message)
