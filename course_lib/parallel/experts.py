"""Expert parallelism (an MoE model): the dispatch and combine all-to-alls of a step, and expert tensor parallelism.

MoE parallel folding (Megatron Core, ``megatron-core-moe-folding``): the MoE layers lay their own grid,
ETP x EP x expert-DP, over the attention's TP x CP x DP ranks, expert ranks ordered ETP fastest, then EP. So an
EP group is ep ranks etp apart: with etp 1 and tp 8 the eight GPUs of a node that form one attention TP group
are one EP group, and EP leaves the node only past 8.
"""
from __future__ import annotations

from .layouts import ACT_BYTES, Layout
from .phases import Compute
from .precision import fp8_dispatch_bytes
from .results import Traffic


def ep_phase(L: Layout, c: Compute, notes: list) -> list:
    """Expert-parallel all-to-alls: dispatch and combine, 2 forward + 2 backward per MoE layer (+2 recomputed).

    Each rank sends its tokens' hidden states to the ranks of their top-k experts (dispatch) and
    receives the results back (combine): s b / (cp x tp) tokens x top_k x h x 2 bytes per call,
    times ``moe_load`` (the busiest rank). The group is ep ranks of the tp x cp x dp block, etp apart
    (MoE parallel folding; etp = tp, Megatron's default, is EP over DP). Exposed, unless ``ep_overlap``: then each layer's all-to-alls hide behind one
    layer of another micro-batch's compute (DeepSeek's DualPipe), and only the excess shows. With
    ``fp8_dispatch`` the dispatch (and, backward, the combine's gradient) moves 1 byte a value, the rest 2.
    """
    m = L.model
    if L.ep == 1 or not m.moe_layers:
        return []
    moe_layers = m.moe_layers * L.layers_per_stage / m.layers       # MoE layers on the busiest stage
    passes = 4 + (2 if L.recompute == "full" else 0)
    tokens = m.seq_len * L.micro_batch / (L.cp * L.tp)
    size = tokens * m.top_k * m.hidden * ACT_BYTES * L.moe_load
    one, link = L.links.all_to_all_time(size, L.ep, L.etp)
    if L.fp8_dispatch:  # half the calls (forward dispatch, backward combine-gradient) go in FP8 (DeepSeek-V3)
        fp8_one, _ = L.links.all_to_all_time(size * fp8_dispatch_bytes() / ACT_BYTES, L.ep, L.etp)
        size, one = size * (1 + fp8_dispatch_bytes() / ACT_BYTES) / 2, (one + fp8_one) / 2
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


def etp_phase(L: Layout, c: Compute, notes: list) -> list:
    """Expert tensor parallelism: the tokens an MoE layer received are all-gathered over the ETP group before
    the experts (each holds 1/etp of every expert's FFN) and reduce-scattered after them, forward and backward
    (+1 pair recomputed): Megatron's alltoall dispatcher with expert_tensor_parallel_size > 1. Buffer: etp x
    the rank's dispatched tokens (s b / (cp tp) x top_k x h x 2 bytes, x ``moe_load``). Exposed."""
    m = L.model
    if L.etp == 1 or not m.moe_layers:
        return []
    moe_layers = m.moe_layers * L.layers_per_stage / m.layers
    pairs = 2 + (1 if L.recompute == "full" else 0)
    tokens = m.seq_len * L.micro_batch / (L.cp * L.tp)
    size = L.etp * tokens * m.top_k * m.hidden * ACT_BYTES * L.moe_load
    one = sum(L.links.collective_time(k, size, L.etp) for k in ("all_gather", "reduce_scatter"))
    link = L.links.link(L.etp, 1)
    calls = round(pairs * moe_layers * L.micro_batches)
    total = pairs * moe_layers * L.micro_batches * one
    return [Traffic("expert tensor parallel", ("all_gather", "reduce_scatter"), L.etp, link.name, link.crosses_nodes,
                    calls, size, total, total, "AG+RS (ETP)")]
