"""Release and collect: a submission placed where nbgrader grades it, and feedback released (with a warning
while written answers still wait for manual grading)."""
from __future__ import annotations

import shutil
from pathlib import Path

from .. import validate
from .commands import _course, nbgrader
from .course import chapters
from .grades import pending_manual


def submit(course_dir, assignment, student, notebook) -> Path:
    """Place a student's notebook where ``nbgrader autograde`` looks (and add the student)."""
    assignment = validate.choice("assignment", assignment, chapters())
    if not isinstance(student, str) or not student.isidentifier():
        raise ValueError(f"student must be a simple id (letters, digits, _), got {student!r}")
    course_dir = _course(course_dir)
    notebook = Path(notebook)
    if not notebook.is_file():
        raise ValueError(f"notebook {notebook} does not exist")
    target = course_dir / "submitted" / student / assignment
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(notebook, target / f"{assignment}.ipynb")
    nbgrader(course_dir, "db", "student", "add", student)
    return target / f"{assignment}.ipynb"



def release_feedback(course_dir, assignment) -> list[str]:
    """``nbgrader generate_feedback`` and ``release_feedback`` of ``assignment``, with a warning first (printed,
    and returned) when written answers still await manual grading: their feedback would show them ungraded."""
    assignment = validate.choice("assignment", assignment, chapters())
    course_dir = _course(course_dir)
    pending = pending_manual(course_dir, assignment)
    if pending:
        print(f"[course_lib] warning: feedback on {assignment} is released while {len(pending)} written answers "
              f"await manual grading ({'; '.join(pending[:6])}{' ...' if len(pending) > 6 else ''}): their "
              "feedback shows them ungraded; grade them in Formgrader and release again", flush=True)
    nbgrader(course_dir, "generate_feedback", assignment)
    nbgrader(course_dir, "release_feedback", assignment)
    print(f"[course_lib] feedback on {assignment} released", flush=True)
    return pending
