"""Drawings of chapter 02 (NVLink): the mesh explorer, rings on a topology, measurements, tables.

Each function draws a result that :mod:`course_lib.chapters.nvlink` computed; none computes a
model number itself. :func:`draw_mesh` returns an updater that moves the same artists in place.
"""
from __future__ import annotations

import numpy as np

from .. import style, units
from ..widgets import html_table, show_html
from . import graphs

RING_COLOURS = style.RING_COLOURS


# ---------------------------------------------------------------- the mesh explorer

def draw_mesh(ax, m):
    """All-reduce time against the GPUs of a full mesh (``m``: a ``MeshSeries``): one ring vs enough
    rings for every link, the two-GPU consumer references, your choice. Returns ``update(m)``."""
    from matplotlib.ticker import FixedLocator
    counts = m.counts
    (one,) = ax.plot(counts, m.one_ring_s, "o-", color=style.series(4), label="one ring (only the links to its neighbour)")
    (every,) = ax.plot(counts, m.all_links_s, "s-", color=style.series(0),
                       label="enough rings to use every link (= an NVSwitch port)")
    (refs,) = ax.plot([2] * len(m.references), [t for _, t in m.references], "^", color=style.REFERENCE)
    notes = [ax.annotate(label, (2, t), textcoords="offset points", xytext=(6, -2), fontsize=style.FONT_SMALL, color=style.GUIDE)
             for label, t in m.references]
    (chosen,) = ax.plot([], [], "D", color=style.YOURS, ms=8, zorder=5, label="your choice")
    mark = ax.axvline(m.gpus, color=style.YOURS, ls=":", lw=1)
    shade = ax.axvspan(m.links_per_gpu + 1.5, counts[-1] + 0.5, color=style.SHADE, zorder=0)
    note = ax.text(0, 0.02, "no full mesh:\nfewer links\nthan peers", fontsize=style.FONT_SMALL, va="bottom", color=style.GUIDE,
                   transform=ax.get_xaxis_transform())
    ax.set_yscale("log")
    style.time_axis(ax, "y")
    ax.set_xlabel("GPUs in the full mesh")
    ax.xaxis.set_major_locator(FixedLocator(counts))
    ax.set_xlim(counts[0] - 0.5, counts[-1] + 0.5)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="center right", fontsize=style.FONT_SMALL)

    def update(m):
        one.set_ydata(m.one_ring_s)
        every.set_ydata(m.all_links_s)
        refs.set_ydata([t for _, t in m.references])
        for text, (_, t) in zip(notes, m.references):
            text.xy = (2, t)
        mark.set_xdata([m.gpus, m.gpus])
        chosen.set_data(*(([m.gpus] * 2, [m.chosen_one_ring_s, m.chosen_all_links_s]) if m.chosen_buildable
                          else ([], [])))
        infeasible = m.links_per_gpu + 1 < counts[-1]
        shade.set_visible(infeasible)
        note.set_visible(infeasible)
        if infeasible:
            shade.set_x(m.links_per_gpu + 1.5)
            shade.set_width(counts[-1] + 0.5 - (m.links_per_gpu + 1.5))
            note.set_x(m.links_per_gpu + 1.7)
        ax.set_ylabel(f"all-reduce of {units.format_bytes(m.nbytes)}")
        ax.set_title(f"{m.links_per_gpu} links x {m.link_gb_s:.3g} GB/s per direction per GPU, split over the peers",
                     fontsize=style.FONT_TITLE)
        ax.relim()
        ax.autoscale_view(scalex=False)

    update(m)
    return update


# ---------------------------------------------------------------- rings and measurements

def draw_rings(ax, topo, rings, title=None):
    """Draw ``topo`` and overlay ``rings`` (lists of GPU names) in colours, each offset slightly."""
    graphs.draw(topo, ax=ax)
    for k, ring in enumerate(rings):
        dx = (k - (len(rings) - 1) / 2) * 0.09
        pts = [topo.pos[g] for g in list(ring) + [ring[0]]]
        ax.plot([x + dx for x, _ in pts], [y + dx for _, y in pts], "-", lw=2, color=RING_COLOURS[k % len(RING_COLOURS)],
                alpha=0.85, label=f"ring {k + 1}", zorder=2.5)
    ax.legend(loc="lower right", fontsize=style.readable_points(ax.figure), frameon=False)
    if title:
        ax.set_title(title)
    return ax


