"""Drawings of chapter 04 (collectives): buffers, message patterns, the ring step by step, cost curves.

Each function draws a result that :mod:`course_lib.chapters.collectives` computed; none computes
a model number itself.
"""
from __future__ import annotations

import numpy as np

import math

from .. import collectives, style, units
from ..widgets import html_table, show_html


def axes_grid(axes, shape, figsize):
    """``axes`` as a flat array of rows x cols Axes (``shape``), or a new figure's when None."""
    import matplotlib.pyplot as plt
    if axes is None:
        _, axes = plt.subplots(*shape, figsize=figsize)
    axes = np.ravel(axes)
    if axes.size != shape[0] * shape[1]:
        raise ValueError(f"axes must hold {shape[0] * shape[1]} Axes, got {axes.size}")
    return axes


def circle(p, radius=1.0):
    """``p`` points clockwise on a circle from the top (drawing geometry)."""
    angles = np.pi / 2 - 2 * np.pi * np.arange(p) / p
    return np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1)


def arrow(ax, a, b, colour, rad=0.0, lw=1.2, shrink=9):
    from matplotlib.patches import FancyArrowPatch
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=9, color=colour, lw=lw,
                                 shrinkA=shrink, shrinkB=shrink, connectionstyle=f"arc3,rad={rad}"))


def nodes(ax, pos, labels=None, size=0.16, fontsize=style.FONT_SMALL):
    from matplotlib.patches import Circle
    for r, (x, y) in enumerate(pos):
        ax.add_patch(Circle((x, y), size, fc=style.PAPER, ec=style.INK, lw=1.0, zorder=3))
        ax.text(x, y, str(r) if labels is None else labels[r], ha="center", va="center", fontsize=fontsize,
                zorder=4)


# ---------------------------------------------------------------- the six collectives

def _cell_colour(owner):
    import matplotlib.pyplot as plt
    if owner == "sum":
        return style.SUMMED
    return plt.get_cmap(style.RANK_CMAP)(int(owner) % 10)


def _draw_buffers(ax, rows, x0, y0, cell=1.0, fontsize=style.FONT_SMALL):
    from matplotlib.patches import Rectangle
    for r, cells in enumerate(rows):
        y = y0 - r * 1.25 * cell
        for c, item in enumerate(cells):
            x = x0 + c * cell
            if item is None:
                ax.add_patch(Rectangle((x, y), cell, cell, fc=style.PAPER, ec=style.CONTEXT, lw=0.8, ls=":"))
                continue
            label, owner = item
            colour = _cell_colour(owner)
            ax.add_patch(Rectangle((x, y), cell, cell, fc=colour, ec=style.INK, lw=0.8,
                                   alpha=1.0 if owner == "sum" else 0.55))
            ax.text(x + cell / 2, y + cell / 2, label, ha="center", va="center", fontsize=fontsize,
                    color=style.PAPER if owner == "sum" else style.INK)


def draw_collective(ax, name, before, after):
    """One collective's buffers: ``before`` (left) and ``after`` (right), one row per rank."""
    p = len(before)
    width_b, width_a = max(map(len, before)), max(map(len, after))
    gap = 1.6
    _draw_buffers(ax, before, 0.0, 0.0)
    _draw_buffers(ax, after, width_b + gap, 0.0)
    for r in range(p):
        ax.text(-0.2, -r * 1.25 + 0.5, f"rank {r}", ha="right", va="center", fontsize=style.FONT_SMALL)
    mid_y = -(p - 1) * 1.25 / 2 + 0.5
    ax.annotate("", xy=(width_b + gap - 0.25, mid_y), xytext=(width_b + 0.25, mid_y),
                arrowprops={"arrowstyle": "-|>", "lw": 1.5})
    ax.set_xlim(-2.2, width_b + gap + width_a + 0.3)
    ax.set_ylim(-(p - 1) * 1.25 - 0.4, 1.9)
    ax.text(width_b / 2, 1.25, "before", ha="center", fontsize=style.FONT_SMALL, color=style.GUIDE)
    ax.text(width_b + gap + width_a / 2, 1.25, "after", ha="center", fontsize=style.FONT_SMALL, color=style.GUIDE)
    ax.set_title(name.replace("_", "-"), fontsize=style.FONT_TITLE)
    ax.set_aspect("equal")
    ax.axis("off")


# ---------------------------------------------------------------- message patterns

