"""Load test of the lab's rank budget through the real hub: N learners, each a real hub user, run chapter 04's
lab cells at once in a kernel of their own single-user server.

Run (as root: the hub runs each learner's server as their own account):
    .venv/bin/python benchmarks/hub_lab_load.py [--learners 8] [--per-server 4] [--cells hello,sweep] [--json]

What it does: ``make hub`` on a free port (``tests/hub_harness.py``: throwaway accounts, state in a temporary
folder, an admin API token) with the server-wide budget in the hub's configuration
(``COURSE_LAB_RANKS_PER_SERVER``, ``..._PER_USER``, ``..._WAIT_S``, which the hub hands to every learner's
server). Through the hub's REST API it starts every learner's server; through each server's kernels API
(``/user/NAME/api/kernels`` and its websocket) it starts a kernel and runs chapter 04's import cell, read from
``notebooks/04_collectives_lab.ipynb``. When every kernel is ready, all learners send the chapter's lab cells
at the same moment: §7.1 (``lab.run(hello_all_reduce, ranks=2)``) and §7.5 (``lab.bench.sweep`` on 2 ranks),
the cells' own text from the notebook. Before them one cell of the test's own wraps ``budget.acquire`` to
note each launch's ranks and its wait in the queue (the lease's ``waited_s``, or the time to a refusal), which a
last cell prints.

It reports learners, ranks per launch, runs completed, the queue and refusal messages the learners saw (the
lines their cells printed), the slowest learner's wait (the sum of its launches' waits), and what was left:
rank processes of the learners while their kernels still ran, lease files in the budget folder, ``course_lab_*``
run folders of theirs, and, after the hub stopped, any process, account or home of theirs (none: the harness
checks). ``tests/test_hub_lab_load.py`` runs it with 3 learners; the wait is a timing, reported here only.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

CHAPTER = os.path.join(ROOT, "notebooks", "04_collectives_lab.ipynb")
# chapter 04's cells, found by what they run: the imports, §7.1 and §7.5
CELLS = {"imports": "import torch.distributed as dist", "hello": "lab.run(hello_all_reduce",
         "sweep": "sweep = lab.bench.sweep("}
WAITING, REFUSED = "[course lab] waiting for room", "lab budget:"

# Not a chapter cell: notes each launch's ranks and queue wait as the lease measured them.
INSTRUMENT = r'''
import time as _load_time
from course_lib.lab import budget as _load_budget
_load_launches = []
_load_acquire = _load_budget.acquire
def _load_timed_acquire(ranks, *args, **kwargs):
    start = _load_time.monotonic()
    try:
        lease = _load_acquire(ranks, *args, **kwargs)
    except _load_budget.LabBudgetError:  # refused: it waited until then
        _load_launches.append({"ranks": ranks, "waited_s": _load_time.monotonic() - start, "refused": True})
        raise
    _load_launches.append({"ranks": ranks, "waited_s": lease.waited_s})
    return lease
_load_budget.acquire = _load_timed_acquire
'''
REPORT = 'import json as _load_json; print("LOAD " + _load_json.dumps(_load_launches))'


def chapter_cells(names) -> dict:
    """The source of each of chapter 04's cells named in ``names`` (keys of CELLS), from the student notebook."""
    import nbformat

    nb = nbformat.read(CHAPTER, as_version=4)
    out = {}
    for name in names:
        found = [cell.source for cell in nb.cells if cell.cell_type == "code" and CELLS[name] in cell.source]
        if len(found) != 1:
            raise RuntimeError(f"chapter 04 has {len(found)} cells running {CELLS[name]!r}, not one")
        out[name] = found[0]
    return out


