"""Drawing a topology graph (:mod:`course_lib.topology`, the model, draws nothing): devices as discs and boxes,
links as lines whose width grows with their bandwidth, each link's GB/s placed where it overlaps no other
label, and a rail-optimised fat tree with one colour per rail. Text is sized to read at ``READABLE_POINTS``
once a figure is shrunk to the notebook's width (``readable_points``)."""
from __future__ import annotations

import textwrap

from .. import style, units
from ..style import NODE_COLOURS, NOTEBOOK_WIDTH_IN, READABLE_POINTS, readable_points
from ..topology import Topology


def _check_topology(topo, built_by: str) -> None:
    if not isinstance(topo, Topology):
        raise ValueError(f"topo must be a topology.Topology ({built_by}), got {type(topo).__name__}")


def draw(topo: Topology, ax=None, show_bandwidth: bool = True):
    """Draw the graph ``topo`` (a :class:`course_lib.topology.Topology`) with matplotlib (line width grows
    with bandwidth); returns the Axes.

    Text is sized to read at 8.5 pt or more once the figure is shrunk to a notebook's width
    (:data:`NOTEBOOK_WIDTH_IN`). GPUs are discs with their number, other devices boxes with their
    name. Each link's GB/s per direction goes where it overlaps no other label or device; where
    every link has the same bandwidth, where a link has no free spot, or above 40 links, the
    title says the figures instead.
    """
    import matplotlib.pyplot as plt
    _check_topology(topo, "a builder of course_lib.topology")
    if ax is None:
        _, ax = plt.subplots(figsize=(NOTEBOOK_WIDTH_IN, 4.8))
    size = _readable_points(ax.figure)
    dense = len(topo.kinds) > 40
    top = max(topo.links.values())
    for key, bw in topo.links.items():
        (x1, y1), (x2, y2) = (topo.pos[n] for n in key)
        ax.plot([x1, x2], [y1, y2], "-", color=style.CONTEXT, lw=0.5 + 4 * bw / top, zorder=1)
    _fit_limits(ax, topo.pos.values())
    renderer = _renderer(ax.figure)
    pad_px = 0.35 * size * ax.figure.dpi / 72
    taken = []
    for kind, colour in NODE_COLOURS.items():
        nodes = [n for n, k in topo.kinds.items() if k == kind]
        if not nodes:
            continue
        labels = {n: node_label(n, kind) for n in nodes}
        disc = dense or kind == "gpu"
        if disc:
            width = max(len(t) for t in labels.values())
            diameter = (0.9 if dense else max(2.1, 0.62 * width + 0.9)) * size  # points
            ax.scatter([topo.pos[n][0] for n in nodes], [topo.pos[n][1] for n in nodes], s=diameter ** 2,
                       c=colour, zorder=3, edgecolors=style.INK, linewidths=0.6)
        for n in nodes:
            if dense:
                continue
            box = None if disc else {"boxstyle": f"round,pad={0.35}", "fc": colour, "ec": style.INK, "lw": 0.6}
            text = ax.text(*topo.pos[n], labels[n], fontsize=size, ha="center", va="center", zorder=4, bbox=box)
            taken.append(_disc(ax, topo.pos[n], diameter) if disc
                         else text.get_window_extent(renderer).padded(pad_px))
        # the legend's entry: an empty scatter of text size, so any later ax.legend() stays compact
        ax.scatter([], [], s=(1.1 * size) ** 2, c=colour, edgecolors=style.INK, linewidths=0.6,
                   marker="o" if disc else "s", label=KIND_NAMES[kind] + ("" if dense else _kind_note(nodes, kind)))
    note = ""
    if show_bandwidth:
        gb_s = {key: f"{bw / units.GB:.0f}" for key, bw in topo.links.items()}
        values = sorted(set(gb_s.values()), key=float)
        if len(values) == 1:
            note = f" (every link: {values[0]} GB/s per direction)"
        elif len(topo.links) > 40:
            note = f" (links: {values[0]} to {values[-1]} GB/s per direction)"
        else:
            order = sorted(topo.links, key=lambda k: -_length(ax, *(topo.pos[n] for n in k)))
            missed = {gb_s[key] for key in order
                      if not _place_link_label(ax, renderer, [topo.pos[n] for n in sorted(key)], gb_s[key],
                                               size, taken)}
            note = " (numbers: GB/s per direction" + (
                f"; unlabelled links: {', '.join(sorted(missed, key=float))})" if missed else ")")
    chars = max(24, int(ax.get_window_extent().width * 72 / ax.figure.dpi / (0.55 * size * style.TITLE_SCALE)))
    ax.set_title(textwrap.fill(f"{topo.name}{note}", chars), fontsize=size * style.TITLE_SCALE)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=size, frameon=False,
              handletextpad=0.3, columnspacing=1.2)
    ax.set_axis_off()
    return ax


