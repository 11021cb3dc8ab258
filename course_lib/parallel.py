"""Data, tensor and pipeline parallelism for transformers: memory, traffic, step time, planner.

Units: bytes, seconds, FLOP and FLOP/s, bandwidth in bytes/s per direction.

The model (each formula is stated where it is computed):

* parameters, FLOPs, model-state and activation memory: ``course_lib.transformer`` (re-exported
  here); the first pipeline stage holds ``p`` micro-batches in flight (x ``1 + (p-1)/(p v)``
  when interleaved);
* step time: compute = hardware FLOPs / (peak x ``gpu_efficiency``); tensor-parallel
  all-reduces (4 per layer and micro-batch, 6 with full recomputation) are exposed; pipeline
  sends are exposed; the 1F1B pipeline takes ``(m + (p-1)/v)`` slots, so the bubble is
  ``(p-1)/(v m)`` of the ideal time; the data-parallel gradient all-reduce runs after the
  flush and, with ``dp_overlap``, hides behind the last backward pass, bucket by bucket;
  ZeRO-3 gathers weights every micro-batch (forward and backward) and reduce-scatters
  gradients, overlapped with compute when ``dp_overlap``.

Collective times come from ``costmodel.collective_time`` (alpha-beta, ring) on the link each
group uses: the GPU fabric when the group fits in one node, else the NICs. Ranks are laid
out as Megatron-LM does: tensor-parallel ranks adjacent, then data-parallel, then pipeline.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from . import collectives, costmodel, datafiles, evidence, hardware, units, validate
from .transformer import (BYTES_PER_PARAM_ADAM, RECOMPUTE, Transformer, activation_bytes_per_layer,  # noqa: F401
                          model, model_ids, model_state_bytes, models_data, resolve_model, resolve_recompute,
                          training_flops)

ACT_BYTES = 2  # 16-bit activations
# PyTorch DDP's default gradient bucket: bucket_cap_mb=25 (signature in the DistributedDataParallel docs,
# https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html), which
# torch/nn/parallel/distributed.py turns into bytes as bucket_cap_mb x 1024 x 1024: 25 MiB, not 25 MB.
DDP_BUCKET_BYTES = 25 * 2**20


# ---------------------------------------------------------------- data

@lru_cache(maxsize=1)
def published() -> dict:
    """The parsed ``data/published_training.json``: validation cases and model assumptions."""
    return datafiles.load("published_training.json")


def assumption(name) -> float:
    """A stated model assumption (``gpu_efficiency``, ``memory_reserve_bytes``) from the data file."""
    table = published()["model_assumptions"]
    return float(table[validate.choice("name", name, table)]["value"])


# ---------------------------------------------------------------- links

@dataclass(frozen=True)
class GroupLink:
    """Where a parallel group's traffic goes: link name, bytes/s per direction per rank, hop latency (s)."""

    name: str
    bandwidth: float
    latency: float
    crosses_nodes: bool


