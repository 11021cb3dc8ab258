"""Self-check keys: an answer sealed as a salted hash, never the answer itself.

A number's key is a salted hash of the answer's cell on a logarithmic grid (:data:`GRID` wide, about
0.02%), so a check can ask "does the answer lie in [lo, hi]?" without learning it; a choice's key is a
salted hash of its letter. The answer space is small, so anyone who hashes every cell recovers a
sealed answer: a graded release carries no keys at all (``python -m course_lib.grading strip``), and
the instructor's grader judges with :class:`PlainKey` from ``solutions/answers.json``.
"""
from __future__ import annotations

import hashlib
import math

GRID = 2e-4          # width of one key cell in ln(value): 0.02% relative
MAX_CELLS = 40_000   # an interval wider than this many cells is not searched (a 1-figure answer near 0)


def digest(salt: str, token: str) -> str:
    return hashlib.sha256(f"{salt}:{token}".encode()).hexdigest()[:20]


def cell(value: float) -> int:
    """The grid cell of a nonzero value: floor(ln|value| / GRID)."""
    return math.floor(math.log(abs(value)) / GRID)


def token(value: float) -> str:
    return "0" if value == 0 else f"{'-' if value < 0 else '+'}{cell(value)}"


def seal(value, salt: str) -> dict:
    """The key stored for ``value``: a number (salted hash of its grid cell) or a choice letter."""
    if isinstance(value, str):
        return {"salt": salt, "sealed": digest(salt, "choice:" + value.strip().lower())}
    return {"salt": salt, "sealed": digest(salt, token(float(value)))}


class Key:
    """The one tolerance rule of self-check and grader alike: an interval [lo, hi] holds the answer when
    the answer's key cell (:data:`GRID`, 0.02% wide) overlaps it. A sealed key can only ask that, so the
    grader's plain key asks the same (a plain comparison accepted ~0.01% less than the self-check)."""

    def _holds(self, token: str) -> bool:
        raise NotImplementedError

    def _holds_cell(self, sign: str, first: int, last: int) -> bool:
        raise NotImplementedError

    def is_choice(self, text: str) -> bool:
        raise NotImplementedError

    def within(self, lo: float, hi: float) -> bool:
        lo, hi = min(lo, hi), max(lo, hi)
        if lo <= 0 <= hi and self._holds("0"):
            return True
        for sign, a, b in (("+", max(lo, 0.0), hi), ("-", max(-hi, 0.0), -lo)):
            if b <= 0:
                continue
            first, last = cell(max(a, b * 1e-300)), cell(b)
            if last - first > MAX_CELLS:
                first = last - MAX_CELLS
            if self._holds_cell(sign, first, last):
                return True
        return False

    def below(self, value: float) -> bool | None:
        """True if the answer is below ``value``, False if above, None if too far to tell (> 3000x)."""
        if value <= 0:
            return False
        span = math.exp(GRID * MAX_CELLS)
        if self.within(value / span, value):
            return True
        return False if self.within(value, value * span) else None


class SealedKey(Key):
    """Answers questions about a hashed answer: does it lie in [lo, hi]? is it this letter?"""

    def __init__(self, key: dict):
        self.salt, self.sealed = key["salt"], key["sealed"]

    def _holds(self, token):
        return digest(self.salt, token) == self.sealed

    def _holds_cell(self, sign, first, last):
        return any(self._holds(f"{sign}{k}") for k in range(first, last + 1))

    def is_choice(self, text: str) -> bool:
        return digest(self.salt, "choice:" + text) == self.sealed


class PlainKey(Key):
    """The same questions about a known answer (the instructor's key, :mod:`course_lib.grading`)."""

    def __init__(self, expected):
        self.expected = expected

    def _token(self):
        return token(float(self.expected))

    def _holds(self, token):
        return self._token() == token

    def _holds_cell(self, sign, first, last):
        own = self._token()
        return own[0] == sign and first <= int(own[1:]) <= last

    def is_choice(self, text: str) -> bool:
        return str(self.expected).strip().lower() == text
