"""Calibrate the ring model on this machine and compare it with all-reduces timed in the same run.

Run: python benchmarks/lab_calibration.py [--ranks 2,4] [--iters 15] [--algorithms builtin,ring]

For each rank count, one run times, interleaved in every repetition: the all-reduces of 64 KB
to 64 MB, and the pieces of one ring step at each size (an exchange of n/p bytes between two
ranks alone, the same with every pair at once, and the add). Then per size, predicted/measured:
- fit: the alpha-beta-gamma line fitted to this run's exchanges, times the stretch
  max(1, ranks/cores) when ranks outnumber cores (the contention term);
- steps: 2(p-1) measured exchanges plus (p-1) measured adds, times the same stretch;
- steps, contended: the same with the exchange measured while every pair exchanges at once
  (contention measured instead of modelled; 4 ranks and more).
Last line: the worst ratio of each prediction per rank count (goal: 0.8 to 1.25).
"""
from __future__ import annotations

import argparse
import math

from course_lib.lab import bench, calibrate


def worst(ratios):
    ratios = [r for r in ratios if r is not None]
    return max(ratios, key=lambda r: abs(math.log(r))) if ratios else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--iters", type=int, default=15)
    parser.add_argument("--algorithms", default="builtin,ring")
    args = parser.parse_args()
    algorithms = tuple(a.strip() for a in args.algorithms.split(","))
    summary = []
    for p in (int(r) for r in args.ranks.split(",")):
        run = calibrate.measure_same_run(bench.size_range("64K", "64M", 4), ranks=p, algorithms=algorithms,
                                         iters=args.iters, timeout=900)
        print(bench.format_rows(run.rows))
        for algorithm in algorithms:
            print(f"\n== model vs {algorithm}, {p} ranks ==")
            print(run.report(algorithm))
            rows = run.compare(algorithm)
            for key in ("fit", "steps", "steps_contended"):
                w = worst(c[key] for c in rows)
                if w is not None:
                    summary.append(f"{algorithm} {p} ranks {key} {w:.2f}")
        print()
    print("worst predicted/measured: " + ", ".join(summary))


if __name__ == "__main__":
    main()
