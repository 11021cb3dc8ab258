"""Drawings of chapter 05 (InfiniBand): published runs against the models, RDMA against TCP, where the
model stops being true, and the multi-node cliff explorer.

Each function draws a result that :mod:`course_lib.chapters.infiniband` computed; none computes a
model number itself. :func:`draw_cliff` returns an updater that moves the same artists for every
later slider event (nothing is re-created).
"""
from __future__ import annotations

import numpy as np

from .. import style, units
from ..widgets import html_table

TRANSPORT_COLOURS = style.TRANSPORT_COLOURS


def draw_model_vs_measured(ax, rows):
    """Measured busbw (bars show the stated range) with the three model values per run (``model_vs_measured`` rows)."""
    y = np.arange(len(rows))
    lo = np.array([r["measured_low"] for r in rows]) / units.GB
    hi = np.array([r["measured_high"] for r in rows]) / units.GB
    ax.barh(y, np.maximum(hi - lo, 2), left=np.where(hi - lo < 2, lo - 1, lo), height=0.5, color=style.CONTEXT,
            label="measured (stated range)")
    for key, marker, colour, name in (("textbook_busbw", "o", style.series(1), "textbook two-level (spec)"),
                                      ("ring_busbw", "s", style.colour("algorithm", "ring"), "pipelined ring (spec)"),
                                      ("model_busbw", "D", style.series(2), "course model (stated algorithm, achievable)")):
        ax.plot([r[key] / units.GB for r in rows], y, marker, color=colour, label=name, ms=6)
    ax.set_yticks(y, [r["label"] for r in rows], fontsize=style.FONT_SMALL)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first run at the top, no empty margin
    ax.set_xlabel("all-reduce busbw, GB/s (per direction, nccl-tests definition)", fontsize=style.FONT_NORMAL)
    # a tall chart: the busbw axis is labelled at the top and the bottom, and the legend sits above it,
    # so every row is read without scrolling to the end
    ax.tick_params(axis="x", labeltop=True, top=True, labelsize=style.FONT_SMALL)
    ax.grid(True, axis="x", alpha=0.3)
    for row in y[1::2]:
        ax.axhspan(row - 0.5, row + 0.5, color=style.CONTEXT, alpha=0.06, lw=0)  # bands guide the eye along a row
    ax.legend(fontsize=style.FONT_SMALL, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, borderaxespad=1.8, frameon=False)
    ax.set_title("Multi-node all-reduce busbw, GB/s per direction: published measurements vs models", fontsize=style.FONT_TITLE,
                 pad=44)
    return ax


def draw_transports(ax, rows):
    """Share of line rate NCCL reaches per NIC (``transports_table`` rows): dark the low end, light the high end."""
    y = np.arange(len(rows))
    lo = np.array([r["efficiency_low"] for r in rows]) * 100
    hi = np.array([r["efficiency_high"] for r in rows]) * 100
    ax.barh(y, hi, color=[TRANSPORT_COLOURS[r["kind"]] for r in rows], alpha=0.35)
    ax.barh(y, lo, color=[TRANSPORT_COLOURS[r["kind"]] for r in rows])
    ax.set_yticks(y, [f"{r['transport']} ({r['line_gbit_s']:g} Gb/s)" for r in rows], fontsize=style.FONT_SMALL)
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel("NCCL bandwidth per NIC, % of line rate (per direction)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("RDMA (InfiniBand, RoCE) vs TCP sockets\n(dark: low end of the stated range; light: high end)",
                 fontsize=style.FONT_TITLE)
    return ax


REGIME_STYLES = tuple(zip(style.REGIME_COLOURS, ("o", "s", "^", "D")))  # by costmodel.SCALE_REGIMES


def _ratio_ticks(ax, ticks):
    """Plain ratio labels (0.5, 1, 2) on a log y axis, no minor labels."""
    from matplotlib.ticker import NullFormatter

    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(NullFormatter())


