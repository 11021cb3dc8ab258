"""A real ``make hub`` with throwaway system accounts, for the hub tests, the browser test and the hub load
benchmark (``benchmarks/hub_lab_load.py``).

``class_on_hub`` creates the accounts, starts the real target on a free port with its state in a temporary
folder and an API token, and yields a ``Hub`` (the REST API as the admin service). On leaving, even on
failure, it stops the hub's whole process group, kills every process of the accounts, removes the accounts
and their homes, then checks that none of their processes, accounts or homes is left. Needs root.
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.test_lab_command import ROOT, _free_port, start_make, stop_group

# The sandbox may set proxy variables for the package registries; the hub is on 127.0.0.1.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class HubUnavailable(RuntimeError):
    """The hub cannot run here (the reason, one line): a test skips on it."""


def processes_of(uid) -> list[int]:
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
        with _DIRECT.open(request, timeout=timeout) as response:
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

    def request_start(self, user):
        status = self.api("POST", f"/hub/api/users/{user}/server")[0]
        assert status in (201, 202), status

    def start(self, user):
        self.request_start(user)
        return self.wait_ready(user)

    def stop(self, user):
        self.api("DELETE", f"/hub/api/users/{user}/server")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.api("GET", f"/hub/api/users/{user}")[1].get("servers"):
            time.sleep(0.5)


@contextlib.contextmanager
def class_on_hub(log_dir, learners, password=None, **env_extra):
    """``make hub`` running with ``learners`` throwaway accounts: yields (hub, users, homes, state). With
    ``password`` every account gets it (a browser logs in through the hub's form). On leaving (even on
    failure) the hub's process group is stopped, every process of the accounts killed, the accounts and
    their homes removed; then it checks that none of their processes is left."""
    if os.geteuid() != 0:
        raise HubUnavailable("make hub runs each learner as their own account: needs root")
    if shutil.which("useradd") is None or shutil.which("make") is None:
        raise HubUnavailable("needs useradd and make")
    if shutil.which(str(ROOT / ".venv" / "bin" / "jupyterhub")) is None:
        raise HubUnavailable("needs JupyterHub in .venv (pip install -e '.[hub]', or make hub once)")
    tag = secrets.token_hex(3)
    users = [f"chub{tag}{k}" for k in range(learners)]
    homes = Path(tempfile.mkdtemp(prefix="course-hub-homes-"))  # pytest's own tmp is private to root
    os.chmod(homes, 0o755)
    token = secrets.token_hex(16)
    port = _free_port()
    state = homes / "hub-state"  # learners must reach its lab budget and exchange folders
    log = Path(log_dir) / "hub.log"
    proc, made, failed = None, {}, True
    try:
        env = dict(os.environ, COURSE_HUB_API_TOKEN=token, COURSE_HUB_USERS=",".join(users), **env_extra)
        env.update(_learner_python(homes))
        for user in users:
            subprocess.run(["useradd", "-m", "-d", str(homes / user), "-s", "/bin/sh", user], check=True,
                           capture_output=True)
            made[user] = pwd_uid(user)
            if password is not None:
                subprocess.run(["chpasswd"], input=f"{user}:{password}\n", text=True, check=True,
                               capture_output=True)
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
        failed = False
    finally:
        if proc is not None:
            stop_group(proc)
            if failed:
                print(log.read_text(errors="replace")[-6000:])
        for user, uid in made.items():
            for pid in processes_of(uid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
            subprocess.run(["userdel", "-r", "-f", user], capture_output=True)
        shutil.rmtree(homes, ignore_errors=True)
    time.sleep(0.5)
    assert [pid for uid in made.values() for pid in processes_of(uid)] == []
    assert not homes.exists() and all(pwd_uid_or_none(user) is None for user in made)


def server_environ(user) -> dict:
    """The environment of ``user``'s running single-user server (read from /proc as root)."""
    pid = next(pid for pid in processes_of(pwd_uid(user))
               if b"jupyterhub.singleuser" in open(f"/proc/{pid}/cmdline", "rb").read())
    raw = open(f"/proc/{pid}/environ", "rb").read().decode()
    environ = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    environ["_COURSE_TEST_PYTHON"] = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0].decode()
    return environ


def _learner_python(folder) -> dict:
    """``COURSE_HUB_PYTHON`` for the hub when the learners cannot run .venv's interpreter (it lives under
    /root, as pyenv puts it): a venv of the system's Python of the same version that adds .venv's
    packages (a .pth line), so their servers see what ``make lab`` sees. ``HubUnavailable`` when there is none."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    real = Path(os.path.realpath(venv_python))
    if all(os.stat(p).st_mode & 0o001 for p in [real, *real.parents]):
        return {}
    version = subprocess.run([str(venv_python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    system = shutil.which(f"python{version}", path="/usr/bin:/usr/local/bin")
    if system is None:
        raise HubUnavailable(f".venv's Python ({real}) is not runnable by other users and there is no "
                             f"/usr/bin/python{version}")
    bridge = Path(folder) / "learner-venv"
    subprocess.run([system, "-m", "venv", "--without-pip", str(bridge)], check=True, capture_output=True)
    site = next((ROOT / ".venv" / "lib").glob("python*/site-packages"))
    mine = next((bridge / "lib").glob("python*/site-packages"))
    (mine / "course_venv.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n")
    return {"COURSE_HUB_PYTHON": str(bridge / "bin" / "python")}


def pwd_uid(user) -> int:
    return pwd.getpwnam(user).pw_uid


def pwd_uid_or_none(user):
    try:
        return pwd_uid(user)
    except KeyError:
        return None
