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
  killed (a kernel restart). Folders of dead launchers are removed at the next launch.
* **Output.** Each rank's stdout and stderr (Python and C level) go to a file that the
  parent reads while it waits, printing the new lines of all ranks, each prefixed
  ``[rank r]``, in one write per poll (a line per write made 100k lines take over a minute
  in Jupyter).
"""
from __future__ import annotations

import ctypes
import datetime
import faulthandler
import io
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import dataclass

from .. import validate

MAX_RANKS = 64
MAX_TIMEOUT_S = 3600.0
_POLL_S = 0.01
_GRACE_S = 5.0
_STACK_WAIT_S = 1.0
_PREFIX = "course_lab_"


class RankError(RuntimeError):
    """A rank raised or died. ``rank`` is the first rank that failed, ``cause`` a short reason."""

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
    of them when none or every one was; ``where`` maps a rank to its innermost Python frame.
    """

    def __init__(self, stalled: list[int], timeout: float, never_joined: list[int] = (),
                 unfinished: list[int] | None = None, where: dict | None = None):
        self.stalled, self.timeout, self.never_joined = list(stalled), timeout, list(never_joined)
        self.unfinished = list(unfinished) if unfinished is not None else list(stalled)
        self.where = dict(where or {})
        waiting = [r for r in self.unfinished if r not in self.stalled]
        if self.never_joined:
            why = f"ranks {self.never_joined} never joined the process group"
        elif waiting:
            names = ", ".join(f"rank {r}" + (f" at {self.where[r]}" if r in self.where else "")
                              for r in self.stalled)
            why = f"{names} stalled while ranks {waiting} waited for it"
            if len(self.stalled) > 1:
                why = why.replace("waited for it", "waited for them")
        elif self.where:
            why = "a deadlock: every rank waited for a peer (" + "; ".join(
                f"rank {r} at {w}" for r, w in sorted(self.where.items())) + ")"
        else:
            why = "a deadlock or too little time"
        RuntimeError.__init__(self, f"ranks {self.unfinished} did not finish within {timeout:g} s ({why}); "
                                    "every rank was stopped")
        self.rank, self.cause, self.detail = self.stalled[0], "timeout", ""


@dataclass(frozen=True)
class RankInfo:
    """What a running rank knows about the launch (see ``current()``)."""

    rank: int
    world_size: int
    backend: str
    device: str


_CURRENT: RankInfo | None = None
_WORKDIR: str | None = None


def current() -> RankInfo | None:
    """The ``RankInfo`` of this process when it is a rank started by ``run``, else None."""
    return _CURRENT


def default_start_method() -> str:
    """``"fork"`` where the platform has it (Linux), else ``"spawn"``."""
    return "fork" if "fork" in mp.get_all_start_methods() and sys.platform.startswith("linux") else "spawn"


def _set_parent_death_signal():
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - best effort
        pass


def _redirect_output(log_path: str):
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)


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


def _ignore_interrupts_in_child():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; Ctrl-C must not split ranks
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a held one is dropped


def _own_process_group(pid=0):
    try:
        os.setpgid(pid, pid)
    except (OSError, AttributeError):  # already exec'd (spawn), gone, or not POSIX
        pass


def _child(fn, rank, world_size, args, kwargs, workdir, backend, timeout, threads, init, parent_pid):
    """Body of one rank. Never returns: leaves with ``os._exit``."""
    global _CURRENT, _WORKDIR
    code = 1
    _ignore_interrupts_in_child()
    _own_process_group()
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # parent died before prctl took effect
        os._exit(1)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(timeout + _GRACE_S) + 1)
    try:
        _redirect_output(os.path.join(workdir, f"rank{rank}.log"))
        stack_file = open(os.path.join(workdir, f"rank{rank}.stack"), "w")
        stack_file.write(f"main thread 0x{threading.main_thread().ident:x}\n")
        stack_file.flush()
        if hasattr(signal, "SIGUSR1"):
            faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
        import torch
        import torch.distributed as dist

        torch.set_num_threads(threads)
        device = "cpu"
        if backend == "nccl":
            device = f"cuda:{rank % torch.cuda.device_count()}"
            torch.cuda.set_device(device)
        os.environ.update(GLOO_SOCKET_IFNAME=_loopback_name(), MASTER_ADDR="127.0.0.1",
                          RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
        _CURRENT, _WORKDIR = RankInfo(rank, world_size, backend, device), workdir
        if init:
            init_process_group(timeout=timeout)
        value = fn(rank, world_size, *args, **kwargs)
        if dist.is_initialized():
            dist.destroy_process_group()
        payload = {"ok": True, "value": value}
        code = 0
    except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
        payload = {"ok": False, "type": type(exc).__name__, "message": str(exc),
                   "traceback": traceback.format_exc(), "failed_at": time.monotonic()}
    try:
        try:
            data = pickle.dumps(payload)
        except Exception as exc:  # noqa: BLE001
            data = pickle.dumps({"ok": False, "type": "PicklingError",
                                 "message": f"the return value of rank {rank} cannot be pickled: {exc}",
                                 "traceback": ""})
            code = 1
        tmp = os.path.join(workdir, f"rank{rank}.tmp")
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, os.path.join(workdir, f"rank{rank}.result"))
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _loopback_name() -> str:
    """Name of the loopback interface (``lo`` on Linux, ``lo0`` on macOS)."""
    return "lo0" if sys.platform == "darwin" else "lo"


