"""Drawings of chapter 03 (NVSwitch): the fabric explorer, chip-level systems, NVLS measurements, tables.

Each function draws a result that :mod:`course_lib.chapters.nvswitch` computed; none computes a
model number itself. :func:`draw_fabric` returns an updater that moves the same artists in place.
"""
from __future__ import annotations

import textwrap

import numpy as np

from .. import style, units
from ..widgets import html_table, show_html
from . import graphs

GB = units.GB


# ---------------------------------------------------------------- the fabric explorer

def _fabric_titles(s):
    return (f"All-reduce of {units.format_bytes(s.nbytes)},\n{s.link_gb_s:.3g} GB/s per GPU per direction",
            f"Bisection (dotted: a mesh no GPU\nhas the links for, > {s.max_links + 1} GPUs)")


def draw_fabric(axes, s):
    """Mesh vs switch vs PCIe tree (``s``: a ``FabricSeries``): all-reduce time (left) and bisection
    (right) against GPU count, your GPU count marked. Returns ``update(s)`` for later events."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory
    left, right = axes
    size = style.readable_points(left.figure)  # reads at 8.5 pt once shrunk to the notebook's 7.5 in
    counts, cut = s.counts, s.buildable
    lines = {
        "switch_ring": left.plot(counts, s.switch_ring, "o-", color=style.colour("algorithm", "ring"),
                                 label="NVSwitch, ring (= mesh using every wire)")[0],
        "switch_nvls": left.plot(counts, s.switch_nvls, "o-", color=style.colour("algorithm", "nvls"),
                                 label="NVSwitch + in-switch reduction (ideal)")[0],
        "mesh_ok": left.plot(counts[:cut], s.mesh_one_ring[:cut], "s--", color=style.series(2),
                             label="full mesh, one ring on direct wires")[0],
        "mesh_no": left.plot(counts[cut - 1:], s.mesh_one_ring[cut - 1:], ":", color=style.series(2), alpha=0.5)[0],
        "tree": left.plot(s.tree_gpus, s.tree_time, "^-", color=style.series(3), label="PCIe tree, ring")[0],
        "switch_bis": right.plot(counts, s.switch_bis / GB, "o-", color=style.colour("algorithm", "ring"))[0],
        "mesh_bis_ok": right.plot(counts[:cut], s.mesh_bis[:cut] / GB, "s--", color=style.series(2))[0],
        "mesh_bis_no": right.plot(counts[cut - 1:], s.mesh_bis[cut - 1:] / GB, ":", color=style.series(2), alpha=0.5)[0],
        "tree_bis": right.plot(s.tree_gpus, s.tree_bis / GB, "^-", color=style.series(3))[0],
    }
    marks = [a.axvline(s.gpus, color=style.GUIDE, ls=":", lw=1) for a in (left, right)]
    dots = [a.plot([], [], "D", color=style.INK, ms=5, zorder=5)[0] for a in (left, right)]
    for a in (left, right):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.xaxis.set_major_locator(FixedLocator(counts))
        a.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        a.xaxis.set_minor_formatter(NullFormatter())
        a.set_xlabel("GPUs", fontsize=size)
        a.tick_params(axis="both", labelsize=size)
        a.grid(True, which="major", alpha=0.3)
    style.time_axis(left, "y")  # plain tick labels ("10 ms"): mathtext powers of ten cost more to draw
    right.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:,.0f}" if y >= 1 else f"{y:g}"))
    left.set_ylabel("all-reduce time", fontsize=size)
    right.set_ylabel("bisection, GB/s per direction", fontsize=size)
    # one legend for both panels (the same colours), under their x labels: a figure legend, so the panels'
    # layout leaves it out, and the explorer's shell grows the figure to show it (a notebook crops to it)
    fig = left.figure
    under = (blended_transform_factory(fig.transFigure, left.transAxes)
             + ScaledTranslation(0, -(2.6 * size + 8) / 72, fig.dpi_scale_trans))
    legend = fig.legend(handles=[lines[k] for k in ("switch_ring", "switch_nvls", "mesh_ok", "tree")], fontsize=size,
                        loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=under, ncol=2, frameon=False,
                        borderaxespad=0.0)

    def update(s):
        i = list(s.counts).index(s.gpus)
        for key, (x, y) in {
                "switch_ring": (counts, s.switch_ring), "switch_nvls": (counts, s.switch_nvls),
                "mesh_ok": (counts[:cut], s.mesh_one_ring[:cut]), "mesh_no": (counts[cut - 1:], s.mesh_one_ring[cut - 1:]),
                "tree": (s.tree_gpus, s.tree_time), "switch_bis": (counts, s.switch_bis / GB),
                "mesh_bis_ok": (counts[:cut], s.mesh_bis[:cut] / GB),
                "mesh_bis_no": (counts[cut - 1:], s.mesh_bis[cut - 1:] / GB),
                "tree_bis": (s.tree_gpus, s.tree_bis / GB)}.items():
            lines[key].set_data(x, y)
        for mark, dot, ys in zip(marks, dots, ([s.switch_ring[i], s.switch_nvls[i], s.mesh_one_ring[i]],
                                               [s.switch_bis[i] / GB, s.mesh_bis[i] / GB])):
            mark.set_xdata([s.gpus, s.gpus])
            dot.set_data([s.gpus] * len(ys), ys)
        legend.get_texts()[-1].set_text(f"PCIe Gen{s.pcie_generation} tree, ring")
        for a, title in zip((left, right), _fabric_titles(s)):
            a.set_title(title, fontsize=size)
            a.relim()
            a.autoscale_view()

    update(s)
    return update


# ---------------------------------------------------------------- published measurements

def draw_measurements(left, right, sweeps, rows, line_rate):
    """Left: busbw vs size per system (``sweeps``: list of (gpu name, colour, ``size_sweep`` result));
    right: busbw vs GPU count with and without NVLS (``rows`` of ``nvls_by_gpu_count``); ``line_rate``
    bytes/s per direction of H100 NVLink."""
    for gpu, colour, s in sweeps:
        left.plot(s["sizes"], s["measured"] / GB, "o", color=colour, label=f"8x {gpu} measured (Azure)")
        left.plot(s["grid"], s["ring"] / GB, "--", color=colour, lw=1, label="model, ring")
        if s["nvls"] is not None:
            left.plot(s["grid"], s["nvls"] / GB, "-", color=colour, lw=1.5, label="model, NVLS")
        left.axhline(s["line_rate"] / GB, color=colour, ls=":", lw=1)
        left.text(s["grid"][0], s["line_rate"] / GB + 6, f"{gpu} line rate {s['line_rate'] / GB:.0f} GB/s per direction",
                  color=colour, fontsize=style.FONT_SMALL, ha="left")  # on the left, where the sweeps are still near zero
    left.set_xscale("log", base=2)
    ticks = [2**10, 2**15, 2**20, 2**25, 2**30, 2**33]
    left.set_xticks(ticks, [units.format_bytes(t, binary=True, digits=2) for t in ticks])
    left.set_xlabel("all-reduce size per GPU")
    left.set_ylabel("busbw, GB/s (nccl-tests definition)")
    left.set_title("8 GPUs: A100 (no NVLS) and H200 (NVLS), Azure sweeps", fontsize=style.FONT_NORMAL)
    left.set_ylim(0, 560)
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=style.FONT_SMALL, loc="center left", bbox_to_anchor=(0.0, 0.36))
    g = [r["gpus"] for r in rows]
    right.plot(g, [r["measured_ring"] / GB for r in rows], "s", color=style.colour("algorithm", "ring"), label="measured, ring")
    right.plot(g, [r["measured_nvls"] / GB for r in rows], "o", color=style.colour("algorithm", "nvls"), label="measured, NVLS")
    right.plot(g, [r["model_ring"] / GB for r in rows], "--", color=style.colour("algorithm", "ring"), label="model, ring")
    right.plot(g, [r["model_nvls"] / GB for r in rows], "-", color=style.colour("algorithm", "nvls"), label="model, NVLS")
    right.axhline(line_rate / GB, color=style.INK, ls=":", lw=1)
    right.text(2, line_rate / GB + 5, "H100 line rate, 450 GB/s per direction", fontsize=style.FONT_SMALL)
    right.set_xlabel("GPUs in the all-reduce (one H100 node)")
    right.set_ylabel("busbw, GB/s")
    right.set_title("busbw vs GPU count, 2-4 GB (nccl issue 1455)", fontsize=style.FONT_NORMAL)
    right.set_ylim(0, 560)
    right.grid(True, alpha=0.3)
    right.legend(fontsize=style.FONT_SMALL, loc="lower right")


def draw_topologies(axes, topologies, titles=None, **draw_kwargs):
    """Draw each ``topology.Topology`` on its Axes; ``titles`` (or None: the topology's own). Text keeps the
    size Topology.draw chose for the figure's width, so it reads at 8.5 pt or more in the notebook."""
    for k, (ax, topo) in enumerate(zip(np.atleast_1d(axes), topologies)):
        graphs.draw(topo, ax=ax, **draw_kwargs)
        if titles is not None:  # wrapped to the panel's width, as Topology.draw wraps its own
            size = ax.title.get_fontsize()
            chars = max(24, int(ax.get_window_extent().width * 72 / ax.figure.dpi / (0.55 * size)))
            ax.set_title("\n".join(textwrap.fill(line, chars) for line in titles[k].split("\n")), fontsize=size)


# ---------------------------------------------------------------- tables

def _gb(x):
    return f"{x / GB:,.0f}"


def show_generations(rows):
    """Table of NVSwitch generations (``generations()`` rows)."""
    show_html(html_table(rows, {
        "NVSwitch": lambda r: f"gen {r['generation']} ({r['year']})", "NVLink": lambda r: r["nvlink_generation"],
        "ports per chip": lambda r: r["ports_per_chip"],
        "GB/s per port, per direction": lambda r: f"{r['port_per_direction'] / GB:g}",
        "chip GB/s per direction (bidirectional)": lambda r: f"{_gb(r['chip_per_direction'])} ({_gb(r['chip_bidirectional'])})",
        "system": lambda r: r["system"], "chips": lambda r: r["chips_in_system"],
        "links per GPU": lambda r: f"{r['links_per_gpu']}: {r['links_per_gpu_per_chip']}",
        "GPUs in NVLink domain": lambda r: r["gpus_in_domain"],
        "in-switch reduction": lambda r: "yes (NVLS)" if r["in_network_reduction"] else "no",
        "source": lambda r: r["source"]}))


def show_port_budgets(rows):
    """Table: where each system's switch ports go (``port_budget`` rows)."""
    show_html(html_table(rows, {
        "system": lambda r: r["system"], "chips x ports": lambda r: f"{r['chips']} x {r['ports_per_chip']} = {r['total_ports']}",
        "GPU links": lambda r: r["gpu_links"], "to GPUs": lambda r: r["gpu_ports"],
        "to other baseboard": lambda r: r["trunk_ports"], "out of the box": lambda r: r["external_ports"],
        "unused": lambda r: r["unused_ports"], "layout": lambda r: "derived from port counts" if r["derived"] else "published",
        "source": lambda r: r["source"]}))


def show_fabric_comparison(rows, nbytes):
    """Table of ``fabric_comparison`` rows: GB/s per direction and all-reduce times of ``nbytes``."""
    show_html(html_table(rows, {
        "fabric": lambda r: r["fabric"] + ("" if r["buildable"] else " (not buildable)"),
        "one pair, GB/s per direction": lambda r: f"{r['pair'] / GB:,.3g}",
        "bisection, GB/s per direction": lambda r: _gb(r["bisection"]),
        f"ring all-reduce of {units.format_bytes(nbytes)}": lambda r: units.format_time(r["all_reduce_s"]),
        "with in-switch reduction": lambda r: units.format_time(r["all_reduce_nvls_s"]) if r["all_reduce_nvls_s"] else "-"}))


def show_real_systems(rows):
    """Table of ``topology.summary`` rows: per-pair range, bisection, ring bottleneck (GB/s per direction)."""
    show_html(html_table(rows, {
        "machine": lambda r: r["name"], "GPUs": lambda r: r["gpus"],
        "GPU 0 to another, GB/s": lambda r: (f"{r['pair_gb_s_min']:.0f}" if r["pair_gb_s_min"] == r["pair_gb_s_max"]
                                              else f"{r['pair_gb_s_min']:.0f}-{r['pair_gb_s_max']:.0f}"),
        "bisection, GB/s": lambda r: f"{r['bisection_gb_s']:,.0f}",
        "one ring's slowest link, GB/s": lambda r: f"{r['ring_gb_s']:.1f}"}))


def show_nvls_measurements(rows):
    """Table of ``nvls_measurements`` rows: busbw with and without NVLS against the line rate."""
    show_html(html_table(rows, {
        "system": lambda r: r["system"], "GPUs": lambda r: r["gpus"], "algorithm": lambda r: r["algorithm"],
        "busbw GB/s": lambda r: f"{r['busbw'] / GB:.0f}", "algbw GB/s": lambda r: f"{r['algbw'] / GB:.0f}",
        "line rate GB/s per direction": lambda r: f"{r['line_rate'] / GB:.0f}",
        "busbw / line rate": lambda r: f"{r['busbw_over_line']:.2f}", "reported by": lambda r: r["who"],
        "source": lambda r: r["source"]}))
