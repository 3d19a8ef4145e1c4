"""Which folders a build may replace, and that a failed swap leaves the earlier build as it was.

Uses a one-config dataset made here (no upstream data needed); test_hub_export.py covers real builds.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from convbench_datasets.errors import BuildError
from convbench_datasets.hub import BuiltConfig, BuiltDataset, export
from convbench_datasets.out_folder import MARKER


def _tiny(tmp_path: Path, configs: tuple[str, ...] = ("basic",)) -> BuiltDataset:
    import datasets

    template = tmp_path / "card.md"
    template.write_text("---\nlicense: apache-2.0\n---\n# tiny\n")
    return BuiltDataset(
        name="tiny",
        features=datasets.Features({"text": datasets.Value("string")}),
        configs=[BuiltConfig(c, {"test": [{"text": f"{c} row"}]}) for c in configs],
        card_template=template,
    )


def _snapshot(folder: Path) -> dict[str, object]:
    """Everything a build must not change in a folder it refuses: the folder's inode and mode, and
    every entry's relative path with its bytes (None for folders)."""
    st = folder.stat()
    entries = {str(p.relative_to(folder)): (None if p.is_dir() else p.read_bytes()) for p in folder.rglob("*")}
    return {"inode": st.st_ino, "mode": stat.S_IMODE(st.st_mode), "entries": entries}


def _home_like(folder: Path) -> Path:
    folder.mkdir()
    folder.chmod(0o700)  # a home folder's mode; the old code replaced it with a 0o755 staging folder
    (folder / ".bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
    (folder / ".ssh").mkdir()
    (folder / ".ssh" / "id_ed25519").write_text("secret\n")
    return folder


def test_marker_lists_every_file_the_build_wrote(tmp_path: Path) -> None:
    out = export(_tiny(tmp_path, ("a", "b")), tmp_path / "out")
    record = json.loads((out / MARKER).read_text())
    # Expected: the card and one parquet file per config (hub.data_file's naming), nothing else.
    assert record["benchmark"] == "tiny"
    assert record["files"] == ["README.md", "a/test-00000-of-00001.parquet", "b/test-00000-of-00001.parquet"]


def test_dotfile_only_folder_is_refused_and_untouched(tmp_path: Path) -> None:
    home = _home_like(tmp_path / "home")
    before = _snapshot(home)
    with pytest.raises(BuildError, match=f"output folder {home} is not empty and is not a convbench build"):
        export(_tiny(tmp_path), home)
    assert _snapshot(home) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.md", "home"]  # no staging folder left


def test_folder_with_unmarked_files_is_refused(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    before = _snapshot(precious)
    with pytest.raises(BuildError, match="is not empty and is not a convbench build"):
        export(_tiny(tmp_path), precious)
    assert _snapshot(precious) == before


def test_build_without_marker_gets_a_hint(tmp_path: Path) -> None:
    out = export(_tiny(tmp_path), tmp_path / "out")
    (out / MARKER).unlink()  # what a build by a convbench before the marker left
    with pytest.raises(BuildError, match="wrote no marker: delete it to rebuild"):
        export(_tiny(tmp_path), out)


def test_empty_folder_is_used_in_place(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o750)
    inode = out.stat().st_ino
    export(_tiny(tmp_path), out)
    assert (out / "README.md").is_file()
    assert out.stat().st_ino == inode and stat.S_IMODE(out.stat().st_mode) == 0o750


def test_earlier_build_is_replaced_in_place(tmp_path: Path) -> None:
    out = export(_tiny(tmp_path, ("old", "basic")), tmp_path / "out")
    out.chmod(0o750)
    inode = out.stat().st_ino
    export(_tiny(tmp_path, ("basic",)), out)
    # "old" was written by the earlier build (listed in its marker), so it goes; the folder stays.
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "README.md", "basic"]
    assert out.stat().st_ino == inode and stat.S_IMODE(out.stat().st_mode) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.md", "out"]  # no staging or retired folder


@pytest.mark.parametrize("added", ["notes.txt", "basic/notes.txt", "extra/"])
def test_earlier_build_with_a_users_file_is_refused(tmp_path: Path, added: str) -> None:
    out = export(_tiny(tmp_path), tmp_path / "out")
    (out / added.rstrip("/")).mkdir() if added.endswith("/") else (out / added).write_text("mine")
    before = _snapshot(out)
    with pytest.raises(BuildError, match=f"holds {added}, which no convbench build wrote"):
        export(_tiny(tmp_path), out)
    assert _snapshot(out) == before


def test_corrupt_marker_is_refused(tmp_path: Path) -> None:
    out = export(_tiny(tmp_path), tmp_path / "out")
    (out / MARKER).write_text('{"files": "README.md"}')
    with pytest.raises(BuildError, match=f"{MARKER} is not a convbench build marker"):
        export(_tiny(tmp_path), out)


def test_git_clone_survives_a_rebuild(tmp_path: Path) -> None:
    out = export(_tiny(tmp_path), tmp_path / "out")
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / ".gitattributes").write_text("*.parquet filter=lfs\n")
    git_inode = (out / ".git").stat().st_ino
    export(_tiny(tmp_path), out)
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n" and (out / ".gitattributes").is_file()
    assert (out / ".git").stat().st_ino == git_inode  # never moved, so never at risk


