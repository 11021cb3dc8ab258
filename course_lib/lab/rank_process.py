"""Inside one rank of ``launch.run``: the child's body, what it knows (``current``) and how it joins
the process group (``init_process_group``).
"""
from __future__ import annotations

import ctypes
import datetime
import faulthandler
import io
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass

from .. import units, validate
from .processes import _ignore_interrupts_in_child, _own_process_group

MAX_TIMEOUT_S = 3600.0
_GRACE_S = 5.0


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


def _set_parent_death_signal():
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - best effort
        pass


MAX_LOG_BYTES = 4 * 2**20  # of one rank's Python output per run: past it, lines are counted, not written


class _CappedLog(io.RawIOBase):
    """The rank's log (fd 1, which fd 2 shares) as Python writes it: the first ``MAX_LOG_BYTES`` are
    written, later output is dropped and counted; a line says so when it starts and ``close_note`` how
    much at the end. (Output written by C code straight to fd 1 or 2 is not counted.)"""

    def __init__(self, fd=1, cap=None):
        super().__init__()
        self.fd, self.written, self.dropped_bytes, self.dropped_lines = fd, 0, 0, 0
        self.cap = MAX_LOG_BYTES if cap is None else cap

    def writable(self):
        return True

    def _raw(self, data):
        while data:
            data = data[os.write(self.fd, data):]

    def write(self, data):
        data = bytes(data)
        if self.written + len(data) <= self.cap:
            self._raw(data)
            self.written += len(data)
        else:
            if not self.dropped_bytes:
                self._raw(f"\n[this rank has printed {units.format_bytes(self.cap, binary=True)}, the most a rank's "
                          "log keeps; further output is dropped and counted]\n".encode())
            self.dropped_bytes += len(data)
            self.dropped_lines += data.count(b"\n")
        return len(data)

    def close_note(self):
        if self.dropped_bytes:
            self._raw(f"[{self.dropped_lines} lines ({self.dropped_bytes} bytes) of this rank's output were "
                      f"dropped past the {units.format_bytes(self.cap, binary=True)} cap]\n".encode())


_LOG: _CappedLog | None = None


def _redirect_output(log_path: str):
    global _LOG
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    _LOG = _CappedLog(1)
    sys.stdout = io.TextIOWrapper(_LOG, line_buffering=True)
    sys.stderr = io.TextIOWrapper(_LOG, line_buffering=True)


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
        if _LOG is not None:
            _LOG.close_note()
    finally:
        os._exit(code)


def report(value) -> None:
    """In a rank of ``run``: hand ``value`` (picklable) to the launcher now, before the rank returns;
    ``run(..., progress=f)`` calls ``f(rank, value)`` as it arrives, so what a long run has done is
    kept even if it fails later. Elsewhere (not a rank of ``run``, e.g. under torchrun) it does nothing."""
    if _WORKDIR is None or _CURRENT is None:
        return
    data = pickle.dumps(value)
    with open(os.path.join(_WORKDIR, f"rank{_CURRENT.rank}.progress"), "ab") as handle:
        handle.write(len(data).to_bytes(8, "little") + data)


def read_reports(path, offset):
    """(values, new offset): the complete ``report`` records in ``path`` from byte ``offset`` on."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    values, at = [], 0
    while at + 8 <= len(data):
        size = int.from_bytes(data[at:at + 8], "little")
        if at + 8 + size > len(data):
            break  # being written
        values.append(pickle.loads(data[at + 8:at + 8 + size]))
        at += 8 + size
    return values, offset + at


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
