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


@lru_cache(maxsize=1)
def fabrics_data() -> dict:
    """The parsed ``data/fabrics.json``: scale-out fabric kinds with efficiency, latency and sources."""
    return datafiles.load("fabrics.json")


def fabric_kind_ids() -> tuple:
    """Ids of the scale-out fabric kinds: infiniband, roce, efa, slingshot, ethernet_tcp."""
    return tuple(fabrics_data()["fabrics"])


def fabric_kind(fabric_id) -> dict:
    """One fabric kind's row of ``fabrics.json`` (efficiency, hop_latency_us, derivations, sources)."""
    kinds = fabrics_data()["fabrics"]
    return dict(kinds[validate.choice("fabric", fabric_id, kinds)])


def system_fabric_kind(system) -> str:
    """The fabric kind of a system: its ``fabric`` field, else the default for its NIC family
    (``hardware.System.nic_fabric``)."""
    return hardware.resolve_system(system).nic_fabric


def _technology_aliases() -> dict:
    """Network technologies of the older API: ``infiniband`` and ``ethernet`` (its default kind, RoCE)."""
    return {"infiniband": "infiniband", "ethernet": hardware.default_fabric("ethernet")}


def efficiency(technology) -> float:
    """Achievable / spec bandwidth for ``nvlink``, ``nvls``, ``pcie``, a fabric kind, or ``ethernet``."""
    techs = efficiency_data()["technologies"]
    kinds = fabrics_data()["fabrics"]
    alias = _technology_aliases()
    technology = validate.choice("technology", technology, list(techs) + list(kinds) + ["ethernet"])
    if technology in techs:
        return float(techs[technology]["efficiency"])
    return float(kinds[alias.get(technology, technology)]["efficiency"])


def efficiency_table() -> list[dict]:
    """Every technology's efficiency with its derivation and source: shown to learners, not hidden."""
    data = efficiency_data()
    rows = []
    for name, row in data["technologies"].items():
        src = datafiles.source(row["source"])
        rows.append({"technology": name, "efficiency": row["efficiency"], "derivation": row["derivation"],
                     "source": src["title"], "url": src["url"]})
    fab = fabrics_data()
    for name, row in fab["fabrics"].items():
        src = datafiles.source(row["efficiency_source"])
        rows.append({"technology": name, "efficiency": row["efficiency"], "derivation": row["efficiency_derivation"],
                     "source": src["title"], "url": src["url"]})
    return rows


def no_p2p_staging_factor() -> float:
    """Assumed slowdown of GPU-to-GPU PCIe traffic staged through host memory (no P2P): efficiency.json."""
    return float(efficiency_data()["no_p2p_staging"]["factor"])


def hop_latency(technology) -> float:
    """Per-step latency of one hop over ``nvlink``, ``pcie``, a fabric kind, or ``ethernet``, seconds."""
    hops = {k: v for k, v in efficiency_data()["latency_us"]["hop"].items() if isinstance(v, (int, float))}
    kinds = fabrics_data()["fabrics"]
    technology = validate.choice("technology", technology, list(hops) + list(kinds) + ["ethernet"])
    if technology in hops:
        return hops[technology] * 1e-6
    return kinds[_technology_aliases().get(technology, technology)]["hop_latency_us"] * 1e-6


def launch_latency() -> float:
    """Fixed cost of one collective call as nccl-tests sees it, seconds (derived; see efficiency.json)."""
    return efficiency_data()["latency_us"]["launch"]["value"] * 1e-6


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
    protocols: np.ndarray = field(default=None, repr=False)   # chosen NCCL protocol per size (LL, LL128, Simple)
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
    channels: int = 2        # NCCL channels (rings / trees run side by side)
    pcie_bw: float = float("inf")  # one GPU's PCIe link (GPUDirect RDMA to its NIC crosses it)
    arch: str = "ampere"     # GPU generation for NCCL's per-generation tables: volta, ampere, hopper, blackwell

    @property
    def net_bw_per_gpu(self) -> float:
        """One GPU's share of the node's NICs when every GPU sends at once, bytes/s per direction."""
        return self.net_bw_node / self.gpus_per_node

    def net_bw_node_for(self, gpus) -> float:
        """NIC bandwidth ``gpus`` GPUs of a node can drive: the NICs, or their PCIe links if fewer, bytes/s."""
        return min(self.net_bw_node, gpus * self.pcie_bw)

    def net_bw_per_gpu_for(self, gpus) -> float:
        """One GPU's share of ``net_bw_node_for(gpus)``, bytes/s per direction."""
        return self.net_bw_node_for(gpus) / gpus


def nvls_efficiency(nvlink_generation) -> float:
    """NVLS algbw / per-direction NVLink rate for an NVLink generation (4: Hopper, 5: Blackwell), <= 1."""
    table = efficiency_data()["technologies"]["nvls"]["by_nvlink_generation"]
    key = validate.choice("nvlink_generation", str(nvlink_generation), table)
    return min(1.0, float(table[key]["efficiency"]))


_ARCH_BY_NVLINK = {2: "volta", 3: "ampere", 4: "hopper", 5: "blackwell"}


def gpu_generation(system) -> str:
    """NCCL's GPU generation of a system (volta, ampere, hopper, blackwell) from its GPU's NVLink generation."""
    sys_ = hardware.resolve_system(system)
    gen = next((r.get("nvlink_generation") for r in hardware.catalog()["gpus"] if r["id"] == sys_.gpu.id), None)
    return _ARCH_BY_NVLINK.get(gen, "ampere")  # GPUs without NVLink (Ada, Ampere PCIe): NCCL's Ampere row


def channels_for(link) -> int:
    """NCCL channels on a GPU link: its per-direction rate over NCCL's per-channel rate, 2 to 32 (efficiency.json)."""
    if not isinstance(link, hardware.Link):
        raise ValueError(f"link must be a hardware.Link (e.g. hardware.link('nvlink-4')); got {link!r}")
    ch = efficiency_data()["channels"]
    per = ch["per_channel_gb_s"]["nvlink" if link.family == "nvlink" else "pcie"] * units.GB
    return int(min(ch["max"], max(2, round(link.per_direction / per))))


def fabric(system, achievable=True, nics_per_node=None, network=None) -> Fabric:
    """The bandwidths and latencies ``predict`` and ``parallel`` use for a system (spec x efficiency when achievable).

    network: a fabric kind (``fabric_kind_ids()``) overriding the system's (``system_fabric_kind``).
    NVLS: spec x the NVLink generation's measured NVLS efficiency, never above the link's rate.
    """
    sys_ = hardware.resolve_system(system)
    if not isinstance(achievable, bool):
        raise ValueError(f"achievable must be True or False, got {achievable!r}")
    intra_tech = "nvlink" if sys_.gpu_link.family == "nvlink" else "pcie"
    eff = (lambda t: efficiency(t)) if achievable else (lambda t: 1.0)
    intra = sys_.gpu_link.per_direction * eff(intra_tech)
    if intra_tech == "pcie" and not sys_.p2p:
        intra /= no_p2p_staging_factor()  # assumed, not measured: see efficiency.json "no_p2p_staging"
    nvls = None
    if sys_.in_network_reduction:
        gen = (sys_.raw or {}).get("nvlink_generation") or 4
        nvls = sys_.gpu_link.per_direction * (nvls_efficiency(gen) if achievable else 1.0)
    nics = sys_.nics_per_node if nics_per_node is None else validate.integer("nics_per_node", nics_per_node, low=1, high=1024)
    net_tech = system_fabric_kind(sys_) if network is None else validate.choice("network", network,
                                                                                 fabric_kind_ids())
    net = sys_.nic.per_direction * nics * eff(net_tech)
    return Fabric(intra_bw=intra, intra_hop=hop_latency(intra_tech), intra_tech=intra_tech, nvls_bw=nvls,
                  net_bw_node=net, net_hop=hop_latency(net_tech), net_tech=net_tech, launch=launch_latency(),
                  gpus_per_node=sys_.gpus_per_node, channels=channels_for(sys_.gpu_link),
                  pcie_bw=sys_.pcie.per_direction * eff("pcie"), arch=gpu_generation(sys_))


