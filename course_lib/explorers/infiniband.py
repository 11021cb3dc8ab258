"""Chapter 05: InfiniBand, one NIC per GPU, and the multi-node all-reduce cliff.

Every bandwidth is bytes/s **per direction** unless a name says otherwise; network
ports are quoted by vendors in **bits** per second (NDR: 400 Gb/s = 50 GB/s).
Collective times come from :mod:`course_lib.costmodel` (``predict`` and
``collective_time``); this module only arranges them for the chapter (what-if
systems come from ``hardware.System.variant``): a phase breakdown of the two-level all-reduce, rank
placement under torchrun, rail hops in a fat tree, and the published
measurements in ``data/published_multinode.json``.
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache

import numpy as np

from .. import costmodel, datafiles, evidence, hardware, topology, units, validate
from ..views import infiniband as views
from ..widgets import explorer, gpu_count_slider, html_table, link_speed_slider, show_html

IB_GENERATIONS = ("ib-edr", "ib-hdr", "ib-ndr", "ib-xdr")
NODE_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
GPUS_PER_NODE = (1, 2, 4, 8, 16)
NICS_PER_NODE = (1, 2, 4, 8, 16)


# ---------------------------------------------------------------- link arithmetic

def ib_generations() -> list[dict]:
    """EDR, HDR, NDR, XDR per 4x port from the catalog: Gb/s (bits) and GB/s (bytes), each direction and both."""
    rows = []
    for network_id in IB_GENERATIONS:
        link = hardware.network(network_id)
        row = next(r for r in hardware.catalog()["networks"] if r["id"] == network_id)
        rows.append({"id": network_id, "name": link.name, "year": row["year"],
                     "gbit_s_per_direction": row["gbit_s_per_direction"],
                     "gb_s_per_direction": link.per_direction / units.GB,
                     "gb_s_bidirectional": link.bidirectional / units.GB,
                     "source": datafiles.source(link.source)["url"]})
    return rows



def node_injection(system="dgx-h100") -> float:
    """What all NICs of one node can send at once: NICs x port rate, bytes/s per direction."""
    sys_ = hardware.resolve_system(system)
    return sys_.nic.per_direction * sys_.nics_per_node


def node_nvlink(system="dgx-h100") -> float:
    """Sum of every GPU's port into the node fabric (NVLink or PCIe), bytes/s per direction."""
    sys_ = hardware.resolve_system(system)
    return sys_.gpu_link.per_direction * sys_.gpus_per_node


def intra_inter_ratio(system="dgx-h100") -> float:
    """Per GPU: intra-node link bandwidth / network bandwidth when all GPUs send at once (per direction both)."""
    sys_ = hardware.resolve_system(system)
    return sys_.gpu_link.per_direction / sys_.nic_bandwidth_per_gpu


# ---------------------------------------------------------------- the two-level all-reduce

def hierarchical_phases(nbytes, nodes, system="dgx-h100", achievable=False) -> dict:
    """Two-level all-reduce of ``nbytes`` (bytes per GPU) on ``nodes`` nodes, phase by phase.

    Phases (seconds): reduce-scatter inside each node over NVLink, ring all-reduce of the
    1/g shard across nodes (GPU k of every node, over its own NIC), all-gather inside the
    node; ``launch`` is the fixed call overhead. All of it is costmodel.predict's
    ``hierarchical`` algorithm and its ``Prediction.phases`` (on one node: no network phase).
    """
    if isinstance(nbytes, str):
        nbytes = units.parse_size(nbytes)
    n = validate.positive("nbytes", nbytes)
    N = validate.integer("nodes", nodes, low=1, high=100_000)
    if not isinstance(achievable, bool):
        raise ValueError(f"achievable must be True or False, got {achievable!r}")
    sys_ = hardware.resolve_system(system)
    pred = costmodel.predict("all_reduce", n, sys_, nodes=N, algorithm="hierarchical", achievable=achievable)
    phases = {k: float(np.asarray(v).ravel()[0]) for k, v in pred.phases.as_dict().items()}
    total = float(pred.time_s[0])
    return {"system": sys_.id, "nodes": N, "gpus_per_node": sys_.gpus_per_node, "ranks": pred.ranks, "nbytes": n,
            **phases, "time_s": total, "algbw": float(pred.algbw[0]), "busbw": float(pred.busbw[0]),
            "inter_share": phases["inter_node_s"] / total if total > 0 else 0.0}