class Kernel:
    """A kernel in ``user``'s single-user server, driven over its websocket as JupyterLab drives it."""

    def __init__(self, hub, user):
        import websocket

        self.user, self.session = user, uuid.uuid4().hex
        self.id = hub.api("POST", f"/user/{user}/api/kernels", body={"name": "python3"})[1]["id"]
        url = hub.base.replace("http://", "ws://") + f"/user/{user}/api/kernels/{self.id}/channels"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {hub.token}"], timeout=900,
                                              http_no_proxy=["127.0.0.1", "localhost"])

    def execute(self, code, timeout_s=900) -> dict:
        """Run ``code``; returns {'status': 'ok'|'error', 'stdout': text, 'error': 'Name: value' or None}."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session,
                       "username": self.user, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        text, error, status, idle = [], None, None, False
        deadline = time.monotonic() + timeout_s
        while status is None or not idle:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.user}: a cell ran past {timeout_s} s")
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "execute_reply":
                status = content["status"]
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        return {"status": status, "stdout": "".join(text), "error": error}

    def close(self, hub):
        with contextlib.suppress(Exception):
            self.ws.close()
        with contextlib.suppress(Exception):
            hub.api("DELETE", f"/user/{self.user}/api/kernels/{self.id}")


# A hostile learner (--hostile): forks until refused, then a process of theirs allocates 6 GiB, before the lab
# cells; what they see is recorded (HOSTILE lines). The hub's limits (course_lib/hub_limits.py) should stop both
# inside that learner's own groups while the others' cells run.
HOSTILE = r"""
import os, subprocess, sys, time
pids, err = [], None
try:
    for _ in range(1000):
        pid = os.fork()
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        pids.append(pid)
except OSError as exc:
    err = f"{type(exc).__name__}: {exc}"
print(f"HOSTILE forked {len(pids)} processes, then: {err or 'no refusal'}")
for pid in pids:
    os.waitpid(pid, 0)
hog = subprocess.run([sys.executable, "-c", "b = bytearray(6 << 30); print('allocated 6 GiB')"],
                     capture_output=True, text=True)
print(f"HOSTILE allocating 6 GiB: exit {hog.returncode} {hog.stdout.strip() or hog.stderr.strip()[-120:]}")
"""


def _learner(hub, user, cells, ready, results, hostile=False):
    """One learner: start a kernel, run the imports, wait for the start signal, run the lab cells."""
    out = {"learner": user, "cells": [], "launches": [], "problem": None, "hostile": None}
    results[user] = out
    kernel = None
    try:
        kernel = Kernel(hub, user)
        for code in (cells["imports"], INSTRUMENT):
            got = kernel.execute(code)
            if got["status"] != "ok":
                raise RuntimeError(f"set-up cell failed: {got['error']}")
        ready.wait()  # every learner's kernel is ready: all launch together
        start = time.monotonic()
        if hostile:
            got = kernel.execute(HOSTILE)
            out["hostile"] = [line for line in got["stdout"].splitlines() if line.startswith("HOSTILE")] + (
                [got["error"]] if got["error"] else [])
        for name in [n for n in cells if n != "imports"]:
            got = kernel.execute(cells[name])
            lines = got["stdout"].splitlines() + ([got["error"]] if got["error"] else [])
            out["cells"].append({"cell": name, "status": got["status"], "error": got["error"],
                                 "queued": [line for line in lines if WAITING in line],
                                 "refused": [line for line in lines if REFUSED in line]})
        out["elapsed_s"] = time.monotonic() - start
        report = kernel.execute(REPORT)["stdout"]
        out["launches"] = json.loads(report.split("LOAD ", 1)[1])
        out["rank_processes_left"] = _rank_processes(user)
        out["run_folders_left"] = _run_folders(user)
    except Exception as exc:  # reported, never hidden: the driver counts it as a learner that failed
        out["problem"] = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(threading.BrokenBarrierError):
            ready.abort()
    finally:
        if kernel is not None:
            kernel.close(hub)


def _rank_processes(user) -> list[str]:
    """The learner's processes other than their server and kernels (their lab's ranks, watchers)."""
    from tests.hub_harness import processes_of, pwd_uid

    out = []
    for pid in processes_of(pwd_uid(user)):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "jupyterhub.singleuser" not in cmd and "ipykernel_launcher" not in cmd:
            out.append(f"{pid}: {cmd[:120]}")
    return out


def _run_folders(user) -> list[str]:
    """``course_lab_*`` folders the learner's runs left in the temp folder."""
    from tests.hub_harness import pwd_uid

    root, uid = tempfile.gettempdir(), pwd_uid(user)
    out = []
    for name in os.listdir(root):
        with contextlib.suppress(OSError):
            if name.startswith("course_lab_") and os.stat(os.path.join(root, name)).st_uid == uid:
                out.append(name)
    return out


