"""Chapter 06: data parallelism. What DDP sends and when, overlap, scaling, ZeRO 1/2/3.

Units: bytes, seconds, bandwidth in bytes/s **per direction** (sliders in GB/s per
direction). Memory, traffic and step time come from :mod:`course_lib.parallel`
(``estimate``, ``model_state_bytes``, ``group_link``) and collective times from
:mod:`course_lib.costmodel`; this module arranges them for the chapter: a bucket-by-bucket
overlap timeline, per-stage ZeRO traffic, weak and strong scaling curves, the DP ring
drawn on a rail-optimised fat tree, the comparison with published results, and the
explorer.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from html import escape

import numpy as np

from .. import costmodel, datafiles, hardware, parallel, topology, units, validate
from ..views import data_parallel as views
from ..widgets import explorer, gpu_count_slider, html_table, link_speed_slider, show_html

DDP_BUCKET_BYTES = parallel.DDP_BUCKET_BYTES  # the one sourced constant: 25 MiB (bucket_cap_mb=25)
bucket_count = parallel.bucket_count
SCALING_GPUS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
BASE_SYSTEM = "dgx-h100"
RECOMPUTE = "selective"
ZERO_PARTS = ("weights", "gradients", "optimizer")
_ZERO_OPS = {  # per step: (what, collective, times); sizes are the 2-byte model (weights or gradients)
    0: (("gradients", "all_reduce", 1),),
    1: (("gradients", "reduce_scatter", 1), ("updated weights", "all_gather", 1)),
    2: (("gradients", "reduce_scatter", 1), ("updated weights", "all_gather", 1)),
    3: (("weights for the forward pass", "all_gather", 1), ("weights for the backward pass", "all_gather", 1),
        ("gradients", "reduce_scatter", 1)),
}


# ---------------------------------------------------------------- what DDP sends

def bytes_sent_per_gpu(collective, nbytes, gpus) -> float:
    """Bytes one GPU sends in a ring ``collective`` on ``gpus`` ranks (costmodel's size convention).

    It is the ring's time at 1 byte/s with no latency: all_reduce 2(p-1)/p n,
    reduce_scatter and all_gather (p-1)/p n (n the whole buffer).
    """
    collective = validate.choice("collective", collective, ("all_reduce", "reduce_scatter", "all_gather"))
    nbytes = validate.non_negative("nbytes", nbytes)
    gpus = validate.integer("gpus", gpus, low=1, high=10_000_000)
    return float(costmodel.collective_time(collective, nbytes, gpus, 1.0, 0.0, "ring"))


def ddp_traffic(params, gpus, bytes_per_value=2, bucket_bytes=DDP_BUCKET_BYTES) -> dict:
    """One DDP step: gradient bytes (one value per parameter), buckets, and bytes each GPU sends
    in a ring all-reduce (2(p-1)/p of the gradients). params > 0; gpus >= 1; bytes_per_value in
    [0.5, 8] (2 for BF16/FP16, 4 for FP32); bucket_bytes > 0."""
    params = validate.positive("params", params)
    gpus = validate.integer("gpus", gpus, low=1, high=10_000_000)
    bpv = validate.number("bytes_per_value", bytes_per_value, low=0.5, high=8)
    grad = params * bpv
    return {"params": params, "gpus": gpus, "gradient_bytes": grad,
            "buckets": bucket_count(grad, bucket_bytes), "bucket_bytes": validate.positive("bucket_bytes", bucket_bytes),
            "bytes_sent_per_gpu": bytes_sent_per_gpu("all_reduce", grad, gpus)}


# ---------------------------------------------------------------- overlap

def overlap_schedule(backward_s, comm_s, buckets, forward_s=0.0, overlap=True) -> dict:
    """Bucket-by-bucket timeline of one step.

    The backward pass (``backward_s`` s) fills ``buckets`` equal buckets one after another;
    bucket i's all-reduce (``comm_s / buckets`` s each) starts when its gradients are ready and
    the previous all-reduce is done (one communication stream). Without overlap every
    all-reduce waits for the end of the backward pass. Returns the compute and communication
    segments (start, end) in s, the step time and the exposed communication: how long the
    step goes on after the backward pass ends. With equal buckets of c s filled every b s:
    exposed = c + (buckets - 1) x max(0, c - b).
    """
    bwd = validate.positive("backward_s", backward_s)
    comm = validate.non_negative("comm_s", comm_s)
    n = validate.integer("buckets", buckets, low=1, high=100_000)
    fwd = validate.non_negative("forward_s", forward_s)
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True or False, got {overlap!r}")
    b, c = bwd / n, comm / n
    compute = [("forward", 0.0, fwd)] if fwd > 0 else []
    compute += [(f"backward {i + 1}", fwd + i * b, fwd + (i + 1) * b) for i in range(n)]
    end_bwd = fwd + bwd
    segments, free = [], 0.0
    for i in range(n):
        ready = fwd + (i + 1) * b if overlap else end_bwd
        start = max(ready, free)
        free = start + c
        segments.append((f"bucket {i + 1}", start, free))
    end = max(end_bwd, free)
    return {"compute": compute, "comm": segments, "backward_end_s": end_bwd, "step_s": end,
            "exposed_s": end - end_bwd, "hidden_s": comm - (end - end_bwd), "comm_s": comm,
            "buckets": n, "overlap": overlap}


def exposed_time(backward_s, comm_s, buckets) -> float:
    """Exposed communication (s) of :func:`overlap_schedule` with overlap: c + (n-1) max(0, c - b)."""
    return overlap_schedule(backward_s, comm_s, buckets)["exposed_s"]


def scaling_efficiency(compute_s, exposed_s) -> float:
    """Weak-scaling efficiency when each GPU keeps its work: compute / (compute + exposed), in (0, 1]."""
    compute = validate.positive("compute_s", compute_s)
    exposed = validate.non_negative("exposed_s", exposed_s)
    return compute / (compute + exposed)


def draw_overlap_timeline(ax=None, backward_s=0.16, comm_s=0.2, buckets=8, forward_s=0.08):
    """Two timelines of one step, without and with bucketed overlap (seconds in, ms drawn). Returns ax."""
    import matplotlib.pyplot as plt

    rows = [("no overlap", overlap_schedule(backward_s, comm_s, buckets, forward_s, overlap=False), 2.6),
            ("bucketed overlap", overlap_schedule(backward_s, comm_s, buckets, forward_s, overlap=True), 0.0)]
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.6))  # notebook width: drawn at full size
    return views.draw_overlap_timeline(ax, rows, buckets, forward_s + backward_s + comm_s, comm_s)


# ---------------------------------------------------------------- ZeRO

def zero_traffic(params, gpus, zero, bytes_per_value=2) -> dict:
    """Collectives and bytes each GPU sends per step for ZeRO stage ``zero`` (0 = plain DDP).

    Stage 0 all-reduces gradients; stages 1 and 2 reduce-scatter gradients and all-gather the
    updated weights (together the same bytes as one all-reduce); stage 3 also gathers the
    weights before the forward and again before the backward pass: 1.5x the bytes of DDP.
    Returns ``ops`` (what, collective, bytes of the buffer, bytes sent per GPU), ``bytes_sent``
    and ``ratio_to_ddp``.
    """
    params = validate.positive("params", params)
    gpus = validate.integer("gpus", gpus, low=1, high=10_000_000)
    z = validate.integer("zero", zero, low=0, high=3)
    bpv = validate.number("bytes_per_value", bytes_per_value, low=0.5, high=8)
    n = params * bpv
    ops = [{"what": what, "collective": coll, "buffer_bytes": n, "bytes_sent": times * bytes_sent_per_gpu(coll, n, gpus)}
           for what, coll, times in _ZERO_OPS[z]]
    sent = sum(op["bytes_sent"] for op in ops)
    ddp = bytes_sent_per_gpu("all_reduce", n, gpus)
    return {"zero": z, "ops": ops, "bytes_sent": sent, "ratio_to_ddp": sent / ddp if ddp > 0 else 1.0}


def zero_table(params, gpus, bytes_per_value=2) -> list[dict]:
    """ZeRO stages 0-3: model-state bytes per GPU (parallel.model_state_bytes) and bytes sent per step."""
    rows = []
    for z in range(4):
        mem = parallel.model_state_bytes(params, gpus, z)
        tr = zero_traffic(params, gpus, z, bytes_per_value)
        rows.append({"zero": z, **{k: mem[k] for k in (*ZERO_PARTS, "total")},
                     "bytes_sent": tr["bytes_sent"], "ratio_to_ddp": tr["ratio_to_ddp"],
                     "collectives": " + ".join(op["collective"] for op in tr["ops"])})
    return rows


def draw_zero_memory(ax=None, params=7.5e9, gpus=64, capacity_bytes=None):
    """Stacked bars of model-state memory per GPU for ZeRO 0-3, bytes sent per step on top. Returns ax."""
    import matplotlib.pyplot as plt

    rows = zero_table(params, gpus)
    cap = None if capacity_bytes is None else validate.positive("capacity_bytes", capacity_bytes)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.8))
    return views.draw_zero_memory(ax, rows, params, gpus, cap)


# ---------------------------------------------------------------- step time and scaling

def dp_estimate(model="megatron-1.7b", gpus=64, nic_gbit_s=None, zero=0, seqs_per_gpu=1, overlap=True,
                base=BASE_SYSTEM, global_batch=None) -> parallel.Estimate:
    """parallel.estimate for pure data parallelism (TP = PP = 1) with ZeRO stage ``zero``.

    Each GPU runs ``seqs_per_gpu`` sequences per step as micro-batches of one (weak scaling),
    unless ``global_batch`` (a multiple of gpus) fixes the total (strong scaling). Selective
    activation recomputation; nic_gbit_s: one NIC per GPU at this rate, Gb/s (bits) per direction as
    vendors quote it (None: the catalog's NICs). The GPUs inside a node keep the catalog's fabric.
    """
    gpus = validate.integer("gpus", gpus, low=1, high=10**6)
    spg = validate.integer("seqs_per_gpu", seqs_per_gpu, low=1, high=10**4)
    if global_batch is None:
        batch = gpus * spg
    else:
        batch = validate.integer("global_batch", global_batch, low=1, high=10**9)
        if batch % gpus:
            raise ValueError(f"global_batch must be a multiple of gpus ({gpus}), got {batch}")
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True or False, got {overlap!r}")
    sys_ = hardware.resolve_system(base, name="base")
    if nic_gbit_s is not None:
        sys_ = sys_.variant(nics_per_node=sys_.gpus_per_node, nic_gbit_s=nic_gbit_s)
    return parallel.estimate(model, sys_, gpus=gpus, tp=1, pp=1, global_batch=batch,
                             micro_batch=1, zero=validate.integer("zero", zero, low=0, high=3),
                             recompute=RECOMPUTE, dp_overlap=overlap)


def _dp_comm(e: parallel.Estimate) -> float:
    return sum(t.time_s for t in e.traffic)


def scaling_curve(model="megatron-1.7b", nic_gbit_s=None, zero=0, seqs_per_gpu=1, overlap=True,
                  gpus=SCALING_GPUS, base=BASE_SYSTEM) -> dict:
    """Weak scaling (every GPU keeps ``seqs_per_gpu`` sequences per step) over ``gpus`` counts.

    Arrays (seconds; efficiency in (0, 1]): compute, exposed and total data-parallel
    communication, step; efficiency = step on 1 GPU / step on N; speedup = N x efficiency;
    memory per GPU (bytes) and whether it fits.
    """
    counts = [validate.integer("gpus", g, low=1, high=10**6) for g in gpus]
    if not counts:
        raise ValueError("gpus must list at least one GPU count")
    est = [dp_estimate(model, g, nic_gbit_s, zero if g > 1 else 0, seqs_per_gpu, overlap, base) for g in counts]
    one = dp_estimate(model, 1, nic_gbit_s, 0, seqs_per_gpu, overlap, base).step_time_s
    step = np.array([e.step_time_s for e in est])
    eff = one / step
    return {"gpus": np.array(counts), "compute_s": np.array([e.compute_s for e in est]),
            "exposed_s": np.array([e.dp_exposed_s for e in est]), "comm_s": np.array([_dp_comm(e) for e in est]),
            "step_s": step, "efficiency": eff, "speedup": eff * np.array(counts),
            "memory_bytes": np.array([e.memory["total"] for e in est]),
            "usable_bytes": est[0].memory["usable"], "fits": np.array([e.fits for e in est]),
            "model": est[0].model, "system": est[0].system}


def strong_scaling(model="megatron-1.7b", global_batch=512, nic_gbit_s=None, zero=0, overlap=True,
                   gpus=SCALING_GPUS, base=BASE_SYSTEM) -> dict:
    """Strong scaling: the global batch (sequences) stays fixed; counts that do not divide it are skipped.

    speedup = step on 1 GPU / step on N (the single GPU runs the whole batch as micro-batches);
    efficiency = speedup / N.
    """
    batch = validate.integer("global_batch", global_batch, low=1, high=10**9)
    counts = [validate.integer("gpus", g, low=1, high=10**6) for g in gpus]
    counts = [g for g in counts if batch % g == 0]
    if not counts:
        raise ValueError(f"gpus must include a count that divides global_batch ({batch})")
    est = [dp_estimate(model, g, nic_gbit_s, zero if g > 1 else 0, 1, overlap, base, global_batch=batch) for g in counts]
    one = dp_estimate(model, 1, nic_gbit_s, 0, 1, overlap, base, global_batch=batch).step_time_s
    step = np.array([e.step_time_s for e in est])
    speedup = one / step
    return {"gpus": np.array(counts), "step_s": step, "compute_s": np.array([e.compute_s for e in est]),
            "exposed_s": np.array([e.dp_exposed_s for e in est]), "speedup": speedup,
            "efficiency": speedup / np.array(counts), "global_batch": batch, "model": est[0].model}


# ---------------------------------------------------------------- the DP ring on the fabric

def ring_order(nodes, gpus_per_node, ring=0) -> list:
    """GPU names of DP ring ``ring`` (0 <= ring < gpus_per_node) over ``nodes`` nodes, as in
    topology.rail_fat_tree: each node visited in turn, every other node backwards, the start
    shifted by ``ring`` so that ring r leaves each node on a different rail."""
    nodes = validate.integer("nodes", nodes, low=1, high=64)
    g = validate.integer("gpus_per_node", gpus_per_node, low=1, high=16)
    r = validate.integer("ring", ring, low=0, high=g - 1)
    local = [(r + i) % g for i in range(g)]
    return [f"n{n}.gpu{i}" for n in range(nodes) for i in (local if n % 2 == 0 else local[::-1])]


def dp_ring_bandwidth(system=BASE_SYSTEM, nodes=2, ring=0) -> dict:
    """One DP ring laid over the rail-optimised fat tree: its bottleneck link (topology.ring_bottleneck),
    and the bandwidth per rank the course model gives the DP group (parallel.group_link), bytes/s per direction."""
    sys_ = hardware.resolve_system(system)
    topo = topology.rail_fat_tree(sys_.id, nodes)
    order = ring_order(nodes, sys_.gpus_per_node, ring)
    one = topo.ring_bottleneck(order)
    group = parallel.group_link(sys_, nodes * sys_.gpus_per_node, 1)
    return {"one_ring": one["bandwidth"], "bottleneck_link": one["link"], "rings": sys_.nics_per_node,
            "all_rings": min(sys_.gpu_link.per_direction, sys_.nics_per_node * sys_.nic.per_direction),
            "model_per_rank": group.bandwidth, "model_link": group.name, "order": order}


def ring_leaves(topo, order) -> dict:
    """For each hop (a, b) of ring ``order`` that leaves a node: the leaf switch (rail) it crosses."""
    hops = {}
    for a, b in zip(order, order[1:] + order[:1]):
        if a.split(".")[0] != b.split(".")[0]:
            hops[(a, b)] = next(n for n in topo.kinds if n.startswith("leaf")
                                and frozenset((a, n)) in topo.links and frozenset((b, n)) in topo.links)
    return hops


def draw_dp_ring(system=BASE_SYSTEM, nodes=2, ring=0, ax=None):
    """The rail-optimised fat tree with one DP ring drawn on it (arrows), crossings marked. Returns ax."""
    import matplotlib.pyplot as plt

    sys_ = hardware.resolve_system(system)
    topo = topology.rail_fat_tree(sys_.id, nodes)
    order = ring_order(nodes, sys_.gpus_per_node, ring)
    info = dp_ring_bandwidth(sys_, nodes, ring)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.8))  # notebook width: drawn at full size
    return views.draw_dp_ring(ax, topo, order, ring_leaves(topo, order), info, sys_.name, sys_.gpu_link.name,
                              nodes, ring)


# ---------------------------------------------------------------- published results

@lru_cache(maxsize=1)
def published_dp_scaling() -> dict:
    """The parsed ``data/published_dp_scaling.json`` (scaling efficiencies with sources)."""
    return datafiles.load("published_dp_scaling.json")


def published_scaling_rows() -> list[dict]:
    """Published DP scaling efficiencies: model, GPUs, efficiency, network, source URL."""
    data = published_dp_scaling()
    return [{"model": c["model"], "gpus": c["gpus"], "baseline_gpus": c["baseline_gpus"],
             "efficiency": c["efficiency"], "network": c["network"], "where": c["where"],
             "url": datafiles.source(c["source"])["url"]} for c in data["cases"]]


def megatron_dp_rows() -> list[dict]:
    """The GPT-3 175B rows of Megatron-LM's PTD-P vs ZeRO-3 comparison: measured and predicted TFLOP/s
    per GPU (parallel.validation_table), and each family's efficiency relative to its 384-GPU run."""
    rows = [r for r in parallel.validation_table() if r["group"] == "ptdp-vs-zero3-175b"]
    cases = {c["id"]: c for c in parallel.published()["cases"]}
    out = []
    for r in rows:
        case = cases[r["id"]]
        out.append({"id": r["id"], "scheme": "ZeRO-3" if case.get("zero", 0) == 3 else "PTD-P",
                    "gpus": case["gpus"], "measured": r["measured"], "predicted": r["predicted"],
                    "ratio": r["ratio"], "url": r["url"], "config": r["config"]})
    for scheme in ("PTD-P", "ZeRO-3"):
        fam = sorted((x for x in out if x["scheme"] == scheme), key=lambda x: x["gpus"])
        for x in fam:
            x["measured_efficiency"] = x["measured"] / fam[0]["measured"]
            x["predicted_efficiency"] = x["predicted"] / fam[0]["predicted"]
    return sorted(out, key=lambda x: (x["scheme"], x["gpus"]))


def zero3_ladder() -> list[dict]:
    """The published ZeRO-3 runs (GPT-3 175B, 384-1536 A100) next to four variants of the course model:
    as is; without overlap; each GPU limited to its own NIC (no help from NVLink and the node's other
    NICs); both. TFLOP/s per GPU. The variants are what-ifs, not fits."""
    defaults = parallel.published()["defaults_for_unstated_fields"]
    rows = []
    for case in parallel.published()["cases"]:
        if case.get("group") != "ptdp-vs-zero3-175b" or case.get("zero", 0) != 3:
            continue
        base = hardware.system(case["system"])
        own_nic = base.variant(gpus_per_node=1, nics_per_node=1)
        get = lambda k: case.get(k, defaults.get(k))  # noqa: E731
        row = {"gpus": case["gpus"], "micro_batch": get("micro_batch"), "measured": float(case["measured_tflops_per_gpu"])}
        for name, sys_, ov in (("model", base, True), ("no_overlap", base, False),
                               ("own_nic", own_nic, True), ("own_nic_no_overlap", own_nic, False)):
            e = parallel.estimate(case["model"], sys_, gpus=case["gpus"], tp=1, pp=1, global_batch=case["global_batch"],
                                  micro_batch=get("micro_batch"), zero=3, recompute=get("recompute"), dp_overlap=ov)
            row[name] = e.tflops_per_gpu
            if name == "model":
                row["compute_s"] = e.compute_s
                row["comm_s"] = _dp_comm(e)
        rows.append(row)
    return sorted(rows, key=lambda r: r["gpus"])


def plot_zero3_ladder(ax=None, rows=None):
    """Measured ZeRO-3 and PTD-P throughput per GPU against the model and its pessimistic variants. Returns ax."""
    import matplotlib.pyplot as plt

    rows = zero3_ladder() if rows is None else rows
    ptdp = [r for r in megatron_dp_rows() if r["scheme"] == "PTD-P"]
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    return views.draw_zero3_ladder(ax, rows, ptdp)


# ---------------------------------------------------------------- tables



def show_zero_table(params=7.5e9, gpus=64):
    """Display :func:`zero_table` with the ZeRO paper's published figures next to it."""
    published = {c["zero"]: c["measured_model_state_bytes"] for c in parallel.published()["cases"]
                 if c["kind"] == "memory" and c["params"] == params and c["dp"] == gpus}
    gb = lambda v: f"{v / units.GB:.3g}"  # noqa: E731
    cols = [("stage", lambda r: f"ZeRO-{r['zero']}"), ("weights GB", lambda r: gb(r["weights"])),
            ("gradients GB", lambda r: gb(r["gradients"])), ("optimizer GB", lambda r: gb(r["optimizer"])),
            ("total GB per GPU", lambda r: gb(r["total"]))]
    if published:
        cols.append(("ZeRO paper, Fig. 1 (GB)", lambda r: gb(published[r["zero"]]) if r["zero"] in published else "-"))
    cols += [("collectives per step", lambda r: r["collectives"]),
             ("GB sent per GPU per step", lambda r: gb(r["bytes_sent"])), ("vs DDP", lambda r: f"{r['ratio_to_ddp']:.2f}x")]
    show_html(html_table(zero_table(params, gpus), cols))


def show_published_scaling():
    """Display the published DP scaling efficiencies with their sources."""
    show_html(html_table(published_scaling_rows(), [
        ("model", lambda r: r["model"]), ("GPUs", lambda r: r["gpus"]),
        ("compared with", lambda r: f"{r['baseline_gpus']} GPUs" if r["baseline_gpus"] else "ideal line"),
        ("scaling efficiency", lambda r: f"{100 * r['efficiency']:.0f}%"), ("network", lambda r: r["network"]),
        ("source", lambda r: r["url"])]))


def show_megatron_dp():
    """Display the PTD-P and ZeRO-3 rows: measured vs predicted, and efficiency vs 384 GPUs."""
    show_html(html_table(megatron_dp_rows(), [
        ("scheme", lambda r: r["scheme"]), ("GPUs", lambda r: r["gpus"]),
        ("measured TFLOP/s", lambda r: f"{r['measured']:.0f}"), ("model TFLOP/s", lambda r: f"{r['predicted']:.0f}"),
        ("model / measured", lambda r: f"{r['ratio']:.2f}"),
        ("measured eff. vs 384", lambda r: f"{100 * r['measured_efficiency']:.0f}%"),
        ("model eff. vs 384", lambda r: f"{100 * r['predicted_efficiency']:.0f}%")]))


def show_zero3_ladder(rows=None):
    """Display :func:`zero3_ladder` as a table (TFLOP/s per GPU)."""
    rows = zero3_ladder() if rows is None else rows
    show_html(html_table(rows, [
        ("GPUs", lambda r: r["gpus"]), ("seq. per GPU", lambda r: r["micro_batch"]),
        ("model compute s", lambda r: f"{r['compute_s']:.1f}"), ("model ZeRO-3 comm s", lambda r: f"{r['comm_s']:.1f}"),
        ("course model", lambda r: f"{r['model']:.0f}"), ("no overlap", lambda r: f"{r['no_overlap']:.0f}"),
        ("own NIC", lambda r: f"{r['own_nic']:.0f}"), ("own NIC, no overlap", lambda r: f"{r['own_nic_no_overlap']:.0f}"),
        ("measured", lambda r: f"{r['measured']:.0f}"), ("model / measured", lambda r: f"{r['model'] / r['measured']:.2f}")]))


# ---------------------------------------------------------------- explorer

def model_options() -> list[tuple]:
    """(label, id) for every catalog model, smallest first."""
    ids = sorted(parallel.model_ids(), key=lambda i: parallel.model(i).params)
    return [(f"{parallel.model(i).name} ({parallel.model(i).params / 1e9:.3g}B)", i) for i in ids]


# The explorer's plot and readout ask for the same estimates on every event: computed once each.
_cached_estimate = lru_cache(maxsize=256)(lambda *args: dp_estimate(*args))
_cached_curve = lru_cache(maxsize=32)(lambda *args: scaling_curve(*args))


@dataclasses.dataclass(frozen=True)
class ScalingView:
    """What the scaling explorer shows: weak scaling over SCALING_GPUS (seconds, efficiency in (0, 1])
    and, at the chosen GPU count, memory per GPU in GB per ZeRO stage (rows) and part (columns:
    weights, gradients, optimizer, activations)."""
    model: str
    zero: int
    gpus: np.ndarray
    compute_s: np.ndarray
    exposed_s: np.ndarray
    comm_s: np.ndarray
    step_s: np.ndarray
    efficiency: np.ndarray
    selected: int            # index of the chosen GPU count in ``gpus``
    selected_gpus: int
    gpus_per_node: int
    memory_gb: np.ndarray    # shape (4, 4)
    usable_gb: float
    link_gb_s: float = 0.0   # the network slider, GB/s per GPU per direction (for the title)
    seqs_per_gpu: int = 1
    overlap: bool = True


@lru_cache(maxsize=64)
def scaling_view(model, gpus, link_gb_s, zero, seqs_per_gpu, overlap) -> ScalingView:
    """The explorer's model result at these slider values (cached: the plot and readout share it)."""
    nic_gbit_s = units.bytes_to_bits(link_gb_s)
    curve = _cached_curve(model, nic_gbit_s, zero, seqs_per_gpu, overlap)
    est = [_cached_estimate(model, gpus, nic_gbit_s, z, seqs_per_gpu, overlap) for z in range(4)]
    memory = np.array([[e.memory[part] for part in views.MEMORY_PARTS] for e in est]) / units.GB
    return ScalingView(model=curve["model"], zero=zero, gpus=curve["gpus"], compute_s=curve["compute_s"],
                       exposed_s=curve["exposed_s"], comm_s=curve["comm_s"], step_s=curve["step_s"],
                       efficiency=curve["efficiency"], selected=list(curve["gpus"]).index(gpus), selected_gpus=gpus,
                       gpus_per_node=hardware.system(BASE_SYSTEM).gpus_per_node, memory_gb=memory,
                       usable_gb=est[0].memory["usable"] / units.GB, link_gb_s=link_gb_s,
                       seqs_per_gpu=seqs_per_gpu, overlap=overlap)


def _axes(fig):
    """Step time (with its efficiency twin) above, memory per GPU below: one column at notebook width."""
    ax1, ax2 = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1.5, 1]})
    return [ax1, ax2, ax1.twinx()]


