"""Drawings and tables of chapter 08 (capstone): step-time bars of the best layouts, the GPU-count
sweep, the published runs, the offered systems' topology, and the chapter's HTML tables.

Each function shows a result that :mod:`course_lib.chapters.planner` computed (a ``parallel.Plan``'s
ranked estimates, sweep rows, comparison rows); none computes a model number. ``BreakdownView`` is the
planner explorer's plot: drawn once, then updated in place on every slider event.
"""
from __future__ import annotations

import textwrap

import numpy as np

from .. import style, units
from ..widgets import html_table

BREAKDOWN_COLOURS = style.STEP_COLOURS   # the same colours as chapter 07's step-time split


def mark(ok) -> str:
    """A tick for a limit met, a cross for one missed."""
    return "✔" if ok else "✘"


class BreakdownView:
    """Stacked bars: the step time of up to ``rows`` ranked layouts split into compute, bubble and exposed
    traffic, each bar labelled with its tokens/s per GPU. Built once; :meth:`update` moves the bars.
    Text is sized to read at 8 pt once the figure is shrunk to the notebook's 7.5 in."""

    def __init__(self, ax, rows=6):
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Patch
        from matplotlib.transforms import ScaledTranslation
        self.ax, self.rows = ax, rows
        self.size = style.notebook_points(ax.figure)  # points, before the notebook shrinks it
        self._bars = ax.add_collection(PolyCollection([], edgecolors="none"), autolim=False)
        self._values = [ax.text(0, 0, "", va="center", fontsize=self.size) for _ in range(rows)]
        self._note = ax.text(0.5, 0.5, "no layout fits in GPU memory:\nadd GPUs or pick a GPU with more memory",
                             ha="center", va="center", transform=ax.transAxes, visible=False, fontsize=self.size)
        handles = [Patch(color=colour, label=part) for part, colour in BREAKDOWN_COLOURS.items()]
        # under the x label (a fixed distance in points, whatever the Axes' height)
        below = ax.transAxes + ScaledTranslation(0, -(2.8 * self.size + 10) / 72, ax.figure.dpi_scale_trans)
        self._legend = ax.legend(handles=handles, fontsize=self.size, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                                 bbox_transform=below, ncol=3, frameon=False, borderaxespad=0.0)
        ax.set_xlabel("seconds per step", fontsize=self.size)
        ax.tick_params(axis="x", labelsize=self.size)

    def update(self, ranked, title=""):
        """Show ``ranked`` (Estimates, best first; at most ``rows`` of them) under ``title``."""
        ranked = list(ranked)[:self.rows]
        ax, n = self.ax, len(ranked)
        (ax.set_axis_on if n else ax.set_axis_off)()
        self._note.set_visible(not n)
        self._legend.set_visible(bool(n))
        # wrapped to about the Axes' width (the layout gives the tick labels the left third or so)
        chars = int(0.62 * 72 * ax.figure.get_figwidth() / (0.5 * self.size))
        ax.set_title(textwrap.fill(title, chars), fontsize=self.size)
        polys, colours, totals = [], [], []
        for row, e in enumerate(ranked):
            y, left, parts = n - 1 - row, 0.0, e.breakdown()
            for part, colour in BREAKDOWN_COLOURS.items():
                width = parts.get(part, 0.0)
                polys.append(((left, y - 0.4), (left + width, y - 0.4), (left + width, y + 0.4), (left, y + 0.4)))
                colours.append(colour)
                left += width
            totals.append(left)
        self._bars.set_verts(polys)
        self._bars.set_facecolor(colours)
        for row, text in enumerate(self._values):
            text.set_visible(row < n)
            if row < n:
                text.set(x=totals[row], y=n - 1 - row, text=f" {ranked[row].tokens_per_s_per_gpu:,.0f} tok/s/GPU")
        if not n:
            return
        ax.set_yticks(np.arange(n)[::-1], [f"{e.layout}, mb {e.micro_batch}, {e.recompute}" for e in ranked],
                      fontsize=self.size)
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_xlim(0, max(totals) * 1.4)  # room for the tokens/s label after the longest bar


