"""The lab's rank budget through the real hub (issue 26 build 3): 3 hub users, each with their own single-user
server and kernel, run chapter 04's §7.1 cell at once under a server-wide budget set in the hub's
configuration that holds one learner's ranks at a time. ``benchmarks/hub_lab_load.py`` does the driving
(``--learners 8`` by hand); here: every run completes or is refused with the message, the learners that
waited were told their place, and no rank process, lease, run folder, process, account or home is left."""
from __future__ import annotations

import os
import sys

import pytest

from course_lib.lab import budget
from tests import hub_harness

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.slow


def test_three_hub_learners_at_once_complete_or_get_the_message_and_leave_nothing(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import hub_lab_load
    finally:
        sys.path.pop(0)
    try:
        out = hub_lab_load.run_class(learners=3, per_server=2, wait_s=240, cells=("hello",), log_dir=tmp_path)
    except hub_harness.HubUnavailable as exc:
        pytest.skip(str(exc))
    print({k: v for k, v in out.items() if k != "per_learner"})
    assert out["problems"] == {}, out["per_learner"]
    assert out["hub_environment"][budget.SERVER_ENV] == "2" and out["hub_environment"][budget.DIR_ENV]
    assert out["ranks_each"] == [2] and out["launches"] == 3
    assert out["runs_failed_otherwise"] == 0 and out["runs_completed"] + out["runs_refused"] == out["runs_asked"] == 3
    # three learners launch 2 ranks each at the same moment on a server that runs 2: the later ones queue
    assert out["learners_queued"] >= 1 and out["queue_messages"] >= out["learners_queued"]
    assert out["waited_without_message"] == []
    assert "place 1 in the queue" in "\n".join(line for item in out["per_learner"] for cell in item["cells"]
                                               for line in cell["queued"])
    assert out["rank_processes_left"] == 0 and out["run_folders_left"] == 0 and out["lease_files_left"] == []