KIND_NAMES = {"gpu": "GPU", "cpu": "CPU", "pcie_switch": "PCIe switch", "nvswitch": "NVSwitch",
              "nic": "NIC", "ib_switch": "InfiniBand switch"}


_readable_points = readable_points


def node_label(node: str, kind: str) -> str:
    """Short text for a node: a GPU's number ("n1.gpu3" -> "3"), "node 1" for a node's own switch, else its name."""
    local = node.rsplit(".", 1)[-1]
    if kind == "gpu" and local.startswith("gpu") and local[3:].isdigit():
        return local[3:]
    if "." in node and kind in ("nvswitch", "pcie_switch") and node[1:].split(".")[0].isdigit():
        return f"node {node[1:].split('.')[0]}"
    for prefix in ("leaf", "spine"):
        if kind == "ib_switch" and local.startswith(prefix):
            return prefix[0].upper() + local[len(prefix):]
    return "NVSwitch" if node == "nvswitch" else node


def _kind_note(nodes, kind) -> str:
    if kind == "gpu":
        return " (number)"
    if kind == "ib_switch" and any(n.startswith(("leaf", "spine")) for n in nodes):
        return " (L leaf, S spine)"
    return ""


def _renderer(fig):
    canvas = fig.canvas
    return canvas.get_renderer() if hasattr(canvas, "get_renderer") else fig._get_renderer()


def _fit_limits(ax, points, pad=0.12):
    xs, ys = zip(*points)
    for setter, lo, hi in ((ax.set_xlim, min(xs), max(xs)), (ax.set_ylim, min(ys), max(ys))):
        span = max(hi - lo, 1.0)
        setter(lo - pad * span, hi + pad * span)


def _length(ax, a, b) -> float:
    (x1, y1), (x2, y2) = ax.transData.transform([a, b])
    return ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5


def _disc(ax, xy, diameter_pt):
    """The display-space box of a marker ``diameter_pt`` points wide centred on ``xy``."""
    from matplotlib.transforms import Bbox
    x, y = ax.transData.transform(xy)
    r = diameter_pt / 2 * ax.figure.dpi / 72
    return Bbox([[x - r, y - r], [x + r, y + r]])


def _place_link_label(ax, renderer, ends, text, size, taken) -> bool:
    """Put ``text`` on the segment ``ends`` at the point nearest its middle that overlaps nothing in ``taken``.

    Returns False (and places nothing) where every point tried overlaps something."""
    (x1, y1), (x2, y2) = ends
    label = ax.text(0, 0, text, fontsize=size, ha="center", va="center", color=style.LABEL_INK, zorder=2,
                    bbox={"fc": style.PAPER, "ec": "none", "pad": 0.3})
    best = None
    for f in (0.5, 0.4, 0.6, 0.32, 0.68, 0.25, 0.75, 0.18, 0.82):
        label.set_position((x1 + f * (x2 - x1), y1 + f * (y2 - y1)))
        box = label.get_window_extent(renderer).expanded(1.15, 1.15)
        clashes = sum(box.overlaps(other) for other in taken)
        if best is None or clashes < best[0]:
            best = (clashes, f, box)
        if clashes == 0:
            break
    clashes, f, box = best
    if clashes:  # nowhere free on this link: leave it unlabelled rather than hide another label
        label.remove()
        return False
    label.set_position((x1 + f * (x2 - x1), y1 + f * (y2 - y1)))
    taken.append(box)
    return True


def draw_rails(topo: Topology, ax=None):
    """Draw a rail-optimised fat tree (``rail_fat_tree``) with each GPU -> leaf cable coloured by its rail."""
    import matplotlib.pyplot as plt
    _check_topology(topo, "rail_fat_tree")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.6))
    draw(topo, ax=ax, show_bandwidth=False)
    leaves = sorted((n for n, k in topo.kinds.items() if n.startswith("leaf")), key=lambda n: int(n[4:]))
    colours = plt.get_cmap(style.RAIL_CMAP)
    for key in topo.links:  # colour each GPU -> leaf cable by its rail
        a, b = sorted(key, key=lambda n: topo.kinds[n] != "gpu")
        if topo.kinds[a] == "gpu" and b in leaves:
            (x1, y1), (x2, y2) = topo.pos[a], topo.pos[b]
            ax.plot([x1, x2], [y1, y2], "-", color=colours(leaves.index(b) % 10), lw=1.6, zorder=2)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=READABLE_POINTS, frameon=False, ncol=3)
    ax.set_title(f"{topo.name}\nGPU k of every node -> leaf switch k (rail k, one colour per rail);\n"
                 "leaves -> spines (full bisection)", fontsize=style.FONT_NORMAL)
    return ax
