"""Data-parallel traffic: DDP's gradient all-reduce, ZeRO-1/2/3 (FSDP) and HSDP, with overlap."""
from __future__ import annotations

import math

from .. import units, validate
from ..transformer import BYTES_PER_PARAM_ADAM
from .layouts import DDP_BUCKET_BYTES, Layout
from .links import GroupLink
from .phases import Compute
from .results import Traffic


ZERO3_GATHERS_PER_MICRO_BATCH = 2          # before each unit's forward and again before its backward
ZERO3_REDUCE_SCATTERS_PER_MICRO_BATCH = 1  # its gradients, once


def zero3_step_bytes(param_bytes: float, micro_batches: int = 1) -> dict:
    """Whole-buffer bytes the ZeRO-3 / FSDP collectives move in one step, as ``dp_phase`` counts them."""
    n = validate.non_negative("param_bytes", param_bytes)
    mb = validate.integer("micro_batches", micro_batches, low=1, high=10**6)
    return {"all_gather": ZERO3_GATHERS_PER_MICRO_BATCH * mb * n,
            "reduce_scatter": ZERO3_REDUCE_SCATTERS_PER_MICRO_BATCH * mb * n}


def bucket_count(nbytes: float, bucket_bytes: float = DDP_BUCKET_BYTES) -> int:
    """Buckets DDP fills for ``nbytes`` of gradients (bytes > 0) with buckets of ``bucket_bytes``
    (bytes > 0; default 25 MiB), when every tensor is much smaller than a bucket: ceil(n / bucket)."""
    n = validate.positive("nbytes", nbytes)
    cap = validate.positive("bucket_bytes", bucket_bytes)
    return int(math.ceil(n / cap - 1e-12))


