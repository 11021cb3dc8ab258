"""The lab's rank budget on a shared server (course_lib.lab.budget): limits, queue, refusal, reclaimed
leases, the launcher's hook, the oversubscription flag beside a timing, and a class of 8 learners at once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from course_lib.lab import bench, budget
from course_lib.lab.processes import start_time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _budget(tmp_path, per_user=2, per_server=4, wait_s=5.0, user="ana"):
    return budget.Budget(str(tmp_path / "budget"), per_user, per_server, wait_s, user)


def _leases(tmp_path):
    return sorted(p for p in os.listdir(tmp_path / "budget") if p.startswith("lease-"))


def test_defaults_are_sized_from_the_cores():
    assert budget.default_limits(2) == (4, 4)  # chapter 04's 4 ranks still run on a 2-core laptop
    assert budget.default_limits(16) == (16, 32)
    with pytest.raises(ValueError, match="cores"):
        budget.default_limits(0)


def test_without_a_budget_folder_nothing_is_limited(monkeypatch):
    monkeypatch.delenv(budget.DIR_ENV, raising=False)
    lease = budget.acquire(64)
    assert lease.path is None and lease.waited_s == 0
    assert budget.ranks_running() is None and budget.oversubscribed_note() is None


@pytest.mark.parametrize("name, raw", [(budget.USER_ENV, "0"), (budget.SERVER_ENV, "many"), (budget.WAIT_ENV, "-1")])
def test_bad_settings_are_one_line_naming_the_variable(monkeypatch, name, raw):
    monkeypatch.setenv(name, raw)
    with pytest.raises(ValueError, match=f"^{name} must be .* got '{raw}'$"):
        budget.Budget.from_env()


def test_more_ranks_than_a_limit_is_refused_at_once(tmp_path):
    said = []
    with pytest.raises(budget.LabBudgetError, match=r"each user may run at most 2 at once \(COURSE_LAB_RANKS_PER_USER=2\)"):
        budget.acquire(3, _budget(tmp_path), say=said.append)
    with pytest.raises(budget.LabBudgetError, match=r"this server runs at most 4 at once \(COURSE_LAB_RANKS_PER_SERVER=4\)"):
        budget.acquire(5, _budget(tmp_path, per_user=8), say=said.append)
    assert said == []


def test_a_full_server_queues_then_refuses_in_one_line_and_leaves_no_lease(tmp_path):
    held = [budget.acquire(2, _budget(tmp_path, user=u)) for u in ("ana", "ben")]
    assert budget.ranks_running(_budget(tmp_path)) == 4
    said = []
    start = time.monotonic()
    with pytest.raises(budget.LabBudgetError) as refused:
        budget.acquire(2, _budget(tmp_path, user="cy", wait_s=0.5), say=said.append)
    assert 0.5 <= time.monotonic() - start < 5
    assert str(refused.value).startswith("lab budget: no room for 2 ranks after waiting 1 s (COURSE_LAB_BUDGET_WAIT_S=0.5)")
    assert "4 of the server's 4 ranks in use" in str(refused.value) and "\n" not in str(refused.value)
    assert said == ["[course lab] waiting for room for 2 ranks: place 1 in the queue; 4 of the server's 4 ranks in use "
                    "(COURSE_LAB_RANKS_PER_SERVER), 0 of your 2 (COURSE_LAB_RANKS_PER_USER); waiting at most 0.5 s"]
    assert len(_leases(tmp_path)) == 2  # the refused launch's ticket is gone
    for lease in held:
        lease.release()
    assert _leases(tmp_path) == []


def test_the_queue_is_first_come_first_served_and_says_each_place(tmp_path):
    holder = budget.acquire(4, _budget(tmp_path, per_user=4, user="ana"))
    order, said = [], {"ben": [], "cy": []}

    def learner(user):
        lease = budget.acquire(4, _budget(tmp_path, per_user=4, user=user, wait_s=20), say=said[user].append)
        order.append(user)
        time.sleep(0.3)
        lease.release()

    ben = threading.Thread(target=learner, args=("ben",))
    ben.start()
    while not said["ben"]:
        time.sleep(0.05)
    cy = threading.Thread(target=learner, args=("cy",))
    cy.start()
    while not said["cy"]:
        time.sleep(0.05)
    holder.release()
    ben.join(30)
    cy.join(30)
    assert order == ["ben", "cy"]
    assert [line.split("place ")[1][0] for line in said["ben"]] == ["1"]
    assert [line.split("place ")[1][0] for line in said["cy"]] == ["2", "1"]  # moved up when ben started
    assert _leases(tmp_path) == []


def test_a_crashed_launchers_lease_is_reclaimed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_start = start_time(dead.pid)
    dead.wait()
    folder = budget.make_dir(str(tmp_path / "budget"))
    stale = os.path.join(folder, "lease-ana-1-x.json")
    with open(stale, "w") as handle:
        json.dump({"user": "ana", "pid": dead.pid, "start_time": dead_start or 1, "ranks": 4, "state": "running",
                   "ticket": 1}, handle)
    lease = budget.acquire(2, _budget(tmp_path, wait_s=0))  # a live 4-rank lease would leave no room
    assert not os.path.exists(stale) and lease.waited_s < 1
    lease.release()
    assert os.stat(folder).st_mode & 0o7777 == 0o1777


def test_the_launcher_holds_a_lease_while_it_runs_and_refuses_beyond_the_budget(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from course_lib import lab

    monkeypatch.setenv(budget.DIR_ENV, str(tmp_path / "budget"))
    monkeypatch.setenv(budget.USER_ENV, "2")
    monkeypatch.setenv(budget.SERVER_ENV, "2")
    seen = lab.run(_ranks_running, ranks=2, timeout=60, echo=False)
    assert seen == [2, 2]  # the ranks see their own launch's lease
    assert _leases(tmp_path) == []
    with pytest.raises(lab.LabLimitError, match=r"^lab budget: 3 ranks asked, but each user may run at most 2"):
        lab.run(_ranks_running, ranks=3, timeout=60)
    assert _leases(tmp_path) == []


def _ranks_running(rank, world_size):
    return budget.ranks_running()


def test_a_timing_taken_while_oversubscribed_says_so_beside_the_number():
    row = {"size": 65536, "count": 16384, "type": "float", "ranks": 2, "algorithm": "builtin", "time_s": 1e-4,
           "algbw": 6.5e8, "busbw": 6.5e8, "wrong": 0}
    assert "oversubscribed" not in bench.format_row(row)
    row["oversubscribed"] = "oversubscribed: 8 ranks on this server's 2 cores"
    line = bench.format_row(row)
    assert line.split()[0] == "65536"
    assert line.endswith("(oversubscribed: 8 ranks on this server's 2 cores: not this machine's speed)")


def test_oversubscribed_note_counts_every_users_running_ranks(tmp_path, monkeypatch):
    monkeypatch.setenv(budget.DIR_ENV, str(tmp_path / "budget"))
    held = [budget.acquire(2, _budget(tmp_path, user=u)) for u in ("ana", "ben")]
    try:
        assert budget.oversubscribed_note(cores=4) is None
        assert budget.oversubscribed_note(cores=2) == "oversubscribed: 4 ranks on this server's 2 cores"
    finally:
        for lease in held:
            lease.release()


@pytest.mark.slow
def test_eight_learners_at_once_all_complete_or_get_the_message_and_leave_nothing():
    pytest.importorskip("torch")
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import lab_budget_load
    finally:
        sys.path.pop(0)
    out = lab_budget_load.run_class(learners=8, ranks=2, per_server=4, per_user=2, wait_s=240, cells=("hello",))
    broken = [item for item in out["per_learner"] if item["exit"] != 0 or item["result"] is None]
    assert not broken, broken
    assert out["runs_completed"] + out["runs_refused"] == out["runs_asked"] == 8
    assert all(msg.startswith("lab budget: ") and "\n" not in msg for msg in out["refusals"])
    # 8 launches of 2 ranks in a budget of 4 start together: some queue, and every one that queued said so
    assert out["queue_messages"] >= 1 and out["example_message"].startswith("[course lab] waiting for room")
    for item in out["per_learner"]:
        if sum(item["result"]["waits"]) > 2 * budget._POLL_S:
            assert item["messages"], item
    assert out["slowest_wait_s"] > 0
    assert out["processes_left"] == 0 and out["lease_files_left"] == [] and out["run_folders_left"] == []
