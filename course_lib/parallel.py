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

* FSDP is ZeRO-3 over all cp x dp ranks; HSDP (``hsdp=G``) shards within groups of G ranks and
  all-reduces each rank's 1/G gradient shard across the replicas once per step (``dp_phase``);
* expert parallelism (an MoE model, ``ep``): 2 all-to-alls forward and 2 backward per MoE layer
  and micro-batch (+2 with full recomputation), exposed unless ``ep_overlap``; routed experts'
  states shard over ep and their gradients reduce over cp x dp / ep ranks (``ep_phase``);
* context parallelism (``cp``): ring attention passes K/V chunks, hidden while each step's
  attention compute is longer than its transfer (``ring_attention_condition``), or Ulysses
  all-to-alls of heads, exposed (``cp_phase``); activations divide by cp.

Collective times come from ``costmodel.collective_time`` (alpha-beta, ring) on the link each
group uses: the GPU fabric when the group fits in one node, else the NICs; all-to-alls across
nodes from ``costmodel.two_tier_all_to_all``. Ranks are laid out as Megatron-LM does:
tensor-parallel ranks adjacent, then context-parallel, then data-parallel (expert-parallel
groups are consecutive data-parallel ranks), then pipeline.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from . import collectives, costmodel, datafiles, evidence, hardware, units, validate
from .transformer import (BYTES_PER_PARAM_ADAM, RECOMPUTE, Transformer, activation_bytes_per_layer,  # noqa: F401
                          model, model_ids, model_state_bytes, models_data, resolve_model, resolve_recompute,
                          routed_expert_flops, training_flops)

ACT_BYTES = 2  # 16-bit activations
# PyTorch DDP's default gradient bucket: bucket_cap_mb=25 (signature in the DistributedDataParallel docs,
# https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html), which
# torch/nn/parallel/distributed.py turns into bytes as bucket_cap_mb x 1024 x 1024: 25 MiB, not 25 MB.
DDP_BUCKET_BYTES = 25 * 2**20
CP_KINDS = ("ring", "ulysses")  # context parallelism: ring attention (K/V passed around) or all-to-all of heads


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
    return _group_link(sys_, size, stride)


@lru_cache(maxsize=256)
def _fabric(sys_) -> costmodel.Fabric:
    """``costmodel.fabric`` of a (hashable) System, kept: the planner asks thousands of times."""
    return costmodel.fabric(sys_)


@lru_cache(maxsize=8192)
def _group_link(sys_, size, stride) -> GroupLink:
    g = sys_.gpus_per_node
    f = _fabric(sys_)
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


CROSS_NODE_TP_ALGORITHMS = ("ring", "tree")  # NCCL's; NVLS left out, as the in-node TP price (a ring) leaves it out