# ---------------------------------------------------------------- NCCL protocols (LL, LL128, Simple)

PROTOCOLS = ("LL", "LL128", "Simple")


def protocol_table() -> dict:
    """NCCL's latency and bandwidth terms per algorithm and protocol (efficiency.json ``nccl_protocols``)."""
    return efficiency_data()["nccl_protocols"]


def _protocols(f: Fabric, protocol) -> tuple:
    """Protocols NCCL would consider: LL128 needs NVLink inside the node; ``protocol`` forces one."""
    allowed = PROTOCOLS if f.intra_tech == "nvlink" else ("LL", "Simple")
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
    for proto in _protocols(f, protocol):
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
    for proto in _protocols(f, protocol):
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


def _hierarchical(n, g, N, f: Fabric) -> TwoLevelPhases:
    return two_level_all_reduce(n, g, N, f.intra_bw, f.net_bw_per_gpu_for(g), f.intra_hop, f.net_hop, f.launch)


def _single_node(collective, n, g, f: Fabric, algorithm, protocol=None):
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


def _multi_node(collective, n, g, N, f: Fabric, algorithm, protocol=None):
    """Time across N nodes of g GPUs (NCCL-like algorithms): {protocol: seconds}, TwoLevelPhases or None."""
    coll = collectives.get(collective)
    if algorithm not in coll.system_algorithms:
        return None
    p = g * N
    if algorithm == "ring":
        # rings run on every rail at once; per node they push the same bytes through NVLink and the NICs
        return _ring(coll, n, g, N, f, min(f.intra_bw, f.net_bw_node_for(g)), protocol) or None
    if algorithm == "direct":
        # each rank sends (p-g)/p of its buffer over the network, (g-1)/p over NVLink, all at once
        return {"Simple": two_tier_all_to_all(n, p, g, f.intra_bw, f.net_bw_per_gpu_for(g), f.net_hop, f.launch)}
    if algorithm == "tree":
        return _tree(coll, n, g, N, f, protocol) or None
    if collective != "all_reduce":
        return None
    if algorithm == "nvls":
        # NCCL runs no NVLS tree across multi-node NVLink domains (MNNVL, e.g. NVL72 racks): tuning.cc
        return None if f.gpus_per_node > 8 else _nvls(n, g, N, f, protocol)
    if algorithm == "hierarchical":
        return _hierarchical(n, g, N, f)
    return None


def two_tier_all_to_all(nbytes, ranks, per_node, intra_bw, net_bw_per_gpu, net_hop=0.0, launch=0.0):
    """Direct all-to-all across nodes, seconds: each rank sends (p-k)/p of its buffer over its NIC share
    and (k-1)/p over the GPU fabric, all at once (k ranks per node). Vectorised over nbytes."""
    scalar = np.ndim(nbytes) == 0 and not isinstance(nbytes, (list, tuple))
    n = _sizes(nbytes)
    p = validate.integer("ranks", ranks, low=1, high=10_000_000)
    k = validate.integer("per_node", per_node, low=1, high=p)
    intra_bw, net_bw_per_gpu = validate.positive("intra_bw", intra_bw), validate.positive("net_bw_per_gpu", net_bw_per_gpu)
    net_hop, launch = validate.non_negative("net_hop", net_hop), validate.non_negative("launch", launch)
    t_net = (p - k) / p * n / net_bw_per_gpu
    t_intra = (k - 1) / p * n / intra_bw
    return _ret(launch + net_hop + np.maximum(t_net, t_intra), scalar)


def _notes(sys_, N, order) -> list:
    notes = []
    if sys_.interconnect == "pcie" and sys_.cpu_sockets > 1:
        notes.append("PCIe box across CPU sockets: real busbw is often limited by the CPUs, below this model")
    if N == 2 and "tree" in order:
        notes.append("NCCL's tree on two nodes sends less over the network; measured results vary widely")
    if "nvls" in order:
        notes.append("in-network reduction: busbw exceeds the link rate; efficiency is empirical")
    return notes


