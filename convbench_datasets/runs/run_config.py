"""A run, declared: which benchmark with which settings, which model roles, which rows, where it writes.

A :class:`RunConfig` is what ``convbench run`` and each sweep cell build and what :func:`.pipeline.run_config`
runs; it pickles and round-trips through JSON (:meth:`RunConfig.to_dict`), so that a job elsewhere (a cluster
job, a batch) can carry it. Its parts are checked once, when made: the roles by :class:`.backends.roles.ModelRole`,
the rows by :class:`Rows`, the benchmark's settings by its settings dataclass (:mod:`convbench_datasets.settings`).

Example (the first benchmark of the registry, with its default settings):
    >>> from convbench_datasets.registry import RUNS
    >>> config = RunConfig.make(list(RUNS)[0], model="baseline:repeat", judge="baseline:silence", out="runs/x",
    ...                         rows=Rows(limit=5))
    >>> config.judges[0].spec, config.rows.limit
    ('baseline:silence', 5)
    >>> RunConfig.from_dict(config.to_dict()) == config
    True
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..counts import MAX_CONCURRENCY, check_count
from ..errors import ConvbenchError
from ..settings import positive
from ..engine.backends import Backend, ModelRole, make_role
from ..engine.backends.roles import OPTIONS
from ..engine.error_rate import DEFAULT_MAX_ERROR_RATE, checked_rate
from ..engine.shard_rows import check_shard
from .run_checks import DEFAULT_MAX_EMPTY_RATE, DEFAULT_MAX_UNPARSED_RATE

Spec = str | Backend
FLAG = "flag"  # the metadata key of a field's `convbench run` flag
LIMITS = ("max_error_rate", "max_empty_rate", "max_unparsed_rate")  # what a run must pass (runs/run_checks.py)


@dataclasses.dataclass(frozen=True)
class RunFlag:
    """A run field's flag of ``convbench run``: its name, help and argparse settings; ``value`` turns the parsed
    flag into the field's value (``--no-progress`` -> ``progress=False``)."""

    flag: str
    help: str
    type: Any = None
    metavar: str | None = None
    action: str | None = None
    parsed_default: Any = None  # what argparse gives when the flag is not given (None: not given)
    required: bool = False
    value: Any = None


def _flag(default: Any, flag: str, help: str, **more: Any) -> Any:
    return dataclasses.field(default=default, metadata={FLAG: RunFlag(flag, help, **more)})


def flag_shard(text: str) -> tuple[int, int]:
    """``--shard I/N``'s value, an argparse error when it is not one."""
    import argparse

    from ..engine.shard_rows import parse_shard

    try:
        return parse_shard(text)
    except ConvbenchError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def flag_rate(text: str) -> float:
    """A share flag's value (``--max-error-rate``...): 0.05 or 5%."""
    from ..engine.error_rate import parse_rate

    return parse_rate(text)


