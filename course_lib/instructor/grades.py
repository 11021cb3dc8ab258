"""The gradebook's export: grades.csv with a status per submission and item, and the written answers still
waiting for manual grading."""
from __future__ import annotations

from pathlib import Path

from .. import gradebook
from .commands import _course


def pending_manual(course_dir, assignment: str) -> list[str]:
    """"student: item" for each written answer of ``assignment`` still waiting for manual grading."""
    rows = gradebook.rows(_course(course_dir), progress=lambda *_: None)
    return [f"{r['student_id']}: {r['item']}" for r in rows if r["assignment"] == assignment
            and r["item"] != gradebook.TOTAL and r["status"] == gradebook.MANUAL]


def export_grades(course_dir, csv_path=None) -> Path:
    """Write grades.csv with a status per submission and item (:mod:`course_lib.gradebook`); returns its path."""
    return gradebook.export(_course(course_dir), csv_path)
