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

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import cli, gradebook, grading, manifest, sandbox, submissions, validate
from .progress import Progress

ROOT = Path(__file__).resolve().parent.parent
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


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader runs alembic
    # hidden tests of code exercises grade in the kernel against the instructor's answer key; the sandbox
    # kernel (course_lib.sandbox) does not pass it on, and answers reported by the others are judged here
    env.setdefault(grading.KEY_ENV, str(grading.key_path()))
    return env


# A hidden test as the chapter sources write it; in an nbgrader course it reports the answer instead, and
# the instructor's process judges the reported value (grading.judge_reported) outside the learner's kernel.
HIDDEN_GRADE_RE = re.compile(r'importlib\.reload\(course_lib\.grading\)\.grade\("([0-9]+\.[0-9A-Za-z]+)", ([^\n]+)\)$',
                             re.M)


def _judged_outside(exercise_id: str) -> bool:
    """Number and choice answers are judged from the reported value; code exercises need their function."""
    from . import checks
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


class NbgraderError(RuntimeError):
    """An nbgrader command failed: ``summary`` is one line (its last error), ``log`` all it printed."""

    def __init__(self, args, returncode: int, log: str):
        errors = [line for line in log.splitlines() if "ERROR" in line or line.startswith(("Error", "error"))]
        last = (errors or [line for line in log.splitlines() if line.strip()] or ["no output"])[-1]
        self.summary = f"nbgrader {' '.join(args)} failed (exit {returncode}): {cli.one_line(last)[:300]}"
        self.log = log
        super().__init__(f"{self.summary}\n{log}")


class SetupError(RuntimeError):
    """A fault on the instructor's side (the grading kernel, the course's set-up), not in any submission:
    said once, as such, and nothing is graded."""


def _course(course_dir) -> Path:
    """``course_dir`` as an absolute Path (resolved once, here: nbgrader runs inside it, so a relative path
    would mean another folder there) after checking it is an nbgrader course folder (ValueError otherwise)."""
    if not isinstance(course_dir, (str, Path)):
        raise ValueError(f"course_dir must be a folder path, got {validate.describe(course_dir)}")
    path = Path(course_dir).resolve()
    if not path.is_dir():
        raise ValueError(f"course_dir {str(path)!r} does not exist; create a course with "
                         "python -m course_lib nbgrader init DIR")
    if not (path / "nbgrader_config.py").is_file():
        raise ValueError(f"course_dir {str(path)!r} is not an nbgrader course (no nbgrader_config.py); create one "
                         "with python -m course_lib nbgrader init DIR")
    return path