def scaling_curve(nbytes, system="dgx-h100", max_nodes=128, achievable=False) -> dict:
    """busbw and time as a job grows: 2..g GPUs in one node, then 2, 4, ... nodes.

    Returns arrays (bytes/s, seconds) for ``intra`` (one node, ring), ``hierarchical``
    (textbook two-level, phases one after another) and ``ring`` (NCCL-style rings across
    nodes, NVLink and NIC traffic pipelined), from costmodel.predict.
    """
    if isinstance(nbytes, str):
        nbytes = units.parse_size(nbytes)
    n = validate.positive("nbytes", nbytes)
    max_nodes = validate.integer("max_nodes", max_nodes, low=2, high=100_000)
    sys_ = hardware.resolve_system(system)
    g = sys_.gpus_per_node
    intra_gpus = [p for p in (2, 4, 8, 16, 32, 64) if p < g] + [g] if g > 1 else []
    intra = [costmodel.predict("all_reduce", n, sys_, gpus_per_node=p, nodes=1, algorithm="ring",
                               achievable=achievable) for p in intra_gpus]
    nodes = [N for N in NODE_COUNTS if 2 <= N <= max_nodes]
    if max_nodes not in nodes:
        nodes.append(max_nodes)
    out = {"system": sys_.id, "gpus_per_node": g, "nbytes": n,
           "intra_gpus": np.array(intra_gpus, dtype=int),
           "intra_busbw": np.array([p.busbw[0] for p in intra]),
           "intra_time_s": np.array([p.time_s[0] for p in intra]),
           "nodes": np.array(nodes, dtype=int), "gpus": np.array(nodes, dtype=int) * g}
    for algorithm in ("hierarchical", "ring"):
        preds = [costmodel.predict("all_reduce", n, sys_, nodes=N, algorithm=algorithm, achievable=achievable)
                 for N in nodes]
        out[f"{algorithm}_busbw"] = np.array([p.busbw[0] for p in preds])
        out[f"{algorithm}_time_s"] = np.array([p.time_s[0] for p in preds])
    return out


def cliff(nbytes, system="dgx-h100", nodes=2, achievable=False) -> dict:
    """How much slower one all-reduce gets when the job leaves the node.

    Compares one full node with ``nodes`` nodes (textbook two-level all-reduce and
    NCCL-style rings). Times in seconds, busbw in bytes/s; ratios > 1 mean slower.
    """
    sys_ = hardware.resolve_system(system)
    N = validate.integer("nodes", nodes, low=2, high=100_000)
    one = hierarchical_phases(nbytes, 1, sys_, achievable)
    many = hierarchical_phases(nbytes, N, sys_, achievable)
    ring = costmodel.predict("all_reduce", one["nbytes"], sys_, nodes=N, algorithm="ring", achievable=achievable)
    return {"system": sys_.id, "nodes": N, "one_node_s": one["time_s"], "hierarchical_s": many["time_s"],
            "ring_s": float(ring.time_s[0]), "one_node_busbw": one["busbw"], "hierarchical_busbw": many["busbw"],
            "ring_busbw": float(ring.busbw[0]), "hierarchical_slowdown": many["time_s"] / one["time_s"],
            "ring_slowdown": float(ring.time_s[0]) / one["time_s"]}


# ---------------------------------------------------------------- racks, rails and ranks

def rail_topology(system="dgx-h100", nodes=2) -> topology.Topology:
    """The rail-optimised fat tree of course_lib.topology: NIC k of every node on leaf switch k."""
    sys_ = hardware.resolve_system(system)
    nodes = validate.integer("nodes", nodes, low=1, high=64)
    return topology.rail_fat_tree(sys_.id, nodes)


def switch_hops(topo, a, b) -> int:
    """InfiniBand switches a message crosses from GPU ``a`` to GPU ``b`` through the network only (no NVLink)."""
    if not isinstance(topo, topology.Topology):
        raise ValueError(f"topo must be a course_lib.topology.Topology, got {type(topo).__name__}")
    for name, node in (("a", a), ("b", b)):
        if topo.kinds.get(node) != "gpu":
            raise ValueError(f"{name} must be one of the topology's GPUs such as {topo.gpus[0]!r}; got {node!r}")
    if a == b:
        raise ValueError("b must differ from a")
    neighbours = {node: set() for node in topo.kinds}
    for key in topo.links:
        u, v = tuple(key)
        neighbours[u].add(v)
        neighbours[v].add(u)
    frontier, seen, depth = [a], {a}, 0
    while frontier:
        depth += 1
        nxt = []
        for u in frontier:
            for v in neighbours[u]:
                if v == b:
                    return depth - 1  # switches passed = edges - 1
                if v not in seen and topo.kinds[v] == "ib_switch":
                    seen.add(v)
                    nxt.append(v)
        frontier = nxt
    raise ValueError(f"no network path from {a!r} to {b!r}")


