"""Contract tests, parametrised over the course manifest (course.toml) and the model modules.

- every chapter of the manifest has its source, notebooks and exercises file, and states the manifest's
  title and time; no chapter source is missing from the manifest;
- every exercise accepts its expected answer and reports an unanswered one (the student stub);
- every public function of the model modules (layers 0-4 of tests/test_layering.py) refuses a bad
  parameter with a ValueError that names it.

These replace the per-chapter copies of the same checks. (The explorers' contract, build and redraw,
is the explorers' own test, not this file's.)
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import warnings

import pytest

from course_lib import authoring, checks, grading, manifest

from .test_layering import LAYERS

CHAPTERS = manifest.chapters()
ROOT = manifest.ROOT


# ---------------------------------------------------------------- the manifest

def test_the_manifest_lists_every_chapter_source_and_only_those():
    listed = {c.source for c in CHAPTERS}
    present = set((ROOT / "solutions" / "src").glob("*.py"))
    assert present - listed == set(), "chapter sources without a course.toml entry: add one [[chapter]] each"
    assert listed - present == set(), "course.toml entries without a source"
    assert [c.number for c in CHAPTERS] == sorted(c.number for c in CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_each_chapter_states_its_manifest_entry(chapter):
    text = chapter.source.read_text(encoding="utf-8")
    heading = re.search(r"^# # (\d\d) · (.+)$", text, re.MULTILINE)
    assert heading and heading.groups() == (chapter.number, chapter.title), "first heading != course.toml title"
    time = re.search(r"\*\*Time:\*\* about (\d+) (minutes|hours)", text)
    assert time, "the chapter's opening states no time"
    assert int(time.group(1)) * (60 if time.group(2) == "hours" else 1) == chapter.minutes
    assert chapter.solution_notebook.is_file() and chapter.student_notebook.is_file()
    if chapter.exercises:   # checks and grading read the file named here; it ships in course_lib.exercises
        assert chapter.exercises_path.is_relative_to(ROOT / "course_lib" / "exercises")
        assert chapter.exercises_path.is_file()


def test_a_bad_manifest_names_the_field(tmp_path):
    bad = tmp_path / "course.toml"
    bad.write_text('[[chapter]]\nnumber = 5\nslug = "x"\ntitle = "X"\nminutes = 10\nexercises = ""\n')
    with pytest.raises(ValueError, match="number must be two digits"):
        manifest.load(bad)
    bad.write_text('[[chapter]]\nnumber = "05"\nslug = "x"\ntitle = "X"\nminutes = 10\n')
    with pytest.raises(ValueError, match="exercises"):
        manifest.load(bad)
    unknown = next(f"{n:02d}" for n in range(99, -1, -1) if f"{n:02d}" not in {c.number for c in CHAPTERS})
    with pytest.raises(ValueError, match="number"):  # a number the manifest lacks, made up from it
        manifest.chapter(unknown)


# ---------------------------------------------------------------- exercises

EXERCISES = [(c, eid) for c in CHAPTERS if c.exercises for eid in checks.exercises(c.number)]


def _cells(chapter) -> list[str]:
    """The chapter's code cells as its notebooks hold them (exercise directives expanded by the build), without
    IPython's magics (``%matplotlib inline``), which are not Python."""
    return [re.sub(r"^%.*$", "", c.source, flags=re.MULTILINE)
            for c in authoring.read_source(chapter.source).cells if c.cell_type == "code"]


def _chapter_imports(chapter) -> dict:
    """A namespace holding every module-level import of the chapter's source (what its cells rely on)."""
    namespace = {}
    for cell in _cells(chapter):
        try:
            tree = ast.parse(cell)
        except SyntaxError:   # markdown cells are comments, so this is rare; skip what is not code
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([node], []), chapter.source.name, "exec"), namespace)
    return namespace


def _function_cell(chapter, name) -> str:
    (cell,) = [c for c in _cells(chapter) if re.search(rf"^def {name}\(", c, re.MULTILINE)]
    return cell


def _define(chapter, cell, name):
    namespace = _chapter_imports(chapter)
    exec(compile(cell, chapter.source.name, "exec"), namespace)
    return namespace[name]


def _answers(chapter, exercise_id):
    """(the expected answer, the student notebook's unanswered stub) of one exercise."""
    spec = checks.spec(exercise_id)
    if spec["kind"] != "callable":
        return grading.expected(exercise_id), None
    cell = _function_cell(chapter, spec["variable"])
    return (_define(chapter, cell, spec["variable"]),
            _define(chapter, authoring.to_student_source(cell), spec["variable"]))


