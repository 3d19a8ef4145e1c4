"""Closed label sets on disk as ``datasets.ClassLabel`` ids, in convbench's own code as names.

A build stores a column whose values form a closed set (NC-Bench's ``pattern``, NICO's
``interaction_type``...) as a ``ClassLabel``: its ids in the parquet files, its names in the card's
features, as the Hub expects; a notebook gets ``features["pattern"].names``, ``int2str`` and
``train_test_split(stratify_by_column=...)``. Runs, the harness tasks and the records work with the
names (they are what the paper's tables, the prompts and the answer keys say), so the ids are turned
into names once, where rows are read (:func:`~.built_rows.read_rows`, :func:`named_rows`), and names
into ids once, where a build is written (:func:`encode_rows`).

Written here rather than taken from ``datasets``: ``datasets`` keeps ids on read (its
``decode_example`` returns them unchanged), the run path reads rows without importing ``datasets``
at all, and its encoder's error names neither the row nor the field.

A *coder* says where a row's class labels are, built from a features list in the card's YAML form
(``Features._to_yaml_list()``): a tuple of names (the value is a class label), a dict of field to coder
(a struct: only the fields that hold class labels), or a one-item list ``[coder]`` (a list of it).

Example:
    >>> spec = [{"name": "id", "dtype": "int64"},
    ...         {"name": "kind", "dtype": {"class_label": {"names": {"0": "greeting", "1": "farewell"}}}}]
    >>> coder = coder_of(spec)
    >>> coder
    {'kind': ('greeting', 'farewell')}
    >>> decode_rows([{"id": 7, "kind": 1}], coder, "x.parquet")
    [{'id': 7, 'kind': 'farewell'}]
    >>> encode_rows([{"id": 7, "kind": "greeting"}], coder, "nc/test")
    [{'id': 7, 'kind': 0}]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import DataFormatError

Coder = Any  # tuple[str, ...] | dict[str, "Coder"] | list["Coder"]


def coder_of(features: Sequence[Any]) -> dict[str, Coder] | None:
    """Where the rows of a features list (YAML form) hold class labels; None where they hold none."""
    coder = _struct(features)
    return coder or None


def _struct(fields: Sequence[Any]) -> dict[str, Coder]:
    found: dict[str, Coder] = {}
    for spec in fields:
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            inner = _coder({k: v for k, v in spec.items() if k != "name"})
            if inner is not None:
                found[spec["name"]] = inner
    return found


def _coder(spec: Any) -> Coder | None:
    if isinstance(spec, list):
        return _struct(spec) or None
    if not isinstance(spec, dict):
        return None
    if "class_label" in spec:
        names = spec["class_label"].get("names", {})
        # the card's YAML numbers the names ("0": a, "1": b); their order is the ids'
        return tuple(names[k] for k in sorted(names, key=int)) if isinstance(names, dict) else tuple(names)
    if "dtype" in spec:
        return _coder(spec["dtype"])
    if "struct" in spec:
        return _coder(spec["struct"])
    for kind in ("list", "sequence", "large_list"):
        if kind in spec:
            item = _coder(spec[kind])
            return [item] if item is not None else None
    return None


def decode_rows(rows: list[dict[str, Any]], coder: dict[str, Coder] | None, where: str) -> list[dict[str, Any]]:
    """``rows`` (in place) with each class id replaced by its name.

    Raises:
        DataFormatError: an id that names no class: ``<where>: row <index>: field <path> ...``.
    """
    if coder:
        for index, row in enumerate(rows):
            for name, inner in coder.items():
                if name in row:
                    row[name] = _map(row[name], inner, _name_of, f"{where}: row {index}", name)
    return rows


def encode_rows(rows: list[dict[str, Any]], coder: dict[str, Coder] | None, where: str) -> list[dict[str, Any]]:
    """Copies of ``rows`` with each class name replaced by its id (an id is kept: both are accepted).

    Raises:
        DataFormatError: a value that is none of the names: ``<where>: row <index>: field <path> ...``.

    Example:
        >>> encode_rows([{"kind": "hello"}], {"kind": ("greeting",)}, "nc/test")
        Traceback (most recent call last):
        convbench_datasets.errors.DataFormatError: nc/test: row 0: field 'kind' must be one of greeting, got 'hello'
    """
    if not coder:
        return rows
    out = []
    for index, row in enumerate(rows):
        row = dict(row)
        for name, inner in coder.items():
            if name in row:
                row[name] = _map(row[name], inner, _id_of, f"{where}: row {index}", name)
        out.append(row)
    return out


def named_rows(dataset: Any) -> list[dict[str, Any]]:
    """A ``datasets.Dataset``'s rows as ``to_list()`` gives them, with class labels as names.

    Example:
        >>> import datasets
        >>> ds = datasets.Dataset.from_list([{"kind": 1}], features=datasets.Features(
        ...     {"kind": datasets.ClassLabel(names=["greeting", "farewell"])}))
        >>> named_rows(ds)
        [{'kind': 'farewell'}]
    """
    rows: list[dict[str, Any]] = dataset.to_list()
    return decode_rows(rows, coder_of(dataset.features._to_yaml_list()), "the dataset")


def _map(value: Any, coder: Coder, leaf: Any, where: str, path: str) -> Any:
    if value is None:
        return None
    if isinstance(coder, tuple):
        return leaf(value, coder, where, path)
    if isinstance(coder, list):
        return [_map(v, coder[0], leaf, where, f"{path}[{i}]") for i, v in enumerate(value)]
    value = dict(value)
    for name, inner in coder.items():
        if name in value:
            value[name] = _map(value[name], inner, leaf, where, f"{path}.{name}")
    return value


def _name_of(value: Any, names: tuple[str, ...], where: str, path: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    raise DataFormatError(f"{where}: field {path!r} must be a class id of its {len(names)} names "
                          f"(0-{len(names) - 1}), got {value!r}: the build is damaged or was edited; build it again")


def _id_of(value: Any, names: tuple[str, ...], where: str, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return value
    try:
        return names.index(value)
    except ValueError:
        raise DataFormatError(f"{where}: field {path!r} must be one of {', '.join(names)}, got {value!r}") from None


def names_or_ids(values: Sequence[Any] | None, names: Sequence[str]) -> list[Any] | None:
    """A metric's grouping column as names: each value a name, or a class id of ``names`` (what a
    ``datasets`` column of a build holds), turned into its name; other values are returned unchanged,
    for the metric's own check to refuse.

    Example:
        >>> names_or_ids([1, "basic"], ("basic", "rag"))
        ['rag', 'basic']
    """
    if values is None or isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        return values  # type: ignore[return-value]  # not a column: the metric's own check names it
    return [names[v] if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(names) else v
            for v in values]


def named_fields(row: Mapping[str, Any], fields: Sequence[str],
                 names_of: Callable[[str], Sequence[str]]) -> Mapping[str, Any]:
    """``row`` with each of ``fields`` that holds a class id replaced by its name (``names_of(field)``, in id
    order; ``row`` itself when none does): a row of a ``datasets`` split given to a function that reads names.
    The names are looked up only for a field holding an id: a row convbench read (names already) costs one
    check per field, as it is made once per prompt.

    Example:
        >>> named_fields({"id": 3, "set": 1}, ["set"], lambda field: ("basic", "rag"))
        {'id': 3, 'set': 'rag'}
    """
    ids = [f for f in fields if isinstance(row.get(f), int) and not isinstance(row.get(f), bool)]
    if not ids:
        return row
    return {**row, **{f: names_or_ids([row[f]], names_of(f))[0] for f in ids}}  # type: ignore[index]