@dataclasses.dataclass(frozen=True)
class Rows:
    """Which rows of the benchmark's selection a run scores: the first ``limit``, a ``sample`` of N drawn with
    ``sample_seed`` over the benchmark's strata, and of those shard ``shard`` = (i, n) (see :mod:`.shards`)."""

    limit: int | None = _flag(None, "--limit", "only the first N rows", type=positive)
    sample: int | None = _flag(
        None, "--sample", "N rows drawn across the benchmark's strata (NC-Bench's sets and patterns, NICO's interaction "
        "types, CoCoEval's sources), seeded: a smoke-sized run that covers every kind of row", type=positive, metavar="N")
    sample_seed: int = _flag(0, "--sample-seed", "the seed of --sample (default 0)", type=int, metavar="SEED", parsed_default=0)
    shard: tuple[int, int] | None = _flag(
        None, "--shard", "only shard I of N (from 1) of the rows config and --limit select: the rows at positions "
        "I-1, I-1+N, ...; join the shard folders with `convbench merge`", type=flag_shard, metavar="I/N")

    def __post_init__(self) -> None:
        if self.limit is not None:  # a float, NaN or bool is refused, not sliced or run as 1
            object.__setattr__(self, "limit", check_count("--limit", self.limit, least=1))
        if self.sample is not None:
            object.__setattr__(self, "sample", check_count("--sample", self.sample, least=1))
            object.__setattr__(self, "sample_seed", check_count("--sample-seed", self.sample_seed))
            if self.limit is not None:
                raise ConvbenchError("--limit and --sample choose the rows two ways; give one")
        if self.shard is not None:
            object.__setattr__(self, "shard", check_shard(tuple(self.shard)))  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """One run (see the module docstring). ``settings`` is the benchmark's settings object; ``cache`` the response
    cache's file (or an open :class:`~.cache.ResponseCache`, which a config carried elsewhere cannot hold);
    ``concurrency`` the run's total of requests in flight (see :mod:`.session`)."""

    benchmark: str
    model: ModelRole
    out: str = _flag(dataclasses.MISSING, "--out", "run folder for records.jsonl and results.json", required=True)
    settings: Any = None
    judges: tuple[ModelRole, ...] = ()
    rows: Rows = Rows()
    cache: Any = _flag(None, "--cache", "response cache (default $CONVBENCH_CACHE/responses.sqlite)", metavar="FILE")
    dataset: str | None = _flag(None, "--dataset", "a folder from `convbench build` (default: build into the cache)",
                                metavar="DIR")
    sources: str | None = _flag(None, "--sources", "upstream mirror for building the dataset", metavar="DIR")
    progress: bool = _flag(True, "--no-progress", "hide the progress bars", action="store_true",
                           value=lambda given: not given)
    retry_errors: bool = _flag(False, "--retry-errors", "ask again the prompts that ended in a per-row error in an "
                               "earlier run (default: record the error again)", action="store_true")
    max_error_rate: float = _flag(
        DEFAULT_MAX_ERROR_RATE, "--max-error-rate", "the share of rows that may end in an error (0.05 or 5%, the "
        "default; 0: none, 1: any): with more, the run folder is still written, and the command exits 1 with their "
        "count", type=flag_rate, parsed_default=DEFAULT_MAX_ERROR_RATE, metavar="SHARE")
    max_empty_rate: float = _flag(
        DEFAULT_MAX_EMPTY_RATE, "--max-empty-rate", "the share of a role's answers that may be empty (0.1 or 10%, "
        "the default; a baseline: role is never held to it): with more, the run folder is still written, and the command "
        "exits 1 with their count", type=flag_rate, parsed_default=DEFAULT_MAX_EMPTY_RATE, metavar="SHARE")
    max_unparsed_rate: float = _flag(
        DEFAULT_MAX_UNPARSED_RATE, "--max-unparsed-rate", "the share of judge answers that may be unreadable (0.1 or "
        "10%, the default; above 2% a warning): with more, the run folder is still written, and the command exits 1 "
        "with their count", type=flag_rate, parsed_default=DEFAULT_MAX_UNPARSED_RATE, metavar="SHARE")
    concurrency: int | None = _flag(
        None, "--concurrency", "requests in flight for the whole run, over the model, its judges and all their replicas "
        "together (openai:, anthropic:; default 8); a pipelined run's stages share them", type=positive)

    def __post_init__(self) -> None:
        for name in LIMITS:
            object.__setattr__(self, name, checked_rate(getattr(self, name), name))
        if self.concurrency is not None:
            object.__setattr__(self, "concurrency",
                               check_count("--concurrency", self.concurrency, least=1, most=MAX_CONCURRENCY))
        object.__setattr__(self, "judges", tuple(self.judges))
        for name in ("out", "dataset", "sources"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                object.__setattr__(self, name, os.fspath(value))
        if self.cache is not None and isinstance(self.cache, os.PathLike):
            object.__setattr__(self, "cache", os.fspath(self.cache))

    @classmethod
    def make(cls, benchmark: Any, *, model: Spec | ModelRole, out: str | os.PathLike[str],
             settings: Mapping[str, Any] | None = None, judge: Spec | ModelRole | Sequence[Spec | ModelRole] | None = None,
             backend_options: Mapping[str, Any] | None = None,
             judge_options: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
             **fields: Any) -> RunConfig:
        """A config from the keywords of the run functions (``run_nc``...): spec strings with options dicts,
        the settings as keywords. A judge without options of its own (``judge_options`` None or empty) gets
        the generator's, less its request ``params`` (the generator's sampling is never a judge's); the
        benchmark (a name or object) checks the settings and how many judges it takes."""
        from ..registry import get_benchmark

        bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
        generator = model if isinstance(model, ModelRole) else make_role(model, dict(backend_options or {}))
        specs = [] if judge is None else [judge] if isinstance(judge, (str, Backend, ModelRole)) else list(judge)
        least, most = bench.judges
        if len(specs) < least:
            raise ConvbenchError(f"a {bench.title} run needs {'a judge' if least == 1 else f'{least} judges'} (judge=SPEC)")
        if most is not None and len(specs) > most:
            takes = "no judge" if most == 0 else "one judge" if most == 1 else f"at most {most} judges"
            raise ConvbenchError(f"a {bench.title} run takes {takes}; got {len(specs)}")
        options = judge_options_list(judge_options, len(specs))
        judges = tuple(spec if isinstance(spec, ModelRole) else judge_role(spec, own, generator)
                       for spec, own in zip(specs, options))
        return cls(benchmark=bench.name, model=generator, out=os.fspath(out), settings=bench_settings(bench, settings),
                   judges=judges, **fields)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (a Backend object, an open cache or a template object cannot be written as data)."""
        if self.cache is not None and not isinstance(self.cache, str):
            raise ConvbenchError("a run config holding an open response cache cannot be written as data")
        data = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        data.update(model=self.model.to_dict(), judges=[j.to_dict() for j in self.judges],
                    rows=dataclasses.asdict(self.rows), settings=settings_dict(self.settings))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """The config of :meth:`to_dict`'s form."""
        from ..registry import get_benchmark

        data = dict(data)
        bench = get_benchmark(data["benchmark"])
        rows = dict(data.pop("rows", {}) or {})
        if rows.get("shard") is not None:
            rows["shard"] = tuple(rows["shard"])
        return cls(**{**data, "model": ModelRole.from_dict(data["model"]),
                      "judges": tuple(ModelRole.from_dict(j) for j in data.get("judges", ())), "rows": Rows(**rows),
                      "settings": bench_settings(bench, data.get("settings"))})


def run_flags() -> list[tuple[str, RunFlag]]:
    """``(field, flag)`` for each flag of ``convbench run`` a run's fields declare, the rows' fields among them."""
    found = []
    for cls in (RunConfig, Rows):
        found += [(f.name, f.metadata[FLAG]) for f in dataclasses.fields(cls) if FLAG in f.metadata]
    return found


def limit_flags() -> list[tuple[str, RunFlag]]:
    """``(field, flag)`` of the run's limits (:data:`LIMITS`): ``convbench merge`` and ``score`` take them too."""
    return [(name, flag) for name, flag in run_flags() if name in LIMITS]


def flag_values(args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's and the rows' fields from parsed ``convbench run`` flags (an argparse namespace)."""
    run: dict[str, Any] = {}
    rows: dict[str, Any] = {}
    row_fields = {f.name for f in dataclasses.fields(Rows)}
    for name, flag in run_flags():
        value = getattr(args, flag.flag.lstrip("-").replace("-", "_"))
        value = flag.value(value) if flag.value is not None else value
        (rows if name in row_fields else run)[name] = value
    return run, rows


def bench_settings(bench: Any, settings: Mapping[str, Any] | None) -> Any:
    """The benchmark's settings object from keywords, a keyword it does not take refused by name."""
    from ..benchmark import make_plan

    if settings is not None and not isinstance(settings, Mapping):
        return settings  # already a settings object
    declared = getattr(bench, "settings", None)
    if not isinstance(declared, type):
        raise ConvbenchError(f"benchmark {getattr(bench, 'name', bench)!r} declares no settings dataclass (its "
                             "`settings`; see convbench_datasets.benchmark.BenchmarkBase)")
    return make_plan(declared, dict(settings or {}), bench.title)


def settings_dict(settings: Any) -> dict[str, Any]:
    """A settings object's declared fields by name (JSON where their values are)."""
    from ..settings import declared

    return {f.name: getattr(settings, f.name) for f, _ in declared(type(settings))}


def judge_options_list(judge_options: Any, n: int) -> list[Mapping[str, Any] | None]:
    if judge_options is None or isinstance(judge_options, Mapping):
        return [judge_options] * n
    options = list(judge_options)
    if len(options) != n:
        raise ConvbenchError(f"got {len(options)} judge_options for {n} judges: give one for all or one per judge")
    return options


def judge_role(spec: Spec, own: Mapping[str, Any] | None, generator: ModelRole) -> ModelRole:
    """A judge's role: its own options, or (none given) the generator's less its request params."""
    kind = "object" if isinstance(spec, Backend) else spec.partition(":")[0]
    if own:  # one dict may serve judges of several kinds: each takes the options its kind takes (unknown ones refused)
        return make_role(spec, {k: v for k, v in own.items() if k not in OPTIONS or kind in OPTIONS[k].kinds})
    lent = {k: v for k, v in generator.options().items() if k != "params" and kind in OPTIONS[k].kinds}
    return make_role(spec, lent)


__all__ = ["RunConfig", "RunFlag", "Rows", "flag_values", "run_flags", "bench_settings", "judge_options_list", "judge_role", "settings_dict"]
