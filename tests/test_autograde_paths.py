"""Autograde as the docs print it: a relative course path, as root (issue 35, items 2 and 3 of Build).

``python -m course_lib nbgrader autograde course/ 03_nvswitch`` run from the course's parent grades (nbgrader
runs inside ``course/``, where a relative kernel folder on JUPYTER_PATH used to mean nothing, so every student
got "NoSuchKernel"); a kernel that is not there is named once as the instructor's fault, not per student. In
the same class a symlinked submission, a FIFO and a 2 GB sparse file are "not graded: why" and the rest are
graded; ``nbgrader collect`` (the course's SafeCollect) copies plain files only.
"""
import csv
import os
import shutil
import subprocess
import sys

import pytest

from course_lib import instructor, sandbox
from tests.submission_fixtures import mark_collected, place_hostile

pytestmark = pytest.mark.slow
CHAPTER = "03_nvswitch"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = instructor.init_course(tmp_path_factory.mktemp("class") / "course", [CHAPTER])
    for student, notebook in (("full", instructor.SOLUTIONS), ("blank", instructor.STUDENT)):
        instructor.submit(course, CHAPTER, student, notebook / f"{CHAPTER}.ipynb")
        mark_collected(course, CHAPTER, student)
    place_hostile(course, CHAPTER)
    return course


@pytest.mark.skipif(os.geteuid() != 0, reason="the documented command runs as root")
def test_relative_course_path_as_root_grades(course):
    done = subprocess.run([sys.executable, "-m", "course_lib", "nbgrader", "autograde", "course/", CHAPTER],
                          cwd=course.parent, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(instructor.ROOT)})
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "2 of 5 submissions graded; not graded: fifo, link, sparse" in done.stdout, done.stdout
    assert "NoSuchKernel" not in done.stdout
    lines = done.stdout.splitlines()
    assert "[course_lib] link: not graded: 03_nvswitch.ipynb is a symbolic link, not a file" in lines, done.stdout
    assert "[course_lib] fifo: not graded: 03_nvswitch.ipynb is a FIFO (named pipe), not a file" in lines
    assert any(l.startswith("[course_lib] sparse: not graded: 03_nvswitch.ipynb is 2,000,000,000 bytes") for l in lines)
    rows = list(csv.DictReader(instructor.export_grades(course).open()))
    auto = [r for r in rows if r["item"] != "(total)" and r["status"] != "manual pending"]
    assert {r["student_id"] for r in auto if r["status"] == "graded"} == {"full", "blank"}, rows
    assert all(float(r["score"]) == float(r["max_score"]) for r in auto if r["student_id"] == "full"), rows
    assert all(float(r["score"]) == 0 for r in auto if r["student_id"] == "blank"), rows
    refused = {r["student_id"]: r for r in rows if r["item"] == "(total)" and r["status"] == "failed to grade"}
    assert set(refused) == {"link", "fifo", "sparse"} and "not graded: " in refused["link"]["detail"], rows
    manual = [r for r in rows if r["status"] == "manual pending" and r["item"] != "(total)"]
    total = next(r for r in rows if r["student_id"] == "full" and r["item"] == "(total)")
    graded_points = sum(float(r["max_score"]) for r in auto if r["student_id"] == "full")
    assert total["detail"].startswith(f"{graded_points:g} of {float(total['max_score']):g} points graded (score "), total
    assert "points await manual grading" in total["detail"], total
    # feedback released while written answers wait: one warning naming them, then released
    pending = instructor.release_feedback(course, CHAPTER)
    assert len(pending) == len(manual) > 0 and all(p.split(":")[0] in ("full", "blank") for p in pending)
    assert f"'{sandbox.USER}'" in done.stdout  # isolated: the documented run as root is the sandboxed one


def test_a_missing_grading_kernel_is_named_once_as_the_instructors(course, monkeypatch, capsys):
    elsewhere = course.parent / "elsewhere"
    monkeypatch.setattr(sandbox, "kernelspec", lambda folder, course_dir: elsewhere)  # spec never written
    monkeypatch.setattr(sandbox, "available", lambda: (True, "test: isolated"))
    monkeypatch.setattr(sandbox, "ensure_user", lambda: None)
    from course_lib import __main__ as cli_main
    status = cli_main.main(["nbgrader", "autograde", str(course), CHAPTER])
    out, err = capsys.readouterr()
    assert status == 1 and "Traceback" not in out + err
    assert err.count("error:") == 1 and "course-sandbox" in err and "nothing was graded" in err, err
    for student in ("full", "blank"):  # no submission is blamed for it
        assert f"[course_lib] {student}:" not in out, out


def test_setup_fault_read_from_a_log_once():
    log = "".join(f"[AutogradeApp | INFO] Creating/updating student with ID '{s}'\n[AutogradeApp | ERROR] "
                  "jupyter_client.kernelspec.NoSuchKernel: No such kernel named course-sandbox\n" for s in "abc")
    fault = instructor._setup_fault(log)
    assert fault and fault.count("course-sandbox") == 1
    assert instructor._setup_fault("[AutogradeApp | ERROR] nbformat.reader.NotJSONError: ...") is None


def test_collect_copies_plain_files_only(course):
    inbound = course / "exchange" / instructor.COURSE_ID / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    stamp = "2026-12-02 13:00:00.000000 UTC"
    for student in ("honest", "linker", "piper"):
        folder = inbound / f"{student}+{CHAPTER}+{stamp}+abc"
        folder.mkdir()
        (folder / "timestamp.txt").write_text(stamp)
        notebook = folder / f"{CHAPTER}.ipynb"
        if student == "honest":
            shutil.copy2(instructor.STUDENT / f"{CHAPTER}.ipynb", notebook)
        elif student == "linker":
            notebook.symlink_to(course / "source" / CHAPTER / f"{CHAPTER}.ipynb")
        else:
            os.mkfifo(notebook)
    done = subprocess.run([sys.executable, "-m", "nbgrader", "collect", CHAPTER], cwd=course, capture_output=True,
                          text=True, timeout=300, env=instructor._env())
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert (course / "submitted" / "honest" / CHAPTER / f"{CHAPTER}.ipynb").read_bytes() == \
        (instructor.STUDENT / f"{CHAPTER}.ipynb").read_bytes()
    for student, why in (("linker", "is a symbolic link"), ("piper", "is a FIFO")):
        assert not (course / "submitted" / student / CHAPTER / f"{CHAPTER}.ipynb").exists()
        assert f"not graded: {student}: {CHAPTER}.ipynb {why}" in log, log
