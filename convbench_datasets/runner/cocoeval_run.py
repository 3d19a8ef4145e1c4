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
and kept out of the comparison, like an unusable answer. A simulation reply cut at the token limit
(``finish_reason: "length"``) keeps its complete turns and drops its last one, which may stop
mid-utterance (counted in ``simulation_cut_replies``); the next round asks for the rest. Judge
answers cut at the limit go through the judges' validation and repair round like any other answer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._version import __version__
from ..cocoeval.instances import WINDOW
from ..cocoeval.simulation import (
    PROMPT_STYLES,
    judge_prompt,
    occurrences,
    parse_behaviours,
    parse_overall,
    parse_turns,
    simulation_prompt,
    speakers,
    templates,
)
from ..cocoeval.taxonomy import Behaviour, load_taxonomy
from ..errors import ConvbenchError
from ..scoring.behavior_frequency import mean_with_interval, score_frequencies
from .backends import Backend, GenerationParams, backend_from_spec, early_backend
from .cache import ResponseCache
from .nc_run import _open_cache, dataset_fingerprint
from .run_folder import RunResult, check_complete, row_id, run_lock, write_folder
from .stage import complete

TURNS_PER_CALL = (1, 5, 30)
SCALES = ("consistency", "collaborativeness")


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
    max_new_tokens: int = 1024,
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
) -> RunResult:
    """Simulate, judge and compare; writes records.jsonl and results.json to ``out``.

    ``retry_errors``: ask again the prompts that ended in a per-row error before (default: reuse it).
    """
    if turns_per_call not in TURNS_PER_CALL:
        raise ConvbenchError(f"turns per call must be one of {TURNS_PER_CALL}, got {turns_per_call}")
    if prompt not in PROMPT_STYLES:
        raise ConvbenchError(f"prompt must be one of {PROMPT_STYLES}, got {prompt!r}")
    if limit is not None and limit < 1:
        raise ConvbenchError(f"--limit must be at least 1, got {limit}")
    behaviours = load_taxonomy(taxonomy)
    with run_lock(Path(out)), _open_cache(cache) as store:
        rows = _rows(config, split, dataset, sources)[:limit]
        started = time.time()
        generator = backend_from_spec(model, **(backend_options or {}))
        # a judge server is built now and preflighted with the simulation's first uncached round, so that
        # one that cannot work fails before the simulation, not after it (an hf judge loads later)
        early_judge = early_backend(judge, **(judge_options or backend_options or {}))
        params = GenerationParams(max_new_tokens=max_new_tokens)
        simulated = simulate(generator, rows, behaviours, store, turns_per_call, prompt, params, max_repairs, progress,
                             retry_errors, preflight_also=[early_judge])
        generator.close()
        judge_backend = early_judge or backend_from_spec(judge, **(judge_options or backend_options or {}))
        judge_params = GenerationParams(max_new_tokens=judge_max_new_tokens)
        judged = judge_all(judge_backend, rows, simulated, behaviours, store, judge_params, max_repairs, progress,
                           retry_errors)
        judge_backend.close()
        records = [_record(r, s, j) for r, s, j in zip(rows, simulated, judged)]
        results = score_records(records, [b.name for b in behaviours], n_bootstrap, seed)
        results["signature"] = {
            "convbench_version": __version__, "benchmark": "cocoeval", "config": config, "split": split,
            "limit": limit, "rows": len(rows), "dataset_fingerprint": dataset_fingerprint(rows),
            "model": generator.spec, "model_identity": generator.identity(), "generation": params.to_dict(),
            "judge": judge_backend.spec, "judge_identity": judge_backend.identity(),
            "judge_generation": judge_params.to_dict(), "turns_per_call": turns_per_call, "prompt": prompt,
            "taxonomy": [b.name for b in behaviours], "max_repairs": max_repairs,
            "templates_sha256": _sha(templates()), "n_bootstrap": n_bootstrap, "seed": seed,
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
             preflight_also: Sequence[Backend | None] = ()) -> list[dict[str, Any]]:
    """Each row's simulated turns, the problems met, whether it reached 30 turns, and its per-row error.
    ``preflight_also``: backends of later stages, preflighted before the first request is sent."""
    states = [{"turns": [], "problems": [], "repairs": 0, "stalled": False, "replies": [], "persisting": 0, "error": None,
               "cut": 0} for _ in rows]
    round_number = 0
    while True:
        active = [i for i, s in enumerate(states) if len(s["turns"]) < WINDOW and not s["stalled"]]
        if not active:
            break
        round_number += 1
        asks = {i: min(turns_per_call, WINDOW - len(states[i]["turns"])) for i in active}
        prompts = [simulation_prompt(rows[i], states[i]["turns"], asks[i], style, behaviours,
                                     states[i]["problems"][-1] if states[i]["repairs"] else None) for i in active]
        answers = complete(backend, prompts, params, store, desc=f"simulate round {round_number}", progress=progress,
                           retry_errors=retry_errors, preflight_also=preflight_also)
        for i, answer in zip(active, answers.generations):
            state = states[i]
            if answer.error is not None:  # this instance cannot go on: an error, not a stall
                state["error"], state["stalled"] = f"simulation: {answer.error}", True
                continue
            state["replies"].append(answer.text)
            turns, problem = parse_turns(answer.text, speakers(rows[i]), asks[i])
            if answer.finish_reason == "length" and turns:
                turns, problem = _drop_cut_turn(answer.text, speakers(rows[i]), asks[i], turns, problem)
                state["cut"] += 1
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
             "replies": s["replies"], "persisting": s["persisting"], "error": s["error"], "cut": s["cut"]} for s in states]


def _drop_cut_turn(text: str, allowed: list[str], wanted: int, turns: list[dict[str, str]],
                   problem: str | None) -> tuple[list[dict[str, str]], str | None]:
    """The turns of a reply cut at the token limit without its last one, which may stop mid-utterance
    (kept when the reply went on past the turns asked for: then the cut came later)."""
    if len(parse_turns(text, allowed, wanted + 1)[0]) > wanted:
        return turns, problem
    kept = turns[:-1]
    if not kept and problem is None:
        problem = "reply cut at the token limit before its first turn ended"
    return kept, problem


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
                              "simulation_cut_replies": sim["cut"],
                              "simulation_complete": sim["complete"]}
    reasons = [] if sim["complete"] or sim["error"] else ["simulation incomplete"]
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


def score_records(records: list[dict[str, Any]], names: list[str], n_bootstrap: int, seed: int) -> dict[str, Any]:
    kept = [r for r in records if r["excluded"] is None]
    errors = sum(r.get("error") is not None for r in records)
    results: dict[str, Any] = {
        "n": len(records), "n_compared": len(kept), "errors": errors,
        "excluded": {"simulation_incomplete": sum(not r["simulation_complete"] and r.get("error") is None for r in records),
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
                                     behaviours=names,
                                     n_bootstrap=n_bootstrap, seed=seed))
    results["overall"] = {side: {scale: mean_with_interval([r[f"{side}_overall"][scale] for r in kept], n_bootstrap, seed)
                                 for scale in SCALES} for side in ("model", "human")}
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
    results = score_records(records, signature.get("taxonomy") or [b.name for b in load_taxonomy()],
                            signature.get("n_bootstrap", 1000), signature.get("seed", 0))
    results["signature"] = {**signature, "scored_by": __version__}
    results["stats"] = previous.get("stats", {})
    results["row_ids"] = [row_id(r) for r in records]
    write_atomic(folder / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return RunResult(folder, records, results, results["stats"])
