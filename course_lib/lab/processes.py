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


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity; the machine's count where that is unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


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


def _stat_fields(pid):
    """The fields of ``/proc/<pid>/stat`` after the command name (field 3 first), or None (gone, not Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (``/proc/<pid>/stat`` field 22, clock ticks since boot), None if gone.

    A pid and its start time name one process for good: the pair is what a run's folder records, so a
    pid reused by another process later is never taken for one of the run's. (A zombie still holds its
    pid, so it has its start time until it is reaped.)"""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def _signal_exact(pid, start):
    """SIGKILL ``pid`` only if it is still the process that started at ``start``; True if sent.

    Through a pidfd where there is one: it is opened before the start time is checked, so the signal
    goes to the process that was checked even if ``pid`` is reused in between."""
    if start is None:
        return False
    opener = getattr(os, "pidfd_open", None)
    sender = getattr(signal, "pidfd_send_signal", None)
    if opener and sender:
        try:
            fd = opener(pid)
        except OSError:
            return False
        try:
            if start_time(pid) != start:
                return False
            sender(fd, signal.SIGKILL)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
    if start_time(pid) != start:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except OSError:
        return False


def _kill_group(pid, start, session):
    """SIGKILL a rank (``pid`` started at ``start``) and what it started (its process group, id ``pid``),
    touching only processes that provably belong to the run.

    The rank itself is killed only if ``pid`` still has its start time. Its group is killed whole while
    the rank is alive (its id is then the rank's). Once the rank is gone the id can only still name a
    group because members of the rank's group hold it (Linux never reuses the pid of a live group), and
    of those only the ones in the launcher's ``session`` that started after the rank are killed, one by
    one, each checked again by its own start time. Nothing is killed without a start time (not Linux)."""
    if start is None:
        return
    now = start_time(pid)
    if now is not None and now != start:  # reused: Linux reuses a pid only once no group of that id is left
        return
    if now == start:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (OSError, ValueError, AttributeError):
            pass
        _signal_exact(pid, start)
        return
    try:
        os.killpg(pid, 0)  # is there a group of that id at all? (usually not: the rank's subprocesses are gone)
    except (OSError, AttributeError):
        return
    for member, _, member_session, group, member_start in _live_processes():
        if group == pid and member_session == session and member_start >= start:
            _signal_exact(member, member_start)


def _kill_all(procs):
    """Kill every rank of ``procs`` (this launcher's ``mp.Process`` objects) and its process group, then reap them."""
    session = os.getsid(0) if hasattr(os, "getsid") else None
    for proc in procs:
        pid = proc.pid
        if pid is None:
            continue
        if proc.exitcode is None:  # not reaped yet: the pid is still this rank's, its group id too
            for kill in (getattr(os, "killpg", None), os.kill):
                try:
                    if kill is not None:
                        kill(pid, signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        else:  # exited and reaped: its subprocesses may live on in its group
            _kill_group(pid, getattr(proc, "course_start_time", None), session)
    for proc in procs:
        try:
            proc.join(timeout=5)
        except (OSError, ValueError, AssertionError):
            pass
        try:
            proc.close()
        except (ValueError, AttributeError):
            pass


OWNER_FILE = "owner"  # "<launcher pid> <its start time> <its session>", written as the folder is made
PIDS_FILE = "pids"    # one "<rank pid> <its start time>" a line, written as each rank starts


def write_owner(workdir):
    """Record in ``workdir`` which process launched the run (pid, start time, session)."""
    pid = os.getpid()
    session = os.getsid(0) if hasattr(os, "getsid") else 0
    with open(os.path.join(workdir, OWNER_FILE), "w") as handle:
        handle.write(f"{pid} {start_time(pid)} {session}\n")


def _owner(workdir, pid_in_name):
    """(pid, start time or None, session or None) of the folder's launcher; the folder name's pid if unrecorded."""
    try:
        with open(os.path.join(workdir, OWNER_FILE)) as handle:
            pid, start, session = handle.read().split()
        return int(pid), (None if start == "None" else int(start)), int(session)
    except (OSError, ValueError):
        return pid_in_name, None, None


def _launcher_gone(pid, start) -> bool:
    if start is not None and sys.platform.startswith("linux"):
        return start_time(pid) != start  # gone, or its pid now held by another process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def clean_stale_folders(root: str | None = None) -> list[str]:
    """Remove the ``course_lab_<pid>_*`` folders under ``root`` (default: the temp folder) whose
    launcher is gone (a killed kernel: its pid is free, or held by a process with another start time);
    return their paths. Others' folders are left, and so is every process not provably the run's."""
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
        if not pid_text.isdigit():
            continue
        path = os.path.join(root, name)
        try:
            if os.stat(path).st_uid != os.getuid():
                continue
        except (OSError, AttributeError):
            continue
        pid, start, _ = _owner(path, int(pid_text))
        if not _launcher_gone(pid, start):
            continue
        _reap_folder(path)
        removed.append(path)
    return removed


def _reap_folder(workdir):
    """Kill the ranks recorded in ``workdir`` (each only if its pid still has its recorded start time)
    and what they started, then remove the folder."""
    _, _, session = _owner(workdir, 0)
    try:
        with open(os.path.join(workdir, PIDS_FILE)) as handle:
            ranks = [(int(pid), int(start)) for pid, start in (line.split() for line in handle if line.strip())]
    except (OSError, ValueError):
        ranks = []  # unreadable, or an older format without start times: nothing can be proven, nothing is killed
    if session is not None:
        for pid, start in ranks:
            _kill_group(pid, start, session)
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
    """(pid, ppid, session id, process group, start time) of every live (not zombie) process, from /proc
    (Linux only; nothing elsewhere)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields and fields[0] != "Z":
            yield int(entry), int(fields[1]), int(fields[3]), int(fields[2]), int(fields[19])


def live_children(pid: int | None = None) -> list[int]:
    """Process ids of the live (not zombie) children of ``pid`` (default: this process), Linux only.

    multiprocessing's resource tracker (started once per interpreter by the 'spawn' start method,
    ending with it) is not a rank and is not listed. Used to show that a run leaves nothing behind.
    """
    pid = os.getpid() if pid is None else validate.integer("pid", pid, low=1)
    out = []
    for child, parent, *_ in _live_processes():
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
    return [pid for pid, _, session, *_ in _live_processes() if session == sid]
