"""``convbench run cocoeval``: simulate 30-turn continuations, judge them and the human ones, compare.

Simulation proceeds in rounds: each unfinished instance asks the model for its next
``turns_per_call`` turns (1, 5 or 30), given the metadata, the summary, the 30 history turns and what
it has simulated so far. A reply with no usable turn, or with a speaker outside the participants, is
recorded and shown back to the model with the problem (``max_repairs`` times); after that its usable
turns are kept and the problem is counted. An instance that stops making progress is left incomplete,
counted, and kept out of the comparison (with its reason in the records).

Judging asks, for the simulated and the human continuation alike, which turns show each behaviour
(JSON) and for 1-10 consistency and collaborativeness ratings. Unusable judge answers get the same
repair round, then are counted; such instances are kept out of the comparison, never scored as zero.

A request that failed for good (a per-row error: refused by the server, no usable reply) makes its
instance an error: recorded in the record's ``error``, counted in ``errors`` (and ``excluded.errors``)
and kept out of the comparison, like an unusable answer.

Token limit: unless ``max_new_tokens`` is given, a simulation call may write ``tokens_per_turn`` (256)
tokens per turn it is asked to write (copied turns included), at least 1,024: 1,024 / 1,280 / 7,680
for 1 / 5 / 30 turns per call. A reply cut at the limit (``finish_reason: "length"``, kept per reply in
``simulation_finish_reasons``) is never read as turns: it is asked again once with twice the limit, and
if that reply is cut too the instance stops, is counted (``simulation_cut_replies`` counts cut replies,
``excluded.simulation_cut`` the instances lost) and is kept out of the comparison. Judge answers cut at
the limit go through the judges' validation and repair round like any other answer.

``repetition_countermeasure``: the paper's appendix C.2. Each reply first copies the last five turns
of the conversation, with ``presence_penalty`` 2.0; the copy is checked by speaker and removed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._version import __version__
from ..cocoeval.instances import WINDOW
from ..cocoeval.simulation import (
    COPIED_TURNS,
    COPY_PRESENCE_PENALTY,
    PROMPT_STYLES,
    judge_prompt,
    occurrences,
    parse_behaviours,
    parse_continuation,
    parse_overall,
    rubric,
    scales,
    simulation_prompt,
    templates,
)
from ..cocoeval.taxonomy import Behaviour, load_taxonomy
from ..errors import ConvbenchError
from ..scoring.behavior_frequency import mean_with_interval, score_frequencies
from .backends import Backend, GenerationParams, backend_from_spec, early_backend
from .cache import ResponseCache
from .nc_run import _open_cache, dataset_fingerprint
from .run_folder import RunResult, check_complete, row_id, run_lock, write_folder
from .shards import check_shard, select_shard, shard_signature
from .stage import complete

TURNS_PER_CALL = (1, 5, 30)
TOKENS_PER_TURN = 256  # committee turns average ~87 tokens (issue #12): room for long turns
MIN_NEW_TOKENS = 1024
CUT_RETRY_FACTOR = 2  # a reply cut at the limit is asked once more with this many times the limit


def simulation_token_limit(turns_per_call: int, copied: int = 0, tokens_per_turn: int = TOKENS_PER_TURN) -> int:
    """The simulation's ``max_new_tokens``: ``tokens_per_turn`` per turn written (asked for plus copied),
    at least 1,024. Example: 30 turns per call, 256 per turn: 7,680; with the 5-turn copy: 8,960."""
    return max(MIN_NEW_TOKENS, tokens_per_turn * (turns_per_call + copied))


def run_cocoeval(
    *,
    model: str | Backend,
    judge: str | Backend,
    out: str | os.PathLike[str],
    config: str = "all",
    split: str = "test",
    limit: int | None = None,
    turns_per_call: int = 5,
    prompt: str = "vanilla",
    taxonomy: str | os.PathLike[str] | None = None,
    max_new_tokens: int | None = None,
    tokens_per_turn: int = TOKENS_PER_TURN,
    repetition_countermeasure: bool = False,
    judge_max_new_tokens: int = 1024,
    max_repairs: int = 1,
    dataset: str | os.PathLike[str] | None = None,
    sources: str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    backend_options: dict[str, Any] | None = None,
    judge_options: dict[str, Any] | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    progress: bool = True,
    retry_errors: bool = False,
    shard: tuple[int, int] | None = None,
) -> RunResult:
    """Simulate, judge and compare; writes records.jsonl and results.json to ``out``.

    ``retry_errors``: ask again the prompts that ended in a per-row error before (default: reuse it).
    ``max_new_tokens``: the simulation's token limit (default: :func:`simulation_token_limit`).
    ``repetition_countermeasure``: copy the last five turns first, with presence_penalty 2.0 (paper, C.2).
    ``shard``: ``(i, n)``: only shard i of n (from 1) of the rows config, split and limit select (see :mod:`.shards`).
    """
    if shard is not None:
        shard = check_shard(shard)
    if turns_per_call not in TURNS_PER_CALL:
        raise ConvbenchError(f"turns per call must be one of {TURNS_PER_CALL}, got {turns_per_call}")
    if prompt not in PROMPT_STYLES:
        raise ConvbenchError(f"prompt must be one of {PROMPT_STYLES}, got {prompt!r}")
    if limit is not None and limit < 1:
        raise ConvbenchError(f"--limit must be at least 1, got {limit}")
    for name, value in (("max_new_tokens", max_new_tokens), ("tokens_per_turn", tokens_per_turn)):
        if value is not None and value < 1:
            raise ConvbenchError(f"{name} must be at least 1, got {value}")
    behaviours = load_taxonomy(taxonomy)
    with run_lock(Path(out)), _open_cache(cache) as store:
        selected = _rows(config, split, dataset, sources)[:limit]
        rows = select_shard(selected, shard)
        started = time.time()
        generator = backend_from_spec(model, **(backend_options or {}))
        # a judge server is built now and preflighted with the simulation's first uncached round, so that
        # one that cannot work fails before the simulation, not after it (an hf judge loads later)
        early_judge = early_backend(judge, **(judge_options or backend_options or {}))
        copied = COPIED_TURNS if repetition_countermeasure else 0
        params = GenerationParams(
            max_new_tokens=max_new_tokens or simulation_token_limit(turns_per_call, copied, tokens_per_turn),
            presence_penalty=COPY_PRESENCE_PENALTY if repetition_countermeasure else None)
        simulated = simulate(generator, rows, behaviours, store, turns_per_call, prompt, params, max_repairs, progress,
                             retry_errors, preflight_also=[early_judge], copied=copied)
        generator.close()
        judge_backend = early_judge or backend_from_spec(judge, **(judge_options or backend_options or {}))
        judge_params = GenerationParams(max_new_tokens=judge_max_new_tokens)
        judged = judge_all(judge_backend, rows, simulated, behaviours, store, judge_params, max_repairs, progress,
                           retry_errors)
        judge_backend.close()
        records = [_record(r, s, j) for r, s, j in zip(rows, simulated, judged)]
        groups = {b.name: b.group for b in behaviours}
        results = score_records(records, list(groups), n_bootstrap, seed, groups)
        results["signature"] = {
            "convbench_version": __version__, "benchmark": "cocoeval", "config": config, "split": split,
            "limit": limit, "rows": len(rows), "dataset_fingerprint": dataset_fingerprint(rows),
            "model": generator.spec, "model_identity": generator.identity(), "generation": params.to_dict(),
            "judge": judge_backend.spec, "judge_identity": judge_backend.identity(),
            "judge_generation": judge_params.to_dict(), "turns_per_call": turns_per_call, "prompt": prompt,
            "taxonomy": list(groups), "taxonomy_groups": groups, "max_repairs": max_repairs,
            "token_limit_rule": None if max_new_tokens else {"tokens_per_turn": tokens_per_turn, "at_least": MIN_NEW_TOKENS},
            "cut_retry_max_new_tokens": CUT_RETRY_FACTOR * params.max_new_tokens,
            "repetition_countermeasure": {"copied_turns": copied, "presence_penalty": COPY_PRESENCE_PENALTY}
            if repetition_countermeasure else None,
            "templates_sha256": _sha({**templates(), "rubric": rubric()}), "n_bootstrap": n_bootstrap, "seed": seed,
            **(shard_signature(selected, shard, dataset_fingerprint(selected)) if shard else {}),
        }
        results["stats"] = {"seconds": round(time.time() - started, 3),
                            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))}
        results["row_ids"] = [row_id(r) for r in records]
        write_folder(Path(out), records, results)
        return RunResult(Path(out), records, results, results["stats"])


def _sha(value: Any) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _rows(config: str, split: str, dataset: Any, sources: Any) -> list[dict[str, Any]]:
    if dataset is not None:
        import datasets

        return datasets.load_dataset(str(dataset), config, split=split).to_list()
    from ..api import load

    return load("cocoeval", config, split=split, sources=sources).to_list()


def simulate(backend: Backend, rows: list[dict[str, Any]], behaviours: tuple[Behaviour, ...], store: ResponseCache,
             turns_per_call: int, style: str, params: GenerationParams, max_repairs: int,
             progress: bool, retry_errors: bool = False,
             preflight_also: Sequence[Backend | None] = (), copied: int = 0) -> list[dict[str, Any]]:
    """Each row's simulated turns, the problems met, whether it reached 30 turns, and its per-row error.
    ``preflight_also``: backends of later stages, preflighted before the first request is sent.
    ``copied``: each reply first copies this many recent turns (removed here)."""
    states = [{"turns": [], "problems": [], "repairs": 0, "stalled": False, "replies": [], "finish_reasons": [],
               "persisting": 0, "error": None, "cut": 0, "cut_failure": None} for _ in rows]
    round_number = 0
    while True:
        active = [i for i, s in enumerate(states) if len(s["turns"]) < WINDOW and not s["stalled"]]
        if not active:
            break
        round_number += 1
        asks = {i: min(turns_per_call, WINDOW - len(states[i]["turns"])) for i in active}
        prompts = [simulation_prompt(rows[i], states[i]["turns"], asks[i], style, behaviours,
                                     states[i]["problems"][-1] if states[i]["repairs"] else None, copied) for i in active]
        answers = complete(backend, prompts, params, store, desc=f"simulate round {round_number}", progress=progress,
                           retry_errors=retry_errors, preflight_also=preflight_also).generations
        answers = _retry_cut(backend, prompts, answers, params, store, states, active, round_number, progress,
                             retry_errors)
        for i, answer in zip(active, answers):
            state = states[i]
            if answer is None:  # cut at the larger limit too: recorded by _retry_cut
                continue
            if answer.error is not None:  # this instance cannot go on: an error, not a stall
                state["error"], state["stalled"] = f"simulation: {answer.error}", True
                continue
            state["replies"].append(answer.text)
            state["finish_reasons"].append(answer.finish_reason)
            turns, problem = parse_continuation(answer.text, rows[i], state["turns"], asks[i], copied)
            if problem is None:
                state["turns"].extend(turns)
                state["repairs"] = 0
                continue
            state["problems"].append(problem)
            if state["repairs"] < max_repairs:
                state["repairs"] += 1
                continue
            state["repairs"] = 0
            state["persisting"] += 1
            if turns:
                state["turns"].extend(turns)
            else:
                state["stalled"] = True
    return [{"turns": s["turns"], "problems": s["problems"], "complete": len(s["turns"]) == WINDOW,
             "replies": s["replies"], "finish_reasons": s["finish_reasons"], "persisting": s["persisting"],
             "error": s["error"], "cut": s["cut"], "cut_failure": s["cut_failure"]} for s in states]


def _retry_cut(backend: Backend, prompts: list[Any], answers: list[Any], params: GenerationParams,
               store: ResponseCache, states: list[dict[str, Any]], active: list[int], round_number: int,
               progress: bool, retry_errors: bool) -> list[Any]:
    """The answers with each reply cut at the token limit replaced by the same prompt's answer at
    ``CUT_RETRY_FACTOR`` times the limit; the cut reply is recorded, and a second cut stops the
    instance (None in its place): a cut reply's last turn may stop mid-utterance, so none is read."""
    cut = [k for k, answer in enumerate(answers) if answer.error is None and answer.finish_reason == "length"]
    if not cut:
        return answers
    larger = replace(params, max_new_tokens=CUT_RETRY_FACTOR * params.max_new_tokens)
    again = complete(backend, [prompts[k] for k in cut], larger, store, progress=progress, retry_errors=retry_errors,
                     desc=f"simulate round {round_number}: {len(cut)} cut replies, {larger.max_new_tokens} tokens").generations
    answers = list(answers)
    for k, retried in zip(cut, again):
        state = states[active[k]]
        state["cut"] += 1
        state["replies"].append(answers[k].text)
        state["finish_reasons"].append(answers[k].finish_reason)
        answers[k] = retried
        if retried.error is None and retried.finish_reason == "length":
            state["cut"] += 1
            state["replies"].append(retried.text)
            state["finish_reasons"].append(retried.finish_reason)
            state["cut_failure"] = (f"simulation reply cut at the token limit ({params.max_new_tokens} tokens, "
                                    f"then {larger.max_new_tokens})")
            state["stalled"] = True
            answers[k] = None
    return answers


