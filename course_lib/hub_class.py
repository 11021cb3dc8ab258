"""A graded class on one machine's hub: what learners get, what only the instructor can read.

``make hub`` (``jupyter/hub/jupyterhub_config.py``) calls :func:`set_up` once, as root, before any learner's
server starts:

- **the learners' copy of the course** (:func:`graded_learner_copy`, the one place that says what a graded
  learner gets): the package with its exercises files stripped of sealed keys, ``course.toml``,
  ``pyproject.toml`` and ``notebooks/``; no ``solutions/``, no answer key. Learners' servers import
  ``course_lib`` from it (``PYTHONPATH``), not from the repository;
- **the instructor's files closed**: ``solutions/`` 0700 and the answer key 0600 in the repository, the
  repository's exercises files (sealed keys) 0640; :func:`close_course` does the same for an nbgrader
  course folder (0711, its parts 0700, the gradebook 0600);
- **private homes**: :func:`private_home` makes a learner's home 0700 on each spawn.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path



def graded_learner_copy(repo, target) -> Path:
    """Write ``target``: the learner's copy of the course for a graded class (no solutions/, no answer key,
    exercises files without their ``key`` and ``model_answer`` fields), readable by every user; returns
    ``target``. The key strip is :func:`course_lib.grading.strip_keys`' (the one the grading sandbox mounts).
    When ``python -m course_lib.grading strip`` makes the graded learner copy, this is the one call to change."""
    from . import grading

    repo, target = Path(repo).resolve(), Path(target).resolve()
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    ignore = shutil.ignore_patterns(*grading.LEFT_OUT, "answers.json", "solutions")
    for part in grading.LEARNER_PATHS:  # one list of what a graded learner's copy holds and leaves out
        source = repo / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=ignore)
        elif source.is_file():
            shutil.copy2(source, target / part)
    keyless = grading.strip_keys(target / ".keyless")
    for original, stripped in keyless.items():
        data = json.loads(stripped.read_text(encoding="utf-8"))
        for entry in data.values():  # a graded learner sees a model answer only with the released feedback
            entry.pop("model_answer", None)
        (target / original.relative_to(repo)).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                                          encoding="utf-8")
    shutil.rmtree(target / ".keyless")
    for folder, dirs, files in os.walk(target):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return target


def close_repository(repo) -> list[Path]:
    """Close what only the instructor may read in the repository: solutions/ (0700), the answer key (0600),
    the exercises files with their sealed keys (0640, group of the owner). Returns what was changed."""
    from . import grading

    repo = Path(repo)
    changed = []
    for path, mode in ((repo / "solutions", 0o700), (grading.key_path(), 0o600)):
        if path.exists():
            os.chmod(path, mode)
            changed.append(path)
    for path in sorted((repo / "course_lib" / "exercises").glob("*.json")):
        os.chmod(path, 0o640)
        changed.append(path)
    return changed


def close_course(course_dir) -> None:
    """An nbgrader course folder only the instructor reads: the folder 0711 (an exchange inside it stays
    reachable), its source, release, submitted, autograded, feedback and records 0700, the gradebook 0600."""
    course_dir = Path(course_dir)
    os.chmod(course_dir, 0o711)
    for name in ("source", "release", "submitted", "autograded", "feedback", "grading_record", "grading_kernel"):
        path = course_dir / name
        path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)
    for name in ("gradebook.db", "nbgrader_config.py", "grades.csv", "autograde.log"):
        path = course_dir / name
        if path.is_file():
            os.chmod(path, 0o600)


def private_home(home) -> None:
    """A learner's home 0700: another learner reads nothing of it."""
    mode = stat.S_IMODE(os.stat(home).st_mode)
    if mode & 0o077:
        os.chmod(home, 0o700)


def set_up(repo, state) -> Path:
    """The hub's graded class: the learners' copy under ``state/learner-course`` and the repository closed;
    returns the copy."""
    copy = graded_learner_copy(repo, Path(state) / "learner-course")
    close_repository(repo)
    return copy
