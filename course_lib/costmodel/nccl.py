"""NCCL's algorithms with its protocols (LL, LL128, Simple): ring, tree, NVLS and CollNet (SHARP), timed per protocol."""
from __future__ import annotations

import copy
import re
from functools import lru_cache

import numpy as np

from .. import collectives, units, validate
from .efficiencies import efficiency_data, hop_latency
from .fabrics import Fabric
from .flat import _sizes

PROTOCOLS = ("LL", "LL128", "Simple")


def nccl_versions() -> tuple:
    """The NCCL releases whose tuning tables the course reads, oldest first (efficiency.json ``nccl_protocols.releases``)."""
    return tuple(efficiency_data()["nccl_protocols"]["releases"])


def default_nccl_version() -> str:
    """The release ``predict`` prices with when none is given: the newest the course reads."""
    return nccl_versions()[-1]


def _version_key(text: str | None) -> tuple | None:
    m = re.match(r"\s*v?(\d+)\.(\d+)", str(text))
    return (int(m.group(1)), int(m.group(2))) if m else None


def nccl_release(version: str | None = None) -> tuple[str, str]:
    """(release key of ``nccl_versions()``, how it was chosen) for an NCCL version such as ``"2.21.5"``.

    The newest listed release at or below the version (2.20.5 -> 2.19, whose tables 2.20 shares); None gives the
    default; a version older than the oldest listed is priced with the oldest and says so (``"assumed: ..."``).
    A version newer than the newest, or text that is not X.Y, raises ValueError naming the range.
    """
    keys = nccl_versions()
    if version is None:
        return keys[-1], f"default: NCCL {keys[-1]}, the newest release the course reads; --nccl-version X.Y for another"
    want = _version_key(version)
    newest = _version_key(keys[-1])
    if want is None or want[0] != 2 or want > newest:
        raise ValueError(f"nccl_version must be an NCCL release X.Y from 2.0 to {keys[-1]} (tables read for "
                         f"{', '.join(keys)}); got {version!r}")
    fits = [k for k in keys if _version_key(k) <= want]
    if not fits:
        return keys[0], f"assumed: NCCL {version} is older than the oldest tables the course reads; {keys[0]}'s rules"
    key = fits[-1]
    return key, f"NCCL {version}: the tuning rules of {key} (read at {efficiency_data()['nccl_protocols']['releases'][key]['tag']})"


def nccl_version_stated(text: str) -> bool:
    """Whether ``text`` (a log's or a source's NCCL version field) names a release X.Y the course can price."""
    key = _version_key(text) if text else None
    return key is not None and key[0] == 2 and key <= _version_key(nccl_versions()[-1])


def _set_path(table: dict, path: str, value: object) -> None:
    *head, last = path.split(".")
    for k in head:
        table = table[k]
    if last not in table:
        raise KeyError(path)
    table[last] = value


@lru_cache(maxsize=None)
def _release_table(key: str) -> dict:
    base = copy.deepcopy(efficiency_data()["nccl_protocols"])
    for path, value in base["releases"][key]["set"].items():
        _set_path(base, path, value)
    base["release"] = key
    return base


def protocol_table(version: str | None = None) -> dict:
    """NCCL's latency and bandwidth terms per algorithm and protocol for one release (efficiency.json
    ``nccl_protocols``, with the terms of ``releases[version]`` where that release differs); default: the newest."""
    return _release_table(nccl_release(version)[0])


def two_node_tree_rule(version: str | None = None) -> str:
    """How the release's estimate rates a tree on one or two nodes: ``intra`` (through 2.30: the graph's intra-node
    bandwidth, which the search raises to twice the network's) or ``min`` (2.31: min(network, intra-node))."""
    return protocol_table(version)["releases"][protocol_table(version)["release"]]["two_node_tree_rule"]


def base_latency_us(f: Fabric, algorithm: str, protocol: str, version: str | None = None) -> float:
    """NCCL's base latency of ``algorithm`` (ring, tree) with ``protocol``, us: RCCL's own for its GPU generations
    (efficiency.json ``nccl_protocols.rccl``), else the release's."""
    T = protocol_table(version)
    rccl = T["rccl"]
    table = rccl["base_latency_us"] if f.arch in rccl["generations"] else T["base_latency_us"]
    return float(table[algorithm][protocol])


def _protocols(f: Fabric, protocol: str | None, nodes: int = 1) -> tuple:
    """Protocols NCCL would consider: LL128 needs NVLink inside the node; across nodes only those the
    fabric's NCCL setup allows (``Fabric.net_protocols``); ``protocol`` forces one."""
    allowed = PROTOCOLS if f.intra_tech == "nvlink" else ("LL", "Simple")
    if nodes > 1 and f.net_protocols:
        allowed = tuple(p for p in allowed if p in f.net_protocols)
    if protocol in (None, "auto"):
        return allowed
    return (protocol,) if protocol in allowed else ()


def _ll_cap(N: int, arch: str, version: str | None = None) -> float:
    caps = protocol_table(version)["ll_max_bw_gb_s"]
    return (caps["one_node"][arch] if N == 1 else caps["2"] if N == 2 else caps["4"]) * units.GB


def _net_extra_us(f: Fabric) -> float:
    """Extra latency per network step of this fabric kind beyond NCCL's InfiniBand figure, us (EFA, TCP ...)."""
    return max(0.0, f.net_hop - hop_latency("infiniband")) * 1e6


def pipeline_fill_bytes(nbytes: validate.Sizes, ranks: int, channels: int, nodes: int = 1) -> np.ndarray:
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


def _ring(coll: collectives.Collective, n: np.ndarray, g: int, N: int, f: Fabric, bw: float, protocol: str | None, rating: bool = False) -> dict[str, np.ndarray]:
    """NCCL ring per protocol: {protocol: seconds}. bw: the ring's busbw-sense bandwidth, bytes/s.

    rating: NCCL's own estimate, used only to choose (``nccl_prefers_tree``): its Simple latency across
    nodes times the ring plateau factor (ring.cc: x1.4 from sm80, x1.9 before, for all-reduce once a rank
    and channel hold at least 64 bytes).
    """
    T = protocol_table(f.nccl_version)
    p = g * N
    steps, vol = coll.algorithm("ring").terms(p)
    n_inter = min(coll.algorithm("ring").steps(N), steps)   # the ring's steps between the N nodes
    fill = pipeline_fill_bytes(n, p, f.channels, N)
    out = {}
    for proto in _protocols(f, protocol, N):
        intra = T["hw_latency_us"][f.intra_tech]["ring"][proto]
        if N > 1:  # every step of a ring spanning nodes pays at least the network post overhead
            intra = max(intra, T["net_overhead_us"] * (T["net_overhead_simple_factor"] if proto == "Simple" else 1))
        inter = T["hw_latency_us"]["net"]["ring"][proto] + _net_extra_us(f)
        lat = f.launch + 1e-6 * (base_latency_us(f, "ring", proto, f.nccl_version) + (steps - n_inter) * intra
                                 + n_inter * inter)
        if rating and proto == "Simple" and N > 1 and coll.id == "all_reduce":
            plateau = T["ring_plateau"]["before_sm80" if f.arch == "volta" else "sm80_on"]
            lat = f.launch + (lat - f.launch) * np.where(n / (f.channels * p) >= 64, plateau, 1.0)
        if proto == "LL":
            b = min(bw * T["ll_bw_factor"]["ring"], _ll_cap(N, f.arch, f.nccl_version))
            out[proto] = lat + vol * n / b
        else:
            b = min(bw * T["ll128_bw_factor"], f.channels * T["ll128_max_bw_per_channel_gb_s"][f.arch] * units.GB) \
                if proto == "LL128" else bw
            out[proto] = lat + vol * (n + fill) / b
    return out


def _btree(nranks: int, rank: int) -> tuple:
    """NCCL's binary tree over ``nranks`` nodes (trees.cc ncclGetBtree): (parent or -1, [children])."""
    bit = 1
    while bit < nranks and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, ([bit >> 1] if nranks > 1 else [])
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    low = bit >> 1
    children = [rank - low] if low else []
    while low and rank + low >= nranks:
        low >>= 1
    if low:
        children.append(rank + low)
    return up, children


def double_binary_tree_load(nodes: int) -> float:
    """Bytes the busiest node of NCCL's double binary tree sends (and receives) per byte of all-reduce.

    Two trees (trees.cc ncclGetDtree: the second mirrors the first for an even node count and shifts
    it by one for an odd count) each carry half the message up (reduce) and down (broadcast); a node
    with c children and a parent moves (c + 1) halves each way. 2 nodes: 1.0 (one edge, each byte
    crosses once); 3 nodes: 1.5 (both trees are chains); 4 or more: 2.0.
    """
    N = validate.integer("nodes", nodes, low=1, high=10_000_000)
    return _dtree_load(N) if N <= 1024 else 2.0  # 2.0 from 4 nodes on: the tests check every count to 1024


@lru_cache(maxsize=None)
def _dtree_load(N: int) -> float:
    def halves(tree_rank: int) -> tuple[int, int]:  # a node moves one half per child and one to its parent, each way
        up, children = _btree(N, tree_rank)
        return len(children) + (up >= 0)

    if N == 1:
        return 0.0
    second = (lambda r: (r - 1) % N) if N % 2 else (lambda r: N - 1 - r)
    return max(halves(r) + halves(second(r)) for r in range(N)) / 2


def _tree_net_bytes_per_byte(coll: collectives.Collective, N: int, forced: bool, rule: str = "min") -> float:
    """Bytes each node pushes through its NICs, per direction, per byte of message, for NCCL's tree.

    All-reduce: the busiest node of the double binary tree (``double_binary_tree_load``: 1.0 on two
    nodes, 1.5 on three, 2.0 beyond) when the tree runs (forced, or chosen on two nodes by
    ``nccl_prefers_tree``). Otherwise 2.0, NCCL's own rating when it chooses (tree.cc rates the tree at
    half its bus bandwidth whatever the node count, from 2.31: ``rule`` ``min``); through 2.30 (``rule`` ``intra``)
    NCCL rates a tree on two nodes by its graph's intra-node bandwidth, which its search raises to twice the
    network's, so its estimate counts 1.0 there. Broadcast and reduce: 1.
    """
    if coll.id != "all_reduce":
        return 1.0
    if forced:
        return double_binary_tree_load(N)
    return 1.0 if (rule == "intra" and N <= 2) else 2.0


def tree_correction(nbytes: validate.Sizes, protocol: str) -> np.ndarray:
    """NCCL's ``treeCorrectionFactor`` for an all-reduce of ``nbytes``: the share of its tree bandwidth NCCL's
    estimate keeps at that size (efficiency.json ``nccl_protocols.tree_correction``; 1 from 512 MiB on)."""
    table = protocol_table()["tree_correction"]
    protocol = validate.choice("protocol", protocol, PROTOCOLS)
    n = np.asarray(_sizes(nbytes), dtype=float)
    idx = np.floor(np.log2(np.maximum(n, 1) / 64)).astype(int)  # log2i(nBytes >> 6)
    row = np.asarray(table[protocol], dtype=float)
    inside = (n >= 64) & (idx < table["sizes_below_index"])
    return np.where(inside, row[np.clip(idx, 0, row.size - 1)], 1.0)


def nccl_prefers_tree(collective: str | collectives.Collective, nbytes: validate.Sizes, gpus_per_node: int, nodes: int, fabric: Fabric, protocol: str | None) -> np.ndarray:
    """Where NCCL's own estimate (``nccl_version``) picks its tree over its ring, per size: a bool array.

    NCCL rates both from one cost model (ring.cc, tree.cc): the tree at half its bus bandwidth x
    ``tree_correction`` (it does not credit the single crossing of a two-node tree), the ring with its
    plateau latency; the lower estimate wins. ``protocol`` limits both to one protocol, as NCCL_PROTO does.
    collective: a collective id (e.g. ``"all_reduce"``) or ``collectives.get``'s object; nbytes: sizes (array).
    """
    coll = collectives.get(collective) if isinstance(collective, str) else collective
    n, g, N, f = nbytes, gpus_per_node, nodes, fabric
    ring = _ring(coll, n, g, N, f, min(f.intra_bw, f.net_bw_node_for(g)), protocol, rating=True)
    tree = _tree(coll, n, g, N, f, protocol, rating=True)
    if not ring or not tree:
        return np.full(np.shape(n), bool(tree))
    best = lambda t: np.min(np.vstack([np.broadcast_to(np.asarray(v, dtype=float), np.shape(n)) for v in t.values()]),
                            axis=0)
    return best(tree) < best(ring)