def draw_patterns(axes, p, tree_steps, tree_pos, butterfly_steps):
    """Naive, ring, binomial tree (``tree_steps`` at ``tree_pos``) and halving-doubling
    (``butterfly_steps``) all-reduces on ``p`` ranks, on four Axes. Colour = step (dark early)."""
    import matplotlib.pyplot as plt
    cmap = plt.get_cmap(style.ORDER_CMAP)
    pos = circle(p)
    ax = axes[0]  # naive: everyone to rank 0 in the middle, and back
    centre, outer = np.array([[0.0, 0.0]]), circle(p - 1)
    for i in range(p - 1):
        arrow(ax, outer[i], centre[0], cmap(0.1), rad=0.12)
        arrow(ax, centre[0], outer[i], cmap(0.75), rad=0.12)
    nodes(ax, np.vstack([centre, outer]))
    ax.set_title(f"naive (parameter server)\nrank 0: {p - 1} buffers in, {p - 1} out", fontsize=style.FONT_NORMAL)
    ax = axes[1]  # ring
    for r in range(p):
        arrow(ax, pos[r], pos[(r + 1) % p], style.colour("algorithm", "ring"), rad=-0.25)
    nodes(ax, pos)
    ax.set_title(f"ring\n{collectives.get('all_reduce').algorithm('ring').steps(p)} steps of 1/{p} buffer each", fontsize=style.FONT_NORMAL)
    ax = axes[2]  # binomial tree: the reduce half
    levels = len(tree_steps) // 2
    for k, step in enumerate(tree_steps[:levels]):
        for a, b in step:
            arrow(ax, tree_pos[a], tree_pos[b], cmap(k / max(1, levels)), rad=0.0)
    nodes(ax, tree_pos)
    ax.set_title(f"binomial tree\n{levels} steps up (reduce), {levels} down", fontsize=style.FONT_NORMAL)
    ax = axes[3]  # halving-doubling as a butterfly: ranks across, steps down
    xs, hd = np.linspace(-1, 1, p), butterfly_steps
    for k, step in enumerate(hd):
        y0, y1 = 1 - k * 2 / len(hd), 1 - (k + 1) * 2 / len(hd)
        for a, b in step:
            ax.plot([xs[a], xs[b]], [y0, y1], "-", color=cmap(k / len(hd)), lw=0.9)
    for k in range(len(hd) + 1):
        ax.plot(xs, np.full(p, 1 - k * 2 / len(hd)), "o", color=style.INK, ms=3)
    ax.text(1.1, 0.5, "halving", fontsize=style.FONT_SMALL, va="center", rotation=-90)
    ax.text(1.1, -0.5, "doubling", fontsize=style.FONT_SMALL, va="center", rotation=-90)
    ax.set_title(f"halving-doubling (butterfly)\n{len(hd) // 2} halving + {len(hd) // 2} doubling steps", fontsize=style.FONT_NORMAL)
    for ax in axes:
        ax.set_aspect("equal")
        ax.set_xlim(-1.35, 1.55)
        ax.set_ylim(-1.3, 1.3)
        ax.axis("off")


def _tree_children(r, p):
    low = r & -r if r else p
    m, out = 1, []
    while m < low and r + m < p:
        out.append(r + m)
        m <<= 1
    return out[::-1]  # largest subtree first


def tree_layout(p):
    """Drawing positions of a binomial tree: rank 0 on top, each rank's children below it, subtrees side by side."""
    depth = max(1, int(math.ceil(math.log2(p))))
    pos = np.zeros((p, 2))
    slot = [0]

    def place(r, level):
        kids = _tree_children(r, p)
        for k in kids:
            place(k, level + 1)
        if kids:
            pos[r, 0] = pos[kids, 0].mean()
        else:
            pos[r, 0] = slot[0]
            slot[0] += 1
        pos[r, 1] = level

    place(0, 0)
    leaves = max(1, slot[0] - 1)
    pos[:, 0] = -1.0 + 2.0 * pos[:, 0] / leaves
    pos[:, 1] = 1.0 - 2.0 * pos[:, 1] / depth
    return pos


# ---------------------------------------------------------------- the ring, step by step


# ---------------------------------------------------------------- cost curves

