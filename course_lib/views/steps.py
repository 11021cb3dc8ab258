"""Chapter 04's all-reduce step-through drawn: the ranks' chunks after a step, the chunks that moved in it, and
the steps' times on a time line, for the ring, NCCL's double binary tree and NVLS.

Each function draws a plan and the times that :mod:`course_lib.chapters.collectives` computed (its ``steps``
module); none computes a model number.
"""
from __future__ import annotations

import numpy as np

from .. import style, units
from .collectives import arrow
from .ring import _ring_boxes, _ring_layout

SWITCH = -1  # as chapters.collectives.steps.SWITCH: the NVSwitch node of an NVLS plan


def _layout(p, chunks, switch=False):
    """Box centres, box width and cell size for p ranks of ``chunks`` cells, and the circle's radius (wider
    around a switch in the middle)."""
    centres, _, cell, radius = _ring_layout(p)
    if chunks < p:  # fewer, wider cells (the tree's two halves)
        cell = min(2.2 * cell, 0.9)
    if switch:
        centres, radius = centres * 1.3, radius * 1.3
    return centres, cell * chunks, cell, radius


def _edge(centre, toward, half_width, half_height):
    """The point where the segment from ``centre`` to ``toward`` leaves a box of that half width and height."""
    d = np.asarray(toward, float) - centre
    scale = min(half_width / abs(d[0]) if d[0] else np.inf, half_height / abs(d[1]) if d[1] else np.inf)
    return centre + d * min(scale, 1.0)


SWITCH_HALF = (0.45, 0.2)   # the NVSwitch box's half width and half height (data units)


