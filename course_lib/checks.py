"""Feedback for graded exercises: relative tolerances, specific hints, no spoilers.

Each exercise is described in ``data/exercises/<chapter>.json``::

    "00.1": {"variable": "gradient_bytes", "kind": "number", "expected": 1.4e11,
             "rtol": 0.01, "unit": "bytes", "points": 1,
             "mistakes": ["bits", "gib"],                       # named common mistakes
             "hints": [{"factor": 0.5, "hint": "..."}]}         # exercise-specific

``check(id, answer)`` prints feedback and never raises for a wrong or missing
answer, so a student notebook always runs top to bottom; it never shows the
expected value. ``grade(id, answer)`` raises ``AssertionError`` unless correct:
hidden tests (and so nbgrader's autograder) use it. ``check_all(namespace)``
scores a whole notebook for self-paced learners.
"""
from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from . import manifest, validate

NOT_ANSWERED = "not answered yet"

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


@dataclass(frozen=True)
class Result:
    """The outcome of one check: ``status`` is 'correct', 'wrong' or 'not answered'."""

    exercise: str
    status: str
    message: str
    points: float
    max_points: float

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        mark = {"correct": "✔", "wrong": "✘", "not answered": "…"}[self.status]
        return f"{mark} Exercise {self.exercise}: {self.message}"

    def _repr_html_(self) -> str:
        colour = {"correct": "#1a7f37", "wrong": "#cf222e", "not answered": "#6e7781"}[self.status]
        from html import escape
        return f'<div style="color:{colour}"><b>Exercise {escape(self.exercise)}</b>: {escape(self.message)}</div>'


