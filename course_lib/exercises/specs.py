"""What each exercise asks, and the feedback it gives, kept apart.

The **spec** is the item's entry in its chapter's exercises file, the one ``course.toml`` names
(:mod:`course_lib.manifest`; ``course_lib/exercises/<chapter>.json``): what is asked and how it is judged
(variable, kind, unit, rtol, points, choices, named mistakes, a chain's source) and, in self-study, the
sealed key. It ships with the learner's package.

The **feedback** is the instructor's (``solutions/feedback.json``, or the file ``$COURSE_LIB_FEEDBACK``
names): per item its ``concept``, ``formula`` and ``steps`` (the hint levels), ``hints`` (factor ->
diagnosis), ``choice_hints`` (letter -> feedback), ``rubric`` and ``model_answer``. Each says something
about the answer, so none ships with a graded learner's copy (``python -m course_lib.grading strip``);
self-study reads it from the course's own ``solutions/``, and only for the option or number answered.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from .. import manifest, validate

ROOT = Path(__file__).resolve().parents[2]
FEEDBACK_ENV = "COURSE_LIB_FEEDBACK"
# Fields that live in the feedback file, never in a spec (public() drops any that a spec still carries).
FEEDBACK_FIELDS = ("concept", "formula", "steps", "hints", "choice_hints", "rubric", "model_answer")
PRIVATE_FIELDS = FEEDBACK_FIELDS


def chapter(number: str) -> dict:
    """The exercises of chapter ``number`` ("05"), from the file its course.toml entry names."""
    entries = {c.number: c for c in manifest.chapters() if c.exercises}
    if number not in entries:
        raise ValueError(f"exercise chapter {number!r} has no exercises file in course.toml; chapters with "
                         f"exercises: {', '.join(entries)}")
    path = entries[number].exercises_path
    if not path.is_file():
        raise ValueError(f"exercise chapter {number!r}: course.toml names the exercises file {path}, "
                         "which is not there")
    return _read(str(path))


@lru_cache(maxsize=None)
def _read(path: str) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def chapters() -> list[str]:
    """Chapter keys that have exercises in course.toml, e.g. ['00', '01', ...]."""
    return [c.number for c in manifest.chapters() if c.exercises]


def raw_spec(exercise_id) -> dict:
    """One exercise's entry as stored (not a copy: never hand it to a learner)."""
    if not isinstance(exercise_id, str) or "." not in exercise_id:
        raise ValueError(f"exercise_id must look like '00.1' (chapter.number), got {exercise_id!r}")
    exercises = chapter(exercise_id.split(".")[0])
    if exercise_id not in exercises:
        raise ValueError(f"exercise_id {exercise_id!r} is unknown; this chapter has {', '.join(sorted(exercises))}")
    return exercises[exercise_id]


def public(s: dict) -> dict:
    """A copy of an entry without its private fields."""
    return json.loads(json.dumps({k: v for k, v in s.items() if k not in PRIVATE_FIELDS}))


def spec(exercise_id) -> dict:
    """The description of one exercise, e.g. ``spec("00.1")`` (a copy; it holds no answer, no rubric and
    no model answer)."""
    return public(raw_spec(exercise_id))


def exercises(number) -> dict:
    """All exercises of a chapter, id -> description (as :func:`spec` gives it)."""
    return {i: public(s) for i, s in chapter(validate.choice("chapter", number, chapters())).items()}


def feedback_path() -> Path:
    """Where the feedback file is: ``$COURSE_LIB_FEEDBACK`` or ``solutions/feedback.json``."""
    return Path(os.environ.get(FEEDBACK_ENV) or ROOT / "solutions" / "feedback.json")


def feedback(exercise_id) -> dict:
    """One item's feedback (hints, choice feedback, rubric, model answer); {} where the file is not here
    (a graded learner's copy) or has no entry for it."""
    path = feedback_path()
    if not path.is_file():
        return {}
    return json.loads(json.dumps(_read(str(path)).get(exercise_id, {})))


def full(exercise_id) -> dict:
    """The spec with its feedback (the judging's view; never hand it to a graded learner)."""
    return {**spec(exercise_id), **feedback(exercise_id)}


def written(exercise_id) -> dict:
    """A written exercise's rubric and model answer ({} fields empty where the feedback file is not here)."""
    s = feedback(exercise_id)
    return {"rubric": list(s.get("rubric", [])), "model_answer": s.get("model_answer", "")}
