"""Layering of course_lib, read from the source's AST (nothing is imported).

Layers, lowest first; a module may import its own layer or lower ones, never a higher one:

    0 data, validate, units,     validate, units, datafiles (+ the bibliography), evidence, environment,
      the error policy           manifest (course.toml), textfiles (a learner's text file), cli (the one
                                 error path: every layer may raise into it), the package itself
    1 hardware, systemfile,      the hardware catalog and a learner's own systems (TOML);
      transformer                model shapes, FLOPs and memory
    2 collectives                the registry of collectives and algorithms
    3 costmodel, topology        alpha-beta model, graphs
    4 parallel                   DP/ZeRO/TP/PP memory, traffic, step time, planner
    5 lab, chapters, views,      everything a learner or an instructor touches
      exercises, widgets, style, tables, cli_* commands, tools, diagnostics, prose (numbers glued into a
      chapter's text), glossary (the course's terms)

Layer 5 in ordered sub-layers (SUBLAYERS; rule "sublayers": a module imports its own sub-layer or a lower one):

    5a toolkit                style, tables, widgets, glossary, prose, diagnostics, gradebook, submissions,
                              hub_limits, and the lab's machinery (lab.launch, lab.traffic, lab.algorithms, ...)
    5b exercises and grading  exercises (specs, keys, judging, the ring checker), checks, grading, grading_code,
                              sandbox, hub_class, collect
    5c lab runs and views     lab.bench, lab.calibrate, lab.ddp_run, lab.ddp_trace, lab.fsdp_step; views
    5d chapters               chapters, and each chapter's checkers and answer models (exercises.chNN,
                              exercises.answers_chNN)
    5e commands               cli_predict, cli_plan, cli_inspect, __main__, authoring, conventions, instructor,
                              export

Rules inside layer 5 (each a RULES entry, each shown failing on a planted import below):

    chapter-alone      no chapter (course_lib/chapters/X, a module or a package) imports another chapter
    views-draw-only    views never import chapters: a view draws what a chapter computed and hands it
    chapters-no-cli    chapters never import a cli_* command module (commands sit on chapters, not under)
    grading-exercises  grading imports, of layer 5, only course_lib.exercises (its answer models and
                       checkers); never chapters, views or cli_* commands
    exercises-below    course_lib.exercises (specs, keys, judging, checkers) never imports checks (the
                       learner's calls) or grading (the instructor's): both sit on the exercises

And: no model module (layers 0-4) imports matplotlib or ipywidgets at module level (inside a function
is fine: drawing helpers import them lazily).
"""
from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "course_lib"

LAYERS = {
    "course_lib": 0, "validate": 0, "units": 0, "datafiles": 0, "evidence": 0, "manifest": 0, "environment": 0,
    "textfiles": 0, "notebook_save": 0, "cli": 0, "progress": 0,
    "hardware": 1, "systemfile": 1, "plausible": 1, "transformer": 1,
    "collectives": 2,
    "costmodel": 3, "topology": 3,
    "parallel": 4, "tp_scans": 4, "pipeline_schedules": 4,
    # layer 5: what learners and instructors touch
    "lab": 5, "chapters": 5, "views": 5, "exercises": 5, "widgets": 5, "style": 5, "cli_predict": 5, "cli_plan": 5,
    "__main__": 5, "authoring": 5, "checks": 5, "instructor": 5, "export": 5, "gradebook": 5, "sandbox": 5,
    "diagnostics": 5, "cli_inspect": 5, "tables": 5, "grading": 5, "prose": 5, "glossary": 5,
    "collect": 5, "grading_code": 5, "hub_class": 5, "hub_limits": 5, "submissions": 5,
    "conventions": 5,
}
# Layer 5 in ordered sub-layers, lowest first, read from the import graph: a layer-5 module imports its own
# sub-layer or a lower one (rule "sublayers"). Each entry names module patterns relative to course_lib (fnmatch;
# a pattern also covers the modules under it); a module takes the most specific pattern that matches it.
SUBLAYERS = (
    ("5a", "toolkit", ("style", "tables", "widgets", "glossary", "prose", "diagnostics", "gradebook", "submissions",
                       "hub_limits", "lab")),
    ("5b", "exercises and grading", ("exercises", "checks", "grading", "grading_code", "sandbox", "hub_class",
                                     "collect")),
    ("5c", "lab runs and views", ("lab.bench", "lab.calibrate", "lab.ddp_run", "lab.ddp_trace", "lab.fsdp_step",
                                  "views")),
    ("5d", "chapters", ("chapters", "exercises.ch[0-9][0-9]", "exercises.answers_ch[0-9][0-9]")),
    ("5e", "commands", ("cli_predict", "cli_plan", "cli_inspect", "__main__", "authoring", "conventions",
                        "instructor", "export")),
)
RULES = ("layers", "gui", "sublayers", "chapter-alone", "views-draw-only", "chapters-no-cli", "grading-exercises",
         "exercises-below")
