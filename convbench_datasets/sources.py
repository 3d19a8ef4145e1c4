"""Upstream source files: download from a pinned origin with a sha256 check, or read a local mirror.

A build never trusts bytes it has not hashed. Each :class:`SourceFile` names its path inside a
mirror (``nc-bench/conversation_competence.jsonl``), its origin URL at a pinned commit, and its
digest. :func:`fetch` resolves it:

1. a mirror folder, when ``sources_dir`` is given or ``CONVBENCH_SOURCES`` is set: the file is read in
   place and must match the digest (copied into the download cache only when asked: ``keep_copy``);
2. otherwise the download cache (``CONVBENCH_CACHE``, default ``~/.cache/convbench``): a cached file is
   re-hashed before use; a missing or corrupt one is downloaded to a temporary file beside it and moved
   into place only once its digest matches, so a failed or interrupted download leaves nothing behind.
   A process killed mid-download cannot remove its temporary file, so the temporary file's name
   carries the writer's host and PID and the next fetch of that file removes it once that writer is dead
   and the file has been untouched for some minutes.

Example:
    >>> src = SourceFile("demo/hello.txt", "https://example.org/hello.txt", "0" * 64)
    >>> src.filename
    'hello.txt'
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from .atomic import temporary_beside, write_atomic
from .cache_dir import default_cache_dir
from .errors import ChecksumError, MissingSourceError, SourceError
from .processes import HOST, pid_alive

logger = logging.getLogger(__name__)

SOURCES_ENV = "CONVBENCH_SOURCES"
STALE_AFTER_S = 24 * 3600  # a temporary download file untouched this long has no live writer
# A file whose PID is dead on a host of the same name must also be untouched this long: containers can
# share a host name with separate PID spaces, where another container's live writer's PID looks dead.
# A live download writes at least once per read timeout (60 s by default).
DEAD_WRITER_IDLE_S = 10 * 60
_CHUNK = 1 << 20
# In temporary file names, so that a process sharing the cache from another host is never taken for dead.


@dataclass(frozen=True)
class SourceFile:
    """One upstream file: where it sits in a mirror, where it comes from, and what it must hash to."""

    name: str
    url: str
    sha256: str

    @property
    def filename(self) -> str:
        return self.name.rsplit("/", 1)[-1]


def mirror_dir(sources_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The mirror to read from: the argument, else ``$CONVBENCH_SOURCES``, else None (download)."""
    if sources_dir is not None:
        return Path(sources_dir)
    env = os.environ.get(SOURCES_ENV)
    return Path(env) if env else None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(
    source: SourceFile,
    *,
    sources_dir: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    timeout: float = 60.0,
    keep_copy: bool = False,
) -> Path:
    """Return a local path to ``source`` whose sha256 has been verified.

    ``keep_copy``: a file read from a mirror is also copied into the download cache, for a file that
    later commands read at run time (the released judge prompt): offline after one build is then offline
    for every later command, with or without the mirror. Data files need no copy: a build keeps them.

    Raises:
        MissingSourceError: the mirror lacks the file (the message names the path looked for).
        ChecksumError: the bytes do not match the pinned digest (names file, expected and actual).
        SourceError: the download failed (names the URL and how to use a mirror instead).
    """
    mirror = mirror_dir(sources_dir)
    target = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cached = target / "sources" / source.name
    if mirror is not None:
        path = _from_mirror(source, mirror)
        if keep_copy:
            _keep_copy(path, cached)
        return path
    return _from_cache_or_origin(source, cached, progress, timeout)


def _keep_copy(path: Path, cached: Path) -> None:
    """Copy a verified mirror file into the download cache, if not there yet, so that what a command read
    once from a mirror (the released judge prompt, say) is there for later commands without one. A cache
    that cannot be written (read-only, full) is only a lost convenience: the mirror was read."""
    if cached.is_file():
        return
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, path.read_bytes())
    except OSError as err:
        logger.debug("could not keep a copy of %s in %s: %s", path, cached, err)


def _from_mirror(source: SourceFile, mirror: Path) -> Path:
    path = mirror / source.name
    if not path.is_file():
        raise MissingSourceError(source.name, str(path))
    actual = sha256_of(path)
    if actual != source.sha256:
        raise ChecksumError(source.name, source.sha256, actual, str(path))
    return path


def _from_cache_or_origin(source: SourceFile, path: Path, progress: bool, timeout: float) -> Path:
    if path.is_file() and sha256_of(path) == source.sha256:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(path)
    fd, tmp = temporary_beside(path, suffix=".partial", tag=f"{HOST}.{os.getpid()}.")
    try:
        with os.fdopen(fd, "wb") as out:
            actual = _download(source, out, progress, timeout)
        if actual != source.sha256:
            raise ChecksumError(source.name, source.sha256, actual, source.url)
        os.replace(tmp, path)
    except BaseException:
        # KeyboardInterrupt included: a half-written file must never look like a cached one.
        tmp.unlink(missing_ok=True)
        raise
    return path


def _remove_stale_partials(path: Path) -> None:
    """Delete the temporary files of earlier downloads of ``path`` whose writer is gone.

    Only names this module makes (``.NAME.HOST.PID.XXXXXXXX.partial``, or ``.NAME.XXXXXXXX.partial``
    from before the PID was recorded) are considered. One is stale when its writer's PID no longer
    runs on a host of this name and nothing has written to it for :data:`DEAD_WRITER_IDLE_S` (a
    container sharing the host name has its own PIDs), or when nothing has written to it for
    :data:`STALE_AFTER_S` (a live download writes at least once per read timeout; this also covers
    other hosts sharing the cache, and PIDs reused by another program). A concurrent download's file
    is therefore never removed.
    """
    pattern = re.compile(
        rf"\.{re.escape(path.name)}\.(?:(?P<host>[A-Za-z0-9-]+)\.(?P<pid>[0-9]+)\.)?[a-z0-9_]{{8}}\.partial"
    )
    now = time.time()
    for entry in os.scandir(path.parent):
        match = pattern.fullmatch(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        try:
            idle = now - entry.stat(follow_symlinks=False).st_mtime
            writer_gone = (match["host"] == HOST and idle > DEAD_WRITER_IDLE_S
                           and not pid_alive(int(match["pid"])))
            if writer_gone or idle > STALE_AFTER_S:
                os.unlink(entry.path)
        except FileNotFoundError:
            pass  # another fetch removed it (or its writer finished) meanwhile


def _download(source: SourceFile, out, progress: bool, timeout: float) -> str:
    """Stream ``source.url`` into ``out`` and return the sha256 of what was written."""
    import http.client  # here, not at the top: a run from a cached build downloads nothing
    import urllib.error
    import urllib.request

    from tqdm.auto import tqdm

    digest = hashlib.sha256()
    received = 0
    request = urllib.request.Request(source.url, headers={"User-Agent": "convbench"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=source.filename, disable=not progress) as bar:
                for chunk in iter(lambda: response.read(_CHUNK), b""):
                    out.write(chunk)
                    digest.update(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
            if total is not None and received != total:
                raise SourceError(f"download of {source.url} ended after {received} of {total} bytes")
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
        raise SourceError(
            f"could not download {source.name} from {source.url}: {err}. "
            f"Offline? Point --sources or ${SOURCES_ENV} at a mirror folder."
        ) from err
    return digest.hexdigest()
