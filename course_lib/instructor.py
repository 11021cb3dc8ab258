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
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import cli, grading, manifest, validate

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
# release/fetch/submit/collect go through this folder (world-writable, sticky); on a hub every user's
# nbgrader must name the same one (see docs/instructor.md).
c.Exchange.root = r"{exchange}"
'''

EXCHANGE_ENV = "COURSE_NBGRADER_EXCHANGE"  # where init puts the exchange (default: DIR/exchange)


def learner_config(exchange) -> str:
    """The nbgrader_config.py a learner's nbgrader reads on a hub: the course and its exchange, nothing else."""
    return (f'# written by the course hub (jupyter/hub/jupyterhub_config.py): the course and its exchange\n'
            f'c = get_config()\nc.CourseDirectory.course_id = "{COURSE_ID}"\nc.Exchange.root = r"{exchange}"\n')


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


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader runs alembic
    # hidden tests grade against the instructor's answer key (course_lib.grading), wherever the package is installed
    env.setdefault(grading.KEY_ENV, str(grading.key_path()))
    return env


class NbgraderError(RuntimeError):
    """An nbgrader command failed: ``summary`` is one line (its last error), ``log`` all it printed."""

    def __init__(self, args, returncode: int, log: str):
        errors = [line for line in log.splitlines() if "ERROR" in line or line.startswith(("Error", "error"))]
        last = (errors or [line for line in log.splitlines() if line.strip()] or ["no output"])[-1]
        self.summary = f"nbgrader {' '.join(args)} failed (exit {returncode}): {cli.one_line(last)[:300]}"
        self.log = log
        super().__init__(f"{self.summary}\n{log}")


def _course(course_dir) -> Path:
    """``course_dir`` as a Path after checking it is an nbgrader course folder (ValueError otherwise)."""
    if not isinstance(course_dir, (str, Path)):
        raise ValueError(f"course_dir must be a folder path, got {validate.describe(course_dir)}")
    path = Path(course_dir)
    if not path.is_dir():
        raise ValueError(f"course_dir {str(path)!r} does not exist; create a course with "
                         "python -m course_lib nbgrader init DIR")
    if not (path / "nbgrader_config.py").is_file():
        raise ValueError(f"course_dir {str(path)!r} is not an nbgrader course (no nbgrader_config.py); create one "
                         "with python -m course_lib nbgrader init DIR")
    return path


def nbgrader(course_dir, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command inside ``course_dir``; raises NbgraderError (a RuntimeError) with its log on failure."""
    course_dir = Path(course_dir)
    if not course_dir.is_dir():
        raise ValueError(f"course_dir {str(course_dir)!r} does not exist")
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise NbgraderError(args, proc.returncode, proc.stdout + proc.stderr)
    return proc


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
    (course_dir / "nbgrader_config.py").write_text(CONFIG.format(course_id=COURSE_ID, root=course_dir,
                                                                 exchange=exchange))
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
    assignment = validate.choice("assignment", assignment, chapters())
    if not isinstance(student, str) or not student.isidentifier():
        raise ValueError(f"student must be a simple id (letters, digits, _), got {student!r}")
    course_dir = _course(course_dir)
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
    """What is wrong with one submission; ``graded`` is False where nbgrader could not grade it at all."""

    student: str
    grade_id: str
    message: str
    graded: bool = True

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


_STUDENT_RE = re.compile(r"Creating/updating student with ID '([^']*)'")
_TIMEOUT_RE = re.compile(r"Timeout waiting for execute reply \((\d+(?:\.\d+)?)s\)")


def _log_by_student(log: str) -> dict:
    """nbgrader autograde's log split at each "Creating/updating student" line: student -> their lines."""
    sections, current = {}, None
    for line in log.splitlines():
        m = _STUDENT_RE.search(line)
        if m:
            current = m.group(1)
        if current is not None:
            sections.setdefault(current, []).append(line)
    return sections


def _grading_problems(log: str, assignment: str) -> list[Problem]:
    """One Problem per submission nbgrader could not grade, and per cell timeout, read from its log."""
    failed = set(re.findall(rf"error processing assignment '{re.escape(assignment)}' for student '([^']*)'", log))
    problems = []
    for student, lines in _log_by_student(log).items():
        text = "\n".join(lines)
        for seconds in _TIMEOUT_RE.findall(text):
            problems.append(Problem(student, "*", f"a cell ran past the {float(seconds):g} s limit per cell and was "
                                                  "stopped; that cell has an error, the rest was graded"))
        if student not in failed:
            continue
        if "DeadKernelError" in text or "Kernel died" in text:
            why = ("the kernel died while running the notebook (a cell crashed Python, exited or ran out of "
                   "memory); not graded: find the cell, fix or remove it, and regrade")
        elif "CellTimeoutError" in text:
            limit = _TIMEOUT_RE.findall(text)
            why = (f"cells ran past the {float(limit[-1]):g} s limit per cell and could not be stopped; "
                   "not graded: raise --timeout or fix the slow cell, and regrade" if limit else
                   "a cell ran past the limit per cell; not graded")
        elif "NotJSONError" in text or "JSONDecodeError" in text or "NBFormatError" in text:
            why = "the notebook is not a valid .ipynb file; not graded: ask the student to resubmit the saved file"
        else:
            last = [l for l in lines if l.strip() and not l.startswith("[")] or ["see the log"]
            why = f"nbgrader could not grade it ({cli.one_line(last[-1])[:200]})"
        problems.append(Problem(student, "*", why, graded=False))
    return problems


def autograde(course_dir, assignment, *, timeout=None) -> list[Problem]:
    """Inspect every submission of ``assignment``, run ``nbgrader autograde``, report per submission.

    Every submission nbgrader can grade is graded, whatever the others do; one it cannot grade
    (invalid file, a cell that kills the kernel) comes back as a Problem with ``graded=False``, a
    cell that runs past ``timeout`` seconds (default: the course config's 300) as a Problem too.
    The full nbgrader log is written to ``course_dir/autograde.log``. Problems are printed as found.
    """
    assignment = validate.choice("assignment", assignment, chapters())
    course_dir = _course(course_dir)
    extra = [] if timeout is None else [f"--Execute.timeout={validate.integer('timeout', timeout, low=1, high=86400)}"]
    release = course_dir / "release" / assignment / f"{assignment}.ipynb"
    if not release.is_file():
        raise ValueError(f"assignment {assignment!r} is not released in {course_dir}; run "
                         f"python -m course_lib nbgrader init {course_dir} --assignments {assignment}")
    submissions = sorted((course_dir / "submitted").glob(f"*/{assignment}"))
    if not submissions:
        raise ValueError(f"assignment {assignment!r} has no submissions in {course_dir / 'submitted'}")
    problems = []
    for student_dir in submissions:
        for notebook in sorted(student_dir.glob("*.ipynb")):
            problems += inspect_submission(notebook, release, student_dir.parent.name)
    for problem in problems:
        print(f"[course_lib] {problem}")
    try:
        log = nbgrader(course_dir, "autograde", assignment, "--force", *extra)
        log = log.stdout + log.stderr
    except NbgraderError as exc:
        log = exc.log
        if "error processing assignment" not in log:  # nbgrader itself failed, not a submission
            (course_dir / "autograde.log").write_text(log, encoding="utf-8")
            raise
    (course_dir / "autograde.log").write_text(log, encoding="utf-8")
    found = _grading_problems(log, assignment)
    for problem in found:
        print(f"[course_lib] {problem}")
    return problems + found


def export_grades(course_dir, csv_path=None) -> Path:
    """Write the gradebook as CSV (default DIR/grades.csv); returns its path."""
    course_dir = _course(course_dir)
    csv_path = Path(csv_path) if csv_path else course_dir / "grades.csv"
    nbgrader(course_dir, "export", f"--CsvExportPlugin.filename={csv_path.resolve()}")
    return csv_path


def _cli_autograde(args) -> int:
    problems = autograde(args.course_dir, args.assignment, timeout=args.timeout)
    submissions = len(list((Path(args.course_dir) / "submitted").glob(f"*/{args.assignment}")))
    failed = sorted({p.student for p in problems if not p.graded})
    print(f"[course_lib] {args.assignment}: {submissions - len(failed)} of {submissions} submissions graded"
          + (f"; not graded: {', '.join(failed)}" if failed else "")
          + f"; nbgrader's log: {Path(args.course_dir) / 'autograde.log'}")
    return 1 if failed else 0


def _guarded(func):
    """A CLI handler whose nbgrader failure is one line (the log goes to a file), status 1."""
    def run(args) -> int:
        try:
            return func(args)
        except NbgraderError as exc:
            log = Path(args.course_dir) / "nbgrader-error.log" if Path(args.course_dir).is_dir() else None
            if log is not None:
                log.write_text(exc.log, encoding="utf-8")
            print(f"error: {exc.summary}" + (f" (full log: {log})" if log else ""), file=sys.stderr)
            return 1
    return run


def register(sub) -> None:
    p = sub.add_parser("nbgrader", help="run the course in nbgrader: init, autograde, export")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("init", help="create an nbgrader course folder and release the chapters")
    a.add_argument("course_dir")
    a.add_argument("--assignments", nargs="*", help="chapters to include (default: all)")
    a.set_defaults(func=_guarded(lambda args: print(init_course(args.course_dir, args.assignments)) or 0))
    a = actions.add_parser("autograde", help="inspect and autograde the submissions of one chapter")
    a.add_argument("course_dir")
    a.add_argument("assignment")
    a.add_argument("--timeout", type=cli.integer(low=1, high=86400), default=None,
                   help="seconds a cell may run (default: the course config's 300)")
    a.set_defaults(func=_guarded(_cli_autograde))
    a = actions.add_parser("export", help="write the gradebook CSV")
    a.add_argument("course_dir")
    a.add_argument("--csv", default=None)
    a.set_defaults(func=_guarded(lambda args: print(export_grades(args.course_dir, args.csv)) or 0))
