"""Code exercises judged outside the learner's kernel (04.4's ring, 05.6, 10.7: kind ``callable``).

A kernel the learner controls can make any check inside it pass: a ``pre_run_cell`` hook that prints "ok", a
replaced ``importlib.reload``, a fake ``importlib`` in ``sys.modules``, a meta-path finder, a saved
``ProcessGroup.allreduce``, ``gc``-cleared ``Traffic.collectives``. So autograde never asks the kernel: it reads
the learner's function from the submitted notebook as *source text*, by its syntax (:func:`extract`: the
cell's imports, functions, classes and constant assignments; nothing else of the cell runs), screens it
(:func:`screen`: a library collective, the interpreter's machinery or a private name scores 0 with one line),
and runs it in a fresh process it owns (``python -I -m course_lib.grading_code``, under the sandbox when
isolation is available), where the chapter's own checker counts the traffic and computes the reference. The
verdict comes back on one line tagged with a nonce the process read from its stdin before any learner code
ran; any other line, or none, is no verdict (0 points).
"""
from __future__ import annotations

import ast
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

TAG = "course_lib-code-verdict"
CHECK_SECONDS = 240  # one function's judging (the checkers run 2 and 3 ranks, with their own timeouts)

# Names a function that computes a collective from point-to-point messages (or a formula) never needs.
LIBRARY_COLLECTIVES = ("all_reduce", "allreduce", "reduce_scatter", "all_gather", "allgather", "broadcast",
                       "all_to_all", "alltoall", "all_to_all_single", "reduce_op", "ReduceOp",
                       "ring_all_reduce", "two_level_all_reduce", "direct_all_to_all", "hierarchical_all_reduce",
                       "_reduce_scatter_base", "_all_gather_base", "reduce_scatter_tensor", "all_gather_into_tensor")
MACHINERY = ("gc", "sys", "importlib", "builtins", "ctypes", "inspect", "os", "subprocess", "signal", "types",
             "getattr", "setattr", "delattr", "eval", "exec", "compile", "globals", "locals", "vars", "__import__",
             "open", "get_ipython", "breakpoint", "Traffic", "ProcessGroup", "costmodel", "grading",
             "checks", "exercises")


def extract(source: str, name: str) -> str:
    """The part of a cell's ``source`` that defines ``name``: its top-level imports, functions, classes and
    assignments of constants, unparsed from the syntax tree (calls, hooks and expressions are dropped).
    ValueError when the cell does not parse or defines no function ``name``."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"the cell that defines {name} is not valid Python (line {exc.lineno}: {exc.msg})") from None
    kept = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef))
            or isinstance(node, ast.Assign) and _constant(node.value)]
    if not any(isinstance(n, ast.FunctionDef) and n.name == name for n in kept):
        raise ValueError(f"no function {name} is defined in its answer cell")
    return ast.unparse(ast.Module(body=kept, type_ignores=[]))


def _constant(node) -> bool:
    return all(isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.operator,
                              ast.unaryop, ast.Load)) for n in ast.walk(node))


# What an honest answer may read from ``os`` and ``sys`` (a rank from the environment, a message on stderr):
# plain reads of these attributes only; anything else of either module (``sys.modules``, ``os.system``, a
# store, the module passed around as a value) stays refused as machinery.
HARMLESS_ATTRIBUTES = {"os": ("environ", "getenv", "getpid", "cpu_count", "path", "sep", "linesep"),
                       "sys": ("stdout", "stderr", "maxsize", "float_info", "version_info", "byteorder")}


def _harmless_uses(tree) -> set:
    """The ids of the ``os``/``sys`` name nodes and imports that only read a harmless attribute."""
    ok = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load)
                and node.attr in HARMLESS_ATTRIBUTES.get(node.value.id, ())):
            ok.add(id(node.value))
        elif isinstance(node, ast.Import) and all(a.name in HARMLESS_ATTRIBUTES and a.asname is None
                                                  for a in node.names):
            ok.add(id(node))
        elif (isinstance(node, ast.ImportFrom) and node.module in HARMLESS_ATTRIBUTES
              and all(a.name in HARMLESS_ATTRIBUTES[node.module] for a in node.names)):
            ok.add(id(node))
    return ok


def screen(code: str) -> str | None:
    """Why ``code`` (as :func:`extract` gives it) scores 0 without running, in one line, or None."""
    tree = ast.parse(code)
    harmless = _harmless_uses(tree)
    for node in ast.walk(tree):
        if id(node) in harmless:
            continue
        names = []
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            if node.attr.startswith("_"):
                return f"it reaches for a private attribute ({ast.unparse(node)}): an answer needs none"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names += alias.name.split(".")
            if isinstance(node, ast.ImportFrom) and node.module:
                names += node.module.split(".")
        for word in names:
            if word in LIBRARY_COLLECTIVES:
                return (f"it calls a library collective ({word}): the exercise is to build it from point-to-point "
                        "messages or the formula, so it scores 0")
            if word in MACHINERY or word.startswith("__"):
                return f"it uses {word}, which an answer never needs (the interpreter's or the grader's machinery)"
    return None


def notebook_imports(cells: list) -> str:
    """The top-level imports of the instructor's released notebook cells (the names its answer cells may use)."""
    out = []
    for source in cells:
        try:
            tree = ast.parse("\n".join("" if l.lstrip().startswith(("%", "!")) else l for l in source.splitlines()))
        except SyntaxError:
            continue
        out += [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                and not any(a.name.split(".")[0] in ("matplotlib", "ipywidgets") for a in n.names)]
    return "\n".join(dict.fromkeys(out))