@lru_cache(maxsize=None)
def _chapter(chapter: str) -> dict:
    path = resources.files("course_lib").joinpath(f"data/exercises/{chapter}.json")
    if not path.is_file():
        raise ValueError(f"exercise chapter {chapter!r} has no data file data/exercises/{chapter}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def chapters() -> list[str]:
    """Chapter keys that have exercises in course.toml, e.g. ['00', '01', ...]."""
    return [c.number for c in manifest.chapters() if c.exercises]


def spec(exercise_id) -> dict:
    """The description of one exercise, e.g. ``spec("00.1")``."""
    if not isinstance(exercise_id, str) or "." not in exercise_id:
        raise ValueError(f"exercise_id must look like '00.1' (chapter.number), got {exercise_id!r}")
    exercises = _chapter(exercise_id.split(".")[0])
    if exercise_id not in exercises:
        raise ValueError(f"exercise_id {exercise_id!r} is unknown; this chapter has {', '.join(sorted(exercises))}")
    return exercises[exercise_id]


def exercises(chapter) -> dict:
    """All exercises of a chapter, id -> description."""
    return dict(_chapter(validate.choice("chapter", chapter, chapters())))


def is_unanswered(answer) -> bool:
    """True for the stubs a student notebook starts with: None or ``...``."""
    return answer is None or answer is Ellipsis


def evaluate(exercise_id, answer) -> Result:
    """Judge ``answer`` against exercise ``exercise_id`` without printing anything."""
    s = spec(exercise_id)
    points = float(s.get("points", 1))
    if is_unanswered(answer):
        return Result(exercise_id, "not answered", NOT_ANSWERED, 0.0, points)
    kind = s.get("kind", "number")
    try:
        if kind == "number":
            ok, message = _judge_number(s, answer)
        elif kind == "choice":
            ok, message = _judge_choice(s, answer)
        elif kind == "callable":
            ok, message = _judge_callable(s, answer)
        else:
            raise ValueError(f"exercise {exercise_id} has unknown kind {kind!r}")
    except NotImplementedError:
        return Result(exercise_id, "not answered", NOT_ANSWERED, 0.0, points)
    return Result(exercise_id, "correct" if ok else "wrong", message, points if ok else 0.0, points)


def check(exercise_id, answer) -> None:
    """Show feedback on an answer (never raises for a wrong or missing one; never shows the expected value).

    Returns None so that, as a cell's last expression, the feedback shows once;
    :func:`evaluate` returns the :class:`Result` for code that needs it.
    """
    result = evaluate(exercise_id, answer)
    try:
        from IPython.display import display
        display(result)
    except ImportError:  # pragma: no cover - IPython ships with the course
        print(result)


def grade(exercise_id, answer) -> None:
    """Raise ``AssertionError`` unless the answer is correct: for hidden tests and autograders."""
    result = evaluate(exercise_id, answer)
    if not result.correct:
        raise AssertionError(str(result))


def check_all(namespace: dict, chapter=None) -> list[Result]:
    """Score every exercise whose variable is defined in ``namespace`` (pass ``globals()``).

    Prints one line per exercise and a total; returns the results.
    """
    if not isinstance(namespace, dict):
        raise ValueError("namespace must be a dict of variables, e.g. globals()")
    keys = [validate.choice("chapter", chapter, chapters())] if chapter is not None else chapters()
    results = []
    for key in keys:
        for exercise_id, s in _chapter(key).items():
            if chapter is None and s["variable"] not in namespace:
                continue
            results.append(evaluate(exercise_id, namespace.get(s["variable"])))
    for r in results:
        print(r)
    got = sum(r.points for r in results)
    total = sum(r.max_points for r in results)
    print(f"Score: {got:g} / {total:g}")
    return results


# ---------------------------------------------------------------- judges

def _judge_number(s, answer):
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) and not hasattr(answer, "__float__"):
        return False, f"Expected a number ({s.get('unit', 'no unit')}), got {type(answer).__name__}."
    try:
        value = float(answer)
    except Exception:  # TypeError, ValueError, or whatever a learner's own __float__ raises: feedback, not a crash
        return False, f"Expected a single number ({s.get('unit', 'no unit')})."
    if not math.isfinite(value):
        return False, "Your answer is not a finite number."
    expected = float(s["expected"])
    rtol = float(s.get("rtol", 0.02))
    if _close(value, expected, rtol):
        return True, "Correct."
    for factor, hint in _hints(s):
        if _close(value, expected * factor, rtol):
            return False, hint
    direction = "too large" if value > expected else "too small"
    unit = s.get("unit")
    return False, (f"Not yet: your answer is {direction}" + (f" (the answer is in {unit})" if unit else "") +
                   (f". Hint: {s['hint']}" if s.get("hint") else "."))


def _hints(s):
    """Exercise-specific hints first (they know what the quantity is), then the named mistakes."""
    for item in s.get("hints", []):
        yield float(item["factor"]), item["hint"]
    for name in s.get("mistakes", []):
        yield from COMMON_MISTAKES[name]


def _close(value, expected, rtol):
    if expected == 0:
        return abs(value) <= rtol
    return abs(value - expected) <= rtol * abs(expected)


def _judge_choice(s, answer):
    try:
        text = str(answer).strip().lower()
    except Exception:  # a learner's object whose __str__ raises (or returns a non-str): feedback, not a crash
        return False, f"Expected a text answer; this {type(answer).__name__} object cannot be shown as text."
    if text == str(s["expected"]).strip().lower():
        return True, "Correct."
    hints = {str(k).lower(): v for k, v in s.get("choice_hints", {}).items()}
    allowed = s.get("choices")
    if allowed and text not in [str(c).lower() for c in allowed]:
        return False, f"Answer with one of: {', '.join(map(str, allowed))}."
    return False, hints.get(text, s.get("hint", "Not this one; reread the section and try again."))


def _judge_callable(s, answer):
    if not callable(answer):
        return False, "Expected a function."
    module_name, _, func_name = s["checker"].partition(":")
    checker = getattr(importlib.import_module(module_name), func_name)
    outcome = checker(answer)  # returns (ok, message) or raises NotImplementedError when unanswered
    return bool(outcome[0]), str(outcome[1])
