"""Drawings of chapter 06 (data parallelism): the overlap timeline, ZeRO memory, the DP ring on the
fabric, the ZeRO-3 ladder and the scaling explorer.

Each function draws a result that :mod:`course_lib.chapters.data_parallel` computed; none computes
a model number itself. :func:`draw_scaling` returns an updater that moves the same artists for
every later slider event (nothing is re-created).
"""
from __future__ import annotations

import numpy as np

from .. import style, units
from ..widgets import html_table
from . import graphs

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations")   # colours: style.MEMORY_COLOURS


def draw_overlap_timeline(ax, rows, buckets, total_s, comm_s):
    """Timelines of one step; ``rows``: (label, overlap_schedule result, y offset) pairs. Seconds in, ms drawn."""
    ms = 1e3
    for label, sched, y0 in rows:
        for name, s, e in sched["compute"]:
            colour, alpha = style.colour("step", "compute"), 0.55 if name == "forward" else 1.0
            ax.barh(y0 + 1.0, (e - s) * ms, left=s * ms, height=0.8, color=colour, alpha=alpha, edgecolor=style.PAPER)
        for i, (name, s, e) in enumerate(sched["comm"]):
            ax.barh(y0, (e - s) * ms, left=s * ms, height=0.8, color=style.colour("step", "data-parallel comm"),
                    alpha=0.7 if i % 2 else 1.0, edgecolor=style.PAPER)
            ax.text((s + e) / 2 * ms, y0, str(i + 1), ha="center", va="center", fontsize=style.FONT_SMALL, color=style.PAPER)
        end_b, end = sched["backward_end_s"] * ms, sched["step_s"] * ms
        ax.plot([end_b, end_b], [y0 - 0.5, y0 + 1.5], color=style.INK, lw=1, ls=":")
        if end > end_b:
            ax.annotate("", xy=(end, y0 - 0.55), xytext=(end_b, y0 - 0.55),
                        arrowprops={"arrowstyle": "<->", "color": style.INK, "lw": 1})
            ax.text((end_b + end) / 2, y0 - 0.75, f"exposed {units.format_time(sched['exposed_s'])}",
                    ha="center", va="top", fontsize=style.FONT_SMALL)
        ax.text(0, y0 + 1.55, label, ha="left", va="center", fontsize=style.FONT_NORMAL, fontweight="bold")
    ax.set_yticks([0, 1, 2.6, 3.6], ["all-reduce", "compute", "all-reduce", "compute"], fontsize=style.FONT_SMALL)
    ax.set_xlabel("time in the step, ms")
    ax.set_ylim(-1.2, 4.6)
    ax.set_xlim(left=-0.02 * ms * total_s)
    ax.set_title(f"compute (blue): forward light, backward in {buckets} bucket-sized pieces dark;\nbucket all-reduces "
                 f"(purple): {units.format_time(comm_s)} of communication", fontsize=style.FONT_NORMAL)
    ax.grid(axis="x", alpha=0.3)
    return ax


def draw_zero_memory(ax, rows, params, gpus, capacity_bytes=None):
    """Stacked bars of model-state memory per GPU for ZeRO 0-3 (``rows`` from ``zero_table``), bytes sent on top."""
    x = np.arange(4)
    bottom = np.zeros(4)
    for part in MEMORY_PARTS[:3]:  # model states: weights, gradients, optimizer
        vals = np.array([r[part] for r in rows]) / units.GB
        ax.bar(x, vals, bottom=bottom, color=style.colour("memory", part), label=part)
        bottom += vals
    for i, r in enumerate(rows):
        ax.text(i, bottom[i], f"{r['total'] / units.GB:.3g} GB\nsends {r['ratio_to_ddp']:.2g}x DDP",
                ha="center", va="bottom", fontsize=style.FONT_SMALL)
    if capacity_bytes is not None:
        ax.axhline(capacity_bytes / units.GB, color=style.INK, ls="--", lw=1, label=f"{capacity_bytes / units.GB:.0f} GB")
    ax.set_xticks(x, ["ZeRO-0\n(DDP)", "ZeRO-1\noptimizer", "ZeRO-2\n+ gradients", "ZeRO-3\n+ weights"])
    ax.set_ylabel("model states per GPU, GB")
    ax.set_ylim(0, bottom.max() * 1.25)
    ax.set_title(f"{params / 1e9:.3g}B parameters, mixed-precision Adam (2 + 2 + 12 bytes each), "
                 f"{gpus} GPUs", fontsize=style.FONT_TITLE)
    ax.legend(fontsize=style.FONT_SMALL)
    return ax


