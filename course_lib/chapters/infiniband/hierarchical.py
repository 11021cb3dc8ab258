"""Chapter 05, the two-level all-reduce: its phases inside and across nodes, the scaling curve, the cliff at two nodes and its explorer.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from ... import costmodel, hardware, units, validate
from ...views import infiniband as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider
from .links import intra_inter_ratio, node_injection


NODE_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
GPUS_PER_NODE = (1, 2, 4, 8, 16)
NICS_PER_NODE = (1, 2, 4, 8, 16)


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
