"""``convbench run nico --task T --model SPEC``: prompt a model on a NICO task and score its answers.

Generation tasks (open_domain, dialog_completion, rewrite_unnatural) are scored with
``nico_generation``; identify_unnatural with ``unnatural_sentence_prf``. A leading speaker label
(``CharacterA:``), the label a 3-shot demonstration puts before its answer (``回复：``, ``改写：``) and
surrounding quotes are removed from generated turns before scoring: a label is not part of what anyone
says.

A row whose request failed for good (a per-row error, in the record's ``error``) is counted in
``errors`` and scored as a failure: an empty turn for the generation tasks, and precision = recall =
0 for identify_unnatural, where it is not a blank answer (counted in ``unanswered``, or read as "none
found" under ``blank_answer="none"``, right for a dialogue without unnatural sentences). Answers cut
at the token limit are scored as written (``finish_reason`` in the records says so). An answer longer than the metrics' cap (``MAX_TEXT_CHARS`` characters, the
cleaned turn for the generation tasks), or for identify_unnatural one over the metric's per-answer
limits (``MAX_ANSWER_LINES`` distinct lines, ``MAX_LINE_CHARS`` characters a line), cannot be scored;
it is that row's error in the same way, so one runaway answer cannot stop every run of the same
prompts from being written. identify_unnatural answers are read knowing the dialogue (a line quoting
one of its sentences is a prediction); records keep the dialogue's turns so re-scoring reads the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..benchmark import BenchmarkBase, Executed
from ..counts import MAX_LAYER, MAX_NEW_TOKENS, check_count
from ..errors import ConvbenchError
from ..engine.backends import GenerationParams
from ..engine.session import Session
from ..scoring.inputs import MAX_TEXT_CHARS
from ..settings import EVERY_VALUE, non_negative, positive, setting, signed_settings
from .prompts import pick_shots, render_prompt, templates_sha256
from .tasks import TASKS

SHOTS = (0, 3)
# a speaker's label, or the answer label of the 3-shot demonstrations (templates/prompts.yaml: 回复：, 改写：)
_LABEL = re.compile(r"^\s*(?:character\s*[a-z]|[ab甲乙]|角色\s*[ab甲乙]|回复|改写)\s*[:：]\s*", re.IGNORECASE)
_QUOTES = "\"'“”‘’「」"


def clean_turn(text: str) -> str:
    """A generated turn without a leading speaker label or wrapping quotes.

    Example:
        >>> clean_turn("CharacterB：“好啊，我同意！”")
        '好啊，我同意！'
    """
    return _LABEL.sub("", text.strip()).strip().strip(_QUOTES).strip()


def read_rows(task: str, split: str, dataset: Any, shots: int, sources: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(examples of ``split``, the train split for demonstrations when ``shots``); read with pyarrow from
    the build folder ``dataset`` (default: the bundled sample build), so that a run does not import ``datasets``;
    a ``dataset`` that is a name, not a folder (a Hub id, an installed ``convbench/nico``), through ``datasets``."""
    from ..built_rows import built_folder, check_rows, elsewhere, load_by_name, read_rows as read_built, split_names
    from ..class_labels import named_rows
    from .schema import row_rules

    source = f"the build at {dataset}" if dataset is not None else "the bundled sample build"
    rules = row_rules(task) if task in TASKS else None  # a row a run cannot use: its file, row and field named
    try:
        if elsewhere(dataset):  # a name (Hub id, installed convbench/nico), not a folder: datasets reads it
            loaded = load_by_name(dataset, task)  # type: ignore[arg-type]
            splits = list(loaded)

            def read(split: str) -> list[dict[str, Any]]:
                rows = named_rows(loaded[split])
                if rules is not None:
                    check_rows(rows, rules, f"{dataset} (config {task!r}, split {split!r})")
                return rows
        else:
            folder = built_folder("nico", dataset=dataset, sources=sources)
            splits = split_names(folder, task)

            def read(split: str) -> list[dict[str, Any]]:
                return read_built(folder, task, split, rules=rules)
    except ConvbenchError as err:
        raise ConvbenchError(f"NICO {task}: cannot load it from {source} ({err})") from None
    if split not in splits:  # a split with no examples is not published, so it is absent, not empty
        raise ConvbenchError(missing_split_message(task, split, splits, source))
    if shots and "train" not in splits:
        raise ConvbenchError(f"NICO {task}: {shots}-shot prompts take their demonstrations from the train split, "
                             f"which has no examples in {source}; use --shots 0")
    return read(split), read("train") if shots else []


