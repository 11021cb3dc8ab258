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

import math
from functools import lru_cache
from html import escape

import numpy as np

from .. import costmodel, datafiles, hardware, parallel, topology, units, validate
from ..widgets import explorer, gpu_count_slider, html_table, link_speed_slider, show_html

DDP_BUCKET_BYTES = parallel.DDP_BUCKET_BYTES  # the one sourced constant: 25 MiB (bucket_cap_mb=25)
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


def bucket_count(nbytes, bucket_bytes=DDP_BUCKET_BYTES) -> int:
    """Buckets DDP fills for ``nbytes`` of gradients (bytes > 0) with buckets of ``bucket_bytes``
    (bytes > 0; default 25 MiB), when every tensor is much smaller than a bucket: ceil(n / bucket)."""
    n = validate.positive("nbytes", nbytes)
    cap = validate.positive("bucket_bytes", bucket_bytes)
    return int(math.ceil(n / cap - 1e-12))


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

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.4))
    rows = [("no overlap", overlap_schedule(backward_s, comm_s, buckets, forward_s, overlap=False), 2.6),
            ("bucketed overlap", overlap_schedule(backward_s, comm_s, buckets, forward_s, overlap=True), 0.0)]
    ms = 1e3
    for label, sched, y0 in rows:
        for name, s, e in sched["compute"]:
            colour = "tab:green" if name == "forward" else "tab:blue"
            ax.barh(y0 + 1.0, (e - s) * ms, left=s * ms, height=0.8, color=colour, edgecolor="white")
        for i, (name, s, e) in enumerate(sched["comm"]):
            ax.barh(y0, (e - s) * ms, left=s * ms, height=0.8, color="tab:orange" if i % 2 else "tab:red",
                    edgecolor="white")
            ax.text((s + e) / 2 * ms, y0, str(i + 1), ha="center", va="center", fontsize=7, color="white")
        end_b, end = sched["backward_end_s"] * ms, sched["step_s"] * ms
        ax.plot([end_b, end_b], [y0 - 0.5, y0 + 1.5], color="black", lw=1, ls=":")
        if end > end_b:
            ax.annotate("", xy=(end, y0 - 0.55), xytext=(end_b, y0 - 0.55),
                        arrowprops={"arrowstyle": "<->", "color": "black", "lw": 1})
            ax.text((end_b + end) / 2, y0 - 0.75, f"exposed {units.format_time(sched['exposed_s'])}",
                    ha="center", va="top", fontsize=8)
        ax.text(0, y0 + 1.55, label, ha="left", va="center", fontsize=9, fontweight="bold")
    ax.set_yticks([0, 1, 2.6, 3.6], ["all-reduce", "compute", "all-reduce", "compute"], fontsize=8)
    ax.set_xlabel("time in the step, ms")
    ax.set_ylim(-1.2, 4.6)
    ax.set_xlim(left=-0.02 * ms * (forward_s + backward_s + comm_s))
    ax.set_title(f"forward (green), backward in {buckets} bucket-sized pieces (blue), bucket all-reduces "
                 f"(red/orange): {units.format_time(comm_s)} of communication", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return ax


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

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.8))
    rows = zero_table(params, gpus)
    colours = {"weights": "tab:green", "gradients": "tab:orange", "optimizer": "tab:purple"}
    x = np.arange(4)
    bottom = np.zeros(4)
    for part in ZERO_PARTS:
        vals = np.array([r[part] for r in rows]) / units.GB
        ax.bar(x, vals, bottom=bottom, color=colours[part], label=part)
        bottom += vals
    for i, r in enumerate(rows):
        ax.text(i, bottom[i], f"{r['total'] / units.GB:.3g} GB\nsends {r['ratio_to_ddp']:.2g}x DDP",
                ha="center", va="bottom", fontsize=8)
    if capacity_bytes is not None:
        cap = validate.positive("capacity_bytes", capacity_bytes)
        ax.axhline(cap / units.GB, color="black", ls="--", lw=1, label=f"{cap / units.GB:.0f} GB")
    ax.set_xticks(x, ["ZeRO-0\n(DDP)", "ZeRO-1\noptimizer", "ZeRO-2\n+ gradients", "ZeRO-3\n+ weights"])
    ax.set_ylabel("model states per GPU, GB")
    ax.set_ylim(0, bottom.max() * 1.25)
    ax.set_title(f"{params / 1e9:.3g}B parameters, mixed-precision Adam (2 + 2 + 12 bytes each), "
                 f"{gpus} GPUs", fontsize=10)
    ax.legend(fontsize=8)
    return ax


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


