"""``predict``: a sweep of one collective on a system, as nccl-tests would report it."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import numpy as np

from .. import collectives, hardware, systemfile, validate
from .fabrics import Fabric, fabric
from .flat import TwoLevelPhases, _sizes, collective_time, two_level_all_reduce, two_tier_all_to_all
from .nccl import (PROTOCOLS, _collnet, _nvls, _ring, _tree, collnet_constants, default_nccl_version, nccl_prefers_tree,
                   nccl_release, node_decline)


def predict_algorithms() -> tuple:
    """Names ``predict`` accepts: auto, the fabric-level algorithms, and every registered flat algorithm."""
    return ("auto",) + tuple(collectives.SYSTEM_ALGORITHM_LABELS) + tuple(
        a for a in collectives.algorithm_ids() if a not in collectives.SYSTEM_ALGORITHM_LABELS)


@dataclass
class Prediction:
    """A predicted sweep: sizes in bytes, time in s, algbw and busbw in bytes/s (nccl-tests definitions).

    ``phases`` holds the ``TwoLevelPhases`` (arrays over sizes) when the algorithm is ``hierarchical``.
    """

    collective: str
    system: str
    ranks: int
    nodes: int
    gpus_per_node: int
    algorithm: str
    nbytes: np.ndarray
    time_s: np.ndarray
    algbw: np.ndarray
    busbw: np.ndarray
    algorithms: np.ndarray = field(default=None, repr=False)  # chosen algorithm per size
    protocols: np.ndarray = field(default=None, repr=False)   # chosen NCCL protocol per size (LL, LL128, Simple)
    achievable: bool = True
    notes: list = field(default_factory=list)
    phases: TwoLevelPhases | None = field(default=None, repr=False)
    nccl_version: str | None = None  # the release whose tables priced it (a key of costmodel.nccl_versions())
    nccl_version_from: str = ""      # how that release was chosen (asked for, default, assumed)


def _hierarchical(n: np.ndarray, g: int, N: int, f: Fabric) -> TwoLevelPhases:
    return two_level_all_reduce(n, g, N, f.intra_bw, f.net_bw_per_gpu_for(g), f.intra_hop, f.net_hop, f.launch)


def _single_node(collective: str, n: np.ndarray, g: int, f: Fabric, algorithm: str, protocol: str | None = None) -> dict[str, np.ndarray] | TwoLevelPhases | None:
    """Time within one node of g GPUs: {protocol: seconds}, TwoLevelPhases, or None if not applicable."""
    coll = collectives.get(collective)
    if algorithm in ("nvls", "in_network"):
        if "in_network" not in coll.algorithms:
            return None
        return _nvls(n, g, 1, f, protocol)
    if algorithm == "tree":
        return _tree(coll, n, g, 1, f, protocol) if "tree" in coll.system_algorithms else None
    if algorithm == "ring" and "ring" in coll.system_algorithms and g > 1:
        return _ring(coll, n, g, 1, f, f.intra_bw, protocol) or None
    if algorithm == "hierarchical":  # on one node: reduce-scatter + all-gather, no network phase
        return _hierarchical(n, g, 1, f) if "hierarchical" in coll.system_algorithms else None
    if algorithm not in coll.algorithms:
        return None
    return {"-": f.launch + collective_time(collective, n, g, f.intra_bw, f.intra_hop, algorithm)}


def _multi_node(collective: str, n: np.ndarray, g: int, N: int, f: Fabric, algorithm: str, protocol: str | None = None, forced: bool = False) -> dict[str, np.ndarray] | TwoLevelPhases | None:
    """Time across N nodes of g GPUs (NCCL-like algorithms): {protocol: seconds}, TwoLevelPhases or None.

    forced: the algorithm was asked for (NCCL_ALGO), not chosen by NCCL.
    """
    coll = collectives.get(collective)
    if algorithm not in coll.system_algorithms:
        return None
    if f.net_algorithms and algorithm in ("ring", "tree", "nvls") and algorithm not in f.net_algorithms:
        return None  # the fabric's required NCCL settings rule it out (e.g. TCPXO: NCCL_NVLS_ENABLE=0)
    p = g * N
    if algorithm == "ring":
        # rings run on every rail at once; per node they push the same bytes through NVLink and the NICs
        return _ring(coll, n, g, N, f, min(f.intra_bw, f.net_bw_node_for(g)), protocol) or None
    if algorithm == "direct":
        # each rank sends (p-g)/p of its buffer over the network, (g-1)/p over NVLink, all at once
        return {"Simple": two_tier_all_to_all(n, p, g, f.intra_bw, f.net_bw_per_gpu_for(g), f.net_hop, f.launch)}
    if algorithm == "tree":
        if f.mnnvl and not forced:
            return None  # between multi-node NVLink domains NCCL's default is the ring (nccl-1801)
        return _tree(coll, n, g, N, f, protocol, forced) or None
    if collective != "all_reduce":
        return None
    if algorithm == "nvls":
        # NCCL runs no NVLS tree across multi-node NVLink domains (MNNVL, e.g. NVL72 racks): tuning.cc
        return None if f.mnnvl else _nvls(n, g, N, f, protocol)
    if algorithm == "hierarchical":
        return _hierarchical(n, g, N, f)
    if algorithm == "collnet":
        return _collnet(n, g, N, f, protocol)
    return None


def _notes(sys_: hardware.System, N: int, order: list[str]) -> list:
    notes = []
    if sys_.interconnect == "pcie" and sys_.cpu_sockets > 1:
        notes.append("PCIe box across CPU sockets: real busbw is often limited by the CPUs, below this model")
    if N == 2 and "tree" in order:
        notes.append("NCCL's tree on two nodes sends each byte across the network once, not twice: busbw can "
                     "exceed the NICs' rate (NCCL picks ring or tree per size by its own estimate, which does not "
                     "credit that: costmodel.nccl_prefers_tree)")
    if "nvls" in order:
        notes.append("in-network reduction: busbw exceeds the link rate; efficiency is empirical")
    return notes


def _best(times: dict, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Fastest protocol per size of {protocol: seconds} -> (seconds, protocol names)."""
    names = list(times)
    stack = np.vstack([np.broadcast_to(np.asarray(times[k], dtype=float), shape) for k in names])
    idx = np.argmin(stack, axis=0)
    return stack[idx, np.arange(stack.shape[1])], np.array(names)[idx]