def draw_breakdown(ax, ranked, title=""):
    """One drawing of :class:`BreakdownView` (a notebook figure, not an explorer)."""
    BreakdownView(ax, max(1, len(ranked))).update(ranked, title)
    return ax


def draw_systems(axes, rails, h200, nvl72, gb200):
    """Left: the ``rails`` fat tree of DGX H200 nodes (``h200``: its System); right: the ``nvl72`` NVLink
    domain (``gb200``: its System). Titles give the links per direction."""
    from . import graphs
    size = style.readable_points(axes[0].figure)  # reads at 8.5 pt once the figure is shrunk to the notebook
    graphs.draw_rails(rails, ax=axes[0])
    axes[0].set_title(f"2 x DGX H200: 8 GPUs per node on NVSwitch\n({h200.gpu_link.per_direction / units.GB:.0f} GB/s "
                      f"per direction each); one {h200.nic.name} NIC per\nGPU to leaf k, one colour per rail "
                      f"({h200.nic.per_direction / units.GB:.0f} GB/s per direction)", fontsize=size)
    graphs.draw(nvl72, ax=axes[1], show_bandwidth=False)
    axes[1].set_title(f"GB200 NVL72: {gb200.gpus_per_node} GPUs in\none NVLink domain\n"
                      f"({gb200.gpu_link.per_direction / units.GB:.0f} GB/s per direction\nper GPU)", fontsize=size)
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    return axes


def draw_gpu_sweep(axes, rows, brief, model_name):
    """Days and GPU-hours against GPU count, one line per system (``rows`` from ``gpu_sweep``); the brief's
    limits dotted."""
    from matplotlib.ticker import FuncFormatter
    for sid in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == sid and r["fits"]]
        x = [r["gpus"] for r in mine]
        axes[0].plot(x, [r["days"] for r in mine], "o-", label=sid)
        axes[1].plot(x, [r["gpu_hours"] / 1e6 for r in mine], "o-", label=sid)
    axes[0].axhline(brief.max_days, color=style.GUIDE, ls=":", lw=1)
    axes[1].axhline(brief.max_gpu_hours / 1e6, color=style.GUIDE, ls=":", lw=1)
    for ax in axes:
        ax.axvline(brief.max_gpus, color=style.GUIDE, ls=":", lw=1)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("days to train")
    axes[1].set_ylabel("million GPU-hours")
    axes[1].set_ylim(bottom=0)
    for ax, what in zip(axes, ("time to train falls, less than in proportion", "GPU-hours rise")):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("GPUs")
        ax.set_title(f"{model_name}, {brief.tokens / 1e12:g}T tokens, batch {brief.global_batch}: {what}", fontsize=style.FONT_NORMAL)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=style.FONT_SMALL)
    return axes


def draw_published_comparison(ax, rows):
    """Predicted / published for each run (``rows`` from ``published_comparison``), with the +-20% band."""
    y = np.arange(len(rows))
    ratios = [r["ratio"] for r in rows]
    ax.axvspan(0.8, 1.2, color=style.AGREEMENT, alpha=0.12, label="within 20%")
    ax.axvline(1.0, color=style.GUIDE, lw=1)
    ax.barh(y, [r - 1 for r in ratios], left=1, color=[style.OVERESTIMATE if r >= 1 else style.UNDERESTIMATE for r in ratios])
    for yi, r in zip(y, ratios):
        ax.text(r, yi, f" {r:.2f}", va="center", fontsize=style.FONT_SMALL)
    ax.set_yticks(y, [r["label"] for r in rows], fontsize=style.FONT_SMALL)
    ax.set_xlim(0.6, 1.4)
    ax.set_xlabel("predicted / published (> 1: the model is pessimistic)")
    ax.set_title("The course's planner against published training runs", fontsize=style.FONT_TITLE)
    ax.legend(fontsize=style.FONT_SMALL, loc="lower right")
    return ax


