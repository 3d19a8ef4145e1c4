"""``convbench run nico --task T --model SPEC``: prompt a model on a NICO task and score its answers.

Generation tasks (open_domain, dialog_completion, rewrite_unnatural) are scored with
``nico_generation``; identify_unnatural with ``unnatural_sentence_prf``. A leading speaker label
(``CharacterA:``) and surrounding quotes are removed from generated turns before scoring: the prompt
asks for the turn alone, and a label is not part of what anyone says.

A row whose request failed for good (a per-row error, in the record's ``error``) is counted in
``errors`` and scored as a failure: an empty turn for the generation tasks, and precision = recall =
0 for identify_unnatural (an empty answer would read as "none found", which is right for a dialogue
without unnatural sentences). Answers cut at the token limit are scored as written (``finish_reason``
in the records says so). An answer longer than the metrics' cap (``MAX_TEXT_CHARS`` characters, the
cleaned turn for the generation tasks), or for identify_unnatural one over the metric's per-answer
limits (``MAX_ANSWER_LINES`` distinct lines, ``MAX_LINE_CHARS`` characters a line), cannot be scored;
it is that row's error in the same way, so one runaway answer cannot stop every run of the same
prompts from being written. identify_unnatural answers are read knowing the dialogue (a line quoting
one of its sentences is a prediction); records keep the dialogue's turns so re-scoring reads the same.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import ConvbenchError
from ..nico.prompts import pick_shots, render_prompt, templates_sha256
from ..nico.tasks import TASKS
from ..scoring.inputs import MAX_TEXT_CHARS
from ..scoring.nico_generation import score_generation
from ..scoring.unnatural_prf import _prf, answer_limit_error, score_unnatural
from .backends import Backend, GenerationParams, backend_from_spec
from .cache import ResponseCache
from .nc_run import _open_cache, dataset_fingerprint
from .run_folder import RunResult, check_complete, row_id, run_lock, write_folder
from .shards import check_shard, select_shard, shard_signature
from .stage import complete

SHOTS = (0, 3)
_LABEL = re.compile(r"^\s*(?:character\s*[a-z]|[ab甲乙]|角色\s*[ab甲乙])\s*[:：]\s*", re.IGNORECASE)
_QUOTES = "\"'“”‘’「」"


def clean_turn(text: str) -> str:
    """A generated turn without a leading speaker label or wrapping quotes.

    Example:
        >>> clean_turn("CharacterB：“好啊，我同意！”")
        '好啊，我同意！'
    """
    return _LABEL.sub("", text.strip()).strip().strip(_QUOTES).strip()


def _rows(task: str, split: str, dataset: Any, shots: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(examples of ``split``, the train split for demonstrations when ``shots``)."""
    import datasets

    source = f"the build at {dataset}" if dataset is not None else "the bundled sample build"
    try:
        if dataset is not None:
            splits = datasets.load_dataset(str(dataset), task)
        else:
            from ..api import load as load_built

            splits = load_built("nico", task)
    except ValueError as err:
        raise ConvbenchError(f"NICO {task}: cannot load it from {source} ({err})") from None
    if split not in splits:  # a split with no examples is not published, so it is absent, not empty
        raise ConvbenchError(missing_split_message(task, split, list(splits), source))
    if shots and "train" not in splits:
        raise ConvbenchError(f"NICO {task}: {shots}-shot prompts take their demonstrations from the train split, "
                             f"which has no examples in {source}; use --shots 0")
    return splits[split].to_list(), splits["train"].to_list() if shots else []


def missing_split_message(task: str, split: str, available: list[str], source: str) -> str:
    """Names the task, the split asked for and the splits that have examples, with a ``--split`` to try.

    Example:
        >>> missing_split_message("rewrite_unnatural", "test", ["train"], "the build at hub/nico")
        "NICO rewrite_unnatural: no examples in split 'test' of the build at hub/nico (splits with examples: train); try --split train"
    """
    hint = "train" if "train" in available else available[0]
    return (f"NICO {task}: no examples in split {split!r} of {source} (splits with examples: {', '.join(available)}); "
            f"try --split {hint}")


