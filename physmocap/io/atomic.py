"""Atomic output: write to a temporary file beside the target, then rename it into place.

An interrupted run leaves either the old file or the new one, never half a file.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ..errors import PhysmocapError

__all__ = ["atomic_path", "atomic_write_text", "check_writable"]


def _folder(path: Path) -> Path:
    """The folder ``path`` will be written in; an error if it is missing or ``path`` is one."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise PhysmocapError(f"output folder {folder} does not exist; create it first", path)
    if path.is_dir():       # (the rename would fail after the whole output was written)
        raise PhysmocapError("is a folder; name the output file", path)
    return folder


def _temp_file(path: Path, suffix: str | None) -> str:
    """A new empty temporary file beside ``path``; an unwritable folder is a PhysmocapError
    naming the folder (the OSError named the temporary file, which the user never chose)."""
    folder = _folder(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.",
                                   suffix=suffix or path.suffix + ".tmp", dir=folder)
    except OSError as exc:
        raise PhysmocapError(f"cannot write in folder {folder} ({exc.strerror or exc}); choose "
                             "another output folder", path) from None
    os.close(fd)
    return tmp


def check_writable(path) -> None:
    """Raise ``PhysmocapError`` now if ``path`` could not be written atomically later (a
    missing or read-only folder, a folder in its place): a long job checks before it starts."""
    os.unlink(_temp_file(Path(path), None))


@contextlib.contextmanager
def atomic_path(path, suffix: str | None = None):
    """Yield a temporary path in the target's folder; rename it to ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp = _temp_file(path, suffix)
    # mkstemp creates 0600; give the output the permissions a plain open() would (umask).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:  # data on disk before the rename makes it visible
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8", newline="\n")
