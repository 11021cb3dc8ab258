"""One palette and a few axis helpers for every figure of the course.

Colours are keyed by what they mean, so the same thing has the same colour in every chapter:
an algorithm id (:mod:`course_lib.collectives`), a link family, a step-time category (chapters
07 and 08 break a training step down the same way), a memory category (chapters 06 and 07), a
network transport, where a transfer goes (inside the node or across nodes). Views and explorers
take their colours from here and define none of their own (a topology's devices too: ``NODE_COLOURS``,
drawn by :mod:`course_lib.views.graphs`). Text sizes are named here too (FONT_SMALL, FONT_NORMAL,
FONT_TITLE, and ``readable_points``, what reads once a figure is shrunk to the notebook's width);
``tests/test_style.py`` fails on any colour
literal or numeric font size in the drawing code, naming its file and line.
Axis helpers put bytes and times on an axis with the course's own unit formatting
(:mod:`course_lib.units`).
"""
from __future__ import annotations

from . import units

# Algorithm ids of course_lib.collectives (plus the library / system ones the chapters name).
ALGORITHM_COLOURS = {
    "ring": "#1f77b4", "binomial_tree": "#ff7f0e", "double_binary_tree": "#d62728",
    "recursive_doubling": "#2ca02c", "halving_doubling": "#9467bd", "naive": "#7f7f7f",
    "direct": "#7f7f7f", "in_network": "#17becf", "tree": "#ff7f0e", "nvls": "#17becf",
    "hierarchical": "#8c564b", "builtin": "#e377c2", "collnet": "#bcbd22",
}
# Link families: the wire a byte crosses.
LINK_COLOURS = {
    "nvlink": "#76b900", "nvswitch": "#4e7d00", "pcie": "#1f77b4", "host": "#9467bd",
    "network": "#d62728", "nic": "#d62728", "ethernet": "#ff7f0e",
}
# Where a training step's time goes (chapters 06, 07 and 08).
STEP_COLOURS = {
    "compute": "#4c72b0", "pipeline bubble": "#c7c7c7", "tensor-parallel comm": "#dd8452",
    "pipeline comm": "#55a868", "data-parallel comm": "#8172b3",
}
# What fills a GPU's memory.
MEMORY_COLOURS = {"weights": "#4c72b0", "gradients": "#64b5cd", "optimizer": "#8172b3", "activations": "#dd8452"}
# Pipeline work kinds.
WORK_COLOURS = {"forward": "#4c72b0", "backward": "#dd8452", "idle": "#eeeeee"}
# Network transports (chapter 05): the share of line rate NCCL reaches over each.
TRANSPORT_COLOURS = {"infiniband": "tab:green", "roce": "tab:blue", "tcp": "tab:red"}
# Where a transfer goes (chapter 10): inside the NVLink domain, or across nodes through the NICs.
REACH_COLOURS = {"inside": "#55a868", "across": "#dd8452"}
# Several rings over one topology (chapter 02): ring k takes RING_COLOURS[k % len(RING_COLOURS)].
RING_COLOURS = ("tab:red", "tab:blue", "tab:purple", "tab:orange", "tab:cyan", "tab:brown")
# Series that mean nothing beyond telling them apart (systems compared in chapter 07's TP crossing, published
# sweeps, validation groups): series k takes series(k).
SERIES_COLOURS = ("tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange", "tab:cyan", "tab:gray")
# A collective's two phases (chapter 04's ring): reduce-scatter, then all-gather.
PHASE_COLOURS = {"reduce-scatter": "tab:red", "all-gather": "tab:green"}
# How far a measured scaling case is from the model's regimes (costmodel.SCALE_REGIMES, in order).
REGIME_COLOURS = ("tab:blue", "tab:orange", "tab:red", "black")
OVERESTIMATE = "tab:blue"    # the model above a measurement (ratio >= 1)
UNDERESTIMATE = "tab:orange"  # the model below it
SUMMED = "0.25"         # a buffer summed over all ranks (chapter 04's collectives), dark under white text
# Colour maps: one colour per rank's data; an order (step, level) or a quantity (MFU) from dark to light;
# how much of a reduction a chunk holds; pipeline stages; forward and backward micro-batches by chunk.
RANK_CMAP = "tab10"
RAIL_CMAP = "tab10"      # one colour per rail of a rail-optimised fat tree
ORDER_CMAP = "viridis"
FILL_CMAP = "Blues"
STAGE_CMAP = "Set2"
WORK_CMAPS = {"forward": "Blues", "backward": "Oranges"}
INK = "black"           # marks and lines that must read on any background; text on light fills
PAPER = "white"         # text on dark fills, gaps between bars, hollow markers
GUIDE = "0.35"          # reference lines: limits, budgets, "ideal", node boundaries; secondary text
LABEL_INK = "0.2"       # a figure printed on a line (a link's GB/s)
CONTEXT = "0.55"        # data drawn only as context behind the data that matter (the other sweeps, a range)
SHADE = "0.9"           # shaded regions behind data
HIGHLIGHT = "#f0e442"   # the learner's choice, behind data (drawn translucent)
YOURS = "tab:red"       # the learner's own choice or hardware, as a marker or line on top of data
REFERENCE = "tab:gray"  # published reference points beside a model curve
AGREEMENT = "tab:green"  # the band where model and measurement agree ("within 20%")
MEASURED = "tab:red"    # a published measurement (or quoted figure) the model is compared with
MODEL = "tab:blue"      # the course model's prediction beside a measurement
# A profiler trace of a training step (chapter 06): what ran on the training thread, and the buckets' all-reduces.
TRACE_COLOURS = {"forward": WORK_COLOURS["forward"], "backward": WORK_COLOURS["backward"],
                 "all-reduce": STEP_COLOURS["data-parallel comm"], "copy back": CONTEXT, "optimizer": GUIDE}
