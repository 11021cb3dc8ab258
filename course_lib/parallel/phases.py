"""Phases of a step that every layout has: memory, compute, tensor- and pipeline-parallel traffic."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..transformer import (activation_bytes_per_layer, model_state_bytes, routed_expert_flops, training_flops,
                           training_flops_parts)
from .efficiency import layer_seconds
from .layouts import ACT_BYTES, Layout
from .precision import recipe
from .results import Traffic


def stage_memory(L: Layout, stage: int) -> dict:
    """Bytes per GPU of pipeline ``stage``: model states, FP8 weight copies, activations, total, capacity, usable.

    Its own layers (``Layout.stage_layers``) and embeddings (input on the first stage, output layer on the
    last); on the 1F1B schedule stage i holds min(p - i, m) micro-batches in flight (x ``1 + (p-1)/(p v)``
    when interleaved); the last stage also holds the fp32 logits. ZeRO shards over the cp x dp replicas (the
    shard group with HSDP), routed experts over 1/ep of them. An FP8 recipe adds its cached FP8 copies of the
    linear weights (``fp8_weights``) and saves linear inputs in FP8 (``data/precision.json``).
    """
    m, t, p, b, rc, sp = L.model, L.tp, L.pp, L.micro_batch, L.recompute, L.sequence_parallel
    rec = recipe(L.precision)
    saved = rec["saved_linear_input_bytes"]
    shard = L.shard_group if L.zero == 3 else L.replicas
    dense_params, expert_params = L.stage_param_split(stage)
    z = L.state_zero   # ZeRO-2/3 under PP keep whole weights and gradients for the step (``Layout.state_zero``)
    dense = model_state_bytes(dense_params, shard, z)
    experts = model_state_bytes(expert_params, max(1, shard * L.tp // (L.ep * L.etp)), z) if m.experts else \
        dict.fromkeys(dense, 0.0)
    states = {k: dense[k] + experts[k] for k in dense}
    # each context-parallel rank holds s/cp tokens of every activation (and of the logits below);
    # its attention runs blockwise (flash-style), so no s x s score matrix is stored
    per_layer = activation_bytes_per_layer(m, b, t, "selective" if L.cp > 1 and rc == "none" else rc, sp,
                                           saved) / L.cp
    in_flight = min(p - stage, L.micro_batches)
    factor = 1 + (p - 1) / (p * L.interleave) if L.interleave > 1 and stage < p - 1 else 1.0
    recomputing = (activation_bytes_per_layer(m, b, t, "none" if L.cp == 1 else "selective", sp, saved) / L.cp
                   if rc == "full" else 0)   # the layer being recomputed holds its full activations
    acts = L.stage_layers[stage] * per_layer * in_flight * factor + recomputing
    if stage == p - 1:   # fp32 logits for the loss; each MTP module: one more layer and its own logits
        acts += (4 * m.seq_len * b * m.vocab / t / L.cp + m.mtp_layers * per_layer) * (1 + m.mtp_layers) \
            if m.mtp_layers else 4 * m.seq_len * b * m.vocab / t / L.cp
    memory = {k: v for k, v in states.items() if k != "total"}
    fp8_weights = rec["fp8_weight_bytes_per_linear_param"] * L.stage_linear_params(stage)
    capacity = L.system.gpu.memory_bytes
    memory.update(fp8_weights=fp8_weights, activations=acts, total=states["total"] + fp8_weights + acts,
                  capacity=capacity, usable=capacity - L.reserve_bytes)
    return memory


def memory_phase(L: Layout) -> dict:
    """Bytes per GPU on the stage that needs the most (``stage_memory``): the one that decides whether it fits."""
    return max((stage_memory(L, i) for i in range(L.pp)), key=lambda mem: mem["total"])


@dataclass(frozen=True)
class Compute:
    """FLOPs of one step and the compute time, seconds: per step and per micro-batch on one stage."""

    hardware_flops: float
    model_flops: float
    compute_s: float
    micro_batch_s: float
    backward_share: float  # fraction of a micro-batch's compute that is the backward pass
    stage_micro_batch_s: tuple = ()  # one micro-batch's compute on each stage, first to last
    efficiency: float = 0.0   # hardware FLOPs / (GPUs x compute_s x BF16 peak): the compute's fraction of BF16 peak


def _stage_kinds(L: Layout) -> list:
    """(dense layers, MoE layers) on each stage: an MoE's first ``dense_layers`` layers are dense."""
    out, start = [], 0
    for n in L.stage_layers:
        dense = max(0, min(start + n, L.model.dense_layers if L.model.experts else L.model.layers) - start)
        out.append((dense, n - dense))
        start += n
    return out


