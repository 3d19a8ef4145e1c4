"""Time NC-Bench's build and cold load, and `import convbench_datasets`, beside reference libraries.

Machines here are noisy, so results are ratios measured in the same run:
- import: `import convbench_datasets` vs `import datasets` (target: convbench under 0.5 s absolute,
  and neither torch nor transformers imported);
- build: `convbench build nc` (validate, 3 configs to parquet, card) vs the plain datasets route
  (`load_dataset("json")` on the 3 files then `to_parquet`), both from the same mirror;
- cold load: `load_dataset(folder, config)` of all 4 configs with an empty datasets cache, vs
  `load_dataset("json")` of the raw files with an empty cache;
- warm load (issue #14): `convbench_datasets.load("nc", "basic", split="test")` once its copy is prepared
  (the parquet builder given the card's files and features, the card parsed once) vs what `load` did
  before, `load_dataset(folder, "basic", split="test")`, which parses the card's YAML on every call;
- run rows (issue #14): the rows a run reads, `built_rows.read_rows(folder, "all", "test")` (pyarrow,
  no `datasets` import) vs `load_dataset(folder, "all", split="test").to_list()`, each in a fresh
  Python process (interpreter start and imports included), and again warm in this process.

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

from timing import median_time  # benchmarks/timing.py (this folder is on sys.path when a script runs)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _import_seconds(module: str) -> float:
    code = f"import time, sys; t = time.perf_counter(); import {module}; print(time.perf_counter() - t); " \
           "print(int(any(m in sys.modules for m in ('torch', 'transformers'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    if module == "convbench_datasets" and out[1] == "1":
        raise SystemExit("FAIL: importing convbench_datasets imported torch or transformers")
    return float(out[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    # datasets' own cache (warm loads prepare a copy there) in a scratch folder, not the user's
    os.environ.setdefault("HF_DATASETS_CACHE", tempfile.mkdtemp(prefix="convbench-bench-hf-"))

    import datasets

    from convbench_datasets import build
    from convbench_datasets.nc.upstream import fetch_sources

    paths = fetch_sources(progress=False)
    raw = [str(paths[s]) for s in ("basic", "rag", "complex_request")]
    work = Path(tempfile.mkdtemp(prefix="convbench-bench-"))
    datasets.disable_progress_bars()

    ours_import = statistics.median(_import_seconds("convbench_datasets") for _ in range(args.repeat))
    ref_import = statistics.median(_import_seconds("datasets") for _ in range(args.repeat))

    ours_build = median_time(lambda: build("nc", work / "hub" / "nc", progress=False), args.repeat)[0]

    def reference_build() -> None:
        for i, path in enumerate(raw):
            ds = datasets.load_dataset("json", data_files=path, split="train", cache_dir=tempfile.mkdtemp(dir=work))
            ds.to_parquet(str(work / f"ref-{i}.parquet"))

    ref_build = median_time(reference_build, args.repeat)[0]

    def cold_load() -> None:
        cache = tempfile.mkdtemp(dir=work)
        for config in ("basic", "rag", "complex_request", "all"):
            datasets.load_dataset(str(work / "hub" / "nc"), config, split="test", cache_dir=cache)

    def reference_load() -> None:
        cache = tempfile.mkdtemp(dir=work)
        for path in raw:
            datasets.load_dataset("json", data_files=path, split="train", cache_dir=cache)

    ours_load = median_time(cold_load, args.repeat)[0]
    ref_load = median_time(reference_load, args.repeat)[0]

    from convbench_datasets import api, load
    from convbench_datasets.built_rows import read_rows

    cache = work / "convbench-cache"
    folder = api._cached_build("nc", None, cache)

    def load_before() -> None:  # load() before issue #14: the same cached build, read by load_dataset(folder)
        datasets.load_dataset(str(api._cached_build("nc", None, cache)), "basic", split="test")

    warm = 20 * args.repeat
    load("nc", "basic", split="test", cache_dir=cache)  # both copies prepared: what follows is warm
    load_before()
    ours_warm = median_time(lambda: load("nc", "basic", split="test", cache_dir=cache), warm)[0]
    ref_warm = median_time(load_before, warm)[0]
    if load("nc", "basic", split="test", cache_dir=cache).to_list() != \
            datasets.load_dataset(str(folder), "basic", split="test").to_list():
        raise SystemExit("FAIL: load() returned other rows than load_dataset(folder)")

    def fresh(code: str) -> None:
        subprocess.run([sys.executable, "-c", code], check=True)

    rows_code = f"from convbench_datasets.built_rows import read_rows; read_rows({str(folder)!r}, 'all', 'test')"
    ref_rows_code = ("import datasets; datasets.disable_progress_bars(); "
                     f"datasets.load_dataset({str(folder)!r}, 'all', split='test').to_list()")
    ours_rows = median_time(lambda: fresh(rows_code), args.repeat)[0]
    ref_rows = median_time(lambda: fresh(ref_rows_code), args.repeat)[0]
    if read_rows(folder, "all", "test") != datasets.load_dataset(str(folder), "all", split="test").to_list():
        raise SystemExit("FAIL: read_rows returned other rows than load_dataset(folder).to_list()")
    ours_rows_warm = median_time(lambda: read_rows(folder, "all", "test"), warm)[0]
    ref_rows_warm = median_time(lambda: datasets.load_dataset(str(folder), "all", split="test").to_list(), warm)[0]

    print(f"{'measure':<40}{'convbench':>12}{'reference':>12}{'ratio':>8}")
    for name, ours, ref in [
        ("import (vs import datasets)", ours_import, ref_import),
        ("build nc, 720 rows (vs json->parquet)", ours_build, ref_build),
        ("cold load 4 configs (vs raw json)", ours_load, ref_load),
        ("warm load nc basic (vs load before)", ours_warm, ref_warm),
        ("run rows, fresh process (vs datasets)", ours_rows, ref_rows),
        ("run rows, warm (vs datasets)", ours_rows_warm, ref_rows_warm),
    ]:
        print(f"{name:<40}{ours:>11.4f}s{ref:>11.4f}s{ours / ref:>8.2f}")
    verdict = "OK" if ours_import < 0.5 else "OVER TARGET"
    print(f"import convbench_datasets: {ours_import:.3f}s (target < 0.5 s): {verdict}")


if __name__ == "__main__":
    main()