def draw_dp_ring(system=BASE_SYSTEM, nodes=2, ring=0, ax=None):
    """The rail-optimised fat tree with one DP ring drawn on it (arrows), crossings marked. Returns ax."""
    import matplotlib.pyplot as plt

    sys_ = hardware.resolve_system(system)
    topo = topology.rail_fat_tree(sys_.id, nodes)
    order = ring_order(nodes, sys_.gpus_per_node, ring)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4.8))
    topo.draw(ax=ax, show_bandwidth=False)
    for a, b in zip(order, order[1:] + order[:1]):
        (x1, y1), (x2, y2) = topo.pos[a], topo.pos[b]
        cross = a.split(".")[0] != b.split(".")[0]
        if cross:  # GPU -> its rail's leaf switch -> the other node's GPU on the same rail
            leaf = next(n for n in topo.kinds if n.startswith("leaf")
                        and frozenset((a, n)) in topo.links and frozenset((b, n)) in topo.links)
            xl, yl = topo.pos[leaf]
            ax.annotate("", xy=(xl, yl - 0.15), xytext=(x1, y1 + 0.15),
                        arrowprops={"arrowstyle": "-|>", "color": "tab:red", "lw": 2.2})
            ax.annotate("", xy=(x2, y2 + 0.15), xytext=(xl, yl - 0.15),
                        arrowprops={"arrowstyle": "-|>", "color": "tab:red", "lw": 2.2})
        else:
            ax.annotate("", xy=(x2, y2 + 0.35), xytext=(x1, y1 + 0.35),
                        arrowprops={"arrowstyle": "-|>", "color": "tab:blue", "lw": 1.6,
                                    "connectionstyle": "arc3,rad=-0.4"})
    info = dp_ring_bandwidth(sys_, nodes, ring)
    ax.set_title(f"DP ring {ring} over {nodes} x {sys_.name}: blue hops on {sys_.gpu_link.name} (through the NVSwitch), "
                 f"red hops leave the node on one rail.\nThis ring's slowest link: "
                 f"{units.format_bandwidth(info['one_ring'])}; {info['rings']} rings, one per rail, use every NIC.",
                 fontsize=9)
    return ax


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

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    rows = zero3_ladder() if rows is None else rows
    g = [r["gpus"] for r in rows]
    styles = (("model", "course model (overlap, node's 8 NICs)", "tab:blue", "o-"),
              ("no_overlap", "no overlap", "tab:cyan", "s--"),
              ("own_nic", "each GPU only its own NIC", "tab:purple", "^--"),
              ("own_nic_no_overlap", "own NIC and no overlap", "tab:gray", "v--"))
    for key, label, colour, style in styles:
        ax.plot(g, [r[key] for r in rows], style, color=colour, label=label, ms=5)
    ax.plot(g, [r["measured"] for r in rows], "D-", color="tab:red", lw=2.2, label="ZeRO-3 measured (Megatron-LM 2021)")
    ptdp = [r for r in megatron_dp_rows() if r["scheme"] == "PTD-P"]
    ax.plot([r["gpus"] for r in ptdp], [r["measured"] for r in ptdp], "*-", color="tab:green", ms=9,
            label="PTD-P measured (TP 8 x PP 12 x DP)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(g, [str(x) for x in g])
    ax.set_xlabel("A100 GPUs (global batch fixed at 1536 sequences)")
    ax.set_ylabel("TFLOP/s per GPU")
    ax.set_ylim(0, max(max(r["model"] for r in rows), max(r["measured"] for r in ptdp)) * 1.15)
    ax.set_title("GPT-3 175B with ZeRO-3 alone: the model vs measurement", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    return ax


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


def _axes(fig):
    """Step time (with its efficiency twin) and memory side by side."""
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.7, 1], "wspace": 0.35})
    return [ax1, ax2, ax1.twinx()]


