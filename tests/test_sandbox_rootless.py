"""The grading sandbox without root (issue 26): an instructor's own laptop. In a user namespace of the
instructor's own the kernel keeps the instructor's uid, so what protects the grader is the view alone:
the package and site-packages read-only, the course folder, the repository, the home folder and the
answer key hidden. ``COURSE_LIB_SANDBOX=rootless`` builds that view as root (who owns every file here,
the hardest case: only the mounts stand between a submission and the package)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import sandbox

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and shutil.which("unshare")
                                     and sandbox._user_namespaces()),
                                reason="needs Linux user namespaces (unshare -r -m)")


@pytest.fixture
def laptop(tmp_path):
    """A course folder with a gradebook, a home folder with notes, and a copy of the key inside it."""
    course, home = tmp_path / "course", tmp_path / "home"
    (course / "submitted").mkdir(parents=True)
    (course / "gradebook.db").write_text("grades")
    home.mkdir()
    (home / "notes.txt").write_text("private")
    key = home / "answers.json"
    key.write_text((ROOT / "solutions" / "answers.json").read_text())
    for p in (tmp_path, course, course / "submitted", home):
        p.chmod(0o755)
    env = dict(os.environ, COURSE_LIB_SANDBOX="rootless", HOME=str(home), COURSE_LIB_ANSWER_KEY=str(key))
    return course, home, key, env


def test_check_shows_everything_hidden_or_read_only_without_root(laptop):
    course, _, _, env = laptop
    run = subprocess.run([sys.executable, "-m", "course_lib.sandbox", "--check", "--course", str(course)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("sandbox: each submission runs in its own user, mount and PID namespaces")
    assert lines[1:7] == ["the course package: read-only", "site-packages: read-only", "the course folder: hidden",
                          "the answer key: hidden", "COURSE_LIB_ANSWER_KEY: unset", "your home folder: hidden"]


def test_check_says_what_a_kernel_could_reach_when_the_view_fails(laptop, tmp_path):
    """Outside any sandbox the same probe finds everything: the check is able to fail."""
    course, home, key, env = laptop
    probe = subprocess.run([sys.executable, "-I", "-c", sandbox.CHECK, str(course), str(key), str(home),
                            str(sandbox.PACKAGE)], capture_output=True, text=True, env=env, timeout=60)
    assert probe.returncode == 1
    assert "the course folder: visible" in probe.stdout and "the answer key: readable" in probe.stdout
    assert "your home folder: visible" in probe.stdout and "COURSE_LIB_ANSWER_KEY: set" in probe.stdout


def test_a_kernel_in_the_rootless_sandbox_cannot_write_the_package_or_read_the_key(laptop, tmp_path):
    """A real kernel started from the sandbox's kernelspec, as autograde starts it, tries what an attacker would."""
    from jupyter_client.manager import start_new_kernel

    course, home, key, env = laptop
    folder = sandbox.kernelspec(tmp_path / "spec", course)
    env["JUPYTER_PATH"] = str(folder)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        km, kc = start_new_kernel(kernel_name=sandbox.KERNEL_NAME, startup_timeout=60)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    code = (
        "import os, pathlib\nout = []\n"
        f"for path in ({str(sandbox.PACKAGE / 'grading.py')!r}, {str(course / 'gradebook.db')!r}, "
        f"{str(home / 'notes.txt')!r}):\n"
        "    try:\n        open(path, 'a').write('x'); out.append('wrote ' + path)\n"
        "    except OSError as exc:\n        out.append(type(exc).__name__)\n"
        f"try:\n    out.append(pathlib.Path({str(key)!r}).read_text() or 'empty key')\n"
        "except OSError as exc:\n    out.append('key: ' + type(exc).__name__)\n"
        "print(out)")
    outputs = []
    try:
        reply = kc.execute_interactive(code, timeout=60, output_hook=outputs.append)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", reply["content"]
    text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
    assert "wrote" not in text and ("empty key" in text or "key: FileNotFoundError" in text), text
    assert text.count("OSError") + text.count("FileNotFoundError") + text.count("PermissionError") >= 3, text
    assert (course / "gradebook.db").read_text() == "grades" and (home / "notes.txt").read_text() == "private"


PROBE_NET = """
import socket
server = socket.create_server(("127.0.0.1", 0))
with socket.create_connection(server.getsockname(), timeout=5):
    print("loopback: up")
print("interfaces:", " ".join(sorted(name for _, name in socket.if_nameindex())))
"""


@pytest.mark.parametrize("mode", ["rootless", "root"])
def test_a_code_judge_has_its_own_loopback_and_no_way_out(laptop, mode):
    """``--run`` (a code exercise's judge) gets a network namespace: its ranks meet on a loopback of their own, and
    it has no other interface, so nothing outside is reachable."""
    course, _, _, env = laptop
    if mode == "root":
        if os.geteuid() != 0:
            pytest.skip("needs root")
        env = {k: v for k, v in env.items() if k != "COURSE_LIB_SANDBOX"}
    if not subprocess.run(["unshare", *(["--user", "--map-root-user"] if mode == "rootless" else []), "--net", "true"],
                          capture_output=True).returncode == 0:
        pytest.skip("this machine refuses network namespaces")
    run = subprocess.run([sys.executable, "-m", "course_lib.sandbox", "--course", str(course), "--run",
                          sys.executable, "-I", "-c", PROBE_NET], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[0] == "loopback: up"
    assert run.stdout.splitlines()[1] == "interfaces: lo", run.stdout
