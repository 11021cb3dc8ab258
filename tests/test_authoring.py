"""The student notebooks are generated from solutions/src and leak nothing."""
import json
import re
from pathlib import Path

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
