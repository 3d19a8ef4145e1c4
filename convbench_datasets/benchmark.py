"""The Benchmark interface: what a benchmark package gives the runner (``runner/pipeline.py``).

A benchmark lives in its own folder (``nc/``, ``nico/``, ``cocoeval/``) and exposes one object
(``BENCHMARK`` in its ``run.py``, found through :mod:`convbench_datasets.registry`). The runner owns
everything that is the same for every benchmark: the run folder and its lock, the response cache, the
backends of each role and their life cycle, preflight, progress, resume, per-row errors, shards,
signatures' common fields, and re-scoring a folder. The benchmark owns what is its own:

- ``options``: its settings, declared once: keyword arguments of its ``run_*`` function and flags of
  ``convbench run NAME`` (the CLI builds them from these declarations);
- ``plan(settings)``: checks the settings (a clear error for a bad value) and returns a :class:`Plan`:
  the rows it reads, the stages it runs (prompt builders and answer parsers, through a
  :class:`~convbench_datasets.runner.session.Session`), its signature fields and its scores;
- ``check_records`` and ``rescore(records, signature, previous, options)``: results again from a run folder's records, no model called;
- ``summary(results)`` and ``warnings(results)``: what ``convbench run`` and ``convbench score`` print.

Adding a benchmark means a package with a builder and a ``run.py`` holding such an object, and one line:
in the registry's ``BENCHMARKS``, or an entry point of an installed package (``convbench.benchmarks``):
nothing in ``runner/`` or the CLI names a benchmark.

Example:
    >>> from convbench_datasets.registry import get_benchmark
    >>> nico = get_benchmark("nico")
    >>> nico.name, nico.judges
    ('nico', (0, 0))
    >>> [option.flag for option in nico.options][:2]
    ['--task', '--shots']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .runner.session import Session

Row = dict[str, Any]
Record = dict[str, Any]


@dataclass(frozen=True)
class Option:
    """One setting of a benchmark: a keyword of its run function and a flag of ``convbench run``.

    ``dest`` is the keyword. ``action`` is argparse's (``store_true``) or None for a value;
    ``to_settings`` turns the parsed value into keywords when the flag is not the keyword one to one
    (``--all-lines`` -> ``first_line_only=False``). ``default`` is the run function's default for
    ``dest``, read from its signature (:func:`declare`), so that it is written once.
    """

    flag: str
    dest: str
    help: str
    type: Callable[[str], Any] | None = None
    choices: Sequence[Any] | None = None
    metavar: str | None = None
    action: str | None = None
    to_settings: Callable[[Any], dict[str, Any]] | None = None
    default: Any = None

    def given(self, value: Any) -> bool:
        """Whether a parsed flag value was given (argparse leaves None, or False for ``store_true``)."""
        return not (value is None or (self.action == "store_true" and value is False))

    def settings(self, value: Any) -> dict[str, Any]:
        """The run keywords for a parsed flag value; the run function's default when it was not given."""
        if not self.given(value):
            return {self.dest: self.default}
        return self.to_settings(value) if self.to_settings else {self.dest: value}


def declare(function: Callable[..., Any], *options: Option) -> tuple[Option, ...]:
    """``options`` with each ``default`` read from ``function``'s signature (its keyword ``dest``).

    Example:
        >>> def run_x(*, shots: int = 0) -> None: ...
        >>> declare(run_x, Option("--shots", "shots", "prompts' shots"))[0].default
        0
    """
    import inspect
    from dataclasses import replace

    parameters = inspect.signature(function).parameters
    missing = [o.dest for o in options if o.dest not in parameters]
    if missing:
        raise TypeError(f"{function.__name__} takes no keyword {', '.join(missing)}")
    def default(name: str) -> Any:  # a required keyword (NICO's task) has none: None, for the plan to refuse
        value = parameters[name].default
        return None if value is inspect.Parameter.empty else value

    return tuple(replace(o, default=default(o.dest)) for o in options)


