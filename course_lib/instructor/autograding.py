"""Autograde: every submission screened, ``nbgrader autograde`` run (under the sandbox where it can be), its log
read per student, and the reported answers and code items judged outside the learners' kernels."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from .. import cli, gradebook, grading, sandbox, submissions, validate
from .commands import NbgraderError, SetupError, _course, _env, _streamed
from .course import chapters, code_items, judged_items
from .screening import Problem, inspect_submission


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


def _judge_code(course_dir: Path, assignment: str, student: str, items: dict, isolated: bool) -> dict:
    """Verdicts {grade_id: {...}} of the code items of one submission, judged from its source in a fresh process
    (:func:`grading_code.judge`), under the sandbox where ``isolated``."""
    import nbformat

    from .. import grading_code

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
            from .. import checks
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
