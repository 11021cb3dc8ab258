"""Helpers for the lab tests: counting child processes through /proc (Linux).

multiprocessing's resource tracker (started once per interpreter by the 'spawn' start method
and ending with it) is not a rank and is not counted.
"""
import os


def live_children(pid=None):
    pid = os.getpid() if pid is None else pid
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) != pid or fields[0] == "Z":
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if b"resource_tracker" in cmdline:  # multiprocessing's own helper for 'spawn', lives with us
            continue
        out.append(int(entry))
    return out
