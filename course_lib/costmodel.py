"""Cost models for collectives: alpha-beta links, algorithms, hierarchy, algbw/busbw.

Units: sizes in bytes, times in seconds, bandwidths in bytes/s **per direction**.

Every collective, its size convention (nccl-tests' ``size`` column: the buffer on each rank
for all_reduce, broadcast, reduce; the **total** buffer for all_gather, reduce_scatter,
all_to_all), its busbw factor and its flat algorithms live in the registry,
:mod:`course_lib.collectives`; this module times them.

The alpha-beta model: a message of ``m`` bytes over a link costs
``alpha + m / B``. An algorithm is a number of latency steps and a number of
bytes each rank must push through its port (the registry's terms). The model is honest about where
it stops being true:

* in-network reduction (NVLink SHARP / NVLS): the switch reduces, so busbw can
  exceed the link rate; its efficiency is an empirical figure, not derived;
* NCCL's tree on exactly two nodes sends half the usual data across the
  network, and measured results vary widely with NIC placement; the model
  gives the textbook figure;
* PCIe boxes whose traffic crosses CPU sockets are limited by the CPUs and
  memory, not by the PCIe links; the model will be optimistic there;
* mid-size messages (about 1-100 MB) where NCCL switches protocols (LL, LL128,
  Simple) and channel counts: the model is optimistic by up to ~2x.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from . import collectives, datafiles, evidence, hardware, units, validate


def predict_algorithms() -> tuple:
    """Names ``predict`` accepts: auto, the fabric-level algorithms, and every registered flat algorithm."""
    return ("auto",) + tuple(collectives.SYSTEM_ALGORITHM_LABELS) + tuple(
        a for a in collectives.algorithm_ids() if a not in collectives.SYSTEM_ALGORITHM_LABELS)


# ---------------------------------------------------------------- efficiency data

@lru_cache(maxsize=1)
def efficiency_data() -> dict:
    """The parsed ``data/efficiency.json``: efficiencies, latencies and their sources."""
    return datafiles.load("efficiency.json")


def efficiency(technology) -> float:
    """Achievable / spec bandwidth for ``nvlink``, ``nvls``, ``pcie``, ``infiniband`` or ``ethernet``."""
    techs = efficiency_data()["technologies"]
    technology = validate.choice("technology", technology, techs)
    return float(techs[technology]["efficiency"])


def efficiency_table() -> list[dict]:
    """Every technology's efficiency with its derivation and source: shown to learners, not hidden."""
    data = efficiency_data()
    rows = []
    for name, row in data["technologies"].items():
        src = datafiles.source(row["source"])
        rows.append({"technology": name, "efficiency": row["efficiency"], "derivation": row["derivation"],
                     "source": src["title"], "url": src["url"]})
    return rows


def no_p2p_staging_factor() -> float:
    """Assumed slowdown of GPU-to-GPU PCIe traffic staged through host memory (no P2P): efficiency.json."""
    return float(efficiency_data()["no_p2p_staging"]["factor"])


def hop_latency(technology) -> float:
    """Per-step latency of one hop over ``nvlink``, ``pcie``, ``infiniband`` or ``ethernet``, seconds."""
    hops = {k: v for k, v in efficiency_data()["latency_us"]["hop"].items() if isinstance(v, (int, float))}
    technology = validate.choice("technology", technology, hops)
    return hops[technology] * 1e-6


def launch_latency() -> float:
    """Fixed cost of one collective call as nccl-tests sees it, seconds (derived; see efficiency.json)."""
    return efficiency_data()["latency_us"]["launch"]["value"] * 1e-6


def _in_network_extra() -> float:
    return efficiency_data()["latency_us"]["in_network_extra"]["value"] * 1e-6


# ---------------------------------------------------------------- algbw / busbw

def _sizes(nbytes, name="nbytes"):
    if isinstance(nbytes, str):
        nbytes = units.parse_size(nbytes, name=name)
    return validate.sizes(name, nbytes, allow_zero=True)


def _ret(array, scalar_in):
    return float(array) if scalar_in else array


def algbw(nbytes, time_s):
    """Algorithm bandwidth as nccl-tests defines it: size / time, bytes/s."""
    n = _sizes(nbytes)
    t = validate.sizes("time_s", time_s)
    scalar = n.ndim == 0 and t.ndim == 0
    with np.errstate(over="ignore"):
        return _ret(validate.finite_result("nbytes / time_s", n / t), scalar)


