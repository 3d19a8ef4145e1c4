"""``convbench run nc``: generate the next turn for each NC-Bench row, judge it, score it.

A run folder holds ``records.jsonl`` (one line per row) and ``results.json`` (the metric's tables and
the signature that says exactly what produced them). :func:`score_run` re-scores a folder from its
records without calling any model.

A row whose generation or judgement failed for good (a per-row error: the server refused the prompt,
or gave no usable answer) keeps its place: its record carries ``error``, it fails, and it is counted
in ``errors``. A row whose generation failed is not sent to the judge. Answers cut at the token limit
are kept (``finish_reason`` says so): the judge labels the turn as it was written, and a judge
answer cut at 128 tokens still names its first labels.

Two or more judges (``judge=[A, B]``, ``--judge A --judge B``) judge every row each, as the paper
validates its judge (its Table 7). The first judge is the primary one: the record's top-level judge
fields, ``accuracy`` and every table come from it, exactly as with one judge. Each record gains
``judges``: one entry per further judge (``judge``: its spec; ``judge_output``, ``labels``,
``out_of_set``, ``unrecognised``, ``unparsed``, ``passed``, ``judge_cache_hit``,
``judge_finish_reason``, ``error``), and the results gain ``per_judge`` ({name: accuracy, per set, per
set and pattern, unparsed, errors}, the primary first) and ``judge_agreement`` ({"A vs. B": Cohen's
kappa and percent agreement at label level (first label) and pass/fail level, with bootstrap 95%
intervals}, over the rows that no judge and no generation failed on). A judge's name is its spec
(``#2``, ``#3``... added when two judges share one). With one judge nothing of this is written.

Example (no model needed: a baseline generator and a baseline "judge" that answers empty turns):
    >>> import tempfile
    >>> run = run_nc(model="baseline:repeat", judge="baseline:silence", out=tempfile.mkdtemp(),
    ...              config="basic", limit=3, progress=False)             # doctest: +SKIP
    >>> run.results["n"], run.results["unparsed"]                        # doctest: +SKIP
    (3, 3)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import ConvbenchError
from ..nc.judge_output import ParsedJudgement
from ..nc.judge_prompt import JudgeTemplate, TemplateChoice, judge_messages, resolve_template, template_name
from ..nc.patterns import pattern_table
from ..nc.released_prompt import ReleasedPrompt
from ..scoring.ncbench_action import judge_row, score_actions
from .backends import Backend, Generation, GenerationParams, backend_from_spec, early_backend
from .cache import ResponseCache
from .run_folder import RunResult, check_complete, read_folder, row_id, run_lock, write_atomic, write_folder
from .shards import check_shard, select_shard, shard_signature
from .stage import Follow, StageResult, complete, pipeline, pipelines

CONFIGS = ("basic", "rag", "complex_request", "all")
# --rules picks the acceptable labels and how judge text is read: the paper's with convbench's lenient
# matching, or the released aggregator's, exactly as it reads text.
PARSING_OF_RULES = {"paper": "convbench", "released_script": "released"}
JUDGE_MAX_NEW_TOKENS = 128  # the released pipeline's judge limit: labels are short


NCRun = RunResult  # the NC-Bench run result (kept as a name for readers of older notebooks)


def run_nc(
    *,
    model: str | Backend,
    judge: str | Backend | Sequence[str | Backend],
    out: str | os.PathLike[str],
    config: str = "all",
    limit: int | None = None,
    max_new_tokens: int = 1024,
    judge_max_new_tokens: int = JUDGE_MAX_NEW_TOKENS,
    first_line_only: bool = True,
    template: TemplateChoice = "released",
    fill_request_details: bool = False,
    rules: str = "paper",
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    dataset: str | os.PathLike[str] | None = None,
    sources: str | os.PathLike[str] | None = None,
    backend_options: dict[str, Any] | None = None,
    judge_options: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    shard: tuple[int, int] | None = None,
    pipelined: bool = True,
) -> NCRun:
    """Generate, judge and score NC-Bench rows; write ``records.jsonl`` and ``results.json`` to ``out``.

    Args:
        model, judge: spec strings (``hf:...``, ``openai:...``, ``baseline:...``) or Backend objects;
            ``judge`` may be a list of them: every row is judged by each, the first is the primary judge
            (see the module docstring for what the records and results gain).
        config: ``basic``, ``rag``, ``complex_request`` or ``all``.
        limit: score only the first N rows of the config (for smoke tests).
        max_new_tokens: the generator's limit (the paper used greedy decoding, 1024 tokens).
        first_line_only: judge only the first line of each response (the released pipeline's choice;
            the released template requires it).
        template: ``released`` (default: the released pipeline's judge prompt, read from the pinned
            upstream file, so that results stand next to the paper's), ``convbench`` (convbench's own
            wording), a YAML template file, or a template object.
        fill_request_details: with the released template, put the row's request details where the
            released pipeline leaves them empty (recorded in the signature).
        rules: ``paper`` (the paper's acceptable labels, convbench's lenient label matching) or
            ``released_script`` (the released aggregator's labels and its exact, case-sensitive reading).
        cache: the response cache file (default ``$CONVBENCH_CACHE/responses.sqlite``).
        dataset: a folder written by ``convbench build nc`` (default: build or reuse the cached one).
        backend_options, judge_options: passed to the backends (base_url, concurrency, device...);
            with several judges ``judge_options`` is one dict for all or a list, one per judge.
        retry_errors: ask again the prompts that ended in a per-row error before (default: reuse it).
        shard: ``(i, n)``: run only shard i of n (from 1) of the rows config and limit select; join the
            shard folders with ``convbench merge`` (see :mod:`.shards`).
        pipelined: judge each row as soon as its answer is stored, generation and judging side by side
            (default), when no local model must be freed for another: the judges are ``openai:`` or
            ``baseline:`` specs or Backend objects that hold no weights, and the generator is not the judge.
            An ``hf:`` judge (or generator and judge the same model) runs after generation, as with False.
            Results are the same either way.
    """
    if shard is not None:
        shard = check_shard(shard)
    if config not in CONFIGS:
        raise ConvbenchError(f"unknown NC-Bench config {config!r}; choose one of {', '.join(CONFIGS)}")
    if rules not in ("paper", "released_script"):
        raise ConvbenchError(f"rules must be 'paper' or 'released_script', got {rules!r}")
    if limit is not None and limit < 1:
        raise ConvbenchError(f"--limit must be at least 1, got {limit}")
    if max_new_tokens < 1 or judge_max_new_tokens < 1:
        raise ConvbenchError("token limits must be at least 1")
    judges = [judge] if isinstance(judge, (str, Backend)) else list(judge)
    if not judges:
        raise ConvbenchError("run_nc needs at least one judge")
    if judge_options is None or isinstance(judge_options, dict):
        options = [judge_options] * len(judges)
    else:
        options = list(judge_options)
        if len(options) != len(judges):
            raise ConvbenchError(f"got {len(options)} judge_options for {len(judges)} judges: give one for all or one per judge")
    path = Path(out)
    with run_lock(path), _open_cache(cache) as store:
        selected = _rows(config, dataset, sources, limit)
        rows = select_shard(selected, shard)
        sharded = shard_signature(selected, shard, dataset_fingerprint(selected)) if shard else {}
        template = resolve_template(template, sources=sources)
        if isinstance(template, ReleasedPrompt) and not first_line_only:
            raise ConvbenchError("the released judge prompt judges the first line only; "
                                 "use --judge-template convbench to judge whole responses")
        if fill_request_details and not isinstance(template, ReleasedPrompt):
            raise ConvbenchError("--fill-request-details applies to the released judge prompt only "
                                 "(convbench's wording always names the request details)")
        gen_params = GenerationParams(max_new_tokens=max_new_tokens)
        judge_params = GenerationParams(max_new_tokens=judge_max_new_tokens)
        started = time.time()
        same = isinstance(model, str) and model == judges[0] and not options[0]
        # judges behind a server are built now and checked before generation starts (if it has work), so an
        # unreachable judge or a missing key fails in seconds, not after hours of generation
        early = [None if same and k == 0 else early_backend(spec, **(opts or backend_options or {}))
                 for k, (spec, opts) in enumerate(zip(judges, options))]
        generator = backend_from_spec(model, **(backend_options or {}))
        row_prompts = [r["messages"] for r in rows]

        def judge_prompt(i: int, generation: Generation) -> list[dict[str, str]] | None:
            # a row without a response has nothing to judge: it keeps its error and fails
            if generation.error is not None:
                return None
            return judge_messages(rows[i], generation.text, template=template, first_line_only=first_line_only,
                                  fill_request_details=fill_request_details)

        descs = ["judge" if len(judges) == 1 else f"judge {k + 1}/{len(judges)}" for k in range(len(judges))]
        # Pipelined (the judges start on each row as its answer is stored) when no local model has to be freed
        # for another: every judge behind a server, a baseline or an in-process stub, and not the generator itself.
        # baseline judges are built now (nothing to load); hf judges wait for their stage.
        if pipelined and not same:
            early = [e if e is not None or spec_kind(spec) != "baseline" else backend_from_spec(spec)
                     for e, spec in zip(early, judges)]
        # (one object in two roles, or judging twice, is not run from two threads at once)
        if (pipelined and not same and all(e is not None and pipelines(e) for e in early) and pipelines(generator)
                and len({id(b) for b in [generator, *early]}) == 1 + len(early)):
            judge_backends = list(early)
            generated, followed = pipeline(
                generator, row_prompts, gen_params, store, desc="generate", progress=progress,
                retry_errors=retry_errors, follow=judge_prompt,
                then=[Follow(b, judge_params, d) for b, d in zip(judge_backends, descs)])
            for backend in [generator, *judge_backends]:
                backend.close()
            stages = [_spread(judged, answered, len(rows)) for answered, judged in followed]
        else:
            generated = complete(generator, row_prompts, gen_params, store, desc="generate",
                                 progress=progress, retry_errors=retry_errors, preflight_also=early)
            answered = [i for i, g in enumerate(generated.generations) if g.error is None]
            prompts = [judge_prompt(i, generated.generations[i]) for i in answered]
            # One local model at a time: the generator is freed before the judge loads, unless they are the same;
            # each judge is freed before the next one loads.
            if not same:
                generator.close()
            judge_backends, stages = [], []
            for k, (spec, opts) in enumerate(zip(judges, options)):
                judge_backend = generator if same and k == 0 else early[k] or backend_from_spec(spec, **(opts or backend_options or {}))
                judged = complete(judge_backend, prompts, judge_params, store, desc=descs[k], progress=progress,
                                  retry_errors=retry_errors)
                judge_backend.close()
                judge_backends.append(judge_backend)
                stages.append(_spread(judged, answered, len(rows)))
        return _finish(path, rows, generated, stages[0], generator, judge_backends[0], gen_params, judge_params,
                       template, config, limit, first_line_only, rules, started, fill_request_details,
                       extra=list(zip(judge_backends[1:], stages[1:])), sharded=sharded)


def spec_kind(spec: str | Backend) -> str:
    """``hf``, ``openai``, ``baseline`` for a spec string; ``object`` for a Backend object."""
    return "object" if isinstance(spec, Backend) else spec.partition(":")[0]


def _spread(judged: StageResult, answered: list[int], n: int) -> StageResult:
    """The judge stage's results placed back at their rows; rows not judged get an empty answer and no hit flag."""
    generations: list[Generation] = [Generation("")] * n
    hits: list[bool | None] = [None] * n
    for position, row in enumerate(answered):
        generations[row], hits[row] = judged.generations[position], judged.cache_hits[position]
    return StageResult(generations, hits, judged.model_calls)  # type: ignore[arg-type]


@contextmanager
def _open_cache(cache: str | os.PathLike[str] | ResponseCache | None) -> Iterator[ResponseCache]:
    if isinstance(cache, ResponseCache):
        yield cache
        return
    with ResponseCache(cache) as store:
        yield store


def _finish(path: Path, rows: list[dict[str, Any]], generated: Any, judged: Any, generator: Backend,
            judge_backend: Backend, gen_params: GenerationParams, judge_params: GenerationParams,
            template: JudgeTemplate | ReleasedPrompt, config: str, limit: int | None, first_line_only: bool,
            rules: str, started: float, fill_request_details: bool = False,
            extra: Sequence[tuple[Backend, StageResult]] = (), sharded: dict[str, Any] | None = None) -> RunResult:
    """Write the run; ``extra`` holds the further judges (with several judges) and their spread stage results;
    ``sharded``: the signature fields of a shard (:func:`.shards.shard_signature`), else None or ``{}``."""
    signature = {
        "convbench_version": __version__,
        "benchmark": "nc",
        "config": config,
        "limit": limit,
        "rows": len(rows),
        "dataset_fingerprint": dataset_fingerprint(rows),
        "model": generator.spec,
        "model_identity": generator.identity(),
        "generation": gen_params.to_dict(),
        "judge": judge_backend.spec,
        "judge_identity": judge_backend.identity(),
        "judge_generation": judge_params.to_dict(),
        "judge_template_sha256": template.sha256,
        "judge_template": template_name(template),
        "fill_request_details": fill_request_details,
        "first_line_only": first_line_only,
        "rules": rules,
        "parsing": PARSING_OF_RULES[rules],
    }
    signature.update(sharded or {})  # a shard: the whole run's rows and fingerprint, and which shard this is
    if extra:
        signature["judges"] = [judge_backend.spec, *(b.spec for b, _ in extra)]
        signature["judge_identities"] = [judge_backend.identity(), *(b.identity() for b, _ in extra)]
    records = [
        _record(row, gen, jud, gen_hit, jud_hit, rules,
                [(b.spec, stage.generations[i], stage.cache_hits[i]) for b, stage in extra])
        for i, (row, gen, jud, gen_hit, jud_hit) in enumerate(zip(rows, generated.generations, judged.generations,
                                                                  generated.cache_hits, judged.cache_hits))
    ]
    stats = {
        "model_calls": generated.model_calls,
        "judge_calls": judged.model_calls,
        "model_cache_hits": sum(generated.cache_hits),
        "judge_cache_hits": sum(bool(h) for h in judged.cache_hits),
        "seconds": round(time.time() - started, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
    }
    if extra:  # judge_calls and judge_cache_hits count every judge; the split per judge beside them
        stages = [judged, *(stage for _, stage in extra)]
        names = judge_names(signature["judges"])
        stats["judge_calls"] = sum(stage.model_calls for stage in stages)
        stats["judge_cache_hits"] = sum(bool(h) for stage in stages for h in stage.cache_hits)
        stats["judge_calls_per_judge"] = {name: stage.model_calls for name, stage in zip(names, stages)}
    results = write_run(path, records, signature, stats)
    return NCRun(path, records, results, stats)


def _rows(config: str, dataset: Any, sources: Any, limit: int | None) -> list[dict[str, Any]]:
    if dataset is not None:
        import datasets

        rows = datasets.load_dataset(str(dataset), config, split="test").to_list()
    else:
        from ..api import load

        rows = load("nc", config, split="test", sources=sources).to_list()
    if limit is not None:
        rows = rows[:limit]
    return rows


def dataset_fingerprint(rows: Sequence[dict[str, Any]]) -> str:
    canonical = json.dumps(list(rows), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _verdict(jud: Any, gen: Any, acceptable: Sequence[str], label_set: Sequence[str],
             parsing: str) -> tuple[ParsedJudgement, bool, str | None]:
    """One judge's reading of one row: parsed labels, pass, and the row's error (a failed row fails)."""
    error = f"model: {gen.error}" if gen.error is not None else f"judge: {jud.error}" if jud.error is not None else None
    if error is not None:
        return ParsedJudgement("", ()), False, error
    parsed, passed = judge_row(jud.text, acceptable, label_set, parsing)
    return parsed, passed, None


def _record(row: dict[str, Any], gen: Any, jud: Any, gen_hit: bool, jud_hit: bool | None, rules: str,
            extra: Sequence[tuple[str, Any, bool | None]] = ()) -> dict[str, Any]:
    acceptable = row["acceptable_labels"] if rules == "paper" else row["acceptable_labels_released_script"]
    parsed, passed, error = _verdict(jud, gen, acceptable, row["label_set"], PARSING_OF_RULES[rules])
    record = {
        "set": row["set"],
        "id": row["id"],
        "task": row["task"],
        "pattern": row["pattern"],
        "response": gen.text,
        "judge_output": jud.text,
        "labels": list(parsed.labels),
        "out_of_set": list(parsed.out_of_set),
        "unrecognised": list(parsed.unrecognised),
        "unparsed": parsed.unparsed and error is None,  # an error row is counted as an error, not unparsed
        "passed": passed,
        "acceptable_labels": list(acceptable),
        "label_set": list(row["label_set"]),
        "model_cache_hit": gen_hit,
        "judge_cache_hit": jud_hit,  # None: not judged (the generation failed)
        "completion_tokens": gen.completion_tokens,
        "finish_reason": gen.finish_reason,
        "judge_finish_reason": jud.finish_reason,
        "error": error,
    }
    if extra:  # further judges (several judges only): the same fields, per judge
        record["judges"] = []
        for spec, other, hit in extra:
            o_parsed, o_passed, o_error = _verdict(other, gen, acceptable, row["label_set"], PARSING_OF_RULES[rules])
            record["judges"].append({
                "judge": spec, "judge_output": other.text, "labels": list(o_parsed.labels),
                "out_of_set": list(o_parsed.out_of_set), "unrecognised": list(o_parsed.unrecognised),
                "unparsed": o_parsed.unparsed and o_error is None, "passed": o_passed, "judge_cache_hit": hit,
                "judge_finish_reason": other.finish_reason, "error": o_error,
            })
    return record


def write_run(path: Path, records: list[dict[str, Any]], signature: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    """Score ``records`` and write both files (atomically: a reader never sees half a file)."""
    results = score_records(records, signature.get("parsing", "convbench"))
    if signature.get("model") == "baseline:repeat":
        results["judge_sanity"] = repeat_sanity(records)
    results.update(score_judges(records, signature))
    results["signature"] = signature
    results["stats"] = stats
    results["row_ids"] = [row_id(r) for r in records]
    write_folder(path, records, results)
    return results


def score_records(records: Sequence[dict[str, Any]], parsing: str = "convbench") -> dict[str, Any]:
    """The metric over the records; rows with an ``error`` fail and are counted in ``errors``."""
    return score_actions(
        [r["judge_output"] for r in records],
        [r["acceptable_labels"] for r in records],
        patterns=[r["pattern"] for r in records],
        sets=[r["set"] for r in records],
        label_sets=[r["label_set"] for r in records],
        errors=[r.get("error") is not None for r in records],
        tasks=[r["task"] for r in records] if all(isinstance(r.get("task"), str) for r in records) else None,
        parsing=parsing,
    )


PER_JUDGE_KEYS = ("accuracy", "n", "passed", "unparsed", "errors", "per_set", "per_set_pattern", "per_pattern")
AGREEMENT_BOOTSTRAP = 1000  # resamples for the judge-agreement intervals (seed 0: same records, same numbers)


def judge_names(specs: Sequence[str]) -> list[str]:
    """Display names of a run's judges: the spec, with ``#2``, ``#3``... when several judges share one."""
    names = []
    for k, spec in enumerate(specs):
        count = specs[:k].count(spec)
        names.append(spec if specs.count(spec) == 1 else f"{spec} #{count + 1}")
    return names


def judge_view(record: dict[str, Any], k: int) -> dict[str, Any]:
    """Record as judge ``k`` saw it (0: the primary, whose fields are the record's own)."""
    return record if k == 0 else {**record, **record["judges"][k - 1]}


def score_judges(records: Sequence[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
    """``per_judge`` and ``judge_agreement`` of a run with several judges (``{}`` with one).

    Agreement is computed per pair with :func:`scoring.agreement.agreement` (first label; an unparsed
    answer is its own category) over the rows where neither judge nor the generation failed.
    """
    from ..scoring.agreement import agreement

    specs = signature.get("judges") or []
    if len(specs) < 2:
        return {}
    names, parsing = judge_names(specs), signature.get("parsing", "convbench")
    views = [[judge_view(r, k) for r in records] for k in range(len(names))]
    per_judge = {}
    for name, view in zip(names, views):
        scores = score_records(view, parsing)
        per_judge[name] = {key: scores[key] for key in PER_JUDGE_KEYS if key in scores}
    pairs = {}
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            rows = [i for i in range(len(records)) if views[a][i].get("error") is None and views[b][i].get("error") is None]
            entry: dict[str, Any] = {"judges": [names[a], names[b]], "n": len(rows), "excluded_errors": len(records) - len(rows)}
            if rows:
                result = agreement([views[a][i]["labels"] for i in rows], [views[b][i]["labels"] for i in rows],
                                   [views[a][i]["passed"] for i in rows], [views[b][i]["passed"] for i in rows],
                                   label_mode="first", n_bootstrap=AGREEMENT_BOOTSTRAP, seed=0).to_dict()
                stats = {"label_kappa": result["label_kappa"], "label_percent": result["label_agreement"],
                         "pass_kappa": result["pass_kappa"], "pass_percent": result["pass_agreement"]}
                entry.update({key: value["value"] for key, value in stats.items()})
                entry["intervals"] = {key: [value["low"], value["high"]] for key, value in stats.items()}
                entry.update(label_mode="first", n_bootstrap=AGREEMENT_BOOTSTRAP, seed=0)
            else:
                entry.update(label_kappa=None, label_percent=None, pass_kappa=None, pass_percent=None)
            pairs[f"{names[a]} vs. {names[b]}"] = entry
    return {"per_judge": per_judge, "judge_agreement": pairs}


REPEAT_SANITY_WARNING = 90.0  # below this share of verbatim repeats labelled Repeat, the judge is suspect


def repeat_sanity(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How often the judge labels the repeat baseline ``Repeat`` on Repeat Request rows (ideal: 100)."""
    rows = [r for r in records if r["pattern"] == "Repeat Request"]
    labelled = sum("Repeat" in r["labels"] for r in rows)
    return {"repeat_request_rows": len(rows), "labelled_repeat": 100.0 * labelled / len(rows) if rows else None}


_RECORD_FIELDS = {"set": str, "id": int, "pattern": str, "judge_output": str, "acceptable_labels": list, "label_set": list}


def score_run(path: str | os.PathLike[str], rules: str | None = None) -> RunResult:
    """Re-score a run folder from its records (no model calls); rewrites ``results.json`` only.

    The judge's raw answer (``judge_output``) is the source of truth: labels and verdicts are derived
    from it again with the current parser and rule; rows with an ``error`` stay failed. Every record
    is checked first (a problem names the line and field), then the rows against those the signature
    declares: a folder that lost rows is refused, naming them. ``rules`` (NC-Bench: ``paper`` or
    ``released_script``) re-reads the run under other rules: acceptable labels from the pattern table
    by each row's set and task, and that rule's reading of the judge text; the signature records it.
    """
    folder, records, previous = read_folder(path)
    benchmark = previous.get("signature", {}).get("benchmark", "nc")
    if benchmark == "nico":
        from .nico_run import rescore_nico

        return rescore_nico(folder, records, previous)
    if rules is not None and benchmark != "nc":
        raise ConvbenchError(f"--rules applies to NC-Bench runs; {folder} is a {benchmark} run")
    if benchmark == "cocoeval":
        from .cocoeval_run import rescore_cocoeval

        return rescore_cocoeval(folder, records, previous)
    if not records:
        raise ConvbenchError(f"{folder}/records.jsonl holds no records")
    seen: set[tuple[Any, Any]] = set()
    signature = {**previous.get("signature", {}), "scored_by": __version__}
    further = len(signature.get("judges") or [None]) - 1  # judges after the primary
    for lineno, record in enumerate(records, start=1):
        _check_record(record, lineno, seen, further)
    check_complete(records, previous, folder)
    # runs written before the parsing was recorded were scored with convbench's reading, whatever their rules
    parsing = signature.setdefault("parsing", "convbench")
    if rules is not None:
        if rules not in PARSING_OF_RULES:
            raise ConvbenchError(f"rules must be one of {', '.join(PARSING_OF_RULES)}, got {rules!r}")
        table = pattern_table()
        for lineno, record in enumerate(records, start=1):
            try:
                record["acceptable_labels"] = list(table.acceptable_labels(record["set"], record["task"], rules))
            except (KeyError, ValueError) as err:
                raise ConvbenchError(f"records.jsonl line {lineno}: cannot re-read under rules {rules!r}: {err}") from None
        parsing = signature["parsing"] = PARSING_OF_RULES[rules]
        signature["rules"] = rules
    for record in records:
        for judgement in [record, *record.get("judges", [])]:  # the primary judge, then any further ones
            failed = judgement.get("error") is not None
            parsed, passed = (ParsedJudgement("", ()), False) if failed else judge_row(
                judgement["judge_output"], record["acceptable_labels"], record["label_set"], parsing)
            judgement.update(labels=list(parsed.labels), out_of_set=list(parsed.out_of_set),
                             unrecognised=list(parsed.unrecognised), unparsed=parsed.unparsed and not failed,
                             passed=passed)
    results = score_records(records, parsing)
    results.update(signature=signature, stats=previous.get("stats", {}), row_ids=[row_id(r) for r in records])
    if signature.get("model") == "baseline:repeat":
        results["judge_sanity"] = repeat_sanity(records)
    results.update(score_judges(records, signature))
    write_atomic(folder / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return RunResult(folder, records, results, previous.get("stats", {}))


def _check_record(record: Any, lineno: int, seen: set[tuple[Any, Any]], further: int = 0) -> None:
    where = f"records.jsonl line {lineno}"
    if not isinstance(record, dict):
        raise ConvbenchError(f"{where}: expected a JSON object")
    for field, kind in _RECORD_FIELDS.items():
        if not isinstance(record.get(field), kind):
            raise ConvbenchError(f"{where}: field {field!r} must be a {kind.__name__}, got {record.get(field)!r}")
    if not isinstance(record.get("error"), (str, type(None))):
        raise ConvbenchError(f"{where}: field 'error' must be a string or null, got {record.get('error')!r}")
    judges = record.get("judges", [])
    if further or "judges" in record:  # a run with several judges: one entry per further judge
        if not isinstance(judges, list) or len(judges) != further:
            got = f"{len(judges)} entries" if isinstance(judges, list) else repr(judges)
            raise ConvbenchError(f"{where}: field 'judges' must list the {further} further judge(s) the run's "
                                 f"signature names, got {got}")
        for k, entry in enumerate(judges):
            if not isinstance(entry, dict) or not isinstance(entry.get("judge_output"), str):
                raise ConvbenchError(f"{where}: judges[{k}].judge_output must be a string, got {entry!r}")
            if not isinstance(entry.get("error"), (str, type(None))):
                raise ConvbenchError(f"{where}: judges[{k}].error must be a string or null, got {entry.get('error')!r}")
    key = (record["set"], record["id"])
    if key in seen:
        raise ConvbenchError(f"{where}: row {key} appears twice")
    seen.add(key)
