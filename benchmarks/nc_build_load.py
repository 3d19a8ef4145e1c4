"""Time NC-Bench's build and cold load, and `import convbench_datasets`, beside reference libraries.

Machines here are noisy, so results are ratios measured in the same run:
- import: `import convbench_datasets` vs `import datasets`, each in a fresh process (target: convbench
  under 0.5 s of CPU, and neither torch nor transformers imported; judged by CPU time, as a loaded
  machine's wall clock also counts the wait for a core);
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

Each pair runs interleaved, round after round, in one process; CPU time (with that of the fresh
processes) and wall time are printed for both, ratios convbench / reference.

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
from typing import Any

from timing import Timing, interleaved, verdict  # benchmarks/timing.py (this folder is on sys.path)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _import_times(module: str) -> tuple[float, float]:
    """(wall, CPU) seconds of importing ``module`` in a fresh process, measured inside it."""
    code = (f"import time, sys; w, c = time.perf_counter(), time.process_time(); import {module}; "
            "print(time.perf_counter() - w, time.process_time() - c); "
            "print(int(any(m in sys.modules for m in ('torch', 'transformers'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    if module == "convbench_datasets" and out[2] == "1":
        raise SystemExit("FAIL: importing convbench_datasets imported torch or transformers")
    return float(out[0]), float(out[1])


def _import_timing(module: str, repeat: int) -> Timing:
    times = [_import_times(module) for _ in range(repeat)]
    return Timing(statistics.median(w for w, _ in times), statistics.median(c for _, c in times))


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

    measured: dict[str, tuple[Timing, Timing]] = {}
    measured["import (vs import datasets)"] = (_import_timing("convbench_datasets", args.repeat),
                                               _import_timing("datasets", args.repeat))

    def reference_build() -> None:
        for i, path in enumerate(raw):
            ds = datasets.load_dataset("json", data_files=path, split="train", cache_dir=tempfile.mkdtemp(dir=work))
            ds.to_parquet(str(work / f"ref-{i}.parquet"))

    def cold_load() -> None:
        cache = tempfile.mkdtemp(dir=work)
        for config in ("basic", "rag", "complex_request", "all"):
            datasets.load_dataset(str(work / "hub" / "nc"), config, split="test", cache_dir=cache)

    def reference_load() -> None:
        cache = tempfile.mkdtemp(dir=work)
        for path in raw:
            datasets.load_dataset("json", data_files=path, split="train", cache_dir=cache)

    measured["build nc, 720 rows (vs json->parquet)"] = _pair(
        lambda: build("nc", work / "hub" / "nc", progress=False), reference_build, args.repeat)
    measured["cold load 4 configs (vs raw json)"] = _pair(cold_load, reference_load, args.repeat)

    from convbench_datasets import api, load
    from convbench_datasets.built_rows import read_rows

    cache = work / "convbench-cache"
    folder = api._cached_build("nc", None, cache)

    def load_before() -> None:  # load() before issue #14: the same cached build, read by load_dataset(folder)
        datasets.load_dataset(str(api._cached_build("nc", None, cache)), "basic", split="test")

    warm = 20 * args.repeat
    load("nc", "basic", split="test", cache_dir=cache)  # both copies prepared: what follows is warm
    load_before()
    measured["warm load nc basic (vs load before)"] = _pair(
        lambda: load("nc", "basic", split="test", cache_dir=cache), load_before, warm)
    if load("nc", "basic", split="test", cache_dir=cache).to_list() != \
            datasets.load_dataset(str(folder), "basic", split="test").to_list():
        raise SystemExit("FAIL: load() returned other rows than load_dataset(folder)")

    def fresh(code: str) -> None:
        subprocess.run([sys.executable, "-c", code], check=True)

    rows_code = f"from convbench_datasets.built_rows import read_rows; read_rows({str(folder)!r}, 'all', 'test')"
    ref_rows_code = ("import datasets; datasets.disable_progress_bars(); "
                     f"datasets.load_dataset({str(folder)!r}, 'all', split='test').to_list()")
    measured["run rows, fresh process (vs datasets)"] = _pair(lambda: fresh(rows_code), lambda: fresh(ref_rows_code),
                                                              args.repeat)
    if read_rows(folder, "all", "test") != datasets.load_dataset(str(folder), "all", split="test").to_list():
        raise SystemExit("FAIL: read_rows returned other rows than load_dataset(folder).to_list()")
    measured["run rows, warm (vs datasets)"] = _pair(
        lambda: read_rows(folder, "all", "test"),
        lambda: datasets.load_dataset(str(folder), "all", split="test").to_list(), warm)

    print(f"{'measure':<40}{'convbench CPU':>14}{'wall':>9}{'reference CPU':>15}{'wall':>9}{'ratio CPU':>11}{'wall':>7}")
    for name, (ours, ref) in measured.items():
        print(f"{name:<40}{ours.cpu:>13.4f}s{ours.wall:>8.4f}s{ref.cpu:>14.4f}s{ref.wall:>8.4f}s"
              f"{ours.cpu / ref.cpu:>11.2f}{ours.wall / ref.wall:>7.2f}")
    ours_import = measured["import (vs import datasets)"][0]
    print(f"import convbench_datasets: {ours_import.cpu:.3f} s CPU ({ours_import.wall:.3f} s wall); target <= 0.5 s CPU: "
          f"{verdict(ours_import.cpu, 0.5, at_most=True)}")


def _pair(ours: Any, reference: Any, repeat: int) -> tuple[Timing, Timing]:
    timings, _ = interleaved({"ours": ours, "reference": reference}, repeat)
    return timings["ours"], timings["reference"]


if __name__ == "__main__":
    main()