def node_decline_constants() -> dict:
    """efficiency.json ``node_decline``: per_doubling, from_nodes, source, role, derivation."""
    return dict(efficiency_data()["node_decline"])


def node_decline(nodes: int) -> float:
    """The measured fall of a fabric's delivered bandwidth with node count: per_doubling ** log2(nodes / from_nodes).

    1.0 up to ``from_nodes``; efficiency.json ``node_decline`` holds the constants, fit on one published
    forced-ring sweep (the ring's bytes per node do not change with node count, so what falls is the
    fabric: more paths through spine switches, more chances to collide with other traffic).
    """
    nodes = validate.integer("nodes", nodes, low=1, high=10_000_000)
    c = efficiency_data()["node_decline"]
    return float(c["per_doubling"] ** np.log2(nodes / c["from_nodes"])) if nodes > c["from_nodes"] else 1.0


def tree_net_rate(f: Fabric, gpus: int) -> float:
    """Bytes/s per direction NCCL's tree moves through one node's NICs: the NICs, at most the SM-bound cap.

    At NCCL's default 16 SMs the tree is limited by the GPU's SMs, not the network, on Hopper and
    Blackwell (nccl 1649: it would need 32 SMs to match NVLS tree); efficiency.json ``tree_net_cap``
    holds the cap, fit on one published forced-tree sweep. No cap for other generations (no measurement).
    """
    if not isinstance(f, Fabric):
        raise ValueError(f"f must be a costmodel.Fabric (e.g. costmodel.fabric('dgx-h100')); got {f!r}")
    gpus = validate.integer("gpus", gpus, low=1, high=f.gpus_per_node)
    cap = efficiency_data()["tree_net_cap"]
    rate = f.net_bw_node_for(gpus)
    return min(rate, cap["gb_s_per_node"] * units.GB) if f.arch in cap["generations"] else rate


def _tree(coll: collectives.Collective, n: np.ndarray, g: int, N: int, f: Fabric, protocol: str | None, forced: bool = False, rating: bool = False) -> dict[str, np.ndarray]:
    """NCCL tree per protocol (chain inside a node, double binary tree between nodes): {protocol: seconds}.

    forced: the tree runs (NCCL_ALGO=Tree, or NCCL chose it): priced with what its double binary tree
    really sends. rating: NCCL's own estimate, used only to choose: ``tree_correction`` applied.
    """
    T = protocol_table(f.nccl_version)
    up_down = 2 if coll.id == "all_reduce" else 1
    chain_steps, chain_vol = collectives.get("broadcast").algorithm("ring").terms(g)
    if N == 1:
        t_bw = up_down * chain_vol * n / f.intra_bw if g > 1 else 0.0 * n
    else:
        t_bw = np.maximum(_tree_net_bytes_per_byte(coll, N, forced and not rating, two_node_tree_rule(f.nccl_version)) * n / tree_net_rate(f, g),
                          up_down * n / f.intra_bw)
    depth = collectives.log2_steps(N)
    fill = pipeline_fill_bytes(n, g * N, f.channels, N)
    out = {}
    for proto in _protocols(f, protocol, N):
        lat = f.launch + 1e-6 * (base_latency_us(f, "tree", proto, f.nccl_version) + up_down * (
            chain_steps * T["hw_latency_us"][f.intra_tech]["tree"][proto]
            + depth * (T["hw_latency_us"]["net"]["tree"][proto] + _net_extra_us(f))))
        t = t_bw / T["tree_bw_factor"]
        if proto == "LL":
            t = np.maximum(t / T["ll_bw_factor"]["tree"], up_down * n / _ll_cap(N, f.arch, f.nccl_version))
        else:
            if proto == "LL128":
                t = t / T["ll128_tree_bw_factor"]["one_node" if N == 1 else "nodes"]
            t = t * (1 + fill / np.where(n > 0, n, 1))
        if rating and coll.id == "all_reduce":
            t = t / tree_correction(n, proto)
        out[proto] = lat + t
    return out


