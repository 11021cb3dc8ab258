"""The README's first command, ``make lab``, serves the course on 127.0.0.1 with a token.

Runs the real command on a free port, reads the URL it prints, fetches it, checks that the
API refuses a request without the token, and stops the server (its whole process group).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / ".venv" / ".installed-stamp"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("make") is None or not STAMP.exists(),
                       reason="needs make and the .venv that `make test` builds"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_make_lab_serves_the_course_with_a_token(tmp_path):
    port = _free_port()
    log = tmp_path / "lab.log"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    with open(log, "wb") as out:
        proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"PORT={port}"], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        pattern = re.compile(rf"http://127\.0\.0\.1:{port}/lab\S*\?token=[0-9a-f]+")
        url, deadline = None, time.monotonic() + 120
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            match = pattern.search(log.read_text(errors="replace"))
            url = match.group(0) if match else None
        assert url, "make lab printed no URL with a token:\n" + log.read_text(errors="replace")[-3000:]
        assert "notebooks/00_why_communication.ipynb" in url
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
            assert b"JupyterLab" in response.read()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents", timeout=30)
        assert refused.value.code == 403
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
