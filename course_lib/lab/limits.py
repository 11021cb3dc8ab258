"""The machine's limits that a launch runs into, each refused in one line naming the limit and what to do.

A launch needs open files (two pipe ends per rank in the launcher; in each rank the launcher's open
files, which a fork inherits, plus a socket per peer), processes (each rank is one, with a few
threads; Linux counts threads against ``ulimit -u``) and a writable temporary folder with some room
(the run's folder: the rendezvous, each rank's log and result). ``check`` looks at all three before
anything is started, so a launch refused for a limit leaves no process, folder or open file behind;
``explain`` turns what a limit does later (an ``OSError`` in the launcher, a rank that failed with
one) into the same line. ``LabLimitError`` is that line.
"""
from __future__ import annotations

import errno
import os
import sys
import tempfile

from .. import units
from .processes import _stat_fields

LAUNCHER_FDS_PER_RANK = 2   # multiprocessing keeps both ends of a pipe per child until it is closed
RANK_FDS_PER_PEER = 3       # gloo's sockets per peer (measured in a rank after an all-reduce: 17, 35 and 59
RANK_FDS_BASE = 8           # open files at 2, 8 and 16 ranks: 3 per peer + 6 + the inherited ones; 2 spare)
THREADS_PER_RANK = 4        # the rank's threads at threads=1 (measured: main, gloo's loop and workers); each
                            # torch thread beyond the first adds one
MIN_FREE_BYTES = 2**20      # a run's folder: the store, small logs and results

_FIX_LATER = "before starting Jupyter (or the shell that runs this)"


class LabLimitError(RuntimeError):
    """A launch refused or stopped by a limit of the machine; the message is one line naming it."""


def open_fds() -> int:
    """How many files this process has open (Linux ``/proc/self/fd``; elsewhere 0, unknown)."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own descriptor
    except OSError:
        return 0


def _soft_limit(name):
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    soft = resource.getrlimit(getattr(resource, name))[0]
    return None if soft == resource.RLIM_INFINITY else soft


def fds_needed(ranks: int, open_now: int) -> int:
    """Open files a launch of ``ranks`` needs under one process's limit: the larger of the launcher's
    and one rank's (a rank inherits the launcher's ``open_now`` files)."""
    launcher = open_now + LAUNCHER_FDS_PER_RANK * ranks + 16
    rank = open_now + RANK_FDS_PER_PEER * ranks + RANK_FDS_BASE
    return max(launcher, rank)


def _ulimit(flag, limit):
    return f"ulimit -{flag} {limit}" if limit is not None else f"ulimit -{flag}"


def _fd_line(ranks, limit, needed=None):
    need = f" (about {needed} needed)" if needed else ""
    return (f"the limit on open files ({_ulimit('n', limit)}) is too low for {ranks} ranks{need}: "
            f"raise it, e.g. ulimit -n 4096 {_FIX_LATER}, or use fewer ranks")


def _user_threads() -> int:
    """Processes and threads this user runs (what ``ulimit -u`` counts on Linux); 0 if unknown."""
    uid, total = os.getuid(), 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
        except OSError:
            continue
        fields = _stat_fields(entry)
        total += int(fields[17]) if fields else 0
    return total


def _process_line(ranks, limit, running=None):
    now = f"; this user already runs {running} processes and threads" if running else ""
    return (f"the limit on processes ({_ulimit('u', limit)}) leaves no room for {ranks} more ranks "
            f"(each is a process with a few threads{now}): raise it, e.g. ulimit -u 4096 {_FIX_LATER}, "
            "or use fewer ranks")


def _free_bytes(folder):
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def _full_line(folder, free=None):
    room = ""
    if free is not None:
        need = units.format_bytes(MIN_FREE_BYTES, binary=True)
        room = f" ({units.format_bytes(free, binary=True)} free; a run needs {need})"
    return (f"the temporary folder {folder!r} (TMPDIR) is full{room}: free some space, or point TMPDIR at "
            f"a folder with room {_FIX_LATER}")


def _folder_problem(folder) -> str | None:
    """Why ``folder`` cannot hold a run's folder ("does not exist", "is read-only", ...), or None."""
    if not os.path.exists(folder):
        return "does not exist"
    if not os.path.isdir(folder):
        return "is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        try:
            read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        except (OSError, AttributeError):
            read_only = False
        return "is read-only" if read_only else "is not writable by this user"
    return None


def _folder_line(folder, problem):
    return (f"the temporary folder {folder!r} (TMPDIR) {problem}: point TMPDIR at a writable folder "
            f"(or unset it to use /tmp) {_FIX_LATER}")


_NOTED: set = set()


def temp_root() -> str:
    """The folder a run's folder is made in: ``$TMPDIR`` when it is usable, else the first usable of
    Python's fallbacks (``/tmp``...), said once in one line on stderr; ``LabLimitError`` when none is."""
    wanted = os.environ.get("TMPDIR")
    if wanted:
        problem = _folder_problem(wanted)
        if problem is None:
            return wanted
        for fallback in ("/tmp", "/var/tmp", "/usr/tmp"):
            if _folder_problem(fallback) is None:
                if (wanted, problem) not in _NOTED:
                    _NOTED.add((wanted, problem))
                    print(f"note: the temporary folder {wanted!r} (TMPDIR) {problem}; the lab's run folders go to "
                          f"{fallback!r} (point TMPDIR at a writable folder to choose)", file=sys.stderr, flush=True)
                return fallback
        raise LabLimitError(_folder_line(wanted, problem))
    try:
        root = tempfile.gettempdir()
    except OSError:  # no usable candidate at all
        raise LabLimitError(_folder_line("/tmp", "is not usable, nor any other candidate")) from None
    problem = _folder_problem(root)
    if problem:
        raise LabLimitError(_folder_line(root, problem))
    return root


def check(ranks: int, root: str, threads: int = 1) -> None:
    """Refuse, before anything starts, a launch of ``ranks`` (each with ``threads`` torch threads) that
    the open-file or process limit, or the room left in ``root``, cannot take: ``LabLimitError``, one line."""
    limit = _soft_limit("RLIMIT_NOFILE")
    if limit is not None:
        needed = fds_needed(ranks, open_fds())
        if needed > limit:
            raise LabLimitError(_fd_line(ranks, limit, needed))
    limit = _soft_limit("RLIMIT_NPROC")
    if limit is not None and hasattr(os, "getuid") and os.getuid() != 0:  # root is not held to it
        running = _user_threads()
        if running and running + (THREADS_PER_RANK + threads - 1) * ranks + 2 > limit:
            raise LabLimitError(_process_line(ranks, limit, running))
    free = _free_bytes(root)
    if free is not None and free < MIN_FREE_BYTES:
        raise LabLimitError(_full_line(root, free))


_PROCESS_SIGNS = ("Resource temporarily unavailable", "can't start new thread", "pthread_create",
                  "fork failed", "Cannot allocate memory to start")
_FD_SIGNS = ("Too many open files",)
_SPACE_SIGNS = ("No space left on device", "Disk quota exceeded")


def _line_for_errno(code, ranks, root) -> str | None:
    if code in (errno.EMFILE, errno.ENFILE):
        return _fd_line(ranks, _soft_limit("RLIMIT_NOFILE"))
    if code == errno.EAGAIN:
        return _process_line(ranks, _soft_limit("RLIMIT_NPROC"))
    if code in (errno.ENOSPC, errno.EDQUOT):
        return _full_line(root, _free_bytes(root))
    if code in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT):
        return _folder_line(root, _folder_problem(root) or "cannot be written to")
    return None


def explain(error: BaseException, ranks: int, root: str) -> LabLimitError | None:
    """The one-line ``LabLimitError`` for an ``OSError`` a limit caused in the launcher, else None."""
    if isinstance(error, OSError) and error.errno is not None:
        line = _line_for_errno(error.errno, ranks, root)
        return LabLimitError(line) if line else None
    return None


def explain_rank(text: str, ranks: int, root: str) -> LabLimitError | None:
    """The ``LabLimitError`` for a rank that failed because of a limit (its error ``text`` shows it, or
    ``root`` has no room left for its result), else None: a limit is not the rank's fault."""
    if any(sign in text for sign in _FD_SIGNS):
        return LabLimitError(_fd_line(ranks, _soft_limit("RLIMIT_NOFILE")))
    if any(sign in text for sign in _SPACE_SIGNS):
        return LabLimitError(_full_line(root, _free_bytes(root)))
    if any(sign in text for sign in _PROCESS_SIGNS) and _soft_limit("RLIMIT_NPROC") is not None:
        return LabLimitError(_process_line(ranks, _soft_limit("RLIMIT_NPROC")))
    free = _free_bytes(root)
    if "without a result" in text and free is not None and free < MIN_FREE_BYTES:
        return LabLimitError(_full_line(root, free))
    return None