def init_process_group(backend: str | None = None, timeout: float = 30.0):
    """Join the process group of the current ``run`` (or of ``torchrun``) from the environment.

    ``timeout`` (s, in (0, 3600]) bounds every collective, so a stalled peer raises.
    Used by ``run(..., init=False)`` functions that want to join themselves; returns when every
    rank has joined. Inside ``run``
    the ranks meet through a ``FileStore`` in the run's folder; under ``torchrun``, through
    ``MASTER_ADDR``/``MASTER_PORT``.
    """
    import torch.distributed as dist

    timeout = validate.number("timeout", timeout, low=0.0, high=MAX_TIMEOUT_S, low_inclusive=False)
    info = current()
    if backend is None:
        backend = info.backend if info else "gloo"
    backend = validate.choice("backend", backend, ("gloo", "nccl"))
    os.environ.setdefault("GLOO_SOCKET_IFNAME", _loopback_name())
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    delta = datetime.timedelta(seconds=timeout)
    if _WORKDIR is not None and info is not None:  # tell the launcher this rank came to the rendezvous
        open(os.path.join(_WORKDIR, f"rank{rank}.joined"), "w").close()
        store = dist.FileStore(os.path.join(_WORKDIR, "store"), world)
        store.set_timeout(delta)
    else:
        # torchrun's agent hosts the store itself; otherwise (RANK, WORLD_SIZE, MASTER_* set by hand) rank 0 does
        host = rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, host, delta)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=delta)
    # Returning only once every rank has connected: a rank whose function ends at once would
    # otherwise close its connections while a peer is still inside gloo's connectFullMesh
    # ("Connection closed by peer"; seen in 1 of 30 quick 8-rank launches).
    dist.barrier()


class _Echo:
    """Reads the ranks' log files and prints complete new lines, prefixed by rank, in one write per poll."""

    def __init__(self, workdir, world_size, enabled):
        self.paths = [os.path.join(workdir, f"rank{r}.log") for r in range(world_size)]
        self.offsets = [0] * world_size
        self.partial = [b""] * world_size
        self.enabled = enabled
        self.lines: list[list[str]] = [[] for _ in range(world_size)]

    def poll(self, final=False):
        batch = []
        for rank, path in enumerate(self.paths):
            try:
                with open(path, "rb") as handle:
                    handle.seek(self.offsets[rank])
                    chunk = handle.read()
            except FileNotFoundError:
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
            for raw in parts:
                line = raw.decode("utf-8", "replace")
                self.lines[rank].append(line)
                if self.enabled:
                    batch.append(prefix + line + "\n")
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


# ---------------------------------------------------------------- the run's folder and its watcher

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
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
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


def run(fn, ranks: int = 2, timeout: float = 30, *, args: tuple = (), kwargs: dict | None = None,
        backend: str = "gloo", start_method: str | None = None, threads: int = 1,
        init: bool = True, echo: bool = True) -> list:
    """Run ``fn(rank, world_size, *args, **kwargs)`` on ``ranks`` local processes; return their results.

    ``ranks`` in [1, 64]; ``timeout`` in (0, 3600] seconds for the whole run; ``backend``
    ``"gloo"`` (CPU, 127.0.0.1) or ``"nccl"`` (one GPU per rank); ``start_method`` ``"fork"``
    (notebook functions work; Linux) or ``"spawn"`` (``fn`` must be importable);
    ``threads`` in [1, 64] torch threads per rank; ``init=False`` leaves joining the group
    to ``fn`` (``init_process_group()``). Raises ``RankError`` naming the failed rank,
    ``RankTimeout`` past the timeout; every child is gone when it returns or raises.
    """
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
    ctx = mp.get_context(start_method)
    clean_stale_folders()
    workdir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}_")
    procs = []
    watcher = None
    echoer = _Echo(workdir, ranks, echo)
    try:
        with _HeldInterrupt() as held, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python 3.12+)
            watcher = _start_watcher(workdir, os.getpid())
            with open(os.path.join(workdir, "pids"), "a") as pids:
                for rank in range(ranks):
                    if held.hit:  # Stop was pressed: fork no more, raise it on leaving the block
                        break
                    proc = ctx.Process(target=_child, name=f"course-lab-rank{rank}", daemon=True,
                                       args=(fn, rank, ranks, args, kwargs or {}, workdir, backend,
                                             timeout, threads, init, os.getpid()))
                    proc.start()
                    procs.append(proc)
                    _own_process_group(proc.pid)
                    pids.write(f"{proc.pid}\n")
                    pids.flush()
        return _wait(procs, workdir, ranks, timeout, echoer)
    finally:
        with _HeldInterrupt(reraise=False):  # a second Stop must not leave processes behind
            _kill_all(procs)
            echoer.poll(final=True)
            shutil.rmtree(workdir, ignore_errors=True)
            _stop_watcher(watcher)


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


