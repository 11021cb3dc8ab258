"""Who stalled when a run times out: every unfinished rank dumps its stack, and the one not
waiting for a peer (in a send, receive, ``wait`` or collective) is named, with where.

Whether the ranks still move is read from what they do over ``_SAMPLE_S`` after their stacks
are taken (the dump itself costs CPU): the CPU time they use (``/proc/<pid>/stat``) and how often their threads wake
(context switches, ``/proc/<pid>/task/*/status``). Ranks that all wait for a peer, use next to no
CPU and wake no more than an idle rank does (gloo keeps a thread ticking about 100 times a second)
are deadlocked: each waits, none can go on. Ranks that all wait for a peer but still use CPU or
wake for messages are slow, not stuck (many ranks on few cores: each step of a collective waits
for the scheduler).
"""
from __future__ import annotations

import os
import signal
import time

from .processes import _stat_fields

_STACK_WAIT_S = 1.0
_SAMPLE_S = 1.0       # the time over which the ranks' CPU use is read, after the dumps
IDLE_TICKS = 1        # CPU clock ticks (1/100 s) a waiting rank may use over the sample
IDLE_WAKEUPS_S = 200  # context switches per second per rank of a rank that waits (measured: ~100)
_PEER_CALLS = ("wait(", "send(", "recv(", "barrier(", "all_reduce(", "all_gather", "reduce_scatter",
               "broadcast(", "all_to_all", "gather(", "scatter(", "reduce(", "monitored_barrier(")


def parse_stack(text: str) -> list[tuple[str, int, str]]:
    """The main thread's frames, innermost first, as (file, line, function), from a
    ``faulthandler`` dump written after a ``main thread 0x...`` header line."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("main thread 0x"):
        return []
    main = int(lines[0].split()[-1], 16)
    frames, in_main = [], False
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith(("Thread 0x", "Current thread 0x")):
            if frames and in_main:
                break  # the latest dump's main thread is complete
            ident = next(tok for tok in stripped.split() if tok.startswith("0x"))
            in_main = int(ident, 16) == main
            frames = [] if in_main else frames
        elif in_main and stripped.startswith("File "):
            try:
                path = stripped.split('"')[1]
                rest = stripped.split('"', 2)[2]
                lineno = int(rest.split("line", 1)[1].split()[0])
                func = rest.split(" in ", 1)[1].strip()
            except (IndexError, ValueError):
                continue
            frames.append((path, lineno, func))
    return frames


def _waits_for_peer(frames) -> bool:
    """Whether the innermost frame is a torch.distributed call or a line that calls one (e.g. ``work.wait()``)."""
    import linecache

    if not frames:
        return False
    path, lineno, _ = frames[0]
    if f"torch{os.sep}distributed" in path:
        return True
    source = linecache.getline(path, lineno)
    return any(call in source for call in _PEER_CALLS)


def _describe(frames) -> str:
    import linecache

    path, lineno, func = frames[0]
    source = linecache.getline(path, lineno).strip()
    return f"{func} ({os.path.basename(path)}:{lineno}" + (f": {source}" if source else "") + ")"


def cpu_ticks(pid) -> int | None:
    """User + system CPU time of process ``pid`` and its threads, in clock ticks; None if unknown."""
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields else None


def wakeups(pid) -> int | None:
    """Context switches of all threads of process ``pid`` so far (Linux); None if unknown."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/status") as handle:
                for line in handle:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
    except (OSError, ValueError):
        return None
    return total


def moving(cpu: dict, woke: dict, seconds: float) -> bool:
    """Whether ranks that each used ``cpu[rank]`` CPU ticks and woke ``woke[rank]`` times in ``seconds``
    were still doing something (unknown counts as moving: a deadlock is only named when proven)."""
    if not cpu or not woke:
        return True
    idle_cpu = IDLE_TICKS * len(cpu) + 2
    return sum(cpu.values()) > idle_cpu or max(woke.values()) > IDLE_WAKEUPS_S * max(seconds, 1e-3)


def _who_stalled(procs, workdir, unfinished):
    """Ask every unfinished rank for its stack; return (stalled ranks, {rank: where}, ranks that were
    waiting for a peer, whether they were moving (``moving``), {rank: CPU ticks used over the sample})."""
    if not hasattr(signal, "SIGUSR1"):
        return unfinished, {}, [], True, {}
    sizes = {}
    for rank in unfinished:
        path = os.path.join(workdir, f"rank{rank}.stack")
        try:
            sizes[rank] = os.path.getsize(path)
            os.kill(procs[rank].pid, signal.SIGUSR1)
        except OSError:
            continue
    deadline = time.monotonic() + _STACK_WAIT_S
    stacks = {}
    while time.monotonic() < deadline and len(stacks) < len(sizes):
        for rank in sizes:
            if rank in stacks:
                continue
            path = os.path.join(workdir, f"rank{rank}.stack")
            try:
                with open(path) as handle:
                    text = handle.read()
            except OSError:
                continue
            if len(text) > sizes[rank]:
                time.sleep(0.02)  # let the dump finish
                with open(path) as handle:
                    frames = parse_stack(handle.read())
                if frames:
                    stacks[rank] = frames
        time.sleep(0.01)
    # Sample only after the dumps: writing a stack costs CPU, which a loaded machine stretches past
    # what a waiting rank uses, so a sample that covers the dump can call a deadlock "still moving".
    started = time.monotonic()
    before = {rank: (cpu_ticks(procs[rank].pid), wakeups(procs[rank].pid)) for rank in unfinished}
    time.sleep(_SAMPLE_S)
    used, woke = {}, {}
    for rank in unfinished:
        cpu, wake = cpu_ticks(procs[rank].pid), wakeups(procs[rank].pid)
        if before[rank][0] is not None and cpu is not None:
            used[rank] = cpu - before[rank][0]
        if before[rank][1] is not None and wake is not None:
            woke[rank] = wake - before[rank][1]
    went_on = moving(used, woke, time.monotonic() - started)
    where = {rank: _describe(frames) for rank, frames in stacks.items()}
    waiting = [r for r in unfinished if r in stacks and _waits_for_peer(stacks[r])]
    stalled = [r for r in unfinished if r in stacks and r not in waiting]
    if not stalled or len(stalled) == len(unfinished):
        stalled = list(unfinished)
    return stalled, where, waiting, went_on, used
