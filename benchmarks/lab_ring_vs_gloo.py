"""Hand-written ring all-reduce vs gloo's built-in all-reduce, 2 ranks, 64 KiB to 64 MiB, one run.

Run: PYTHONPATH=$PWD python benchmarks/lab_ring_vs_gloo.py [--iters 15] [--pipeline 8] [--ranks 2]
Both algorithms run interleaved in the same processes (see course_lib.lab.bench), so machine
noise hits them alike. The last lines give, per size, the library ring's throughput over gloo's
(busbw ratio from the medians) and the goal: >= 0.8 at 64 KiB-4 MiB, >= 0.9 at 16-64 MiB.
The machine's load average is printed first: on a shared 2-core machine it moves every figure.
"""
from __future__ import annotations

import argparse
import os

from course_lib import units
from course_lib.lab import bench

SIZES = [64 * 2**10, 256 * 2**10, 2**20, 4 * 2**20, 16 * 2**20, 64 * 2**20]


def goal(size: int) -> float:
    """The issue's goal for the ring/gloo throughput ratio at ``size`` bytes."""
    return 0.9 if size >= 16 * 2**20 else 0.8


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--pipeline", type=int, default=8)
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    print("load average %.2f %.2f %.2f, %d cores" % (*os.getloadavg(), os.cpu_count()))
    result = bench.sweep(sizes=SIZES, ranks=(args.ranks,), algorithms=("builtin", "ring"), iters=args.iters,
                         warmup=args.warmup, pipeline=args.pipeline, timeout=900)
    print(result.table())
    ratio = result.ratio("ring", "builtin", ranks=args.ranks)
    print(f"ring/gloo throughput at {args.ranks} ranks (goal):")
    for size, value in sorted(ratio.items()):
        print(f"{units.format_bytes(size, binary=True):>8}: {value:.2f} ({goal(size):.1f}) "
              f"{'met' if value >= goal(size) else 'NOT met'}")


if __name__ == "__main__":
    main()
