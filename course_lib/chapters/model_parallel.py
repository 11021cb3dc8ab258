"""Chapter 07: tensor and pipeline parallelism, which link each one rides, and the TP x PP x DP grid.

Every number of step time, memory and traffic comes from :func:`course_lib.parallel.estimate`
(the course's model of 3D parallelism); this module arranges it for the chapter:

* tensor parallelism: bytes of one all-reduce, a back-of-envelope communication / compute ratio,
  and a scan over the TP degree that crosses the NVLink domain;
* pipeline parallelism: GPipe, 1F1B and interleaved 1F1B schedules simulated by
  :mod:`course_lib.pipeline_schedules` (the bubble measured against ``(p-1)/(v m)``), the time of a stage;
* 3D parallelism: Megatron-LM's rank order, which link each group uses, the traffic of a step;
* the explorers (a TP x PP grid for a cluster, and pipeline schedules) and the comparison with
  published results from ``parallel.validation_table``.

Units: bytes, seconds, FLOP/s; bandwidths in bytes/s **per direction**.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from .. import costmodel, datafiles, hardware, parallel, style, units, validate
from ..pipeline_schedules import SCHEDULES, Op, Schedule, pipeline_schedule, stage_timing  # noqa: F401
from ..views import model_parallel as views
from ..widgets import explorer, gpu_count_slider, link_speed_slider, show_html

POWERS_OF_TWO = (1, 2, 4, 8, 16, 32, 64)
GRID_GPU_COUNTS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
GRID_MODELS = ("gpt3-175b", "llama3-70b", "megatron-1008b")
GRID_SYSTEMS = ("dgx-a100", "dgx-h100", "dgx-b200")
MICRO_BATCH_COUNTS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
RECOMPUTE_CHOICES = {
    "full recomputation (Megatron 2021)": ("full", False),
    "selective + sequence parallel (Megatron 2022)": ("selective", True),
    "no recomputation": ("none", False),
}
BREAKDOWN_COLOURS = style.STEP_COLOURS   # one palette: chapters 07 and 08 colour a step the same way
MEMORY_COLOURS = style.MEMORY_COLOURS


def _model(model_id) -> parallel.Transformer:
    return parallel.resolve_model(model_id, name="model_id")


# ---------------------------------------------------------------- published statements

@lru_cache(maxsize=1)
def published_claims() -> dict:
    """The parsed ``data/published_model_parallel.json``: sources and the statements the chapter quotes."""
    return datafiles.load("published_model_parallel.json")


def claim(claim_id) -> dict:
    """One published statement by id, with ``value``, ``unit``, ``claim``, ``where``, ``title`` and ``url``."""
    claims = {c["id"]: c for c in published_claims()["claims"]}
    row = dict(claims[validate.choice("claim_id", claim_id, claims)])
    row.update(datafiles.source(row["source"]))
    return row


# ---------------------------------------------------------------- tensor parallelism

def tp_allreduce_bytes(model_id="gpt3-175b", micro_batch=1, bytes_per_value=2) -> float:
    """Bytes of one tensor-parallel all-reduce: a layer block's output, micro_batch x seq_len x hidden values.

    Every rank of the TP group holds a full-size partial sum, so the buffer does not shrink with the TP degree.
    """
    m = _model(model_id)
    b = validate.integer("micro_batch", micro_batch, low=1, high=10**6)
    nbytes = validate.number("bytes_per_value", bytes_per_value, low=0.5, high=8)
    return float(b * m.seq_len * m.hidden * nbytes)


def tp_comm_to_compute(model_id, tp, link_bytes_per_s, flops_per_s) -> float:
    """Tensor-parallel communication time / compute time for one layer, forward + backward.

    Four ring all-reduces of ``tp_allreduce_bytes`` per layer and micro-batch (2 forward, 2 backward),
    each ``2 (t-1)/t x bytes / link_bytes_per_s`` (bandwidth term only), against the layer's share of
    ``parallel.training_flops`` split over ``t`` GPUs running at ``flops_per_s`` (achieved FLOP/s).
    For GPT shapes this is ``4 (t-1) F / (3 B (6h + s))``: it grows with t and with F/B, and does
    not depend on the batch.
    """
    m = _model(model_id)
    t = validate.integer("tp", tp, low=1, high=m.heads)
    bw = validate.positive("link_bytes_per_s", link_bytes_per_s)
    flops = validate.positive("flops_per_s", flops_per_s)
    comm = 4 * 2 * (t - 1) / t * tp_allreduce_bytes(m) / bw
    compute = parallel.training_flops(m, 1, "none") / m.layers / (t * flops)
    return comm / compute


def tp_link_comparison(model_id="gpt3-175b", system="dgx-a100", tp=8) -> dict:
    """``tp_comm_to_compute`` for one TP degree on NVLink and on the GPU's share of the node's NICs.

    Bandwidths are achievable bytes/s per direction (spec x the measured efficiency of costmodel);
    flops is the achieved FLOP/s per GPU (dense BF16 peak x the gpu_efficiency assumption).
    """
    m = _model(model_id)
    sys_ = hardware.resolve_system(system)
    t = validate.integer("tp", tp, low=2, high=m.heads)
    flops = sys_.gpu.bf16_flops * parallel.assumption("gpu_efficiency")
    nvl = parallel.group_link(sys_, 2, 1).bandwidth
    nic = costmodel.fabric(sys_).net_bw_per_gpu
    return {"system": sys_.id, "tp": t, "flops": flops, "nvlink_bw": nvl, "nic_bw": nic,
            "ratio_nvlink": tp_comm_to_compute(m, t, nvl, flops), "ratio_nic": tp_comm_to_compute(m, t, nic, flops)}


def tp_scan(model_id="gpt3-175b", system="dgx-a100", pp=16, dp=8, micro_batches=192, tps=(1, 2, 4, 8, 16, 32),
            recompute="full") -> list[dict]:
    """Throughput as the TP degree grows, with PP, DP and micro-batches fixed (so GPUs = tp x pp x dp).

    Each row: tp, gpus, crosses_nodes (the TP group leaves the node), fits (memory), tflops_per_gpu,
    mfu, tp_share (exposed TP time / step time), step_time_s, memory_gb. From ``parallel.estimate``.
    """
    m = _model(model_id)
    sys_ = hardware.resolve_system(system)
    p = validate.integer("pp", pp, low=1, high=m.layers)
    d = validate.integer("dp", dp, low=1, high=10**6)
    mb = validate.integer("micro_batches", micro_batches, low=1, high=10**6)
    if not isinstance(tps, (list, tuple)) or not tps:
        raise ValueError(f"tps must be a non-empty list of TP degrees, got {tps!r}")
    rows = []
    for t in tps:
        t = validate.integer("tps", t, low=1, high=m.heads)
        e = parallel.estimate(m, sys_, gpus=t * p * d, tp=t, pp=p, global_batch=mb * d, micro_batch=1,
                              recompute=recompute)
        rows.append({"tp": t, "gpus": e.gpus, "crosses_nodes": t > sys_.gpus_per_node, "fits": e.fits,
                     "tflops_per_gpu": e.tflops_per_gpu, "mfu": e.mfu, "tp_share": e.tp_exposed_s / e.step_time_s,
                     "step_time_s": e.step_time_s, "memory_gb": e.memory["total"] / units.GB})
    return rows


def tp_crossing_series(model_id="gpt3-175b", systems=("dgx-a100", "dgx-h100"), pp=16, dp=8, micro_batches=192):
    """Per system, the series ``plot_tp_crossing`` draws: TP comm/compute inside the node (NVLink) and beyond
    it (all NICs carry the ring; one NIC share per GPU), and ``tp_scan``'s TFLOP/s per GPU."""
    m = _model(model_id)
    if not isinstance(systems, (list, tuple)) or not systems:
        raise ValueError("systems must be a non-empty list of system ids")
    eff = parallel.assumption("gpu_efficiency")
    out = {}
    for sid in systems:
        sys_ = hardware.resolve_system(sid)
        g, flops = sys_.gpus_per_node, sys_.gpu.bf16_flops * eff
        nvl = parallel.group_link(sys_, 2, 1).bandwidth
        inside = [t for t in (2, 4, 8, 16, 32, 64) if t <= g and m.heads % t == 0]
        outside = [g] + [t for t in (16, 32, 64) if t > g and m.heads % t == 0]
        all_nics = [parallel.group_link(sys_, t, 1).bandwidth if t > g else nvl for t in outside]
        own = costmodel.fabric(sys_).net_bw_per_gpu
        out[sys_.id] = {
            "name": sys_.name.split("(")[0].strip(), "gpus_per_node": g, "inside": inside, "outside": outside,
            "nvlink": [tp_comm_to_compute(m, t, nvl, flops) for t in inside],
            "all_nics": [tp_comm_to_compute(m, t, bw, flops) for t, bw in zip(outside, all_nics)],
            "own_share": [tp_comm_to_compute(m, t, nvl if t <= g else own, flops) for t in outside],
            "scan": tp_scan(m, sys_, pp, dp, micro_batches, tps=[t for t in (1, 2, 4, 8, 16, 32, 64) if m.heads % t == 0])}
    return out


