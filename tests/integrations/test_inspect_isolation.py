"""convbench stays free of inspect_ai: nothing imports it unless asked (these tests run without the extra too)."""

from __future__ import annotations

from pathlib import Path

from tests.support.processes import run_python


def test_importing_convbench_does_not_import_inspect_ai() -> None:
    # runs with or without the extra: the integration is imported only when asked for
    done = run_python("""
        import sys
        import convbench_datasets, convbench_datasets.cli, convbench_datasets.engine, convbench_datasets.scoring
        from convbench_datasets import registry
        convbench_datasets.cli._parser()
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "inspect_ai" or ".integrations.inspect" in m
                        or m.endswith(".inspect_task"))
        print(loaded)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_import_inspect_without_inspect_ai_names_the_extra(tmp_path: Path) -> None:
    # inspect_ai hidden from this interpreter: the command says how to get it
    done = run_python(f"""
        import sys
        sys.modules["inspect_ai"] = None  # as if not installed
        from convbench_datasets.cli import main
        sys.exit(main(["import-inspect", "some.eval", "--out", {str(tmp_path / "run")!r}]))
    """)
    assert done.returncode == 1
    assert done.stderr == 'convbench: error: import-inspect needs inspect_ai: pip install "convbench[inspect]"\n'
