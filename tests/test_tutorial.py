"""The tutorial notebook (docs/tutorial.ipynb) runs top to bottom offline and shows its figure inline (#24)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a kernel runs the whole notebook
NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "tutorial.ipynb"


def test_the_tutorial_runs_offline_and_draws_its_figure(nc_sources: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel", reason="the notebook runs in an IPython kernel")
    pytest.importorskip("matplotlib", reason="the notebook draws a figure (report extra)")
    # the kernel inherits this environment: offline, the mirror, and caches of the test's own
    for name, value in {"CONVBENCH_SOURCES": str(nc_sources), "CONVBENCH_CACHE": str(tmp_path / "cache"),
                        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
                        "HF_HOME": str(tmp_path / "hf"), "MPLCONFIGDIR": str(tmp_path / "mpl"),
                        "TMPDIR": str(tmp_path)}.items():
        monkeypatch.setenv(name, value)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        "commit the notebook without outputs"
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    outputs = [output for cell in code for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # the metric through evaluate agrees with the run's own accuracy (the cell prints (True, accuracy))
    (metric_cell,) = [cell for cell in code if "evaluate.load" in cell.source]
    assert metric_cell.outputs[-1]["data"]["text/plain"].startswith("(True, ")
    # the paper's table is a DataFrame shown as HTML, the figure an image, not "<Figure size ...>"
    assert "text/html" in code[-2].outputs[-1]["data"] and "(paper, Table" in code[-2].outputs[-1]["data"]["text/html"]
    figure = code[-1].outputs[-1]["data"]
    assert "image/png" in figure and "<Figure size" not in figure.get("text/plain", "x")
    # written only into the notebook's own temporary folder
    assert not (tmp_path / "hub").exists() and any(p.name.startswith("convbench-tutorial-") for p in tmp_path.iterdir())