def global_rank(node_rank, local_rank, nproc_per_node) -> int:
    """The RANK torchrun gives local rank ``local_rank`` on node ``node_rank`` (both from 0)."""
    nproc = validate.integer("nproc_per_node", nproc_per_node, low=1, high=1024)
    node_rank = validate.integer("node_rank", node_rank, low=0)
    local_rank = validate.integer("local_rank", local_rank, low=0, high=nproc - 1)
    return node_rank * nproc + local_rank


def rank_table(nnodes, nproc_per_node) -> list[dict]:
    """Every process of a torchrun job: node, LOCAL_RANK (= GPU index), RANK, WORLD_SIZE."""
    nnodes = validate.integer("nnodes", nnodes, low=1, high=4096)
    nproc = validate.integer("nproc_per_node", nproc_per_node, low=1, high=1024)
    return [{"node_rank": n, "local_rank": r, "rank": global_rank(n, r, nproc), "world_size": nnodes * nproc}
            for n in range(nnodes) for r in range(nproc)]


def ring_crossings(nnodes, nproc_per_node) -> dict:
    """A ring in RANK order: how many of its hops stay inside a node (NVLink) and how many cross the network."""
    rows = rank_table(nnodes, nproc_per_node)
    p = len(rows)
    if p < 2:
        return {"ranks": p, "nvlink_hops": 0, "network_hops": 0}
    network = sum(1 for i in range(p) if rows[i]["node_rank"] != rows[(i + 1) % p]["node_rank"])
    return {"ranks": p, "nvlink_hops": p - network, "network_hops": network}


# ---------------------------------------------------------------- published measurements

@lru_cache(maxsize=1)
def published_multinode() -> dict:
    """The parsed ``data/published_multinode.json``: measurements with their sources."""
    return datafiles.load("published_multinode.json")


def transports_table() -> list[dict]:
    """InfiniBand, RoCE and TCP: line rate vs what NCCL achieves per NIC, GB/s per direction, with sources."""
    rows = []
    for row in published_multinode()["per_nic"]:
        if "network" in row:
            line = hardware.network(row["network"]).per_direction
        else:
            line = units.gbit_to_gbyte(row["line_gbit_s"]) * units.GB
        low, high = row["achieved_gb_s"]
        rows.append({"transport": row["transport"], "kind": row["kind"],
                     "line_gbit_s": units.bytes_to_bits(line) / 1e9, "line_gb_s": line / units.GB,
                     "achieved_low_gb_s": low, "achieved_high_gb_s": high,
                     "efficiency_low": low * units.GB / line, "efficiency_high": high * units.GB / line,
                     "what": row["what"], "source": datafiles.source(row["source"])["url"]})
    return rows


def _model_row(case_id, label, system, nodes, nbytes, measured, source_id, nics=None, algorithm=None, note=""):
    sys_ = hardware.resolve_system(system)
    if nics is not None:
        sys_ = sys_.variant(nics_per_node=nics)
    textbook = costmodel.predict("all_reduce", nbytes, sys_, nodes=nodes,
                                 algorithm="hierarchical" if nodes > 1 else "ring", achievable=False)
    ring = costmodel.predict("all_reduce", nbytes, sys_, nodes=nodes, algorithm="ring", achievable=False)
    model = costmodel.predict("all_reduce", nbytes, sys_, nodes=nodes, algorithm=algorithm or "auto", achievable=True)
    c = evidence.compare(case_id, float(model.busbw[0]),
                         evidence.measurement(measured[0] * units.GB, "B/s busbw", source_id, high=measured[1] * units.GB))
    return {"id": case_id, "label": label, "system": sys_.id, "base_system": hardware.resolve_system(system).id, "nodes": nodes, "nics_per_node": sys_.nics_per_node,
            "nbytes": nbytes, "measured_low": c.measured.value, "measured_high": c.measured.high,
            "textbook_busbw": float(textbook.busbw[0]), "ring_busbw": float(ring.busbw[0]),
            "model_busbw": c.model, "model_algorithm": model.algorithm, "ratio": c.ratio, "source": c.measured.url, "note": note}


