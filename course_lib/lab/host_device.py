"""Host<->device copy bandwidth on the learner's own CUDA GPU (chapter 01's measurement), with torch.

:func:`measure_host_device_bandwidth` times pinned and pageable copies in each direction and
returns a :class:`HostDeviceMeasurement` (bytes/s per direction); without a CUDA GPU it measures
nothing and says why. :mod:`course_lib.chapters.pcie` compares the result with the link's spec.
"""
from __future__ import annotations

import statistics
import subprocess
import time
from dataclasses import dataclass, field

from .. import validate

DIRECTIONS = ("h2d", "d2h")
MEMORIES = ("pinned", "pageable")


@dataclass
class HostDeviceMeasurement:
    """Result of :func:`measure_host_device_bandwidth`: bandwidths in bytes/s, one direction at a time."""

    available: bool
    reason: str = ""
    device_name: str = ""
    nbytes: int = 0
    pcie_generation: int | None = None
    pcie_lanes: int | None = None
    results: list = field(default_factory=list)  # dicts: direction, memory, seconds, bytes_per_s

    def bandwidth(self, direction="h2d", memory="pinned") -> float:
        """Measured bytes/s for one direction and memory kind."""
        direction = validate.choice("direction", direction, DIRECTIONS)
        memory = validate.choice("memory", memory, MEMORIES)
        for r in self.results:
            if r["direction"] == direction and r["memory"] == memory:
                return r["bytes_per_s"]
        raise ValueError(f"direction/memory {direction}/{memory} was not measured; measured: "
                         f"{[(r['direction'], r['memory']) for r in self.results]}")


def _median_seconds(copy, synchronize, repeats) -> float:
    """Median wall time of ``copy()`` over ``repeats`` runs, each bracketed by ``synchronize()``; one warm-up run."""
    repeats = validate.integer("repeats", repeats, low=1, high=1000)
    if not callable(copy) or not callable(synchronize):
        raise ValueError("copy and synchronize must be functions")
    copy()
    synchronize()
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        copy()
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _nvidia_smi_link(device):
    """(generation, lanes) of a GPU's PCIe link as nvidia-smi reports its maximum, or (None, None)."""
    try:
        out = subprocess.run(["nvidia-smi", f"--id={device}", "--query-gpu=pcie.link.gen.max,pcie.link.width.max",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10, check=True)
        gen, width = (int(x) for x in out.stdout.strip().split(","))
        return gen, width
    except Exception:  # nvidia-smi missing, slow, or printing something else: report unknown
        return None, None


def measure_host_device_bandwidth(nbytes=256_000_000, repeats=5, device=0, directions=DIRECTIONS,
                                  memories=MEMORIES) -> HostDeviceMeasurement:
    """Time host<->device copies with torch on a CUDA GPU, pinned and pageable (bytes/s per direction).

    nbytes: buffer size in bytes (1e3 to 16e9); repeats: timed copies per case (1-100), the median
    is kept; device: CUDA device index. Without a CUDA GPU this returns ``available=False`` and a
    reason, and measures nothing (the chapter then shows published measurements).
    """
    nbytes = validate.integer("nbytes", nbytes, low=1_000, high=16_000_000_000)
    repeats = validate.integer("repeats", repeats, low=1, high=100)
    device = validate.integer("device", device, low=0, high=1023)
    directions = _subset("directions", directions, DIRECTIONS)
    memories = _subset("memories", memories, MEMORIES)
    import torch
    if not torch.cuda.is_available():
        return HostDeviceMeasurement(available=False, nbytes=nbytes,
                                     reason="no CUDA GPU is visible to torch (torch.cuda.is_available() is False)")
    count = torch.cuda.device_count()
    if device >= count:
        raise ValueError(f"device must be in [0, {count - 1}] (this machine has {count} CUDA GPUs), got {device}")
    dev = torch.device("cuda", device)
    gen, width = _nvidia_smi_link(device)
    result = HostDeviceMeasurement(available=True, device_name=torch.cuda.get_device_name(device), nbytes=nbytes,
                                   pcie_generation=gen, pcie_lanes=width)
    gpu_buf = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    try:
        for memory in memories:
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=(memory == "pinned"))
            host.fill_(1)  # touch every page, so page faults are not timed
            for direction in directions:
                src, dst = (host, gpu_buf) if direction == "h2d" else (gpu_buf, host)
                seconds = _median_seconds(lambda: dst.copy_(src, non_blocking=(memory == "pinned")),
                                          lambda: torch.cuda.synchronize(dev), repeats)
                result.results.append({"direction": direction, "memory": memory, "seconds": seconds,
                                       "bytes_per_s": nbytes / seconds})
            del host
    finally:
        del gpu_buf
        torch.cuda.empty_cache()
    return result


def _subset(name, values, allowed):
    if isinstance(values, str) or not isinstance(values, (tuple, list)) or not values:
        raise ValueError(f"{name} must be a non-empty list drawn from {allowed}, got {values!r}")
    return tuple(validate.choice(name, v, allowed) for v in values)
