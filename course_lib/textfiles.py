"""The one reader of a learner's text file: a saved log, a command's output, a system description.

``read_text`` refuses, with one ``ValueError`` line naming the file and what to pass instead, a
file that is missing or unreadable, one larger than the most read, and one that is not text (a
zero byte, or bytes that are not UTF-8). It never holds more than ``max_bytes`` + 1 bytes, so a
multi-gigabyte file given by mistake costs nothing. The path is quoted as ``repr`` shows it, so a
name with a newline in it still gives one line.
"""
from __future__ import annotations

from . import units


def read_text(path, max_bytes: int, name: str = "file", what: str = "a text file") -> str:
    """The text of ``path`` (UTF-8, a byte-order mark dropped), read without taking more than ``max_bytes``.

    ValueError, in plain words and starting with ``name`` (the parameter or what the file is), for a
    missing or unreadable file, one larger than ``max_bytes`` and one that is not text; ``what`` says
    what to pass instead.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be an integer >= 1, got {max_bytes!r}")
    shown = repr(str(path))
    try:
        with open(path, "rb") as fh:
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

