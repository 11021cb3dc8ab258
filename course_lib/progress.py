"""Progress for long work, the way tqdm shows it: ``label  3/12 sizes |####      | 25% [00:04<00:11]``.

One :class:`Progress` per long loop (a benchmark's sizes, an export's chapters, nbgrader's assignments):
``update()`` after each item. Where it goes:

* in a notebook (an IPython kernel): one line that updates in place (a display handle), so a long cell
  shows more than ``[*]``;
* on a terminal (``stream.isatty()``): one line redrawn with ``\\r``; ``clear()`` before printing other
  lines to the same terminal, which the next ``update`` redraws under;
* in a log (not a terminal): a few plain lines, not a flood: nothing for work that ends within
  ``QUIET_S`` seconds, then a line at most every ``LOG_EVERY_S`` seconds or quarter of the work,
  and one at the end.

Time left is the time per item so far times the items left (a rough guide: items differ in size).
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from . import validate

BAR_CHARS = 20
QUIET_S = 3.0        # a log hears nothing of work that ends within this many seconds
LOG_EVERY_S = 30.0   # and then at most a line this often (or every quarter of the work)
REDRAW_S = 0.1       # a terminal line is redrawn at most this often


def clock(seconds: float) -> str:
    """``mm:ss`` (``h:mm:ss`` past an hour), as tqdm writes times."""
    seconds = max(0, int(round(validate.number("seconds", seconds))))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython") and __import__("IPython").get_ipython()
    return bool(shell) and getattr(shell, "kernel", None) is not None


class Progress:
    """``total`` items of ``unit`` (plural, e.g. "sizes"), shown as ``label``; ``stream``: where text
    goes outside a notebook (default stderr); ``notebook``: force (True) or refuse (False) the in-place
    notebook line (default: in a notebook kernel)."""

    def __init__(self, total: int, label: str, unit: str = "items", stream: TextIO | None = None, notebook: bool | None = None) -> None:
        self.total = validate.integer("total", total, low=0)
        self.label, self.unit = str(label), str(unit)
        self.done, self.note = 0, ""
        self.start = time.monotonic()
        self._stream = stream if stream is not None else sys.stderr
        self._notebook = _in_notebook() if notebook is None else bool(notebook)
        self._tty = not self._notebook and bool(getattr(self._stream, "isatty", lambda: False)())
        self._drawn_at, self._logged_at, self._logged_quarter = -1.0, None, 0
        self._handle, self._on_line, self._closed = None, False, False
        self._show(force=True)

    # -- the line
    def line(self) -> str:
        """The progress line as it reads now."""
        elapsed = time.monotonic() - self.start
        share = self.done / self.total if self.total else 1.0
        filled = int(round(BAR_CHARS * share))
        left = (elapsed / self.done * (self.total - self.done)) if self.done else None
        timing = f"{clock(elapsed)}<{clock(left) if left is not None else '?'}"
        note = f"  {self.note}" if self.note else ""
        return (f"{self.label}  {self.done}/{self.total} {self.unit} |{'#' * filled}{' ' * (BAR_CHARS - filled)}| "
                f"{share:4.0%} [{timing}]{note}")

    def update(self, n: int = 1, note: str | None = None) -> None:
        """``n`` more items done; ``note``: what is under way now (e.g. the next size)."""
        self.done = min(self.total, self.done + validate.integer("n", n, low=0))
        if note is not None:
            self.note = str(note)
        self._show()

    def clear(self) -> None:
        """On a terminal, wipe the progress line so other output starts on a clean line."""
        if self._tty and self._on_line:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._on_line = False

    def close(self) -> None:
        """The work ended (done or not): the final line stays."""
        if self._closed:
            return
        self._closed = True
        elapsed = time.monotonic() - self.start
        final = f"{self.line()}  done in {clock(elapsed)}" if self.done == self.total else self.line()
        if self._notebook:
            self._display(final)
        elif self._tty:
            self._stream.write(f"\r\033[K{final}\n")
            self._stream.flush()
        elif self._logged_at is not None or elapsed > QUIET_S:
            self._stream.write(final + "\n")
            self._stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> bool:
        self.close()
        return False

    # -- output
    def _display(self, text: str) -> None:
        from IPython.display import display
        bundle = {"text/plain": text}
        if self._handle is None:
            self._handle = display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)

    def _show(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._notebook:
            if force or now - self._drawn_at >= REDRAW_S or self.done == self.total:
                self._drawn_at = now
                self._display(self.line())
            return
        if self._tty:
            if force or now - self._drawn_at >= REDRAW_S or self.done == self.total:
                self._drawn_at = now
                self._stream.write(f"\r\033[K{self.line()}")
                self._stream.flush()
                self._on_line = True
            return
        # a log: quiet at first, then a line per quarter of the work or per LOG_EVERY_S
        elapsed = now - self.start
        quarter = int(4 * self.done / self.total) if self.total else 4
        if elapsed <= QUIET_S or self.done == self.total:
            return
        if self._logged_at is None or quarter > self._logged_quarter or now - self._logged_at >= LOG_EVERY_S:
            self._logged_at, self._logged_quarter = now, quarter
            self._stream.write(self.line() + "\n")
            self._stream.flush()
