"""Symbolic links in a run folder are never followed: a marker (.convbench-run) that is a link to another
folder's marker does not make a folder a run folder, and a lock file (.lock) that is a link is refused, never
opened through (nor created where it points)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.engine.run_folder import MARKER, check_run_out, hold_lock, run_folder, run_lock
from convbench_datasets.errors import ConvbenchError


def _marker(folder: Path, shard: str | None = None) -> Path:
    """A real run folder's marker, as run_folder writes it (a JSON line with the shard)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text(json.dumps({"convbench_run": 1, "convbench": "0", "shard": shard}) + "\n")
    return folder / MARKER


def _listing(folder: Path) -> dict[str, str]:
    return {name: os.readlink(folder / name) if (folder / name).is_symlink() else (folder / name).read_text()
            for name in sorted(os.listdir(folder))}


@pytest.mark.parametrize("shard", [None, "1/2"])
def test_a_marker_that_is_a_link_to_another_marker_is_refused(tmp_path: Path, shard: str | None) -> None:
    elsewhere = _marker(tmp_path / "a-run", shard)  # a true run folder's marker, the same shard as asked for
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes\n")
    (mine / MARKER).symlink_to(elsewhere)
    before = _listing(mine)
    # by hand: the folder holds a user's file and a link, no marker file of its own: not a run folder
    with pytest.raises(ConvbenchError, match=r"mine is not empty and is not a run folder \(no \.convbench-run\)"):
        check_run_out(mine, shard)
    with pytest.raises(ConvbenchError, match="is not a run folder"):
        with run_folder(mine, shard):
            pytest.fail("a folder marked only through a link was taken")
    assert _listing(mine) == before  # untouched: no lock, no marker written, the link still a link
    assert elsewhere.read_text() == json.dumps({"convbench_run": 1, "convbench": "0", "shard": shard}) + "\n"


def test_a_folder_holding_only_a_marker_link_is_refused(tmp_path: Path) -> None:
    elsewhere = _marker(tmp_path / "a-run")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / MARKER).symlink_to(elsewhere)
    with pytest.raises(ConvbenchError, match=r"is not a run folder \(no \.convbench-run\): it holds \.convbench-run"):
        check_run_out(mine)
    assert (mine / MARKER).is_symlink() and os.listdir(mine) == [MARKER]


def test_convbench_score_refuses_a_folder_whose_marker_is_a_link(nico_built: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from convbench_datasets import run_nico

    folder = tmp_path / "run"
    run_nico(task="identify_unnatural", model="baseline:silence", out=folder, split="train", dataset=nico_built,
             cache=tmp_path / "c.sqlite", progress=False)
    assert main(["score", str(folder)]) == 0  # its own marker: re-scored
    (folder / MARKER).unlink()
    (folder / MARKER).symlink_to(_marker(tmp_path / "a-run"))
    before = (folder / "results.json").read_bytes()
    capsys.readouterr()
    assert main(["score", str(folder)]) == 1
    assert "is not a run folder (no .convbench-run)" in capsys.readouterr().err
    assert (folder / "results.json").read_bytes() == before


@pytest.mark.parametrize("dangling", [False, True])
def test_a_lock_file_that_is_a_link_is_refused(tmp_path: Path, dangling: bool) -> None:
    target = tmp_path / "someone-elses-file"
    if not dangling:
        target.write_text("not yours\n")
    lock = tmp_path / ".lock"
    lock.symlink_to(target)
    with pytest.raises(ConvbenchError, match=r"^cannot take the lock file .*\.lock"):
        with hold_lock(lock, "busy"):
            pytest.fail("the lock was taken through a link")
    assert lock.is_symlink()
    if dangling:
        assert not os.path.lexists(target)  # never created where the link points
    else:
        assert target.read_text() == "not yours\n"


@pytest.mark.parametrize("take", ["run_folder", "run_lock"])
def test_a_run_folder_whose_lock_is_a_link_is_refused(tmp_path: Path, take: str) -> None:
    folder = tmp_path / "run"
    _marker(folder)  # a true run folder
    target = tmp_path / "elsewhere" / "lockfile"
    target.parent.mkdir()
    (folder / ".lock").symlink_to(target)  # dangling
    holder = run_folder(folder) if take == "run_folder" else run_lock(folder)
    with pytest.raises(ConvbenchError, match="cannot take the lock file"):
        with holder:
            pytest.fail("the run folder was held through a linked lock")
    assert not os.path.lexists(target) and (folder / ".lock").is_symlink() and (folder / MARKER).is_file()
