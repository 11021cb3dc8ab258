"""Who stalled when a run times out: every unfinished rank dumps its stack, and the one not
waiting for a peer (in a send, receive, ``wait`` or collective) is named, with where.
"""
from __future__ import annotations

import os
import signal
import time

_STACK_WAIT_S = 1.0
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


def _who_stalled(procs, workdir, unfinished):
    """Ask every unfinished rank for its stack; return (stalled ranks, {rank: where})."""
    if not hasattr(signal, "SIGUSR1"):
        return unfinished, {}
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
    where = {rank: _describe(frames) for rank, frames in stacks.items()}
    stalled = [r for r in unfinished if r in stacks and not _waits_for_peer(stacks[r])]
    if not stalled or len(stalled) == len(unfinished):
        stalled = list(unfinished)
    return stalled, where
