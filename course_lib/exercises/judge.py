"""Judging one answer by its exercise's kind: ``number``, ``choice``, ``callable`` (a function the learner
wrote) and ``free_text`` (recorded, graded by hand)."""
from __future__ import annotations

import math

from .choices import judge_choice
from .code import judge_callable
from .free_text import free_text
from .keys import SealedKey
from .numbers import as_number, judge_number
from .result import NOT_ANSWERED, NOT_GIVEN, Result, is_unanswered
from .session import LAST, graded
from .specs import feedback, raw_spec, spec


def evaluate(exercise_id, answer, *, key=None, record: bool = False, earlier=NOT_GIVEN) -> Result:
    """Judge ``answer`` against exercise ``exercise_id`` without printing anything.

    ``key``: a :class:`~course_lib.exercises.keys.PlainKey` to judge against a known answer (grading);
    default the sealed key. ``record``: count a wrong attempt towards the next hint level and remember
    a first choice. ``earlier``: for a chained exercise (``"chain": {"from": id}``), the learner's own
    answer to the exercise it builds on; a later answer that follows from a wrong earlier one is told so.
    """
    s = spec(exercise_id)
    points = float(s.get("points", 1))
    if is_unanswered(answer):
        return Result(exercise_id, "not answered", NOT_ANSWERED, 0.0, points)
    kind = s.get("kind", "number")
    in_kernel_graded = key is None and graded()   # a graded learner's kernel: nothing is judged or explained
    if kind in ("number", "choice") and key is None:
        if kind == "choice" and in_kernel_graded and record:
            ok, message = judge_choice(exercise_id, s, answer, None, record)  # keeps the first letter only
            return Result(exercise_id, "recorded" if ok is None else "wrong", message, 0.0, points)
        if in_kernel_graded or "key" not in s:  # a graded release carries no sealed answer: the grader judges it
            return Result(exercise_id, "recorded", "Answer recorded; it is judged when your work is graded.", 0.0, points)
        key = SealedKey(s["key"])
    if not in_kernel_graded:
        s = {**s, **feedback(exercise_id)}   # the hints and feedback, where this copy of the course has them
    if record:
        LAST[exercise_id] = answer
    try:
        if kind == "number":
            before, before_correct = _earlier(s, earlier)
            ok, message = judge_number(exercise_id, s, answer, key, record, before, before_correct)
        elif kind == "choice":
            ok, message = judge_choice(exercise_id, s, answer, key, record)
        elif kind == "callable":
            ok, message = judge_callable(s, answer)
        elif kind == "free_text":
            return free_text(exercise_id, s, answer, points, graded=in_kernel_graded)
        else:
            raise ValueError(f"exercise {exercise_id} has unknown kind {kind!r}")
    except NotImplementedError:
        return Result(exercise_id, "not answered", NOT_ANSWERED, 0.0, points)
    if ok is None:  # graded mode: a choice is recorded, not judged
        return Result(exercise_id, "recorded", message, 0.0, points)
    return Result(exercise_id, "correct" if ok else "wrong", message, points if ok else 0.0, points)


def _earlier(s, earlier) -> tuple[float | None, bool]:
    """A chained item's earlier answer as a number (None when absent or not a number), and whether it is right."""
    chain = s.get("chain")
    if not chain or earlier is NOT_GIVEN or is_unanswered(earlier):
        return None, False
    try:
        before = as_number(earlier)
    except (TypeError, ValueError, OverflowError):
        return None, False
    if not math.isfinite(before) or before == 0:
        return None, False
    return before, evaluate(chain["from"], earlier).correct


__all__ = ["evaluate", "raw_spec"]
