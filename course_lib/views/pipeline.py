"""Chapter 07's pipeline schedules drawn: each stage's forward and backward ops over time, bubbles shaded.

Each function draws a schedule that :mod:`course_lib.pipeline_schedules` simulated (chapter 07's ``pipeline``
module picks it); none computes a model number.
"""
from __future__ import annotations

import numpy as np

from .. import style


class ScheduleView:
    """A pipeline schedule as a timeline: one row per device, forward passes blue, backward orange, idle white.

    Built once on ``ax`` (times divided by ``scale``); :meth:`update` moves the boxes (one collection)
    and the micro-batch labels (a pool of reused texts), or shows a note where there is no schedule.
    Text is sized to read at 8 pt once the figure is shrunk to the notebook's 7.5 in; a box gets its
    micro-batch number only where the number fits inside it, and a GPU row its name where rows are
    tall enough (else every n-th row).
    """

    def __init__(self, ax, scale=1.0, unit_label="time units"):
        import matplotlib.pyplot as plt
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Patch
        from matplotlib.transforms import ScaledTranslation
        self.ax, self.scale, self._labels = ax, scale, []
        self.size = style.notebook_points(ax.figure)  # points, before the notebook shrinks it
        self._blues, self._oranges = plt.get_cmap(style.WORK_CMAPS["forward"]), plt.get_cmap(style.WORK_CMAPS["backward"])
        self._boxes = ax.add_collection(PolyCollection([], edgecolors=style.PAPER, linewidths=0.5), autolim=False)
        self._note = ax.text(0.5, 0.5, "", ha="center", va="center", transform=ax.transAxes, visible=False,
                             fontsize=self.size)
        handles = [Patch(color=self._blues(0.65), label="forward"), Patch(color=self._oranges(0.65), label="backward"),
                   Patch(fc=style.PAPER, ec=style.CONTEXT, label="idle (bubble)")]
        # the legend on the x label's line, right of the label (which sits on the left): clear of each other
        below_ticks = ax.transAxes + ScaledTranslation(0, -(1.4 * self.size + 9) / 72, ax.figure.dpi_scale_trans)
        self._legend = ax.legend(handles=handles, fontsize=self.size, loc="upper right", bbox_to_anchor=(1.0, 0.0),
                                 bbox_transform=below_ticks, ncol=3, frameon=False, borderaxespad=0.0,
                                 borderpad=0.0, handlelength=1.5, columnspacing=1.0)
        ax.set_xlabel(unit_label, fontsize=self.size, loc="left")
        ax.tick_params(axis="x", labelsize=self.size)

    def _points_per_unit(self, sched):
        """Points per time unit across and per GPU row down, at the limits :meth:`update` sets."""
        box = self.ax.get_position()
        fig_w, fig_h = self.ax.figure.get_size_inches()
        return (72 * box.width * fig_w / (sched.makespan / self.scale * 1.01), 72 * box.height * fig_h / sched.stages)

    def update(self, sched, note=""):
        """Show ``sched`` (a ``pipeline_schedule`` result), or ``note`` where ``sched`` is None."""
        ax, shown = self.ax, sched is not None
        (ax.set_axis_on if shown else ax.set_axis_off)()
        self._note.set(text=note, visible=not shown)
        self._legend.set_visible(shown)
        ax.title.set_visible(shown)
        ops = sched.ops if shown else []
        label = shown and sched.micro_batches * sched.interleave <= 32 and sched.stages <= 16
        if label:  # the narrowest box must hold the longest number (digits about 0.64 em wide), a row its height
            across, down = self._points_per_unit(sched)
            narrowest = min(o.end - o.start for o in ops) / self.scale * across
            label = (narrowest >= 0.64 * self.size * len(str(sched.micro_batches)) + 2
                     and 0.8 * down >= 1.2 * self.size)
        while label and len(self._labels) < len(ops):
            self._labels.append(ax.text(0, 0, "", ha="center", va="center", fontsize=self.size))
        for i, text in enumerate(self._labels):
            text.set_visible(label and i < len(ops))
        if not shown:
            self._boxes.set_verts([])
            return
        v, scale, colours, boxes, shades = sched.interleave, self.scale, [], [], {}
        for i, o in enumerate(ops):  # one collection of boxes: thousands of ops stay one artist
            if (o.kind, o.chunk) not in shades:
                shade = 0.75 - 0.4 * o.chunk / max(1, v - 1) if v > 1 else 0.65
                shades[(o.kind, o.chunk)] = self._blues(shade) if o.kind == "F" else self._oranges(shade)
            colours.append(shades[(o.kind, o.chunk)])
            x0, x1, y0 = o.start / scale, o.end / scale, o.device - 0.4
            boxes.append(((x0, y0), (x1, y0), (x1, y0 + 0.8), (x0, y0 + 0.8)))
            if label:
                self._labels[i].set(x=(x0 + x1) / 2, y=o.device, text=str(o.micro_batch + 1),
                                    color=style.INK if o.kind == "B" else style.PAPER)
        self._boxes.set_verts(boxes)
        self._boxes.set_facecolor(colours)
        every = max(1, int(np.ceil(1.3 * self.size / self._points_per_unit(sched)[1])))  # GPU rows named
        rows = range(0, sched.stages, every)
        ax.set_yticks(rows, [f"GPU {d}" for d in rows], fontsize=self.size)
        ax.set_ylim(sched.stages - 0.5, -0.5)
        ax.set_xlim(0, sched.makespan / scale * 1.01)
        ax.set_title(f"{sched.name}: p={sched.stages}, m={sched.micro_batches}; bubble {sched.bubble_fraction:.3f} "
                     f"of the ideal time (formula (p-1)/(v m) = {sched.formula:.3f});\nGPU 0 holds "
                     f"{sched.peak_in_flight[0]:.3g} micro-batches of activations", fontsize=self.size)



def draw_schedule(ax, sched, scale=1.0, unit_label="time units"):
    """One drawing of :class:`ScheduleView` (a notebook figure, not an explorer)."""
    ScheduleView(ax, scale, unit_label).update(sched)
    return ax



def draw_schedules(axes, scheds, unit_label):
    """Several schedules (``pipeline_schedule`` results), one per Axes, on one time axis."""
    for ax, s in zip(axes, scheds):
        draw_schedule(ax, s, 1.0, unit_label)
        ax.set_xlim(0, max(x.makespan for x in scheds) * 1.01)
    return axes
