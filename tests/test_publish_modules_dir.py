"""Where `convbench metrics install` writes: evaluate's module cache, found without importing evaluate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convbench_datasets.publish import evaluate_modules_dir


def test_the_rules_without_evaluate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # evaluate 0.4's config: HF_MODULES_CACHE, else HF_HOME/modules, else $XDG_CACHE_HOME/huggingface/modules
    monkeypatch.delitem(sys.modules, "evaluate.config", raising=False)
    for name in ("HF_MODULES_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert evaluate_modules_dir() == tmp_path / ".cache" / "huggingface" / "modules" / "evaluate_modules"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert evaluate_modules_dir() == tmp_path / "xdg" / "huggingface" / "modules" / "evaluate_modules"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert evaluate_modules_dir() == tmp_path / "hf" / "modules" / "evaluate_modules"
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "mods"))
    assert evaluate_modules_dir() == tmp_path / "mods" / "evaluate_modules"


@pytest.mark.slow
def test_the_rules_agree_with_evaluates_config_and_follow_it_once_imported(tmp_path: Path) -> None:
    # one process: our answer before evaluate is imported, evaluate's own after, then ours once a notebook
    # has changed evaluate's setting
    script = (
        "import sys\n"
        "from convbench_datasets.publish import evaluate_modules_dir\n"
        "before = evaluate_modules_dir()\n"
        "assert 'evaluate' not in sys.modules\n"
        "from pathlib import Path\n"
        "from evaluate import config\n"
        "theirs = Path(config.HF_MODULES_CACHE) / config.MODULE_NAME_FOR_DYNAMIC_MODULES\n"
        "config.HF_MODULES_CACHE = sys.argv[1]\n"
        "print(before == theirs, evaluate_modules_dir() == Path(sys.argv[1]) / config.MODULE_NAME_FOR_DYNAMIC_MODULES)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_MODULES_CACHE", "XDG_CACHE_HOME")}
    env["HF_HOME"] = str(tmp_path / "hf")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "changed")], env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["True", "True"]
