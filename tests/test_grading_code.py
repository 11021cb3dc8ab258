"""Code exercises judged outside the learner's kernel (issue 35, item 4 of Build): the function is read from the
submitted notebook's source and judged in a fresh process; nothing else the learner's cells do reaches it.

Each attack below scored full marks on main (the check ran in the learner's kernel; issue 35 measured them);
here a blank answer with the attack scores 0, a library collective scores 0 with one line, and the reference
solution keeps full marks.
"""
import os
import shutil

import nbformat
import pytest

from course_lib import authoring, grading_code, instructor

pytestmark = pytest.mark.slow

STUB = "def my_ring_all_reduce(tensor, rank, world_size):\n    raise NotImplementedError()\n"
HOOK = ("ip = get_ipython()\nip.events.register('pre_run_cell', lambda *a: print('ok'))\n"
        "from IPython.display import display\ndisplay('Correct.')\n")
ATTACKS = {  # added before the answer (root and rootless alike): each used to make a blank ring score 3/3
    "pre_run_cell hook": HOOK,
    "importlib.reload replaced": "import importlib\nimportlib.reload = lambda m: type('G', (), {'grade': staticmethod(lambda *a: None)})\n",
    "fake importlib": "import sys, types\nsys.modules['importlib'] = types.SimpleNamespace(reload=lambda m: m)\n",
    "meta-path finder": ("import sys\nclass F:\n    def find_spec(self, name, path, target=None):\n        return None\n"
                         "sys.meta_path.insert(0, F())\n"),
}
IN_BODY = {  # inside the function: refused from its source, with one line
    "saved ProcessGroup.allreduce": ("def my_ring_all_reduce(tensor, rank, world_size):\n"
                                     "    pg = dist.distributed_c10d._get_default_group()\n    pg.allreduce([tensor]).wait()\n"),
    "gc-cleared Traffic.collectives": ("def my_ring_all_reduce(tensor, rank, world_size):\n    import gc\n"
                                       "    [o.collectives.clear() for o in gc.get_objects() if hasattr(o, 'collectives')]\n"
                                       "    dist.all_reduce(tensor)\n"),
    "lab.algorithms.ring_all_reduce": ("def my_ring_all_reduce(tensor, rank, world_size):\n"
                                       "    lab.algorithms.ring_all_reduce(tensor, rank, world_size)\n"),
    "dist.all_reduce": "def my_ring_all_reduce(tensor, rank, world_size):\n    dist.all_reduce(tensor)\n",
    "costmodel.two_level_all_reduce": ("def my_ring_all_reduce(tensor, rank, world_size):\n"
                                       "    return costmodel.two_level_all_reduce(tensor)\n"),
    "lab.algorithms.direct_all_to_all": ("def my_ring_all_reduce(tensor, rank, world_size):\n"
                                         "    lab.algorithms.direct_all_to_all(tensor, tensor, rank, world_size)\n"),
}
CHAPTER = "04_collectives_lab"
ITEM = {"ex04-4-check": {"id": "04.4", "name": "my_ring_all_reduce"}}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    (course / "release" / CHAPTER).mkdir(parents=True)
    shutil.copy2(instructor.STUDENT / f"{CHAPTER}.ipynb", course / "release" / CHAPTER)
    return course


def _submit(course, student, answer, before=""):
    nb = nbformat.read(course / "release" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "ex04-4-answer")
    nb.cells[at].source = before + answer
    if before:
        nb.cells.insert(at, nbformat.v4.new_code_cell(before))  # the same attack as an added cell too
    folder = course / "submitted" / student / CHAPTER
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{CHAPTER}.ipynb")


def _solution():
    nb = nbformat.read(instructor.SOLUTIONS / f"{CHAPTER}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex04-4-answer")
    return authoring.SOLUTION_RE.sub(lambda m: m.group(2), cell.source)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_blank_answer_with_a_kernel_attack_scores_0(course, attack):
    student = "k_" + attack.split()[0].replace(".", "_").replace("-", "_")
    _submit(course, student, STUB, ATTACKS[attack])
    verdict = instructor._judge_code(course, CHAPTER, student, ITEM, isolated=False)["ex04-4-check"]
    assert verdict["score"] == 0 and verdict["max_score"] == 3, verdict
    assert "not answered" in verdict["detail"] or "which an answer never needs" in verdict["detail"], verdict


@pytest.mark.parametrize("attack", list(IN_BODY))
def test_a_library_collective_or_the_machinery_scores_0_in_one_line(course, attack):
    _submit(course, "b", IN_BODY[attack])
    verdict = instructor._judge_code(course, CHAPTER, "b", ITEM, isolated=False)["ex04-4-check"]
    assert verdict["score"] == 0 and "\n" not in verdict["detail"], verdict
    assert any(w in verdict["detail"] for w in ("library collective", "private attribute", "uses gc")), verdict


def test_the_reference_ring_keeps_full_marks_in_a_fresh_process(course):
    _submit(course, "full", _solution(), ATTACKS["pre_run_cell hook"])
    isolated = os.geteuid() == 0  # as root the judge runs under the sandbox, as autograde runs it
    verdict = instructor._judge_code(course, CHAPTER, "full", ITEM, isolated=isolated)["ex04-4-check"]
    assert verdict["score"] == 3, verdict


def test_extract_keeps_definitions_and_drops_statements():
    code = grading_code.extract(HOOK + "N = 2 * 3\n" + STUB + "print('ok')\n", "my_ring_all_reduce")
    assert "register" not in code and "display('Correct.')" not in code and "N = 2 * 3" in code and "def my_ring" in code
    with pytest.raises(ValueError, match="no function my_ring_all_reduce"):
        grading_code.extract("x = 1", "my_ring_all_reduce")


@pytest.mark.parametrize("code", [
    "import os\ndef f(tensor, rank, world_size):\n    return int(os.environ.get('RANK', rank))\n",
    "import sys\ndef f(tensor, rank, world_size):\n    print('rank', rank, file=sys.stderr)\n",
    "from os import environ\ndef f(tensor, rank, world_size):\n    return environ.get('X')\n",
])
def test_an_honest_answer_may_read_the_environment_and_write_to_stderr(code):
    assert grading_code.screen(code) is None


@pytest.mark.parametrize("code, word", [
    ("import sys\ndef f(t, r, w):\n    sys.modules['x'] = None\n", "sys"),
    ("import os\ndef f(t, r, w):\n    os.system('true')\n", "os"),
    ("import sys\ndef f(t, r, w):\n    sys.stdout = None\n", "sys"),
    ("import os as o\ndef f(t, r, w):\n    return o.environ\n", "os"),
    ("import sys\ndef f(t, r, w):\n    g(sys)\n", "sys"),
    ("from sys import modules\ndef f(t, r, w):\n    return modules\n", "sys"),
])
def test_the_rest_of_os_and_sys_stays_machinery(code, word):
    assert grading_code.screen(code) == (f"it uses {word}, which an answer never needs (the interpreter's or the "
                                         "grader's machinery)")