def missing_split_message(task: str, split: str, available: list[str], source: str) -> str:
    """Names the task, the split asked for and the splits that have examples, with a ``--split`` to try.

    Example:
        >>> missing_split_message("rewrite_unnatural", "test", ["train"], "the build at hub/nico")
        "NICO rewrite_unnatural: no examples in split 'test' of the build at hub/nico (splits with examples: train); try --split train"
    """
    hint = "train" if "train" in available else available[0]
    return (f"NICO {task}: no examples in split {split!r} of {source} (splits with examples: {', '.join(available)}); "
            f"try --split {hint}")


def _scoring_departure(paper: str, describe: Callable[[Any], str]) -> Callable[..., str | None]:
    """A departure of the generation metrics' reading from ``paper``, for the tasks they score (finding
    unnatural sentences counts no tokens)."""

    def departs(value: Any, signature: Mapping[str, Any], records: Any) -> str | None:
        if value == paper or signature.get("task") == "identify_unnatural":
            return None
        return describe(value)

    return departs


def _blank_answer_departure(value: Any, signature: Mapping[str, Any], records: Any) -> str | None:
    """Blank answers read as "none", for the task that reads answers (the generation tasks score turns)."""
    if value == "unanswered" or signature.get("task") != "identify_unnatural":
        return None
    return f'blank answers read as "{value}" (convbench\'s default: unanswered, scored 0; the paper is silent)'


@dataclass
class NICOSettings:
    """NICO's settings, declared once (:mod:`convbench_datasets.settings`): the keywords of :func:`convbench_datasets.runs.api.run_nico`, the
    flags of ``convbench run nico``, a sweep block's keys, their signature keys and the paper's values (where
    the paper is silent, convbench's default, written in the card)."""

    task: str | None = setting(
        None, help="nico: open_domain, dialog_completion, identify_unnatural or rewrite_unnatural", paper=EVERY_VALUE,
        why="each task is a table of its own in the paper")
    shots: int = setting(0, help="nico: zero-shot (0) or 3-shot prompts (default {default})", type=int, choices=SHOTS,
                         paper=EVERY_VALUE, why="the paper reports zero-shot and 3-shot results (its section 5.1)")
    split: str = setting("test", help="nico: the split to score (default {default})", paper="test",
                         describe=lambda value, paper: f"split {value} (paper: test)")
    max_new_tokens: int = setting(
        256, help="nico: generator token limit (default {default})", type=positive, key="generation.max_new_tokens",
        paper=256, source="paper silent: convbench's default, above the longest reference turn",
        describe=lambda value, paper: f"{value} new tokens (convbench's default: {paper}; the paper is silent)")
    # The paper does not say how it computed its metrics; these are the readings its numbers support (the card
    # gives the evidence), each offered the other way
    tokenizer: str = setting(
        "char", help="nico: the token unit of BLEU, ROUGE-L, Distinct and length: char (characters), jieba (words) "
                     "or 13a (default {default})",
        paper="char", source="paper silent: its tokens per utterance and BLEU-2/BLEU-1 fit characters (the card)",
        departs=_scoring_departure("char", lambda value: f"{value} tokens (the paper's numbers point to characters)"))
    bleu_level: str = setting(
        "corpus", help="nico: BLEU of the summed statistics (corpus) or the mean of sentence BLEU (sentence) "
                       "(default {default})",
        paper="corpus", source="paper silent, its numbers do not decide: convbench's default (the card)",
        departs=_scoring_departure("corpus", lambda value: f"{value}-level BLEU (convbench's default: corpus; "
                                                           "the paper is silent)"))
    bleu_ngrams: str = setting(
        "cumulative", help="nico: BLEU-2 from the 1- and 2-gram precisions (cumulative) or the 2-gram precision "
                           "(individual) (default {default})",
        paper="cumulative", source="paper silent: its BLEU-2/BLEU-1 fit cumulative BLEU-2 (the card)",
        departs=_scoring_departure("cumulative", lambda value: f"{value} BLEU-2 (the paper's numbers point to "
                                                               "cumulative)"))
    rouge_l_f: str = setting(
        "f1", help="nico: ROUGE-L's F: f1 (beta = 1) or p/r (beta = P/R, the rouge and rouge-chinese packages') "
                   "(default {default})",
        paper="f1", source="paper silent: its ROUGE-L/BLEU-1 on long answers fit F1 (the card)",
        departs=_scoring_departure("f1", lambda value: f"ROUGE-L F with beta = {value.upper()} (the paper's numbers "
                                                       "point to F1)"))
    bertscore: bool = setting(
        False, help="nico: add BERTScore F1", cli=False, paper=EVERY_VALUE, recorded=False,
        why="it adds BERTScore F1 beside the other numbers and changes none of them")
    bertscore_model: str = setting(
        "bert-base-chinese", flag="--bertscore", help="nico: add BERTScore F1 with this model (name or folder)",
        metavar="MODEL", to_settings=lambda model: {"bertscore": True, "bertscore_model": model}, recorded=False,
        why="the metric's signature records the model when BERTScore is computed",
        paper="bert-base-chinese", source="the paper's BERT embeddings, for Chinese",
        describe=lambda value, paper: f"BERTScore with {value} (paper: BERT, {paper})")
    bertscore_layer: int | None = setting(
        None, help="nico: the layer BERTScore uses (default: bert-score's for known models, else 2/3 of the depth)",
        type=non_negative, metavar="N", key="bertscore_layer_given", paper=None,
        describe=lambda value, paper: f"BERTScore layer {value} (--bertscore-layer; default: bert-score's for the model)")
    blank_answer: str = setting(
        "unanswered", help="nico identify_unnatural: what a blank answer (no letter or number: \"\", \"……\", \"。\") "
                           "is: unanswered (no answer, scored 0) or none (the answer \"none\") (default {default})",
        paper="unanswered", source="paper silent: convbench's default (the card says why)",
        unrecorded="none",  # a run written before the setting scored a blank answer as "none"
        departs=_blank_answer_departure)