def _fastest(coll: collectives.Collective, n: np.ndarray, one: Callable[[str], tuple[np.ndarray, np.ndarray] | None], allowed: Iterable[str] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, str, list[str]]:
    """auto: the fastest fabric-level algorithm per size (among ``allowed``, default all) ->
    (times, chosen names, protocols, label, order)."""
    names = [name for name in ("ring", "tree", "nvls", "direct")
             if name in coll.system_algorithms and (allowed is None or name in allowed)]
    cands = [(name, one(name)) for name in names]
    cands = [(name, t) for name, t in cands if t is not None]
    times = np.vstack([t for _, (t, _) in cands])
    protos = np.vstack([pr for _, (_, pr) in cands])
    best = np.argmin(times, axis=0)
    cols = np.arange(n.size)
    time_s = times[best, cols]
    chosen = np.array([name for name, _ in cands])[best]
    used, first = np.unique(best, return_index=True)
    order = [cands[i][0] for i in used[np.argsort(first)]]
    return time_s, chosen, protos[best, cols], order[0] if len(order) == 1 else "->".join(order), order


def predict(collective: str, nbytes: validate.Sizes, system: str | hardware.System, gpus_per_node: int | None = None, nodes: int | None = None, algorithm: str = "auto", achievable: bool = True,
            nics_per_node: int | None = None, network: str | None = None, protocol: str = "auto", nccl_version: str | None = None) -> Prediction:
    """Predict a sweep of one collective on a catalog system, as nccl-tests would report it.

    nbytes: bytes (scalar, array or a size string such as ``"16G"``); system: catalog id or
    hardware.System; gpus_per_node defaults to the system's; nodes >= 1, default the system's own (a
    system file's ``nodes``, as ``predict --system-file`` takes it; 1 for a catalog system; more than one node
    goes through the NICs, one per GPU rail where the system has them); algorithm: ``auto``,
    ``ring``, ``tree`` (NCCL's: chain in a node, double binary tree between nodes), ``nvls``
    (in-switch reduction, where the NVSwitch supports it), ``hierarchical`` (textbook two
    level; ``Prediction.phases`` holds its phases) or a flat algorithm of the registry
    (``collectives``; one node only), or ``collnet`` (NCCL's CollNet with InfiniBand SHARP: the switches
    reduce across nodes; only when asked for, as NCCL_COLLNET_ENABLE=1 with the SHARP plugin). ``auto``
    picks the fastest per size; a tuple such as
    ``("ring", "tree")`` picks among those, as NCCL does under NCCL_ALGO=Ring,Tree. One named
    algorithm is forced, as NCCL_ALGO=Tree forces it (NCCL's tree on two nodes then sends each
    byte across the network once, whatever the fabric). protocol: ``auto``
    (NCCL's fastest per size) or one of ``PROTOCOLS`` (LL, LL128, Simple), with NCCL's latency
    and bandwidth terms (``protocol_table()``). achievable=True applies the sourced
    per-technology efficiency (``efficiency_table()``); False uses spec bandwidth.
    nics_per_node overrides the catalog; network names a fabric kind (``fabric_kind_ids()``:
    infiniband, roce, efa, slingshot, ethernet_tcp, tcpxo) instead of the system's. nccl_version: the NCCL
    release whose tuning tables and rules price it (``"2.21.5"``, ``"2.27"``; default the newest the course reads:
    ``nccl_versions()``, ``nccl_release``), e.g. which of ring and tree it picks on two nodes.
    """
    coll = collectives.get(collective)
    sys_ = hardware.resolve_system(system)
    n = np.atleast_1d(_sizes(nbytes))
    if n.ndim > 1:
        raise ValueError(f"nbytes must be a size or a 1-D sweep of sizes; got an array of shape {n.shape}")
    g = sys_.gpus_per_node if gpus_per_node is None else validate.integer(
        "gpus_per_node", gpus_per_node, low=1, high=sys_.gpus_per_node)
    N = validate.integer("nodes", systemfile.nodes_default(sys_) if nodes is None else nodes, low=1, high=100_000)
    if not isinstance(achievable, bool):
        raise ValueError(f"achievable must be True or False, got {achievable!r}")
    allowed = None
    if isinstance(algorithm, (tuple, list)):  # NCCL_ALGO=Ring,Tree: NCCL still chooses, among these
        fabric_level = ("ring", "tree", "nvls", "direct")
        allowed = tuple(validate.choice("algorithm", a, fabric_level) for a in algorithm)
        if not allowed:
            raise ValueError(f"algorithm must name at least one of {fabric_level}; got an empty list")
        algorithm = "auto"
    algorithm = validate.choice("algorithm", algorithm, predict_algorithms())
    protocol = validate.choice("protocol", protocol, ("auto",) + PROTOCOLS)
    release, release_from = nccl_release(nccl_version)
    # what runs is priced with the newest tables (the course's best estimate of each step's real cost); which
    # algorithm and protocol NCCL runs is chosen by the estimate of the release it is (its tables and rules)
    f = replace(fabric(sys_, achievable, nics_per_node, network), nccl_version=default_nccl_version())
    if N > 1:
        f = replace(f, net_bw_node=f.net_bw_node * node_decline(N), net_decline=node_decline(N))  # the measured fall
    f_choose = replace(f, nccl_version=release)
    required = f.required_protocol
    if protocol == "auto" and required:
        protocol = required  # the fabric's stack sets NCCL_PROTO for every collective (e.g. first-generation EFA)
    p = g * N

    def raw(name: str, forced: bool = False, fab: Fabric = f) -> dict[str, np.ndarray] | TwoLevelPhases | None:
        return _single_node(coll.id, n, g, fab, name, protocol) if N == 1 else \
            _multi_node(coll.id, n, g, N, fab, name, protocol, forced)

    def best(t: dict[str, np.ndarray] | TwoLevelPhases, chooser: object = None) -> tuple[np.ndarray, np.ndarray]:  # {protocol: seconds} or TwoLevelPhases -> (seconds, protocol names) per size
        if isinstance(t, TwoLevelPhases):
            return np.broadcast_to(t.time_s, n.shape), np.full(n.shape, "Simple")
        if release == f.nccl_version or not isinstance(chooser, dict) or set(chooser) != set(t):
            return _best(t, n.shape)
        _, names = _best(chooser, n.shape)  # the protocol this release's estimate picks, priced as it runs
        stack = {k: np.broadcast_to(np.asarray(v, dtype=float), n.shape) for k, v in t.items()}
        return np.array([stack[k][i] for i, k in enumerate(names)]), names

    # ring or tree, per size, as NCCL's own estimate picks them; the tree that runs is priced as it runs
    picks_tree = None
    if algorithm == "auto" and N > 1 and coll.id == "all_reduce" and all(
            (allowed is None or a in allowed) and raw(a) is not None for a in ("ring", "tree")):
        picks_tree = nccl_prefers_tree(coll, n, g, N, f_choose, protocol)

    def one(name: str) -> tuple[np.ndarray, np.ndarray] | None:
        forced = picks_tree is not None and name == "tree" and N == 2
        t = raw(name, forced=forced)
        if t is None:
            return None
        seconds, protos = best(t, raw(name, forced=forced, fab=f_choose))
        if picks_tree is not None and name in ("ring", "tree"):
            seconds = np.where(picks_tree == (name == "tree"), seconds, np.inf)
        return seconds, protos

    phases = None
    if algorithm == "auto":
        time_s, chosen, protos, label, order = _fastest(coll, n, one, allowed)
    else:
        t = raw(algorithm, forced=True)
        if t is None:
            where = "one node" if N == 1 else f"{N} nodes"
            extra = f" with protocol {protocol}" if protocol != "auto" else ""
            if algorithm == "collnet":
                kinds = ", ".join(collnet_constants()["fabrics"])
                extra += (f" (CollNet needs SHARP switches on a fabric of kind {kinds}, more than one node and the "
                          f"Simple protocol; this is {f.net_tech})")
            raise ValueError(f"algorithm {algorithm!r} is not available for {coll.id} on {sys_.id} with {where}{extra}")
        if isinstance(t, TwoLevelPhases):
            phases = t
        time_s, protos = best(t, raw(algorithm, forced=True, fab=f_choose))
        time_s = np.asarray(time_s, dtype=float).copy()
        chosen = np.full(n.shape, algorithm)
        label, order = algorithm, [algorithm]
    with np.errstate(divide="ignore", invalid="ignore"):
        ab = np.where(time_s > 0, n / np.where(time_s > 0, time_s, 1), 0.0)
    bb = ab * coll.busbw_factor(p)
    return Prediction(collective=coll.id, system=sys_.id, ranks=p, nodes=N, gpus_per_node=g, algorithm=label,
                      nbytes=n, time_s=time_s, algbw=ab, busbw=bb, algorithms=chosen, achievable=achievable,
                      notes=_notes(sys_, N, order) + ([f"NCCL_PROTO={required}: set by the {f.net_tech} network stack"]
                                                      if required else []), phases=phases, protocols=protos,
                      nccl_version=release, nccl_version_from=release_from)
