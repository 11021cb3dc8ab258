"""Reading a submission before it is graded: cells deleted, locked cells retyped, copied cells, and answer
cells that reach for the grader, the key or Python's machinery (a hint for the reader, not a grade)."""
from __future__ import annotations

from dataclasses import dataclass

from .. import submissions


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
    from .. import authoring
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
