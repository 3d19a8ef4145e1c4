"""Read a built dataset folder's rows with pyarrow alone: the run path never imports ``datasets``.

A build (``convbench build``, :mod:`.hub`) is a Hub-layout folder: parquet data files plus a README.md
whose YAML header lists ``configs`` (the data files of each split) and ``dataset_info`` (the features of
each config). :func:`read_rows` reads the files the card names for a config and split and returns what
``datasets.load_dataset(folder, config, split=split).to_list()`` returns, with one difference: a
``ClassLabel`` column holds its names, not its ids (:mod:`.class_labels`). The same values and types
otherwise, keys in the card's feature order, rows in file order (files in the card's order, a glob's
matches sorted).
Importing ``datasets`` costs more than a short run's work, so runs read rows here and :func:`~.api.load`
keeps ``datasets`` for users who want a ``Dataset``.

Rows read once are kept as JSON in convbench's cache (:mod:`.row_cache`, keyed on the files' contents), so
a later run of the same build reads them without pyarrow. The card's YAML header is parsed once per
README.md version (path, inode, mtime, size) and kept for the process (:func:`read_card`); a warm read costs a ``stat``. What ``datasets`` does and this module copies:
a card's ``data_files`` may be a path, a list of paths, or ``{split, path}`` entries (``train`` when no
split is named); paths are globs relative to the folder (``**`` crosses folders), hidden (``.x``) and
special (``__x``) files and folders are skipped unless the pattern names them, as are files without an
extension; each table is cast to the card's features. A pattern matching other files than parquet is
refused (``datasets`` fails on those too, reading them as parquet), and so are feature types
``datasets`` decodes on read (Image, Audio, Json...), naming the field: read those with ``datasets``.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import row_cache
from .class_labels import coder_of, decode_rows, named_rows
from .errors import ConvbenchError, DataFormatError

# huggingface_hub's pattern for a card's YAML block (repocard.REGEX_YAML_BLOCK), so that we read what datasets reads
_YAML_BLOCK = re.compile(r"^(\s*---(?:\r\n|\r|\n))([\S\s]*?)((?:\r\n|\r|\n)---[ \t]*(\r\n|\n|$))")
_DEFAULT_SPLIT = "train"  # datasets' split for data_files given without one
_FILES_TO_IGNORE = {"README.md", "config.json", "dataset_info.json", "dataset_infos.json", "dummy_data.zip",
                    "dataset_dict.json"}  # datasets.data_files.FILES_TO_IGNORE
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class BuiltCard:
    """What a build's card says about its data, parsed once (shared: treat it as read-only).

    ``configs`` maps each config, in the card's order, to its splits, in the card's order, and their
    data-file patterns; ``features`` maps a config to its ``dataset_info`` features list (YAML form) and
    ``rows`` to its rows per split, when the card gives them; ``default`` is the config ``datasets``
    loads when none is named (None: none is).
    """

    path: Path
    configs: dict[str, dict[str, list[str]]]
    features: dict[str, list[Any]]
    rows: dict[str, dict[str, int]]
    default: str | None


_CARDS: dict[str, tuple[tuple[int, int, int], BuiltCard]] = {}


@dataclass(frozen=True)
class NonEmpty:
    """A shape (see :func:`shape_problem`) whose value must also hold something: a list with an item, a string
    with a character."""

    shape: Any


def shape_problem(value: Any, shape: Any, where: str) -> str | None:
    """Why ``value`` (of field ``where``) does not have ``shape``, or None.

    Shapes: ``str``, ``int`` (a bool is not one), ``[item]`` (a list of items), ``{"key": shape, ...}`` (a
    mapping with those keys, others allowed), :class:`NonEmpty` around any of them. None never has a shape:
    the builds write no nulls, so a null is a damaged or hand-made row.

    Example:
        >>> turns = NonEmpty([{"role": str, "content": str}])
        >>> shape_problem([{"role": "user", "content": "hi"}], turns, "messages") is None
        True
        >>> shape_problem(None, turns, "messages")
        "field 'messages' must be a non-empty list of {role: string, content: string}, got None"
        >>> shape_problem([{"role": "user", "content": 3}], turns, "messages")
        "field 'messages[0].content' must be a string, got 3"
    """
    misfit = _misfit(value, shape)
    if misfit is None:
        return None
    path, missing, bad_shape, bad_value = misfit
    here = where + "".join(reversed(path))
    return f"field {here!r} is missing" if missing else _wrong(here, bad_shape, bad_value)


# (the path below the field, innermost first; whether a key is missing; the shape and value that differ)
_Misfit = tuple[list[str], bool, Any, Any]


def _misfit(value: Any, shape: Any) -> _Misfit | None:
    """:func:`shape_problem`'s walk: where ``value`` first leaves ``shape``, or None. A field's path is built
    only for a misfit (a run checks ~30,000 values of 720 NC-Bench rows; naming each cost most of the check)."""
    empty = isinstance(shape, NonEmpty)
    inner = shape.shape if empty else shape
    if isinstance(inner, list):
        if not isinstance(value, (list, tuple)):
            return [], False, shape, value
        item_shape = inner[0]
        for index, item in enumerate(value):
            if type(item) is item_shape:  # a str or int item of a list of them: fits (a bool's type is bool)
                continue
            misfit = _misfit(item, item_shape)
            if misfit:
                misfit[0].append(f"[{index}]")
                return misfit
    elif isinstance(inner, dict):
        if not isinstance(value, Mapping):
            return [], False, shape, value
        for key, item_shape in inner.items():
            if key not in value:
                return [f".{key}"], True, None, None
            if type(value[key]) is item_shape:  # the same shortcut as for list items
                continue
            misfit = _misfit(value[key], item_shape)
            if misfit:
                misfit[0].append(f".{key}")
                return misfit
    elif not isinstance(value, inner) or (inner is int and isinstance(value, bool)):
        return [], False, shape, value
    if empty and not len(value):
        return [], False, shape, value
    return None


def _describe(shape: Any) -> str:
    if isinstance(shape, NonEmpty):
        return "a non-empty " + _describe(shape.shape).removeprefix("a ")
    if isinstance(shape, list):
        item = shape[0]
        return f"a list of {'strings' if item is str else 'whole numbers' if item is int else _describe(item)}"
    if isinstance(shape, dict):
        return "{" + ", ".join(f"{key}: {_describe(item).removeprefix('a ')}" for key, item in shape.items()) + "}"
    return {str: "a string", int: "a whole number"}.get(shape, getattr(shape, "__name__", str(shape)))


def _wrong(where: str, shape: Any, value: Any) -> str:
    shown = repr(value)
    return f"field {where!r} must be {_describe(shape)}, got {shown if len(shown) <= 80 else shown[:77] + '...'}"


@dataclass(frozen=True)
class RowRules:
    """What a benchmark needs of each row it reads, checked as rows are read (:func:`read_rows`,
    :func:`dataset_rows`), so that a bad row is one line naming the file, the row and the field, before
    any model is called, rather than a traceback mid-run or results that re-scoring refuses.

    ``shapes``: each field's shape (:func:`shape_problem`); ``key``: the fields that name a row (two rows
    with the same values are refused: records, caches and re-scoring tell rows apart by them); ``extra``:
    the benchmark's own check of a row whose shapes hold (a known set...), its problem or None.
    """

    shapes: Mapping[str, Any]
    key: tuple[str, ...] = ("id",)
    extra: Callable[[dict[str, Any]], str | None] | None = field(default=None, compare=False)

    def problem(self, row: Any) -> str | None:
        """Why ``row`` cannot be run, or None."""
        if not isinstance(row, Mapping):
            return f"expected a row (a mapping of fields), got {type(row).__name__}"
        for name, shape in self.shapes.items():
            if name not in row:
                return f"field {name!r} is missing"
            if type(row[name]) is shape:  # a plain str or int field: fits (see _misfit)
                continue
            problem = shape_problem(row[name], shape, name)
            if problem:
                return problem
        return self.extra(row) if self.extra is not None else None


def check_rows(rows: list[dict[str, Any]], rules: RowRules, where: str,
               seen: dict[tuple[Any, ...], str] | None = None) -> None:
    """Refuse the first row of ``rows`` (from ``where``: a file, or a dataset's config and split) that breaks
    ``rules``, or whose key repeats an earlier row's (``seen``: keys of rows read before, from other files).

    Raises:
        DataFormatError: ``<where>: row <index>: <problem>``, rows counted from 0 as in the file.

    Example:
        >>> rules = RowRules({"id": int, "text": str})
        >>> check_rows([{"id": 1, "text": "a"}, {"id": 1, "text": "b"}], rules, "x.parquet")
        Traceback (most recent call last):
        convbench_datasets.errors.DataFormatError: x.parquet: row 1: field 'id' 1 repeats row 0 of x.parquet; each row needs its own
    """
    seen = {} if seen is None else seen
    for index, row in enumerate(rows):
        problem = rules.problem(row)
        if problem:
            raise DataFormatError(f"{where}: row {index}: {problem}")
        key = tuple(row[name] for name in rules.key)
        first = seen.setdefault(key, f"row {index} of {where}")
        if first != f"row {index} of {where}":
            names = " and ".join(map(repr, rules.key))
            fields = f"fields {names} {key!r} repeat" if len(key) > 1 else f"field {names} {key[0]!r} repeats"
            raise DataFormatError(f"{where}: row {index}: {fields} {first}; each row needs its own")


def read_card(folder: str | os.PathLike[str]) -> BuiltCard:
    """The parsed card of the build in ``folder``; parsed again only when its README.md changes.

    Raises:
        ConvbenchError: ``folder`` is missing, or is not a Hub-layout build (no README.md, or one whose
            YAML header lists no ``configs``); the message names the folder and what is missing.

    Example:
        >>> import tempfile
        >>> scratch = tempfile.TemporaryDirectory()
        >>> folder = _example_build(scratch.name)
        >>> card = read_card(folder)
        >>> list(card.configs), card.configs["greetings"], card.default
        (['greetings'], {'test': ['greetings/test-00000-of-00001.parquet']}, 'greetings')
        >>> read_card(folder) is card   # the same README.md: not parsed again
        True
    """
    folder = Path(folder)
    card_path = folder / "README.md"
    try:
        stat = card_path.stat()
    except FileNotFoundError:
        if not folder.is_dir():
            raise ConvbenchError(f"{folder} does not exist: expected a folder `convbench build` wrote") from None
        raise ConvbenchError(f"{folder} is not a built dataset folder: it has no README.md (a build's card, whose "
                             "YAML header lists the configs and their data files)") from None
    key, version = str(card_path.resolve()), (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    cached = _CARDS.get(key)
    if cached is not None and cached[0] == version:
        return cached[1]
    card = _parse_card(card_path, card_path.read_text(encoding="utf-8"))
    _CARDS[key] = (version, card)
    return card


def built_folder(name: str, *, dataset: str | os.PathLike[str] | None = None,
                 sources: str | os.PathLike[str] | None = None) -> Path:
    """The build folder a run of benchmark ``name`` reads.

    ``dataset`` when given (it must be a build: a folder with a README.md whose YAML header lists
    ``configs``), else the build :func:`~.api.load` keeps in the convbench cache, built first if missing
    (from ``sources``, default ``$CONVBENCH_SOURCES`` or a download). Building imports ``datasets``;
    finding a build that is there does not.

    Raises:
        ConvbenchError: ``name`` is not a benchmark, or ``dataset`` is not a build (the message says why).

    Example:
        >>> import tempfile
        >>> scratch = tempfile.TemporaryDirectory()
        >>> folder = _example_build(scratch.name)
        >>> built_folder("nc", dataset=folder) == folder
        True
        >>> built_folder("nc", dataset=folder.parent / "missing")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        convbench_datasets.errors.ConvbenchError: .../missing does not exist: expected a folder `convbench build` wrote
        >>> built_folder("nc")                                  # doctest: +SKIP
        PosixPath('/home/me/.cache/convbench/hub/nc-0.1.0-45551bde662e')
    """
    from . import registry

    if name not in registry.BUILDERS:
        registry.builder(name)  # raises, naming the benchmarks
    if dataset is not None:
        folder = Path(dataset)
        read_card(folder)  # a clear error now rather than at the first read
        return folder
    from .building import cached_build

    return cached_build(name, sources, None)


def elsewhere(dataset: str | os.PathLike[str] | None) -> bool:
    """Whether a run's ``dataset`` names no folder here, but a dataset ``datasets`` finds by name (a Hub id, a
    ``convbench/NAME`` that ``convbench install`` put in its cache): such a one is read through ``datasets``."""
    return dataset is not None and not Path(dataset).exists()


def dataset_rows(name: str, config: str, split: str, *, dataset: str | os.PathLike[str] | None = None,
                 sources: str | os.PathLike[str] | None = None, rules: RowRules | None = None) -> list[dict[str, Any]]:
    """The rows a run of ``name`` reads: from the build folder ``dataset`` (default: the cached build) with
    pyarrow, so that the run never imports ``datasets``; a ``dataset`` that is no folder but a name
    (:func:`elsewhere`) through ``datasets.load_dataset``. ``rules``: what each row must hold (see
    :class:`RowRules`); a row that breaks them is an error naming the file (or dataset), row and field.

    Example:
        >>> import tempfile
        >>> scratch = tempfile.TemporaryDirectory()
        >>> [row["id"] for row in dataset_rows("nc", "greetings", "test", dataset=_example_build(scratch.name))]
        [1, 2]
    """
    if elsewhere(dataset):
        rows = named_rows(load_by_name(dataset, config)[split])  # type: ignore[arg-type]
        if rules is not None:
            check_rows(rows, rules, f"{dataset} (config {config!r}, split {split!r})")
        return rows
    return read_rows(built_folder(name, dataset=dataset, sources=sources), config, split, rules=rules)


def load_by_name(dataset: str | os.PathLike[str], config: str) -> Any:
    """``datasets.load_dataset(dataset, config)`` (a DatasetDict), its failure a one-line error naming it."""
    import datasets

    try:
        return datasets.load_dataset(str(dataset), config)
    except Exception as err:  # datasets raises many kinds (not found, offline, bad config): one line for each
        raise ConvbenchError(f"{dataset} is not a folder here, and datasets cannot load it by that name either "
                             f"({type(err).__name__}: {err})") from None


def split_names(folder: str | os.PathLike[str], config: str) -> list[str]:
    """The splits of ``config`` that have data files, in the card's order.

    Raises:
        ConvbenchError: no such config; the message names the configs the card lists.

    Example:
        >>> import tempfile
        >>> scratch = tempfile.TemporaryDirectory()
        >>> folder = _example_build(scratch.name)
        >>> split_names(folder, "greetings")
        ['test']
        >>> split_names(folder, "farewells")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        convbench_datasets.errors.ConvbenchError: .../README.md has no config 'farewells'; its configs: greetings
    """
    return list(_config(read_card(folder), config))


def data_files(folder: str | os.PathLike[str], config: str, split: str) -> list[Path]:
    """The parquet files of ``config``/``split``, resolved from the card's patterns as ``datasets`` does.

    Raises:
        ConvbenchError: no such config or split (the message names those that exist), or a pattern the
            card lists matches no parquet file (the message names it).

    Example:
        >>> import tempfile
        >>> scratch = tempfile.TemporaryDirectory()
        >>> folder = _example_build(scratch.name)
        >>> [p.relative_to(folder).as_posix() for p in data_files(folder, "greetings", "test")]
        ['greetings/test-00000-of-00001.parquet']
    """
    folder = Path(folder)
    card = read_card(folder)
    splits = _config(card, config)
    if split not in splits:
        raise ConvbenchError(f"{card.path}: config {config!r} has no split {split!r}; its splits with data: "
                             + ", ".join(splits))
    files: list[Path] = []
    for pattern in splits[split]:
        matched, others = _resolve(folder, pattern)
        where = f"{card.path}: config {config!r} split {split!r} lists {pattern!r}, which matches"
        if others:
            raise ConvbenchError(f"{where} files that are not parquet: {[p.as_posix() for p in others]}")
        if not matched:
            raise ConvbenchError(f"{where} no parquet file in {folder}")
        files.extend(matched)
    return files


def read_rows(folder: str | os.PathLike[str], config: str, split: str, *,
              rules: RowRules | None = None) -> list[dict[str, Any]]:
    """The rows of ``config``/``split`` of the build in ``folder``, read with pyarrow.

    Equal to :func:`~.class_labels.named_rows` of ``datasets.load_dataset(str(folder), config,
    split=split)``: same values, types, key order (the card's features) and row order (the card's files
    in order), class labels as names. ``rules``: what each row must hold (:class:`RowRules`), checked
    file by file (keys across all of them) after the names are read.

    Raises:
        ConvbenchError: no such config or split (naming those that exist), a data file missing or not
            parquet (naming it), a data file whose columns or types do not fit the card's features
            (naming the file and the columns), a class id that names no class or a row that breaks
            ``rules`` (naming the file, row and field), or another number of rows than the card's
            ``dataset_info`` gives.

    Example:
        >>> import tempfile
        >>> scratch = tempfile.TemporaryDirectory()
        >>> folder = _example_build(scratch.name)
        >>> read_rows(folder, "greetings", "test")
        [{'id': 1, 'text': 'hello', 'labels': ['greet']}, {'id': 2, 'text': 'good morning', 'labels': []}]
        >>> read_rows(folder, "greetings", "train")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        convbench_datasets.errors.ConvbenchError: .../README.md: config 'greetings' has no split 'train'; its splits with data: test
    """
    card = read_card(folder)
    files = data_files(folder, config, split)
    per_file = row_cache.read(card.path, files)  # the same files as when last read: their rows, without pyarrow
    fresh = per_file is None
    if per_file is None:
        per_file = _read_parquet(card, files, config, split)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[Any, ...], str] = {}
    for path, read in zip(files, per_file):
        if rules is not None:
            check_rows(read, rules, str(path), seen)
        rows.extend(read)
    _check_count(card, config, split, rows)
    if fresh:
        row_cache.write(card.path, files, per_file)
    return rows


def _read_parquet(card: BuiltCard, files: list[Path], config: str, split: str) -> list[list[dict[str, Any]]]:
    """Each data file's rows, in the card's columns and types, class labels as names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = card.features.get(config)
    schema = _arrow_schema(features, f"{card.path}, config {config!r}") if features else None
    labels = coder_of(features) if features else None
    per_file: list[list[dict[str, Any]]] = []
    for path in files:
        try:
            table = pq.ParquetFile(path).read()
        except (OSError, ValueError, pa.ArrowException) as err:  # a damaged file: ArrowInvalid is a ValueError
            raise ConvbenchError(f"{path}: cannot read it as parquet (config {config!r}, split {split!r}; damaged? "
                                 f"build it again): {err}") from None
        if schema is None:
            schema = table.schema.remove_metadata()  # no features in the card: the first file's, as datasets does
        per_file.append(decode_rows(_fit(table, schema, path, config).to_pylist(), labels, str(path)))
    return per_file


