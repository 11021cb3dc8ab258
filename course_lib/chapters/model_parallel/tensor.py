"""Chapter 07, tensor parallelism: the all-reduce bytes per layer, communication against compute, published TP scans, sequence parallelism.
"""
from __future__ import annotations

from functools import lru_cache

from ... import costmodel, datafiles, hardware, parallel, style, units, validate
from ...views import model_parallel as views


POWERS_OF_TWO = (1, 2, 4, 8, 16, 32, 64)
BREAKDOWN_COLOURS = style.STEP_COLOURS   # one palette: chapters 07 and 08 colour a step the same way
MEMORY_COLOURS = style.MEMORY_COLOURS


def _model(model_id) -> parallel.Transformer:
    return parallel.resolve_model(model_id, name="model_id")


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