def nbgrader(course_dir, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command inside ``course_dir``; raises NbgraderError (a RuntimeError) with its log on failure."""
    course_dir = Path(course_dir).resolve()
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
    from . import hub_class
    hub_class.close_course(course_dir)  # source (solutions, hidden tests), submissions, gradebook: instructor only
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
              "checks.grade", "checks.evaluate", "checks =", "checks.spec", "builtins", "open(",
              # the process group's own methods: a ring answer needs send/recv only, never these
              "_distributed_c10d", "ProcessGroup", "_get_default_group", "_get_backend")


@dataclass(frozen=True)
class Problem:
    """What is wrong with one submission; ``graded`` is False where nbgrader could not grade it at all."""

    student: str
    grade_id: str
    message: str
    graded: bool = True

    def __str__(self) -> str:
        return f"{self.student}: {self.message}"


def _shown(source: str) -> str:
    """A cell's text as the release shows it: hidden tests removed (the solution notebook carries them)."""
    from . import authoring
    return authoring.HIDDEN_RE.sub("", source).strip()


# Calls and names that reach the interpreter's own machinery; an answer cell computes a number or a choice.
REACHING = ("__import__", "getattr", "setattr", "delattr", "exec", "eval", "compile", "globals", "locals", "vars",
            "get_ipython", "open", "breakpoint")


def _words(source: str) -> set[str]:
    """What a cell names, read from its syntax: identifiers, attributes, imported modules, string constants and
    strings built by ``+``, ``join`` or f-strings of constants (``'import' + 'lib'`` is ``importlib``), dunder
    attributes. A cell that does not parse (IPython magics aside) is read as text."""
    import ast

    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {w for w in SUSPICIOUS + REACHING if w in source}

    def text(node):  # the string a constant expression spells, or None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = text(node.left), text(node.right)
            return None if left is None or right is None else left + right
        if isinstance(node, ast.JoinedStr):
            parts = [text(v) if not isinstance(v, ast.FormattedValue) else text(v.value) for v in node.values]
            return None if None in parts else "".join(parts)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
                and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple))):
            sep, parts = text(node.func.value), [text(e) for e in node.args[0].elts]
            return None if sep is None or None in parts else sep.join(parts)
        return None

    found, spelled = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)  # def __eq__(...): an object that lies to comparisons
            if node.name.startswith("__") and node.name.endswith("__") and node.name not in SUSPICIOUS:
                found.add("a dunder method (" + node.name + ")")
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
            if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in SUSPICIOUS:
                found.add("a dunder attribute (" + node.attr + ")")
            if isinstance(node.value, ast.Name):
                found.add(f"{node.value.id}.{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                found.update(alias.name.split("."))
            if isinstance(node, ast.ImportFrom) and node.module:
                found.update(node.module.split("."))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in getattr(node, "targets", None) or [node.target]:
                if isinstance(target, ast.Attribute):  # json.loads = ..., checks.grade = ...: a patch, not an answer
                    found.add("rebinds " + ast.unparse(target))
                elif isinstance(target, ast.Name) and target.id in ("checks", "grading", "course_lib"):
                    found.add(f"{target.id} =")  # the grader's module replaced by something else
        spelled_here = text(node)
        if spelled_here:
            spelled.append(spelled_here)
    out = {w for w in REACHING if w in found or w in spelled}
    out |= {w for w in found if w.startswith(("a dunder attribute", "a dunder method", "rebinds "))}
    names = " ".join(sorted(found))
    out |= {w for w in SUSPICIOUS if w in names or any(w in s for s in spelled)}
    return out


def _suspicious(source: str, allowed: str = "") -> list[str]:
    """What ``source`` reaches for (:func:`_words`: SUSPICIOUS words, dunders, REACHING calls) that ``allowed``
    (the reference solution's cell) does not also use. A hint for the reader: the grade itself is decided
    outside the learner's kernel."""
    return sorted(_words(source) - _words(allowed))


def inspect_submission(submission, release, student: str = "student", reference=None) -> list[Problem]:
    """Compare a submission with the released notebook cell by cell (by nbgrader grade_id).

    ``reference``: the solution notebook; a word its own answer cell uses is not suspicious there.
    Cells the student added (code that is in no released cell) are screened too.
    """
    import nbformat

    def cells(nb):
        out = {}
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade_id"):
                out.setdefault(meta["grade_id"], []).append((cell, meta))
        return out

    try:
        submitted = nbformat.reads(submissions.read_file(submission).decode("utf-8"), as_version=4)
    except submissions.Refused as exc:
        return [Problem(student, "*", f"not graded: {exc.why}", graded=False)]
    except Exception as exc:  # unreadable JSON, wrong format: say so instead of crashing
        return [Problem(student, "*", f"the notebook could not be read ({exc.__class__.__name__}: {exc}); "
                                      "ask the student to resubmit the file saved by JupyterLab")]
    try:
        got = cells(submitted)
    except Exception as exc:  # unreadable JSON, wrong format: say so instead of crashing
        return [Problem(student, "*", f"the notebook could not be read ({exc.__class__.__name__}: {exc}); "
                                      "ask the student to resubmit the file saved by JupyterLab")]
    released_nb = nbformat.read(release, as_version=4)
    expected = cells(released_nb)
    solution = cells(nbformat.read(reference, as_version=4)) if reference is not None else {}
    problems = []
    released = {c.source.strip() for c in released_nb.cells}
    for cell in submitted.cells:
        if (cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade_id")
                and cell.source.strip() not in released):
            found = _suspicious(cell.source)
            if found:
                problems.append(Problem(student, "*", f"a code cell the student added uses {', '.join(found)}: "
                                                      "read it before trusting its score"))
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
            found = _suspicious(mine.source, "".join(c.source for c, _ in solution.get(grade_id, [])))
            if found:
                problems.append(Problem(student, grade_id, f"the answer cell '{grade_id}' uses {', '.join(found)}: "
                                                           "read it before trusting its score"))
        if meta.get("locked") and _shown(mine.source) != _shown(cell.source):
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


def autograde(course_dir, assignment, *, timeout=None, isolate: bool = True) -> list[Problem]:
    """Inspect every submission of ``assignment``, run ``nbgrader autograde``, report per submission.

    Every submission nbgrader can grade is graded, whatever the others do; one it cannot grade
    (invalid file, a cell that kills the kernel) comes back as a Problem with ``graded=False``, a
    cell that runs past ``timeout`` seconds (default: the course config's 300) as a Problem too.
    The full nbgrader log is written to ``course_dir/autograde.log``. Problems are printed as found.
    Number and choice answers are judged here from what each notebook reported (``_judge``); as root each
    kernel runs isolated (:mod:`course_lib.sandbox`; ``isolate=False`` turns that off).
    """
    assignment = validate.choice("assignment", assignment, chapters())
    course_dir = _course(course_dir)
    extra = [] if timeout is None else [f"--Execute.timeout={validate.integer('timeout', timeout, low=1, high=86400)}"]
    release = course_dir / "release" / assignment / f"{assignment}.ipynb"
    if not release.is_file():
        raise ValueError(f"assignment {assignment!r} is not released in {course_dir}; run "
                         f"python -m course_lib nbgrader init {course_dir} --assignments {assignment}")
    student_dirs = sorted((course_dir / "submitted").glob(f"*/{assignment}"))
    if not student_dirs:
        raise ValueError(f"assignment {assignment!r} has no submissions in {course_dir / 'submitted'}")
    problems = []
    reference = course_dir / "source" / assignment / f"{assignment}.ipynb"
    for student_dir in student_dirs:
        try:  # plain files only: a link, FIFO, device or oversized file is refused before anything reads it
            submissions.check_folder(student_dir)
        except submissions.Refused as exc:
            problems.append(Problem(student_dir.parent.name, "*", f"not graded: {exc.why}", graded=False))
            continue
        for notebook in sorted(student_dir.glob("*.ipynb")):
            problems += inspect_submission(notebook, release, student_dir.parent.name,
                                           reference if reference.is_file() else None)
    for problem in problems:
        print(f"[course_lib] {problem}")
    refused = sorted({p.student for p in problems if not p.graded})
    if refused:  # nbgrader never opens these (it would follow the link, block on the FIFO, read the 2 GB)
        extra.append(f"--CourseDirectory.student_id_exclude={','.join(refused)}")
    isolated, why = sandbox.available() if isolate else (False, "isolation turned off (isolate=False)")
    print(f"[course_lib] autograde {assignment}: {len(student_dirs)} submissions; {why}", flush=True)
    env = _env()
    if isolated:
        if not sandbox.rootless():
            sandbox.ensure_user()
        env["JUPYTER_PATH"] = str(sandbox.kernelspec(course_dir / "grading_kernel", course_dir)) + os.pathsep + \
            env.get("JUPYTER_PATH", "")
        _check_kernel(env)
        extra.append(f"--Execute.kernel_name={sandbox.KERNEL_NAME}")
    names = [d.parent.name for d in student_dirs if d.parent.name not in refused]

    def progress(line):
        m = _STUDENT_RE.search(line)
        if m and m.group(1) in names:
            print(f"[course_lib] autograde {assignment}: {names.index(m.group(1)) + 1} of {len(names)}: "
                  f"{m.group(1)}", flush=True)
    try:
        log = _streamed(course_dir, ["autograde", assignment, "--force", *extra], env, progress)
    except NbgraderError as exc:
        log = exc.log
        if "error processing assignment" not in log:  # nbgrader itself failed, not a submission
            (course_dir / "autograde.log").write_text(log, encoding="utf-8")
            raise
    (course_dir / "autograde.log").write_text(log, encoding="utf-8")
    fault = _setup_fault(log)
    if fault:
        raise SetupError(f"autograde {assignment}: {fault}; this is the grading set-up, not any submission: nothing "
                         f"was graded (nbgrader's log: {course_dir / 'autograde.log'})")
    found = _grading_problems(log, assignment)
    for problem in found:
        print(f"[course_lib] {problem}")
    failed = {p.student: p.message for p in found + problems if not p.graded}
    _judge(course_dir, assignment, [n for n in names if n not in failed], failed, isolated)
    return problems + found


# Lines of nbgrader's log that no submission can cause: the kernel it was told to use is not there or cannot start.
_SETUP_FAULTS = (re.compile(r"NoSuchKernel[^\n]*|No such kernel named [^\n]*"),
                 re.compile(r"FileNotFoundError: [^\n]*(?:kernel|ipykernel|python)[^\n]*"))


def _setup_fault(log: str) -> str | None:
    """The instructor-side fault nbgrader's log shows (one line), or None."""
    for pattern in _SETUP_FAULTS:
        m = pattern.search(log)
        if m:
            return f"the grading kernel could not be started ({cli.one_line(m.group(0))[:200]})"
    return None


def _check_kernel(env: dict) -> None:
    """Before grading anyone: the sandbox kernelspec is where nbgrader will look (an absolute folder on
    JUPYTER_PATH) and its interpreter runs; SetupError (said once) otherwise."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    folders = [f for f in env.get("JUPYTER_PATH", "").split(os.pathsep) if f]
    relative = [f for f in folders if not os.path.isabs(f)]
    if relative:
        raise SetupError(f"JUPYTER_PATH holds relative folders ({', '.join(relative)}): nbgrader runs in the course "
                         "folder, where they mean something else; nothing was graded")
    try:
        spec = KernelSpecManager(kernel_dirs=[os.path.join(f, "kernels") for f in folders]).get_kernel_spec(
            sandbox.KERNEL_NAME)
    except NoSuchKernel:
        raise SetupError(f"the grading kernel {sandbox.KERNEL_NAME!r} is on no folder of JUPYTER_PATH "
                         f"({os.pathsep.join(folders)}); nothing was graded") from None
    if not os.access(spec.argv[0], os.X_OK):
        raise SetupError(f"the grading kernel's interpreter {spec.argv[0]} cannot be run; nothing was graded")


def _streamed(course_dir: Path, args: list, env: dict, on_line) -> str:
    """Run nbgrader with its output read line by line as it comes (``on_line`` each); returns the log."""
    proc = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        on_line(line)
    log = "".join(lines)
    if proc.wait() != 0:
        raise NbgraderError(args, proc.returncode, log)
    return log


def _judge_code(course_dir: Path, assignment: str, student: str, items: dict, isolated: bool) -> dict:
    """Verdicts {grade_id: {...}} of the code items of one submission, judged from its source in a fresh process
    (:func:`grading_code.judge`), under the sandbox where ``isolated``."""
    import nbformat

    from . import grading_code

    release = nbformat.read(course_dir / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    preamble = grading_code.notebook_imports([c.source for c in release.cells if c.cell_type == "code"
                                              and not c.metadata.get("nbgrader", {}).get("solution")])
    path = course_dir / "submitted" / student / assignment / f"{assignment}.ipynb"
    nb = nbformat.reads(submissions.read_file(path).decode("utf-8"), as_version=4)
    prefix = [sys.executable, "-m", "course_lib.sandbox", "--course", str(course_dir), "--run"] if isolated else None
    out = {}
    for grade_id, item in items.items():
        source = None
        for cell in nb.cells:  # the last cell before the check that defines the function, as the kernel ran them
            if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
                break
            if cell.cell_type == "code" and f"def {item['name']}" in cell.source:
                source = cell.source
        try:
            code = grading_code.extract(source or "", item["name"])
            score, max_score, detail = grading_code.judge(item["id"], item["name"], code, preamble, prefix)
        except ValueError as exc:
            from . import checks
            score, max_score, detail = 0.0, float(checks.spec(item["id"]).get("points", 1)), str(exc)
        out[grade_id] = {"exercise": item["id"], "score": score, "max_score": max_score, "detail": detail}
        print(f"[course_lib] {student}: {item['id']} (code, judged outside the kernel): {score:g} of "
              f"{max_score:g}" + ("" if score == max_score else f": {cli.one_line(detail)[:200]}"), flush=True)
    return out


def _judge(course_dir: Path, assignment: str, students: list, failed: dict, isolated: bool = False) -> None:
    """Judge each answer the graded notebooks reported (outside the learners' kernels); write the scores.

    nbgrader scored a reporting cell by its output alone (full marks unless it raised); each such item's
    score in the gradebook is replaced by the judged one, and the grading record says what was judged.
    """
    import nbformat

    items = judged_items(course_dir, assignment)
    record = gradebook.read_record(course_dir, assignment)
    record["judged_items"] = {**items, **{g: c["id"] for g, c in code_items(course_dir, assignment).items()}}
    for student in failed:
        record["judged"].pop(student, None)
    record["failed"] = {s: why for s, why in {**record.get("failed", {}), **failed}.items()
                        if s not in students}
    verdicts = {}
    for student in students:
        path = course_dir / "autograded" / student / assignment / f"{assignment}.ipynb"
        if not path.is_file():
            record["failed"][student] = "nbgrader wrote no graded notebook for this submission"
            continue
        cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nbformat.read(path, as_version=4).cells}
        verdicts[student] = {}
        for grade_id, exercise_id in items.items():
            cell = cells.get(grade_id)
            text = "".join(o.get("text", "") for o in (cell.get("outputs", []) if cell is not None else [])
                           if o.get("output_type") == "stream" and o.get("name") == "stdout")
            score, max_score, detail = grading.judge_reported(exercise_id, text)
            verdicts[student][grade_id] = {"exercise": exercise_id, "score": score, "max_score": max_score,
                                           "detail": detail}
        code = code_items(course_dir, assignment)
        if code:
            verdicts[student].update(_judge_code(course_dir, assignment, student, code, isolated))
    with gradebook.open_gradebook(course_dir) as gb:
        for student in failed:  # a refused submission nbgrader never saw: in grades.csv with its reason
            gb.update_or_create_student(student)
        for student, cells in verdicts.items():
            for grade_id, verdict in cells.items():
                grade = gb.find_grade(grade_id, assignment, assignment, student)
                grade.auto_score = verdict["score"]
        gb.db.commit()
    record["judged"].update(verdicts)
    gradebook.write_record(course_dir, assignment, record)
    print(f"[course_lib] autograde {assignment}: {sum(len(v) for v in verdicts.values())} answers of "
          f"{len(verdicts)} submissions judged outside the learners' kernels", flush=True)


def pending_manual(course_dir, assignment: str) -> list[str]:
    """"student: item" for each written answer of ``assignment`` still waiting for manual grading."""
    rows = gradebook.rows(_course(course_dir), progress=lambda *_: None)
    return [f"{r['student_id']}: {r['item']}" for r in rows if r["assignment"] == assignment
            and r["item"] != gradebook.TOTAL and r["status"] == gradebook.MANUAL]


def release_feedback(course_dir, assignment) -> list[str]:
    """``nbgrader generate_feedback`` and ``release_feedback`` of ``assignment``, with a warning first (printed,
    and returned) when written answers still await manual grading: their feedback would show them ungraded."""
    assignment = validate.choice("assignment", assignment, chapters())
    course_dir = _course(course_dir)
    pending = pending_manual(course_dir, assignment)
    if pending:
        print(f"[course_lib] warning: feedback on {assignment} is released while {len(pending)} written answers "
              f"await manual grading ({'; '.join(pending[:6])}{' ...' if len(pending) > 6 else ''}): their "
              "feedback shows them ungraded; grade them in Formgrader and release again", flush=True)
    nbgrader(course_dir, "generate_feedback", assignment)
    nbgrader(course_dir, "release_feedback", assignment)
    print(f"[course_lib] feedback on {assignment} released", flush=True)
    return pending


def export_grades(course_dir, csv_path=None) -> Path:
    """Write grades.csv with a status per submission and item (:mod:`course_lib.gradebook`); returns its path."""
    return gradebook.export(_course(course_dir), csv_path)


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
        if isinstance(getattr(args, "course_dir", None), str):  # resolved once, here: nbgrader runs inside it
            args.course_dir = str(Path(args.course_dir).resolve())
        try:
            return func(args)
        except SetupError as exc:
            print(f"error: {cli.one_line(str(exc))}", file=sys.stderr)
            return 1
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
    a = actions.add_parser("feedback", help="generate and release feedback (warns of manual grading pending)")
    a.add_argument("course_dir")
    a.add_argument("assignment")
    a.set_defaults(func=_guarded(lambda args: release_feedback(args.course_dir, args.assignment) and 0))
    a = actions.add_parser("export", help="write the gradebook CSV")
    a.add_argument("course_dir")
    a.add_argument("--csv", default=None)
    a.set_defaults(func=_guarded(lambda args: print(export_grades(args.course_dir, args.csv)) or 0))