def _draw(axes, **values):
    update = views.draw_scaling(axes, scaling_view(**values))
    return lambda **v: update(scaling_view(**v))


def _readout(model, gpus, link_gb_s, zero, seqs_per_gpu, overlap):
    e = _cached_estimate(model, gpus, units.bytes_to_bits(link_gb_s), zero, seqs_per_gpu, overlap)
    comm = _dp_comm(e)
    eff = e.compute_s / e.step_time_s  # pure DP: the step is compute + exposed communication
    base = hardware.system(BASE_SYSTEM)
    where = (f"inside one node over {base.gpu_link.name}" if gpus <= base.gpus_per_node
             else f"across nodes: each GPU's NIC at {link_gb_s:.3g} GB/s per direction")
    mem = e.memory
    return (f"{escape(e.model)} on {gpus} GPUs, ZeRO-{zero}, {seqs_per_gpu} sequence(s) per GPU: "
            f"{costmodel.step_phrase(e, base)} = compute {units.format_time(e.compute_s)} + exposed "
            f"communication {units.format_time(e.dp_exposed_s)} (of {units.format_time(comm)}; "
            f"{'overlapped' if overlap else 'not overlapped'}); scaling efficiency <b>{100 * eff:.1f}%</b>; "
            f"the DP ring runs {where}. Memory per GPU <b>{mem['total'] / units.GB:.1f} GB</b> of "
            f"{mem['usable'] / units.GB:.0f} GB usable ({'fits' if e.fits else 'does NOT fit'}).")


