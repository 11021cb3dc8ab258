"""A graded class through the real hub (issue 35): three learner accounts; as a learner, reading solutions/,
the answer key, the sealed keys, the course folder, another learner's home and a model answer before the
deadline all fail, and the learner's lab still runs; each server is in its own CPU/memory/task groups.
Root only (it skips elsewhere), like tests/test_hub.py."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from course_lib import grading, hub_limits, instructor
from tests.hub_harness import server_environ
from tests.test_hub import class_on_hub
from tests.test_lab_command import ROOT

pytestmark = pytest.mark.slow

PROBE = r"""
import json, os, sys
out = {}
def attempt(name, fn):
    try:
        fn(); out[name] = "read"
    except Exception as exc:
        out[name] = type(exc).__name__
paths = json.loads(sys.argv[1])
for name, path in paths.items():
    attempt(name, (lambda p: lambda: os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(1))(path))
import course_lib, course_lib.checks as checks
out["package"] = os.path.dirname(course_lib.__file__)
exercises = os.path.join(out["package"], "exercises")
out["sealed keys"] = sum(1 for f in os.listdir(exercises) if f.endswith(".json")
                         for e in json.load(open(os.path.join(exercises, f))).values() if "key" in e)
import io, contextlib
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    checks.check("03.8", " ".join(["the switch gives every GPU full bandwidth to every other"] * 3))
out["written check"] = buf.getvalue()
from course_lib.lab import launch
def work(rank, world_size):
    import torch, torch.distributed as dist
    t = torch.ones(4) * (rank + 1)
    dist.all_reduce(t)
    return float(t[0])
out["lab"] = launch.run(work, ranks=2, timeout=120, start_method="fork", echo=False)
print(json.dumps(out))
"""


def test_a_graded_class_on_the_hub(tmp_path):
    course = instructor.init_course(tmp_path / "course", ["03_nvswitch"], release=False)
    with class_on_hub(tmp_path, 3, COURSE_HUB_TASKS="256", COURSE_HUB_MEMORY_MB="3072") as (hub, users, homes, state):
        for user in users:
            hub.start(user)
        a, b, _ = users
        paths = {"solutions/": str(ROOT / "solutions"), "the answer key": str(grading.key_path()),
                 "a solution notebook": str(ROOT / "solutions" / "03_nvswitch.ipynb"),
                 "the course folder's source": str(course / "source"), "the gradebook folder": str(course / "submitted"),
                 "another learner's home": str(homes / b), "exercises": []}
        env = server_environ(a)
        python = env.pop("_COURSE_TEST_PYTHON")
        done = subprocess.run([python, "-c", PROBE, json.dumps(paths)], user=a, env=env, cwd=str(homes / a),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        got = json.loads(done.stdout.splitlines()[-1])
        print(json.dumps({k: v for k, v in got.items() if k != "written check"}, indent=1))
        for name in paths:
            if name != "exercises":
                assert got[name] == "PermissionError", (name, got[name])
        assert got["package"].startswith(str(state)) and got["sealed keys"] == 0, got
        model = grading.model_answer("03.8")
        assert model[:40] not in got["written check"] and "Model answer" not in got["written check"], got["written check"]
        assert got["lab"] == [3.0, 3.0], got["lab"]
        assert (os.stat(homes / a).st_mode & 0o077) == 0
        kind, said = hub_limits.available()
        if kind is not None:  # each server in its own groups, with the limits given
            usage = hub_limits.usage(a)
            assert usage.get("tasks", 1) > 0, (said, usage)