def busbw_factor(collective, ranks) -> float:
    """nccl-tests' busbw / algbw factor, from the registry (``collectives``): e.g. all_reduce 2(n-1)/n."""
    return collectives.busbw_factor(collective, ranks)


def busbw(collective, nbytes, time_s, ranks):
    """Bus bandwidth as nccl-tests defines it: algbw x factor (see ``busbw_factor``), bytes/s.

    For all_gather / reduce_scatter / all_to_all, ``nbytes`` is the total buffer (nccl-tests' size column).
    """
    factor = busbw_factor(collective, ranks)
    return algbw(nbytes, time_s) * factor


# ---------------------------------------------------------------- flat alpha-beta model

def collective_time(collective, nbytes, ranks, bandwidth, latency, algorithm="ring"):
    """Time of one collective on a flat group, seconds (alpha-beta model).

    nbytes: bytes (scalar or array; see the module's size convention); ranks >= 1;
    bandwidth: bytes/s per direction per rank; latency: seconds per step.
    Vectorised over ``nbytes``: scalar in -> float out. ``in_network`` assumes the
    switch reduces (NVLS / SHARP) and is the only algorithm allowed below the
    2(p-1)/p * n/B all-reduce bound.
    """
    algo = collectives.get(collective).algorithm(algorithm)
    n = _sizes(nbytes)
    scalar = n.ndim == 0 and not isinstance(nbytes, (list, tuple))
    p = validate.integer("ranks", ranks, low=1, high=10_000_000)
    bw = validate.positive("bandwidth", bandwidth)
    alpha = validate.non_negative("latency", latency)
    steps, factor = algo.terms(p)
    with np.errstate(over="ignore"):
        time_s = validate.finite_result("the time from nbytes, bandwidth and latency", steps * alpha + factor * n / bw)
    return _ret(time_s, scalar)


# ---------------------------------------------------------------- system-level prediction

@dataclass(frozen=True)
class TwoLevelPhases:
    """The textbook two-level (hierarchical) all-reduce, phase by phase, seconds (scalars or arrays).

    reduce-scatter inside each node, ring all-reduce of each GPU's 1/g shard across nodes (GPU k
    of every node over its share of the NICs), all-gather inside the node, one after another.
    """

    reduce_scatter_s: object
    inter_node_s: object
    all_gather_s: object
    launch_s: object = 0.0

    @property
    def time_s(self):
        """All phases one after another, seconds."""
        return self.launch_s + self.reduce_scatter_s + self.inter_node_s + self.all_gather_s

    def as_dict(self) -> dict:
        """Phase name -> seconds, in the order they run."""
        return {"launch_s": self.launch_s, "reduce_scatter_s": self.reduce_scatter_s,
                "inter_node_s": self.inter_node_s, "all_gather_s": self.all_gather_s}


def two_level_all_reduce(nbytes, gpus_per_node, nodes, intra_bw, net_bw_per_gpu, intra_hop=0.0, net_hop=0.0,
                         launch=0.0) -> TwoLevelPhases:
    """Phases of the two-level all-reduce of ``nbytes`` (bytes per GPU, scalar or array).

    gpus_per_node g and nodes N >= 1; intra_bw: one GPU's port into the node fabric and
    net_bw_per_gpu: its share of the node's NICs, both bytes/s per direction; intra_hop,
    net_hop: seconds per step; launch: seconds per call. Each phase is a ring (``collective_time``).
    """
    g = validate.integer("gpus_per_node", gpus_per_node, low=1, high=10_000_000)
    N = validate.integer("nodes", nodes, low=1, high=10_000_000)
    rs = collective_time("reduce_scatter", nbytes, g, intra_bw, intra_hop, "ring")
    inter = collective_time("all_reduce", _sizes(nbytes) / g, N, net_bw_per_gpu, net_hop, "ring")
    ag = collective_time("all_gather", nbytes, g, intra_bw, intra_hop, "ring")
    return TwoLevelPhases(reduce_scatter_s=rs, inter_node_s=inter, all_gather_s=ag,
                          launch_s=validate.non_negative("launch", launch))


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
    achievable: bool = True
    notes: list = field(default_factory=list)
    phases: TwoLevelPhases | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Fabric:
    """Bandwidths (bytes/s per direction) and latencies (s) used for one prediction."""

    intra_bw: float          # one GPU's port into the node fabric
    intra_hop: float
    intra_tech: str
    nvls_bw: float | None    # algbw of in-switch all-reduce, None where the switch cannot reduce
    net_bw_node: float       # all NICs of one node together
    net_hop: float
    net_tech: str
    launch: float
    gpus_per_node: int = 1

    @property
    def net_bw_per_gpu(self) -> float:
        """One GPU's share of the node's NICs when every GPU sends at once, bytes/s per direction."""
        return self.net_bw_node / self.gpus_per_node


