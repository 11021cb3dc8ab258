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

Not root (an instructor's own laptop): where the kernel lets unprivileged users make user namespaces
(most Linux distributions do), the same view is built in a new user namespace, and the answer key and the
instructor's home are hidden as well; the kernel keeps the instructor's uid (a user namespace cannot switch
to another user) with no capabilities, so what it can still write is the instructor's files outside the
course, the repository, the venv and the home folder. Where user namespaces are refused the kernel runs as
the instructor, unisolated, and autograde says so. ``python -m course_lib.sandbox --check --course DIR``
shows, on this machine, what a kernel could reach.

Limits: a submission's kernel shares the network (it talks to nbgrader over loopback TCP), so it can open
connections; a code exercise's judge (``--run``) does not: it runs in its own network namespace with only
a loopback of its own (its gloo ranks meet there), where this machine allows one (:func:`_net_namespaces`);
files elsewhere on the machine that are readable by every user stay readable (keep the answer key
``chmod 600``, or out of the repository); CPU, memory and disk are not capped beyond nbgrader's time limit
per cell.
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


def rootless() -> bool:
    """True when the sandbox is built without root, in a user namespace of the instructor's own: not root,
    or ``COURSE_LIB_SANDBOX=rootless`` (root that wants no system user; the tests' way to build that view)."""
    return os.geteuid() != 0 or os.environ.get("COURSE_LIB_SANDBOX") == "rootless"


def _user_namespaces() -> bool:
    """Whether this user may make a user namespace with its own mounts (``unshare -r -m``)."""
    try:
        return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _net_namespaces() -> bool:
    """Whether a network namespace can be made here (as root, or inside this user's own user namespace)."""
    userns = ["--user", "--map-root-user"] if rootless() else []
    try:
        return subprocess.run(["unshare", *userns, "--net", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _loopback_up() -> None:
    """Bring up ``lo`` in a fresh network namespace (it starts down): SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP."""
    import fcntl
    import socket
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, 0x8913, request))[1]
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", flags | 0x1))


def available() -> tuple[bool, str]:
    """Whether kernels can be isolated here, and if not, why (one line)."""
    tools = ("unshare", "setpriv", "mount") + (() if rootless() else ("useradd",))
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return False, f"{', '.join(missing)} not found, so submissions run unisolated"
    if not rootless():
        return True, f"each submission runs as the user {USER!r} in its own mount and PID namespaces"
    if not _user_namespaces():
        return False, ("autograde is not running as root and this kernel refuses unprivileged user namespaces, "
                       "so submissions run as the instructor, unisolated")
    return True, ("each submission runs in its own user, mount and PID namespaces with no capabilities; not root, "
                  "so it keeps your uid: the package, venv and key are read-only or hidden, the course folder, "
                  "repository and home hidden (run autograde as root for a separate user)")


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
    folder = Path(folder).resolve()  # on JUPYTER_PATH for nbgrader, which runs in another folder
    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "course_lib.sandbox", "--course", str(Path(course_dir).resolve()),
            "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "course sandbox",
                                                  "language": "python"}, indent=1))
    return folder


def _hidden(course_dir: Path) -> list[Path]:
    """What the kernel must not see: the course folder, the repository and its git data (a worktree's too)."""
    hidden = [course_dir, ROOT]
    git = ROOT / ".git"
    if git.is_file() and git.read_text().startswith("gitdir:"):  # a worktree: the objects live in the main repo
        hidden.append(Path(git.read_text().split(":", 1)[1].strip()).parent.parent)
    return hidden


def _kept(hidden: list[Path]) -> list[Path]:
    """What is mounted back, read-only, inside the hidden folders: the package and the venv (where hidden)."""
    venv = Path(sys.prefix)
    keep = [PACKAGE, ROOT / "course.toml", ROOT / "pyproject.toml"]
    if any(venv.is_relative_to(h) for h in hidden):
        keep.append(venv)
    return [p for p in keep if p.exists()]


