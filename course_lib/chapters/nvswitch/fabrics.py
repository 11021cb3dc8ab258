"""Chapter 03, fabrics: bisection and all-reduce time on a switch, a full mesh and a PCIe tree (ring against in-switch reduction), the fabric explorer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from html import escape

import numpy as np

from ... import collectives, costmodel, hardware, topology, units, validate
from ...views import nvswitch as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider


GPU_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256)
PCIE_TREE_MAX_GPUS = 16  # two sockets with PCIe switches: what topology.pcie_tree builds
PCIE_GENERATIONS = (3, 4, 5, 6)
ALGORITHMS = ("ring", "nvls", "nvls_refined")


def _even_gpus(gpus):
    gpus = validate.integer("gpus", gpus, low=2, high=100_000)
    if gpus % 2:
        raise ValueError(f"gpus must be even (a bisection splits the GPUs into equal halves), got {gpus}")
    return gpus


def switch_bisection(gpus, per_gpu_bw) -> float:
    """Bisection of a non-blocking switch: half the GPUs each send at their full rate, bytes/s per direction."""
    gpus = _even_gpus(gpus)
    return gpus // 2 * validate.positive("per_gpu_bw", per_gpu_bw)


def mesh_pair_bandwidth(gpus, per_gpu_bw) -> float:
    """Direct wire between two GPUs of a full mesh: each GPU's bandwidth split over its gpus - 1 peers."""
    gpus = validate.integer("gpus", gpus, low=2, high=100_000)
    return validate.positive("per_gpu_bw", per_gpu_bw) / (gpus - 1)


