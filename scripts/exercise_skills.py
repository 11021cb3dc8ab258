"""Graded points by skill, per chapter: how much of each chapter tests more than computation.

    PYTHONPATH=$PWD .venv/bin/python scripts/exercise_skills.py [--min-beyond 0.4]

Reads every exercise's ``skill`` and ``points`` from ``course_lib/exercises/*.json``
(``checks.exercises``) and prints one row per chapter: points per skill, the total and the share of
points that test more than computation (predict, explain, design, diagnose). With ``--min-beyond``
the exit status is 1 when a chapter's share is below it.
"""
from __future__ import annotations

import argparse
import sys

from course_lib import checks

SKILLS = ("compute", "predict", "explain", "design", "diagnose")


def table() -> list[dict]:
    """One dict per chapter: points per skill, 'total' and 'beyond' (share of points beyond compute)."""
    rows = []
    for chapter in checks.chapters():
        row = {"chapter": chapter, **{skill: 0.0 for skill in SKILLS}}
        for exercise_id, spec in checks.exercises(chapter).items():
            skill = spec.get("skill")
            if skill not in SKILLS:
                raise ValueError(f"exercise {exercise_id}: skill must be one of {', '.join(SKILLS)}; got {skill!r}")
            row[skill] += float(spec.get("points", 1))
        row["total"] = sum(row[s] for s in SKILLS)
        row["beyond"] = (row["total"] - row["compute"]) / row["total"] if row["total"] else 0.0
        rows.append(row)
    return rows


def render(rows) -> str:
    head = f"{'chapter':<8}" + "".join(f"{s:>9}" for s in SKILLS) + f"{'total':>7}{'beyond compute':>16}"
    lines = [head]
    for r in rows:
        lines.append(f"{r['chapter']:<8}" + "".join(f"{r[s]:>9g}" for s in SKILLS)
                     + f"{r['total']:>7g}{r['beyond']:>15.0%}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-beyond", type=float, default=None,
                        help="fail (exit 1) when a chapter's share beyond compute is below this fraction")
    args = parser.parse_args(argv)
    if args.min_beyond is not None and not 0 <= args.min_beyond <= 1:
        print(f"error: --min-beyond must be in [0, 1]; got {args.min_beyond}", file=sys.stderr)
        return 2
    rows = table()
    print(render(rows))
    if args.min_beyond is not None:
        low = [r["chapter"] for r in rows if r["beyond"] < args.min_beyond]
        if low:
            print(f"below {args.min_beyond:.0%}: {', '.join(low)}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
