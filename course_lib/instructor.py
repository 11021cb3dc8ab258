"""nbgrader end to end: course folder, release, autograde with clear messages, gradebook CSV.

``python -m course_lib nbgrader init DIR`` turns the repository into an nbgrader
course: ``DIR/source/<chapter>/<chapter>.ipynb`` are the solution notebooks, and
``nbgrader generate_assignment`` writes ``DIR/release/``. Students' notebooks go
to ``DIR/submitted/<student>/<chapter>/`` (``nbgrader collect`` puts them there
on a JupyterHub, :func:`submit` by hand). ``... nbgrader autograde DIR CHAPTER``
first inspects every submission and says in plain words what a student broke
(a graded cell deleted, a locked cell retyped, an answer cell missing), then runs
``nbgrader autograde``; ``... nbgrader export DIR`` writes the gradebook CSV.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import grading, validate

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
STUDENT = ROOT / "notebooks"
COURSE_ID = "gpu-interconnects"

CONFIG = '''# nbgrader configuration written by `python -m course_lib nbgrader init`.
c = get_config()
c.CourseDirectory.course_id = "{course_id}"
c.CourseDirectory.root = r"{root}"
# init replaces nbgrader's release with the course's student notebook (stubs `x = None`, so it runs
# top to bottom); this stub only applies if you run generate_assignment yourself.
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 300
'''


def chapters() -> list[str]:
    """Assignment names: the stems of the solution notebooks, e.g. '00_why_communication'."""
    return [p.stem for p in sorted(SOLUTIONS.glob("*.ipynb"))]


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader runs alembic
    # hidden tests grade against the instructor's answer key (course_lib.grading), wherever the package is installed
    env.setdefault(grading.KEY_ENV, str(grading.key_path()))
    return env


def nbgrader(course_dir, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command inside ``course_dir``; raises RuntimeError with its log on failure."""
    course_dir = Path(course_dir)
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc


def init_course(course_dir, assignments=None, *, release: bool = True) -> Path:
    """Create an nbgrader course in ``course_dir`` from solutions/; release the assignments."""
    if not isinstance(course_dir, (str, Path)):
        raise ValueError(f"course_dir must be a folder path, got {course_dir!r}")
    course_dir = Path(course_dir).resolve()
    names = chapters() if assignments is None else [validate.choice("assignments item", a, chapters())
                                                     for a in assignments]
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(CONFIG.format(course_id=COURSE_ID, root=course_dir))
    for name in names:
        target = course_dir / "source" / name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(SOLUTIONS / f"{name}.ipynb", target / f"{name}.ipynb")
        if release:
            nbgrader(course_dir, "generate_assignment", name, "--force")
            # Release the course's own student notebook: its stubs (`x = None`) let a learner run it
            # top to bottom with "not answered yet", where nbgrader's stub raises NotImplementedError.
            # Its graded and locked cells are those nbgrader released (same grade_ids and sources).
            shutil.copy2(STUDENT / f"{name}.ipynb", course_dir / "release" / name / f"{name}.ipynb")
    return course_dir


def submit(course_dir, assignment, student, notebook) -> Path:
    """Place a student's notebook where ``nbgrader autograde`` looks (and add the student)."""
    course_dir = Path(course_dir)
    assignment = validate.choice("assignment", assignment, chapters())
    if not isinstance(student, str) or not student.isidentifier():
        raise ValueError(f"student must be a simple id (letters, digits, _), got {student!r}")
    notebook = Path(notebook)
    if not notebook.is_file():
        raise ValueError(f"notebook {notebook} does not exist")
    target = course_dir / "submitted" / student / assignment
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(notebook, target / f"{assignment}.ipynb")
    nbgrader(course_dir, "db", "student", "add", student)
    return target / f"{assignment}.ipynb"


# Words an honest answer cell never needs: they reach for the grader, the key or Python's import machinery.
SUSPICIOUS = ("grading", "answer_key", "ANSWER_KEY", "sys.modules", "importlib", "__eq__", "__float__",
              "checks.grade", "checks.evaluate", "checks =", "checks.spec", "builtins", "open(")


