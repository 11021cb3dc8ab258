"""Judging a number: correct (within ``rtol``); **rounded** (the answer has 2 or 3 significant figures and
the true value lies within one unit of its last figure: "keep more figures"); a named mistake (``answer``
matches ``expected x factor`` better than it matches ``expected``); else a hint by level (``concept``,
then ``formula``, then ``steps``)."""
from __future__ import annotations

import math
import sys
from functools import lru_cache

from .chains import judge_chain
from .mistakes import hints, level_text, sentence
from .session import HINT_LEVELS, count

def significant_figures(value) -> int | None:
    """How many significant figures a typed number shows (``0.13`` -> 2, ``290`` -> 2); None for 0."""
    if value == 0 or not math.isfinite(value):
        return None
    text = repr(int(value)) if isinstance(value, int) else repr(float(value))
    mantissa = text.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    return max(1, len(mantissa.rstrip("0")))


def last_figure(value) -> float | None:
    """One unit in the last significant figure of a number typed with 2 or 3 figures, else None.

    A float cannot keep a trailing zero (0.10 is 0.1), so one figure counts as two.
    """
    figures = significant_figures(value)
    if figures is None or figures > 3:
        return None
    figures = max(figures, 2)
    return 10.0 ** (math.floor(math.log10(abs(value))) - figures + 1)


class NotReal(ValueError):
    """An answer that is a number but not a real one (complex)."""


def as_number(answer) -> float:
    """The answer as a float, by its own exact type's method (a subclass's ``__float__`` is never trusted):
    int, float, Fraction, Decimal, numeric str, a numpy scalar or 0-d array of a real dtype
    (``np.longdouble`` too) or a 0-d torch tensor. ``NotReal`` for a complex value; ValueError otherwise."""
    import decimal
    import fractions

    kind = type(answer)
    if kind is bool:
        raise ValueError("a bool")
    if isinstance(answer, float):
        return float.__float__(answer)
    if isinstance(answer, int):
        return float(int.__int__(answer))
    if isinstance(answer, str):
        return float(str.__str__(answer))
    if kind is complex:
        raise NotReal(repr(answer))
    if kind is fractions.Fraction:
        return int.__truediv__(int.__int__(answer.numerator), int.__int__(answer.denominator))
    if kind is decimal.Decimal:
        return math.nan if decimal.Decimal.is_nan(answer) else decimal.Decimal.__float__(answer)
    numpy, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if numpy is not None and kind in _numpy_scalar_types(numpy):
        if issubclass(kind, numpy.complexfloating):
            raise NotReal(repr(complex(answer)))
        if issubclass(kind, numpy.bool_):
            raise ValueError("a bool")
        return float(int(answer)) if issubclass(kind, numpy.integer) else float(answer)
    if numpy is not None and kind is numpy.ndarray:
        if answer.ndim != 0:
            raise ValueError(f"an array of shape {answer.shape}")
        return as_number(answer[()])
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        if torch.Tensor.dim(answer) != 0:
            raise ValueError(f"a tensor of shape {tuple(answer.shape)}")
        return as_number(torch.Tensor.item(torch.Tensor.detach(answer).cpu()))
    raise ValueError(kind.__name__)


@lru_cache(maxsize=1)
def _numpy_scalar_types(numpy) -> frozenset:
    """numpy's own scalar types (np.float64, np.longdouble, np.int8, ...): their methods are numpy's."""
    return frozenset(t for t in numpy.sctypeDict.values() if isinstance(t, type) and issubclass(t, numpy.generic))


