"""A parallel layout checked once: model, system, TP x CP x PP x DP (x EP) and the run's settings.

Also the model's stated assumptions (``data/published_training.json``) and the constants the phases share.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from .. import datafiles, hardware, validate
from ..transformer import Transformer, resolve_model, resolve_recompute
from .links import Links
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


def assumption(name: str) -> float:
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
    gpu_efficiency: float | None   # None: each GEMM priced from its shape (``efficiency``); else one fraction of peak
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
    def links(self) -> Links:
        """The group links and collective prices of this layout's (resolved) system: ``links.Links``."""
        return Links(self.system)

    @property
    def attention_flops(self) -> float:
        """FLOP/s attention's products reach: BF16 peak x the given gpu_efficiency, else x the fitted BF16 e_max."""
        from .efficiency import constants   # noqa: PLC0415 - efficiency sits beside layouts, not below it
        eff = self.gpu_efficiency if self.gpu_efficiency is not None else constants()["e_max"]["bf16"]
        return self.system.gpu.bf16_flops * eff

    @property
    def linear_peak_flops(self) -> float:
        """FLOP/s peak the linear layers run at under this layout's precision recipe."""
        return self.system.gpu.peak_flops(recipe(self.precision)["linear_peak"])

    etp: int = 0                 # expert tensor parallel (0: as tp, Megatron's default); EP x ETP lie over TP x CP x DP
    stage_layers: tuple = ()     # transformer layers of each pipeline stage, first to last (``stage_layer_counts``)
    pp_rule: str = "even"        # how they were split: even, accounted, pp_layers, spread
    chosen: tuple = ()           # defaults ``layout`` chose where the caller left a setting unset, in words

    @property
    def state_zero(self) -> int:
        """The ZeRO stage the model states and their traffic follow: ``zero``, except that ZeRO-2/3 under
        pipeline parallelism run as FSDP does under torchtitan's pipeline schedules (weights gathered once per
        step and kept for every micro-batch, gradients accumulated whole and reduce-scattered once after the
        last): the memory and traffic of ZeRO-1, the distributed optimizer."""
        return 1 if self.pp > 1 and self.zero >= 2 else self.zero

    @property
    def layers_per_stage(self) -> int:
        """Layers of the busiest stage (the most layers of any stage)."""
        return max(self.stage_layers) if self.stage_layers else -(-self.model.layers // self.pp)

    @property
    def busiest_stage(self) -> int:
        """The stage holding the most parameters (ties: the first): its gradients and states are the largest."""
        sizes = [sum(self.stage_param_split(i)) for i in range(self.pp)]
        return sizes.index(max(sizes))

    def stage_embedding_params(self, stage: int) -> float:
        """Embedding weights on ``stage`` (whole, before TP): the input embedding (and a learned position
        embedding, for the GPT rows with tied embeddings) on the first stage, the output layer on the last
        (Megatron keeps a copy of a tied embedding there when pp > 1)."""
        m = self.model
        first, last = stage == 0, stage == self.pp - 1
        out = (m.vocab * m.hidden + (m.seq_len * m.hidden if m.tied_embeddings else 0)) if first else 0.0
        if last and (not m.tied_embeddings or self.pp > 1):
            out += m.vocab * m.hidden
        return out

    def stage_param_split(self, stage: int) -> tuple[float, float]:
        """(dense, routed-expert) parameters one GPU of ``stage`` holds: dense (attention, shared experts, dense
        MLPs, embeddings) split by TP, routed experts by EP x ETP. Layers count at the model's mean layer; the
        last stage also holds the multi-token-prediction modules."""
        m, n = self.model, self.stage_layers[stage] if self.stage_layers else self.layers_per_stage
        routed = m.routed_layer_params if m.experts else 0.0
        dense = n * (m.layer_params - routed) + self.stage_embedding_params(stage)
        experts = n * routed
        if stage == self.pp - 1 and m.mtp_layers:
            dense += m.mtp_params - m.mtp_layers * routed
            experts += m.mtp_layers * routed
        return dense / self.tp, experts / (self.ep * self.etp)

    @property
    def expert_data_parallel(self) -> int:
        """Ranks holding the same routed experts: tp x cp x dp / (ep x etp) (Megatron's expert data parallel)."""
        return self.tp * self.replicas // (self.ep * self.etp)

    @property
    def replicas(self) -> int:
        """Ranks holding the same weights of a dense layer: cp x dp (gradients reduce over them)."""
        return self.dp * self.cp

    @property
    def stage_params(self) -> float:
        """Parameters one GPU of the busiest stage holds: its layers and embeddings, split by TP (experts by TP x EP)."""
        return sum(self.stage_param_split(self.busiest_stage))

    @property
    def stage_expert_params(self) -> float:
        """Routed-expert parameters one GPU of the busiest stage holds: its share of experts / (TP x EP)."""
        return self.stage_param_split(self.busiest_stage)[1]

    @property
    def stage_dense_params(self) -> float:
        """Everything else one GPU of the busiest stage holds (attention, shared experts, dense MLPs, embeddings)."""
        return self.stage_param_split(self.busiest_stage)[0]

    def stage_linear_params(self, stage: int | None = None) -> float:
        """Linear-layer weights one GPU of ``stage`` (default: the busiest) holds: its layers without norms, no
        embedding or output layer: what an FP8 recipe keeps FP8 copies of."""
        stage = self.busiest_stage if stage is None else stage
        dense, experts = self.stage_param_split(stage)
        n = self.stage_layers[stage] if self.stage_layers else self.layers_per_stage
        return dense - (n * 13 * self.model.hidden + self.stage_embedding_params(stage)) / self.tp + experts

    @property
    def moe_load(self) -> float:
        """Expert work of the busiest rank / the mean: the capacity factor (padded), else the imbalance."""
        cf = self.model.capacity_factor
        return float(cf) if cf is not None else self.moe_imbalance


def _model_with_seq_len(model_: str | Transformer, seq_len: int | None = None) -> Transformer:
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


def _gpu_count(sys_: hardware.System, nodes: int | None, gpus: int | None) -> int:
    gpn = sys_.gpus_per_node
    if gpus is not None:
        N = validate.integer("gpus", gpus, low=1, high=10**7)
        if nodes is not None and validate.integer("nodes", nodes, low=1, high=10**6) * gpn < N:
            raise ValueError(f"gpus must be <= nodes x {gpn} = {nodes * gpn}, got {N}")
        return N
    if nodes is None:
        raise ValueError("nodes must be given (or gpus)")
    return validate.integer("nodes", nodes, low=1, high=10**6) * gpn


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


PP_RULES = {
    "one": "one stage",
    "even": "l/p layers on every stage",
    "accounted": "Megatron's account_for_embedding/loss_in_pipeline_split: the embedding and the loss each count as "
                 "a layer, so the first and last stages hold one layer fewer",
    "pp_layers": "the layer counts given (Megatron's num_layers_in_first/last_pipeline_stage, or a whole layout)",
    "spread": "the course's spread for an MoE whose layer count no Megatron rule splits (Megatron needs a layout "
              "here): floor(l/p) or ceil(l/p) layers, the first and last stages holding the fewer (interleaved: "
              "over the p x v virtual stages, the first and last chunks holding the fewer)",
}


def stage_layer_counts(model_: str | Transformer, pp: int, interleave: int = 1, pp_layers: Sequence[int] | None = None) -> tuple[tuple[int, ...], str]:
    """Transformer layers on each of ``pp`` pipeline stages as Megatron-LM assigns them, and the rule used
    (``PP_RULES``; source megatron-core-pipeline-split: ``get_num_layers_to_build``).

    ``pp_layers``: (first, last) layer counts, either None (the rest split evenly over the middle stages, which
    must divide them), or one count per stage. Otherwise: l/p when p divides l; else the embedding and the
    loss counted as a layer each when p divides l + 2 (126 layers on 16 stages: 7, 8 x 14, 7), or the loss
    alone when p divides l + 1; else, for an MoE only, the course's spread. With ``interleave`` v > 1 every
    stage's count (embedding and loss included when counted) must divide by v: each virtual stage takes 1/v;
    an MoE whose counts do not is spread over the p x v virtual stages instead.
    """
    m = resolve_model(model_)
    l = m.layers
    p = validate.integer("pp", pp, low=1, high=l)
    v = validate.integer("interleave", interleave, low=1, high=l)
    if pp_layers is not None:
        if not isinstance(pp_layers, (list, tuple)) or len(pp_layers) not in (2, p) or p < 2:
            raise ValueError(f"pp_layers must be (first, last) or {p} counts, one per stage (pp > 1), "
                             f"got {pp_layers!r}")
        counts = [None if x is None else validate.integer("pp_layers", x, low=0, high=l) for x in pp_layers]
        if len(counts) == 2 and p > 2:
            first, last = counts
            rest, stages = l - (first or 0) - (last or 0), p - (first is not None) - (last is not None)
            if rest < 0 or rest % stages:
                raise ValueError(f"pp_layers must leave a layer count the {stages} middle stages divide "
                                 f"({l} layers - first - last = {rest}), got {tuple(pp_layers)}")
            mid = rest // stages
            counts = [mid if first is None else first] + [mid] * (p - 2) + [mid if last is None else last]
        if None in counts or sum(counts) != l:
            raise ValueError(f"pp_layers must add up to the {l} layers, got {tuple(pp_layers)}")
        out, rule = tuple(counts), "pp_layers"
        if v > 1 and any(c % v for c in counts):
            raise ValueError(f"interleave must divide every stage's layer count {out}, got {v}")
        return out, rule
    if p == 1:
        return (l,), "one"
    for extra, rule in ((0, "even"), (2, "accounted"), (1, "accounted")):
        if (l + extra) % p == 0:
            n = (l + extra) // p
            if v > 1 and n % v and m.experts:
                break   # an MoE's chunks do not divide: the spread over the virtual stages below
            if v > 1 and n % v:
                raise ValueError(f"interleave must divide the {n} layers of each stage ({rule} split of {l} layers "
                                 f"on {p} stages), got {v}")
            counts = [n] * p
            if extra == 2:
                counts[0] -= 1
            if extra:
                counts[-1] -= 1
            return tuple(counts), rule
    if not m.experts:
        raise ValueError(f"pp must divide the number of layers ({l}), or {l} + 1 or {l} + 2 (the loss, and the "
                         f"embedding, counted as a layer: Megatron's account_for_*_in_pipeline_split); or give "
                         f"pp_layers (first, last); got {p}")
    # the spread over the p x v virtual stages (model chunk j of stage i is virtual stage j p + i); each
    # physical stage holds the sum of its v chunks
    q = p * v
    if l < q:
        raise ValueError(f"interleave must leave each of the pp x interleave = {q} virtual stages a layer "
                         f"({l} layers), got {v}")
    base, extra = divmod(l, q)
    order = list(range(1, q - 1)) + [0, q - 1]        # the embedding and loss chunks get the fewer layers
    chunks = [base] * q
    for i in order[:extra]:
        chunks[i] += 1
    return tuple(sum(chunks[j * p + i] for j in range(v)) for i in range(p)), "spread"


def _check_precision(m: Transformer, sys_: hardware.System, precision: str, fp8_dispatch: bool) -> str:
    """The checked precision: a recipe the GPU has a peak for; fp8_dispatch only for an MoE in FP8 or MXFP8."""
    prec = validate.choice("precision", precision, PRECISIONS)
    sys_.gpu.peak_flops(recipe(prec)["linear_peak"])   # a GPU without this peak is refused here, by name
    if _flag("fp8_dispatch", fp8_dispatch) and (prec == "bf16" or not m.experts):
        raise ValueError(f"fp8_dispatch needs an MoE model and precision fp8 or mxfp8, got {m.name} in {prec}")
    return prec


def layout(model_: str | Transformer, system: str | hardware.System, nodes: int | None = None, *, tp: int = 1, pp: int = 1, dp: int | None = None, global_batch: int, micro_batch: int = 1, zero: int = 0,
           recompute: str | bool | None = "full", interleave: int = 1, sequence_parallel: bool = False, gpu_efficiency: float | None = None, dp_overlap: bool = True,
           bucket_bytes: float | None = None, memory_reserve_bytes: float | None = None, gpus: int | None = None, ep: int = 1, cp: int = 1, cp_kind: str = "ring", fsdp: bool = False,
           hsdp: int | None = None, moe_imbalance: float = 1.0, ep_overlap: bool = False, seq_len: int | None = None, precision: str = "bf16",
           fp8_dispatch: bool = False, pp_layers: Sequence[int] | None = None, etp: int | None = None) -> Layout:
    """Check a layout's arguments (as ``estimate`` takes them) and return the ``Layout``."""
    m = _model_with_seq_len(model_, seq_len)
    sys_ = hardware.resolve_system(system)
    N = _gpu_count(sys_, nodes, gpus)
    t = validate.integer("tp", tp, low=1, high=m.heads)
    if m.heads % t:
        raise ValueError(f"tp must divide the number of heads ({m.heads}), got {t}")
    p = validate.integer("pp", pp, low=1, high=m.layers)
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
    et = t if etp is None else validate.integer("etp", etp, low=1, high=10**4)
    chosen = []
    if etp is None and m.experts and e > 1 and (m.expert_ffn % t or (t * c * d) % (e * t)):
        et = 1   # Megatron's default (etp = tp) cannot fold: EP x TP exceeds (or does not divide) TP x CP x DP
        chosen.append(f"etp 1 (not given; Megatron's default etp = tp = {t} does not fold: ep x tp = {e * t} "
                      f"must divide tp x cp x dp = {t * c * d} and tp the expert FFN {m.expert_ffn}), so expert "
                      f"parallelism spans the attention's TP ranks (MoE parallel folding)")
    if et != t and not m.experts:
        raise ValueError(f"etp must be left unset for a dense model ({m.name} has no experts), got {et}")
    if m.experts and m.expert_ffn % et:
        raise ValueError(f"etp must divide the expert FFN width ({m.expert_ffn}), got {et}")
    if e > 1 and (m.experts % e or (t * c * d) % (e * et)):
        raise ValueError(f"ep must divide the experts ({m.experts}) and, times etp ({et}), tp x cp x dp "
                         f"({t * c * d}: expert parallelism folds over the attention's TP x CP x DP ranks), got {e}")
    if e == 1 and (t * c * d) % et:
        raise ValueError(f"etp must divide tp x cp x dp ({t * c * d}), got {et}")
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
        if (c * d) % shard or (shard * t) % (e * et):
            raise ValueError(f"hsdp must divide cp x dp ({c * d}) and, times tp, be a multiple of ep x etp "
                             f"({e * et}), got {shard}")
    if z >= 2 and p > 1:
        chosen.append(f"ZeRO-{z} with pipeline parallelism priced as torchtitan runs FSDP under a pipeline schedule: "
                      f"each stage's weights gathered once per step and kept for all {mb} micro-batches, gradients "
                      f"reduce-scattered once after the last (the memory and traffic of ZeRO-1)")
    rc = resolve_recompute(recompute)
    v = validate.integer("interleave", interleave, low=1, high=m.layers)
    if v > 1 and (p == 1 or mb % p):
        raise ValueError(f"interleave must be 1 unless pp > 1 and micro-batches ({mb}) are a multiple of pp; got {v}")
    stages, pp_rule = stage_layer_counts(m, p, v, pp_layers)
    if pp_rule == "spread":
        chosen.append(f"pipeline split {'/'.join(map(str, stages))} layers per stage ({PP_RULES['spread']}"
                      + (f"; over the {p * v} virtual stages" if v > 1 else "") + "): give --pp-layers to set it")
    prec = _check_precision(m, sys_, precision, fp8_dispatch)
    eff = None if gpu_efficiency is None else validate.fraction("gpu_efficiency", gpu_efficiency)
    bucket = DDP_BUCKET_BYTES if bucket_bytes is None else validate.positive("bucket_bytes", bucket_bytes)
    reserve = assumption("memory_reserve_bytes") if memory_reserve_bytes is None else \
        validate.number("memory_reserve_bytes", memory_reserve_bytes, low=0, high=sys_.gpu.memory_bytes)
    return Layout(model=m, system=sys_, gpus=N, nodes=math.ceil(N / sys_.gpus_per_node), tp=t, pp=p, dp=d,
                  global_batch=B, micro_batch=b, micro_batches=mb, zero=z, recompute=rc, interleave=v,
                  sequence_parallel=_flag("sequence_parallel", sequence_parallel), gpu_efficiency=eff,
                  dp_overlap=_flag("dp_overlap", dp_overlap), bucket_bytes=bucket, reserve_bytes=reserve, ep=e, cp=c,
                  cp_kind=kind, shard_group=shard,
                  moe_imbalance=validate.number("moe_imbalance", moe_imbalance, low=1.0, high=float(max(1, m.experts))),
                  ep_overlap=_flag("ep_overlap", ep_overlap), precision=prec, fp8_dispatch=fp8_dispatch,
                  stage_layers=stages, pp_rule=pp_rule, etp=et, chosen=tuple(chosen))
