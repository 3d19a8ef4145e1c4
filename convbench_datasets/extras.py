"""Optional dependencies: which extra installs a module, and one-line errors that name it.

The extras themselves are declared once, in ``pyproject.toml``; this module reads them back from the
installed package's metadata (``importlib.metadata``), so a module moved to another extra needs no edit
here. The ``test`` extra, which holds everything, is never the one named.

Example:
    >>> extra_for("matplotlib")
    'report'
    >>> extra_for("bert_score")
    'bertscore'
    >>> require("a report", "json")  # installed: nothing happens
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache

from .errors import ConvbenchError

DISTRIBUTION = "convbench"


class MissingExtra(ConvbenchError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""


@lru_cache(maxsize=1)
def _extras() -> dict[str, str]:
    """Import name -> the first extra (in the metadata's order, ``test`` last) that installs it."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        requirements = requires(DISTRIBUTION) or []
    except PackageNotFoundError:  # running from a source tree that was never installed
        return {}
    found: dict[str, str] = {}
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9_.-]+).*;\s*extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        if match is None:
            continue
        module, extra = match[1].lower().replace("-", "_"), match[2]
        if found.get(module, "test") == "test":  # the first extra that has it; ``test`` only as a last resort
            found[module] = extra
    return found


def extra_for(module: str) -> str | None:
    """The extra that installs the top-level module ``module`` (``"matplotlib"`` -> ``"report"``), or None."""
    return _extras().get(module.split(".")[0].lower())


def install_hint(module: str) -> str:
    """``pip install 'convbench[EXTRA]'`` for ``module``, or ``pip install MODULE`` when no extra has it."""
    extra = extra_for(module)
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install {module.split('.')[0]}"


def require(purpose: str, *modules: str) -> None:
    """Raise :class:`MissingExtra` (one line: what needs it, what is missing, the command that installs
    it) unless every module in ``modules`` can be imported; checked before any work starts."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(f"{purpose} needs {', '.join(missing)}, which is not installed: {install_hint(missing[0])}")


def missing_module_message(err: ModuleNotFoundError) -> str:
    """One line for an optional module that an import did not find (the CLI's last resort)."""
    name = err.name or str(err)
    return f"{name} is not installed: {install_hint(name)}"


__all__ = ["MissingExtra", "extra_for", "install_hint", "require", "missing_module_message"]
