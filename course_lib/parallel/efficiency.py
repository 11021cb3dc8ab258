"""Compute efficiency that follows the GEMM: the seconds one layer's matrix products, attention and elementwise
work take on one GPU, from their shapes, the precision recipe and the GPU's peaks and memory bandwidth.

Each matrix product of m x k by k x n (per GPU: the model's widths split by TP / ETP, m the tokens it sees)
takes ``2 m k n / (peak x e_max) + bytes / HBM``: its FLOPs at the fraction ``e_max`` of the dense tensor peak
a large product reaches in a training step (fitted, one per precision family), plus the bytes it must read and
write (inputs at the recipe's bytes per value, the BF16 output; an FP8 recipe also pays the casts of its inputs
and gradients and the transposed copy Hopper's FP8 products need). Small products, or products with a thin side
(an expert's few tokens, a narrow TP shard), are memory-bound and get a smaller share of the peak. Attention's
score and value products (fused, flash-style) run at BF16's ``e_max``; the elementwise work of a layer (two norms,
two residual adds, the MLP's activation, forward and backward) moves ``elementwise_scale`` x the bytes it must
touch once. The backward pass repeats each product twice (data and weight gradients). The constants live in
``data/published_training.json`` ``compute_efficiency`` with the fit that set them
(``scripts/fit_compute_efficiency.py``); the H200 layer measurements (``layer_efficiency_measured``) check it and
set nothing.
"""
from __future__ import annotations

import contextlib
from functools import lru_cache
from typing import Iterator

from .. import datafiles, hardware, validate
from ..transformer import Transformer

NORM_RESIDUAL_BYTES_PER_VALUE = 44   # two norms (read + write, forward; 2x backward) and two residual adds
ACTIVATION_BYTES_PER_VALUE = {True: 16, False: 10}   # SwiGLU (gate and up read, product written; backward) / GELU
CAST_BYTES_PER_VALUE = 3             # an FP8 cast reads 2 bytes and writes 1
_OVERRIDE: list = []


@lru_cache(maxsize=1)
def _stored() -> dict:
    return datafiles.load("published_training.json")["compute_efficiency"]


def constants() -> dict:
    """The fitted constants: ``e_max`` per precision family (bf16, fp8) and ``elementwise_scale``."""
    return _OVERRIDE[-1] if _OVERRIDE else _stored()["constants"]


@contextlib.contextmanager
def using(consts: dict) -> Iterator[None]:
    """Price with ``consts`` instead of the stored constants (the fit script tries candidates this way)."""
    for k in ("e_max", "elementwise_scale"):
        if k not in consts:
            raise ValueError(f"consts must hold e_max and elementwise_scale, got {sorted(consts)}")
    _OVERRIDE.append(consts)
    _layer_seconds.cache_clear()
    try:
        yield
    finally:
        _OVERRIDE.pop()
        _layer_seconds.cache_clear()


def layer_gemms(m: Transformer, tp: int = 1, cp: int = 1, micro_batch: int = 1, ep: int = 1, etp: int | None = None) -> dict:
    """One GPU's matrix products of one forward pass, as (m, k, n, count), for a ``dense`` layer, an ``moe``
    layer and the ``logits``. Tokens per GPU: s b / cp (attention and dense MLP, after sequence parallelism's
    gather); an expert sees s b / cp x top_k x etp x ep / (tp x E) tokens (the EP group's tokens spread over
    E experts), its FFN split by ETP."""
    etp = tp if etp is None else etp
    T = m.seq_len * micro_batch / cp
    h, w = m.hidden, m.attention_widths
    if m.mla:
        d = m.head_dim or h // m.heads
        attn = ([(T, h, m.q_lora_rank, 1), (T, m.q_lora_rank, w["q"] / tp, 1)] if m.q_lora_rank
                else [(T, h, w["q"] / tp, 1)])
        attn += [(T, h, m.kv_lora_rank + m.qk_rope_head_dim, 1), (T, m.kv_lora_rank, m.heads * (d + m.v_dim) / tp, 1)]
    else:
        attn = [(T, h, (w["q"] + m.kv * (m.qk_head_dim + m.v_dim)) / tp, 1)]
    attn.append((T, w["out"] / tp, h, 1))
    g = 2 if m.gated_mlp else 1
    out = {"dense": attn + [(T, h, g * m.ffn / tp, 1), (T, m.ffn / tp, h, 1)], "logits": [(T, h, m.vocab / tp, 1)]}
    if m.experts:
        fe = m.expert_ffn
        moe = list(attn)
        if m.shared_experts:
            moe += [(T, h, g * m.shared_experts * fe / tp, 1), (T, m.shared_experts * fe / tp, h, 1)]
        tokens = T * m.top_k * etp * ep / (tp * m.experts)
        local = m.experts / ep
        moe += [(tokens, h, g * fe / etp, local), (tokens, fe / etp, h, local)]
        out["moe"] = moe
    return out


