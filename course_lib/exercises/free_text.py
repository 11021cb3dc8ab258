"""A written answer (explain, design): recorded, and graded by hand in nbgrader with its rubric."""
from __future__ import annotations

import re

from .result import NOT_ANSWERED, Result
from .specs import written

MIN_WORDS = 15       # a free-text answer shorter than this is "not answered yet"


def free_text(exercise_id, answer, points) -> Result:
    """A written answer: at least :data:`MIN_WORDS` words is recorded (graded by hand)."""
    if not isinstance(answer, str) or len(re.findall(r"\w+", answer)) < MIN_WORDS:
        return Result(exercise_id, "not answered", f"{NOT_ANSWERED} (write at least {MIN_WORDS} words)", 0.0, points)
    text = written(exercise_id)
    rubric = "\n".join(f"  - {item}" for item in text["rubric"])
    return Result(exercise_id, "recorded", (
        "Your answer is recorded; it is graded by hand with this rubric:\n" + rubric +
        f"\nCompare with a model answer:\n  {text['model_answer']}"), 0.0, points)
