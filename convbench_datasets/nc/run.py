"""``convbench run nc``: generate the next turn for each NC-Bench row, judge it, score it.

A run folder holds ``records.jsonl`` (one line per row) and ``results.json`` (the metric's tables and
the signature that says exactly what produced them). ``convbench score`` (:func:`convbench_datasets.runs.pipeline.score_run`)
re-scores a folder from its records without calling any model.

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

The settings are :class:`NCSettings` (each field declared once: flag, signature key, the paper's value); the
typed Python entry point is :func:`convbench_datasets.runs.api.run_nc`.

Example (the paper's setup is every setting's default: nothing departs):
    >>> from convbench_datasets.settings import setting_departures
    >>> setting_departures(NCSettings, {"generation": {"max_new_tokens": 1024}, "judge_template": "released",
    ...                                 "parsing": "exact"})
    []
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..benchmark import BenchmarkBase, Executed, Unread
from ..counts import MAX_NEW_TOKENS, check_count
from ..errors import ConvbenchError
from ..engine import ahead
from ..engine.backends import Generation, GenerationParams
from ..engine.backends.reasoning import REASONING_JUDGE_MAX_NEW_TOKENS, judge_token_limit
from ..engine.run_folder import write_run as write_run_folder
from ..engine.session import Session
from ..settings import EVERY_VALUE, Option, positive, setting, signed_settings
from .judge_reading import PARSINGS, judge_row, parsing_name
from .judge_output import ParsedJudgement
from .judge_prompt import judge_messages, resolve_template, template_name
from .patterns import RULES, pattern_table
from .released_prompt import ReleasedPrompt

CONFIGS = ("basic", "rag", "complex_request", "all")
# Two separate choices, both recorded in the signature: --rules, which labels pass (the paper's appendix B.1
# and Table 3, or the released aggregator's list), and --parsing, how the judge's text is read (the released
# aggregator's exact reading, which made the paper's tables, or convbench's lenient one). The defaults are
# the paper's setup (nc/paper_results.yaml, tests/nc/test_paper_defaults.py).
JUDGE_MAX_NEW_TOKENS = 128  # the released pipeline's judge limit: labels are short (a reasoning judge gets more)




def _judge_generation(params: list[GenerationParams]) -> dict[str, Any]:
    """The signature's judge decoding: ``judge_generation``, the primary judge's (as with one judge), and
    ``judge_generation_per_judge`` only when the judges' differ (so other signatures stay as they were)."""
    if not params:
        return {}
    fields: dict[str, Any] = {"judge_generation": params[0].to_dict()}
    if any(p != params[0] for p in params):
        fields["judge_generation_per_judge"] = [p.to_dict() for p in params]
    return fields