def fabric(system, achievable=True, nics_per_node=None) -> Fabric:
    """The bandwidths and latencies ``predict`` and ``parallel`` use for a system (spec x efficiency when achievable)."""
    sys_ = hardware.resolve_system(system)
    if not isinstance(achievable, bool):
        raise ValueError(f"achievable must be True or False, got {achievable!r}")
    intra_tech = "nvlink" if sys_.gpu_link.family == "nvlink" else "pcie"
    eff = (lambda t: efficiency(t)) if achievable else (lambda t: 1.0)
    intra = sys_.gpu_link.per_direction * eff(intra_tech)
    if intra_tech == "pcie" and not sys_.p2p:
        intra /= no_p2p_staging_factor()  # assumed, not measured: see efficiency.json "no_p2p_staging"
    nvls = sys_.gpu_link.per_direction * (efficiency("nvls") if achievable else 1.0) if sys_.in_network_reduction else None
    nics = sys_.nics_per_node if nics_per_node is None else validate.integer("nics_per_node", nics_per_node, low=1, high=1024)
    net_tech = "infiniband" if sys_.nic.family == "infiniband" else "ethernet"
    net = sys_.nic.per_direction * nics * eff(net_tech)
    return Fabric(intra_bw=intra, intra_hop=hop_latency(intra_tech), intra_tech=intra_tech, nvls_bw=nvls,
                  net_bw_node=net, net_hop=hop_latency(net_tech), net_tech=net_tech, launch=launch_latency(),
                  gpus_per_node=sys_.gpus_per_node)


def _hierarchical(n, g, N, f: Fabric) -> TwoLevelPhases:
    return two_level_all_reduce(n, g, N, f.intra_bw, f.net_bw_node / g, f.intra_hop, f.net_hop, f.launch)


def _single_node(collective, n, g, f: Fabric, algorithm):
    """Time within one node of g GPUs for a predict-level algorithm name, or None if not applicable."""
    coll = collectives.get(collective)
    if algorithm == "nvls":
        algorithm = "in_network"
    if algorithm == "in_network":
        if f.nvls_bw is None or "in_network" not in coll.algorithms:
            return None
        return f.launch + _in_network_extra() + collective_time(collective, n, g, f.nvls_bw, f.intra_hop, "in_network")
    if algorithm == "tree":
        # NCCL's tree inside one node is a chain: every GPU sends the message up and down (2n/B)
        if "tree" not in coll.system_algorithms:
            return None
        factor = 2.0 if collective == "all_reduce" else 1.0
        steps = 2 * (g - 1) if collective == "all_reduce" else g - 1
        return f.launch + steps * f.intra_hop + factor * n / f.intra_bw if g > 1 else f.launch + 0 * n
    if algorithm == "hierarchical":  # on one node: reduce-scatter + all-gather, no network phase
        return _hierarchical(n, g, 1, f) if "hierarchical" in coll.system_algorithms else None
    if algorithm not in coll.algorithms:
        return None
    return f.launch + collective_time(collective, n, g, f.intra_bw, f.intra_hop, algorithm)


