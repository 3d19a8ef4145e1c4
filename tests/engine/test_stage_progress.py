"""A stage with progress off shows nothing and imports no tqdm (#20: a run's client cost); with it on, tqdm's bar counts every prompt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CODE = """
import sys, tempfile
from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import complete
prompts = [[{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]] * 2
with ResponseCache(tempfile.mkdtemp() + "/c.sqlite") as store:
    result = complete(backend_from_spec("baseline:repeat"), prompts, GenerationParams(8), store, desc="gen",
                      progress=sys.argv[1] == "on")
print([g.text for g in result.generations], "tqdm" in sys.modules)
"""


@pytest.mark.parametrize("progress, tqdm_loaded", [("off", False), ("on", True)])
def test_progress_off_imports_no_tqdm(progress: str, tqdm_loaded: bool, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CODE, progress], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == f"['a', 'a'] {tqdm_loaded}"  # baseline:repeat answers the last assistant turn
    if tqdm_loaded:  # the two identical prompts are asked once: a bar of one
        assert "gen: 100%" in done.stderr and "1/1" in done.stderr
    else:
        assert done.stderr == ""
