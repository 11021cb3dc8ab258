"""Autograde as the docs print it: a relative course path, as root (issue 35, item 2 of Build).

``python -m course_lib nbgrader autograde course/ 03_nvswitch`` run from the course's parent grades (nbgrader
runs inside ``course/``, where a relative kernel folder on JUPYTER_PATH used to mean nothing, so every student
got "NoSuchKernel"); a kernel that is not there is named once as the instructor's fault, not per student.
"""
import os
import shutil
import subprocess
import sys

import pytest

from course_lib import instructor, sandbox

pytestmark = pytest.mark.slow
CHAPTER = "03_nvswitch"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = instructor.init_course(tmp_path_factory.mktemp("class") / "course", [CHAPTER])
    for student, notebook in (("full", instructor.SOLUTIONS), ("blank", instructor.STUDENT)):
        instructor.submit(course, CHAPTER, student, notebook / f"{CHAPTER}.ipynb")
    return course


@pytest.mark.skipif(os.geteuid() != 0, reason="the documented command runs as root")
def test_relative_course_path_as_root_grades(course):
    done = subprocess.run([sys.executable, "-m", "course_lib", "nbgrader", "autograde", "course/", CHAPTER],
                          cwd=course.parent, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(instructor.ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 2 submissions graded" in done.stdout and "NoSuchKernel" not in done.stdout, done.stdout
    assert f"'{sandbox.USER}'" in done.stdout  # isolated: the documented run as root is the sandboxed one


def test_a_missing_grading_kernel_is_named_once_as_the_instructors(course, monkeypatch, capsys):
    elsewhere = course.parent / "elsewhere"
    monkeypatch.setattr(instructor.sandbox, "kernelspec", lambda folder, course_dir: elsewhere)  # spec never written
    monkeypatch.setattr(instructor.sandbox, "available", lambda: (True, "test: isolated"))
    monkeypatch.setattr(instructor.sandbox, "ensure_user", lambda: None)
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
