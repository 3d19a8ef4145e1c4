"""``convbench run cocoeval``: simulate 30-turn continuations, judge them and the human ones, compare.

Simulation proceeds in rounds: each unfinished instance asks the model for its next
``turns_per_call`` turns (1, 5 or 30), given the metadata, the summary, the 30 history turns and what
it has simulated so far. A reply with no usable turn, or with a speaker outside the participants, is
recorded and shown back to the model (the reply, then the problem; ``max_repairs`` times); after that
its usable turns are kept and the problem is counted. Turns a reply writes beyond those asked for are
not used, and counted (``simulation_extra_turns``). An instance that stops making progress is left incomplete,
counted, and kept out of the comparison (with its reason in the records). Each instance's policy is
:class:`.simulation_loop.InstanceSimulation`, the same loop the inspect_ai solver drives one sample at a time.

Judging asks, for the simulated and the human continuation alike, which turns show each behaviour
(JSON) and for 1-10 consistency and collaborativeness ratings. Unusable judge answers get the same
repair round, then are counted; such instances are kept out of the comparison, never scored as zero.
The judge's token limit, unless ``judge_max_new_tokens`` is given, is 1,024, or 25,000 for a reasoning
model (an ``openai:`` o-series name such as the paper's o4-mini, whose hidden reasoning counts against
the limit; 25,000 is OpenAI's advice for such models, not the paper's).

Intervals (frequencies and ratings alike) resample instances, the paper's 300 conversations
(``bootstrap_unit="instance"``); ``"source_conversation"`` resamples whole meetings or debates instead.

A request that failed for good (a per-row error: refused by the server, no usable reply) makes its
instance an error: recorded in the record's ``error``, counted in ``errors`` (and ``excluded.errors``)
and kept out of the comparison, like an unusable answer.

Token limit: unless ``max_new_tokens`` is given, a simulation call may write ``tokens_per_turn`` (256)
tokens per turn it is asked to write (copied turns included), at least 1,024: 1,536 / 2,560 / 8,960
for 1 / 5 / 30 turns per call with the countermeasure's five copied turns (1,024 / 1,280 / 7,680
without). A reply cut at the limit (``finish_reason: "length"``, kept per reply in
``simulation_finish_reasons``) is never read as turns: it is asked again once with twice the limit, and
if that reply is cut too the instance stops, is counted (``simulation_cut_replies`` counts cut replies,
``excluded.simulation_cut`` the instances lost) and is kept out of the comparison. Judge answers cut at
the limit go through the judges' validation and repair round like any other answer.

``repetition_countermeasure`` (default on, as the paper's vanilla system prompt, its Table 17, and its
main runs): the paper's appendix C.2. Each reply first copies the last five turns of the conversation,
with ``presence_penalty`` 2.0; the copy is checked by speaker and removed. Off (``False``,
``--no-repetition-countermeasure``) is an ablation: the signature records it, the report flags it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..benchmark import BenchmarkBase, Executed, Unread
from ..counts import MAX_NEW_TOKENS, MAX_REPAIRS, MAX_RESAMPLES, check_count, check_seed
from ..errors import ConvbenchError
from ..engine.backends import Backend, GenerationParams
from ..engine.backends.reasoning import REASONING_JUDGE_MAX_NEW_TOKENS, judge_token_limit as shared_judge_token_limit
from ..engine.cache import ResponseCache
from ..engine.session import Session
from ..engine.stage import complete
from ..settings import EVERY_VALUE, non_negative, positive, setting, signed_settings
from .build_facts import build_departures, build_facts
from .behavior_frequency import mean_with_interval, score_frequencies
from .simulation import (
    COPIED_TURNS,
    COPY_PRESENCE_PENALTY,
    PROMPT_STYLES,
    judge_prompt,
    occurrences,
    parse_behaviours,
    parse_overall,
    rubric,
    scales,
    templates,
)
from .simulation_loop import CUT_RETRY_FACTOR, InstanceSimulation
from .taxonomy import Behaviour, load_taxonomy

TURNS_PER_CALL = (1, 5, 30)
TOKENS_PER_TURN = 256  # committee turns average ~87 tokens (issue #12): room for long turns
MIN_NEW_TOKENS = 1024
# what an interval resamples: the paper's 300 conversations are its instances ("instance", the default);
# "source_conversation": whole meetings or debates (the records' conversation_id), instances of one
# meeting being not independent
BOOTSTRAP_UNITS = ("instance", "source_conversation")
PAPER_JUDGE = "o4-mini"  # the paper's judge (its section 3.3), which the report checks runs against
JUDGE_MAX_NEW_TOKENS = 1024


def judge_token_limit(judge: str | Backend) -> int:
    """The judge's default token limit: :data:`REASONING_JUDGE_MAX_NEW_TOKENS` (25,000) for an OpenAI
    reasoning model (:mod:`convbench_datasets.engine.backends.reasoning`), else 1,024."""
    return shared_judge_token_limit([judge], JUDGE_MAX_NEW_TOKENS)


def simulation_token_limit(turns_per_call: int, copied: int = 0, tokens_per_turn: int = TOKENS_PER_TURN) -> int:
    """The simulation's ``max_new_tokens``: ``tokens_per_turn`` per turn written (asked for plus copied),
    at least 1,024. Example: 30 turns per call, 256 per turn: 7,680; with the 5-turn copy: 8,960."""
    return max(MIN_NEW_TOKENS, tokens_per_turn * (turns_per_call + copied))


def _countermeasure(on: bool) -> dict[str, Any] | None:
    """How the signature records the repetition countermeasure: what it copies and its penalty, or None (off)."""
    return {"copied_turns": COPIED_TURNS, "presence_penalty": COPY_PRESENCE_PENALTY} if on else None


def _countermeasure_departure(value: Any, paper: Any) -> str:
    if value is None:
        return (f"no repetition countermeasure (--no-repetition-countermeasure; paper: copy the last {COPIED_TURNS} "
                f"turns first, presence_penalty {COPY_PRESENCE_PENALTY})")
    return f"repetition countermeasure {value} (paper: {COPIED_TURNS} turns, presence_penalty {COPY_PRESENCE_PENALTY})"


@dataclass
class CoCoEvalSettings:
    """CoCoEvalBench's settings, declared once (:mod:`convbench_datasets.settings`): the keywords of
    :func:`convbench_datasets.runs.api.run_cocoeval`, the flags of ``convbench run cocoeval``, a sweep block's keys, their signature keys
    and the paper's values (its section 4 and appendix C)."""

    config: str = setting(
        "all", help="cocoeval: a source or all (default {default})", paper="all",
        source="the paper's evaluation set: 300 conversations from six sources",
        describe=lambda value, paper: f"only source {value} (--config; paper: all six sources)")
    split: str = setting("test", help="cocoeval: the split to run (default {default})", paper="test",
                         describe=lambda value, paper: f"split {value} (paper: test)")
    turns_per_call: int = setting(
        5, help="cocoeval: turns simulated per model call (default {default})", type=int, choices=TURNS_PER_CALL,
        paper=EVERY_VALUE, why="the paper reports each of 1, 5 and 30 turns per call (its section 4.2)")
    prompt: str = setting(
        "vanilla", help="cocoeval: simulation prompt (default {default})", choices=PROMPT_STYLES, paper=EVERY_VALUE,
        why="the paper reports both its vanilla and its taxonomy-guided prompt (its section 4.2)")
    taxonomy: Any = setting(
        None, help="cocoeval: your own behaviour taxonomy (YAML)", metavar="FILE", key="taxonomy_file",
        signed=lambda path: None if path is None else os.fspath(path), paper=None,
        describe=lambda value, paper: f"your taxonomy {value} (--taxonomy; paper: its 10 behaviour types, Table 1)")
    max_new_tokens: int | None = setting(
        None, help=f"cocoeval: simulation token limit (default {TOKENS_PER_TURN} per turn written per call, at least "
                   f"{MIN_NEW_TOKENS})", type=positive, paper=None,
        source="paper silent: convbench's rule, 256 tokens per turn written",
        describe=lambda value, paper: f"simulation limit {value} new tokens (--max-new-tokens; default: "
                                      f"{TOKENS_PER_TURN} per turn written, at least {MIN_NEW_TOKENS})")
    tokens_per_turn: int = setting(
        TOKENS_PER_TURN, help="cocoeval: simulation tokens allowed per turn written, when --max-new-tokens is not "
                              "given (default {default})", type=positive, paper=TOKENS_PER_TURN, source="paper silent: convbench's rule", key="token_limit_rule.tokens_per_turn",
        describe=lambda value, paper: f"{value} simulation tokens per turn (default: {paper})")
    repetition_countermeasure: bool = setting(
        True, flag="--no-repetition-countermeasure",
        help=f"cocoeval: an ablation: leave out the paper's repetition countermeasure (its appendix C.2, on by "
             f"default: each reply first copies the last {COPIED_TURNS} turns, removed before judging, with "
             f"presence_penalty {COPY_PRESENCE_PENALTY})", action="store_true",
        to_settings=lambda given: {"repetition_countermeasure": not given}, signed=_countermeasure,
        paper=_countermeasure(True), unrecorded=None, describe=_countermeasure_departure)
    judge_max_new_tokens: int | None = setting(
        None, help=f"cocoeval: judge token limit (default {JUDGE_MAX_NEW_TOKENS}, "
                   f"{REASONING_JUDGE_MAX_NEW_TOKENS:,} for a reasoning model such as openai:o4-mini)",
        type=positive, paper=None, source="paper silent: OpenAI's advice for reasoning models",
        describe=lambda value, paper: f"judge limit {value} new tokens (--judge-max-new-tokens; default: "
                                      f"{REASONING_JUDGE_MAX_NEW_TOKENS:,} for a reasoning judge, else "
                                      f"{JUDGE_MAX_NEW_TOKENS:,})")
    max_repairs: int = setting(
        1, help="cocoeval: rounds an unusable reply is shown back to the model to repair (default {default})",
        type=non_negative, paper=1,
        source="paper silent: convbench's policy",
        describe=lambda value, paper: f"{value} repair rounds for unusable replies (default: {paper})")
    bootstrap_unit: str = setting(
        "instance", help="cocoeval: what the intervals resample: instance (the paper's conversations; default "
                         "{default}) or source_conversation (whole meetings and debates)", choices=BOOTSTRAP_UNITS,
        paper="instance", unrecorded=None,
        describe=lambda value, paper: f"intervals resample {value or 'source conversations for frequencies, instances for ratings'}"
                                      " (paper: its conversations, one per instance)")
    n_bootstrap: int = setting(
        1000, flag="--bootstrap", help="cocoeval: bootstrap resamples for the intervals (default {default}; 0 for none)",
        type=non_negative, metavar="N", paper=1000, source="the paper's bootstrap uses 1,000 resamples (appendix B)",
        describe=lambda value, paper: f"{value} bootstrap resamples (paper: {paper})")
    seed: int = setting(0, help="cocoeval: the bootstrap's seed (default {default})", type=non_negative,
                        paper=EVERY_VALUE,
                        why="a seed moves interval bounds by resampling noise only")

    def __post_init__(self) -> None:
        check_count("turns_per_call", self.turns_per_call, least=1)  # counted first: 5.0 would pass `in`
        check_count("max_repairs", self.max_repairs, most=MAX_REPAIRS)
        check_count("n_bootstrap (--bootstrap)", self.n_bootstrap, most=MAX_RESAMPLES)
        check_seed("seed", self.seed)
        if self.turns_per_call not in TURNS_PER_CALL:
            raise ConvbenchError(f"turns per call must be one of {TURNS_PER_CALL}, got {self.turns_per_call}")
        if self.prompt not in PROMPT_STYLES:
            raise ConvbenchError(f"prompt must be one of {PROMPT_STYLES}, got {self.prompt!r}")
        if self.bootstrap_unit not in BOOTSTRAP_UNITS:
            raise ConvbenchError(f"bootstrap unit must be one of {BOOTSTRAP_UNITS}, got {self.bootstrap_unit!r}")
        for name, value in (("max_new_tokens", self.max_new_tokens), ("tokens_per_turn", self.tokens_per_turn),
                            ("judge_max_new_tokens", self.judge_max_new_tokens)):
            if value is not None:
                check_count(name, value, least=1, most=MAX_NEW_TOKENS)


