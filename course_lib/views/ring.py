"""Chapter 04's ring step-through drawn: each rank's chunks at a step, and the table of who sends what.

Each function draws a result that :mod:`course_lib.chapters.collectives` computed (its ``ring`` module); none
computes a model number.
"""
from __future__ import annotations

import math

import numpy as np

from .. import collectives, style
from .collectives import arrow, circle


def _ring_steps(p: int) -> int:
    """Steps of a ring all-reduce on ``p`` ranks, from the registry (``collectives``): 2(p-1)."""
    return int(collectives.get("all_reduce").algorithm("ring").steps(p))


def _ring_layout(p):
    """Box centres, box width and cell size for a ring of p boxes on a circle (data units)."""
    cell = 0.55 if p <= 4 else 0.32
    width = cell * p
    radius = {2: 1.2, 3: 1.7, 4: 1.75, 5: 2.5, 6: 2.8, 7: 3.1}.get(p, 3.3)
    return circle(p, radius), width, cell, radius



def _ring_boxes(ax, state, centres, width, cell, fontsize, names=None):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    p = len(state)
    cmap, everyone = plt.get_cmap(style.FILL_CMAP), frozenset(range(p))
    for r, (x, y) in enumerate(centres):
        x0, y0 = x - width / 2, y - cell / 2
        ax.text(x, y + cell / 2 + 0.06, f"rank {r}", ha="center", va="bottom", fontsize=fontsize, weight="bold")
        for c, holds in enumerate(state[r]):
            done = holds == everyone
            shade = 0.12 + 0.7 * (len(holds) - 1) / max(1, p - 1)
            ax.add_patch(Rectangle((x0 + c * cell, y0), cell, cell, fc=cmap(shade), ec=style.INK,
                                   lw=2.0 if done else 0.6, zorder=2))
            label = "Σ" if done else ("".join(str(i) for i in sorted(holds)) if p <= 4 else f"{len(holds)}")
            ax.text(x0 + (c + 0.5) * cell, y, label, ha="center", va="center", zorder=3,
                    fontsize=fontsize, color=style.PAPER if shade > 0.55 else style.INK)
            if p <= 4 or r == 0:  # from 5 ranks on, only rank 0's chunks are named: the columns match
                ax.text(x0 + (c + 0.5) * cell, y0 - 0.03, names[c] if names else f"c{c}", ha="center", va="top",
                        fontsize=fontsize,
                        color=style.GUIDE)



def draw_ring_state(ax, state, info, step, fontsize=style.FONT_SMALL):
    """The ring's chunks (``state``: per rank, per chunk, the set of ranks summed in) and the
    transfers of ``step`` (``info`` from ``ring_step_info``): red reduce-scatter, green all-gather."""
    p = len(state)
    centres, width, cell, radius = _ring_layout(p)
    _ring_boxes(ax, state, centres, width, cell, fontsize)
    if step > 0:
        colour = style.colour("phase", info["phase"])
        rad = -0.35
        for t in info["transfers"]:
            a, b = centres[t["src"]] * 0.62, centres[t["dst"]] * 0.62
            arrow(ax, a, b, colour, rad=rad, lw=1.5, shrink=4)
            d = b - a
            label_at = (a + b) / 2 + 0.5 * rad * np.array([d[1], -d[0]])
            ax.text(label_at[0], label_at[1], f"c{t['chunk']}", ha="center", va="center", fontsize=fontsize,
                    color=colour, zorder=4, bbox={"fc": style.PAPER, "ec": "none", "pad": 0.3})
    lim = radius + width / 2 + 0.15
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-radius - 0.6, radius + 0.75)
    ax.set_aspect("equal")
    ax.axis("off")
    title = "start: every rank holds only its own data" if step == 0 else \
        f"step {step} of {_ring_steps(p)}: {info['phase']}"
    ax.set_title(title, fontsize=style.larger(fontsize, 2))
    return ax



