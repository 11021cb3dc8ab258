"""The processes and the folder of one ``launch.run``: process groups killed whole, the watcher
that cleans up after a killed kernel, stale folders of dead launchers, live children.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time

from .. import validate

_PREFIX = "course_lab_"


def _own_process_group(pid=0):
    try:
        os.setpgid(pid, pid)
    except (OSError, AttributeError):  # already exec'd (spawn), gone, or not POSIX
        pass


def _ignore_interrupts_in_child():
    """In a forked rank or watcher: Ctrl-C is the launcher's to handle, never the child's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; Ctrl-C must not split ranks
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a held one is dropped


def _kill_group(pid):
    """SIGKILL the process group led by rank ``pid`` (the rank and whatever it started), then ``pid``."""
    for kill in (getattr(os, "killpg", None), os.kill):
        if kill is None:
            continue
        try:
            kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass


def _kill_all(procs):
    for proc in procs:
        pid = proc.pid
        if pid is not None:
            _kill_group(pid)  # also when the rank has exited: its subprocesses may live on
    for proc in procs:
        try:
            proc.join(timeout=5)
        except (OSError, ValueError, AssertionError):
            pass
        try:
            proc.close()
        except (ValueError, AttributeError):
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_folders(root: str | None = None) -> list[str]:
    """Remove the ``course_lab_<pid>_*`` folders under ``root`` (default: the temp folder) whose
    launcher ``pid`` is gone (a killed kernel); return their paths. Others' folders are left."""
    root = root or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(_PREFIX):
            continue
        pid_text = name[len(_PREFIX):].split("_", 1)[0]
        if not pid_text.isdigit() or _pid_alive(int(pid_text)):
            continue
        path = os.path.join(root, name)
        try:
            if os.stat(path).st_uid != os.getuid():
                continue
        except (OSError, AttributeError):
            continue
        _reap_folder(path)
        removed.append(path)
    return removed


def _reap_folder(workdir):
    """Kill the process groups of the ranks listed in ``workdir``/pids, then remove the folder."""
    try:
        with open(os.path.join(workdir, "pids")) as handle:
            pids = [int(x) for x in handle.read().split()]
    except (OSError, ValueError):
        pids = []
    for pid in pids:
        _kill_group(pid)
    shutil.rmtree(workdir, ignore_errors=True)


def _start_watcher(workdir, parent_pid):
    """Fork a process that cleans up after a launcher killed mid-run (Linux); its pid, or None.

    It polls every 50 ms whether its parent is still ``parent_pid``; when not (the kernel was
    killed), it kills the ranks' process groups and removes ``workdir``. The launcher kills
    it at the end of a run.
    """
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return None
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: only the forking thread exists; use nothing that another thread may hold
        _ignore_interrupts_in_child()
        _own_process_group()
        while os.getppid() == parent_pid and os.path.isdir(workdir):
            time.sleep(0.05)
        if os.getppid() != parent_pid:
            _reap_folder(workdir)
    finally:
        os._exit(0)


def _stop_watcher(pid):
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass


def _live_processes():
    """(pid, ppid, session id) of every live (not zombie) process, from /proc (Linux only)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            yield int(entry), int(fields[1]), int(fields[3])


def live_children(pid: int | None = None) -> list[int]:
    """Process ids of the live (not zombie) children of ``pid`` (default: this process), Linux only.

    multiprocessing's resource tracker (started once per interpreter by the 'spawn' start method,
    ending with it) is not a rank and is not listed. Used to show that a run leaves nothing behind.
    """
    pid = os.getpid() if pid is None else validate.integer("pid", pid, low=1)
    out = []
    for child, parent, _ in _live_processes():
        if parent != pid:
            continue
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                if b"resource_tracker" in handle.read():
                    continue
        except OSError:
            continue
        out.append(child)
    return out


def session_members(sid: int) -> list[int]:
    """Process ids of the live processes in session ``sid`` (a kernel started with its own session)."""
    sid = validate.integer("sid", sid, low=1)
    return [pid for pid, _, session in _live_processes() if session == sid]
