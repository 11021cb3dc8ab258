"""Grading that trusts neither the student's namespace nor the installed answer data.

nbgrader's hidden tests call, in the student's kernel::

    import importlib, course_lib.grading
    importlib.reload(course_lib.grading).grade("01.1", gen5_x16_gb_s)

``reload`` re-runs this module from its file, so a submission that rebinds ``grade`` here is
undone; ``grade`` then judges with a **fresh copy** of ``checks`` (and of a code exercise's
checker) loaded from the package's files, not the modules the student's cells could have patched,
and against the **instructor's answer key**, not the package's sealed keys. An answer counts only
as what it is: a real int/float (or numeric str) for a number, a real str for a choice, converted
with the base types' own methods, so an object whose ``__eq__`` or ``__float__`` lies scores nothing.

The key is ``solutions/answers.json`` in the instructor's repository (or the file named by
``COURSE_LIB_ANSWER_KEY``): ``{"01.1": <number>, "00.3": "<letter>", "08.5": {"model": "08.5", "recorded": <number>}}``.
Model answers (each chapter's ``MODELS`` in :mod:`course_lib.exercises`) are computed from the library when
graded (once per process); ``recorded`` is what the
sealed self-check key was made from, and a test fails when the library moves one
(``python -m course_lib.grading seal`` re-seals after a deliberate change). A model whose input is
itself part of the answer reads that input from its key entry, never from the package: 09.8's
reference system file is ``{"model": "09.8", "system_toml": "<TOML text>", "recorded": <number>}``.

A chained exercise (``"chain": {"from": "00.1", "key": ...}``) is proportional to the one it builds on;
``seal`` writes the sealed ratio of their answers into ``chain.key``, so the self-check can tell a later
answer that follows from a wrong earlier one without holding either answer.

Exercises files are the ones ``course.toml`` names (:mod:`course_lib.manifest`); grading reads that
manifest with a fresh copy of ``manifest`` too, so a patched chapter list cannot swap an exercise's spec.
"""
from __future__ import annotations

import importlib.util
import json
import os
import secrets
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
KEY_ENV = "COURSE_LIB_ANSWER_KEY"


def key_path() -> Path:
    """Where the instructor's answer key is: ``$COURSE_LIB_ANSWER_KEY`` or ``solutions/answers.json``."""
    return Path(os.environ.get(KEY_ENV) or ROOT / "solutions" / "answers.json")


def answer_key() -> dict:
    """The instructor's answer key, id -> value or {"model": id, "recorded": value}."""
    path = key_path()
    if not path.is_file():
        raise ValueError(f"the answer key {path} is not here: it lives with the instructor's copy of the "
                         f"course (solutions/answers.json); set {KEY_ENV} to its path")
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- model answers

def expected(exercise_id: str):
    """The authoritative answer of one exercise (a model answer is computed now, from the library)."""
    key = answer_key()
    if exercise_id not in key:
        raise ValueError(f"exercise_id {exercise_id!r} has no entry in the answer key {key_path()}")
    entry = key[exercise_id]
    if isinstance(entry, dict) and "model" in entry:
        from . import exercises
        return exercises.model(entry["model"])(entry)
    return entry


def model_answer(exercise_id: str) -> str:
    """A written exercise's model answer, for the instructor's solution notebooks. It needs the answer
    key (the instructor's copy): a student's kernel gets it only from ``checks.check`` after an attempt."""
    answer_key()  # ValueError where the instructor's key is not
    return _fresh_modules()["exercises.specs"].written(exercise_id)["model_answer"]


# ---------------------------------------------------------------- fresh modules

def _fresh(module: str):
    """A new copy of ``course_lib.<module>`` executed from its file (sys.modules is not consulted)."""
    path = PACKAGE.joinpath(*module.split(".")).with_suffix(".py")
    parent, _, leaf = f"course_lib.{module}".rpartition(".")
    name = f"{parent}._fresh_{leaf}_{secrets.token_hex(4)}"  # relative imports resolve in the same package
    spec = importlib.util.spec_from_file_location(name, path)
    fresh = importlib.util.module_from_spec(spec)
    sys.modules[name] = fresh  # dataclasses look their module up while the class is made
    try:
        spec.loader.exec_module(fresh)
    finally:
        sys.modules.pop(name, None)
    return fresh


# The judging modules of course_lib.exercises, in import order: each fresh copy is put in sys.modules
# under its own name while the next is loaded, so ``from .keys import ...`` binds the fresh copy.
JUDGING = ("manifest", "exercises.keys", "exercises.result", "exercises.session", "exercises.specs",
           "exercises.mistakes", "exercises.chains", "exercises.numbers", "exercises.choices", "exercises.code",
           "exercises.free_text", "exercises.judge", "checks")


def _fresh_modules() -> dict:
    """Fresh copies of every judging module (``JUDGING``), the chapter list a fresh ``manifest`` (course.toml
    read from its file): nothing a learner's cells patched reaches them. Module name -> fresh module."""
    saved, fresh = {}, {}
    try:
        for module in JUDGING:
            name = f"course_lib.{module}"
            saved[name] = sys.modules.get(name)
            fresh[module] = sys.modules[name] = _fresh(module)
        fresh["exercises.specs"].manifest = fresh["manifest"]
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return fresh