def draw_ring_table(ax, state, info, step, fontsize=style.FONT_SMALL):
    """One step of the ring as a table: a row per rank, a column per chunk, each cell listing the ranks
    whose data it holds (from 5 ranks on, a count; Σ: the full sum, black border). The cells that
    arrived in this ``step`` have a red (reduce-scatter) or green (all-gather) border, with an arrow
    from the sender's row; rank p-1's chunk leaves at the bottom and comes in at rank 0's row."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    p = len(state)
    pitch = 1.45  # rows apart: room for the arrows between them
    cmap, everyone = plt.get_cmap(style.FILL_CMAP), frozenset(range(p))
    for c in range(p):
        ax.text(c + 0.5, 0.12, f"c{c}", ha="center", va="bottom", fontsize=fontsize, color=style.GUIDE)
    for r in range(p):
        y = -1.0 - r * pitch
        ax.text(-0.15, y + 0.5, f"r{r}", ha="right", va="center", fontsize=fontsize, weight="bold")
        for c, holds in enumerate(state[r]):
            done = holds == everyone
            shade = 0.12 + 0.7 * (len(holds) - 1) / max(1, p - 1)
            ax.add_patch(Rectangle((c, y), 1, 1, fc=cmap(shade), ec=style.INK, lw=2.0 if done else 0.6, zorder=2))
            label = "Σ" if done else ("".join(str(i) for i in sorted(holds)) if p <= 4 else f"{len(holds)}")
            ax.text(c + 0.5, y + 0.5, label, ha="center", va="center", fontsize=fontsize, zorder=3,
                    color=style.PAPER if shade > 0.55 else style.INK)
    if step > 0:
        colour = style.colour("phase", info["phase"])
        for t in info["transfers"]:
            c, src, dst = t["chunk"], t["src"], t["dst"]
            y_dst = -1.0 - dst * pitch
            ax.add_patch(Rectangle((c + 0.06, y_dst + 0.06), 0.88, 0.88, fill=False, ec=colour, lw=2.2, zorder=4))
            top = -1.0 - src * pitch if dst > src else -1.0 - (p - 1) * pitch  # the sender's cell bottom
            if dst > src:
                arrow(ax, (c + 0.5, top), (c + 0.5, y_dst + 1.0), colour, lw=1.5, shrink=0)
            else:  # the wrap: out of the last row, into rank 0's from above
                arrow(ax, (c + 0.5, top), (c + 0.5, top - 0.4), colour, lw=1.5, shrink=0)
                arrow(ax, (c + 0.8, 0.55), (c + 0.8, y_dst + 1.0), colour, lw=1.5, shrink=0)
    ax.set_xlim(-0.9, p + 0.1)
    ax.set_ylim(-1.0 - (p - 1) * pitch - 0.5, 0.75)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("start" if step == 0 else f"step {step} of {_ring_steps(p)}\n{info['phase']}", fontsize=style.larger(fontsize))
    return ax



def draw_ring_steps(states, infos, ncols):
    """Every step of a ring (``states`` and ``infos`` per step, from step 0) in one new figure, each step
    a table (:func:`draw_ring_table`): 1.875 in per column, so the default 4 columns fill the notebook's width."""
    import matplotlib.pyplot as plt
    total, p = len(states), len(states[0])
    nrows = int(math.ceil(total / ncols))
    width = 1.875 * ncols
    row_in = width / ncols * (p * 1.45 + 0.8) / (p + 1.0) + 0.45
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, row_in * nrows + 0.9))
    axes = np.ravel(axes)
    for k in range(total):
        draw_ring_table(axes[k], states[k], infos[k], k)
    for ax in axes[total:]:
        ax.axis("off")
    fig.suptitle(f"Ring all-reduce on {p} ranks (rows r0-r{p - 1}, chunks c0-c{p - 1}): reduce-scatter, then\n"
                 "all-gather. " + ("A cell lists the ranks whose data it holds" if p <= 4 else
                                   "A cell counts the ranks whose data it holds")
                 + "; Σ = the full sum;\ncoloured border: the chunk that arrived in this step from the row above "
                 f"(r0's from r{p - 1}).", fontsize=style.FONT_NORMAL)
    fig.tight_layout()
    return fig
