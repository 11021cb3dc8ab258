"""What each exercise asks: its entry in the chapter's exercises file, the one ``course.toml`` names
(:mod:`course_lib.manifest`; ``course_lib/exercises/<chapter>.json``)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .. import manifest, validate

# Shown by ``check`` after a written attempt, never by ``spec``: a student kernel gets no route to them.
PRIVATE_FIELDS = ("rubric", "model_answer")


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


def written(exercise_id) -> dict:
    """A written exercise's rubric and model answer."""
    s = raw_spec(exercise_id)
    return {"rubric": list(s.get("rubric", [])), "model_answer": s.get("model_answer", "")}
