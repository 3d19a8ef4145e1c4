"""The README's set-up commands are the ones CI proves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", readme, flags=re.S)]


def test_ci_runs_the_readme_test_command() -> None:
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    (test_command,) = [line for line in ci_lines if line.startswith("python3 -m venv")]
    setup = _bash_blocks()[:2]
    assert setup[1] == test_command
    assert "pytest" in test_command and '".[test]"' in test_command


def test_main_command_builds_nc() -> None:
    main = _bash_blocks()[0]
    assert main.startswith("python3 -m venv .venv") and main.endswith("convbench build nc --out hub/nc")


def test_the_sweep_example_is_a_valid_sweep(tmp_path: Path, nc_sources: Path) -> None:
    # the docs' example sweep file passes the sweep's own checks (dry run: nothing runs, nothing is written)
    import yaml

    from convbench_datasets.runs.sweep import run_sweep

    readme = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")  # the docs' Sweeps page
    (example,) = [block for block in re.findall(r"```yaml\n(.*?)```", readme, flags=re.S) if block.startswith("# sweep.yaml")]
    sweep = yaml.safe_load(example)
    sweep["out"] = str(tmp_path / "sweep")
    sweep.setdefault("sources", str(nc_sources))  # NC-Bench's cells read the released judge prompt (upstream)
    result = run_sweep(sweep, dry_run=True, progress=False, echo=lambda line: None)
    # 2 NC + (4 + 1) NICO + 1 CoCoEval cells for each of the 4 models (the comments in the example say why)
    assert len(result.cells) == 4 * (2 + 5 + 1)
    assert not (tmp_path / "sweep").exists()


def test_the_readme_is_short_and_its_links_resolve() -> None:
    # a newcomer's page (#24): at most 150 lines; the rest lives in docs/, and every relative link goes somewhere
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if not link.startswith("http")]
    assert local and all((ROOT / link).exists() for link in local), [l for l in local if not (ROOT / l).exists()]
