"""The outcome of judging one answer, and what counts as not answered."""
from __future__ import annotations

from dataclasses import dataclass

NOT_ANSWERED = "not answered yet"
NOT_GIVEN = object()   # no earlier answer given (a chained item judged alone)


def is_unanswered(answer) -> bool:
    """True for the stubs a student notebook starts with: None or ``...``."""
    return answer is None or answer is Ellipsis


@dataclass(frozen=True)
class Result:
    """The outcome of one check: ``status`` is 'correct', 'wrong', 'not answered', 'recorded' or 'hint'."""

    exercise: str
    status: str
    message: str
    points: float
    max_points: float

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        mark = {"correct": "✔", "wrong": "✘", "not answered": "…", "recorded": "✎", "hint": "?"}[self.status]
        return f"{mark} Exercise {self.exercise}: {self.message}"

    def _repr_html_(self) -> str:
        colour = {"correct": "#1a7f37", "wrong": "#cf222e", "not answered": "#6e7781",
                  "recorded": "#0550ae", "hint": "#6e7781"}[self.status]
        from html import escape
        return (f'<div style="color:{colour}; white-space: pre-wrap"><b>Exercise {escape(self.exercise)}</b>: '
                f'{escape(self.message)}</div>')