TOP = max(LAYERS.values())
GUI = ("matplotlib", "ipywidgets", "anywidget")


def module_name(path: Path, root: Path) -> str:
    """``course_lib/chapters/pcie.py`` -> ``course_lib.chapters.pcie`` (``__init__`` -> the package)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(module: str) -> int | None:
    """The layer of a course_lib module name; None if it is not classified in ``LAYERS``."""
    parts = module.split(".")
    if parts == ["course_lib"]:
        return LAYERS["course_lib"]
    return LAYERS.get(parts[1])


def _is_module(name: str, root: Path) -> bool:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    return (root / rel).with_suffix(".py").exists() or (root / rel / "__init__.py").exists()


def imports(path: Path, root: Path):
    """Yield (imported course_lib module or third-party top name, line, at module level) for one file."""
    mod = module_name(path, root)
    is_pkg = path.name == "__init__.py"
    package = mod if is_pkg else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_function.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        top = id(node) not in in_function
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, top
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "course_lib":
                yield target, node.lineno, top
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                yield (full if _is_module(full, root) else target), node.lineno, top


def sublayer(module: str) -> tuple[int, str, str] | None:
    """(rank, id, name) of a layer-5 module's sub-layer (``SUBLAYERS``, rank 0 lowest); None if none matches."""
    rel = module.partition(".")[2]
    best = None
    for rank, (sid, name, patterns) in enumerate(SUBLAYERS):
        for pattern in patterns:
            if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + ".*"):
                key = (pattern.count("."), len(pattern))
                if best is None or key > best[0]:
                    best = (key, (rank, sid, name))
    return best[1] if best else None


def _group(module: str) -> str:
    """The top-level group of a course_lib module name: ``course_lib.chapters.pcie.links`` -> ``chapters``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _chapter(module: str) -> str | None:
    """The chapter a module belongs to (``course_lib.chapters.pcie[.links]`` -> ``pcie``); None outside chapters."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "chapters" else None


def rule_breaks(mod: str, own: int, target: str, theirs: int | None) -> list[tuple[str, str]]:
    """(rule, message) for each layer-5 rule that ``mod`` importing ``target`` (both course_lib names) breaks."""
    out = []
    if own == TOP and theirs == TOP:
        mine_sub, their_sub = sublayer(mod), sublayer(target)
        if mine_sub and their_sub and their_sub[0] > mine_sub[0]:
            out.append(("sublayers", f"{mod} (sub-layer {mine_sub[1]}, {mine_sub[2]}) imports {target} "
                                     f"(sub-layer {their_sub[1]}, {their_sub[2]}), a higher sub-layer"))
    group, their_group = _group(mod), _group(target)
    mine, their_chapter = _chapter(mod), _chapter(target)
    if mine and their_chapter and their_chapter != mine:
        out.append(("chapter-alone", f"chapter module {mod} imports another chapter's module {target}"))
    if group == "views" and their_group == "chapters":
        out.append(("views-draw-only", f"view {mod} imports chapter module {target} (views never import chapters)"))
    if group == "chapters" and their_group.startswith("cli_"):
        out.append(("chapters-no-cli", f"chapter module {mod} imports command module {target} "
                                       "(chapters never import cli_*)"))
    if group == "grading" and theirs == TOP and their_group not in ("grading", "exercises"):
        out.append(("grading-exercises", f"grading imports {target} (layer {theirs}); of layer {TOP} it may "
                                         "import course_lib.exercises only"))
    if group == "exercises" and their_group in ("checks", "grading"):
        out.append(("exercises-below", f"exercise module {mod} imports {target} (checks and grading sit on "
                                       "course_lib.exercises, never under it)"))
    return out