@dataclass
class Executed:
    """What a plan's stages produced: one record per row (in row order) and the run's counts
    (model calls, cache hits...), which go to ``results.json``'s ``stats``."""

    records: list[Record]
    stats: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Plan(Protocol):
    """One run of a benchmark with its settings fixed."""

    def rows(self) -> list[Row]:
        """Every row the settings select, in the benchmark's order (the runner applies limit and shard)."""

    def execute(self, session: Session, rows: list[Row]) -> Executed:
        """Run the stages on ``rows`` with the session's backends and cache; a record per row."""

    def signature(self, session: Session) -> dict[str, Any]:
        """The benchmark's own signature fields (prompt hashes, token limits, rules...); the runner adds
        version, benchmark, rows, fingerprint, model and judge identities, limit and shard."""

    def results(self, records: list[Record], signature: dict[str, Any]) -> dict[str, Any]:
        """The scores of a fresh run (may use what re-scoring cannot, such as a BERTScore model)."""


@runtime_checkable
class Benchmark(Protocol):
    """A benchmark the runner can drive (see the module docstring)."""

    name: str
    title: str
    judges: tuple[int, int | None]  # how many judges a run takes: (least, most; None: any number)
    # optional, ``strata: tuple[str, ...]``: the row fields ``--sample`` spreads a sample over
    # (runner/sample.py); a benchmark without it is sampled without strata
    options: tuple[Option, ...]
    rescore_options: tuple[Option, ...]  # re-scoring choices: keywords of ``score_run``, flags of ``convbench score``

    def run(self, **kwargs: Any) -> Any:
        """Its public run function (``run_nc``...): what ``convbench run NAME`` calls."""

    def plan(self, settings: Mapping[str, Any], *, dataset: str | os.PathLike[str] | None,
             sources: str | os.PathLike[str] | None) -> Plan:
        """Check ``settings`` (its run function's keywords, others refused) and fix the run's plan;
        ``dataset``: a built folder to read rows from (default: the cached build), ``sources``: the mirror."""

    def check_records(self, records: list[Record], signature: dict[str, Any]) -> None:
        """Refuse records a re-score cannot read (the error names the line and field)."""

    def rescore(self, records: list[Record], signature: dict[str, Any], previous: dict[str, Any],
                options: Mapping[str, Any]) -> dict[str, Any]:
        """Results from a folder's records (checked here, field by field); ``options`` are re-scoring
        choices (NC-Bench's ``rules``: it records them in ``signature``, which it may update); the runner
        has refused a folder that lost rows before calling."""

    def carried(self, shards: list[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
        """For ``convbench merge``: results that re-scoring cannot recompute (a model's figure, such as
        BERTScore), joined from the shards' results (``{}`` when there are none)."""

    def summary(self, results: dict[str, Any], rescored: bool = False) -> list[str]:
        """Lines that present the results on a terminal (``rescored``: after ``convbench score``)."""

    def warnings(self, results: dict[str, Any]) -> list[str]:
        """Warnings the results call for (a judge that fails its sanity check...), one line each."""


def make_plan(cls: type[Any], settings: Mapping[str, Any], title: str) -> Any:
    """``cls(**settings)`` (a plan dataclass), refusing keywords it does not take by name.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class P:
        ...     task: str = "a"
        >>> make_plan(P, {"tsak": "b"}, "NICO")
        Traceback (most recent call last):
        convbench_datasets.errors.ConvbenchError: NICO takes no setting 'tsak' (its settings: task)
    """
    from dataclasses import fields

    from .errors import ConvbenchError

    known = [f.name for f in fields(cls) if f.init]
    unknown = [name for name in settings if name not in known]
    if unknown:  # dataset and sources are the run's own arguments, not settings
        shown = ", ".join(name for name in known if name not in ("dataset", "sources"))
        raise ConvbenchError(f"{title} takes no setting {', '.join(map(repr, unknown))} (its settings: {shown})")
    return cls(**settings)


def positive(text: str) -> int:
    """A flag value that must be a whole number of at least 1."""
    import argparse

    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative(text: str) -> int:
    """A flag value that must be a whole number of at least 0."""
    import argparse

    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value