def draw_cost_curves(ax, labels, curves, chosen, point, title, crossover=None):
    """Time vs size per algorithm (``curves``: sizes, one array per id in ``labels``, lower_bound);
    ``chosen`` drawn bold; ``point`` = (bytes, seconds) of the learner's choice; ``crossover``: the
    size (bytes) from which the ring beats recursive doubling, marked by a vertical line (None: never).
    Returns ``update(curves, chosen, point, title, crossover)``, which moves the same artists."""
    from matplotlib.ticker import FuncFormatter
    n = curves["sizes"]
    lines = {name: ax.plot(n, curves[name], "-", color=style.colour("algorithm", name), label=label)[0]
             for name, label in labels.items()}
    (bound,) = ax.plot(n, curves["lower_bound"], "--", color=style.INK, lw=1.2, label="lower bound 2(p-1)/p · n/B")
    (mark,) = ax.plot(*point, "D", color=style.INK, ms=8, zorder=5)
    ring_colour = style.colour("algorithm", "ring")
    cross = ax.axvline(n[0], color=ring_colour, ls=":", lw=1.4)
    cross_text = ax.text(n[0], 0.03, "", transform=ax.get_xaxis_transform(), fontsize=style.FONT_NORMAL, color=ring_colour)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: units.format_bytes(x) if x > 0 else ""))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: units.format_time(x) if x > 0 else ""))
    # sizes that read at 8 pt or more on the explorer's 8 in wide figure, shrunk to the notebook's 7.5 in
    style.decorate(ax, xlabel="message size per rank (SI)", ylabel="all-reduce time", fontsize=style.FONT_TITLE)
    legend = ax.legend(fontsize=style.FONT_NORMAL, loc="upper left")
    entries = dict(zip(labels, zip(legend.get_lines(), legend.get_texts())))

    def update(curves, chosen, point, title, crossover=None):
        for name, line in lines.items():
            bold = name == chosen
            line.set_ydata(curves[name])
            line.set(lw=2.6 if bold else 1.0, alpha=1.0 if bold else 0.55)
            handle, text = entries[name]
            handle.set(lw=2.6 if bold else 1.0, alpha=1.0 if bold else 0.55)
            text.set_text(labels[name] + (" (chosen)" if bold else ""))
        bound.set_ydata(curves["lower_bound"])
        mark.set_data([point[0]], [point[1]])
        cross.set_visible(crossover is not None)
        cross_text.set_visible(crossover is not None)
        if crossover is not None:
            cross.set_xdata([crossover, crossover])
            cross_text.set_x(crossover)
            right_half = crossover > np.sqrt(n[0] * n[-1])  # text on the side with room
            cross_text.set_horizontalalignment("right" if right_half else "left")
            cross_text.set_text("ring beats recursive doubling from this line on → " if right_half
                                else " from this line on, ring beats recursive doubling →")
        ax.set_title(title, fontsize=style.FONT_TITLE)
        ax.set_autoscaley_on(True)
        ax.relim()
        ax.autoscale_view()
        floor = min(float(np.min(curves[name])) for name in labels if float(np.min(curves[name])) > 0)
        ax.set_ylim(bottom=floor / 5)

    update(curves, chosen, point, title, crossover)
    return update


# ---------------------------------------------------------------- published sweeps

def draw_sweeps(ax, sweeps, grid, model):
    """Measured busbw per sweep (``sweeps``: source -> cases) with, per system in ``model``
    (system -> {"simple", "course": busbw arrays over ``grid``, "link_name", "link_gb_s"}), the
    simple ring model, the course model and the link's per-direction rate.

    Two legends: which sweep a colour is (under the plot) and what a line style is (inside); each
    link rate is written once, however many sweeps share it."""
    from matplotlib.lines import Line2D
    sweep_handles, rates = [], {}
    for i, cases in enumerate(sweeps.values()):
        colour, system = style.series(i), cases[0]["system"]
        m = model[system]
        (dots,) = ax.plot([c["nbytes"] for c in cases], [c["busbw_gb_s"] for c in cases], "o", color=colour, ms=7,
                          label=f"{cases[0]['as_measured'].split(';')[0]} (model: {system})")
        sweep_handles.append(dots)
        ax.plot(grid, m["simple"], "--", color=colour, lw=1.2)
        ax.plot(grid, m["course"], ":", color=colour, lw=1.6)
        rates.setdefault((m["link_name"], m["link_gb_s"]), colour)
    for (name, gb_s), colour in rates.items():
        ax.axhline(gb_s, color=colour, lw=0.8, alpha=0.5)
        ax.text(grid[0], gb_s + 8, f"{name}: {gb_s:g} GB/s per direction", fontsize=style.FONT_NORMAL, color=colour,
                ha="left", va="bottom")  # on the left, where every sweep is still near zero
    ax.set_xscale("log", base=2)
    ticks = [2.0**k for k in range(10, 35, 5)]
    ax.set_xticks(ticks, [units.format_bytes(t, binary=True) for t in ticks])
    ax.set_xlabel("all-reduce size (nccl-tests size column)")
    ax.set_ylabel("busbw, GB/s per direction")
    ax.set_title("Published 8-GPU all-reduce sweeps vs the model", fontsize=style.FONT_TITLE)
    ax.grid(True, which="both", alpha=0.25)
    kinds = [Line2D([], [], color=style.GUIDE, marker="o", ls="", ms=7, label="measured"),
             Line2D([], [], color=style.GUIDE, ls="--", lw=1.2, label="simple ring model, spec bandwidth"),
             Line2D([], [], color=style.GUIDE, ls=":", lw=1.6, label="course model, achievable bandwidth")]
    sweeps_legend = ax.legend(handles=sweep_handles, fontsize=style.FONT_NORMAL, loc="upper center", bbox_to_anchor=(0.5, -0.16),
                              frameon=False, title="measured sweep (colour)", title_fontsize=style.FONT_NORMAL)
    ax.add_artist(sweeps_legend)
    sweeps_legend.set_clip_on(False)  # add_artist clips to the Axes; this legend sits under them
    ax.legend(handles=kinds, fontsize=style.FONT_NORMAL, loc="center left", bbox_to_anchor=(0.0, 0.74))
    return ax