# ---------------------------------------------------------------- tables (HTML)

def brief_table(brief, model, system_names) -> str:
    """The capstone's ``Brief`` as a table (``model``: its Transformer; ``system_names``: the offered systems)."""
    rows = [("model", f"{model.name} (catalog id '{brief.model}'), {model.params / 1e9:.1f} billion parameters, "
                      f"{model.seq_len:,}-token sequences"),
            ("data", f"{brief.tokens / 1e12:g} trillion tokens"),
            ("global batch", f"{brief.global_batch:,} sequences = {brief.tokens_per_step / 1e6:.2f} M tokens per step"),
            ("deadline", f"at most {brief.max_days:g} days of training"),
            ("budget", f"at most {brief.max_gpu_hours / 1e6:g} M GPU-hours"),
            ("GPUs", f"at most {brief.max_gpus:,}"),
            ("systems offered", ", ".join(system_names))]
    return html_table(rows, {"": lambda r: r[0], "the brief": lambda r: r[1]})


def states_table(rows) -> str:
    """``states_table`` rows: what stays on every GPU, and the fewest GPUs per memory size."""
    what = {0: "nothing divided", 1: "optimizer divided", 2: "optimizer + gradients divided",
            3: "everything divided"}
    cols = {"ZeRO stage": lambda r: f"{r['zero']} ({what[r['zero']]})",
            "GB kept whole on every GPU": lambda r: f"{r['fixed_gb']:,.0f}",
            "GB divided over the data-parallel GPUs": lambda r: f"{r['divided_gb']:,.0f}"}
    for m in rows[0]["min_gpus"]:
        cols[f"fewest {m:g} GB GPUs"] = (lambda mm: lambda r: ("impossible" if r["min_gpus"][mm] is None
                                                               else f"{r['min_gpus'][mm]:,}"))(m)
    return html_table(rows, cols)


def activation_table(rows, tps) -> str:
    """``activation_rows`` as HTML: GB per GPU for all layers, one micro-batch, one column per TP size."""
    cols = {"recomputation": lambda r: r["recompute"]}
    for t in tps:
        cols[f"TP {t}: GB"] = (lambda tt: lambda r: f"{r[tt]:.1f}")(t)
    return html_table(rows, cols)


def memory_table(rows) -> str:
    """``memory_rows`` as HTML (GB per GPU)."""
    f = lambda key: lambda r: f"{r[key]:.1f}"  # noqa: E731
    return html_table(rows, {"layout": lambda r: r["layout"], "ZeRO": lambda r: r["zero"],
                             "recompute": lambda r: r["recompute"], "weights": f("weights_gb"),
                             "gradients": f("gradients_gb"), "optimizer": f("optimizer_gb"),
                             "activations": f("activations_gb"), "total GB": f("total_gb"),
                             "usable GB": f("usable_gb"), "fits": lambda r: "yes" if r["fits"] else "NO"})


def system_table(rows) -> str:
    """``system_rows`` as HTML, per direction first."""
    return html_table(rows, {
        "system": lambda r: r["id"], "GPU": lambda r: r["gpu"], "memory GB": lambda r: f"{r['memory_gb']:g}",
        "BF16 dense TFLOP/s": lambda r: f"{r['bf16_tflops']:g}", "GPUs per NVLink/PCIe domain": lambda r: r["domain"],
        "GPU link": lambda r: (f"{r['gpu_link']}: {r['gpu_link_gb_s']:.4g} GB/s per direction "
                               f"({r['gpu_link_gb_s_bidirectional']:.4g} bidirectional)"),
        "network": lambda r: r["nic"],
        "network per GPU, GB/s per direction": lambda r: f"{r['net_gb_s_per_gpu']:.3g}",
        "GPU link / network": lambda r: f"{r['ratio']:.1f}x", "source": lambda r: r["source"]})


