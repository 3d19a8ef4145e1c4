"""Writing a file so that a reader never sees half of it: a unique temporary file beside it, then a rename.

The temporary file gets the permissions a plainly created file would (``0o666`` less the umask), not
``mkstemp``'s owner-only ``0o600``: results, records and downloads stay readable by whoever could read
the folder.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "results.json")
    >>> write_atomic(path, "{}\\n")
    >>> open(path).read(), oct(os.stat(path).st_mode & 0o777) == oct(0o666 & ~umask())
    ('{}\\n', True)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import ConvbenchError


def umask() -> int:
    """This process's umask (read once: setting it to read it is not safe while other threads create files)."""
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None
umask()  # at import, before any thread of ours starts


def temporary_beside(path: Path, suffix: str = ".tmp", tag: str = "") -> tuple[int, Path]:
    """A new, uniquely named file beside ``path`` (open descriptor and path) with a plain file's permissions."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.{tag}", suffix=suffix, dir=path.parent)
    os.fchmod(fd, 0o666 & ~umask())
    return fd, Path(name)


class LinkRefused(ConvbenchError):
    """A path to write is a symbolic link: convbench never writes through one, nor replaces one by a file."""


def refuse_link(path: str | os.PathLike[str], flag: str = "--out") -> None:
    """Raise :class:`LinkRefused` when ``path`` is a symbolic link (dangling or not): the folder rule holds for
    every writer, links included, so a link a user made is neither followed nor replaced."""
    if os.path.islink(Path(path)):  # Path drops a trailing slash, which would make lstat follow the link
        raise LinkRefused(f"{path} is a symbolic link; convbench never writes through one, nor replaces one: give "
                          f"{flag} a path that is not a link")


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` via a temporary file and a rename; a ``path`` that is a
    symbolic link is refused (:func:`refuse_link`), never replaced by the file."""
    path = Path(path)
    refuse_link(path)
    fd, tmp = temporary_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