def run_class(learners=8, per_server=4, per_user=None, wait_s=300.0, cells=("hello", "sweep"), log_dir=None,
              hostile=0) -> dict:
    """``learners`` hub users run chapter 04's ``cells`` at once; returns what each did and what was left."""
    from course_lib.lab import budget
    from tests.hub_harness import class_on_hub, server_environ

    sources = chapter_cells(("imports", *cells))
    settings = {budget.SERVER_ENV: str(per_server), budget.WAIT_ENV: f"{wait_s:g}"}
    if per_user is not None:
        settings[budget.USER_ENV] = str(per_user)
    results, summary = {}, {}
    with contextlib.ExitStack() as stack:
        log_dir = log_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="hub_lab_load_"))
        started = time.monotonic()
        with class_on_hub(log_dir, learners, **settings) as (hub, users, homes, state):
            for user in users:  # all at once: the hub spawns them in parallel
                hub.request_start(user)
            for user in users:
                hub.wait_ready(user, deadline_s=600)
            summary["servers_ready_s"] = time.monotonic() - started
            ready = threading.Barrier(learners + 1)
            threads = [threading.Thread(target=_learner, args=(hub, user, sources, ready, results, k < hostile))
                       for k, user in enumerate(users)]
            for thread in threads:
                thread.start()
            with contextlib.suppress(threading.BrokenBarrierError):
                ready.wait(timeout=900)
            for thread in threads:
                thread.join(timeout=1800)
            summary["budget_dir"] = str(state / "lab-budget")
            summary["lease_files_left"] = sorted(
                name for name in os.listdir(state / "lab-budget") if name != budget.LOCK_NAME)
            summary["hub_environment"] = {k: v for k, v in server_environ(users[0]).items() if k.startswith("COURSE_LAB_")}
        summary["total_s"] = time.monotonic() - started
    # leaving class_on_hub stopped the hub and checked that no process, account or home of theirs is left
    return _summarise(learners, cells, results, summary)