def _gemm_stage_compute_s(L: Layout) -> tuple:
    """``stage_compute_s`` from the GEMM shapes (``efficiency.layer_seconds``): products forward, twice backward
    (and again with full recomputation), attention forward and backward (+ forward recomputed unless none),
    elementwise work, the output layer and MTP modules on the last stage."""
    m = L.model
    ls = layer_seconds(m, L.system.gpu, tp=L.tp, cp=L.cp, micro_batch=L.micro_batch, precision=L.precision,
                       ep=L.ep, etp=L.etp, sequence_parallel=L.sequence_parallel)
    full = 1 if L.recompute == "full" else 0
    attn_passes = 3 + (1 if L.recompute != "none" else 0)

    def layer(kind: str) -> float:
        x = ls[kind]
        gemm = x["gemm"]
        if kind == "moe" and L.moe_load != 1.0:   # the busiest rank's experts do moe_load x the fair share
            routed = m.top_k * m.expert_params / (m.moe_layer_params - (m.experts - m.top_k) * m.expert_params)
            gemm *= 1 + (L.moe_load - 1) * routed
        return gemm * (3 + full) + x["attention"] * attn_passes + x["elementwise"] * (1 + full / 3)

    per = {k: layer(k) for k in ("dense", "moe") if k in ls}
    out = [d * per["dense"] + e * per.get("moe", 0.0) for d, e in _stage_kinds(L)]
    mtp = m.mtp_layers * (per["moe"] if m.experts else per["dense"])
    out[-1] += 3 * ls["logits"] * (1 + m.mtp_layers) + mtp
    return tuple(out)


def stage_compute_s(L: Layout) -> tuple:
    """Seconds of compute for one micro-batch on each pipeline stage, first to last.

    Each stage runs its own layers and the last one the output layer and any multi-token-prediction modules
    too. By default each product is priced from its shape (``efficiency``: the GEMM's FLOPs at the fitted
    fraction of the precision's peak plus its bytes at HBM speed); with ``gpu_efficiency`` given, FLOPs /
    (tp x cp x peak x gpu_efficiency) at the model's mean layer, the linear layers at the recipe's peak,
    attention and the output layer at BF16's. Routed experts work at ``moe_load``.
    """
    if L.gpu_efficiency is None:
        return _gemm_stage_compute_s(L)
    m = L.model
    main = dataclasses.replace(m, mtp_layers=0)
    parts = training_flops_parts(main, L.micro_batch, L.recompute)
    with_mtp = training_flops_parts(m, L.micro_batch, L.recompute)
    linear = parts["linear"]
    extra = (L.moe_load - 1) * routed_expert_flops(m, L.micro_batch, L.recompute) if m.experts else 0.0
    bf16 = L.system.gpu.bf16_flops
    lin_peak = bf16 if L.precision == "bf16" else L.linear_peak_flops
    per_layer = ((linear + extra) / lin_peak + parts["attention"] / bf16) / m.layers
    rate = L.tp * L.cp * L.gpu_efficiency
    out = [n * per_layer / rate for n in L.stage_layers]
    mtp = ((with_mtp["linear"] - linear + extra * m.mtp_layers / m.layers) / lin_peak
           + (with_mtp["attention"] - parts["attention"]) / bf16)
    out[-1] += (with_mtp["logits"] / bf16 + mtp) / rate
    return tuple(out)


def compute_phase(L: Layout) -> Compute:
    """Compute of one step on the slowest stage: m micro-batches x its ``stage_compute_s`` (the slowest sets the
    pace of the 1F1B schedule; the others wait in the bubble, ``estimate``).

    MoE: the busiest expert rank does ``moe_load`` x its fair share of the routed-expert FLOPs
    (the capacity factor when tokens are padded to capacity, else the imbalance), and every rank waits for it.
    """
    hw = training_flops(L.model, L.global_batch, L.recompute)
    stages = stage_compute_s(L)
    slowest = max(stages)
    full = 1 if L.recompute == "full" else 0
    compute_s = slowest * L.micro_batches
    return Compute(hardware_flops=hw, model_flops=training_flops(L.model, L.global_batch, "none"),
                   compute_s=compute_s, micro_batch_s=slowest, backward_share=(2 + full) / (3 + full),
                   stage_micro_batch_s=stages, efficiency=hw / (L.gpus * compute_s * L.system.gpu.bf16_flops))


def tp_phase(L: Layout, notes: list) -> list:
    """Tensor-parallel traffic: all-reduces of s b h activations, 2 forward + 2 backward (+2 recompute) per dense
    layer, half of them per MoE layer (attention's; the experts' go over ETP), exposed."""
    if L.tp == 1:
        return []
    m, t = L.model, L.tp
    link = L.links.link(t, 1)
    # per layer: attention's and the MLP's collective, forward and backward; an MoE layer's experts talk over
    # their own ETP group instead (``experts.etp_phase``), so it keeps attention's half
    moe_share = (m.moe_layers / m.layers) if m.experts else 0.0
    per_layer = 1 - moe_share / 2
    calls = round((4 + (2 if L.recompute == "full" else 0)) * L.layers_per_stage * per_layer * L.micro_batches)
    size = ACT_BYTES * m.seq_len * L.micro_batch * m.hidden
    if L.cp > 1:
        size /= L.cp
    one = L.links.collective_time("all_reduce", size, t)
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
    link = L.links.link(L.pp, t * L.dp * L.cp)
    size = ACT_BYTES * m.seq_len * L.micro_batch * m.hidden / (t if (link.crosses_nodes and t > 1) else 1)  # scatter-gather
    if L.cp > 1:
        size /= L.cp
    one = link.latency + size / L.links.pair_bandwidth(link)
    calls = 2 * L.interleave * L.micro_batches
    return [Traffic("pipeline send/recv", (), 2, link.name, link.crosses_nodes, calls, size, calls * one, calls * one,
                    "point-to-point")]