def draw_measurements(ax, rows, efficiency):
    """Bars of measured / spec per published case (``rows`` of ``measurements``) and the model's efficiency."""
    import textwrap
    labels = [textwrap.fill(f"{r['system'].split(' (')[0]}: {r['kind'].split(',')[0]}", 34, break_on_hyphens=False)
              for r in rows]
    y = np.arange(len(rows))
    ax.barh(y, [r["ratio"] for r in rows], color=style.series(2), alpha=0.8)
    for i, r in enumerate(rows):  # inside the bar, where there is room for it at 8 pt
        ax.text(0.02, i, f"{r['measured_gb_s']:g} of {r['spec_gb_s']:g} GB/s {r['direction']}",
                va="center", fontsize=style.FONT_SMALL, color=style.PAPER)
    ax.axvline(1.0, color=style.INK, lw=1)
    ax.axvline(efficiency, color=style.series(1), ls="--", lw=1, label=f"course model: {efficiency:.0%} of spec")
    ax.set_yticks(y, labels, fontsize=style.FONT_SMALL)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.3)
    ax.set_xlabel("measured / spec (same direction convention)")
    ax.set_title("NVLink: what published measurements reach")
    ax.legend(loc="lower right", fontsize=style.FONT_SMALL)
    return ax


# ---------------------------------------------------------------- tables

def show_generations(rows):
    """Table: NVLink 1-5 (``generations()`` rows), per direction and bidirectional."""
    show_html(html_table(rows, {
        "NVLink": lambda r: r["generation"], "GPU": lambda r: r["gpu"], "year": lambda r: r["year"],
        "links per GPU": lambda r: r["links"], "GB/s per link, per direction": lambda r: f"{r['link_gb_s_per_direction']:g}",
        "GB/s per GPU, per direction": lambda r: f"{r['gb_s_per_direction']:g}",
        "GB/s per GPU, bidirectional (vendor figure)": lambda r: f"{r['gb_s_bidirectional']:g}",
        "source": lambda r: r["source"]}))


def show_vendor_quotes(rows):
    """Table: the vendor's bidirectional figure and the per-direction half (``vendor_quotes()`` rows)."""
    show_html(html_table(rows, {
        "GPU": lambda r: r["gpu"], "vendor figure, GB/s bidirectional": lambda r: f"{r['gb_s_bidirectional']:g}",
        "usable by a collective, GB/s per direction": lambda r: f"{r['gb_s_per_direction']:g}",
        "from": lambda r: r["detail"], "source": lambda r: r["source"]}))


def show_bridge_vs_pcie(rows, nbytes):
    """Table: 3090 bridge vs 4090 PCIe (``bridge_vs_pcie`` rows), bandwidth and 2-GPU all-reduce time."""
    show_html(html_table(rows, {
        "system": lambda r: r["system"], "GPU-to-GPU link": lambda r: r["gpu_link"],
        "GB/s per direction": lambda r: f"{r['link_gb_s_per_direction']:.4g}",
        "GB/s bidirectional": lambda r: f"{r['link_gb_s_bidirectional']:.4g}",
        "peer-to-peer": lambda r: "yes" if r["p2p"] else "no (staged through host memory)",
        f"all-reduce {units.format_bytes(nbytes)}, spec": lambda r: units.format_time(r["spec_s"]),
        "achievable": lambda r: units.format_time(r["achievable_s"]), "source": lambda r: r["source"]}))


def show_dgx1_links(rows):
    """Table: GPU 0's neighbours in a DGX-1 (``dgx1_direct_links`` rows), direct links vs max flow."""
    show_html(html_table(rows, {
        "from gpu0 to": lambda r: r["peer"], "NVLink links": lambda r: r["links"],
        "direct, GB/s per direction": lambda r: f"{r['direct_gb_s']:g}",
        "max flow through other GPUs, GB/s per direction": lambda r: f"{r['max_flow_gb_s']:g}"}))


def show_measurements(rows):
    """Table: published measurements (``measurements()`` rows) next to the spec, with ratio and source."""
    show_html(html_table(rows, {
        "system": lambda r: r["system"], "what": lambda r: r["kind"], "link": lambda r: r["link"],
        "spec GB/s": lambda r: f"{r['spec_gb_s']:g} {r['direction']}",
        "measured GB/s": lambda r: f"{r['measured_gb_s']:g} {r['direction']}",
        "measured / spec": lambda r: f"{r['ratio']:.0%}", "source": lambda r: r["url"]}))
