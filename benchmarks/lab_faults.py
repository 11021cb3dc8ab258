"""Fault drill for the lab launcher: a rank that raises, a rank killed with SIGKILL, a rank that never joins.

Run: python benchmarks/lab_faults.py [--timeout 5]
Prints, per fault: seconds from launch to a clear error, the error's first line, and the number
of child processes still alive afterwards (goal: 0). Last line: the worst time and total leftovers.
"""
from __future__ import annotations

import argparse
import os
import signal
import time

from course_lib.lab import RankError, init_process_group, run
from course_lib.lab.launch import live_children


def _raises(rank, world_size):
    import torch
    import torch.distributed as dist
    if rank == 1:
        raise ValueError("learner bug on purpose")
    dist.all_reduce(torch.ones(4))


def _sigkill(rank, world_size):
    import torch
    import torch.distributed as dist
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(torch.ones(4))


def _never_joins(rank, world_size):
    if rank == 1:
        time.sleep(3600)
    init_process_group(timeout=3600)


FAULTS = {"rank raises": (_raises, {}), "rank SIGKILLed": (_sigkill, {}),
          "rank never joins": (_never_joins, {"init": False})}


def drill(timeout: float = 5.0, ranks: int = 2) -> list[dict]:
    """Run each fault once; returns rows with seconds to the error, its text and leftover processes."""
    rows = []
    for name, (fn, extra) in FAULTS.items():
        start = time.monotonic()
        try:
            run(fn, ranks=ranks, timeout=timeout, echo=False, **extra)
            error = "no error raised"
        except RankError as exc:
            error = str(exc).splitlines()[0]
        elapsed = time.monotonic() - start
        rows.append({"fault": name, "seconds": elapsed, "error": error,
                     "leftover": len(live_children())})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    rows = drill(args.timeout, args.ranks)
    for row in rows:
        print(f"{row['fault']:<18} {row['seconds']:6.2f} s  leftover={row['leftover']}  {row['error']}")
    print(f"worst time to error {max(r['seconds'] for r in rows):.2f} s (timeout {args.timeout:g} s); "
          f"processes left: {sum(r['leftover'] for r in rows)}")


if __name__ == "__main__":
    main()
