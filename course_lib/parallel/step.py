"""One layout's step: the phases composed on the 1F1B pipeline schedule (``estimate``)."""
from __future__ import annotations

from typing import Sequence

from .. import hardware
from ..transformer import Transformer
from .context import cp_phase
from .experts import ep_phase, etp_phase
from .layouts import Layout, layout
from .phases import compute_phase, memory_phase, pp_phase, stage_memory, tp_phase
from .precision import precision_summary
from .results import Estimate
from .sharding import dp_phase


def estimate(model_: str | Transformer, system: str | hardware.System, nodes: int | None = None, *, tp: int = 1, pp: int = 1, dp: int | None = None, global_batch: int, micro_batch: int = 1, zero: int = 0,
             recompute: str | bool | None = "full", interleave: int = 1, sequence_parallel: bool = False, gpu_efficiency: float | None = None, dp_overlap: bool = True,
             bucket_bytes: float | None = None, memory_reserve_bytes: float | None = None, gpus: int | None = None, ep: int = 1, cp: int = 1, cp_kind: str = "ring", fsdp: bool = False,
             hsdp: int | None = None, moe_imbalance: float = 1.0, ep_overlap: bool = False, seq_len: int | None = None, precision: str = "bf16",
             fp8_dispatch: bool = False, pp_layers: Sequence[int] | None = None, etp: int | None = None) -> Estimate:
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
    the all-to-alls behind another micro-batch; seq_len overrides the model's; precision ``bf16``, ``fp8``
    or ``mxfp8`` (``data/precision.json``: the linear layers at that peak), fp8_dispatch: the MoE dispatch
    all-to-all in FP8; pp_layers: (first, last) stage layer counts or one per stage (``stage_layer_counts``:
    Megatron's rules otherwise); etp: expert tensor parallel size (default tp; EP x ETP fold over
    TP x CP x DP, so ep may span the attention's TP ranks). Composes
    ``memory_phase``, ``compute_phase``, ``tp_phase``, ``pp_phase``, ``cp_phase``, ``ep_phase``
    and ``dp_phase`` on the 1F1B schedule.
    """
    L = layout(model_, system, nodes, tp=tp, pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch,
               zero=zero, recompute=recompute, interleave=interleave, sequence_parallel=sequence_parallel,
               gpu_efficiency=gpu_efficiency, dp_overlap=dp_overlap, bucket_bytes=bucket_bytes,
               memory_reserve_bytes=memory_reserve_bytes, gpus=gpus, ep=ep, cp=cp, cp_kind=cp_kind, fsdp=fsdp,
               hsdp=hsdp, moe_imbalance=moe_imbalance, ep_overlap=ep_overlap, seq_len=seq_len, precision=precision,
               fp8_dispatch=fp8_dispatch, pp_layers=pp_layers, etp=etp)
    return estimate_layout(L)


def estimate_layout(L: Layout) -> Estimate:
    """``estimate`` for a Layout already checked by ``layout``."""
    if not isinstance(L, Layout):
        raise ValueError(f"L must be a parallel.Layout (from parallel.layout(...)), got {type(L).__name__}")
    notes = list(L.chosen)
    memory = memory_phase(L)
    c = compute_phase(L)
    tp_traffic, pp_traffic = tp_phase(L, notes), pp_phase(L)
    cp_traffic, ep_traffic = cp_phase(L, c, notes), ep_phase(L, c, notes) + etp_phase(L, c, notes)
    dp_traffic = dp_phase(L, c, notes)
    tp_ex = sum(tr.exposed_s for tr in tp_traffic)
    pp_ex = sum(tr.exposed_s for tr in pp_traffic)
    dp_ex = sum(tr.exposed_s for tr in dp_traffic)
    cp_ex = sum(tr.exposed_s for tr in cp_traffic)
    ep_ex = sum(tr.exposed_s for tr in ep_traffic)
    # 1F1B schedule: m slots of the slowest stage, and a fill and drain through every other stage once
    # (divided by v when interleaved): (p-1)/v slots when the stages are even
    mb, p, v = L.micro_batches, L.pp, L.interleave
    comm = (tp_ex + pp_ex) / mb + (cp_ex + ep_ex) / mb
    slot = c.micro_batch_s + comm
    bubble = ((p - 1) * comm + sum(c.stage_micro_batch_s) - c.micro_batch_s) / v
    step = mb * slot + bubble + dp_ex
    per_gpu = lambda flops: flops / step / L.gpus / 1e12  # noqa: E731 - TFLOP/s per GPU
    peak = L.system.gpu.bf16_flops
    if L.precision != "bf16":
        notes.append(precision_summary(L.precision, L.system.gpu) + "; MFU and HFU count against the BF16 peak")
    if L.gpu_efficiency is not None:
        notes.append(f"GPU efficiency set to {L.gpu_efficiency:.2f} for every product (default: each GEMM priced "
                     "from its shape)")
    return Estimate(model=L.model.name, system=L.system.id, gpus=L.gpus, nodes=L.nodes, tp=L.tp, pp=p, dp=L.dp,
                    zero=L.zero, recompute=L.recompute, micro_batch=L.micro_batch, global_batch=L.global_batch,
                    micro_batches=mb, interleave=v, sequence_parallel=L.sequence_parallel,
                    gpu_efficiency=c.efficiency, memory=memory, fits=memory["total"] <= memory["usable"],
                    traffic=tp_traffic + cp_traffic + ep_traffic + pp_traffic + dp_traffic, step_time_s=step,
                    compute_s=c.compute_s,
                    bubble_s=bubble, bubble_fraction=(p - 1) / (v * mb), tp_exposed_s=tp_ex, pp_exposed_s=pp_ex,
                    dp_exposed_s=dp_ex, tokens_per_s_per_gpu=L.global_batch * L.model.seq_len / step / L.gpus,
                    tflops_per_gpu=per_gpu(c.hardware_flops), model_tflops_per_gpu=per_gpu(c.model_flops),
                    mfu=per_gpu(c.model_flops) * 1e12 / peak, hfu=per_gpu(c.hardware_flops) * 1e12 / peak,
                    notes=notes, ep=L.ep, cp=L.cp, cp_kind=L.cp_kind, shard_group=L.shard_group, ep_exposed_s=ep_ex,
                    cp_exposed_s=cp_ex, precision=L.precision, fp8_dispatch=L.fp8_dispatch,
                    stages=[{"stage": i, "layers": n, "micro_batch_s": s, "memory_bytes": stage_memory(L, i)["total"]}
                            for i, (n, s) in enumerate(zip(L.stage_layers, c.stage_micro_batch_s))] if p > 1 else [],
                    pp_rule=L.pp_rule, etp=L.etp)