# ---------------------------------------------------------------- who stalled

_PEER_CALLS = ("wait(", "send(", "recv(", "barrier(", "all_reduce(", "all_gather", "reduce_scatter",
               "broadcast(", "all_to_all", "gather(", "scatter(", "reduce(", "monitored_barrier(")


def parse_stack(text: str) -> list[tuple[str, int, str]]:
    """The main thread's frames, innermost first, as (file, line, function), from a
    ``faulthandler`` dump written after a ``main thread 0x...`` header line."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("main thread 0x"):
        return []
    main = int(lines[0].split()[-1], 16)
    frames, in_main = [], False
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith(("Thread 0x", "Current thread 0x")):
            if frames and in_main:
                break  # the latest dump's main thread is complete
            ident = next(tok for tok in stripped.split() if tok.startswith("0x"))
            in_main = int(ident, 16) == main
            frames = [] if in_main else frames
        elif in_main and stripped.startswith("File "):
            try:
                path = stripped.split('"')[1]
                rest = stripped.split('"', 2)[2]
                lineno = int(rest.split("line", 1)[1].split()[0])
                func = rest.split(" in ", 1)[1].strip()
            except (IndexError, ValueError):
                continue
            frames.append((path, lineno, func))
    return frames


def _waits_for_peer(frames) -> bool:
    """Whether the innermost frame is a torch.distributed call or a line that calls one (e.g. ``work.wait()``)."""
    import linecache

    if not frames:
        return False
    path, lineno, _ = frames[0]
    if f"torch{os.sep}distributed" in path:
        return True
    source = linecache.getline(path, lineno)
    return any(call in source for call in _PEER_CALLS)


def _describe(frames) -> str:
    import linecache

    path, lineno, func = frames[0]
    source = linecache.getline(path, lineno).strip()
    return f"{func} ({os.path.basename(path)}:{lineno}" + (f": {source}" if source else "") + ")"


def _who_stalled(procs, workdir, unfinished):
    """Ask every unfinished rank for its stack; return (stalled ranks, {rank: where})."""
    if not hasattr(signal, "SIGUSR1"):
        return unfinished, {}
    sizes = {}
    for rank in unfinished:
        path = os.path.join(workdir, f"rank{rank}.stack")
        try:
            sizes[rank] = os.path.getsize(path)
            os.kill(procs[rank].pid, signal.SIGUSR1)
        except OSError:
            continue
    deadline = time.monotonic() + _STACK_WAIT_S
    stacks = {}
    while time.monotonic() < deadline and len(stacks) < len(sizes):
        for rank in sizes:
            if rank in stacks:
                continue
            path = os.path.join(workdir, f"rank{rank}.stack")
            try:
                with open(path) as handle:
                    text = handle.read()
            except OSError:
                continue
            if len(text) > sizes[rank]:
                time.sleep(0.02)  # let the dump finish
                with open(path) as handle:
                    frames = parse_stack(handle.read())
                if frames:
                    stacks[rank] = frames
        time.sleep(0.01)
    where = {rank: _describe(frames) for rank, frames in stacks.items()}
    stalled = [r for r in unfinished if r in stacks and not _waits_for_peer(stacks[r])]
    if not stalled or len(stalled) == len(unfinished):
        stalled = list(unfinished)
    return stalled, where


def _wait(procs, workdir, ranks, timeout, echoer):
    start = time.monotonic()
    results: list = [None] * ranks
    done = [False] * ranks
    while True:
        echoer.poll()
        for rank, proc in enumerate(procs):
            if done[rank] or proc.exitcode is None:
                continue
            payload = _read_result(workdir, rank)
            if proc.exitcode == 0 and payload and payload["ok"]:
                results[rank], done[rank] = payload["value"], True
                continue
            echoer.poll(final=True)
            raise _first_failure(procs, workdir, done)
        if all(done):
            return results
        if time.monotonic() - start > timeout:
            echoer.poll(final=True)
            absent = [r for r in range(ranks)
                      if not os.path.exists(os.path.join(workdir, f"rank{r}.joined"))]
            if len(absent) == ranks:  # nobody came: the function never joined, or init=True was stuck
                absent = []
            unfinished = [r for r in range(ranks) if not done[r]]
            stalled, where = _who_stalled(procs, workdir, unfinished)
            if absent:
                stalled = [r for r in absent if r in unfinished] or stalled
            raise RankTimeout(stalled, timeout, absent, unfinished=unfinished, where=where)
        time.sleep(_POLL_S)