def _summarise(learners, cells, results, summary) -> dict:
    per = list(results.values())
    runs = [cell for item in per for cell in item["cells"]]
    waits = [sum(launch["waited_s"] for launch in item["launches"]) for item in per if not item["problem"]]
    return {
        "learners": learners, "cells": list(cells),
        "ranks_each": sorted({launch["ranks"] for item in per for launch in item["launches"]}),
        "launches": sum(len(item["launches"]) for item in per),
        "runs_asked": learners * len(cells),
        "runs_completed": sum(cell["status"] == "ok" for cell in runs),
        "runs_refused": sum(bool(cell["refused"]) for cell in runs),
        "runs_failed_otherwise": sum(cell["status"] != "ok" and not cell["refused"] for cell in runs),
        "queue_messages": sum(len(cell["queued"]) for cell in runs),
        "refusal_messages": sum(len(cell["refused"]) for cell in runs),
        "example_message": next((line for cell in runs for line in cell["queued"]), None),
        "example_refusal": next((line for cell in runs for line in cell["refused"]), None),
        "learners_queued": sum(any(cell["queued"] for cell in item["cells"]) for item in per),
        "waited_without_message": [item["learner"] for item in per
                                   if any(launch["waited_s"] > 1.0 for launch in item["launches"])
                                   and not any(cell["queued"] for cell in item["cells"])],
        "slowest_wait_s": max(waits) if waits else None,
        "rank_processes_left": sum(len(item.get("rank_processes_left", [])) for item in per),
        "run_folders_left": sum(len(item.get("run_folders_left", [])) for item in per),
        "problems": {item["learner"]: item["problem"] for item in per if item["problem"]},
        "hostile": {item["learner"]: item["hostile"] for item in per if item.get("hostile") is not None},
        "others_completed": sum(cell["status"] == "ok" for item in per if item.get("hostile") is None
                                for cell in item["cells"]),
        "others_asked": sum(len(cells) for item in per if item.get("hostile") is None),
        "cores": os.cpu_count(), "per_learner": per, **summary,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--learners", type=int, default=8)
    p.add_argument("--per-server", type=int, default=4, help="COURSE_LAB_RANKS_PER_SERVER set in the hub (default 4)")
    p.add_argument("--per-user", type=int, default=None, help="COURSE_LAB_RANKS_PER_USER (default: the hub's)")
    p.add_argument("--wait", type=float, default=300.0, help="COURSE_LAB_BUDGET_WAIT_S (default 300)")
    p.add_argument("--cells", default="hello,sweep", help="chapter 04 cells each learner runs: hello (7.1), sweep (7.5)")
    p.add_argument("--hostile", type=int, default=0, help="how many learners fork and allocate past their limits")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    cells = tuple(args.cells.split(","))
    for ok, message in ((1 <= args.learners <= 64, f"--learners must be in [1, 64], got {args.learners}"),
                        (1 <= args.per_server <= 1024, f"--per-server must be in [1, 1024], got {args.per_server}"),
                        (args.per_user is None or 1 <= args.per_user <= 1024,
                         f"--per-user must be in [1, 1024], got {args.per_user}"),
                        (0 <= args.wait <= 86400, f"--wait must be in [0, 86400] seconds, got {args.wait:g}"),
                        (bool(cells) and set(cells) <= {"hello", "sweep"},
                         f"--cells must be a comma-separated list of hello, sweep; got {args.cells!r}"),
                        (os.geteuid() == 0, "the hub runs each learner as their own account: run as root")):
        if not ok:
            print(f"error: {message}", file=sys.stderr)
            return 2
    out = run_class(args.learners, args.per_server, args.per_user, args.wait, cells, hostile=args.hostile)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"learners {out['learners']} (hub users, one server and kernel each), ranks per launch {out['ranks_each']}, "
          f"cells {','.join(out['cells'])}; hub budget {out['hub_environment']}; {out['cores']} cores")
    print(f"servers ready after {out['servers_ready_s']:.0f} s; all done after {out['total_s']:.0f} s")
    print(f"runs completed {out['runs_completed']} of {out['runs_asked']}, refused {out['runs_refused']}, "
          f"failed otherwise {out['runs_failed_otherwise']}")
    print(f"messages shown: {out['queue_messages']} queue ({out['learners_queued']} learners queued), "
          f"{out['refusal_messages']} refusal; e.g. {out['example_message']}")
    if out["example_refusal"]:
        print(f"e.g. refused: {out['example_refusal']}")
    print(f"slowest learner's wait: {out['slowest_wait_s']:.1f} s" if out["slowest_wait_s"] is not None
          else "slowest learner's wait: none measured")
    print(f"left: {out['rank_processes_left']} rank processes (kernels running), {len(out['lease_files_left'])} lease "
          f"files, {out['run_folders_left']} run folders; after the hub stopped: 0 processes, accounts or homes "
          "of the learners (checked)")
    for user, lines in out["hostile"].items():
        print(f"hostile learner {user} saw: " + " | ".join(lines))
    if out["hostile"]:
        print(f"the other learners' runs completed: {out['others_completed']} of {out['others_asked']}")
    for user, problem in out["problems"].items():
        print(f"problem: {user}: {problem}")
    return 0 if not out["problems"] and out["runs_failed_otherwise"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
