"""NICO as a dataset: configs ``dialogs`` and one per task, splits train / validation / test.

NICO's data is not public: ``convbench build nico --data-dir DIR`` reads the user's JSON Lines files
(format in ``format.py``). Without a folder it builds the bundled 20-dialogue sample, with a warning,
so that the whole NICO path can be tried out of the box.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

from .._resources import bundled_dir
from .._version import __version__
from ..errors import BuildError, DataFormatError
from ..hub import BuiltConfig, BuiltDataset
from ..registry import BenchmarkInfo
from . import schema
from .references import citation
from .format import SPLITS, interaction_types, read_dialogues
from .splits import HELD_OUT_SHARE, SPLIT_SEED, assign_splits
from .tasks import EXAMPLES, TASKS, dialog_row

NAME = "nico"
CONFIGS = ("dialogs", *TASKS)
SAMPLE = Path(__file__).parent / "sample" / "dialogues.jsonl"
SAMPLE_WARNING = "building NICO from convbench's 20-dialogue sample; pass --data-dir with the real NICO data"


def info() -> BenchmarkInfo:
    return BenchmarkInfo(
        name=NAME,
        title="NICO: natural Chinese dialogue (Sun et al., 2024)",
        license="user-provided data; sample: Apache-2.0 (convbench)",
        configs={c: {s: None for s in SPLITS} for c in CONFIGS},  # rows depend on the data given
        needs="your NICO files via --data-dir (else a bundled 20-dialogue sample)",
    )


def input_files(data_dir: str | os.PathLike[str] | None) -> list[Path]:
    if data_dir is None:
        return [SAMPLE]
    folder = Path(data_dir)
    if not folder.is_dir():
        raise BuildError(f"NICO data folder {folder} does not exist")
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise BuildError(f"NICO data folder {folder} holds no .jsonl file")
    return files


def read_all(files: list[Path]) -> list[dict[str, Any]]:
    dialogues: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for path in files:
        for dialogue in read_dialogues(path, split=path.stem if path.stem in SPLITS else None):
            if dialogue["id"] in seen:
                raise DataFormatError(f"{path.name}: dialogue id {dialogue['id']!r} already used in {seen[dialogue['id']]}")
            seen[dialogue["id"]] = path.name
            dialogues.append(dialogue)
    return dialogues


def build(
    sources_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    data_dir: str | os.PathLike[str] | None = None,
) -> BuiltDataset:
    if data_dir is None:
        warnings.warn(SAMPLE_WARNING, UserWarning, stacklevel=2)
    files = input_files(data_dir)
    dialogues = sorted(read_all(files), key=lambda d: d["id"])
    split_of = assign_splits(dialogues)
    configs = [BuiltConfig("dialogs", _by_split(dialogues, split_of, lambda d: [dialog_row(d)]),
                           features=schema.features("dialogs"))]
    for task in TASKS:
        configs.append(BuiltConfig(task, _by_split(dialogues, split_of, EXAMPLES[task]), features=schema.features(task)))
    return BuiltDataset(
        name=NAME,
        features=schema.features("dialogs"),
        configs=configs,
        card_template=bundled_dir("cards") / NAME / "README.md",
        card_fields=_card_fields(files, data_dir is None, configs),
        default_config="dialogs",
        extra_files={"LICENSE.md": bundled_dir("cards") / NAME / "LICENSE.md"},  # the card's license_link
    )


def _by_split(dialogues: list[dict[str, Any]], split_of: dict[str, str], make: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for dialogue in dialogues:
        out[split_of[dialogue["id"]]].extend(make(dialogue))
    return out


def _card_fields(files: list[Path], sample: bool, configs: list[BuiltConfig]) -> dict[str, str]:
    counts = ["| config | " + " | ".join(SPLITS) + " |", "|---" * (len(SPLITS) + 1) + "|"]
    counts += [f"| `{c.name}` | " + " | ".join(str(len(c.splits[s])) for s in SPLITS) + " |" for c in configs]
    columns = []
    for config, cols in schema.COLUMNS.items():
        columns += [f"**{config}**", "", "| column | holds |", "|---|---|"]
        columns += [f"| `{c.name}` | {c.description} |" for c in cols] + [""]
    kinds = ["| type | 中文 | definition |", "|---|---|---|"]
    kinds += [f"| {k} | {v['zh']} | {v['definition_en']} |" for k, v in interaction_types().items()]
    source = (
        "**This build is convbench's 20-dialogue sample, not NICO.** It exists to exercise the pipeline."
        if sample else "Built from user-provided NICO files."
    )
    digests = [f"| {p.name} | `{hashlib.sha256(p.read_bytes()).hexdigest()}` |" for p in files]
    provenance = "\n".join([
        source, "",
        f"Built by convbench {__version__}. Splits: the files' own when given, else seeded (seed {SPLIT_SEED}, "
        f"{HELD_OUT_SHARE:.0%} test, {HELD_OUT_SHARE:.0%} validation, the rest train).", "",
        "| input file | sha256 |", "|---|---|", *digests,
    ])
    return {"counts": "\n".join(counts), "columns": "\n".join(columns).rstrip(), "interaction_types": "\n".join(kinds),
            "provenance": provenance, "citation": citation()}
