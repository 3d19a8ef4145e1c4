"""Pipeline overhead against an instant local OpenAI-compatible server (tests/support/openai_server.py, in its own process).

- judge requests per second through the runner (cache writes, retries armed, progress off) at
  concurrency 1, 8 and 32, beside a bare sequential urllib loop posting the same requests (reference);
- re-running a finished 720-row NC-Bench run from the cache: target no model calls and under 5 s.

Usage: CONVBENCH_SOURCES=../shared/upstream python benchmarks/runner_overhead.py
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = ROOT / "tests" / "support" / "openai_server.py"


@contextmanager
def server_process(delay: float = 0.0) -> Iterator[str]:
    """The test server in its own process, so it does not share the client's interpreter lock."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(SERVER), str(port), str(delay)])
    try:
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait()


def _judge_prompts(n: int) -> list[list[dict]]:
    from convbench_datasets.nc.judge_prompt import judge_messages
    from convbench_datasets.nc.patterns import pattern_table

    tasks = pattern_table().tasks
    rows = []
    for i in range(n):
        entry = tasks[i % len(tasks)]
        row = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"Question {i}?"}],
               "label_set": list(entry.label_set), "request_details": "size and milk"}
        rows.append(judge_messages(row, f"Answer number {i}.", template="convbench"))
    return rows


def _bare_loop(url: str, prompts: list[list[dict]]) -> float:
    start = time.perf_counter()
    for messages in prompts:
        body = json.dumps({"model": "label", "messages": messages, "max_tokens": 128, "temperature": 0}).encode()
        request = urllib.request.Request(f"{url}/chat/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            json.loads(response.read())
    return time.perf_counter() - start


def main() -> None:
    from convbench_datasets import run_nc
    from convbench_datasets.runner import GenerationParams, ResponseCache
    from convbench_datasets.runner.backends.openai_compat import OpenAICompatBackend
    from convbench_datasets.runner.stage import complete

    work = Path(tempfile.mkdtemp(prefix="convbench-runner-bench-"))
    prompts = _judge_prompts(720)
    with server_process() as url:
        reference = _bare_loop(url, prompts)
        print(f"{'path':<38}{'seconds':>9}{'req/s':>9}{'vs bare loop':>14}")
        print(f"{'bare urllib loop, sequential':<38}{reference:>9.2f}{720 / reference:>9.0f}{1.0:>14.2f}")
        for concurrency in (1, 8, 32):
            backend = OpenAICompatBackend(f"label:c{concurrency}", base_url=url, concurrency=concurrency)
            with ResponseCache(work / f"c{concurrency}.sqlite") as cache:
                start = time.perf_counter()
                complete(backend, prompts, GenerationParams(max_new_tokens=128), cache, desc="judge", progress=False)
                seconds = time.perf_counter() - start
            print(f"{'runner, concurrency ' + str(concurrency):<38}{seconds:>9.2f}{720 / seconds:>9.0f}{seconds / reference:>14.2f}")

    # With an instant server there is no waiting to overlap, so threads only add overhead; with
    # latency (every real model server) concurrency is what buys throughput.
    with server_process(delay=0.02) as url:
        print("same, with 20 ms of server latency per request ('delay' model):")
        for concurrency in (1, 8, 32):
            backend = OpenAICompatBackend("delay", base_url=url, concurrency=concurrency)
            with ResponseCache(work / f"d{concurrency}.sqlite") as cache:
                start = time.perf_counter()
                complete(backend, prompts[:240], GenerationParams(max_new_tokens=128), cache, desc="judge", progress=False)
                seconds = time.perf_counter() - start
            print(f"{'runner, concurrency ' + str(concurrency):<38}{seconds:>9.2f}{240 / seconds:>9.0f}")

    with server_process() as url:
        options = {"base_url": url, "concurrency": 8}
        kwargs = dict(model="openai:echo", judge="openai:label", config="all", cache=work / "run.sqlite",
                      backend_options=options, progress=False)
        run_nc(out=work / "first", **kwargs)
        start = time.perf_counter()
        rerun = run_nc(out=work / "again", **kwargs)
        seconds = time.perf_counter() - start
        calls = rerun.stats["model_calls"] + rerun.stats["judge_calls"]
    verdict = "OK" if calls == 0 and seconds < 5 else "OVER TARGET"
    print(f"re-run of a finished 720-row run from cache: {seconds:.2f}s, {calls} model calls "
          f"(target: 0 calls, < 5 s): {verdict}; accuracy {rerun.results['accuracy']:.1f}")


if __name__ == "__main__":
    main()