def mesh_bisection(gpus, per_gpu_bw) -> float:
    """Bisection of a full mesh: (p/2)^2 wires cross the cut, each carrying B/(p-1); bytes/s per direction."""
    gpus = _even_gpus(gpus)
    return (gpus // 2) ** 2 * mesh_pair_bandwidth(gpus, per_gpu_bw)


def aggregate_bidirectional(gpus, per_gpu_bw) -> float:
    """What vendors add up for a whole domain: every GPU's bandwidth in both directions (NVL72: 130 TB/s)."""
    gpus = validate.integer("gpus", gpus, low=1, high=100_000)
    return gpus * 2 * validate.positive("per_gpu_bw", per_gpu_bw)


def _ring_layout(topo, n, radius=3.0):
    for i in range(n):
        a = 2 * math.pi * i / n + math.pi / 2
        topo.pos[f"gpu{i}"] = (radius * math.cos(a), radius * math.sin(a))


def switch_topology(gpus, per_gpu_bw) -> topology.Topology:
    """Every GPU on one non-blocking switch at ``per_gpu_bw`` bytes/s per direction (a topology.Topology)."""
    gpus = validate.integer("gpus", gpus, low=2, high=1024)
    bw = validate.positive("per_gpu_bw", per_gpu_bw)
    topo = topology.Topology(name=f"{gpus} GPUs on one NVSwitch, {bw / units.GB:.3g} GB/s per GPU")
    topo.add("nvswitch", "nvswitch", (0.0, 0.0))
    for i in range(gpus):
        topo.add(f"gpu{i}", "gpu")
        topo.connect(f"gpu{i}", "nvswitch", bw, "NVLink")
    _ring_layout(topo, gpus)
    return topo


def wire_factor(algorithm, gpus) -> float:
    """Bytes each GPU sends (and receives) per byte of all-reduce buffer.

    ``ring``: 2(p-1)/p; ``nvls``: 1 (the ideal in-switch model: send once, receive once); both are
    the registry's volume terms (``course_lib.collectives``);
    ``nvls_refined``: (p+1)/p (NCCL's NVLS also pushes each GPU's reduced share back, per
    the maintainer in nccl-tests PR 239).
    """
    algorithm = validate.choice("algorithm", algorithm, ALGORITHMS)
    p = validate.integer("gpus", gpus, low=2, high=100_000)
    if algorithm == "nvls_refined":
        return (p + 1) / p
    return collectives.terms("all_reduce", "in_network" if algorithm == "nvls" else "ring", p)[1]


def bytes_per_gpu(nbytes, gpus, algorithm="ring") -> float:
    """Bytes one GPU sends per direction to all-reduce an ``nbytes`` buffer (see ``wire_factor``)."""
    nbytes = validate.positive("nbytes", nbytes)
    return wire_factor(algorithm, gpus) * nbytes


def busbw_over_wire(gpus, algorithm="nvls") -> float:
    """nccl-tests' busbw divided by the bandwidth each GPU really pushes through its links.

    busbw = algbw x 2(p-1)/p always; the wire carries algbw x ``wire_factor``. 1 for a ring;
    above 1 with in-switch reduction: that is how busbw can exceed the line rate.
    """
    p = validate.integer("gpus", gpus, low=2, high=100_000)
    return costmodel.busbw_factor("all_reduce", p) / wire_factor(algorithm, p)


def all_reduce_times(nbytes, gpus, per_gpu_bw, latency=None) -> dict:
    """All-reduce time (s) of ``nbytes`` on a switch and on a full mesh, from ``costmodel.collective_time``.

    per_gpu_bw: bytes/s per direction per GPU; latency: seconds per step (default: NVLink hop).
    Keys: ``switch_ring``, ``switch_nvls`` (ideal in-switch reduction), ``mesh_one_ring`` (one ring
    on direct wires of B/(p-1)), ``mesh_all_wires`` (p-1 rings on disjoint wires, each carrying
    1/(p-1) of the buffer).
    """
    p = validate.integer("gpus", gpus, low=2, high=100_000)
    n = validate.positive("nbytes", nbytes)
    bw = validate.positive("per_gpu_bw", per_gpu_bw)
    lat = costmodel.hop_latency("nvlink") if latency is None else validate.non_negative("latency", latency)
    wire = mesh_pair_bandwidth(p, bw)
    t = costmodel.collective_time
    return {"switch_ring": t("all_reduce", n, p, bw, lat, "ring"),
            "switch_nvls": t("all_reduce", n, p, bw, lat, "in_network"),
            "mesh_one_ring": t("all_reduce", n, p, wire, lat, "ring"),
            "mesh_all_wires": t("all_reduce", n / (p - 1), p, wire, lat, "ring")}


@lru_cache(maxsize=64)
def _pcie_tree(gpus, generation):
    topo = topology.pcie_tree(True, gpus, generation)
    ring = topo.ring_bottleneck()
    return {"bisection": topo.bisection_bandwidth(), "ring_bw": ring["bandwidth"],
            "pair": topo.pair_bandwidth(topo.gpus[0], topo.gpus[-1]),
            "link": hardware.pcie_link(generation, 16).per_direction}


def pcie_tree_numbers(gpus, generation=4) -> dict:
    """A two-socket PCIe tree with PCIe switches (``topology.pcie_tree``): bytes/s per direction.

    ``bisection``, ``ring_bw`` (the slowest link of one ring), ``pair`` (first to last GPU, across
    the sockets) and ``link`` (one x16 slot). gpus: even, 2-16.
    """
    gpus = _even_gpus(gpus)
    if gpus > PCIE_TREE_MAX_GPUS:
        raise ValueError(f"gpus must be at most {PCIE_TREE_MAX_GPUS} for a PCIe tree in one server, got {gpus}")
    generation = validate.integer("generation", generation, low=1, high=len(hardware.catalog()["pcie"]))
    return dict(_pcie_tree(gpus, generation))


def fabric_comparison(gpus=8, per_gpu_bw=450e9, nbytes=1e9, pcie_generation=4) -> list[dict]:
    """Mesh, NVSwitch and PCIe tree with the same GPU count: pair wire, bisection, all-reduce time.

    Bandwidths bytes/s per direction, times in seconds. ``buildable`` says whether such a
    machine can exist (a mesh needs gpus - 1 links per GPU; a PCIe tree here holds 16 GPUs).
    """
    p = _even_gpus(gpus)
    bw = validate.positive("per_gpu_bw", per_gpu_bw)
    n = validate.positive("nbytes", nbytes)
    times = all_reduce_times(n, p, bw)
    max_links = max(row["links_per_gpu"] for row in hardware.nvlink_generations())
    rows = [
        {"fabric": "NVSwitch (non-blocking)", "buildable": True, "pair": bw, "bisection": switch_bisection(p, bw),
         "all_reduce_s": times["switch_ring"], "all_reduce_nvls_s": times["switch_nvls"]},
        {"fabric": "full mesh (direct wires)", "buildable": p - 1 <= max_links, "pair": mesh_pair_bandwidth(p, bw),
         "bisection": mesh_bisection(p, bw), "all_reduce_s": times["mesh_one_ring"],
         "all_reduce_nvls_s": None, "all_reduce_all_wires_s": times["mesh_all_wires"]},
    ]
    if p <= PCIE_TREE_MAX_GPUS:
        tree = pcie_tree_numbers(p, pcie_generation)
        t = costmodel.collective_time("all_reduce", n, p, tree["ring_bw"], costmodel.hop_latency("pcie"), "ring")
        rows.append({"fabric": f"PCIe Gen{pcie_generation} tree (2 sockets)", "buildable": True, "pair": tree["pair"],
                     "bisection": tree["bisection"], "all_reduce_s": t, "all_reduce_nvls_s": None})
    return rows


def show_fabric_comparison(gpus=8, per_gpu_bw=450e9, nbytes=1e9, pcie_generation=4):
    """Table of ``fabric_comparison``: GB/s per direction and all-reduce times."""
    views.show_fabric_comparison(fabric_comparison(gpus, per_gpu_bw, nbytes, pcie_generation), nbytes)


@dataclass(frozen=True)
class FabricSeries:
    """The fabric explorer's model result over ``counts`` GPUs: times in s, bisections in bytes/s per direction."""

    gpus: int
    link_gb_s: float
    nbytes: float
    pcie_generation: int
    counts: np.ndarray
    buildable: int                # how many of ``counts`` a full mesh can reach (p - 1 <= most NVLinks per GPU)
    max_links: int
    switch_ring: np.ndarray
    switch_nvls: np.ndarray
    mesh_one_ring: np.ndarray
    switch_bis: np.ndarray
    mesh_bis: np.ndarray
    tree_gpus: np.ndarray
    tree_time: np.ndarray
    tree_bis: np.ndarray


@lru_cache(maxsize=256)
def fabric_series(gpus, link_gb_s, size_gb, pcie_generation) -> FabricSeries:
    """Mesh, switch and PCIe tree over ``GPU_COUNTS`` for the explorer (cached: one model run per setting)."""
    counts = np.array(GPU_COUNTS)
    bw, n = link_gb_s * units.GB, size_gb * units.GB
    times = [all_reduce_times(n, int(p), bw) for p in counts]
    col = lambda key: np.array([t[key] for t in times])  # noqa: E731
    tree = counts[counts <= PCIE_TREE_MAX_GPUS]
    trees = [pcie_tree_numbers(int(p), pcie_generation) for p in tree]
    max_links = max(row["links_per_gpu"] for row in hardware.nvlink_generations())
    return FabricSeries(
        gpus=gpus, link_gb_s=link_gb_s, nbytes=n, pcie_generation=pcie_generation, counts=counts,
        buildable=int(np.sum(counts - 1 <= max_links)), max_links=max_links, switch_ring=col("switch_ring"),
        switch_nvls=col("switch_nvls"), mesh_one_ring=col("mesh_one_ring"),
        switch_bis=np.array([switch_bisection(int(p), bw) for p in counts]),
        mesh_bis=np.array([mesh_bisection(int(p), bw) for p in counts]), tree_gpus=tree,
        tree_time=np.array([costmodel.collective_time("all_reduce", n, int(p), t["ring_bw"],
                                                      costmodel.hop_latency("pcie"), "ring") for p, t in zip(tree, trees)]),
        tree_bis=np.array([t["bisection"] for t in trees]))


def _draw(axes, gpus, link_gb_s, size_gb, pcie_generation):
    update = views.draw_fabric(axes, fabric_series(gpus, link_gb_s, size_gb, pcie_generation))
    return lambda **values: update(fabric_series(**values))


def _readout(gpus, link_gb_s, size_gb, pcie_generation):
    bw, n = link_gb_s * units.GB, size_gb * units.GB
    parts = []
    for r in fabric_comparison(gpus, bw, n, pcie_generation):
        text = (f"<b>{escape(r['fabric'])}</b>{'' if r['buildable'] else ' (not buildable)'}: one pair "
                f"{r['pair'] / units.GB:.3g} GB/s, bisection {r['bisection'] / units.GB:,.0f} GB/s, "
                f"ring all-reduce {units.format_time(r['all_reduce_s'])}")
        if r.get("all_reduce_nvls_s"):
            text += f", with in-switch reduction {units.format_time(r['all_reduce_nvls_s'])}"
        if r.get("all_reduce_all_wires_s"):
            text += f", spread over all {gpus - 1} wires {units.format_time(r['all_reduce_all_wires_s'])}"
        parts.append(text)
    if gpus > PCIE_TREE_MAX_GPUS:
        parts.append(f"PCIe tree: more than {PCIE_TREE_MAX_GPUS} GPUs do not fit one two-socket server")
    return "; ".join(parts) + " (all GB/s per direction)."


def fabric_explorer(gpus=8, link_gb_s=450.0, size_gb=1.0, pcie_generation=4):
    """Sliders: GPU count, NVLink GB/s per GPU per direction, all-reduce size (GB), PCIe generation of the tree.

    Shows: an NVSwitch gives every pair of GPUs a GPU's full NVLink bandwidth at any GPU count,
    where a full mesh splits that bandwidth among more peers and a PCIe tree shares its host links.
    """
    import ipywidgets as w
    if gpus not in GPU_COUNTS:
        raise ValueError(f"gpus must be one of {GPU_COUNTS}, got {gpus!r}")
    validate.number("link_gb_s", link_gb_s, low=10, high=2000)
    validate.number("size_gb", size_gb, low=0.001, high=100)
    if pcie_generation not in PCIE_GENERATIONS:
        raise ValueError(f"pcie_generation must be one of {PCIE_GENERATIONS}, got {pcie_generation!r}")
    controls = {
        "gpus": gpu_count_slider(gpus, options=GPU_COUNTS),
        "link_gb_s": link_speed_slider(link_gb_s, low=10, high=2000, description="NVLink GB/s per GPU per direction"),
        "size_gb": w.FloatLogSlider(value=size_gb, base=10, min=-3, max=2, step=0.05, description="all-reduce GB",
                                    readout_format=".3g"),
        "pcie_generation": w.Dropdown(options=[(f"PCIe Gen{g} x16", g) for g in PCIE_GENERATIONS], value=pcie_generation,
                                      description="PCIe tree"),
    }
    return explorer(_draw, controls, readout=_readout, title="Mesh vs NVSwitch vs PCIe tree", figsize=(11, 4.4),
                    axes=2)