def dp_scaling_explorer(model="megatron-1.7b", gpus=64, link_gb_s=50.0, zero=0, seqs_per_gpu=1, overlap=True):
    """Sliders: model size, GPU count, network GB/s per GPU (per direction), ZeRO stage, sequences
    per GPU, overlap. Shows step time (compute vs exposed communication), scaling efficiency and
    memory per GPU, from parallel.estimate on a DGX H100 cluster whose NICs you choose.

    Shows: data-parallel scaling efficiency falls when the gradient all-reduce cannot hide behind
    compute (a slower network, no overlap), while ZeRO stages cut the memory per GPU.
    """
    import ipywidgets as w

    opts = model_options()
    validate.choice("model", model, [i for _, i in opts])
    controls = {
        # a drop-down, sorted by size: a slider's readout of such long names leaves no track in a narrow output area
        "model": w.Dropdown(options=opts, value=model, description="model (by size)"),
        "gpus": gpu_count_slider(gpus),
        "link_gb_s": link_speed_slider(link_gb_s, low=1.0, high=400.0,
                                       description="network GB/s per GPU, per direction"),
        "zero": w.Dropdown(options=[("ZeRO-0 (plain DDP)", 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3", 3)],
                           value=validate.integer("zero", zero, low=0, high=3), description="ZeRO stage"),
        "seqs_per_gpu": w.SelectionSlider(options=(1, 2, 4, 8, 16), value=seqs_per_gpu,
                                          description="sequences per GPU"),
        "overlap": w.Checkbox(value=bool(overlap), description="overlap communication with the backward pass"),
    }
    return explorer(_draw, controls, readout=_readout, figsize=(7.5, 6.6), axes=_axes,
                    title="Data parallelism: step time, scaling efficiency, memory per GPU")
