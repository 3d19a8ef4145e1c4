"""Report figures: the caller's matplotlib backend is left alone, and a missing value is drawn as missing."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib", reason="reports need the report extra")
pd = pytest.importorskip("pandas")

from convbench_datasets.cocoeval.report_figures import cocoeval_figure  # noqa: E402
from convbench_datasets.nc.report_figures import nc_figure  # noqa: E402
from convbench_datasets.report.figures import MISSING, grouped_bars  # noqa: E402

BUILD_FIGURES = """
import matplotlib, pandas as pd
from convbench_datasets.nc.report_figures import nc_figure
from convbench_datasets.cocoeval.report_figures import cocoeval_figure, cocoeval_source_figure
index = pd.MultiIndex.from_tuples([("basic", "Inquiry"), ("basic", "Overall")], names=["set", "pattern"])
nc_figure(pd.DataFrame({"m": [50.0, 50.0]}, index=index)).savefig("nc.png")
frame = pd.DataFrame({"behaviour": ["x", "x"], "who": ["human", "m"], "mean": [1.0, 2.0], "low": [0.5, 1.5], "high": [1.5, 2.5]})
cocoeval_figure(frame).savefig("coco.svg")
cocoeval_source_figure(frame.assign(source="s1")).savefig("coco_sources.svg")
import matplotlib.pyplot as plt
print(matplotlib.get_backend(), len(plt.get_fignums()))
"""


def test_building_figures_leaves_the_callers_backend_alone(tmp_path) -> None:
    # The caller chose the "svg" backend (a notebook would have its inline one); a figure helper that
    # calls matplotlib.use("Agg") switches it for the whole process. A fresh interpreter, so that this
    # test's own matplotlib state cannot hide or cause a switch.
    env = {**os.environ, "MPLBACKEND": "svg", "MPLCONFIGDIR": str(tmp_path / "mpl")}
    result = subprocess.run([sys.executable, "-c", BUILD_FIGURES], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    # the backend the caller set, and no figure left open in pyplot's registry
    assert result.stdout.split() == ["svg", "0"]
    assert (tmp_path / "nc.png").stat().st_size > 0 and (tmp_path / "coco.svg").stat().st_size > 0
    assert (tmp_path / "coco_sources.svg").stat().st_size > 0  # the per-source panels (the paper's Table 11 as bars)


def _bars(fig) -> list:
    from matplotlib.patches import Rectangle

    return [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]


def _missing_labels(fig) -> list:
    return [t for t in fig.axes[0].texts if t.get_text().strip() == MISSING]


def test_a_missing_value_gets_no_bar_and_an_n_a_label() -> None:
    # 3 rows x 2 models; model b has no value for row "q" (None, as an object column holds it) and
    # none for "r" (NaN). Expected: 6 - 2 = 4 bars, none of width 0, and 2 "n/a" labels.
    rows = ["p", "q", "r"]
    frame = pd.DataFrame({"a": [40.0, 60.0, 80.0], "b": pd.Series([20.0, None, math.nan], index=rows, dtype=object)},
                         index=rows)
    fig = grouped_bars(frame, "t", "x")
    widths = sorted(bar.get_width() for bar in _bars(fig))
    assert widths == [20.0, 40.0, 60.0, 80.0]
    assert len(_missing_labels(fig)) == 2
    # the legend still names both models, although b's bars are partly missing
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["a", "b"]


def test_nc_figure_of_a_run_without_rag_rows() -> None:
    # The paper layout (set, pattern); the second run scored no rag rows, so its rag bar is missing
    # (as nc_table leaves it NaN), not a 0% bar. "Overall" rows are not drawn: 2 patterns x 2 runs.
    index = pd.MultiIndex.from_tuples([("basic", "Inquiry"), ("rag", "Inquiry"), ("Overall", "Overall")],
                                      names=["set", "pattern"])
    table = pd.DataFrame({"run-a": [50.0, 100.0, 75.0], "run-b": [25.0, math.nan, 25.0]}, index=index)
    fig = nc_figure(table)
    assert sorted(bar.get_width() for bar in _bars(fig)) == [25.0, 50.0, 100.0]
    assert len(_missing_labels(fig)) == 1


def test_cocoeval_figure_keeps_whiskers_for_present_values_only() -> None:
    # model m has no mean for behaviour "y": one bar fewer, and the whiskers still match the bars
    frame = pd.DataFrame({"behaviour": ["x", "x", "y", "y"], "who": ["human", "m", "human", "m"],
                          "mean": [1.0, 2.0, 3.0, None], "low": [0.5, 1.5, 2.5, None], "high": [1.5, 2.5, 3.5, None]})
    fig = cocoeval_figure(frame)
    assert sorted(bar.get_width() for bar in _bars(fig)) == [1.0, 2.0, 3.0]
    assert len(_missing_labels(fig)) == 1


def test_figures_show_inline_and_their_bars_carry_values() -> None:
    # a notebook displays an object through its _repr_png_ (IPython's display protocol); the figure is a
    # matplotlib Figure still (savefig, axes) and each present bar is labelled with its value, one decimal
    rows = ["p", "q"]
    frame = pd.DataFrame({"a": [40.0, 62.25], "b": pd.Series([12.5, None], index=rows, dtype=object)}, index=rows)
    fig = grouped_bars(frame, "t", "x")
    png = fig._repr_png_()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    from matplotlib.figure import Figure

    assert isinstance(fig, Figure)
    values = sorted(t.get_text() for t in fig.axes[0].texts if t.get_text().strip() != MISSING)
    assert values == ["12.5", "40.0", "62.2"]  # 62.25 rounds half to even in format(): "62.2"
    assert len(_missing_labels(fig)) == 1
