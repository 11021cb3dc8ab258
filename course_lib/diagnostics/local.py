"""The outputs of this machine's own tools, where they exist: ``nvidia-smi topo -m``, ``nvidia-smi nvlink -s``,
``ibstat``. Nothing fails without them: a missing tool, an error or a timeout is reported and skipped.
"""
from __future__ import annotations

import shutil
import subprocess

COMMANDS = (("nvidia-smi", "topo", "-m"), ("nvidia-smi", "nvlink", "-s"), ("ibstat",))


def collect(commands=COMMANDS, timeout_s: float = 20.0) -> tuple[list[tuple[str, str]], list[str]]:
    """``(outputs, notes)``: ``outputs`` as ``(command line, stdout)`` pairs for ``inspect_texts``;
    ``notes`` say which commands were missing or failed, and why."""
    outputs, notes = [], []
    for cmd in commands:
        line = " ".join(cmd)
        if shutil.which(cmd[0]) is None:
            notes.append(f"{line}: {cmd[0]} is not installed here")
            continue
        try:
            run = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            notes.append(f"{line}: did not run ({type(exc).__name__})")
            continue
        if run.returncode != 0 or not run.stdout.strip():
            why = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[0]
            notes.append(f"{line}: no output ({why})")
            continue
        outputs.append((line, run.stdout))
    return outputs, notes
