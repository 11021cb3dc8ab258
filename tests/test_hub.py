"""``make hub``: a real JupyterHub on 127.0.0.1, real system users, each served the learner's lab.

Needs root (each learner's server runs as their own account), ``useradd``/``userdel`` and JupyterHub
(the ``hub`` extra); skips with the reason otherwise. The test creates two throwaway accounts, starts
the real target on a free port with its state in a temporary folder and an API token, and drives the
hub's REST API: it starts each learner's server, checks what the lab serves (their ~/work copies, the
learner's settings with nbgrader's Assignments tab on and Formgrader off, the lab budget in its
environment), that an edited copy survives a restart of the server, and that nothing answers without a token. The hub (its whole process group), the accounts, their
homes and every process they ran are removed even on failure.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import urllib.error
from pathlib import Path

import pytest

from course_lib.lab import budget
from tests import hub_harness
from tests.hub_harness import pwd_uid, server_environ
from tests.test_lab_command import NOTEBOOKS, ROOT

pytestmark = pytest.mark.slow  # skips where the hub cannot run (hub_harness.HubUnavailable: not root ...)


@contextlib.contextmanager
def class_on_hub(tmp_path, learners, **env_extra):
    """``hub_harness.class_on_hub``, skipping where the hub cannot run."""
    try:
        with hub_harness.class_on_hub(tmp_path, learners, **env_extra) as got:
            yield got
    except hub_harness.HubUnavailable as exc:
        pytest.skip(str(exc))


def test_make_hub_serves_each_learner_their_own_lab(tmp_path):
    with class_on_hub(tmp_path, 2, COURSE_LAB_RANKS_PER_SERVER="6", COURSE_HUB_MODE="self-study") as (
            hub, users, homes, state):
        assert (state / "jupyterhub_cookie_secret").stat().st_mode & 0o077 == 0  # generated, private

        # a learner edited a copy before the hub existed: it must survive
        learner = users[0]
        work = homes / learner / "work"
        work.mkdir()
        (work / NOTEBOOKS[1]).write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "mine": 1}')
        for path in (work, work / NOTEBOOKS[1]):
            os.chown(path, pwd_uid(learner), -1)
        for user in users:
            hub.start(user)
        for user in users:
            status, listing = hub.api("GET", f"/user/{user}/api/contents")
            assert status == 200 and {item["name"] for item in listing["content"]} == set(NOTEBOOKS), listing
            owner = {(homes / user / "work" / name).stat().st_uid for name in NOTEBOOKS}
            assert owner == {pwd_uid(user)}, "the copies must belong to the learner"
        assert '"mine": 1' in (work / NOTEBOOKS[1]).read_text(), "the first spawn overwrote the learner's copy"
        assert (work / NOTEBOOKS[0]).read_bytes() == (ROOT / "notebooks" / NOTEBOOKS[0]).read_bytes()

        # the server is the learner's lab (same flags as make lab) with the lab budget set by the hub
        page = hub.api("GET", f"/user/{learner}/lab")[1].decode()
        config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                                      page, re.S).group(1))
        disabled = set(config["disabledExtensions"])
        # nbgrader's instructor plugins are off; its Assignments tab (the assignment-list plugin) is on
        assert {f"@jupyter/nbgrader:{p}" for p in ("formgrader", "create-assignment", "course-list")} <= disabled
        assert "@jupyter/nbgrader" not in disabled and "@jupyter/nbgrader:assignment-list" not in disabled
        with pytest.raises(urllib.error.HTTPError) as missing:
            hub.api("GET", f"/user/{learner}/formgrader/api/assignments")
        assert missing.value.code == 404, "Formgrader's server extension must be off in a learner's lab"
        assert hub.api("GET", f"/user/{learner}/assignments?course_id=")[0] == 200  # the Assignments tab's API
        environ = server_environ(learner)
        assert environ[budget.DIR_ENV] == str(state / "lab-budget")
        assert environ[budget.SERVER_ENV] == "6"
        assert os.stat(state / "lab-budget").st_mode & 0o7777 == 0o1777

        # an edit made in the lab survives a restart of the server
        (work / NOTEBOOKS[0]).write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "x": 2}')
        hub.stop(learner)
        hub.start(learner)
        assert '"x": 2' in (work / NOTEBOOKS[0]).read_text()

        with pytest.raises(urllib.error.HTTPError) as refused:
            hub.api("GET", f"/user/{learner}/api/contents", token=False)
        assert refused.value.code in (302, 403), refused.value.code
        with pytest.raises(urllib.error.HTTPError) as refused:
            hub.api("GET", "/hub/api/users", token=False)
        assert refused.value.code == 403


def _as_learner(user, *args, cwd):
    """Run ``args`` as ``user`` with their lab's own environment and interpreter, as their lab's terminal would."""
    env = server_environ(user)
    python = env["_COURSE_TEST_PYTHON"]
    done = subprocess.run([python, *args], user=user, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{user}: {' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_exchange_end_to_end_one_instructor_three_learners(tmp_path, monkeypatch):
    """release, fetch, submit, collect, autograde, a manual score, feedback: real hub, accounts, exchange."""
    import nbformat
    from nbgrader.api import Gradebook

    from course_lib import instructor
    from tests.test_instructor import CHAPTER, TAMPER, _answered

    transcript = []

    def say(line):
        transcript.append(line)
        print(line)

    with class_on_hub(tmp_path, 3) as (hub, users, homes, state):
        exchange = state / "exchange"
        monkeypatch.setenv(instructor.EXCHANGE_ENV, str(exchange))
        course = instructor.init_course(tmp_path / "course", [CHAPTER])
        instructor.nbgrader(course, "release_assignment", CHAPTER)
        say(f"instructor: release_assignment {CHAPTER} -> {sorted(p.name for p in (exchange / instructor.COURSE_ID / 'outbound').iterdir())}")
        release = course / "release" / CHAPTER / f"{CHAPTER}.ipynb"
        solution = instructor.SOLUTIONS / f"{CHAPTER}.ipynb"
        kinds = dict(zip(users, ("correct", "blank", "tampered")))
        for user in users:
            hub.start(user)
            work = homes / user / "work"
            _as_learner(user, "-m", "nbgrader", "fetch_assignment", CHAPTER, cwd=work)
            fetched = work / CHAPTER / f"{CHAPTER}.ipynb"
            assert fetched.stat().st_uid == pwd_uid(user)
            if kinds[user] == "correct":
                nbformat.write(_answered(release, solution), fetched)
            elif kinds[user] == "tampered":
                nb = nbformat.read(fetched, as_version=4)
                for cell in nb.cells:
                    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                    if grade_id in TAMPER["monkeypatched"]:
                        cell.source = TAMPER["monkeypatched"][grade_id]
                nbformat.write(nb, fetched)
            _as_learner(user, "-m", "nbgrader", "submit", CHAPTER, cwd=work)
            say(f"{user} ({kinds[user]}): fetch_assignment, submit")
        instructor.nbgrader(course, "collect", CHAPTER)
        say(f"instructor: collect -> {sorted(p.name for p in (course / 'submitted').iterdir())}")
        problems = instructor.autograde(course, CHAPTER)
        say("instructor: autograde; flagged: " + "; ".join(str(p) for p in problems))
        db = f"sqlite:///{course / 'gradebook.db'}"
        with Gradebook(db) as book:
            scores = {user: book.find_submission(CHAPTER, user).score for user in users}
            total = book.find_assignment(CHAPTER).max_score
            # a manual score, as Formgrader's grade form saves it: the instructor gives the blank
            # learner 1 point by hand on their first graded cell
            grade = sorted(book.find_submission_notebook(CHAPTER, CHAPTER, users[1]).grades, key=lambda g: g.name)[0]
            grade.manual_score = 1
            book.db.commit()
            manual, manual_cell = book.find_submission(CHAPTER, users[1]).score, grade.name
        say("scores: " + ", ".join(f"{kinds[u]} {scores[u]:g}/{total:g}" for u in users)
            + f"; blank after a manual point on {manual_cell}: {manual:g}")
        assert scores[users[0]] == total and scores[users[1]] == 0 and scores[users[2]] == 0
        assert manual == 1
        instructor.nbgrader(course, "generate_feedback", CHAPTER)
        instructor.nbgrader(course, "release_feedback", CHAPTER)
        for user in users:
            work = homes / user / "work"
            _as_learner(user, "-m", "nbgrader", "fetch_feedback", CHAPTER, cwd=work)
            pages = list((work / CHAPTER / "feedback").glob(f"*/{CHAPTER}.html"))
            assert len(pages) == 1 and pages[0].stat().st_uid == pwd_uid(user), pages
            text = pages[0].read_text(errors="replace")
            want = {"correct": total, "blank": 1, "tampered": 0}[kinds[user]]
            assert f"Score: {want:g}" in text or f"{want:g} / {total:g}" in text or f"{want:.1f} / {total:.1f}" in text, \
                text[:3000]
            say(f"{user} ({kinds[user]}): fetch_feedback -> {pages[0].relative_to(homes)} (score {want:g} of {total:g})")
    (Path(ROOT) / "artifacts").mkdir(exist_ok=True)
    (Path(ROOT) / "artifacts" / "hub_exchange_transcript.txt").write_text("\n".join(transcript) + "\n")
