"""Pipelined stages: generation and judging side by side vs one after the other (issue #14).

A 200 ms generator and a 200 ms judge, each on its own local OpenAI-compatible server
(tests/support/openai_server.py, model ``delay``), ``run_nc`` over the 720 NC-Bench rows (config
``all``), once with ``pipelined=False`` (all generation, then all judging: the judge server idles
during generation) and once pipelined (the judge starts on each row as its answer is stored), each
with a fresh cache. ``--concurrency`` is each backend's own (each server has at most that many in flight),
and the run's total is twice it, so the pipelined stages are not held back by the run-wide limit; a third
run, pipelined with the total equal to one backend's concurrency (as ``convbench run --concurrency N``
gives), shows what sharing the limit costs. Printed: the wall times and the pipelined/sequential ratio
(target <= 0.6);
the two runs' records and results (statistics aside; the servers named by --model-id, as their ports
differ) must be identical.

Usage: CONVBENCH_SOURCES=../shared/upstream python benchmarks/pipelined_stages.py [--rows 720] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=720, help="NC-Bench rows (config all has 720)")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight per server")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds each server takes per request")
    args = parser.parse_args()

    from convbench_datasets import run_nc
    from tests.support.openai_server import ServerState, openai_server

    work = Path(tempfile.mkdtemp(prefix="convbench-pipelined-"))
    print(f"{args.rows} NC-Bench rows, generator and judge on separate local servers, {args.delay * 1000:.0f} ms per "
          f"request each, concurrency {args.concurrency} per server")
    runs, seconds = {}, {}
    both = 2 * args.concurrency
    for label, pipelined, total in (("sequential", False, both), ("pipelined", True, both),
                                    ("shared", True, args.concurrency)):
        with openai_server(ServerState(delay_seconds=args.delay)) as (gen_url, _), \
                openai_server(ServerState(delay_seconds=args.delay)) as (judge_url, _):
            start = time.perf_counter()
            runs[label] = run_nc(model="openai:delay", judge="openai:delay", out=work / label, config="all",
                                 limit=args.rows, cache=work / f"{label}.sqlite", progress=False, pipelined=pipelined,
                                 concurrency=total,
                                 backend_options={"base_url": gen_url, "concurrency": args.concurrency, "model_id": "gen"},
                                 judge_options={"base_url": judge_url, "concurrency": args.concurrency,
                                               "model_id": "judge"})
            seconds[label] = time.perf_counter() - start
        stats = runs[label].stats
        print(f"  {label:<10} total {total:>4} in flight  {seconds[label]:6.2f} s  model calls {stats['model_calls']}  "
              f"judge calls {stats['judge_calls']}")
    drop = ("stats",)
    same_records = runs["pipelined"].records == runs["sequential"].records
    same_results = ({k: v for k, v in runs["pipelined"].results.items() if k not in drop}
                    == {k: v for k, v in runs["sequential"].results.items() if k not in drop})
    print(f"pipelined/sequential wall time: {seconds['pipelined'] / seconds['sequential']:.2f} (target <= 0.6); "
          f"identical records: {same_records}, identical results: {same_results}")
    print(f"pipelined, total {args.concurrency} shared by both stages / sequential: "
          f"{seconds['shared'] / seconds['sequential']:.2f}")
    assert same_records and same_results, "pipelined and sequential runs differ"


if __name__ == "__main__":
    main()
