"""Stop drill for the lab launcher (``course_lib.lab.run``): interrupts, launch times, a killed kernel.

Run: PYTHONPATH=$PWD python benchmarks/lab_stop_drill.py [--tries 40] [--loop 40] [--launches 30] [--ranks 8]

A *driver* process stands in for the Jupyter kernel: it imports torch and the lab once, runs in a
session of its own, and launches on request. The drill, from outside, does what Jupyter does:

1. **Stop.** ``--tries`` times, the driver launches ``ranks`` ranks whose function sleeps 5 s, and
   the drill sends SIGINT to the driver's process group (Jupyter's interrupt goes to the kernel's
   group) at a delay drawn uniformly from 0-0.25 s after the call began. *stopped*: the call raised
   KeyboardInterrupt; *lost*: it ran on (returned, or raised nothing within the 5 s); *misreported*:
   it raised a rank failure instead. After each try the driver counts its live children.
2. **Stop in a loop of launches** (``--loop`` tries, 0 to skip). The driver runs a cell's
   ``while True: lab.run(quick)`` (ranks that join and return at once) and the drill sends SIGINT at a
   delay drawn uniformly from 0-``LOOP_SPREAD_S`` s, so the Stop lands anywhere in a launch: forking,
   waiting, or cleaning up after a launch that has finished. *stopped*: the loop ended with
   KeyboardInterrupt; *lost*: it ran on for ``LOOP_GRACE_S`` s more. CI runs a few tries
   (tests/test_lab_launch.py); run 40 or more here.
3. **Launch time.** ``--launches`` launches of ``ranks`` ranks that join the process group and
   return at once: median, 90th percentile and how many took more than 4 s.
4. **Kernel kill.** The driver launches 2 ranks that each start a ``sleep`` subprocess, then the
   drill SIGKILLs the driver alone. 2 s later it counts the processes left in the driver's session
   and the ``course_lab_*`` folders left in the driver's private TMPDIR, then runs one more launch in
   a fresh driver with the same TMPDIR and counts the folders again.

The machine's load (``os.getloadavg``) is printed with each part: the ranks share the cores.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

FN_SECONDS = 5.0
LOOP_SPREAD_S = 1.0
LOOP_GRACE_S = 10.0


# ---------------------------------------------------------------- driver (the "kernel")

def _sleeper(rank, world_size, seconds):
    time.sleep(seconds)
    return rank


def _quick(rank, world_size):
    return rank


def _with_subprocess(rank, world_size, marker_dir):
    proc = subprocess.Popen(["sleep", "120"])
    with open(os.path.join(marker_dir, f"child{rank}"), "w") as handle:
        handle.write(str(proc.pid))
    time.sleep(120)


def _driver():
    import torch  # noqa: F401 - imported once, as in a kernel
    from course_lib import lab
    from course_lib.lab.launch import live_children

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        out = {}
        try:
            if cmd["op"] == "stop":
                start = time.monotonic()
                print(json.dumps({"started": True}), flush=True)
                try:
                    lab.run(_sleeper, ranks=cmd["ranks"], timeout=60, args=(FN_SECONDS,), echo=False)
                    out["outcome"] = "lost"
                except KeyboardInterrupt:
                    out["outcome"] = "stopped"
                except lab.RankError as err:
                    out["outcome"] = "misreported"
                    out["detail"] = str(err).splitlines()[0]
                out["elapsed_s"] = time.monotonic() - start
                time.sleep(0.3)
                out["children_left"] = len(live_children())
            elif cmd["op"] == "loop":
                start = time.monotonic()
                print(json.dumps({"started": True}), flush=True)
                launches = 0
                try:
                    while time.monotonic() - start < cmd["seconds"]:
                        lab.run(_quick, ranks=cmd["ranks"], timeout=60, echo=False)
                        launches += 1
                    out["outcome"] = "lost"
                except KeyboardInterrupt:
                    out["outcome"] = "stopped"
                out["launches"] = launches
                out["elapsed_s"] = time.monotonic() - start
                time.sleep(0.3)
                out["children_left"] = len(live_children())
            elif cmd["op"] == "launch":
                start = time.monotonic()
                lab.run(_quick, ranks=cmd["ranks"], timeout=60, echo=False)
                out["elapsed_s"] = time.monotonic() - start
            elif cmd["op"] == "hang":
                print(json.dumps({"started": True}), flush=True)
                lab.run(_with_subprocess, ranks=2, timeout=300, args=(cmd["marker_dir"],), echo=False)
        except KeyboardInterrupt:  # an interrupt that arrived after the call ended
            out.setdefault("outcome", "late")
            out["late_interrupt"] = True
        print(json.dumps(out), flush=True)


# ---------------------------------------------------------------- the drill

class Driver:
    def __init__(self, env=None):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--driver"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True, env=env)
        assert json.loads(self.proc.stdout.readline())["ready"]

    def send(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the driver died")
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=60)


def _load():
    return "load %.2f %.2f %.2f" % os.getloadavg()


def stop_drill(tries, ranks, seed=1):
    rng = random.Random(seed)
    driver = Driver()
    counts = {"stopped": 0, "lost": 0, "misreported": 0, "late": 0}
    stop_times, left = [], 0
    details = []
    for _ in range(tries):
        delay = rng.uniform(0.0, 0.25)
        driver.send(op="stop", ranks=ranks)
        assert driver.read()["started"]
        time.sleep(delay)
        os.killpg(driver.proc.pid, signal.SIGINT)
        out = driver.read()
        counts[out["outcome"]] += 1
        left += out["children_left"]
        if out["outcome"] == "stopped":
            stop_times.append(out["elapsed_s"] - delay)
        if "detail" in out:
            details.append(out["detail"])
    driver.close()
    print(f"stop drill: {tries} tries, SIGINT to the kernel's process group at U(0, 0.25) s into a "
          f"{ranks}-rank launch ({_load()})")
    print(f"  stopped {counts['stopped']}, lost {counts['lost'] + counts['late']} "
          f"(ran on: {counts['lost']}, interrupt raised only after the call: {counts['late']}), "
          f"misreported as a rank failure {counts['misreported']}; children left after the tries: {left}")
    if stop_times:
        print(f"  interrupt to KeyboardInterrupt: median {statistics.median(stop_times) * 1e3:.0f} ms, "
              f"max {max(stop_times) * 1e3:.0f} ms")
    for detail in details[:3]:
        print(f"  misreport example: {detail}")
    return counts


def loop_drill(tries, ranks, seed=2):
    """Stops pressed at random moments of a loop of launches; returns {"stopped": n, "lost": n, "late": n}."""
    rng = random.Random(seed)
    driver = Driver()
    counts = {"stopped": 0, "lost": 0, "late": 0}
    launches, left = [], 0
    for _ in range(tries):
        delay = rng.uniform(0.0, LOOP_SPREAD_S)
        driver.send(op="loop", ranks=ranks, seconds=LOOP_SPREAD_S + LOOP_GRACE_S)
        assert driver.read()["started"]
        time.sleep(delay)
        os.killpg(driver.proc.pid, signal.SIGINT)
        out = driver.read()
        counts[out["outcome"]] += 1
        left += out.get("children_left", 0)
        launches.append(out.get("launches", 0))
    driver.close()
    print(f"loop drill: {tries} tries, SIGINT to the kernel's process group at U(0, {LOOP_SPREAD_S:g}) s into a "
          f"loop of {ranks}-rank launches ({_load()}): stopped {counts['stopped']}, "
          f"lost {counts['lost'] + counts['late']}, (loop ran on: {counts['lost']}, interrupt raised only after "
          f"the loop: {counts['late']}); launches finished before the Stop: median "
          f"{statistics.median(launches):g}, max {max(launches)}; children left after the tries: {left}")
    return counts


def launch_times(launches, ranks):
    driver = Driver()
    times = []
    for _ in range(launches):
        driver.send(op="launch", ranks=ranks)
        times.append(driver.read()["elapsed_s"])
    driver.close()
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    print(f"launch time: {launches} launches of {ranks} ranks ({_load()}): median {statistics.median(times):.2f} s, "
          f"p90 {p90:.2f} s, max {max(times):.2f} s, > 4 s: {sum(t > 4 for t in times)}")
    return times


def _session_members(sid):
    from course_lib.lab.launch import session_members

    return session_members(sid)


def kernel_kill():
    tmp = tempfile.mkdtemp(prefix="stop_drill_tmp_")
    markers = tempfile.mkdtemp(prefix="stop_drill_markers_")
    env = dict(os.environ, TMPDIR=tmp)
    driver = Driver(env)
    driver.send(op="hang", marker_dir=markers)
    assert driver.read()["started"]
    deadline = time.monotonic() + 60
    while len(os.listdir(markers)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    sid = driver.proc.pid
    before = len(_session_members(sid))
    os.kill(driver.proc.pid, signal.SIGKILL)
    driver.proc.wait()
    time.sleep(2.0)
    members = _session_members(sid)
    folders = [f for f in os.listdir(tmp) if f.startswith("course_lab_")]
    print(f"kernel kill ({_load()}): {before} processes in the kernel's session before the SIGKILL "
          f"(kernel, ranks, their subprocesses); 2 s after it: {len(members)} processes left, "
          f"{len(folders)} course_lab_* folders left")
    for pid in members:  # leave nothing behind ourselves
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    again = Driver(env)
    again.send(op="launch", ranks=2)
    again.read()
    again.close()
    after = [f for f in os.listdir(tmp) if f.startswith("course_lab_")]
    print(f"  after one more launch with the same TMPDIR: {len(after)} course_lab_* folders")
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(markers, ignore_errors=True)
    return len(members), len(folders), len(after)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tries", type=int, default=40)
    parser.add_argument("--loop", type=int, default=40, help="tries of the loop-of-launches Stop drill (0: skip)")
    parser.add_argument("--launches", type=int, default=30)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--skip", default="", help="comma list of parts to skip: stop,launch,kill")
    args = parser.parse_args()
    if args.driver:
        return _driver()
    skip = set(args.skip.split(","))
    import course_lib
    print(f"course_lib from {os.path.dirname(course_lib.__file__)}")
    if "stop" not in skip:
        stop_drill(args.tries, args.ranks)
    if args.loop > 0:
        counts = loop_drill(args.loop, args.ranks)
        lost = counts["lost"] + counts["late"]
    else:
        lost = 0
    if "launch" not in skip:
        launch_times(args.launches, args.ranks)
    if "kill" not in skip:
        kernel_kill()
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
