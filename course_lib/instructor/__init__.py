"""nbgrader end to end: course folder, release, autograde with clear messages, gradebook CSV.

``python -m course_lib nbgrader init DIR`` turns the repository into an nbgrader
course: ``DIR/source/<chapter>/<chapter>.ipynb`` are the solution notebooks, and
``nbgrader generate_assignment`` writes ``DIR/release/``. Students' notebooks go
to ``DIR/submitted/<student>/<chapter>/`` (``nbgrader collect`` puts them there
on a JupyterHub, :func:`submit` by hand). ``... nbgrader autograde DIR CHAPTER``
first inspects every submission and says in plain words what a student broke
(a graded cell deleted, a locked cell retyped, an answer cell missing), then runs
``nbgrader autograde``; ``... nbgrader export DIR`` writes the gradebook CSV.

The package by idea: ``course`` (set-up: folders, nbgrader's configuration and exchange, ``init_course``),
``release`` (``submit``, ``release_feedback``), ``screening`` (``inspect_submission``), ``autograding``
(``autograde`` and the judging outside the kernels), ``grades`` (``export_grades``), ``commands`` (running
nbgrader) and ``cli`` (``python -m course_lib nbgrader``). Every name is importable from here, as before.
"""
from .autograding import (_SETUP_FAULTS, _STUDENT_RE, _TIMEOUT_RE, _check_kernel, _grading_problems, _judge,
                          _judge_code, _log_by_student, _setup_fault, autograde)
from .cli import _cli_autograde, _guarded, register
from .commands import NbgraderError, SetupError, _course, _env, _streamed, nbgrader
from .course import (CONFIG, COURSE_ID, EXCHANGE_ENV, HIDDEN_GRADE_RE, ROOT, SOLUTIONS, STUDENT, _judged_outside,
                     _report_instead, chapters, code_items, init_course, judged_items, learner_config, make_exchange)
from .grades import export_grades, pending_manual
from .release import release_feedback, submit
from .screening import REACHING, SUSPICIOUS, Problem, _shown, _suspicious, _words, inspect_submission

__all__ = ["CONFIG", "COURSE_ID", "EXCHANGE_ENV", "HIDDEN_GRADE_RE", "NbgraderError", "Problem", "REACHING", "ROOT",
           "SOLUTIONS", "STUDENT", "SUSPICIOUS", "SetupError", "autograde", "chapters", "code_items", "export_grades",
           "init_course", "inspect_submission", "judged_items", "learner_config", "make_exchange", "nbgrader",
           "pending_manual", "register", "release_feedback", "submit"]
_PRIVATE = (_SETUP_FAULTS, _STUDENT_RE, _TIMEOUT_RE, _check_kernel, _cli_autograde, _course, _env, _grading_problems,
            _guarded, _judge, _judge_code, _judged_outside, _log_by_student, _report_instead, _setup_fault, _shown,
            _streamed, _suspicious, _words)  # still importable from here: tests and benchmarks use some