def _draw(axes, model, gpus, link_gb_s, zero, seqs_per_gpu, overlap):
    ax1, ax2, twin = axes
    curve = _cached_curve(model, units.bytes_to_bits(link_gb_s), zero, seqs_per_gpu, overlap)
    x = np.log2(curve["gpus"])
    ax1.bar(x, curve["compute_s"], color="tab:blue", width=0.7, label="compute")
    ax1.bar(x, curve["exposed_s"], bottom=curve["compute_s"], color="tab:red", width=0.7, label="exposed DP comm")
    ax1.plot(x, curve["comm_s"], "_", color="black", ms=14, mew=2, label="DP comm if nothing hidden")
    top = 1.55 * max(curve["step_s"].max(), curve["comm_s"].max())
    ax1.set_ylim(0, top)
    boundary = np.log2(hardware.system(BASE_SYSTEM).gpus_per_node) + 0.5
    ax1.axvline(boundary, color="0.4", ls=":", lw=1)
    ax1.text(boundary + 0.05, top * 0.66, "node\nboundary", fontsize=7, color="0.3", va="bottom")
    sel = int(np.log2(gpus))
    ax1.bar([sel], [curve["step_s"][list(curve["gpus"]).index(gpus)]], width=0.8, fill=False, edgecolor="black", lw=1.5)
    ax1.set_xticks(x, [str(g) for g in curve["gpus"]], fontsize=7)
    ax1.set_xlabel("GPUs (data parallel, same sequences per GPU)")
    ax1.set_ylabel("step time, s")
    twin.plot(x, 100 * curve["efficiency"], "o-", color="tab:green", ms=4, label="scaling efficiency")
    twin.set_ylim(0, 155)
    twin.set_yticks([0, 20, 40, 60, 80, 100])
    handles = ax1.get_legend_handles_labels()
    extra = twin.get_legend_handles_labels()
    ax1.legend(handles[0] + extra[0], handles[1] + extra[1], fontsize=7, loc="upper left", ncol=2)
    twin.set_ylabel("scaling efficiency, %", color="tab:green")
    ax1.set_title(f"{curve['model']}, ZeRO-{zero}: step time and efficiency", fontsize=9)
    est = [_cached_estimate(model, gpus, units.bytes_to_bits(link_gb_s), z, seqs_per_gpu, overlap) for z in range(4)]
    colours = {"weights": "tab:green", "gradients": "tab:orange", "optimizer": "tab:purple", "activations": "tab:gray"}
    bottom = np.zeros(4)
    for part, colour in colours.items():
        vals = np.array([e.memory[part] for e in est]) / units.GB
        ax2.bar(range(4), vals, bottom=bottom, color=colour, label=part)
        bottom += vals
    ax2.bar([zero], [bottom[zero]], fill=False, edgecolor="black", lw=1.5)
    ax2.axhline(est[0].memory["usable"] / units.GB, color="black", ls="--", lw=1, label="usable memory")
    ax2.set_xticks(range(4), ["Z0", "Z1", "Z2", "Z3"])
    ax2.set_ylabel("memory per GPU, GB")
    ax2.set_ylim(0, max(bottom.max(), est[0].memory["usable"] / units.GB) * 1.1)
    ax2.set_title(f"memory per GPU at {gpus} GPUs", fontsize=9)
    ax2.legend(fontsize=6, loc="upper right")


def _readout(model, gpus, link_gb_s, zero, seqs_per_gpu, overlap):
    e = _cached_estimate(model, gpus, units.bytes_to_bits(link_gb_s), zero, seqs_per_gpu, overlap)
    comm = _dp_comm(e)
    eff = e.compute_s / e.step_time_s  # pure DP: the step is compute + exposed communication
    base = hardware.system(BASE_SYSTEM)
    where = (f"inside one node over {base.gpu_link.name}" if gpus <= base.gpus_per_node
             else f"across nodes: each GPU's NIC at {link_gb_s:.3g} GB/s per direction")
    mem = e.memory
    return (f"{escape(e.model)} on {gpus} GPUs, ZeRO-{zero}, {seqs_per_gpu} sequence(s) per GPU: step "
            f"<b>{units.format_time(e.step_time_s)}</b> = compute {units.format_time(e.compute_s)} + exposed "
            f"communication {units.format_time(e.dp_exposed_s)} (of {units.format_time(comm)}; "
            f"{'overlapped' if overlap else 'not overlapped'}); scaling efficiency <b>{100 * eff:.1f}%</b>; "
            f"the DP ring runs {where}. Memory per GPU <b>{mem['total'] / units.GB:.1f} GB</b> of "
            f"{mem['usable'] / units.GB:.0f} GB usable ({'fits' if e.fits else 'does NOT fit'}).")


def dp_scaling_explorer(model="megatron-1.7b", gpus=64, link_gb_s=50.0, zero=0, seqs_per_gpu=1, overlap=True):
    """Sliders: model size, GPU count, network GB/s per GPU (per direction), ZeRO stage, sequences
    per GPU, overlap. Shows step time (compute vs exposed communication), scaling efficiency and
    memory per GPU, from parallel.estimate on a DGX H100 cluster whose NICs you choose."""
    import ipywidgets as w

    opts = model_options()
    validate.choice("model", model, [i for _, i in opts])
    controls = {
        "model": w.SelectionSlider(options=opts, value=model, description="model", continuous_update=False,
                                   style={"description_width": "initial"}, layout={"width": "480px"}),
        "gpus": gpu_count_slider(gpus),
        "link_gb_s": link_speed_slider(link_gb_s, low=1.0, high=400.0,
                                       description="network GB/s per GPU, per direction"),
        "zero": w.Dropdown(options=[("ZeRO-0 (plain DDP)", 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3", 3)],
                           value=validate.integer("zero", zero, low=0, high=3), description="ZeRO stage",
                           style={"description_width": "initial"}),
        "seqs_per_gpu": w.SelectionSlider(options=(1, 2, 4, 8, 16), value=seqs_per_gpu, description="sequences per GPU",
                                          continuous_update=False, style={"description_width": "initial"}),
        "overlap": w.Checkbox(value=bool(overlap), description="overlap communication with the backward pass"),
    }
    return explorer(_draw, controls, readout=_readout, figsize=(11, 4.4), axes=_axes,
                    title="Data parallelism: step time, scaling efficiency, memory per GPU")