@dataclass
class CoCoEvalPlan(CoCoEvalSettings):
    """One CoCoEval run's settings, checked, with its taxonomy read; see :func:`convbench_datasets.runs.api.run_cocoeval`."""

    dataset: Any = None
    sources: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.behaviours = load_taxonomy(self.taxonomy)
        self.copied = COPIED_TURNS if self.repetition_countermeasure else 0
        # no temperature sent (the paper states none, so its simulations ran at the API's default); the
        # signature's generation.temperature records that (None), --param temperature=X sends one
        self.params = GenerationParams(
            max_new_tokens=self.max_new_tokens or simulation_token_limit(self.turns_per_call, self.copied,
                                                                         self.tokens_per_turn),
            temperature=None, presence_penalty=COPY_PRESENCE_PENALTY if self.repetition_countermeasure else None)

    def build_facts(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """What the dataset build the run read holds (every row of its config and split, before --limit,
        --sample or --shard): the instances per source and how the summaries were made."""
        return build_facts(rows, self.config, self.split)

    def judge_params(self, session: Session) -> GenerationParams:
        """The judge's decoding: ``judge_max_new_tokens``, else :func:`judge_token_limit` of the run's judge
        (its answers are verdicts: an empty one is the row's error, never read as "no behaviour")."""
        return GenerationParams(max_new_tokens=self.judge_max_new_tokens or judge_token_limit(session.judge_specs[0]),
                                verdict=True)

    def rows(self) -> list[dict[str, Any]]:
        return read_rows(self.config, self.split, self.dataset, self.sources)

    def execute(self, session: Session, rows: list[dict[str, Any]]) -> Executed:
        # a judge server is built now and preflighted with the simulation's first uncached round, so that one
        # that cannot work fails before the simulation, not after it (an hf judge loads later)
        simulated = simulate(session.generator, rows, self.behaviours, session.store, self.turns_per_call, self.prompt,
                             self.params, self.max_repairs, session.progress, session.retry_errors,
                             preflight_also=session.early_judges(), copied=self.copied)
        if not session.same:  # one local model at a time; a judge that is the generator stays loaded
            session.free(session.generator)
        judge = session.judge(0)
        judged = judge_all(judge, rows, simulated, self.behaviours, session.store, self.judge_params(session),
                           self.max_repairs, session.progress, session.retry_errors)
        session.free(judge)
        records = [_record(r, s, j) for r, s, j in zip(rows, simulated, judged)]
        return Executed(records, {"simulation_extra_turns": sum(r["simulation_extra_turns"] for r in records)})

    def signature(self, session: Session) -> dict[str, Any]:
        groups = {b.name: b.group for b in self.behaviours}
        return {
            **signed_settings(self),
            "config": self.config, "split": self.split, "generation": self.params.to_dict(),
            "judge_generation": self.judge_params(session).to_dict(), "turns_per_call": self.turns_per_call,
            "prompt": self.prompt, "taxonomy": list(groups), "taxonomy_groups": groups, "max_repairs": self.max_repairs,
            "token_limit_rule": None if self.max_new_tokens else {"tokens_per_turn": self.tokens_per_turn,
                                                                  "at_least": MIN_NEW_TOKENS},
            "judge_token_limit_rule": None if self.judge_max_new_tokens else {
                "reasoning_model": REASONING_JUDGE_MAX_NEW_TOKENS, "other": JUDGE_MAX_NEW_TOKENS},
            "cut_retry_max_new_tokens": CUT_RETRY_FACTOR * self.params.max_new_tokens,
            "repetition_countermeasure": {"copied_turns": self.copied, "presence_penalty": COPY_PRESENCE_PENALTY}
            if self.repetition_countermeasure else None,
            "templates_sha256": _sha({**templates(), "rubric": rubric()}), "n_bootstrap": self.n_bootstrap,
            "bootstrap_unit": self.bootstrap_unit, "seed": self.seed,
        }

    def results(self, records: list[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
        groups = {b.name: b.group for b in self.behaviours}
        return score_records(records, list(groups), self.n_bootstrap, self.seed, groups, self.bootstrap_unit)


def _sha(value: Any) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def read_rows(config: str, split: str, dataset: Any, sources: Any) -> list[dict[str, Any]]:
    """The rows of a CoCoEval config and split: from the build folder ``dataset``, else the cached build (built if
    missing), read with pyarrow so that a run does not import ``datasets``; a ``dataset`` that is a name, not a
    folder (a Hub id, an installed ``convbench/cocoeval``), through ``datasets``."""
    from ..built_rows import dataset_rows
    from .schema import row_rules

    return dataset_rows("cocoeval", config, split, dataset=dataset, sources=sources, rules=row_rules())


def simulate(backend: Backend, rows: list[dict[str, Any]], behaviours: tuple[Behaviour, ...], store: ResponseCache,
             turns_per_call: int, style: str, params: GenerationParams, max_repairs: int,
             progress: bool, retry_errors: bool = False,
             preflight_also: Sequence[Backend | None] = (), copied: int = 0) -> list[dict[str, Any]]:
    """Each row's simulated turns, the problems met, whether it reached 30 turns, and its per-row error.

    The policy is :class:`~.simulation_loop.InstanceSimulation`'s, the one the inspect_ai solver drives too;
    here every unfinished instance's request goes out in one batch per round (then this round's cut
    replies in one batch at the larger limit), so that the cache serves a rerun the same prompts.
    ``preflight_also``: backends of later stages, preflighted before the first request is sent.
    ``copied``: each reply first copies this many recent turns (removed here)."""
    sims = [InstanceSimulation(row, behaviours, turns_per_call, style, max_repairs, params.max_new_tokens, copied)
            for row in rows]
    round_number = 0
    while True:
        asked = [(sim, request) for sim in sims if (request := sim.next_request()) is not None]
        if not asked:
            break
        round_number += 1
        answers = complete(backend, [request.messages for _, request in asked], params, store,
                           desc=f"simulate round {round_number}", progress=progress, retry_errors=retry_errors,
                           preflight_also=preflight_also).generations
        for (sim, _), answer in zip(asked, answers):
            sim.take(answer.text, answer.finish_reason, answer.error)
        _retry_cut(backend, [sim for sim, _ in asked], params, store, round_number, progress, retry_errors)
    return [sim.result() for sim in sims]


def _retry_cut(backend: Backend, sims: list[InstanceSimulation], params: GenerationParams, store: ResponseCache,
               round_number: int, progress: bool, retry_errors: bool) -> None:
    """Answer, in one batch, the cut retries this round's replies left (same prompt, the larger limit the
    state machine names), in the order the instances were asked."""
    retries = [(sim, request) for sim in sims if (request := sim.next_request()) is not None and request.cut_retry]
    if not retries:
        return
    larger = replace(params, max_new_tokens=retries[0][1].max_new_tokens)  # the same for every instance of a run
    again = complete(backend, [request.messages for _, request in retries], larger, store, progress=progress,
                     retry_errors=retry_errors,
                     desc=f"simulate round {round_number}: {len(retries)} cut replies, {larger.max_new_tokens} tokens"
                     ).generations
    for (sim, _), answer in zip(retries, again):
        sim.take(answer.text, answer.finish_reason, answer.error)


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
    problems: dict[int, tuple[str | None, str]] = {}  # job -> (problem, the answer it was found in)
    for attempt in range(max_repairs + 1):
        todo = [j for j, job in enumerate(jobs) if (job[0], job[1], job[2]) not in outcomes]
        if not todo:
            break
        prompts = [judge_prompt(jobs[j][2], rows[jobs[j][0]], jobs[j][3], behaviours, *problems.get(j, (None, None)))
                   for j in todo]
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
            problems[j] = (problem, answer.text)
    return [{(side, kind): outcomes.get((i, side, kind)) for side in ("human", "model") for kind in ("behaviours", "overall")}
            for i in range(len(rows))]


def _record(row: dict[str, Any], sim: dict[str, Any], judged: dict[tuple[str, str], Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"id": row["id"], "source": row["source"], "conversation_id": row["conversation_id"],
                              "simulated": sim["turns"], "simulation_replies": sim["replies"],
                              "simulation_problems": sim["problems"], "simulation_persisting_problems": sim["persisting"],
                              "simulation_finish_reasons": sim["finish_reasons"],
                              "simulation_cut_replies": sim["cut"], "simulation_cut_failure": sim["cut_failure"],
                              "simulation_extra_turns": sim["extra_turns"], "simulation_complete": sim["complete"]}
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
                  groups: dict[str, str] | None = None, bootstrap_unit: str = "instance") -> dict[str, Any]:
    """The comparison of the records' kept instances, with every exclusion and failure counted.
    ``groups``: behaviour name -> group, for the per-group totals. ``bootstrap_unit``: what every interval
    (frequencies, ratings) resamples: ``instance`` (the paper's) or ``source_conversation``."""
    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise ConvbenchError(f"bootstrap unit must be one of {BOOTSTRAP_UNITS}, got {bootstrap_unit!r}")
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
        # turns replies wrote beyond those asked for, not used (records before this count: 0)
        "simulation_extra_turns": sum(r.get("simulation_extra_turns", 0) for r in records),
    }
    if not kept:
        results["note"] = "no instance could be compared"
        return results
    clusters = [r["conversation_id"] for r in kept] if bootstrap_unit == "source_conversation" else None
    frequencies = score_frequencies([occurrences(r["model_behaviours"]) for r in kept],
                                     [occurrences(r["human_behaviours"]) for r in kept],
                                     sources=[r["source"] for r in kept], groups=clusters,
                                     behaviours=names, behaviour_groups=groups,
                                     n_bootstrap=n_bootstrap, seed=seed)
    # the metric's signature exists only when some instance was compared, so shards of one run would differ:
    # the run's signature says it all; its n counts the compared instances, which n_compared already says
    frequencies.pop("signature", None)
    frequencies.pop("n", None)
    results.update(frequencies)
    results["overall"] = {side: {scale: mean_with_interval([r[f"{side}_overall"][scale] for r in kept], n_bootstrap, seed,
                                                           clusters)
                                 for scale in scales()} for side in ("model", "human")}
    return results


class CoCoEvalBenchmark(BenchmarkBase):
    """CoCoEvalBench for the runner (:class:`convbench_datasets.benchmark.Benchmark`)."""

    name = "cocoeval"
    title = "CoCoEvalBench"
    judges = (1, 1)
    strata = ("source",)  # what --sample spreads over (the paper's per-source table)
    settings, plan_class = CoCoEvalSettings, CoCoEvalPlan
    paper_judge = PAPER_JUDGE

    def build_departures(self, build: Mapping[str, Any]) -> list[str]:
        return build_departures(build)

    def check_records(self, records: list[dict[str, Any]], signature: dict[str, Any]) -> None:
        for lineno, record in enumerate(records, start=1):
            for field in ("id", "source", "conversation_id", "simulation_complete", "excluded", "unusable_judge_answers",
                          "simulation_problems", "simulation_persisting_problems", "model_behaviours", "human_behaviours"):
                if field not in record:
                    raise ConvbenchError(f"records.jsonl line {lineno}: field {field!r} is missing")

    def rescore(self, records: list[dict[str, Any]], signature: dict[str, Any], previous: dict[str, Any],
                options: Mapping[str, Any]) -> dict[str, Any]:
        groups = signature.get("taxonomy_groups") or {b.name: b.group for b in load_taxonomy()}
        return score_records(records, signature.get("taxonomy") or list(groups),
                             signature.get("n_bootstrap", 1000), signature.get("seed", 0),
                             groups if set(groups) >= set(signature.get("taxonomy") or groups) else None,
                             signature.get("bootstrap_unit", "instance"))

    def unread(self, results: dict[str, Any]) -> list[Unread]:
        """The instances whose judge answers could not be read (after the repairs), of those without an error."""
        excluded = results.get("excluded") or {}
        return [Unread(int(excluded.get("judge_unusable", 0)), int(results.get("n", 0)) - int(results.get("errors", 0)),
                       "instances' judge answers", (results.get("signature") or {}).get("judge"))]

    def unmeasured(self, results: dict[str, Any]) -> str | None:
        """A run in which no instance was compared measured nothing: it says why each was left out."""
        if results.get("n_compared", 0) or not results.get("n"):
            return None
        reasons = ", ".join(f"{why} {n}" for why, n in (results.get("excluded") or {}).items() if n)
        return f"0 of {results['n']} instances compared ({reasons or 'none kept'}): this run measured nothing"

    def summary(self, results: dict[str, Any], rescored: bool = False) -> list[str]:
        r = results
        # the first line is the headline (a sweep's table shows it): the mismatch when there is one
        mismatch = f"mismatch {r['mismatch']:.1f}%, " if r.get("mismatch") is not None else ""
        lines = [f"cocoeval: {mismatch}{r['n_compared']} of {r['n']} instances compared; excluded {r['excluded']}; "
                 f"errors: {r.get('errors', 0)}",
                 f"  simulation replies cut at the token limit: {r['simulation_cut_replies']} "
                 f"(instances lost to a second cut: {r['excluded']['simulation_cut']}); turns written beyond "
                 f"those asked for, not used: {r.get('simulation_extra_turns', 0)}"]
        if r.get("mismatch") is not None:
            floor = r.get("mismatch_floor")
            lines.append(f"  mismatch is convbench's statistic (0 = human frequencies reproduced); noise floor "
                         + (f"{floor:.1f}%" if floor is not None else "n/a"))
            lines += [f"  {name:<24} model {r['model_mean'][name]:6.2f}   human {r['human_mean'][name]:6.2f}"
                      for name in r["model_mean"]]
        signature = r.get("signature") or {}
        smoke = [spec for spec in (signature.get("model"), signature.get("judge"))
                 if isinstance(spec, str) and spec.startswith("baseline:")]
        if smoke:  # a deterministic smoke-test answerer's numbers must not read as a model's
            one = len(smoke) == 1
            lines.append(f"  smoke test: {' and '.join(smoke)} {'is a baseline' if one else 'are baselines'} following "
                         f"fixed rules, not {'a model' if one else 'models'}; these numbers only show that simulation, "
                         f"judging and scoring work")
        return lines



BENCHMARK = CoCoEvalBenchmark()
