"""Course set-up: the course's folders, nbgrader's configuration and exchange, and ``init_course``, which copies
the solution notebooks in, rewrites their hidden tests to report answers and releases the student notebooks."""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from .. import gradebook, manifest, validate
from ..progress import Progress
from .commands import nbgrader


ROOT = Path(__file__).resolve().parents[2]  # the repository: course_lib/instructor/course.py
SOLUTIONS = ROOT / "solutions"
STUDENT = ROOT / "notebooks"
COURSE_ID = "gpu-interconnects"

CONFIG = '''# nbgrader configuration written by `python -m course_lib nbgrader init`.
c = get_config()
c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.root = {root!r}
# init replaces nbgrader's release with the course's student notebook (stubs `x = None`, so it runs
# top to bottom); this stub only applies if you run generate_assignment yourself.
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 300
# release/fetch/submit/collect go through this folder (world-writable, sticky); on a hub every user's
# nbgrader must name the same one (see docs/instructor.md).
c.Exchange.root = {exchange!r}
# collect copies plain files only (no link followed, no FIFO opened, a size limit): course_lib/collect.py
c.ExchangeFactory.collect = "course_lib.collect.SafeCollect"
'''

EXCHANGE_ENV = "COURSE_NBGRADER_EXCHANGE"  # where init puts the exchange (default: DIR/exchange)


def learner_config(exchange, work_dir: str = "~/work") -> str:
    """The nbgrader_config.py a learner's nbgrader reads on a hub: the course, its exchange, and where fetched
    chapters go (``work_dir``, ``~`` being the learner's home: the lab's folder, whichever folder the Assignments
    tab's server or a terminal's ``nbgrader fetch_assignment`` runs in)."""
    return (f'# written by the course hub (jupyter/hub/jupyterhub_config.py): the course, its exchange, the work folder\n'
            f'import os\nc = get_config()\nc.CourseDirectory.course_id = "{COURSE_ID}"\nc.Exchange.root = {str(exchange)!r}\n'
            f'c.Exchange.assignment_dir = os.path.expanduser({work_dir!r})\n')


def make_exchange(path) -> Path:
    """Create nbgrader's exchange folder (mode 1777: every user writes, none removes another's files)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    try:
        path.chmod(0o1777)
    except PermissionError:  # someone else's folder, already set up: leave it as it is
        pass
    return path


def chapters() -> list[str]:
    """Assignment names: the chapter stems of course.toml, e.g. '00_why_communication'."""
    return [c.stem for c in manifest.chapters()]



# A hidden test as the chapter sources write it; in an nbgrader course it reports the answer instead, and
# the instructor's process judges the reported value (grading.judge_reported) outside the learner's kernel.
HIDDEN_GRADE_RE = re.compile(r'importlib\.reload\(course_lib\.grading\)\.grade\("([0-9]+\.[0-9A-Za-z]+)", ([^\n]+)\)$',
                             re.M)


def _judged_outside(exercise_id: str) -> bool:
    """Number and choice answers are judged from the reported value; code exercises need their function."""
    from .. import checks
    return checks.spec(exercise_id).get("kind", "number") in ("number", "choice")


def _report_instead(source_nb: Path, code: dict | None = None) -> dict:
    """Rewrite the hidden tests of ``source_nb`` to report their answer; returns {grade_id: exercise_id}.
    A code exercise's hidden test runs nothing in the kernel: its function is judged from the submission's
    source (:mod:`course_lib.grading_code`); ``code`` gets {grade_id: {"id": exercise_id, "name": function}}."""
    import nbformat

    nb = nbformat.read(source_nb, as_version=4)
    judged = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")

        def swap(m):
            if not _judged_outside(m.group(1)):
                if code is not None and m.group(2).strip().isidentifier():
                    code[grade_id] = {"id": m.group(1), "name": m.group(2).strip()}
                    return f'print("{m.group(1)}: judged from your submitted code, outside this kernel")'
                return m.group(0)
            judged[grade_id] = m.group(1)
            return f'course_lib.grading.report("{m.group(1)}", {m.group(2)})'
        if grade_id and cell.metadata["nbgrader"].get("grade"):
            cell.source = HIDDEN_GRADE_RE.sub(swap, cell.source)
    nbformat.write(nb, source_nb)
    return judged


def code_items(course_dir, assignment: str) -> dict:
    """{grade_id: {"id", "name"}} of the code items of ``assignment`` (written by init), judged from source."""
    path = gradebook.record_path(course_dir, assignment).with_suffix(".code.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def judged_items(course_dir, assignment: str) -> dict:
    """{grade_id: exercise_id} of the items of ``assignment`` judged outside the kernel (written by init)."""
    path = gradebook.record_path(course_dir, assignment).with_suffix(".items.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}



def init_course(course_dir, assignments=None, *, release: bool = True) -> Path:
    """Create an nbgrader course in ``course_dir`` from solutions/; release the assignments."""
    if not isinstance(course_dir, (str, Path)):
        raise ValueError(f"course_dir must be a folder path, got {course_dir!r}")
    course_dir = Path(course_dir).resolve()
    names = chapters() if assignments is None else [validate.choice("assignments item", a, chapters())
                                                     for a in assignments]
    try:
        course_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"course_dir {str(course_dir)!r} cannot be created: {exc.strerror or exc}") from None
    exchange = make_exchange(os.environ.get(EXCHANGE_ENV) or course_dir / "exchange").resolve()
    (course_dir / "nbgrader_config.py").write_text(CONFIG.format(course_id=COURSE_ID, root=str(course_dir),
                                                                 exchange=str(exchange)))
    assignments_done = Progress(len(names), "nbgrader init", "chapters", stream=sys.stdout)
    for number, name in enumerate(names, 1):
        assignments_done.clear()
        print(f"[course_lib] init: {number} of {len(names)}: {name}" + (" (generating the release)" if release else ""),
              flush=True)
        assignments_done.update(0, note=name)
        target = course_dir / "source" / name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(SOLUTIONS / f"{name}.ipynb", target / f"{name}.ipynb")
        items = gradebook.record_path(course_dir, name).with_suffix(".items.json")
        items.parent.mkdir(parents=True, exist_ok=True)
        code = {}
        items.write_text(json.dumps(_report_instead(target / f"{name}.ipynb", code), indent=1))
        gradebook.record_path(course_dir, name).with_suffix(".code.json").write_text(json.dumps(code, indent=1))
        if release:
            nbgrader(course_dir, "generate_assignment", name, "--force")
            # Release the course's own student notebook: its stubs (`x = None`) let a learner run it
            # top to bottom with "not answered yet", where nbgrader's stub raises NotImplementedError.
            # Its graded and locked cells are those nbgrader released (same grade_ids and sources).
            shutil.copy2(STUDENT / f"{name}.ipynb", course_dir / "release" / name / f"{name}.ipynb")
        assignments_done.update(1)
    assignments_done.close()
    from .. import hub_class
    hub_class.close_course(course_dir)  # source (solutions, hidden tests), submissions, gradebook: instructor only
    return course_dir