def judge(exercise_id: str, name: str, code: str, preamble: str, command_prefix: list | None = None,
          seconds: float = CHECK_SECONDS) -> tuple[float, float, str]:
    """``(points, max_points, detail)`` for the learner's function ``name`` in ``code``: screened here, then run
    by the chapter's checker in a fresh process (``command_prefix`` puts it under the sandbox)."""
    from . import grading

    max_points = float(grading._fresh_checks().spec(exercise_id).get("points", 1))
    why = screen(code)
    if why:
        return 0.0, max_points, why
    nonce = secrets.token_hex(16)
    request = json.dumps({"nonce": nonce, "id": exercise_id, "name": name, "code": code, "preamble": preamble})
    command = [*(command_prefix or []), sys.executable, "-I", "-m", "course_lib.grading_code"]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "COURSE_LIB_SANDBOX",
                                                         "COURSE_LIB_GRADING_CAPS", "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    try:
        done = subprocess.run(command, input=request, capture_output=True, text=True, timeout=seconds, env=env,
                              cwd="/")
    except subprocess.TimeoutExpired:
        return 0.0, max_points, f"judging the function ran past {seconds:g} s and was stopped"
    verdicts = [line[len(TAG) + len(nonce) + 2:] for line in done.stdout.splitlines()
                if line.startswith(f"{TAG} {nonce} ")]
    if len(verdicts) != 1:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return 0.0, max_points, f"no verdict from the judging process ({tail[:200]})"
    verdict = json.loads(verdicts[0])
    return float(verdict["points"]), max_points, verdict["detail"]


def _main() -> None:
    """The fresh process: read the request, define the function, let the chapter's checker judge it."""
    request = json.loads(sys.stdin.read())
    nonce = request.pop("nonce")
    out = os.fdopen(os.dup(1), "w")  # the verdict's own handle, taken before any learner code runs

    def verdict(points, detail):
        out.write(f"{TAG} {nonce} " + json.dumps({"points": points, "detail": str(detail)[:400]}) + "\n")
        out.flush()
    from . import grading
    namespace = {"__name__": "__learner__"}
    try:
        exec(compile(request["preamble"], "<notebook imports>", "exec"), namespace)
        exec(compile(request["code"], "<answer cell>", "exec"), namespace)
        fn = namespace[request["name"]]
        result = grading.evaluate(request["id"], fn)
    except Exception as exc:  # the learner's cell failed to define the function, or it raised
        verdict(0.0, f"the function could not be judged ({type(exc).__name__}: {exc})")
        return
    verdict(float(result.points), f"{result.status}: {result.message}")


if __name__ == "__main__":
    _main()
