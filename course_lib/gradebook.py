"""The course's grades.csv: one row per submission and item, each with a status, scores only where graded.

nbgrader's own export writes 0.0 for a submission it could not grade, shows points waiting for manual
grading as if final, and lists every assignment that was never autograded as zeros. This export reads
nbgrader's gradebook and the course's grading record (:func:`record_path`, written by ``autograde``)
and says per row what the number is:

- ``graded``: the score is final;
- ``manual pending``: a written answer waiting in Formgrader (no score yet);
- ``failed to grade``: the submission (or this item) could not be graded; ``detail`` says why (no score);
- ``not submitted``: the student has no submission of this assignment (no score);
- ``not autograded yet``: submitted, but autograde has not run on it since (no score).

Assignments that nobody submitted have no rows. Each submission ends with a ``(total)`` row whose score
is the sum of its items only when every item is graded, else its ``detail`` counts what is missing.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import sys
from pathlib import Path

COLUMNS = ("assignment", "student_id", "item", "status", "score", "max_score", "detail")
GRADED, MANUAL, FAILED, MISSING, PENDING = ("graded", "manual pending", "failed to grade", "not submitted",
                                            "not autograded yet")
TOTAL = "(total)"


def record_path(course_dir, assignment: str) -> Path:
    """Where autograde records what it could and could not grade of one assignment."""
    return Path(course_dir) / "grading_record" / f"{assignment}.json"


def read_record(course_dir, assignment: str) -> dict:
    """The grading record: ``{"failed": {student: reason}, "judged": {student: {grade_id: {...}}}}``."""
    path = record_path(course_dir, assignment)
    if not path.is_file():
        return {"failed": {}, "judged": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def write_record(course_dir, assignment: str, record: dict) -> Path:
    path = record_path(course_dir, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def open_gradebook(course_dir):
    """nbgrader's Gradebook of ``course_dir`` (it runs ``alembic``, found beside this Python, on a new one)."""
    from nbgrader.api import Gradebook

    path = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + path
    try:
        with Gradebook(f"sqlite:///{(Path(course_dir) / 'gradebook.db').resolve()}") as gb:
            yield gb
    finally:
        os.environ["PATH"] = path


def _fmt(score) -> str:
    return "" if score is None else f"{float(score):g}"


def rows(course_dir, progress=print) -> list[dict]:
    """Every row of grades.csv (see the module's docstring), from the course's gradebook and record."""
    from nbgrader.api import MissingEntry

    course_dir = Path(course_dir)
    out = []
    with open_gradebook(course_dir) as gb:
        students = sorted(s.id for s in gb.students)
        assignments = sorted(gb.assignments, key=lambda a: a.name)
        progress(f"[course_lib] export: {len(assignments)} assignments, {len(students)} students in the gradebook")
        for assignment in assignments:
            record = read_record(course_dir, assignment.name)
            submitted = {p.parent.name for p in (course_dir / "submitted").glob(f"*/{assignment.name}")}
            in_gradebook = {s.student.id for s in assignment.submissions}
            if not submitted and not in_gradebook:
                continue  # never submitted nor autograded: no rows, not a column of zeros
            cells = [(nb.name, cell) for nb in assignment.notebooks for cell in nb.grade_cells]
            progress(f"[course_lib] export: {assignment.name}: {len(in_gradebook)} of {len(students)} "
                     "students autograded")
            for student in students:
                out += _submission_rows(gb, MissingEntry, assignment.name, student, cells, record,
                                        student in submitted, student in in_gradebook)
    return out


def _submission_rows(gb, missing_entry, assignment, student, cells, record, submitted, in_gradebook):
    failed = record.get("failed", {}).get(student)
    judged = record.get("judged", {}).get(student, {})
    items = []
    for notebook, cell in cells:
        row = {"assignment": assignment, "student_id": student, "item": cell.name, "score": "",
               "max_score": _fmt(cell.max_score), "detail": ""}
        if failed:
            row.update(status=FAILED, detail=failed)
        elif not in_gradebook:
            row["status"] = PENDING if submitted else MISSING
        else:
            try:
                grade = gb.find_grade(cell.name, notebook, assignment, student)
            except missing_entry:
                row.update(status=FAILED, detail="the gradebook has no grade for this item")
                items.append(row)
                continue
            verdict = judged.get(cell.name)
            if grade.manual_score is None and grade.needs_manual_grade and grade.auto_score is None:
                row["status"] = MANUAL
            elif verdict is not None and grade.manual_score is None:
                row.update(status=GRADED, score=_fmt(verdict["score"]), detail=verdict.get("detail", ""))
            elif record.get("judged_items", {}).get(cell.name) and grade.manual_score is None:
                # an item judged outside the kernel with no verdict: nbgrader's own score is not a grade
                row.update(status=FAILED, detail="no answer was judged for this item (rerun autograde)")
            elif grade.score is None:
                row.update(status=FAILED, detail="the gradebook holds no score for this item")
            else:
                row.update(status=GRADED, score=_fmt(grade.score))
        items.append(row)
    if not items:
        return []
    statuses = [r["status"] for r in items]
    total = {"assignment": assignment, "student_id": student, "item": TOTAL,
             "max_score": _fmt(sum(float(r["max_score"] or 0) for r in items)), "score": "", "detail": ""}
    if all(s == GRADED for s in statuses):
        total.update(status=GRADED, score=_fmt(sum(float(r["score"]) for r in items)))
    elif all(s == statuses[0] for s in statuses) and statuses[0] != MANUAL:
        total.update(status=statuses[0], detail=items[0]["detail"])
    else:
        total.update(status=MANUAL if set(statuses) <= {GRADED, MANUAL} else FAILED, detail=progress_detail(items))
    return items + [total]


def progress_detail(items: list) -> str:
    """How far the grading of one submission is, in points: "8 of 10 points graded (score 0); 2 points await
    manual grading" (and the items that failed or are not graded yet, by status)."""
    def points(rows, field="max_score"):
        return _fmt(sum(float(r[field] or 0) for r in rows)) or "0"
    graded = [r for r in items if r["status"] == GRADED]
    parts = [f"{points(graded)} of {points(items)} points graded (score {points(graded, 'score')})"]
    manual = [r for r in items if r["status"] == MANUAL]
    if manual:
        parts.append(f"{points(manual)} points await manual grading")
    for status in dict.fromkeys(r["status"] for r in items):
        if status not in (GRADED, MANUAL):
            rows = [r for r in items if r["status"] == status]
            parts.append(f"{points(rows)} points {status}")
    return "; ".join(parts)


def export(course_dir, csv_path=None, progress=print) -> Path:
    """Write grades.csv (default ``DIR/grades.csv``); returns its path."""
    course_dir = Path(course_dir)
    csv_path = Path(csv_path) if csv_path else course_dir / "grades.csv"
    table = rows(course_dir, progress)
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(table)
    progress(f"[course_lib] export: {len(table)} rows written to {csv_path}")
    return csv_path
