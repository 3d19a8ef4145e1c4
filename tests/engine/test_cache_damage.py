"""A damaged response cache: a one-line error naming the file, and `convbench cache clear` deletes only ours.

Before: SQLite's "database disk image is malformed" / "file is not a database" with no path, at
open, at the first query or mid-run, and `cache clear` failed on the same error.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import Generation
from convbench_datasets.engine.cache import (
    APPLICATION_ID,
    DamagedCacheError,
    ResponseCache,
    delete_damaged_cache,
)

IDENTITY = {"kind": "hf", "model": "tiny"}
KEYS = [f"k{i}" for i in range(300)]
PAGE = 4096  # SQLite's default page size


def _filled_cache(path: Path) -> Path:
    """300 answers of ~2 KB: about 150 pages, so damage past page 2 hits data the open did not read."""
    with ResponseCache(path) as cache:
        for key in KEYS:
            cache.put(key, IDENTITY, Generation("x" * 2000 + key))
    return path


def _recoverable(path: Path, clear_option: str) -> str:
    # the message DamagedCacheError gives for a file convbench recognises as its own
    return (rf"^response cache {re.escape(str(path))} is damaged \(.+\); `convbench cache clear{re.escape(clear_option)}` "
            r"deletes it \(its answers will be asked again\), or use --cache OTHER_FILE$")


def test_truncated_cache_names_the_file_and_clear_deletes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _filled_cache(tmp_path / "c.sqlite")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a copy cut short
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(DamagedCacheError, match=_recoverable(path, f" --cache {path}")):
        with ResponseCache(path) as cache:  # at open or at the first query: either way, named
            cache.get_many(KEYS)
    assert main(["cache", "stats", "--cache", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"convbench: error: response cache {path} is damaged (") and err.count("\n") == 1
    assert main(["cache", "clear", "--cache", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"deleted the damaged cache {path}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # the cache and its sidecars only
    with ResponseCache(path) as cache:  # the next run starts an empty cache there
        assert cache.stats()["entries"] == 0


def test_damage_found_mid_run_names_the_file(tmp_path: Path) -> None:
    path = _filled_cache(tmp_path / "c.sqlite")
    with ResponseCache(path) as cache:
        assert list(cache.get_many(["k0"])) == ["k0"]  # opened and read fine
        with open(path, "r+b") as f:  # then the file is damaged under the running process
            f.seek(3 * PAGE)
            f.write(b"\xff" * (path.stat().st_size - 3 * PAGE))
        with pytest.raises(DamagedCacheError, match=_recoverable(path, f" --cache {path}")):
            cache.get_many(KEYS)


def test_a_file_that_is_not_sqlite_is_named_and_never_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"  # the user's own file, given as --cache by mistake
    path.write_text("my notes\n")
    with pytest.raises(DamagedCacheError, match=rf"^response cache {re.escape(str(path))} cannot be read \(file is"):
        ResponseCache(path)
    assert main(["cache", "clear", "--cache", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"convbench: error: {path} is not recognisably a convbench response cache (no convbench SQLite header, "
        "not the default location); not deleting it: delete it yourself if it is one, or use --cache OTHER_FILE\n"
    )
    assert path.read_text() == "my notes\n"


def test_damaged_cache_at_the_default_location_is_cleared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the default file is convbench's by its name and place, whatever is left of its contents
    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path))
    (tmp_path / "responses.sqlite").write_bytes(b"\x00garbage" * 100)
    (tmp_path / "nc-bench").mkdir()  # downloads share the folder and stay
    assert main(["cache", "stats"]) == 1
    assert "`convbench cache clear` deletes it" in capsys.readouterr().err
    assert main(["cache", "clear"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nc-bench"]


def test_one_model_cannot_be_cleared_from_a_damaged_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _filled_cache(tmp_path / "c.sqlite")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    size = path.stat().st_size
    assert main(["cache", "clear", "--cache", str(path), "--model", "tiny"]) == 1
    err = capsys.readouterr().err
    assert "so one model's entries cannot be picked out" in err and err.count("\n") == 1
    assert path.stat().st_size == size  # nothing deleted: the user asked for less than the whole file


def test_delete_damaged_cache_takes_the_sqlite_sidecars_only(tmp_path: Path) -> None:
    path = _filled_cache(tmp_path / "c.sqlite")
    path.write_bytes(path.read_bytes()[:100])  # only the header is left: still recognisably ours
    sidecars = [tmp_path / f"c.sqlite{suffix}" for suffix in ("-wal", "-shm", "-journal")]
    for p in sidecars:
        p.write_bytes(b"stale")
    (tmp_path / "c.sqlite.bak").write_bytes(b"the user's copy")
    assert delete_damaged_cache(path) == [path, *sidecars]
    assert [p.name for p in tmp_path.iterdir()] == ["c.sqlite.bak"]


def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    before = path.read_bytes()
    with pytest.raises(ConvbenchError, match=rf"^{re.escape(str(path))} is an SQLite database but not a convbench "
                                             r"response cache \(tables: notes\); use --cache OTHER_FILE$"):
        ResponseCache(path)
    assert path.read_bytes() == before  # no responses table added, no WAL switch, no mark


def test_a_cache_from_before_the_mark_still_opens_and_is_marked(tmp_path: Path) -> None:
    # the layout ResponseCache wrote before caches carried an application id
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL, "
                   "response TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
                   "seconds REAL NOT NULL, created REAL NOT NULL)")
        db.execute("INSERT INTO responses VALUES ('k', 'hf', 'tiny', 'old answer', 1, 1, 0.1, 0)")
    db.close()
    with ResponseCache(path) as cache:
        assert cache.get_many(["k"])["k"].text == "old answer"
    # header bytes 68-71 hold the application id (SQLite file format, "The Database Header")
    assert int.from_bytes(path.read_bytes()[68:72], "big") == APPLICATION_ID


def test_a_wal_cache_from_before_the_mark_is_marked_in_the_main_file_at_once(tmp_path: Path) -> None:
    """A pre-mark cache already in WAL mode (ResponseCache always set it): the mark must reach the main
    file's header before the process can die, or a later damaged cache is refused by `cache clear`."""
    import subprocess
    import sys

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")  # persistent: the file stays in WAL mode
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL, "
               "response TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
               "seconds REAL NOT NULL, created REAL NOT NULL)")
    db.commit()
    db.close()  # the last connection's close checkpoints: everything so far is in the main file
    assert path.read_bytes()[18:20] == b"\x02\x02"  # header bytes 18-19: 2 = WAL (SQLite file format)
    code = ("import os, sys; from convbench_datasets.engine.cache import ResponseCache; "
            "ResponseCache(sys.argv[1]); os._exit(0)")  # killed before any close: no checkpoint on the way out
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # header bytes 68-71 hold the application id; before the checkpoint it stayed 0 in the main file
    assert int.from_bytes(path.read_bytes()[68:72], "big") == APPLICATION_ID
    path.write_bytes(path.read_bytes()[:100])  # then damaged
    assert path in delete_damaged_cache(path)  # recognised as ours, so `cache clear` deletes it
    assert sorted(p.name for p in tmp_path.iterdir()) == []
