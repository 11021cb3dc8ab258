"""A course folder's submissions as a class leaves them, for the autograde tests and the hostile-class benchmark:
one place that says what nbgrader's collect leaves beside a notebook, and how the unreadable ones are made."""
from __future__ import annotations

import os
from pathlib import Path

HOSTILE = ("link", "fifo", "sparse")  # a symlink to the instructor's source, a named pipe, a 2 GB sparse file


def mark_collected(course: Path, chapter: str, student: str) -> None:
    """What nbgrader's collect leaves beside a submitted notebook: its timestamp and the submission's secret
    (``release_feedback`` reads the secret)."""
    submitted = Path(course) / "submitted" / student / chapter
    (submitted / "timestamp.txt").write_text("2026-12-02 12:00:00.000000 UTC")
    (submitted / "submission_secret.txt").write_text(f"secret-of-{student}")


def place_hostile(course: Path, chapter: str) -> tuple[str, ...]:
    """The submissions no grader may read, one student each (``HOSTILE``), as a course folder may hold them
    (put there by hand, or by a collect that followed no rule); returns the student names."""
    course = Path(course)
    for student in HOSTILE:
        folder = course / "submitted" / student / chapter
        folder.mkdir(parents=True)
        notebook = folder / f"{chapter}.ipynb"
        if student == "link":
            notebook.symlink_to(course / "source" / chapter / f"{chapter}.ipynb")
        elif student == "fifo":
            os.mkfifo(notebook)
        else:
            with open(notebook, "wb") as handle:
                handle.truncate(2 * 1000 ** 3)
    return HOSTILE
