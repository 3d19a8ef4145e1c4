"""The Benchmark interface: what a benchmark package gives the runner (``runs/pipeline.py``).

A benchmark lives in its own folder (``nc/``, ``nico/``, ``cocoeval/``) and exposes one object
(``BENCHMARK`` in its ``run.py``, found through :mod:`convbench_datasets.registry`). The runner owns
everything that is the same for every benchmark: the run folder and its lock, the response cache, the
backends of each role and their life cycle, preflight, progress, resume, per-row errors, shards,
signatures' common fields, and re-scoring a folder. The benchmark owns what is its own:

- ``settings``: its settings dataclass, each field declared once with its help, flag, signature key and the
  paper's value (:mod:`convbench_datasets.settings`); ``options`` (the flags of ``convbench run NAME``, a
  sweep block's keys) are read from it, and so are the report's departures from the paper;
- ``plan(settings)``: checks the settings (a clear error for a bad value) and returns a :class:`Plan`:
  the rows it reads, the stages it runs (prompt builders and answer parsers, through a
  :class:`~convbench_datasets.engine.session.Session`), its signature fields and its scores;
- ``check_records`` and ``rescore(records, signature, previous, options)``: results again from a run folder's records, no model called;
- ``summary(results)`` and ``warnings(results)``: what ``convbench run`` and ``convbench score`` print.

:class:`BenchmarkBase` gives every part a default but the name, the settings, the plan and the re-scoring.
Adding a benchmark means a package with a builder and a ``run.py`` holding such an object, and one line:
in the registry's ``BENCHMARKS``, or an entry point of an installed package (``convbench.benchmarks``):
nothing in ``engine/`` or the CLI names a benchmark.

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
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .settings import Option

if TYPE_CHECKING:
    from .engine.session import Session

Row = dict[str, Any]
Record = dict[str, Any]


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
    strata: tuple[str, ...]  # the row fields ``--sample`` spreads a sample over (engine/sample.py)
    settings: type  # its settings dataclass (convbench_datasets.settings): flags, signature, the paper's values
    options: tuple[Option, ...]  # the flags of its settings
    rescore_options: tuple[Option, ...]  # re-scoring choices: keywords of ``score_run``, flags of ``convbench score``
    paper_judge: str | None  # the paper's judge (a name its judge spec must hold to compare with the paper)

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

    def build_departures(self, build: Mapping[str, Any]) -> list[str]:
        """How the dataset build a run read (its signature's ``dataset_build``) departs from the paper's."""

    def unread(self, results: dict[str, Any]) -> list[Unread]:
        """Per judge, how many of its answers could not be read, of how many (``convbench run``, ``merge`` and
        ``score`` fail above ``--max-unparsed-rate``; see :mod:`convbench_datasets.runs.run_checks`)."""

    def unmeasured(self, results: dict[str, Any]) -> str | None:
        """Why the run measured nothing (no row could be scored), or None: such a run exits non-zero."""


@dataclass(frozen=True)
class Unread:
    """``count`` of ``total`` ``what`` (a benchmark's judge answers, say) could not be read; ``spec``: the judge
    that gave them (a ``baseline:`` judge is no model: its answers are what it is for, never held to a limit)."""

    count: int
    total: int
    what: str
    spec: str | None = None


class BenchmarkBase:
    """The :class:`Benchmark` contract's defaults, so that a benchmark writes only what is its own: its name and
    title, its ``settings`` dataclass (its flags are read from it), its ``plan_class`` (the settings plus rows,
    stages, signature and scores), ``rescore`` and ``summary``. Defaults: no judge, no strata, no re-scoring
    choices, no paper judge, records taken as they are, nothing carried over a merge, no warnings, no build
    departures.

    Example:
        >>> from dataclasses import dataclass
        >>> from convbench_datasets.settings import setting
        >>> @dataclass
        ... class ToySettings:
        ...     words: int = setting(5, help="toy: words per row (default {default})", paper=5, type=int)
        >>> class Toy(BenchmarkBase):
        ...     name, title, settings = "toy", "Toy", ToySettings
        >>> [o.flag for o in Toy.options], Toy().judges
        (['--words'], (0, 0))
    """

    name: str = ""
    title: str = ""
    judges: tuple[int, int | None] = (0, 0)
    strata: tuple[str, ...] = ()
    settings: type
    plan_class: type | None = None  # None: the settings class is the plan
    options: tuple[Option, ...] = ()
    rescore_options: tuple[Option, ...] = ()
    paper_judge: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "settings" in cls.__dict__:  # its flags, read from its settings' declarations
            from .settings import options

            cls.options = options(cls.settings)

    def plan(self, settings: Mapping[str, Any], *, dataset: str | os.PathLike[str] | None,
             sources: str | os.PathLike[str] | None) -> Plan:
        """``plan_class(**settings, dataset=..., sources=...)``, a setting it does not take refused by name."""
        cls = self.plan_class or self.settings
        run_arguments = {name: value for name, value in (("dataset", dataset), ("sources", sources))
                         if name in {f.name for f in fields(cls)}}
        return make_plan(cls, {**settings, **run_arguments}, self.title)  # type: ignore[no-any-return]

    def check_records(self, records: list[Record], signature: dict[str, Any]) -> None:
        """Nothing to refuse beyond what :meth:`rescore` reads."""

    def rescore(self, records: list[Record], signature: dict[str, Any], previous: dict[str, Any],
                options: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError(f"{self.title} cannot re-score a run folder")

    def carried(self, shards: list[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
        return {}  # re-scoring recomputes every figure

    def summary(self, results: dict[str, Any], rescored: bool = False) -> list[str]:
        return [f"{self.name}: " + ", ".join(f"{key} {value}" for key, value in results.items()
                                            if isinstance(value, (int, float)) and not isinstance(value, bool))]

    def warnings(self, results: dict[str, Any]) -> list[str]:
        return []

    def build_departures(self, build: Mapping[str, Any]) -> list[str]:
        return []

    def unread(self, results: dict[str, Any]) -> list[Unread]:
        return []  # no judge answers to read

    def unmeasured(self, results: dict[str, Any]) -> str | None:
        return None


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
    from .errors import ConvbenchError

    known = [f.name for f in fields(cls) if f.init]
    unknown = [name for name in settings if name not in known]
    if unknown:  # dataset and sources are the run's own arguments, not settings
        shown = ", ".join(name for name in known if name not in ("dataset", "sources"))
        raise ConvbenchError(f"{title} takes no setting {', '.join(map(repr, unknown))} (its settings: {shown})")
    return cls(**settings)