def _check_count(card: BuiltCard, config: str, split: str, rows: list[dict[str, Any]]) -> None:
    expected = card.rows.get(config, {}).get(split)
    if expected is not None and expected != len(rows):  # datasets checks this too as it prepares a folder
        raise ConvbenchError(f"{card.path}: config {config!r} split {split!r} has {expected} rows, its data files "
                             f"{len(rows)}: the build is damaged or was edited; build it again")


def _fit(table: Any, schema: Any, path: Path, config: str) -> Any:
    """``table`` with the card's columns in the card's order and types (datasets casts the same way)."""
    import pyarrow as pa

    names = schema.names
    if sorted(table.column_names) != sorted(names):
        missing = [n for n in names if n not in table.column_names]
        extra = [n for n in table.column_names if n not in names]
        raise ConvbenchError(f"{path}: its columns do not match the card's features for config {config!r} "
                             f"(missing: {missing}, not in the card: {extra})")
    table = table.select(names)
    if table.schema.remove_metadata().equals(schema):
        return table
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as err:
        wrong = [f.name for f, want in zip(table.schema, schema) if not f.type.equals(want.type)]
        raise ConvbenchError(f"{path}: column(s) {wrong} cannot be read as the card's features for config "
                             f"{config!r}: {err}") from None


def _config(card: BuiltCard, config: str) -> dict[str, list[str]]:
    if config not in card.configs:
        raise ConvbenchError(f"{card.path} has no config {config!r}; its configs: " + ", ".join(card.configs))
    return card.configs[config]