# ---------------------------------------------------------------- text and tables

def format_oversubscription(table, ranks=4, base=2, cores=None) -> str:
    """Printable ``oversubscription_table``."""
    if not isinstance(table, (list, tuple)) or not table:
        raise ValueError("table must be a non-empty list from oversubscription_table(...)")
    head = (f"{'size':>9} {f'{base} ranks':>10} {f'{ranks} ranks':>10} {'measured x':>11} {'model x':>8} "
            f"{'model x stretch':>16} {'stretched model / measured':>27}")
    lines = [f"{ranks} ranks vs {base} ranks" + (f" on {cores} cores" if cores else ""), head]
    for r in table:
        lines.append(f"{units.format_bytes(r['size'], binary=True):>9} {units.format_time(r['measured_base_s']):>10} "
                     f"{units.format_time(r['measured_s']):>10} {r['measured_ratio']:>11.2f} {r['model_ratio']:>8.2f} "
                     f"{r['stretched_ratio']:>16.2f} {r['pred_over_measured']:>27.2f}")
    return "\n".join(lines)


def oversubscription_lines(table, ranks=4, base=2) -> list[str]:
    """Plain-language reading of ``oversubscription_table`` for its smallest and largest size."""
    if not isinstance(table, (list, tuple)) or not table:
        raise ValueError("table must be a non-empty list from oversubscription_table(...)")
    lines = []
    rows = [table[0]] if len(table) == 1 else [table[0], table[-1]]
    for row in rows:
        m, lo, hi = row["measured_ratio"], row["model_ratio"], row["stretched_ratio"]
        near = lambda x: abs(m / x - 1) <= 0.15  # noqa: E731
        if near(hi):
            where = f"close to the stretched model ({hi:.2f}x)"
        elif m > hi:
            where = f"more than even the stretched model ({hi:.2f}x)"
        elif near(lo):
            where = f"close to the model without contention ({lo:.2f}x)"
        elif m < lo:
            where = f"less than the model without contention ({lo:.2f}x)"
        else:
            where = f"between the model without contention ({lo:.2f}x) and with the stretch ({hi:.2f}x)"
        lines.append(f"{units.format_bytes(row['size'], binary=True)}: {ranks} ranks took {m:.2f}x the time of "
                     f"{base} ranks, {where}.")
    return lines


def show_algorithm_table(rows):
    """Display ``algorithm_table`` rows as HTML (sizes SI, bandwidth per direction)."""
    show_html(html_table(rows, {
        "algorithm": lambda r: r["label"], "latency steps": lambda r: f"{r['steps']:g}",
        "bytes sent by the busiest rank": lambda r: units.format_bytes(r["bytes_per_rank"]),
        "time": lambda r: units.format_time(r["time_s"]),
        "of which latency": lambda r: f"{r['latency_share']:.0%}",
        "time / lower bound": lambda r: f"{r['vs_lower_bound']:.2f}"}))


def show_collectives_table(rows, ranks):
    """Display ``collectives_table`` rows (busbw factors at ``ranks``) as HTML."""
    show_html(html_table(rows, {
        "collective": lambda r: r["collective"].replace("_", "-"), "what it does": lambda r: r["what"],
        "where training uses it": lambda r: r["used_for"],
        f"busbw factor at p = {ranks} (bytes per rank per byte of size)": lambda r: f"{r['busbw_factor']:.3g}"}))
