"""The one reader of a learner's text file: a saved log, a command's output, a system description.

``read_text`` refuses, with one ``ValueError`` line naming the file and what to pass instead, a
file that is missing or unreadable, one that is not a regular file (a FIFO would wait forever for
a writer, a device may never end, a directory has no text: refused before it is opened), one
larger than the most read, and one that is not text (a zero byte, or bytes that are not UTF-8).
It never holds more than ``max_bytes`` + 1 bytes, so a multi-gigabyte file given by mistake costs
nothing. The path is quoted as ``repr`` shows it, so a
name with a newline in it still gives one line.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from . import units

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file ("a FIFO (named pipe)", ...), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def read_text(path: str | Path, max_bytes: int, name: str = "file", what: str = "a text file") -> str:
    """The text of ``path`` (UTF-8, a byte-order mark dropped), read without taking more than ``max_bytes``.

    ValueError, in plain words and starting with ``name`` (the parameter or what the file is), for a
    missing or unreadable file, one larger than ``max_bytes`` and one that is not text; ``what`` says
    what to pass instead.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be an integer >= 1, got {max_bytes!r}")
    shown = repr(str(path))
    try:
        kind = _not_regular(os.stat(path).st_mode)
        if kind:  # checked before opening: opening a FIFO blocks until someone writes to it
            raise ValueError(f"{name} {shown} is {kind}, not a regular file; pass {what}")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        with open(fd, "rb") as fh:
            kind = _not_regular(os.fstat(fh.fileno()).st_mode)  # swapped for another kind since the check
            if kind:
                raise ValueError(f"{name} {shown} is {kind}, not a regular file; pass {what}")
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ValueError(f"{name} {shown} cannot be read ({exc.strerror or exc}); pass {what}") from None
    if len(data) > max_bytes:
        limit = units.format_bytes(max_bytes, binary=True)
        raise ValueError(f"{name} {shown} is larger than {limit}, the most read; pass {what}")
    nul = data.find(b"\0")
    if nul >= 0:
        raise ValueError(f"{name} {shown} is not a text file (a zero byte at offset {nul}); pass {what}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name} {shown} is not a text file (byte {data[exc.start]:#04x} at offset "
                         f"{exc.start} is not UTF-8 text); pass {what}") from None

