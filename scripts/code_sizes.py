"""Print the largest modules and longest functions in course_lib (issue 13's size goal).

Module size is the file's line count; function length is ``end_lineno - lineno + 1`` of every
(async) function definition, found with :mod:`ast`. Run from the repository root::

    python scripts/code_sizes.py [--top N] [--root course_lib]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def module_sizes(root: Path) -> list[tuple[int, str]]:
    """(line count, path) for every .py file under ``root``, largest first."""
    rows = []
    for path in sorted(root.rglob("*.py")):
        rows.append((len(path.read_text(encoding="utf-8").splitlines()), path.as_posix()))
    return sorted(rows, key=lambda r: (-r[0], r[1]))


def function_lengths(root: Path) -> list[tuple[int, str]]:
    """(line count, 'path:name') for every function or method under ``root``, longest first."""
    rows = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                rows.append((node.end_lineno - node.lineno + 1, f"{path.as_posix()}:{node.name}"))
    return sorted(rows, key=lambda r: (-r[0], r[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="course_lib", help="package folder to measure")
    parser.add_argument("--top", type=int, default=8, help="rows per table (default 8)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    modules = module_sizes(root)
    functions = function_lengths(root)
    print(f"{args.top} largest modules (lines):")
    for n, path in modules[: args.top]:
        print(f"  {n:5d}  {path}")
    print(f"{args.top} longest functions (lines):")
    for n, where in functions[: args.top]:
        print(f"  {n:5d}  {where}")
    print(f"largest module: {modules[0][0]} lines ({modules[0][1]})")
    print(f"longest function: {functions[0][0]} lines ({functions[0][1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
