"""Drawings of chapter 07 (model parallelism): pipeline schedules, rank maps, the layout grid, validation.

Each function draws a result that :mod:`course_lib.chapters.model_parallel` computed (a
``Schedule``, a rank map, a layout grid of ``parallel.Estimate``); none computes a model number.
"""
from __future__ import annotations

import numpy as np

from .. import style, units
from ..widgets import html_table

BREAKDOWN_COLOURS = style.STEP_COLOURS
MEMORY_COLOURS = style.MEMORY_COLOURS


def draw_rank_map(ax, ranks, links, tp, pp, dp, gpus_per_node, system_name):
    """The GPUs of a small 3D layout node by node (``ranks`` from ``rank_map``, ``links`` from
    ``group_links``): colour = pipeline stage, label = TP and DP rank, thick boxes = TP groups."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    g = gpus_per_node
    nodes = -(-len(ranks) // g)
    cmap = plt.get_cmap(style.STAGE_CMAP)
    for r in ranks:
        x, y = r["local"], r["node"]
        ax.add_patch(Rectangle((x + 0.05, y + 0.08), 0.9, 0.84, fc=cmap(r["pp_rank"] % 8), ec=style.GUIDE, lw=0.8))
        ax.text(x + 0.5, y + 0.5, f"rank {r['rank']}\nTP{r['tp_rank']} DP{r['dp_rank']}", ha="center", va="center",
                fontsize=style.FONT_SMALL)
    for r in ranks:  # outline each TP group
        if r["tp_rank"] == 0:
            x, y = r["local"], r["node"]
            width = min(tp, g - x)
            ax.add_patch(Rectangle((x + 0.02, y + 0.04), width - 0.04, 0.92, fc="none", ec=style.INK, lw=2.2))
    for n in range(nodes):
        ax.text(-0.2, n + 0.5, f"node {n}", ha="right", va="center", fontsize=style.FONT_SMALL)
    for s in range(pp):
        ax.bar(0, 0, color=cmap(s % 8), label=f"pipeline stage {s}")
    lines = [f"{k} groups of {v['size']}: {v['link']}" + (" (crosses nodes)" if v["crosses_nodes"] else "")
             for k, v in links.items()]
    ax.set_xlim(-1.4, g + 0.1)
    ax.set_ylim(nodes + 0.1, -0.1)
    ax.set_axis_off()
    ax.set_title(f"TP{tp} x PP{pp} x DP{dp} on {system_name},\nMegatron rank order (thick boxes: TP groups)\n"
                 + "\n".join(lines), fontsize=style.FONT_NORMAL)
    ax.legend(fontsize=style.FONT_SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=min(pp, 4), frameon=False)
    return ax


LAYOUT_POINTS = style.FONT_SMALL  # every text of the layout explorer: its figure is the notebook's 7.5 in, so 8 pt reads at 8 pt


def layout_axes(fig):
    """The layout explorer's Axes: the heat map across the top; below it, side by side, the selected
    layout's step time (left) and memory per GPU (right)."""
    grid = fig.add_gridspec(2, 2, height_ratios=[2.2, 1])  # spacing left to tight_layout (set spacing opts out)
    return [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]


