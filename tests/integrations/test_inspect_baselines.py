"""convbench's baselines as inspect models (#24): `inspect eval convbench/nc --model convbench/repeat
--model-role grader=convbench/smoke-judge` runs offline, reports its own token usage, and scores what
`convbench run nc --model baseline:repeat --judge baseline:smoke-judge` scores on the same rows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai.model import get_model  # noqa: E402

from convbench_datasets import run_nc  # noqa: E402
from convbench_datasets.integrations.inspect import nc  # noqa: E402
from tests.integrations.inspect_support import reported, run_inspect  # noqa: E402



def test_baselines_as_inspect_models_score_as_convbench_run(nc_built: Path, tmp_path: Path) -> None:
    log = run_inspect(nc(config="basic", dataset=str(nc_built)), get_model("convbench/repeat"), tmp_path / "logs",
                      grader=get_model("convbench/smoke-judge"))
    run = run_nc(model="baseline:repeat", judge="baseline:smoke-judge", config="basic",
                 dataset=nc_built, out=tmp_path / "run", cache=tmp_path / "c.sqlite", progress=False)
    scores = reported(log)
    assert scores["n"] == run.results["n"] and scores["accuracy"] == pytest.approx(run.results["accuracy"])  # both in percent
    assert 0 < run.results["accuracy"] < 100  # the smoke judge finds the repeats of Repeat Request rows
    # beside the accuracy its standard error: sqrt(p (1 - p) / (n - 1)), in percent, p the pass rate
    p, n = run.results["accuracy"] / 100, run.results["n"]
    assert scores["accuracy_stderr"] == pytest.approx(100 * (p * (1 - p) / (n - 1)) ** 0.5)
    # each model reported its own usage (words in and out): inspect needed no tiktoken download
    usage = log.stats.model_usage
    assert set(usage) == {"convbench/repeat", "convbench/smoke-judge"}
    assert all(u.input_tokens > 0 and u.total_tokens == u.input_tokens + u.output_tokens for u in usage.values())


def test_an_unknown_baseline_names_the_known_ones() -> None:
    with pytest.raises(Exception, match=r"unknown baseline 'nobody'; choose one of silence, repeat, smoke-judge"):
        get_model("convbench/nobody")


@pytest.mark.slow
def test_inspect_eval_from_the_shell_runs_offline(nc_sources: Path, tmp_path: Path) -> None:
    # the README's command, as typed; no network (offline flags), a fresh cache, the mirror for the data
    env = {**os.environ, "CONVBENCH_SOURCES": str(nc_sources), "CONVBENCH_CACHE": str(tmp_path / "cache"),
           "HF_HUB_OFFLINE": "1", "INSPECT_LOG_DIR": str(tmp_path / "logs")}
    inspect = Path(sys.executable).with_name("inspect")
    done = subprocess.run([str(inspect), "eval", "convbench/nc", "--model", "convbench/repeat", "--model-role",
                           "grader=convbench/smoke-judge", "--limit", "3", "--display", "none"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list((tmp_path / "logs").glob("*.eval"))
