"""NC-Bench action scoring (issue #23): score_actions beside the released aggregator's way, a plain loop and evaluate.

At 7,200, 72,000 and 720,000 judge answers (the 720 rows x 10, 100, 1,000 random answers), all sides in
one process, interleaved round after round, on the same inputs (one fresh list of acceptable labels
per answer, as a dataset column gives them):

- pandas: the released aggregator.py's method (github.com/IBM/nc-bench; pandas 2 or later): a
  DataFrame, ``iterrows`` and ``df.at`` per row, then a boolean mask per set and task. It is given the
  same acceptable labels (the script assigns them from the task name). Target: score_actions, with
  its per-pattern, per-set, per-task and failure tables, >= 10x faster at every size;
- plain loop: the rule and nothing else, one Python loop giving each row's pass (no input checks, no
  tables): the floor. The exact reading's loop is the released rule's; the lenient one's calls
  convbench's lenient parser per row. Target: score_actions within 2x of it, both readings;
- growth: CPU time per answer from 72,000 to 720,000 answers, both readings. Target: within 1.3x
  (linear: one pass over the rows, the parsing done once per distinct judge answer);
- evaluate: ``evaluate.load("metrics/ncbench_action").compute`` on the same inputs. Targets: within
  1.5x of the direct call; its peak memory (resident set above the process's own before the call, each
  path in a fresh process that has imported and loaded the same things) within 2x of the direct call's.

Outputs are checked identical before any ratio is printed: each row's pass (score_actions' rows, the
plain loops', the pandas frame's score column), the per-task accuracies against the pandas tables,
and the evaluate module's result against the direct one. Verdicts go by CPU time (wall time beside it):
a loaded machine's wall clock also counts the wait for a core.

Usage: python benchmarks/ncbench_action_scoring.py [--answers-per-row 10 100 1000] [--repeat 3] [--no-memory]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from timing import Timing, interleaved, verdict  # benchmarks/timing.py (this folder is on sys.path)

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
ROW_KEYS = ("passes", "labels", "unparsed_rows")  # what return_rows adds


def inputs(per_row: int, seed: int = 0) -> dict[str, list[Any]]:
    """Random judge answers (1-3 labels of the row's label set, 2% prose) for the 720 rows, per_row times."""
    from convbench_datasets.nc.patterns import pattern_table

    rows = [e for e in pattern_table().tasks for _ in range(e.rows)]
    rng = random.Random(seed)
    answers = []
    for _ in range(per_row):
        for e in rows:
            labels = rng.sample(list(e.label_set), k=rng.randint(1, 3))
            answers.append(rng.choice([", ", "\n"]).join(labels) if rng.random() > 0.02 else "no idea")
    return {"predictions": answers, "references": [list(e.acceptable_labels) for _ in range(per_row) for e in rows],
            "patterns": [e.pattern for e in rows] * per_row, "sets": [e.set for e in rows] * per_row,
            "tasks": [e.task for e in rows] * per_row}


def released_style(data: dict[str, list[Any]]) -> tuple[list[int], dict[tuple[str, str], tuple[int, int]]]:
    """aggregator.py's evaluate_model and aggregate_results: (each row's score, {(set, task): (passed, rows)})."""
    import pandas as pd

    df = pd.DataFrame({"output": data["predictions"], "acceptable_answers": data["references"],
                       "task": data["tasks"], "set": data["sets"]})
    warnings.filterwarnings("ignore", message="Setting a value on a DataFrame via .at")  # the script's df.at on a new column
    for index, row in df.iterrows():
        answers = row["output"] if isinstance(row["output"], str) else ""
        answers_split = list(set([ans.strip() for ans in answers.replace("\n", ",").split(",") if ans]))
        if "Silence" in row["acceptable_answers"] or "NonVerbal" in row["acceptable_answers"]:
            if "Silence" in answers_split or "NonVerbal" in answers_split:
                df.at[index, "score"] = int(len(answers_split) == 1)
            else:
                df.at[index, "score"] = int(any(ans in row["acceptable_answers"] for ans in answers_split))
        else:
            df.at[index, "score"] = int(any(ans in row["acceptable_answers"] for ans in answers_split))
    result = {}
    for set_name in df["set"].unique():  # the released script runs once per set's file
        set_df = df[df["set"] == set_name]
        for task in set_df["task"].unique():
            task_df = set_df[set_df["task"] == task]
            result[(set_name, task)] = (int(task_df["score"].sum()), len(task_df))
    return [int(s) for s in df["score"]], result


def plain_exact(answers: list[str], references: list[list[str]]) -> list[bool]:
    """The released rule as a bare loop: split, strip, set, the sole-label clause."""
    passes = []
    for answer, accepted in zip(answers, references):
        labels = {p.strip() for p in answer.replace("\n", ",").split(",") if p}
        if ("Silence" in accepted or "NonVerbal" in accepted) and ("Silence" in labels or "NonVerbal" in labels):
            passes.append(len(labels) == 1)
        else:
            passes.append(any(label in accepted for label in labels))
    return passes


def plain_lenient(answers: list[str], references: list[list[str]]) -> list[bool]:
    """The lenient reading as a bare loop: convbench's parser and pass rule on every row."""
    from convbench_datasets.nc.judge_output import parse_judge_output
    from convbench_datasets.nc.ncbench_action import judgement_passes

    return [judgement_passes(parse_judge_output(a), r) for a, r in zip(answers, references)]


def check_identical(data: dict[str, list[Any]], results: dict[str, Any]) -> None:
    """Every side's rows and tables against score_actions' (row-level call made here, untimed)."""
    from convbench_datasets.nc.ncbench_action import score_actions

    for parsing, plain in (("exact", "plain exact"), ("lenient", "plain lenient")):
        rows = score_actions(**data, parsing=parsing, return_rows=True)
        assert {k: v for k, v in rows.items() if k not in ROW_KEYS} == results[parsing], f"{parsing}: return_rows changed the tables"
        assert rows["passes"] == results[plain], f"{parsing}: score_actions and the plain loop disagree"
        if parsing == "exact":
            scores, tables = results["pandas"]
            assert scores == [int(p) for p in rows["passes"]], "score_actions and the pandas aggregator disagree"
            for (set_name, task), (passed, n) in tables.items():
                assert results["exact"]["per_task"][set_name][task] == 100.0 * passed / n, (set_name, task)
    assert results["evaluate"] == results["exact"], "the evaluate module and the direct call disagree"


def _ratio(name: str, ours: Timing, other: Timing, target: float, at_most: bool) -> None:
    """One comparison: ours against another side as a CPU ratio (wall beside it), and its verdict."""
    if at_most:  # "within Nx of": our time over theirs
        cpu, wall, goal = ours.cpu / other.cpu, ours.wall / other.wall, f"<= {target:g}x its time"
    else:  # "N times faster": their time over ours
        cpu, wall, goal = other.cpu / ours.cpu, other.wall / ours.wall, f">= {target:g}x faster"
    print(f"  {name:<52}{cpu:>7.2f}x CPU ({wall:.2f}x wall)  target {goal}: {verdict(cpu, target, at_most=at_most)}")


def compare(per_row: int, repeat: int, metric: Any) -> dict[str, Timing]:
    from convbench_datasets.nc.ncbench_action import score_actions

    data = inputs(per_row)
    answers, references = data["predictions"], data["references"]
    rounds = max(1, 3 * repeat if per_row <= 10 else repeat if per_row < 1000 else min(repeat, 3))  # short calls: more
    timings, results = interleaved({
        "pandas": lambda: released_style(data),
        "plain exact": lambda: plain_exact(answers, references),
        "exact": lambda: score_actions(**data),
        "plain lenient": lambda: plain_lenient(answers, references),
        "lenient": lambda: score_actions(**data, parsing="lenient"),
        "evaluate": lambda: metric.compute(**data),
    }, rounds)
    check_identical(data, results)
    n = len(answers)
    print(f"\n{n:,} judge answers (720 rows x {per_row}), {rounds} interleaved rounds; outputs identical; "
          f"accuracy {results['exact']['accuracy']:.2f} (exact), {results['lenient']['accuracy']:.2f} (lenient)")
    for name, t in timings.items():
        print(f"  {name:<16}{t.cpu:>9.3f}s CPU{t.wall:>9.3f}s wall{1e6 * t.cpu / n:>9.2f} us CPU per answer")
    _ratio("score_actions (exact) vs the pandas aggregator", timings["exact"], timings["pandas"], 10, False)
    _ratio("score_actions (exact) vs its plain loop", timings["exact"], timings["plain exact"], 2, True)
    _ratio("score_actions (lenient) vs its plain loop", timings["lenient"], timings["plain lenient"], 2, True)
    _ratio("evaluate module compute vs the direct call", timings["evaluate"], timings["exact"], 1.5, True)
    return timings


def growth(small: int, large: int, at: dict[int, dict[str, Timing]]) -> None:
    for side in ("exact", "lenient"):
        per_answer = (at[large][side].cpu / large) / (at[small][side].cpu / small)
        print(f"growth of score_actions ({side}) from {720 * small:,} to {720 * large:,} answers: CPU per answer "
              f"{per_answer:.2f}x; target <= 1.3x (linear): {verdict(per_answer, 1.3, at_most=True)}")


MEMORY_CHILD = """
import gc, json, sys
sys.path.insert(0, {bench!r})
import evaluate
from ncbench_action_scoring import inputs
from convbench_datasets.nc.ncbench_action import score_actions
metric = evaluate.load({module!r})
data = inputs({per_row})
score_actions(**{{k: v[:100] for k, v in data.items()}}); metric.compute(**{{k: v[:100] for k, v in data.items()}})
gc.collect()
def status(key):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key + ":"))
before = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) starts again from here
result = score_actions(**data) if {path!r} == "direct" else metric.compute(**data)
print(json.dumps({{"kib": status("VmHWM") - before, "accuracy": result["accuracy"]}}))
"""


def peak_memory(per_row: int) -> None:
    """Peak resident memory of each path above the process's own before the call, each in a fresh process."""
    import json

    peaks = {}
    for path in ("direct", "evaluate"):
        code = MEMORY_CHILD.format(bench=str(ROOT / "benchmarks"), module=str(ROOT / "metrics" / "ncbench_action"),
                                   per_row=per_row, path=path)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if done.returncode:
            print(f"peak memory: not measured ({done.stderr.strip().splitlines()[-1]})")
            return
        peaks[path] = json.loads(done.stdout.splitlines()[-1])
    assert peaks["direct"]["accuracy"] == peaks["evaluate"]["accuracy"]
    ratio = peaks["evaluate"]["kib"] / max(peaks["direct"]["kib"], 1)
    print(f"peak memory above the process's at {720 * per_row:,} answers: direct {peaks['direct']['kib'] / 1024:.0f} MiB, "
          f"evaluate {peaks['evaluate']['kib'] / 1024:.0f} MiB: {ratio:.2f}x; target <= 2x: {verdict(ratio, 2, at_most=True)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers-per-row", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeat", type=int, default=3,
                        help="interleaved rounds (three times as many at 10 answers per row, at most 3 at 1,000)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory comparison")
    args = parser.parse_args()

    import evaluate

    metric = evaluate.load(str(ROOT / "metrics" / "ncbench_action"))
    gc.collect()
    at = {per_row: compare(per_row, args.repeat, metric) for per_row in args.answers_per_row}
    sizes = sorted(at)
    if len(sizes) > 1:
        growth(sizes[-2], sizes[-1], at)
    if not args.no_memory:
        peak_memory(max(sizes))


if __name__ == "__main__":
    main()