def model_vs_measured() -> list[dict]:
    """Published all-reduce busbw (bytes/s) next to three models of the same run.

    ``textbook_busbw``: two-level all-reduce, phases one after another, spec bandwidth;
    ``ring_busbw``: NCCL-style rings, NVLink and NICs pipelined, spec bandwidth;
    ``model_busbw``: costmodel.predict with the algorithm the source states (``auto``, its
    fastest, when it states none) and the sourced efficiencies.
    Cases come from data/published_multinode.json and data/published_collectives.json.
    """
    rows = []
    for case in published_multinode()["allreduce"]:
        label = f"{case['system']}, {case['nodes']} node{'s' if case['nodes'] > 1 else ''}"
        if case.get("nics_per_node"):
            label += f", {case['nics_per_node']} NICs/node"
        label += f" ({case['algorithm']})"
        rows.append(_model_row(case["id"], label, case["system"], case["nodes"], case.get("nbytes", 2**33),
                               case["busbw_gb_s"], case["source"], case.get("nics_per_node"),
                               case["algorithm"], case["what"]))
    theirs = costmodel.published()
    for case in theirs["cases"]:
        # large multi-node runs on InfiniBand/RoCE nodes of the catalog's shape (the rest: validation_failure_plot)
        if case.get("nodes", 1) < 2 or case["nbytes"] < 2**27 or "nic_gbit_s" in case or "gpus_per_node" in case \
                or case["collective"] != "all_reduce" \
                or (case.get("fabric") or costmodel.system_fabric_kind(case["system"])) not in ("infiniband", "roce"):
            continue
        label = f"{case['system']}, {case['nodes']} nodes"
        if case.get("nics_per_node"):
            label += f", {case['nics_per_node']} NICs/node"
        label += f" ({case.get('algorithm') or 'NCCL default'})"
        rows.append(_model_row(case["id"], label, case["system"], case["nodes"], case["nbytes"],
                               (case["busbw_gb_s"], case["busbw_gb_s"]), case["source"],
                               case.get("nics_per_node"), case.get("algorithm"), case.get("as_measured", "")))
    return rows


def comparison_lines(rows=None) -> list[str]:
    """The headline comparisons of model_vs_measured as sentences (GB/s per direction)."""
    rows = model_vs_measured() if rows is None else rows
    by_id = {r["id"]: r for r in rows}
    gb = lambda x: f"{x / units.GB:.0f}"
    rng = lambda r: gb(r["measured_low"]) if r["measured_low"] == r["measured_high"] else \
        f"{gb(r['measured_low'])}-{gb(r['measured_high'])}"
    lines = []
    r = by_id.get("dgx-h100-multinode-ring")
    if r:
        s = hardware.system(r["base_system"])
        mid = (r["measured_low"] + r["measured_high"]) / 2
        lines.append(f"DGX H100 nodes, {r['nics_per_node']} NDR NICs each, rings across nodes: measured {rng(r)} GB/s "
                     f"({r['measured_low'] / r['nics_per_node'] / units.GB:.1f}-{r['measured_high'] / r['nics_per_node'] / units.GB:.1f} per NIC); "
                     f"network bound {gb(r['nics_per_node'] * s.nic.per_direction)}; pipelined-ring model "
                     f"{gb(r['ring_busbw'])}; textbook two-level {gb(r['textbook_busbw'])} "
                     f"({1 - r['textbook_busbw'] / mid:.0%} below the measurement)")
    ring, nvls = by_id.get("dgx-h100-node-ring"), by_id.get("dgx-h100-node-nvls")
    if ring and nvls:
        spec = hardware.system(ring["base_system"]).gpu_link.per_direction
        lines.append(f"One DGX H100 node: ring measured {rng(ring)} GB/s of {gb(spec)} GB/s NVLink "
                     f"({ring['measured_low'] / spec:.0%}); with NVLink SHARP {rng(nvls)} GB/s")
    r = by_id.get("a100-2node-2nic-tree")
    if r:
        s = hardware.system(r["base_system"])
        lines.append(f"Two A100 nodes, {r['nics_per_node']} HDR NICs each, NCCL's tree: measured {rng(r)} GB/s, above the "
                     f"{gb(r['nics_per_node'] * s.nic.per_direction)} GB/s the NICs can carry")
    return lines