def comparison_table(rows, max_days, max_gpu_hours) -> str:
    """``compare_systems`` rows with the brief's limits (days, GPU-hours) ticked."""
    return html_table(rows, {
        "system": lambda r: r["system"], "GPUs": lambda r: f"{r['gpus']:,}", "best layout": lambda r: r["layout"],
        "micro-batch, recompute": lambda r: f"{r['micro_batch']}, {r['recompute']}" if r["fits"] else "-",
        "memory GB/GPU": lambda r: f"{r['memory_gb']:.0f}" if r["fits"] else "-",
        "tokens/s per GPU": lambda r: f"{r['tokens_per_s_per_gpu']:,.0f}" if r["fits"] else "-",
        "MFU": lambda r: f"{r['mfu']:.0%}" if r["fits"] else "-",
        f"days (limit {max_days:g})": lambda r: f"{r['days']:.1f} {mark(r['meets']['days'])}" if r["fits"] else "-",
        f"M GPU-hours (limit {max_gpu_hours / 1e6:g})":
            lambda r: f"{r['gpu_hours'] / 1e6:.2f} {mark(r['meets']['gpu_hours'])}" if r["fits"] else "-"})


def traffic_table(estimate, rows) -> str:
    """One Estimate's ``traffic_rows``, with its step time for scale."""
    return (f"<p>{estimate.layout}, micro-batch {estimate.micro_batch}, ZeRO-{estimate.zero}, "
            f"recompute {estimate.recompute}: step {units.format_time(estimate.step_time_s)}</p>" + html_table(rows, {
                "traffic": lambda r: r["kind"], "collective": lambda r: r["collective"], "group": lambda r: r["group"],
                "link": lambda r: r["link"] + (" (crosses nodes)" if r["crosses_nodes"] else " (inside a node)"),
                "calls per step": lambda r: r["calls"], "per call": lambda r: units.format_bytes(r["bytes_per_call"]),
                "time per step": lambda r: units.format_time(r["time_s"]),
                "exposed per step": lambda r: units.format_time(r["exposed_s"])}))


def sensitivity_table(rows) -> str:
    """``link_sensitivity`` rows as HTML."""
    return html_table(rows, {
        "case": lambda r: r["case"], "best layout": lambda r: r["layout"],
        "tokens/s per GPU": lambda r: f"{r['tokens_per_s_per_gpu']:,.0f}" if r["fits"] else "-",
        "days": lambda r: f"{r['days']:.1f}" if r["fits"] else "-",
        "M GPU-hours": lambda r: f"{r['gpu_hours'] / 1e6:.2f}" if r["fits"] else "-"})


def published_table(rows) -> str:
    """``published_comparison`` rows as HTML."""
    fmt = {"gpu_hours": lambda v: f"{v / 1e6:.2f} M GPU-hours", "days": lambda v: f"{v:.1f} days"}
    return html_table(rows, {
        "run": lambda r: r["label"], "modelled on": lambda r: f"{r['gpus']:,} x {r['system']}, {r['layout']}",
        "published": lambda r: fmt[r["quantity"]](r["published"]),
        "predicted": lambda r: fmt[r["quantity"]](r["predicted"]),
        "predicted / published": lambda r: f"{r['ratio']:.2f}", "assumed": lambda r: ", ".join(r["assumed"]),
        "source": lambda r: r["url"]})


def validation_ranges_table(rows) -> str:
    """``validation_ranges`` rows as HTML."""
    return html_table(rows, {
        "group of published cases": lambda r: r["group"], "cases": lambda r: r["cases"],
        "quantity": lambda r: r["quantity"],
        "predicted / measured": lambda r: f"{r['low']:.2f}-{r['high']:.2f}", "source": lambda r: r["source"]})
