"""Input checks shared by every public function.

Each helper raises ``ValueError`` whose message names the parameter, the value
received and the allowed range, so a learner sees at once what to fix.
"""
from __future__ import annotations

import difflib
import math
import re
from numbers import Integral, Real
from typing import Iterable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")
# A size in bytes or a sweep of them, as the cost model takes ``nbytes``: a number, a sequence, an array, or a
# string such as "16M" (``units.parse_size``).
Sizes = float | str | Sequence[float] | np.ndarray


class InputWarning(UserWarning):
    """An input that is allowed but suspicious (``plausible``); the command line prints it as one ``warning:`` line."""


def describe(value: object) -> str:
    """A short repr of ``value`` for a message (60 characters at most; never raises)."""
    try:
        text = repr(value)
    except Exception:  # a learner's object whose __repr__ raises
        text = f"<{type(value).__name__} object>"
    if isinstance(value, int) and not isinstance(value, bool) and len(text) > 60:
        return f"an integer of {len(text)} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def _to_float(name: str, value: object) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got {describe(value)} (too large for a float)") from None


def number(name: str, value: object, *, low: float | None = None, high: float | None = None,
           low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """Return ``value`` as a float after checking it is a finite real in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number, got {describe(value)}")
    value = _to_float(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    _check_bounds(name, value, low, high, low_inclusive, high_inclusive)
    return value


def positive(name: str, value: object) -> float:
    """A finite number > 0."""
    return number(name, value, low=0.0, low_inclusive=False)


def non_negative(name: str, value: object) -> float:
    """A finite number >= 0."""
    return number(name, value, low=0.0)


def fraction(name: str, value: object) -> float:
    """A number in (0, 1]: an efficiency or a share."""
    return number(name, value, low=0.0, high=1.0, low_inclusive=False)


def integer(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (bools refused) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {describe(value)}")
    value = int(value)
    _check_bounds(name, value, low, high, True, True)
    return value


def _folded(text: str) -> str:
    """``text`` lower-cased with hyphens, underscores and spaces removed: how a typo is compared."""
    return re.sub(r"[-_\s]+", "", str(text).lower())


def closest(value: object, allowed: Iterable, n: int = 3) -> list[str]:
    """The names of ``allowed`` closest to ``value`` (at most ``n``, best first; [] when none is close).

    Compared lower-cased without hyphens or underscores (``dgxh100`` is close to ``dgx-h100``), by
    ``difflib.get_close_matches``; a name that contains ``value`` (``h100`` in ``dgx-h100``) is close too.
    """
    names = [str(a) for a in allowed]
    folded = {}
    for option in names:
        folded.setdefault(_folded(option), option)
    key = _folded(value)
    if not key:
        return []
    scored = [(difflib.SequenceMatcher(None, key, f).ratio(), folded[f])
              for f in difflib.get_close_matches(key, list(folded), n=n, cutoff=0.6)]
    found = [option for ratio, option in scored if ratio >= scored[0][0] - 0.1]  # the best, and any as close
    if len(key) >= 3 and not found:
        found = [option for f, option in folded.items() if key in f]
    return found[:n]


def did_you_mean(value: object, allowed: Iterable) -> str:
    """``"; did you mean dgx-h100?"`` (or ``"dgx-h100 or hgx-h100"``) for ``value``, or "" when no name is close."""
    found = closest(value, allowed)
    if not found:
        return ""
    return f"; did you mean {found[0] if len(found) == 1 else ', '.join(found[:-1]) + ' or ' + found[-1]}?"


def choice(name: str, value: object, allowed: Iterable[str], *, fold: bool = False) -> str:
    """One of ``allowed`` (case-insensitive for strings); returns the canonical spelling.

    ``fold``: hyphens, underscores and spaces are ignored too (``all-reduce``, ``allreduce`` -> ``all_reduce``).
    A miss names the allowed values and, when one is close to ``value``, suggests it (``did_you_mean``).
    """
    allowed = list(allowed)
    if isinstance(value, str):
        for option in allowed:
            if value.lower() == option.lower() or (fold and _folded(value) == _folded(option)):
                return option
    hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
    listed = ", ".join(map(str, allowed))
    if hint and len(listed) > 120:  # the suggestion first, the long list after it
        raise ValueError(f"{name} must be one of {len(allowed)} names; got {describe(value)}{hint} "
                         f"(allowed: {listed})")
    raise ValueError(f"{name} must be one of {listed}; got {describe(value)}{hint}")


def sizes(name: str, value: object, *, low: float = 0.0, allow_zero: bool = False) -> np.ndarray:
    """A scalar or array of finite sizes; returns a float64 array (0-d for scalars)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got {describe(value)} (too large for a float)") from None
    except Exception:  # TypeError, ValueError, or whatever a learner's own __float__ raises
        raise ValueError(f"{name} must be a number or an array of numbers, got {describe(value)}") from None
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {describe(value)}")
    bad = array < low if allow_zero else array <= low
    if np.any(bad):
        first = array[bad].flat[0]
        bound = f">= {low:g}" if allow_zero else f"> {low:g}"
        raise ValueError(f"{name} must be {bound}, got {first:g}")
    return array


def finite_result(what: str, value: T) -> T:
    """Return a computed ``value`` (scalar or array) after checking it holds no inf or NaN.

    ``what`` names the inputs that made it (``"nbytes / bandwidth"``): a ValueError names them when
    extreme but allowed inputs (a subnormal bandwidth, 1e300 bytes) overflow a float.
    """
    with np.errstate(all="ignore"):
        ok = bool(np.all(np.isfinite(np.asarray(value, dtype=np.float64))))
    if not ok:
        raise ValueError(f"{what} overflows a float (the result is not finite); use values in a realistic range")
    return value


def _check_bounds(name: str, value: float, low: float | None, high: float | None, low_inclusive: bool, high_inclusive: bool) -> None:
    too_low = low is not None and (value < low if low_inclusive else value <= low)
    too_high = high is not None and (value > high if high_inclusive else value >= high)
    if too_low or too_high:
        left = "[" if low_inclusive else "("
        right = "]" if high_inclusive else ")"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        got = describe(value) if isinstance(value, int) and abs(value) > 10**15 else f"{value:g}"
        raise ValueError(f"{name} must be in {left}{lo}, {hi}{right}, got {got}")
