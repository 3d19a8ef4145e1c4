"""Write a built dataset as a Hugging Face dataset repository folder: parquet files plus a card.

The folder is what ``datasets.load_dataset(folder, config)`` reads offline and what ``convbench
publish`` uploads: ``<config>/<split>-00000-of-00001.parquet`` per config and split, ``README.md`` whose
YAML header declares ``configs`` (data files per split) and ``dataset_info`` (features, row counts),
any extra files (the upstream LICENSE), and the ``.convbench-build`` marker that lets a later build
replace the folder (:mod:`.out_folder`). Nothing in it depends on time or machine, so building twice
gives byte-identical files.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .class_labels import coder_of, encode_rows
from .errors import BuildError
from .out_folder import GENERATED_PREFIX, staged

_PLACEHOLDER = re.compile(r"\{\{[a-z_]+\}\}")
GENERATED_MARK = GENERATED_PREFIX + " from cards/{name}/README.md: edit that template, not this file -->"


@dataclass
class BuiltConfig:
    """One config: its rows per split (dicts in column order) and a one-line description."""

    name: str
    splits: dict[str, list[dict[str, Any]]]
    description: str = ""
    features: Any = None  # datasets.Features; None: the dataset's shared features


@dataclass
class BuiltDataset:
    """Everything :func:`export` needs; produced by a benchmark's builder.

    ``union_configs`` are configs made of other configs' files (no data written twice), e.g.
    ``{"all": ["basic", "rag"]}``. ``card_fields`` fill ``{{name}}`` placeholders of the card template.
    """

    name: str
    features: Any  # datasets.Features of configs that do not set their own (union configs use their parts')
    configs: list[BuiltConfig]
    card_template: Path
    card_fields: dict[str, str] = field(default_factory=dict)
    card_header: dict[str, Any] = field(default_factory=dict)  # YAML header values decided by the builder
    union_configs: dict[str, list[str]] = field(default_factory=dict)
    default_config: str | None = None
    extra_files: dict[str, Path] = field(default_factory=dict)
    departures: list[str] = field(default_factory=list)  # how this build departs from the paper's (said at the end)

    def features_of(self, config: str) -> Any:
        for c in self.configs:
            if c.name == config:
                return c.features if c.features is not None else self.features
        return self.features_of(self.union_configs[config][0])

    def split_rows(self) -> dict[str, dict[str, int]]:
        """Row counts: {config: {split: n}}, union configs included."""
        counts = {c.name: {s: len(rows) for s, rows in c.splits.items()} for c in self.configs}
        for union, parts in self.union_configs.items():
            merged: dict[str, int] = {}
            for part in parts:
                for split, n in counts[part].items():
                    merged[split] = merged.get(split, 0) + n
            counts[union] = merged
        return counts


def data_file(config: str, split: str) -> str:
    return f"{config}/{split}-00000-of-00001.parquet"


def export(built: BuiltDataset, out: str | os.PathLike[str]) -> Path:
    """Write ``built`` to ``out`` and return the folder.

    ``out`` may be missing, empty, or a previous convbench build (it holds the marker file
    ``.convbench-build``), which is replaced: the files it wrote are renewed or removed and hidden
    entries kept (``.git``, ``.gitattributes``: a clone of the published repository stays a clone).
    Anything else is refused, so a typo cannot touch an unrelated folder; see :mod:`.out_folder`.
    The new files are written beside the target and swapped in at the end.
    """
    with staged(out, built.name) as staging:
        num_bytes = _write_parquet(built, staging)
        (staging / "README.md").write_text(render_card(built, num_bytes), encoding="utf-8")
        for name, source in sorted(built.extra_files.items()):
            shutil.copyfile(source, staging / name)
    return Path(out).resolve()


def _write_parquet(built: BuiltDataset, root: Path) -> dict[str, dict[str, int]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    num_bytes: dict[str, dict[str, int]] = {}
    for config in built.configs:
        features = built.features_of(config.name)
        schema, labels = features.arrow_schema, coder_of(features._to_yaml_list())
        for split, rows in config.splits.items():
            if not rows:
                continue  # an empty split is not published: datasets cannot read a parquet file of no rows
            # builders make rows with names; a ClassLabel column is stored as its ids (see .class_labels)
            table = pa.Table.from_pylist(encode_rows(rows, labels, f"{config.name}/{split}"), schema=schema)
            path = root / data_file(config.name, split)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, compression="zstd")
            num_bytes.setdefault(config.name, {})[split] = table.nbytes
    return num_bytes


def card_metadata(built: BuiltDataset, num_bytes: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The YAML header's generated part: ``configs`` and ``dataset_info`` as datasets reads them."""
    counts = built.split_rows()
    config_files: dict[str, dict[str, list[str]]] = {
        c.name: {split: [data_file(c.name, split)] for split, rows in c.splits.items() if rows} for c in built.configs
    }
    for union, parts in built.union_configs.items():
        merged: dict[str, list[str]] = {}
        for part in parts:
            for split, paths in config_files[part].items():
                merged.setdefault(split, []).extend(paths)
        config_files[union] = merged
        num_bytes[union] = {s: sum(num_bytes[p].get(s, 0) for p in parts) for s in merged}

    configs, infos = [], []
    for name, splits in config_files.items():
        entry: dict[str, Any] = {"config_name": name}
        if name == built.default_config:
            entry["default"] = True
        entry["data_files"] = [{"split": s, "path": p if len(p) > 1 else p[0]} for s, p in splits.items()]
        configs.append(entry)
        infos.append(
            {
                "config_name": name,
                "features": built.features_of(name)._to_yaml_list(),
                "splits": [
                    {"name": s, "num_bytes": num_bytes[name][s], "num_examples": counts[name][s]} for s in splits
                ],
                "dataset_size": sum(num_bytes[name].values()),
            }
        )
    return {"configs": configs, "dataset_info": infos}


