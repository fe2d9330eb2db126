"""Atomic file and directory writes: a reader sees the old content or the new, never a partial one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# mkstemp/mkdtemp create owner-only entries; finished files get the usual umask-derived modes.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(tmp: Path, target: Path) -> None:
    """fsync ``tmp`` (a file in ``target``'s directory), rename it onto ``target``, fsync the directory."""
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, target)
    _fsync_dir(target.parent)


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; on success it replaces ``target`` durably.

    The temporary name keeps ``target``'s suffix (``np.savez`` and ``scipy.sparse.save_npz``
    append ``.npz`` otherwise). On an exception the temporary file is removed and ``target``
    is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=f".tmp{target.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_UMASK)
        replace_durably(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_directory(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``target``; on success it takes ``target``'s place.

    An existing ``target`` is first renamed aside and removed only after the new directory is in
    place, so ``target`` never holds a mix of old and new files. On an exception the temporary
    directory is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        yield tmp
        for entry in tmp.iterdir():
            with open(entry, "rb") as handle:
                os.fsync(handle.fileno())
        _fsync_dir(tmp)
        os.chmod(tmp, 0o777 & ~_UMASK)
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        if old is not None:
            shutil.rmtree(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