def draw_state(ax, plan, k, fontsize=style.FONT_SMALL):
    """The ranks' chunks after step ``k`` of ``plan`` (0: the start) and the transfers of step k: red while
    partial sums travel, green once finished sums do; the NVSwitch of an NVLS plan in the middle."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    p = plan.ranks
    through_switch = plan.algorithm == "in_network"
    centres, width, cell, radius = _layout(p, len(plan.chunk_names), through_switch)
    _ring_boxes(ax, plan.states[k], centres, width, cell, fontsize, names=plan.chunk_names)
    hub = np.zeros(2)
    grow = max(1.0, radius / 2.3)   # a larger circle, a larger switch: the arrows' heads stay off its name
    half = (SWITCH_HALF[0] * grow, SWITCH_HALF[1] * grow)
    if through_switch:
        w, h = half
        ax.add_patch(FancyBboxPatch((-w, -h), 2 * w, 2 * h, boxstyle="round,pad=0.04", fc=style.SHADE,
                                    ec=style.INK, lw=1.0, zorder=2))
        ax.text(0, 0, "NVSwitch", ha="center", va="center", fontsize=fontsize, zorder=3)
    if k > 0:
        step = plan.steps[k - 1]
        colour = style.colour("phase", step.phase)
        for (src, dst), names in _edges(plan, k).items():
            if through_switch:  # straight, between the box edges; up and down side by side
                gpu = centres[dst if src == SWITCH else src]
                normal = np.array([-gpu[1], gpu[0]]) / np.hypot(*gpu) * (0.09 if src == SWITCH else -0.09)
                at_gpu = _edge(gpu, hub, width / 2 + 0.05, cell / 2 + 0.3) + normal  # clear of its name and labels
                at_hub = _edge(hub, gpu, half[0] + 0.08, half[1] + 0.08) + normal
                a, b = (at_hub, at_gpu) if src == SWITCH else (at_gpu, at_hub)
                ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=9, color=colour, lw=1.4,
                                             shrinkA=0, shrinkB=0, zorder=3))
                unit = normal / np.hypot(*normal)   # a label is wider than tall: further out beside a vertical arrow
                at = at_gpu + 0.3 * (at_hub - at_gpu) + unit * (0.14 + 0.4 * abs(unit[0]))
            else:
                a, b = centres[src] * 0.6, centres[dst] * 0.6
                arrow(ax, a, b, colour, rad=-0.3, lw=1.4, shrink=6)
                d = b - a
                at = (a + b) / 2 + 0.5 * -0.3 * np.array([d[1], -d[0]])
            ax.text(at[0], at[1], names, ha="center", va="center", fontsize=fontsize, color=colour, zorder=4,
                    bbox={"fc": style.PAPER, "ec": "none", "pad": 0.2})
    lim = radius + width / 2 + 0.15
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-radius - 0.6, radius + 0.75)
    ax.set_aspect("equal")
    ax.axis("off")
    if k == 0:
        title = f"{plan.label}, {p} ranks: the start, every rank holds its own buffer"
    else:
        doing = "reducing" if plan.steps[k - 1].phase == "reduce-scatter" else "sharing the sums"
        title = f"{plan.label}, {p} ranks: step {k} of {len(plan.steps)} ({doing})"
    ax.set_title(title, fontsize=style.larger(fontsize, 1))
    return ax


def _edges(plan, k) -> dict:
    """(src, dst) -> the label of the chunks that cross that link in step ``k`` (one arrow per link); a
    chunk that is already the full sum (all that leave the switch) is marked Σ."""
    everyone = frozenset(range(plan.ranks))
    before = plan.states[k - 1]
    moved = {}
    for t in plan.steps[k - 1].transfers:
        moved.setdefault((t.src, t.dst), []).append(t.chunk)
    out = {}
    for (src, dst), chunks in moved.items():
        summed = src == SWITCH or all(before[src][c] == everyone for c in chunks)
        if len(chunks) == len(plan.chunk_names) and len(chunks) > 2:
            text = "all"
        elif len(chunks) > 2:
            text = "the rest"
        else:
            text = ",".join(plan.chunk_names[c] for c in chunks)
        out[(src, dst)] = ("Σ" if len(chunks) <= 2 else "Σ ") + text if summed else text
    return out


def draw_timeline(ax, times, k=None, fontsize=style.FONT_SMALL):
    """The steps of ``times`` (a StepTimes) one after another on a time axis, step ``k`` highlighted (None:
    all alike), and below them the same all-reduce as the model prices it pipelined. Seconds in, µs drawn."""
    us = 1e6
    plan = times.plan
    start = 0.0
    for j, t in enumerate(times.step_s, start=1):
        phase = style.colour("phase", plan.steps[j - 1].phase)
        ax.barh(1, t * us, left=start * us, height=0.6, color=phase, alpha=1.0 if k in (j, None) else 0.35,
                edgecolor=style.INK if j == k else style.PAPER, lw=1.2 if j == k else 0.6)
        start += t
    ax.barh(0, times.pipelined_s * us, height=0.6, color=style.MODEL)
    ax.text(times.stepwise_s * us, 1, f" {units.format_time(times.stepwise_s)}", va="center", ha="left",
            fontsize=fontsize)
    ax.text(times.pipelined_s * us, 0, f" {units.format_time(times.pipelined_s)}", va="center", ha="left",
            fontsize=fontsize)
    ax.set_yticks([0, 1], ["pipelined\n(the model)", "step after\nstep"], fontsize=fontsize)
    ax.set_xlim(0, 1.3 * max(times.stepwise_s, times.pipelined_s) * us)
    ax.set_ylim(-0.5, 1.5)
    ax.set_xlabel(f"µs for {units.format_bytes(times.nbytes)} per rank at "
                  f"{units.format_bandwidth(times.bandwidth)}, alpha {units.format_time(times.latency)} per step",
                  fontsize=fontsize)
    ax.tick_params(axis="x", labelsize=fontsize)
    ax.grid(axis="x", alpha=0.3)
    return ax


def draw_timelines(axes, all_times, fontsize=style.FONT_SMALL):
    """One time line per algorithm (``all_times``: StepTimes each) on ``axes``, one x scale for all."""
    right = 1.3 * max(max(t.stepwise_s, t.pipelined_s) for t in all_times) * 1e6
    for ax, times in zip(axes, all_times):
        draw_timeline(ax, times, None, fontsize)
        ax.set_xlim(0, right)
        ax.set_title(f"{times.plan.label}: {len(times.plan.steps)} steps; pipelined busbw "
                     f"{units.format_bandwidth(times.busbw)}", fontsize=style.larger(fontsize, 1), loc="left")
    for ax in axes[:-1]:
        ax.set_xlabel("")
    return axes