def draw_dp_ring(ax, topo, order, leaves, info, system_name, link_name, nodes, ring):
    """The fat tree ``topo`` with DP ring ``order`` drawn on it; ``leaves`` maps each node-crossing hop
    (a, b) to the leaf switch it passes; ``info`` is ``dp_ring_bandwidth``'s result."""
    graphs.draw(topo, ax=ax, show_bandwidth=False)
    for a, b in zip(order, order[1:] + order[:1]):
        (x1, y1), (x2, y2) = topo.pos[a], topo.pos[b]
        leaf = leaves.get((a, b))
        if leaf is not None:  # GPU -> its rail's leaf switch -> the other node's GPU on the same rail
            xl, yl = topo.pos[leaf]
            ax.annotate("", xy=(xl, yl - 0.15), xytext=(x1, y1 + 0.15),
                        arrowprops={"arrowstyle": "-|>", "color": style.colour("reach", "across"), "lw": 2.2})
            ax.annotate("", xy=(x2, y2 + 0.15), xytext=(xl, yl - 0.15),
                        arrowprops={"arrowstyle": "-|>", "color": style.colour("reach", "across"), "lw": 2.2})
        else:
            ax.annotate("", xy=(x2, y2 + 0.35), xytext=(x1, y1 + 0.35),
                        arrowprops={"arrowstyle": "-|>", "color": style.colour("reach", "inside"), "lw": 1.6,
                                    "connectionstyle": "arc3,rad=-0.4"})
    ax.set_title(f"DP ring {ring} over {nodes} x {system_name}:\ngreen hops on {link_name} (through the NVSwitch), "
                 f"orange hops leave the node on one rail.\nThis ring's slowest link: "
                 f"{units.format_bandwidth(info['one_ring'])}; {info['rings']} rings, one per rail, use every NIC.",
                 fontsize=style.readable_points(ax.figure))
    return ax


def draw_zero3_ladder(ax, rows, ptdp):
    """Measured ZeRO-3 and PTD-P TFLOP/s per GPU (``ptdp``: megatron_dp_rows' PTD-P rows) against the model
    and its pessimistic variants (``rows`` from ``zero3_ladder``)."""
    g = [r["gpus"] for r in rows]
    styles = (("model", "course model (overlap, node's 8 NICs)", style.MODEL, "o-"),
              ("no_overlap", "no overlap", style.series(5), "s--"),
              ("own_nic", "each GPU only its own NIC", style.series(3), "^--"),
              ("own_nic_no_overlap", "own NIC and no overlap", style.series(6), "v--"))
    for key, label, colour, fmt in styles:
        ax.plot(g, [r[key] for r in rows], fmt, color=colour, label=label, ms=5)
    ax.plot(g, [r["measured"] for r in rows], "D-", color=style.MEASURED, lw=2.2, label="ZeRO-3 measured (Megatron-LM 2021)")
    ax.plot([r["gpus"] for r in ptdp], [r["measured"] for r in ptdp], "*-", color=style.series(2), ms=9,
            label="PTD-P measured (TP 8 x PP 12 x DP)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(g, [str(x) for x in g])
    ax.set_xlabel("A100 GPUs (global batch fixed at 1536 sequences)")
    ax.set_ylabel("TFLOP/s per GPU")
    ax.set_ylim(0, max(max(r["model"] for r in rows), max(r["measured"] for r in ptdp)) * 1.15)
    ax.set_title("GPT-3 175B with ZeRO-3 alone: the model vs measurement", fontsize=style.FONT_TITLE)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=style.FONT_SMALL, loc="lower left")
    return ax


# ---------------------------------------------------------------- the explorer

def _scaling_title(r):
    return (f"{r.model}, ZeRO-{r.zero}, {r.seqs_per_gpu} seq/GPU, network {r.link_gb_s:.3g} GB/s per GPU, "
            f"{'overlapped' if r.overlap else 'not overlapped'}")