# ---------------------------------------------------------------- views



def show_generations():
    """Table of InfiniBand generations per 4x port, bits and bytes, per direction and both."""
    show_html(html_table(ib_generations(), {
        "port": lambda r: r["name"], "year": lambda r: r["year"],
        "Gb/s per direction (bits)": lambda r: f"{r['gbit_s_per_direction']:g}",
        "GB/s per direction (bytes)": lambda r: f"{r['gb_s_per_direction']:g}",
        "GB/s bidirectional": lambda r: f"{r['gb_s_bidirectional']:g}", "source": lambda r: r["source"]}))


def show_transports():
    """Table: line rate vs achieved per NIC for InfiniBand, RoCE and TCP."""
    show_html(html_table(transports_table(), {
        "transport": lambda r: r["transport"], "line rate": lambda r: f"{r['line_gbit_s']:g} Gb/s = {r['line_gb_s']:g} GB/s",
        "NCCL achieved, GB/s per direction": lambda r: (f"{r['achieved_low_gb_s']:g}" if r["achieved_low_gb_s"] == r["achieved_high_gb_s"]
                                                        else f"{r['achieved_low_gb_s']:g}-{r['achieved_high_gb_s']:g}"),
        "share of line rate": lambda r: (f"{r['efficiency_low']:.0%}" if r["efficiency_low"] == r["efficiency_high"]
                                         else f"{r['efficiency_low']:.0%}-{r['efficiency_high']:.0%}"),
        "what": lambda r: r["what"], "source": lambda r: r["source"]}))


def show_rank_table(nnodes=2, nproc_per_node=4):
    """Table of the environment torchrun gives each process."""
    show_html(html_table(rank_table(nnodes, nproc_per_node), {
        "node (GROUP_RANK)": lambda r: r["node_rank"], "LOCAL_RANK (= GPU)": lambda r: r["local_rank"],
        "RANK": lambda r: r["rank"], "WORLD_SIZE": lambda r: r["world_size"]}))


def show_model_vs_measured(rows=None):
    """Table: measured busbw against the three models, GB/s per direction."""
    rows = model_vs_measured() if rows is None else rows
    gb = lambda x: f"{x / units.GB:.0f}"
    show_html(html_table(rows, {
        "run": lambda r: r["label"],
        "measured busbw": lambda r: gb(r["measured_low"]) if r["measured_low"] == r["measured_high"]
        else f"{gb(r['measured_low'])}-{gb(r['measured_high'])}",
        "textbook two-level": lambda r: gb(r["textbook_busbw"]), "pipelined ring": lambda r: gb(r["ring_busbw"]),
        "course model (achievable)": lambda r: f"{gb(r['model_busbw'])} ({r['model_algorithm']})",
        "source": lambda r: r["source"]}))


def plot_model_vs_measured(ax=None, rows=None):
    """Measured busbw (bars show the stated range) with the three model values per run."""
    import matplotlib.pyplot as plt
    rows = model_vs_measured() if rows is None else rows
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.25 * len(rows) + 1.6))  # 8 pt labels on rows 0.25 in apart
    return views.draw_model_vs_measured(ax, rows)


def plot_transports(ax=None):
    """Share of line rate NCCL reaches per NIC over InfiniBand, RoCE and TCP."""
    import matplotlib.pyplot as plt
    rows = transports_table()
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.2))
    return views.draw_transports(ax, rows)


def draw_rails(system="dgx-h100", nodes=2, ax=None):
    """Draw the rail-optimised fat tree: GPU k of every node on leaf switch k (``topology.draw_rails``)."""
    return topology.draw_rails(rail_topology(system, nodes), ax=ax)


# ---------------------------------------------------------------- explorer

def _config(gpus_per_node, nics_per_node, nic_gbit_s, nvlink_gb_s):
    return hardware.system("dgx-h100").variant(gpus_per_node=gpus_per_node, nics_per_node=nics_per_node,
                                               nic_gbit_s=nic_gbit_s, gpu_link_gb_s=nvlink_gb_s)


