"""CoCoEvalBench's model-made build stages: the cleaner, the summarizer and the metadata model.

Each runs through :func:`.model_stage.run_stage` (cached, resumable, an unusable answer retried once,
then the rule-made value kept and counted) and returns the :class:`.model_stage.StageRecord` the card
shows. No stage shows a model a row's reference together with anything that row's prompts hold: the
summarizer and the metadata model read only turns before the reference, and the cleaner never sees a
turn before a reference start in the same prompt as one at or after it.

- **cleaner** (``--cleaner``): as the paper, for QMSum Product and Academic only. Each meeting's
  rule-cleaned turns go to the model ``CLEAN_TURNS_PER_CALL`` at a time as numbered
  ``N. Speaker: utterance`` lines; the answer must give back exactly those numbers and speakers, one line
  each, so that every cleaned text maps to its turn. Turns are never added, dropped or merged, so the
  windows are drawn first (from the same turn counts with or without the cleaner) and each meeting is cut
  at every window's reference start (``cuts``) before the ``CLEAN_TURNS_PER_CALL`` pieces are laid from
  each cut: the history, the summary's turns and the metadata model's turns are cleaned without the
  reference that follows them.
- **summarizer** (``--summarizer``): the summary of the (at most ``ABSTRACTIVE_MAX_TURNS``) turns before
  the history window.
- **metadata model** (``--metadata-model``): for every source, the setting, a role for each speaker and
  the goals, from the (at most ``METADATA_MAX_TURNS``) turns up to the end of the history window, with
  the source's own annotations as hints. Participants are written ``Name (role)``: the simulation
  strips the parenthesis to find who may speak, so the names stay exactly the speakers'.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..engine.error_rate import DEFAULT_MAX_ERROR_RATE
from .instances import ABSTRACTIVE_MAX_TURNS, CLEANING_METHOD
from .model_stage import StageRecord, run_stage
from .simulation import _json_object, _lines, speakers

if TYPE_CHECKING:
    from ..engine.backends import Backend

CLEANED_SOURCES = ("qmsum_product", "qmsum_academic")  # the paper cleans these two with a model
CLEAN_TURNS_PER_CALL = 50
CLEAN_MAX_NEW_TOKENS = 8192  # room for 50 long turns, and for a reasoning model's thinking
SUMMARY_MAX_NEW_TOKENS = 300
METADATA_MAX_TURNS = 200
METADATA_MAX_NEW_TOKENS = 2048
_FENCE = "```"


def clean_transcripts(conversations: Sequence[dict[str, Any]], model: str | Backend,
                      options: Mapping[str, Any], cache: Any = None, progress: bool = True,
                      cuts: Sequence[Collection[int]] | None = None, *, retry_errors: bool = False,
                      max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> StageRecord:
    """Replace the turns' rule-cleaned text by the model's cleaned text, in place. ``cuts``: per
    conversation, the turn indices where a piece must begin (its windows' reference starts).
    ``retry_errors``, ``max_error_rate``: as :func:`.model_stage.run_stage` (the same for every stage)."""
    pieces = [(c, k, c["turns"][k:end]) for c, at in zip(conversations, cuts or [()] * len(conversations))
              for k, end in piece_spans(len(c["turns"]), at)]
    fields = [{"setting": c["setting"], "count": len(turns),
               "turns": "\n".join(f"{n}. {t['speaker']}: {t['utterance']}" for n, t in enumerate(turns, start=1))}
              for c, _, turns in pieces]
    labels = [f"{c['source']} meeting {c['id']} turns {k + 1}-{k + len(turns)}" for c, k, turns in pieces]
    cleaned, record = run_stage("cleaner", model, options, fields, labels,
                                lambda i, text: parse_cleaned(text, [t["speaker"] for t in pieces[i][2]]),
                                what="cleaned text", max_new_tokens=CLEAN_MAX_NEW_TOKENS, cache=cache, progress=progress,
                                retry_errors=retry_errors, max_error_rate=max_error_rate)
    rewritten = kept = 0
    kept_in: dict[int, int] = {}  # per conversation, the turns whose piece the model did not clean
    for (conversation, k, turns), texts in zip(pieces, cleaned):
        if texts is None:
            kept += len(turns)
            kept_in[id(conversation)] = kept_in.get(id(conversation), 0) + len(turns)
            continue
        for j, (turn, text) in enumerate(zip(turns, texts)):
            rewritten += text != turn["utterance"]
            conversation["turns"][k + j] = {**turn, "utterance": text}
    for conversation in conversations:  # each row records it (its cleaning_method column)
        left = kept_in.get(id(conversation), 0)
        conversation["cleaning_method"] = f"{CLEANING_METHOD}, then {record.spec}" + (
            f" ({left} of {len(conversation['turns'])} turns kept rule-cleaned)" if left else "")
    total = sum(len(turns) for _, _, turns in pieces)
    record.notes = (f"{rewritten} of {total} turns of {len(conversations)} meetings ({', '.join(CLEANED_SOURCES)}) "
                    f"rewritten, {kept} kept rule-cleaned; at most {CLEAN_TURNS_PER_CALL} turns per prompt"
                    + (", pieces cut at every window's reference start" if cuts is not None else ""))
    return record


def piece_spans(length: int, cuts: Collection[int] = ()) -> list[tuple[int, int]]:
    """The cleaner's pieces of a ``length``-turn meeting as (start, end) turn indices: from 0 and from
    each cut, ``CLEAN_TURNS_PER_CALL`` turns at most, never past the next cut, so that no piece holds
    turns on both sides of a cut.

    >>> piece_spans(130, [30, 90])  # with 50 turns per piece
    [(0, 30), (30, 80), (80, 90), (90, 130)]
    """
    bounds = sorted({0, length, *(k for k in cuts if 0 < k < length)})
    return [(k, min(k + CLEAN_TURNS_PER_CALL, b)) for a, b in zip(bounds, bounds[1:])
            for k in range(a, b, CLEAN_TURNS_PER_CALL)]


def parse_cleaned(text: str, speakers_in_order: Sequence[str]) -> tuple[list[str] | None, str | None]:
    """The cleaned utterances, one per turn, or (None, problem). Each non-blank line (a wrapping code
    fence aside) must be ``N. Speaker: text`` with N counting from 1 and the turn's own speaker."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith(_FENCE)]
    if len(lines) != len(speakers_in_order):
        return None, f"expected {len(speakers_in_order)} lines, one per turn, got {len(lines)}"
    cleaned = []
    for n, (line, speaker) in enumerate(zip(lines, speakers_in_order), start=1):
        opening = f"{n}. {speaker}:"
        if not line.startswith(opening):
            return None, f"line {n} does not begin with {opening!r}: {line[:80]!r}"
        utterance = line[len(opening):].strip()
        if not utterance:
            return None, f"turn {n} is empty (keep its shortest meaningful form)"
        cleaned.append(utterance)
    return cleaned, None


def abstractive_summaries(rows: Sequence[dict[str, Any]], earlier: Sequence[Sequence[Mapping[str, Any]]],
                          model: str | Backend, options: Mapping[str, Any], progress: bool = True,
                          cache: Any = None, *, retry_errors: bool = False,
                          max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> StageRecord:
    """Replace the extractive summaries of rows with earlier turns by the model's, in place."""
    todo = [(row, list(turns[-ABSTRACTIVE_MAX_TURNS:])) for row, turns in zip(rows, earlier) if turns]
    fields = [{"setting": row["metadata"]["setting"], "history": _lines(turns)} for row, turns in todo]
    summaries, record = run_stage("summarizer", model, options, fields, [f"row {row['id']}" for row, _ in todo],
                                  lambda i, text: (text.strip(), None) if text.strip() else (None, "the answer is empty"),
                                  what="summary", max_new_tokens=SUMMARY_MAX_NEW_TOKENS, cache=cache, progress=progress,
                                  retry_errors=retry_errors, max_error_rate=max_error_rate)
    for (row, turns), summary in zip(todo, summaries):
        if summary is not None:
            row["summary"] = summary
            row["summary_method"] = f"abstractive: {record.spec}, from the last {len(turns)} turns before the history"
    made = sum(s is not None for s in summaries)
    record.notes = (f"{made} of {len(rows)} summaries written ({len(rows) - len(todo)} rows have no earlier turns), "
                    f"{len(todo) - made} kept extractive")
    return record


def model_metadata(rows: Sequence[dict[str, Any]], before: Sequence[Sequence[Mapping[str, Any]]],
                   model: str | Backend, options: Mapping[str, Any], cache: Any = None,
                   progress: bool = True, *, retry_errors: bool = False,
                   max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> StageRecord:
    """Replace each row's rule-made metadata by the model's, in place. ``before``: per row, the
    conversation's turns up to the end of its history window."""
    names = [speakers(row) for row in rows]
    read = [list(turns[-METADATA_MAX_TURNS:]) for turns in before]
    fields = [{"setting": row["metadata"]["setting"], "speakers": json.dumps(who, ensure_ascii=False),
               "participants": "; ".join(row["metadata"]["participants"]) or "(none recorded)",
               "goals": "; ".join(row["metadata"]["goals"]) or "(none recorded)",
               "count": len(turns), "history": _lines(turns)} for row, who, turns in zip(rows, names, read)]
    found, record = run_stage("metadata_model", model, options, fields, [f"row {row['id']}" for row in rows],
                              lambda i, text: parse_metadata(text, names[i]), what="metadata",
                              max_new_tokens=METADATA_MAX_NEW_TOKENS, cache=cache, progress=progress,
                              retry_errors=retry_errors, max_error_rate=max_error_rate)
    for row, metadata in zip(rows, found):
        if metadata is not None:
            row["metadata"] = metadata
            row["metadata_method"] = f"model: {record.spec}"
    made = sum(m is not None for m in found)
    record.notes = (f"{made} of {len(rows)} rows' metadata written, {len(rows) - made} kept rule-made; "
                    f"read the last {METADATA_MAX_TURNS} turns at most, up to the end of the history")
    return record


def parse_metadata(text: str, names: Sequence[str]) -> tuple[dict[str, Any] | None, str | None]:
    """``{"setting", "participants": ["Name (role)", ...], "goals"}`` from the answer's JSON object,
    or (None, problem): every one of ``names`` needs a role (under that exact name) and nobody else."""
    value, problem = _json_object(text)
    if value is None:
        return None, problem
    setting, roles, goals = value.get("setting"), value.get("participants"), value.get("goals")
    if not isinstance(setting, str) or not setting.strip():
        return None, '"setting" must be a non-empty text'
    if not isinstance(roles, dict):
        return None, '"participants" must be an object mapping each speaker to a role'
    missing = [n for n in names if n not in roles]
    if missing:
        return None, f'"participants" lacks {", ".join(missing)}'
    unknown = [n for n in roles if n not in names]
    if unknown:
        return None, f'"participants" names people who are not among the speakers: {", ".join(map(str, unknown))}'
    for name in names:
        role = roles[name]
        if not isinstance(role, str) or not role.strip() or "(" in role or ")" in role:
            return None, f"the role of {name} must be a non-empty text without parentheses, got {role!r}"
    if not isinstance(goals, list) or not goals or not all(isinstance(g, str) and g.strip() for g in goals):
        return None, '"goals" must be a non-empty list of texts'
    return {"setting": setting.strip(), "participants": [f"{n} ({roles[n].strip()})" for n in names],
            "goals": [g.strip() for g in goals]}, None