def _step_time_panel(ax1, twin, r, x) -> tuple:
    """``draw_scaling``'s upper panel at GPU counts ``x`` (log2): compute and exposed DP communication per step,
    the whole communication as a tick, the node boundary, the chosen count framed, scaling efficiency on
    ``twin``. Returns the artists ``update`` moves: (compute bars, exposed bars, comm line, frame, efficiency)."""
    compute = ax1.bar(x, r.compute_s, color=style.colour("step", "compute"), width=0.7, label="compute")
    exposed = ax1.bar(x, r.exposed_s, bottom=r.compute_s, color=style.colour("step", "data-parallel comm"), width=0.7, label="exposed DP comm")
    (comm,) = ax1.plot(x, r.comm_s, "_", color=style.INK, ms=14, mew=2, label="DP comm if nothing hidden")
    boundary = np.log2(r.gpus_per_node) + 0.5
    ax1.axvline(boundary, color=style.GUIDE, ls=":", lw=1)
    ax1.text(boundary + 0.08, 0.665, "node boundary", fontsize=style.FONT_SMALL, color=style.GUIDE, va="bottom",
             transform=ax1.get_xaxis_transform())
    (chosen,) = ax1.bar([x[r.selected]], [r.step_s[r.selected]], width=0.8, fill=False, edgecolor=style.INK, lw=1.5)
    ax1.set_xticks(x, [str(g) for g in r.gpus], fontsize=style.FONT_NORMAL)
    ax1.set_xlabel("GPUs (data parallel, same sequences per GPU)", fontsize=style.FONT_NORMAL)
    ax1.set_ylabel("step time, s", fontsize=style.FONT_NORMAL)
    (eff,) = twin.plot(x, 100 * r.efficiency, "o-", color=style.series(2), ms=4, label="scaling efficiency")
    twin.set_ylim(0, 155)
    twin.set_yticks([0, 20, 40, 60, 80, 100])
    twin.tick_params(axis="y", labelsize=style.FONT_NORMAL)
    twin.set_ylabel("scaling efficiency, %", color=style.series(2), fontsize=style.FONT_NORMAL)
    handles, labels = ax1.get_legend_handles_labels()
    extra = twin.get_legend_handles_labels()
    ax1.legend(handles + extra[0], labels + extra[1], fontsize=style.FONT_SMALL, loc="upper left", ncol=2)
    ax1.set_title(_scaling_title(r), fontsize=style.FONT_TITLE)
    return compute, exposed, comm, chosen, eff


def _memory_panel(ax2, r) -> tuple:
    """``draw_scaling``'s lower panel: memory per GPU per ZeRO stage, stacked by part, the chosen stage framed
    and the usable memory as a line. Returns the artists ``update`` moves: (bars by part, frame, line)."""
    stacks, bottom = {}, np.zeros(4)
    for i, part in enumerate(MEMORY_PARTS):
        stacks[part] = ax2.bar(range(4), r.memory_gb[:, i], bottom=bottom, color=style.colour("memory", part),
                               label=part)
        bottom = bottom + r.memory_gb[:, i]
    (stage,) = ax2.bar([r.zero], [bottom[r.zero]], fill=False, edgecolor=style.INK, lw=1.5)
    usable = ax2.axhline(r.usable_gb, color=style.INK, ls="--", lw=1, label="usable memory")
    ax2.set_xticks(range(4), ["ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"], fontsize=style.FONT_NORMAL)
    ax2.set_ylabel("memory per GPU, GB", fontsize=style.FONT_NORMAL)
    ax2.set_title(f"memory per GPU at {r.selected_gpus} GPUs", fontsize=style.FONT_TITLE)
    ax2.legend(fontsize=style.FONT_SMALL, loc="center left", bbox_to_anchor=(1.01, 0.5))  # outside: bars and line stay clear
    return stacks, stage, usable


def draw_scaling(axes, r):
    """The explorer's figure for a ``ScalingView`` result ``r``: step time (compute + exposed DP
    communication) and scaling efficiency per GPU count above, memory per GPU per ZeRO stage below
    (one column, read at notebook width). Returns ``update(r)``, which moves the same artists to
    another result."""
    from matplotlib.ticker import MaxNLocator
    from matplotlib.transforms import offset_copy

    ax1, ax2, twin = axes
    x = np.log2(r.gpus)
    compute, exposed, comm, chosen, eff = _step_time_panel(ax1, twin, r, x)
    stacks, stage, usable = _memory_panel(ax2, r)
    for ax in (ax1, ax2):
        ax.tick_params(axis="y", labelsize=style.FONT_NORMAL)
        # Both y labels at one fixed place, clear of 5-digit tick labels: the layout is made once, at the
        # first result, so a label placed automatically would move into the figure's edge later.
        ax.yaxis.set_label_coords(0, 0.5, transform=offset_copy(ax.transAxes, ax.figure, x=-0.5, units="inches"))

    def limits(r):
        ax1.set_ylim(0, 1.55 * max(r.step_s.max(), r.comm_s.max()))
        ax2.set_ylim(0, max(r.memory_gb.sum(axis=1).max(), r.usable_gb) * 1.1)

    limits(r)
    for axis in (ax1.yaxis, ax2.yaxis):  # fewer tick labels: each costs a text layout on every event
        axis.set_major_locator(MaxNLocator(nbins=5))
    ax1.set_xlim(x[0] - 0.6, x[-1] + 0.6)
    ax2.set_xlim(-0.6, 3.6)

    def update(r):
        for bar, c in zip(compute, r.compute_s):
            bar.set_height(c)
        for bar, c, e in zip(exposed, r.compute_s, r.exposed_s):
            bar.set_y(c)
            bar.set_height(e)
        comm.set_ydata(r.comm_s)
        chosen.set_x(x[r.selected] - 0.4)
        chosen.set_height(r.step_s[r.selected])
        eff.set_ydata(100 * r.efficiency)
        ax1.set_title(_scaling_title(r), fontsize=style.FONT_TITLE)
        bottom = np.zeros(4)
        for i, part in enumerate(MEMORY_PARTS):
            for bar, b, h in zip(stacks[part], bottom, r.memory_gb[:, i]):
                bar.set_y(b)
                bar.set_height(h)
            bottom = bottom + r.memory_gb[:, i]
        stage.set_x(r.zero - 0.4)
        stage.set_height(bottom[r.zero])
        usable.set_ydata([r.usable_gb, r.usable_gb])
        ax2.set_title(f"memory per GPU at {r.selected_gpus} GPUs", fontsize=style.FONT_TITLE)
        limits(r)

    return update


