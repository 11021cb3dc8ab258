"""The student notebooks are generated from solutions/src and leak nothing."""
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from course_lib import authoring, checks

ROOT = Path(__file__).resolve().parent.parent
SOURCES = authoring.sources()


def test_there_are_sources():
    assert SOURCES, "solutions/src has no chapter sources"


def test_generated_notebooks_are_up_to_date():
    stale = authoring.stale()
    assert not stale, f"run `make notebooks`: stale or orphaned {[str(p.relative_to(ROOT)) for p in stale]}"


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_student_notebook_leaks_no_solution_or_hidden_test(source):
    solution_nb = nbformat.read(authoring.targets(source)[0], as_version=4)
    student_text = authoring.targets(source)[1].read_text()
    for marker in (authoring.BEGIN_SOLUTION, authoring.END_SOLUTION, authoring.BEGIN_HIDDEN, authoring.END_HIDDEN):
        assert marker not in student_text
    student_cells = "\n".join(c.source for c in nbformat.read(authoring.targets(source)[1], as_version=4).cells)
    for cell in solution_nb.cells:
        for block in authoring.solution_blocks(cell.source) + authoring.hidden_blocks(cell.source):
            for line in block.splitlines():
                line = line.strip()
                if len(line) > 12 and not line.startswith("#"):
                    assert line not in student_cells, f"{source.stem}: leaked {line!r}"


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_graded_cells_follow_nbgrader_and_match_the_exercise_data(source):
    nb = nbformat.read(authoring.targets(source)[0], as_version=4)
    chapter = source.stem[:2]
    ids, points = [], {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader")
        if not meta:
            continue
        assert {"grade_id", "solution", "grade", "locked", "schema_version"} <= set(meta), meta
        ids.append(meta["grade_id"])
        if meta["grade"] and meta["solution"]:  # a written answer, graded by hand
            manual = re.search(r'checks\.spec\("([\d.]+)"\)', cell.source)
            if manual:
                points[manual.group(1)] = meta["points"]
            continue
        if meta["grade"] and cell.cell_type == "code":
            assert authoring.BEGIN_HIDDEN in cell.source, f"{meta['grade_id']} has no hidden tests"
            exercise = cell.source.split('checks.check("', 1)[1].split('"', 1)[0]
            points[exercise] = meta["points"]
    assert len(ids) == len(set(ids)), "grade_id values must be unique"
    data = checks.exercises(chapter)
    for exercise, value in points.items():
        assert exercise in data, f"{exercise} has no entry in course_lib/exercises/{chapter}.json"
        assert data[exercise].get("points", 1) == value


def test_stub_generation():
    assert authoring.stub_for("x = 1\ny, z = 2, 3\n") == ("x = None  # YOUR ANSWER HERE\n"
                                                          "y = None  # YOUR ANSWER HERE\n"
                                                          "z = None  # YOUR ANSWER HERE\n")
    stub = authoring.stub_for('def ring(t, rank, world):\n    """Doc."""\n    return t\n')
    assert stub.startswith("def ring(t, rank, world):") and "raise NotImplementedError()" in stub
    assert "return t" not in stub
    assert "raise NotImplementedError()" in authoring.stub_for("    return 1\n", "    ")
    text = "a = 1\n### BEGIN HIDDEN TESTS\nassert a == 1\n### END HIDDEN TESTS\n"
    assert authoring.to_student_source(text) == "a = 1"
    md = "Explain.\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION\n"
    assert authoring.to_student_source(md, "markdown") == "Explain.\nYOUR ANSWER HERE"


# ---------------------------------------------------------------- the exercise directive

def _directive(source, exercise_id, cell_type="code"):
    new = nbformat.v4.new_markdown_cell if cell_type == "markdown" else nbformat.v4.new_code_cell
    return new(source, metadata={authoring.EXERCISE: exercise_id})


def test_a_number_directive_becomes_the_answer_cell_and_the_hidden_check():
    specs = {"01.2": {"variable": "gen5_x16_gb_s", "kind": "number", "points": 2}}
    cells = authoring.expand_exercises([_directive("gen5_x16_gb_s = 32 * 16 / 8", "01.2")], specs, "t.py")
    assert [c.source for c in cells] == [
        "### BEGIN SOLUTION\ngen5_x16_gb_s = 32 * 16 / 8\n### END SOLUTION",
        'checks.check("01.2", gen5_x16_gb_s)\n### BEGIN HIDDEN TESTS\nimport importlib, course_lib.grading\n'
        'importlib.reload(course_lib.grading).grade("01.2", gen5_x16_gb_s)\n### END HIDDEN TESTS']
    assert [c.metadata for c in cells] == [
        {"nbgrader": {"grade": False, "grade_id": "ex01-2-answer", "locked": False, "schema_version": 3,
                      "solution": True}},
        {"nbgrader": {"grade": True, "grade_id": "ex01-2-check", "locked": True, "points": 2, "schema_version": 3,
                      "solution": False}}]
    student = authoring.to_student_source(cells[0].source) + authoring.to_student_source(cells[1].source)
    assert "32 * 16" not in student and "grading" not in student and "gen5_x16_gb_s = None" in student


def test_a_function_directive_marks_the_body_after_the_docstring():
    specs = {"05.6": {"variable": "f", "kind": "callable", "points": 1}}
    source = 'import math\n\n\ndef f(n):\n    """Doc."""\n    k = n + 1\n    return math.sqrt(k)\n\nx = 1'
    (answer, check) = authoring.expand_exercises([_directive(source, "05.6")], specs, "t.py")
    assert answer.source == ('import math\n\n\ndef f(n):\n    """Doc."""\n    ### BEGIN SOLUTION\n    k = n + 1\n'
                             '    return math.sqrt(k)\n    ### END SOLUTION\n\nx = 1')
    assert authoring.to_student_source(answer.source) == ('import math\n\n\ndef f(n):\n    """Doc."""\n'
                                                           '    # YOUR CODE HERE\n    raise NotImplementedError()\n\nx = 1')
    assert check.source.startswith('checks.check("05.6", f)\n')
    # markers the author placed stay where they are
    marked = "def f(n):\n    ### BEGIN SOLUTION\n    return n\n    ### END SOLUTION"
    assert authoring.expand_exercises([_directive(marked, "05.6")], specs, "t.py")[0].source == marked


def test_a_written_directive_is_empty_and_its_model_answer_comes_from_the_key():
    specs = {"05.9": {"variable": "why", "kind": "free_text", "points": 2},
             "08.W1": {"variable": None, "kind": "free_text", "points": 6, "cell": "markdown"}}
    answer, check = authoring.expand_exercises([_directive("", "05.9")], specs, "t.py")
    assert answer.source == ('### BEGIN SOLUTION\nfrom course_lib import grading\nwhy = grading.model_answer("05.9")\n'
                             '### END SOLUTION')
    assert answer.metadata["nbgrader"] == {"grade": True, "grade_id": "ex05-9-answer", "locked": False, "points": 2,
                                           "schema_version": 3, "solution": True}
    assert check.source == 'checks.check("05.9", why)' and "nbgrader" not in check.metadata
    with pytest.raises(ValueError, match="05.9 must be empty"):
        authoring.expand_exercises([_directive("why = 'typed here'", "05.9")], specs, "t.py")
    text = "**Plan** (6 points)\n\n### BEGIN SOLUTION\nModel.\n### END SOLUTION"
    (written,) = authoring.expand_exercises([_directive(text, "08.W1", "markdown")], specs, "t.py")
    assert written.source == text and written.metadata["nbgrader"] == {
        "grade": True, "grade_id": "ex08-w1", "locked": False, "points": 6, "schema_version": 3, "solution": True,
        "task": False}
    with pytest.raises(ValueError, match="model answer sits between"):
        authoring.expand_exercises([_directive("**Plan**", "08.W1", "markdown")], specs, "t.py")


def test_a_bad_directive_names_the_exercise():
    specs = {"01.2": {"variable": "x", "kind": "number", "points": 1}}
    with pytest.raises(ValueError, match=r"t.py cell 0: exercise '01\.9' has no entry .* it has 01\.2"):
        authoring.expand_exercises([_directive("x = 1", "01.9")], specs, "t.py")
    with pytest.raises(ValueError, match="01.2 is empty"):
        authoring.expand_exercises([_directive("", "01.2")], specs, "t.py")
    both = _directive("x = 1", "01.2")
    both.metadata["nbgrader"] = {"grade_id": "ex01-2-answer"}
    with pytest.raises(ValueError, match="carries no nbgrader metadata"):
        authoring.expand_exercises([both], specs, "t.py")


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_chapter_sources_hold_no_exercise_scaffold(source):
    """Every graded cell comes from a directive: no nbgrader header, hidden test or check cell is typed in a
    source, and solution markers only split a written markdown answer from its question."""
    text = source.read_text(encoding="utf-8")
    assert "nbgrader=" not in text and authoring.BEGIN_HIDDEN not in text
    assert not re.search(r"""^# %%\s*\nchecks\.check\(["'][\d.]+\w*["'], \w+\)\s*$""", text, re.MULTILINE)
    for cell in jupytext.read(source, fmt="py:percent").cells:
        if authoring.BEGIN_SOLUTION in cell.source:
            assert cell.cell_type == "markdown" and authoring.EXERCISE in cell.metadata, cell.source[:80]