def judge_number(exercise_id, s, answer, key, record, before=None, before_correct=False):
    """(ok, message) for a number ``answer``; ``before``/``before_correct``: a chained item's earlier answer."""
    unit = s.get("unit", "no unit")
    try:
        value = as_number(answer)
    except NotReal as err:
        return False, (f"Your answer is a complex number, {err}: this quantity ({unit}) is real. If the "
                       "imaginary part is a rounding leftover, store the real part (.real).")
    except (TypeError, ValueError) as err:
        return False, (f"Expected a real number ({unit}), got {err or type(answer).__name__}: store a float or "
                       "int (a numpy scalar or a 0-d tensor works too).")
    except OverflowError:  # an int beyond a float's range
        return False, f"Your answer is far too large to be this quantity ({unit})."
    if math.isnan(value):
        return False, ("Your answer is nan (not a number): it usually comes from 0/0 or inf - inf, or a nan "
                       "in a value it was computed from.")
    if math.isinf(value):
        return False, (f"Your answer is {'-' if value < 0 else ''}infinite: a division by zero, or a number "
                       f"too large for a float? This quantity ({unit}) is finite.")
    if value != 0 and not 1e-200 < abs(value) < 1e200:  # beyond any quantity in the course; the key's
        size = "large" if abs(value) > 1 else "small"        # arithmetic would overflow or underflow
        return False, f"Your answer is far too {size} to be this quantity ({unit})."
    rtol = float(s.get("rtol", 0.02))

    def near(factor, relative, absolute, against=key):  # is expected x factor within max(relative, absolute)?
        width = max(relative * abs(value) / (1 - relative), absolute)
        return against.within((value - width) / factor, (value + width) / factor)

    if key.within(value / (1 + rtol), value / (1 - rtol) if rtol < 1 else math.inf):
        return True, "Correct."
    chained, note = judge_chain(s, value, before, before_correct, rtol)
    if chained:
        count(exercise_id, record)
        return False, chained
    ulp = None if s.get("integer") else last_figure(value)
    if ulp is not None:
        # A mistake that gives exactly the figures typed (to a twentieth of the last one) beats rounding,
        # unless rounding the right value gives them too: 64 for 63.0 GB/s is the encoding left out.
        if not key.within(value - ulp / 2, value + ulp / 2):
            for factor, hint in hints(s):
                if near(factor, 0.0, ulp / 20):
                    count(exercise_id, record)
                    return False, hint + note
        if key.within(value - ulp, value + ulp):
            return False, (f"Close, but rounded: your answer shows {significant_figures(value)} significant "
                           f"figure(s) and the check allows {rtol:.1%}. Keep more figures (at least 4), or "
                           "store the value Python computes instead of typing it." + note)
    for factor, hint in hints(s):
        # rounding cannot explain the answer (above); this mistake does, to the answer's own precision
        if near(factor, rtol, (ulp or 0.0) / 2):
            count(exercise_id, record)
            return False, hint + note
    if ulp is not None and significant_figures(value) == 1:
        first = 10.0 ** math.floor(math.log10(abs(value)))   # one unit of the only figure typed
        if key.within(value - first / 2, value + first / 2):
            return False, (f"Close, but rounded to 1 significant figure: a number typed with one figure is only "
                           f"good to about ±{50 * first / abs(value):.0f}%, and the check allows {rtol:.1%}. "
                           "Keep at least 4 figures, or store the value Python computes instead of typing it." + note)
    level = count(exercise_id, record)
    below = key.below(value)
    direction = {True: "too large", False: "too small", None: "off by more than 1000x"}[below]
    text = f"Not yet: your answer is {direction} (the answer is in {unit})."
    if level >= 2 and (s.get("formula") or s.get("concept")):
        text += f" Formula: {sentence(s.get('formula') or s.get('concept'))}"
    elif s.get("concept"):
        text += f" Idea: {sentence(s['concept'])}"
    if level >= len(HINT_LEVELS):
        text += f" {how_far(key, value, below)}Steps: {level_text(s, len(HINT_LEVELS))}"
    return False, text + note


def how_far(key, value, below) -> str:
    """The third hint level's 'how far': the band of answer / expected, from the sealed key."""
    if below is None:
        return ""
    edges = (1.0, 1.1, 1.5, 2.0, 3.0, 5.0, 10.0, 100.0, 1000.0)
    for low, high in zip(edges, edges[1:]):
        lo, hi = (value / high, value / low) if below else (value * low, value * high)
        if key.within(lo, hi):
            size = "too large" if below else "too small"
            band = f"less than {high:g}x" if low == 1 else f"between {low:g}x and {high:g}x"
            return f"How far: your answer is {band} {size}. "
    return ""