def draw_validation_ratios(ax, by_regime, worst, role):
    """predicted / measured busbw against size, one marker per node-count regime (``by_regime``: (name, rows)
    pairs in costmodel.SCALE_REGIMES order; ``worst``: the rows to name)."""
    ax.axhspan(1 / 1.2, 1.2, color=style.AGREEMENT, alpha=0.12, label="within 20%")
    ax.axhspan(0.5, 2.0, color=style.AGREEMENT, alpha=0.05, label="within 50%")
    ax.axhline(1.0, color=style.GUIDE, lw=0.8)
    for (name, rs), (colour, marker) in zip(by_regime, REGIME_STYLES):
        if rs:
            ax.scatter([r["nbytes"] for r in rs], [r["ratio"] for r in rs], s=22, color=colour, marker=marker,
                       label=f"{name} ({len(rs)})", alpha=0.8)
    for i, r in enumerate(worst):  # alternate above and below; names of large sizes end at their point
        right = r["nbytes"] > 2**24
        ax.annotate(r["id"], (r["nbytes"], r["ratio"]), fontsize=style.FONT_SMALL, ha="right" if right else "left",
                    xytext=(-4 if right else 4, 4 if i % 2 == 0 else -11), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(0.12, 9)
    ticks = [2.0**k for k in range(0, 35, 5)]
    ax.set_xticks(ticks, [units.format_bytes(t, binary=True) for t in ticks], fontsize=style.FONT_SMALL)
    _ratio_ticks(ax, (0.25, 0.5, 1, 2, 4))
    ax.set_xlabel("all-reduce size (nccl-tests size column)")
    ax.set_ylabel("predicted / measured busbw")
    ax.set_title(f"{role} cases: model / measurement by size and node count", fontsize=style.FONT_NORMAL)
    ax.legend(fontsize=style.FONT_SMALL, loc="lower right", ncol=3)
    return ax


def draw_node_sweeps(ax, sweeps, named=4):
    """predicted / measured busbw (the course's model/measured convention, as ``evidence`` and the ratio
    panel) against nodes for every node-count sweep (``sweeps``: (name, rows) pairs):
    thin grey lines, the ``named`` sweeps that leave the +-35% band furthest in colour with their names."""
    from matplotlib.ticker import FuncFormatter

    ax.axhspan(1 / 1.35, 1.35, color=style.AGREEMENT, alpha=0.12, label="within 35%")
    ax.axhline(1.0, color=style.GUIDE, lw=0.8)

    def worst(rs):
        return max(abs(np.log(r["predicted_busbw"] / r["measured_busbw"])) for r in rs)

    ranked = sorted(sweeps, key=lambda s: -worst(s[1]))
    loud = {name for name, _ in ranked[:named]}
    for name, rs in sweeps:
        x = [r["nodes"] for r in rs]
        y = [r["predicted_busbw"] / r["measured_busbw"] for r in rs]
        if name in loud:
            ax.plot(x, y, "o-", lw=1.4, ms=3.5, label=name[:34])
        else:
            ax.plot(x, y, "-", color=style.CONTEXT, lw=0.7, alpha=0.7)
    ax.plot([], [], "-", color=style.CONTEXT, lw=0.7, label=f"the other {len(sweeps) - len(loud)} sweeps")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(1 / 3, 10)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    _ratio_ticks(ax, (0.5, 1, 2, 4, 8))
    ax.set_xlabel("nodes")
    ax.set_ylabel("predicted / measured busbw")
    ax.set_title(f"{len(sweeps)} node-count sweeps against the model", fontsize=style.FONT_NORMAL)
    ax.legend(fontsize=style.FONT_SMALL, loc="upper left")
    ax.grid(True, alpha=0.3)
    return ax


# ---------------------------------------------------------------- the explorer

def _job_label(r):
    return f"your job: {r.nodes} x {r.gpus_per_node} GPUs, {units.format_time(r.time_s)}"


def _cliff_title(r):
    nics = f"NICs {r.injection_gb_s:.3g} GB/s per node"
    if abs(r.usable_gb_s - r.injection_gb_s) > 1e-6 * r.injection_gb_s:
        nics += f", {r.usable_gb_s:.3g} usable on {r.nodes} nodes (dotted blue; caps in the readout)"
    else:
        nics += " (dotted blue)"
    return (f"All-reduce of {units.format_bytes(r.nbytes)}, {r.nodes} x {r.gpus_per_node} GPUs: "
            f"NVLink {r.nvlink_gb_s:.3g} GB/s per GPU (dotted green),\n{nics}")


def draw_cliff(ax, r):
    """busbw (GB/s per direction) against GPUs in the job for a ``CliffView`` result ``r``: one node,
    textbook two-level and pipelined rings across nodes, your job marked. Returns ``update(r)``."""
    from matplotlib.ticker import FuncFormatter

    (intra,) = ax.plot(r.intra_gpus, r.intra_busbw_gb_s, "o-", color=style.series(2),
                       label="inside one node (ring over NVLink)")
    (hier,) = ax.plot(r.gpus, r.hierarchical_busbw_gb_s, "o-", color=style.series(1), label="across nodes: textbook two-level")
    (ring,) = ax.plot(r.gpus, r.ring_busbw_gb_s, "s--", color=style.colour("algorithm", "ring"), ms=4,
                      label="across nodes: pipelined rings (NCCL-like)")
    boundary = ax.axvline(r.gpus_per_node, color=style.GUIDE, ls=":", lw=1)
    note = ax.text(r.gpus_per_node, 0.02, " node boundary", fontsize=style.FONT_SMALL, color=style.GUIDE, transform=ax.get_xaxis_transform())
    nvlink = ax.axhline(r.nvlink_gb_s, color=style.series(2), ls=":", lw=1)
    nics = ax.axhline(r.usable_gb_s, color=style.colour("algorithm", "ring"), ls=":", lw=1)
    (job,) = ax.plot(r.nodes * r.gpus_per_node, r.busbw_gb_s, "D", color=style.INK, ms=9, zorder=5, label=_job_label(r))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_xlabel("GPUs in the job")
    ax.set_ylabel("busbw, GB/s per direction")
    title = ax.set_title(_cliff_title(r), fontsize=style.FONT_NORMAL)
    ax.grid(True, which="both", alpha=0.3)
    legend = {}

    def make_legend(r):
        intra.set_visible(r.gpus_per_node > 1)  # one GPU per node: nothing inside the node
        lines = [line for line in (intra, hier, ring, job) if line.get_visible()]
        legend["box"] = ax.legend(lines, [line.get_label() for line in lines], fontsize=style.FONT_SMALL, loc="best")
        legend["intra"] = intra.get_visible()

    def limits():
        ax.relim()
        ax.set_autoscale_on(True)
        ax.autoscale_view()
        ax.set_ylim(bottom=0)

    make_legend(r)
    limits()

    def update(r):
        intra.set_data(r.intra_gpus, r.intra_busbw_gb_s)
        hier.set_data(r.gpus, r.hierarchical_busbw_gb_s)
        ring.set_data(r.gpus, r.ring_busbw_gb_s)
        boundary.set_xdata([r.gpus_per_node, r.gpus_per_node])
        note.set_x(r.gpus_per_node)
        nvlink.set_ydata([r.nvlink_gb_s, r.nvlink_gb_s])
        nics.set_ydata([r.usable_gb_s, r.usable_gb_s])
        job.set_data([r.nodes * r.gpus_per_node], [r.busbw_gb_s])
        job.set_label(_job_label(r))
        title.set_text(_cliff_title(r))
        if legend["intra"] != (r.gpus_per_node > 1):
            legend["box"].remove()
            make_legend(r)
        else:
            legend["box"].get_texts()[-1].set_text(job.get_label())
        limits()

    return update


def draw_collnet(ax, v):
    """busbw against nodes (``collnet_view``): each algorithm's model line, the published CollNet runs (filled:
    fit, open: test) and the NICs' line rate, which a ring cannot pass and SHARP can."""
    x = np.array(v["nodes"])
    labels = {"ring": "ring (model)", "nvls": "NVLS tree (model)", "collnet": "CollNet / SHARP (model)"}
    for algo, values in v["busbw"].items():
        ax.plot(x, np.array(values) / units.GB, "-", color=style.ALGORITHM_COLOURS[algo], label=labels[algo])
    ax.axhline(v["nic_line_rate"] / units.GB, color=style.GUIDE, ls="--", lw=1,
               label="node's NIC line rate (per direction)")
    for role, face in (("fit", None), ("test", "none")):
        pts = [p for p in v["published"] if p["role"] == role]
        if pts:
            ax.scatter([p["nodes"] for p in pts], [p["busbw"] / units.GB for p in pts], marker="o", s=28,
                       facecolors=face if face else style.ALGORITHM_COLOURS["collnet"],
                       edgecolors=style.ALGORITHM_COLOURS["collnet"],
                       label=f"published CollNet runs ({role})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [str(n) for n in x])
    ax.set_xlabel("nodes (8 GPUs each)")
    ax.set_ylabel("all-reduce busbw, GB/s")
    ax.set_ylim(0, None)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=style.FONT_SMALL, loc="lower left")
    ax.set_title(f"In-network reduction across nodes ({v['system']}, "
                 f"{units.format_bytes(v['nbytes'], binary=True)})", fontsize=style.FONT_TITLE)
    return ax


def generations_table(rows) -> str:
    """The table show_generations displays: InfiniBand generations per 4x port, bits and bytes, per direction and both."""
    return html_table(rows, {
        "port": lambda r: r["name"], "year": lambda r: r["year"],
        "Gb/s per direction (bits)": lambda r: f"{r['gbit_s_per_direction']:g}",
        "GB/s per direction (bytes)": lambda r: f"{r['gb_s_per_direction']:g}",
        "GB/s bidirectional": lambda r: f"{r['gb_s_bidirectional']:g}", "source": lambda r: r["source"]})


def transports_table(rows) -> str:
    """The table show_transports displays: line rate vs achieved per NIC for InfiniBand, RoCE and TCP."""
    return html_table(rows, {
        "transport": lambda r: r["transport"], "line rate": lambda r: f"{r['line_gbit_s']:g} Gb/s = {r['line_gb_s']:g} GB/s",
        "NCCL achieved, GB/s per direction": lambda r: (f"{r['achieved_low_gb_s']:g}" if r["achieved_low_gb_s"] == r["achieved_high_gb_s"]
                                                        else f"{r['achieved_low_gb_s']:g}-{r['achieved_high_gb_s']:g}"),
        "share of line rate": lambda r: (f"{r['efficiency_low']:.0%}" if r["efficiency_low"] == r["efficiency_high"]
                                         else f"{r['efficiency_low']:.0%}-{r['efficiency_high']:.0%}"),
        "what": lambda r: r["what"], "source": lambda r: r["source"]})


def model_vs_measured_table(rows) -> str:
    """The table show_model_vs_measured displays: measured busbw against the three models, GB/s per direction."""
    gb = lambda x: f"{x / units.GB:.0f}"  # noqa: E731
    return html_table(rows, {
        "run": lambda r: r["label"],
        "measured busbw": lambda r: gb(r["measured_low"]) if r["measured_low"] == r["measured_high"]
        else f"{gb(r['measured_low'])}-{gb(r['measured_high'])}",
        "textbook two-level": lambda r: gb(r["textbook_busbw"]), "pipelined ring": lambda r: gb(r["ring_busbw"]),
        "course model (achievable)": lambda r: f"{gb(r['model_busbw'])} ({r['model_algorithm']})",
        "source": lambda r: r["source"]})


def collnet_table(rows) -> str:
    """The table show_collnet displays: the published CollNet runs (fit and test) with the model's ratio."""
    return html_table(rows, {
        "case": lambda r: r["id"], "role": lambda r: r["role"], "nodes": lambda r: r["nodes"],
        "size": lambda r: units.format_bytes(r["nbytes"], binary=True),
        "measured busbw, GB/s": lambda r: f"{r['busbw'] / units.GB:.1f}",
        "model / measured": lambda r: f"{r['ratio']:.2f}", "source": lambda r: r["source"]})


def rank_table(rows) -> str:
    """The table show_rank_table displays: the environment torchrun gives each process."""
    return html_table(rows, {
        "node (GROUP_RANK)": lambda r: r["node_rank"], "LOCAL_RANK (= GPU)": lambda r: r["local_rank"],
        "RANK": lambda r: r["rank"], "WORLD_SIZE": lambda r: r["world_size"]})