def _parse_card(path: Path, text: str) -> BuiltCard:
    from .parsed_yaml import InvalidYAML, parse

    def bad(why: str) -> ConvbenchError:
        return ConvbenchError(f"{path.parent} is not a built dataset folder: {path} {why}")

    match = _YAML_BLOCK.search(text)
    if not match:
        raise bad("has no YAML header between '---' lines")
    try:
        header = parse(match.group(2)) or {}
    except InvalidYAML as err:
        raise bad(f"has a YAML header that does not parse: {err}") from None
    if not isinstance(header, dict) or not isinstance(header.get("configs"), list) or not header["configs"]:
        raise bad("has a YAML header that lists no `configs` (each with its data_files)")
    configs: dict[str, dict[str, list[str]]] = {}
    defaults: list[str] = []
    for i, entry in enumerate(header["configs"]):
        name = entry.get("config_name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise bad(f"has a `configs` entry {i} without a config_name: {entry!r}")
        if "data_files" not in entry:
            raise bad(f"has a config {name!r} without data_files (a data_dir alone is not read here)")
        configs[name] = _split_patterns(entry["data_files"], lambda why: bad(f"config {name!r}: {why}"))
        if len(header["configs"]) == 1 or name == "default" or entry.get("default"):
            defaults.append(name)  # datasets' rule (MetadataConfigs.get_default_config_name)
    features: dict[str, list[Any]] = {}
    rows: dict[str, dict[str, int]] = {}
    infos = header.get("dataset_info") or []
    for info in infos if isinstance(infos, list) else [infos]:
        if not isinstance(info, dict):
            continue
        config = info.get("config_name", "default")
        if isinstance(info.get("features"), list):
            features[config] = info["features"]
        splits = info.get("splits")
        if isinstance(splits, list) and all(isinstance(x, dict) and isinstance(x.get("num_examples"), int)
                                            for x in splits):
            rows[config] = {str(x.get("name")): x["num_examples"] for x in splits}
    return BuiltCard(path=path, configs=configs, features=features, rows=rows,
                     default=defaults[0] if len(defaults) == 1 else None)


def _split_patterns(value: Any, bad: Any) -> dict[str, list[str]]:
    """A config's ``data_files`` as {split: [patterns]} (datasets' sanitize_patterns)."""
    def paths(v: Any) -> list[str]:
        items = v if isinstance(v, list) else [v]
        if not items or not all(isinstance(p, str) for p in items):
            raise bad(f"data_files paths must be strings, got {v!r}")
        return items

    if isinstance(value, list) and any(isinstance(e, dict) for e in value):
        out: dict[str, list[str]] = {}
        for e in value:
            if not (isinstance(e, dict) and set(e) == {"split", "path"}):
                raise bad(f"data_files entries must be {{split, path}}, got {e!r}")
            if str(e["split"]) in out:
                raise bad(f"split {e['split']!r} is listed twice in data_files")
            out[str(e["split"])] = paths(e["path"])
        return out
    if isinstance(value, (str, list)):
        return {_DEFAULT_SPLIT: paths(value)}
    raise bad(f"data_files must be a path, a list of paths or a list of {{split, path}}, got {value!r}")


def _resolve(folder: Path, pattern: str) -> tuple[list[Path], list[Path]]:
    """The files ``pattern`` matches under ``folder``, sorted, as datasets.data_files.resolve_pattern keeps
    them: (parquet files, other data files). Files without an extension are no data files to datasets."""
    if not _GLOB_CHARS.search(pattern):
        found = [folder / pattern] if (folder / pattern).is_file() else []
    else:
        asked = pattern.split("/")
        found = []
        for match in sorted(glob.glob(os.path.join(glob.escape(str(folder)), pattern), recursive=True)):
            path = Path(match)
            parts = path.relative_to(folder).parts
            hidden = any(p.startswith(".") for p in parts) and not any(p.startswith(".") for p in asked)
            special = any(p.startswith("__") for p in parts) and not any(p.startswith("__") for p in asked)
            if path.is_file() and path.name not in _FILES_TO_IGNORE and not hidden and not special:
                found.append(path)
    found = [p for p in found if "." in p.name.lstrip(".")]
    return [p for p in found if p.suffix == ".parquet"], [p for p in found if p.suffix != ".parquet"]


def _arrow_schema(features: list[Any], where: str) -> Any:
    """The arrow schema of a card's ``features`` list (datasets' Features._from_yaml_list, then arrow_schema)."""
    import pyarrow as pa

    return pa.schema([pa.field(f["name"], _arrow_type(f, f"{where}, feature {f.get('name')!r}")) for f in features])


def _arrow_type(spec: Any, where: str) -> Any:
    import pyarrow as pa

    def refuse(what: Any) -> ConvbenchError:
        return ConvbenchError(f"{where}: feature type {what!r} is decoded by datasets on read; convbench's row reader "
                              "handles plain values, lists, structs and class labels only: load it with datasets")

    if isinstance(spec, str):
        try:
            return pa.type_for_alias(spec)
        except ValueError:
            raise refuse(spec) from None
    if isinstance(spec, list):  # a struct's fields
        return pa.struct([pa.field(f["name"], _arrow_type(f, where)) for f in spec])
    if not isinstance(spec, dict):
        raise refuse(spec)
    if "class_label" in spec:  # a list's item is written without "dtype"
        return pa.int64()
    if "dtype" in spec:
        dtype = spec["dtype"]
        if isinstance(dtype, dict) and "class_label" in dtype:
            return pa.int64()
        if isinstance(dtype, str):
            return _arrow_type(dtype, where)
        raise refuse(dtype)
    if "struct" in spec:
        return _arrow_type(list(spec["struct"]), where)
    if "sequence" in spec and isinstance(spec["sequence"], list):  # Sequence({...}): a struct of lists
        item = _arrow_type(spec["sequence"], where)
        return pa.struct([pa.field(f.name, pa.list_(f.type)) for f in item])
    for kind in ("list", "sequence", "large_list"):
        if kind in spec:
            item = _arrow_type(spec[kind], where)
            length = spec.get("length", -1)
            if kind == "large_list":
                return pa.large_list(item)
            return pa.list_(item, length) if length is not None and length >= 0 else pa.list_(item)
    raise refuse(spec)


def _example_build(root: str | os.PathLike[str]) -> Path:
    """A two-row build (one config, one split) under ``root``, for the examples in this module."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(root) / "greetings-build"
    (folder / "greetings").mkdir(parents=True, exist_ok=True)
    rows = [{"id": 1, "text": "hello", "labels": ["greet"]}, {"id": 2, "text": "good morning", "labels": []}]
    schema = pa.schema([("id", pa.int64()), ("text", pa.string()), ("labels", pa.list_(pa.string()))])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / "greetings" / "test-00000-of-00001.parquet")
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: greetings\n  data_files:\n  - split: test\n"
        "    path: greetings/test-00000-of-00001.parquet\ndataset_info:\n- config_name: greetings\n  features:\n"
        "  - name: id\n    dtype: int64\n  - name: text\n    dtype: string\n  - name: labels\n    list: string\n---\n",
        encoding="utf-8")
    return folder
