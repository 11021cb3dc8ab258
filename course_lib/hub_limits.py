"""CPU, memory and task limits per learner on the hub, which the learner's kernel cannot change.

Each learner's server (and every kernel and lab rank it starts) runs in its own control group, made and
written by the hub as root before the server's process drops to the learner's uid: ``cpu`` (CFS quota,
in cores), ``memory`` (bytes, swap included where the kernel accounts it) and ``pids`` (tasks: processes
and threads). The group's files are root's, so nothing the learner runs can raise a limit or leave the
group. cgroup v2 (one unified hierarchy with those controllers) is used where the machine has it, else
cgroup v1 (a hierarchy per controller); :func:`available` says which, or why neither.

A learner who forks past the task limit gets ``BlockingIOError: Resource temporarily unavailable`` (the
lab's launcher says it in one line); one who allocates past the memory limit has that kernel killed
("kernel died"); the others' servers are in their own groups and keep their share.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
GROUP = "course-hub"
CPU_ENV, MEMORY_ENV, TASKS_ENV = "COURSE_HUB_CPUS", "COURSE_HUB_MEMORY_MB", "COURSE_HUB_TASKS"


@dataclass(frozen=True)
class Limits:
    cpus: float = 2.0
    memory_mb: int = 4096
    tasks: int = 512


def limits_from_env(env=os.environ) -> Limits:
    """:class:`Limits` from ``COURSE_HUB_CPUS``, ``COURSE_HUB_MEMORY_MB``, ``COURSE_HUB_TASKS`` (ValueError naming
    the one that is not a positive number)."""
    out = {}
    for name, field, kind in ((CPU_ENV, "cpus", float), (MEMORY_ENV, "memory_mb", int), (TASKS_ENV, "tasks", int)):
        raw = env.get(name)
        if raw is None:
            continue
        try:
            value = kind(raw)
        except ValueError:
            value = 0
        if not value > 0:
            raise ValueError(f"{name} must be a positive {'number' if kind is float else 'whole number'}, got {raw!r}")
        out[field] = value
    return Limits(**out)


def _own(controller_root: Path, controller: str) -> Path:
    """This process's group in a v1 hierarchy (new groups go under it: a container may allow only that)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return controller_root / path.lstrip("/")
    return controller_root


def available() -> tuple[str | None, str]:
    """("v2" | "v1" | None, one line saying what limits learners' servers get here)."""
    unified = CGROUP / "cgroup.controllers"
    if unified.is_file() and {"memory", "pids", "cpu"} <= set(unified.read_text().split()):
        return "v2", "cgroup v2: each learner's server gets CPU, memory and task limits"
    v1 = [c for c in ("cpu", "memory", "pids") if (CGROUP / c / "cgroup.procs").is_file()]
    if {"memory", "pids"} <= set(v1):
        return "v1", f"cgroup v1 ({', '.join(v1)}): each learner's server gets {', '.join(v1)} limits"
    return None, "no cgroup controllers for memory and tasks here: learners' servers are not limited"


def prepare(user: str, limits: Limits) -> list[Path]:
    """Make (or reset) the learner's groups with ``limits``; returns the folders to enter (root only)."""
    kind, _ = available()
    if kind is None:
        return []
    folders = []
    if kind == "v2":
        base = CGROUP / GROUP
        base.mkdir(exist_ok=True)
        (base / "cgroup.subtree_control").write_text("+cpu +memory +pids")
        folder = base / user
        folder.mkdir(exist_ok=True)
        (folder / "cpu.max").write_text(f"{int(limits.cpus * 100000)} 100000")
        (folder / "memory.max").write_text(str(limits.memory_mb << 20))
        (folder / "pids.max").write_text(str(limits.tasks))
        return [folder]
    for controller, files in (("cpu", {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": str(int(limits.cpus * 100000))}),
                              ("memory", {"memory.limit_in_bytes": str(limits.memory_mb << 20)}),
                              ("pids", {"pids.max": str(limits.tasks)})):
        root = CGROUP / controller
        if not (root / "cgroup.procs").is_file():
            continue
        folder = _own(root, controller) / GROUP / user
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            if (folder / name).exists():
                (folder / name).write_text(value)
        folders.append(folder)
    return folders


def enter(folders: list[Path]) -> None:
    """Put this process in ``folders`` (run in the server's process, as root, before it drops to the learner)."""
    pid = str(os.getpid())
    for folder in folders:
        with open(folder / "cgroup.procs", "w") as handle:
            handle.write(pid)


def usage(user: str) -> dict:
    """What the learner's groups hold now: {"tasks": n, "memory_bytes": n} (where readable)."""
    kind, _ = available()
    out = {}
    if kind == "v2":
        folder = CGROUP / GROUP / user
        out["tasks"] = int((folder / "pids.current").read_text())
        out["memory_bytes"] = int((folder / "memory.current").read_text())
    elif kind == "v1":
        pids = _own(CGROUP / "pids", "pids") / GROUP / user
        memory = _own(CGROUP / "memory", "memory") / GROUP / user
        if (pids / "pids.current").is_file():
            out["tasks"] = int((pids / "pids.current").read_text())
        if (memory / "memory.usage_in_bytes").is_file():
            out["memory_bytes"] = int((memory / "memory.usage_in_bytes").read_text())
    return out
