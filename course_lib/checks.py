"""Feedback for graded exercises: rounding told apart from mistakes, hints in levels, no answers inside.

Each exercise is described in its chapter's exercises file, the one ``course.toml`` names
(:mod:`course_lib.manifest`; ``course_lib/exercises/<chapter>.json``, :mod:`course_lib.exercises`)::

    "00.1": {"variable": "grad_bytes_13b", "kind": "number", "skill": "compute",
             "key": {"salt": "...", "sealed": "..."},   # a salted hash of the answer, never the answer
             "rtol": 0.01, "unit": "bytes", "points": 1,
             "mistakes": ["bits", "gib"],                 # named common mistakes (COMMON_MISTAKES)
             "hints": [{"factor": 0.5, "hint": "..."}],   # exercise-specific mistakes: answer / expected
             "concept": "...",                            # first wrong answer: the idea
             "formula": "..."}                            # second and later: the formula, in symbols

Kinds: ``number``, ``choice`` (``choices``, ``choice_hints``), ``callable`` (``checker``) and
``free_text`` (explain/design: graded by hand in nbgrader with ``rubric``; self-study shows
``model_answer`` after an attempt). ``skill`` is one of ``SKILLS``.

**The package holds no answer.** A number's key is a salted hash of the answer's position on a
logarithmic grid (:data:`GRID` wide, about 0.02%), so a check can ask "does the answer lie in
[lo, hi]?" and never learn it; a choice's key is a salted hash of its letter. This stops a learner
from reading an answer off ``spec()``, not one who hashes every grid point: self-check cannot stop a
determined student. Authoritative answers are the instructor's (``solutions/answers.json``, read by
:mod:`course_lib.grading`, which nbgrader's hidden tests call).

Judging a number, in order: correct (within ``rtol``); **rounded** (the answer has 2 or 3 significant
figures and the true value lies within one unit of its last figure: "keep more figures"); a named
mistake (``answer`` matches ``expected x factor`` better than it matches ``expected``); else a
hint by level (``concept``, then ``formula``). ``check(id, answer)`` prints feedback and never
raises; ``grade(id, answer)`` raises ``AssertionError`` unless correct (self-check grading);
``check_all(namespace)`` scores a notebook, counting the **first** answer of a choice exercise.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import manifest, validate

NOT_ANSWERED = "not answered yet"
SKILLS = ("compute", "predict", "explain", "design", "diagnose")
GRID = 2e-4          # width of one key cell in ln(value): 0.02% relative
_MAX_CELLS = 40_000  # an interval wider than this many cells is not searched (a 1-figure answer near 0)
MIN_WORDS = 15       # a free-text answer shorter than this is "not answered yet"

# Named mistakes and the factor (answer / expected) that gives them away.
COMMON_MISTAKES = {
    "bits": [(8.0, "Your answer is 8x too large: did you count bits where bytes were asked? 1 byte = 8 bits."),
             (1 / 8, "Your answer is 8x too small: did you give bytes where bits were asked, or divide by 8 twice?")],
    "bidirectional": [(2.0, "Your answer is 2x too large: did you use the bidirectional total? "
                            "A transfer in one direction can use only the per-direction half."),
                      (0.5, "Your answer is half the expected value: did you halve a figure that was already per direction?")],
    "gib": [(2**30 / 1e9, "Close, but in binary units: 1 GB = 1e9 bytes, 1 GiB = 2**30 bytes. Use GB (SI)."),
            (1e9 / 2**30, "Close, but in binary units: 1 GiB = 2**30 bytes, not 1e9. Check which unit is asked for.")],
    "ms": [(1e3, "Your answer is 1000x too large: is it in milliseconds where seconds were asked?"),
           (1e-3, "Your answer is 1000x too small: is it in seconds where milliseconds were asked?")],
    "us": [(1e6, "Your answer is 1e6x too large: is it in microseconds where seconds were asked?"),
           (1e-6, "Your answer is 1e6x too small: is it in seconds where microseconds were asked?")],
    "percent": [(100.0, "Your answer is 100x too large: give a fraction (0.25), not a percentage (25)."),
                (0.01, "Your answer is 100x too small: give a percentage here, not a fraction.")],
}

# Generic unit slips, for any number exercise: a power of 1000 off (SI prefixes k, M, G, T).
PREFIXES = {3: "k (1e3)", 6: "M (1e6)", 9: "G (1e9)", 12: "T (1e12)"}
# What each named mistake is, in a few words: the third hint level's checklist.
SLIPS = {"bits": "bits vs bytes (1 byte = 8 bits)",
         "bidirectional": "a per-direction figure vs a bidirectional total (2x)",
         "gib": "GB (1e9 bytes) vs GiB (2**30 bytes)",
         "ms": "seconds vs milliseconds", "us": "seconds vs microseconds",
         "percent": "a fraction vs a percentage"}
HINT_LEVELS = (("concept", "the idea"), ("formula", "the formula"), ("steps", "the steps"))
# Shown by ``check`` after a written attempt, never by ``spec``: a student kernel gets no route to them.
PRIVATE_FIELDS = ("rubric", "model_answer")

# Per-session state: hint level reached per exercise (wrong answers and ``hint`` calls), the first
# answer to each choice exercise, the last answer checked per exercise (a chained exercise's input).
_LEVEL: dict[str, int] = {}
_FIRST_CHOICE: dict[str, str] = {}
_LAST: dict[str, object] = {}
_MODE = {"graded": os.environ.get("COURSE_LIB_MODE", "").lower() == "graded"}


def set_mode(mode: str) -> None:
    """'self-study' (feedback after every answer) or 'graded' (a choice answer gets no feedback:
    the first one counts). A hub can set ``COURSE_LIB_MODE=graded`` instead."""
    _MODE["graded"] = validate.choice("mode", mode, ["self-study", "graded"]) == "graded"


def reset() -> None:
    """Forget attempts and first answers (a fresh start of the notebook's exercises)."""
    _LEVEL.clear()
    _FIRST_CHOICE.clear()
    _LAST.clear()


@dataclass(frozen=True)
class Result:
    """The outcome of one check: ``status`` is 'correct', 'wrong', 'not answered', 'recorded' or 'hint'."""

    exercise: str
    status: str
    message: str
    points: float
    max_points: float

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        mark = {"correct": "✔", "wrong": "✘", "not answered": "…", "recorded": "✎", "hint": "?"}[self.status]
        return f"{mark} Exercise {self.exercise}: {self.message}"

    def _repr_html_(self) -> str:
        colour = {"correct": "#1a7f37", "wrong": "#cf222e", "not answered": "#6e7781",
                  "recorded": "#0550ae", "hint": "#6e7781"}[self.status]
        from html import escape
        return (f'<div style="color:{colour}; white-space: pre-wrap"><b>Exercise {escape(self.exercise)}</b>: '
                f'{escape(self.message)}</div>')


# ---------------------------------------------------------------- keys

def _digest(salt: str, token: str) -> str:
    return hashlib.sha256(f"{salt}:{token}".encode()).hexdigest()[:20]


def _cell(value: float) -> int:
    return math.floor(math.log(abs(value)) / GRID)


def _token(value: float) -> str:
    return "0" if value == 0 else f"{'-' if value < 0 else '+'}{_cell(value)}"


def seal(value, salt: str) -> dict:
    """The key stored for ``value``: a number (salted hash of its grid cell) or a choice letter."""
    if isinstance(value, str):
        return {"salt": salt, "sealed": _digest(salt, "choice:" + value.strip().lower())}
    return {"salt": salt, "sealed": _digest(salt, _token(float(value)))}


class _Key:
    """The one tolerance rule of self-check and grader alike: an interval [lo, hi] holds the answer when
    the answer's key cell (:data:`GRID`, 0.02% wide) overlaps it. A sealed key can only ask that, so the
    grader's plain key asks the same (a plain comparison accepted ~0.01% less than the self-check)."""

    def _holds(self, token: str) -> bool:
        raise NotImplementedError

    def _holds_cell(self, sign: str, first: int, last: int) -> bool:
        raise NotImplementedError

    def within(self, lo: float, hi: float) -> bool:
        lo, hi = min(lo, hi), max(lo, hi)
        if lo <= 0 <= hi and self._holds("0"):
            return True
        for sign, a, b in (("+", max(lo, 0.0), hi), ("-", max(-hi, 0.0), -lo)):
            if b <= 0:
                continue
            first, last = _cell(max(a, b * 1e-300)), _cell(b)
            if last - first > _MAX_CELLS:
                first = last - _MAX_CELLS
            if self._holds_cell(sign, first, last):
                return True
        return False

    def below(self, value: float) -> bool | None:
        """True if the answer is below ``value``, False if above, None if too far to tell (> 3000x)."""
        if value <= 0:
            return False
        span = math.exp(GRID * _MAX_CELLS)
        if self.within(value / span, value):
            return True
        return False if self.within(value, value * span) else None


class SealedKey(_Key):
    """Answers questions about a hashed answer: does it lie in [lo, hi]? is it this letter?"""

    def __init__(self, key: dict):
        self.salt, self.sealed = key["salt"], key["sealed"]

    def _holds(self, token):
        return _digest(self.salt, token) == self.sealed

    def _holds_cell(self, sign, first, last):
        return any(self._holds(f"{sign}{k}") for k in range(first, last + 1))

    def is_choice(self, text: str) -> bool:
        return _digest(self.salt, "choice:" + text) == self.sealed


class PlainKey(_Key):
    """The same questions about a known answer (the instructor's key, :mod:`course_lib.grading`)."""

    def __init__(self, expected):
        self.expected = expected

    def _token(self):
        return _token(float(self.expected))

    def _holds(self, token):
        return self._token() == token

    def _holds_cell(self, sign, first, last):
        token = self._token()
        return token[0] == sign and first <= int(token[1:]) <= last

    def is_choice(self, text: str) -> bool:
        return str(self.expected).strip().lower() == text


# ---------------------------------------------------------------- data

def _chapter(chapter: str) -> dict:
    """The exercises of ``chapter`` ("05"), from the file its course.toml entry names."""
    entries = {c.number: c for c in manifest.chapters() if c.exercises}
    if chapter not in entries:
        raise ValueError(f"exercise chapter {chapter!r} has no exercises file in course.toml; chapters with "
                         f"exercises: {', '.join(entries)}")
    path = entries[chapter].exercises_path
    if not path.is_file():
        raise ValueError(f"exercise chapter {chapter!r}: course.toml names the exercises file {path}, "
                         "which is not there")
    return _read(str(path))


@lru_cache(maxsize=None)
def _read(path: str) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def chapters() -> list[str]:
    """Chapter keys that have exercises in course.toml, e.g. ['00', '01', ...]."""
    return [c.number for c in manifest.chapters() if c.exercises]


def _raw_spec(exercise_id) -> dict:
    if not isinstance(exercise_id, str) or "." not in exercise_id:
        raise ValueError(f"exercise_id must look like '00.1' (chapter.number), got {exercise_id!r}")
    exercises = _chapter(exercise_id.split(".")[0])
    if exercise_id not in exercises:
        raise ValueError(f"exercise_id {exercise_id!r} is unknown; this chapter has {', '.join(sorted(exercises))}")
    return exercises[exercise_id]


def _public(s: dict) -> dict:
    return json.loads(json.dumps({k: v for k, v in s.items() if k not in PRIVATE_FIELDS}))


def spec(exercise_id) -> dict:
    """The description of one exercise, e.g. ``spec("00.1")`` (a copy; it holds no answer, no rubric and
    no model answer: those come with ``check`` after a written attempt)."""
    return _public(_raw_spec(exercise_id))


def exercises(chapter) -> dict:
    """All exercises of a chapter, id -> description (as :func:`spec` gives it)."""
    return {i: _public(s) for i, s in _chapter(validate.choice("chapter", chapter, chapters())).items()}


def _written(exercise_id) -> dict:
    """A written exercise's rubric and model answer (for ``check`` after an attempt, and the instructor's
    solutions through ``grading.model_answer``)."""
    s = _raw_spec(exercise_id)
    return {"rubric": list(s.get("rubric", [])), "model_answer": s.get("model_answer", "")}


def is_unanswered(answer) -> bool:
    """True for the stubs a student notebook starts with: None or ``...``."""
    return answer is None or answer is Ellipsis


# ---------------------------------------------------------------- judging

_NOT_GIVEN = object()


def evaluate(exercise_id, answer, *, key=None, record: bool = False, earlier=_NOT_GIVEN) -> Result:
    """Judge ``answer`` against exercise ``exercise_id`` without printing anything.

    ``key``: a :class:`PlainKey` to judge against a known answer (grading); default the sealed key.
    ``record``: count a wrong attempt towards the next hint level and remember a first choice.
    ``earlier``: for a chained exercise (``"chain": {"from": id}``), the learner's own answer to the
    exercise it builds on; a later answer that follows from a wrong earlier one is told so.
    """
    s = spec(exercise_id)
    points = float(s.get("points", 1))
    if is_unanswered(answer):
        return Result(exercise_id, "not answered", NOT_ANSWERED, 0.0, points)
    kind = s.get("kind", "number")
    if kind in ("number", "choice") and key is None:
        if "key" not in s:  # a graded release carries no sealed answer: the grader judges it (course_lib.grading)
            return Result(exercise_id, "recorded", "Answer recorded; it is judged when your work is graded.", 0.0, points)
        key = SealedKey(s["key"])
    if record:
        _LAST[exercise_id] = answer
    try:
        if kind == "number":
            ok, message = _judge_number(exercise_id, s, answer, key, record, earlier)
        elif kind == "choice":
            ok, message = _judge_choice(exercise_id, s, answer, key, record)
        elif kind == "callable":
            ok, message = _judge_callable(s, answer)
        elif kind == "free_text":
            return _free_text(exercise_id, answer, points)
        else:
            raise ValueError(f"exercise {exercise_id} has unknown kind {kind!r}")
    except NotImplementedError:
        return Result(exercise_id, "not answered", NOT_ANSWERED, 0.0, points)
    if ok is None:  # graded mode: a choice is recorded, not judged
        return Result(exercise_id, "recorded", message, 0.0, points)
    return Result(exercise_id, "correct" if ok else "wrong", message, points if ok else 0.0, points)


def _show(result: Result) -> None:
    try:
        from IPython.display import display
        display(result)
    except ImportError:  # pragma: no cover - IPython ships with the course
        print(result)


def check(exercise_id, answer) -> None:
    """Show feedback on an answer (never raises for a wrong or missing one; never shows the expected value).

    Returns None so that, as a cell's last expression, the feedback shows once;
    :func:`evaluate` returns the :class:`Result` for code that needs it.
    """
    s = spec(exercise_id)
    earlier = _earlier_answer(s["chain"]["from"]) if s.get("chain") else _NOT_GIVEN
    _show(evaluate(exercise_id, answer, record=True, earlier=earlier))


def hint(exercise_id) -> None:
    """Show the next hint of an exercise without answering it: the idea, then the formula, then the
    steps (each call, like each wrong answer, moves one level on; the third is the last)."""
    s = spec(exercise_id)
    level = min(_LEVEL.get(exercise_id, 0) + 1, len(HINT_LEVELS))
    last = _LEVEL.get(exercise_id, 0) >= len(HINT_LEVELS)
    _LEVEL[exercise_id] = level
    message = f"Hint {level} of {len(HINT_LEVELS)} ({HINT_LEVELS[level - 1][1]}): {_level_text(s, level)}"
    if last:
        message += " (That was the last hint; checking an answer names the mistake it finds.)"
    _show(Result(exercise_id, "hint", message, 0.0, float(s.get("points", 1))))


def _earlier_answer(exercise_id):
    """The learner's current answer to ``exercise_id``: its variable in the notebook's namespace (IPython),
    else the last answer checked in this session; ``_NOT_GIVEN`` if neither."""
    variable = spec(exercise_id).get("variable")
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:  # pragma: no cover - IPython ships with the course
        shell = None
    if shell is not None and variable in getattr(shell, "user_ns", {}):
        return shell.user_ns[variable]
    return _LAST.get(exercise_id, _NOT_GIVEN)


def grade(exercise_id, answer) -> None:
    """Raise ``AssertionError`` unless the answer is correct (self-check; nbgrader uses ``grading.grade``)."""
    result = evaluate(exercise_id, answer)
    if not result.correct:
        raise AssertionError(str(result))


def notebook_chapter(namespace: dict) -> tuple[str | None, str]:
    """Which chapter a notebook's namespace belongs to, and why: (chapter or None, reason).

    The rule, in order: (1) the notebook's file name, ``NN_...ipynb`` (IPython's ``__session__``, VS
    Code's ``__vsc_ipynb_file__`` or Jupyter's ``JPY_SESSION_NAME``); (2) the chapter with the largest
    share of its exercise variables defined, then the most defined. A tie is no answer: ValueError
    naming ``chapter``. Variables shared by two chapters (``wrong_claim``) cannot move a chapter whose
    own are all defined.
    """
    numbers = chapters()
    for path in (namespace.get("__session__"), namespace.get("__vsc_ipynb_file__"),
                 os.environ.get("JPY_SESSION_NAME")):
        match = re.match(r"(\d\d)_", Path(path).name) if isinstance(path, str) and path else None
        if match and match.group(1) in numbers:
            return match.group(1), f"the notebook's name, {Path(path).name}"
    shares = {}
    for number in numbers:
        variables = [s["variable"] for s in _chapter(number).values() if s.get("variable")]
        defined = sum(v in namespace for v in variables)
        if defined:
            shares[number] = (defined / len(variables), defined)
    if not shares:
        return None, ("No exercise variable of any chapter is defined here: run the exercise cells first, "
                      "or name the chapter: check_all(globals(), chapter='NN').")
    best = max(shares.values())
    top = [n for n, share in shares.items() if share == best]
    if len(top) > 1:
        raise ValueError(f"chapter: the exercise variables of chapters {', '.join(top)} are equally defined "
                         f"here; name one, e.g. check_all(globals(), chapter={top[0]!r})")
    return top[0], f"{best[1]} of its {round(best[1] / best[0])} exercise variables defined here"


def check_all(namespace: dict, chapter=None) -> list[Result]:
    """Score the exercises of one chapter from a notebook's variables (pass ``globals()``).

    ``chapter`` ("00"): default the chapter this notebook belongs to (:func:`notebook_chapter`), so
    variables another chapter also uses are not scored twice. A choice exercise scores its first answer
    checked in this session. Free-text items are graded by hand and not scored. Prints one line per
    exercise and a total; returns the results.
    """
    if not isinstance(namespace, dict):
        raise ValueError("namespace must be a dict of variables, e.g. globals()")
    if chapter is None:
        chapter, why = notebook_chapter(namespace)
        if chapter is None:
            print(why)
            return []
        print(f"Chapter {chapter} (from {why}):")
    else:
        chapter = validate.choice("chapter", chapter, chapters())
    results = []
    for exercise_id, s in _chapter(chapter).items():
        if not s.get("variable") or s.get("kind") == "free_text":
            continue
        answer = namespace.get(s["variable"])
        if s.get("kind") == "choice" and exercise_id in _FIRST_CHOICE and not _MODE["graded"]:
            first = _FIRST_CHOICE[exercise_id]
            result = evaluate(exercise_id, first)
            if not is_unanswered(answer) and str(answer).strip().lower() != first:
                result = Result(exercise_id, result.status,
                                f"scored on your first answer ({first.upper()}): {result.message}",
                                result.points, result.max_points)
            results.append(result)
            continue
        earlier = _NOT_GIVEN
        if s.get("chain"):
            earlier = namespace.get(_raw_spec(s["chain"]["from"])["variable"], _NOT_GIVEN)
        results.append(evaluate(exercise_id, answer, earlier=earlier))
    for r in results:
        print(r)
    got = sum(r.points for r in results)
    total = sum(r.max_points for r in results)
    print(f"Score: {got:g} / {total:g}")
    return results


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


def _as_number(answer) -> float:
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
        return _as_number(answer[()])
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        if torch.Tensor.dim(answer) != 0:
            raise ValueError(f"a tensor of shape {tuple(answer.shape)}")
        return _as_number(torch.Tensor.item(torch.Tensor.detach(answer).cpu()))
    raise ValueError(kind.__name__)


@lru_cache(maxsize=1)
def _numpy_scalar_types(numpy) -> frozenset:
    """numpy's own scalar types (np.float64, np.longdouble, np.int8, ...): their methods are numpy's."""
    return frozenset(t for t in numpy.sctypeDict.values() if isinstance(t, type) and issubclass(t, numpy.generic))


def _judge_number(exercise_id, s, answer, key, record, earlier=_NOT_GIVEN):
    unit = s.get("unit", "no unit")
    try:
        value = _as_number(answer)
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
    chained, note = _judge_chain(s, value, earlier, rtol)
    if chained:
        _count(exercise_id, record)
        return False, chained
    ulp = None if s.get("integer") else last_figure(value)
    if ulp is not None:
        # A mistake that gives exactly the figures typed (to a twentieth of the last one) beats rounding,
        # unless rounding the right value gives them too: 64 for 63.0 GB/s is the encoding left out.
        if not key.within(value - ulp / 2, value + ulp / 2):
            for factor, hint in _hints(s):
                if near(factor, 0.0, ulp / 20):
                    _count(exercise_id, record)
                    return False, hint + note
        if key.within(value - ulp, value + ulp):
            return False, (f"Close, but rounded: your answer shows {significant_figures(value)} significant "
                           f"figure(s) and the check allows {rtol:.1%}. Keep more figures (at least 4), or "
                           "store the value Python computes instead of typing it." + note)
    for factor, hint in _hints(s):
        # rounding cannot explain the answer (above); this mistake does, to the answer's own precision
        if near(factor, rtol, (ulp or 0.0) / 2):
            _count(exercise_id, record)
            return False, hint + note
    if ulp is not None and significant_figures(value) == 1:
        first = 10.0 ** math.floor(math.log10(abs(value)))   # one unit of the only figure typed
        if key.within(value - first / 2, value + first / 2):
            return False, (f"Close, but rounded to 1 significant figure: a number typed with one figure is only "
                           f"good to about ±{50 * first / abs(value):.0f}%, and the check allows {rtol:.1%}. "
                           "Keep at least 4 figures, or store the value Python computes instead of typing it." + note)
    level = _count(exercise_id, record)
    below = key.below(value)
    direction = {True: "too large", False: "too small", None: "off by more than 1000x"}[below]
    text = f"Not yet: your answer is {direction} (the answer is in {unit})."
    if level >= 2 and (s.get("formula") or s.get("concept")):
        text += f" Formula: {_sentence(s.get('formula') or s.get('concept'))}"
    elif s.get("concept"):
        text += f" Idea: {_sentence(s['concept'])}"
    if level >= len(HINT_LEVELS):
        text += f" {_how_far(key, value, below)}Steps: {_level_text(s, len(HINT_LEVELS))}"
    return False, text + note


def _sentence(text: str) -> str:
    return text if text.rstrip().endswith((".", "?", "!")) else text.rstrip() + "."


def _judge_chain(s, value, earlier, rtol) -> tuple[str | None, str]:
    """A chained exercise's answer judged against the learner's own earlier answer, when that one is wrong.

    ``"chain": {"from": "00.1", "key": <sealed ratio later / earlier>}``: the later answer is
    proportional to the earlier one. Returns (message, "") when the answer follows from the earlier
    one (or does so up to a named mistake), else (None, a note that the earlier answer is wrong, or "").
    Neither value is revealed: the key holds only the ratio, sealed.
    """
    chain = s.get("chain")
    if not chain or earlier is _NOT_GIVEN or is_unanswered(earlier):
        return None, ""
    source = chain["from"]
    try:
        before = _as_number(earlier)
    except (TypeError, ValueError, OverflowError):
        return None, ""
    if not math.isfinite(before) or before == 0 or value == 0 or evaluate(source, earlier).correct:
        return None, ""
    name = _raw_spec(source)["variable"]
    ratio, own = SealedKey(chain["key"]), value / before
    if ratio.within(own / (1 + rtol), own / (1 - rtol)):
        return (f"Your answer follows from your answer to {source} ({name}), and that one is not right yet: "
                f"the method here is right. Fix {source}, then run this cell again."), ""
    for factor, hint in _hints(s):
        if ratio.within(own / factor / (1 + rtol), own / factor / (1 - rtol)):
            return (f"{hint} (Judged against your own {source}, {name}, which is not right yet either: "
                    "fix both.)"), ""
    return None, f" (This answer builds on {source}, {name}, which is not right yet: fix that one first.)"


def _how_far(key, value, below) -> str:
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


def _level_text(s, level: int) -> str:
    """The text of hint level 1 (idea), 2 (formula) or 3 (steps; else a checklist of this exercise's slips)."""
    concept, formula = s.get("concept"), s.get("formula")
    if level == 1:
        return concept or formula or "No written hint here: reread the section, then check an answer."
    if level == 2:
        return formula or concept or "No formula here: reread the section, then check an answer."
    if s.get("steps"):
        return s["steps"]
    slips = [SLIPS[name] for name in s.get("mistakes", [])]
    unit = s.get("unit")
    checklist = "; ".join(slips + ([f"the unit asked, {unit}, and each prefix on the way (k, M, G, T)"]
                                   if unit else []))
    return (f"write the formula with its symbols first, then each number with its unit, and compare term by "
            f"term. Check the usual slips: {checklist}." if checklist else
            "write each step with its unit and compare it with the section's worked example, term by term.")


def _count(exercise_id, record) -> int:
    """The hint level a wrong answer gets (1, 2, then 3 from the third on), counting it when ``record``."""
    if record:
        _LEVEL[exercise_id] = _LEVEL.get(exercise_id, 0) + 1
    return min(max(1, _LEVEL.get(exercise_id, 0)), len(HINT_LEVELS))


def _hints(s):
    """Exercise-specific hints first (they know what the quantity is), then the named mistakes, then
    the unit slips by a power of 1000 that neither already covers."""
    listed = [(float(item["factor"]), item["hint"]) for item in s.get("hints", [])]
    for name in s.get("mistakes", []):
        listed += COMMON_MISTAKES[name]
    yield from listed
    for exponent in (9, -9, 6, -6, 3, -3, 12, -12):
        factor = 10.0 ** exponent
        if not any(abs(f / factor - 1) < 0.01 for f, _ in listed):
            yield factor, _unit_slip(exponent, s.get("unit", "no unit"))


def _unit_slip(exponent: int, unit: str) -> str:
    size = f"1e{abs(exponent)}"
    head = f"Your answer is {size} times too {'large' if exponent > 0 else 'small'}: a unit slip. The answer is in {unit}"
    if abs(exponent) == 9 and "GB" in unit:
        return head + (": did you leave it in bytes (or bytes/s)? 1 GB = 1e9 bytes." if exponent > 0 else
                       ": did you divide by 1e9 twice, or give GB where bytes were asked?")
    return head + ": check each prefix on the way (k = 1e3, M = 1e6, G = 1e9, T = 1e12; m = 1e-3, µ = 1e-6)."


def _judge_choice(exercise_id, s, answer, key, record):
    if not isinstance(answer, str):
        return False, f"Answer with a letter in quotes, e.g. \"A\"; got {type(answer).__name__}."
    text = str.__str__(answer).strip().lower()
    allowed = s.get("choices")
    if allowed and text not in [str(c).lower() for c in allowed]:
        return False, f"Answer with one of: {', '.join(map(str, allowed))}."
    note = ""
    if record:
        first = _FIRST_CHOICE.setdefault(exercise_id, text)
        note = (" Your first answer is the one that counts in your score." if first == text else
                f" Your score keeps your first answer, {first.upper()}: the first answer counts.")
    if _MODE["graded"] and record:
        return None, f"Answer {text.upper()} recorded. In graded mode your first answer counts; feedback comes with the grade."
    if key.is_choice(text):
        return True, "Correct." + note
    hints = {str(k).lower(): v for k, v in s.get("choice_hints", {}).items()}
    return False, hints.get(text, s.get("concept", "Not this one; reread the section.")) + note


def _judge_callable(s, answer):
    if not callable(answer):
        return False, "Expected a function."
    module_name, _, func_name = s["checker"].partition(":")
    checker = getattr(importlib.import_module(module_name), func_name)
    outcome = checker(answer)  # returns (ok, message) or raises NotImplementedError when unanswered
    return bool(outcome[0]), str(outcome[1])


def _free_text(exercise_id, answer, points):
    if not isinstance(answer, str) or len(re.findall(r"\w+", answer)) < MIN_WORDS:
        return Result(exercise_id, "not answered", f"{NOT_ANSWERED} (write at least {MIN_WORDS} words)", 0.0, points)
    written = _written(exercise_id)
    rubric = "\n".join(f"  - {item}" for item in written["rubric"])
    return Result(exercise_id, "recorded", (
        "Your answer is recorded; it is graded by hand with this rubric:\n" + rubric +
        f"\nCompare with a model answer:\n  {written['model_answer']}"), 0.0, points)
