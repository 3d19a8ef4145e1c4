"""Without CONVBENCH_SOURCES (and no network) the tests needing upstream data skip; the run ends by
saying how many, and how to run them (the README's set-up section promises it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_skips_for_missing_sources_are_counted_at_the_end(tmp_path: Path) -> None:
    # A run of three tests: two skip as tests/conftest.py's fixtures do without sources, one for another reason.
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_terminal_summary  # noqa: F401\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "from tests.conftest import SOURCES_SKIP\n"
        "@pytest.mark.parametrize('what', ['NC-Bench', 'QMSum/IQ2'])\n"
        "def test_needs_data(what):\n"
        "    pytest.skip(f'{what} {SOURCES_SKIP}: no CONVBENCH_SOURCES mirror and no network (offline)')\n"
        "def test_other():\n"
        "    pytest.skip('no GPU')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 tests skipped: upstream sources unavailable" in done.stdout  # the two above, not the GPU one
    assert "set CONVBENCH_SOURCES=DIR" in done.stdout
