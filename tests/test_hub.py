"""``make hub``: a real JupyterHub on 127.0.0.1, real system users, each served the learner's lab.

Needs root (each learner's server runs as their own account), ``useradd``/``userdel`` and JupyterHub
(the ``hub`` extra); skips with the reason otherwise. The test creates two throwaway accounts, starts
the real target on a free port with its state in a temporary folder and an API token, and drives the
hub's REST API: it starts each learner's server, checks what the lab serves (their ~/work copies, the
learner's settings, the lab budget in its environment), that an edited copy survives a restart of the
server, and that nothing answers without a token. The hub (its whole process group), the accounts, their
homes and every process they ran are removed even on failure.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from course_lib.lab import budget
from tests.test_lab_command import NOTEBOOKS, ROOT, _free_port, start_make, stop_group

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="make hub runs each learner as their own account: needs root"),
    pytest.mark.skipif(shutil.which("useradd") is None or shutil.which("make") is None,
                       reason="needs useradd and make"),
    pytest.mark.skipif(shutil.which(str(ROOT / ".venv" / "bin" / "jupyterhub")) is None,
                       reason="needs JupyterHub in .venv (pip install -e '.[hub]', or make hub once)"),
]


def _processes_of(uid) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    out.append(int(entry))
            except OSError:
                pass
    return out


class Hub:
    def __init__(self, port, token):
        self.base, self.token = f"http://127.0.0.1:{port}", token

    def api(self, method, path, body=None, token=True, timeout=60):
        request = urllib.request.Request(self.base + path, method=method,
                                         data=None if body is None else json.dumps(body).encode())
        if token:
            request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read()
            return response.status, (json.loads(text) if text and text.strip()[:1] in (b"{", b"[") else text)

    def wait_ready(self, user, deadline_s=240):
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            model = self.api("GET", f"/hub/api/users/{user}")[1]
            server = model.get("servers", {}).get("", {})
            if server.get("ready"):
                return server
            time.sleep(1)
        raise AssertionError(f"{user}'s server was not ready in {deadline_s} s: {model}")

    def start(self, user):
        status = self.api("POST", f"/hub/api/users/{user}/server")[0]
        assert status in (201, 202), status
        return self.wait_ready(user)

    def stop(self, user):
        self.api("DELETE", f"/hub/api/users/{user}/server")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.api("GET", f"/hub/api/users/{user}")[1].get("servers"):
            time.sleep(0.5)


@contextlib.contextmanager
def class_on_hub(tmp_path, learners, **env_extra):
    """``make hub`` running with ``learners`` throwaway accounts: yields (hub, users, homes, state). On
    leaving (even on failure) the hub's process group is stopped, every process of the accounts killed,
    the accounts and their homes removed; then it checks that none of their processes is left."""
    tag = secrets.token_hex(3)
    users = [f"chub{tag}{k}" for k in range(learners)]
    homes = Path(tempfile.mkdtemp(prefix="course-hub-homes-"))  # pytest's own tmp is private to root
    os.chmod(homes, 0o755)
    token = secrets.token_hex(16)
    port = _free_port()
    state = homes / "hub-state"  # learners must reach its lab budget and exchange folders
    log = tmp_path / "hub.log"
    proc, made = None, {}
    try:
        for user in users:
            subprocess.run(["useradd", "-m", "-d", str(homes / user), "-s", "/bin/sh", user], check=True,
                           capture_output=True)
            made[user] = pwd_uid(user)
        env = dict(os.environ, COURSE_HUB_API_TOKEN=token, COURSE_HUB_USERS=",".join(users), **env_extra)
        env.update(_learner_python(homes))
        proc = start_make(["hub", f"HUB_PORT={port}", f"HUB_DIR={state}"], log, env)
        hub = Hub(port, token)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if hub.api("GET", "/hub/api/", token=False, timeout=5)[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, "make hub ended:\n" + log.read_text(errors="replace")[-3000:]
                time.sleep(0.5)
        else:
            raise AssertionError("the hub did not answer:\n" + log.read_text(errors="replace")[-3000:])
        yield hub, users, homes, state
        for user in users:
            hub.stop(user)
    finally:
        if proc is not None:
            stop_group(proc)
            print(log.read_text(errors="replace")[-6000:])  # shown when the test fails
        for user, uid in made.items():
            for pid in _processes_of(uid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
            subprocess.run(["userdel", "-r", "-f", user], capture_output=True)
        shutil.rmtree(homes, ignore_errors=True)
    time.sleep(0.5)
    assert [pid for uid in made.values() for pid in _processes_of(uid)] == []
    assert not homes.exists() and all(pwd_uid_or_none(user) is None for user in made)


def test_make_hub_serves_each_learner_their_own_lab(tmp_path):
    with class_on_hub(tmp_path, 2, COURSE_LAB_RANKS_PER_SERVER="6") as (hub, users, homes, state):
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
        assert "@jupyter/nbgrader" in page, "nbgrader's instructor extensions must be off in a learner's lab"
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


def server_environ(user) -> dict:
    """The environment of ``user``'s running single-user server (read from /proc as root)."""
    pid = next(pid for pid in _processes_of(pwd_uid(user))
               if b"jupyterhub.singleuser" in open(f"/proc/{pid}/cmdline", "rb").read())
    raw = open(f"/proc/{pid}/environ", "rb").read().decode()
    environ = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    environ["_COURSE_TEST_PYTHON"] = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0].decode()
    return environ


def _learner_python(folder) -> dict:
    """``COURSE_HUB_PYTHON`` for the hub when the learners cannot run .venv's interpreter (it lives under
    /root, as pyenv puts it): a venv of the system's Python of the same version that adds .venv's
    packages (a .pth line), so their servers see what ``make lab`` sees. Skips when there is none."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    real = Path(os.path.realpath(venv_python))
    if all(os.stat(p).st_mode & 0o001 for p in [real, *real.parents]):
        return {}
    version = subprocess.run([str(venv_python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    system = shutil.which(f"python{version}", path="/usr/bin:/usr/local/bin")
    if system is None:
        pytest.skip(f".venv's Python ({real}) is not runnable by other users and there is no /usr/bin/python{version}")
    bridge = Path(folder) / "learner-venv"
    subprocess.run([system, "-m", "venv", "--without-pip", str(bridge)], check=True, capture_output=True)
    site = next((ROOT / ".venv" / "lib").glob("python*/site-packages"))
    mine = next((bridge / "lib").glob("python*/site-packages"))
    (mine / "course_venv.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n")
    return {"COURSE_HUB_PYTHON": str(bridge / "bin" / "python")}


def pwd_uid(user) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid


def pwd_uid_or_none(user):
    try:
        return pwd_uid(user)
    except KeyError:
        return None


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
