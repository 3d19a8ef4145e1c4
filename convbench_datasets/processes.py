"""Who wrote a temporary file or folder: this host's name and whether a process id still runs.

Temporary names carry ``HOST.PID`` so that a later process can tell a dead writer's leftovers (safe to
remove) from a live writer's work (never touched).

Example:
    >>> import os
    >>> pid_alive(os.getpid())
    True
"""

from __future__ import annotations

import os
import re
import socket

HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (another user's counts; on Windows: always assumed)."""
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process there; rely on age alone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