def _fresh_checks():
    """A fresh ``checks`` (:func:`_fresh_modules`)."""
    return _fresh_modules()["checks"]


def evaluate(exercise_id: str, answer):
    """A fresh ``checks`` judges ``answer`` against the instructor's key; returns its ``Result``."""
    checks = _fresh_checks()
    s = checks.spec(exercise_id)
    kind = s.get("kind", "number")
    if kind == "callable":
        module, _, name = s["checker"].partition(":")
        checker = getattr(_fresh(module.removeprefix("course_lib.")), name)
        points = float(s.get("points", 1))
        if checks.is_unanswered(answer):
            return checks.Result(exercise_id, "not answered", checks.NOT_ANSWERED, 0.0, points)
        if not callable(answer):
            return checks.Result(exercise_id, "wrong", "Expected a function.", 0.0, points)
        try:
            ok, message = checker(answer)
        except NotImplementedError:
            return checks.Result(exercise_id, "not answered", checks.NOT_ANSWERED, 0.0, points)
        return checks.Result(exercise_id, "correct" if ok is True else "wrong", str(message),
                             points if ok is True else 0.0, points)
    if kind == "free_text":
        raise ValueError(f"exercise {exercise_id} is free text: it is graded by hand (nbgrader's formgrader)")
    return checks.evaluate(exercise_id, answer, key=checks.PlainKey(expected(exercise_id)))


def grade(exercise_id: str, answer) -> None:
    """Raise ``AssertionError`` unless ``answer`` is correct (nbgrader's hidden tests call this)."""
    result = evaluate(exercise_id, answer)
    if result.status != "correct":
        raise AssertionError(str(result))


# ---------------------------------------------------------------- judged outside the learner's kernel

# A graded cell of an autograded course prints its answer on one line that starts with this tag; the
# instructor's process reads the line from the executed notebook and judges it (:func:`judge_reported`).
# A kernel the learner controls can print anything, so the line is only ever an answer, never a verdict.
ANSWER_TAG = "course_lib-answer: "


def _plain(answer):
    """``answer`` as JSON: a real str/int/float by the base types' own methods; any other real number (Decimal,
    Fraction, a numpy scalar such as np.longdouble, a 0-d array or tensor) as the self-check reads it."""
    if answer is None or answer is Ellipsis:
        return None
    if isinstance(answer, bool):
        return int.__int__(answer)
    if isinstance(answer, str):
        return str.__str__(answer)
    if isinstance(answer, int):
        return int.__int__(answer)
    if isinstance(answer, float):
        return float.__float__(answer)
    try:  # one rule for what a real number is: the self-check's (Decimal, Fraction, numpy, 0-d tensors)
        return _fresh("exercises.numbers").as_number(answer)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return {"unsupported": type(answer).__name__}


def report(exercise_id: str, answer) -> None:
    """Print one answer for the grader outside the kernel (an autograded notebook's hidden test calls this)."""
    print(ANSWER_TAG + json.dumps({"id": str(exercise_id), "answer": _plain(answer)}), flush=True)


def reported(text: str, exercise_id: str) -> list:
    """The answers that ``text`` (a cell's printed output) reports for ``exercise_id``, in order."""
    found = []
    for line in text.splitlines():
        if not line.startswith(ANSWER_TAG):
            continue
        try:
            entry = json.loads(line[len(ANSWER_TAG):])
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("id") == exercise_id:
            found.append(entry.get("answer"))
    return found


def judge_reported(exercise_id: str, text: str):
    """Judge the one answer ``text`` reports for ``exercise_id``: ``(points, max_points, detail)``.

    No answer line (the cell failed or printed none) or more than one (a guess per choice) scores 0.
    """
    checks = _fresh_checks()
    max_points = float(checks.spec(exercise_id).get("points", 1))
    answers = reported(text, exercise_id)
    if not answers:
        return 0.0, max_points, "no answer reported (the cell failed or was not run)"
    if len(answers) > 1:
        return 0.0, max_points, f"{len(answers)} answers reported for one item: none counts"
    answer = answers[0]
    if isinstance(answer, dict) or isinstance(answer, list):
        return 0.0, max_points, "the answer is not a number or a text"
    result = evaluate(exercise_id, answer)
    return float(result.points), max_points, result.status


def _keyless(entry: dict) -> dict:
    """An exercise entry without its sealed key (and a chain's sealed ratio) or any feedback field."""
    entry = {k: v for k, v in entry.items() if k != "key" and k not in _FEEDBACK_FIELDS}
    if isinstance(entry.get("chain"), dict):
        entry["chain"] = {k: v for k, v in entry["chain"].items() if k != "key"}
    return entry


_FEEDBACK_FIELDS = ("concept", "formula", "steps", "hints", "choice_hints", "rubric", "model_answer")


