"""Processes sharing one response cache: duplicate requests with and without claims (issue #14).

4 processes start one judge stage at the same moment (a barrier), each on the same 720 NC-Bench judge
prompts (the released judge prompt over the repeat baseline's answers), all on one cache file, against
one local OpenAI-compatible server (tests/support/openai_server.py, 50 ms per request, counting every
request). Printed: requests, distinct prompts and duplicate requests (target 0 with claims), beside
the unclaimed behaviour (``complete(..., claim=False)``: every process asks every uncached prompt), and
the wall time of each.

Usage: CONVBENCH_SOURCES=../shared/upstream python benchmarks/shared_cache.py [--processes 4] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def nc_judge_prompts() -> list[list[dict[str, str]]]:
    """The judge prompts of a `convbench run nc --model baseline:repeat` run: 720 rows, released template."""
    from convbench_datasets.api import load
    from convbench_datasets.nc.judge_prompt import judge_messages, resolve_template
    from convbench_datasets.engine.backends.baseline import previous_assistant_turn

    template = resolve_template("released")
    rows = load("nc", "all", split="test").to_list()
    return [judge_messages(row, previous_assistant_turn(row["messages"]), template=template) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight per process")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the server takes per request")
    args = parser.parse_args()

    from tests.support.claim_worker import run_workers
    from tests.support.openai_server import ServerState, openai_server

    prompts = nc_judge_prompts()
    distinct = len({repr(p) for p in prompts})
    work = Path(tempfile.mkdtemp(prefix="convbench-shared-cache-"))
    print(f"{args.processes} processes x {len(prompts)} NC-Bench judge prompts ({distinct} distinct), one cache, "
          f"server {args.delay * 1000:.0f} ms per request, concurrency {args.concurrency} per process")
    for label, claim in (("unclaimed (before #14)", False), ("with claims", True)):
        with openai_server(ServerState(delay_seconds=args.delay)) as (url, state):
            start = time.perf_counter()
            summaries = run_workers(args.processes, str(work / f"{'claims' if claim else 'plain'}.sqlite"), url, "delay",
                                    prompts, concurrency=args.concurrency, claim=claim)
            seconds = time.perf_counter() - start
            requests, asked = state.count(), len(state.seen)
        same = all(s["texts"] == summaries[0]["texts"] for s in summaries)
        print(f"  {label:<24} requests {requests:5d}  distinct {asked:4d}  duplicate requests {requests - asked:5d}  "
              f"per-process model calls {sorted(s['model_calls'] for s in summaries)}  "
              f"same answers in every process: {same}  wall {seconds:.1f}s")


if __name__ == "__main__":
    main()
