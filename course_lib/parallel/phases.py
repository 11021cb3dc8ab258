"""Phases of a step that every layout has: memory, compute, tensor- and pipeline-parallel traffic."""
from __future__ import annotations

from dataclasses import dataclass

from ..transformer import (activation_bytes_per_layer, model_state_bytes, routed_expert_flops, training_flops,
                           training_flops_parts)
from .layouts import ACT_BYTES, Layout
from .precision import recipe
from .links import group_collective_time, group_link, pair_bandwidth
from .results import Traffic


def memory_phase(L: Layout) -> dict:
    """Bytes per GPU on the worst stage: model states, activations, total, capacity, usable.

    The first stage holds the most activations (p micro-batches in flight); embeddings sit on
    the first and last stage; the last stage also holds the fp32 logits. An FP8 recipe adds its cached FP8
    copies of the linear weights (``fp8_weights``) and saves linear inputs in FP8 (``data/precision.json``).
    """
    m, t, p, b, rc, sp = L.model, L.tp, L.pp, L.micro_batch, L.recompute, L.sequence_parallel
    rec = recipe(L.precision)
    saved = rec["saved_linear_input_bytes"]
    if m.experts or L.cp > 1 or L.zero == 3 and L.shard_group != L.dp:
        # ZeRO shards over the cp x dp replicas (FSDP) or the shard group (HSDP); routed experts over 1/ep of them
        shard = L.shard_group if L.zero == 3 else L.replicas
        dense = model_state_bytes(L.stage_dense_params, shard, L.zero)
        experts = model_state_bytes(L.stage_expert_params, max(1, shard // L.ep), L.zero) if m.experts else \
            dict.fromkeys(dense, 0.0)
        states = {k: dense[k] + experts[k] for k in dense}
    else:
        states = model_state_bytes(L.stage_params, L.dp, L.zero)
    # each context-parallel rank holds s/cp tokens of every activation (and of the logits below);
    # its attention runs blockwise (flash-style), so no s x s score matrix is stored
    per_layer = activation_bytes_per_layer(m, b, t, "selective" if L.cp > 1 and rc == "none" else rc, sp,
                                           saved) / L.cp
    in_flight = min(p, L.micro_batches) if p > 1 else 1
    factor = 1 + (p - 1) / (p * L.interleave) if L.interleave > 1 else 1.0
    # context parallelism runs attention blockwise (flash-style): no s x s score matrix is ever stored
    recomputing = (activation_bytes_per_layer(m, b, t, "none" if L.cp == 1 else "selective", sp, saved) / L.cp
                   if rc == "full" else 0)
    acts_first = L.layers_per_stage * per_layer * in_flight * factor
    if rc == "full":  # the layer being recomputed holds its full activations
        acts_first += recomputing
    logits = 4 * m.seq_len * b * m.vocab / t / L.cp  # fp32 logits for the loss, last stage
    acts_last = L.layers_per_stage * per_layer + logits + recomputing
    acts = max(acts_first, acts_last) if p > 1 else acts_first + logits
    memory = {k: v for k, v in states.items() if k != "total"}
    fp8_weights = rec["fp8_weight_bytes_per_linear_param"] * L.stage_linear_params
    capacity = L.system.gpu.memory_bytes
    memory.update(fp8_weights=fp8_weights, activations=acts, total=states["total"] + fp8_weights + acts,
                  capacity=capacity, usable=capacity - L.reserve_bytes)
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
    """Compute time = hardware FLOPs / (GPUs x peak x gpu_efficiency), each part at its own peak: the linear
    layers at the precision recipe's (FP8 or MXFP8 under those recipes), attention and the output layer at BF16's.

    MoE: the busiest expert rank does ``moe_load`` x its fair share of the routed-expert FLOPs
    (the capacity factor when tokens are padded to capacity, else the imbalance), and every rank waits for it.
    Uneven pipeline stages (p does not divide l): the busiest stage's ceil(l/p) layers set the pace,
    ``ceil(l/p) p / l`` times the mean stage's.
    """
    parts = training_flops_parts(L.model, L.global_batch, L.recompute)
    hw = sum(parts.values())
    linear = parts["linear"]
    if L.model.experts and L.moe_load != 1.0:
        linear += (L.moe_load - 1) * routed_expert_flops(L.model, L.global_batch, L.recompute)
    bf16 = L.system.gpu.bf16_flops
    if L.precision == "bf16":
        total = (linear + parts["attention"] + parts["logits"]) / (L.gpus * bf16 * L.gpu_efficiency)
    else:
        total = (linear / L.linear_peak_flops + (parts["attention"] + parts["logits"]) / bf16) / \
            (L.gpus * L.gpu_efficiency)
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
    one = group_collective_time(L.system, "all_reduce", size, t)
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
