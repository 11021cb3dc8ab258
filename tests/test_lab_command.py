"""The README's first command, ``make lab``, serves the learner's copies on 127.0.0.1 with a token.

Runs the real command on a free port with ``WORK`` in a temporary folder (holding one edited
chapter), reads the URL it prints, fetches it, checks what the server's root holds, that the
edited copy survived, that the lab is quiet (no nbgrader warning, no news prompt), that the API
refuses a request without the token, and stops the server (its whole process group).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / ".venv" / ".installed-stamp"

NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def _venv_is_current() -> bool:
    """True when make would not reinstall the package (the test must not change an installed .venv)."""
    if shutil.which("make") is None or not STAMP.exists():
        return False
    return subprocess.run(["make", "-q", ".venv/.installed-stamp"], cwd=ROOT, capture_output=True).returncode == 0


pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("make") is None, reason="needs make")]
needs_current_venv = pytest.mark.skipif(
    not _venv_is_current(), reason="needs the .venv that `make test` builds, newer than pyproject.toml "
                                   "(run `make lab` once; this test does not reinstall)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_make(args, log, env) -> subprocess.Popen:
    """``make ARGS`` in a session of its own (so ``stop_group`` stops all it starts), output to ``log``."""
    with open(log, "wb") as out:
        return subprocess.Popen(["make", "--no-print-directory", *args], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def wait_for_url(proc, log, port) -> tuple[str, str]:
    """The lab URL with its token that the server logs (URL, token); fails with the log after 120 s."""
    pattern = re.compile(rf"http://127\.0\.0\.1:{port}/lab\S*\?token=([0-9a-f]+)")
    match, deadline = None, time.monotonic() + 120
    while match is None and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
        match = pattern.search(log.read_text(errors="replace"))
    assert match, f"make {proc.args[2]} printed no URL with a token:\n" + log.read_text(errors="replace")[-3000:]
    return match.group(0), match.group(1)


def stop_group(proc) -> None:
    """Stop ``proc``'s whole process group: SIGTERM, then SIGKILL to whatever of the group lingers after
    20 s. make itself exits at once; a server it started (a hub shutting down its users' servers after a
    failed test) can outlive it, so the group, not make, is waited for."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        proc.poll()  # reap make, so only the rest of its group answers below
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@needs_current_venv
def test_make_lab_serves_the_learners_copies_with_a_token(tmp_path):
    port = _free_port()
    log = tmp_path / "lab.log"
    work = tmp_path / "work"
    work.mkdir()
    edited = work / "01_pcie.ipynb"
    edited.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "edited": "mine"}')
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    proc = start_make(["lab", f"PORT={port}", f"WORK={work}"], log, env)
    try:
        url, token = wait_for_url(proc, log, port)
        assert f"/lab/tree/{NOTEBOOKS[0]}?" in url, url  # chapter 00, at the top of work/

        assert sorted(p.name for p in work.glob("*.ipynb")) == NOTEBOOKS
        assert "mine" in edited.read_text(), "make lab overwrote the learner's edited copy"
        assert (work / NOTEBOOKS[0]).read_bytes() == (ROOT / "notebooks" / NOTEBOOKS[0]).read_bytes()

        def get(path):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}?token={token}", timeout=30) as response:
                assert response.status == 200
                return response.read()

        page = get(url.split(f":{port}", 1)[1].split("?")[0]).decode()
        assert "JupyterLab" in page
        page_config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                                           page, re.DOTALL).group(1))
        assert "@jupyter/nbgrader" in page_config["disabledExtensions"], page_config["disabledExtensions"]
        served = {item["name"] for item in json.loads(get("/api/contents"))["content"]}
        assert served == set(NOTEBOOKS), "the learner's lab must serve work/ and nothing else"
        news = json.loads(get("/lab/api/settings/@jupyterlab/apputils-extension:notification"))
        defaults = {k: v.get("default") for k, v in news["schema"]["properties"].items()}
        assert defaults["fetchNews"] == "false" and defaults["checkForUpdates"] is False, defaults
        server_log = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("[")]
        assert not [line for line in server_log if "nbgrader" in line.lower()], "nbgrader is on in the learner's lab"

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents", timeout=30)
        assert refused.value.code == 403
    finally:
        stop_group(proc)


def _make(*args):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_reset_notebook_restores_one_chapter_and_keeps_the_old_copy(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "01_pcie.ipynb").write_text("mine")
    (work / "02_nvlink.ipynb").write_text("also mine")
    done = _make("reset-notebook", "NB=01_pcie", f"WORK={work}")
    assert done.returncode == 0, done.stderr
    assert (work / "01_pcie.ipynb").read_bytes() == (ROOT / "notebooks" / "01_pcie.ipynb").read_bytes()
    assert (work / "01_pcie.ipynb.bak").read_text() == "mine"
    assert (work / "02_nvlink.ipynb").read_text() == "also mine"
    (work / "01_pcie.ipynb").write_text("mine, second try")
    for _ in range(2):  # every reset keeps a backup of its own: .bak, then .bak.1, .bak.2
        assert _make("reset-notebook", "NB=01_pcie", f"WORK={work}").returncode == 0
    assert (work / "01_pcie.ipynb.bak").read_text() == "mine"
    assert (work / "01_pcie.ipynb.bak.1").read_text() == "mine, second try"
    assert (work / "01_pcie.ipynb.bak.2").read_bytes() == (ROOT / "notebooks" / "01_pcie.ipynb").read_bytes()
    before = {p: p.stat().st_mtime_ns for p in (ROOT / "solutions").glob("*.ipynb")}
    for bad in ([], ["NB=99_nothing"], ["NB=../solutions/00_why_communication"], ["NB=01_pcie 02_nvlink"],
                ["NB=%"], ["NB=x';touch pwned;'"]):
        refused = _make("reset-notebook", *bad, f"WORK={work}")
        assert refused.returncode == 2
        shown = "error: NB must be one of the chapters in course.toml: 00_why_communication"
        assert refused.stderr.startswith(shown), refused.stderr
    assert {p: p.stat().st_mtime_ns for p in (ROOT / "solutions").glob("*.ipynb")} == before
    assert not (ROOT / "pwned").exists() and not (ROOT / "solutions" / "00_why_communication.ipynb.bak").exists()


def test_lab_instructor_serves_the_whole_repository():
    dry = _make("-n", "lab-instructor")
    assert dry.returncode == 0, dry.stderr
    assert f"--ServerApp.root_dir={ROOT} " in dry.stdout.replace("\\\n", " ")
    assert "jpserver_extensions" not in dry.stdout  # nbgrader stays on for instructors
