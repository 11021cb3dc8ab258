"""nbgrader for real: solution, blank, one-wrong and damaged submissions of chapter 00."""
import csv
import shutil

import nbformat
import pytest

from course_lib import authoring, checks, instructor

pytestmark = pytest.mark.slow
CHAPTER = "00_why_communication"
TOTAL = sum(s["points"] for s in checks.exercises("00").values())  # every item of chapter 00 is autograded
ANSWERS = {"ex00-1-answer": "grad_bytes_13b", "ex00-2-answer": "pcie_exchange_s",
           "ex00-3-answer": "wrong_claim", "ex00-4-answer": "ndr200_gb_s"}

# Submissions that try to beat the grader; each would score full marks if it worked (issue 17).
TAMPER = {
    # the measured hole: hidden tests called checks.grade in the student's kernel
    "redefined_grade": {"ex00-1-answer": "checks.grade = lambda *a, **k: None\ngrad_bytes_13b = None"},
    "rebound_checks": {"ex00-1-answer": "import types\nchecks = types.SimpleNamespace(check=lambda *a, **k: None, "
                                        "grade=lambda *a, **k: None)\ngrad_bytes_13b = None"},
    "monkeypatched": {"ex00-1-answer": (
        "checks.evaluate = lambda i, a, **k: checks.Result(i, 'correct', '', 1.0, 1.0)\n"
        "import course_lib.exercises.numbers as _n, course_lib.exercises.choices as _c\n"
        "_n.judge_number = lambda *a: (True, 'Correct.')\n_c.judge_choice = lambda *a: (True, 'Correct.')\n"
        "checks.PlainKey.within = lambda self, lo, hi: True\nchecks.PlainKey.is_choice = lambda self, t: True\n"
        "import course_lib.grading as _g\n_g.grade = lambda *a, **k: None\ngrad_bytes_13b = 1.0"),
        "ex00-2-answer": "pcie_exchange_s = 1.0", "ex00-3-answer": "wrong_claim = 'A'", "ex00-4-answer": "ndr200_gb_s = 1.0"},
    "always_equal": {"ex00-1-answer": ("class Same(float):\n    def __eq__(self, other): return True\n"
                                       "    def __float__(self): return 26e9\n    def lower(self): return 'c'\n"
                                       "grad_bytes_13b = Same(0.0)"),
                     "ex00-2-answer": "pcie_exchange_s = Same(0.0)", "ex00-3-answer": "wrong_claim = Same(0.0)",
                     "ex00-4-answer": "ndr200_gb_s = Same(0.0)"},
    "copied_spec": {cell: f"{name} = checks.spec('00.{cell[5]}')['expected']" for cell, name in ANSWERS.items()},
}


