"""Runner overhead against local OpenAI-compatible servers (tests/support/openai_server.py, each in its own process).

At scale (issue #14, "Speed at scale"): N distinct judge prompts (default 2,000) at concurrency 128
against a server that takes 200 ms per request (model ``delay``), sent three ways in the same run,
round after round (interleaved, so that a noisy machine slows all of them alike): through convbench
(``OpenAICompatBackend`` driven by ``runner.stage.complete``, a fresh temporary response cache each
time, claims on, progress off), and by two plain clients doing the same POSTs and nothing else: a
pool of 128 urllib threads, and aiohttp (128 connections) when it is installed. Printed: requests per
second of each, per round, and the median ratio convbench/plain. Target: convbench >= 0.95x the
plain urllib client (0.87x when issue #14 was filed). The same with 2 replicas of the server
(``base_url`` a comma list: the endpoint pool; the plain clients take turns between the two). With
200 ms per request, 128 requests in flight can at best reach 640 requests per second (1,280 with two
replicas); what is left of that goes to the clients' and the servers' CPU, which they share on a
small machine. On a 2-core machine, medians of 5 rounds: before the fixes 0.80-0.91x (one server) and
0.75-0.80x (two); after them (no thread per request, one SQLite call per batch of answers) 0.96-0.98x.

Then, against an instant server:
- judge requests per second through the runner (cache writes, retries armed, progress off) at
  concurrency 1, 8 and 32, beside a bare sequential urllib loop posting the same requests (reference);
- re-running a finished 720-row NC-Bench run from the cache: target no model calls and under 5 s.

Usage: CONVBENCH_SOURCES=../shared/upstream python benchmarks/runner_overhead.py [--prompts 2000] [--rounds 3]
       [--scale-only]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = ROOT / "tests" / "support" / "openai_server.py"
CONCURRENCY = 128
LATENCY = 0.2  # seconds the server takes per request at scale
TARGET = 0.95  # convbench / plain urllib client, at scale


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


def _body(model: str, messages: list[dict]) -> bytes:
    """What convbench sends for these messages (GenerationParams(max_new_tokens=128))."""
    return json.dumps({"model": model, "messages": messages, "max_tokens": 128, "temperature": 0.0}).encode("utf-8")


def _bare_loop(url: str, prompts: list[list[dict]]) -> float:
    start = time.perf_counter()
    for messages in prompts:
        request = urllib.request.Request(f"{url}/chat/completions", data=_body("label", messages),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            json.loads(response.read())
    return time.perf_counter() - start


# --- at scale: convbench beside plain clients -------------------------------------------------------------

def plain_urllib(urls: Sequence[str], prompts: list[list[dict]], concurrency: int) -> float:
    """Seconds for a pool of ``concurrency`` urllib threads to POST every prompt (replicas taken in turn)
    and read each answer; nothing stored."""
    bodies = [_body("delay", m) for m in prompts]

    def post(i: int) -> str:
        request = urllib.request.Request(f"{urls[i % len(urls)]}/chat/completions", data=bodies[i],
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())["choices"][0]["message"]["content"]

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(post, range(len(prompts))))
    seconds = time.perf_counter() - start
    assert len(answers) == len(prompts)
    return seconds


def plain_aiohttp(urls: Sequence[str], prompts: list[list[dict]], concurrency: int) -> float:
    """The same with aiohttp: one session, at most ``concurrency`` connections (kept alive)."""
    import asyncio

    import aiohttp

    bodies = [_body("delay", m) for m in prompts]

    async def run() -> float:
        connector = aiohttp.TCPConnector(limit=concurrency)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            gate = asyncio.Semaphore(concurrency)

            async def post(i: int) -> str:
                async with gate:
                    async with session.post(f"{urls[i % len(urls)]}/chat/completions", data=bodies[i],
                                            headers={"Content-Type": "application/json"}) as response:
                        return json.loads(await response.read())["choices"][0]["message"]["content"]

            start = time.perf_counter()
            answers = await asyncio.gather(*(post(i) for i in range(len(prompts))))
            seconds = time.perf_counter() - start
            assert len(answers) == len(prompts)
            return seconds

    return asyncio.run(run())


def through_convbench(urls: Sequence[str], prompts: list[list[dict]], concurrency: int, cache_path: Path) -> float:
    """Seconds for ``stage.complete`` to answer every prompt through ``OpenAICompatBackend`` (a fresh cache,
    claims on, progress off): every answer stored as it arrives."""
    from convbench_datasets.engine.backends.base import GenerationParams
    from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
    from convbench_datasets.engine.cache import ResponseCache
    from convbench_datasets.engine.stage import complete

    backend = OpenAICompatBackend("delay", base_url=",".join(urls), concurrency=concurrency, model_id="bench")
    with ResponseCache(cache_path) as cache:
        start = time.perf_counter()
        result = complete(backend, prompts, GenerationParams(max_new_tokens=128), cache, desc="judge", progress=False)
        seconds = time.perf_counter() - start
    assert result.model_calls == len(prompts) and result.errors == 0, "convbench did not ask and answer every prompt"
    return seconds


def _has_aiohttp() -> bool:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def at_scale(n: int, rounds: int, replicas: int, work: Path) -> float:
    """Print one table (rounds interleaved) and return the median ratio convbench / plain urllib."""
    prompts = _judge_prompts(n)
    clients: dict[str, Callable[[list[str], list[list[dict]]], float]] = {
        "plain urllib": lambda urls, ps: plain_urllib(urls, ps, CONCURRENCY)}
    if _has_aiohttp():
        clients["plain aiohttp"] = lambda urls, ps: plain_aiohttp(urls, ps, CONCURRENCY)
    clients["convbench"] = lambda urls, ps: through_convbench(
        urls, ps, CONCURRENCY, Path(tempfile.mkdtemp(prefix="scale-", dir=work)) / "responses.sqlite")  # a fresh cache
    rates: dict[str, list[float]] = {name: [] for name in clients}
    with ExitStack() as stack:
        urls = [stack.enter_context(server_process(delay=LATENCY)) for _ in range(replicas)]
        for client in clients.values():  # warm up: imports, the servers' first threads
            client(urls, prompts[:CONCURRENCY])
        for _ in range(rounds):
            for name, client in clients.items():
                rates[name].append(n / client(urls, prompts))
    best = CONCURRENCY / LATENCY * replicas
    print(f"{n} distinct prompts, concurrency {CONCURRENCY}, {LATENCY * 1000:.0f} ms per request, {replicas} "
          f"server{'s' if replicas > 1 else ''} (at best {best:.0f} req/s); requests per second, round by round:")
    plain = rates["plain urllib"]
    for name, values in rates.items():
        ratios = [c / p for c, p in zip(rates["convbench"], values)]
        vs = f"   convbench/this: {statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.2f}' for r in ratios)})"
        print(f"  {name:<14}{'  '.join(f'{v:6.0f}' for v in values)}{'' if name == 'convbench' else vs}")
    ratio = statistics.median(c / p for c, p in zip(rates["convbench"], plain))
    verdict = "OK" if ratio >= TARGET else "UNDER TARGET"
    print(f"  convbench / plain urllib, median of {rounds} rounds: {ratio:.3f} (target >= {TARGET}): {verdict}")
    return ratio


# --- against an instant server ----------------------------------------------------------------------------

def overhead(work: Path) -> None:
    from convbench_datasets.engine.backends.base import GenerationParams
    from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
    from convbench_datasets.engine.cache import ResponseCache
    from convbench_datasets.engine.stage import complete

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


def rerun(work: Path) -> None:
    from convbench_datasets import run_nc

    with server_process() as url:
        options = {"base_url": url, "concurrency": 8}
        kwargs = dict(model="openai:echo", judge="openai:label", config="all", cache=work / "run.sqlite",
                      backend_options=options, progress=False)
        run_nc(out=work / "first", **kwargs)
        start = time.perf_counter()
        again = run_nc(out=work / "again", **kwargs)
        seconds = time.perf_counter() - start
        calls = again.stats["model_calls"] + again.stats["judge_calls"]
    verdict = "OK" if calls == 0 and seconds < 5 else "OVER TARGET"
    print(f"re-run of a finished 720-row run from cache: {seconds:.2f}s, {calls} model calls "
          f"(target: 0 calls, < 5 s): {verdict}; accuracy {again.results['accuracy']:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=2000, help="distinct prompts per client and round, at scale")
    parser.add_argument("--rounds", type=int, default=3, help="rounds at scale (each client once per round)")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2], help="server replicas to measure at scale")
    parser.add_argument("--scale-only", action="store_true", help="only the measurements at scale")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="convbench-runner-bench-"))
    for replicas in args.replicas:
        at_scale(args.prompts, args.rounds, replicas, work)
    if not args.scale_only:
        overhead(work)
        rerun(work)


if __name__ == "__main__":
    main()
