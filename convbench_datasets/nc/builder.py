"""NC-Bench as a dataset: one config per upstream set plus ``all``, split ``test``.

Example (needs the upstream files: a mirror via CONVBENCH_SOURCES, or the network):
    >>> built = build()                                        # doctest: +SKIP
    >>> built.split_rows()["complex_request"]                  # doctest: +SKIP
    {'test': 360}
"""

from __future__ import annotations

import os

from .._resources import bundled_dir
from .._version import __version__
from ..errors import BuildError
from ..sources import fetch
from ..hub import BuiltConfig, BuiltDataset
from ..registry import BenchmarkInfo
from . import schema
from .patterns import pattern_table
from .references import citation
from .upstream import fetch_sources, read_set, source_files, source_pins

NAME = "nc"
SPLIT = "test"
ALL = "all"


def info() -> BenchmarkInfo:
    """Configs, row counts and license, known without building (from the pattern table)."""
    table = pattern_table()
    configs = {s: {SPLIT: table.rows(s)} for s in table.sets}
    configs[ALL] = {SPLIT: sum(table.rows(s) for s in table.sets)}
    return BenchmarkInfo(
        name=NAME,
        title="NC-Bench: conversational competence (IBM)",
        license=source_pins()["license"],
        configs=configs,
        needs=f"downloads {len(source_files())} files from IBM/nc-bench (or --sources DIR)",
    )


def build(
    sources_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    data_dir: str | os.PathLike[str] | None = None,
) -> BuiltDataset:
    """Read and validate the upstream files and return the dataset ready for :func:`hub.export`."""
    if data_dir is not None:
        raise BuildError("NC-Bench is built from its pinned upstream files; it takes no --data-dir")
    table = pattern_table()
    paths = fetch_sources(sources_dir, progress=progress)
    # the released judge prompt (utils.py) a default run reads: kept in the download cache now, so that a run
    # after this build works offline without the mirror (keep_copy: a mirror's file is copied there too)
    fetch(source_files("code")["utils"], sources_dir=sources_dir, progress=progress, keep_copy=True)
    configs = [
        BuiltConfig(name=s, splits={SPLIT: read_set(paths[s], s, table)}, description=table.set_descriptions[s])
        for s in table.sets
    ]
    return BuiltDataset(
        name=NAME,
        features=schema.features(),
        configs=configs,
        card_template=bundled_dir("cards") / NAME / "README.md",
        card_fields=_card_fields(),
        card_header={"license": source_pins()["license"].lower()},
        union_configs={ALL: list(table.sets)},
        default_config=ALL,
        extra_files={"LICENSE": paths["license"]},
    )


def _card_fields() -> dict[str, str]:
    return {
        "configs": _configs_md(),
        "columns": _columns_md(),
        "patterns": _patterns_md(),
        "provenance": _provenance_md(),
        "citation": citation(),
    }


def _configs_md() -> str:
    table = pattern_table()
    lines = ["| config | split | rows | what it holds |", "|---|---|---|---|"]
    for s in table.sets:
        lines.append(f"| `{s}` | `{SPLIT}` | {table.rows(s)} | {table.set_descriptions[s]} |")
    lines.append(f"| `{ALL}` (default) | `{SPLIT}` | {sum(table.rows(s) for s in table.sets)} | the three sets together, in that order |")
    return "\n".join(lines)


def _columns_md() -> str:
    rows = (f"| `{c.name}` | {c.type} | {c.description} |" for c in schema.COLUMNS)
    return "\n".join(["| column | type | holds |", "|---|---|---|", *rows])


def _patterns_md() -> str:
    lines = ["| set | task (upstream) | pattern | rows | acceptable labels | judge label set |", "|---|---|---|---|---|---|"]
    for e in pattern_table().tasks:
        lines.append(
            f"| {e.set} | {e.task} | {e.pattern} | {e.rows} | {', '.join(e.acceptable_labels)} | {e.label_group} |"
        )
    return "\n".join(lines)


def _provenance_md() -> str:
    pins = source_pins()
    lines = [
        f"Built by convbench {__version__} from {pins['origin']} at commit `{pins['commit']}`.",
        "",
        "| file | sha256 |",
        "|---|---|",
    ]
    lines += [f"| [{src.name}]({src.url}) | `{src.sha256}` |" for src in source_files().values()]
    return "\n".join(lines)
