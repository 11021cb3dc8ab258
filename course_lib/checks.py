"""Feedback for graded exercises: rounding told apart from mistakes, hints in levels, no answers inside.

Each exercise is described in its chapter's exercises file, the one ``course.toml`` names
(:mod:`course_lib.manifest`; ``data/exercises/<chapter>.json`` today)::

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

# Per-session state: wrong attempts per exercise (hint level) and the first answer to each choice exercise.
_ATTEMPTS: dict[str, int] = {}
_FIRST_CHOICE: dict[str, str] = {}
_MODE = {"graded": os.environ.get("COURSE_LIB_MODE", "").lower() == "graded"}


def set_mode(mode: str) -> None:
    """'self-study' (feedback after every answer) or 'graded' (a choice answer gets no feedback:
    the first one counts). A hub can set ``COURSE_LIB_MODE=graded`` instead."""
    _MODE["graded"] = validate.choice("mode", mode, ["self-study", "graded"]) == "graded"


def reset() -> None:
    """Forget attempts and first answers (a fresh start of the notebook's exercises)."""
    _ATTEMPTS.clear()
    _FIRST_CHOICE.clear()


@dataclass(frozen=True)
class Result:
    """The outcome of one check: ``status`` is 'correct', 'wrong', 'not answered' or 'recorded'."""

    exercise: str
    status: str
    message: str
    points: float
    max_points: float

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        mark = {"correct": "✔", "wrong": "✘", "not answered": "…", "recorded": "✎"}[self.status]
        return f"{mark} Exercise {self.exercise}: {self.message}"

    def _repr_html_(self) -> str:
        colour = {"correct": "#1a7f37", "wrong": "#cf222e", "not answered": "#6e7781",
                  "recorded": "#0550ae"}[self.status]
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


class SealedKey:
    """Answers questions about a hashed answer: does it lie in [lo, hi]? is it this letter?"""

    def __init__(self, key: dict):
        self.salt, self.sealed = key["salt"], key["sealed"]

    def within(self, lo: float, hi: float) -> bool:
        lo, hi = min(lo, hi), max(lo, hi)
        if lo <= 0 <= hi and _digest(self.salt, "0") == self.sealed:
            return True
        for sign, a, b in (("+", max(lo, 0.0), hi), ("-", max(-hi, 0.0), -lo)):
            if b <= 0:
                continue
            first, last = _cell(max(a, b * 1e-300)), _cell(b)
            if last - first > _MAX_CELLS:
                first = last - _MAX_CELLS
            if any(_digest(self.salt, f"{sign}{k}") == self.sealed for k in range(first, last + 1)):
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

    def is_choice(self, text: str) -> bool:
        return _digest(self.salt, "choice:" + text) == self.sealed


class PlainKey:
    """The same questions about a known answer (the instructor's key, :mod:`course_lib.grading`)."""

    def __init__(self, expected):
        self.expected = expected

    def within(self, lo: float, hi: float) -> bool:
        return min(lo, hi) <= float(self.expected) <= max(lo, hi)

    def below(self, value: float) -> bool:
        return float(self.expected) < value

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


def spec(exercise_id) -> dict:
    """The description of one exercise, e.g. ``spec("00.1")`` (a copy; it holds no answer)."""
    if not isinstance(exercise_id, str) or "." not in exercise_id:
        raise ValueError(f"exercise_id must look like '00.1' (chapter.number), got {exercise_id!r}")
    exercises = _chapter(exercise_id.split(".")[0])
    if exercise_id not in exercises:
        raise ValueError(f"exercise_id {exercise_id!r} is unknown; this chapter has {', '.join(sorted(exercises))}")
    return json.loads(json.dumps(exercises[exercise_id]))


def exercises(chapter) -> dict:
    """All exercises of a chapter, id -> description."""
    return json.loads(json.dumps(_chapter(validate.choice("chapter", chapter, chapters()))))


def is_unanswered(answer) -> bool:
    """True for the stubs a student notebook starts with: None or ``...``."""
    return answer is None or answer is Ellipsis


# ---------------------------------------------------------------- judging

def evaluate(exercise_id, answer, *, key=None, record: bool = False) -> Result:
    """Judge ``answer`` against exercise ``exercise_id`` without printing anything.

    ``key``: a :class:`PlainKey` to judge against a known answer (grading); default the sealed key.
    ``record``: count a wrong attempt towards the next hint level and remember a first choice.
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
    try:
        if kind == "number":
            ok, message = _judge_number(exercise_id, s, answer, key, record)
        elif kind == "choice":
            ok, message = _judge_choice(exercise_id, s, answer, key, record)
        elif kind == "callable":
            ok, message = _judge_callable(s, answer)
        elif kind == "free_text":
            return _free_text(exercise_id, s, answer, points)
        else:
            raise ValueError(f"exercise {exercise_id} has unknown kind {kind!r}")
    except NotImplementedError:
        return Result(exercise_id, "not answered", NOT_ANSWERED, 0.0, points)
    if ok is None:  # graded mode: a choice is recorded, not judged
        return Result(exercise_id, "recorded", message, 0.0, points)
    return Result(exercise_id, "correct" if ok else "wrong", message, points if ok else 0.0, points)


def check(exercise_id, answer) -> None:
    """Show feedback on an answer (never raises for a wrong or missing one; never shows the expected value).

    Returns None so that, as a cell's last expression, the feedback shows once;
    :func:`evaluate` returns the :class:`Result` for code that needs it.
    """
    result = evaluate(exercise_id, answer, record=True)
    try:
        from IPython.display import display
        display(result)
    except ImportError:  # pragma: no cover - IPython ships with the course
        print(result)


def grade(exercise_id, answer) -> None:
    """Raise ``AssertionError`` unless the answer is correct (self-check; nbgrader uses ``grading.grade``)."""
    result = evaluate(exercise_id, answer)
    if not result.correct:
        raise AssertionError(str(result))


def check_all(namespace: dict, chapter=None) -> list[Result]:
    """Score every exercise whose variable is defined in ``namespace`` (pass ``globals()``).

    A choice exercise scores its first answer checked in this session. Free-text items are
    graded by hand and not scored. Prints one line per exercise and a total; returns the results.
    """
    if not isinstance(namespace, dict):
        raise ValueError("namespace must be a dict of variables, e.g. globals()")
    keys = [validate.choice("chapter", chapter, chapters())] if chapter is not None else chapters()
    results = []
    for key in keys:
        for exercise_id, s in _chapter(key).items():
            if chapter is None and s["variable"] not in namespace:
                continue
            answer = namespace.get(s["variable"])
            if s.get("kind") == "free_text":
                continue
            if s.get("kind") == "choice" and exercise_id in _FIRST_CHOICE and not _MODE["graded"]:
                first = _FIRST_CHOICE[exercise_id]
                result = evaluate(exercise_id, first)
                if not is_unanswered(answer) and str(answer).strip().lower() != first:
                    result = Result(exercise_id, result.status,
                                    f"scored on your first answer ({first.upper()}): {result.message}",
                                    result.points, result.max_points)
                results.append(result)
                continue
            results.append(evaluate(exercise_id, answer))
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


def _as_number(answer) -> float:
    """The answer as a float, or ValueError: real int, float, numpy scalar or numeric str only."""
    import numpy as np

    if isinstance(answer, bool):
        raise ValueError("a bool")
    if isinstance(answer, float):
        return float.__float__(answer)         # a subclass's own __float__ is ignored
    if isinstance(answer, int):
        return float(int.__int__(answer))
    if type(answer) in (np.float16, np.float32, np.int8, np.int16, np.int32, np.int64,
                        np.uint8, np.uint16, np.uint32, np.uint64):
        return float(answer.item())
    if isinstance(answer, str):
        return float(str.__str__(answer))
    raise ValueError(type(answer).__name__)


def _judge_number(exercise_id, s, answer, key, record):
    unit = s.get("unit", "no unit")
    try:
        value = _as_number(answer)
    except (TypeError, ValueError):
        return False, f"Expected a number ({unit}), got {type(answer).__name__}: store a plain float or int."
    except OverflowError:  # an int beyond a float's range
        return False, f"Your answer is far too large to be this quantity ({unit})."
    if not math.isfinite(value):
        return False, "Your answer is not a finite number."
    if value != 0 and not 1e-200 < abs(value) < 1e200:  # beyond any quantity in the course; the key's
        size = "large" if abs(value) > 1 else "small"        # arithmetic would overflow or underflow
        return False, f"Your answer is far too {size} to be this quantity ({unit})."
    rtol = float(s.get("rtol", 0.02))

    def near(factor, relative, absolute):  # is expected x factor within max(relative, absolute) of the answer?
        width = max(relative * abs(value) / (1 - relative), absolute)
        return key.within((value - width) / factor, (value + width) / factor)

    if key.within(value / (1 + rtol), value / (1 - rtol) if rtol < 1 else math.inf):
        return True, "Correct."
    ulp = None if s.get("integer") else last_figure(value)
    if ulp is not None:
        # A mistake that gives exactly the figures typed (to a twentieth of the last one) beats rounding,
        # unless rounding the right value gives them too: 64 for 63.0 GB/s is the encoding left out.
        if not key.within(value - ulp / 2, value + ulp / 2):
            for factor, hint in _hints(s):
                if near(factor, 0.0, ulp / 20):
                    _count(exercise_id, record)
                    return False, hint
        if key.within(value - ulp, value + ulp):
            return False, (f"Close, but rounded: your answer shows {significant_figures(value)} significant "
                           f"figure(s) and the check allows {rtol:.1%}. Keep more figures (at least 4), or "
                           "store the value Python computes instead of typing it.")
    for factor, hint in _hints(s):
        # rounding cannot explain the answer (above); this mistake does, to the answer's own precision
        if near(factor, rtol, (ulp or 0.0) / 2):
            _count(exercise_id, record)
            return False, hint
    level = _count(exercise_id, record)
    below = key.below(value)
    direction = {True: "too large", False: "too small", None: "off by more than 1000x"}[below]
    text = f"Not yet: your answer is {direction} (the answer is in {unit})."
    extra = s.get("concept") if level <= 1 else s.get("formula") or s.get("concept")
    return False, text + (f" {'Idea' if level <= 1 else 'Formula'}: {extra}" if extra else "")


def _count(exercise_id, record) -> int:
    if record:
        _ATTEMPTS[exercise_id] = _ATTEMPTS.get(exercise_id, 0) + 1
    return max(1, _ATTEMPTS.get(exercise_id, 0))


def _hints(s):
    """Exercise-specific hints first (they know what the quantity is), then the named mistakes."""
    for item in s.get("hints", []):
        yield float(item["factor"]), item["hint"]
    for name in s.get("mistakes", []):
        yield from COMMON_MISTAKES[name]


def _judge_choice(exercise_id, s, answer, key, record):
    if not isinstance(answer, str):
        return False, f"Answer with a letter in quotes, e.g. \"A\"; got {type(answer).__name__}."
    text = str.__str__(answer).strip().lower()
    allowed = s.get("choices")
    if allowed and text not in [str(c).lower() for c in allowed]:
        return False, f"Answer with one of: {', '.join(map(str, allowed))}."
    if record:
        _FIRST_CHOICE.setdefault(exercise_id, text)
    if _MODE["graded"] and record:
        return None, f"Answer {text.upper()} recorded. In graded mode your first answer counts; feedback comes with the grade."
    if key.is_choice(text):
        return True, "Correct."
    hints = {str(k).lower(): v for k, v in s.get("choice_hints", {}).items()}
    return False, hints.get(text, s.get("concept", "Not this one; reread the section."))


def _judge_callable(s, answer):
    if not callable(answer):
        return False, "Expected a function."
    module_name, _, func_name = s["checker"].partition(":")
    checker = getattr(importlib.import_module(module_name), func_name)
    outcome = checker(answer)  # returns (ok, message) or raises NotImplementedError when unanswered
    return bool(outcome[0]), str(outcome[1])


def _free_text(exercise_id, s, answer, points):
    if not isinstance(answer, str) or len(re.findall(r"\w+", answer)) < MIN_WORDS:
        return Result(exercise_id, "not answered", f"{NOT_ANSWERED} (write at least {MIN_WORDS} words)", 0.0, points)
    rubric = "\n".join(f"  - {item}" for item in s.get("rubric", []))
    return Result(exercise_id, "recorded", (
        "Your answer is recorded; it is graded by hand with this rubric:\n" + rubric +
        f"\nCompare with a model answer:\n  {s.get('model_answer', '')}"), 0.0, points)
