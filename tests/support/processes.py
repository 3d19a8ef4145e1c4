"""Other Python processes for tests: code run in a fresh interpreter, and the id of one that has exited."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: what a fresh interpreter imports convbench from


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` (dedented) in the checkout, with this process's environment and ``env`` on top."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=600)


def dead_pid() -> int:
    """The id of a process of this host that has exited (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid
