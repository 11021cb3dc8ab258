"""NCCL's algorithms with its protocols (LL, LL128, Simple): ring, tree and NVLS, each timed per protocol."""
from __future__ import annotations

import numpy as np

from .. import collectives, units, validate
from .efficiencies import efficiency_data, hop_latency
from .fabrics import Fabric
from .flat import _sizes

PROTOCOLS = ("LL", "LL128", "Simple")


def protocol_table() -> dict:
    """NCCL's latency and bandwidth terms per algorithm and protocol (efficiency.json ``nccl_protocols``)."""
    return efficiency_data()["nccl_protocols"]


def _protocols(f: Fabric, protocol, nodes=1) -> tuple:
    """Protocols NCCL would consider: LL128 needs NVLink inside the node; across nodes only those the
    fabric's NCCL setup allows (``Fabric.net_protocols``); ``protocol`` forces one."""
    allowed = PROTOCOLS if f.intra_tech == "nvlink" else ("LL", "Simple")
    if nodes > 1 and f.net_protocols:
        allowed = tuple(p for p in allowed if p in f.net_protocols)
    if protocol in (None, "auto"):
        return allowed
    return (protocol,) if protocol in allowed else ()


def _ll_cap(N, arch) -> float:
    caps = protocol_table()["ll_max_bw_gb_s"]
    return (caps["one_node"][arch] if N == 1 else caps["2"] if N == 2 else caps["4"]) * units.GB


def _net_extra_us(f: Fabric) -> float:
    """Extra latency per network step of this fabric kind beyond NCCL's InfiniBand figure, us (EFA, TCP ...)."""
    return max(0.0, f.net_hop - hop_latency("infiniband")) * 1e6


def pipeline_fill_bytes(nbytes, ranks, channels, nodes=1):
    """Bytes charged once more for filling the pipeline: share x min(size, ranks x channels x chunk) (efficiency.json).

    Fitted on one node (NVLink); across nodes the network's own latencies stand for it and this is 0.
    """
    nbytes = _sizes(nbytes)
    ranks = validate.integer("ranks", ranks, low=1, high=10_000_000)
    channels = validate.integer("channels", channels, low=1, high=1024)
    nodes = validate.integer("nodes", nodes, low=1, high=10_000_000)
    fill = efficiency_data()["pipeline_fill"]
    if nodes > 1:
        return 0.0 * np.asarray(nbytes, dtype=float)
    return fill["share"] * np.minimum(nbytes, ranks * channels * fill["chunk_bytes"])


def _ring(coll, n, g, N, f: Fabric, bw, protocol):
    """NCCL ring per protocol: {protocol: seconds}. bw: the ring's busbw-sense bandwidth, bytes/s."""
    T = protocol_table()
    p = g * N
    steps, vol = coll.algorithm("ring").terms(p)
    n_inter = (2 * (N - 1) if coll.id == "all_reduce" else N - 1) if N > 1 else 0
    n_inter = min(n_inter, steps)
    fill = pipeline_fill_bytes(n, p, f.channels, N)
    out = {}
    for proto in _protocols(f, protocol, N):
        intra = T["hw_latency_us"][f.intra_tech]["ring"][proto]
        if N > 1:  # every step of a ring spanning nodes pays at least the network post overhead
            intra = max(intra, T["net_overhead_us"] * (T["net_overhead_simple_factor"] if proto == "Simple" else 1))
        inter = T["hw_latency_us"]["net"]["ring"][proto] + _net_extra_us(f)
        lat = f.launch + 1e-6 * (T["base_latency_us"]["ring"][proto] + (steps - n_inter) * intra + n_inter * inter)
        if proto == "LL":
            b = min(bw * T["ll_bw_factor"]["ring"], _ll_cap(N, f.arch))
            out[proto] = lat + vol * n / b
        else:
            b = min(bw * T["ll128_bw_factor"], f.channels * T["ll128_max_bw_per_channel_gb_s"][f.arch] * units.GB) \
                if proto == "LL128" else bw
            out[proto] = lat + vol * (n + fill) / b
    return out


def _tree(coll, n, g, N, f: Fabric, protocol):
    """NCCL tree per protocol (chain inside a node, double binary tree between nodes): {protocol: seconds}."""
    T = protocol_table()
    up_down = 2 if coll.id == "all_reduce" else 1
    chain_steps, chain_vol = collectives.get("broadcast").algorithm("ring").terms(g)
    if N == 1:
        t_bw = up_down * chain_vol * n / f.intra_bw if g > 1 else 0.0 * n
    else:
        # bytes each node pushes through its NICs per byte of message: all-reduce 2 (up and down
        # the tree), broadcast/reduce 1. On two nodes the tree could send half (one edge between
        # the nodes), but published two-node runs with 2-8 NICs per node measure busbw at about
        # the NICs' rate, as with 2 (nccl-tests 100, 175; nccl 495; maintainers in nccl-tests 160, 196)
        per_node = 2.0 if coll.id == "all_reduce" else 1.0
        t_bw = np.maximum(per_node * n / f.net_bw_node_for(g), up_down * n / f.intra_bw)
    depth = collectives.log2_steps(N)
    fill = pipeline_fill_bytes(n, g * N, f.channels, N)
    out = {}
    for proto in _protocols(f, protocol, N):
        lat = f.launch + 1e-6 * (T["base_latency_us"]["tree"][proto] + up_down * (
            chain_steps * T["hw_latency_us"][f.intra_tech]["tree"][proto]
            + depth * (T["hw_latency_us"]["net"]["tree"][proto] + _net_extra_us(f))))
        t = t_bw / T["tree_bw_factor"]
        if proto == "LL":
            t = np.maximum(t / T["ll_bw_factor"]["tree"], up_down * n / _ll_cap(N, f.arch))
        else:
            if proto == "LL128":
                t = t / (7 / 9 if N == 1 else 120 / 128)
            t = t * (1 + fill / np.where(n > 0, n, 1))
        out[proto] = lat + t
    return out


def _nvls(n, g, N, f: Fabric, protocol):
    """NCCL NVLS (one node) or NVLS tree (several nodes): Simple protocol only; {"Simple": seconds} or None."""
    if f.nvls_bw is None or protocol not in (None, "auto", "Simple"):
        return None
    T = protocol_table()
    fill = 1 + pipeline_fill_bytes(n, g * N, f.channels, N) / np.where(n > 0, n, 1)
    if N == 1:
        return {"Simple": f.launch + 1e-6 * T["hw_latency_us"]["nvlink"]["nvls"] + fill * n / f.nvls_bw}
    # in-switch reduce-scatter / all-gather in each node, pipelined with a tree between nodes on
    # each GPU's 1/g shard: each NIC carries the shard once on two nodes, twice beyond; NCCL
    # rates NVLS tree at 5/6 of the slower of the two (tuning.cc)
    per_nic = 1.0 if N == 2 else 2.0
    t_bw = np.maximum(n / f.nvls_bw, per_nic * (n / g) / f.net_bw_per_gpu_for(g)) / T["nvls_tree_ratio"]
    lat = f.launch + 1e-6 * (T["hw_latency_us"]["nvlink"]["nvls_tree"] + 2 * collectives.log2_steps(N) * (
        T["hw_latency_us"]["net"]["nvls_tree"] + _net_extra_us(f)))
    return {"Simple": lat + fill * t_bw}