@dataclass
class NICOPlan(NICOSettings):
    """One NICO run's settings (the keywords of :func:`convbench_datasets.runs.api.run_nico`), checked; see :func:`convbench_datasets.runs.api.run_nico`."""

    dataset: Any = None
    sources: Any = None
    train: list[dict[str, Any]] = field(default_factory=list, init=False)
    identify_scores: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        from .nico_generation import OPTIONS, TOKENIZERS  # light: the metrics' heavy parts load when scoring

        if self.task is None:
            raise ConvbenchError("a NICO run needs --task (task=): open_domain, dialog_completion, identify_unnatural "
                                 "or rewrite_unnatural")
        if not isinstance(self.bertscore, bool):  # --bertscore MODEL is bertscore=True, bertscore_model=MODEL
            raise ConvbenchError(f"bertscore must be True or False, got {self.bertscore!r}; to name the BERTScore "
                                 f"model give bertscore=True and bertscore_model={self.bertscore!r} (the flag "
                                 "--bertscore MODEL sets both)")
        for name, allowed in {"tokenizer": TOKENIZERS, **OPTIONS}.items():  # now, not after every answer is generated
            if getattr(self, name) not in allowed:
                raise ConvbenchError(f"unknown NICO {name} {getattr(self, name)!r}; choose one of {', '.join(allowed)}")
        check_blank_answer(self.blank_answer)
        if self.bertscore_layer is not None and not self.bertscore:
            raise ConvbenchError(f"--bertscore-layer needs --bertscore MODEL (bertscore_layer={self.bertscore_layer} "
                                 "needs bertscore=True)")
        if self.bertscore_layer is not None:
            check_count("bertscore_layer (--bertscore-layer)", self.bertscore_layer, most=MAX_LAYER)
        if self.task not in TASKS:
            raise ConvbenchError(f"unknown NICO task {self.task!r}; choose one of {', '.join(TASKS)}")
        if check_count("shots", self.shots) not in SHOTS:  # counted first: 3.0 and True would pass `in`
            raise ConvbenchError(f"shots must be 0 or 3, got {self.shots}")
        check_count("max_new_tokens", self.max_new_tokens, least=1, most=MAX_NEW_TOKENS)
        self.params = GenerationParams(max_new_tokens=self.max_new_tokens)

    def rows(self) -> list[dict[str, Any]]:
        rows, self.train = read_rows(self.task, self.split, self.dataset, self.shots, self.sources)  # type: ignore[arg-type]
        return rows

    def execute(self, session: Session, rows: list[dict[str, Any]]) -> Executed:
        task = self.task
        prompts = [[{"role": "user", "content": render_prompt(task, r, pick_shots(r["id"], self.train, self.shots)
                                                               if self.shots else ())}] for r in rows]
        generated = session.ask(session.generator, prompts, self.params, desc=f"nico {task}")
        session.free(session.generator)
        responses = [g.text for g in generated.generations]  # "" for a per-row error
        scored = responses if task == "identify_unnatural" else [clean_turn(t) for t in responses]
        errors = [g.error if g.error is not None else too_long_error(text, task)
                  for g, text in zip(generated.generations, scored)]
        failed = [e is not None for e in errors]
        if task == "identify_unnatural":
            self.identify_scores, per_row = score_identify(responses, [r["unnatural_sentences"] for r in rows], failed,
                                                           [dialogue_turns(r) for r in rows], self.blank_answer)
            records = [_identify_record(r, text, hit, row) for r, text, hit, row in zip(rows, responses, generated.cache_hits, per_row)]
        else:
            turns = ["" if bad else turn for turn, bad in zip(scored, failed)]  # a failed row scores as an empty turn
            records = [{"id": r["id"], "dialogue_id": r["dialogue_id"], "interaction_type": r["interaction_type"],
                        "response": text, "turn": turn, "reference": r["reference"], "cache_hit": hit}
                       for r, text, turn, hit in zip(rows, responses, turns, generated.cache_hits)]
        for record, generation, error in zip(records, generated.generations, errors):
            record.update(finish_reason=generation.finish_reason, error=error)
        return Executed(records, {"model_calls": generated.model_calls, "model_cache_hits": sum(generated.cache_hits)})

    def signature(self, session: Session) -> dict[str, Any]:
        return {**signed_settings(self), "task": self.task, "split": self.split, "shots": self.shots, "generation": self.params.to_dict(),
                "prompt_templates_sha256": templates_sha256()}

    def results(self, records: list[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
        from .nico_generation import score_generation

        failed = [r["error"] is not None for r in records]
        if self.task == "identify_unnatural":  # scored once, as the records were made (execute)
            results = dict(self.identify_scores)
        else:
            results = score_generation([r["turn"] for r in records], [r["reference"] for r in records],
                                       **scoring_options(vars(self)),
                                       interaction_types=[r["interaction_type"] for r in records],
                                       bertscore=self.bertscore, bertscore_model=self.bertscore_model,
                                       bertscore_options=None if self.bertscore_layer is None
                                       else {"num_layers": self.bertscore_layer})
        results["errors"] = sum(failed)
        return results


def scoring_options(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """``score_generation``'s token unit and readings, from a run's settings or signature; a reading it does not
    hold (a run written before the BLEU and ROUGE-L readings were options) is the default, as it was scored."""
    from .nico_generation import OPTIONS

    defaults = {f.name: f.default for f in fields(NICOSettings)}
    return {name: recorded.get(name, defaults[name]) for name in ("tokenizer", *OPTIONS)}


def too_long_error(answer: str, task: str | None = None) -> str | None:
    """The per-row error for an answer too long for the metrics to score, or None; for identify_unnatural
    also one over ``unnatural_sentence_prf``'s per-answer limits (lines, line length).

    Example:
        >>> too_long_error("好" * 20_001)
        "answer is 20,001 characters long, over the metrics' limit of 20,000: not scored (counted as a failure)"
        >>> too_long_error("好" * 2_001, "identify_unnatural")
        'answer line 1 is 2,001 characters long, over the limit of 2,000: not scored (counted as a failure)'
    """
    from .unnatural_prf import answer_limit_error  # the metrics load when scoring, not with the CLI

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


def check_blank_answer(value: Any) -> str:
    """``blank_answer``, checked: one of ``unnatural_prf.BLANK_ANSWERS``."""
    from .unnatural_prf import BLANK_ANSWERS

    if value not in BLANK_ANSWERS:
        raise ConvbenchError(f"blank_answer must be one of {', '.join(BLANK_ANSWERS)}, got {value!r}")
    return value  # type: ignore[no-any-return]


def score_identify(responses: list[str], golds: list[Any], failed: list[bool], dialogues: list[Any] | None = None,
                   blank_answer: str = "unanswered") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``unnatural_sentence_prf`` with per-row scores; a failed row (a per-row error) scores P = R = 0 and
    is counted in ``errors``, not as a blank or unanswered answer. ``dialogues``: each row's dialogue turns
    (None where unknown): a line quoting one is a prediction. ``blank_answer``: the metric's (a blank answer
    is no answer, or the answer "none")."""
    from .unnatural_prf import _prf, answer_limit_error, score_unnatural

    # an answer over the metric's per-answer limits fails its row too (callers that did not check it)
    failed = [bad or answer_limit_error(text) is not None for text, bad in zip(responses, failed)]
    # a failed row's answer is not scored (it may be one too long to score): read as "" and then set to 0
    results = score_unnatural(["" if bad else text for text, bad in zip(responses, failed)], golds,
                              dialogues=dialogues, blank_answer=blank_answer, return_rows=True)  # type: ignore[arg-type]
    rows = results.pop("rows")
    if any(failed):
        for row, bad in zip(rows, failed):
            if bad:  # a failure, not a blank answer
                row.update(precision=0.0, recall=0.0, blank=False, unanswered=False)
        results["blank_answers"] = sum(row["blank"] for row in rows)
        results["unanswered"] = sum(row["unanswered"] for row in rows)
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


class NICOBenchmark(BenchmarkBase):
    """NICO for the runner (:class:`convbench_datasets.benchmark.Benchmark`)."""

    name = "nico"
    title = "NICO"
    strata = ("interaction_type",)  # what --sample spreads over (the paper reports per interaction type)
    settings, plan_class = NICOSettings, NICOPlan

    def check_records(self, records: list[dict[str, Any]], signature: dict[str, Any]) -> None:
        needed = ("response", "gold") if signature.get("task") == "identify_unnatural" else ("turn", "reference")
        for lineno, record in enumerate(records, start=1):
            for name in needed:
                if name not in record:
                    raise ConvbenchError(f"records.jsonl line {lineno}: field {name!r} is missing")

    def rescore(self, records: list[dict[str, Any]], signature: dict[str, Any], previous: dict[str, Any],
                options: Mapping[str, Any]) -> dict[str, Any]:
        from .nico_generation import score_generation

        failed = [r.get("error") is not None for r in records]
        if signature.get("task") == "identify_unnatural":
            results, _ = score_identify([r["response"] for r in records], [r["gold"] for r in records], failed,
                                        [r.get("dialogue") for r in records],  # None in records written before
                                        check_blank_answer(signature.get("blank_answer", "none")))  # none: as runs before it were scored
        else:
            results = score_generation([r["turn"] for r in records], [r["reference"] for r in records],
                                       **scoring_options(signature),
                                       interaction_types=[r["interaction_type"] for r in records])
        # BERTScore needs its model, which re-scoring never loads: the run's own figure is carried over (the turns
        # it scored are the records' turns) and said to be so, rather than silently dropped
        carried = {k: v for k, v in previous.items() if k.startswith("bertscore_")}
        if carried:
            results.update(carried)
            results.setdefault("notes", []).append("bertscore_* carried over from the run (re-scoring loads no model)")
        results["errors"] = sum(failed)
        return results

    def carried(self, shards: list[dict[str, Any]], signature: dict[str, Any]) -> dict[str, Any]:
        """BERTScore, which re-scoring cannot recompute (it loads no model), for a merged run: the shards'
        mean F1 weighted by their rows (the mean over all rows) when no shard failed and no idf weighting
        (which depends on every reference) was used; else None, with ``bertscore_error`` saying why."""
        figures = [results for results in shards if "bertscore_f1" in results]
        if not figures:
            return {}
        if len(figures) != len(shards) or any(r["bertscore_f1"] is None for r in figures):
            errors = [str(r.get("bertscore_error")) for r in figures if r.get("bertscore_error")]
            return {"bertscore_f1": None, "bertscore_error": "not merged: BERTScore failed or is missing in a shard"
                    + (f" ({errors[0]})" if errors else "")}
        if signature.get("bertscore_idf"):
            return {"bertscore_f1": None, "bertscore_error": "not merged: idf weights depend on every reference; "
                    "rerun unsharded for BERTScore with idf"}
        total = sum(r["n"] for r in figures)
        return {"bertscore_f1": sum(r["bertscore_f1"] * r["n"] for r in figures) / total}

    def summary(self, results: dict[str, Any], rescored: bool = False) -> list[str]:
        import json

        signature = results.get("signature", {})
        scores = {k: round(v, 2) for k, v in results.items() if isinstance(v, float)}
        # identify_unnatural: the answers scored as no answer (blank, refused, cut off), beside the failed rows
        unanswered = f", unanswered: {results['unanswered']}" if "unanswered" in results else ""
        lines = [f"nico {signature.get('task')} ({signature.get('shots')}-shot, {results.get('n')} examples, errors: "
                 f"{results.get('errors', 0)}{unanswered}): {json.dumps(scores, ensure_ascii=False)}"]
        if signature.get("model") == "baseline:repeat":
            lines.append("baseline:repeat answers blank on NICO: it repeats the previous assistant turn, and a NICO "
                         "prompt is one user message (the dialogue is inside it)")
        return lines



BENCHMARK = NICOBenchmark()
