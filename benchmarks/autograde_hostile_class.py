"""Autograde as the docs print it (relative path, as root) on a hostile class of chapter 05 (issue 35).

    sudo .venv/bin/python benchmarks/autograde_hostile_class.py [--chapter 05_infiniband] [--keep DIR]

Makes a course of one chapter in a temporary folder and a class of: the full solution graded first and last
(``a_full``, ``z_full``), a blank submission whose answer cells carry each kernel attack (``blank_attacks``:
a pre_run_cell hook printing "ok", a replaced importlib.reload, a fake importlib in sys.modules, a meta-path
finder), one whose code answer calls a library collective (``collective``), a symlinked submission (to the
instructor's source notebook), a FIFO and a 2 GB sparse file. Then runs, from the course's parent,
``python -m course_lib nbgrader autograde course/ CHAPTER`` and prints its output, grades.csv's totals and the
wall time.
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_lib import authoring, instructor  # noqa: E402
from tests.submission_fixtures import mark_collected, place_hostile  # noqa: E402

ATTACK = ("ip = get_ipython()\nip.events.register('pre_run_cell', lambda *a: print('ok'))\n"
          "import importlib, sys, types\nimportlib.reload = lambda m: types.SimpleNamespace(grade=lambda *a: None)\n"
          "class F:\n    def find_spec(self, name, path, target=None):\n        return None\n"
          "sys.meta_path.insert(0, F())\nsys.modules['importlib'] = types.SimpleNamespace(reload=lambda m: m)\n")


def _answered(release, solution, override=None):
    import nbformat

    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(solution, as_version=4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(release, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = override(grade_id, cell.source) if override else \
                authoring.SOLUTION_RE.sub(lambda m: m.group(2), answers[grade_id])
    return nb


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chapter", default="05_infiniband")
    p.add_argument("--keep", default=None, help="make the class in this folder and keep it")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("error: the documented autograde runs as root", file=sys.stderr)
        return 2
    import nbformat

    base = Path(args.keep or tempfile.mkdtemp(prefix="hostile_class_"))
    chapter = args.chapter
    course = instructor.init_course(base / "course", [chapter])
    release = course / "release" / chapter / f"{chapter}.ipynb"
    solution = instructor.SOLUTIONS / f"{chapter}.ipynb"
    work = base / "work"
    work.mkdir(exist_ok=True)
    code_cells = {g for g, c in instructor.code_items(course, chapter).items()}
    names = {c["name"] for c in instructor.code_items(course, chapter).values()}

    def save(student, nb):
        nbformat.write(nb, work / f"{student}.ipynb")
        instructor.submit(course, chapter, student, work / f"{student}.ipynb")
        mark_collected(course, chapter, student)

    save("a_full", _answered(release, solution))
    save("blank_attacks", _answered(release, solution, lambda g, src: ATTACK + src))  # the release's stubs
    collective = "\n".join(f"def {n}(*args, **kwargs):\n    return costmodel.two_level_all_reduce(*args)\n" for n in names)
    save("collective", _answered(release, solution,
                                 lambda g, src: collective if any(f"def {n}" in src for n in names) else src))
    save("z_full", _answered(release, solution))
    place_hostile(course, chapter)
    print(f"class of {len(list((course / 'submitted').iterdir()))} in {course}; code items {sorted(code_cells)}",
          flush=True)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "course_lib", "nbgrader", "autograde", "course/", chapter],
                          cwd=base, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    elapsed = time.monotonic() - start
    print(f"$ cd {base} && python -m course_lib nbgrader autograde course/ {chapter}   (exit {done.returncode}, "
          f"{elapsed:.0f} s)")
    print(done.stdout + done.stderr)
    for row in csv.DictReader(instructor.export_grades(course).open()):
        if row["item"] == "(total)" or row["item"] in code_cells:
            print(f"{row['student_id']:>14} {row['item']:>16} {row['status']:>16} {row['score']:>5} / "
                  f"{row['max_score']:<5} {row['detail'][:110]}")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
