"""What a run must pass before its numbers leave with exit code 0, checked wherever a number is made: after
``convbench run`` writes its folder, after ``convbench merge`` and after ``convbench score``.

- **errors**: at most ``max_error_rate`` of the rows ended in an error (:mod:`..engine.error_rate`);
- **empty answers**: at most ``max_empty_rate`` of a role's answers were empty (the run's ``stats.empty_answers``,
  per role, counted by its session). One empty answer can be real (NC-Bench has a Silence label); most of a
  run's cannot: that is a server whose reasoning parser moved the answer elsewhere, or a chat template that
  ends at once. A ``baseline:`` role (deterministic, not a model) is never held to it;
- **unread answers**: at most ``max_unparsed_rate`` of the judge answers its benchmark could not read
  (:meth:`~convbench_datasets.benchmark.BenchmarkBase.unread`, a list of :class:`~convbench_datasets.benchmark.Unread`;
  a ``baseline:`` judge is not held to it); more than :data:`WARN_UNPARSED_RATE` of them is a warning;
- **something measured**: a benchmark may say its run measured nothing
  (:meth:`~convbench_datasets.benchmark.BenchmarkBase.unmeasured`: CoCoEval with no instance compared).

A run that fails any check still has its folder written; :func:`check_run` then raises
:class:`~..engine.error_rate.TooManyErrors` (its ``result`` the run's), every failed check in its message.

Example:
    >>> share_problem(3, 20, 0.1, "model answers", "were empty", "--max-empty-rate")
    '3 of 20 model answers (15.0%) were empty, more than the 10% --max-empty-rate allows'
    >>> share_problem(2, 20, 0.1, "model answers", "were empty", "--max-empty-rate") is None
    True
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ..engine.error_rate import TooManyErrors, shown
from ..engine.run_folder import RunResult, row_id

DEFAULT_MAX_EMPTY_RATE = 0.1  # a model with a real Silence answer now and then stays far below it
DEFAULT_MAX_UNPARSED_RATE = 0.1
WARN_UNPARSED_RATE = 0.02  # a few unreadable judge answers: said, not fatal


def share_problem(count: int, total: int, limit: float, what: str, verb: str, flag: str) -> str | None:
    """The line saying ``count`` of ``total`` ``what`` ``verb``, more than the share ``limit`` allows; None
    when it is not more (1 of 20 is 5%, whatever the float rounding)."""
    if total == 0 or count <= limit * total + 1e-9:
        return None
    return f"{count} of {total} {what} ({100 * count / total:.1f}%) {verb}, more than the {shown(limit)} {flag} allows"


RETRY_RUN = "the same command with --retry-errors asks them again"
RETRY_SCORED = "the run's own command (`convbench run ...`) with --retry-errors asks them again, then score it"


def check_run(result: RunResult, bench: Any, *, max_error_rate: float, max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE,
              max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE, retry: str = RETRY_RUN) -> None:
    """Raise :class:`~..engine.error_rate.TooManyErrors` naming every check ``result`` fails (see the module
    docstring); warn where a few judge answers could not be read. ``retry``: how the failed rows are asked again
    (a run: the same command with ``--retry-errors``; a re-score or a merge: the run's own command)."""
    problems: list[str] = []
    counts: list[tuple[int, int, float]] = []  # (count, total, limit) of each failed check, for the exception
    failed = [record for record in result.records if record.get("error") is not None]
    line = share_problem(len(failed), len(result.records), max_error_rate, "rows", "ended in an error",
                         "--max-error-rate")
    if line is not None:
        first = " ".join(str(failed[0]["error"]).split())
        first = first if len(first) <= 200 else first[:199] + "…"
        problems.append(
            f"{line}; first: {row_id(failed[0])}: {first}; the run folder {result.path} is written with them: once the "
            f"cause is fixed, {retry} (a higher --max-error-rate accepts them)")
        counts.append((len(failed), len(result.records), max_error_rate))
    signature = result.results.get("signature") or {}
    for role, tally in empty_answers(result.results).items():
        line = None if _baseline(signature, role) else share_problem(
            tally["empty"], tally["of"], max_empty_rate, f"{role} answers", "were empty", "--max-empty-rate")
        if line is not None:
            problems.append(f"{line}: a server that puts the answer elsewhere (reasoning_content) or a chat template "
                            "that ends at once answers so; a higher --max-empty-rate accepts them")
            counts.append((tally["empty"], tally["of"], max_empty_rate))
    for unread in bench.unread(result.results):
        if isinstance(unread.spec, str) and unread.spec.startswith("baseline:"):
            continue
        line = share_problem(unread.count, unread.total, max_unparsed_rate, unread.what, "could not be read",
                             "--max-unparsed-rate")
        if line is not None:
            problems.append(f"{line}: is the judge following its prompt? (a higher --max-unparsed-rate accepts them)")
            counts.append((unread.count, unread.total, max_unparsed_rate))
        elif share_problem(unread.count, unread.total, WARN_UNPARSED_RATE, unread.what, "", "") is not None:
            warnings.warn(f"{unread.count} of {unread.total} {unread.what} ({100 * unread.count / unread.total:.1f}%) "
                          "could not be read", stacklevel=2)
    nothing = bench.unmeasured(result.results)
    if nothing is not None:
        problems.append(nothing)
        counts.append((len(result.records), len(result.records), 0.0))
    if problems:
        count, total, limit = counts[0]
        raise TooManyErrors("; and ".join(problems), count, total, limit, result)


def empty_answers(results: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """The run's count of empty answers per role (``stats.empty_answers``; {} for a run written before it)."""
    found = (results.get("stats") or {}).get("empty_answers")
    return {str(role): tally for role, tally in found.items() if isinstance(tally, Mapping)} \
        if isinstance(found, Mapping) else {}


def _baseline(signature: Mapping[str, Any], role: str) -> bool:
    """Whether the signature names a ``baseline:`` answerer in ``role`` (``model``, ``judge``, ``judge 2``...)."""
    if role == "model":
        spec = signature.get("model")
    else:
        k = int(role.split()[1]) - 1 if " " in role else 0
        judges = signature.get("judges") or [signature.get("judge")]
        spec = judges[k] if k < len(judges) else None
    return isinstance(spec, str) and spec.startswith("baseline:")
