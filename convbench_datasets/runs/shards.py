"""Shards: one run split over several processes or machines (``--shard I/N``), joined again (``convbench merge``).

Which rows a shard runs: the rows the config, split and ``--limit`` select (the limit applies first: a
sharded ``--limit 100`` splits those 100 rows), taken by position, round robin: the row at position k
(counting from 0, in the dataset's order) goes to shard ``k mod N + 1``. Shards are numbered 1 to N;
every row is in exactly one shard, sizes differ by at most one, and each shard holds a spread of the
whole dataset (a dataset's rows are often grouped, by set and pattern say, so contiguous slices would not).

A shard folder is a run folder. Its signature is the whole run's (``rows`` and ``dataset_fingerprint``
describe every selected row, so they are equal across the shards and to an unsharded run's) plus
``shard``: ``index``, ``count``, ``rows`` (how many this folder holds), ``by`` (``"position"``) and
``row_ids_sha256`` (a hash of every selected row's id, in order). ``convbench score`` scores a shard
on its own.

:func:`merge_runs` joins the N shard folders of one run into a folder whose records are the unsharded
run's, in its order, and whose results are computed from them by ``convbench score``'s code, so they
equal an unsharded run's (the statistics, summed over the shards, aside). It refuses, naming the
folders or rows: a folder that is not a shard, shards of different runs (signatures that differ
outside ``shard``), a shard given twice or missing, rows in two shards, and rows that do not make up
the run's (their ids against ``row_ids_sha256``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..errors import ConvbenchError
from ..engine.run_folder import RunResult, check_complete, check_run_out, read_folder, row_id, run_folder, run_lock, write_folder
# the rows of a shard (the pipeline's part, kept importable from here)
from ..engine.shard_rows import row_ids_sha256

__all__ = ["merge_runs"]

# signature fields that may differ between the shards of one run: the shard itself, and the version
# that last re-scored a shard (`convbench score` adds it)
_SHARD_ONLY = ("shard", "scored_by")


def merge_runs(runs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], **limits: float) -> RunResult:
    """Join the shard folders ``runs`` (every shard of one run, in any order) into the run folder ``out``.

    ``out`` must be missing, empty or a run folder, and none of ``runs``. The merged records are the
    unsharded run's rows in its order; results come from :func:`convbench_datasets.runs.pipeline.score_run`
    (the code ``convbench score`` runs, with its checks: ``limits`` are its ``max_error_rate``,
    ``max_empty_rate`` and ``max_unparsed_rate``, so that shards which each failed them never merge into a
    run that passes); ``stats`` add up the shards' counts (``seconds`` is the sum of the shards' times, not a
    wall time), keep the earliest ``created`` and list ``merged_from``.
    """
    if not runs:
        raise ConvbenchError("convbench merge needs the shard folders of one run")
    target = Path(out)
    folders = [Path(run) for run in runs]
    for folder in folders:
        if folder.resolve() == target.resolve():
            raise ConvbenchError(f"--out {target} is one of the shards being merged; give another --out")
    check_run_out(target)
    seen: dict[Path, Path] = {}
    for folder in folders:
        if folder.resolve() in seen:
            raise ConvbenchError(f"{folder} is given twice (as {seen[folder.resolve()]} and {folder})")
        seen[folder.resolve()] = folder
    with ExitStack() as stack:
        shards = []
        for folder in folders:
            folder, records, results = read_folder(folder)
            stack.enter_context(run_lock(folder))  # no run may write a shard while it is read
            shard = (results.get("signature") or {}).get("shard")
            if not isinstance(shard, dict):
                raise ConvbenchError(f"{folder} is not a shard (its signature has no shard entry): convbench merge "
                                     "joins the folders of `convbench run ... --shard I/N`")
            check_complete(records, results, folder)
            shards.append((folder, records, results, shard))
        signature = _common_signature(shards)
        ordered = _check_shards(shards)
        merged = _interleave(ordered)
        expected = ordered[0][3]["row_ids_sha256"]
        if len(merged) != signature.get("rows") or row_ids_sha256([row_id(r) for r in merged]) != expected:
            raise ConvbenchError(f"the shards' {len(merged)} rows are not the {signature.get('rows')} rows of the run "
                                 f"their signature declares (row ids differ from row_ids_sha256 {expected[:12]}...): "
                                 "were records edited? Rerun the shards")
        stack.enter_context(run_folder(target))  # marked as a run folder before anything is written
        from ..registry import DEFAULT_RUN_BENCHMARK, get_benchmark

        # what re-scoring cannot recompute (a model's figure), joined from the shards by their benchmark
        carried = get_benchmark(signature.get("benchmark", DEFAULT_RUN_BENCHMARK)).carried(
            [results for _, _, results, _ in ordered], signature)
        results = {"signature": signature, "stats": _merged_stats(ordered),
                   "row_ids": [row_id(r) for r in merged], **carried}
        write_folder(target, merged, results)
    from .pipeline import score_run  # each benchmark's re-scoring, as `convbench score` does

    return score_run(target, **limits)


def _add_counts(totals: dict[str, Any], counts: dict[str, Any]) -> None:
    """Add the numbers of ``counts`` into ``totals``, mappings key by key (other values are not counts: left out)."""
    for key, value in counts.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            totals[key] = totals.get(key, 0) + value
        elif isinstance(value, dict) and isinstance(totals.setdefault(key, {}), dict):
            _add_counts(totals[key], value)
            if not totals[key]:  # no number in it
                del totals[key]


def _common_signature(shards: list[tuple[Path, list[dict[str, Any]], dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """The signature every shard shares outside ``shard`` (the merged run's), or an error naming the
    first two folders that differ and the fields they differ in."""
    def common(results: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in (results.get("signature") or {}).items() if k not in _SHARD_ONLY}

    first_folder, _, first_results, _ = shards[0]
    reference = common(first_results)
    for folder, _, results, _ in shards[1:]:
        other = common(results)
        if other != reference:
            fields = sorted(k for k in set(reference) | set(other) if reference.get(k) != other.get(k))
            raise ConvbenchError(f"{first_folder} and {folder} are not shards of one run: their signatures differ in "
                                 f"{', '.join(fields)}")
    return reference


def _check_shards(shards: list[tuple[Path, list[dict[str, Any]], dict[str, Any], dict[str, Any]]]
                  ) -> list[tuple[Path, list[dict[str, Any]], dict[str, Any], dict[str, Any]]]:
    """The shards in index order, after refusing mixed counts, a shard given twice, missing shards and
    rows in more than one shard (each error names the shards, folders or rows)."""
    counts = {shard.get("count") for *_, shard in shards}
    if len(counts) != 1:
        listing = ", ".join(f"{folder} ({shard.get('index')}/{shard.get('count')})" for folder, *_, shard in shards)
        raise ConvbenchError(f"the shards were cut {len(counts)} ways: {listing}; merge the shards of one --shard I/N split")
    (count,) = counts
    by_index: dict[Any, list[Path]] = {}
    for folder, *_, shard in shards:
        by_index.setdefault(shard.get("index"), []).append(folder)
    twice = {index: found for index, found in by_index.items() if len(found) > 1}
    if twice:
        raise ConvbenchError("; ".join(f"shard {index}/{count} is given more than once ({', '.join(map(str, found))})"
                                       for index, found in sorted(twice.items())))
    missing = [index for index in range(1, count + 1) if index not in by_index]
    if missing:
        have = ", ".join(f"{index}/{count} in {found[0]}" for index, found in sorted(by_index.items()))
        raise ConvbenchError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} "
                             f"missing (given: {have}); merge every shard of the run")
    owner: dict[str, Path] = {}
    overlap: list[str] = []
    for folder, records, *_ in shards:
        for record in records:
            rid = row_id(record)
            if rid in owner:
                overlap.append(f"{rid} ({owner[rid]}, {folder})")
            owner[rid] = folder
    if overlap:
        more = f" and {len(overlap) - 5} more" if len(overlap) > 5 else ""
        raise ConvbenchError(f"rows in more than one shard: {', '.join(overlap[:5])}{more}; were records edited? "
                             "Rerun the shards")
    return sorted(shards, key=lambda entry: entry[3]["index"])


def _interleave(ordered: list[tuple[Path, list[dict[str, Any]], dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """The records back in the run's order: position k comes from shard ``k mod N + 1`` (round robin)."""
    queues = [list(records) for _, records, *_ in ordered]
    merged = []
    position = 0
    while any(queues):
        queue = queues[position % len(queues)]
        if not queue:  # a shard ran out early: the rows do not follow the round robin (caught by the row-id check)
            break
        merged.append(queue.pop(0))
        position += 1
    return merged + [record for queue in queues for record in queue]


def _merged_stats(ordered: list[tuple[Path, list[dict[str, Any]], dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """Counts summed over the shards (nested counts per key, at any depth: ``empty_answers`` per role), the
    earliest ``created``, and the folders."""
    merged: dict[str, Any] = {}
    for _, _, results, _ in ordered:
        _add_counts(merged, results.get("stats") or {})
    if "seconds" in merged:
        merged["seconds"] = round(merged["seconds"], 3)
    created = [r.get("stats", {}).get("created") for _, _, r, _ in ordered]
    if all(isinstance(c, str) for c in created):
        merged["created"] = min(created)
    merged["merged_from"] = [str(folder) for folder, *_ in ordered]
    return merged
