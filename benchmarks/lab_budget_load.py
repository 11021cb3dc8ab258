"""Load test of the lab's rank budget: N simulated learners run chapter 04's lab cells at once.

Run: PYTHONPATH=$PWD python benchmarks/lab_budget_load.py [--learners 8] [--ranks 2] [--per-server 4]
     [--per-user 2] [--wait 120] [--json]

Each *learner* is a process of its own (in a session of its own, as a kernel is) with its own budget
identity (``COURSE_LAB_BUDGET_USER=learnerK``), all sharing one budget folder and one TMPDIR, like the
users of one hub. Each imports the lab, waits for the start signal (so all launch at the same moment),
then runs chapter 04's §7.1 cell (``hello_all_reduce`` on ``--ranks`` ranks) and a small §7.5 sweep
(64 KiB, gloo's built-in all-reduce; ``--cells hello`` for the first only). Every launch goes through the budget: it starts, queues (its
place printed) or is refused in one line. The learner reports, per launch, what happened and how long
it waited in the queue (the lease's ``waited_s``; a learner's wait is the sum over its launches), and the sweep rows flagged as oversubscribed.

Afterwards the driver counts what is left: processes in the learners' sessions, lease files in the
budget folder (``budget.lock`` stays: it is the lock, not a lease) and ``course_lab_*`` run folders.
It prints learners, ranks each, runs completed and refused, queue messages shown, the slowest
learner's wait, and what was left. ``tests/test_lab_budget.py`` runs it small and asserts the
invariants; the wait is a timing, reported here only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LEARNER = r'''
import json, os, sys, time
from course_lib import lab
from course_lib.lab import budget

ranks, cells = int(sys.argv[1]), sys.argv[2].split(",")
waits = []
acquire = budget.acquire
def timed_acquire(*args, **kwargs):  # the wait of each launch, as the lease measured it
    lease = acquire(*args, **kwargs)
    waits.append(lease.waited_s)
    return lease
budget.acquire = timed_acquire

def hello_all_reduce(rank, world_size):  # chapter 04, section 7.1
    import torch
    import torch.distributed as dist
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    return t.item()

out = {"completed": 0, "refused": [], "waits": waits, "flagged_rows": 0, "rows": 0}
open(os.environ["LOAD_GO"] + "." + os.environ["COURSE_LAB_BUDGET_USER"], "w").close()  # ready
while not os.path.exists(os.environ["LOAD_GO"]):
    time.sleep(0.02)
for cell in cells:
    try:
        if cell == "hello":
            got = lab.run(hello_all_reduce, ranks=ranks, timeout=120)
            assert got == [ranks * (ranks + 1) / 2] * ranks, got
        else:
            result = lab.bench.sweep(sizes=("64K",), ranks=(ranks,), algorithms=("builtin",), iters=2, warmup=1,
                                     timeout=120)
            out["rows"] += len(result.rows)
            out["flagged_rows"] += sum(1 for row in result.rows if row.get("oversubscribed"))
        out["completed"] += 1
    except lab.LabLimitError as exc:
        out["refused"].append(str(exc))
print("RESULT " + json.dumps(out), flush=True)
'''


def _session_left(sids) -> int:
    from course_lib.lab.processes import session_members

    return sum(len(session_members(sid)) for sid in sids)


def run_class(learners=8, ranks=2, per_server=4, per_user=2, wait_s=120.0, cells=("hello", "sweep"),
              timeout_s=600.0) -> dict:
    """Start ``learners`` learners at once, each running ``cells`` (``hello``, ``sweep``); return what each
    did and what was left behind."""
    with tempfile.TemporaryDirectory(prefix="lab_budget_load_") as scratch:
        budget_dir, tmp, go = (os.path.join(scratch, name) for name in ("budget", "tmp", "go"))
        os.makedirs(tmp)
        base = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), TMPDIR=tmp,
                    COURSE_LAB_BUDGET_DIR=budget_dir, COURSE_LAB_RANKS_PER_SERVER=str(per_server),
                    COURSE_LAB_RANKS_PER_USER=str(per_user), COURSE_LAB_BUDGET_WAIT_S=str(wait_s), LOAD_GO=go)
        procs = []
        try:
            for k in range(learners):
                env = dict(base, COURSE_LAB_BUDGET_USER=f"learner{k}")
                procs.append(subprocess.Popen([sys.executable, "-c", LEARNER, str(ranks), ",".join(cells)], env=env, cwd=scratch,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                              start_new_session=True))
            deadline = time.monotonic() + 120  # each imports torch, then says it is ready
            while time.monotonic() < deadline and not all(
                    os.path.exists(f"{go}.learner{k}") or procs[k].poll() is not None for k in range(learners)):
                time.sleep(0.1)
            open(go, "w").close()
            start = time.monotonic()
            outputs = [proc.communicate(timeout=timeout_s)[0] for proc in procs]
            elapsed = time.monotonic() - start
        finally:
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, 9)
                    proc.wait()
        time.sleep(0.5)  # a rank's group that outlived its learner would show here
        learners_out = []
        for k, (proc, text) in enumerate(zip(procs, outputs)):
            result = [line for line in text.splitlines() if line.startswith("RESULT ")]
            got = json.loads(result[-1][7:]) if result else None
            learners_out.append({"learner": f"learner{k}", "exit": proc.returncode, "result": got,
                                 "messages": [line for line in text.splitlines() if line.startswith("[course lab]")],
                                 "tail": "" if got else text[-2000:]})
        leases = sorted(name for name in os.listdir(budget_dir) if name != "budget.lock") \
            if os.path.isdir(budget_dir) else []
        folders = sorted(name for name in os.listdir(tmp) if name.startswith("course_lab_"))
        left = _session_left([proc.pid for proc in procs])
    waits = [sum(item["result"]["waits"]) for item in learners_out if item["result"]]
    return {"learners": learners, "ranks_each": ranks, "per_server": per_server, "per_user": per_user,
            "cores": os.cpu_count(), "elapsed_s": elapsed,
            "runs_completed": sum(item["result"]["completed"] for item in learners_out if item["result"]),
            "runs_refused": sum(len(item["result"]["refused"]) for item in learners_out if item["result"]),
            "runs_asked": len(cells) * learners,
            "refusals": [msg for item in learners_out if item["result"] for msg in item["result"]["refused"]],
            "queue_messages": sum(len(item["messages"]) for item in learners_out),
            "example_message": next((m for item in learners_out for m in item["messages"]), None),
            "flagged_rows": sum(item["result"]["flagged_rows"] for item in learners_out if item["result"]),
            "rows": sum(item["result"]["rows"] for item in learners_out if item["result"]),
            "slowest_wait_s": max(waits) if waits else None,
            "processes_left": left, "lease_files_left": leases, "run_folders_left": folders,
            "per_learner": learners_out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--learners", type=int, default=8)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--per-server", type=int, default=4)
    p.add_argument("--per-user", type=int, default=2)
    p.add_argument("--wait", type=float, default=120.0)
    p.add_argument("--cells", default="hello,sweep", help="chapter 04 cells each learner runs: hello, sweep")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not 1 <= args.learners <= 64 or not 1 <= args.ranks <= 64:
        print("error: --learners and --ranks must be in [1, 64]", file=sys.stderr)
        return 2
    cells = tuple(args.cells.split(","))
    if not cells or not set(cells) <= {"hello", "sweep"}:
        print(f"error: --cells must be a comma-separated list of hello, sweep; got {args.cells!r}", file=sys.stderr)
        return 2
    out = run_class(args.learners, args.ranks, args.per_server, args.per_user, args.wait, cells)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"learners {out['learners']}, {out['ranks_each']} ranks each, budget {out['per_server']} ranks per server "
          f"/ {out['per_user']} per user, {out['cores']} cores; load average {os.getloadavg()[0]:.1f}")
    print(f"runs completed {out['runs_completed']} of {out['runs_asked']}, refused {out['runs_refused']}")
    print(f"queue messages shown {out['queue_messages']}, e.g. {out['example_message']}")
    for msg in out["refusals"][:3]:
        print(f"refusal: {msg}")
    print(f"sweep rows flagged oversubscribed: {out['flagged_rows']} of {out['rows']}")
    print(f"slowest learner's wait: {out['slowest_wait_s']:.2f} s (all learners done in {out['elapsed_s']:.1f} s)")
    print(f"left: {out['processes_left']} processes, {len(out['lease_files_left'])} lease files, "
          f"{len(out['run_folders_left'])} run folders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
