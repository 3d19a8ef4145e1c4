"""sources.fetch: mirror reads, downloads through a local HTTP server, checksum and cache hygiene."""

from __future__ import annotations

import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from convbench_datasets.errors import ChecksumError, MissingSourceError, SourceError
from convbench_datasets.sources import SourceFile, fetch

PAYLOAD = b"line one\nline two\n" * 1000
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.hits.append(self.path)
        if self.path == "/good.txt":
            self._send(PAYLOAD, len(PAYLOAD))
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
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_mirror_file_is_read_in_place(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "good.txt").write_bytes(PAYLOAD)
    src = SourceFile("demo/good.txt", "http://unused.invalid/good.txt", PAYLOAD_SHA)
    assert fetch(src, sources_dir=tmp_path) == tmp_path / "demo" / "good.txt"


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