@dataclasses.dataclass(frozen=True)
class CliffView:
    """What the cliff explorer shows: all-reduce busbw in GB/s per direction against GPUs in the job
    (one node: ``intra_*``; across nodes: ``gpus``), the NVLink and NIC bounds, and your job's point."""
    nbytes: float
    nodes: int
    gpus_per_node: int
    intra_gpus: np.ndarray
    intra_busbw_gb_s: np.ndarray
    gpus: np.ndarray
    hierarchical_busbw_gb_s: np.ndarray
    ring_busbw_gb_s: np.ndarray
    nvlink_gb_s: float
    injection_gb_s: float     # all NICs of one node
    usable_gb_s: float        # what they carry in the model on these nodes (PCIe cap, node decline, efficiencies)
    pcie_name: str
    busbw_gb_s: float         # your job, two-level
    time_s: float


@lru_cache(maxsize=64)
def cliff_view(nodes, gpus_per_node, nic_gbit_s, nvlink_gb_s, nics_per_node, size_gb, achievable) -> CliffView:
    """The explorer's model result at these slider values (cached: one computation per event)."""
    sys_ = _config(gpus_per_node, nics_per_node, nic_gbit_s, nvlink_gb_s)
    n = size_gb * units.GB
    curve = scaling_curve(n, sys_, max_nodes=max(64, nodes), achievable=achievable)
    phases = hierarchical_phases(n, nodes, sys_, achievable)
    return CliffView(nbytes=n, nodes=nodes, gpus_per_node=gpus_per_node, intra_gpus=curve["intra_gpus"],
                     intra_busbw_gb_s=curve["intra_busbw"] / units.GB, gpus=curve["gpus"],
                     hierarchical_busbw_gb_s=curve["hierarchical_busbw"] / units.GB,
                     ring_busbw_gb_s=curve["ring_busbw"] / units.GB, nvlink_gb_s=nvlink_gb_s,
                     injection_gb_s=node_injection(sys_) / units.GB,
                     usable_gb_s=usable_injection(sys_, nodes, achievable) / units.GB, pcie_name=sys_.pcie.name,
                     busbw_gb_s=phases["busbw"] / units.GB,
                     time_s=phases["time_s"])


def _draw(ax, **values):
    update = views.draw_cliff(ax, cliff_view(**values))
    return lambda **v: update(cliff_view(**v))


def _range_text(nbytes, nodes, sys_) -> str:
    """The course's NCCL model (``costmodel.predict``) at this point, with the range of published runs in its regime."""
    model = costmodel.predict("all_reduce", nbytes, sys_, nodes=nodes).busbw[0] / units.GB
    return (f"the course's NCCL model, which runs NCCL's algorithms, gives {model:.3g} GB/s; "
            + costmodel.range_phrase(model, costmodel.range_for(nbytes, nodes, sys_)))


def applied_caps(system, nodes, achievable=False) -> list[str]:
    """Every limit the model puts on the network phase at these settings, one phrase each (empty: none
    binds): the GPUs' PCIe links below the NICs, the measured decline with node count, and the measured
    efficiencies when ``achievable``. The readout names them, so no cap is silent."""
    sys_ = hardware.resolve_system(system)
    N = validate.integer("nodes", nodes, low=1, high=100_000)
    f = costmodel.fabric(sys_, achievable)
    g, gb = sys_.gpus_per_node, (lambda bps: f"{bps / units.GB:.3g} GB/s")
    caps = []
    if achievable:
        caps.append(f"measured efficiencies (achievable): {f.intra_tech} x{costmodel.efficiency(f.intra_tech):.2f}, "
                    f"{f.net_tech} x{costmodel.efficiency(f.net_tech):.2f}, PCIe x{costmodel.efficiency('pcie'):.2f}")
    if N > 1 and g * f.pcie_bw < f.net_bw_node:
        caps.append(f"PCIe cap: each GPU reaches its NIC through {sys_.pcie.name} ({gb(f.pcie_bw)} per direction), "
                    f"so the node's NICs ({gb(f.net_bw_node)}) carry at most {gb(g * f.pcie_bw)}")
    decline = costmodel.node_decline(N)
    if decline < 1.0:
        c = costmodel.node_decline_constants()
        caps.append(f"node decline: the fabric delivers x{decline:.3f} of it on {N} nodes "
                    f"(x{c['per_doubling']:g} per doubling beyond {c['from_nodes']} nodes, measured)")
    return caps


