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

from .. import validate
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


def _redirect_output(log_path: str):
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)


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