def run_nico(
    *,
    task: str,
    model: str | Backend,
    out: str | os.PathLike[str],
    shots: int = 0,
    split: str = "test",
    limit: int | None = None,
    max_new_tokens: int = 256,
    dataset: str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    tokenizer: str = "jieba",
    bertscore: bool = False,
    bertscore_model: str = "bert-base-chinese",
    backend_options: dict[str, Any] | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    bertscore_layer: int | None = None,
    shard: tuple[int, int] | None = None,
) -> RunResult:
    """Prompt ``model`` on ``task`` (zero- or 3-shot) and score; writes records.jsonl and results.json.

    ``dataset``: a folder from ``convbench build nico --data-dir ...``; default: the bundled sample.
    ``retry_errors``: ask again the prompts that ended in a per-row error before (default: reuse it).
    ``bertscore_layer``: the BERTScore layer (default: inferred, see ``scoring.bertscore.resolve_layer``).
    ``shard``: ``(i, n)``: only shard i of n (from 1) of the rows split and limit select (see :mod:`.shards`).
    """
    if shard is not None:
        shard = check_shard(shard)
    if bertscore_layer is not None and (not bertscore or bertscore_layer < 0):
        raise ConvbenchError(f"a BERTScore layer needs bertscore and must be 0 or more, got {bertscore_layer} "
                             f"with bertscore={bertscore}")
    if task not in TASKS:
        raise ConvbenchError(f"unknown NICO task {task!r}; choose one of {', '.join(TASKS)}")
    if shots not in SHOTS:
        raise ConvbenchError(f"shots must be 0 or 3, got {shots}")
    if limit is not None and limit < 1:
        raise ConvbenchError(f"--limit must be at least 1, got {limit}")
    with run_lock(Path(out)), _open_cache(cache) as store:
        return _run(task, model, Path(out), shots, split, limit, max_new_tokens, dataset, store, tokenizer,
                    bertscore, bertscore_model, backend_options, progress, retry_errors, bertscore_layer, shard)


def _run(task: str, model: Any, out: Path, shots: int, split: str, limit: int | None, max_new_tokens: int,
         dataset: Any, store: ResponseCache, tokenizer: str, bertscore: bool, bertscore_model: str,
         backend_options: dict[str, Any] | None, progress: bool, retry_errors: bool = False,
         bertscore_layer: int | None = None, shard: tuple[int, int] | None = None) -> RunResult:
    rows, train = _rows(task, split, dataset, shots)
    if limit is not None:
        rows = rows[:limit]
    selected, rows = rows, select_shard(rows, shard)
    prompts = [[{"role": "user", "content": render_prompt(task, r, pick_shots(r["id"], train, shots) if shots else ())}]
               for r in rows]
    backend = backend_from_spec(model, **(backend_options or {}))
    params = GenerationParams(max_new_tokens=max_new_tokens)
    started = time.time()
    generated = complete(backend, prompts, params, store, desc=f"nico {task}", progress=progress,
                         retry_errors=retry_errors)
    backend.close()
    responses = [g.text for g in generated.generations]  # "" for a per-row error
    scored = responses if task == "identify_unnatural" else [clean_turn(t) for t in responses]
    errors = [g.error if g.error is not None else too_long_error(text, task) for g, text in zip(generated.generations, scored)]
    failed = [e is not None for e in errors]
    if task == "identify_unnatural":
        results, per_row = score_identify(responses, [r["unnatural_sentences"] for r in rows], failed,
                                          [dialogue_turns(r) for r in rows])
        records = [_identify_record(r, text, hit, row) for r, text, hit, row in zip(rows, responses, generated.cache_hits, per_row)]
    else:
        turns = ["" if bad else turn for turn, bad in zip(scored, failed)]  # a failed row scores as an empty turn
        results = score_generation(turns, [r["reference"] for r in rows], tokenizer=tokenizer,  # type: ignore[arg-type]
                                   interaction_types=[r["interaction_type"] for r in rows],
                                   bertscore=bertscore, bertscore_model=bertscore_model,
                                   bertscore_options=None if bertscore_layer is None else {"num_layers": bertscore_layer})
        records = [{"id": r["id"], "dialogue_id": r["dialogue_id"], "interaction_type": r["interaction_type"],
                    "response": text, "turn": turn, "reference": r["reference"], "cache_hit": hit}
                   for r, text, turn, hit in zip(rows, responses, turns, generated.cache_hits)]
    for record, generation, error in zip(records, generated.generations, errors):
        record.update(finish_reason=generation.finish_reason, error=error)
    results["errors"] = sum(failed)
    results["row_ids"] = [row_id(r) for r in records]
    results["signature"] = {
        **results.get("signature", {}),
        "convbench_version": __version__, "benchmark": "nico", "task": task, "split": split, "shots": shots,
        "limit": limit, "rows": len(rows), "dataset_fingerprint": dataset_fingerprint(rows),
        "model": backend.spec, "model_identity": backend.identity(), "generation": params.to_dict(),
        "prompt_templates_sha256": templates_sha256(),
        **(shard_signature(selected, shard, dataset_fingerprint(selected)) if shard else {}),
    }
    results["stats"] = {"model_calls": generated.model_calls, "model_cache_hits": sum(generated.cache_hits),
                        "seconds": round(time.time() - started, 3),
                        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))}
    write_folder(Path(out), records, results)
    return RunResult(Path(out), records, results, results["stats"])