# The Hub's size_categories values, each with the row count it stays below
SIZE_CATEGORIES = tuple(zip(
    (10**3, 10**4, 10**5, 10**6, 10**7, 10**8, 10**9, 10**10, 10**11, 10**12),
    ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M", "100M<n<1B", "1B<n<10B",
     "10B<n<100B", "100B<n<1T"),
))


def size_category(built: BuiltDataset) -> str:
    """The Hub's ``size_categories`` value: rows of the largest config, all splits together."""
    rows = max((sum(splits.values()) for splits in built.split_rows().values()), default=0)
    return next((name for limit, name in SIZE_CATEGORIES if rows < limit), "n>1T")


def render_card(built: BuiltDataset, num_bytes: dict[str, dict[str, int]]) -> str:
    """The card template with its YAML header completed and ``{{placeholders}}`` filled."""
    import yaml

    text = built.card_template.read_text(encoding="utf-8")
    header, body = _split_front_matter(text, built.card_template)
    header.update(built.card_header)
    header.setdefault("size_categories", [size_category(built)])
    header.update(card_metadata(built, num_bytes))
    for key, value in built.card_fields.items():
        body = body.replace("{{" + key + "}}", value.rstrip("\n"))
    unfilled = _PLACEHOLDER.findall(body)
    if unfilled:
        raise BuildError(f"card template {built.card_template} has unfilled field(s): {unfilled}")
    front = yaml.dump(header, Dumper=_no_alias_dumper(), sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{front}---\n{GENERATED_MARK.format(name=built.name)}\n\n{body.lstrip()}"


def _no_alias_dumper() -> type:
    import yaml

    class NoAliasDumper(yaml.SafeDumper):
        # The features list repeats per config; anchors (&id001) would be valid YAML but hard to read.
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return NoAliasDumper


def _split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    import yaml

    if not text.startswith("---\n"):
        raise BuildError(f"card template {path} must start with a YAML header between '---' lines")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise BuildError(f"card template {path}: YAML header is not closed by a '---' line")
    header = yaml.safe_load(text[4:end]) or {}
    return header, text[end + 5 :]