def _nvls(n: np.ndarray, g: int, N: int, f: Fabric, protocol: str | None) -> dict[str, np.ndarray] | None:
    """NCCL NVLS (one node) or NVLS tree (several nodes): Simple protocol only; {"Simple": seconds} or None."""
    if f.nvls_bw is None or protocol not in (None, "auto", "Simple"):
        return None
    T = protocol_table(f.nccl_version)
    fill = 1 + pipeline_fill_bytes(n, g * N, f.channels, N) / np.where(n > 0, n, 1)
    if N == 1:
        return {"Simple": f.launch + 1e-6 * T["hw_latency_us"]["nvlink"]["nvls"] + fill * n / f.nvls_bw}
    # in-switch reduce-scatter / all-gather in each node, pipelined with a tree between nodes on
    # each GPU's 1/g shard: each NIC carries the shard once on two nodes, twice beyond. The in-switch
    # part runs at 5/6 of its one-node rate (NCCL's NVLS-tree ratio, tuning.cc); newer NCCL applies
    # its NVLS efficiency to that intra-node part only, and published runs beyond one node reach the
    # NICs' rate (B200: 389 GB/s busbw over 8x 400 Gb/s from 4 to 64 nodes), so the network part is not scaled
    per_nic = 1.0 if N == 2 else 2.0
    t_bw = np.maximum(n / (f.nvls_bw * T["nvls_tree_ratio"]), per_nic * (n / g) / f.net_bw_per_gpu_for(g))
    lat = f.launch + 1e-6 * (T["hw_latency_us"]["nvlink"]["nvls_tree"] + 2 * collectives.log2_steps(N) * (
        T["hw_latency_us"]["net"]["nvls_tree"] + _net_extra_us(f)))
    return {"Simple": lat + fill * t_bw}


def collnet_constants() -> dict:
    """efficiency.json ``collnet``: SHARP's share of the NICs' achievable rate, its fit cases, needs and source."""
    return dict(efficiency_data()["collnet"])


def _collnet(n: np.ndarray, g: int, N: int, f: Fabric, protocol: str | None) -> dict[str, np.ndarray] | None:
    """NCCL CollNet (InfiniBand SHARP) all-reduce across nodes: Simple only; {"Simple": seconds} or None.

    The switches reduce: each node's NICs send every byte once up the SHARP tree and receive the
    reduced result once, so busbw can reach about twice the NICs' rate. In the node the GPUs reduce-
    scatter to the NIC heads and all-gather back (NVLS in the switch where it reduces). SHARP moves
    efficiency.json ``collnet.efficiency`` of the NICs' achievable rate, fit without a node decline
    (its published rate stays flat from 2 to 46 nodes). Needs InfiniBand switches with SHARP.
    """
    c = collnet_constants()
    if N < 2 or protocol not in (None, "auto", "Simple") or f.net_tech not in c["fabrics"]:
        return None
    T = protocol_table(f.nccl_version)
    net = f.net_bw_node_for(g) / f.net_decline * c["efficiency"]
    intra = f.nvls_bw if f.nvls_bw is not None else (f.intra_bw * g / (2 * (g - 1)) if g > 1 else float("inf"))
    lat = f.launch + 1e-6 * (T["base_latency_us"]["collnet_direct"]
                             + 2 * (min(1, g - 1) * T["hw_latency_us"][f.intra_tech]["collnet_direct"]
                                    + (g - 1) * T["collnet_arity_us"])
                             + T["hw_latency_us"]["net"]["collnet_direct"] + _net_extra_us(f))
    return {"Simple": lat + n / min(net, intra)}