class LayoutView:
    """The layout explorer's three Axes, drawn once and then updated in place (:meth:`update`).

    ``heat`` (across the top): every TP x PP layout of a grid as one image (brighter = higher MFU,
    grey: does not fit, hatched: impossible) with one reused label per cell; below it the selected
    layout's step-time split (``step``) and memory per GPU (``memory``), each with its key underneath.
    Only a grid of another shape rebuilds the heat map. Every text is LAYOUT_POINTS.
    """

    def __init__(self, heat, step, memory):
        self.heat, self.step, self.memory = heat, step, memory
        self._shape = None
        self._step_bars, self._step_legend = _bar_row(step, BREAKDOWN_COLOURS, "seconds per step")
        self._mem_bars, self._mem_legend = _bar_row(memory, MEMORY_COLOURS, "GB per GPU (red line: usable)")
        self._usable = memory.axvline(0.0, color=style.YOURS, lw=1.5)
        self._notes = [a.text(0.5, 0.5, "selected layout is impossible\n(see the readout)", ha="center", va="center",
                              transform=a.transAxes, fontsize=LAYOUT_POINTS, visible=False) for a in (step, memory)]

    def _build_heat(self, tps, pps):
        """Image, cell borders, hatching, one label per cell and the red frame for a grid of this shape."""
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Rectangle
        ax, size = self.heat, LAYOUT_POINTS
        for artist in [*ax.texts, *ax.collections, *ax.patches]:
            artist.remove()
        rows, cols = len(tps), len(pps)
        cells = [_square(j, i) for i in range(rows) for j in range(cols)]
        self._cells = ax.add_collection(PolyCollection(cells, facecolors=style.PAPER, edgecolors=style.PAPER, linewidths=1),
                                        autolim=False)
        self._hatch = ax.add_collection(PolyCollection([], facecolors=style.PAPER, edgecolors=style.SHADE, hatch="//"),
                                        autolim=False)
        self._labels = {(t, p): ax.text(j + 0.5, i + 0.5, "", ha="center", va="center", fontsize=size)
                        for i, t in enumerate(tps) for j, p in enumerate(pps)}
        self._frame = ax.add_patch(Rectangle((0, 0), 1, 1, fc="none", ec=style.YOURS, lw=2.5))
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_xticks(np.arange(cols) + 0.5, [str(p) for p in pps], fontsize=size)
        ax.set_yticks(np.arange(rows) + 0.5, [str(t) for t in tps], fontsize=size)
        ax.set_xlabel("pipeline stages PP", fontsize=size, labelpad=2)
        ax.set_ylabel("tensor parallel TP", fontsize=size)
        ax.set_title("each cell: MFU, GB per GPU (brighter: faster; grey: too big; hatched: impossible; "
                     "red: selected)", fontsize=size)
        self._shape = (tuple(tps), tuple(pps))

    def update(self, choice):
        """Show a ``LayoutChoice``: its grid (the best fitting layout sets the colour scale), the selected
        (tp, pp) framed, and the selected layout's bars (a note where it is impossible)."""
        import matplotlib.pyplot as plt
        grid, best, tp, pp = choice.grid, choice.best, choice.tp, choice.pp
        tps, pps = grid["tps"], grid["pps"]
        if (tuple(tps), tuple(pps)) != self._shape:
            self._build_heat(tps, pps)
        cmap, top = plt.get_cmap(style.ORDER_CMAP), best.mfu if best is not None else 1.0
        rgba, invalid = np.ones((len(tps), len(pps), 4)), []  # white: impossible (hatched)
        for i, t in enumerate(tps):
            for j, p in enumerate(pps):
                e, label = grid["cells"].get((t, p)), self._labels[(t, p)]
                if e is None:
                    invalid.append(_square(j, i))
                    label.set_text("")
                    continue
                mem = e.memory["total"] / units.GB
                if e.fits:
                    shade = 0.15 + 0.85 * max(0.0, min(e.mfu / top, 1.0)) ** 2
                    rgba[i, j] = cmap(shade)
                    label.set(text=f"{e.mfu:.0%}, {mem:.0f}", color=style.PAPER if shade < 0.6 else style.INK)
                else:
                    rgba[i, j] = (0.8, 0.8, 0.8, 1.0)
                    label.set(text=f"{mem:.0f}" if mem < 1e4 else "too big", color=style.GUIDE)
        self._cells.set_facecolor(rgba.reshape(-1, 4))
        self._hatch.set_verts(invalid)
        framed = (tp, pp) in grid["cells"] or (tp, pp) in grid["invalid"]
        self._frame.set_visible(framed)
        if framed:
            self._frame.set_xy((pps.index(pp), tps.index(tp)))
        self._update_selected(choice.selected)

    def _update_selected(self, e):
        for ax, note in zip((self.step, self.memory), self._notes):
            (ax.set_axis_on if e is not None else ax.set_axis_off)()
            note.set_visible(e is None)
        for artist in [*self._step_bars.values(), *self._mem_bars.values(), self._usable, self._step_legend,
                       self._mem_legend, self.step.title, self.memory.title]:
            artist.set_visible(e is not None)
        if e is None:
            return
        parts = e.breakdown()
        total = _set_bars(self._step_bars, self._step_legend,
                          {name: parts.get(name, 0.0) for name in BREAKDOWN_COLOURS}, units.format_time)
        self.step.set_xlim(0, total * 1.05)
        self.step.set_title(f"{e.layout}\nstep {units.format_time(e.step_time_s)}, bubble (p-1)/m = "
                            f"{e.bubble_fraction:.3f}", fontsize=LAYOUT_POINTS)
        gb = units.GB
        used = _set_bars(self._mem_bars, self._mem_legend, {name: e.memory[name] / gb for name in MEMORY_COLOURS},
                         lambda v: f"{v:.1f} GB")
        self._usable.set_xdata([e.memory["usable"] / gb] * 2)
        self.memory.set_xlim(0, max(used, e.memory["capacity"] / gb) * 1.05)
        self.memory.set_title(f"memory {e.memory['total'] / gb:.1f} GB of {e.memory['usable'] / gb:.0f} GB usable:"
                              f"\n{'fits' if e.fits else 'does NOT fit'}", fontsize=LAYOUT_POINTS)


