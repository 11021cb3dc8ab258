"""Chapter 06, the profiler trace: one real DDP step (``lab.ddp_trace``) laid out as a timeline, two lanes a rank."""
from __future__ import annotations

from ...views import trace as views


def trace_lanes(trace) -> tuple[list, list, list]:
    """(lanes, backward windows, launch marks) for :func:`views.trace.draw_trace`: per rank its training
    thread (without DDP's launches, drawn as ticks) and gloo's threads, from a ``lab.ddp_trace.DDPTrace``."""
    lanes, windows, marks = [], [], []
    for r in range(trace.ranks):
        compute = [s for s in trace.of(r) if s.lane == "compute" and s.kind != "launch"]
        windows.append((len(lanes), *trace.backward_window(r)))
        marks += [(len(lanes), s.start_s) for s in trace.of(r, "launch")]
        lanes.append((f"rank {r}: training thread", compute))
        lanes.append((f"rank {r}: gloo threads", trace.of(r, "all-reduce")))
    return lanes, windows, marks


def draw_ddp_trace(trace, ax=None):
    """Draw a ``lab.ddp_trace.DDPTrace``: backward ops and bucket all-reduces on every rank. Returns ax."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 1.0 + 0.55 * 2 * trace.ranks + 0.9))
    lanes, windows, marks = trace_lanes(trace)
    title = views.trace_title(trace.ranks, len(trace.buckets), trace.grad_bytes, trace.overlap_s(0), trace.comm_s(0))
    return views.draw_trace(ax, lanes, windows, title, marks)
