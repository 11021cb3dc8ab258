"""Type-hint coverage of course_lib's public functions, per layer (read from the AST; nothing is imported).

A public function or method is one whose name has no leading underscore, defined in a module whose own name
has none either (dunder methods such as ``__init__`` count as public: ``__init__``'s parameters are its API).
It is fully hinted when every parameter except a method's ``self``/``cls`` is annotated and so is its return
(``__init__`` needs no return annotation). Layers come from ``tests/test_layering.py``'s ``LAYERS``.

    python scripts/type_hint_coverage.py            # the table
    python scripts/type_hint_coverage.py --missing  # also each unhinted function, file:line
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_layering import PACKAGE, layer, module_name  # noqa: E402  (the one list of layers)


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _fully_hinted(fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> bool:
    a = fn.args
    params = a.posonlyargs + a.args + a.kwonlyargs
    if is_method and params and params[0].arg in ("self", "cls") and not _is_static(fn):
        params = params[1:]
    params += [p for p in (a.vararg, a.kwarg) if p is not None]
    if any(p.annotation is None for p in params):
        return False
    return fn.returns is not None or fn.name == "__init__"


def _is_static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def public_functions(path: Path) -> list[tuple[str, int, bool]]:
    """(qualified name, line, fully hinted) for each public module-level function and public method."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_public(node.name):
                out.append((prefix + node.name, node.lineno, _fully_hinted(node, in_class)))
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, (ast.If, ast.Try)):        # `if TYPE_CHECKING:` and fallbacks
                visit(node.body, prefix, in_class)
    visit(tree.body, "", False)
    return out


def coverage(root: Path = PACKAGE) -> dict[int, list[tuple[str, str, int, bool]]]:
    """layer -> [(file, qualified name, line, fully hinted)] over every module with a layer."""
    out: dict[int, list[tuple[str, str, int, bool]]] = {}
    for path in sorted(root.rglob("*.py")):
        mod = module_name(path, root)
        own = layer(mod)
        if own is None or any(part.startswith("_") and part != "__init__" and part != "__main__"
                              for part in path.relative_to(root).with_suffix("").parts):
            continue
        rel = str(path.relative_to(root.parent))
        out.setdefault(own, []).extend((rel, name, line, ok) for name, line, ok in public_functions(path))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list each function without full hints")
    parser.add_argument("--layers", default="0-5", help="a range of layers, e.g. 0-4 (default 0-5)")
    args = parser.parse_args(argv)
    low, _, high = args.layers.partition("-")
    wanted = range(int(low), int(high or low) + 1)
    table = coverage()
    print(f"{'layer':>5}  {'public':>6}  {'hinted':>6}  {'share':>6}")
    total = hinted = 0
    for n in sorted(table):
        if n not in wanted:
            continue
        rows = table[n]
        ok = sum(r[3] for r in rows)
        total, hinted = total + len(rows), hinted + ok
        print(f"{n:>5}  {len(rows):>6}  {ok:>6}  {ok / len(rows):>6.0%}")
    print(f"{'all':>5}  {total:>6}  {hinted:>6}  {hinted / max(total, 1):>6.0%}")
    if args.missing:
        for n in sorted(table):
            if n in wanted:
                for rel, name, line, ok in table[n]:
                    if not ok:
                        print(f"{rel}:{line}: {name} (layer {n})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
