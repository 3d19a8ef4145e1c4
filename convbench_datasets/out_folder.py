"""The folder a build writes into: which folders it may replace, and how it swaps new files in.

A build may write into a missing or empty folder, or replace an earlier build, recognised by the marker
file :data:`MARKER` that every build writes: JSON with the benchmark, the convbench version and every
file the build wrote. A folder with anything else in it (hidden entries only included: a home folder
holds nothing but dotfiles) is refused, naming the folder, so a typo in ``--out`` cannot touch a
user's files. ``convbench metrics export`` (``kind="export"``) and ``convbench report`` (``kind="report"``)
follow the same rules with the same marker; each kind replaces only a folder of its own kind.

Replacing never moves the folder itself (its inode, mode and hidden entries such as ``.git`` stay put):
the earlier build's files move into a fresh ``.NAME.old-XXXX`` folder beside it, the new files move
in, and only then is the old copy deleted. If a move fails, every move made is undone, so the earlier
build is left as it was. Nothing is ever deleted that a build did not write.

New files are written into a staging folder beside the target, ``.NAME.HOST.PID.XXXXXXXX.staging``
(:func:`make_staging`); one that a killed build left (its process is gone from this host) is removed
when the next build of the same target starts. A live build's staging folder is never touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._version import __version__
from .errors import BuildError
from .processes import HOST, pid_alive

MARKER = ".convbench-build"


# what each kind of folder names in its marker: a folder of one kind is never replaced by another kind
MARKER_KEYS = {"build": "benchmark", "export": "metric", "report": "report"}


@contextmanager
def staged(out: str | os.PathLike[str], name: str, kind: str = "build") -> Iterator[Path]:
    """Write a folder of ``kind`` (``build``, ``export``, ``report``) at ``out`` all at once: refuse a folder
    that is not missing, empty or an earlier one of that kind (before anything is written), yield a fresh
    staging folder for the block to fill, then mark it (``name`` under :data:`MARKER_KEYS`' key) and swap it
    in. If the block fails, ``out`` is as it was and the staging folder is removed. Nothing is written
    through a symbolic link: the new files are created in the fresh staging folder and moved in whole.
    """
    target = Path(out).resolve()
    replaced = replaceable_entries(target, kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = make_staging(target)
    try:
        yield staging
        write_marker(staging, name, key=MARKER_KEYS[kind])
        swap_in(staging, target, replaced)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_marker(folder: Path, benchmark: str, key: str = "benchmark") -> None:
    """Record in ``folder`` that a build of ``benchmark`` (``key``: what it is, e.g. ``"metric"`` for an
    export) wrote every file now in it.

    The content depends only on the files' names and the version, so rebuilds stay byte-identical.
    """
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    record = {key: benchmark, "convbench": __version__, "files": files}
    (folder / MARKER).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def replaceable_entries(target: Path, kind: str = "build") -> list[str]:
    """The top-level names in ``target`` that an earlier build wrote, to be replaced; [] when ``target``
    is missing or empty. ``kind`` names what writes the folder in messages (``"export"``).

    Raises:
        BuildError: ``target`` is not a folder, is the current folder or one above it, or holds
            anything an earlier build did not write (the message names the folder and the entry).
    """
    if not target.exists():
        return []
    if not target.is_dir():
        raise BuildError(f"output {target} exists and is not a folder")
    if target == Path.cwd() or target in Path.cwd().parents or target.parent == target:
        raise BuildError(f"output {target} is the current folder or one above it; choose a folder to create")
    names = sorted(os.listdir(target))
    if not names:
        return []
    owned = _files_of_earlier_build(target, kind)
    folders = {f.rsplit("/", i)[0] for f in owned for i in range(1, f.count("/") + 1)}
    visible = [n for n in names if not n.startswith(".")]
    for name in visible:
        foreign = _first_unlisted(target, name, owned, folders)
        if foreign is not None:
            raise BuildError(f"output folder {target} holds {foreign}, which no convbench {kind} wrote; "
                             "move it away or choose another --out")
    return [*visible, MARKER]  # hidden entries other than the marker (.git, .gitattributes) stay


def _files_of_earlier_build(target: Path, kind: str = "build") -> set[str]:
    from .hub import GENERATED_PREFIX  # hub imports this module; the card's mark is its fact

    marker = target / MARKER
    if not marker.is_file():
        card = target / "README.md"
        legacy = kind == "build" and card.is_file() and GENERATED_PREFIX in card.read_text(encoding="utf-8",
                                                                                             errors="replace")
        hint = " (built by a convbench that wrote no marker: delete it to rebuild)" if legacy else ""
        raise BuildError(f"output folder {target} is not empty and is not a convbench {kind} (no {MARKER} "
                         f"file){hint}; choose another --out")
    try:
        record = json.loads(marker.read_text(encoding="utf-8"))
        files = record["files"]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise TypeError("'files' is not a list of paths")
    except (ValueError, KeyError, TypeError) as err:
        raise BuildError(f"output folder {target}: {marker} is not a convbench {kind} marker ({err}); "
                         "choose another --out") from None
    if MARKER_KEYS.get(kind, kind) not in record:
        other = next((k for k, key in MARKER_KEYS.items() if key in record), "other")
        raise BuildError(f"output folder {target} is a convbench {other}, not a {kind}, and is never replaced by one; "
                         "choose another --out")
    return set(files)


def _first_unlisted(root: Path, name: str, owned: set[str], folders: set[str]) -> str | None:
    """The first path under ``root/name`` that is neither a listed file nor a listed file's folder."""
    pending = [name]
    while pending:
        rel = pending.pop()
        path = root / rel
        if path.is_dir() and not path.is_symlink():
            if rel not in folders:
                return rel + "/"
            pending.extend(f"{rel}/{child}" for child in sorted(os.listdir(path), reverse=True))
        elif rel not in owned:
            return rel
    return None


def make_staging(target: Path) -> Path:
    """A new staging folder beside ``target`` (readable as a dataset folder is meant to be), after removing
    the staging folders earlier builds of ``target`` left when they were killed (see the module docstring)."""
    remove_dead_staging(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.{HOST}.{os.getpid()}.", suffix=".staging",
                                    dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; a dataset folder is meant to be shared
    return staging


def remove_dead_staging(target: Path) -> list[Path]:
    """Delete the staging folders of ``target`` whose build process no longer runs on this host; return them.
    Only folders named as :func:`make_staging` names them are considered."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>[0-9]+)\.[a-z0-9_]{{8}}\.staging")
    removed = []
    if not target.parent.is_dir():
        return removed
    for entry in os.scandir(target.parent):
        match = pattern.fullmatch(entry.name)
        if match and entry.is_dir(follow_symlinks=False) and match["host"] == HOST and not pid_alive(int(match["pid"])):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def swap_in(staging: Path, target: Path, replaced: list[str]) -> None:
    """Move the entries of ``staging`` into ``target`` in place of ``replaced`` (top-level names from
    :func:`replaceable_entries`), then delete the replaced entries and ``staging``.

    On failure every move is undone and the error re-raised (an OSError as a BuildError naming
    ``target``); ``staging`` then holds only new files.
    """
    if not target.exists():
        os.rename(staging, target)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    moves: list[tuple[Path, Path]] = []
    try:
        for name in replaced:
            _move(target / name, retired / name, moves)
        for name in sorted(os.listdir(staging)):
            _move(staging / name, target / name, moves)
    except OSError as err:
        _undo(moves, retired)
        raise BuildError(f"could not swap the new build into {target} ({err}); the folder is as it was") from err
    except BaseException:  # KeyboardInterrupt included: leave the earlier build whole
        _undo(moves, retired)
        raise
    shutil.rmtree(retired)
    staging.rmdir()


def _move(source: Path, dest: Path, moves: list[tuple[Path, Path]]) -> None:
    if not os.path.lexists(source):
        return  # a listed entry the user already deleted
    if os.path.lexists(dest):  # never overwrite: a hidden entry of the user's could share a new file's name
        raise BuildError(f"cannot move {source.name} into {dest.parent}: {dest} already exists")
    os.rename(source, dest)
    moves.append((source, dest))


def _undo(moves: list[tuple[Path, Path]], retired: Path) -> None:
    try:
        for source, dest in reversed(moves):
            os.rename(dest, source)
        retired.rmdir()
    except OSError as err:
        raise BuildError(f"could not restore the earlier build after a failed swap ({err}); "
                         f"its remaining files are in {retired}") from err
