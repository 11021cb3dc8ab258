"""Chapter 07's check of the compute price on a real GPU: one layer's efficiency against the assumed one."""
from __future__ import annotations

from .. import style


def plot_layer_efficiency(rows, ax=None):
    """Measured fraction of peak per model (by hidden size) beside the planner's assumed ``gpu_efficiency``.

    ``rows``: ``parallel.layer_efficiency_measured()``. Returns the axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.4))
    hidden = [r["hidden"] for r in rows]
    mid = [(r["fraction_low"] + r["fraction_high"]) / 2 for r in rows]
    ax.errorbar(hidden, mid, yerr=[[m - r["fraction_low"] for m, r in zip(mid, rows)],
                                   [r["fraction_high"] - m for m, r in zip(mid, rows)]],
                fmt="o", color=style.MEASURED, capsize=3,
                label=f"one layer, forward + backward, on one {rows[0]['gpu'].upper()} (two runs)")
    for r, m in zip(rows, mid):
        ax.annotate(r["model"], (r["hidden"], m), textcoords="offset points", xytext=(4, -10),
                    fontsize=style.FONT_SMALL)
    ax.axhline(rows[0]["assumed"], color=style.MODEL, label=f"planner's gpu_efficiency ({rows[0]['assumed']:.2f})")
    ax.axhline(rows[0]["matmul_fraction"], color=style.GUIDE, linestyle="--",
               label=f"a plain 8192^3 bf16 matrix product ({rows[0]['matmul_fraction']:.0%})")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1)
    style.decorate(ax, title="Compute efficiency grows with the matrices; the planner uses one number",
                   xlabel="hidden size", ylabel="fraction of dense bf16 peak", legend="lower right")
    return ax
