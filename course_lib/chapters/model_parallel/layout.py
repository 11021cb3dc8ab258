"""Chapter 07, the layout: Megatron's rank order, which link each group uses, one step's traffic, the TP x PP grid and its explorer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ... import hardware, parallel, units, validate
from ...views import model_parallel as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider, show_html
from .tensor import POWERS_OF_TWO, _model


GRID_GPU_COUNTS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
GRID_MODELS = ("gpt3-175b", "llama3-70b", "megatron-1008b")
GRID_SYSTEMS = ("dgx-a100", "dgx-h100", "dgx-b200")
MICRO_BATCH_COUNTS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
RECOMPUTE_CHOICES = {
    "full recomputation (Megatron 2021)": ("full", False),
    "selective + sequence parallel (Megatron 2022)": ("selective", True),
    "no recomputation": ("none", False),
}


def megatron_coordinates(rank, tp, pp, dp) -> dict:
    """Megatron-LM's rank order: TP ranks adjacent, then DP, then PP.

    rank = pp_rank x (tp x dp) + dp_rank x tp + tp_rank. Returns tp_rank, dp_rank, pp_rank.
    """
    t = validate.integer("tp", tp, low=1, high=10**6)
    p = validate.integer("pp", pp, low=1, high=10**6)
    d = validate.integer("dp", dp, low=1, high=10**6)
    r = validate.integer("rank", rank, low=0, high=t * p * d - 1)
    pp_rank, rest = divmod(r, t * d)
    dp_rank, tp_rank = divmod(rest, t)
    return {"tp_rank": tp_rank, "dp_rank": dp_rank, "pp_rank": pp_rank}


def rank_map(tp, pp, dp, gpus_per_node=8) -> list[dict]:
    """Every rank with its node, local GPU index and Megatron coordinates."""
    g = validate.integer("gpus_per_node", gpus_per_node, low=1, high=1024)
    n = validate.integer("tp", tp, low=1) * validate.integer("pp", pp, low=1) * validate.integer("dp", dp, low=1)
    if n > 100_000:
        raise ValueError(f"tp x pp x dp must be <= 100000, got {n}")
    return [{"rank": r, "node": r // g, "local": r % g, **megatron_coordinates(r, tp, pp, dp)} for r in range(n)]


def group_links(system, tp, pp, dp) -> dict:
    """For the TP, DP and PP groups of a layout: size, rank stride, link, bandwidth (bytes/s per direction), crosses_nodes.

    Strides follow Megatron's order (TP 1, DP tp, PP tp x dp); links from ``parallel.group_link``.
    """
    sys_ = hardware.resolve_system(system)
    t = validate.integer("tp", tp, low=1, high=10**6)
    p = validate.integer("pp", pp, low=1, high=10**6)
    d = validate.integer("dp", dp, low=1, high=10**6)
    out = {}
    for kind, size, stride in (("tensor parallel", t, 1), ("data parallel", d, t), ("pipeline", p, t * d)):
        link = parallel.group_link(sys_, size, stride)
        out[kind] = {"size": size, "stride": stride, "link": link.name if size > 1 else "(no group)",
                     "bandwidth": link.bandwidth, "crosses_nodes": link.crosses_nodes and size > 1}
    return out


def draw_rank_map(tp=4, pp=2, dp=4, system="dgx-a100", ax=None):
    """Draw the GPUs of a small 3D layout node by node: colour = pipeline stage, label = TP and DP rank."""
    import matplotlib.pyplot as plt
    sys_ = hardware.resolve_system(system)
    g = sys_.gpus_per_node
    ranks = rank_map(tp, pp, dp, g)
    nodes = -(-len(ranks) // g)
    if nodes > 8 or g > 16:
        raise ValueError(f"tp x pp x dp must fit on at most 8 nodes of at most 16 GPUs to draw, got {nodes} nodes of {g}")
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(7.5, 0.9 * nodes + 2.4))  # notebook width: drawn at full size
    views.draw_rank_map(ax, ranks, group_links(sys_, tp, pp, dp), tp, pp, dp, g, sys_.name)
    if own:
        ax.figure.tight_layout()
    return ax


def traffic_rows(est) -> list[dict]:
    """The traffic of an ``Estimate`` per kind, with the bytes each GPU sends per step.

    A ring all-reduce of n bytes sends 2(k-1)/k n per GPU; a reduce-scatter or all-gather (k-1)/k n;
    a pipeline send n. Keys: kind, collective, group, link, crosses_nodes, calls, bytes_per_call,
    sent_per_gpu (bytes per step), time_s, exposed_s.
    """
    if not isinstance(est, parallel.Estimate):
        raise ValueError(f"est must be a parallel.Estimate, got {type(est).__name__}")
    return [tr.as_row() for tr in est.traffic]


def sent_by_link(est) -> dict:
    """Bytes each GPU sends per step inside its node and across nodes (from ``traffic_rows``)."""
    rows = traffic_rows(est)
    inside = sum(r["sent_per_gpu"] for r in rows if not r["crosses_nodes"])
    across = sum(r["sent_per_gpu"] for r in rows if r["crosses_nodes"])
    return {"inside": inside, "across": across, "total": inside + across}


def show_traffic(est):
    """Table of one step's traffic per GPU: what, how often, how big, over which link, how long."""
    show_html(views.traffic_table(traffic_rows(est)))