def _gemm_s(m: int, k: int, n: int, count: int, peak: float, e_max: float, hbm: float, in_bytes: float, cast: bool) -> float:
    """Forward seconds of ``count`` products m x k x n: FLOPs at e_max of the peak plus their bytes at HBM speed."""
    flops = 2 * m * k * n
    nbytes = in_bytes * (m * k + k * n) + 2 * m * n
    if cast:   # FP8: cast the input (and, backward, the output gradient), and keep a transposed input copy
        nbytes += CAST_BYTES_PER_VALUE * (m * k + m * n) + 2 * m * k
    return count * (flops / (peak * e_max) + nbytes / hbm)


@lru_cache(maxsize=4096)
def _layer_seconds(m: Transformer, gpu: hardware.GPU, tp: int, cp: int, micro_batch: int, precision: str, ep: int, etp: int | None, sequence_parallel: bool) -> dict:
    from .precision import recipe   # noqa: PLC0415 - precision imports hardware only; kept local for clarity
    c = constants()
    rec = recipe(precision)
    fam = "bf16" if precision == "bf16" else "fp8"
    peak, e_lin = gpu.peak_flops(rec["linear_peak"]), c["e_max"][fam]
    bf16, e_bf16 = gpu.bf16_flops, c["e_max"]["bf16"]
    hbm = gpu.hbm_bytes_per_s
    in_bytes = 2.0 if precision == "bf16" else rec["saved_linear_input_bytes"]
    gemms = layer_gemms(m, tp, cp, micro_batch, ep, etp)
    T = m.seq_len * micro_batch / cp
    norm = NORM_RESIDUAL_BYTES_PER_VALUE * T * m.hidden / (tp if sequence_parallel else 1)
    act = ACTIVATION_BYTES_PER_VALUE[m.gated_mlp] * T * m.active_ffn / tp
    elementwise = c["elementwise_scale"] * (norm + act) / hbm   # forward and backward together
    w = m.attention_widths
    attention = 2 * T * m.seq_len * (w["q"] + w["v"]) / tp / (bf16 * e_bf16)   # forward, per layer
    out = {}
    for kind in [k for k in ("dense", "moe") if k in gemms]:
        out[kind] = {"gemm": sum(_gemm_s(*g, peak, e_lin, hbm, in_bytes, precision != "bf16") for g in gemms[kind]),
                     "attention": attention, "elementwise": elementwise}
    out["logits"] = sum(_gemm_s(*g, bf16, e_bf16, hbm, 2.0, False) for g in gemms["logits"])
    return out


def layer_seconds(m: Transformer, gpu: hardware.GPU, *, tp: int = 1, cp: int = 1, micro_batch: int = 1, precision: str = "bf16", ep: int = 1, etp: int | None = None,
                  sequence_parallel: bool = False) -> dict:
    """Forward seconds of one micro-batch on one GPU: per layer kind (``dense``, ``moe``) its products
    (``gemm``), ``attention`` and ``elementwise`` (forward + backward already), and the output layer (``logits``).
    A GPU with no HBM bandwidth in the catalog is refused by name."""
    if gpu.hbm_bytes_per_s is None:
        raise ValueError(f"gpu must state its HBM bandwidth (hbm_tb_s) for the compute model, {gpu.name} does not")
    validate.integer("micro_batch", micro_batch, low=1, high=10**6)
    return _layer_seconds(m, gpu, tp, cp, micro_batch, precision, ep, tp if etp is None else etp,
                          bool(sequence_parallel))


def fit_summary() -> dict:
    """The stored fit: its rows (id, measured, predicted, ratio), the residuals' range and the form."""
    return dict(_stored())
