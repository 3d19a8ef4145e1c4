"""Time NC-Bench's build and cold load, and `import convbench_datasets`, beside reference libraries.

Machines here are noisy, so results are ratios measured in the same run:
- import: `import convbench_datasets` vs `import datasets` (target: convbench under 0.5 s absolute,
  and neither torch nor transformers imported);
- build: `convbench build nc` (validate, 3 configs to parquet, card) vs the plain datasets route
  (`load_dataset("json")` on the 3 files then `to_parquet`), both from the same mirror;
- cold load: `load_dataset(folder, config)` of all 4 configs with an empty datasets cache, vs
  `load_dataset("json")` of the raw files with an empty cache.

Usage: CONVBENCH_SOURCES=../shared/upstream python benchmarks/nc_build_load.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _import_seconds(module: str) -> float:
    code = f"import time, sys; t = time.perf_counter(); import {module}; print(time.perf_counter() - t); " \
           "print(int(any(m in sys.modules for m in ('torch', 'transformers'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    if module == "convbench_datasets" and out[1] == "1":
        raise SystemExit("FAIL: importing convbench_datasets imported torch or transformers")
    return float(out[0])


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import datasets

    from convbench_datasets import build
    from convbench_datasets.nc.upstream import fetch_sources

    paths = fetch_sources(progress=False)
    raw = [str(paths[s]) for s in ("basic", "rag", "complex_request")]
    work = Path(tempfile.mkdtemp(prefix="convbench-bench-"))
    datasets.disable_progress_bars()

    ours_import = statistics.median(_import_seconds("convbench_datasets") for _ in range(args.repeat))
    ref_import = statistics.median(_import_seconds("datasets") for _ in range(args.repeat))

    ours_build = _median(lambda: build("nc", work / "hub" / "nc", progress=False), args.repeat)

    def reference_build() -> None:
        for i, path in enumerate(raw):
            ds = datasets.load_dataset("json", data_files=path, split="train", cache_dir=tempfile.mkdtemp(dir=work))
            ds.to_parquet(str(work / f"ref-{i}.parquet"))

    ref_build = _median(reference_build, args.repeat)

    def cold_load() -> None:
        cache = tempfile.mkdtemp(dir=work)
        for config in ("basic", "rag", "complex_request", "all"):
            datasets.load_dataset(str(work / "hub" / "nc"), config, split="test", cache_dir=cache)

    def reference_load() -> None:
        cache = tempfile.mkdtemp(dir=work)
        for path in raw:
            datasets.load_dataset("json", data_files=path, split="train", cache_dir=cache)

    ours_load = _median(cold_load, args.repeat)
    ref_load = _median(reference_load, args.repeat)

    print(f"{'measure':<40}{'convbench':>12}{'reference':>12}{'ratio':>8}")
    for name, ours, ref in [
        ("import (vs import datasets)", ours_import, ref_import),
        ("build nc, 720 rows (vs json->parquet)", ours_build, ref_build),
        ("cold load 4 configs (vs raw json)", ours_load, ref_load),
    ]:
        print(f"{name:<40}{ours:>11.3f}s{ref:>11.3f}s{ours / ref:>8.2f}")
    verdict = "OK" if ours_import < 0.5 else "OVER TARGET"
    print(f"import convbench_datasets: {ours_import:.3f}s (target < 0.5 s): {verdict}")


if __name__ == "__main__":
    main()