def _square(x, y):
    """The unit cell with its corner at (x, y), as polygon vertices."""
    return ((x, y), (x + 1, y), (x + 1, y + 1), (x, y + 1))


class _Key:
    """A legend as plain artists: a square and a text per entry, one column under the Axes' x label.
    A Legend lays its boxes out again on every draw; these texts only change their strings."""

    def __init__(self, ax, colours, fontsize=LAYOUT_POINTS):
        from matplotlib.transforms import ScaledTranslation
        self.texts, self.artists = [], []
        below_label = 3.6 * fontsize + 8  # points from the Axes' bottom: tick labels and the x label above the key
        for row, (name, colour) in enumerate(colours.items()):
            down = -(below_label + row * 1.45 * fontsize) / 72
            at = ax.transAxes + ScaledTranslation(0, down, ax.figure.dpi_scale_trans)
            self.artists += ax.plot([0.02], [0], "s", ms=0.9 * fontsize, color=colour, transform=at, clip_on=False)
            self.texts.append(ax.text(0.02, 0, name, transform=at + ScaledTranslation(fontsize / 72, 0,
                                                                                       ax.figure.dpi_scale_trans),
                                      fontsize=fontsize, va="center", clip_on=False))
        self.artists += self.texts

    def get_texts(self):
        return self.texts

    def set_visible(self, visible):
        for artist in self.artists:
            artist.set_visible(visible)


def _bar_row(ax, colours, xlabel):
    """One horizontal stacked bar (one Rectangle per part, widths set later) and its key below the Axes."""
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # a few short ticks: each label is drawn on every event
    bars = {name: ax.barh(0, 0.0, color=colour, label=name)[0] for name, colour in colours.items()}
    ax.set_yticks([])
    ax.set_ylim(-0.44, 0.44)
    ax.tick_params(axis="x", labelsize=LAYOUT_POINTS)
    ax.set_xlabel(xlabel, fontsize=LAYOUT_POINTS, labelpad=2)
    return bars, _Key(ax, colours)


def _set_bars(bars, key, values, fmt) -> float:
    """Stack ``values`` (name -> width) on ``bars`` left to right and label the key; returns the total."""
    left = 0.0
    for (name, value), text in zip(values.items(), key.get_texts()):
        bars[name].set_x(left)
        bars[name].set_width(value)
        text.set_text(f"{name} {fmt(value)}")
        left += value
    return left


def draw_validation(ax, rows):
    """Predicted vs measured TFLOP/s per GPU (``rows`` from ``validation_rows``), marked by each case's role:
    fit (set the compute-efficiency constants), informed (shaped a choice) or test (set nothing)."""
    roles = {"fit": ("o", style.series(0), "fit: set the constants", "none"),
             "informed": ("s", style.series(1), "informed: shaped a choice", None),
             "test": ("*", style.series(2), "test: set nothing", None)}
    for role, (marker, colour, label, face) in roles.items():
        sel = [r for r in rows if r["role"] == role]
        if sel:
            ax.plot([r["measured"] for r in sel], [r["predicted"] for r in sel], marker, color=colour,
                    ms=10 if marker == "*" else 6, ls="none", label=label,
                    **({"markerfacecolor": face} if face else {}))
    lo = min(min(r["measured"], r["predicted"]) for r in rows) * 0.85
    hi = max(max(r["measured"], r["predicted"]) for r in rows) * 1.1
    ax.plot([lo, hi], [lo, hi], "-", color=style.INK, lw=0.8, label="model = measurement")
    ax.fill_between([lo, hi], [0.9 * lo, 0.9 * hi], [1.1 * lo, 1.1 * hi], color=style.SHADE, label="within 10%")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured TFLOP/s per GPU (published runs)")
    ax.set_ylabel("parallel.estimate, TFLOP/s per GPU")
    ax.set_title("Model vs published training runs", fontsize=style.FONT_TITLE)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=style.FONT_SMALL, loc="upper left")
    return ax


