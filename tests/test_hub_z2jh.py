"""The Zero to JupyterHub recipe (jupyter/hub/z2jh/) serves the lab `make lab` serves.

No Kubernetes or image build here: the test checks what can be checked on one machine. The image builds
the .venv with the Makefile's own recipe (the hub stamp, which depends on the lab's stamp), on the Python
the project asks for; the values file starts each learner's server with `make lab`'s flags (the
repository at /opt/course), its start page, the `work` target for the copies, and the lab's rank budget.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parent.parent
Z2JH = ROOT / "jupyter" / "hub" / "z2jh"
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make_n(*args) -> str:
    done = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.replace("\\\n", " ")


def test_the_image_builds_the_venv_with_the_makefiles_recipe():
    docker = (Z2JH / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", docker, re.M)  # pyproject: requires-python >=3.11
    assert "COPY --chown=1000:1000 . /opt/course" in docker
    assert re.search(r"^RUN make \.venv/\.hub-stamp PYTHON=python3", docker, re.M)
    assert "ENV PATH=/opt/course/.venv/bin:$PATH" in docker
    # the hub stamp builds the lab's stamp first: the same pip commands as make lab, then the hub extra
    fresh = _make_n("-B", ".venv/.hub-stamp")
    lab = [line for line in _make_n("-B", ".venv/.installed-stamp").splitlines() if "pip install" in line]
    assert lab and all(line in fresh for line in lab)
    assert "'.[dev,instructor,hub]'" in fresh


def test_each_learners_server_is_the_learners_lab():
    values = yaml.safe_load((Z2JH / "values.yaml").read_text())
    lab = _make_n("lab", "WORK=/home/jovyan/work")
    flags = lab.split("--ServerApp.root_dir=/home/jovyan/work", 1)[1].split()
    learner = [f for f in flags if not f.startswith("--LabApp.default_url=")]
    url = next(f.split("=", 1)[1] for f in flags if f.startswith("--LabApp.default_url="))
    spawner = values["hub"]["config"]["KubeSpawner"]
    assert spawner["args"] == [f.replace(str(ROOT), "/opt/course") for f in learner]
    assert spawner["notebook_dir"] == "/home/jovyan/work"
    assert values["singleuser"]["defaultUrl"] == url
    cmd = values["singleuser"]["cmd"]
    assert cmd[:2] == ["bash", "-c"] and cmd[-1] == "--"
    assert "make -C /opt/course --no-print-directory work WORK=/home/jovyan/work && exec" in cmd[2]
    assert "/opt/course/.venv/bin/python -m jupyterhub.singleuser \"$@\"" in cmd[2]
    env = values["singleuser"]["extraEnv"]
    cores = values["singleuser"]["cpu"]["limit"]
    assert set(env) == {"COURSE_LAB_BUDGET_DIR", "COURSE_LAB_RANKS_PER_USER", "COURSE_LAB_RANKS_PER_SERVER",
                        "COURSE_LIB_MODE"} and env["COURSE_LIB_MODE"] == "graded"
    for resource in ("cpu", "memory"):  # per-learner limits: each pod is one learner's server
        assert values["singleuser"][resource]["limit"], resource
    from course_lib.lab import budget

    assert (int(env["COURSE_LAB_RANKS_PER_USER"]), int(env["COURSE_LAB_RANKS_PER_SERVER"])) == \
        budget.default_limits(cores)


def test_learners_pods_hold_no_solutions_or_keys(tmp_path):
    """The image's graded step, run here: the learner copy it makes holds no solutions/, key or sealed keys."""
    import json

    from course_lib import hub_class

    docker = (Z2JH / "Dockerfile").read_text()
    assert "hub_class.graded_learner_copy('/opt/course', '/tmp/learner')" in docker
    assert "rm -rf /tmp/learner /opt/course/solutions /opt/course/.git" in docker
    copy = hub_class.graded_learner_copy(ROOT, tmp_path / "learner")
    assert not (copy / "solutions").exists() and not list(copy.rglob("answers.json"))
    entries = [e for f in (copy / "course_lib" / "exercises").glob("*.json") for e in json.loads(f.read_text()).values()]
    assert entries and not any("key" in e or "model_answer" in e for e in entries)