# A topology's devices (course_lib.views.graphs draws them).
NODE_COLOURS = {"gpu": "#76b900", "cpu": "#6baed6", "pcie_switch": "#b39ddb", "nvswitch": "#ffb74d",
                "nic": "#bcaaa4", "ib_switch": "#ef9a9a"}
# Text sizes in points (before the notebook shrinks a figure wider than its column: see readable_points).
NOTEBOOK_WIDTH_IN = 7.5   # JupyterLab shows a wider figure shrunk to about this width
READABLE_POINTS = 8.5     # smallest text size as read in the notebook
FONT_SMALL = 8          # annotations, legends, tick and cell labels
FONT_NORMAL = 9         # axis labels, panel titles
FONT_TITLE = 10         # a figure's title
TITLE_SCALE = 1.1       # a title over text drawn at a readable size (a topology graph's: readable_points x this)


def series(k: int) -> str:
    """The colour of a figure's ``k``-th series, where the series mean nothing beyond telling them apart."""
    return SERIES_COLOURS[k % len(SERIES_COLOURS)]


def readable_points(fig) -> float:
    """Font size (points) that reads at READABLE_POINTS once ``fig`` (a matplotlib Figure) is shrunk to
    the notebook's width."""
    if not callable(getattr(fig, "get_figwidth", None)):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    return READABLE_POINTS * max(1.0, fig.get_figwidth() / NOTEBOOK_WIDTH_IN)


def notebook_points(fig, points=FONT_SMALL) -> float:
    """Font size that reads at ``points`` once ``fig`` is shrunk to the notebook's width
    (``readable_points`` is this at ``READABLE_POINTS``)."""
    return readable_points(fig) * points / READABLE_POINTS


def larger(points, steps=1):
    """A text size ``steps`` points above ``points`` (a title over text drawn at ``points``)."""
    return points + steps

_TABLES = {"algorithm": ALGORITHM_COLOURS, "link": LINK_COLOURS, "step": STEP_COLOURS, "memory": MEMORY_COLOURS,
           "work": WORK_COLOURS, "transport": TRANSPORT_COLOURS, "reach": REACH_COLOURS, "phase": PHASE_COLOURS,
           "trace": TRACE_COLOURS}


def colour(kind: str, key: str) -> str:
    """The colour of ``key`` in the palette ``kind`` ('algorithm', 'link', 'step', 'memory', 'work',
    'transport', 'reach', 'phase', 'trace')."""
    if kind not in _TABLES:
        raise ValueError(f"kind must be one of {sorted(_TABLES)}; got {kind!r}")
    table = _TABLES[kind]
    if key not in table:
        raise ValueError(f"key must be one of {sorted(table)} for kind {kind!r}; got {key!r}")
    return table[key]


def decorate(ax, *, title=None, xlabel=None, ylabel=None, legend=None, grid=True, fontsize=FONT_NORMAL):
    """Title, labels, a light grid and (``legend``: a location string or True) a legend, at readable sizes."""
    if title is not None:
        ax.set_title(title, fontsize=fontsize + 1)
    if xlabel is not None:
        ax.set_xlabel(xlabel, fontsize=fontsize)
    if ylabel is not None:
        ax.set_ylabel(ylabel, fontsize=fontsize)
    ax.tick_params(labelsize=fontsize - 1)
    if grid:
        ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize=fontsize - 1, loc=legend if isinstance(legend, str) else "best")
    return ax


def _axis(ax, axis):
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y'; got {axis!r}")
    return ax.xaxis if axis == "x" else ax.yaxis


def bytes_axis(ax, axis="x", *, log=True, binary=True):
    """A byte-count axis: log base 2 (``log``) with ticks written as 4 KiB, 1 MiB, ... (``binary``)."""
    from matplotlib.ticker import FuncFormatter

    target = _axis(ax, axis)
    if log:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    target.set_major_formatter(FuncFormatter(lambda v, _: units.format_bytes(v, binary=binary) if v > 0 else "0"))
    return ax


def time_axis(ax, axis="y", *, log=False):
    """A time axis in seconds, with ticks written in us, ms or s."""
    from matplotlib.ticker import FuncFormatter

    target = _axis(ax, axis)
    if log:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_formatter(FuncFormatter(lambda v, _: units.format_time(v) if v > 0 else "0"))
    return ax


def name_points_along(ax, points, fontsize=FONT_SMALL):
    """Name points that lie along a falling line, (name, x, y) each: neighbours alternate above-right and
    below-left of their points, so their names never meet; the rightmost name goes below-left, inside the
    Axes. Returns the annotations (a view moves them on later events)."""
    order = sorted(range(len(points)), key=lambda k: points[k][1])
    below = {k for i, k in enumerate(order) if i % 2 or i == len(order) - 1}
    return [ax.annotate(name, (x, y), textcoords="offset points", fontsize=fontsize,
                        xytext=(-5, -5) if k in below else (4, 4), ha="right" if k in below else "left",
                        va="top" if k in below else "bottom")
            for k, (name, x, y) in enumerate(points)]