def cross_node_all_reduce_time(system, nbytes, ranks, stride=1) -> float:
    """One all-reduce of ``nbytes`` per rank over ``ranks`` ranks ``stride`` apart that span nodes, seconds.

    Priced by the network model (``costmodel.predict``) for the nodes and GPUs per node the group
    occupies: NCCL's ring and tree with their protocols (LL, LL128, Simple) at this size, a network
    latency on every step that crosses nodes, the fastest of them. No other traffic shares the NICs.
    """
    sys_ = hardware.resolve_system(system)
    nbytes = validate.non_negative("nbytes", nbytes)
    ranks = validate.integer("ranks", ranks, low=1, high=10**7)
    stride = validate.integer("stride", stride, low=1, high=10**7)
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    per_node = max(1, min(ranks, sys_.gpus_per_node // stride))
    nodes = math.ceil(ranks / per_node)
    return min(float(costmodel.predict("all_reduce", nbytes, sys_, gpus_per_node=per_node, nodes=nodes,
                                       algorithm=a).time_s[0]) for a in CROSS_NODE_TP_ALGORITHMS)


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
    ep: int = 1                  # expert-parallel ranks (inside the CP x DP ranks)
    cp: int = 1                  # context-parallel ranks
    cp_kind: str = "ring"
    shard_group: int = 0         # ZeRO-3/FSDP shard group (HSDP when smaller than cp x dp); 0 = not ZeRO-3
    ep_exposed_s: float = 0.0
    cp_exposed_s: float = 0.0

    @property
    def layout(self) -> str:
        v = f" v{self.interleave}" if self.interleave > 1 else ""
        cp = f" x CP{self.cp}" + (" (Ulysses)" if self.cp_kind == "ulysses" else "") if self.cp > 1 else ""
        ep = f" (EP{self.ep})" if self.ep > 1 else ""
        return f"TP{self.tp}{cp} x PP{self.pp}{v} x DP{self.dp}{ep}"

    @property
    def sharding(self) -> str:
        """ZeRO-n, or FSDP / HSDP (shard x replicate) for ZeRO-3."""
        if self.zero < 3:
            return f"ZeRO-{self.zero}"
        d = self.dp * self.cp
        return "ZeRO-3/FSDP" if self.shard_group == d else \
            f"HSDP (shard {self.shard_group} x replicate {d // self.shard_group})"

    def breakdown(self) -> dict:
        """Step time split into compute, bubble and exposed communication, seconds."""
        out = {"compute": self.compute_s, "pipeline bubble": self.bubble_s, "tensor-parallel comm": self.tp_exposed_s,
               "pipeline comm": self.pp_exposed_s, "data-parallel comm": self.dp_exposed_s}
        if self.ep > 1:
            out["expert-parallel comm"] = self.ep_exposed_s
        if self.cp > 1:
            out["context-parallel comm"] = self.cp_exposed_s
        return out

    def exposed_by_kind(self) -> dict:
        """Exposed communication per traffic kind, seconds (the rows of ``traffic`` summed by kind)."""
        out = {}
        for t in self.traffic:
            out[t.kind] = out.get(t.kind, 0.0) + t.exposed_s
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["layout"] = self.layout
        d["breakdown_s"] = self.breakdown()
        return d

    def summary(self) -> str:
        gb = units.GB
        mem = self.memory
        lines = [
            f"{self.model} on {self.gpus} GPUs ({self.nodes} x {self.system}): {self.layout}, {self.sharding}, "
            f"recompute {self.recompute}{', sequence parallel' if self.sequence_parallel else ''}",
            f"  batch {self.global_batch} sequences = {self.micro_batches} micro-batches of {self.micro_batch} per pipeline",
            f"  memory per GPU: weights {mem['weights'] / gb:.1f} GB, gradients {mem['gradients'] / gb:.1f} GB, "
            f"optimizer {mem['optimizer'] / gb:.1f} GB, activations {mem['activations'] / gb:.1f} GB "
            f"= {mem['total'] / gb:.1f} GB of {mem['usable'] / gb:.0f} GB usable -> {'fits' if self.fits else 'DOES NOT FIT'}",
            "  communication per step and per GPU:",
        ]
        width = max([24] + [len(t.kind) for t in self.traffic])
        for t in self.traffic:
            lines.append(f"    {t.kind:<{width}} {t.calls_per_step:>6} x {units.format_bytes(t.bytes_per_call):>9} "
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
    ep: int = 1
    cp: int = 1
    cp_kind: str = "ring"
    shard_group: int = 0         # ZeRO-3 shard group (cp x dp = FSDP, smaller = HSDP); 0 when zero < 3
    moe_imbalance: float = 1.0   # busiest expert rank's tokens / the mean (dropless routing)
    ep_overlap: bool = False     # all-to-alls hidden behind another micro-batch's compute (DualPipe-style)

    @property
    def layers_per_stage(self) -> int:
        """Layers of the busiest stage: l/p, rounded up when p does not divide l (uneven stages)."""
        return -(-self.model.layers // self.pp)

    @property
    def replicas(self) -> int:
        """Ranks holding the same weights of a dense layer: cp x dp (gradients reduce over them)."""
        return self.dp * self.cp

    @property
    def stage_params(self) -> float:
        """Parameters one GPU holds: its stage's layers and the embeddings, split by TP (routed experts by TP x EP)."""
        m = self.model
        if m.experts:
            return self.stage_dense_params + self.stage_expert_params
        return (self.layers_per_stage * m.layer_params + m.vocab * m.hidden
                + (m.seq_len * m.hidden if m.tied_embeddings else 0)) / self.tp

    @property
    def stage_expert_params(self) -> float:
        """Routed-expert parameters one GPU holds: its stage's share of experts / (TP x EP)."""
        return self.layers_per_stage * self.model.routed_layer_params / (self.tp * self.ep)

    @property
    def stage_dense_params(self) -> float:
        """Everything else one GPU holds (attention, shared experts, dense MLPs, embeddings), split by TP."""
        m = self.model
        if not m.experts:
            return self.stage_params
        return (self.layers_per_stage * (m.layer_params - m.routed_layer_params) + m.vocab * m.hidden
                + (m.seq_len * m.hidden if m.tied_embeddings else 0)) / self.tp

    @property
    def moe_load(self) -> float:
        """Expert work of the busiest rank / the mean: the capacity factor (padded), else the imbalance."""
        cf = self.model.capacity_factor
        return float(cf) if cf is not None else self.moe_imbalance


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
           bucket_bytes=None, memory_reserve_bytes=None, gpus=None, ep=1, cp=1, cp_kind="ring", fsdp=False,
           hsdp=None, moe_imbalance=1.0, ep_overlap=False, seq_len=None) -> Layout:
    """Check a layout's arguments (as ``estimate`` takes them) and return the ``Layout``."""
    m = resolve_model(model_)
    if seq_len is not None:
        m = dataclasses.replace(m, seq_len=validate.integer("seq_len", seq_len, low=1, high=100_000_000))
    sys_ = hardware.resolve_system(system)
    N = _gpu_count(sys_, nodes, gpus)
    t = validate.integer("tp", tp, low=1, high=m.heads)
    if m.heads % t:
        raise ValueError(f"tp must divide the number of heads ({m.heads}), got {t}")
    p = validate.integer("pp", pp, low=1, high=m.layers)
    if m.layers % p and not m.experts:
        raise ValueError(f"pp must divide the number of layers ({m.layers}), got {p}")
    c = validate.integer("cp", cp, low=1, high=m.seq_len)
    kind = validate.choice("cp_kind", cp_kind, CP_KINDS)
    if m.seq_len % c:
        raise ValueError(f"cp must divide the sequence length ({m.seq_len}), got {c}")
    if kind == "ulysses" and c > 1 and (m.heads % (t * c) or m.kv % (t * c) and (t * c) % m.kv):
        raise ValueError(f"cp must divide heads / tp ({m.heads // t}) for Ulysses, got {c}")
    if N % (t * p * c):
        raise ValueError(f"tp x cp x pp must divide the GPU count ({N}), got {t * c * p}")
    d = N // (t * p * c) if dp is None else validate.integer("dp", dp, low=1, high=N)
    if t * p * c * d != N:
        raise ValueError(f"dp must be gpus / (tp x cp x pp) = {N // (t * p * c)}, got {d}")
    e = validate.integer("ep", ep, low=1, high=10**7)
    if e > 1 and not m.experts:
        raise ValueError(f"ep must be 1 for a dense model ({m.name} has no experts), got {e}")
    if e > 1 and (m.experts % e or (d * c) % e):
        raise ValueError(f"ep must divide the experts ({m.experts}) and cp x dp ({c * d}), got {e}")
    B = validate.integer("global_batch", global_batch, low=1, high=10**9)
    b = validate.integer("micro_batch", micro_batch, low=1, high=B)
    if B % (b * d):
        raise ValueError(f"global_batch must be a multiple of micro_batch x dp = {b * d}, got {B}")
    mb = B // (b * d)
    z = validate.integer("zero", zero, low=0, high=3)
    if _flag("fsdp", fsdp) or hsdp is not None:
        z = 3
    shard = 0
    if z == 3:
        shard = c * d if hsdp is None else validate.integer("hsdp", hsdp, low=1, high=c * d)
        if (c * d) % shard or shard % e:
            raise ValueError(f"hsdp must divide cp x dp ({c * d}) and be a multiple of ep ({e}), got {shard}")
    if z >= 2 and p > 1:
        raise ValueError(f"zero must be 0 or 1 with pipeline parallelism (pp={p}); stages 2-3 need pp=1, got {z}")
    rc = resolve_recompute(recompute)
    v = validate.integer("interleave", interleave, low=1, high=m.layers)
    if v > 1 and (p == 1 or m.layers % p or (m.layers // p) % v or mb % p):
        raise ValueError(f"interleave must be 1 unless pp > 1, layers per stage ({m.layers // p}) divide by it "
                         f"and micro-batches ({mb}) are a multiple of pp; got {v}")
    eff = assumption("gpu_efficiency") if gpu_efficiency is None else validate.fraction("gpu_efficiency", gpu_efficiency)
    bucket = DDP_BUCKET_BYTES if bucket_bytes is None else validate.positive("bucket_bytes", bucket_bytes)
    reserve = assumption("memory_reserve_bytes") if memory_reserve_bytes is None else \
        validate.number("memory_reserve_bytes", memory_reserve_bytes, low=0, high=sys_.gpu.memory_bytes)
    return Layout(model=m, system=sys_, gpus=N, nodes=math.ceil(N / sys_.gpus_per_node), tp=t, pp=p, dp=d,
                  global_batch=B, micro_batch=b, micro_batches=mb, zero=z, recompute=rc, interleave=v,
                  sequence_parallel=_flag("sequence_parallel", sequence_parallel), gpu_efficiency=eff,
                  dp_overlap=_flag("dp_overlap", dp_overlap), bucket_bytes=bucket, reserve_bytes=reserve, ep=e, cp=c,
                  cp_kind=kind, shard_group=shard,
                  moe_imbalance=validate.number("moe_imbalance", moe_imbalance, low=1.0, high=float(max(1, m.experts))),
                  ep_overlap=_flag("ep_overlap", ep_overlap))


def memory_phase(L: Layout) -> dict:
    """Bytes per GPU on the worst stage: model states, activations, total, capacity, usable.

    The first stage holds the most activations (p micro-batches in flight); embeddings sit on
    the first and last stage; the last stage also holds the fp32 logits.
    """
    m, t, p, b, rc, sp = L.model, L.tp, L.pp, L.micro_batch, L.recompute, L.sequence_parallel
    if m.experts or L.cp > 1 or L.zero == 3 and L.shard_group != L.dp:
        # ZeRO shards over the cp x dp replicas (FSDP) or the shard group (HSDP); routed experts over 1/ep of them
        shard = L.shard_group if L.zero == 3 else L.replicas
        dense = model_state_bytes(L.stage_dense_params, shard, L.zero)
        experts = model_state_bytes(L.stage_expert_params, max(1, shard // L.ep), L.zero) if m.experts else \
            dict.fromkeys(dense, 0.0)
        states = {k: dense[k] + experts[k] for k in dense}
    else:
        states = model_state_bytes(L.stage_params, L.dp, L.zero)
    per_layer = activation_bytes_per_layer(m, b, t, rc, sp)
    if L.cp > 1:  # each context-parallel rank holds s/cp tokens of every activation (and of the logits below);
        # its attention runs blockwise (flash-style), so no s x s score matrix is stored
        per_layer = activation_bytes_per_layer(m, b, t, "selective" if rc == "none" else rc, sp) / L.cp
    in_flight = min(p, L.micro_batches) if p > 1 else 1
    factor = 1 + (p - 1) / (p * L.interleave) if L.interleave > 1 else 1.0
    # context parallelism runs attention blockwise (flash-style): no s x s score matrix is ever stored
    recomputing = (activation_bytes_per_layer(m, b, t, "none" if L.cp == 1 else "selective", sp) / L.cp
                   if rc == "full" else 0)
    acts_first = L.layers_per_stage * per_layer * in_flight * factor
    if rc == "full":  # the layer being recomputed holds its full activations
        acts_first += recomputing
    logits = 4 * m.seq_len * b * m.vocab / t / L.cp  # fp32 logits for the loss, last stage
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
    """Compute time = hardware FLOPs / (GPUs x peak x gpu_efficiency).

    MoE: the busiest expert rank does ``moe_load`` x its fair share of the routed-expert FLOPs
    (the capacity factor when tokens are padded to capacity, else the imbalance), and every rank waits for it.
    Uneven pipeline stages (p does not divide l): the busiest stage's ceil(l/p) layers set the pace,
    ``ceil(l/p) p / l`` times the mean stage's.
    """
    hw = training_flops(L.model, L.global_batch, L.recompute)
    work = hw
    if L.model.experts and L.moe_load != 1.0:
        work += (L.moe_load - 1) * routed_expert_flops(L.model, L.global_batch, L.recompute)
    total = work / (L.gpus * L.system.gpu.bf16_flops * L.gpu_efficiency)
    if L.model.layers % L.pp:
        total *= L.layers_per_stage * L.pp / L.model.layers
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
    if L.cp > 1:
        size /= L.cp
    one = cross_node_all_reduce_time(L.system, size, t) if link.crosses_nodes else _coll("all_reduce", size, t, link)
    total = calls * one
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
    link = group_link(L.system, L.pp, t * L.dp * L.cp)
    size = ACT_BYTES * m.seq_len * L.micro_batch * m.hidden / (t if (link.crosses_nodes and t > 1) else 1)  # scatter-gather
    if L.cp > 1:
        size /= L.cp
    one = link.latency + size / pair_bandwidth(L.system, link)
    calls = 2 * L.interleave * L.micro_batches
    return [Traffic("pipeline send/recv", (), 2, link.name, link.crosses_nodes, calls, size, calls * one, calls * one,
                    "point-to-point")]


def pair_bandwidth(system, link: GroupLink) -> float:
    """Bytes/s per direction of one send between two GPUs: one GPU's NIC share across nodes, else the link."""
    return _fabric(hardware.resolve_system(system)).net_bw_per_gpu if link.crosses_nodes else link.bandwidth


ZERO3_GATHERS_PER_MICRO_BATCH = 2          # before each unit's forward and again before its backward
ZERO3_REDUCE_SCATTERS_PER_MICRO_BATCH = 1  # its gradients, once


def zero3_step_bytes(param_bytes, micro_batches=1) -> dict:
    """Whole-buffer bytes the ZeRO-3 / FSDP collectives move in one step, as ``dp_phase`` counts them."""
    n = validate.non_negative("param_bytes", param_bytes)
    mb = validate.integer("micro_batches", micro_batches, low=1, high=10**6)
    return {"all_gather": ZERO3_GATHERS_PER_MICRO_BATCH * mb * n,
            "reduce_scatter": ZERO3_REDUCE_SCATTERS_PER_MICRO_BATCH * mb * n}


def _dp_groups(L: Layout) -> list:
    """(kind prefix, parameters, group size, stride) of each gradient-reduction group.

    Dense weights reduce over the cp x dp replicas (the ZeRO-3 shard group with HSDP) at stride
    tp; routed experts over 1/ep of them at stride tp x ep (the expert-data-parallel group).
    """
    d = L.shard_group if L.zero == 3 else L.replicas
    if not L.model.experts:
        return [("", L.stage_params, d, L.tp)]
    return [("", L.stage_dense_params, d, L.tp), ("expert ", L.stage_expert_params, d // L.ep, L.tp * L.ep)]


def dp_phase(L: Layout, c: Compute, notes: list) -> list:
    """Data-parallel / ZeRO / FSDP / HSDP traffic per step; each Traffic's exposed_s is what overlap leaves visible.

    ZeRO-0/1 reduce gradients once after the last micro-batch, hidden behind the last backward
    pass bucket by bucket. ZeRO-2 reduce-scatters every micro-batch. ZeRO-3 (FSDP) gathers each
    layer's weights before its forward and again before its backward and reduce-scatters its
    gradients, every micro-batch; prefetching the next layer hides all of it behind compute except
    one layer's share. HSDP shards within ``shard_group`` ranks and all-reduces each rank's 1/g
    gradient shard across the replicas once per step, hidden like DDP's all-reduce.
    """
    mb = L.micro_batches
    groups = [g for g in _dp_groups(L) if g[2] > 1]
    hsdp = L.zero == 3 and L.shard_group < L.replicas   # its replica all-reduce runs even with a shard group of 1
    if not groups and not hsdp:
        return []
    window = c.backward_share * c.micro_batch_s / L.interleave  # last backward pass of the stage (one chunk)
    out, crosses = [], []

    def row(kind, ids, d, link, calls, size, time_s, exposed):
        crosses.append(link) if link.crosses_nodes else None
        return Traffic(kind, ids, d, link.name, link.crosses_nodes, calls, size, time_s, exposed,
                       ids[0] if len(ids) == 1 else "RS + AG")

    if L.zero <= 1:
        ids = ("all_reduce",) if L.zero == 0 else ("reduce_scatter", "all_gather")
        parts = []
        for prefix, params, d, stride in groups:
            link = group_link(L.system, d, stride)
            grad = BYTES_PER_PARAM_ADAM["gradients"] * params
            parts.append((prefix, d, link, grad, sum(_coll(i, grad, d, link) for i in ids)))
        t_dp = sum(p[4] for p in parts)
        first_bucket = min(1.0, L.bucket_bytes / sum(p[3] for p in parts))
        exposed = max(t_dp * first_bucket, t_dp - window) if L.dp_overlap else t_dp
        for prefix, d, link, grad, t in parts:
            kind = prefix + ("data parallel grads" if L.zero == 0 else "ZeRO-1 grads + weights")
            out.append(row(kind, ids, d, link, 1, grad, t, exposed * (t / t_dp)))
    elif L.zero == 2:
        for prefix, params, d, stride in groups:
            link = group_link(L.system, d, stride)
            grad = BYTES_PER_PARAM_ADAM["gradients"] * params
            first_bucket = min(1.0, L.bucket_bytes / grad)
            t_rs, t_ag = _coll("reduce_scatter", grad, d, link), _coll("all_gather", grad, d, link)
            per_mb = max(t_rs * first_bucket, t_rs - c.backward_share * c.micro_batch_s) if L.dp_overlap else t_rs
            out += [row(prefix + "ZeRO-2 grads", ("reduce_scatter",), d, link, mb, grad, mb * t_rs, mb * per_mb),
                    row(prefix + "ZeRO-2 weights", ("all_gather",), d, link, 1, grad, t_ag, t_ag)]
    else:
        parts = []
        for prefix, params, d, stride in groups:
            link = group_link(L.system, d, stride)
            grad = BYTES_PER_PARAM_ADAM["gradients"] * params
            parts.append((prefix, d, link, grad, _coll("all_gather", grad, d, link),
                          _coll("reduce_scatter", grad, d, link)))
        comm_mb = sum(2 * p[4] + p[5] for p in parts)
        # prefetching hides it behind compute, except one layer's gather
        per_mb = max(comm_mb / L.layers_per_stage, comm_mb - c.micro_batch_s) if L.dp_overlap else comm_mb
        share = mb * per_mb / (mb * comm_mb) if comm_mb else 0.0
        for prefix, d, link, grad, t_ag, t_rs in parts:
            g_calls, r_calls = ZERO3_GATHERS_PER_MICRO_BATCH * mb, ZERO3_REDUCE_SCATTERS_PER_MICRO_BATCH * mb
            out += [row(prefix + "ZeRO-3 weight gathers", ("all_gather",), d, link, g_calls, grad, g_calls * t_ag,
                        g_calls * t_ag * share),
                    row(prefix + "ZeRO-3 grads", ("reduce_scatter",), d, link, r_calls, grad, r_calls * t_rs,
                        r_calls * t_rs * share)]
        if hsdp:  # all-reduce each shard across the replicas, once per step
            r = L.replicas // L.shard_group
            link = group_link(L.system, r, L.tp * L.shard_group)
            shards = [(prefix, BYTES_PER_PARAM_ADAM["gradients"] * params / max(1, d))
                      for prefix, params, d, _ in _dp_groups(L)]
            for prefix, size in shards:
                t = _coll("all_reduce", size, r, link)
                first_bucket = min(1.0, L.bucket_bytes / size)
                exposed = max(t * first_bucket, t - window) if L.dp_overlap else t
                out.append(row(prefix + "HSDP replica all-reduce", ("all_reduce",), r, link, 1, size, t, exposed))
    if crosses:
        notes.append(f"data-parallel traffic crosses nodes: {crosses[0].bandwidth / units.GB:.1f} GB/s per direction "
                     "per rank")
    return out


def all_to_all_time(system, nbytes, ranks, stride) -> tuple[float, GroupLink]:
    """One all-to-all of ``nbytes`` per rank (its whole send buffer) over ``ranks`` ranks ``stride`` apart.

    Inside one NVLink domain: the registry's direct algorithm on the GPU fabric. Across nodes:
    ``costmodel.two_tier_all_to_all``: each rank sends (p-k)/p of its buffer through its share
    of the node's NICs and (k-1)/p over the GPU fabric, at once (k group members per node). This
    is the rail-optimised case: NCCL's PXN (or DeepEP's NVLink forwarding) first moves a message
    over NVLink to the GPU on the destination's rail, so every NIC carries an even share.
    Returns (seconds, the link that bounds it).
    """
    sys_ = hardware.resolve_system(system)
    link = group_link(sys_, ranks, stride)
    if ranks <= 1 or nbytes <= 0:
        return 0.0, link
    if not link.crosses_nodes:
        return costmodel.launch_latency() + float(costmodel.collective_time(
            "all_to_all", nbytes, ranks, link.bandwidth, link.latency, "direct")), link
    g = sys_.gpus_per_node
    k = max(1, min(ranks, g // stride)) if stride < g else 1
    f = _fabric(sys_)
    t = costmodel.two_tier_all_to_all(nbytes, ranks, k, f.intra_bw, f.net_bw_per_gpu, f.net_hop, f.launch)
    return float(t), link


def ep_phase(L: Layout, c: Compute, notes: list) -> list:
    """Expert-parallel all-to-alls: dispatch and combine, 2 forward + 2 backward per MoE layer (+2 recomputed).

    Each rank sends its tokens' hidden states to the ranks of their top-k experts (dispatch) and
    receives the results back (combine): s b / (cp x tp) tokens x top_k x h x 2 bytes per call,
    times ``moe_load`` (the busiest rank). The group is ep consecutive ranks of the cp x dp block
    (stride tp). Exposed, unless ``ep_overlap``: then each layer's all-to-alls hide behind one
    layer of another micro-batch's compute (DeepSeek's DualPipe), and only the excess shows.
    """
    m = L.model
    if L.ep == 1 or not m.moe_layers:
        return []
    moe_layers = m.moe_layers * L.layers_per_stage / m.layers       # MoE layers on the busiest stage
    passes = 4 + (2 if L.recompute == "full" else 0)
    tokens = m.seq_len * L.micro_batch / (L.cp * L.tp)
    size = tokens * m.top_k * m.hidden * ACT_BYTES * L.moe_load
    one, link = all_to_all_time(L.system, size, L.ep, L.tp)
    calls = round(passes * moe_layers * L.micro_batches)
    total = passes * moe_layers * L.micro_batches * one
    exposed = total
    if L.ep_overlap:
        per_layer_compute = c.micro_batch_s / L.layers_per_stage
        exposed = moe_layers * L.micro_batches * max(0.0, passes * one - per_layer_compute)
    if link.crosses_nodes:
        notes.append(f"expert parallelism of {L.ep} spans nodes: its all-to-alls leave the {L.system.gpu_link.name} "
                     "domain")
    return [Traffic("expert parallel all-to-all", ("all_to_all",), L.ep, link.name, link.crosses_nodes, calls, size,
                    total, exposed, "dispatch+combine")]


def ring_attention_condition(model_, system, cp, tp=1, gpu_efficiency=None, seq_len=None) -> dict:
    """When ring attention hides its K/V passing: each step's attention compute >= its K/V transfer.

    One step computes attention of s/cp queries against s/cp keys, 4 (s/cp)^2 b h / tp FLOP, while
    the next K and V chunk, 4 (s/cp) b h_kv / tp bytes (h_kv = h x kv_heads / heads), crosses the
    link. Hidden when  s/cp >= F / (B x heads/kv_heads)  with F the achieved FLOP/s and B the
    link's bytes/s per direction (latency left out). Returns the threshold chunk length in tokens,
    the chunk length, both per-step times and whether it hides. ``seq_len`` overrides the model's.
    """
    m = resolve_model(model_)
    if seq_len is not None:
        m = dataclasses.replace(m, seq_len=validate.integer("seq_len", seq_len, low=1, high=100_000_000))
    sys_ = hardware.resolve_system(system)
    cp = validate.integer("cp", cp, low=1, high=m.seq_len)
    tp = validate.integer("tp", tp, low=1, high=m.heads)
    eff = assumption("gpu_efficiency") if gpu_efficiency is None else validate.fraction("gpu_efficiency", gpu_efficiency)
    link = group_link(sys_, cp, tp)
    flops = sys_.gpu.bf16_flops * eff
    bw = pair_bandwidth(sys_, link)
    chunk = m.seq_len / cp
    kv_dim = m.hidden * m.kv / m.heads
    compute_s = 4 * chunk * chunk * m.hidden / tp / flops
    transfer_s = link.latency + 4 * chunk * kv_dim / tp / bw
    threshold = flops / (bw * m.heads / m.kv)
    return {"chunk_tokens": chunk, "threshold_tokens": threshold, "compute_step_s": compute_s,
            "transfer_step_s": transfer_s, "hidden": compute_s >= transfer_s, "link": link.name,
            "link_bw": bw, "flops": flops}


def cp_phase(L: Layout, c: Compute, notes: list) -> list:
    """Context-parallel traffic per step: ring attention's K/V passing, or Ulysses' all-to-alls of heads.

    Ring (per layer and micro-batch): cp-1 steps forward, each sending the next K/V chunk
    (4 (s/cp) b h_kv / tp bytes) while attending to the current one; the backward pass moves K/V
    and their gradients (twice the bytes, twice the compute); full recomputation repeats the
    forward. Each step shows only max(0, transfer - compute): see ``ring_attention_condition``.
    Ulysses: an all-to-all of q, k, v before attention and one of the output after it
    ((2h + 2h_kv) s b / (cp tp) x 2 bytes per layer forward, the same backward), exposed.
    """
    m = L.model
    if L.cp == 1:
        return []
    cp, t, b = L.cp, L.tp, L.micro_batch
    fwd_passes = 1 + (1 if L.recompute == "full" else 0)
    kv_dim = m.hidden * m.kv / m.heads
    chunk = m.seq_len / cp
    per_pass = L.layers_per_stage * L.micro_batches
    if L.cp_kind == "ring":
        link = group_link(L.system, cp, t)
        size = 4 * chunk * b * kv_dim / t                       # K and V, 16-bit
        step_s = link.latency + size / pair_bandwidth(L.system, link)
        attn_s = 4 * chunk * chunk * b * m.hidden / t / (L.system.gpu.bf16_flops * L.gpu_efficiency)
        sends = (cp - 1) * per_pass * (fwd_passes + 2)          # backward: K/V and dK/dV (two sends' worth)
        total = sends * step_s
        exposed = sends * max(0.0, step_s - attn_s)
        if exposed > 0:
            notes.append(f"ring attention: K/V transfer ({units.format_time(step_s)}) exceeds a step's attention "
                         f"compute ({units.format_time(attn_s)}); chunks of s/cp = {chunk:.0f} tokens are too short")
        return [Traffic("context parallel K/V ring", (), cp, link.name, link.crosses_nodes, sends, size, total, exposed,
                        "ring send/recv")]
    size = (2 * m.hidden + 2 * kv_dim) * chunk * b / t * ACT_BYTES / 2   # q,k,v then out: two calls of the mean size
    one, link = all_to_all_time(L.system, size, cp, t)
    calls = 2 * per_pass * (fwd_passes + 1)
    return [Traffic("context parallel all-to-all", ("all_to_all",), cp, link.name, link.crosses_nodes, calls, size,
                    calls * one, calls * one, "Ulysses heads")]


def estimate(model_, system, nodes=None, *, tp=1, pp=1, dp=None, global_batch, micro_batch=1, zero=0,
             recompute="full", interleave=1, sequence_parallel=False, gpu_efficiency=None, dp_overlap=True,
             bucket_bytes=None, memory_reserve_bytes=None, gpus=None, ep=1, cp=1, cp_kind="ring", fsdp=False,
             hsdp=None, moe_imbalance=1.0, ep_overlap=False, seq_len=None) -> Estimate:
    """Memory per GPU, traffic per step and step time for one layout.

    model_: id or Transformer; system: catalog id or System; nodes (or gpus) sets the GPU count;
    tp x pp x dp must equal it (dp defaults to the rest). global_batch and micro_batch in
    sequences; zero 0-3; recompute none/selective/full (True = full); interleave v >= 1 virtual
    stages per GPU; gpu_efficiency in (0, 1] (default: the sourced assumption);
    bucket_bytes: gradient bucket size (bytes, default ``DDP_BUCKET_BYTES``);
    memory_reserve_bytes: memory not usable (bytes). ep: expert-parallel ranks (an MoE model;
    divides its experts and cp x dp); cp: context-parallel ranks, cp_kind ``ring`` or ``ulysses``;
    fsdp: ZeRO-3 over all cp x dp ranks; hsdp=G: ZeRO-3 within groups of G, replicated across;
    moe_imbalance >= 1: busiest expert rank's load / mean (dropless routing); ep_overlap: hide
    the all-to-alls behind another micro-batch; seq_len overrides the model's. Composes
    ``memory_phase``, ``compute_phase``, ``tp_phase``, ``pp_phase``, ``cp_phase``, ``ep_phase``
    and ``dp_phase`` on the 1F1B schedule.
    """
    L = layout(model_, system, nodes, tp=tp, pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch,
               zero=zero, recompute=recompute, interleave=interleave, sequence_parallel=sequence_parallel,
               gpu_efficiency=gpu_efficiency, dp_overlap=dp_overlap, bucket_bytes=bucket_bytes,
               memory_reserve_bytes=memory_reserve_bytes, gpus=gpus, ep=ep, cp=cp, cp_kind=cp_kind, fsdp=fsdp,
               hsdp=hsdp, moe_imbalance=moe_imbalance, ep_overlap=ep_overlap, seq_len=seq_len)
    return estimate_layout(L)


def estimate_layout(L: Layout) -> Estimate:
    """``estimate`` for a Layout already checked by ``layout``."""
    if not isinstance(L, Layout):
        raise ValueError(f"L must be a parallel.Layout (from parallel.layout(...)), got {type(L).__name__}")
    notes = []
    memory = memory_phase(L)
    c = compute_phase(L)
    tp_traffic, pp_traffic = tp_phase(L, notes), pp_phase(L)
    cp_traffic, ep_traffic = cp_phase(L, c, notes), ep_phase(L, c, notes)
    dp_traffic = dp_phase(L, c, notes)
    tp_ex = sum(tr.exposed_s for tr in tp_traffic)
    pp_ex = sum(tr.exposed_s for tr in pp_traffic)
    dp_ex = sum(tr.exposed_s for tr in dp_traffic)
    cp_ex = sum(tr.exposed_s for tr in cp_traffic)
    ep_ex = sum(tr.exposed_s for tr in ep_traffic)
    # 1F1B schedule: (m + (p-1)/v) slots
    mb, p, v = L.micro_batches, L.pp, L.interleave
    slot = c.micro_batch_s + (tp_ex + pp_ex) / mb
    if cp_ex or ep_ex:
        slot += (cp_ex + ep_ex) / mb
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
                    traffic=tp_traffic + cp_traffic + ep_traffic + pp_traffic + dp_traffic, step_time_s=step,
                    compute_s=c.compute_s,
                    bubble_s=bubble, bubble_fraction=(p - 1) / (v * mb), tp_exposed_s=tp_ex, pp_exposed_s=pp_ex,
                    dp_exposed_s=dp_ex, tokens_per_s_per_gpu=L.global_batch * L.model.seq_len / step / L.gpus,
                    tflops_per_gpu=per_gpu(c.hardware_flops), model_tflops_per_gpu=per_gpu(c.model_flops),
                    mfu=per_gpu(c.model_flops) * 1e12 / peak, hfu=per_gpu(c.hardware_flops) * 1e12 / peak,
                    notes=notes, ep=L.ep, cp=L.cp, cp_kind=L.cp_kind, shard_group=L.shard_group, ep_exposed_s=ep_ex,
                    cp_exposed_s=cp_ex)


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
        return [{"rank": i + 1, "layout": e.layout, "tp": e.tp, "pp": e.pp, "dp": e.dp, "ep": e.ep, "cp": e.cp,
                 "sharding": e.sharding, "interleave": e.interleave,
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
        rows = self.table(top)
        w = max([22] + [len(r["layout"]) for r in rows])
        lines.append(f"{'#':>3} {'layout':<{w}} {'mb':>3} {'ZeRO':>4} {'recompute':<9} {'step':>9} "
                     f"{'tok/s/GPU':>10} {'TFLOP/s':>8} {'MFU':>6} {'mem GB':>7}")
        for row in rows:
            lines.append(f"{row['rank']:>3} {row['layout']:<{w}} {row['micro_batch']:>3} {row['zero']:>4} "
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
         gpu_efficiency=None, dp_overlap=True, ep_options=None, cp_options=(1,), cp_kind="ring", hsdp_options=(None,),
         moe_imbalance=1.0, ep_overlap=False, seq_len=None) -> Plan:
    """Search TP x PP x DP (x micro-batch, ZeRO, recomputation, interleaving) and rank what fits by step time.

    TP runs over powers of two that divide the heads, up to ``max_tp`` (default: twice the GPUs
    of a node, so that layouts crossing the NVLink domain are shown losing); PP over divisors
    of the layer count. Returns a Plan whose ``ranked[0]`` is the winner. ZeRO-2/3 are left out
    by default: against published ZeRO-3 runs the model is 1.7-3.4x optimistic at 768-1536 GPUs
    (see ``validation_table``); pass ``zero_stages=(0, 1, 2, 3)`` to include them anyway.

    Also searched: expert parallelism over ``ep_options`` (default: every power of two dividing
    an MoE's experts; 1 for a dense model), context parallelism over ``cp_options`` (default 1)
    of ``cp_kind``, and with ZeRO-3 the FSDP/HSDP shard groups in ``hsdp_options`` (None = all
    cp x dp ranks). An MoE may use uneven pipeline stages, so PP also runs over powers of two.
    """
    m = resolve_model(model_)
    if seq_len is not None:
        m = dataclasses.replace(m, seq_len=validate.integer("seq_len", seq_len, low=1, high=100_000_000))
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
    if ep_options is None:
        ep_options = [x for x in (2 ** k for k in range(0, 21)) if m.experts and x <= m.experts and m.experts % x == 0] \
            or [1]
    for name, seq in (("ep_options", ep_options), ("cp_options", cp_options), ("hsdp_options", hsdp_options)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise ValueError(f"{name} must be a non-empty list, got {seq!r}")
    ep_options = [validate.integer("ep_options", x, low=1, high=max(1, m.experts)) for x in ep_options]
    cp_options = [validate.integer("cp_options", x, low=1, high=m.seq_len) for x in cp_options]
    cp_kind = validate.choice("cp_kind", cp_kind, CP_KINDS)
    hsdp_options = [None if x is None else validate.integer("hsdp_options", x, low=1, high=N) for x in hsdp_options]
    tps = [x for x in (2 ** k for k in range(0, 12)) if x <= max_tp and m.heads % x == 0 and N % x == 0]
    pps = _divisors(m.layers)
    if m.experts:  # uneven stages: the busiest holds ceil(l/p) layers
        pps = sorted(set(pps) | {x for x in (2 ** k for k in range(1, 12)) if x < m.layers})
    fitting, searched, rejected = [], 0, 0
    common = dict(gpu_efficiency=gpu_efficiency, dp_overlap=dp_overlap, moe_imbalance=moe_imbalance,
                  ep_overlap=ep_overlap, cp_kind=cp_kind)
    for t in tps:
        for c in cp_options:
            if m.seq_len % c or (cp_kind == "ulysses" and m.heads % (t * c)):
                continue
            for p in pps:
                if N % (t * p * c):
                    continue
                d = N // (t * p * c)
                for b in micro_batches:
                    if B % (b * d):
                        continue
                    mb = B // (b * d)
                    for e_ in ep_options:
                        if e_ > 1 and (m.experts % e_ or (d * c) % e_):
                            continue
                        for z in zero_stages:
                            if (z >= 2 and p > 1) or (z > 0 and d * c == 1):
                                continue
                            for g in (hsdp_options if z == 3 else (None,)):
                                if g is not None and ((d * c) % g or g % e_ or g == d * c):
                                    continue
                                for rc in recompute_options:
                                    for v in interleave_options:
                                        if v > 1 and (p == 1 or m.layers % p or (m.layers // p) % v or mb % p):
                                            continue
                                        searched += 1
                                        L = layout(m, sys_, gpus=N, tp=t, pp=p, global_batch=B, micro_batch=b, zero=z,
                                                   recompute=rc, interleave=v, ep=e_, cp=c, hsdp=g,
                                                   sequence_parallel=sequence_parallel and t > 1, **common)
                                        e = estimate_layout(L)
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
    out.append(f"{best.layout}, micro-batch {best.micro_batch}, {best.sharding}, recompute {best.recompute}: "
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
              ("the best layout with more pipeline stages", best_where(lambda e: e.pp > best.pp)),
              ("the best layout with less expert parallelism", best_where(lambda e: e.ep < best.ep)),
              ("the best layout with more expert parallelism", best_where(lambda e: e.ep > best.ep)),
              ("the best layout with less context parallelism", best_where(lambda e: e.cp < best.cp)),
              ("the best layout with more context parallelism", best_where(lambda e: e.cp > best.cp))]
    seen = set()
    for label, e in rivals:
        if e is None or id(e) in seen or e is best:
            continue
        seen.add(id(e))
        diffs = {k: v - bd.get(k, 0.0) for k, v in e.breakdown().items()}
        worst = max(diffs, key=diffs.get)
        out.append(f"{label} ({e.layout}, mb {e.micro_batch}, {e.sharding}, {e.recompute}) is "
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


# ---------------------------------------------------------------- validation: FSDP, CP, MoE, all-to-all

@lru_cache(maxsize=1)
def published_modern() -> dict:
    """The parsed ``data/published_parallel_modern.json``: FSDP/HSDP, CP, MoE and all-to-all cases."""
    return datafiles.load("published_parallel_modern.json")


def _case_system(name) -> hardware.System:
    """A catalog system, or one of the data file's named variants (H800 = an H100 node with less NVLink)."""
    variants = published_modern()["systems"]
    if name in variants:
        v = variants[name]
        return hardware.system(v["base"]).variant(gpu_link_gb_s=v["gpu_link_gb_s"], name=v["name"])
    return hardware.system(name)


def all_to_all_bottleneck_bandwidth(system, nbytes, ranks, stride=1) -> float:
    """Bytes/s through the bottleneck link of one all-to-all (NVLink inside a node, the NIC across nodes).

    What DeepEP reports: the bytes that crossed the slower link divided by the time. ``nbytes`` is
    one rank's whole send buffer.
    """
    sys_ = hardware.resolve_system(system)
    t, link = all_to_all_time(sys_, nbytes, ranks, stride)
    g = sys_.gpus_per_node
    k = max(1, min(ranks, g // stride)) if stride < g else 1
    share = (ranks - k) / ranks if link.crosses_nodes else (ranks - 1) / ranks
    return share * nbytes / t


def modern_validation_table() -> list[dict]:
    """Every FSDP/CP/MoE/all-to-all case: predicted, measured, p/m, and p/m over its group's fitted scale.

    A group's scale is the geometric mean of p/m over its ``fit`` cases (1 when it has none);
    ``test`` cases never enter it. ``fitted`` = p/m / scale: 1.00 means the model gets the case
    right once the group's level is set.
    """
    rows = []
    data = published_modern()
    for case in data["cases"]:
        sys_ = _case_system(case["system"])
        row = {"id": case["id"], "group": case["group"], "split": case["split"], "kind": case["kind"],
               "where": case["where"], "source": case["source"], "url": datafiles.source(case["source"])["url"],
               "assumed": case.get("assumed", [])}
        if case["kind"] == "all_to_all":
            size = case["tokens"] * case["top_k"] * case["hidden"] * case["bytes_per_value"]
            row.update(config=f"all-to-all EP{case['ep']} on {case['system']}, {units.format_bytes(size)} per rank",
                       quantity="bottleneck GB/s", measured=float(case["measured_gb_s"]),
                       predicted=all_to_all_bottleneck_bandwidth(sys_, size, case["ep"]) / units.GB)
        else:
            keys = ("tp", "pp", "ep", "cp", "zero", "fsdp", "hsdp", "micro_batch", "recompute", "seq_len", "ep_overlap")
            e = estimate(case["model"], sys_, gpus=case["gpus"], global_batch=case["global_batch"],
                         **{k: case[k] for k in keys if k in case})
            seq = f" s={case['seq_len']}" if "seq_len" in case else ""
            row.update(config=f"{case['model']} {case['gpus']} GPUs {e.layout} {e.sharding}{seq}",
                       quantity="tokens/s per GPU", measured=float(case["measured_tokens_per_s_per_gpu"]),
                       predicted=e.tokens_per_s_per_gpu, fits=e.fits)
        row["ratio"] = row["predicted"] / row["measured"]
        rows.append(row)
    scales = {}
    for g in {r["group"] for r in rows}:
        fit = [r["ratio"] for r in rows if r["group"] == g and r["split"] == "fit"]
        scales[g] = math.exp(sum(math.log(x) for x in fit) / len(fit)) if fit else 1.0
    for r in rows:
        r["scale"] = scales[r["group"]]
        r["fitted"] = r["ratio"] / scales[r["group"]]
    return rows


def modern_validation_summary(rows=None) -> str:
    """The FSDP/CP/MoE/all-to-all validation table as text, then each split's median |fitted - 1|."""
    rows = modern_validation_table() if rows is None else rows
    lines = [f"{'case':<28} {'split':<5} {'configuration':<64} {'quantity':<17} {'pred':>7} {'meas':>7} "
             f"{'p/m':>5} {'fit':>5}"]
    for r in rows:
        star = "*" if r.get("fits") is False else " "
        lines.append(f"{r['id']:<28} {r['split']:<5} {r['config'][:64]:<64} {r['quantity']:<17} "
                     f"{r['predicted']:>7.0f}{star}{r['measured']:>7.0f} {r['ratio']:>5.2f} {r['fitted']:>5.2f}")
    for split in ("fit", "test"):
        errs = sorted(abs(r["fitted"] - 1) for r in rows if r["split"] == split)
        if errs:
            mid = errs[len(errs) // 2] if len(errs) % 2 else 0.5 * (errs[len(errs) // 2 - 1] + errs[len(errs) // 2])
            lines.append(f"{split}: {len(errs)} cases, median |fit - 1| = {mid:.2f}, worst {errs[-1]:.2f}")
    lines.append("p/m: predicted / measured. fit: p/m divided by the group's scale (geometric mean of p/m over the "
                 "group's fit cases; test cases never set it). *: the model's memory check says the run does not fit "
                 "(see the case's 'assumed').")
    return "\n".join(lines)