def read_rows(config: str, dataset: str | os.PathLike[str] | None = None,
              sources: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The rows of an NC-Bench config: from the build folder ``dataset``, else the cached build (built if missing),
    read with pyarrow so that a run does not import ``datasets``; a ``dataset`` that is a name, not a folder (a Hub
    id, an installed ``convbench/nc``), through ``datasets``. A row a run cannot use (:func:`.schema.row_rules`)
    is an error naming its file, row and field."""
    if config not in CONFIGS:
        raise ConvbenchError(f"unknown NC-Bench config {config!r}; choose one of {', '.join(CONFIGS)}")
    from ..built_rows import dataset_rows
    from .schema import row_rules

    return dataset_rows("nc", config, "test", dataset=dataset, sources=sources, rules=row_rules())


def _paper_setup(name: str) -> Any:
    """The paper's value of one setting, from ``paper_results.yaml``'s ``setup`` (read when a report asks)."""
    def read() -> Any:
        from .paper_results import paper_results

        return paper_results().setup[name]
    return read


def _parsing_departure(value: Any, signature: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str | None:
    paper = _paper_setup("parsing")()
    parsing = run_parsing(signature)
    if parsing == paper:
        return None
    assumed = " (not recorded by the run: read so before convbench recorded it)" \
        if "parsing" not in signature or signature.get("parsing_assumed") else ""
    return f"{parsing} reading of judge answers{assumed} (paper: the released aggregator's {paper} reading)"


def _rules_departure(value: Any, signature: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str | None:
    """The run's ``rules`` where they change the acceptable labels of a task it scored (from the pattern table)."""
    paper_rules = _paper_setup("rules")()
    if value == paper_rules:
        return None
    table = pattern_table()
    if value not in table.rule_variants:
        return f"rules {value} (paper: {paper_rules})"
    scored = {(r.get("set"), r.get("task")) for r in records}
    changes = []
    for set_name, task in table.rule_variants[value]:
        if records and (set_name, task) not in scored:
            continue  # a task the run did not score is scored alike under both
        ours, paper = (table.acceptable_labels(set_name, task, r) for r in (value, paper_rules))
        change = [f"rejects {', '.join(x for x in paper if x not in ours)}" if set(paper) - set(ours) else "",
                  f"accepts {', '.join(x for x in ours if x not in paper)}" if set(ours) - set(paper) else ""]
        changes.append(f"{set_name} {task} {' and '.join(c for c in change if c)}")
    if not changes:
        return None
    return f"rules {value}: {'; '.join(changes)} (paper: {paper_rules}, its appendix B.1 and Table 3)"


@dataclass
class NCSettings:
    """NC-Bench's settings, declared once (:mod:`convbench_datasets.settings`): the keywords of :func:`convbench_datasets.runs.api.run_nc`,
    the flags of ``convbench run nc``, a sweep block's keys, their signature keys and the paper's values."""

    config: str = setting(
        "all", help="nc: basic, rag, complex_request or all (default {default})", paper=EVERY_VALUE,
        why="each set's cells are the paper's whichever sets a run covers (the paper reports no overall over sets)")
    max_new_tokens: int = setting(
        1024, help="nc: generator token limit (default {default})", type=positive, key="generation.max_new_tokens",
        paper=_paper_setup("max_new_tokens"), source="the paper's setup: greedy decoding, 1024 new tokens",
        describe=lambda value, paper: f"{value} new tokens (paper: {paper})")
    judge_max_new_tokens: int | None = setting(
        None, help=f"nc: judge token limit (default {JUDGE_MAX_NEW_TOKENS}, the released pipeline's; "
                   f"{REASONING_JUDGE_MAX_NEW_TOKENS:,} for a reasoning judge such as openai:o4-mini)",
        type=positive, key="judge_generation.max_new_tokens", paper=JUDGE_MAX_NEW_TOKENS,
        source="the released pipeline's judge limit",
        describe=lambda value, paper: f"judge limit {value} new tokens (released pipeline: {paper})")
    first_line_only: bool = setting(
        True, flag="--all-lines", help="nc: judge the whole response, not only its first line", action="store_true",
        to_settings=lambda value: {"first_line_only": False}, paper=True,
        source="the released pipeline judges the first line",
        describe=lambda value, paper: "whole responses judged (--all-lines; paper: the first line)")
    template: Any = setting(
        "released", flag="--judge-template", key="judge_template", signed=lambda t: template_name(t),
        help="nc: the judge prompt: the released pipeline's, read from the pinned upstream file (default, comparable "
             "with the paper), convbench's own wording, or your YAML file (system, user, labels)",
        metavar="released|convbench|FILE", paper=_paper_setup("judge_template"), unrecorded=None,
        describe=lambda value, paper: f"judge prompt {value or 'not recorded'} (paper: {paper})")
    fill_request_details: bool = setting(
        False, help="nc, released template: fill <request_details>, which the released pipeline leaves empty",
        action="store_true", paper=False,
        describe=lambda value, paper: "request details filled in the judge prompt (the released pipeline leaves them "
                                      "empty)")
    rules: str = setting(
        "paper", help="nc: which labels pass: paper (the paper's appendix B.1 and Table 3) or released_script "
                      "(the released aggregator's list); default {default}", choices=RULES,
        paper=_paper_setup("rules"), departs=_rules_departure)
    parsing: str = setting(
        "exact", help="nc: how judge answers are read: exact (the released aggregator's reading, which made the "
                      "paper's tables) or lenient (case, spaces, hyphens, punctuation ignored; not the paper's); "
                      "default {default}", choices=PARSINGS, paper=_paper_setup("parsing"), departs=_parsing_departure)
    pipelined: bool = setting(
        True, flag="--sequential", help="nc: judge after all generation ends (default: each row as soon as its "
        "answer is stored, when no local model must be freed for another; the results are the same)",
        action="store_true", to_settings=lambda value: {"pipelined": False}, paper=EVERY_VALUE, recorded=False,
        why="the results are the same either way")

    def __post_init__(self) -> None:
        if self.config not in CONFIGS:
            raise ConvbenchError(f"unknown NC-Bench config {self.config!r}; choose one of {', '.join(CONFIGS)}")
        if self.rules not in RULES:
            raise ConvbenchError(f"rules must be 'paper' or 'released_script', got {self.rules!r}")
        self.parsing = _parsing(self.parsing)
        check_count("max_new_tokens", self.max_new_tokens, least=1, most=MAX_NEW_TOKENS)
        if self.judge_max_new_tokens is not None:
            check_count("judge_max_new_tokens", self.judge_max_new_tokens, least=1, most=MAX_NEW_TOKENS)


@dataclass
class NCPlan(NCSettings):
    """One NC-Bench run's settings, checked, with its judge prompt read; see :func:`convbench_datasets.runs.api.run_nc`."""

    dataset: Any = None
    sources: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.template = resolve_template(self.template, sources=self.sources)
        if isinstance(self.template, ReleasedPrompt) and not self.first_line_only:
            raise ConvbenchError("the released judge prompt judges the first line only; "
                                 "use --judge-template convbench to judge whole responses")
        if self.fill_request_details and not isinstance(self.template, ReleasedPrompt):
            raise ConvbenchError("--fill-request-details applies to the released judge prompt only "
                                 "(convbench's wording always names the request details)")
        self.gen_params = GenerationParams(max_new_tokens=self.max_new_tokens)

    def judge_params(self, session: Session) -> list[GenerationParams]:
        """Each judge's decoding: greedy, ``judge_max_new_tokens``, else 128 (the released pipeline's) or, for
        an OpenAI reasoning model, :data:`~convbench_datasets.engine.backends.reasoning.REASONING_JUDGE_MAX_NEW_TOKENS`
        (each judge its own: another judge of the run keeps 128, its cache keys and its server's limits)."""
        return [GenerationParams(max_new_tokens=self.judge_max_new_tokens or judge_token_limit([spec], JUDGE_MAX_NEW_TOKENS))
                for spec in session.judge_specs]

    def rows(self) -> list[dict[str, Any]]:
        return read_rows(self.config, self.dataset, self.sources)

    def execute(self, session: Session, rows: list[dict[str, Any]]) -> Executed:
        def judge_prompt(i: int, generation: Generation) -> list[dict[str, str]] | None:
            # a row without a response has nothing to judge: it keeps its error and fails
            if generation.error is not None:
                return None
            return judge_messages(rows[i], generation.text, template=self.template,
                                  first_line_only=self.first_line_only, fill_request_details=self.fill_request_details)

        # groups: the released script runs each set's file on its own, so batches fixed by a backend (hf with
        # --batch-order file) restart at each set
        with ahead.later(_import_scoring):
            generated, stages = session.generate_then_judge([r["messages"] for r in rows], self.gen_params,
                                                            judge_prompt, self.judge_params(session), pipelined=self.pipelined,
                                                            groups=[r["set"] for r in rows])
        specs = [session.judge(k).spec for k in range(len(stages))]
        judged, extra = stages[0], list(zip(specs[1:], stages[1:]))
        records = [
            _record(row, gen, jud, gen_hit, jud_hit, self.rules,
                    [(spec, stage.generations[i], stage.cache_hits[i]) for spec, stage in extra], parsing=self.parsing)
            for i, (row, gen, jud, gen_hit, jud_hit) in enumerate(zip(rows, generated.generations, judged.generations,
                                                                      generated.cache_hits, judged.cache_hits))
        ]
        stats: dict[str, Any] = {
            "model_calls": generated.model_calls,
            "judge_calls": sum(stage.model_calls for stage in stages),  # every judge's
            "model_cache_hits": sum(generated.cache_hits),
            "judge_cache_hits": sum(bool(h) for stage in stages for h in stage.cache_hits),
        }
        if extra:  # the split per judge beside the totals
            stats["judge_calls_per_judge"] = {name: stage.model_calls for name, stage in zip(judge_names(specs), stages)}
        return Executed(records, stats)

    def signature(self, session: Session) -> dict[str, Any]:
        return {
            **signed_settings(self),
            "config": self.config,
            "generation": self.gen_params.to_dict(),
            **_judge_generation(self.judge_params(session)),
            "judge_template_sha256": self.template.sha256,
            "judge_template": template_name(self.template),
            "fill_request_details": self.fill_request_details,
            "first_line_only": self.first_line_only,
            "rules": self.rules,
            "parsing": self.parsing,
        }

    def results(self, records: list[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
        return score_run_records(records, signature)


def score_run_records(records: list[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
    """The run's scores: the metric, the judge's sanity check on the repeat baseline, and with several
    judges each judge's scores and their agreement."""
    results = score_records(records, run_parsing(signature))
    results.pop("signature", None)  # the run's signature says it all (and stays the same for every shard of a run)
    if signature.get("model") == "baseline:repeat":
        results["judge_sanity"] = repeat_sanity(records)
    results.update(score_judges(records, signature))
    return results


def run_parsing(signature: Mapping[str, Any]) -> str:
    """How a run read its judge's answers: its signature's ``parsing`` (the older names ``released`` and
    ``convbench`` mapped to ``exact`` and ``lenient``). A signature without it is a run written before
    convbench recorded the reading, when every run was read leniently, whatever its rules."""
    recorded = signature.get("parsing")
    return "lenient" if recorded is None else parsing_name(recorded)


def _parsing(value: Any) -> str:
    try:
        return parsing_name(value)
    except ValueError as err:
        raise ConvbenchError(str(err)) from None


def write_run(path: Path, records: list[dict[str, Any]], signature: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    """Score ``records`` and write both files (atomically: a reader never sees half a file)."""
    return write_run_folder(path, records, score_run_records(records, signature), signature, stats).results


def _verdict(jud: Any, gen: Any, acceptable: Sequence[str], label_set: Sequence[str],
             parsing: str) -> tuple[ParsedJudgement, bool, str | None]:
    """One judge's reading of one row: parsed labels, pass, and the row's error (a failed row fails)."""
    error = f"model: {gen.error}" if gen.error is not None else f"judge: {jud.error}" if jud.error is not None else None
    if error is not None:
        return ParsedJudgement("", ()), False, error
    parsed, passed = judge_row(jud.text, acceptable, label_set, parsing)
    return parsed, passed, None


def _record(row: dict[str, Any], gen: Any, jud: Any, gen_hit: bool, jud_hit: bool | None, rules: str,
            extra: Sequence[tuple[str, Any, bool | None]] = (), *, parsing: str) -> dict[str, Any]:
    acceptable = row["acceptable_labels"] if rules == "paper" else row["acceptable_labels_released_script"]
    parsed, passed, error = _verdict(jud, gen, acceptable, row["label_set"], parsing)
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
            o_parsed, o_passed, o_error = _verdict(other, gen, acceptable, row["label_set"], parsing)
            record["judges"].append({
                "judge": spec, "judge_output": other.text, "labels": list(o_parsed.labels),
                "out_of_set": list(o_parsed.out_of_set), "unrecognised": list(o_parsed.unrecognised),
                "unparsed": o_parsed.unparsed and o_error is None, "passed": o_passed, "judge_cache_hit": hit,
                "judge_finish_reason": other.finish_reason, "error": o_error,
            })
    return record


def _import_scoring() -> None:
    """What a run's scores and report import and read (numpy among them): done while its first requests
    wait for the server (:mod:`..engine.ahead`), not after its last answer."""
    from . import agreement, ncbench_action  # noqa: F401
    from .paper_results import paper_results

    paper_results()


def score_records(records: Sequence[dict[str, Any]], parsing: str = PARSINGS[0]) -> dict[str, Any]:
    """The metric over the records; rows with an ``error`` fail and are counted in ``errors``."""
    from .ncbench_action import score_actions  # numpy: imported when a run scores, not when it starts

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

    Agreement is computed per pair with :func:`.agreement.agreement` (first label; an unparsed
    answer is its own category) over the rows where neither judge nor the generation failed.
    """
    from .agreement import agreement

    specs = signature.get("judges") or []
    if len(specs) < 2:
        return {}
    names, parsing = judge_names(specs), run_parsing(signature)
    views = [[judge_view(r, k) for r in records] for k in range(len(names))]
    per_judge = {}
    for name, view in zip(names, views):
        scores = score_records(view, parsing)
        per_judge[name] = {key: scores[key] for key in PER_JUDGE_KEYS if key in scores}
        if signature.get("model") == "baseline:repeat":  # each judge's own sanity check, not only the primary's
            per_judge[name]["judge_sanity"] = repeat_sanity(view)
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


REPEAT_SANITY_WARNING = 90.0  # below this share of verbatim repeats given a repeat label, the judge is suspect
REPEAT_PATTERN = "Repeat Request"


def repeat_labels() -> str:
    """The labels that pass a Repeat Request row (the pattern table's), for messages: ``Repeat or Partial Repeat``."""
    table = pattern_table()
    labels = dict.fromkeys(label for e in table.tasks if e.pattern == REPEAT_PATTERN for label in e.acceptable_labels)
    return " or ".join(labels)


def repeat_sanity(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How often the judge gives the repeat baseline a label acceptable on Repeat Request rows (``Repeat`` or
    ``Partial Repeat``: the row's acceptable labels) there (ideal: 100). ``labelled_repeat`` is that share."""
    rows = [r for r in records if r["pattern"] == REPEAT_PATTERN]
    labelled = sum(bool(set(r["labels"]) & set(r["acceptable_labels"])) for r in rows)
    return {"repeat_request_rows": len(rows), "labelled_repeat": 100.0 * labelled / len(rows) if rows else None}


_RECORD_FIELDS = {"set": str, "id": int, "pattern": str, "judge_output": str, "acceptable_labels": list, "label_set": list}



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


class NCBenchmark(BenchmarkBase):
    """NC-Bench for the runner (:class:`convbench_datasets.benchmark.Benchmark`)."""

    name = "nc"
    title = "NC-Bench"
    judges = (1, None)
    strata = ("set", "pattern")  # what --sample spreads over (the paper's tables: a set's patterns)
    rescore_options = (
        Option("--rules", "rules", "nc: re-score the run under these acceptable labels (default: the run's own; with "
               "--from-lm-eval: paper)", choices=RULES),
        Option("--parsing", "parsing", "nc: re-read the run's judge answers this way (default: the run's own reading; "
               "with --from-lm-eval: exact)", choices=PARSINGS),
    )
    settings, plan_class = NCSettings, NCPlan

    @property
    def paper_judge(self) -> str:
        """The paper's judge (``paper_results.yaml``'s setup), which a run's judge spec must name to compare."""
        return str(_paper_setup("judge")())

    def check_records(self, records: list[dict[str, Any]], signature: dict[str, Any]) -> None:
        seen: set[tuple[Any, Any]] = set()
        further = len(signature.get("judges") or [None]) - 1  # judges after the primary
        for lineno, record in enumerate(records, start=1):
            _check_record(record, lineno, seen, further)

    def rescore(self, records: list[dict[str, Any]], signature: dict[str, Any], previous: dict[str, Any],
                options: Mapping[str, Any]) -> dict[str, Any]:
        """The judge's raw answer (``judge_output``) is the source of truth: labels and verdicts are derived
        from it again with the current parser and rule; rows with an ``error`` stay failed. Each choice
        not given stays the run's own. ``rules`` (``paper`` or ``released_script``) re-scores under that
        list of acceptable labels, from the pattern table by each row's set and task; ``parsing``
        (``exact`` or ``lenient``) re-reads the judge text that way. The signature records both. A run
        whose signature does not record its reading was read leniently (see :func:`run_parsing`): it is
        re-scored so, and its signature says so (``parsing_assumed``) until a ``parsing`` is chosen."""
        if "parsing" not in signature:
            signature["parsing_assumed"] = True
        parsing = signature["parsing"] = run_parsing(signature)
        if options.get("parsing") is not None:
            parsing = signature["parsing"] = _parsing(options["parsing"])
            signature.pop("parsing_assumed", None)
        rules = options.get("rules")
        if rules is not None:
            if rules not in RULES:
                raise ConvbenchError(f"rules must be one of {', '.join(RULES)}, got {rules!r}")
            table = pattern_table()
            for lineno, record in enumerate(records, start=1):
                try:
                    record["acceptable_labels"] = list(table.acceptable_labels(record["set"], record["task"], rules))
                except (KeyError, ValueError) as err:
                    raise ConvbenchError(f"records.jsonl line {lineno}: cannot re-read under rules {rules!r}: {err}") from None
            signature["rules"] = rules
        for record in records:
            for judgement in [record, *record.get("judges", [])]:  # the primary judge, then any further ones
                failed = judgement.get("error") is not None
                parsed, passed = (ParsedJudgement("", ()), False) if failed else judge_row(
                    judgement["judge_output"], record["acceptable_labels"], record["label_set"], parsing)
                judgement.update(labels=list(parsed.labels), out_of_set=list(parsed.out_of_set),
                                 unrecognised=list(parsed.unrecognised), unparsed=parsed.unparsed and not failed,
                                 passed=passed)
        return score_run_records(records, signature)

    def summary(self, results: dict[str, Any], rescored: bool = False) -> list[str]:
        lines = [f"accuracy {results['accuracy']:.1f}% over {results['n']} rows ({results['unparsed']} unparsed judge "
                 f"answers, errors: {results.get('errors', 0)})"]
        lines += [f"  {name:<20} {accuracy:6.1f}%" for name, accuracy in results.get("per_set", {}).items()]
        lines.append(_reading_line(results.get("signature") or {}))
        sanity = (results.get("judge_sanity") or {}).get("labelled_repeat")
        if sanity is not None:
            lines.append(f"judge sanity: the judge labels the repeat baseline {repeat_labels()} on {sanity:.1f}% of "
                         f"{REPEAT_PATTERN} rows")
        lines += _judge_lines(results)
        stats = results.get("stats", {})
        if stats and not rescored:
            lines.append(f"model calls {stats.get('model_calls')}, judge calls {stats.get('judge_calls')} (the rest from cache)")
        return lines

    def unread(self, results: dict[str, Any]) -> list[Unread]:
        """Each judge's unparsed answers, of its rows that did not end in an error (an error is counted as one)."""
        judges = results.get("per_judge") or {"": results}
        only = (results.get("signature") or {}).get("judge")
        return [Unread(int(scores.get("unparsed", 0)), int(scores.get("n", 0)) - int(scores.get("errors", 0)),
                       f"answers of judge {name}" if name else "judge answers", name or only)
                for name, scores in judges.items()]

    def warnings(self, results: dict[str, Any]) -> list[str]:
        # with several judges, each judge's own check (the primary's is the run's); with one, the run's
        judges = results.get("per_judge") or {"the judge": results}
        lines = []
        if (results.get("signature") or {}).get("parsing_assumed"):
            lines.append("this run's results did not record how its judge answers were read: they are re-scored "
                         "with the lenient reading convbench used when it was written (signature: parsing lenient, "
                         "parsing_assumed); `convbench score RUNDIR --parsing exact` reads them as the paper did")
        for name, scores in judges.items():
            sanity = (scores.get("judge_sanity") or {}).get("labelled_repeat")
            if sanity is not None and sanity < REPEAT_SANITY_WARNING:
                who = name if name == "the judge" else f"judge {name}"
                lines.append(f"{who} labels verbatim repeats {repeat_labels()} on only {sanity:.1f}% of "
                             f"{REPEAT_PATTERN} rows (a sound judge: near 100%); its labels may not be trustworthy")
        return lines


def _reading_line(signature: Mapping[str, Any]) -> str:
    """Which labels passed and how the judge's answers were read, and whether that is the paper's setup."""
    from .paper_results import paper_results

    setup = paper_results().setup
    rules, parsing = signature.get("rules", "paper"), run_parsing(signature)
    paper = rules == setup["rules"] and parsing == setup["parsing"]
    return (f"scored with rules {rules}, {parsing} reading of judge answers ({'the paper' if paper else 'not the paper'}'s "
            f"setup: rules {setup['rules']}, {setup['parsing']} reading)")


def _judge_lines(results: dict[str, Any]) -> list[str]:
    """With several judges: each judge's accuracy, then each pair's agreement (the paper's Table 7)."""
    if not results.get("per_judge"):
        return []
    lines = ["per judge (the first is the primary judge: the accuracy above is its accuracy):"]
    for name, scores in results["per_judge"].items():
        per_set = "  ".join(f"{s} {a:.1f}%" for s, a in scores.get("per_set", {}).items())
        lines.append(f"  {name:<30} accuracy {scores['accuracy']:5.1f}%  ({per_set}; {scores['unparsed']} unparsed, "
                     f"errors: {scores.get('errors', 0)})")

    def number(value: float | None, form: str) -> str:
        return "n/a" if value is None else format(value, form)

    for pair, a in results.get("judge_agreement", {}).items():
        lines.append(f"judge agreement {pair} ({a['n']} rows): label kappa {number(a['label_kappa'], '.3f')} "
                     f"({number(a['label_percent'], '.1f')}%), pass/fail kappa {number(a['pass_kappa'], '.3f')} "
                     f"({number(a['pass_percent'], '.1f')}%)")
    return lines


BENCHMARK = NCBenchmark()
