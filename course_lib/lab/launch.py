"""A launcher that runs a function on N local ranks over torch.distributed, safe inside Jupyter.

``run(fn, ranks=2, timeout=30)`` starts one child process per rank, joins them into a
process group (gloo on 127.0.0.1 by default), calls ``fn(rank, world_size, *args)`` on
each and returns the per-rank return values as a list.

Choices, and why:

* **Start method.** ``"fork"`` (the default on Linux) lets a learner's function defined
  in a notebook cell run on every rank: the child is a copy of the kernel, so nothing
  has to be pickled or imported. ``"spawn"`` (the default elsewhere) starts fresh
  interpreters; the function must then live in an importable module (``course_lib``'s
  own workers do). Passing source text was rejected: it loses closures, imports and
  globals from other cells. A forked child never returns into the kernel: it replaces
  ``sys.stdout``/``sys.stderr`` (the kernel's streams would talk to Jupyter's sockets),
  limits torch to ``threads`` intra-op threads (OpenMP pools do not survive ``fork``)
  and leaves with ``os._exit``.
* **Rendezvous.** The ranks meet through a ``FileStore`` in the run's own temporary folder
  (``course_lab_<pid>_*``): no port is guessed or listened on, so two runs, or two users, never
  race for one, and nothing waits on a TCP connect. (Hosting torch's ``TCPStore`` in the parent
  made about 1 launch in 7-10 wait 5 s at the rendezvous on a busy 2-core machine.)
* **Stop.** A Stop (SIGINT) that arrives while the ranks are being forked is held back until
  the last fork is done, then raised: an interrupt raised inside a fork hook is swallowed by
  Python ("Exception ignored"), which lost the Stop, and a child that got it before ignoring
  SIGINT died as a "failed rank". Every rank ignores SIGINT (the parent decides) and sits in a
  process group of its own, so Jupyter's interrupt of the kernel's group never reaches it.
* **Faults.** The parent polls the children every 10 ms. A rank that raises writes its
  traceback and exits; a rank that dies (SIGKILL, segfault) shows a negative exit
  code; either way every other rank is killed at once and ``RankError`` names the rank
  and the cause. Past ``timeout`` seconds every rank dumps its Python stack (``faulthandler``)
  and ``RankTimeout`` names the rank that stalled (the one not waiting in a send, receive or
  collective) and where. On ``KeyboardInterrupt`` (a stopped cell) or any other error all
  children are killed before the exception goes on.
* **Nothing left behind.** Killing a rank kills its process group, so a subprocess the rank
  started dies with it. Each child asks the kernel to kill it if the parent dies (Linux
  ``PR_SET_PDEATHSIG``) and carries an alarm a little past the timeout; a small watcher
  process (Linux) kills the ranks' groups and removes the run's folder when the parent is
  killed (a kernel restart). Folders of dead launchers are removed at the next launch; the
  processes they name are killed only when provably the run's: the folder records the launcher and
  each rank as pid *and* start time (``/proc/<pid>/stat`` field 22), a rank is killed only while its
  pid still has that start time (through a pidfd, so a pid reused in between is not hit), and what
  it started only while its process group lives on in the launcher's session. A pid since reused by
  an unrelated process is left alone.
* **Stop while cleaning up.** A Stop that arrives while a launch that has finished (or failed)
  cleans up is held until the children are gone, then raised, unless an error is already on its
  way out: a Stop pressed during a loop of launches is never lost.
* **Limits.** Open files, processes and room in the temporary folder are checked before anything
  starts (``limits``); a launch they refuse, or one they stop later, ends in ``LabLimitError``,
  one line naming the limit and what to do, with nothing left behind.
* **Budget.** On a shared server (``COURSE_LAB_BUDGET_DIR`` set, as the hub sets it) a launch holds its
  ranks on the server's per-user and server-wide budget (``budget``) while it runs: beyond it, it waits
  in a queue, saying its place, or is refused in one line (``LabBudgetError``, a ``LabLimitError``).
* **Output.** Each rank's stdout and stderr (Python and C level) go to a file that the
  parent reads while it waits, printing the new lines of all ranks, each prefixed
  ``[rank r]``, in one write per poll (a line per write made 100k lines take over a minute
  in Jupyter). Both are bounded: a rank's log keeps its first ``rank_process.MAX_LOG_BYTES``
  (4 MiB) of Python output and then counts what it drops, saying so in the log; the kernel keeps
  the last ``KEEP_LINES`` lines of each rank (``RankError.output``), counting the ones let go. A
  rank can also hand values to the launcher as it goes (``report``, ``run(progress=...)``).

The launcher is five modules: this one (``run``: start, wait, report), ``rank_process`` (what runs in
each rank: ``current``, ``init_process_group``, ``report``), ``processes`` (process groups, the
watcher, the run's folder, ``live_children``), ``stalls`` (who stalled at a timeout, whether the
ranks still moved, ``parse_stack``) and ``limits`` (open files, processes, the temporary folder). Their
public names are importable from here.
"""
from __future__ import annotations