def plot_tp_crossing(model_id="gpt3-175b", systems=("dgx-a100", "dgx-h100"), pp=16, dp=8, micro_batches=192):
    """Two panels: the comm/compute ratio of TP against its degree, and TFLOP/s per GPU from parallel.estimate.

    Top, per system: inside the node the ratio uses NVLink (achievable bandwidth); beyond the node two
    bounds: every NIC of the node carrying the TP ring (what ``parallel`` assumes) and only the GPU's
    own share of the NICs. Bottom: ``tp_scan`` with PP, DP and micro-batches fixed.
    """
    import matplotlib.pyplot as plt
    series = tp_crossing_series(model_id, systems, pp, dp, micro_batches)
    fig, (left, right) = plt.subplots(2, 1, figsize=(7.5, 8.4))  # one above the other, at notebook width
    views.draw_tp_crossing(left, right, series, _model(model_id).name,
                           f"TP x PP{pp} x DP{dp}, {micro_batches} micro-batches (GPUs = {pp * dp} x TP)")
    fig.tight_layout()
    return fig


def sequence_parallel_comparison(model_id="gpt3-175b", system="dgx-a100", tp=8, micro_batch=1,
                                 recompute="selective") -> dict:
    """All-reduce vs reduce-scatter + all-gather for one TP collective, and activation memory per layer.

    Returns bytes (the buffer), all_reduce_s and rs_ag_s (ring times on the TP group's link, from
    costmodel.collective_time), and activation bytes per layer without and with sequence parallelism
    (parallel.activation_bytes_per_layer).
    """
    m = _model(model_id)
    sys_ = hardware.resolve_system(system)
    t = validate.integer("tp", tp, low=2, high=m.heads)
    n = tp_allreduce_bytes(m, micro_batch)
    link = parallel.group_link(sys_, t, 1)
    ar = costmodel.collective_time("all_reduce", n, t, link.bandwidth, link.latency, "ring")
    rs = costmodel.collective_time("reduce_scatter", n, t, link.bandwidth, link.latency, "ring")
    ag = costmodel.collective_time("all_gather", n, t, link.bandwidth, link.latency, "ring")
    return {"bytes": n, "link": link.name, "all_reduce_s": float(ar), "rs_ag_s": float(rs + ag),
            "activations_without_sp": parallel.activation_bytes_per_layer(m, micro_batch, t, recompute, False),
            "activations_with_sp": parallel.activation_bytes_per_layer(m, micro_batch, t, recompute, True)}