def judge_all(backend: Backend, rows: list[dict[str, Any]], simulated: list[dict[str, Any]],
              behaviours: tuple[Behaviour, ...], store: ResponseCache, params: GenerationParams, max_repairs: int,
              progress: bool, retry_errors: bool = False) -> list[dict[str, Any]]:
    """For each row: behaviours and overall ratings of the simulated and the human continuation."""
    jobs = []  # (row index, side, kind, continuation)
    for i, (row, sim) in enumerate(zip(rows, simulated)):
        for side, turns in (("human", row["reference"]), ("model", sim["turns"] if sim["complete"] else None)):
            if turns is not None:
                jobs += [(i, side, "behaviours", turns), (i, side, "overall", turns)]
    outcomes: dict[tuple[int, str, str], dict[str, Any]] = {}
    problems: dict[int, str | None] = {}
    for attempt in range(max_repairs + 1):
        todo = [j for j, job in enumerate(jobs) if (job[0], job[1], job[2]) not in outcomes]
        if not todo:
            break
        prompts = [judge_prompt(jobs[j][2], rows[jobs[j][0]], jobs[j][3], behaviours, problems.get(j)) for j in todo]
        answers = complete(backend, prompts, params, store, desc=f"judge (attempt {attempt + 1})", progress=progress,
                           retry_errors=retry_errors)
        for j, answer in zip(todo, answers.generations):
            i, side, kind, turns = jobs[j]
            if answer.error is not None:  # no answer to repair: the error is the outcome
                outcomes[(i, side, kind)] = {"raw": None, "parsed": None, "problem": None, "error": answer.error}
                continue
            parsed, problem = (parse_behaviours(answer.text, behaviours, len(turns)) if kind == "behaviours"
                               else parse_overall(answer.text))
            if parsed is not None or attempt == max_repairs:
                outcomes[(i, side, kind)] = {"raw": answer.text, "parsed": parsed, "problem": problem}
            problems[j] = problem
    return [{(side, kind): outcomes.get((i, side, kind)) for side in ("human", "model") for kind in ("behaviours", "overall")}
            for i in range(len(rows))]


