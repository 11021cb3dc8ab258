"""nbgrader autograde through the course command: a clean run exits 0; a broken submission is reported, not fatal.

One course of chapter 00: first the solution alone (status 0, no list printed), then with a
notebook that is not JSON, one whose cell kills the kernel and one whose cell outruns ``--timeout``.
Each is reported on its own line; the solution is still graded; the status is 1; no traceback.
"""
import csv
import shutil

import nbformat
import pytest

from course_lib import __main__ as cli_main
from course_lib import instructor

pytestmark = pytest.mark.slow
CHAPTER = "00_why_communication"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return instructor.init_course(tmp_path_factory.mktemp("course"), [CHAPTER])


def _submit(course, tmp_path, student, code=None, text=None):
    path = tmp_path / f"{student}.ipynb"
    if text is not None:
        path.write_text(text)
    else:
        nb = nbformat.read(course / "release" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
        nb.cells.insert(1, nbformat.v4.new_code_cell(code))
        nbformat.write(nb, path)
    instructor.submit(course, CHAPTER, student, path)


def test_clean_autograde_exits_0_then_broken_submissions_are_reported_one_by_one(course, tmp_path, capsys):
    shutil.copy2(instructor.STUDENT / f"{CHAPTER}.ipynb", tmp_path / "blank.ipynb")
    instructor.submit(course, CHAPTER, "clean", tmp_path / "blank.ipynb")
    assert cli_main.main(["nbgrader", "autograde", str(course), CHAPTER]) == 0
    out, err = capsys.readouterr()
    assert "1 of 1 submissions graded" in out and err == "" and "[]" not in out

    _submit(course, tmp_path, "notjson", text="{not json")
    _submit(course, tmp_path, "killer", code="import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    _submit(course, tmp_path, "sleeper", code="import time; time.sleep(120)")
    status = cli_main.main(["nbgrader", "autograde", str(course), CHAPTER, "--timeout", "15"])
    out, err = capsys.readouterr()
    assert status == 1 and "Traceback" not in out + err and err == "", err
    lines = out.splitlines()
    assert any(l.startswith("[course_lib] notjson:") and "not graded" in l for l in lines), out
    assert any(l.startswith("[course_lib] killer:") and "kernel died" in l for l in lines), out
    assert any(l.startswith("[course_lib] sleeper:") and "15 s limit" in l for l in lines), out
    # on a loaded machine a second cell of the sleeper may time out too, and nbgrader gives up on it
    assert ("2 of 4 submissions graded; not graded: killer, notjson;" in out
            or "1 of 4 submissions graded; not graded: killer, notjson, sleeper;" in out), out
    assert (course / "autograde.log").is_file()
    assert len(out) < 4000  # the log goes to the file, not the screen

    totals = {row["student_id"]: row for row in csv.DictReader(instructor.export_grades(course).open())
              if row["item"] == "(total)"}
    assert totals["clean"]["status"] == "graded" and totals["clean"]["score"] == "0"  # graded despite the others
    for student in ("notjson", "killer"):  # not a graded 0.0: no score, the reason
        assert totals[student]["status"] == "failed to grade" and totals[student]["score"] == "", totals[student]
        assert "not graded" in totals[student]["detail"]