# ---------------------------------------------------------------- pipeline schedules
# The simulator and stage_timing live in course_lib.pipeline_schedules (a model module), re-exported here.

def draw_schedule(sched, ax=None, time_unit=1.0, unit_label="time units"):
    """Draw a schedule as a timeline: one row per device, forward passes blue, backward orange, idle white."""
    import matplotlib.pyplot as plt
    if not isinstance(sched, Schedule):
        raise ValueError(f"sched must be a Schedule from pipeline_schedule, got {type(sched).__name__}")
    scale = validate.positive("time_unit", time_unit)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.45 * sched.stages + 1.8))  # notebook width: drawn at full size
    return views.draw_schedule(ax, sched, scale, unit_label)


def compare_schedules(stages=4, micro_batches=8, interleave=2):
    """GPipe, 1F1B and interleaved 1F1B for the same p and m, one above the other, on one time axis."""
    import matplotlib.pyplot as plt
    p = validate.integer("stages", stages, low=2, high=16)
    m = validate.integer("micro_batches", micro_batches, low=1, high=64)
    v = validate.integer("interleave", interleave, low=2, high=8)
    scheds = [pipeline_schedule(p, m, "gpipe"), pipeline_schedule(p, m, "1f1b"),
              pipeline_schedule(p, m, "1f1b", interleave=v)]
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 1.8 + 1.45 * p), sharex=True)  # notebook width: full size
    views.draw_schedules(axes, scheds, "time (one forward pass of a stage = 1, backward = 2)")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- ranks and links

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