def published_scaling_table(rows) -> str:
    """The table show_published_scaling displays: the published DP scaling efficiencies with their sources."""
    return html_table(rows, [
        ("model", lambda r: r["model"]), ("GPUs", lambda r: r["gpus"]),
        ("compared with", lambda r: f"{r['baseline_gpus']} GPUs" if r["baseline_gpus"] else "ideal line"),
        ("scaling efficiency", lambda r: f"{100 * r['efficiency']:.0f}%"), ("network", lambda r: r["network"]),
        ("source", lambda r: r["url"])])


def megatron_dp_table(rows) -> str:
    """The table show_megatron_dp displays: the PTD-P and ZeRO-3 rows: measured vs predicted, and efficiency vs 384 GPUs."""
    return html_table(rows, [
        ("scheme", lambda r: r["scheme"]), ("GPUs", lambda r: r["gpus"]),
        ("measured TFLOP/s", lambda r: f"{r['measured']:.0f}"), ("model TFLOP/s", lambda r: f"{r['predicted']:.0f}"),
        ("model / measured", lambda r: f"{r['ratio']:.2f}"),
        ("measured eff. vs 384", lambda r: f"{100 * r['measured_efficiency']:.0f}%"),
        ("model eff. vs 384", lambda r: f"{100 * r['predicted_efficiency']:.0f}%")])


def zero3_ladder_table(rows) -> str:
    """The table show_zero3_ladder displays: :func:`zero3_ladder` as a table (TFLOP/s per GPU)."""
    return html_table(rows, [
        ("GPUs", lambda r: r["gpus"]), ("seq. per GPU", lambda r: r["micro_batch"]),
        ("model compute s", lambda r: f"{r['compute_s']:.1f}"), ("model ZeRO-3 comm s", lambda r: f"{r['comm_s']:.1f}"),
        ("course model", lambda r: f"{r['model']:.0f}"), ("no overlap", lambda r: f"{r['no_overlap']:.0f}"),
        ("own NIC", lambda r: f"{r['own_nic']:.0f}"), ("own NIC, no overlap", lambda r: f"{r['own_nic_no_overlap']:.0f}"),
        ("measured", lambda r: f"{r['measured']:.0f}"), ("model / measured", lambda r: f"{r['model'] / r['measured']:.2f}")])


def zero_table(rows, published) -> str:
    """The table show_zero_table displays: ZeRO stages' memory and traffic per GPU (``rows``), with the ZeRO
    paper's published model-state bytes per stage (``published``: {stage: bytes}, a column only where given)."""
    gb = lambda v: f"{v / units.GB:.3g}"  # noqa: E731
    cols = [("stage", lambda r: f"ZeRO-{r['zero']}"), ("weights GB", lambda r: gb(r["weights"])),
            ("gradients GB", lambda r: gb(r["gradients"])), ("optimizer GB", lambda r: gb(r["optimizer"])),
            ("total GB per GPU", lambda r: gb(r["total"]))]
    if published:
        cols.append(("ZeRO paper, Fig. 1 (GB)", lambda r: gb(published[r["zero"]]) if r["zero"] in published else "-"))
    cols += [("collectives per step", lambda r: r["collectives"]),
             ("GB sent per GPU per step", lambda r: gb(r["bytes_sent"])), ("vs DDP", lambda r: f"{r['ratio_to_ddp']:.2f}x")]
    return html_table(rows, cols)
