"""CoCoEvalBench rebuilt from public sources: one config per source plus ``all``, splits test and train."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._resources import bundled_dir
from .._version import __version__
from ..errors import BuildError
from ..hub import BuiltConfig, BuiltDataset
from ..registry import BenchmarkInfo
from ..engine.error_rate import DEFAULT_MAX_ERROR_RATE, checked_rate
from . import schema
from .cleaning import RULES
from .conversations import (QMSUM_DOMAINS, SETTINGS, iq2_source, pins, qmsum_sources, read_iq2, read_qmsum, read_tcr,
                            tcr_file)
from .build_facts import build_departures, build_facts
from .instances import EVAL_PER_SOURCE, WINDOW, instance, select_windows
from .model_made import CLEANED_SOURCES, abstractive_summaries, clean_transcripts, model_metadata
from .model_stage import StageRecord, card_section
from .references import citation
from .taxonomy import load_taxonomy

if TYPE_CHECKING:
    from ..engine.backends import Backend

NAME = "cocoeval"
DOWNLOADED = (*QMSUM_DOMAINS, "iq2")
TCR_SOURCES = ("sim", "ncpc")
ALL = "all"


def info() -> BenchmarkInfo:
    configs: dict[str, dict[str, int | None]] = {s: {"test": EVAL_PER_SOURCE, "train": None} for s in (*DOWNLOADED, *TCR_SOURCES)}
    configs[ALL] = {"test": None, "train": None}
    return BenchmarkInfo(
        name=NAME,
        title="CoCoEvalBench: multi-party conversation continuation (rebuilt from QMSum and IQ2)",
        license="QMSum: MIT; IQ2: none stated (downloaded at build time, not redistributable)",
        configs=configs,
        needs=f"downloads {len(qmsum_sources()) + 1} files (QMSum, IQ2); sim and ncpc need --data-dir DIR holding the TCR "
              f"release's {' and/or '.join(tcr_file(s) for s in TCR_SOURCES)}",
    )


def build(sources_dir: str | os.PathLike[str] | None = None, progress: bool = True,
          data_dir: str | os.PathLike[str] | None = None, summarizer: str | Backend | None = None,
          summarizer_options: dict[str, Any] | None = None, cleaner: str | Backend | None = None,
          cleaner_options: dict[str, Any] | None = None, metadata_model: str | Backend | None = None,
          metadata_model_options: dict[str, Any] | None = None,
          cache: str | os.PathLike[str] | None = None, retry_errors: bool = False,
          max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> BuiltDataset:
    """Build every source's instances. Model-made stages (a model spec or Backend each; see
    :mod:`.model_made`): ``cleaner`` cleans QMSum Product and Academic, ``summarizer`` writes abstractive
    summaries, ``metadata_model`` the metadata; their answers go through the response cache ``cache``
    (default: convbench's), so a rebuild with the same models makes no calls. A prompt that ended in a
    model error keeps its rule-made value and is counted (its error cached: ``retry_errors`` asks again);
    more than ``max_error_rate`` of a stage's prompts stop the build (see :mod:`.model_stage`)."""
    stage_policy = {"retry_errors": retry_errors, "max_error_rate": checked_rate(max_error_rate)}
    counts: Counter = Counter()
    stages: list[StageRecord] = []
    tcr = _tcr_files(Path(data_dir)) if data_dir is not None else {}  # a wrong folder fails before downloads
    conversations: dict[str, list[dict[str, Any]]] = {s: read_qmsum(s, sources_dir, counts, progress) for s in QMSUM_DOMAINS}
    conversations["iq2"] = read_iq2(sources_dir, counts, progress)
    for source, path in tcr.items():
        conversations[source] = read_tcr(source, path, counts)
    picked: dict[str, tuple[list[tuple[dict[str, Any], int]], list[tuple[dict[str, Any], int]]]] = {}
    for source, items in conversations.items():
        evaluation, training = picked[source] = select_windows(items, source)
        if len(evaluation) < EVAL_PER_SOURCE:
            raise BuildError(f"{source}: only {len(evaluation)} non-overlapping windows of {2 * WINDOW} turns, "
                             f"{EVAL_PER_SOURCE} needed")
    if cleaner is not None:  # after the windows (the cleaner keeps turn counts): no piece spans a reference start
        cleaned = [c for s in CLEANED_SOURCES for c in conversations[s]]
        starts: dict[int, list[int]] = {}
        for source in CLEANED_SOURCES:
            for c, s in (*picked[source][0], *picked[source][1]):
                starts.setdefault(id(c), []).append(s)
        stages.append(clean_transcripts(cleaned, cleaner, cleaner_options or {}, cache, progress,
                                        cuts=[starts.get(id(c), []) for c in cleaned], **stage_policy))
    configs = []
    windows: list[tuple[dict[str, Any], dict[str, Any], int]] = []  # (row, conversation, start) for the model stages
    for source, (evaluation, training) in picked.items():
        splits = {"test": [instance(c, s) for c, s in evaluation], "train": [instance(c, s) for c, s in training]}
        windows += [(row, c, s) for split, chosen in (("test", evaluation), ("train", training))
                    for row, (c, s) in zip(splits[split], chosen)]
        configs.append(BuiltConfig(source, splits, SETTINGS[source]))
    rows = [row for row, _, _ in windows]
    if summarizer is not None:  # before the metadata model: the summary prompt names the source's setting
        stages.append(abstractive_summaries(rows, [c["turns"][: s - WINDOW] for _, c, s in windows], summarizer,
                                            summarizer_options or {}, progress, cache, **stage_policy))
    if metadata_model is not None:
        stages.append(model_metadata(rows, [c["turns"][:s] for _, c, s in windows], metadata_model,
                                     metadata_model_options or {}, cache, progress, **stage_policy))
    departures = build_departures(build_facts([r for c in configs for r in c.splits["test"]], ALL, "test"))
    return BuiltDataset(
        name=NAME,
        features=schema.features(),
        configs=configs,
        card_template=bundled_dir("cards") / NAME / "README.md",
        card_fields={**_card_fields(configs, counts, {s: len(conversations[s]) for s in TCR_SOURCES if s in conversations}),
                     "model_stages": card_section(stages), "departures": _departures_section(departures)},
        union_configs={ALL: [c.name for c in configs]},
        default_config=ALL,
        extra_files={"LICENSE.md": bundled_dir("cards") / NAME / "LICENSE.md"},  # the card's license_link
        departures=departures,
    )


def _departures_section(departures: list[str]) -> str:
    """The card's statement of how this build departs from the paper's evaluation set (the same lines a run
    on it is flagged with, from :func:`.build_facts.build_departures`)."""
    if not departures:
        return "This build is made the paper's way: six sources, 50 test instances each, every model-made stage by o4-mini."
    return "This build departs from the paper's (numbers from it are flagged by `convbench report`):\n\n" + "\n".join(
        f"- {line}" for line in departures)


def _tcr_files(folder: Path) -> dict[str, Path]:
    """The TCR release files present in ``folder`` (either or both), named as in the release's ``data/``."""
    if not folder.is_dir():
        raise BuildError(f"TCR data folder {folder} does not exist")
    found = {s: folder / tcr_file(s) for s in TCR_SOURCES if (folder / tcr_file(s)).is_file()}
    if not found:
        raise BuildError(f"no TCR files in {folder}: expected {' and/or '.join(tcr_file(s) for s in TCR_SOURCES)} "
                         "there, named as in the TCR release's data/ folder")
    return found


def _card_fields(configs: list[BuiltConfig], counts: Counter, tcr_meetings: dict[str, int]) -> dict[str, str]:
    table = ["| config | test | train | setting |", "|---|---|---|---|"]
    table += [f"| `{c.name}` | {len(c.splits['test'])} | {len(c.splits['train'])} | {c.description} |" for c in configs]
    cleaning = ["| rule | changes |", "|---|---|"] + [f"| {rule} | {counts[rule]} |" for rule in RULES]
    behaviours = ["| behaviour | group | definition |", "|---|---|---|"]
    behaviours += [f"| {b.name}{' (inferred)' if b.inferred else ''} | {b.group} | {b.definition} |" for b in load_taxonomy()]
    spec = pins()
    provenance = [
        f"Built by convbench {__version__}.",
        f"- QMSum: {spec['qmsum']['origin']} at commit `{spec['qmsum']['commit']}` ({len(qmsum_sources())} meeting files, "
        "each checked against its pinned sha256).",
        f"- IQ2: {spec['iq2']['origin']} at commit `{spec['iq2']['commit']}`, `{iq2_source().name}` (sha256 `{iq2_source().sha256}`).",
        _tcr_provenance(tcr_meetings, counts),
    ]
    columns = ["| column | holds |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in schema.COLUMNS.items()]
    return {"configs": "\n".join(table), "cleaning": "\n".join(cleaning), "taxonomy": "\n".join(behaviours),
            "provenance": "\n".join(provenance), "columns": "\n".join(columns), "citation": citation()}


def _tcr_provenance(meetings: dict[str, int], counts: Counter) -> str:
    if not meetings:
        return "- SIM and NCPC: not included (no --data-dir given)."
    files = "; ".join(f"`{tcr_file(s)}` ({n} meetings)" for s, n in meetings.items())
    return (f"- SIM and NCPC: the user's copy of {pins()['tcr']['origin']} `data/`: {files}; "
            f"{counts['tcr_empty_topics']} topics without lines (never a goal), "
            f"{counts['tcr_shared_lines']} lines listed under two topics (one turn each).")
