"""CoCoEvalBench rebuilt from public sources: one config per source plus ``all``, splits test and train."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from .._resources import bundled_dir
from .._version import __version__
from ..errors import BuildError
from ..hub import BuiltConfig, BuiltDataset
from ..registry import BenchmarkInfo
from . import schema
from .cleaning import RULES
from .conversations import QMSUM_DOMAINS, SETTINGS, iq2_source, pins, qmsum_sources, read_iq2, read_qmsum, read_tcr
from .instances import EVAL_PER_SOURCE, WINDOW, instance, select_windows
from .references import citation
from .taxonomy import load_taxonomy

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
        needs=f"downloads {len(qmsum_sources()) + 1} files (QMSum, IQ2); sim and ncpc need --data-dir (TCR format)",
    )


def build(sources_dir: str | os.PathLike[str] | None = None, progress: bool = True,
          data_dir: str | os.PathLike[str] | None = None, summarizer: str | None = None,
          summarizer_options: dict[str, Any] | None = None) -> BuiltDataset:
    """Build every source's instances; ``summarizer`` (a model spec) makes abstractive summaries."""
    counts: Counter = Counter()
    conversations: dict[str, list[dict[str, Any]]] = {s: read_qmsum(s, sources_dir, counts, progress) for s in QMSUM_DOMAINS}
    conversations["iq2"] = read_iq2(sources_dir, counts, progress)
    if data_dir is not None:
        folder = Path(data_dir)
        if not folder.is_dir():
            raise BuildError(f"TCR data folder {folder} does not exist")
        for source in TCR_SOURCES:
            found = read_tcr(source, folder, counts)
            if found:
                conversations[source] = found
        if not any(s in conversations for s in TCR_SOURCES):
            raise BuildError(f"no TCR meetings in {folder}: expected {folder}/sim/*.json or {folder}/ncpc/*.json")
    configs = []
    for source, items in conversations.items():
        evaluation, training = select_windows(items, source)
        if len(evaluation) < EVAL_PER_SOURCE:
            raise BuildError(f"{source}: only {len(evaluation)} non-overlapping windows of {2 * WINDOW} turns, "
                             f"{EVAL_PER_SOURCE} needed")
        splits = {"test": [instance(c, s) for c, s in evaluation], "train": [instance(c, s) for c, s in training]}
        if summarizer is not None:
            earlier = {"test": [c["turns"][: s - WINDOW] for c, s in evaluation],
                       "train": [c["turns"][: s - WINDOW] for c, s in training]}
            for split, rows in splits.items():
                abstractive_summaries(rows, earlier[split], summarizer, summarizer_options or {}, progress)
        configs.append(BuiltConfig(source, splits, SETTINGS[source]))
    return BuiltDataset(
        name=NAME,
        features=schema.features(),
        configs=configs,
        card_template=bundled_dir("cards") / NAME / "README.md",
        card_fields=_card_fields(configs, counts, data_dir is not None),
        union_configs={ALL: [c.name for c in configs]},
        default_config=ALL,
        extra_files={"LICENSE.md": bundled_dir("cards") / NAME / "LICENSE.md"},  # the card's license_link
    )


def abstractive_summaries(rows: list[dict[str, Any]], earlier: list[list[dict[str, Any]]], spec: str,
                          options: dict[str, Any], progress: bool) -> None:
    """Replace extractive summaries by a model's, through the runner (cached, resumable)."""
    from string import Template

    from ..runner.backends import GenerationParams, backend_from_spec
    from ..runner.cache import ResponseCache
    from ..runner.stage import complete
    from .instances import ABSTRACTIVE_MAX_TURNS
    from .simulation import templates

    todo = [(row, turns[-ABSTRACTIVE_MAX_TURNS:]) for row, turns in zip(rows, earlier) if turns]
    if not todo:
        return
    template = Template(templates()["summary"])
    prompts = [[{"role": "user", "content": template.substitute(
        setting=row["metadata"]["setting"],
        history="\n".join(f"{t['speaker']}: {t['utterance']}" for t in turns))}] for row, turns in todo]
    backend = backend_from_spec(spec, **options)
    with ResponseCache() as cache:
        # a build asks again what failed before: a dataset cannot keep a hole where a summary belongs
        answers = complete(backend, prompts, GenerationParams(max_new_tokens=300), cache, desc="summarise",
                           progress=progress, retry_errors=True)
    backend.close()
    for (row, _), answer in zip(todo, answers.generations):
        if answer.error is not None:
            raise BuildError(f"cocoeval row {row['id']}: the summarizer {backend.spec} gave no summary: {answer.error}")
    for (row, turns), answer in zip(todo, answers.generations):
        row["summary"] = answer.text.strip()
        row["summary_method"] = f"abstractive: {backend.spec}, from the last {len(turns)} turns before the history"


def _card_fields(configs: list[BuiltConfig], counts: Counter, tcr: bool) -> dict[str, str]:
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
        "- SIM and NCPC: user-supplied TCR files." if tcr else "- SIM and NCPC: not included (no --data-dir given).",
    ]
    columns = ["| column | holds |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in schema.COLUMNS.items()]
    return {"configs": "\n".join(table), "cleaning": "\n".join(cleaning), "taxonomy": "\n".join(behaviours),
            "provenance": "\n".join(provenance), "columns": "\n".join(columns), "citation": citation()}
