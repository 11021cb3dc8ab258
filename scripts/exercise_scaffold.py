"""Count the exercise scaffold in the chapter sources (issue 27, build 2): lines an author writes only to
wire an exercise to nbgrader, not to teach or to answer.

    python scripts/exercise_scaffold.py [--json]

Read from the raw text of ``solutions/src/*.py`` (the sources the manifest lists), line by line:

- ``nbgrader header``: a cell header (``# %%``) carrying ``nbgrader=`` metadata;
- ``solution marker``: ``### BEGIN SOLUTION`` / ``### END SOLUTION`` (also as a markdown comment);
- ``hidden test``: every line of a ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` block, markers included;
- ``check call``: a cell holding only ``checks.check("NN.K", name)`` (with its hidden block): the call line,
  and the bare ``# %%`` header of such a cell when it has no nbgrader metadata (the check after a written answer);
- ``model answer``: ``from course_lib import grading`` and ``name = grading.model_answer("NN.K")`` in a solution block;
- ``directive``: a cell header ``# %% exercise="NN.K"`` (the one line that replaces all of the above; a cell
  needs its header anyway, so it is listed, not counted as scaffold).

``issue measure`` is the subset issue 27 counted (716 lines then): the nbgrader headers of the graded
answer/check pairs, every solution marker, the hidden tests and the graded check calls.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from course_lib import manifest  # noqa: E402

HEADER = re.compile(r"^# %%")
CHECK = re.compile(r"""^checks\.check\(["']\d\d\.\w+["'], \w+\)$""")
MARKER = re.compile(r"^(# )?[ \t]*### (BEGIN|END) SOLUTION\s*$")
MODEL = re.compile(r"""^[ \t]*(from course_lib import grading|\w+ = grading\.model_answer\(["']\d\d\.\w+["']\))$""")


def count(text: str) -> dict:
    """Scaffold lines of one chapter source, by kind."""
    out = {"nbgrader header": 0, "nbgrader header (graded pair)": 0, "solution marker": 0, "hidden test": 0,
           "check call": 0, "check call (graded)": 0, "model answer": 0, "directive": 0, "lines": 0}
    lines = text.splitlines()
    out["lines"] = len(lines)
    hidden = solution = False
    for index, line in enumerate(lines):
        if HEADER.match(line):
            solution = False
            if "nbgrader=" in line:
                out["nbgrader header"] += 1
                meta = json.loads(line.split("nbgrader=", 1)[1])
                if meta["grade_id"].endswith("-check") or (meta["grade_id"].endswith("-answer")
                                                           and not meta.get("grade")):
                    out["nbgrader header (graded pair)"] += 1
            elif re.search(r"\bexercise=", line):
                out["directive"] += 1
            elif line.strip() == "# %%" and index + 1 < len(lines) and CHECK.match(lines[index + 1]) and (
                    index + 2 >= len(lines) or not lines[index + 2].strip() or HEADER.match(lines[index + 2])):
                out["check call"] += 1   # the bare header of a check cell after a written answer
            continue
        if "### BEGIN HIDDEN TESTS" in line:
            hidden = True
        if hidden:
            out["hidden test"] += 1
            hidden = "### END HIDDEN TESTS" not in line
            continue
        if MARKER.match(line):
            out["solution marker"] += 1
            solution = "BEGIN" in line
            continue
        if CHECK.match(line) and index > 0 and HEADER.match(lines[index - 1]):
            out["check call"] += 1
            if "nbgrader=" in lines[index - 1]:
                out["check call (graded)"] += 1
        elif solution and MODEL.match(line):
            out["model answer"] += 1
    return out


def totals(paths) -> dict:
    """The counts of every source summed, with ``scaffold`` (all kinds) and ``issue measure``."""
    total: dict = {}
    for path in paths:
        for k, v in count(path.read_text(encoding="utf-8")).items():
            total[k] = total.get(k, 0) + v
    total["scaffold"] = sum(total[k] for k in ("nbgrader header", "solution marker", "hidden test", "check call",
                                              "model answer"))
    total["issue measure"] = sum(total[k] for k in ("nbgrader header (graded pair)", "solution marker",
                                                   "hidden test", "check call (graded)"))
    return total


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    total = totals([c.source for c in manifest.chapters()])
    if "--json" in argv:
        print(json.dumps(total, indent=1))
        return 0
    for k, v in total.items():
        print(f"{k:32s} {v:6d}")
    print(f"{'scaffold share of the sources':32s} {total['scaffold'] / total['lines']:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
