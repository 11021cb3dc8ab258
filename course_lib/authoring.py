"""Build the notebooks from their one source.

``solutions/src/NN_name.py`` (jupytext percent format) is the single source of each chapter. A graded
exercise is one directive there, the cell header ``# %% exercise="NN.K"`` over its solution: the build
expands it into the nbgrader cells (answer cell + locked check cell with hidden tests, or a written
answer's cells) from the item's entry in ``course_lib/exercises/NN.json`` (:func:`exercise_cells`;
docs/AUTHORING.md). ``build()`` writes

* ``solutions/NN_name.ipynb``: the full notebook, solutions and hidden tests included
  (an instructor's nbgrader ``source/`` notebook);
* ``notebooks/NN_name.ipynb``: the student notebook, in which every
  ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` block becomes a stub
  (``name = None`` for each assigned name, the signature of each function with
  ``raise NotImplementedError``) and every ``### BEGIN HIDDEN TESTS`` ...
  ``### END HIDDEN TESTS`` block is removed.

The chapters are those of the course manifest, ``course.toml`` (:mod:`course_lib.manifest`), not
whatever lies in ``solutions/src``: a new chapter needs its entry there.

Numbers in markdown that the chapter computes are ``{{name}}`` placeholders, filled from the glued
values its code cells stored (:mod:`course_lib.prose`; ``solutions/src/NN_name.values.json``, written by
``python -m course_lib.authoring glue [NN ...]``, which executes the chapter and rebuilds).

Both are stored without outputs. ``stale()`` lists generated files that differ
from what ``build()`` would write (and sources the manifest does not list); a test fails on any. Run
``python -m course_lib.authoring build`` (or ``make notebooks``) after editing a source.
"""
from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

import nbformat

from . import exercises, manifest, prose

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "solutions" / "src"
SOLUTIONS = ROOT / "solutions"
STUDENT = ROOT / "notebooks"

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
MARKDOWN_STUB = "YOUR ANSWER HERE"
# Added by the build under the question of every choice exercise (its answer cell's markdown above).
FIRST_ANSWER_COUNTS = ("*One answer counts: the first one you check. Later answers still get feedback, "
                       "but your score keeps the first.*")
CHECK_RE = re.compile(r"""checks\.check\(\s*["'](\d\d\.\w+)["']""")
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def _block_re(begin, end):
    return re.compile(rf"^([ \t]*){re.escape(begin)}[^\n]*\n(.*?)^[ \t]*{re.escape(end)}[^\n]*(\n|$)",
                      re.MULTILINE | re.DOTALL)


SOLUTION_RE = _block_re(BEGIN_SOLUTION, END_SOLUTION)
HIDDEN_RE = _block_re(BEGIN_HIDDEN, END_HIDDEN)


def solution_blocks(text: str) -> list[str]:
    """The code inside every solution block of a cell's source."""
    return [m.group(2) for m in SOLUTION_RE.finditer(text)]


def hidden_blocks(text: str) -> list[str]:
    """The code inside every hidden-test block of a cell's source."""
    return [m.group(2) for m in HIDDEN_RE.finditer(text)]


def stub_for(block: str, indent: str = "") -> str:
    """The student stub that replaces one solution block (see module docstring)."""
    if indent:  # inside a function body: the learner writes the body
        return f"{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError()\n"
    tree = ast.parse(textwrap.dedent(block))
    lines, seen = [], set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.append(f"def {node.name}({ast.unparse(node.args)}):")
            doc = ast.get_docstring(node)
            if doc:
                lines.append(textwrap.indent(f'"""{doc}"""', "    "))
            lines += ["    # YOUR CODE HERE", "    raise NotImplementedError()"]
            continue
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and name.id not in seen:
                    seen.add(name.id)
                    lines.append(f"{name.id} = None  # YOUR ANSWER HERE")
    if not lines:
        lines = ["# YOUR CODE HERE"]
    return "\n".join(lines) + "\n"


def to_student_source(source: str, cell_type: str = "code") -> str:
    """Turn one cell's source into its student version."""
    if cell_type == "markdown":
        text = SOLUTION_RE.sub(lambda m: f"{m.group(1)}{MARKDOWN_STUB}\n", source)
    else:
        text = SOLUTION_RE.sub(lambda m: stub_for(m.group(2), m.group(1)), source)
    text = HIDDEN_RE.sub("", text)
    return text.rstrip("\n")


