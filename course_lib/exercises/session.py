"""One learner session's state: the mode, the hint level reached per exercise, the first answer to each
choice exercise, and the last answer checked per exercise (a chained exercise's input)."""
from __future__ import annotations

import os

from .. import validate

HINT_LEVELS = (("concept", "the idea"), ("formula", "the formula"), ("steps", "the steps"))
LEVEL: dict[str, int] = {}
FIRST_CHOICE: dict[str, str] = {}
LAST: dict[str, object] = {}
MODE = {"graded": os.environ.get("COURSE_LIB_MODE", "").lower() == "graded"}


def graded() -> bool:
    """True in graded mode (``COURSE_LIB_MODE=graded`` or ``set_mode('graded')``)."""
    return MODE["graded"]


def set_mode(mode: str) -> None:
    """'self-study' (feedback after every answer) or 'graded' (answers are recorded; feedback comes
    with the grade). A hub sets ``COURSE_LIB_MODE=graded`` instead."""
    MODE["graded"] = validate.choice("mode", mode, ["self-study", "graded"]) == "graded"


def reset() -> None:
    """Forget attempts and first answers (a fresh start of the notebook's exercises)."""
    LEVEL.clear()
    FIRST_CHOICE.clear()
    LAST.clear()


def count(exercise_id: str, record: bool) -> int:
    """The hint level a wrong answer gets (1, 2, then 3 from the third on), counting it when ``record``."""
    if record:
        LEVEL[exercise_id] = LEVEL.get(exercise_id, 0) + 1
    return min(max(1, LEVEL.get(exercise_id, 0)), len(HINT_LEVELS))