def _dp_groups(L: Layout) -> list:
    """(kind prefix, parameters, group size, stride) of each gradient-reduction group.

    Dense weights reduce over the cp x dp replicas (the ZeRO-3 shard group with HSDP) at stride
    tp; routed experts over the expert-data-parallel group, tp x cp x dp / (ep x etp) ranks at stride
    etp x ep (Megatron's expert rank order: ETP adjacent, then EP, then expert DP).
    """
    d = L.shard_group if L.zero == 3 else L.replicas
    if not L.model.experts:
        return [("", L.stage_params, d, L.tp)]
    return [("", L.stage_dense_params, d, L.tp),
            ("expert ", L.stage_expert_params, d * L.tp // (L.ep * L.etp), L.etp * L.ep)]


def _row(kind: str, ids: tuple[str, ...], d: int, link: GroupLink, calls: int, size: float, time_s: float, exposed: float) -> tuple[GroupLink, Traffic]:
    """(the link, one Traffic row) of a data-parallel collective; the label is its id, or RS + AG for two."""
    return link, Traffic(kind, ids, d, link.name, link.crosses_nodes, calls, size, time_s, exposed,
                         ids[0] if len(ids) == 1 else "RS + AG")


def _zero01_rows(L: Layout, groups: list, window: float) -> list:
    """DDP / ZeRO-1: one gradient reduction per step after the flush, hidden bucket by bucket behind ``window``."""
    ids = ("all_reduce",) if L.state_zero == 0 else ("reduce_scatter", "all_gather")
    parts = []
    for prefix, params, d, stride in groups:
        link = L.links.link(d, stride)
        grad = BYTES_PER_PARAM_ADAM["gradients"] * params
        parts.append((prefix, d, link, grad, sum(L.links.collective_time(i, grad, d, stride) for i in ids)))
    t_dp = sum(p[4] for p in parts)
    first_bucket = min(1.0, L.bucket_bytes / sum(p[3] for p in parts))
    exposed = max(t_dp * first_bucket, t_dp - window) if L.dp_overlap else t_dp
    out = []
    for prefix, d, link, grad, t in parts:
        kind = prefix + ("data parallel grads" if L.zero == 0 else "ZeRO-1 grads + weights" if L.zero == 1 else
                         f"ZeRO-{L.zero} under PP grads + weights")
        out.append(_row(kind, ids, d, link, 1, grad, t, exposed * (t / t_dp)))
    return out


def _zero2_rows(L: Layout, c: Compute, groups: list) -> list:
    """ZeRO-2: gradients reduce-scattered every micro-batch (hidden behind its backward), weights gathered once."""
    mb, out = L.micro_batches, []
    for prefix, params, d, stride in groups:
        link = L.links.link(d, stride)
        grad = BYTES_PER_PARAM_ADAM["gradients"] * params
        first_bucket = min(1.0, L.bucket_bytes / grad)
        t_rs, t_ag = (L.links.collective_time(i, grad, d, stride) for i in ("reduce_scatter", "all_gather"))
        per_mb = max(t_rs * first_bucket, t_rs - c.backward_share * c.micro_batch_s) if L.dp_overlap else t_rs
        out += [_row(prefix + "ZeRO-2 grads", ("reduce_scatter",), d, link, mb, grad, mb * t_rs, mb * per_mb),
                _row(prefix + "ZeRO-2 weights", ("all_gather",), d, link, 1, grad, t_ag, t_ag)]
    return out


def _zero3_rows(L: Layout, c: Compute, groups: list) -> list:
    """ZeRO-3 / FSDP: weights gathered twice and gradients reduce-scattered once per micro-batch, prefetched."""
    mb, parts, out = L.micro_batches, [], []
    for prefix, params, d, stride in groups:
        link = L.links.link(d, stride)
        grad = BYTES_PER_PARAM_ADAM["gradients"] * params
        parts.append((prefix, d, link, grad, L.links.collective_time("all_gather", grad, d, stride),
                      L.links.collective_time("reduce_scatter", grad, d, stride)))
    comm_mb = sum(2 * p[4] + p[5] for p in parts)
    # prefetching hides it behind compute, except one layer's gather
    per_mb = max(comm_mb / L.layers_per_stage, comm_mb - c.micro_batch_s) if L.dp_overlap else comm_mb
    share = mb * per_mb / (mb * comm_mb) if comm_mb else 0.0
    for prefix, d, link, grad, t_ag, t_rs in parts:
        g_calls, r_calls = ZERO3_GATHERS_PER_MICRO_BATCH * mb, ZERO3_REDUCE_SCATTERS_PER_MICRO_BATCH * mb
        out += [_row(prefix + "ZeRO-3 weight gathers", ("all_gather",), d, link, g_calls, grad, g_calls * t_ag,
                     g_calls * t_ag * share),
                _row(prefix + "ZeRO-3 grads", ("reduce_scatter",), d, link, r_calls, grad, r_calls * t_rs,
                     r_calls * t_rs * share)]
    return out


def _hsdp_rows(L: Layout, window: float) -> list:
    """HSDP: each rank's gradient shard all-reduced across the replicas once per step, hidden like DDP's."""
    r, stride = L.replicas // L.shard_group, L.tp * L.shard_group
    link = L.links.link(r, stride)
    shards = [(prefix, BYTES_PER_PARAM_ADAM["gradients"] * params / max(1, d))
              for prefix, params, d, _ in _dp_groups(L)]
    out = []
    for prefix, size in shards:
        t = L.links.collective_time("all_reduce", size, r, stride)
        first_bucket = min(1.0, L.bucket_bytes / size)
        exposed = max(t * first_bucket, t - window) if L.dp_overlap else t
        out.append(_row(prefix + "HSDP replica all-reduce", ("all_reduce",), r, link, 1, size, t, exposed))
    return out


def _crossing_note(L: Layout, traffic: Traffic) -> str:
    """The rate a cross-node data-parallel collective is priced at (bus bandwidth per rank, as nccl-tests
    reports it), beside one NIC's rate, so that it does not read as a physical link's."""
    sys_ = L.system
    nic = sys_.nic.per_direction
    busbw = traffic.sent_per_gpu / traffic.time_s if traffic.time_s > 0 else 0.0
    return (f"data-parallel traffic crosses nodes: the model prices its {traffic.label} over {traffic.group_size} "
            f"ranks at {busbw / units.GB:.1f} GB/s bus bandwidth per rank (nccl-tests' busbw, which across nodes "
            f"approaches the node's NICs together, {sys_.nics_per_node} x {nic / units.GB:.1f} GB/s), not a link's "
            f"rate: one NIC is {nic / units.GB:.1f} GB/s = {units.gbit_per_s(nic):g} Gb/s per direction")


def dp_phase(L: Layout, c: Compute, notes: list) -> list:
    """Data-parallel / ZeRO / FSDP / HSDP traffic per step; each Traffic's exposed_s is what overlap leaves visible.

    ZeRO-0/1 reduce gradients once after the last micro-batch, hidden behind the last backward
    pass bucket by bucket. ZeRO-2 reduce-scatters every micro-batch. ZeRO-3 (FSDP) gathers each
    layer's weights before its forward and again before its backward and reduce-scatters its
    gradients, every micro-batch; prefetching the next layer hides all of it behind compute except
    one layer's share. HSDP shards within ``shard_group`` ranks and all-reduces each rank's 1/g
    gradient shard across the replicas once per step, hidden like DDP's all-reduce.
    """
    groups = [g for g in _dp_groups(L) if g[2] > 1]
    hsdp = L.zero == 3 and L.shard_group < L.replicas   # its replica all-reduce runs even with a shard group of 1
    if not groups and not hsdp:
        return []
    window = c.backward_share * c.micro_batch_s / L.interleave  # last backward pass of the stage (one chunk)
    if L.state_zero <= 1:   # ZeRO-2/3 under PP: once per step, as ZeRO-1 (``Layout.state_zero``)
        rows = (_zero01_rows(L, groups, window) if groups else []) + (_hsdp_rows(L, window) if hsdp else [])
    elif L.zero == 2:
        rows = _zero2_rows(L, c, groups)
    else:
        rows = _zero3_rows(L, c, groups) + (_hsdp_rows(L, window) if hsdp else [])
    crosses = [traffic for link, traffic in rows if link.crosses_nodes]
    if crosses:
        notes.append(_crossing_note(L, crosses[0]))
    return [traffic for _, traffic in rows]
