"""Judging a choice: a letter in quotes, one of ``choices``; the first answer is the one that counts."""
from __future__ import annotations

from .session import FIRST_CHOICE, graded


def judge_choice(exercise_id, s, answer, key, record):
    """(ok, message) for a choice ``answer``; (None, message) when graded mode records it unjudged."""
    if not isinstance(answer, str):
        return False, f"Answer with a letter in quotes, e.g. \"A\"; got {type(answer).__name__}."
    text = str.__str__(answer).strip().lower()
    allowed = s.get("choices")
    if allowed and text not in [str(c).lower() for c in allowed]:
        return False, f"Answer with one of: {', '.join(map(str, allowed))}."
    note = ""
    if record:
        first = FIRST_CHOICE.setdefault(exercise_id, text)
        note = (" Your first answer is the one that counts in your score." if first == text else
                f" Your score keeps your first answer, {first.upper()}: the first answer counts.")
    if graded() and record:
        return None, f"Answer {text.upper()} recorded. In graded mode your first answer counts; feedback comes with the grade."
    if key.is_choice(text):
        return True, "Correct." + note
    hints = {str(k).lower(): v for k, v in s.get("choice_hints", {}).items()}
    return False, hints.get(text, s.get("concept", "Not this one; reread the section.")) + note