def _best(times: dict, shape):
    """Fastest protocol per size of {protocol: seconds} -> (seconds, protocol names)."""
    names = list(times)
    stack = np.vstack([np.broadcast_to(np.asarray(times[k], dtype=float), shape) for k in names])
    idx = np.argmin(stack, axis=0)
    return stack[idx, np.arange(stack.shape[1])], np.array(names)[idx]


def _fastest(coll, n, one):
    """auto: the fastest fabric-level algorithm per size -> (times, chosen names, protocols, label, order)."""
    names = [name for name in ("ring", "tree", "nvls", "direct") if name in coll.system_algorithms]
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


def predict(collective, nbytes, system, gpus_per_node=None, nodes=1, algorithm="auto", achievable=True,
            nics_per_node=None, network=None, protocol="auto") -> Prediction:
    """Predict a sweep of one collective on a catalog system, as nccl-tests would report it.

    nbytes: bytes (scalar, array or a size string such as ``"16G"``); system: catalog id or
    hardware.System; gpus_per_node defaults to the system's; nodes >= 1 (more than one node
    goes through the NICs, one per GPU rail where the system has them); algorithm: ``auto``,
    ``ring``, ``tree`` (NCCL's: chain in a node, double binary tree between nodes), ``nvls``
    (in-switch reduction, where the NVSwitch supports it), ``hierarchical`` (textbook two
    level; ``Prediction.phases`` holds its phases) or a flat algorithm of the registry
    (``collectives``; one node only). ``auto`` picks the fastest per size. protocol: ``auto``
    (NCCL's fastest per size) or one of ``PROTOCOLS`` (LL, LL128, Simple), with NCCL's latency
    and bandwidth terms (``protocol_table()``). achievable=True applies the sourced
    per-technology efficiency (``efficiency_table()``); False uses spec bandwidth.
    nics_per_node overrides the catalog; network names a fabric kind (``fabric_kind_ids()``:
    infiniband, roce, efa, slingshot, ethernet_tcp) instead of the system's.
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
    protocol = validate.choice("protocol", protocol, ("auto",) + PROTOCOLS)
    f = fabric(sys_, achievable, nics_per_node, network)
    p = g * N

    def raw(name):
        return _single_node(coll.id, n, g, f, name, protocol) if N == 1 else \
            _multi_node(coll.id, n, g, N, f, name, protocol)

    def one(name):
        t = raw(name)
        if t is None:
            return None
        if isinstance(t, TwoLevelPhases):
            return np.broadcast_to(t.time_s, n.shape), np.full(n.shape, "Simple")
        return _best(t, n.shape)

    phases = None
    if algorithm == "auto":
        time_s, chosen, protos, label, order = _fastest(coll, n, one)
    else:
        t = raw(algorithm)
        if t is None:
            where = "one node" if N == 1 else f"{N} nodes"
            extra = f" with protocol {protocol}" if protocol != "auto" else ""
            raise ValueError(f"algorithm {algorithm!r} is not available for {coll.id} on {sys_.id} with {where}{extra}")
        if isinstance(t, TwoLevelPhases):
            phases = t
        time_s, protos = one(algorithm)
        time_s = np.asarray(time_s, dtype=float).copy()
        chosen = np.full(n.shape, algorithm)
        label, order = algorithm, [algorithm]
    with np.errstate(divide="ignore", invalid="ignore"):
        ab = np.where(time_s > 0, n / np.where(time_s > 0, time_s, 1), 0.0)
    bb = ab * coll.busbw_factor(p)
    return Prediction(collective=coll.id, system=sys_.id, ranks=p, nodes=N, gpus_per_node=g, algorithm=label,
                      nbytes=n, time_s=time_s, algbw=ab, busbw=bb, algorithms=chosen, achievable=achievable,
                      notes=_notes(sys_, N, order), phases=phases, protocols=protos)


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


SIZE_REGIMES = (("< 64 KiB", 0, 2**16), ("64 KiB-1 MiB", 2**16, 2**20), ("1-128 MiB", 2**20, 2**27),
                (">= 128 MiB", 2**27, float("inf")))
SCALE_REGIMES = (("1 node", 1, 1), ("2 nodes", 2, 2), ("3-16 nodes", 3, 16), ("> 16 nodes", 17, 10**9))


def size_regime(nbytes) -> str:
    """The validation size regime of ``nbytes`` (bytes): < 64 KiB, 64 KiB-1 MiB, 1-128 MiB or >= 128 MiB."""
    nbytes = validate.non_negative("nbytes", nbytes)
    return next(name for name, lo, hi in SIZE_REGIMES if lo <= nbytes < hi)


def scale_regime(nodes) -> str:
    """The validation scale regime of a node count: 1 node, 2 nodes, 3-16 nodes or > 16 nodes."""
    nodes = validate.integer("nodes", nodes, low=1, high=10_000_000)
    return next(name for name, lo, hi in SCALE_REGIMES if lo <= nodes <= hi)


def case_system(case) -> hardware.System:
    """The catalog system of a published case, with its NIC rate (``nic_gbit_s``) where the case overrides it."""
    if not isinstance(case, dict) or "system" not in case:
        raise ValueError(f"case must be a published case (a dict with 'system', as in published()['cases']); got {case!r}")
    sys_ = hardware.resolve_system(case["system"])
    if case.get("nic_gbit_s"):
        sys_ = sys_.variant(nic_gbit_s=case["nic_gbit_s"], name=f"{sys_.name}, {case['nic_gbit_s']:g} Gb/s NICs")
    return sys_


def validation_table(cases=None) -> list[dict]:
    """Predicted vs measured for every published case: one dict per case with ``ratio`` = predicted/measured busbw.

    Each row carries the case's ``role``: ``fit`` (used to set a constant of the model) or ``test``
    (never used to set one), and its size and scale regimes.
    """
    if cases is not None and not (isinstance(cases, (list, tuple)) and all(isinstance(c, dict) for c in cases)):
        raise ValueError(f"cases must be a list of published cases (dicts); got {cases!r}")
    rows = []
    for case in published()["cases"] if cases is None else cases:
        pred = predict(case["collective"], case["nbytes"], case_system(case), gpus_per_node=case.get("gpus_per_node"),
                       nodes=case.get("nodes", 1), algorithm=case.get("algorithm") or "auto",
                       nics_per_node=case.get("nics_per_node"), network=case.get("fabric"))
        c = evidence.compare(case["id"], float(pred.busbw[0]),
                             evidence.measurement(case["busbw_gb_s"] * units.GB, "B/s busbw", case["source"]))
        rows.append({"id": case["id"], "system": case["system"], "collective": case["collective"],
                     "nodes": case.get("nodes", 1), "gpus_per_node": pred.gpus_per_node,
                     "nbytes": case["nbytes"], "algorithm": pred.algorithm, "protocol": str(pred.protocols[0]),
                     "measured_busbw": c.measured.value, "predicted_busbw": c.model,
                     "ratio": c.ratio, "source": case["source"], "role": case.get("role", "test"),
                     "size_regime": size_regime(case["nbytes"]), "scale_regime": scale_regime(case.get("nodes", 1)),
                     "sweep": case.get("sweep")})
    return rows


def _within(rows, tol) -> int:
    return sum(1 for r in rows if evidence.within(r["ratio"], tol))


def _rows_of_role(rows, role):
    """(all rows, the rows of one role: ``fit``, ``test`` or ``all``); rows default to validation_table()."""
    rows = validation_table() if rows is None else rows
    if not (isinstance(rows, (list, tuple)) and all(isinstance(r, dict) and "ratio" in r for r in rows)):
        raise ValueError(f"rows must be the rows of validation_table(); got {rows!r}")
    role = validate.choice("role", role, ("fit", "test", "all"))
    return rows, [r for r in rows if role == "all" or r["role"] == role]


def validation_by_regime(rows=None, role="test") -> list[dict]:
    """Cells of size regime x scale regime for one role (``fit``, ``test`` or ``all``).

    Each cell: cases, within +-20% and +-50% (counts and shares) and the worst case (largest
    |log ratio|) with its ratio. Cells without cases are left out.
    """
    rows, chosen = _rows_of_role(rows, role)
    cells = []
    for size, _, _ in SIZE_REGIMES:
        for scale, _, _ in SCALE_REGIMES:
            rs = [r for r in chosen if r["size_regime"] == size and r["scale_regime"] == scale]
            if not rs:
                continue
            worst = max(rs, key=lambda r: abs(np.log(r["ratio"])))
            cells.append({"size": size, "scale": scale, "cases": len(rs),
                          "within_20pct": _within(rs, 0.2), "within_50pct": _within(rs, 0.5),
                          "share_20pct": _within(rs, 0.2) / len(rs), "share_50pct": _within(rs, 0.5) / len(rs),
                          "worst_id": worst["id"], "worst_ratio": worst["ratio"]})
    return cells


def validation_summary(rows=None) -> dict:
    """Counts and shares within tolerance per role: +-20% for >= 256 MB, +-50% for < 1 MB (256 MB = 2**28)."""
    rows = validation_table() if rows is None else rows
    large = [r for r in rows if r["nbytes"] >= 2**28]
    small = [r for r in rows if r["nbytes"] < 2**20]
    out = {"cases": len(rows), "large": len(large), "large_within_20pct": _within(large, 0.2),
           "small": len(small), "small_within_50pct": _within(small, 0.5),
           "large_share": _within(large, 0.2) / len(large) if large else float("nan"),
           "small_share": _within(small, 0.5) / len(small) if small else float("nan")}
    out["fit_cases"] = sum(1 for r in rows if r["role"] == "fit")
    out["test_cases"] = sum(1 for r in rows if r["role"] == "test")
    out["sources"] = len({r["source"] for r in rows})
    return out


GOALS = (  # issue 14's goals on the TEST set: (name, lowest size, size bound, tolerance, share wanted)
    (">= 128 MiB within 20%", 2**27, float("inf"), 0.20, 0.80),
    ("1-128 MiB within 35%", 2**20, 2**27, 0.35, 0.70),
    ("< 1 MiB within 50%", 0, 2**20, 0.50, 0.70),
)


def validation_goals(rows=None, role="test") -> list[dict]:
    """The accuracy goals by size on one role's cases, and node-count sweeps within 35%.

    One dict per goal: name, cases, within (count), share, wanted (share), met (bool). Node-count
    sweeps: the cases of every ``sweep`` whose node count varies.
    """
    rows, chosen = _rows_of_role(rows, role)
    out = []
    for name, lo, hi, tol, wanted in GOALS:
        rs = [r for r in chosen if lo <= r["nbytes"] < hi]
        k = _within(rs, tol)
        out.append({"name": name, "cases": len(rs), "within": k, "share": k / len(rs) if rs else float("nan"),
                    "wanted": wanted, "met": bool(rs) and k / len(rs) >= wanted})
    sweeps = {}
    for r in rows:  # node-count sweeps: all their cases, fit ones included, with the fit ones named
        if r.get("sweep"):
            sweeps.setdefault(r["sweep"], []).append(r)
    node_rows = [r for rs in sweeps.values() if len({x["nodes"] for x in rs}) > 1 for r in rs]
    k = _within(node_rows, 0.35)
    out.append({"name": "node-count sweeps within 35%", "cases": len(node_rows), "within": k,
                "share": k / len(node_rows) if node_rows else float("nan"), "wanted": 1.0,
                "met": bool(node_rows) and k == len(node_rows),
                "sweeps": sorted({r["sweep"] for r in node_rows}),
                "misses": [r["id"] for r in node_rows if not evidence.within(r["ratio"], 0.35)]})
    return out