def usable_injection(system, nodes, achievable=False) -> float:
    """What one node's NICs carry in the model at these settings, bytes/s per direction: the NICs, capped
    by the GPUs' PCIe links and scaled by the node decline (and efficiencies when ``achievable``)."""
    sys_ = hardware.resolve_system(system)
    f = costmodel.fabric(sys_, achievable)
    return f.net_bw_node_for(sys_.gpus_per_node) * costmodel.node_decline(nodes)


def _readout(nodes, gpus_per_node, nic_gbit_s, nvlink_gb_s, nics_per_node, size_gb, achievable):
    sys_ = _config(gpus_per_node, nics_per_node, nic_gbit_s, nvlink_gb_s)
    n = size_gb * units.GB
    ph = hierarchical_phases(n, nodes, sys_, achievable)
    one = hierarchical_phases(n, 1, sys_, achievable)
    t = units.format_time
    text = (f"{nodes} node(s) x {gpus_per_node} GPUs, {units.format_bytes(n)} per GPU: two-level all-reduce "
            f"<b>{t(ph['time_s'])}</b> = reduce-scatter {t(ph['reduce_scatter_s'])} + across nodes "
            f"{t(ph['inter_node_s'])} + all-gather {t(ph['all_gather_s'])}; busbw "
            f"<b>{ph['busbw'] / units.GB:.3g} GB/s</b> ("
            + (_range_text(n, nodes, sys_) if achievable else
               "spec bandwidth: published runs are set against the measured efficiencies; tick them for a range")
            + ")")
    if nodes > 1 and gpus_per_node > 1:
        text += (f" vs {one['busbw'] / units.GB:.3g} GB/s in one node ({ph['time_s'] / one['time_s']:.2f}x the time). "
                 f"Per GPU: link {nvlink_gb_s:.3g} GB/s vs network {node_injection(sys_) / gpus_per_node / units.GB:.3g} GB/s "
                 f"({intra_inter_ratio(sys_):.3g}x) from the NICs' rates")
        usable = usable_injection(sys_, nodes, achievable) / gpus_per_node / units.GB
        text += f", {usable:.3g} GB/s in the model." if nodes > 1 else "."
    caps = applied_caps(sys_, nodes, achievable)
    text += (" <b>Caps applied:</b> " + "; ".join(caps) + ".") if caps else " No cap below the NICs' rate applies."
    return text


def cliff_explorer(nodes=2, gpus_per_node=8, nic_gbit_s=400.0, nvlink_gb_s=450.0, nics_per_node=8, size_gb=1.0):
    """Sliders: nodes, GPUs per node, NIC Gb/s (bits) per direction, NVLink GB/s per direction, NICs, size.

    Shows: leaving the node costs a large all-reduce far less than the per-GPU bandwidth gap when
    every GPU has its own NIC, much more with few NICs, and the readout names every cap the model
    applies (PCIe link to the NIC, node-count decline, measured efficiencies).
    """
    import ipywidgets as w
    if nodes not in NODE_COUNTS:
        raise ValueError(f"nodes must be one of {NODE_COUNTS}, got {nodes!r}")
    if gpus_per_node not in GPUS_PER_NODE:
        raise ValueError(f"gpus_per_node must be one of {GPUS_PER_NODE}, got {gpus_per_node!r}")
    if nics_per_node not in NICS_PER_NODE:
        raise ValueError(f"nics_per_node must be one of {NICS_PER_NODE}, got {nics_per_node!r}")
    validate.number("nic_gbit_s", nic_gbit_s, low=10, high=1600)
    validate.number("nvlink_gb_s", nvlink_gb_s, low=5, high=2000)
    validate.number("size_gb", size_gb, low=0.001, high=1000)
    controls = {
        "nodes": gpu_count_slider(nodes, options=NODE_COUNTS, description="nodes"),
        "gpus_per_node": gpu_count_slider(gpus_per_node, options=GPUS_PER_NODE, description="GPUs per node"),
        "nic_gbit_s": link_speed_slider(nic_gbit_s, low=10, high=1600,
                                        description="NIC Gb/s (bits!) per direction"),
        "nvlink_gb_s": link_speed_slider(nvlink_gb_s, low=5, high=2000,
                                         description="NVLink GB/s per GPU per direction"),
        "nics_per_node": gpu_count_slider(nics_per_node, options=NICS_PER_NODE, description="NICs per node"),
        "size_gb": w.FloatLogSlider(value=size_gb, base=10, min=-3, max=3, step=0.05, description="GB per GPU",
                                    readout_format=".3g"),
        "achievable": w.Checkbox(value=False, description="apply measured efficiencies"),
    }
    return explorer(_draw, controls, readout=_readout, title="The multi-node cliff: two-level all-reduce",
                    figsize=(7.5, 4.4))  # notebook width: its 8 pt texts read at 8 pt


