"""A written answer (explain, design): recorded, and graded by hand in nbgrader with its rubric."""
from __future__ import annotations

import re

from .result import NOT_ANSWERED, Result

MIN_WORDS = 15       # a free-text answer shorter than this is "not answered yet"
GRADED = ("Your answer is recorded. It is graded by hand; the rubric and a model answer come with your "
          "feedback, once the instructor releases it.")


def free_text(exercise_id, s: dict, answer, points, graded: bool) -> Result:
    """A written answer of at least :data:`MIN_WORDS` words is recorded. In graded mode that is all it
    says; in self-study it shows the rubric and the model answer (``s``'s, from the feedback file)."""
    if not isinstance(answer, str) or len(re.findall(r"\w+", answer)) < MIN_WORDS:
        return Result(exercise_id, "not answered", f"{NOT_ANSWERED} (write at least {MIN_WORDS} words)", 0.0, points)
    if graded:
        return Result(exercise_id, "recorded", GRADED, 0.0, points)
    if not s.get("rubric") and not s.get("model_answer"):
        return Result(exercise_id, "recorded", "Your answer is recorded; it is graded by hand (this copy of the "
                      "course has no model answer to compare with).", 0.0, points)
    rubric = "\n".join(f"  - {item}" for item in s.get("rubric", []))
    return Result(exercise_id, "recorded", (
        "Your answer is recorded; it is graded by hand with this rubric:\n" + rubric +
        f"\nCompare with a model answer:\n  {s.get('model_answer', '')}"), 0.0, points)
