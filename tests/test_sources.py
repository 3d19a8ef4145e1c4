"""sources.fetch: mirror reads, downloads through a local HTTP server, checksum and cache hygiene."""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from convbench_datasets.errors import ChecksumError, MissingSourceError, SourceError
from convbench_datasets.processes import HOST as _HOST
from convbench_datasets.sources import DEAD_WRITER_IDLE_S, STALE_AFTER_S, SourceFile, fetch
from tests.support.processes import dead_pid

PAYLOAD = b"line one\nline two\n" * 1000
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []
    release = threading.Event()  # ends /slow.txt's stall

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.hits.append(self.path)
        if self.path == "/good.txt":
            self._send(PAYLOAD, len(PAYLOAD))
        elif self.path == "/slow.txt":  # a download in progress: some bytes, then a stall
            self._send(PAYLOAD[:100], len(PAYLOAD))
            self.wfile.flush()
            self.release.wait(30)
        elif self.path == "/truncated.txt":
            self._send(PAYLOAD[:100], len(PAYLOAD))  # promises more than it sends, then closes
        else:
            self.send_error(404)

    def _send(self, body: bytes, length: int) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.hits = []
    _Handler.release = threading.Event()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    _Handler.release.set()
    httpd.shutdown()
    httpd.server_close()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_mirror_file_is_read_in_place(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "good.txt").write_bytes(PAYLOAD)
    src = SourceFile("demo/good.txt", "http://unused.invalid/good.txt", PAYLOAD_SHA)
    assert fetch(src, sources_dir=tmp_path) == tmp_path / "demo" / "good.txt"


def test_a_file_kept_from_the_mirror_is_read_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file read at run time (keep_copy) is copied into the download cache once: offline after one build
    # is offline for every later command, with or without the mirror (#24)
    mirror, cache = tmp_path / "mirror", tmp_path / "cache"
    (mirror / "demo").mkdir(parents=True)
    (mirror / "demo" / "good.txt").write_bytes(PAYLOAD)
    src = SourceFile("demo/good.txt", "http://unused.invalid/good.txt", PAYLOAD_SHA)
    assert fetch(src, sources_dir=mirror, cache_dir=cache) == mirror / "demo" / "good.txt"
    assert not (cache / "sources" / "demo" / "good.txt").exists()  # data files are not copied
    fetch(src, sources_dir=mirror, cache_dir=cache, keep_copy=True)
    assert (cache / "sources" / "demo" / "good.txt").read_bytes() == PAYLOAD
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    # no mirror now, and the origin cannot be reached (.invalid): the kept copy is read, verified
    assert fetch(src, cache_dir=cache, progress=False) == cache / "sources" / "demo" / "good.txt"


def test_released_judge_prompt_read_once_from_a_mirror_works_offline_after(
        nc_sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    module = importlib.import_module("convbench_datasets.nc.released_prompt")

    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path / "cache"))
    module._released.cache_clear()
    first = module.released_prompt(nc_sources)
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    monkeypatch.setattr("convbench_datasets.sources._download", _no_network)
    module._released.cache_clear()
    assert module.released_prompt() == first
    module._released.cache_clear()


def _no_network(*args: object, **kwargs: object) -> str:
    raise SourceError("no network in this test")


def test_mirror_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "good.txt").write_bytes(PAYLOAD)
    monkeypatch.setenv("CONVBENCH_SOURCES", str(tmp_path))
    assert fetch(SourceFile("good.txt", "http://unused.invalid/x", PAYLOAD_SHA)) == tmp_path / "good.txt"


def test_missing_mirror_file_names_the_path(tmp_path: Path) -> None:
    src = SourceFile("demo/absent.txt", "http://unused.invalid/absent.txt", PAYLOAD_SHA)
    with pytest.raises(MissingSourceError) as err:
        fetch(src, sources_dir=tmp_path)
    assert str(tmp_path / "demo" / "absent.txt") in str(err.value)