def _answered(release_path, solution_path, overrides=None):
    """The released notebook with the solution's answers typed in (some overridden)."""
    solution = {c.metadata["nbgrader"]["grade_id"]: c for c in nbformat.read(solution_path, as_version=4).cells
                if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(release_path, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in solution:
            text = solution[grade_id].source
            cell.source = (overrides or {}).get(grade_id, authoring.SOLUTION_RE.sub(lambda m: m.group(2), text))
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = instructor.init_course(tmp_path_factory.mktemp("course"), [CHAPTER])
    release = course / "release" / CHAPTER / f"{CHAPTER}.ipynb"
    solution = instructor.SOLUTIONS / f"{CHAPTER}.ipynb"
    work = tmp_path_factory.mktemp("submissions")

    def save(name, nb):
        path = work / f"{name}.ipynb"
        nbformat.write(nb, path)
        instructor.submit(course, CHAPTER, name, path)

    shutil.copy2(solution, work / "full.ipynb")
    instructor.submit(course, CHAPTER, "full", work / "full.ipynb")
    instructor.submit(course, CHAPTER, "blank", release)
    save("onewrong", _answered(release, solution, {"ex00-4-answer": "ndr200_gb_s = 200 / 8 * 2"}))
    damaged = _answered(release, solution)
    damaged.cells = [c for c in damaged.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "ex00-2-check"]
    save("deleted", damaged)
    retyped = _answered(release, solution)
    for cell in retyped.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex00-3-check":
            cell.source = 'print("I am sure it is C")'
    save("retyped", retyped)
    for name, overrides in TAMPER.items():
        nb = nbformat.read(release, as_version=4)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in overrides:
                cell.source = overrides[grade_id]
        save(name, nb)
    problems = instructor.autograde(course, CHAPTER)
    return _totals(course), problems, release


def _totals(course):
    """Each submission's (score, max_score) from grades.csv's (total) rows (all graded here)."""
    rows = [r for r in csv.DictReader(instructor.export_grades(course).open()) if r["item"] == "(total)"]
    assert all(r["status"] == "graded" for r in rows), rows
    return {r["student_id"]: (float(r["score"]), float(r["max_score"])) for r in rows}


def test_release_is_the_student_notebook_that_runs_top_to_bottom(graded):
    _, _, release = graded
    assert release.read_text() == (authoring.STUDENT / f"{CHAPTER}.ipynb").read_text()


def test_solution_scores_full_marks(graded):
    scores, _, _ = graded
    assert scores["full"] == (TOTAL, TOTAL)


def test_blank_scores_zero(graded):
    scores, _, _ = graded
    assert scores["blank"] == (0.0, TOTAL)


def test_one_wrong_answer_loses_exactly_its_points(graded):
    scores, _, _ = graded
    assert scores["onewrong"] == (TOTAL - checks.spec("00.4")["points"], TOTAL)


def test_deleted_graded_cell_gets_a_clear_message_not_a_crash(graded):
    scores, problems, _ = graded
    assert scores["deleted"] == (TOTAL - checks.spec("00.2")["points"], TOTAL)
    messages = [str(p) for p in problems if p.student == "deleted"]
    assert any("ex00-2-check" in m and "deleted" in m and "2 points" in m for m in messages), messages


def test_retyped_locked_cell_is_restored_and_reported(graded):
    scores, problems, _ = graded
    assert scores["retyped"] == (TOTAL, TOTAL)
    assert any(p.student == "retyped" and p.grade_id == "ex00-3-check" and "restores" in p.message for p in problems)


def test_unreadable_submission_is_reported(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    release = authoring.STUDENT / f"{CHAPTER}.ipynb"
    problems = instructor.inspect_submission(bad, release, "eve")
    assert problems and "could not be read" in problems[0].message


@pytest.mark.parametrize("call, name", [
    (lambda: instructor.init_course(42), "course_dir"),
    (lambda: instructor.init_course("/tmp/x", ["99_nothing"]), "assignments"),
    (lambda: instructor.submit("/tmp/x", CHAPTER, "bad name", __file__), "student"),
    (lambda: instructor.submit("/tmp/x", "zz", "bob", __file__), "assignment"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("student", sorted(TAMPER))
def test_tampering_scores_nothing(graded, student):
    """Redefined checks.grade, a rebound checks, monkeypatched checks and grading, objects whose __eq__
    and __float__ lie, answers copied from checks.spec: each scores 0 under real nbgrader (each would
    have scored full marks on the four items it attacks had the attack worked)."""
    scores, problems, _ = graded
    assert scores[student] == (0.0, TOTAL)
    if student != "copied_spec":
        assert any(p.student == student and "read it before trusting" in p.message for p in problems)


# ---------------------------------------------------------------- a second chapter: 02 (NVLink)
CHAPTER_02 = "02_nvlink"
TOTAL_02 = sum(s["points"] for s in checks.exercises("02").values())


@pytest.fixture(scope="module")
def graded_02(tmp_path_factory):
    course = instructor.init_course(tmp_path_factory.mktemp("course02"), [CHAPTER_02])
    release = course / "release" / CHAPTER_02 / f"{CHAPTER_02}.ipynb"
    solution = instructor.SOLUTIONS / f"{CHAPTER_02}.ipynb"
    work = tmp_path_factory.mktemp("submissions02")
    shutil.copy2(solution, work / "full.ipynb")
    instructor.submit(course, CHAPTER_02, "full", work / "full.ipynb")
    instructor.submit(course, CHAPTER_02, "blank", release)
    nbformat.write(_answered(release, solution, {"ex02-3-answer": "a100_allreduce_ms = 2 * 7 / 8 * 1e9 / 600e9 * 1e3"}),
                   work / "onewrong.ipynb")
    instructor.submit(course, CHAPTER_02, "onewrong", work / "onewrong.ipynb")
    instructor.autograde(course, CHAPTER_02)
    return _totals(course)


def test_chapter_02_solution_full_blank_zero_one_wrong_loses_its_points(graded_02):
    assert graded_02["full"] == (TOTAL_02, TOTAL_02)
    assert graded_02["blank"] == (0.0, TOTAL_02)
    assert graded_02["onewrong"] == (TOTAL_02 - checks.spec("02.3")["points"], TOTAL_02)


# ---------------------------------------------------------------- the screen reads syntax, not substrings
@pytest.mark.parametrize("source, flagged", [
    ("m = __import__('import' + 'lib')", {"__import__", "importlib"}),
    ("name = ''.join(['sys', '.modules'])", {"sys.modules"}),
    ("k = f\"{'answer'}_key\"", {"answer_key"}),
    ("get_ipython().events.register('pre_run_cell', lambda *a: get_ipython().displayhook('ok'))", {"get_ipython"}),
    ("import json\njson.loads = lambda s: {}", {"rebinds json.loads"}),
    ("x = (1).__float__()", {"__float__"}),
    ("g = getattr(__builtins__, 'op' + 'en')", {"getattr", "open", "builtins"}),
    ("from torch._C._distributed_c10d import ProcessGroup\nraw = ProcessGroup.allreduce",
     {"_distributed_c10d", "ProcessGroup"}),
    ("%matplotlib inline\nrate_gb_s = 16 * 32 * 128 / 130 / 8", set()),
])
def test_the_screen_sees_through_spelling(source, flagged):
    assert set(instructor._suspicious(source)) == flagged


def test_no_honest_answer_cell_of_the_course_is_flagged():
    """Every reference answer cell of the 11 chapters passes the screen on its own (written items fetch their
    model answer from grading, which the reference may do and a learner's cell may not)."""
    import nbformat

    cells = [c for path in sorted(authoring.SOLUTIONS.glob("*.ipynb"))
             for c in nbformat.read(path, as_version=4).cells
             if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    assert len(cells) >= 80
    for cell in cells:
        if "grading.model_answer" in cell.source:
            assert instructor._suspicious(cell.source) == ["grading"]
            assert instructor._suspicious(cell.source, allowed=cell.source) == []
        else:
            assert instructor._suspicious(cell.source) == [], cell.source