def violations(root: Path = PACKAGE, rules=RULES) -> list[str]:
    """Every problem under ``root`` (a course_lib tree) that breaks one of ``rules``, as readable lines."""
    unknown = set(rules) - set(RULES)
    if unknown:
        raise ValueError(f"rules must be among {RULES}, got {sorted(unknown)}")
    out = []
    for path in sorted(root.rglob("*.py")):
        mod = module_name(path, root)
        own = layer(mod)
        rel = path.relative_to(root.parent)
        if own is None:
            out.append(f"{rel}: module {mod} has no layer; add it to LAYERS in tests/test_layering.py")
            continue
        if "sublayers" in rules and own == TOP and sublayer(mod) is None:
            out.append(f"{rel}: layer-{TOP} module {mod} has no sub-layer; add it to SUBLAYERS in "
                       "tests/test_layering.py")
        for target, line, top in imports(path, root):
            first = target.split(".")[0]
            if "gui" in rules and first in GUI and own < TOP and top:
                out.append(f"{rel}:{line}: model module {mod} (layer {own}) imports {target} at module level")
            if first != "course_lib":
                continue
            theirs = layer(target)
            if "layers" in rules and theirs is not None and theirs > own:
                out.append(f"{rel}:{line}: {mod} (layer {own}) imports {target} (layer {theirs}), a higher layer")
            out += [f"{rel}:{line}: [{rule}] {text}" for rule, text in rule_breaks(mod, own, target, theirs)
                    if rule in rules]
    return out




def test_course_lib_respects_its_layers():
    problems = violations(rules=tuple(r for r in RULES if r != "grading-exercises"))
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_grading_imports_only_exercises_of_layer_5():
    problems = violations(rules=("grading-exercises",))
    assert not problems, "layering violations:\n" + "\n".join(problems)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_checker_catches_each_kind_of_violation(tmp_path):
    root = tmp_path / "course_lib"
    _write(root, "__init__.py", "")
    _write(root, "units.py", "from . import validate\n")
    _write(root, "validate.py", "")
    _write(root, "hardware.py", "from . import parallel\n")                       # lower imports higher
    _write(root, "costmodel.py", "import matplotlib.pyplot as plt\n"               # GUI at module level
                                 "def draw():\n    import ipywidgets\n")          # lazily: fine
    _write(root, "parallel.py", "from .costmodel import draw\nfrom course_lib import hardware\n")
    _write(root, "mystery.py", "")                                                # no layer
    _write(root, "chapters/__init__.py", "")
    _write(root, "chapters/a.py", "import matplotlib\nfrom .b import thing\nfrom .. import parallel\n")
    _write(root, "chapters/b.py", "def f():\n    from course_lib.chapters import a\n")
    _write(root, "chapters/c/__init__.py", "from .links import x\n")             # inside one chapter: fine
    _write(root, "chapters/c/links.py", "from ...chapters.c import y\nfrom .. import a\n")
    found = violations(root)
    text = "\n".join(found)
    assert "course_lib.hardware (layer 1) imports course_lib.parallel (layer 4)" in text
    assert "model module course_lib.costmodel (layer 3) imports matplotlib.pyplot at module level" in text
    assert "ipywidgets" not in text
    assert "module course_lib.mystery has no layer" in text
    assert "chapter module course_lib.chapters.a imports another chapter's module course_lib.chapters.b" in text
    assert "chapter module course_lib.chapters.b imports another chapter's module course_lib.chapters.a" in text
    assert "chapter module course_lib.chapters.c.links imports another chapter's module course_lib.chapters.a" in text
    assert not any("course_lib.parallel (layer 4) imports" in line for line in found)
    assert not any("chapters.a (layer 5) imports matplotlib" in line for line in found)
    assert len(found) == 6, text


# A planted import for each layer-5 rule (file, line appended, every rule it breaks: an import from views into a
# chapter is also one from sub-layer 5c into 5d), and some that are allowed: cli, the error policy, sits in layer 0,
# so a model module may raise into it; a module may import its own sub-layer (a view a lab run) or a lower one.
PLANTED = (
    ("views/pcie.py", "from ..chapters import pcie as _planted\n", ("views-draw-only", "sublayers")),
    ("chapters/gradients.py", "from .. import cli_predict as _planted\n", ("chapters-no-cli", "sublayers")),
    ("chapters/gradients.py", "from . import moe as _planted\n", ("chapter-alone",)),
    ("grading.py", "def _planted():\n    from .views import planner\n", ("grading-exercises", "sublayers")),
    ("grading.py", "def _planted_command():\n    from . import cli_plan\n", ("grading-exercises", "sublayers")),
    ("exercises/judge.py", "def _planted():\n    from .. import checks\n", ("exercises-below",)),
    ("exercises/specs.py", "def _planted():\n    from ..lab import bench\n", ("sublayers",)),
    ("tables.py", "def _planted():\n    from . import exercises\n", ("sublayers",)),
    ("exercises/answers_ch08.py", "def _planted_up():\n    from .. import instructor\n", ("sublayers",)),
)
ALLOWED = (("hardware.py", "from . import cli as _planted\n"), ("grading.py", "from . import exercises as _ok\n"),
           ("views/pcie.py", "def _ok():\n    from ..lab import calibrate\n"),
           ("chapters/gradients.py", "def _ok():\n    from ..lab import bench\n"),
           ("exercises/ch10.py", "def _ok_chapter():\n    from ..chapters import moe\n"))