def too_long_error(answer: str, task: str | None = None) -> str | None:
    """The per-row error for an answer too long for the metrics to score, or None; for identify_unnatural
    also one over ``unnatural_sentence_prf``'s per-answer limits (lines, line length).

    Example:
        >>> too_long_error("好" * 20_001)
        "answer is 20,001 characters long, over the metrics' limit of 20,000: not scored (counted as a failure)"
        >>> too_long_error("好" * 2_001, "identify_unnatural")
        'answer line 1 is 2,001 characters long, over the limit of 2,000: not scored (counted as a failure)'
    """
    if len(answer) > MAX_TEXT_CHARS:
        return (f"answer is {len(answer):,} characters long, over the metrics' limit of {MAX_TEXT_CHARS:,}: "
                "not scored (counted as a failure)")
    over = answer_limit_error(answer) if task == "identify_unnatural" else None
    if over is not None:
        return f"answer {over}: not scored (counted as a failure)"
    return None


def dialogue_turns(row: dict[str, Any]) -> list[str]:
    """The texts of an identify_unnatural row's dialogue: what its answer may quote."""
    return [turn["text"] for turn in row["dialogue"]]


def score_identify(responses: list[str], golds: list[Any], failed: list[bool],
                   dialogues: list[Any] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``unnatural_sentence_prf`` with per-row scores; a failed row (a per-row error) scores P = R = 0.
    ``dialogues``: each row's dialogue turns (None where unknown): a line quoting one is a prediction."""
    # an answer over the metric's per-answer limits fails its row too (callers that did not check it)
    failed = [bad or answer_limit_error(text) is not None for text, bad in zip(responses, failed)]
    # a failed row's answer is not scored (it may be one too long to score): read as "" and then set to 0
    results = score_unnatural(["" if bad else text for text, bad in zip(responses, failed)], golds,
                              dialogues=dialogues, return_rows=True)
    rows = results.pop("rows")
    if any(failed):
        for row, bad in zip(rows, failed):
            if bad:
                row.update(precision=0.0, recall=0.0, blank=False)  # a failure, not a blank answer
        results["blank_answers"] = sum(row["blank"] for row in rows)
        containing = [row for row in rows if row["contains"]]
        for suffix, group in (("", rows), ("_containing", containing)):
            scores = _prf([row["precision"] for row in group], [row["recall"] for row in group])
            results.update(zip((f"precision{suffix}", f"recall{suffix}", f"f1{suffix}"), scores))
    return results, rows


def _identify_record(row: dict[str, Any], text: str, hit: bool, scored: dict[str, Any]) -> dict[str, Any]:
    # "predicted" is what was scored (none for a failed row, which scores as ""), not a second reading
    # of the response; the dialogue is kept so that re-scoring reads the answer the same way
    return {"id": row["id"], "dialogue_id": row["dialogue_id"], "interaction_type": row["interaction_type"],
            "response": text, "predicted": scored["predicted"], "gold": row["unnatural_sentences"],
            "dialogue": dialogue_turns(row), "precision": scored["precision"], "recall": scored["recall"],
            "cache_hit": hit}


def rescore_nico(folder: Path, records: list[dict[str, Any]], previous: dict[str, Any]) -> RunResult:
    """Re-score a NICO run folder from its records (``convbench score`` dispatches here)."""
    import json

    from .run_folder import write_atomic

    signature = previous.get("signature", {})
    if not records:
        raise ConvbenchError(f"{folder}/records.jsonl holds no records")
    for lineno, record in enumerate(records, start=1):
        needed = ("response", "gold") if signature.get("task") == "identify_unnatural" else ("turn", "reference")
        for field in needed:
            if field not in record:
                raise ConvbenchError(f"records.jsonl line {lineno}: field {field!r} is missing")
    check_complete(records, previous, folder)
    failed = [r.get("error") is not None for r in records]
    if signature.get("task") == "identify_unnatural":
        results, _ = score_identify([r["response"] for r in records], [r["gold"] for r in records], failed,
                                    [r.get("dialogue") for r in records])  # None in records written before
    else:
        results = score_generation([r["turn"] for r in records], [r["reference"] for r in records],
                                   tokenizer=signature.get("tokenizer", "jieba"),
                                   interaction_types=[r["interaction_type"] for r in records])
    results["signature"] = {**results["signature"], **signature, "scored_by": __version__}
    # BERTScore needs its model, which re-scoring never loads: the run's own figure is carried over (the turns
    # it scored are the records' turns) and said to be so, rather than silently dropped
    carried = {k: v for k, v in previous.items() if k.startswith("bertscore_")}
    if carried:
        results.update(carried)
        results.setdefault("notes", []).append("bertscore_* carried over from the run (re-scoring loads no model)")
    results["stats"] = previous.get("stats", {})
    results["errors"] = sum(failed)
    results["row_ids"] = [row_id(r) for r in records]
    write_atomic(folder / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return RunResult(folder, records, results, results["stats"])