def group_link(system, size, stride) -> GroupLink:
    """The link a group of ``size`` ranks, ``stride`` ranks apart, uses on ``system``.

    Inside one node: the GPU fabric (NVLink/NVSwitch or PCIe) at its achievable bandwidth
    (``costmodel.fabric``). Across nodes: a ring whose bottleneck is ``min(fabric, k x NIC share
    per GPU)`` where k members of the group sit in each node (every GPU of a node communicates at once).
    """
    sys_ = hardware.resolve_system(system)
    size = validate.integer("size", size, low=1, high=10**7)
    stride = validate.integer("stride", stride, low=1, high=10**7)
    g = sys_.gpus_per_node
    f = costmodel.fabric(sys_)
    if size == 1 or stride * size <= g:
        return GroupLink(sys_.gpu_link.name, f.intra_bw, f.intra_hop, False)
    k = max(1, min(size, g // stride)) if stride < g else 1
    return GroupLink(f"{sys_.nics_per_node} x {sys_.nic.name} per node", min(f.intra_bw, k * f.net_bw_per_gpu),
                     f.net_hop, True)


def _coll(collective, nbytes, ranks, link: GroupLink) -> float:
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return costmodel.launch_latency() + float(costmodel.collective_time(collective, nbytes, ranks, link.bandwidth,
                                                                        link.latency, "ring"))


# ---------------------------------------------------------------- estimate

@dataclass
class Traffic:
    """One kind of communication in a step: bytes each GPU sends, on which link, time and exposed time (s).

    ``collectives``: registry ids (``course_lib.collectives``) of the collectives one call runs, in
    order (empty for a point-to-point send); ``label`` is for display only.
    """

    kind: str
    collectives: tuple
    group_size: int
    link: str
    crosses_nodes: bool
    calls_per_step: int
    bytes_per_call: float
    time_s: float
    exposed_s: float
    label: str = ""

    @property
    def sent_per_gpu(self) -> float:
        """Bytes each GPU sends per step: calls x size x the collectives' busbw factors (a send: 1)."""
        factor = sum(collectives.busbw_factor(c, self.group_size) for c in self.collectives) \
            if self.collectives else 1.0
        return self.calls_per_step * self.bytes_per_call * factor

    def as_row(self) -> dict:
        """A table row: kind, collective (label), collectives (ids), group, link, calls, bytes, times."""
        return {"kind": self.kind, "collective": self.label, "collectives": self.collectives, "group": self.group_size,
                "link": self.link, "crosses_nodes": self.crosses_nodes, "calls": self.calls_per_step,
                "bytes_per_call": self.bytes_per_call, "sent_per_gpu": self.sent_per_gpu, "time_s": self.time_s,
                "exposed_s": self.exposed_s}


@dataclass
class Estimate:
    """Memory, traffic and step time for one model, system and layout. Fields in SI units."""

    model: str
    system: str
    gpus: int
    nodes: int
    tp: int
    pp: int
    dp: int
    zero: int
    recompute: str
    micro_batch: int
    global_batch: int
    micro_batches: int
    interleave: int
    sequence_parallel: bool
    gpu_efficiency: float
    memory: dict                 # bytes per GPU: weights, gradients, optimizer, activations, total, capacity
    fits: bool
    traffic: list
    step_time_s: float
    compute_s: float
    bubble_s: float
    bubble_fraction: float       # (p-1)/(v m)
    tp_exposed_s: float
    pp_exposed_s: float
    dp_exposed_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float        # hardware FLOP/s per GPU, incl. recomputation, in TFLOP/s
    model_tflops_per_gpu: float  # model FLOP/s per GPU, no recomputation, in TFLOP/s
    mfu: float
    hfu: float
    notes: list = field(default_factory=list)

    @property
    def layout(self) -> str:
        v = f" v{self.interleave}" if self.interleave > 1 else ""
        return f"TP{self.tp} x PP{self.pp}{v} x DP{self.dp}"

    def breakdown(self) -> dict:
        """Step time split into compute, bubble and exposed communication, seconds."""
        return {"compute": self.compute_s, "pipeline bubble": self.bubble_s, "tensor-parallel comm": self.tp_exposed_s,
                "pipeline comm": self.pp_exposed_s, "data-parallel comm": self.dp_exposed_s}

    def to_dict(self) -> dict:
        d = asdict(self)
        d["layout"] = self.layout
        d["breakdown_s"] = self.breakdown()
        return d

    def summary(self) -> str:
        gb = units.GB
        mem = self.memory
        lines = [
            f"{self.model} on {self.gpus} GPUs ({self.nodes} x {self.system}): {self.layout}, ZeRO-{self.zero}, "
            f"recompute {self.recompute}{', sequence parallel' if self.sequence_parallel else ''}",
            f"  batch {self.global_batch} sequences = {self.micro_batches} micro-batches of {self.micro_batch} per pipeline",
            f"  memory per GPU: weights {mem['weights'] / gb:.1f} GB, gradients {mem['gradients'] / gb:.1f} GB, "
            f"optimizer {mem['optimizer'] / gb:.1f} GB, activations {mem['activations'] / gb:.1f} GB "
            f"= {mem['total'] / gb:.1f} GB of {mem['usable'] / gb:.0f} GB usable -> {'fits' if self.fits else 'DOES NOT FIT'}",
            "  communication per step and per GPU:",
        ]
        for t in self.traffic:
            lines.append(f"    {t.kind:<24} {t.calls_per_step:>6} x {units.format_bytes(t.bytes_per_call):>9} "
                         f"{t.label:<15} over {t.link}: {units.format_time(t.time_s)} "
                         f"({units.format_time(t.exposed_s)} exposed)")
        total = self.step_time_s
        lines.append(f"  step time {units.format_time(total)}:")
        for name, value in self.breakdown().items():
            lines.append(f"    {name:<22} {units.format_time(value):>9}  {100 * value / total:5.1f} %")
        lines.append(f"  bubble (p-1)/(v m) = {self.bubble_fraction:.3f}")
        lines.append(f"  {self.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, {self.tflops_per_gpu:.0f} TFLOP/s per GPU "
                     f"(hardware, with recomputation), MFU {100 * self.mfu:.1f} %, HFU {100 * self.hfu:.1f} % "
                     f"[GPU efficiency assumed {self.gpu_efficiency:.2f}]")
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()

@dataclass(frozen=True)
class Layout:
    """A validated layout: model, system, GPU counts and the run's settings (see ``estimate``)."""

    model: Transformer
    system: hardware.System
    gpus: int
    nodes: int
    tp: int
    pp: int
    dp: int
    global_batch: int
    micro_batch: int
    micro_batches: int
    zero: int
    recompute: str
    interleave: int
    sequence_parallel: bool
    gpu_efficiency: float
    dp_overlap: bool
    bucket_bytes: float
    reserve_bytes: float

    @property
    def layers_per_stage(self) -> int:
        return self.model.layers // self.pp

    @property
    def stage_params(self) -> float:
        """Parameters one GPU holds: its stage's layers and the embeddings, split by TP."""
        m = self.model
        return (self.layers_per_stage * m.layer_params + m.vocab * m.hidden
                + (m.seq_len * m.hidden if m.tied_embeddings else 0)) / self.tp


def _gpu_count(sys_, nodes, gpus) -> int:
    gpn = sys_.gpus_per_node
    if gpus is not None:
        N = validate.integer("gpus", gpus, low=1, high=10**7)
        if nodes is not None and validate.integer("nodes", nodes, low=1, high=10**6) * gpn < N:
            raise ValueError(f"gpus must be <= nodes x {gpn} = {nodes * gpn}, got {N}")
        return N
    if nodes is None:
        raise ValueError("nodes must be given (or gpus)")
    return validate.integer("nodes", nodes, low=1, high=10**6) * gpn


def _flag(name, value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def layout(model_, system, nodes=None, *, tp=1, pp=1, dp=None, global_batch, micro_batch=1, zero=0,
           recompute="full", interleave=1, sequence_parallel=False, gpu_efficiency=None, dp_overlap=True,
           bucket_bytes=None, memory_reserve_bytes=None, gpus=None) -> Layout:
    """Check a layout's arguments (as ``estimate`` takes them) and return the ``Layout``."""
    m = resolve_model(model_)
    sys_ = hardware.resolve_system(system)
    N = _gpu_count(sys_, nodes, gpus)
    t = validate.integer("tp", tp, low=1, high=m.heads)
    if m.heads % t:
        raise ValueError(f"tp must divide the number of heads ({m.heads}), got {t}")
    p = validate.integer("pp", pp, low=1, high=m.layers)
    if m.layers % p:
        raise ValueError(f"pp must divide the number of layers ({m.layers}), got {p}")
    if N % (t * p):
        raise ValueError(f"tp x pp must divide the GPU count ({N}), got tp x pp = {t * p}")
    d = N // (t * p) if dp is None else validate.integer("dp", dp, low=1, high=N)
    if t * p * d != N:
        raise ValueError(f"dp must be gpus / (tp x pp) = {N // (t * p)}, got {d}")
    B = validate.integer("global_batch", global_batch, low=1, high=10**9)
    b = validate.integer("micro_batch", micro_batch, low=1, high=B)
    if B % (b * d):
        raise ValueError(f"global_batch must be a multiple of micro_batch x dp = {b * d}, got {B}")
    mb = B // (b * d)
    z = validate.integer("zero", zero, low=0, high=3)
    if z >= 2 and p > 1:
        raise ValueError(f"zero must be 0 or 1 with pipeline parallelism (pp={p}); stages 2-3 need pp=1, got {z}")
    rc = resolve_recompute(recompute)
    v = validate.integer("interleave", interleave, low=1, high=m.layers)
    if v > 1 and (p == 1 or (m.layers // p) % v or mb % p):
        raise ValueError(f"interleave must be 1 unless pp > 1, layers per stage ({m.layers // p}) divide by it "
                         f"and micro-batches ({mb}) are a multiple of pp; got {v}")
    eff = assumption("gpu_efficiency") if gpu_efficiency is None else validate.fraction("gpu_efficiency", gpu_efficiency)
    bucket = DDP_BUCKET_BYTES if bucket_bytes is None else validate.positive("bucket_bytes", bucket_bytes)
    reserve = assumption("memory_reserve_bytes") if memory_reserve_bytes is None else \
        validate.number("memory_reserve_bytes", memory_reserve_bytes, low=0, high=sys_.gpu.memory_bytes)
    return Layout(model=m, system=sys_, gpus=N, nodes=math.ceil(N / sys_.gpus_per_node), tp=t, pp=p, dp=d,
                  global_batch=B, micro_batch=b, micro_batches=mb, zero=z, recompute=rc, interleave=v,
                  sequence_parallel=_flag("sequence_parallel", sequence_parallel), gpu_efficiency=eff,
                  dp_overlap=_flag("dp_overlap", dp_overlap), bucket_bytes=bucket, reserve_bytes=reserve)


def memory_phase(L: Layout) -> dict:
    """Bytes per GPU on the worst stage: model states, activations, total, capacity, usable.

    The first stage holds the most activations (p micro-batches in flight); embeddings sit on
    the first and last stage; the last stage also holds the fp32 logits.
    """
    m, t, p, b, rc, sp = L.model, L.tp, L.pp, L.micro_batch, L.recompute, L.sequence_parallel
    states = model_state_bytes(L.stage_params, L.dp, L.zero)
    per_layer = activation_bytes_per_layer(m, b, t, rc, sp)
    in_flight = min(p, L.micro_batches) if p > 1 else 1
    factor = 1 + (p - 1) / (p * L.interleave) if L.interleave > 1 else 1.0
    recomputing = activation_bytes_per_layer(m, b, t, "none", sp) if rc == "full" else 0
    acts_first = L.layers_per_stage * per_layer * in_flight * factor
    if rc == "full":  # the layer being recomputed holds its full activations
        acts_first += recomputing
    logits = 4 * m.seq_len * b * m.vocab / t  # fp32 logits for the loss, last stage
    acts_last = L.layers_per_stage * per_layer + logits + recomputing
    acts = max(acts_first, acts_last) if p > 1 else acts_first + logits
    memory = {k: v for k, v in states.items() if k != "total"}
    capacity = L.system.gpu.memory_bytes
    memory.update(activations=acts, total=states["total"] + acts, capacity=capacity,
                  usable=capacity - L.reserve_bytes)
    return memory


@dataclass(frozen=True)
class Compute:
    """FLOPs of one step and the compute time, seconds: per step and per micro-batch on one stage."""

    hardware_flops: float
    model_flops: float
    compute_s: float
    micro_batch_s: float
    backward_share: float  # fraction of a micro-batch's compute that is the backward pass


def compute_phase(L: Layout) -> Compute:
    """Compute time = hardware FLOPs / (GPUs x peak x gpu_efficiency)."""
    hw = training_flops(L.model, L.global_batch, L.recompute)
    total = hw / (L.gpus * L.system.gpu.bf16_flops * L.gpu_efficiency)
    full = 1 if L.recompute == "full" else 0
    return Compute(hardware_flops=hw, model_flops=training_flops(L.model, L.global_batch, "none"), compute_s=total,
                   micro_batch_s=total / L.micro_batches, backward_share=(2 + full) / (3 + full))


def tp_phase(L: Layout, notes: list) -> list:
    """Tensor-parallel traffic: all-reduces of s b h activations, 2 forward + 2 backward (+2 recompute), exposed."""
    if L.tp == 1:
        return []
    m, t = L.model, L.tp
    link = group_link(L.system, t, 1)
    calls = (4 + (2 if L.recompute == "full" else 0)) * L.layers_per_stage * L.micro_batches
    size = ACT_BYTES * m.seq_len * L.micro_batch * m.hidden
    total = calls * _coll("all_reduce", size, t, link)
    ids, label = (("reduce_scatter", "all_gather"), "RS+AG (SP)") if L.sequence_parallel else (("all_reduce",),
                                                                                                  "all_reduce")
    if link.crosses_nodes:
        notes.append(f"tensor parallelism of {t} spans nodes: its all-reduces leave the {L.system.gpu_link.name} domain")
    return [Traffic("tensor parallel", ids, t, link.name, link.crosses_nodes, calls, size, total, total, label)]


def pp_phase(L: Layout) -> list:
    """Pipeline traffic: activations forward and gradients backward at every stage boundary, exposed."""
    if L.pp == 1:
        return []
    m, t = L.model, L.tp
    link = group_link(L.system, L.pp, t * L.dp)
    size = ACT_BYTES * m.seq_len * L.micro_batch * m.hidden / (t if (link.crosses_nodes and t > 1) else 1)  # scatter-gather
    one = link.latency + size / pair_bandwidth(L.system, link)
    calls = 2 * L.interleave * L.micro_batches
    return [Traffic("pipeline send/recv", (), 2, link.name, link.crosses_nodes, calls, size, calls * one, calls * one,
                    "point-to-point")]


def pair_bandwidth(system, link: GroupLink) -> float:
    """Bytes/s per direction of one send between two GPUs: one GPU's NIC share across nodes, else the link."""
    return costmodel.fabric(system).net_bw_per_gpu if link.crosses_nodes else link.bandwidth


def dp_phase(L: Layout, c: Compute, notes: list) -> list:
    """Data-parallel / ZeRO traffic per step; each Traffic's exposed_s is what overlap leaves visible."""
    d, mb = L.dp, L.micro_batches
    if d == 1:
        return []
    link = group_link(L.system, d, L.tp)
    grad = BYTES_PER_PARAM_ADAM["gradients"] * L.stage_params
    coll = lambda name: _coll(name, grad, d, link)  # noqa: E731
    row = lambda kind, ids, calls, time_s, exposed: Traffic(  # noqa: E731
        kind, ids, d, link.name, link.crosses_nodes, calls, grad, time_s, exposed, ids[0] if len(ids) == 1 else "RS + AG")
    first_bucket = min(1.0, L.bucket_bytes / grad)
    if L.zero <= 1:
        ids = ("all_reduce",) if L.zero == 0 else ("reduce_scatter", "all_gather")
        t_dp = sum(coll(i) for i in ids)
        window = c.backward_share * c.micro_batch_s / L.interleave  # last backward pass of the stage (one chunk)
        exposed = max(t_dp * first_bucket, t_dp - window) if L.dp_overlap else t_dp
        out = [row("data parallel grads" if L.zero == 0 else "ZeRO-1 grads + weights", ids, 1, t_dp, exposed)]
    elif L.zero == 2:
        t_rs, t_ag = coll("reduce_scatter"), coll("all_gather")
        per_mb = max(t_rs * first_bucket, t_rs - c.backward_share * c.micro_batch_s) if L.dp_overlap else t_rs
        out = [row("ZeRO-2 grads", ("reduce_scatter",), mb, mb * t_rs, mb * per_mb),
               row("ZeRO-2 weights", ("all_gather",), 1, t_ag, t_ag)]
    else:
        t_ag, t_rs = coll("all_gather"), coll("reduce_scatter")
        comm_mb = 2 * t_ag + t_rs
        # prefetching hides it behind compute, except one layer's gather
        per_mb = max(comm_mb / L.layers_per_stage, comm_mb - c.micro_batch_s) if L.dp_overlap else comm_mb
        share = mb * per_mb / (mb * comm_mb)
        out = [row("ZeRO-3 weight gathers", ("all_gather",), 2 * mb, 2 * mb * t_ag, 2 * mb * t_ag * share),
               row("ZeRO-3 grads", ("reduce_scatter",), mb, mb * t_rs, mb * t_rs * share)]
    if link.crosses_nodes:
        notes.append(f"data-parallel traffic crosses nodes: {link.bandwidth / units.GB:.1f} GB/s per direction per rank")
    return out


def estimate(model_, system, nodes=None, *, tp=1, pp=1, dp=None, global_batch, micro_batch=1, zero=0,
             recompute="full", interleave=1, sequence_parallel=False, gpu_efficiency=None, dp_overlap=True,
             bucket_bytes=None, memory_reserve_bytes=None, gpus=None) -> Estimate:
    """Memory per GPU, traffic per step and step time for one layout.

    model_: id or Transformer; system: catalog id or System; nodes (or gpus) sets the GPU count;
    tp x pp x dp must equal it (dp defaults to the rest). global_batch and micro_batch in
    sequences; zero 0-3; recompute none/selective/full (True = full); interleave v >= 1 virtual
    stages per GPU; gpu_efficiency in (0, 1] (default: the sourced assumption);
    bucket_bytes: gradient bucket size (bytes, default ``DDP_BUCKET_BYTES``);
    memory_reserve_bytes: memory not usable (bytes). Composes ``memory_phase``,
    ``compute_phase``, ``tp_phase``, ``pp_phase`` and ``dp_phase`` on the 1F1B schedule.
    """
    L = layout(model_, system, nodes, tp=tp, pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch,
               zero=zero, recompute=recompute, interleave=interleave, sequence_parallel=sequence_parallel,
               gpu_efficiency=gpu_efficiency, dp_overlap=dp_overlap, bucket_bytes=bucket_bytes,
               memory_reserve_bytes=memory_reserve_bytes, gpus=gpus)
    notes = []
    memory = memory_phase(L)
    c = compute_phase(L)
    tp_traffic, pp_traffic = tp_phase(L, notes), pp_phase(L)
    dp_traffic = dp_phase(L, c, notes)
    tp_ex = sum(tr.exposed_s for tr in tp_traffic)
    pp_ex = sum(tr.exposed_s for tr in pp_traffic)
    dp_ex = sum(tr.exposed_s for tr in dp_traffic)
    # 1F1B schedule: (m + (p-1)/v) slots
    mb, p, v = L.micro_batches, L.pp, L.interleave
    slot = c.micro_batch_s + (tp_ex + pp_ex) / mb
    bubble = (p - 1) / v * slot
    step = mb * slot + bubble + dp_ex
    per_gpu = lambda flops: flops / step / L.gpus / 1e12  # noqa: E731 - TFLOP/s per GPU
    peak = L.system.gpu.bf16_flops
    if L.gpu_efficiency != assumption("gpu_efficiency"):
        notes.append(f"GPU efficiency set to {L.gpu_efficiency:.2f} (default {assumption('gpu_efficiency'):.2f})")
    return Estimate(model=L.model.name, system=L.system.id, gpus=L.gpus, nodes=L.nodes, tp=L.tp, pp=p, dp=L.dp,
                    zero=L.zero, recompute=L.recompute, micro_batch=L.micro_batch, global_batch=L.global_batch,
                    micro_batches=mb, interleave=v, sequence_parallel=L.sequence_parallel,
                    gpu_efficiency=L.gpu_efficiency, memory=memory, fits=memory["total"] <= memory["usable"],
                    traffic=tp_traffic + pp_traffic + dp_traffic, step_time_s=step, compute_s=c.compute_s,
                    bubble_s=bubble, bubble_fraction=(p - 1) / (v * mb), tp_exposed_s=tp_ex, pp_exposed_s=pp_ex,
                    dp_exposed_s=dp_ex, tokens_per_s_per_gpu=L.global_batch * L.model.seq_len / step / L.gpus,
                    tflops_per_gpu=per_gpu(c.hardware_flops), model_tflops_per_gpu=per_gpu(c.model_flops),
                    mfu=per_gpu(c.model_flops) * 1e12 / peak, hfu=per_gpu(c.hardware_flops) * 1e12 / peak,
                    notes=notes)


# ---------------------------------------------------------------- planner

def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


@dataclass
class Plan:
    """Ranked layouts that fit, the winner and why. ``ranked`` is best first."""

    model: str
    system: str
    gpus: int
    global_batch: int
    ranked: list
    searched: int
    rejected_memory: int
    explanation: list

    @property
    def best(self) -> Estimate:
        if not self.ranked:
            raise ValueError("no layout fits in memory; add GPUs, raise zero or recompute, or lower micro_batch")
        return self.ranked[0]

    def table(self, top=10) -> list[dict]:
        """The top layouts as rows for a table or a plot."""
        top = validate.integer("top", top, low=1, high=10**6)
        return [{"rank": i + 1, "layout": e.layout, "tp": e.tp, "pp": e.pp, "dp": e.dp, "interleave": e.interleave,
                 "micro_batch": e.micro_batch, "zero": e.zero, "recompute": e.recompute,
                 "step_time_s": e.step_time_s, "tokens_per_s_per_gpu": e.tokens_per_s_per_gpu,
                 "tflops_per_gpu": e.tflops_per_gpu, "mfu": e.mfu, "memory_gb": e.memory["total"] / units.GB}
                for i, e in enumerate(self.ranked[:top])]

    def to_dict(self, top=10) -> dict:
        return {"model": self.model, "system": self.system, "gpus": self.gpus, "global_batch": self.global_batch,
                "searched": self.searched, "rejected_memory": self.rejected_memory, "top": self.table(top),
                "best": self.best.to_dict() if self.ranked else None, "explanation": self.explanation}

    def summary(self, top=10) -> str:
        lines = [f"Planner: {self.model} on {self.gpus} GPUs of {self.system}, batch {self.global_batch}: "
                 f"{self.searched} layouts searched, {self.rejected_memory} do not fit in memory"]
        lines.append(f"{'#':>3} {'layout':<22} {'mb':>3} {'ZeRO':>4} {'recompute':<9} {'step':>9} "
                     f"{'tok/s/GPU':>10} {'TFLOP/s':>8} {'MFU':>6} {'mem GB':>7}")
        for row in self.table(top):
            lines.append(f"{row['rank']:>3} {row['layout']:<22} {row['micro_batch']:>3} {row['zero']:>4} "
                         f"{row['recompute']:<9} {units.format_time(row['step_time_s']):>9} "
                         f"{row['tokens_per_s_per_gpu']:>10,.0f} {row['tflops_per_gpu']:>8.0f} "
                         f"{100 * row['mfu']:>5.1f}% {row['memory_gb']:>7.1f}")
        lines.append("Why the winner wins:")
        lines += [f"  - {x}" for x in self.explanation]
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def plan(model_, system, nodes=None, *, global_batch, gpus=None, micro_batches=(1, 2, 4), zero_stages=(0, 1),
         recompute_options=("selective", "full"), interleave_options=(1, 2, 4), max_tp=None, sequence_parallel=True,
         gpu_efficiency=None, dp_overlap=True) -> Plan:
    """Search TP x PP x DP (x micro-batch, ZeRO, recomputation, interleaving) and rank what fits by step time.

    TP runs over powers of two that divide the heads, up to ``max_tp`` (default: twice the GPUs
    of a node, so that layouts crossing the NVLink domain are shown losing); PP over divisors
    of the layer count. Returns a Plan whose ``ranked[0]`` is the winner. ZeRO-2/3 are left out
    by default: against published ZeRO-3 runs the model is 1.7-3.4x optimistic at 768-1536 GPUs
    (see ``validation_table``); pass ``zero_stages=(0, 1, 2, 3)`` to include them anyway.
    """
    m = resolve_model(model_)
    sys_ = hardware.resolve_system(system)
    gpn = sys_.gpus_per_node
    if gpus is not None:
        N = validate.integer("gpus", gpus, low=1, high=10**7)
    elif nodes is not None:
        N = validate.integer("nodes", nodes, low=1, high=10**6) * gpn
    else:
        raise ValueError("nodes must be given (or gpus)")
    B = validate.integer("global_batch", global_batch, low=1, high=10**9)
    max_tp = 2 * gpn if max_tp is None else validate.integer("max_tp", max_tp, low=1, high=m.heads)
    for name, seq in (("micro_batches", micro_batches), ("zero_stages", zero_stages),
                      ("interleave_options", interleave_options)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise ValueError(f"{name} must be a non-empty list of integers, got {seq!r}")
    zero_stages = [validate.integer("zero_stages", z, low=0, high=3) for z in zero_stages]
    micro_batches = [validate.integer("micro_batches", x, low=1, high=10**6) for x in micro_batches]
    interleave_options = [validate.integer("interleave_options", x, low=1, high=m.layers) for x in interleave_options]
    if not isinstance(recompute_options, (list, tuple)) or not recompute_options:
        raise ValueError(f"recompute_options must be a non-empty list of {', '.join(RECOMPUTE)}")
    recompute_options = [resolve_recompute(r) for r in recompute_options]
    tps = [x for x in (2 ** k for k in range(0, 12)) if x <= max_tp and m.heads % x == 0 and N % x == 0]
    fitting, searched, rejected = [], 0, 0
    for t in tps:
        for p in _divisors(m.layers):
            if N % (t * p):
                continue
            d = N // (t * p)
            for b in micro_batches:
                if B % (b * d):
                    continue
                mb = B // (b * d)
                for z in zero_stages:
                    if (z >= 2 and p > 1) or (z > 0 and d == 1):
                        continue
                    for rc in recompute_options:
                        for v in interleave_options:
                            if v > 1 and (p == 1 or (m.layers // p) % v or mb % p):
                                continue
                            searched += 1
                            e = estimate(m, sys_, gpus=N, tp=t, pp=p, global_batch=B, micro_batch=b, zero=z,
                                         recompute=rc, interleave=v, sequence_parallel=sequence_parallel and t > 1,
                                         gpu_efficiency=gpu_efficiency, dp_overlap=dp_overlap)
                            if e.fits:
                                fitting.append(e)
                            else:
                                rejected += 1
    fitting.sort(key=lambda e: (e.step_time_s, e.memory["total"]))
    result = Plan(model=m.name, system=sys_.id, gpus=N, global_batch=B, ranked=fitting, searched=searched,
                  rejected_memory=rejected, explanation=[])
    result.explanation = _explain(fitting, sys_) if fitting else [
        "no layout fits in memory: add GPUs, allow ZeRO-3 or full recomputation, or lower the micro-batch"]
    return result


def _explain(ranked, sys_) -> list[str]:
    best = ranked[0]
    out = []
    bd = best.breakdown()
    parts = ", ".join(f"{k} {100 * v / best.step_time_s:.0f}%" for k, v in bd.items() if v > 0)
    out.append(f"{best.layout}, micro-batch {best.micro_batch}, ZeRO-{best.zero}, recompute {best.recompute}: "
               f"step {units.format_time(best.step_time_s)} = {parts}; MFU {100 * best.mfu:.1f}%")
    gpn = sys_.gpus_per_node
    out.append(f"TP {best.tp} {'stays inside' if best.tp <= gpn else 'leaves'} the {gpn}-GPU {sys_.gpu_link.name} "
               f"domain; memory {best.memory['total'] / units.GB:.1f} of {best.memory['usable'] / units.GB:.0f} GB usable")

    def best_where(pred):
        for e in ranked:
            if pred(e):
                return e
        return None

    rivals = [("the runner-up", best_where(lambda e: e is not best)),
              ("the best layout with TP across nodes", best_where(lambda e: e.tp > gpn)),
              ("the best layout with a smaller TP", best_where(lambda e: e.tp < best.tp)),
              ("the best layout with fewer pipeline stages", best_where(lambda e: e.pp < best.pp)),
              ("the best layout with more pipeline stages", best_where(lambda e: e.pp > best.pp))]
    seen = set()
    for label, e in rivals:
        if e is None or id(e) in seen or e is best:
            continue
        seen.add(id(e))
        diffs = {k: v - bd[k] for k, v in e.breakdown().items()}
        worst = max(diffs, key=diffs.get)
        out.append(f"{label} ({e.layout}, mb {e.micro_batch}, ZeRO-{e.zero}, {e.recompute}) is "
                   f"{100 * (e.step_time_s / best.step_time_s - 1):.1f}% slower, mostly {worst} "
                   f"(+{units.format_time(max(diffs[worst], 0))})")
    return out


# ---------------------------------------------------------------- validation

def _case_estimate(case: dict, gpu_efficiency=None) -> Estimate:
    defaults = published()["defaults_for_unstated_fields"]
    get = lambda k: case.get(k, defaults.get(k))  # noqa: E731
    return estimate(case["model"], case["system"], gpus=case["gpus"], tp=case["tp"], pp=case["pp"],
                    global_batch=case["global_batch"], micro_batch=get("micro_batch"), zero=get("zero"),
                    recompute=get("recompute"), interleave=get("interleave"),
                    sequence_parallel=get("sequence_parallel"), dp_overlap=get("dp_overlap"),
                    gpu_efficiency=gpu_efficiency)


def validation_table(gpu_efficiency=None) -> list[dict]:
    """Every published case: predicted, measured, predicted/measured, and the ratio within its group.

    ``relative`` is (predicted/measured) divided by the median of that ratio in the case's group:
    it shows whether the model gets the relative effect (scaling, layout) right even when the
    absolute level (set by gpu_efficiency) is off.
    """
    rows = []
    for case in published()["cases"]:
        src = datafiles.source(case["source"])
        row = {"id": case["id"], "group": case["group"], "kind": case["kind"], "where": case["where"],
               "source": src["title"].split(",")[0], "url": src["url"], "assumed": case.get("assumed", [])}
        if case["kind"] == "memory":
            pred = model_state_bytes(case["params"], case["dp"], case["zero"])["total"]
            row.update(config=f"{case['params'] / 1e9:g}B params, DP {case['dp']}, ZeRO-{case['zero']}",
                       quantity="model states GB/GPU", predicted=pred / units.GB,
                       measured=case["measured_model_state_bytes"] / units.GB)
        else:
            e = _case_estimate(case, gpu_efficiency)
            row.update(config=f"{case['model']} {case['gpus']} GPUs {e.layout} ZeRO-{e.zero} B{case['global_batch']} "
                              f"mb{e.micro_batch}", quantity="TFLOP/s per GPU", predicted=e.tflops_per_gpu,
                       measured=float(case["measured_tflops_per_gpu"]), fits=e.fits)
        row["ratio"] = evidence.compare(case["id"], row["predicted"],
                                        evidence.measurement(row["measured"], row["quantity"], case["source"])).ratio
        rows.append(row)
    groups = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row["ratio"])
    for row in rows:
        row["relative"] = row["ratio"] / evidence.median(groups[row["group"]])
    return rows


def validation_summary(rows=None) -> str:
    """The validation table as text: predicted / measured for each published case."""
    rows = validation_table() if rows is None else rows
    lines = [f"{'case':<26} {'configuration':<62} {'quantity':<20} {'pred':>7} {'meas':>7} {'p/m':>5} {'rel':>5}"]
    for r in rows:
        lines.append(f"{r['id']:<26} {r['config'][:62]:<62} {r['quantity']:<20} {r['predicted']:>7.1f} "
                     f"{r['measured']:>7.1f} {r['ratio']:>5.2f} {r['relative']:>5.2f}")
    lines.append("p/m: predicted / measured. rel: p/m divided by the median p/m of the case's group "
                 "(1.00 = the relative effect is right).")
    return "\n".join(lines)
