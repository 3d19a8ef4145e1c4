"""``convbench import-inspect LOG --out RUN``: a convbench run folder from an inspect log of a convbench task.

The folder holds ``records.jsonl`` in the shape ``convbench run`` writes (the row, the model's answer,
the judge's raw answer...) and ``results.json`` computed by convbench's own re-scoring
(``convbench_datasets.runs.pipeline.score_run``) from those records, with a signature: convbench's fields (config, rows,
dataset fingerprint, model, judge, decoding, judge template and its sha256, rules...) plus
``harness`` (inspect_ai's version, the log, its eval id, task, task arguments and the epoch
imported). ``convbench score``, ``report`` (with the paper's reference tables) and ``compare`` then
work on it as on any run.

One epoch becomes one run (``epoch``, default 1). A sample inspect could not finish (its ``error``)
or stopped at one of its limits (``inspect: message limit (N)``, token, time, working...) becomes a row
with ``error``: it fails and is counted, as a per-row error of ``convbench run`` is; so does a reply
that is no answer by the runner's rule (``reply_error``: withheld by a content filter, or empty and cut
at the token limit), for logs whose scorer did not record it. inspect's own metrics leave samples
with an ``error`` out (their ``n`` says how many they scored). A log whose evaluation did not finish is
refused.

A run folder holds a whole split (or config) or its first N rows (``limit``): a log of other
samples (``--sample-id``, ``--limit`` with ``--sample-shuffle``, a range ``--limit A-B``) is refused,
naming the rows it has and those expected. identify_unnatural records keep the dialogue, so that
re-scoring reads each answer as the scorer did.

The records are the benchmark's own: its task module (``nc/inspect_task.py``, ...) turns the samples
into them (``log_records``) and may add results the run folder declares (``log_declared``: NICO's
BERTScore); this module finds that module through the task registration, by the benchmark's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from ..._version import __version__
from ...counts import check_count
from ...errors import ConvbenchError
from ...engine.backends.endpoints import public_url
from ...engine.run_folder import check_run_out, row_id, run_folder, write_folder
from ._common import GRADER_ROLE
from ._registry import MODULES, NAMESPACES  # each benchmark's inspect_task module: its log_records

# task settings that are the importer's to read, not the signature's
_NOT_SIGNATURE = {"rows", "row_ids", "convbench_version"}


def write_inspect_run(log: str | os.PathLike[str] | EvalLog, out: str | os.PathLike[str], *, epoch: int = 1) -> Path:
    """Write ``out`` (records.jsonl, results.json) from the inspect log ``log``; scored with convbench by
    :func:`convbench_datasets.runs.api.import_inspect_log`.

    Args:
        log: an inspect log file (``.eval`` or ``.json``) of ``convbench/nc``, ``/nico`` or ``/cocoeval``, or
            the log object.
        out: the run folder to write: missing, empty, or an earlier run folder (replaced).
        epoch: which epoch of the log becomes the run (inspect numbers them from 1).
    """
    epoch = check_count("epoch (--epoch)", epoch, least=1)
    where = str(log.location if isinstance(log, EvalLog) else log)
    eval_log = log if isinstance(log, EvalLog) else _read(where)
    settings = (eval_log.eval.metadata or {}).get("convbench")
    if not isinstance(settings, dict) or settings.get("benchmark") not in MODULES:
        raise ConvbenchError(f"{where}: not a log of a convbench task (its eval metadata has no 'convbench' entry; "
                             f"its task: {eval_log.eval.task!r}); import logs of `inspect eval convbench/nc|nico|cocoeval`")
    _check_task(eval_log.eval.task, settings["benchmark"], where)
    if eval_log.status != "success":
        raise ConvbenchError(f"{where}: the evaluation ended with status {eval_log.status!r}, so rows are missing; "
                             "finish it (`inspect eval-retry`) and import the finished log")
    samples = [s for s in eval_log.samples or [] if s.epoch == epoch]
    if not samples:
        epochs = sorted({s.epoch for s in eval_log.samples or []})
        raise ConvbenchError(f"{where}: no samples of epoch {epoch} (the log holds epochs {epochs or 'none'})")
    benchmark = settings["benchmark"]
    samples = _in_dataset_order(samples, settings.get("row_ids"), where)
    limit = _limit(samples, settings, where, epoch)
    task_module = MODULES[benchmark]
    records = task_module.log_records(samples, settings)
    folder = Path(out)
    check_run_out(folder)  # before any work: a user's folder is never written into
    signature = _signature(eval_log, settings, samples, where, epoch, limit)
    declared = {"signature": signature, "stats": _stats(eval_log), "row_ids": [row_id(r) for r in records],
                **(task_module.log_declared(records, settings) if hasattr(task_module, "log_declared") else {})}
    with run_folder(folder):
        write_folder(folder, records, declared)
    return folder


def _check_task(task: str, benchmark: str, where: str) -> None:
    """Refuse a log whose task is not convbench's task of ``benchmark`` (the one its metadata names): another
    task, even one that carries convbench's metadata, asked other prompts or scored otherwise. inspect
    names the task ``convbench/NAME`` (or ``convbench_datasets/NAME``), or ``NAME`` alone for a task object or
    an editable install."""
    if task in (benchmark, *(f"{namespace}/{benchmark}" for namespace in NAMESPACES)):
        return
    if task.rpartition("/")[2] in MODULES and task.rpartition("/")[0] in ("", *NAMESPACES):
        raise ConvbenchError(f"{where}: a log of task {task!r}, but its convbench metadata names {benchmark!r}: the "
                             "log was edited or mixed up; import the log of the task as inspect wrote it")
    raise ConvbenchError(f"{where}: a log of task {task!r}, not of convbench's {benchmark} task (convbench/{benchmark}):"
                         " import-inspect reads logs of `inspect eval convbench/nc|nico|cocoeval` only")


def _read(path: str) -> EvalLog:
    if not Path(path).is_file():
        raise ConvbenchError(f"{path}: no such inspect log file")
    try:
        return read_eval_log(path)
    except Exception as err:  # inspect raises several kinds for a damaged or foreign file
        raise ConvbenchError(f"{path}: cannot read it as an inspect log ({type(err).__name__}: {err})") from None


def _in_dataset_order(samples: list[EvalSample], row_ids: Sequence[str] | None, where: str) -> list[EvalSample]:
    """The samples in the dataset's order (the task records it), so that the run's rows and fingerprint
    are those ``convbench run`` has for the same rows."""
    if not row_ids:
        return samples
    position = {str(sample_id): i for i, sample_id in enumerate(row_ids)}
    unknown = [str(s.id) for s in samples if str(s.id) not in position]
    if unknown:
        raise ConvbenchError(f"{where}: sample(s) {unknown[:5]} are not rows of the task's dataset")
    return sorted(samples, key=lambda s: position[str(s.id)])


def _limit(samples: list[EvalSample], settings: Mapping[str, Any], where: str, epoch: int) -> int | None:
    """The run's ``limit``: None for all the dataset's rows, N for its first N; any other choice of rows is refused.

    A run folder is a split (config) or its first N rows: that is what its ``limit``, ``rows`` and
    ``dataset_fingerprint`` say, and what ``convbench report`` and ``compare`` read them as.
    """
    ids = [str(s.id) for s in samples]  # in the dataset's order
    row_ids = [str(i) for i in settings.get("row_ids") or []]
    total = settings.get("rows")
    if not row_ids:  # a log that does not list the dataset's rows: only the whole dataset can be told
        if len(ids) == total:
            return None
        raise ConvbenchError(f"{where}: epoch {epoch} has {len(ids)} samples, but the dataset has {total} rows and "
                             "the log does not list them, so the rows imported cannot be checked; import a log "
                             "of the whole dataset")
    if ids == row_ids:
        return None
    expected = row_ids[: len(ids)]
    if ids == expected:
        return len(ids)
    wanted, imported = set(expected), set(ids)
    extra = [i for i in ids if i not in wanted]
    missing = [i for i in expected if i not in imported]
    raise ConvbenchError(
        f"{where}: epoch {epoch} holds {len(ids)} samples that are not the dataset's first {len(ids)} rows "
        f"(it has {_some(extra)}, which are not among them, and lacks {_some(missing)}); a run folder holds "
        f"all {len(row_ids)} rows or the first N: import a log of `inspect eval ... --limit N` without "
        "--sample-id, --sample-shuffle or a range limit")


def _some(ids: Sequence[str], shown: int = 5) -> str:
    """Up to ``shown`` ids, and how many more."""
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def _signature(eval_log: EvalLog, settings: Mapping[str, Any], samples: list[EvalSample], where: str,
               epoch: int, limit: int | None) -> dict[str, Any]:
    from ...engine.run_folder import dataset_fingerprint

    spec = eval_log.eval
    grader = (spec.model_roles or {}).get(GRADER_ROLE)
    if isinstance(grader, list):
        grader = grader[0]
    signature: dict[str, Any] = {
        "convbench_version": __version__, "benchmark": settings["benchmark"],
        **{key: value for key, value in settings.items() if key not in _NOT_SIGNATURE and key != "benchmark"},
        "limit": limit,
        "rows": len(samples), "dataset_rows": settings.get("rows"),
        "dataset_fingerprint": dataset_fingerprint([dict(s.metadata) for s in samples]),
        "model": spec.model,
        "model_identity": {"kind": "inspect", "model": spec.model, "base_url": _shown_url(spec.model_base_url)},
    }
    if "generation" not in settings:  # the model's decoding as the eval ran it (task config and --max-tokens etc.)
        config = eval_log.plan.config
        signature["generation"] = {"max_new_tokens": config.max_tokens, "temperature": config.temperature}
    if grader is not None:
        signature["judge"] = grader.model
        signature["judge_identity"] = {"kind": "inspect", "model": grader.model,
                                       "base_url": _shown_url(grader.base_url)}
    signature["harness"] = {
        "name": "inspect_ai", "version": spec.packages.get("inspect_ai"), "log": where, "eval_id": spec.eval_id,
        "task": spec.task, "task_args": spec.task_args, "epoch": epoch, "epochs": spec.config.epochs,
        "created": spec.created, "convbench_version_of_log": settings.get("convbench_version"),
    }
    return signature


def _shown_url(url: str | None) -> str | None:
    """A server URL as run folders keep it: without user-info or query (a key in it never reaches a file)."""
    return None if url is None else public_url(url)


def _stats(eval_log: EvalLog) -> dict[str, Any]:
    stats = eval_log.stats
    return {"created": eval_log.eval.created, "started_at": stats.started_at, "completed_at": stats.completed_at,
            "model_usage": {name: usage.model_dump(exclude_none=True) for name, usage in stats.model_usage.items()}}
