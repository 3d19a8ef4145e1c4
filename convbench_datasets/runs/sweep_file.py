"""Reading a sweep file (``convbench sweep FILE.yaml``) into the cells it defines, every problem found first.

A sweep file names an output folder, models, default judges and benchmarks with their settings; every
benchmark's settings expand into a grid (a list value: one cell per value), run once per model. The
format is in the docs (docs/sweeps.md) and in :func:`read_sweep`. Reading checks the whole file before any
cell runs: unknown keys, unknown benchmarks, settings a benchmark does not take, bad values (each
benchmark's own ``plan`` checks every combination), judge counts, and two cells that would share one
folder. Each problem names the file and its key path (``benchmarks.x.shots[1]``); all are reported
together, in one :class:`~convbench_datasets.errors.ConvbenchError`.

Benchmarks are found through the registry; nothing here knows one from another.

A cell's folder, ``<benchmark>/<model>/<settings>``, depends on the cell's own definition only: the
``key=value`` pairs its block writes (sorted by key), with ``dataset``, ``limit`` and ``judges`` when its
block sets them (``run`` for a block that sets nothing). Adding a block, a value or a model to the file
never renames another cell's folder.

Example:
    >>> slug("openai:Qwen/Qwen2.5-7B-Instruct")
    'openai-Qwen-Qwen2.5-7B-Instruct'
    >>> settings_slug({"task": "open_domain", "shots": 3})
    'shots=3,task=open_domain'
    >>> settings_slug({"split": "训练"}) != settings_slug({"split": "测试"})  # a lossy slug ends in a hash
    True
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..counts import CountError, check_count
from ..errors import ConvbenchError
from ..engine.backends.roles import KINDS, SERVED, role_options, served_kinds
from ..engine.error_rate import DEFAULT_MAX_ERROR_RATE, checked_rate
from .run_checks import DEFAULT_MAX_EMPTY_RATE, DEFAULT_MAX_UNPARSED_RATE
from .sweep_schema import DEFAULT_KEYS, FILE_KEYS, FILE_TOP, MODEL_ENTRY, MODEL_KEYS, OWN_KEYS, validate

# the file's keys: its top level (where the backend options are every model's and judge's default) and a model's
# or judge's mapping, read from the model roles' declarations (backends/roles.py) and checked with pydantic
# (sweep_schema.py)
BACKEND_KEYS, TOP_KEYS, ENDPOINT_KEYS = DEFAULT_KEYS, FILE_KEYS, MODEL_KEYS
LIMIT_DEFAULTS = {"max_error_rate": DEFAULT_MAX_ERROR_RATE, "max_empty_rate": DEFAULT_MAX_EMPTY_RATE,
                  "max_unparsed_rate": DEFAULT_MAX_UNPARSED_RATE}  # what a cell must pass (runs/run_checks.py)
BLOCK_KEYS = ("dataset", "judges", "limit", "sample")  # a benchmark's own keys beside its settings
# the backend options that decide a model's answers, per backend kind, as its cache identity holds them; the
# rest change how fast answers come, not which (concurrency, timeout, api_key_env, device, batch_size), or
# nothing (an option the kind does not take): left out of a cell's definition (its hash)
ANSWER_KEYS = {kind: tuple(name for name, option in role_options() if option.answers and kind in option.kinds)
               for kind in KINDS}
# run keywords the sweep fills in itself: a benchmark's block cannot set them
RESERVED = {
    "model": "the models are the top-level `models`",
    "judge": "judges are `judges` (top level, or this benchmark's own)",
    "judge_options": "give each judge its options in `judges`",
    "backend_options": "give each model its options in `models`",
    "out": "cells go to folders under the top-level `out`",
    "shard": "a sweep runs whole cells, not shards",
    "cache": "`cache` is a top-level key (one response cache for every cell)",
    "sources": "`sources` is a top-level key",
    "retry_errors": "`retry_errors` is a top-level key",
    "max_error_rate": "`max_error_rate` is a top-level key",
    "max_empty_rate": "`max_empty_rate` is a top-level key",
    "max_unparsed_rate": "`max_unparsed_rate` is a top-level key",
    "concurrency": "`concurrency` is a top-level key (the cell's total), or a model's or judge's own (its cap)",
    "progress": "progress is `convbench sweep --no-progress`",
}
SAFE = re.compile(r"[^A-Za-z0-9._+-]+")  # what a folder name keeps; the rest becomes "-"
NO_SETTINGS = "run"  # the settings folder of a cell whose block sets nothing
MAX_NAME = 100  # characters of one folder name; a longer one is cut and given a hash of the whole
# cells one sweep file may define (models x every block's grid), counted from the axes' lengths before any grid
# is expanded: a grid written by mistake (32 million cells) would otherwise hang the check and fill memory
MAX_CELLS = 10_000


@dataclass(frozen=True)
class Endpoint:
    """A model or judge of the sweep: its spec, its folder name and its backend options."""

    spec: str
    name: str
    options: dict[str, Any]  # base_url, model_id, concurrency... (None: the backend's default)

    def identity(self) -> dict[str, Any]:
        """What makes answers differ, as the response cache tells models apart: the spec and those of its
        options that decide answers (``ANSWER_KEYS``), not throughput ones (concurrency, timeout...) nor
        ones its kind ignores. The URLs count only as the cache counts them: not with a ``model_id`` (the
        cache keys answers on the id), nor when they name several replicas (kind and model alone, in any
        order); one URL counts as the backend reads it (no trailing slash, user-info or query)."""
        kind = self.spec.partition(":")[0]
        options = {k: v for k, v in self.options.items() if v is not None and k in ANSWER_KEYS.get(kind, ())}
        if options.get("batch_order") == "file" and self.options.get("batch_size") is not None:
            options["batch_size"] = self.options["batch_size"]  # in file order the size decides the batches too
        if "base_url" in options:
            url = _one_url(options.pop("base_url"))
            if url is not None and options.get("model_id") is None:
                options["base_url"] = url
        return {"spec": self.spec, **options}


def _one_url(value: Any) -> Any:
    """A ``base_url`` option as the openai backend's cache identity reads it: its one URL, normalized
    (None for several replicas); a value it cannot read is kept as written (running it fails)."""
    from ..engine.backends.endpoints import endpoint_urls, public_url

    try:
        urls = endpoint_urls(value)
    except ConvbenchError:
        return value
    return public_url(urls[0]) if len(urls) == 1 else None


@dataclass
class CellDefinition:
    """One run of the sweep: a benchmark with fixed settings, a model and its judges."""

    benchmark: str
    model: Endpoint
    judges: list[Endpoint]
    settings: dict[str, Any]  # the benchmark's run keywords
    dataset: str | None
    limit: int | None
    retry_errors: bool
    where: str  # the file's key path of the block that defined it
    written: dict[str, Any]  # its settings as the file writes them (key: value)
    choices: dict[str, Any] = field(default_factory=dict)  # what the settings part of ``name`` shows: ``written``
    # and the dataset, limit and judges its block sets
    name: str = ""  # the folder under ``out``: benchmark/model/settings (see ``_check_folders``)
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE  # more rows in error than this share: the cell fails
    max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE  # more empty answers of a role than this share: the cell fails
    max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE  # more unreadable judge answers than this share: likewise
    concurrency: int | None = None  # the top-level concurrency: the cell's total of requests in flight

    def digest(self) -> str:
        """sha256 of everything that makes this cell's results what they are (not throughput options)."""
        definition = {"benchmark": self.benchmark, "model": self.model.identity(),
                      "judges": [judge.identity() for judge in self.judges], "settings": self.settings,
                      "dataset": self.dataset, "limit": self.limit, "retry_errors": self.retry_errors}
        for name, default in LIMIT_DEFAULTS.items():  # a cell's ok depends on them (the defaults: hashes as before)
            if getattr(self, name) != default:
                definition[name] = getattr(self, name)
        return hashlib.sha256(json.dumps(definition, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class SweepFile:
    """A sweep file read and checked: where its cells go, and the cells in the order they run."""

    label: str  # the file's path, or "sweep" for a mapping: what errors name
    out: Path
    cache: str | None
    sources: str | None
    cells: list[CellDefinition]
    shape: str  # "2 models x 3 settings" and the like, for the listing


def slug(text: str) -> str:
    """``text`` as a folder name: letters, digits and ``. _ + -`` kept, anything else a single ``-``;
    a name over ``MAX_NAME`` characters is cut and ends in 8 hex digits of the whole's sha256."""
    return _capped(re.sub(r"-{2,}", "-", SAFE.sub("-", text)).strip("-.") or "empty", text)


def _capped(name: str, whole: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME - 9]}-{hashlib.sha256(whole.encode('utf-8')).hexdigest()[:8]}"


def value_slug(value: Any) -> str:
    """A setting's value in a folder name (``true``, ``3``, ``open_domain``). A value the folder name cannot
    keep as written (``Qwen/Qwen2.5``, ``训练``, ``""``) ends in 8 hex digits of its sha256, so that two
    values never share a name: ``Qwen-Qwen2.5-1a2b3c4d``; one with nothing left is the digits alone.

    Example:
        >>> value_slug("open_domain"), value_slug(True), value_slug(3)
        ('open_domain', 'true', '3')
        >>> value_slug("训练") == hashlib.sha256("训练".encode("utf-8")).hexdigest()[:8]
        True
    """
    text = json.dumps(value) if isinstance(value, bool) or value is None else str(value)
    kept = re.sub(r"-{2,}", "-", SAFE.sub("-", text)).strip("-.")
    if kept == text and kept:
        return _capped(kept, text)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return _capped(f"{kept}-{digest}" if kept else digest, text)


def settings_slug(choices: Mapping[str, Any]) -> str:
    """The folder name of a cell's settings: ``key=value`` pairs by key, joined by commas (``run``: none)."""
    if not choices:
        return NO_SETTINGS
    text = ",".join(f"{slug(key)}={value_slug(value)}" for key, value in sorted(choices.items()))
    return _capped(text, text)


class Problems:
    """Problems found in a sweep file, each under its key path; raised together."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.found: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.add_line(f"{where}: {message}" if where else message)

    def add_line(self, line: str) -> None:
        if line not in self.found:
            self.found.append(line)

    def check(self) -> None:
        if len(self.found) == 1:
            raise ConvbenchError(f"{self.label}: {self.found[0]}")
        if self.found:
            raise ConvbenchError(f"{self.label}: {len(self.found)} problems:\n  " + "\n  ".join(self.found))


class _Bad(Exception):
    """A value refused; the caller adds the key path."""


def load_file(path: str | os.PathLike[str]) -> Any:
    """The YAML document in ``path``; a key given twice in one mapping is an error (YAML keeps the last)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node)
            if key != "<<" and isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping (first on line {seen[key]})",
                    key_node.start_mark)
            seen.setdefault(key, key_node.start_mark.line + 1)
        return loader.construct_mapping(node)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConvbenchError(f"{os.fspath(path)}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConvbenchError(f"{os.fspath(path)}: cannot read it ({err})") from None
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        raise ConvbenchError(f"{os.fspath(path)}: not valid YAML ({' '.join(str(err).split())})") from None


def read_sweep(source: str | os.PathLike[str] | Mapping[str, Any]) -> SweepFile:
    """Read and check a sweep file (a path to YAML) or the same content as a mapping.

    Relative paths in it (``out``, ``cache``, ``sources``, ``dataset``) are read from the current folder, as
    ``convbench run`` reads its options, and a leading ``~`` is the home folder.

    Example:
        >>> read_sweep({"out": "x", "models": ["baseline:repeat"], "benchmarks": {}, "limt": 3})
        Traceback (most recent call last):
        convbench_datasets.errors.ConvbenchError: sweep: 2 problems:
          limt: unknown key; the keys of a sweep file: out, cache, sources, limit, retry_errors, max_error_rate, max_empty_rate, max_unparsed_rate, models, judges, benchmarks, base_url, concurrency, timeout, stall_timeout, api_key_env, device, dtype, batch_size, batch_order
          benchmarks: name at least one benchmark
    """
    if isinstance(source, Mapping):
        label, data = "sweep", dict(source)
    else:
        label, data = os.fspath(source), load_file(source)
    problems = Problems(label)
    if not isinstance(data, Mapping):
        problems.add("", f"expected a mapping of {', '.join(TOP_KEYS[:3])}..., got "
                         + ("an empty file" if data is None else type(data).__name__))
        problems.check()
    out = _path(data, "out", problems, required=True)
    cache, sources = _path(data, "cache", problems), _path(data, "sources", problems)
    limit = _limit(data.get("limit"), "limit", problems)
    retry_errors = data.get("retry_errors", False)
    if not isinstance(retry_errors, bool):
        problems.add("retry_errors", f"expected true or false, got {retry_errors!r}")
    limits = {name: _rate(data.get(name, default), name, default, problems) for name, default in LIMIT_DEFAULTS.items()}
    defaults = _backend_options(FILE_TOP, data, "", problems)
    models = _endpoints(data.get("models"), "models", defaults, problems, required=True)
    judges = _endpoints(data.get("judges"), "judges", defaults, problems) if "judges" in data else []
    cells = _cells(data.get("benchmarks"), models, judges, "judges" in data, defaults, limit,
                   bool(retry_errors), sources, problems)
    for cell in cells:
        for name, value in limits.items():
            setattr(cell, name, value)
        cell.concurrency = defaults.get("concurrency")  # throughput only: not in the cell's hash
    problems.check()
    _check_folders(cells, problems)
    problems.check()
    counts = [f"{len(models)} model{'s' if len(models) != 1 else ''}"]
    per_model = len(cells) // max(len(models), 1)
    counts.append(f"{per_model} benchmark setting{'s' if per_model != 1 else ''}")
    return SweepFile(label, Path(out), cache, sources, cells, " x ".join(counts))  # type: ignore[arg-type]


def _rate(value: Any, name: str, default: float, problems: Problems) -> float:
    """A top-level limit (``max_error_rate``...): a share from 0 to 1 (as ``convbench run --max-error-rate``)."""
    try:
        return checked_rate(value, name)
    except ConvbenchError:
        what = "rows" if name == "max_error_rate" else "answers"
        problems.add(name, f"expected a share of {what} from 0 to 1 (0.05 is 5%), got {value!r}")
        return default


def _path(data: Mapping[str, Any], key: str, problems: Problems, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            problems.add(key, "missing: the folder the cells, sweep.json and the report go to")
        return None
    if not isinstance(value, str) or not value.strip():
        problems.add(key, f"expected a path, got {value!r}")
        return None
    return os.path.expanduser(value)


def _limit(value: Any, where: str, problems: Problems) -> int | None:
    if value is None:
        return None
    try:  # the run's own check (a float, NaN or bool refused)
        return check_count("limit", value, least=1)
    except CountError as err:
        problems.add(where, str(err).removeprefix("limit "))
        return None


def _backend_options(model: Any, data: Mapping[str, Any], where: str, problems: Problems) -> dict[str, Any]:
    """The backend options of a mapping (the top level, a model, a judge), validated by its pydantic ``model``
    (unknown keys, and each option by the model role's own check); none when it has a problem (the whole file
    is then refused, every problem named)."""
    checked, found = validate(model, {str(key): value for key, value in data.items()}, where)
    for line in found:
        problems.add_line(line)
    if checked is None:
        return {}
    return {key: getattr(checked, key) for key in (*BACKEND_KEYS, *OWN_KEYS) if key in data}


def _endpoints(value: Any, where: str, defaults: dict[str, Any], problems: Problems,
               required: bool = False) -> list[Endpoint]:
    """Models or judges: a spec string or mapping, or a list of them."""
    if value is None or value == []:
        if required:
            problems.add(where, "list at least one model spec (openai:NAME, hf:PATH, baseline:NAME)")
        elif value == []:
            problems.add(where, "an empty list: give at least one judge, or leave the key out")
        return []
    entries = value if isinstance(value, list) else [value]
    found = []
    for index, entry in enumerate(entries):
        path = f"{where}[{index}]" if isinstance(value, list) else where
        endpoint = _endpoint(entry, path, defaults, problems)
        if endpoint is not None:
            found.append(endpoint)
    return found


def _endpoint(entry: Any, where: str, defaults: dict[str, Any], problems: Problems) -> Endpoint | None:
    bare = isinstance(entry, str)
    if bare:
        entry = {"spec": entry}
    if not isinstance(entry, Mapping):
        problems.add(where, f"expected a model spec or a mapping with `spec`, got {entry!r}")
        return None
    spec = entry.get("spec")
    if not isinstance(spec, str):
        problems.add(f"{where}.spec" if "spec" in entry else where, f"expected a model spec, got {spec!r}")
        return None
    spec_problem = _spec_problem(spec)
    if spec_problem:
        problems.add(where if bare else f"{where}.spec", spec_problem)
    options = {**defaults, **_backend_options(MODEL_ENTRY, entry, where, problems)}
    if options.get("model_id") is not None and spec.partition(":")[0] not in SERVED:
        problems.add(f"{where}.model_id", f"applies to {served_kinds()} models only, not {spec}")
    if options.get("params") and spec.startswith("baseline:"):
        problems.add(f"{where}.params", f"{spec} sends no requests: request parameters do not apply to it")
    if options.get("params") and spec.startswith("anthropic:"):  # what the backend refuses when the run starts
        from ..engine.backends.anthropic_api import check_fields

        try:
            check_fields(spec, options["params"])
        except ConvbenchError as err:
            problems.add(f"{where}.params", str(err).removeprefix(f"{spec}: "))
    name = entry.get("name")
    if name is not None and (not isinstance(name, str) or slug(name) != name):
        problems.add(f"{where}.name", f"a folder name of letters, digits and . _ + - (at most {MAX_NAME}), got {name!r}")
        name = None
    return Endpoint(spec, name or slug(spec), options)


def _spec_problem(spec: str) -> str | None:
    from ..engine.backends import KINDS, backend_from_spec

    kind, _, target = spec.partition(":")
    if kind not in KINDS or not target:
        return f"bad model spec {spec!r}: expected one of hf:<path>, openai:<model>, anthropic:<model>, baseline:<name>"
    if kind == "baseline":  # cheap to make: an unknown baseline is found now
        try:
            backend_from_spec(spec)
        except ConvbenchError as err:
            return str(err)
    return None


def _cells(benchmarks: Any, models: list[Endpoint], judges: list[Endpoint], judges_given: bool,
           defaults: dict[str, Any], limit: int | None, retry_errors: bool, sources: str | None,
           problems: Problems) -> list[CellDefinition]:
    from ..registry import RUNS, get_benchmark

    if not isinstance(benchmarks, Mapping) or not benchmarks:
        problems.add("benchmarks", "name at least one benchmark" if benchmarks in (None, {}) else
                     f"expected a mapping of benchmark names to their settings, got {benchmarks!r}")
        return []
    cells = []
    for name, blocks in benchmarks.items():
        where = f"benchmarks.{name}"
        if name not in RUNS:
            problems.add(where, f"unknown benchmark; available: {', '.join(RUNS)}")
            continue
        bench = get_benchmark(name)
        if blocks is None:
            blocks = [{}]
        if isinstance(blocks, Mapping):
            blocks, paths = [blocks], [where]
        elif isinstance(blocks, list) and blocks:
            paths = [f"{where}[{index}]" for index in range(len(blocks))]
        else:
            problems.add(where, f"expected the settings (a mapping) or a list of them, got {blocks!r}")
            continue
        for block, path in zip(blocks, paths):
            if not isinstance(block, Mapping):
                problems.add(path, f"expected a mapping of settings, got {block!r}")
                continue
            cells += _block_cells(bench, block, path, models, judges, judges_given, defaults, limit, retry_errors,
                                  sources, problems, room=MAX_CELLS - len(cells))
    return cells


def _block_cells(bench: Any, block: Mapping[str, Any], where: str, models: list[Endpoint], judges: list[Endpoint],
                 judges_given: bool, defaults: dict[str, Any], limit: int | None, retry_errors: bool,
                 sources: str | None, problems: Problems, room: int = MAX_CELLS) -> list[CellDefinition]:
    """The cells of one block of settings: its grid, once per model; each combination planned (checked).
    ``room``: how many cells the sweep may still have (:data:`MAX_CELLS` less the blocks' before)."""
    least, most = bench.judges
    own = _endpoints(block.get("judges"), f"{where}.judges", defaults, problems) if "judges" in block else None
    if own is not None and most == 0:
        problems.add(f"{where}.judges", f"{bench.title} takes no judge")
    chosen = own if own is not None else (judges if most != 0 else [])
    if len(chosen) < least:
        problems.add(where, f"{bench.title} needs {'a judge' if least == 1 else f'{least} judges'}: give `judges` "
                            f"at the top level or in {where}")
    if most is not None and most > 0 and len(chosen) > most:
        takes = "one judge" if most == 1 else f"at most {most} judges"
        if own is not None:
            problems.add(f"{where}.judges", f"lists {len(chosen)} judges; {bench.title} takes {takes}")
        elif judges_given:
            problems.add("judges", f"lists {len(chosen)} judges, but {bench.title} takes {takes}: give it its own "
                                   f"in {where}.judges")
    dataset = _dataset(block["dataset"], f"{where}.dataset", problems) if block.get("dataset") is not None else None
    block_limit = _limit(block.get("limit"), f"{where}.limit", problems) if "limit" in block else limit
    own_parts: dict[str, Any] = {}  # what the block sets beside its settings: part of its cells' folder names
    if dataset is not None:
        own_parts["dataset"] = Path(dataset).name if Path(dataset).is_dir() else dataset
    if "limit" in block:
        own_parts["limit"] = "all" if block_limit is None else block_limit
    block_sample = _limit(block.get("sample"), f"{where}.sample", problems) if "sample" in block else None
    if block_sample is not None:  # a seeded sample across the benchmark's strata (engine/sample.py)
        own_parts["sample"] = block_sample
        if "limit" in block and block_limit is not None:
            problems.add(f"{where}.sample", "limit and sample choose the rows two ways; give one")
        block_limit = None  # the block's sample takes the place of the file's limit
    if own is not None:
        own_parts["judges"] = "+".join(judge.name for judge in own) or "none"
    grid = _grid(bench, {k: v for k, v in block.items() if k not in BLOCK_KEYS}, where, problems,
                 copies=len(models), room=room)
    cells = []
    for combination in grid:
        settings: dict[str, Any] = {}
        for entry in combination:
            settings.update(entry.keywords)
        if not _planned(bench, settings, combination, dataset, sources, where, problems):
            continue
        if block_sample is not None:  # a keyword of the run, not a setting of the plan
            settings = {**settings, "sample": block_sample}
        written = {entry.key: entry.value for entry in combination}
        for model in models:
            cells.append(CellDefinition(bench.name, model, list(chosen), settings, dataset, block_limit,
                                        retry_errors, where, written, {**written, **own_parts}))
    return cells


def _dataset(value: Any, where: str, problems: Problems) -> str | None:
    """A block's ``dataset``: a folder from ``convbench build`` (made absolute), or, as ``convbench run
    --dataset`` takes it, the name of a dataset ``datasets`` finds (a Hub id, an installed ``convbench/NAME``);
    a path that names no folder (absolute, ``./``, ``../``, ``~``, or a file) is refused."""
    if not isinstance(value, str) or not value.strip():
        problems.add(where, f"expected a folder from `convbench build` or a dataset's name, got {value!r}")
        return None
    path = Path(os.path.expanduser(value))
    if path.is_dir():
        return os.path.abspath(path)
    if path.exists():
        problems.add(where, f"expected a folder from `convbench build`, got {value!r} (not a folder)")
        return None
    if path.is_absolute() or value.startswith(("./", "../", ".\\", "..\\", "~")) or value.count("/") > 1:
        problems.add(where, f"expected a folder from `convbench build`, got {value!r} (no such folder; a dataset's "
                            "name, such as convbench/NAME or a Hub id, is read through `datasets`)")
        return None
    return value  # a name: read through `datasets`, as `convbench run --dataset NAME` does


@dataclass(frozen=True)
class _Choice:
    """One setting's value in a cell: as written (key, value, key path) and as run keywords."""

    key: str
    value: Any
    where: str
    keywords: dict[str, Any]


def _grid(bench: Any, block: Mapping[str, Any], where: str, problems: Problems, copies: int = 1,
          room: int = MAX_CELLS) -> list[tuple[_Choice, ...]]:
    """Every combination of the block's settings (a list value: one per value), in the file's order. A grid
    that would make more than ``room`` cells, run ``copies`` times (once per model), is refused by the product
    of its axes' lengths, before it is expanded (none then)."""
    axes, targets = [], {}
    for key, values in block.items():
        path = f"{where}.{key}"
        if key in RESERVED:
            problems.add(path, f"not a setting here: {RESERVED[key]}")
            continue
        option, renamed = _option(bench, str(key))
        clash = [target for target in _targets(option, renamed, str(key)) if target in targets]
        if clash:
            problems.add(path, f"sets {clash[0]}, as {targets[clash[0]]} does: keep one of them")
            continue
        targets.update(dict.fromkeys(_targets(option, renamed, str(key)), path))
        listed = isinstance(values, list)
        if listed and not values:
            problems.add(path, "an empty list: no cell would run; give at least one value")
            continue
        if listed and len(values) > MAX_CELLS:  # checked before its values: each is checked, and planned
            problems.add(path, f"lists {len(values):,} values, more than the {MAX_CELLS:,} cells a sweep file may "
                               "have (MAX_CELLS); split the sweep into several files")
            continue
        axis = []
        firsts: dict[tuple[type, Any], int] = {}  # each value's first index: repeats found in one pass
        for index, value in enumerate(values if listed else [values]):
            at = f"{path}[{index}]" if listed else path
            # the same value of the same type (0 and false are two values: one of them is then refused)
            first = firsts.setdefault((type(value), value), index) if _hashable(value) else index
            if first != index:
                problems.add(at, f"repeats {path}[{first}] ({value!r})")
                continue
            try:
                axis.append(_Choice(str(key), value, at, _keywords(option, renamed, str(key), value)))
            except _Bad as err:
                problems.add(at, str(err))
        if axis:  # a key none of whose values is good is left out: the rest is still checked
            axes.append(axis)
    size = math.prod(len(axis) for axis in axes) * copies
    if size > room:
        shape = " x ".join(str(len(axis)) for axis in axes) or "1"
        before = f", and the blocks before it have {MAX_CELLS - room:,}" if room < MAX_CELLS else ""
        problems.add(where, f"its grid is {shape} settings x {copies} model{'s' if copies != 1 else ''} = {size:,} "
                            f"cells; a sweep file may have at most {MAX_CELLS:,} (MAX_CELLS){before}: split the sweep "
                            "into several files")
        return []
    return list(itertools.product(*axes))


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:  # a list or mapping: refused as a value later, never a repeat
        return False
    return True


def _option(bench: Any, key: str) -> tuple[Any, bool]:
    """The declared option a key names: by its run keyword (``dest``), else by its flag's spelling
    (``judge_template`` for ``--judge-template``, ``bertscore`` for ``--bertscore MODEL``); (None, False)
    for any other key, which goes to the benchmark's plan as it is."""
    for option in bench.options:
        if option.dest == key:
            return option, False
    for option in bench.options:
        if _spelling(option) == key:
            return option, True
    return None, False


def _spelling(option: Any) -> str:
    return str(option.flag.lstrip("-").replace("-", "_"))


def _targets(option: Any, renamed: bool, key: str) -> list[str]:
    """The run keywords a key sets (two keys that set one are refused)."""
    if option is None:
        return [key]
    if option.to_settings is not None and (renamed or option.action != "store_true"):
        try:
            return list(dict.fromkeys([option.dest, *option.to_settings(True if option.action else option.default)]))
        except Exception:  # noqa: BLE001 (a to_settings that checks its value: the dest alone)
            return [option.dest]
    return [option.dest]


_TYPE_NAMES = {"int": "a whole number", "positive": "a whole number of at least 1",
               "non_negative": "a whole number of at least 0", "float": "a number"}


def _keywords(option: Any, renamed: bool, key: str, value: Any) -> dict[str, Any]:
    """The run keywords of one value (checked against the option's declaration; no value is coerced)."""
    if isinstance(value, (list, dict)):
        raise _Bad(f"expected one value (a string, number or true/false), got {value!r}")
    if not isinstance(value, (str, int, float, bool)) and value is not None:
        raise _Bad(f"expected a string, number or true/false, got {value!r}")
    if option is None:
        return {key: value}
    if option.action == "store_true":
        if not isinstance(value, bool):
            raise _Bad(f"expected true or false, got {value!r}")
        if renamed and option.to_settings is not None:  # a switch (all_lines: true -> first_line_only: false)
            return option.to_settings(True) if value else {}
        return {option.dest: value}
    if option.to_settings is not None and isinstance(value, bool) and option.type is None:
        # a flag that takes a value and sets more than its keyword (--bertscore MODEL: bertscore=True and
        # bertscore_model=MODEL): its value is the flag's, never the switch it turns on
        raise _Bad(f"expected {option.metavar or 'a value'} (a string), got {value!r}: {_spelling(option)} is "
                   f"{option.flag} {option.metavar or 'VALUE'}, which sets {', '.join(_targets(option, True, key))} "
                   "(leave the key out to leave it off)")
    checked = _value(option, value)
    # a value's run keywords are the option's, by either spelling (bertscore_model: M is --bertscore M)
    return option.to_settings(checked) if option.to_settings is not None and checked is not None else {option.dest: checked}


def _value(option: Any, value: Any) -> Any:
    """A value of an option that takes one, checked against its declaration (never coerced)."""
    if value is None:
        if option.default is not None:
            raise _Bad(f"expected a value, got null (leave the key out for the default, {option.default!r})")
        return None
    if option.type is not None:
        description = _TYPE_NAMES.get(getattr(option.type, "__name__", ""), getattr(option.type, "__name__", "a value"))
        try:
            converted = option.type(str(value))
        except argparse.ArgumentTypeError as err:  # the option's own check: "must be 1 or more, got 0"
            raise _Bad(str(err)) from None
        except (TypeError, ValueError):
            raise _Bad(f"expected {description}, got {value!r}") from None
        if isinstance(value, bool) or type(converted) is not type(value) or converted != value:
            raise _Bad(f"expected {description}, got {value!r}")
    elif not isinstance(value, str):
        raise _Bad(f"expected a string, got {value!r}")
    if option.choices is not None and not any(_same(value, choice) for choice in option.choices):
        raise _Bad(f"expected one of {', '.join(map(str, option.choices))}, got {value!r}")
    return value


def _planned(bench: Any, settings: dict[str, Any], combination: tuple[_Choice, ...], dataset: str | None,
             sources: str | None, where: str, problems: Problems) -> bool:
    """Whether the benchmark's plan takes the settings; if not, the problem goes under the key paths whose
    removal alone makes it go away (the plan passes; failing that, it says something else: a key the plan
    needs, such as a task, is not blamed for another's bad value), else under the block, with the combination."""
    error = _plan_error(bench, settings, dataset, sources)
    if error is None:
        return True
    without = {}
    for entry in combination:
        rest = {k: v for k, v in settings.items() if k not in entry.keywords}
        without[entry.where] = _plan_error(bench, rest, dataset, sources)
    culprits = [where for where, other in without.items() if other is None]
    culprits = culprits or [where for where, other in without.items() if other != error]
    if culprits:
        problems.add(", ".join(culprits), error)
    else:
        shown = ", ".join(f"{entry.key}={entry.value!r}" for entry in combination)
        problems.add(where, f"{error}" + (f" (with {shown})" if shown else ""))
    return False


def _plan_error(bench: Any, settings: dict[str, Any], dataset: str | None, sources: str | None) -> str | None:
    try:
        bench.plan(dict(settings), dataset=dataset, sources=sources)
    except ConvbenchError as err:
        return str(err)
    except Exception as err:  # a value the plan did not expect (a number where it compares text...)
        return f"{type(err).__name__}: {err}"
    return None


def _check_folders(cells: list[CellDefinition], problems: Problems) -> None:
    """Name each cell's folder from its own definition (benchmark/model/what its block sets) and refuse two
    cells sharing one; names are compared ignoring case, as some file systems do."""
    for cell in cells:
        cell.name = f"{cell.benchmark}/{cell.model.name}/{settings_slug(cell.choices)}"
    seen: dict[str, CellDefinition] = {}
    for cell in cells:
        other = seen.setdefault(cell.name.casefold(), cell)
        if other is not cell:
            problems.add(cell.where, f"two cells would share the folder {cell.name}: {_describe(other)} "
                                     f"({other.where}) and {_describe(cell)} ({cell.where}); give the models distinct "
                                     f"`name`s or make the settings differ (a dataset is named by its folder's name)")


def _describe(cell: CellDefinition) -> str:
    settings = ", ".join(f"{k}={v!r}" for k, v in cell.settings.items())
    return f"model {cell.model.spec} with {settings or 'no settings'}"