def draw_tp_crossing(left, right, series, model_name, right_title):
    """``left`` (drawn on top by plot_tp_crossing): TP comm/compute against the TP degree per system
    (``series`` from ``tp_crossing_series``); ``right`` (below it): TFLOP/s per GPU (hollow: does not
    fit). Grey: beyond one node. In ``left``, colour = system and line style = which link, each with
    its own legend."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter
    colours = style.SERIES_COLOURS
    systems = []
    for i, (sid, s) in enumerate(series.items()):
        c, g = colours[i % len(colours)], s["gpus_per_node"]
        systems.append(left.plot(s["inside"], s["nvlink"], "o-", color=c, label=s["name"])[0])
        left.plot(s["outside"], s["all_nics"], "s--", color=c)
        left.plot(s["outside"], s["own_share"], "^:", color=c)
        rows = s["scan"]
        right.plot([r["tp"] for r in rows], [r["tflops_per_gpu"] for r in rows], "-", color=c, alpha=0.6)
        for r in rows:
            right.plot(r["tp"], r["tflops_per_gpu"], "o", color=c, mfc=c if r["fits"] else style.PAPER, ms=7)
        right.plot([], [], "o-", color=c, label=f"{sid} (hollow: does not fit in memory)")
        left.axvspan(g * 1.02, 80, color=style.SHADE, zorder=0)
        right.axvspan(g * 1.02, 80, color=style.SHADE, zorder=0)
    for a in (left, right):
        a.set_xscale("log", base=2)
        a.set_xlim(0.8, 80)
        a.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        a.set_xlabel("tensor-parallel degree t (grey: beyond one 8-GPU node)")
        a.grid(True, which="both", alpha=0.3)
    left.set_yscale("log")
    left.axhline(1.0, color=style.INK, lw=0.8)
    left.set_ylabel("TP communication / compute")
    left.set_title(f"{model_name}: one layer, fwd + bwd, bandwidth only", fontsize=style.FONT_NORMAL)
    links = [Line2D([], [], color=style.GUIDE, marker="o", ls="-", label="inside the node: NVLink"),
             Line2D([], [], color=style.GUIDE, marker="s", ls="--", label="beyond: all NICs carry the ring (model)"),
             Line2D([], [], color=style.GUIDE, marker="^", ls=":", label="beyond: one NIC share per GPU")]
    left.add_artist(left.legend(handles=systems, fontsize=style.FONT_SMALL, loc="lower right"))
    left.legend(handles=links, fontsize=style.FONT_SMALL, loc="upper left")
    right.set_ylabel("TFLOP/s per GPU (parallel.estimate)")
    right.set_title(right_title, fontsize=style.FONT_NORMAL)
    right.set_ylim(bottom=0)
    right.legend(fontsize=style.FONT_SMALL, loc="lower left")


# ---------------------------------------------------------------- tables (HTML)

def traffic_table(rows) -> str:
    """One step's ``traffic_rows`` per GPU: what, how often, how big, over which link, how long."""
    return html_table(rows, {
        "traffic": lambda r: r["kind"], "collective": lambda r: r["collective"], "group": lambda r: r["group"],
        "link": lambda r: r["link"] + (" (across nodes)" if r["crosses_nodes"] else " (inside the node)"),
        "calls per step": lambda r: f"{r['calls']:,}", "bytes per call": lambda r: units.format_bytes(r["bytes_per_call"]),
        "sent per GPU per step": lambda r: units.format_bytes(r["sent_per_gpu"]),
        "time": lambda r: units.format_time(r["time_s"]), "exposed": lambda r: units.format_time(r["exposed_s"])})


def plan_table(rows) -> str:
    """The planner's best layouts (``Plan.table`` rows)."""
    return html_table(rows, {
        "#": lambda r: r["rank"], "layout": lambda r: r["layout"], "micro-batch": lambda r: r["micro_batch"],
        "ZeRO": lambda r: r["zero"], "recompute": lambda r: r["recompute"],
        "step": lambda r: units.format_time(r["step_time_s"]), "TFLOP/s per GPU": lambda r: f"{r['tflops_per_gpu']:.0f}",
        "MFU": lambda r: f"{r['mfu']:.1%}", "memory GB": lambda r: f"{r['memory_gb']:.1f}"})


def validation_table(rows) -> str:
    """Predicted vs measured TFLOP/s per GPU (``validation_rows``), with each case's role and source."""
    return html_table(rows, {
        "case": lambda r: r["id"], "role": lambda r: r["role"], "configuration": lambda r: r["config"],
        "model TFLOP/s per GPU": lambda r: f"{r['predicted']:.1f}", "measured": lambda r: f"{r['measured']:.0f}",
        "model / measured": lambda r: f"{r['ratio']:.2f}", "where": lambda r: r["where"], "source": lambda r: r["url"]})
