"""``convbench score --from-lm-eval SAMPLES.jsonl --judge SPEC --out RUN``: judge and score NC-Bench
answers that lm-eval generated.

lm-eval runs no judge, so an NC-Bench evaluation there is two steps: ``lm_eval ... --tasks convbench_nc_basic
--apply_chat_template --log_samples`` writes each row with the model's answer to
``samples_convbench_nc_basic_DATE.jsonl``; this module reads that file and hands the answers to
``run_nc`` as its model (:class:`LmEvalAnswers`, a backend that answers each row's transcript with
the answer lm-eval logged for it). Judging, label reading, the pass rule, scoring, the run folder,
the response cache (judge answers are reused on a second scoring) and several judges are
``convbench run nc``'s own, so the folder is the one ``convbench run nc`` writes for the same answers;
its signature names the generator ``lm-eval:MODEL`` and adds ``harness`` (lm-eval's version, the
samples file, its sha256, the task, lm-eval's generation settings and chat template hash, from the
``results_DATE.json`` beside the samples when it is there).

The samples must be the first N rows of one config (the whole config, or ``lm_eval --limit N``), as
lm-eval logged them: every doc is checked against convbench's build of that config (``dataset``,
``sources``; the one lm-eval used), and a doc that differs is refused, naming the line and the fields.
Samples chosen with lm-eval's ``--samples`` are refused (a run folder is a prefix of a config). The
model must have decoded greedily (``do_sample`` false, temperature 0), as ``convbench run`` does.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import ConvbenchError, DataFormatError
from ...jsonfiles import read_json, read_jsonl
from ...engine.backends import Backend, Generation, GenerationParams, Messages
from ..run import CONFIGS
from ..run import read_rows as _rows
from ...engine.run_folder import RunResult, write_atomic
from .dataset import CONFIG_FIELD, dataset_row
from ...integrations.lm_eval._options import PROMPT_FIELD

# lm-eval's file names: samples_{task}_{date_id}.jsonl beside results_{date_id}.json
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")


class LmEvalAnswers(Backend):
    """The answers lm-eval logged, served as a model: each row's transcript gets that row's answer.

    Its identity (the response cache's key) holds the sha256 of all the answers, so answers of other
    samples files are never taken for these.
    """

    kind = "lm-eval"

    def __init__(self, model: str, answers: Mapping[str, str], digest: str) -> None:
        self.model, self.answers, self.digest = model, dict(answers), digest
        self.calls = 0

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model, "answers_sha256": self.digest}

    def generate(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for index, messages in enumerate(prompts):
            self.calls += 1
            key = transcript_key(messages)
            if key not in self.answers:  # the rows were checked against the samples: this is a bug, not input
                raise ConvbenchError(f"no lm-eval answer for the transcript {key[:200]}")
            yield index, Generation(self.answers[key])


def transcript_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """A row's transcript as one string: the key of its answer (the cache, too, keys answers by transcript)."""
    return json.dumps([{"role": m["role"], "content": m["content"]} for m in messages], ensure_ascii=False)


@dataclass(frozen=True)
class LoggedRun:
    """What an lm-eval samples file holds for a convbench run (:func:`read_samples`): the answers as a model, the
    NC-Bench config and how many of its rows lm-eval answered (``limit``: None for all), lm-eval's token limit,
    and the harness entry the run's signature gains (the file, its settings, the answers' digest)."""

    model: LmEvalAnswers
    config: str
    limit: int | None
    max_new_tokens: int
    harness: dict[str, Any]


def read_samples(samples: str | os.PathLike[str], dataset: str | os.PathLike[str] | None = None,
                 sources: str | os.PathLike[str] | None = None) -> LoggedRun:
    """The NC-Bench answers of an lm-eval samples file (``samples_convbench_nc*_DATE.jsonl`` from ``lm_eval ...
    --log_samples``), checked against convbench's build (``dataset``, ``sources``: the one lm-eval used); a run
    of them is :func:`convbench_datasets.runs.api.score_lm_eval_samples`."""
    path = Path(samples)
    logged = _read_samples(path)
    config = _config(logged, path)
    rows = _rows(config, dataset, sources)
    _check_rows(logged, rows, config, path)
    _check_prompts(logged, rows, path)
    kwargs = _generation_kwargs(logged, path)
    answers, digest = _answers(logged, path)
    beside = _results_file(path)
    return LoggedRun(LmEvalAnswers(_model_name(beside, path), answers, digest), config,
                     len(logged) if len(logged) < len(rows) else None, kwargs["max_gen_toks"],
                     _harness(path, beside, kwargs, digest))


def name_harness(result: RunResult, harness: dict[str, Any]) -> None:
    """Add the harness (samples file, its settings and answers' digest) to a written run's signature."""
    result.results["signature"]["harness"] = harness
    write_atomic(result.path / "results.json", json.dumps(result.results, indent=2, ensure_ascii=False) + "\n")


def _read_samples(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, sample) of each line, checked: an object with ``doc_id``, ``doc`` and one answer."""
    lines = read_jsonl(path)
    if not lines:
        raise DataFormatError(f"{path}: holds no samples")
    for lineno, sample in lines:
        where = f"{path} line {lineno}"
        if not isinstance(sample.get("doc_id"), int) or not isinstance(sample.get("doc"), dict):
            raise DataFormatError(f"{where}: not an lm-eval sample (it needs an integer 'doc_id' and a 'doc' object); "
                                  "give the samples_*.jsonl file lm_eval --log_samples wrote")
        answer = sample.get("filtered_resps")
        if not (isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], str)):
            raise DataFormatError(f"{where}: field 'filtered_resps' must hold the one answer of a generation task, "
                                  f"got {answer!r}")
    return lines


def _config(logged: list[tuple[int, dict[str, Any]]], path: Path) -> str:
    configs = set()
    for lineno, sample in logged:
        doc = sample["doc"]
        if PROMPT_FIELD in doc:
            raise ConvbenchError(f"{path}: samples of a NICO task, which lm-eval scores itself (its results file "
                                 "holds convbench's metrics); --from-lm-eval judges NC-Bench samples (convbench_nc*)")
        if doc.get(CONFIG_FIELD) not in CONFIGS:
            raise DataFormatError(f"{path} line {lineno}: the doc has no {CONFIG_FIELD!r} naming an NC-Bench config: "
                                  "not a sample of convbench's lm-eval tasks (convbench_nc, convbench_nc_basic, ...)")
        configs.add(doc[CONFIG_FIELD])
    if len(configs) != 1:
        raise DataFormatError(f"{path}: samples of several configs ({', '.join(sorted(configs))}); one file per task")
    return configs.pop()


def _check_rows(logged: list[tuple[int, dict[str, Any]]], rows: list[dict[str, Any]], config: str, path: Path) -> None:
    """The samples are rows 0..N-1 of the config, each doc equal to convbench's row (so the run is that prefix)."""
    seen: dict[int, int] = {}
    for lineno, sample in logged:
        doc_id = sample["doc_id"]
        if doc_id in seen:
            raise DataFormatError(f"{path} line {lineno}: doc_id {doc_id} again (first on line {seen[doc_id]})")
        seen[doc_id] = lineno
    missing = sorted(set(range(len(logged))) - set(seen))
    if missing:
        raise ConvbenchError(f"{path}: the samples are not the first {len(logged)} rows of {config} (missing doc_id "
                             f"{', '.join(map(str, missing[:10]))}); a run folder holds the first N rows of a config: "
                             "run lm_eval with --limit N, not --samples")
    if len(logged) > len(rows):
        raise ConvbenchError(f"{path}: {len(logged)} samples, but {config} has {len(rows)} rows in convbench's build; "
                             "give the build lm-eval used (--dataset)")
    for lineno, sample in logged:
        doc, row = dataset_row(sample["doc"]), rows[sample["doc_id"]]
        if doc != row:
            fields = sorted(key for key in set(doc) | set(row) if doc.get(key) != row.get(key))
            raise ConvbenchError(f"{path} line {lineno}: doc {sample['doc_id']} is not row {sample['doc_id']} of {config} "
                                 f"in convbench's build (fields {', '.join(fields)} differ); give the build lm-eval used "
                                 "(--dataset, --sources)")
    logged.sort(key=lambda item: item[1]["doc_id"])


def _check_prompts(logged: list[tuple[int, dict[str, Any]]], rows: list[dict[str, Any]], path: Path) -> None:
    """Each prompt lm-eval sent (``arguments.gen_args_0.arg_0``: the chat template's text, or the messages as
    JSON for chat APIs) holds every message of its row. lm-eval's HF models drop the system messages when a
    chat template rejects them (a logged warning only): such answers are to another prompt than the benchmark's."""
    for lineno, sample in logged:
        sent = ((sample.get("arguments") or {}).get("gen_args_0") or {}).get("arg_0")
        if not isinstance(sent, str):
            raise DataFormatError(f"{path} line {lineno}: no prompt logged (arguments.gen_args_0.arg_0)")
        try:
            as_messages = json.loads(sent)
        except ValueError:
            as_messages = None
        if isinstance(as_messages, list) and all(isinstance(m, dict) for m in as_messages):
            contents = [str(m.get("content", "")).strip() for m in as_messages]

            def present(text: str) -> bool:
                return text.strip() in contents
        else:
            def present(text: str) -> bool:
                return text.strip() in sent
        for message in rows[sample["doc_id"]]["messages"]:
            if not present(message["content"]):
                raise ConvbenchError(
                    f"{path} line {lineno}: the prompt lm-eval sent for doc {sample['doc_id']} lacks the row's "
                    f"{message['role']} message (lm-eval drops system messages when the model's chat template "
                    "rejects them): these answers are not to NC-Bench's prompts; use a chat template that takes "
                    "system messages")


def _generation_kwargs(logged: list[tuple[int, dict[str, Any]]], path: Path) -> dict[str, Any]:
    """lm-eval's generation settings of the samples (one for all), checked to be greedy with a token limit."""
    found: dict[str, Any] | None = None
    for lineno, sample in logged:
        arguments = sample.get("arguments")
        kwargs = arguments.get("gen_args_0", {}).get("arg_1") if isinstance(arguments, dict) else None
        if not isinstance(kwargs, dict):
            raise DataFormatError(f"{path} line {lineno}: no generation settings (arguments.gen_args_0.arg_1)")
        if found is None:
            found = kwargs
        elif kwargs != found:
            raise DataFormatError(f"{path} line {lineno}: generation settings {kwargs} differ from the first sample's {found}")
    assert found is not None
    limit = found.get("max_gen_toks")
    if not isinstance(limit, int) or limit < 1:
        raise DataFormatError(f"{path}: the samples record no token limit (max_gen_toks), got {limit!r}")
    if found.get("do_sample") or float(found.get("temperature") or 0.0) != 0.0:
        raise ConvbenchError(f"{path}: the answers were sampled (do_sample={found.get('do_sample')}, temperature="
                             f"{found.get('temperature')}); NC-Bench is scored on greedy answers, as convbench run "
                             "decodes: rerun lm_eval without sampling --gen_kwargs")
    return found


def _answers(logged: list[tuple[int, dict[str, Any]]], path: Path) -> tuple[dict[str, str], str]:
    """Each transcript's answer, and the sha256 of all the answers in row order."""
    answers: dict[str, tuple[str, int]] = {}
    for lineno, sample in logged:
        key, answer = transcript_key(sample["doc"]["messages"]), sample["filtered_resps"][0]
        if key in answers and answers[key][0] != answer:
            raise ConvbenchError(f"{path} lines {answers[key][1]} and {lineno}: the same transcript got two different "
                                 "answers; convbench keeps one answer per transcript (decode greedily)")
        answers.setdefault(key, (answer, lineno))
    in_order = json.dumps([sample["filtered_resps"][0] for _, sample in logged], ensure_ascii=False)
    return {key: answer for key, (answer, _) in answers.items()}, hashlib.sha256(in_order.encode("utf-8")).hexdigest()


def _results_file(path: Path) -> dict[str, Any] | None:
    """lm-eval's ``results_DATE.json`` written with the samples (same folder, same date), if it is there."""
    match = _SAMPLES_NAME.match(path.name)
    beside = path.parent / f"results_{match['date']}.json" if match else None
    if beside is None or not beside.is_file():
        return None
    results = read_json(beside)
    results["_path"] = str(beside)
    return results


def _model_name(beside: dict[str, Any] | None, path: Path) -> str:
    """The model: its weights as ``--model_args`` name them (pretrained=, model=...: what lm-eval names its
    output folder after), else lm-eval's model type (``hf``; the class of a model object); without the
    results file, the folder lm-eval wrote the samples to."""
    config = (beside or {}).get("config")
    if not isinstance(config, dict):
        return path.resolve().parent.name
    args = config.get("model_args") or {}
    if isinstance(args, str):
        args = dict(pair.split("=", 1) for pair in args.split(",") if "=" in pair)
    for key in ("peft", "delta", "pretrained", "model", "path", "engine"):  # lm-eval's order (peft names its base too)
        if isinstance(args, dict) and args.get(key):
            return str(args[key])
    return str(config.get("model") or path.resolve().parent.name)


def _harness(path: Path, beside: dict[str, Any] | None, kwargs: dict[str, Any], digest: str) -> dict[str, Any]:
    match = _SAMPLES_NAME.match(path.name)
    beside = beside or {}
    return {
        "name": "lm-eval", "version": beside.get("lm_eval_version"), "samples": str(path),
        "samples_sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "answers_sha256": digest,
        "task": match["task"] if match else None, "results": beside.get("_path"),
        "model_args": (beside.get("config") or {}).get("model_args"), "generation_kwargs": kwargs,
        "chat_template_sha": beside.get("chat_template_sha"),
    }
