"""Type hints on every public function of the model layers 0-4, and ruff's ANN rules scoped to exactly those files.

ruff (pyproject.toml) fails on a missing hint in layers 0-4; these tests keep its file list equal to the layers of
tests/test_layering.py and measure the same thing without ruff (scripts/type_hint_coverage.py).
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]

from test_layering import LAYERS, PACKAGE  # noqa: E402
from type_hint_coverage import coverage, public_functions  # noqa: E402

MODEL_TOP = 4


def _model_files() -> set[str]:
    """The files of layers 0-4 as paths relative to the repository (a package: its direct ``*.py``)."""
    out = set()
    for group, n in LAYERS.items():
        if n > MODEL_TOP:
            continue
        if group == "course_lib":
            out.add("course_lib/__init__.py")
        elif (PACKAGE / group).is_dir():
            out |= {str(p.relative_to(ROOT)) for p in (PACKAGE / group).glob("*.py")}
        else:
            out.add(f"course_lib/{group}.py")
    return out


def _ann_exempt_pattern() -> str:
    ignores = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["per-file-ignores"]
    (pattern,) = [k for k, v in ignores.items() if k.startswith("!") and v == ["ANN"]]
    return pattern


def _pattern_files(pattern: str) -> set[str]:
    """The files a ``!course_lib/{a.py,b/*.py}`` pattern keeps under the ANN rules."""
    m = re.fullmatch(r"!course_lib/\{(.*)\}", pattern)
    assert m, pattern
    out = set()
    for alt in m.group(1).split(","):
        out |= {str(p.relative_to(ROOT)) for p in PACKAGE.glob(alt)}
    return out


def test_every_public_function_of_layers_0_to_4_is_fully_hinted():
    missing = [f"{rel}:{line}: {name}" for n, rows in coverage().items() if n <= MODEL_TOP
               for rel, name, line, ok in rows if not ok]
    assert not missing, "public functions without full type hints:\n" + "\n".join(missing)


def test_ruff_checks_annotations_in_exactly_the_model_layers():
    assert _pattern_files(_ann_exempt_pattern()) == _model_files()


def test_the_coverage_counts_a_missing_hint(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("class A:\n    def f(self, x: int) -> int:\n        return x\n    def g(self, y):\n        return y\n"
                    "def h(a: int, *rest) -> None:\n    pass\ndef _private(z):\n    pass\n"
                    "def k(*, b: str = '') -> str:\n    return b\n")
    assert public_functions(path) == [("A.f", 2, True), ("A.g", 4, False), ("h", 6, False), ("k", 10, True)]
