"""Everything about an exercise. Per chapter: ``NN.json`` (what each item asks and how it is judged, and in
self-study the sealed key), ``chNN.py`` (the checkers a ``callable`` item names,
``"checker": "course_lib.exercises.chNN:function"``) and ``answers_chNN.py`` (the answer models,
``MODELS``: exercise id -> the library computation its answer comes from, called with the item's entry
of the instructor's answer key). The judging is one module per idea (``specs``, ``keys``, ``judge`` and
the kinds it dispatches to; ``ring``, the ring checker); the learner's calls are :mod:`course_lib.checks`.

Nothing a graded learner gets holds an answer: the key is the instructor's (``solutions/answers.json``),
the hints and model answers too (``solutions/feedback.json``), and a learner's copy
(``python -m course_lib.grading strip``) leaves out the sealed keys and every ``answers_chNN.py``. A chapter
module imports the chapter code it reuses (``course_lib.chapters``: widgets, matplotlib) inside its
functions, so importing this package and its models stays cheap.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def chapter_modules() -> list[str]:
    """The chapter modules of this package (``course_lib.exercises.ch05``, ``...answers_ch05``, ...),
    checkers and answer models; a learner's copy has no answer models, so they are missing there."""
    paths = sorted(HERE.glob("ch[0-9][0-9].py")) + sorted(HERE.glob("answers_ch[0-9][0-9].py"))
    return [f"{__name__}.{p.stem}" for p in paths]


def models() -> dict:
    """Every answer model of every chapter: exercise id -> ``function(key_entry)``."""
    out = {}
    for name in chapter_modules():
        out.update(getattr(importlib.import_module(name), "MODELS", {}))
    return out


def model(exercise_id: str):
    """The answer model of one exercise (ValueError naming it when no chapter module has one)."""
    found = models()
    if exercise_id not in found:
        raise ValueError(f"model {exercise_id!r} has no answer model; models: {', '.join(sorted(found))} "
                         "(each chapter's MODELS in course_lib/exercises/chNN.py)")
    return found[exercise_id]


def key_field(entry: dict, field: str, kind: type):
    """One input of a model answer, read from its key entry (ValueError naming the field when it is missing)."""
    value = entry.get(field)
    if not isinstance(value, kind):
        raise ValueError(f"the answer key's entry of model {entry.get('model')!r} must have {field!r} "
                         f"({kind.__name__}); got {value!r}")
    return value


def chapter_file(chapter) -> dict:
    """The exercises file of a :class:`course_lib.manifest.Chapter` as it stands (id -> entry; {} without one)."""
    path = chapter.exercises_path
    if path is None or not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))
