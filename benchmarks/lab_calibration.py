"""Calibrate alpha, beta (ping-pong and exchange) and gamma, then compare the model with measured all-reduces.

Run: python benchmarks/lab_calibration.py [--ranks 2,4] [--iters 7] [--plot calibration.png]
Prints the fits, then predicted/measured per size from 64 KB to 64 MB for gloo's built-in and the
hand-written ring, with the contention stretch max(1, ranks/cores) for oversubscribed runs.
Last line: the worst ratio per rank count (goal: every point within 0.8 to 1.25).
"""
from __future__ import annotations

import argparse
import math

from course_lib.lab import bench, calibrate


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--iters", type=int, default=7)
    parser.add_argument("--plot", default=None, help="write a PNG of measured points over the model")
    args = parser.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    cal = calibrate.calibrate(sizes=bench.size_range("16K", "64M", 4), iters=args.iters)
    sweep = bench.sweep(sizes=bench.size_range("64K", "64M", 4), ranks=ranks,
                        algorithms=("builtin", "ring"), iters=args.iters, timeout=600)
    print(sweep.table())
    worst = {}
    for algorithm in ("builtin", "ring"):
        print(f"\n== model vs {algorithm} ==")
        print(cal.report(sweep.rows, algorithm))
        for c in cal.compare(sweep.rows, algorithm):
            key = (algorithm, c["ranks"])
            worst[key] = max(worst.get(key, 1.0), c["ratio"], key=lambda r: abs(math.log(r)))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 5))
        cal.plot(ax, sweep.rows)
        fig.savefig(args.plot, dpi=120, bbox_inches="tight")
    print("worst predicted/measured: " + ", ".join(f"{a} {p} ranks {r:.2f}" for (a, p), r in sorted(worst.items())))


if __name__ == "__main__":
    main()
