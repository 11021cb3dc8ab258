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
* **Port.** The parent hosts the rendezvous store on port 0 (the kernel picks a free
  one) *after* the children exist, and hands them the number through a file. No port
  is guessed, so two runs, or two users, never race for one; the children never
  inherit the listening socket.
* **Faults.** The parent polls the children every 10 ms. A rank that raises writes its
  traceback and exits; a rank that dies (SIGKILL, segfault) shows a negative exit
  code; either way every other rank is killed at once and ``RankError`` names the rank
  and the cause. Past ``timeout`` seconds the run is stopped and ``RankTimeout`` names
  the ranks still running. On ``KeyboardInterrupt`` (a stopped cell) or any other
  error all children are killed before the exception goes on. Each child also asks
  the kernel to kill it if the parent dies (Linux ``PR_SET_PDEATHSIG``) and carries an
  alarm a little past the timeout, so no process outlives a run.
* **Output.** Each rank's stdout and stderr (Python and C level) go to a file that the
  parent reads while it waits, printing each line prefixed ``[rank r]``.
"""
from __future__ import annotations

import ctypes
import datetime
import io
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass

from .. import validate

MAX_RANKS = 64
MAX_TIMEOUT_S = 3600.0
_POLL_S = 0.01
_GRACE_S = 5.0


class RankError(RuntimeError):
    """A rank raised or died. ``rank`` is the first rank that failed, ``cause`` a short reason."""

    def __init__(self, rank: int, cause: str, detail: str = ""):
        self.rank, self.cause, self.detail = rank, cause, detail
        text = f"rank {rank} failed: {cause}"
        if detail:
            text += "\n--- traceback on rank %d ---\n%s" % (rank, detail.rstrip())
        super().__init__(text)


class RankTimeout(RankError):
    """The run did not finish in time. ``stalled`` lists the ranks still running."""

    def __init__(self, stalled: list[int], timeout: float, never_joined: list[int] = ()):
        self.stalled, self.timeout, self.never_joined = stalled, timeout, list(never_joined)
        why = (f"ranks {self.never_joined} never joined the process group" if self.never_joined
               else "a deadlock or too little time")
        RuntimeError.__init__(self, f"ranks {stalled} did not finish within {timeout:g} s ({why}); "
                                    "every rank was stopped")
        self.rank, self.cause, self.detail = stalled[0], "timeout", ""


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


def _wait_for_port(path: str, deadline: float) -> int:
    while time.monotonic() < deadline:
        try:
            with open(path) as handle:
                text = handle.read()
            if text.endswith("\n"):
                return int(text)
        except FileNotFoundError:
            pass
        time.sleep(0.005)
    raise TimeoutError("the launcher never published the rendezvous port")


def _child(fn, rank, world_size, args, kwargs, workdir, backend, timeout, threads, init, parent_pid):
    """Body of one rank. Never returns: leaves with ``os._exit``."""
    global _CURRENT, _WORKDIR
    code = 1
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # parent died before prctl took effect
        os._exit(1)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(timeout + _GRACE_S) + 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; Ctrl-C must not split ranks
    try:
        _redirect_output(os.path.join(workdir, f"rank{rank}.log"))
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
        deadline = time.monotonic() + timeout
        port = _wait_for_port(os.path.join(workdir, "port"), deadline)
        os.environ["MASTER_PORT"] = str(port)
        if init:
            init_process_group(timeout=max(1.0, deadline - time.monotonic()))
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
    Used by ``run(..., init=False)`` functions that want to join themselves.
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
    if _WORKDIR is not None and info is not None:  # tell the launcher this rank came to the rendezvous
        open(os.path.join(_WORKDIR, f"rank{rank}.joined"), "w").close()
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, False,
                          datetime.timedelta(seconds=timeout))
    dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))


class _Echo:
    """Reads the ranks' log files and prints complete new lines, prefixed by rank."""

    def __init__(self, workdir, world_size, enabled):
        self.paths = [os.path.join(workdir, f"rank{r}.log") for r in range(world_size)]
        self.offsets = [0] * world_size
        self.partial = [b""] * world_size
        self.enabled = enabled
        self.lines: list[list[str]] = [[] for _ in range(world_size)]

    def poll(self, final=False):
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
            for raw in parts:
                line = raw.decode("utf-8", "replace")
                self.lines[rank].append(line)
                if self.enabled:
                    print(f"[rank {rank}] {line}", flush=True)


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


def _kill_all(procs):
    for proc in procs:
        if proc.is_alive():
            try:
                proc.kill()
            except (OSError, ValueError):
                pass
    for proc in procs:
        try:
            proc.join(timeout=5)
        except (OSError, ValueError, AssertionError):
            pass
        try:
            proc.close()
        except (ValueError, AttributeError):
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
    workdir = tempfile.mkdtemp(prefix="course_lab_")
    procs = []
    store = None
    echoer = _Echo(workdir, ranks, echo)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python 3.12+)
            for rank in range(ranks):
                proc = ctx.Process(target=_child, name=f"course-lab-rank{rank}", daemon=True,
                                   args=(fn, rank, ranks, args, kwargs or {}, workdir, backend,
                                         timeout, threads, init, os.getpid()))
                proc.start()
                procs.append(proc)
        store = _host_store(workdir, timeout)
        return _wait(procs, workdir, ranks, timeout, echoer)
    finally:
        _kill_all(procs)
        echoer.poll(final=True)
        del store
        shutil.rmtree(workdir, ignore_errors=True)


def live_children(pid: int | None = None) -> list[int]:
    """Process ids of the live (not zombie) children of ``pid`` (default: this process), Linux only.

    multiprocessing's resource tracker (started once per interpreter by the 'spawn' start method,
    ending with it) is not a rank and is not listed. Used to show that a run leaves nothing behind.
    """
    pid = os.getpid() if pid is None else validate.integer("pid", pid, low=1)
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != pid or fields[0] == "Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if b"resource_tracker" in handle.read():
                    continue
        except OSError:
            continue
        out.append(int(entry))
    return out


def _host_store(workdir, timeout):
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=timeout),
                          wait_for_workers=False)
    tmp = os.path.join(workdir, "port.tmp")
    with open(tmp, "w") as handle:
        handle.write(f"{store.port}\n")
    os.replace(tmp, os.path.join(workdir, "port"))
    return store


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
            raise RankTimeout([r for r in range(ranks) if not done[r]], timeout, absent)
        time.sleep(_POLL_S)
