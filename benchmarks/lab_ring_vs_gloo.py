"""Hand-written ring all-reduce vs gloo's built-in all-reduce, 2 ranks, 16 MB and 64 MB, one run.

Run: python benchmarks/lab_ring_vs_gloo.py [--iters 15] [--pipeline 8]
Both algorithms run interleaved in the same processes (see course_lib.lab.bench), so machine
noise hits them alike. Last line: the ring/builtin throughput ratio per size (goal >= 0.9).
"""
from __future__ import annotations

import argparse

from course_lib.lab import bench


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--pipeline", type=int, default=8)
    args = parser.parse_args()
    sizes = [16 * 2**20, 64 * 2**20]
    result = bench.sweep(sizes=sizes, ranks=(2,), algorithms=("builtin", "ring"), iters=args.iters,
                         warmup=args.warmup, pipeline=args.pipeline, timeout=600)
    print(result.table())
    ratio = result.ratio("ring", "builtin", ranks=2)
    print("ring/builtin throughput at 2 ranks: "
          + ", ".join(f"{size // 2**20} MiB {value:.2f}" for size, value in sorted(ratio.items())))


if __name__ == "__main__":
    main()
