"""How the ``convbench`` process ends (cli._no_collection_at_exit): its objects frozen at exit, so that the
interpreter's teardown skips the last search for reference cycles; output, exit codes and every exit
handler as before."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

# Started before the command (sitecustomize): a reference cycle whose finalizer prints (only a garbage
# collection frees it, so it prints at exit only if the teardown collected), and a user's exit handler.
SITECUSTOMIZE = textwrap.dedent("""
    import atexit, sys

    class Cycle:
        def __del__(self):
            sys.stdout.write("cycle collected\\n")

    def _make():
        held = Cycle()
        held.me = held

    _make()  # garbage now, but nothing has collected it yet
    atexit.register(lambda: sys.stdout.write("user handler ran\\n"))
""")


def _python(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "site").mkdir(exist_ok=True)
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output block-buffered, the default
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env)


def test_the_command_exits_without_the_last_collection_and_with_its_output(tmp_path: Path) -> None:
    done = _python(tmp_path, "-c", "import gc; gc.disable(); import runpy, sys; sys.argv = ['convbench', 'list']; "
                   "runpy.run_module('convbench_datasets.cli', run_name='__main__')")
    assert done.returncode == 0, done.stderr
    listing, _, rest = done.stdout.partition("user handler ran\n")
    assert listing.startswith("nc: NC-Bench") and "cocoeval" in listing  # the whole listing, then the handler
    assert rest == ""  # the cycle was left to the operating system


def test_without_the_command_the_teardown_collects(tmp_path: Path) -> None:
    # the control: the same process without convbench's main collects the cycle at exit
    done = _python(tmp_path, "-c", "import gc; gc.disable(); import convbench_datasets.cli")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "user handler ran\ncycle collected\n"


def test_an_error_keeps_its_exit_code_and_message(tmp_path: Path) -> None:
    done = _python(tmp_path, "-m", "convbench_datasets.cli", "run", "nc", "--model", "baseline:silence", "--out",
                   str(tmp_path / "o"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "convbench: error: convbench run nc needs --judge SPEC"
    assert done.stdout.endswith("user handler ran\n")  # every exit handler still runs


def test_main_called_with_arguments_leaves_the_exit_alone(tmp_path: Path) -> None:
    # the Python API's way (tests, notebooks): main(argv) changes nothing about how the interpreter ends
    done = _python(tmp_path, "-c", "import gc; gc.disable(); from convbench_datasets import cli; "
                   "raise SystemExit(cli.main(['list']) + 3)")
    assert done.returncode == 3 and done.stdout.endswith("user handler ran\ncycle collected\n")
