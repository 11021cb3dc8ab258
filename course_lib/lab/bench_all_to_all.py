"""The chapter-10 names of the all-to-all benchmark and exercise, kept for the chapter and its exercise file.

The benchmark is one entry of ``bench.COLLECTIVES`` (``bench.sweep(collective="all_to_all")``,
``python -m course_lib.lab.bench --collective all_to_all``); the exercise's checker lives beside
``check_ring`` in ``exercises``. Nothing here measures or checks anything itself.
"""
from __future__ import annotations

from . import bench
from .exercises import all_to_all_checker  # noqa: F401 (data/exercises/10.json names it here)

ALGORITHM_NAMES = bench.COLLECTIVES["all_to_all"].algorithms


def sweep(sizes=("64K", "1M", "16M"), ranks=(2,), algorithms=None, dtype="float32",
          warmup: int = 2, iters: int = 5, timeout: float = 120, echo: bool = False) -> bench.SweepResult:
    """``bench.sweep`` of the all-to-all (built-in and pairwise by default) on local gloo ranks."""
    return bench.sweep(sizes, ranks=ranks, algorithms=algorithms, dtype=dtype, warmup=warmup, iters=iters,
                       timeout=timeout, echo=echo, collective="all_to_all")