@dataclass(frozen=True)
class Problem:
    student: str
    grade_id: str
    message: str

    def __str__(self) -> str:
        return f"{self.student}: {self.message}"


def inspect_submission(submission, release, student: str = "student") -> list[Problem]:
    """Compare a submission with the released notebook cell by cell (by nbgrader grade_id)."""
    import nbformat

    def cells(path):
        nb = nbformat.read(path, as_version=4)
        out = {}
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade_id"):
                out.setdefault(meta["grade_id"], []).append((cell, meta))
        return out

    try:
        got = cells(submission)
    except Exception as exc:  # unreadable JSON, wrong format: say so instead of crashing
        return [Problem(student, "*", f"the notebook could not be read ({exc.__class__.__name__}: {exc}); "
                                      "ask the student to resubmit the file saved by JupyterLab")]
    expected = cells(release)
    problems = []
    for grade_id, [(cell, meta)] in expected.items():
        if grade_id not in got:
            if meta.get("grade"):
                what = f"the graded cell '{grade_id}' ({meta.get('points', 0):g} points) was deleted"
                fix = "its points are lost; restore the cell from the released notebook and regrade"
            else:
                what, fix = f"the answer cell '{grade_id}' was deleted", "the checks after it will fail"
            problems.append(Problem(student, grade_id, f"{what}: {fix}"))
            continue
        if len(got[grade_id]) > 1:
            problems.append(Problem(student, grade_id, f"cell '{grade_id}' appears {len(got[grade_id])} times "
                                                       "(copied cell); nbgrader grades one of them"))
        mine = got[grade_id][0][0]
        if meta.get("solution") and cell.cell_type == "code":
            found = sorted({w for w in SUSPICIOUS if w in mine.source})
            if found:
                problems.append(Problem(student, grade_id, f"the answer cell '{grade_id}' uses {', '.join(found)}: "
                                                           "read it before trusting its score"))
        if meta.get("locked") and mine.source.strip() != cell.source.strip():
            problems.append(Problem(student, grade_id, f"the locked cell '{grade_id}' was edited or retyped; "
                                                       "the autograder restores the original before grading"))
    return problems


def autograde(course_dir, assignment) -> list[Problem]:
    """Inspect every submission of ``assignment``, print the problems, run ``nbgrader autograde``."""
    course_dir = Path(course_dir)
    assignment = validate.choice("assignment", assignment, chapters())
    release = course_dir / "release" / assignment / f"{assignment}.ipynb"
    problems = []
    for student_dir in sorted((course_dir / "submitted").glob(f"*/{assignment}")):
        for notebook in sorted(student_dir.glob("*.ipynb")):
            problems += inspect_submission(notebook, release, student_dir.parent.name)
    for problem in problems:
        print(f"[course_lib] {problem}")
    nbgrader(course_dir, "autograde", assignment, "--force")
    return problems


def export_grades(course_dir, csv_path=None) -> Path:
    """Write the gradebook as CSV (default DIR/grades.csv); returns its path."""
    course_dir = Path(course_dir)
    csv_path = Path(csv_path) if csv_path else course_dir / "grades.csv"
    nbgrader(course_dir, "export", f"--CsvExportPlugin.filename={csv_path.resolve()}")
    return csv_path


def register(sub) -> None:
    p = sub.add_parser("nbgrader", help="run the course in nbgrader: init, autograde, export")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("init", help="create an nbgrader course folder and release the chapters")
    a.add_argument("course_dir")
    a.add_argument("--assignments", nargs="*", help="chapters to include (default: all)")
    a.set_defaults(func=lambda args: print(init_course(args.course_dir, args.assignments)) or 0)
    a = actions.add_parser("autograde", help="inspect and autograde the submissions of one chapter")
    a.add_argument("course_dir")
    a.add_argument("assignment")
    a.set_defaults(func=lambda args: autograde(args.course_dir, args.assignment) and 0)
    a = actions.add_parser("export", help="write the gradebook CSV")
    a.add_argument("course_dir")
    a.add_argument("--csv", default=None)
    a.set_defaults(func=lambda args: print(export_grades(args.course_dir, args.csv)) or 0)
