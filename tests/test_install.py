"""`convbench install`: offline, load_dataset("convbench/<name>") gives the build, every config and the default.

Each check runs in a fresh process with a fresh HF_HOME: datasets reads HF_HOME and the offline flags
when it is imported. The expected rows are the built folder's own, read by datasets from the folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOAD = """
import json, sys
import datasets
name, configs = sys.argv[1], json.loads(sys.argv[2])
out = {"default": {s: d.to_list() for s, d in datasets.load_dataset("convbench/" + name).items()}}
for config in configs:
    out[config] = {s: d.to_list() for s, d in datasets.load_dataset("convbench/" + name, config).items()}
print(json.dumps(out))
"""


def _env(hf_home: Path) -> dict[str, str]:
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop("HF_DATASETS_CACHE", None)
    return env


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "convbench_datasets.cli", *argv, "--no-progress"], env=env,
                          capture_output=True, text=True, timeout=300)


def _expected(folder: Path) -> tuple[dict, str]:
    """Every config of the built folder as datasets reads the folder itself, and the card's default."""
    import datasets
    import yaml

    header = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    default = next(c["config_name"] for c in header["configs"] if c.get("default"))
    rows = {c["config_name"]: {s: d.to_list() for s, d in datasets.load_dataset(str(folder), c["config_name"]).items()}
            for c in header["configs"]}
    return rows, default


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["nc_built", "nico_built"])
def test_installed_build_loads_by_repo_id_offline(fixture: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    folder: Path = request.getfixturevalue(fixture)
    name = folder.name
    expected, default = _expected(folder)
    env = _env(tmp_path / "hf")
    before = subprocess.run([sys.executable, "-c", LOAD, name, "[]"], env=env, capture_output=True, text=True, timeout=300)
    assert before.returncode != 0 and "convbench/" + name in before.stderr  # what the issue reports: offline it fails
    done = _cli(env, "install", name, "--dataset", str(folder))
    assert done.returncode == 0, done.stderr
    assert f"installed convbench/{name} into " in done.stdout
    loaded = subprocess.run([sys.executable, "-c", LOAD, name, json.dumps(sorted(expected))], env=env,
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    got = json.loads(loaded.stdout)
    assert got.pop("default") == expected[default]
    assert got == expected


@pytest.mark.slow
def test_a_copy_convbench_did_not_install_is_never_touched(nico_built: Path, tmp_path: Path) -> None:
    env = _env(tmp_path / "hf")
    foreign = tmp_path / "hf" / "datasets" / "convbench___nico" / "dialogs" / "0.0.0" / "0123abcd"
    foreign.mkdir(parents=True)
    (foreign / "dataset_info.json").write_text('{"config_name": "dialogs"}')  # as a download from the Hub would leave
    refused = _cli(env, "install", "nico", "--dataset", str(nico_built))
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"convbench: error: {foreign} holds a convbench/nico that convbench did not install")
    assert sorted(p.name for p in foreign.parent.parent.parent.iterdir()) == ["dialogs"]  # nothing written
    forced = _cli(env, "install", "nico", "--dataset", str(nico_built), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (foreign / "dataset_info.json").read_text() == '{"config_name": "dialogs"}'  # kept as it was
    code = "import datasets; print(datasets.load_dataset('convbench/nico', 'dialogs', split='train').num_rows)"
    loaded = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr  # ours is the newest, so the one loaded


def _install_here(monkeypatch: pytest.MonkeyPatch, hf_home: Path, *argv: str) -> int:
    """`convbench install` in this process, into ``hf_home`` (what a fresh process with HF_HOME=hf_home and
    no HF_DATASETS_CACHE reads as datasets' cache). For the checks that load nothing afterwards."""
    import datasets

    from convbench_datasets.cli import main

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", hf_home / "datasets")
    return main(["install", *argv, "--no-progress"])


def test_reinstall_replaces_only_our_earlier_install(nico_built: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    assert _install_here(monkeypatch, tmp_path / "hf", "nico", "--dataset", str(nico_built)) == 0
    root = tmp_path / "hf" / "datasets" / "convbench___nico"
    first = sorted(root.glob("*/*/*"))
    changed = tmp_path / "nico"
    shutil.copytree(nico_built, changed)
    (changed / "LICENSE").write_text("changed\n")  # another build: other hashes
    assert _install_here(monkeypatch, tmp_path / "hf", "nico", "--dataset", str(changed)) == 0
    second = sorted(root.glob("*/*/*"))
    assert len(second) == len(first) and not set(first) & set(second)  # the earlier install is gone, not doubled


def test_a_folder_that_is_not_a_build_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nc").mkdir()
    assert _install_here(monkeypatch, tmp_path / "hf", "nc", "--dataset", str(tmp_path / "nc")) == 1
    assert "is not a convbench build of nc" in capsys.readouterr().err


@pytest.mark.slow
def test_a_map_on_another_config_makes_a_nameless_load_refuse_never_return_that_config(
        nico_built: Path, tmp_path: Path) -> None:
    """datasets' cache builder loads the most recently modified config folder when no config is named
    (datasets/packaged_modules/cache/cache.py, _find_hash_in_cache); .map() on another config writes a
    cache-*.arrow there and makes it the newest. What README and InstalledDataset.lines() document: the
    nameless load then refuses, asking for a config name, instead of silently returning that config;
    a named config still loads."""
    env = _env(tmp_path / "hf")
    done = _cli(env, "install", "nico", "--dataset", str(nico_built))
    assert done.returncode == 0, done.stderr
    assert "name the config (load_dataset('convbench/nico', 'dialogs'))" in done.stdout
    code = """
import sys, datasets
if sys.argv[1:] == ["map"]:
    datasets.load_dataset("convbench/nico", "open_domain", split="train").map(lambda row: {"n": 1})
else:
    print(datasets.load_dataset("convbench/nico", *sys.argv[1:], split="train").column_names)
"""
    run = lambda *argv: subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True,  # noqa: E731
                                       text=True, timeout=300, cwd=tmp_path)
    before = run()
    assert before.returncode == 0 and "'utterances'" in before.stdout, before.stderr  # the default, dialogs
    assert run("map").returncode == 0
    assert list((tmp_path / "hf" / "datasets" / "convbench___nico" / "open_domain").glob("*/*/cache-*.arrow"))
    nameless = run()
    assert nameless.returncode != 0, nameless.stdout  # before the shared hash: open_domain's columns, exit 0
    assert "There are multiple 'convbench/nico' configurations in the cache" in nameless.stderr
    named = run("dialogs")
    assert named.returncode == 0 and named.stdout == before.stdout, named.stderr


def test_a_killed_installs_staging_folder_goes_with_the_next_install(nico_built: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # reported: a SIGKILLed `convbench install` left its staging folder in datasets' cache for good. A staging
    # folder names its host and process: one whose process is dead (here a pid no process has) is removed
    from convbench_datasets.out_folder import HOST

    parent = tmp_path / "hf" / "datasets"
    dead = parent / f".convbench___nico.{HOST}.999999999.abcdefgh.staging"
    (dead / "nico").mkdir(parents=True)
    (dead / "nico" / "half.arrow").write_bytes(b"half written")
    alive = parent / f".convbench___nico.{HOST}.{os.getpid()}.abcdefgh.staging"  # a running install's: kept
    alive.mkdir()
    assert _install_here(monkeypatch, tmp_path / "hf", "nico", "--dataset", str(nico_built)) == 0
    assert not dead.exists() and alive.is_dir()
    assert not [p for p in parent.iterdir() if p.name.endswith(".staging") and p != alive]  # its own is gone too