def validation_failure_plot(rows=None, role="test"):
    """Where the model stops being true: predicted / measured busbw of every published case by size
    (colour: node count), and of the node-count sweeps against nodes (both panels model/measured).

    rows: ``costmodel.validation_table()`` rows (default: all); role: ``test`` (default), ``fit``,
    ``informed`` or ``all``. Both panels show that role's cases only. Returns the figure.
    """
    import matplotlib.pyplot as plt
    rows, chosen = costmodel.rows_of_role(rows, role)
    by_regime = [(name, [r for r in chosen if r["scale_regime"] == name]) for name, _, _ in costmodel.SCALE_REGIMES]
    worst = sorted(chosen, key=lambda r: -abs(np.log(r["ratio"])))[:4]
    sweeps: dict = {}
    for r in chosen:
        if r.get("sweep"):
            sweeps.setdefault(r["sweep"], []).append(r)
    sweeps = [(name, sorted(rs, key=lambda r: r["nodes"]))
              for name, rs in sorted(sweeps.items()) if len({x["nodes"] for x in rs}) > 1]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7.5, 8.4))
    views.draw_validation_ratios(ax, by_regime, worst, role)
    views.draw_node_sweeps(ax2, sweeps)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- in-network reduction across nodes (SHARP)

COLLNET_NODES = (2, 4, 8, 16, 32, 64)


def collnet_view(system="dgx-b200", nbytes=16 * 2**30, nodes=COLLNET_NODES) -> dict:
    """CollNet (InfiniBand SHARP) against NCCL's ring and NVLS tree across nodes, with the published CollNet runs.

    Returns busbw in bytes/s per algorithm and node count (``costmodel.predict``, forced algorithm), the
    node's NIC line rate (the ring's ceiling) and the published CollNet cases (``published_collectives.json``,
    each with its role: ``fit`` set the SHARP efficiency, ``test`` never did) with their model ratios.
    """
    sys_ = hardware.resolve_system(system)
    nodes = tuple(validate.integer("nodes", n, low=2, high=100_000) for n in nodes)
    algos = ("ring", "nvls", "collnet") if sys_.in_network_reduction else ("ring", "collnet")
    busbw = {a: [float(costmodel.predict("all_reduce", nbytes, sys_, nodes=n, algorithm=a).busbw[0]) for n in nodes]
             for a in algos}
    cases = [c for c in costmodel.published()["cases"] if c.get("algorithm") == "collnet"]
    rows = {r["id"]: r for r in costmodel.validation_table(cases)}
    published = [{"id": c["id"], "nodes": c["nodes"], "busbw": c["busbw_gb_s"] * units.GB, "role": c["role"],
                  "nbytes": c["nbytes"], "ratio": rows[c["id"]]["ratio"], "source": c["source"]} for c in cases]
    return {"system": sys_.id, "nbytes": nbytes, "nodes": nodes, "busbw": busbw,
            "nic_line_rate": node_injection(sys_), "published": published,
            "sharp_efficiency": costmodel.collnet_constants()["efficiency"]}


def show_collnet(view=None):
    """Table: the published CollNet runs (fit and test) with the model's ratio."""
    v = collnet_view() if view is None else view
    show_html(html_table(v["published"], {
        "case": lambda r: r["id"], "role": lambda r: r["role"], "nodes": lambda r: r["nodes"],
        "size": lambda r: units.format_bytes(r["nbytes"], binary=True),
        "measured busbw, GB/s": lambda r: f"{r['busbw'] / units.GB:.1f}",
        "model / measured": lambda r: f"{r['ratio']:.2f}", "source": lambda r: r["source"]}))


def plot_collnet(ax=None, view=None):
    """busbw against node count: ring, NVLS tree and CollNet (SHARP) predicted, published CollNet runs, NIC rate."""
    import matplotlib.pyplot as plt
    v = collnet_view() if view is None else view
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    return views.draw_collnet(ax, v)
