"""Submissions are files, not links: what collect and autograde accept, read without following anything.

A learner controls what they hand in: a symbolic link (to the instructor's source notebooks, a root-only
file, a classmate's notebook), a FIFO (a reader blocks forever), a device, a hard link to another's file, or a
file of 2 GB (sparse: it costs the learner nothing) are all things an instructor's process must not follow,
open blocking or read into memory. Every folder and file here is opened relative to its parent's descriptor
with ``O_NOFOLLOW`` (a link anywhere on the way is refused, not followed), ``O_NONBLOCK`` (a FIFO opened by
mistake does not block) and checked with ``fstat`` before a byte is read; a file is read up to
:data:`MAX_BYTES` and no further.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_BYTES = 20 * 1000 * 1000  # a submitted file's size limit: a chapter notebook is under 1 MB; outputs add some
MAX_ENTRIES = 200  # files and folders in one submission
LIMIT_ENV = "COURSE_SUBMISSION_MAX_BYTES"
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = _FILE | os.O_DIRECTORY


class Refused(ValueError):
    """A submission that is not plain files: ``why`` is one line (what is wrong, naming the entry)."""

    def __init__(self, why: str):
        self.why = why
        super().__init__(why)


def max_bytes() -> int:
    """The size limit of one submitted file: ``$COURSE_SUBMISSION_MAX_BYTES`` or :data:`MAX_BYTES`."""
    raw = os.environ.get(LIMIT_ENV)
    if raw is None:
        return MAX_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{LIMIT_ENV} must be a whole number of bytes, at least 1, got {raw!r}")
    return value


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a regular file")


def _check_file(st: os.stat_result, name: str, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{name} is {_kind(st.st_mode)}, not a file")
    if st.st_nlink > 1:
        raise Refused(f"{name} is a hard link ({st.st_nlink} names for one file), not a file of its own")
    if st.st_size > limit:
        raise Refused(f"{name} is {st.st_size:,} bytes, over the {limit:,}-byte limit per file")


def _open(name: str, flags: int, dir_fd: int | None, shown: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        st = None
        try:
            st = os.lstat(name, dir_fd=dir_fd)
        except OSError:
            pass
        if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{shown} is {_kind(st.st_mode)}, not a file") from None
        raise Refused(f"{shown} cannot be opened ({exc.strerror or exc})") from None


def read_file(path, limit: int | None = None) -> bytes:
    """The bytes of one submitted file: never through a link (the file itself; its folders may be links only
    where the instructor made them), never blocking, never more than ``limit`` bytes (:class:`Refused`)."""
    limit = max_bytes() if limit is None else limit
    path = Path(path)
    fd = _open(str(path), _FILE, None, path.name)
    try:
        st = os.fstat(fd)
        _check_file(st, path.name, limit)
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise Refused(f"{path.name} grew past the {limit:,}-byte limit per file while it was read")
        return data
    finally:
        os.close(fd)


def _walk(dir_fd: int, prefix: str, limit: int, seen: list, copy_to: Path | None) -> None:
    """Check (and copy, when ``copy_to``) every entry below the open folder ``dir_fd``."""
    for entry in sorted(os.scandir(dir_fd), key=lambda e: e.name):
        shown = f"{prefix}{entry.name}"
        seen.append(shown)
        if len(seen) > MAX_ENTRIES:
            raise Refused(f"more than {MAX_ENTRIES} files and folders")
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            fd = _open(entry.name, _DIR, dir_fd, shown)
            try:
                target = None if copy_to is None else copy_to / entry.name
                if target is not None:
                    target.mkdir(mode=0o700)
                _walk(fd, shown + "/", limit, seen, target)
            finally:
                os.close(fd)
            continue
        _check_file(st, shown, limit)
        fd = _open(entry.name, _FILE, dir_fd, shown)
        try:
            _check_file(os.fstat(fd), shown, limit)  # the file opened, not the name looked at before
            if copy_to is not None:
                out = os.open(copy_to / entry.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    left = limit + 1
                    while left > 0:
                        chunk = os.read(fd, min(left, 1 << 20))
                        if not chunk:
                            break
                        os.write(out, chunk)
                        left -= len(chunk)
                finally:
                    os.close(out)
                if left <= 0:
                    raise Refused(f"{shown} grew past the {limit:,}-byte limit per file while it was read")
        finally:
            os.close(fd)


def check_folder(folder, limit: int | None = None) -> None:
    """Raise :class:`Refused` unless ``folder`` (a submission) is a real folder of plain files and folders,
    each file at most ``limit`` bytes, with no link, FIFO, socket or device anywhere in it."""
    _tree(folder, limit, None)


def copy_folder(folder, target, limit: int | None = None) -> None:
    """Copy the submission ``folder`` to the new folder ``target`` (which must not exist), refusing as
    :func:`check_folder` does; on refusal ``target`` is removed and :class:`Refused` raised."""
    import shutil

    target = Path(target)
    target.mkdir(mode=0o700, parents=False)
    try:
        _tree(folder, limit, target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise


def _tree(folder, limit, copy_to) -> None:
    limit = max_bytes() if limit is None else limit
    folder = Path(folder)
    fd = _open(str(folder), _DIR, None, folder.name or str(folder))
    try:
        _walk(fd, "", limit, [], copy_to)
    finally:
        os.close(fd)