def _multi_node(collective, n, g, N, f: Fabric, algorithm):
    """Time across N nodes of g GPUs (NCCL-like algorithms), or None if not applicable."""
    coll = collectives.get(collective)
    if algorithm not in coll.system_algorithms:
        return None
    p = g * N
    net_per_gpu = f.net_bw_node / g
    if algorithm == "ring":
        # rings run on every rail at once; per node they push the same bytes through NVLink and the NICs
        bw = min(f.intra_bw, f.net_bw_node)
        steps, factor = coll.algorithm("ring").terms(p)
        hop = ((g - 1) * f.intra_hop + f.net_hop) / g  # average hop: g-1 inside a node for each one between nodes
        return f.launch + steps * hop + factor * n / bw
    if algorithm == "direct":
        # each rank sends (p-g)/p of its buffer over the network, (g-1)/p over NVLink, all at once
        t_net = (p - g) / p * n / net_per_gpu
        t_intra = (g - 1) / p * n / f.intra_bw
        return f.launch + f.net_hop + np.maximum(t_net, t_intra)
    if algorithm == "tree":
        # chain inside each node, double binary tree between nodes (pipelined)
        # bytes each node pushes through its NICs, per byte of message: all-reduce 2 (1 on two
        # nodes, where each tree has a single edge between the nodes); broadcast/reduce 1
        per_node = (1.0 if N == 2 else 2.0) if collective == "all_reduce" else 1.0
        intra_factor = 2.0 if collective == "all_reduce" else 1.0
        t_bw = np.maximum(per_node * n / f.net_bw_node, intra_factor * n / f.intra_bw)
        depth = collectives.log2_steps(N)
        mult = 2 if collective == "all_reduce" else 1
        steps_lat = mult * ((g - 1) * f.intra_hop + depth * f.net_hop)
        return f.launch + steps_lat + t_bw
    if collective != "all_reduce":
        return None
    if algorithm == "nvls":
        if f.nvls_bw is None:
            return None
        # NCCL's NVLS tree: in-switch reduce-scatter and all-gather inside each node, pipelined
        # with a tree between nodes on each GPU's 1/g shard. As for the tree above, each NIC
        # carries the shard once on two nodes and twice (up and down the tree) beyond.
        per_nic = 1.0 if N == 2 else 2.0
        t_inter = 2 * collectives.log2_steps(N) * f.net_hop + per_nic * (n / g) / net_per_gpu
        t_intra = n / f.nvls_bw
        return f.launch + _in_network_extra() + 2 * f.intra_hop + np.maximum(t_intra, t_inter)
    if algorithm == "hierarchical":
        return _hierarchical(n, g, N, f)
    return None


def _notes(sys_, N, order) -> list:
    notes = []
    if sys_.interconnect == "pcie" and sys_.cpu_sockets > 1:
        notes.append("PCIe box across CPU sockets: real busbw is often limited by the CPUs, below this model")
    if N == 2 and "tree" in order:
        notes.append("NCCL's tree on two nodes sends less over the network; measured results vary widely")
    if "nvls" in order:
        notes.append("in-network reduction: busbw exceeds the link rate; efficiency is empirical")
    return notes


def _fastest(coll, n, one):
    """auto: the fastest fabric-level algorithm per size -> (times, chosen names, label, order)."""
    names = [name for name in ("ring", "tree", "nvls", "direct") if name in coll.system_algorithms]
    cands = [(name, one(name)) for name in names]
    cands = [(name, np.broadcast_to(t, n.shape)) for name, t in cands if t is not None]
    times = np.vstack([t for _, t in cands])
    best = np.argmin(times, axis=0)
    time_s = times[best, np.arange(n.size)]
    chosen = np.array([name for name, _ in cands])[best]
    used, first = np.unique(best, return_index=True)
    order = [cands[i][0] for i in used[np.argsort(first)]]
    return time_s, chosen, order[0] if len(order) == 1 else "->".join(order), order


