"""Chapter 06, traffic: what DDP and each ZeRO stage send per step, buckets overlapped with backward, ZeRO's memory per GPU.
"""
from __future__ import annotations

from ... import costmodel, parallel, validate
from ...views import data_parallel as views
from ...widgets import show_html


DDP_BUCKET_BYTES = parallel.DDP_BUCKET_BYTES  # the one sourced constant: 25 MiB (bucket_cap_mb=25)
bucket_count = parallel.bucket_count
ZERO_PARTS = ("weights", "gradients", "optimizer")
_ZERO_OPS = {  # per step: (what, collective, times); sizes are the 2-byte model (weights or gradients)
    0: (("gradients", "all_reduce", 1),),
    1: (("gradients", "reduce_scatter", 1), ("updated weights", "all_gather", 1)),
    2: (("gradients", "reduce_scatter", 1), ("updated weights", "all_gather", 1)),
    3: (("weights for the forward pass", "all_gather", 1), ("weights for the backward pass", "all_gather", 1),
        ("gradients", "reduce_scatter", 1)),
}


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


def show_zero_table(params=7.5e9, gpus=64):
    """Display :func:`zero_table` with the ZeRO paper's published figures next to it."""
    published = {c["zero"]: c["measured_model_state_bytes"] for c in parallel.published()["cases"]
                 if c["kind"] == "memory" and c["params"] == params and c["dp"] == gpus}
    show_html(views.zero_table(zero_table(params, gpus), published))