def _clean(nb, stem: str):
    nb.metadata = {"kernelspec": dict(KERNELSPEC),
                   "language_info": {"name": "python"}}
    for index, cell in enumerate(nb.cells):
        cell.id = f"{stem[:3]}c{index:03d}"
        cell.metadata.pop("lines_to_next_cell", None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def read_source(path: Path, manifest_path=None):
    """Read a jupytext percent source into a notebook, its exercise directives expanded
    (:func:`expand_exercises`; ``manifest_path``: the course.toml that lists the chapter)."""
    import jupytext
    nb = jupytext.read(path, fmt="py:percent")
    if any(EXERCISE in cell.metadata for cell in nb.cells):
        nb.cells = expand_exercises(nb.cells, _specs(path, manifest_path), path.name)
    return nb


def _specs(path: Path, manifest_path=None) -> dict:
    """The exercises file of the chapter whose source is ``path`` (by stem, in the manifest), id -> entry."""
    path = Path(path)
    chapter = next((c for c in manifest.chapters(manifest_path) if c.source.stem == path.stem), None)
    if chapter is None:
        raise ValueError(f"{path.name}: no chapter of course.toml has this source, so its exercise directives "
                         "have no exercises file; add its [[chapter]] entry")
    return exercises.chapter_file(chapter)


# ---------------------------------------------------------------- the exercise directive

EXERCISE = "exercise"   # a cell header's metadata: `# %% exercise="05.6"` (code) or `# %% [markdown] exercise="08.W1"`
HIDDEN_TEST = ('{check}\n' + BEGIN_HIDDEN + '\nimport importlib, course_lib.grading\n'
               'importlib.reload(course_lib.grading).grade("{id}", {name})\n' + END_HIDDEN)
MODEL_ANSWER = (BEGIN_SOLUTION + '\nfrom course_lib import grading\n{name} = grading.model_answer("{id}")\n'
                + END_SOLUTION)


def _nbgrader(grade_id: str, *, grade: bool, solution: bool, locked: bool, points=None, task=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    if task is not None:
        meta["task"] = task
    return {"nbgrader": meta}


def _mark_solution(source: str, spec: dict) -> str:
    """The answer cell's source with its solution block marked: the body of the exercise's function (after its
    docstring) for a ``callable`` item defined in the cell, else the whole cell; markers already there stay."""
    if BEGIN_SOLUTION in source:
        return source
    if spec.get("kind") == "callable":
        found = [n for n in ast.parse(source).body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == spec.get("variable")]
        if found:
            node = found[0]
            body = node.body[1:] if ast.get_docstring(node) is not None and len(node.body) > 1 else node.body
            lines = source.split("\n")
            first, last = body[0].lineno - 1, node.end_lineno
            indent = lines[first][:len(lines[first]) - len(lines[first].lstrip())]
            return "\n".join(lines[:first] + [indent + BEGIN_SOLUTION] + lines[first:last]
                             + [indent + END_SOLUTION] + lines[last:])
    return f"{BEGIN_SOLUTION}\n{source}\n{END_SOLUTION}"


def exercise_cells(exercise_id: str, cell, spec: dict, where: str) -> list:
    """The nbgrader cells that one exercise directive stands for (see docs/AUTHORING.md):

    * a number, choice or callable item: the answer cell (the directive cell's code as the solution block;
      ``grade_id`` ``exNN-K-answer``) and the locked check cell that calls ``checks.check`` and, hidden,
      ``grading.grade`` (``exNN-K-check``, the item's ``points``);
    * a written item (``free_text``) in a code cell, whose directive cell is empty: the manually graded answer
      cell holding ``grading.model_answer`` (``exNN-K-answer``) and an ungraded ``checks.check`` cell;
    * a written item in a markdown cell (``"cell": "markdown"``): that cell, manually graded (``exNN-k``),
      its model answer marked by the author between the solution markers.
    """
    chapter, _, number = exercise_id.partition(".")
    kind, name, points = spec.get("kind", "number"), spec.get("variable"), spec.get("points", 1)
    grade_id = f"ex{chapter}-{number.lower()}"
    if cell.cell_type == "markdown":
        if kind != "free_text" or BEGIN_SOLUTION not in cell.source:
            raise ValueError(f"{where}: a markdown exercise directive needs a free_text item whose model answer "
                             f"sits between {BEGIN_SOLUTION!r} and {END_SOLUTION!r}; {exercise_id} is {kind}")
        cell.metadata.update(_nbgrader(grade_id, grade=True, solution=True, locked=False, points=points, task=False))
        return [cell]
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{where}: exercise {exercise_id} needs a variable (a Python name) in its exercises file; "
                         f"got {name!r}")
    check = f'checks.check("{exercise_id}", {name})'
    if kind == "free_text":
        if cell.source.strip():
            raise ValueError(f"{where}: the directive cell of written exercise {exercise_id} must be empty: "
                             "its model answer lives in the exercises file (model_answer)")
        cell.source = MODEL_ANSWER.format(id=exercise_id, name=name)
        cell.metadata.update(_nbgrader(f"{grade_id}-answer", grade=True, solution=True, locked=False, points=points))
        return [cell, nbformat.v4.new_code_cell(check)]
    if not cell.source.strip():
        raise ValueError(f"{where}: the directive cell of exercise {exercise_id} is empty: write the solution "
                         f"that sets {name} in it")
    cell.source = _mark_solution(cell.source, spec)
    cell.metadata.update(_nbgrader(f"{grade_id}-answer", grade=False, solution=True, locked=False))
    checker = nbformat.v4.new_code_cell(HIDDEN_TEST.format(check=check, id=exercise_id, name=name),
                                        metadata=_nbgrader(f"{grade_id}-check", grade=True, solution=False,
                                                           locked=True, points=points))
    return [cell, checker]


def expand_exercises(cells, specs: dict, where: str) -> list:
    """``cells`` with each exercise directive (cell metadata ``exercise``) replaced by its nbgrader cells."""
    out = []
    for index, cell in enumerate(cells):
        exercise_id = cell.metadata.pop(EXERCISE, None)
        if exercise_id is None:
            out.append(cell)
            continue
        if exercise_id not in specs:
            raise ValueError(f"{where} cell {index}: exercise {exercise_id!r} has no entry in the chapter's exercises "
                             f"file; it has {', '.join(sorted(specs)) or 'none'}")
        if "nbgrader" in cell.metadata:
            raise ValueError(f"{where} cell {index}: exercise {exercise_id}: a directive cell carries no nbgrader "
                             "metadata (the build writes it)")
        out += exercise_cells(exercise_id, cell, specs[exercise_id], f"{where} cell {index}")
    return out


def _say_first_answer_counts(nb, specs: dict):
    """Append :data:`FIRST_ANSWER_COUNTS` to the markdown cell above each choice exercise's check."""
    choices = {i for i, s in specs.items() if s.get("kind") == "choice"}
    for index, cell in enumerate(nb.cells):
        found = CHECK_RE.search(cell.source) if cell.cell_type == "code" else None
        if not found or found.group(1) not in choices:
            continue
        above = next((c for c in reversed(nb.cells[:index]) if c.cell_type == "markdown"), None)
        if above is not None and FIRST_ANSWER_COUNTS not in above.source:
            above.source = above.source.rstrip("\n") + "\n\n" + FIRST_ANSWER_COUNTS
    return nb


def _check_glue(cells, where: str) -> None:
    """Glued values come from cells both notebooks run: never from a solution or hidden-test block
    (the student notebook would lack them, or show a solution's value in its prose)."""
    for index, cell in enumerate(cells):
        if cell.cell_type == "code":
            for block in solution_blocks(cell.source) + hidden_blocks(cell.source):
                if prose.glued_names(block):
                    raise ValueError(f"{where} cell {index}: glue() inside a solution or hidden-test block; "
                                     "glue values computed outside them")


def fill_placeholders(nb, path: Path):
    """Replace every ``{{name}}`` of the markdown cells by the chapter's stored glued text."""
    values = prose.load_values(path.with_suffix(".values.json"))
    _check_glue(nb.cells, path.name)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            cell.source = prose.fill(cell.source, values, f"{path.name} cell {index}")
    return nb


def render(path: Path, manifest_path=None) -> tuple[str, str]:
    """(solution notebook JSON, student notebook JSON) for one source file of the manifest's chapters."""
    stem = path.stem
    specs = _specs(path, manifest_path)
    solution = fill_placeholders(_say_first_answer_counts(_clean(read_source(path, manifest_path), stem), specs), path)
    student = nbformat.reads(nbformat.writes(solution), as_version=4)
    for cell in student.cells:
        cell.source = to_student_source(cell.source, cell.cell_type)
    return nbformat.writes(solution) + "\n", nbformat.writes(student) + "\n"


def glue(numbers=None, manifest_path=None, timeout_s: int = 600) -> list[Path]:
    """Execute the chapters ``numbers`` (all that glue, by default) and store what they glue in
    ``solutions/src/<stem>.values.json``; returns the values files written. Run ``build`` after."""
    import os
    import tempfile

    from nbclient import NotebookClient

    chapters = manifest.chapters(manifest_path)
    wanted = [c for c in chapters if (c.number in numbers if numbers else "glue(" in c.source.read_text(encoding="utf-8"))]
    unknown = set(numbers or ()) - {c.number for c in chapters}
    if unknown:
        raise ValueError(f"chapters must be numbers of course.toml; got {', '.join(sorted(unknown))}")
    written = []
    for c in wanted:
        nb = _clean(read_source(c.source, manifest_path), c.source.stem)
        for cell in nb.cells:  # the prose is not read while executing; the placeholders may be new
            if cell.cell_type == "markdown":
                cell.source = prose.PLACEHOLDER_RE.sub("?", cell.source)
        with tempfile.TemporaryDirectory() as folder:
            old = {k: os.environ.get(k) for k in (prose.RECORD_ENV, prose.CHECK_ENV)}
            os.environ[prose.RECORD_ENV], os.environ[prose.CHECK_ENV] = folder, "0"
            try:
                NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                               resources={"metadata": {"path": str(c.solution_notebook.parent)}}).execute()
            finally:
                for k, v in old.items():
                    os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
            recorded = prose.load_values(Path(folder) / f"{c.number}.json")
        target = c.source.with_suffix(".values.json")
        if prose.load_values(target) != recorded:
            prose.write_values(target, recorded)
            written.append(target)
    return written