@pytest.mark.parametrize("chapter, exercise_id", EXERCISES, ids=lambda x: getattr(x, "stem", x))
def test_every_exercise_accepts_its_expected_answer_and_reports_an_unanswered_one(chapter, exercise_id):
    spec = checks.spec(exercise_id)
    if spec["kind"] == "free_text":
        pytest.skip("free text is graded by hand")
    expected, stub = _answers(chapter, exercise_id)
    assert checks.evaluate(exercise_id, expected).correct, f"{exercise_id}: its expected answer is refused"
    assert checks.evaluate(exercise_id, stub).status == "not answered"
    # the student notebook starts from that stub: the variable is None, or the function raises
    student = "\n".join("".join(c["source"]) for c in json.loads(chapter.student_notebook.read_text())["cells"])
    assert re.search(rf"^{spec['variable']} = None\b|^def {spec['variable']}\(", student, re.MULTILINE), \
        f"{exercise_id}: the student notebook has no stub for {spec['variable']}"


# ---------------------------------------------------------------- public functions of the model modules

MODEL_MODULES = sorted(name for name, layer in LAYERS.items() if layer < max(LAYERS.values())
                       and name not in ("course_lib", "validate", "cli"))   # the error helpers themselves
BAD = "bogus-value"
# Another word that names the same parameter in a message (the quantity the user typed).
ALIASES = {"text": ("size", "bandwidth"), "nbytes": ("size",), "version": ("nccl_version",)}
# Functions outside this contract, with the reason. Anything not listed must name its bad parameter.
EXEMPT = {
    "datafiles.load": "a missing data file raises FileNotFoundError naming the file (test_datafiles)",
    "datafiles.cited_ids": "walks any JSON value; nothing is invalid",
    "collectives.unregister": "removing an unknown collective is a no-op (tests and recipes undo with it)",
    "collectives.all_reduce_factor": "registry term: called by collectives.terms with ranks already validated",
    "collectives.gather_factor": "registry term: called by collectives.terms with ranks already validated",
    "collectives.rooted_factor": "registry term: called by collectives.terms with ranks already validated",
    "collectives.log2_steps": "registry term: called by collectives.terms with ranks already validated",
    "hardware.system_summary": "takes a hardware.System built by hardware.system(), not user input",
    "topology.summary": "takes a topology.Topology built by the library",
    "costmodel.validation_summary": "takes the rows of costmodel.validation_table()",
    "parallel.validation_summary": "takes the rows of parallel.validation_table()",
    "parallel.pair_bandwidth": "takes a hardware.System and a parallel group link built by parallel.layout",
    "parallel.compute_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.memory_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.tp_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.pp_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.dp_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.cp_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.ep_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.modern_validation_summary": "takes the rows of parallel.modern_validation_table()",
    "parallel.training_validation_summary": "takes the rows of parallel.training_validation_table()",
    "parallel.case_prediction": "takes a row of the published training runs file (data), not user input",
    "parallel.etp_phase": "phase of parallel.estimate: takes the Layout it built",
    "parallel.stage_compute_s": "phase of parallel.estimate: takes the Layout it built",
    "parallel.stage_memory": "phase of parallel.estimate: takes the Layout it built",
    "parallel.layer_gemms": "part of parallel.estimate's compute price: takes the Transformer parallel.model() built",
    "parallel.layer_seconds": "part of parallel.estimate's compute price: takes the Transformer parallel.model() built",
    "parallel.training_range": "takes the Estimate parallel.estimate built",
    "parallel.training_range_phrase": "takes the Estimate parallel.estimate built",
    "costmodel.nccl_version_stated": "a predicate over any text (does it state a release?); nothing is invalid",
    "notebook_save.static_view": "formats the HTML of what an explorer drew; takes the explorer's own strings",
}


def _public_functions():
    for module_name in MODEL_MODULES:
        module = importlib.import_module(f"course_lib.{module_name}")
        for name, func in inspect.getmembers(module, inspect.isfunction):
            # a package (e.g. parallel/) re-exports what its submodules define: those count as its own
            own = func.__module__ == module.__name__ or func.__module__.startswith(module.__name__ + ".")
            if not name.startswith("_") and own:
                params = [p for p in inspect.signature(func).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
                if params:
                    yield f"{module_name}.{name}", func, params


PUBLIC = list(_public_functions())


def _names(param: str) -> tuple[str, ...]:
    base = param.rstrip("_")
    return (param, base, base[:-3] if base.endswith("_id") else base, *ALIASES.get(param, ()))


def test_the_contract_covers_the_model_modules():
    assert len(PUBLIC) >= 60 and set(EXEMPT) <= {name for name, _, _ in PUBLIC}, "stale EXEMPT entry"


@pytest.mark.parametrize("qualname, func, params", [pytest.param(*p, id=p[0]) for p in PUBLIC if p[0] not in EXEMPT])
def test_every_public_function_names_a_bad_parameter(qualname, func, params):
    required = [p for p in params if p.default is p.empty] or params[:1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError) as info:
            func(**{p.name: BAD for p in required})
    message = str(info.value)
    named = [p.name for p in required if any(re.search(rf"\b{re.escape(n)}\b", message) for n in _names(p.name))]
    assert named, f"{qualname}: the ValueError names none of {[p.name for p in required]}: {message[:160]}"
