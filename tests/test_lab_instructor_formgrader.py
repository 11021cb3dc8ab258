"""``make lab-instructor`` opens Formgrader on the course with no configuration by hand.

Before, the course's ``nbgrader_config.py`` sat in ``course/`` while the server started in the
repository, so Formgrader found no course ("No data available"). The test makes a one-chapter course
inside the repository (Formgrader wants it under the server's root), starts the real target on a
free port with that ``COURSE``, and asks Formgrader's API for the assignments and the exchange; the
server (its whole process group) and the course folder are removed even on failure.
"""
from __future__ import annotations

import json
import os
import shutil
import urllib.request

import pytest

from course_lib import instructor
from tests.test_lab_command import ROOT, _free_port, needs_current_venv, start_make, stop_group, wait_for_url

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("make") is None, reason="needs make")]
CHAPTER = "00_why_communication"


def test_init_writes_an_exchange_that_every_user_can_write(tmp_path, monkeypatch):
    monkeypatch.delenv(instructor.EXCHANGE_ENV, raising=False)
    course = instructor.init_course(tmp_path / "course", [CHAPTER], release=False)
    config = (course / "nbgrader_config.py").read_text()
    exchange = course / "exchange"
    assert f'c.Exchange.root = {str(exchange)!r}' in config
    assert exchange.is_dir() and exchange.stat().st_mode & 0o7777 == 0o1777
    shared = tmp_path / "srv" / "exchange"
    monkeypatch.setenv(instructor.EXCHANGE_ENV, str(shared))
    instructor.init_course(tmp_path / "course2", [CHAPTER], release=False)
    assert f'c.Exchange.root = {str(shared)!r}' in (tmp_path / "course2" / "nbgrader_config.py").read_text()
    assert shared.stat().st_mode & 0o7777 == 0o1777


@needs_current_venv
def test_make_lab_instructor_opens_formgrader_on_the_course(tmp_path):
    course = ROOT / "artifacts" / f"formgrader-test-{os.getpid()}"
    port = _free_port()
    log = tmp_path / "lab.log"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    env.pop("JUPYTER_CONFIG_PATH", None)
    proc = None
    try:
        instructor.init_course(course, [CHAPTER])
        proc = start_make(["lab-instructor", f"PORT={port}", f"COURSE={course.relative_to(ROOT)}"], log, env)
        token = wait_for_url(proc, log, port)[1]

        def get(path):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}?token={token}", timeout=60) as response:
                assert response.status == 200
                return response.read()

        assignments = json.loads(get("/formgrader/api/assignments"))
        assert [a["name"] for a in assignments] == [CHAPTER], assignments
        assert assignments[0]["source_path"] == f"source/{CHAPTER}" and assignments[0]["num_submissions"] == 0
        page = get("/formgrader").decode()
        assert "nbgrader_bad_setup" not in page and "not a subdirectory" not in page
        server_log = log.read_text(errors="replace")
        assert "No nbgrader_config.py" not in server_log and "not a subdirectory" not in server_log, server_log[-3000:]
        assert (course / "exchange").is_dir()
    finally:
        if proc is not None:
            stop_group(proc)
        shutil.rmtree(course, ignore_errors=True)