def test_each_rule_fails_on_a_planted_import_in_a_copy_of_the_package(tmp_path):
    import shutil
    root = tmp_path / "course_lib"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("data", "__pycache__", "*.json", "*.txt", "*.toml"))
    (root / "exercises").mkdir(exist_ok=True)
    (root / "exercises" / "__init__.py").touch()
    before = set(violations(root))
    planted_at = []
    for rel, text in [(rel, text) for rel, text, _ in PLANTED] + list(ALLOWED):
        path = root / rel
        first = len(path.read_text().splitlines()) + 1
        with open(path, "a") as f:
            f.write(text)
        planted_at.append((rel, range(first, first + text.count("\n"))))
    new = sorted(set(violations(root)) - before)
    report = "\n".join(new)
    print(report)      # the failure a real violation prints (pytest -s shows it)
    expected = set()
    for (rel, lines), (_, _, rules) in zip(planted_at, PLANTED):
        expected |= {(rel, rule) for rule in rules}
        for rule in rules:
            assert any(line.startswith(f"course_lib/{rel}:") and int(line.split(":")[1]) in lines
                       and f"[{rule}]" in line for line in new), (rel, rule, report)
    found = {(line.split(":")[0].removeprefix("course_lib/"), line.split("[")[1].split("]")[0]) for line in new}
    assert found == expected, report
    assert len(new) == sum(len(rules) for _, _, rules in PLANTED), report


def test_every_layer_5_module_has_a_sub_layer_and_each_sub_layer_is_used():
    ranks = {sublayer(module_name(p, PACKAGE)) for p in PACKAGE.rglob("*.py")
             if layer(module_name(p, PACKAGE)) == TOP}
    assert None not in ranks
    assert {r[1] for r in ranks} == {sid for sid, _, _ in SUBLAYERS}


@pytest.mark.parametrize("module, expected", [("course_lib.style", "5a"), ("course_lib.lab.launch", "5a"),
                                               ("course_lib.lab.bench.runner", "5c"), ("course_lib.exercises.ring", "5b"),
                                               ("course_lib.exercises.ch10", "5d"), ("course_lib.exercises.chains", "5b"),
                                               ("course_lib.exercises.answers_ch08", "5d"),
                                               ("course_lib.chapters.pcie.links", "5d"), ("course_lib.instructor.cli", "5e"),
                                               ("course_lib.__main__", "5e")])
def test_sub_layer_of_a_module_name(module, expected):
    assert sublayer(module)[1] == expected


def import_cycles(root: Path = PACKAGE) -> list[list[str]]:
    """Groups of course_lib modules that import each other in a circle (lazy imports inside functions count: a
    cycle is one idea split over two files), each sorted; Tarjan's strongly connected components."""
    graph = {module_name(path, root): set() for path in sorted(root.rglob("*.py"))}
    for path in sorted(root.rglob("*.py")):
        mod = module_name(path, root)
        graph[mod] |= {target for target, _, _ in imports(path, root) if target in graph and target != mod}
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_import_each_other():
    assert import_cycles() == []


def test_an_import_cycle_is_found(tmp_path):
    root = tmp_path / "course_lib"
    _write(root, "__init__.py", "")
    _write(root, "hardware.py", "def load(p):\n    from . import systemfile\n")       # lazily: still a cycle
    _write(root, "systemfile.py", "from . import hardware\n")
    _write(root, "units.py", "from . import hardware\n")
    assert import_cycles(root) == [["course_lib.hardware", "course_lib.systemfile"]]


def test_rules_are_named():
    with pytest.raises(ValueError, match="rules must be among"):
        violations(rules=("no-such-rule",))


@pytest.mark.parametrize("module, expected", [("course_lib", 0), ("course_lib.lab.metrics", 5),
                                               ("course_lib.chapters.pcie", 5), ("course_lib.collectives", 2),
                                               ("course_lib.nothing", None)])
def test_layer_of_a_module_name(module, expected):
    assert layer(module) == expected