import collections
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings

from .. import validate
from . import budget
from .limits import LabLimitError, explain_rank, temp_root  # noqa: F401 (LabLimitError: lab's name for it)
from .limits import check as _check_limits, explain as _explain_limit
from .processes import (_PREFIX, PIDS_FILE, _kill_all, _own_process_group, _start_watcher,  # noqa: F401
                        _stop_watcher, clean_stale_folders, live_children, session_members, start_time,
                        write_owner)
from .rank_process import (MAX_TIMEOUT_S, RankInfo, _child, _loopback_name, current, init_process_group,  # noqa: F401
                           read_reports, report)
from . import stalls
from .stalls import _who_stalled, parse_stack  # noqa: F401

MAX_RANKS = 64
_POLL_S = 0.01


class RankError(RuntimeError):
    """A rank raised or died. ``rank`` is the first rank that failed, ``cause`` a short reason."""

    output: str = ""  # the failed rank's last lines (``KEEP_LINES`` at most), when the run had them

    def __init__(self, rank: int, cause: str, detail: str = ""):
        self.rank, self.cause, self.detail = rank, cause, detail
        text = f"rank {rank} failed: {cause}"
        if detail:
            text += "\n--- traceback on rank %d ---\n%s" % (rank, detail.rstrip())
        super().__init__(text)


class RankTimeout(RankError):
    """The run did not finish in time.

    ``unfinished`` lists the ranks still running; ``stalled`` those among them that were not
    waiting for a peer (in a send, receive, ``wait`` or collective) when the time ran out, or all
    of them when none or every one was; ``where`` maps a rank to its innermost Python frame;
    ``cpu_ticks`` to the CPU time (1/100 s) it used while the stacks were taken. ``kind`` says what
    was seen: ``"deadlock"`` only when every rank waited for a peer and none used CPU (each waits
    on another: proven stuck); ``"slow"`` when every rank was in a collective but they still used
    CPU (moving, too slowly for the time given); ``"stalled"`` when some ranks waited for others
    that did not; ``"busy"`` when none waited for a peer (a loop that never ends, or too little
    time); ``"never_joined"``; ``"unknown"`` when no stack could be read.
    """

    def __init__(self, stalled: list[int], timeout: float, never_joined: list[int] = (),
                 unfinished: list[int] | None = None, where: dict | None = None,
                 waiting: list[int] | None = None, moving: bool | None = None, cpu_ticks: dict | None = None):
        self.stalled, self.timeout, self.never_joined = list(stalled), timeout, list(never_joined)
        self.unfinished = list(unfinished) if unfinished is not None else list(stalled)
        self.where = dict(where or {})
        self.cpu_ticks = dict(cpu_ticks or {})
        if waiting is None:
            waiting = [r for r in self.unfinished if r not in self.stalled]
        self.waiting = list(waiting)
        at = _places(self.where)
        if self.never_joined:
            self.kind, why = "never_joined", f"ranks {self.never_joined} never joined the process group"
        elif self.waiting and set(self.waiting) != set(self.unfinished):
            names = ", ".join(f"rank {r}" + (f" at {self.where[r]}" if r in self.where else "")
                              for r in self.stalled)
            them = "them" if len(self.stalled) > 1 else "it"
            self.kind, why = "stalled", f"{names} stalled while ranks {self.waiting} waited for {them}"
        elif self.where and self.waiting:
            used = sum(self.cpu_ticks.values())
            if moving is False:
                self.kind = "deadlock"
                why = f"a deadlock: every rank waited for a peer and none moved ({_places(self.where)})"
            elif moving:
                self.kind = "slow"
                why = (f"slow, not a deadlock: every rank was inside a collective and they were still moving "
                       f"({used / 100:.2f} s of CPU in the last {stalls._SAMPLE_S:g} s, messages waking them); "
                       "give it more time or use fewer ranks")
            else:
                self.kind, why = "unknown", f"every rank waited for a peer: a deadlock, or too slow to tell ({at})"
        elif self.where:
            self.kind = "busy"
            why = (f"no rank was waiting for a peer, so not a deadlock: still running ({at}); "
                   "a loop that never ends, or too little time")
        else:
            self.kind, why = "unknown", "stuck or too little time: no rank's stack could be read"
        RuntimeError.__init__(self, f"ranks {rank_list(self.unfinished)} did not finish within {timeout:g} s ({why}); "
                                    "every rank was stopped")
        self.rank, self.cause, self.detail = self.stalled[0], "timeout", ""


def rank_list(ranks) -> str:
    """``[0, 1, 2, 3, 5, 6]`` as ``0-3, 5, 6`` (a run of three or more as a range)."""
    out, start, prev = [], None, None
    for r in sorted(ranks) + [None]:
        if start is not None and r is not None and r == prev + 1:
            prev = r
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev > start + 1 else ", ".join(map(str, range(start, prev + 1))))
        start = prev = r
    return ", ".join(out)


def _places(where: dict) -> str:
    """``{rank: place}`` as ``ranks 0-63 at place`` (ranks at one place together), or ``rank 0 at place``."""
    places: dict = {}
    for rank, place in sorted(where.items()):
        places.setdefault(place, []).append(rank)
    return "; ".join(f"rank{'s' if len(rs) > 1 else ''} {rank_list(rs)} at {place}" for place, rs in places.items())


def default_start_method() -> str:
    """``"fork"`` where the platform has it (Linux), else ``"spawn"``."""
    return "fork" if "fork" in mp.get_all_start_methods() and sys.platform.startswith("linux") else "spawn"


class _HeldInterrupt:
    """Hold back SIGINT (a Stop) for the duration of a ``with`` block, then raise it.

    In the main thread only (Python runs signal handlers there): the handler is replaced by
    one that records the interrupt, and SIGINT is blocked in this thread so that children
    forked inside the block start with it blocked (they ignore it before unblocking). On
    exit the old handler comes back and a recorded interrupt is raised (``reraise``) or
    dropped. Elsewhere it does nothing.
    """

    def __init__(self, reraise=True):
        self.reraise, self.hit, self.active = reraise, False, False

    def _record(self, signum, frame):
        self.hit = True

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        self.old = signal.getsignal(signal.SIGINT)
        if self.old is None:  # installed outside Python: leave it alone
            return self
        signal.signal(signal.SIGINT, self._record)
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        self.active = True
        return self

    def __exit__(self, kind, value, tb):
        if not self.active:
            return False
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending one lands in _record
        signal.signal(signal.SIGINT, self.old)
        self.active = False
        if self.hit and self.reraise and kind is None:
            if callable(self.old):
                self.old(signal.SIGINT, None)  # default_int_handler raises KeyboardInterrupt
            elif self.old == signal.SIG_DFL:
                raise KeyboardInterrupt
        return False


KEEP_LINES = 1000  # of each rank's output, kept in the kernel (the latest; earlier ones are counted)


class _Echo:
    """Reads the ranks' log files and prints complete new lines, prefixed by rank, in one write per poll.

    Of each rank's lines it keeps the last ``KEEP_LINES`` (``tail``), counting the ones it let go,
    so a rank that prints for minutes costs the kernel no more memory than one that prints a page.
    """

    def __init__(self, workdir, world_size, enabled):
        self.paths = [os.path.join(workdir, f"rank{r}.log") for r in range(world_size)]
        self.offsets = [0] * world_size
        self.partial = [b""] * world_size
        self.enabled = enabled
        self.lines = [collections.deque(maxlen=KEEP_LINES) for _ in range(world_size)]
        self.seen = [0] * world_size

    def tail(self, rank) -> str:
        """The last lines rank ``rank`` printed, after a line saying how many earlier ones were let go."""
        kept = list(self.lines[rank])
        dropped = self.seen[rank] - len(kept)
        head = [f"[{dropped} earlier lines of rank {rank} not kept: the kernel keeps the last {KEEP_LINES}]"] \
            if dropped else []
        return "\n".join(head + kept)

    def poll(self, final=False):
        batch = []
        for rank, path in enumerate(self.paths):
            try:
                with open(path, "rb") as handle:
                    handle.seek(self.offsets[rank])
                    chunk = handle.read()
            except OSError:
                continue
            if not chunk and not (final and self.partial[rank]):
                continue
            self.offsets[rank] += len(chunk)
            data = self.partial[rank] + chunk
            parts = data.split(b"\n")
            self.partial[rank] = parts.pop()
            if final and self.partial[rank]:
                parts.append(self.partial[rank])
                self.partial[rank] = b""
            prefix = f"[rank {rank}] "
            lines = [raw.decode("utf-8", "replace") for raw in parts]
            self.lines[rank].extend(lines)
            self.seen[rank] += len(lines)
            if self.enabled:
                batch.extend(prefix + line + "\n" for line in lines)
        if batch:
            sys.stdout.write("".join(batch))
            sys.stdout.flush()


def _read_result(workdir, rank):
    path = os.path.join(workdir, f"rank{rank}.result")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as handle:
        return pickle.load(handle)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _checked(fn, ranks, timeout, args, kwargs, backend, start_method, threads, progress) -> tuple:
    """``run``'s arguments, checked (a ValueError names the parameter and what it allows):
    (ranks, timeout, threads, backend, start_method)."""
    ranks = validate.integer("ranks", ranks, low=1, high=MAX_RANKS)
    timeout = validate.number("timeout", timeout, low=0.0, high=MAX_TIMEOUT_S, low_inclusive=False)
    threads = validate.integer("threads", threads, low=1, high=64)
    backend = validate.choice("backend", backend, ("gloo", "nccl"))
    start_method = validate.choice("start_method", start_method or default_start_method(), ("fork", "spawn"))
    if not callable(fn):
        raise ValueError(f"fn must be a callable taking (rank, world_size, ...), got {fn!r}")
    if not isinstance(args, tuple):
        raise ValueError(f"args must be a tuple, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"kwargs must be a dict or None, got {type(kwargs).__name__}")
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be a callable taking (rank, value) or None, got {progress!r}")
    if start_method not in mp.get_all_start_methods():
        raise ValueError(f"start_method must be one of {mp.get_all_start_methods()} on this platform, "
                         f"got {start_method!r}")
    if start_method == "spawn" and getattr(fn, "__module__", "__main__") == "__main__":
        raise ValueError("fn must live in an importable module with start_method='spawn' "
                         "(a function defined in a notebook cell needs start_method='fork')")
    if backend == "nccl":
        import torch
        if not torch.cuda.is_available():
            raise ValueError("backend must be 'gloo' on a machine without CUDA GPUs")
    return ranks, timeout, threads, backend, start_method


def _start_ranks(ctx, procs, held, workdir, fn, ranks, child_args) -> None:
    """Start one process per rank into ``procs`` (``_child(fn, rank, ranks, *child_args)``), each in its own
    process group, its pid and start time written to the pids file the watcher reads; no more once Stop
    was pressed (``held.hit``)."""
    with open(os.path.join(workdir, PIDS_FILE), "a") as pids:
        for rank in range(ranks):
            if held.hit:  # Stop was pressed: fork no more, raise it on leaving the block
                break
            proc = ctx.Process(target=_child, name=f"course-lab-rank{rank}", daemon=True,
                               args=(fn, rank, ranks, *child_args))
            proc.start()
            procs.append(proc)
            proc.course_start_time = start_time(proc.pid)  # with the pid: this very process
            _own_process_group(proc.pid)
            pids.write(f"{proc.pid} {proc.course_start_time}\n")
            pids.flush()


def run(fn, ranks: int = 2, timeout: float = 30, *, args: tuple = (), kwargs: dict | None = None,
        backend: str = "gloo", start_method: str | None = None, threads: int = 1,
        init: bool = True, echo: bool = True, progress=None) -> list:
    """Run ``fn(rank, world_size, *args, **kwargs)`` on ``ranks`` local processes; return their results.

    ``ranks`` in [1, 64]; ``timeout`` in (0, 3600] seconds for the whole run; ``backend``
    ``"gloo"`` (CPU, 127.0.0.1) or ``"nccl"`` (one GPU per rank); ``start_method`` ``"fork"``
    (notebook functions work; Linux) or ``"spawn"`` (``fn`` must be importable);
    ``threads`` in [1, 64] torch threads per rank; ``init=False`` leaves joining the group
    to ``fn`` (``init_process_group()``); ``progress(rank, value)`` is called in this process with each
    value a rank hands over with ``report(value)``, as it arrives. Raises ``RankError`` naming the failed
    rank, ``RankTimeout`` past the timeout, ``LabLimitError`` (one line) when a limit of the machine
    (open files, processes, the temporary folder) stops the launch; every child is gone when it
    returns or raises.
    """
    ranks, timeout, threads, backend, start_method = _checked(fn, ranks, timeout, args, kwargs, backend,
                                                              start_method, threads, progress)
    ctx = mp.get_context(start_method)
    root = temp_root()
    clean_stale_folders(root)
    _check_limits(ranks, root, threads)
    lease = budget.acquire(ranks)  # a shared server's rank budget: may queue, or refuse in one line
    procs = []
    watcher = None
    workdir = None
    echoer = None
    in_flight = True  # an error (or a Stop) is on its way out: a Stop during cleanup is not raised again
    try:
        with _HeldInterrupt() as held, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python 3.12+)
            try:
                workdir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}_", dir=root)
                write_owner(workdir)
                echoer = _Echo(workdir, ranks, echo)
                watcher = _start_watcher(workdir, os.getpid())
                _start_ranks(ctx, procs, held, workdir, fn, ranks,
                             (args, kwargs or {}, workdir, backend, timeout, threads, init, os.getpid()))
            except OSError as exc:  # out of files, processes or room: one line naming the limit
                limit = _explain_limit(exc, ranks, root)
                if limit is None:
                    raise
                raise limit from None
        try:
            results = _wait(procs, workdir, ranks, timeout, echoer, _Reports(workdir, ranks, progress))
        except RankError as err:
            err.output = echoer.tail(err.rank)
            limit = explain_rank(f"{err.cause}\n{err.detail}", ranks, root)
            if limit is not None:
                raise limit from None
            raise
        in_flight = False
        return results
    finally:
        # A second Stop must not leave processes behind: it is held while cleaning up, then raised
        # unless an error (or the first Stop) is already on its way out. Dropping it lost 5-11% of
        # the Stops pressed during a loop of launches.
        with _HeldInterrupt(reraise=not in_flight):
            _kill_all(procs)
            if echoer is not None:
                echoer.poll(final=True)
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
            _stop_watcher(watcher)
            lease.release()