def targets(path: Path) -> tuple[Path, Path]:
    """(solution notebook, student notebook) of a source ``<root>/solutions/src/<stem>.py``."""
    root = path.parents[2]
    return root / "solutions" / f"{path.stem}.ipynb", root / "notebooks" / f"{path.stem}.ipynb"


def sources(manifest_path=None) -> list[Path]:
    """Every chapter's source, in the manifest's order (``manifest_path``: another course.toml)."""
    paths = [c.source for c in manifest.chapters(manifest_path)]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise ValueError(f"course.toml lists chapters without a source: {', '.join(str(p) for p in missing)}")
    return paths


def build(manifest_path=None) -> list[Path]:
    """Write every generated notebook; returns the files written."""
    written = []
    for path in sources(manifest_path):
        targets(path)[1].parent.mkdir(exist_ok=True)
        for text, target in zip(render(path, manifest_path), targets(path)):
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")
                written.append(target)
    return written


def stale(manifest_path=None) -> list[Path]:
    """Generated notebooks that are missing or differ from their source; also orphans, and chapter
    sources that the manifest does not list (add their entry to course.toml)."""
    out = []
    expected = set()
    paths = sources(manifest_path)
    for path in paths:
        for text, target in zip(render(path, manifest_path), targets(path)):
            expected.add(target)
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                out.append(target)
    root = paths[0].parents[2]
    for folder in (root / "solutions", root / "notebooks"):
        out += [p for p in folder.glob("*.ipynb") if p not in expected]
    out += [p for p in (root / "solutions" / "src").glob("*.py") if p not in paths]
    return out


def main(argv=None) -> int:
    from . import cli  # the course's one error path: a usage error is one line, status 2

    parser = cli.ArgumentParser(prog="python -m course_lib.authoring", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["build", "check", "glue"],
                        help="glue: execute chapters and store the numbers their prose shows, then build")
    parser.add_argument("chapters", nargs="*", help="glue only these chapter numbers (default: every chapter that glues)")
    args = parser.parse_args(argv)
    if args.command == "glue":
        try:
            for path in glue(args.chapters or None):
                print(f"wrote {path.relative_to(ROOT)}")
        except ValueError as exc:
            parser.error(str(exc))
    if args.command in ("build", "glue"):
        for path in build():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    from . import conventions  # every chapter's conventions: one line per problem, naming file and field

    bad = stale()
    for path in bad:
        print(f"stale: {path.relative_to(ROOT)}")
    broken = conventions.problems()
    for line in broken:
        print(f"convention: {line}")
    return 1 if bad or broken else 0


if __name__ == "__main__":
    sys.exit(main())