def strip_keys(folder) -> dict:
    """Write each exercises file without its sealed keys into ``folder`` (a graded release's exercises).

    A learner whose package holds the sealed keys can recover every number and choice answer by hashing
    the small answer space; a package installed with these files holds none (its checks say "recorded").
    Returns the package's file -> its copy without keys.
    """
    from . import manifest

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for chapter in manifest.chapters():
        if not chapter.exercises:
            continue
        data = json.loads(chapter.exercises_path.read_text(encoding="utf-8"))
        target = folder / chapter.exercises_path.name
        target.write_text(json.dumps({i: _keyless(e) for i, e in data.items()}, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        written[chapter.exercises_path] = target
    return written


# What a graded learner's copy of the course holds (paths from the repository root), and what it leaves out
# inside them: the answer models (exercises/answers_chNN.py) and build leftovers. solutions/ (the answer key,
# the feedback with its hints and model answers, the solution notebooks), tests/ and scripts/ are not copied.
LEARNER_PATHS = ("course_lib", "notebooks", "README.md", "course.toml", "pyproject.toml", "environment.yml")
LEFT_OUT = ("answers_ch[0-9][0-9].py", "__pycache__", "*.pyc", "*.egg-info")


def learner_copy(folder) -> list[str]:
    """Write a graded learner's copy of the course into ``folder`` (new or empty): :data:`LEARNER_PATHS`
    without :data:`LEFT_OUT`, its exercises files without sealed keys (:func:`strip_keys`). Its checks
    record answers and show no hint, rubric or model answer; the instructor's grader judges them.
    Returns the files written, relative to ``folder``, sorted."""
    import shutil

    from . import manifest

    folder = Path(folder).resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"folder {folder} must be a new or empty folder for the learner's copy")
    if folder.is_relative_to(ROOT):
        raise ValueError(f"folder {folder} is inside the course ({ROOT}): put the learner's copy elsewhere")
    folder.mkdir(parents=True, exist_ok=True)
    for name in LEARNER_PATHS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns(*LEFT_OUT))
        elif source.is_file():
            shutil.copy2(source, folder / name)
    for chapter in manifest.chapters():
        if chapter.exercises:
            path = chapter.exercises_path
            data = json.loads(path.read_text(encoding="utf-8"))
            target = folder / path.relative_to(ROOT)
            target.write_text(json.dumps({i: _keyless(e) for i, e in data.items()}, indent=1, ensure_ascii=False)
                              + "\n", encoding="utf-8")
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------- sealing

def seal_all(write: bool = True, manifest_path=None) -> list[str]:
    """Write each exercise's sealed self-check key from the answer key (model answers computed now).

    The exercises files are those the manifest names (``manifest_path``, default the course's
    course.toml). Returns the ids whose key changed. Salts are kept when the answer still matches its key.
    """
    from . import manifest

    checks = _fresh("checks")
    key = answer_key()
    changed = []
    for chapter in manifest.chapters(manifest_path):
        if not chapter.exercises:
            continue
        path = chapter.exercises_path
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        for exercise_id, s in data.items():
            if s.get("kind", "number") not in ("number", "choice"):
                continue
            value = expected(exercise_id)
            if isinstance(key[exercise_id], dict):
                key[exercise_id]["recorded"] = value
            if s.get("chain") and _reseal(checks, s["chain"], value / expected(s["chain"]["from"])):
                changed.append(f"{exercise_id} (chain)")
            if _reseal(checks, s, value):
                changed.append(exercise_id)
        if write:
            path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if write:
        key_path().write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
    return changed


def _reseal(checks, holder: dict, value) -> bool:
    """Seal ``value`` into ``holder["key"]`` unless its key already holds it (the salt is kept then)."""
    old = holder.get("key")
    if old and _matches(checks, old, value):
        return False
    holder["key"] = checks.seal(value, secrets.token_hex(8))
    return True


def _matches(checks, sealed: dict, value) -> bool:
    if isinstance(value, str):
        return checks.SealedKey(sealed).is_choice(value.strip().lower())
    return checks.seal(value, sealed["salt"]) == sealed


def _strip(args) -> int:
    if not args.folder:
        raise ValueError("folder is required for strip: where to write the learner's copy of the course")
    files = learner_copy(args.folder)
    print(f"wrote a graded learner's copy of the course to {Path(args.folder).resolve()}: {len(files)} files, "
          "no solutions/, no sealed keys, no answer models")
    return 0


def _seal(args) -> int:
    for exercise_id in seal_all():
        print(f"sealed {exercise_id}")
    return 0


def main(argv=None) -> int:
    """Command line; bad input is one line ``error: ...`` with status 2 (the course's one error path)."""
    from . import cli

    parser = cli.ArgumentParser(prog="python -m course_lib.grading", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["seal", "strip"],
                        help="seal: rewrite the self-check keys from the answer key; strip: write a graded "
                             "learner's copy of the course into FOLDER (no solutions/, keys or answer models)")
    parser.add_argument("folder", nargs="?", help="strip: the folder to write")
    parser.set_defaults(func=lambda args: _seal(args) if args.command == "seal" else _strip(args))
    return cli.run(parser, argv)


if __name__ == "__main__":
    from .cli import exit_with

    exit_with(main)