def _first_failure(procs, workdir, done) -> RankError:
    """The error of the rank that failed first among those that exited without a result.

    When one rank fails, its peers usually fail a moment later (their connections close), and
    more than one may have exited by the time the parent looks: the earliest failure is the
    cause. A rank that died without reporting (a signal, a crash) cannot have been told to by
    a peer's report, so it counts as the earliest.
    """
    failures = []
    for rank, proc in enumerate(procs):
        if done[rank] or proc.exitcode is None:
            continue
        payload = _read_result(workdir, rank)
        if payload and payload["ok"] and proc.exitcode == 0:
            continue
        if payload and not payload["ok"]:
            error = RankError(rank, f"{payload['type']}: {payload['message']}", payload["traceback"])
            failures.append((payload.get("failed_at", float("inf")), rank, error))
        elif proc.exitcode < 0:
            failures.append((float("-inf"), rank, RankError(
                rank, f"the process died from {_signal_name(proc.exitcode)} (killed, out of memory, or a crash)")))
        else:
            failures.append((float("-inf"), rank, RankError(
                rank, f"the process exited with code {proc.exitcode} without a result")))
    return min(failures, key=lambda f: (f[0], f[1]))[2]


class _Reports:
    """Hands each rank's ``report`` values to ``progress(rank, value)`` as they arrive (nothing without it)."""

    def __init__(self, workdir, world_size, progress):
        self.paths = [os.path.join(workdir, f"rank{r}.progress") for r in range(world_size)]
        self.offsets = [0] * world_size
        self.progress = progress

    def poll(self):
        if self.progress is None:
            return
        for rank, path in enumerate(self.paths):
            values, self.offsets[rank] = read_reports(path, self.offsets[rank])
            for value in values:
                self.progress(rank, value)


def _wait(procs, workdir, ranks, timeout, echoer, reports):
    start = time.monotonic()
    results: list = [None] * ranks
    done = [False] * ranks
    while True:
        echoer.poll()
        reports.poll()
        for rank, proc in enumerate(procs):
            if done[rank] or proc.exitcode is None:
                continue
            payload = _read_result(workdir, rank)
            if proc.exitcode == 0 and payload and payload["ok"]:
                results[rank], done[rank] = payload["value"], True
                continue
            echoer.poll(final=True)
            reports.poll()
            raise _first_failure(procs, workdir, done)
        if all(done):
            reports.poll()
            return results
        if time.monotonic() - start > timeout:
            echoer.poll(final=True)
            reports.poll()
            absent = [r for r in range(ranks)
                      if not os.path.exists(os.path.join(workdir, f"rank{r}.joined"))]
            if len(absent) == ranks:  # nobody came: the function never joined, or init=True was stuck
                absent = []
            unfinished = [r for r in range(ranks) if not done[r]]
            stalled, where, waiting, went_on, used = _who_stalled(procs, workdir, unfinished)
            if absent:
                stalled = [r for r in absent if r in unfinished] or stalled
            raise RankTimeout(stalled, timeout, absent, unfinished=unfinished, where=where, waiting=waiting,
                              moving=went_on, cpu_ticks=used)
        time.sleep(_POLL_S)
