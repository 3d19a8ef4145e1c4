"""Time scoring 720 rows x 100 judge answers (72,000): direct API, evaluate module, and a plain loop.

- direct: convbench_datasets.scoring.score_actions (parse + rule + per-pattern/set tables);
- evaluate: the same through evaluate.load("metrics/ncbench_action").compute (Arrow round trip);
- loading: evaluate.load of the module, reported separately (paid once per session);
- reference: a bare loop applying the released aggregator's parse and rule (no tables, no variants):
  the floor any implementation pays.
Ratios are what matter here: these machines are noisy.

Usage: python benchmarks/ncbench_action_scoring.py [--answers-per-row 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

from timing import median_time  # benchmarks/timing.py (this folder is on sys.path when a script runs)

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


def _rows():
    from convbench_datasets.nc.patterns import pattern_table

    table = pattern_table()
    return [e for e in table.tasks for _ in range(e.rows)]


def _answers(rows, per_row: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(per_row):
        for e in rows:
            labels = rng.sample(list(e.label_set), k=rng.randint(1, 3))
            out.append(rng.choice([", ", "\n"]).join(labels) if rng.random() > 0.02 else "no idea")
    return out


def _plain_loop(answers, acceptable) -> int:
    passed = 0
    for answer, accepted in zip(answers, acceptable):
        labels = {p.strip() for p in answer.replace("\n", ",").split(",") if p}
        if ("Silence" in accepted or "NonVerbal" in accepted) and ("Silence" in labels or "NonVerbal" in labels):
            passed += len(labels) == 1
        else:
            passed += any(label in accepted for label in labels)
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers-per-row", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from convbench_datasets.scoring import score_actions

    rows = _rows()
    answers = _answers(rows, args.answers_per_row)
    references = [list(e.acceptable_labels) for e in rows] * args.answers_per_row
    patterns = [e.pattern for e in rows] * args.answers_per_row
    sets = [e.set for e in rows] * args.answers_per_row

    direct_s, direct = median_time(lambda: score_actions(answers, references, patterns=patterns, sets=sets), args.repeat)
    plain_s, _ = median_time(lambda: _plain_loop(answers, [set(r) for r in references]), args.repeat)

    start = time.perf_counter()
    import evaluate

    import_s = time.perf_counter() - start
    start = time.perf_counter()
    metric = evaluate.load(str(ROOT / "metrics" / "ncbench_action"))
    load_s = time.perf_counter() - start
    via_s, via = median_time(
        lambda: metric.compute(predictions=answers, references=references, patterns=patterns, sets=sets), args.repeat
    )
    assert via == direct, "evaluate module and direct API disagree"

    n = len(answers)
    print(f"{n} judge answers ({len(rows)} rows x {args.answers_per_row}); accuracy {direct['accuracy']:.2f}")
    print(f"{'path':<40}{'seconds':>10}{'answers/s':>12}{'vs plain loop':>15}")
    for name, seconds in [("plain released-rule loop (reference)", plain_s), ("direct score_actions", direct_s),
                          ("evaluate module compute", via_s)]:
        print(f"{name:<40}{seconds:>10.3f}{n / seconds:>12.0f}{seconds / plain_s:>15.2f}")
    print(f"{'import evaluate (once)':<40}{import_s:>10.3f}")
    print(f"{'evaluate.load of the module (once)':<40}{load_s:>10.3f}")
    print(f"evaluate overhead per compute: {via_s - direct_s:.3f}s ({via_s / direct_s:.2f}x direct)")


if __name__ == "__main__":
    main()
