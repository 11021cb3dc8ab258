"""Layering of course_lib, read from the source's AST (nothing is imported).

Layers, lowest first; a module may import its own layer or lower ones, never a higher one:

    0 data, validate, units      validate, units, datafiles (+ the bibliography), evidence, environment,
                                 manifest (course.toml), textfiles (a learner's text file), the package itself
    1 hardware, systemfile,      the hardware catalog and a learner's own systems (TOML);
      transformer                model shapes, FLOPs and memory
    2 collectives                the registry of collectives and algorithms
    3 costmodel, topology        alpha-beta model, graphs
    4 parallel                   DP/ZeRO/TP/PP memory, traffic, step time, planner
    5 lab, explorers, views,     everything a learner or an instructor touches
      widgets, style, tables, cli, tools, diagnostics, prose (numbers glued into a chapter's text),
      glossary (the course's terms), exercises (each chapter's exercise specs, checkers, answer models)

Also: no module of course_lib/explorers imports another explorers module (each chapter stands
alone), and no model module (layers 0-4) imports matplotlib or ipywidgets at module level
(inside a function is fine: drawing helpers import them lazily).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "course_lib"

LAYERS = {
    "course_lib": 0, "validate": 0, "units": 0, "datafiles": 0, "evidence": 0, "manifest": 0, "environment": 0,
    "textfiles": 0, "notebook_save": 0,
    "hardware": 1, "systemfile": 1, "transformer": 1,
    "collectives": 2,
    "costmodel": 3, "topology": 3,
    "parallel": 4, "tp_scans": 4, "pipeline_schedules": 4,
    # layer 5: what learners and instructors touch
    "lab": 5, "explorers": 5, "views": 5, "widgets": 5, "style": 5, "cli_predict": 5, "cli_plan": 5,
    "__main__": 5, "authoring": 5, "checks": 5, "instructor": 5, "export": 5, "gradebook": 5, "sandbox": 5,
    "diagnostics": 5, "cli_inspect": 5, "tables": 5, "cli": 5, "grading": 5, "prose": 5, "glossary": 5,
    "exercises": 5,
}
TOP = max(LAYERS.values())
GUI = ("matplotlib", "ipywidgets")


def module_name(path: Path, root: Path) -> str:
    """``course_lib/explorers/pcie.py`` -> ``course_lib.explorers.pcie`` (``__init__`` -> the package)."""
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


def violations(root: Path = PACKAGE) -> list[str]:
    """Every layering problem under ``root`` (a course_lib tree), as readable lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        mod = module_name(path, root)
        own = layer(mod)
        rel = path.relative_to(root.parent)
        if own is None:
            out.append(f"{rel}: module {mod} has no layer; add it to LAYERS in tests/test_layering.py")
            continue
        for target, line, top in imports(path, root):
            first = target.split(".")[0]
            if first in GUI and own < TOP and top:
                out.append(f"{rel}:{line}: model module {mod} (layer {own}) imports {target} at module level")
            if first != "course_lib":
                continue
            theirs = layer(target)
            if theirs is not None and theirs > own:
                out.append(f"{rel}:{line}: {mod} (layer {own}) imports {target} (layer {theirs}), a higher layer")
            if (mod.startswith("course_lib.explorers.") and target.startswith("course_lib.explorers.")
                    and target != mod):
                out.append(f"{rel}:{line}: chapter module {mod} imports another chapter module {target}")
    return out


def test_course_lib_respects_its_layers():
    problems = violations()
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
    _write(root, "explorers/__init__.py", "")
    _write(root, "explorers/a.py", "import matplotlib\nfrom .b import thing\nfrom .. import parallel\n")
    _write(root, "explorers/b.py", "def f():\n    from course_lib.explorers import a\n")
    found = violations(root)
    text = "\n".join(found)
    assert "course_lib.hardware (layer 1) imports course_lib.parallel (layer 4)" in text
    assert "model module course_lib.costmodel (layer 3) imports matplotlib.pyplot at module level" in text
    assert "ipywidgets" not in text
    assert "module course_lib.mystery has no layer" in text
    assert "course_lib.explorers.a imports another chapter module course_lib.explorers.b" in text
    assert "course_lib.explorers.b imports another chapter module course_lib.explorers.a" in text
    assert not any("course_lib.parallel (layer 4) imports" in line for line in found)
    assert not any("explorers.a (layer 5) imports matplotlib" in line for line in found)
    assert len(found) == 5, text


@pytest.mark.parametrize("module, expected", [("course_lib", 0), ("course_lib.lab.metrics", 5),
                                               ("course_lib.explorers.pcie", 5), ("course_lib.collectives", 2),
                                               ("course_lib.nothing", None)])
def test_layer_of_a_module_name(module, expected):
    assert layer(module) == expected
