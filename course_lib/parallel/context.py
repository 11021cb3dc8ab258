"""Context parallelism: ring attention's K/V passing (and when it hides) or Ulysses' all-to-alls."""
from __future__ import annotations

from .. import hardware, units, validate
from .layouts import ACT_BYTES, Layout, _model_with_seq_len, assumption
from ..transformer import Transformer
from .links import GroupLink, Links
from .phases import Compute
from .results import Traffic


def _ring_step(m: Transformer, link: GroupLink, bw: float, flops: float, chunk: int, b: int, tp: int) -> tuple[float, float, float]:
    """One ring-attention step on ``link``: (K/V bytes sent, transfer seconds, attention compute seconds).

    The next K and V chunk, 4 (s/cp) b h_kv / tp bytes (16-bit), crosses the link (bw bytes/s,
    plus its latency) while attention of s/cp queries against s/cp keys, 4 (s/cp)^2 b h / tp FLOP,
    runs at ``flops``.
    """
    w = m.attention_widths               # K + V width per token: h_kv each for MHA/GQA; up-projected per head for MLA
    size = 2 * chunk * b * w["kv"] / tp
    return size, link.latency + size / bw, 2 * chunk * chunk * b * (w["q"] + w["v"]) / tp / flops


def ring_attention_condition(model_: str | Transformer, system: str | hardware.System, cp: int, tp: int = 1, gpu_efficiency: float | None = None, seq_len: int | None = None) -> dict:
    """When ring attention hides its K/V passing: each step's attention compute >= its K/V transfer.

    One step computes attention of s/cp queries against s/cp keys, 4 (s/cp)^2 b h / tp FLOP, while
    the next K and V chunk, 4 (s/cp) b h_kv / tp bytes (h_kv = h x kv_heads / heads), crosses the
    link. Hidden when  s/cp >= F / (B x heads/kv_heads)  with F the achieved FLOP/s and B the
    link's bytes/s per direction (latency left out). Returns the threshold chunk length in tokens,
    the chunk length, both per-step times and whether it hides. ``seq_len`` overrides the model's.
    """
    m = _model_with_seq_len(model_, seq_len)
    sys_ = hardware.resolve_system(system)
    cp = validate.integer("cp", cp, low=1, high=m.seq_len)
    tp = validate.integer("tp", tp, low=1, high=m.heads)
    eff = assumption("gpu_efficiency") if gpu_efficiency is None else validate.fraction("gpu_efficiency", gpu_efficiency)
    links = Links(sys_)
    link = links.link(cp, tp)
    flops = sys_.gpu.bf16_flops * eff
    bw = links.pair_bandwidth(link)
    chunk = m.seq_len / cp
    _, transfer_s, compute_s = _ring_step(m, link, bw, flops, chunk, 1, tp)
    threshold = flops / (bw * m.heads / m.kv)
    return {"chunk_tokens": chunk, "threshold_tokens": threshold, "compute_step_s": compute_s,
            "transfer_step_s": transfer_s, "hidden": compute_s >= transfer_s, "link": link.name,
            "link_bw": bw, "flops": flops}


def ulysses_kv_heads(model_: str | Transformer, tp: int, cp: int) -> int:
    """KV heads Ulysses' all-to-all moves for a model (catalog id or Transformer) under tp x cp ranks:
    the model's KV heads, or tp x cp when that is a multiple of them (each rank then holds a replica
    of one KV head; ``layouts._ulysses_fits`` allows no other case)."""
    m = _model_with_seq_len(model_)
    tp = validate.integer("tp", tp, low=1, high=10**6)
    cp = validate.integer("cp", cp, low=1, high=10**6)
    return max(int(m.kv), tp * cp)


def cp_phase(L: Layout, c: Compute, notes: list) -> list:
    """Context-parallel traffic per step: ring attention's K/V passing, or Ulysses' all-to-alls of heads.

    Ring (per layer and micro-batch): cp-1 steps forward, each sending the next K/V chunk
    (4 (s/cp) b h_kv / tp bytes) while attending to the current one; the backward pass moves K/V
    and their gradients (twice the bytes, twice the compute); full recomputation repeats the
    forward. Each step shows only max(0, transfer - compute): see ``ring_attention_condition``.
    Ulysses: an all-to-all of q, k, v before attention and one of the output after it
    ((2h + 2h_kv) s b / (cp tp) x 2 bytes per layer forward, the same backward), exposed. It hands
    every rank whole heads, so tp x cp must divide the query heads and divide the KV heads or be a
    multiple of them (replicated KV heads); ``layout`` and the planner share that rule
    (``layouts._ulysses_fits``). Where tp x cp exceeds the KV heads each rank receives a replica of
    one, so the all-to-all moves max(kv_heads, tp x cp) heads of K and of V (``ulysses_kv_heads``).
    """
    m = L.model
    if L.cp == 1:
        return []
    cp, t, b = L.cp, L.tp, L.micro_batch
    fwd_passes = 1 + (1 if L.recompute == "full" else 0)
    chunk = m.seq_len / cp
    per_pass = L.layers_per_stage * L.micro_batches
    if L.cp_kind == "ring":
        link = L.links.link(cp, t)
        size, step_s, attn_s = _ring_step(m, link, L.links.pair_bandwidth(link),
                                          L.attention_flops, chunk, b, t)
        sends = (cp - 1) * per_pass * (fwd_passes + 2)          # backward: K/V and dK/dV (two sends' worth)
        total = sends * step_s
        exposed = sends * max(0.0, step_s - attn_s)
        if exposed > 0:
            notes.append(f"ring attention: K/V transfer ({units.format_time(step_s)}) exceeds a step's attention "
                         f"compute ({units.format_time(attn_s)}); chunks of s/cp = {chunk:.0f} tokens are too short")
        return [Traffic("context parallel K/V ring", (), cp, link.name, link.crosses_nodes, sends, size, total, exposed,
                        "ring send/recv")]
    moved_kv_dim = m.hidden * ulysses_kv_heads(m, t, cp) / m.heads     # replicas count: every rank gets whole heads
    size = (2 * m.hidden + 2 * moved_kv_dim) * chunk * b / t * ACT_BYTES / 2   # q,k,v then out: two calls of the mean size
    one, link = L.links.all_to_all_time(size, cp, t)
    calls = 2 * per_pass * (fwd_passes + 1)
    return [Traffic("context parallel all-to-all", ("all_to_all",), cp, link.name, link.crosses_nodes, calls, size,
                    calls * one, calls * one, "Ulysses heads")]