def test_mirror_checksum_mismatch_names_file_and_both_digests(tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_bytes(PAYLOAD + b"tampered")
    actual = hashlib.sha256(PAYLOAD + b"tampered").hexdigest()
    with pytest.raises(ChecksumError) as err:
        fetch(SourceFile("good.txt", "http://unused.invalid/x", PAYLOAD_SHA), sources_dir=tmp_path)
    message = str(err.value)
    assert "good.txt" in message and PAYLOAD_SHA in message and actual in message


def test_download_is_cached_and_verified(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    src = SourceFile("demo/good.txt", f"{server}/good.txt", PAYLOAD_SHA)
    path = fetch(src, cache_dir=tmp_path, progress=False)
    assert path.read_bytes() == PAYLOAD
    assert fetch(src, cache_dir=tmp_path, progress=False) == path
    assert _Handler.hits == ["/good.txt"]  # the second fetch was served from the cache
    assert _files(tmp_path) == [path]


def test_corrupt_cache_entry_is_downloaded_again(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    src = SourceFile("demo/good.txt", f"{server}/good.txt", PAYLOAD_SHA)
    cached = tmp_path / "sources" / "demo" / "good.txt"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"half a file")
    assert fetch(src, cache_dir=tmp_path, progress=False).read_bytes() == PAYLOAD
    assert _Handler.hits == ["/good.txt"]


def test_download_checksum_mismatch_leaves_nothing(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    wrong = "f" * 64
    with pytest.raises(ChecksumError) as err:
        fetch(SourceFile("demo/good.txt", f"{server}/good.txt", wrong), cache_dir=tmp_path, progress=False)
    assert wrong in str(err.value) and PAYLOAD_SHA in str(err.value)
    assert _files(tmp_path) == []


def test_truncated_download_leaves_nothing(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    src = SourceFile("demo/truncated.txt", f"{server}/truncated.txt", PAYLOAD_SHA)
    with pytest.raises(SourceError):
        fetch(src, cache_dir=tmp_path, progress=False)
    assert _files(tmp_path) == []


def test_http_error_names_the_url(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    src = SourceFile("demo/nope.txt", f"{server}/nope.txt", PAYLOAD_SHA)
    with pytest.raises(SourceError) as err:
        fetch(src, cache_dir=tmp_path, progress=False)
    assert f"{server}/nope.txt" in str(err.value) and "CONVBENCH_SOURCES" in str(err.value)
    assert _files(tmp_path) == []


def test_stale_partials_of_the_file_are_removed_on_download(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    folder = tmp_path / "sources" / "demo"
    folder.mkdir(parents=True)
    dead, live = dead_pid(), os.getpid()
    stale = [
        f".good.txt.{_HOST}.{dead}.abcd1234.partial",  # its writer was killed on this host, untouched 11 minutes
        ".good.txt.abcd1234.partial",  # the naming before PIDs were recorded, untouched for a day
        f".good.txt.otherhost.{dead}.abcd1234.partial",  # another host's, untouched for a day
    ]
    kept = [
        f".good.txt.{_HOST}.{live}.abcd1234.partial",  # a concurrent download in this process
        # a dead PID on a host of this name, written to 9 minutes ago: maybe a live writer in another
        # container that shares the host name but not the PIDs (review of issue #10)
        f".good.txt.{_HOST}.{dead}.efgh5678.partial",
        ".good.txt.efgh5678.partial",  # old naming, written to just now: maybe a live writer
        f".good.txt.otherhost.{dead}.efgh5678.partial",  # another host's PIDs mean nothing here
        f".other.txt.{_HOST}.{dead}.abcd1234.partial",  # another file's: cleaned when that file is fetched
        "notes.good.txt.partial",  # not a name the downloader makes
    ]
    for name in stale + kept:
        (folder / name).write_bytes(b"half")
    now = time.time()
    day_old, eleven_minutes, nine_minutes = now - STALE_AFTER_S - 60, now - 11 * 60, now - 9 * 60
    assert DEAD_WRITER_IDLE_S == 10 * 60  # the threshold the ages here straddle
    os.utime(folder / stale[0], (eleven_minutes, eleven_minutes))
    for name in stale[1:]:
        os.utime(folder / name, (day_old, day_old))
    os.utime(folder / kept[1], (nine_minutes, nine_minutes))

    path = fetch(SourceFile("demo/good.txt", f"{server}/good.txt", PAYLOAD_SHA), cache_dir=tmp_path, progress=False)
    assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, *kept])


def test_download_killed_midway_leaves_nothing_after_the_next_fetch(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONVBENCH_SOURCES", raising=False)
    code = (
        "import sys\n"
        "from convbench_datasets.sources import SourceFile, fetch\n"
        "fetch(SourceFile('demo/good.txt', sys.argv[1], sys.argv[2]), cache_dir=sys.argv[3], progress=False)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CONVBENCH_SOURCES"}
    writer = subprocess.Popen([sys.executable, "-c", code, f"{server}/slow.txt", PAYLOAD_SHA, str(tmp_path)], env=env)
    folder = tmp_path / "sources" / "demo"
    deadline = time.monotonic() + 60
    while not (folder.is_dir() and any(folder.glob(".good.txt.*.partial"))):
        assert writer.poll() is None and time.monotonic() < deadline, "the download never started"
        time.sleep(0.05)
    writer.kill()  # SIGKILL: no except or finally block runs
    writer.wait()
    (left,) = folder.glob(".good.txt.*.partial")  # what the killed download left

    source = SourceFile("demo/good.txt", f"{server}/good.txt", PAYLOAD_SHA)
    path = fetch(source, cache_dir=tmp_path, progress=False)
    assert left.exists()  # just written: its PID may be another container's live one; kept for now
    path.unlink()
    untouched = time.time() - DEAD_WRITER_IDLE_S - 60
    os.utime(left, (untouched, untouched))
    path = fetch(source, cache_dir=tmp_path, progress=False)
    assert _files(tmp_path) == [path]  # the README's promise: nothing left behind
