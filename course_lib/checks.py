"""Your exercises' feedback: ``check(id, answer)``, ``hint(id)``, ``check_all(globals())``.

Each exercise is described in its chapter's exercises file (``course_lib/exercises/<chapter>.json``, the
one ``course.toml`` names); how an answer is judged lives beside it in :mod:`course_lib.exercises`
(``keys``: sealed self-check keys; ``numbers``, ``choices``, ``chains``, ``code``, ``free_text``: judging
by answer kind; ``mistakes``: the named slips and hint levels). A spec looks like::

    "00.1": {"variable": "grad_bytes_13b", "kind": "number", "skill": "compute",
             "key": {"salt": "...", "sealed": "..."},   # a salted hash of the answer, never the answer
             "rtol": 0.01, "unit": "bytes", "points": 1,
             "mistakes": ["bits", "gib"]}                 # named common mistakes (COMMON_MISTAKES)

**The package holds no answer.** Self-check judges against a sealed key (:mod:`course_lib.exercises.keys`),
which stops a learner from reading an answer off ``spec()``, not one who hashes every grid point; a graded
release carries no keys at all. Authoritative answers are the instructor's (``solutions/answers.json``,
read by :mod:`course_lib.grading`).

``check(id, answer)`` prints feedback and never raises; ``grade(id, answer)`` raises ``AssertionError``
unless correct (self-check grading); ``check_all(namespace)`` scores a notebook, counting the **first**
answer of a choice exercise.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from . import validate
from .exercises.judge import evaluate
from .exercises.keys import GRID, PlainKey, SealedKey, seal
from .exercises.mistakes import COMMON_MISTAKES, PREFIXES, SLIPS, level_text
from .exercises.numbers import last_figure, significant_figures
from .exercises.result import NOT_ANSWERED, NOT_GIVEN, Result, is_unanswered
from .exercises.session import FIRST_CHOICE, HINT_LEVELS, LAST, LEVEL, graded, reset, set_mode
from .exercises.specs import chapter as _chapter
from .exercises.specs import chapters, exercises, full, raw_spec, spec
from .exercises.free_text import MIN_WORDS

SKILLS = ("compute", "predict", "explain", "design", "diagnose")

__all__ = ["COMMON_MISTAKES", "GRID", "MIN_WORDS", "NOT_ANSWERED", "PREFIXES", "SKILLS", "SLIPS", "PlainKey",
           "Result", "SealedKey", "chapters", "check", "check_all", "evaluate", "exercises", "grade", "hint",
           "is_unanswered", "last_figure", "notebook_chapter", "reset", "seal", "set_mode",
           "significant_figures", "spec"]


def _show(result: Result) -> None:
    try:
        from IPython.display import display
        display(result)
    except ImportError:  # pragma: no cover - IPython ships with the course
        print(result)


def check(exercise_id, answer) -> None:
    """Show feedback on an answer (never raises for a wrong or missing one; never shows the expected value).

    Returns None so that, as a cell's last expression, the feedback shows once;
    :func:`evaluate` returns the :class:`Result` for code that needs it.
    """
    s = spec(exercise_id)
    earlier = _earlier_answer(s["chain"]["from"]) if s.get("chain") else NOT_GIVEN
    _show(evaluate(exercise_id, answer, record=True, earlier=earlier))


def hint(exercise_id) -> None:
    """Show the next hint of an exercise without answering it: the idea, then the formula, then the
    steps (each call, like each wrong answer, moves one level on; the third is the last). In graded
    mode there are none: the feedback comes with the grade."""
    s = spec(exercise_id)
    if graded():
        _show(Result(exercise_id, "hint", "No hints in graded mode: feedback comes with your grade.", 0.0,
                     float(s.get("points", 1))))
        return
    s = full(exercise_id)
    level = min(LEVEL.get(exercise_id, 0) + 1, len(HINT_LEVELS))
    last = LEVEL.get(exercise_id, 0) >= len(HINT_LEVELS)
    LEVEL[exercise_id] = level
    message = f"Hint {level} of {len(HINT_LEVELS)} ({HINT_LEVELS[level - 1][1]}): {level_text(s, level)}"
    if last:
        message += " (That was the last hint; checking an answer names the mistake it finds.)"
    _show(Result(exercise_id, "hint", message, 0.0, float(s.get("points", 1))))


def _earlier_answer(exercise_id):
    """The learner's current answer to ``exercise_id``: its variable in the notebook's namespace (IPython),
    else the last answer checked in this session; ``NOT_GIVEN`` if neither."""
    variable = spec(exercise_id).get("variable")
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:  # pragma: no cover - IPython ships with the course
        shell = None
    if shell is not None and variable in getattr(shell, "user_ns", {}):
        return shell.user_ns[variable]
    return LAST.get(exercise_id, NOT_GIVEN)


def grade(exercise_id, answer) -> None:
    """Raise ``AssertionError`` unless the answer is correct (self-check; nbgrader uses ``grading.grade``)."""
    result = evaluate(exercise_id, answer)
    if not result.correct:
        raise AssertionError(str(result))


def notebook_chapter(namespace: dict) -> tuple[str | None, str]:
    """Which chapter a notebook's namespace belongs to, and why: (chapter or None, reason).

    The rule, in order: (1) the notebook's file name, ``NN_...ipynb`` (IPython's ``__session__``, VS
    Code's ``__vsc_ipynb_file__`` or Jupyter's ``JPY_SESSION_NAME``); (2) the chapter with the largest
    share of its exercise variables defined, then the most defined. A tie is no answer: ValueError
    naming ``chapter``. Variables shared by two chapters (``wrong_claim``) cannot move a chapter whose
    own are all defined.
    """
    numbers = chapters()
    for path in (namespace.get("__session__"), namespace.get("__vsc_ipynb_file__"),
                 os.environ.get("JPY_SESSION_NAME")):
        match = re.match(r"(\d\d)_", Path(path).name) if isinstance(path, str) and path else None
        if match and match.group(1) in numbers:
            return match.group(1), f"the notebook's name, {Path(path).name}"
    shares = {}
    for number in numbers:
        variables = [s["variable"] for s in _chapter(number).values() if s.get("variable")]
        defined = sum(v in namespace for v in variables)
        if defined:
            shares[number] = (defined / len(variables), defined)
    if not shares:
        return None, ("No exercise variable of any chapter is defined here: run the exercise cells first, "
                      "or name the chapter: check_all(globals(), chapter='NN').")
    best = max(shares.values())
    top = [n for n, share in shares.items() if share == best]
    if len(top) > 1:
        raise ValueError(f"chapter: the exercise variables of chapters {', '.join(top)} are equally defined "
                         f"here; name one, e.g. check_all(globals(), chapter={top[0]!r})")
    return top[0], f"{best[1]} of its {round(best[1] / best[0])} exercise variables defined here"


def check_all(namespace: dict, chapter=None) -> list[Result]:
    """Score the exercises of one chapter from a notebook's variables (pass ``globals()``).

    ``chapter`` ("00"): default the chapter this notebook belongs to (:func:`notebook_chapter`), so
    variables another chapter also uses are not scored twice. A choice exercise scores its first answer
    checked in this session. Free-text items are graded by hand and not scored. Prints one line per
    exercise and a total; returns the results.
    """
    if not isinstance(namespace, dict):
        raise ValueError("namespace must be a dict of variables, e.g. globals()")
    if chapter is None:
        chapter, why = notebook_chapter(namespace)
        if chapter is None:
            print(why)
            return []
        print(f"Chapter {chapter} (from {why}):")
    else:
        chapter = validate.choice("chapter", chapter, chapters())
    results = []
    for exercise_id, s in _chapter(chapter).items():
        if not s.get("variable") or s.get("kind") == "free_text":
            continue
        answer = namespace.get(s["variable"])
        if s.get("kind") == "choice" and exercise_id in FIRST_CHOICE and not graded():
            first = FIRST_CHOICE[exercise_id]
            result = evaluate(exercise_id, first)
            if not is_unanswered(answer) and str(answer).strip().lower() != first:
                result = Result(exercise_id, result.status,
                                f"scored on your first answer ({first.upper()}): {result.message}",
                                result.points, result.max_points)
            results.append(result)
            continue
        earlier = NOT_GIVEN
        if s.get("chain"):
            earlier = namespace.get(raw_spec(s["chain"]["from"])["variable"], NOT_GIVEN)
        results.append(evaluate(exercise_id, answer, earlier=earlier))
    for r in results:
        print(r)
    got = sum(r.points for r in results)
    total = sum(r.max_points for r in results)
    print(f"Score: {got:g} / {total:g}")
    return results