def show_plan(plan_, top=6):
    """Table of the planner's best layouts."""
    if not isinstance(plan_, parallel.Plan):
        raise ValueError(f"plan_ must be a parallel.Plan, got {type(plan_).__name__}")
    show_html(views.plan_table(plan_.table(top)))


def layout_grid(model_id="gpt3-175b", system="dgx-a100", gpus=1024, micro_batches=192, recompute="full",
                sequence_parallel=False, tps=POWERS_OF_TWO, pps=POWERS_OF_TWO) -> dict:
    """Estimate every TP x PP layout of ``gpus`` GPUs, DP taking the rest, m micro-batches of 1 per pipeline.

    Returns ``{"tps", "pps", "cells": {(tp, pp): Estimate}, "invalid": {(tp, pp): reason}}``; the global
    batch of a cell is micro_batches x DP, so every pipeline sees the same m and the bubble is (p-1)/m.
    """
    m = _model(model_id)
    sys_ = hardware.resolve_system(system)
    n = validate.integer("gpus", gpus, low=1, high=10**6)
    mb = validate.integer("micro_batches", micro_batches, low=1, high=10**5)
    if not isinstance(sequence_parallel, bool):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    for name, seq in (("tps", tps), ("pps", pps)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise ValueError(f"{name} must be a non-empty list of integers, got {seq!r}")
    tps = [validate.integer("tps", t, low=1, high=10**4) for t in tps]
    pps = [validate.integer("pps", p, low=1, high=10**4) for p in pps]
    cells, invalid = {}, {}
    for t in tps:
        for p in pps:
            reason = _invalid(m, n, t, p)
            if reason:
                invalid[(t, p)] = reason
                continue
            d = n // (t * p)
            cells[(t, p)] = parallel.estimate(m, sys_, gpus=n, tp=t, pp=p, global_batch=mb * d, micro_batch=1,
                                              recompute=recompute, sequence_parallel=sequence_parallel and t > 1)
    return {"tps": tps, "pps": pps, "cells": cells, "invalid": invalid}


def _invalid(m, n, t, p) -> str:
    if m.heads % t:
        return f"TP {t} does not divide the {m.heads} heads"
    if m.layers % p:
        return f"PP {p} does not divide the {m.layers} layers"
    if n % (t * p):
        return f"TP x PP = {t * p} does not divide {n} GPUs"
    return ""


def best_fitting(grid) -> parallel.Estimate | None:
    """The fitting layout of a ``layout_grid`` with the highest MFU (None if nothing fits)."""
    if not isinstance(grid, dict) or "cells" not in grid:
        raise ValueError("grid must be the dict returned by layout_grid")
    fitting = [e for e in grid["cells"].values() if e.fits]
    return max(fitting, key=lambda e: e.mfu) if fitting else None


@lru_cache(maxsize=32)  # one grid per cluster and batch: moving TP or PP only picks another cell
def _grid_for(model_id, system, gpus, nic_gbit_s, nvlink_gb_s, micro_batches, recompute_mode):
    rc, sp = RECOMPUTE_CHOICES[recompute_mode]
    m = _model(model_id)
    sys_ = hardware.resolve_system(system).variant(nic_gbit_s=nic_gbit_s, gpu_link_gb_s=nvlink_gb_s)
    tps = [t for t in POWERS_OF_TWO if m.heads % t == 0]
    pps = [p for p in POWERS_OF_TWO if m.layers % p == 0]
    return layout_grid(m, sys_, gpus, micro_batches, rc, sp, tps, pps)


@dataclass(frozen=True)
class LayoutChoice:
    """What the layout explorer shows: the grid of a cluster, its best fitting layout and the selected one
    (``selected`` None where TP x PP is impossible)."""

    grid: dict = field(repr=False)
    best: parallel.Estimate | None
    selected: parallel.Estimate | None
    tp: int
    pp: int


@lru_cache(maxsize=64)  # the plot and the readout of one slider event share one result
def layout_choice(model_id, system, gpus, nic_gbit_s, nvlink_gb_s, tp, pp, micro_batches,
                  recompute_mode) -> LayoutChoice:
    """The layout explorer's model: ``layout_grid`` of the cluster (links as given), its best, the (tp, pp) cell."""
    grid = _grid_for(model_id, system, gpus, nic_gbit_s, nvlink_gb_s, micro_batches, recompute_mode)
    return LayoutChoice(grid, best_fitting(grid), grid["cells"].get((tp, pp)), tp, pp)


def _grid_draw(axes, **values):
    view = views.LayoutView(*axes)

    def update(**values):
        view.update(layout_choice(**values))
    update(**values)
    return update


def _grid_readout(model_id, system, gpus, nic_gbit_s, nvlink_gb_s, tp, pp, micro_batches, recompute_mode):
    choice = layout_choice(model_id, system, gpus, nic_gbit_s, nvlink_gb_s, tp, pp, micro_batches, recompute_mode)
    grid, e, best = choice.grid, choice.selected, choice.best
    links = (f"NIC {nic_gbit_s:.3g} Gb/s = {nic_gbit_s / 8:.3g} GB/s per direction (one per GPU), "
             f"NVLink {nvlink_gb_s:.3g} GB/s per direction per GPU")
    if e is None:
        reason = grid["invalid"].get((tp, pp)) or _invalid(_model(model_id), gpus, tp, pp) or "not in the grid"
        text = f"TP{tp} x PP{pp} on {gpus} GPUs is impossible: {reason}."
    else:
        bd = e.breakdown()
        parts = ", ".join(f"{k} {100 * v / e.step_time_s:.1f}%" for k, v in bd.items() if v > 0)
        text = (f"<b>{e.layout}</b>, global batch {e.global_batch} = {e.micro_batches} micro-batches x DP {e.dp}: "
                f"step <b>{units.format_time(e.step_time_s)}</b> ({parts}); bubble (p-1)/m = {e.bubble_fraction:.3f}; "
                f"memory {e.memory['total'] / units.GB:.1f} of {e.memory['usable'] / units.GB:.0f} GB usable: "
                f"<b>{'fits' if e.fits else 'does not fit'}</b>; {e.tflops_per_gpu:.0f} TFLOP/s per GPU, "
                f"MFU {e.mfu:.1%}.")
    if best is not None:
        text += f" Best fitting layout in the grid: {best.layout} (MFU {best.mfu:.1%})."
    else:
        text += " No layout of the grid fits in memory."
    return f"{text} Links: {links}."


def _catalog_links(system_id) -> dict:
    """A catalog system's NIC (Gb/s) and NVLink (GB/s) rates per direction: the link sliders follow the system."""
    s = hardware.system(system_id)
    return {"nic_gbit_s": units.gbit_per_s(s.nic.per_direction),
            "nvlink_gb_s": s.gpu_link.per_direction / units.GB}


def layout_explorer(model_id="gpt3-175b", system="dgx-a100", gpus=1024, tp=8, pp=16, micro_batches=192,
                    recompute_mode="full recomputation (Megatron 2021)"):
    """Sliders: GPUs, NIC Gb/s, NVLink GB/s, TP, PP, micro-batches; dropdowns: model, system, recomputation.

    Top: every TP x PP layout of the cluster (MFU, memory, fit); below it, side by side, the selected
    layout's step time split and memory per GPU, all from ``parallel.estimate``. Changing the system
    resets the link sliders to the catalog's values.

    Shows: for a fixed cluster the TP x PP split trades communication against memory: tensor
    parallelism beyond the NVLink domain slows the step, and too little pipeline parallelism does
    not fit in memory.
    """
    import ipywidgets as w
    model_id = validate.choice("model_id", model_id, GRID_MODELS)
    system = validate.choice("system", system, hardware.system_ids())  # the catalog is the one list
    if gpus not in GRID_GPU_COUNTS:
        raise ValueError(f"gpus must be one of {GRID_GPU_COUNTS}, got {gpus!r}")
    for name, value in (("tp", tp), ("pp", pp)):
        if value not in POWERS_OF_TWO:
            raise ValueError(f"{name} must be one of {POWERS_OF_TWO}, got {value!r}")
    if micro_batches not in MICRO_BATCH_COUNTS:
        raise ValueError(f"micro_batches must be one of {MICRO_BATCH_COUNTS}, got {micro_batches!r}")
    recompute_mode = validate.choice("recompute_mode", recompute_mode, RECOMPUTE_CHOICES)
    links = _catalog_links(system)
    controls = {
        "model_id": w.Dropdown(options=[(parallel.model(i).name, i) for i in GRID_MODELS], value=model_id,
                               description="model"),
        "system": w.Dropdown(options=[(hardware.system(i).name, i) for i in dict.fromkeys((*GRID_SYSTEMS, system))], value=system,
                             description="system"),
        "gpus": gpu_count_slider(gpus, options=GRID_GPU_COUNTS),
        "nic_gbit_s": link_speed_slider(links["nic_gbit_s"], low=10, high=1600,
                                        description="NIC Gb/s per direction (one per GPU)"),
        "nvlink_gb_s": link_speed_slider(links["nvlink_gb_s"], low=10, high=2000,
                                         description="NVLink GB/s per direction per GPU"),
        "tp": w.SelectionSlider(options=POWERS_OF_TWO, value=tp, description="TP"),
        "pp": w.SelectionSlider(options=POWERS_OF_TWO, value=pp, description="PP"),
        "micro_batches": w.SelectionSlider(options=MICRO_BATCH_COUNTS, value=micro_batches,
                                           description="micro-batches m per pipeline"),
        "recompute_mode": w.Dropdown(options=list(RECOMPUTE_CHOICES), value=recompute_mode,
                                     description="activations"),
    }

    return explorer(_grid_draw, controls, readout=_grid_readout, title="TP x PP x DP for one cluster",
                    figsize=(7.5, 5.2), axes=views.layout_axes, follow={"system": _catalog_links})
