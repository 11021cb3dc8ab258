"""Calibrate the ring model on this machine and compare it with all-reduces timed in the same run.

Run: python benchmarks/lab_calibration.py [--ranks 2,4] [--iters 25] [--algorithms builtin,ring]

For each rank count, one run times, interleaved in every repetition: the all-reduces of 64 KB
to 64 MB and, at each size, the pieces of the ring (see lab.calibrate._ring_step_probes): one
ring step of n/p bytes through gloo's collective path (every rank at once, and above 2 ranks
one pair alone), the call cost of an empty collective, and the add. Then per size,
predicted/measured:
- fit: the alpha-beta-gamma line through this run's steps, plus the call cost; alpha from one
  pair alone, times max(1, ranks/cores) when ranks outnumber cores, and beta from the steps
  with every rank at once (contention modelled; see SameRun.predict_fit);
- steps: the call cost plus 2(p-1) measured steps (every rank at once, so contention is
  measured, not modelled) plus (p-1) measured adds.
Each table is printed twice: with every time the median of its operations, and with the 25%
quantile (the typical undisturbed operation; see SameRun.at). Last line: the worst ratio of each
prediction per rank count, medians (goal: 0.8 to 1.25); the line before it, the same at 25%.

The hand-written ring runs in the same repetitions by default even when only the built-in is
of interest: it keeps the cores busy between the built-in's batches. On the 2-core VM this was
written on, the built-in's 1 MiB median rose from 0.85-1.1 ms to 1.1-2.5 ms without it (idle
virtual cores are slow to wake), while the steps barely moved.

The models describe gloo's all-reduce (builtin). --algorithms builtin,ring also compares them
with the hand-written ring, which waits in Python between sub-chunks and so pays the stalls
that the steps, timed through gloo's collective path, avoid: expect it slower than predicted
below a few MiB.
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
    parser.add_argument("--iters", type=int, default=25)
    parser.add_argument("--algorithms", default="builtin,ring")
    args = parser.parse_args()
    algorithms = tuple(a.strip() for a in args.algorithms.split(","))
    summary, quiet = [], []
    for p in (int(r) for r in args.ranks.split(",")):
        run = calibrate.measure_same_run(bench.size_range("64K", "64M", 4), ranks=p, algorithms=algorithms,
                                         iters=args.iters, timeout=900)
        print(bench.format_rows(run.rows))
        for algorithm in algorithms:
            for quantile in (0.5, 0.25):
                view = run.at(quantile)
                print(f"\n== model vs {algorithm}, {p} ranks ==")
                print(view.report(algorithm))
                rows = view.compare(algorithm)
                for key in ("fit", "steps"):
                    w = worst(c[key] for c in rows)
                    if w is not None:
                        (summary if quantile == 0.5 else quiet).append(f"{algorithm} {p} ranks {key} {w:.2f}")
        print()
    print("worst predicted/measured, 25% quantile of each operation: " + ", ".join(quiet))
    print("worst predicted/measured, median of each operation: " + ", ".join(summary))


if __name__ == "__main__":
    main()