def predict(collective, nbytes, system, gpus_per_node=None, nodes=1, algorithm="auto", achievable=True,
            nics_per_node=None) -> Prediction:
    """Predict a sweep of one collective on a catalog system, as nccl-tests would report it.

    nbytes: bytes (scalar, array or a size string such as ``"16G"``); system: catalog id or
    hardware.System; gpus_per_node defaults to the system's; nodes >= 1 (more than one node
    goes through the NICs, one per GPU rail where the system has them); algorithm: ``auto``,
    ``ring``, ``tree`` (NCCL's: chain in a node, double binary tree between nodes), ``nvls``
    (in-switch reduction, where the NVSwitch supports it), ``hierarchical`` (textbook two
    level; ``Prediction.phases`` holds its phases) or a flat algorithm of the registry
    (``collectives``; one node only). ``auto`` picks the fastest per size. achievable=True
    applies the sourced per-technology efficiency (``efficiency_table()``); False uses spec
    bandwidth. nics_per_node overrides the catalog.
    """
    coll = collectives.get(collective)
    sys_ = hardware.resolve_system(system)
    n = np.atleast_1d(_sizes(nbytes))
    if n.ndim > 1:
        raise ValueError(f"nbytes must be a size or a 1-D sweep of sizes; got an array of shape {n.shape}")
    g = sys_.gpus_per_node if gpus_per_node is None else validate.integer(
        "gpus_per_node", gpus_per_node, low=1, high=sys_.gpus_per_node)
    N = validate.integer("nodes", nodes, low=1, high=100_000)
    if not isinstance(achievable, bool):
        raise ValueError(f"achievable must be True or False, got {achievable!r}")
    algorithm = validate.choice("algorithm", algorithm, predict_algorithms())
    f = fabric(sys_, achievable, nics_per_node)
    p = g * N

    def one(name):
        t = _single_node(coll.id, n, g, f, name) if N == 1 else _multi_node(coll.id, n, g, N, f, name)
        return t.time_s if isinstance(t, TwoLevelPhases) else t

    phases = None
    if algorithm == "auto":
        time_s, chosen, label, order = _fastest(coll, n, one)
    else:
        t = _single_node(coll.id, n, g, f, algorithm) if N == 1 else _multi_node(coll.id, n, g, N, f, algorithm)
        if t is None:
            where = "one node" if N == 1 else f"{N} nodes"
            raise ValueError(f"algorithm {algorithm!r} is not available for {coll.id} on {sys_.id} with {where}")
        if isinstance(t, TwoLevelPhases):
            phases, t = t, t.time_s
        time_s = np.broadcast_to(np.asarray(t, dtype=float), n.shape).copy()
        chosen = np.full(n.shape, algorithm)
        label, order = algorithm, [algorithm]
    with np.errstate(divide="ignore", invalid="ignore"):
        ab = np.where(time_s > 0, n / np.where(time_s > 0, time_s, 1), 0.0)
    bb = ab * coll.busbw_factor(p)
    return Prediction(collective=coll.id, system=sys_.id, ranks=p, nodes=N, gpus_per_node=g, algorithm=label,
                      nbytes=n, time_s=time_s, algbw=ab, busbw=bb, algorithms=chosen, achievable=achievable,
                      notes=_notes(sys_, N, order), phases=phases)


def lower_bound_time(nbytes, ranks, bandwidth):
    """All-reduce bandwidth lower bound 2(p-1)/p * n / B, seconds (no in-network reduction)."""
    n = _sizes(nbytes)
    scalar = n.ndim == 0
    p = validate.integer("ranks", ranks, low=1)
    bw = validate.positive("bandwidth", bandwidth)
    with np.errstate(over="ignore"):
        return _ret(validate.finite_result("nbytes / bandwidth", 2 * (p - 1) / p * n / bw), scalar)


# ---------------------------------------------------------------- published measurements

@lru_cache(maxsize=1)
def published() -> dict:
    """The parsed ``data/published_collectives.json`` (measurements with their sources)."""
    return datafiles.load("published_collectives.json")


def validation_table() -> list[dict]:
    """Predicted vs measured for every published case: one dict per case with ``ratio`` = predicted/measured busbw."""
    rows = []
    for case in published()["cases"]:
        pred = predict(case["collective"], case["nbytes"], case["system"], gpus_per_node=case.get("gpus_per_node"),
                       nodes=case.get("nodes", 1), algorithm=case.get("algorithm") or "auto",
                       nics_per_node=case.get("nics_per_node"))
        c = evidence.compare(case["id"], float(pred.busbw[0]),
                             evidence.measurement(case["busbw_gb_s"] * units.GB, "B/s busbw", case["source"]))
        rows.append({"id": case["id"], "system": case["system"], "nodes": case.get("nodes", 1),
                     "nbytes": case["nbytes"], "algorithm": pred.algorithm,
                     "measured_busbw": c.measured.value, "predicted_busbw": c.model,
                     "ratio": c.ratio, "source": case["source"]})
    return rows


def validation_summary(rows=None) -> dict:
    """Counts and shares within tolerance: +-20% for >= 256 MB, +-50% for < 1 MB (sizes in bytes, 256 MB = 2**28)."""
    rows = validation_table() if rows is None else rows
    large = [r for r in rows if r["nbytes"] >= 2**28]
    small = [r for r in rows if r["nbytes"] < 2**20]
    within = lambda rs, tol: sum(1 for r in rs if evidence.within(r["ratio"], tol))
    return {"cases": len(rows), "large": len(large), "large_within_20pct": within(large, 0.2),
            "small": len(small), "small_within_50pct": within(small, 0.5),
            "large_share": within(large, 0.2) / len(large) if large else float("nan"),
            "small_share": within(small, 0.5) / len(small) if small else float("nan")}
