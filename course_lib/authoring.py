"""Build the notebooks from their one source.

``solutions/src/NN_name.py`` (jupytext percent format, nbgrader cell metadata)
is the single source of each chapter. ``build()`` writes

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

from . import manifest, prose

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


def read_source(path: Path):
    """Read a jupytext percent source into a notebook."""
    import jupytext
    return jupytext.read(path, fmt="py:percent")


def _choice_ids(stem: str) -> set[str]:
    """The choice exercises of the chapter ``stem`` (``00_why_communication``), from its exercises file."""
    import json

    chapter = next((c for c in manifest.chapters() if c.source.stem == stem and c.exercises), None)
    if chapter is None or not chapter.exercises_path.is_file():
        return set()
    data = json.loads(chapter.exercises_path.read_text(encoding="utf-8"))
    return {i for i, s in data.items() if s.get("kind") == "choice"}


def _say_first_answer_counts(nb, stem: str):
    """Append :data:`FIRST_ANSWER_COUNTS` to the markdown cell above each choice exercise's check."""
    choices = _choice_ids(stem)
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


def render(path: Path) -> tuple[str, str]:
    """(solution notebook JSON, student notebook JSON) for one source file."""
    stem = path.stem
    solution = fill_placeholders(_say_first_answer_counts(_clean(read_source(path), stem), stem), path)
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
        nb = _clean(read_source(c.source), c.source.stem)
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
        for text, target in zip(render(path), targets(path)):
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
        for text, target in zip(render(path), targets(path)):
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
    bad = stale()
    for path in bad:
        print(f"stale: {path.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
