"""The kernel that runs a submission during autograde, as a user who cannot reach the grader.

``autograde`` gives nbgrader a kernelspec (:func:`kernelspec`) whose command is this module. Run as root
(the only case it isolates), it starts the kernel:

- in new mount and PID namespaces: ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock`` are fresh
  and empty; the course folder (gradebook, every submission, the source notebooks) and the course
  repository are hidden under empty folders, except the package and the virtual environment, which
  are mounted back read-only; the kernel's PID namespace ends with it, so nothing it forks outlives it
  or sees another student's kernel;
- with the package's exercises files replaced by copies without their sealed keys (a graded run
  holds no answer to recover by hashing);
- as the system user :data:`USER` (created on demand, no home, no login shell, no groups, no
  capabilities, ``no_new_privs``), with a clean environment (no ``COURSE_LIB_ANSWER_KEY``), in an
  empty writable working folder, Python in isolated mode (no user site-packages, no ``PYTHON*``).

Limits: the network is shared (the kernel talks to nbgrader over loopback TCP), so a submission can
open connections; files elsewhere on the machine that are readable by every user stay readable (keep
the answer key ``chmod 600``, or out of the repository); CPU, memory and disk are not capped beyond
nbgrader's time limit per cell. Not root: the kernel runs as the instructor, unisolated, and autograde
says so.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
from pathlib import Path

USER = "course-grader"
KERNEL_NAME = "course-sandbox"
PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
FRESH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
STAGE_AT = "/mnt"  # an existing, normally empty folder, covered by a private tmpfs while the view is built
KEEP_ENV = ("LANG", "LC_ALL", "TZ", "MPLBACKEND", "OMP_NUM_THREADS", "COURSE_LIB_MODE")


def available() -> tuple[bool, str]:
    """Whether kernels can be isolated here, and if not, why (one line)."""
    if os.geteuid() != 0:
        return False, "autograde is not running as root, so submissions run as the instructor, unisolated"
    missing = [tool for tool in ("unshare", "setpriv", "mount", "useradd") if shutil.which(tool) is None]
    if missing:
        return False, f"{', '.join(missing)} not found, so submissions run unisolated"
    return True, f"each submission runs as the user {USER!r} in its own mount and PID namespaces"


def ensure_user() -> pwd.struct_passwd:
    """The unprivileged system user the kernels run as (created on first use)."""
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", "--user-group", USER], check=True, capture_output=True)
        return pwd.getpwnam(USER)


def kernelspec(folder, course_dir) -> Path:
    """Write the sandbox kernelspec under ``folder`` (put ``folder`` on JUPYTER_PATH); returns it."""
    spec = Path(folder) / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "course_lib.sandbox", "--course", str(Path(course_dir).resolve()),
            "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "course sandbox",
                                                  "language": "python"}, indent=1))
    return Path(folder)


def _hidden(course_dir: Path) -> list[Path]:
    """What the kernel must not see: the course folder, the repository and its git data (a worktree's too)."""
    hidden = [course_dir, ROOT]
    git = ROOT / ".git"
    if git.is_file() and git.read_text().startswith("gitdir:"):  # a worktree: the objects live in the main repo
        hidden.append(Path(git.read_text().split(":", 1)[1].strip()).parent.parent)
    return hidden


def _kept() -> list[Path]:
    """What is mounted back, read-only, inside the hidden repository: the package and the venv."""
    venv = Path(sys.prefix)
    keep = [PACKAGE, ROOT / "course.toml", ROOT / "pyproject.toml"]
    if venv.is_relative_to(ROOT):
        keep.append(venv)
    return [p for p in keep if p.exists()]


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def _inside(course_dir: Path, connection: str, extra: list[str]) -> None:
    """PID 1 of the new namespaces, still root: build the view, then become the user and exec the kernel."""
    user = ensure_user()
    _mount("--make-rprivate", "/")
    # keep a handle on each kept path before /tmp and the repository are hidden (a clone under /tmp, as
    # CI's may be, disappears with the fresh /tmp): the handles live on a private tmpfs over STAGE_AT
    stage = Path(STAGE_AT) / ".stage"
    _mount("-t", "tmpfs", "-o", "mode=700,nosuid,nodev", "tmpfs", STAGE_AT)
    kept = _kept()
    for i, path in enumerate(kept):
        target = stage / str(i)
        target.mkdir(parents=True) if path.is_dir() else (stage.mkdir(exist_ok=True), target.touch())
        _mount("--bind", str(path), str(target))
    for path in FRESH:
        if Path(path).is_dir():
            _mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "tmpfs", path)
    hidden = [p for p in _hidden(course_dir) if p.is_dir()]  # one under /tmp is hidden already
    for path in hidden:
        _mount("-t", "tmpfs", "-o", "mode=755,nosuid,nodev", "tmpfs", str(path))
    for i, path in enumerate(kept):
        path.mkdir(parents=True, exist_ok=True) if (stage / str(i)).is_dir() else (
            path.parent.mkdir(parents=True, exist_ok=True), path.touch())
        _mount("--bind", str(stage / str(i)), str(path))
        _mount("-o", "remount,bind,ro", str(path))
        _mount("--make-private", str(path))
    from . import grading
    for original, stripped in grading.strip_keys(Path("/tmp/.keyless")).items():  # no sealed answer to hash either
        _mount("--bind", str(stripped), str(original))
        _mount("-o", "remount,bind,ro", str(original))
    for i in range(len(kept)):
        subprocess.run(["umount", "-l", str(stage / str(i))], check=False)
    subprocess.run(["umount", "-l", STAGE_AT], check=False)
    for path in hidden:
        _mount("-o", "remount,ro,bind", str(path))
    home = Path("/tmp/home")
    home.mkdir(mode=0o700)
    conn = home / "kernel.json"
    conn.write_text(connection)
    for path in (home, conn):
        os.chown(path, user.pw_uid, user.pw_gid)
    env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    env.update(HOME=str(home), USER=USER, PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin",
               MPLCONFIGDIR=str(home / ".mpl"), IPYTHONDIR=str(home / ".ipython"))
    os.chdir(home)
    child = os.fork()  # the kernel is not PID 1, so it can die (os.kill of itself) like any kernel
    if child:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is for the kernel, not for its keeper
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)  # PID 1 exits: every process left in here dies
    os.execve(shutil.which("setpriv"), [
        "setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
        sys.executable, "-I", "-m", "ipykernel_launcher", "-f", str(conn), *extra], env)


def main(argv=None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    inside = args[:1] == ["--inside"]
    if inside:
        args = args[1:]
    assert args[0] == "--course"
    course_dir, connection_file, extra = Path(args[1]), args[2], args[3:]
    ok, _ = available()
    if not ok:  # unisolated: the kernel as nbgrader would have started it
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file, *extra])
    if inside:
        _inside(course_dir, Path(connection_file).read_text(), extra)
        return
    os.execv(shutil.which("unshare"), [
        "unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
        sys.executable, "-m", "course_lib.sandbox", "--inside", "--course", str(course_dir),
        str(Path(connection_file).resolve()), *extra])


if __name__ == "__main__":
    main()
