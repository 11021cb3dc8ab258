"""``python -m course_lib nbgrader ...``: init, autograde, feedback and export, each nbgrader failure one line."""
from __future__ import annotations

import sys
from pathlib import Path

from .. import cli
from .autograding import autograde
from .commands import NbgraderError, SetupError
from .course import init_course
from .grades import export_grades
from .release import release_feedback


def _cli_autograde(args) -> int:
    problems = autograde(args.course_dir, args.assignment, timeout=args.timeout)
    submissions = len(list((Path(args.course_dir) / "submitted").glob(f"*/{args.assignment}")))
    failed = sorted({p.student for p in problems if not p.graded})
    print(f"[course_lib] {args.assignment}: {submissions - len(failed)} of {submissions} submissions graded"
          + (f"; not graded: {', '.join(failed)}" if failed else "")
          + f"; nbgrader's log: {Path(args.course_dir) / 'autograde.log'}")
    return 1 if failed else 0


def _guarded(func):
    """A CLI handler whose nbgrader failure is one line (the log goes to a file), status 1."""
    def run(args) -> int:
        if isinstance(getattr(args, "course_dir", None), str):  # resolved once, here: nbgrader runs inside it
            args.course_dir = str(Path(args.course_dir).resolve())
        try:
            return func(args)
        except SetupError as exc:
            print(f"error: {cli.one_line(str(exc))}", file=sys.stderr)
            return 1
        except NbgraderError as exc:
            log = Path(args.course_dir) / "nbgrader-error.log" if Path(args.course_dir).is_dir() else None
            if log is not None:
                log.write_text(exc.log, encoding="utf-8")
            print(f"error: {exc.summary}" + (f" (full log: {log})" if log else ""), file=sys.stderr)
            return 1
    return run


def register(sub) -> None:
    p = sub.add_parser("nbgrader", help="run the course in nbgrader: init, autograde, export")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("init", help="create an nbgrader course folder and release the chapters")
    a.add_argument("course_dir")
    a.add_argument("--assignments", nargs="*", help="chapters to include (default: all)")
    a.set_defaults(func=_guarded(lambda args: print(init_course(args.course_dir, args.assignments)) or 0))
    a = actions.add_parser("autograde", help="inspect and autograde the submissions of one chapter")
    a.add_argument("course_dir")
    a.add_argument("assignment")
    a.add_argument("--timeout", type=cli.integer(low=1, high=86400), default=None,
                   help="seconds a cell may run (default: the course config's 300)")
    a.set_defaults(func=_guarded(_cli_autograde))
    a = actions.add_parser("feedback", help="generate and release feedback (warns of manual grading pending)")
    a.add_argument("course_dir")
    a.add_argument("assignment")
    a.set_defaults(func=_guarded(lambda args: release_feedback(args.course_dir, args.assignment) and 0))
    a = actions.add_parser("export", help="write the gradebook CSV")
    a.add_argument("course_dir")
    a.add_argument("--csv", default=None)
    a.set_defaults(func=_guarded(lambda args: print(export_grades(args.course_dir, args.csv)) or 0))
