"""Which HTTP client the ``openai:`` backend is built on (aiohttp), beside httpx, httpx2 and the ``openai`` client.

Each client runs in a fresh Python process (whole-process: its imports count, as they do in every
``convbench run``) and POSTs the same N chat requests (default 1,440: an NC-Bench run's generation and
judge requests) at concurrency 128 to the test server (tests/support/openai_server.py, in its own
process) answering after 200 ms. Sides, in turn, round after round (a noisy machine slows all alike):

- ``httpx async``: one ``httpx.AsyncClient`` (connection pool) on one event loop, 128 tasks;
- ``httpx sync``: one ``httpx.Client`` shared by 128 threads;
- ``openai async``: ``openai.AsyncOpenAI(max_retries=0)``, ``chat.completions.create`` (its reply parsed
  into the client's pydantic models, as that client always does);
- ``aiohttp``: one ``ClientSession``, 128 tasks (the backend's client; also the reference of
  ``benchmarks/run_client_cost.py``).
- ``httpx2 async`` / ``httpx2 sync``: the same two with httpx2 (httpx's successor, which
  huggingface_hub, openai and anthropic are built on), when installed.

Measured (2-core machine, shared; median of 2 rounds): CPU seconds aiohttp 1.64, httpx2 4.07 (async) /
3.80 (sync), openai 10.0, httpx 33.1 (async) / 15.5 (sync): httpx 0.28's connection pool (httpcore 1.0)
checks every connection for every request, most of its time at 128 in flight.

Printed per side: the median wall seconds and CPU seconds of the whole process, then each side's CPU
and wall time as a ratio to aiohttp's (the client the backend is built on). The wall time is bounded
below by the server (1,440 / 128 x 0.2 s = 2.25 s); the CPU time is what a client costs, and what the
choice goes by.

Usage: python benchmarks/http_client_choice.py [--requests 1440] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONCURRENCY = 128
LATENCY = 0.2


def _httpx_async(url: str, bodies: list[bytes], module: str = "httpx") -> int:
    import asyncio
    import importlib

    httpx = importlib.import_module(module)

    async def run() -> int:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=CONCURRENCY)
        async with httpx.AsyncClient(limits=limits, timeout=120) as client:
            todo = iter(bodies)

            async def worker() -> int:
                done = 0
                for body in todo:
                    async with asyncio.timeout(120):
                        reply = await client.post(f"{url}/chat/completions", content=body,
                                                  headers={"Content-Type": "application/json"})
                    json.loads(reply.content)["choices"][0]["message"]["content"]
                    done += 1
                return done

            return sum(await asyncio.gather(*(worker() for _ in range(CONCURRENCY))))

    return asyncio.run(run())


def _httpx_sync(url: str, bodies: list[bytes], module: str = "httpx") -> int:
    import importlib
    from concurrent.futures import ThreadPoolExecutor

    httpx = importlib.import_module(module)

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=CONCURRENCY)
    with httpx.Client(limits=limits, timeout=120) as client:

        def post(body: bytes) -> str:
            reply = client.post(f"{url}/chat/completions", content=body, headers={"Content-Type": "application/json"})
            return json.loads(reply.content)["choices"][0]["message"]["content"]

        with ThreadPoolExecutor(CONCURRENCY) as pool:
            return len(list(pool.map(post, bodies)))


def _openai_async(url: str, bodies: list[bytes]) -> int:
    import asyncio

    import openai

    requests = [json.loads(b) for b in bodies]

    async def run() -> int:
        async with openai.AsyncOpenAI(base_url=url, api_key="none", max_retries=0, timeout=120) as client:
            todo = iter(requests)

            async def worker() -> int:
                done = 0
                for request in todo:
                    reply = await client.chat.completions.create(**request)
                    reply.choices[0].message.content  # noqa: B018
                    done += 1
                return done

            return sum(await asyncio.gather(*(worker() for _ in range(CONCURRENCY))))

    return asyncio.run(run())


def _aiohttp(url: str, bodies: list[bytes]) -> int:
    import asyncio

    import aiohttp

    async def run() -> int:
        connector = aiohttp.TCPConnector(limit=CONCURRENCY)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
            todo = iter(bodies)

            async def worker() -> int:
                done = 0
                for body in todo:
                    async with session.post(f"{url}/chat/completions", data=body,
                                            headers={"Content-Type": "application/json"}) as reply:
                        json.loads(await reply.read())["choices"][0]["message"]["content"]
                    done += 1
                return done

            return sum(await asyncio.gather(*(worker() for _ in range(CONCURRENCY))))

    return asyncio.run(run())


CLIENTS = {"httpx async": _httpx_async, "httpx sync": _httpx_sync,
           "httpx2 async": lambda url, bodies: _httpx_async(url, bodies, "httpx2"),
           "httpx2 sync": lambda url, bodies: _httpx_sync(url, bodies, "httpx2"),
           "openai async": _openai_async, "aiohttp": _aiohttp}


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name.split()[0]) is not None


def whole_process(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a fresh Python process running ``argv``, measured from outside (what it
    prints is dropped)."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1440)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--client", help=argparse.SUPPRESS)  # a child process: CLIENT URL BODIES
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        url, path = args.rest
        bodies = [b.encode("utf-8") for b in json.loads(Path(path).read_text(encoding="utf-8"))]
        answered = CLIENTS[args.client](url, bodies)
        assert answered == len(bodies), f"{args.client}: {answered} of {len(bodies)} answered"
        return

    from benchmarks.runner_overhead import _body, _judge_prompts, server_process

    sides = [name for name in CLIENTS if _installed(name)]
    work = Path(tempfile.mkdtemp(prefix="convbench-client-choice-"))
    bodies = work / "bodies.json"
    bodies.write_text(json.dumps([_body("delay", m).decode("utf-8") for m in _judge_prompts(args.requests)]),
                      encoding="utf-8")
    walls: dict[str, list[float]] = {name: [] for name in sides}
    cpus: dict[str, list[float]] = {name: [] for name in sides}
    with server_process(delay=LATENCY) as url:
        for round_ in range(args.rounds + 1):  # the first round warms up (disk cache, server threads)
            for name in sides:
                wall, cpu = whole_process([__file__, "--client", name, url, str(bodies)])
                if round_:
                    walls[name].append(wall)
                    cpus[name].append(cpu)
    wall = {name: statistics.median(v) for name, v in walls.items()}
    cpu = {name: statistics.median(v) for name, v in cpus.items()}
    print(f"{args.requests} chat requests, concurrency {CONCURRENCY}, {LATENCY * 1000:.0f} ms per request; whole "
          f"process, median of {args.rounds} rounds (at best {args.requests / CONCURRENCY * LATENCY:.2f} s of wall time):")
    base = "aiohttp" if "aiohttp" in sides else "httpx async"  # the backend's client, when installed
    print(f"  {'client':<14}{'wall s':>8}{'CPU s':>8}{'CPU / ' + base:>20}{'wall / ' + base:>20}")
    for name in sides:
        print(f"  {name:<14}{wall[name]:>8.2f}{cpu[name]:>8.2f}{cpu[name] / cpu[base]:>20.2f}"
              f"{wall[name] / wall[base]:>20.2f}")


if __name__ == "__main__":
    main()
