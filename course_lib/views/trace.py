"""Chapter 06's profiler timeline drawn: one DDP step as ``torch.profiler`` recorded it on every rank.

Each rank gets two lanes: its training thread (forward, backward ops, the copy of the averaged buckets back
into ``.grad``, the optimizer step; DDP's launch of each bucket as a tick) and gloo's threads (each bucket's
all-reduce, numbered). The function draws the spans a lab run recorded (``lab.ddp_trace``) and computes no
model number.
"""
from __future__ import annotations

from .. import style, units

_LEGEND = (("forward", "forward pass"), ("backward", "backward op"), ("all-reduce", "bucket all-reduce (gloo thread)"),
           ("copy back", "copy of averaged buckets into .grad"), ("optimizer", "optimizer step"))


def draw_trace(ax, lanes, windows, title, launch_marks=()):
    """The timeline. ``lanes``: (label, spans) from the top down, each span a ``lab.ddp_trace.Span``;
    ``windows``: (lane index, backward start s, backward end s) to shade where the backward pass runs;
    ``launch_marks``: (lane index, time s) of DDP launching a bucket. Seconds in, ms drawn. Returns ax."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ms = 1e3
    n = len(lanes)
    right = max((s.end_s for _, spans in lanes for s in spans), default=0.0)
    for k, (label, spans) in enumerate(lanes):
        y = n - 1 - k
        threads = list(dict.fromkeys(s.thread for s in spans if s.kind == "all-reduce"))
        for s in spans:
            # gloo's worker threads each get a row of their own in the lane: their all-reduces may overlap
            rows = max(1, len(threads)) if s.kind == "all-reduce" else 1
            row = threads.index(s.thread) if s.kind == "all-reduce" else 0
            height = 0.7 / rows
            yc = y + 0.35 - height * (row + 0.5)
            ax.barh(yc, max(s.duration_s, 0.0) * ms, left=s.start_s * ms, height=height * 0.92,
                    color=style.colour("trace", s.kind), edgecolor=style.PAPER if s.kind != "all-reduce" else style.INK, lw=0.3)
            if s.kind == "all-reduce" and s.bucket is not None and s.duration_s > 0.025 * right:
                ax.text((s.start_s + s.end_s) / 2 * ms, yc, f"b{s.bucket}", ha="center", va="center",
                        fontsize=style.FONT_SMALL, color=style.PAPER)
    for k, start, end in windows:  # behind the training thread's lane and the gloo lane under it
        ax.barh(n - 1.5 - k, (end - start) * ms, left=start * ms, height=2.0, color=style.SHADE, zorder=0)
    for k, t in launch_marks:
        y = n - 1 - k
        ax.plot([t * ms, t * ms], [y - 0.36, y - 0.64], color=style.INK, lw=1.2)
    handles = [Patch(color=style.colour("trace", key), label=text) for key, text in _LEGEND]
    handles.append(Line2D([], [], color=style.INK, lw=1.2, label="DDP launches a bucket's all-reduce"))
    ax.legend(handles=handles, fontsize=style.FONT_SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3,
              frameon=False)
    ax.set_yticks(range(n), [label for label, _ in reversed(lanes)], fontsize=style.FONT_SMALL)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel("time from rank 0's forward pass, ms, one clock for both ranks (grey: each rank's backward pass)",
                  fontsize=style.FONT_NORMAL)
    ax.set_title(title, fontsize=style.FONT_NORMAL)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="x", labelsize=style.FONT_SMALL)
    return ax


def trace_title(ranks, buckets, grad_bytes, overlap_s, comm_s) -> str:
    """The figure's title: what ran, and how much of rank 0's all-reduce ran beside its backward pass."""
    return (f"One DDP step on {ranks} CPU ranks, as torch.profiler recorded it: {units.format_bytes(grad_bytes)} of "
            f"gradients in {buckets} buckets;\nrank 0: {units.format_time(overlap_s)} of its "
            f"{units.format_time(comm_s)} of all-reduce ran while backward ops computed")