def _record(row: dict[str, Any], sim: dict[str, Any], judged: dict[tuple[str, str], Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"id": row["id"], "source": row["source"], "conversation_id": row["conversation_id"],
                              "simulated": sim["turns"], "simulation_replies": sim["replies"],
                              "simulation_problems": sim["problems"], "simulation_persisting_problems": sim["persisting"],
                              "simulation_finish_reasons": sim["finish_reasons"],
                              "simulation_cut_replies": sim["cut"], "simulation_cut_failure": sim["cut_failure"],
                              "simulation_complete": sim["complete"]}
    reasons = [] if sim["complete"] or sim["error"] else [sim["cut_failure"] or "simulation incomplete"]
    errors = [sim["error"]] if sim["error"] else []
    unusable = []
    for side in ("model", "human"):
        for kind in ("behaviours", "overall"):
            outcome = judged.get((side, kind))
            record[f"{side}_{kind}_raw"] = outcome["raw"] if outcome else None
            record[f"{side}_{kind}"] = outcome["parsed"] if outcome else None
            if outcome and outcome.get("error"):
                errors.append(f"judge ({side} {kind}): {outcome['error']}")
            elif outcome and outcome["parsed"] is None:
                unusable.append(f"{side} {kind}")
                reasons.append(f"unusable judge answer ({side} {kind}): {outcome['problem']}")
    record["unusable_judge_answers"] = unusable
    record["error"] = "; ".join(errors) or None
    record["excluded"] = "; ".join([*(f"error ({e})" for e in errors), *reasons]) or None
    return record


def score_records(records: list[dict[str, Any]], names: list[str], n_bootstrap: int, seed: int,
                  groups: dict[str, str] | None = None) -> dict[str, Any]:
    """The comparison of the records' kept instances, with every exclusion and failure counted.
    ``groups``: behaviour name -> group, for the per-group totals."""
    kept = [r for r in records if r["excluded"] is None]
    errors = sum(r.get("error") is not None for r in records)
    cut_lost = sum(r.get("simulation_cut_failure") is not None and r.get("error") is None for r in records)
    results: dict[str, Any] = {
        "n": len(records), "n_compared": len(kept), "errors": errors,
        "excluded": {"simulation_incomplete": sum(not r["simulation_complete"] and r.get("error") is None
                                                  and r.get("simulation_cut_failure") is None for r in records),
                     "simulation_cut": cut_lost,
                     "judge_unusable": sum(bool(r["unusable_judge_answers"]) for r in records),
                     "errors": errors},
        "unusable_judge_answers": {f"{side} {kind}": sum(f"{side} {kind}" in r["unusable_judge_answers"] for r in records)
                                   for side in ("model", "human") for kind in ("behaviours", "overall")},
        "simulation_problems": sum(len(r["simulation_problems"]) for r in records),
        "simulation_persisting_problems": sum(r["simulation_persisting_problems"] for r in records),
        "simulation_cut_replies": sum(r.get("simulation_cut_replies", 0) for r in records),
    }
    if not kept:
        results["note"] = "no instance could be compared"
        return results
    results.update(score_frequencies([occurrences(r["model_behaviours"]) for r in kept],
                                     [occurrences(r["human_behaviours"]) for r in kept],
                                     sources=[r["source"] for r in kept], groups=[r["conversation_id"] for r in kept],
                                     behaviours=names, behaviour_groups=groups,
                                     n_bootstrap=n_bootstrap, seed=seed))
    results["overall"] = {side: {scale: mean_with_interval([r[f"{side}_overall"][scale] for r in kept], n_bootstrap, seed)
                                 for scale in scales()} for side in ("model", "human")}
    return results


def rescore_cocoeval(folder: Path, records: list[dict[str, Any]], previous: dict[str, Any]) -> RunResult:
    """Re-score a CoCoEval run folder from its records (``convbench score`` dispatches here)."""
    import json

    from .run_folder import write_atomic

    signature = previous.get("signature", {})
    for lineno, record in enumerate(records, start=1):
        for field in ("id", "source", "conversation_id", "simulation_complete", "excluded", "unusable_judge_answers",
                      "simulation_problems", "simulation_persisting_problems", "model_behaviours", "human_behaviours"):
            if field not in record:
                raise ConvbenchError(f"records.jsonl line {lineno}: field {field!r} is missing")
    check_complete(records, previous, folder)
    groups = signature.get("taxonomy_groups") or {b.name: b.group for b in load_taxonomy()}
    results = score_records(records, signature.get("taxonomy") or list(groups),
                            signature.get("n_bootstrap", 1000), signature.get("seed", 0),
                            groups if set(groups) >= set(signature.get("taxonomy") or groups) else None)
    results["signature"] = {**signature, "scored_by": __version__}
    results["stats"] = previous.get("stats", {})
    results["row_ids"] = [row_id(r) for r in records]
    write_atomic(folder / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return RunResult(folder, records, results, results["stats"])