def _outermost(paths: list[Path]) -> list[Path]:
    """``paths`` without those inside another of them (a repository in the home folder is hidden with it)."""
    paths = [p.resolve() for p in paths]
    return [p for i, p in enumerate(paths)
            if p not in paths[:i] and not any(p != q and p.is_relative_to(q) for q in paths)]


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def _inside(course_dir: Path, connection: str | None, extra: list[str], home_outside: str | None = None,
            run: list[str] | None = None) -> None:
    """PID 1 of the new namespaces, still root (or root of a user namespace): build the view, then become the
    user (or drop every capability) and exec the kernel; ``connection`` None runs :data:`CHECK` instead."""
    from . import grading

    user = None if home_outside is not None else ensure_user()  # main passes --home only when not root
    candidates = _outermost(_hidden(course_dir) + ([Path(home_outside)] if user is None and home_outside else []))
    candidates = [p for p in candidates if p != Path("/")]
    key = grading.key_path()  # before any mount: a repository under /tmp disappears with the fresh /tmp
    _mount("--make-rprivate", "/")
    # keep a handle on each kept path before /tmp and the repository are hidden (a clone under /tmp, as
    # CI's may be, disappears with the fresh /tmp): the handles live on a private tmpfs over STAGE_AT
    stage = Path(STAGE_AT) / ".stage"
    _mount("-t", "tmpfs", "-o", "mode=700,nosuid,nodev", "tmpfs", STAGE_AT)
    kept = _kept(candidates)
    for i, path in enumerate(kept):
        target = stage / str(i)
        target.mkdir(parents=True) if path.is_dir() else (stage.mkdir(exist_ok=True), target.touch())
        _mount("--bind", str(path), str(target))
    for path in FRESH:
        if Path(path).is_dir():
            _mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "tmpfs", path)
    hidden = [p for p in candidates if p.is_dir()]  # one under /tmp is hidden already
    for path in hidden:
        _mount("-t", "tmpfs", "-o", "mode=755,nosuid,nodev", "tmpfs", str(path))
    for i, path in enumerate(kept):
        path.mkdir(parents=True, exist_ok=True) if (stage / str(i)).is_dir() else (
            path.parent.mkdir(parents=True, exist_ok=True), path.touch())
        _mount("--bind", str(stage / str(i)), str(path))
        _mount("-o", "remount,bind,ro", str(path))
        _mount("--make-private", str(path))
    for original, stripped in grading.strip_keys(Path("/tmp/.keyless")).items():  # no sealed answer to hash either
        _mount("--bind", str(stripped), str(original))
        _mount("-o", "remount,bind,ro", str(original))
    if key.is_file():  # the key itself, wherever $COURSE_LIB_ANSWER_KEY puts it: an empty file in its place
        empty = Path("/tmp/.empty")
        empty.write_text("")
        _mount("--bind", str(empty), str(key))
        _mount("-o", "remount,bind,ro", str(key))
    for i in range(len(kept)):
        subprocess.run(["umount", "-l", str(stage / str(i))], check=False)
    subprocess.run(["umount", "-l", STAGE_AT], check=False)
    for path in hidden:
        _mount("-o", "remount,ro,bind", str(path))
    home = Path("/tmp/home")
    home.mkdir(mode=0o700)
    conn = home / "kernel.json"
    conn.write_text(connection or "")
    if user is not None:
        for path in (home, conn):
            os.chown(path, user.pw_uid, user.pw_gid)
    env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    env.update(HOME=str(home), USER=USER if user is not None else os.environ.get("USER", "instructor"),
               PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin",
               MPLCONFIGDIR=str(home / ".mpl"), IPYTHONDIR=str(home / ".ipython"))
    command = (list(run) if run else
               [sys.executable, "-I", "-m", "ipykernel_launcher", "-f", str(conn), *extra] if connection is not None
               else [sys.executable, "-I", "-c", CHECK, str(course_dir), str(key), str(home_outside or ""), str(PACKAGE)])
    if run:  # the judge's own network namespace (main asked unshare for it): its loopback starts down
        try:
            _loopback_up()
        except OSError:
            pass  # no namespace of its own after all: the shared loopback is already up
    os.chdir(home)
    limits = caps()
    child = os.fork()  # the kernel is not PID 1, so it can die (os.kill of itself) like any kernel
    if child:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is for the kernel, not for its keeper

        def out_of_time(*_):
            print(f"course-sandbox: the submission ran past its {limits['seconds']} s limit and was stopped",
                  file=sys.stderr, flush=True)
            os._exit(137)  # PID 1 exits: the kernel and everything it forked die with it
        signal.signal(signal.SIGALRM, out_of_time)
        signal.alarm(limits["seconds"])
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)  # PID 1 exits: every process left in here dies
    _limit(limits, user is not None)
    who = [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"] if user is not None else []
    os.execve(shutil.which("setpriv"), [
        "setpriv", *who, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", *command], env)


# Caps of one submission's kernel (and all it forks), none of which it can raise: hard limits set before it starts.
CAPS = {"seconds": 900, "processes": 64, "memory_mb": 4096, "file_mb": 256}
CAPS_ENV = "COURSE_LIB_GRADING_CAPS"  # e.g. "seconds=600,processes=32,memory_mb=2048"


def caps() -> dict:
    """:data:`CAPS`, with the overrides of ``$COURSE_LIB_GRADING_CAPS`` (``name=value,...``; ValueError if bad)."""
    out = dict(CAPS)
    for item in filter(None, os.environ.get(CAPS_ENV, "").split(",")):
        name, _, value = item.partition("=")
        if name not in CAPS or not value.isdigit() or int(value) < 1:
            raise ValueError(f"{CAPS_ENV} item {item!r}: expected one of {', '.join(CAPS)} = a whole number >= 1")
        out[name] = int(value)
    return out


def _limit(limits: dict, own_user: bool) -> None:
    """Hard rlimits for the kernel about to be exec'd: memory (address space), file size, and, where it runs as
    its own user (root's sandbox; a user namespace keeps the instructor's uid, whose other processes count
    too), processes. A process cannot raise a hard limit without CAP_SYS_RESOURCE, which it never has."""
    import resource

    memory = limits["memory_mb"] << 20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    size = limits["file_mb"] << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    if own_user:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))


# What ``--check`` runs in the sandbox instead of a kernel: try what a submission would, print one line each.
CHECK = """
import os, sys, json
from pathlib import Path
import sysconfig
course, key, home, package = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
site = Path(sysconfig.get_paths()['purelib'])
def writable(folder):
    try:
        probe = folder / '.course_sandbox_probe'
        probe.write_text('x'); probe.unlink()
        return True
    except OSError:
        return False
rows = [
    ('the course package', 'writable' if writable(package) else 'read-only'),
    ('site-packages', 'writable' if writable(site) else 'read-only'),
    ('the course folder', 'visible' if course.is_dir() and any(course.iterdir()) else 'hidden'),
    ('the answer key', 'readable' if key.is_file() and key.stat().st_size > 0 else 'hidden'),
    ('COURSE_LIB_ANSWER_KEY', 'set' if 'COURSE_LIB_ANSWER_KEY' in os.environ else 'unset'),
]
if home:
    rows.append(('your home folder', 'visible' if Path(home).is_dir() and any(Path(home).iterdir()) else 'hidden'))
uid = os.getuid()
inner, outer, count = (int(x) for x in open('/proc/self/uid_map').read().split()[:3])
seen = outer + uid - inner if inner <= uid < inner + count else uid  # this uid as the machine outside sees it
rows.append(('uid', str(uid) + (f' (uid {seen} outside its user namespace)' if seen != uid else '')))
for what, state in rows:
    print(f'{what}: {state}')
bad = {'writable', 'visible', 'readable', 'set'}
sys.exit(1 if any(state in bad for _, state in rows) else 0)
"""


def main(argv=None) -> None:
    """``[--inside [--home H]] --course DIR CONNECTION_FILE [kernel args]`` (nbgrader's kernelspec), or
    ``--check --course DIR``: what a submission's kernel could reach here, one line each (exit 1 if anything)."""
    args = list(sys.argv[1:] if argv is None else argv)
    inside = args[:1] == ["--inside"]
    if inside:
        args = args[1:]
    home = None
    if args[:1] == ["--home"]:
        home, args = args[1], args[2:]
    check = args[:1] == ["--check"]
    if check:
        args = args[1:]
    run = None
    if "--run" in args:  # ``--course DIR --run CMD...``: a command (a code exercise's judge) in the same view
        at = args.index("--run")
        args, run = args[:at], args[at + 1:]
        if not run or args[:1] != ["--course"] or len(args) != 2:
            print("error: usage: python -m course_lib.sandbox --course DIR --run COMMAND...", file=sys.stderr)
            sys.exit(2)
        check = True  # no connection file
    if args[:1] != ["--course"] or len(args) < (2 if check else 3):
        print("error: usage: python -m course_lib.sandbox --check --course DIR", file=sys.stderr)
        sys.exit(2)
    course_dir = Path(args[1]).resolve()
    if check and not inside and not course_dir.is_dir():
        print(f"error: --course must be an existing course folder, got {args[1]!r}", file=sys.stderr)
        sys.exit(2)
    connection_file, extra = (None, []) if check else (args[2], args[3:])
    if inside:  # the launcher outside already found isolation available: build the view
        _inside(course_dir, None if connection_file is None else Path(connection_file).read_text(), extra, home, run)
        return
    ok, why = available()
    if check and not run:
        print(f"sandbox: {why}", flush=True)
    if not ok:  # unisolated: the kernel as nbgrader would have started it
        if run:
            os.execv(run[0], run)
        if check:
            sys.exit(1)
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file, *extra])
    userns = ["--user", "--map-root-user"] if rootless() else []
    net = ["--net"] if run and _net_namespaces() else []
    home_args = ["--home", os.environ.get("HOME") or str(Path.home())] if rootless() else []
    os.execv(shutil.which("unshare"), [
        "unshare", *userns, *net, "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
        sys.executable, "-m", "course_lib.sandbox", "--inside", *home_args,
        *(["--check"] if check and not run else []), "--course", str(course_dir),
        *([] if check else [str(Path(connection_file).resolve())]), *extra, *(["--run", *run] if run else [])])


if __name__ == "__main__":
    main()
