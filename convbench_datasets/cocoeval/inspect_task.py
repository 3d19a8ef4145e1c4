"""CoCoEvalBench as an inspect_ai task: ``inspect eval convbench/cocoeval --model M --model-role grader=J``.

The solver simulates the 30 turns after each instance's history by driving the same per-instance
state machine as ``convbench run cocoeval`` (``cocoeval/simulation_loop.py``: ``simulation_prompt``,
``vanilla`` or ``taxonomy``, 1, 5 or 30 turns per call; ``parse_continuation``; the repair, stall and
cut-retry policy), so the policy exists once; only the model calls are inspect's, one sample at a time
where the runner batches each round over all instances. The scorer asks the grader, for
the simulated and the human continuation alike, which turns show each behaviour and for the 1-10
ratings (``judge_prompt``, ``parse_behaviours``, ``parse_overall``, with the same repair round), and
keeps the run's record (``_record``). The metric is ``score_records`` over the epoch's instances: per
behaviour type the mean frequency in simulated and human continuations, the mismatch, the mean
ratings, each with its standard error ``<key>_stderr`` (the spread of the bootstrap resamples behind
the run's intervals: ``cocoeval.stderr``), how many instances were scored (``n``) and
compared (``n_compared``), and ``errors``.

A reply that is no answer (``output_error``: withheld by a content filter, or empty and cut at the
token limit) is the instance's error, as a per-row error of ``convbench run cocoeval`` (simulation or
judge); so is a sample an inspect limit stopped before its simulation finished (it is not judged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalSample
from inspect_ai.model import (
    ChatMessageAssistant,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

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
from .run import (
    BOOTSTRAP_UNITS,
    JUDGE_MAX_NEW_TOKENS,
    REASONING_JUDGE_MAX_NEW_TOKENS,
    TOKENS_PER_TURN,
    TURNS_PER_CALL,
    _record,
    judge_token_limit,
    read_rows as _rows,
    _sha,
    score_records,
    simulation_token_limit,
)
from ..counts import MAX_REPAIRS, MAX_RESAMPLES, check_count, check_seed
from .stderr import frequency_stderr
from ..integrations.inspect.log_samples import convbench_score, failure, output_text, stopped
from ..integrations.inspect._common import (
    prerequisites,
    sampled,
    task_dataset,
    NO_OUTPUT,
    chat_messages,
    finish_reason,
    grader,
    greedy,
    judge_roles,
    mean_over_epochs,
    output_error,
    require_grader,
    task_metadata,
)

BENCHMARK = "cocoeval"
STRATA = ("source",)  # what -T sample spreads over, as convbench run --sample (CoCoEvalBenchmark.strata)
SIMULATION_STORE_KEY = "convbench_simulation"
SIDES = ("model", "human")
KINDS = ("behaviours", "overall")


def cocoeval_sample(row: Mapping[str, Any]) -> Sample:
    """One CoCoEval instance as a sample; the solver builds its prompts from the metadata (the row)."""
    history = "\n".join(f"{t['speaker']}: {t['utterance']}" for t in row["history"])
    return Sample(id=row["id"], input=history, metadata=dict(row))


@task
def cocoeval(
    config: str = "all",
    split: str = "test",
    judge: str | None = None,
    turns_per_call: int = 5,
    prompt: str = "vanilla",
    taxonomy: str | None = None,
    max_tokens: int | None = None,
    tokens_per_turn: int = TOKENS_PER_TURN,
    repetition_countermeasure: bool = True,
    judge_max_tokens: int | None = None,
    max_repairs: int = 1,
    bootstrap_unit: str = "instance",
    n_bootstrap: int = 1000,
    seed: int = 0,
    dataset: str | None = None,
    sources: str | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
) -> Task:
    """CoCoEvalBench: simulate 30 turns of a meeting or debate, judge behaviours in them and in the human turns.

    Args:
        config: a source (``qmsum_product``, ``qmsum_academic``, ``qmsum_committee``, ``iq2``...) or ``all``.
        split: ``test`` (default) or ``train``.
        judge: the judge model (``provider/model``); an eval's ``--model-role grader=...`` takes precedence.
        turns_per_call: turns the model writes per call: 1, 5 or 30.
        prompt: ``vanilla`` or ``taxonomy`` (the behaviour types described in the prompt).
        taxonomy: your behaviour taxonomy (YAML; default: convbench's).
        max_tokens: the simulation's token limit (default: ``tokens_per_turn`` per turn written, at least 1,024).
        tokens_per_turn: see ``max_tokens``.
        repetition_countermeasure: the paper's appendix C.2 (copy the last 5 turns first, presence penalty 2.0);
            on by default, as the paper's main runs; False is the ablation.
        judge_max_tokens: the judge's token limit (default: 25,000 when ``judge`` names an OpenAI reasoning
            model, ``openai/o4-mini``, else 1,024, as ``convbench run``; a reasoning grader given only by
            ``--model-role`` is not known when the task is made: give this for it).
        max_repairs: times an unusable reply (simulation or judge) is shown back with its problem.
        bootstrap_unit: what the intervals resample: ``instance`` (the paper's) or ``source_conversation``.
        n_bootstrap, seed: the metric's bootstrap (intervals live in the run folder ``convbench import-inspect`` writes).
        dataset: a folder ``convbench build cocoeval`` wrote (default: convbench's cached build).
        sources: the upstream mirror (default ``$CONVBENCH_SOURCES``).
        sample, sample_seed: N instances drawn with the seed across sources (``-T sample=10``), as
            ``convbench run --sample``.
    """
    if turns_per_call not in TURNS_PER_CALL:
        raise ValueError(f"turns per call must be one of {TURNS_PER_CALL}, got {turns_per_call}")
    if prompt not in PROMPT_STYLES:
        raise ValueError(f"prompt must be one of {PROMPT_STYLES}, got {prompt!r}")
    check_count("max_repairs", max_repairs, most=MAX_REPAIRS)
    check_count("n_bootstrap", n_bootstrap, most=MAX_RESAMPLES)
    check_seed("seed", seed)
    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise ValueError(f"bootstrap unit must be one of {BOOTSTRAP_UNITS}, got {bootstrap_unit!r}")
    judge_limit = judge_max_tokens or (judge_token_limit(judge) if judge else JUDGE_MAX_NEW_TOKENS)
    behaviours = load_taxonomy(taxonomy)
    with prerequisites("cocoeval"):
        rows, drawn = sampled(_rows(config, split, task_dataset("cocoeval", dataset), sources), sample, sample_seed,
                              STRATA)
    copied = COPIED_TURNS if repetition_countermeasure else 0
    limit = max_tokens or simulation_token_limit(turns_per_call, copied, tokens_per_turn)
    groups = {b.name: b.group for b in behaviours}
    settings = {
        "config": config, "split": split, "turns_per_call": turns_per_call, "prompt": prompt,
        "taxonomy": list(groups), "taxonomy_groups": groups, "max_repairs": max_repairs,
        "generation": {"max_new_tokens": limit, "temperature": None,  # none sent, as convbench run (the paper's)
                       **({"presence_penalty": COPY_PRESENCE_PENALTY} if copied else {})},
        "judge_generation": {"max_new_tokens": judge_limit, "temperature": 0.0},
        "token_limit_rule": None if max_tokens else {"tokens_per_turn": tokens_per_turn, "at_least": 1024},
        "judge_token_limit_rule": None if judge_max_tokens else {"reasoning_model": REASONING_JUDGE_MAX_NEW_TOKENS,
                                                                 "other": JUDGE_MAX_NEW_TOKENS},
        "cut_retry_max_new_tokens": CUT_RETRY_FACTOR * limit,
        "repetition_countermeasure": {"copied_turns": copied, "presence_penalty": COPY_PRESENCE_PENALTY}
        if copied else None,
        "templates_sha256": _sha({**templates(), "rubric": rubric()}), "n_bootstrap": n_bootstrap,
        "bootstrap_unit": bootstrap_unit, "seed": seed, **drawn,
    }
    samples = [cocoeval_sample(row) for row in rows]
    return Task(
        setup=require_grader("convbench/cocoeval"),
        dataset=MemoryDataset(samples, name=f"convbench/cocoeval/{config}"),
        solver=cocoeval_simulate(turns_per_call=turns_per_call, prompt=prompt, taxonomy=taxonomy, max_tokens=limit,
                                 copied=copied, max_repairs=max_repairs),
        scorer=cocoeval_judge(taxonomy=taxonomy, max_tokens=judge_limit, max_repairs=max_repairs,
                              n_bootstrap=n_bootstrap, seed=seed, bootstrap_unit=bootstrap_unit),
        model_roles=judge_roles(judge),  # type: ignore[arg-type]
        metadata=task_metadata(BENCHMARK, rows, [str(s.id) for s in samples], **settings),
    )


@solver
def cocoeval_simulate(turns_per_call: int = 5, prompt: str = "vanilla", taxonomy: str | None = None,
                      max_tokens: int = simulation_token_limit(5, COPIED_TURNS), copied: int = COPIED_TURNS,
                      max_repairs: int = 1) -> Solver:
    """Simulate the 30 turns after the history, ``turns_per_call`` per model call, as ``convbench run cocoeval``.

    The simulation (turns, replies, problems, cut replies) is kept in the sample's store under
    ``convbench_simulation``; the model's output is the simulated continuation as ``Speaker: utterance`` lines.
    """
    behaviours = load_taxonomy(taxonomy)
    config = GenerateConfig(max_tokens=max_tokens,  # no temperature: the provider's default, as the paper's
                            presence_penalty=COPY_PRESENCE_PENALTY if copied else None)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        simulation = await _simulate(model, InstanceSimulation(state.metadata, behaviours, turns_per_call, prompt,
                                                               max_repairs, max_tokens, copied), config)
        state.store.set(SIMULATION_STORE_KEY, simulation)
        text = "\n".join(f"{t['speaker']}: {t['utterance']}" for t in simulation["turns"])
        state.output = ModelOutput.from_content(model.name, text)
        state.messages.append(ChatMessageAssistant(content=text or "(no usable turn)", model=model.name))
        return state

    return solve


async def _simulate(model: Model, simulation: InstanceSimulation, config: GenerateConfig) -> dict[str, Any]:
    """Drive one instance's state machine with this sample's model; the result has the shape
    ``cocoeval.run.simulate`` gives each row. A cut retry gets the state machine's larger limit. A failed
    call raises (inspect retries and fails the sample); a reply that is no answer (``output_error``) is
    the instance's per-row error, as the runner's backend makes it."""
    while (request := simulation.next_request()) is not None:
        reply = await model.generate(chat_messages(request.messages),
                                     config=config.merge(GenerateConfig(max_tokens=request.max_new_tokens)))
        simulation.take(reply.completion, finish_reason(reply), output_error(reply))
    return simulation.result()


def failed_simulation(error: str) -> dict[str, Any]:
    """The simulation outcome of an instance that has none (``error``), in ``cocoeval.run.simulate``'s shape."""
    return {"turns": [], "problems": [], "complete": False, "replies": [], "finish_reasons": [], "persisting": 0,
            "error": error, "cut": 0, "cut_failure": None, "extra_turns": 0}


@metric(scores="unreduced")
def behavior_frequency() -> Metric:
    """``score_records`` over each epoch's instances: ``model/<type>`` and ``human/<type>`` mean
    frequencies, ``mismatch``, ``model/<scale>`` and ``human/<scale>`` mean ratings, each with its
    bootstrap standard error ``<key>_stderr`` (with ``n_bootstrap`` above 0), ``n`` (instances scored),
    ``n_compared`` and ``errors``, averaged over epochs. Taxonomy, bootstrap and seed are the ones the
    scorer recorded."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        return mean_over_epochs(scores, _epoch_scores)

    return compute  # type: ignore[return-value]


def _epoch_scores(scores: list[SampleScore]) -> dict[str, float | None]:
    scored = [s.score.metadata or {} for s in scores]
    options = scored[0]["options"]
    results = score_records([m["record"] for m in scored], options["taxonomy"], options["n_bootstrap"],
                            options["seed"], options["taxonomy_groups"], options.get("bootstrap_unit", "instance"))
    flat: dict[str, float | None] = {"n": results["n"], "n_compared": results["n_compared"],
                                     "errors": results["errors"]}
    if results["n_compared"]:
        errors = _stderr([m["record"] for m in scored], options)
        for side in SIDES:
            for name, value in results[f"{side}_mean"].items():
                flat.update(_with_stderr(f"{side}/{name}", value, errors))
        flat.update(_with_stderr("mismatch", results["mismatch"], errors))
        for side in SIDES:
            for scale, rated in results["overall"][side].items():
                flat.update(_with_stderr(f"{side}/{scale}", rated["mean"], errors))
    return flat


def _stderr(records: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> dict[str, float | None]:
    """The standard error of each number, by key (``model/TYPE``, ``mismatch``, ``human/SCALE``...): the
    standard deviation over resamples drawn as the run's intervals are (the instances ``score_records``
    compares, in id order; its unit, count and seed); none without resamples (``n_bootstrap=0``)."""
    if not options["n_bootstrap"]:
        return {}
    kept = [r for r in records if r["excluded"] is None]
    unit = options.get("bootstrap_unit", "instance")
    errors = frequency_stderr(
        [occurrences(r["model_behaviours"]) for r in kept], [occurrences(r["human_behaviours"]) for r in kept],
        options["taxonomy"], {f"{side}/{scale}": [r[f"{side}_overall"][scale] for r in kept]
                              for side in SIDES for scale in scales()},
        options["n_bootstrap"], options["seed"],
        [r["conversation_id"] for r in kept] if unit == "source_conversation" else None)
    flat = {f"{side}/{name}": value for side in SIDES for name, value in errors[side].items()}
    return {**flat, **errors["ratings"], "mismatch": errors["mismatch"]}


def _with_stderr(key: str, value: float | None, errors: Mapping[str, float | None]) -> dict[str, float | None]:
    """The number, and its ``<key>_stderr`` when the task bootstraps."""
    return {key: value, **({f"{key}_stderr": errors.get(key)} if errors else {})}


@scorer(metrics=[behavior_frequency()])
def cocoeval_judge(taxonomy: str | None = None, max_tokens: int = JUDGE_MAX_NEW_TOKENS, max_repairs: int = 1,
                   n_bootstrap: int = 1000, seed: int = 0, bootstrap_unit: str = "instance") -> Scorer:
    """Judge behaviours and 1-10 ratings of the simulated (when complete) and the human continuation.

    The score's value is the number of flagged turns per side (None for a side not judged); its
    metadata holds the instance's record as ``convbench run cocoeval`` writes it.
    """
    behaviours = load_taxonomy(taxonomy)
    groups = {b.name: b.group for b in behaviours}
    options = {"taxonomy": list(groups), "taxonomy_groups": groups, "n_bootstrap": n_bootstrap, "seed": seed,
               "bootstrap_unit": bootstrap_unit}

    async def score(state: TaskState, target: Target) -> Score:
        row = state.metadata
        simulation = state.store.get(SIMULATION_STORE_KEY)
        if simulation is None and state.output.empty:  # an inspect limit stopped the sample before its end
            record = _record(dict(row), failed_simulation(NO_OUTPUT), {})
            return Score(value={side: None for side in SIDES}, answer="", explanation=_explanation(record),
                         metadata={"epoch": state.epoch, "record": record, "options": options})
        if simulation is None:
            raise ValueError("cocoeval_judge scores the continuation cocoeval_simulate writes; use that solver")
        judge = grader("convbench/cocoeval")
        continuations = {"human": row["reference"], "model": simulation["turns"] if simulation["complete"] else None}
        judged: dict[tuple[str, str], dict[str, Any] | None] = {}
        for side, turns in continuations.items():
            for kind in KINDS:
                judged[(side, kind)] = None if turns is None else await _judge(judge, kind, row, turns, behaviours,
                                                                               max_tokens, max_repairs)
        record = _record(dict(row), simulation, judged)
        flagged = {side: None if record[f"{side}_behaviours"] is None else len(occurrences(record[f"{side}_behaviours"]))
                   for side in SIDES}
        return Score(value=flagged, answer=state.output.completion,
                     explanation=_explanation(record),
                     metadata={"epoch": state.epoch, "record": record, "options": options})

    return score


async def _judge(judge: Model, kind: str, row: Mapping[str, Any], turns: Sequence[Mapping[str, str]],
                 behaviours: Sequence[Behaviour], max_tokens: int, max_repairs: int) -> dict[str, Any]:
    """One judgement with the runner's repair round: an unusable answer is asked again with its problem;
    a reply that is no answer (``output_error``) is the judgement's error."""
    problem: str | None = None
    rejected: str | None = None
    for attempt in range(max_repairs + 1):
        answer = await judge.generate(chat_messages(judge_prompt(kind, row, turns, behaviours, problem, rejected)),
                                      config=greedy(max_tokens))
        error = output_error(answer)
        if error is not None:  # no answer to repair: the error is the outcome (as the runner's judge_all)
            return {"raw": None, "parsed": None, "problem": None, "error": error}
        parsed, problem = (parse_behaviours(answer.completion, behaviours, len(turns)) if kind == "behaviours"
                           else parse_overall(answer.completion))
        if parsed is not None or attempt == max_repairs:
            return {"raw": answer.completion, "parsed": parsed, "problem": problem}
        rejected = answer.completion
    raise AssertionError("unreachable: the last attempt always returns")


def _explanation(record: Mapping[str, Any]) -> str:
    lines = []
    for side in SIDES:
        found = record[f"{side}_behaviours"]
        rated = record[f"{side}_overall"]
        lines.append(f"{side}: behaviours {found if found is not None else 'not judged'}, "
                     f"ratings {rated if rated is not None else 'not judged'}")
    if record["excluded"]:
        lines.append(f"excluded from the comparison: {record['excluded']}")
    return "\n".join(lines)


# the metadata key that marks this benchmark's score among a sample's scores (the importer reads it)
SCORE_KEY = "record"


def log_records(samples: list[EvalSample], settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Records as ``convbench run cocoeval`` writes them: each scored sample's own record, a stopped one failed."""
    records = []
    for sample in samples:
        score = convbench_score(sample, SCORE_KEY)
        if score is not None and not stopped(sample):
            records.append(dict((score.metadata or {})["record"]))
            continue
        records.append(_record(dict(sample.metadata), failed_simulation(failure(sample)), {}))
    return records
