"""Memory a lab run needs, and what this machine has free: refuse before starting any rank.

The factors are measured, not guessed: peak resident memory of each rank above what it held
at the start (``ru_maxrss``), divided by the message (bench) or by the model's FP32 parameter
bytes (DDP), on Linux with torch 2.13 CPU and gloo.

* ``lab.bench``: 5.3 x the message with gloo's all-reduce alone, 5.8 x with the library's ring
  beside it (256 MiB float32, 2 ranks): input, expected sum, working buffer, the int32 index
  they are built from, gloo's own buffers and the ring's receive buffer. ``BENCH_FACTOR`` = 6.
* ``ddp_run``: model, gradients, DDP's bucket copies, the flat and bucketed all-reduce buffers
  and the three gradient copies of the correctness check. A fit of peak = a x parameter bytes
  + b x activation bytes (batch x width x depth floats) + c over three runs (MLPs of 2048 x 4,
  batch 32; 512 x 4, batch 4096; 1024 x 8, batch 1024; 2 ranks) gave a = 9.5, b = 1.8 and
  c = 165 MB: ``DDP_PARAM_FACTOR`` = 10, ``DDP_ACTIVATION_FACTOR`` = 2, ``DDP_OVERHEAD_BYTES``.
"""
from __future__ import annotations

import os

from .. import units, validate

BENCH_FACTOR = 6.0
DDP_PARAM_FACTOR = 10.0
DDP_ACTIVATION_FACTOR = 2.0
DDP_OVERHEAD_BYTES = 200e6  # DDP's own imports and buffers in each rank (measured 165 MB)
RANK_OVERHEAD_BYTES = 100e6  # a forked rank's own pages: gloo threads, stacks, allocator


def _meminfo_available():
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_available():
    """Room left under a container's memory limit (cgroup v2, then v1); None without a limit."""
    for limit_path, usage_path in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_path) as handle:
                limit = handle.read().strip()
            with open(usage_path) as handle:
                usage = float(handle.read().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or float(limit) >= 2**60:
            return None
        return max(0.0, float(limit) - usage)
    return None


def available_bytes() -> float | None:
    """Memory this process can still use, bytes: the kernel's MemAvailable, capped by a container
    limit; None where the platform does not say."""
    values = [v for v in (_meminfo_available(), _cgroup_available()) if v is not None]
    return min(values) if values else None


def bench_bytes(max_message_bytes, ranks) -> float:
    """Bytes a ``lab.bench`` run of ``ranks`` (>= 1) local ranks needs for its largest message (> 0 bytes)."""
    size = validate.positive("max_message_bytes", max_message_bytes)
    ranks = validate.integer("ranks", ranks, low=1)
    return ranks * (BENCH_FACTOR * size + RANK_OVERHEAD_BYTES)


def ddp_bytes(params, activation_bytes, ranks) -> float:
    """Bytes a ``ddp_run`` of ``ranks`` (>= 1) ranks needs: ``params`` (>= 1) FP32 parameters and
    ``activation_bytes`` (>= 0) of one forward pass's outputs on one rank."""
    params = validate.positive("params", params)
    activation_bytes = validate.non_negative("activation_bytes", activation_bytes)
    ranks = validate.integer("ranks", ranks, low=1)
    per_rank = DDP_PARAM_FACTOR * 4 * params + DDP_ACTIVATION_FACTOR * activation_bytes
    return ranks * (per_rank + DDP_OVERHEAD_BYTES)


def check(need_bytes, what: str, fix: str, available=None) -> None:
    """Raise ``ValueError`` when ``need_bytes`` exceeds the memory available (``available_bytes()``
    unless given); the message names ``what`` needs it, the two figures, and the ``fix``."""
    need = validate.non_negative("need_bytes", need_bytes)
    free = available_bytes() if available is None else validate.non_negative("available", available)
    if free is None or need <= free:
        return
    raise ValueError(f"{what} needs about {units.format_bytes(need)} of memory and only "
                     f"{units.format_bytes(free)} is available; {fix}")