# The old swap moved hidden entries into the staging folder, renamed the target to `.out.old-PID` and
# the staging folder to the target; a stale `.out.old-PID` made that rename fail and the hidden entries
# were deleted with the staging folder. Here each kind of move fails: an old entry out, the first new
# entry in (the marker, sorted first) and the last one ("zz").
@pytest.mark.parametrize(("direction", "fail_on"), [("out", "basic"), ("in", MARKER), ("in", "zz")])
def test_failed_swap_restores_the_earlier_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direction: str, fail_on: str
) -> None:
    out = export(_tiny(tmp_path, ("basic", "zz")), tmp_path / "out")
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    stale = tmp_path / f".out.old-{os.getpid()}"  # left by an interrupted build of the old code
    stale.mkdir()
    (stale / "keep.txt").write_text("not ours to delete")
    before = _snapshot(out)

    failed: list[str] = []  # fail once: undoing the moves must still work

    def failing(real):  # type: ignore[no-untyped-def]
        def move(src: str | Path, dst: str | Path) -> None:
            into = Path(dst).parent
            moving_in = into == out
            moving_out = into.name.startswith(".out.old-") and into != stale
            if not failed and Path(dst).name == fail_on and (moving_in if direction == "in" else moving_out):
                failed.append(str(dst))
                raise PermissionError(13, "injected failure", str(dst))
            real(src, dst)
        return move

    monkeypatch.setattr(os, "rename", failing(os.rename))
    monkeypatch.setattr(os, "replace", failing(os.replace))
    with pytest.raises(BuildError, match=f"could not swap the new build into {out} .*injected failure"):
        export(_tiny(tmp_path, ("basic", "zz")), out)
    monkeypatch.undo()
    assert failed  # the injected failure was reached
    assert _snapshot(out) == before
    assert (stale / "keep.txt").read_text() == "not ours to delete"
    assert sorted(p.name for p in tmp_path.iterdir()) == [stale.name, "card.md", "out"]


def test_wrong_out_is_refused_before_any_source_is_read(tmp_path: Path) -> None:
    from convbench_datasets import build

    home = _home_like(tmp_path / "home")
    # An empty mirror: reading any source would raise MissingSourceError instead of the folder's error.
    with pytest.raises(BuildError, match=f"output folder {home} is not empty"):
        build("nc", home, sources=tmp_path / "empty-mirror", progress=False)


def test_a_killed_builds_staging_folder_is_removed_by_the_next_build(tmp_path: Path) -> None:
    # a build writes into .NAME.HOST.PID.XXXXXXXX.staging beside --out; one whose process is gone (a killed
    # build) is removed when the next build of that target starts; a live one, another target's or another
    # host's is left alone
    import subprocess
    import sys

    from convbench_datasets.out_folder import make_staging
    from convbench_datasets.processes import HOST

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    target = tmp_path / "nc"
    leftovers = {
        "killed": tmp_path / f".nc.{HOST}.{dead}.abcd1234.staging",
        "live": tmp_path / f".nc.{HOST}.{os.getpid()}.abcd1234.staging",
        "other target": tmp_path / f".nico.{HOST}.{dead}.abcd1234.staging",
        "other host": tmp_path / f".nc.elsewhere-{HOST}.{dead}.abcd1234.staging",
        "not ours": tmp_path / f".nc.{HOST}.{dead}.notours",
    }
    for folder in leftovers.values():
        folder.mkdir()
        (folder / "data.parquet").write_bytes(b"x")
    staging = make_staging(target)
    assert staging.name.startswith(f".nc.{HOST}.{os.getpid()}.") and staging.name.endswith(".staging")
    assert {name for name, folder in leftovers.items() if folder.exists()} == {"live", "other target", "other host",
                                                                                "not ours"}
