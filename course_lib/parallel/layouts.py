"""A parallel layout checked once: model, system, TP x CP x PP x DP (x EP) and the run's settings.

Also the model's stated assumptions (``data/published_training.json``) and the constants the phases share.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

from .. import datafiles, hardware, validate
from ..transformer import Transformer, resolve_model, resolve_recompute
from .precision import PRECISIONS, recipe

ACT_BYTES = 2  # 16-bit activations
# PyTorch DDP's default gradient bucket: bucket_cap_mb=25 (signature in the DistributedDataParallel docs,
# https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html), which
# torch/nn/parallel/distributed.py turns into bytes as bucket_cap_mb x 1024 x 1024: 25 MiB, not 25 MB.
DDP_BUCKET_BYTES = 25 * 2**20
CP_KINDS = ("ring", "ulysses")  # context parallelism: ring attention (K/V passed around) or all-to-all of heads


# ---------------------------------------------------------------- stated assumptions

@lru_cache(maxsize=1)
def published() -> dict:
    """The parsed ``data/published_training.json``: validation cases and model assumptions."""
    return datafiles.load("published_training.json")


def assumption(name) -> float:
    """A stated model assumption (``gpu_efficiency``, ``memory_reserve_bytes``) from the data file."""
    table = published()["model_assumptions"]
    return float(table[validate.choice("name", name, table)]["value"])


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
    precision: str = "bf16"      # the recipe (``data/precision.json``): bf16, fp8 or mxfp8
    fp8_dispatch: bool = False   # the MoE dispatch all-to-all in FP8 (DeepSeek-V3), the combine in BF16

    @property
    def linear_peak_flops(self) -> float:
        """FLOP/s peak the linear layers run at under this layout's precision recipe."""
        return self.system.gpu.peak_flops(recipe(self.precision)["linear_peak"])

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
    def stage_linear_params(self) -> float:
        """Linear-layer weights one GPU holds (its stage's layers without norms; no embedding or output layer):
        what an FP8 recipe keeps FP8 copies of."""
        m = self.model
        dense = self.layers_per_stage * (m.layer_params - m.routed_layer_params - 13 * m.hidden) / self.tp
        return dense + (self.stage_expert_params if m.experts else 0.0)

    @property
    def moe_load(self) -> float:
        """Expert work of the busiest rank / the mean: the capacity factor (padded), else the imbalance."""
        cf = self.model.capacity_factor
        return float(cf) if cf is not None else self.moe_imbalance


def _model_with_seq_len(model_, seq_len=None):
    """The resolved model, with its sequence length replaced by ``seq_len`` when that is given."""
    m = resolve_model(model_)
    if seq_len is not None:
        m = dataclasses.replace(m, seq_len=validate.integer("seq_len", seq_len, low=1, high=100_000_000))
    return m


def _ulysses_fits(m: Transformer, tp: int, cp: int) -> bool:
    """Whether Ulysses context parallelism of ``cp`` ranks splits ``m``'s attention heads under ``tp``.

    Its all-to-all hands each of the tp x cp ranks whole heads: tp x cp must divide the query heads,
    and divide the KV heads (each rank gets its own) or be a multiple of them (each KV head is then
    replicated on tp x cp / kv ranks, as DeepSpeed-Ulysses and Megatron do for GQA). ``cp`` = 1 always fits.
    """
    g = tp * cp
    return cp == 1 or (m.heads % g == 0 and (m.kv % g == 0 or g % m.kv == 0))


def _ulysses_cps(m: Transformer, tp: int) -> list[int]:
    """Every ``cp`` Ulysses allows for ``m`` under ``tp`` that also divides the sequence length (ascending)."""
    return [c for c in range(1, m.heads // tp + 1) if m.seq_len % c == 0 and _ulysses_fits(m, tp, c)]


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


def _check_precision(m: Transformer, sys_, precision, fp8_dispatch) -> str:
    """The checked precision: a recipe the GPU has a peak for; fp8_dispatch only for an MoE in FP8 or MXFP8."""
    prec = validate.choice("precision", precision, PRECISIONS)
    sys_.gpu.peak_flops(recipe(prec)["linear_peak"])   # a GPU without this peak is refused here, by name
    if _flag("fp8_dispatch", fp8_dispatch) and (prec == "bf16" or not m.experts):
        raise ValueError(f"fp8_dispatch needs an MoE model and precision fp8 or mxfp8, got {m.name} in {prec}")
    return prec


def layout(model_, system, nodes=None, *, tp=1, pp=1, dp=None, global_batch, micro_batch=1, zero=0,
           recompute="full", interleave=1, sequence_parallel=False, gpu_efficiency=None, dp_overlap=True,
           bucket_bytes=None, memory_reserve_bytes=None, gpus=None, ep=1, cp=1, cp_kind="ring", fsdp=False,
           hsdp=None, moe_imbalance=1.0, ep_overlap=False, seq_len=None, precision="bf16",
           fp8_dispatch=False) -> Layout:
    """Check a layout's arguments (as ``estimate`` takes them) and return the ``Layout``."""
    m = _model_with_seq_len(model_, seq_len)
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
    if kind == "ulysses" and not _ulysses_fits(m, t, c):
        allowed = ", ".join(map(str, _ulysses_cps(m, t)))
        raise ValueError(f"cp must be one of {allowed} for Ulysses with tp {t} on {m.name}: tp x cp must divide its "
                         f"{m.heads} heads, and divide its {m.kv} KV heads or be a multiple of them "
                         f"(KV heads replicated); got {c}")
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
    prec = _check_precision(m, sys_, precision, fp8_dispatch)
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
                  ep_overlap=_flag("ep_overlap", ep_overlap), precision=prec, fp8_dispatch=fp8_dispatch)