# ---------------------------------------------------------------- traffic of one step

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


# ---------------------------------------------------------------- the TP x PP grid

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
    return {"nic_gbit_s": units.bytes_to_bits(s.nic.per_direction) / 1e9,
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
    system = validate.choice("system", system, GRID_SYSTEMS)
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
        "system": w.Dropdown(options=[(hardware.system(i).name, i) for i in GRID_SYSTEMS], value=system,
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


# ---------------------------------------------------------------- the schedule explorer

@dataclass(frozen=True)
class ScheduleChoice:
    """What the schedule explorer shows: GPT-3 175B stage times (``stage_timing``), one send's seconds and
    the simulated schedule (None where interleaving is impossible: GPipe, or m not a multiple of p)."""

    timing: dict
    send_s: float
    schedule: Schedule | None


@lru_cache(maxsize=64)  # the plot and the readout of one slider event share one simulation
def schedule_choice(stages, micro_batches, interleave, schedule, link_gb_s, model_id="gpt3-175b",
                    system="dgx-a100") -> ScheduleChoice:
    """The schedule explorer's model: stage timing, send time over ``link_gb_s`` and the simulated schedule."""
    timing = stage_timing(model_id, system, stages)
    send = timing["send_bytes"] / (validate.positive("link_gb_s", link_gb_s) * units.GB)
    if interleave > 1 and (schedule == "gpipe" or micro_batches % stages):
        return ScheduleChoice(timing, send, None)
    return ScheduleChoice(timing, send, pipeline_schedule(stages, micro_batches, schedule, interleave,
                                                          timing["forward_s"], timing["backward_s"], send))


def _schedule_draw(ax, **values):
    view = views.ScheduleView(ax, 1e-3, "milliseconds")

    def update(**values):
        view.update(schedule_choice(**values).schedule, "interleaving needs the 1F1B schedule and m a multiple of p")
    update(**values)
    return update


def _schedule_readout(stages, micro_batches, interleave, schedule, link_gb_s):
    c = schedule_choice(stages, micro_batches, interleave, schedule, link_gb_s)
    s, timing = c.schedule, c.timing
    if s is None:
        return "Interleaving needs the 1F1B schedule and a number of micro-batches that is a multiple of the stages."
    return (f"{s.name}, {stages} stages x TP 8 = {timing['gpus']} GPUs, m = {micro_batches}: step "
            f"<b>{units.format_time(s.makespan)}</b> vs {units.format_time(s.ideal)} without a bubble; bubble "
            f"<b>{s.bubble_fraction:.3f}</b> (formula (p-1)/(v m) = {s.formula:.3f}); {s.sends} sends of "
            f"{units.format_bytes(timing['send_bytes'])} at {link_gb_s:.3g} GB/s per direction = "
            f"{units.format_time(c.send_s)} each; GPU 0 holds {s.peak_in_flight[0]:.3g} micro-batches of activations.")


def schedule_explorer(stages=4, micro_batches=8, interleave=1, schedule="1f1b", link_gb_s=25.0):
    """Sliders: pipeline stages (GPUs along the pipeline), micro-batches, interleaving, schedule, link GB/s.

    Times are GPT-3 175B with TP 8 on DGX A100 stages (parallel.estimate); a send carries one
    micro-batch's activations (or gradients) between stages over a link of ``link_gb_s``.

    Shows: the pipeline bubble is about (p-1)/(v m): more micro-batches or interleaving shrink it
    and more stages grow it.
    """
    import ipywidgets as w
    stages = validate.integer("stages", stages, low=2, high=32)
    if stages not in (2, 4, 8, 16, 32):
        raise ValueError(f"stages must be one of (2, 4, 8, 16, 32), got {stages}")
    micro_batches = validate.integer("micro_batches", micro_batches, low=1, high=64)
    if interleave not in (1, 2, 3, 4):
        raise ValueError(f"interleave must be one of (1, 2, 3, 4), got {interleave!r}")
    schedule = validate.choice("schedule", schedule, SCHEDULES)
    validate.number("link_gb_s", link_gb_s, low=0.1, high=1000)
    controls = {
        "stages": gpu_count_slider(stages, options=(2, 4, 8, 16, 32), description="pipeline stages p (nodes of 8 GPUs)"),
        "micro_batches": w.IntSlider(value=micro_batches, min=1, max=64, description="micro-batches m"),
        "interleave": w.Dropdown(options=[("none", 1), ("2 chunks per GPU", 2), ("3 chunks per GPU", 3),
                                          ("4 chunks per GPU", 4)], value=interleave,
                                 description="interleaving v"),
        "schedule": w.Dropdown(options=[("GPipe", "gpipe"), ("1F1B", "1f1b")], value=schedule,
                               description="schedule"),
        "link_gb_s": link_speed_slider(link_gb_s, low=0.1, high=1000,
                                       description="stage-to-stage link GB/s per direction"),
    }
    return explorer(_schedule_draw, controls, readout=_schedule_readout, title="Pipeline schedules",
                    figsize=(11, 4.0))


# ---------------------------------------------------------------- validation

def validation_rows(include_zero3=False) -> list[dict]:
    """The throughput rows of ``parallel.validation_table`` (ZeRO-3 rows left out unless asked; chapter 06 has them)."""
    if not isinstance(include_zero3, bool):
        raise ValueError(f"include_zero3 must be True or False, got {include_zero3!r}")
    return [r for r in parallel.validation_table() if r["kind"] == "throughput"
            and (include_zero3 or "ZeRO-3" not in r["config"])]


def show_validation(rows=None):
    """Table: predicted vs measured TFLOP/s per GPU, with the source of each measurement."""
    show_html(views.validation_table(validation_rows() if rows is None else rows))


def plot_validation(rows=None, ax=None):
    """Predicted vs measured TFLOP/s per GPU for the published Megatron-LM runs."""
    import matplotlib.pyplot as plt
    rows = validation_rows() if rows is None else rows
    if not rows:
        raise ValueError("rows must not be empty")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    return views.draw_validation(ax, rows)


def efficiency_to_match(case_id="mlm21-gpt3-1024") -> float:
    """The gpu_efficiency at which the model reproduces one published throughput exactly (bisection)."""
    ids = [r["id"] for r in validation_rows(include_zero3=True)]
    case_id = validate.choice("case_id", case_id, ids)

    def ratio(eff):
        return next(r["ratio"] for r in parallel.validation_table(gpu_efficiency=eff) if r["id"] == case_id)

    lo, hi = 0.05, 1.0
    if ratio(hi) < 1:
        return 1.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(mid) < 1 else (lo, mid)
    return 0.5 * (lo + hi)

