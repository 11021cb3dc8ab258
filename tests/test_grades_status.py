"""grades.csv says what each number is (issue 26 build 5), and the course config quotes its paths.

Fast: a gradebook built with nbgrader's API (no notebook runs). The real autograde of a mixed class is
in tests/test_grading_isolation.py.
"""
import ast
import csv

import pytest

from course_lib import gradebook, instructor


def _gradebook(course):
    """Assignment a1 (two auto items of 1 and 2 points, one written answer of 3), a2 never submitted."""
    with gradebook.open_gradebook(course) as gb:
        for name in ("a1", "a2"):
            gb.add_assignment(name)
            gb.add_notebook(name, name)
            gb.add_grade_cell("q1", name, name, max_score=1, cell_type="code")
            gb.add_grade_cell("q2", name, name, max_score=2, cell_type="code")
            gb.add_grade_cell("w1", name, name, max_score=3, cell_type="markdown")
        for student in ("graded", "manual", "broken", "missing", "waiting"):
            gb.add_student(student)
        for student in ("graded", "manual", "broken"):
            gb.add_submission("a1", student)
            for cell, auto in (("q1", 1.0), ("q2", 0.0)):
                gb.find_grade(cell, "a1", "a1", student).auto_score = auto
            written = gb.find_grade("w1", "a1", "a1", student)
            written.needs_manual_grade = True
            if student == "graded":
                written.manual_score = 2.5
        gb.db.commit()
    for student in ("graded", "manual", "broken", "waiting"):
        (course / "submitted" / student / "a1").mkdir(parents=True)
    gradebook.write_record(course, "a1", {"failed": {"broken": "the kernel died while running the notebook"},
                                          "judged": {}})


def test_each_row_says_what_its_number_is(tmp_path):
    _gradebook(tmp_path)
    lines = []
    path = gradebook.export(tmp_path, progress=lines.append)
    rows = {(r["student_id"], r["item"]): r for r in csv.DictReader(path.open())}
    assert {r["assignment"] for r in rows.values()} == {"a1"}  # a2: nobody submitted, no zero rows
    assert rows["graded", "(total)"]["status"] == "graded" and rows["graded", "(total)"]["score"] == "3.5"
    assert rows["manual", "w1"]["status"] == "manual pending" and rows["manual", "w1"]["score"] == ""
    total = rows["manual", "(total)"]
    assert total["status"] == "manual pending" and total["score"] == ""
    assert "3 of 6 points graded (score 1); 3 points await manual grading" in total["detail"]
    assert rows["manual", "q1"] ["score"] == "1" and rows["manual", "q2"]["score"] == "0"  # a graded zero stays 0
    for item in ("q1", "q2", "w1", "(total)"):
        assert rows["broken", item]["status"] == "failed to grade" and rows["broken", item]["score"] == ""
        assert "kernel died" in rows["broken", item]["detail"]
        assert rows["missing", item]["status"] == "not submitted" and rows["missing", item]["score"] == ""
        assert rows["waiting", item]["status"] == "not autograded yet" and rows["waiting", item]["score"] == ""
    assert any("5 students" in line for line in lines) and any("rows written" in line for line in lines)


def test_an_item_judged_outside_the_kernel_without_a_verdict_is_not_a_grade(tmp_path):
    """nbgrader scores a reporting cell full marks when it runs; only the judged score is a grade."""
    _gradebook(tmp_path)
    gradebook.write_record(tmp_path, "a1", {"failed": {}, "judged_items": {"q1": "00.1"},
                                            "judged": {"graded": {"q1": {"score": 0.0, "detail": "wrong"}}}})
    rows = {(r["student_id"], r["item"]): r for r in csv.DictReader(gradebook.export(tmp_path, progress=id).open())}
    assert rows["graded", "q1"]["score"] == "0" and rows["graded", "q1"]["detail"] == "wrong"
    assert rows["manual", "q1"]["status"] == "failed to grade" and rows["manual", "q1"]["score"] == ""


@pytest.mark.parametrize("name", ['evil"; import os; os.system("touch PWNED") #', "back\\slash'quote", "new\nline"])
def test_course_path_is_a_quoted_literal_in_nbgrader_config(tmp_path, name):
    course = instructor.init_course(tmp_path / name, ["00_why_communication"], release=False)
    text = (course / "nbgrader_config.py").read_text()
    tree = ast.parse(text)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [ast.unparse(c) for c in calls] == ["get_config()"]  # nothing else runs when nbgrader reads it
    values = {ast.unparse(n.targets[0]): ast.literal_eval(n.value) for n in tree.body
              if isinstance(n, ast.Assign) and not isinstance(n.value, ast.Call)}
    assert values["c.CourseDirectory.root"] == str(course)
    assert not (tmp_path / "PWNED").exists()


def test_autograde_says_when_it_cannot_isolate(monkeypatch):
    from course_lib import sandbox

    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(sandbox, "_user_namespaces", lambda: False)
    ok, why = sandbox.available()
    assert not ok and "not running as root" in why and "unisolated" in why
    monkeypatch.setattr(sandbox, "_user_namespaces", lambda: True)  # most laptops: isolated in a user namespace
    ok, why = sandbox.available()
    assert ok and "own user, mount and PID namespaces" in why and "keeps your uid" in why
