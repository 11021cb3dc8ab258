"""Chapter 03: NVSwitch: non-blocking switching, bisection, switch chips, in-switch reduction.

Every bandwidth is bytes/s **per direction** unless a name says ``bidirectional``.
Collective times come from :mod:`course_lib.costmodel`, graphs, bisection and drawings
from :mod:`course_lib.topology`, chip counts and link rates from :mod:`course_lib.hardware`.
This module adds what only this chapter needs: how each system spreads a GPU's links over
its switch chips (``data/nvswitch.json``), the arithmetic of a full mesh against a switch,
the bytes each GPU moves with and without in-switch reduction (NVLS), the published
NVLS measurements, and the explorer that puts mesh, switch and PCIe tree side by side.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from html import escape

import numpy as np
from .. import collectives, costmodel, datafiles, evidence, hardware, style, topology, units, validate
from ..views import nvswitch as views
from ..widgets import explorer, gpu_count_slider, link_speed_slider

GPU_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256)
PCIE_TREE_MAX_GPUS = 16  # two sockets with PCIe switches: what topology.pcie_tree builds
PCIE_GENERATIONS = (3, 4, 5, 6)
LAYOUT_FOR_GENERATION = {1: "dgx-2", 2: "dgx-a100", 3: "dgx-h100", 4: "gb200-nvl72"}
ALGORITHMS = ("ring", "nvls", "nvls_refined")


# ---------------------------------------------------------------- data

@lru_cache(maxsize=1)
def nvswitch_data() -> dict:
    """The parsed ``data/nvswitch.json``: switch-chip layouts and NVLS measurements with sources."""
    return datafiles.load("nvswitch.json")


def layout_ids() -> list[str]:
    return list(nvswitch_data()["layouts"])


def layout(system_id) -> dict:
    """How one NVSwitch system spreads each GPU's links over its chips (``layout_ids()`` lists them)."""
    system_id = validate.choice("system_id", system_id, layout_ids())
    return dict(nvswitch_data()["layouts"][system_id], id=system_id)


def _switch_generation(generation) -> dict:
    rows = hardware.nvswitch_generations()
    generation = validate.integer("generation", generation, low=1, high=len(rows))
    return rows[generation - 1]


# ---------------------------------------------------------------- generations and ports

def generations() -> list[dict]:
    """One row per NVSwitch generation: ports per chip, chip bandwidth, the system that used it, link spread.

    Bandwidths in bytes/s per direction (``*_bidirectional`` adds both directions).
    """
    rows = []
    for gen in hardware.nvswitch_generations():
        port = hardware.nvlink(gen["nvlink_generation"], 1).per_direction
        lay = layout(LAYOUT_FOR_GENERATION[gen["generation"]])
        spread = lay["links_per_gpu_per_chip"]
        rows.append({
            "generation": gen["generation"], "year": gen["year"], "nvlink_generation": gen["nvlink_generation"],
            "ports_per_chip": gen["ports"], "port_per_direction": port,
            "chip_per_direction": gen["ports"] * port, "chip_bidirectional": 2 * gen["ports"] * port,
            "system": gen["system"], "chips_in_system": gen["chips_in_system"],
            "gpus_in_system": lay["gpus"], "gpus_in_domain": gen["gpus_in_domain"],
            "links_per_gpu": lay["links_per_gpu"], "links_per_gpu_per_chip": _spread_text(spread),
            "in_network_reduction": bool(gen["in_network_reduction"]),
            "source": datafiles.source(gen["source"])["url"],
        })
    return rows


def _spread_text(spread) -> str:
    if len(set(spread)) == 1:
        return f"{spread[0]} to each of {len(spread)} chips"
    return " + ".join(str(s) for s in spread) + f" over {len(spread)} chips"


def ports_needed(gpus, links_per_gpu) -> int:
    """Switch ports needed so that every GPU link ends on a switch port: gpus x links_per_gpu."""
    gpus = validate.integer("gpus", gpus, low=1, high=100_000)
    links_per_gpu = validate.integer("links_per_gpu", links_per_gpu, low=1, high=64)
    return gpus * links_per_gpu


def min_switch_chips(gpus, links_per_gpu, ports_per_chip) -> int:
    """Fewest switch chips whose ports can take every GPU link (chips come whole: round up)."""
    ports_per_chip = validate.integer("ports_per_chip", ports_per_chip, low=1, high=1024)
    return math.ceil(ports_needed(gpus, links_per_gpu) / ports_per_chip)


def spread_links(links_per_gpu, chips) -> list[int]:
    """Spread one GPU's links as evenly as possible over ``chips`` switch chips (18 over 4 -> 5, 5, 4, 4)."""
    links_per_gpu = validate.integer("links_per_gpu", links_per_gpu, low=1, high=64)
    chips = validate.integer("chips", chips, low=1, high=links_per_gpu)
    q, r = divmod(links_per_gpu, chips)
    return [q + 1] * r + [q] * (chips - r)


def _per_chip(value, chips):
    return list(value) if isinstance(value, list) else [value] * chips


def port_budget(system_id) -> dict:
    """Where the ports of a system's switch chips go: to GPUs, to another baseboard, out of the box, unused."""
    lay = layout(system_id)
    ports = _switch_generation(lay["nvswitch_generation"])["ports"]
    chips = lay["chips"]
    gpu = sum(_per_chip(lay["gpu_ports_per_chip"], chips))
    trunk = sum(_per_chip(lay["trunk_ports_per_chip"], chips))
    external = sum(_per_chip(lay["external_ports_per_chip"], chips))
    total = chips * ports
    return {"system": lay["name"], "chips": chips, "ports_per_chip": ports, "total_ports": total,
            "gpu_ports": gpu, "trunk_ports": trunk, "external_ports": external,
            "unused_ports": total - gpu - trunk - external,
            "gpu_links": lay["gpus"] * lay["links_per_gpu"], "derived": lay["derived"],
            "source": datafiles.source(lay["source"])["url"]}


# ---------------------------------------------------------------- mesh vs switch arithmetic

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


def chip_topology(system_id="dgx-h100") -> topology.Topology:
    """An NVSwitch system drawn chip by chip: every GPU joined to every switch chip by its share of links."""
    lay = layout(system_id)
    if lay["chips_reached_per_gpu"] != lay["chips"]:
        raise ValueError(f"system_id must be a system whose GPUs all reach every chip (one baseboard); "
                         f"{system_id!r} spans two baseboards")
    gen = _switch_generation(lay["nvswitch_generation"])
    link = hardware.nvlink(gen["nvlink_generation"], 1).per_direction
    topo = topology.Topology(name=f"{lay['name']}: {lay['chips']} NVSwitch {lay['nvswitch_generation']} chips")
    g, c = lay["gpus"], lay["chips"]
    for k in range(c):
        topo.add(f"sw{k}", "nvswitch", ((k - (c - 1) / 2) * 5.0 / max(c - 1, 1), 2.0))
    for i in range(g):
        topo.add(f"gpu{i}", "gpu", ((i - (g - 1) / 2) * 8.0 / max(g - 1, 1), 0.0))
        for k, count in enumerate(lay["links_per_gpu_per_chip"]):
            topo.connect(f"gpu{i}", f"sw{k}", count * link, f"{count}x NVLink {gen['nvlink_generation']}")
    return topo


def domain_summary(system_id="dgx-h100") -> dict:
    """Per-GPU, aggregate and bisection bandwidth of an NVSwitch system in the catalog, bytes/s.

    Bisection comes from :func:`course_lib.topology.nvswitch_system`.
    """
    sys_ = hardware.resolve_system(system_id, name="system_id")
    if sys_.interconnect != "nvswitch":
        raise ValueError(f"system_id must be an NVSwitch system, got {system_id!r} ({sys_.interconnect})")
    topo = topology.nvswitch_system(sys_.id)
    g = sys_.gpus_per_node
    return {"system": sys_.name, "gpus": g, "per_gpu": sys_.gpu_link.per_direction,
            "per_gpu_bidirectional": sys_.gpu_link.bidirectional,
            "aggregate_bidirectional": aggregate_bidirectional(g, sys_.gpu_link.per_direction),
            "bisection": topo.bisection_bandwidth(), "in_network_reduction": sys_.in_network_reduction,
            "source": datafiles.source(sys_.source)["url"]}


# ---------------------------------------------------------------- all-reduce: ring vs in-switch reduction

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


# ---------------------------------------------------------------- PCIe tree (from topology)

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


# ---------------------------------------------------------------- published measurements

def nvls_measurements() -> list[dict]:
    """Published all-reduce busbw with and without NVLS, next to the per-direction line rate (bytes/s)."""
    rows = []
    for m in nvswitch_data()["measurements"]:
        if m["system"] is not None:
            sys_ = hardware.system(m["system"])
            line, name = sys_.gpu_link.per_direction, sys_.name
        else:
            line, name = m["line_rate_gb_s"] * units.GB, m["system_name"]
        c = evidence.compare(m["id"], line, evidence.measurement(m["busbw_gb_s"] * units.GB, "B/s busbw", m["source"]))
        busbw = c.measured.value
        algbw = m["algbw_gb_s"] * units.GB if m.get("algbw_gb_s") else busbw / costmodel.busbw_factor("all_reduce", m["gpus"])
        rows.append({"id": m["id"], "system": name, "gpus": m["gpus"], "algorithm": m["algorithm"],
                     "busbw": busbw, "algbw": algbw, "line_rate": line, "busbw_over_line": c.measured_over_model,
                     "who": m["who"], "source": c.measured.url})
    return rows


def nvls_by_gpu_count() -> list[dict]:
    """nccl issue 1455 (8x H100, 2-4 GB) against the course model, per GPU count; busbw in bytes/s.

    Model: ``costmodel.predict`` with ``algorithm`` ring and nvls, achievable efficiencies.
    """
    data = nvswitch_data()["nvls_by_gpu_count"]
    n = data["nbytes_high"]
    rows = []
    for ring, nvls in zip(data["ring"], data["nvls"]):
        g = ring["gpus"]
        model_ring = float(costmodel.predict("all_reduce", n, data["system"], gpus_per_node=g, algorithm="ring").busbw[0])
        model_nvls = float(costmodel.predict("all_reduce", n, data["system"], gpus_per_node=g, algorithm="nvls").busbw[0])
        ring_c, nvls_c = (evidence.compare(f"{g} GPUs {name}", model, evidence.measurement(
            m["busbw_low"] * units.GB, "B/s busbw", data["source"], high=m["busbw_high"] * units.GB))
            for name, model, m in (("ring", model_ring, ring), ("nvls", model_nvls, nvls)))
        rows.append({"gpus": g, "measured_ring": ring_c.measured.mid, "measured_nvls": nvls_c.measured.mid,
                     "model_ring": model_ring, "model_nvls": model_nvls, "model_best": max(model_ring, model_nvls),
                     "ratio_ring": ring_c.ratio, "ratio_nvls": nvls_c.ratio})
    return rows


def size_sweep(system_id) -> dict:
    """Published single-node all-reduce sweeps (``costmodel.published()``) for one system, with the model.

    Returns sizes (bytes), measured busbw, and model busbw for ring, nvls (where possible) and auto.
    """
    system_id = validate.choice("system_id", system_id, hardware.system_ids())
    cases = [c for c in costmodel.published()["cases"]
             if c["system"] == system_id and c.get("nodes", 1) == 1 and c["collective"] == "all_reduce"
             and c["id"].startswith("azure") and "gpus_per_node" not in c]  # whole nodes only
    if not cases:
        raise ValueError(f"system_id must have a published single-node sweep; {system_id!r} has none")
    sizes = np.array([c["nbytes"] for c in cases], dtype=float)
    grid = np.logspace(10, 33.01, 120, base=2)
    out = {"system": hardware.system(system_id).name, "sizes": sizes,
           "measured": np.array([c["busbw_gb_s"] for c in cases]) * units.GB,
           "grid": grid, "source": datafiles.source(cases[0]["source"])["url"],
           "line_rate": hardware.system(system_id).gpu_link.per_direction}
    for algorithm in ("ring", "nvls", "auto"):
        try:
            out[algorithm] = costmodel.predict("all_reduce", grid, system_id, algorithm=algorithm).busbw
        except ValueError:
            out[algorithm] = None
    return out


# ---------------------------------------------------------------- tables and figures (drawn by views.nvswitch)

def show_generations():
    """Table of NVSwitch generations: ports, chip bandwidth per direction and both, systems, link spread."""
    views.show_generations(generations())


def show_port_budgets(system_ids=("dgx-2", "dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72")):
    """Table: where each system's switch ports go."""
    views.show_port_budgets([port_budget(s) for s in system_ids])


def show_fabric_comparison(gpus=8, per_gpu_bw=450e9, nbytes=1e9, pcie_generation=4):
    """Table of ``fabric_comparison``: GB/s per direction and all-reduce times."""
    views.show_fabric_comparison(fabric_comparison(gpus, per_gpu_bw, nbytes, pcie_generation), nbytes)


def show_real_systems(names=("pcie-tree-switches", "dgx-1-hybrid-cube-mesh", "dgx-a100", "dgx-h100")):
    """``topology.summary`` of real 8-GPU machines: per-pair range, bisection, ring bottleneck (GB/s per direction)."""
    views.show_real_systems([topology.summary(topology.named(n)) for n in names])


def show_nvls_measurements():
    """Table of published busbw with and without NVLS against the per-direction line rate."""
    views.show_nvls_measurements(nvls_measurements())


def draw_systems(names=("dgx-a100", "dgx-h100", "gb200-nvl72")):
    """Draw several ``topology.named`` systems, two to a row at notebook width; returns the figure."""
    import matplotlib.pyplot as plt
    if isinstance(names, str) or not names:
        raise ValueError("names must be a non-empty list of topology names, e.g. ['dgx-a100', 'dgx-h100']")
    topologies = [topology.named(n) for n in names]
    ncols = min(2, len(names))
    nrows = -(-len(names) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.75 * ncols, 4.4 * nrows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(names):]:
        ax.set_axis_off()
    views.draw_topologies(axes[:len(names)], topologies)
    fig.tight_layout()
    return fig


def draw_chips(system_ids=("dgx-a100", "dgx-h100")):
    """Chip-level drawings (``chip_topology``): each GPU's links spread over the switch chips."""
    import matplotlib.pyplot as plt
    if isinstance(system_ids, str) or not system_ids:
        raise ValueError("system_ids must be a non-empty list such as ['dgx-a100', 'dgx-h100']")
    fig, axes = plt.subplots(1, len(system_ids), figsize=(6.2 * len(system_ids), 4.0))
    titles = [f"{lay['name']}: {lay['chips']} NVSwitch chips (top), {lay['gpus']} GPUs (bottom)\n"
              f"each GPU: {_spread_text(lay['links_per_gpu_per_chip'])} (line width = links)"
              for lay in map(layout, system_ids)]
    views.draw_topologies(axes, [chip_topology(sid) for sid in system_ids], titles, show_bandwidth=False)
    fig.tight_layout()
    return fig


def plot_measurements():
    """Two panels: busbw vs message size (A100 and H200 sweeps) and busbw vs GPU count with NVLS (H100)."""
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(2, 1, figsize=(7.5, 8.0))  # one above the other, at notebook width
    blue, red = style.SERIES_COLOURS[:2]  # one colour per system compared
    sweeps = [("A100", blue, size_sweep("dgx-a100")), ("H200", red, size_sweep("dgx-h200"))]
    views.draw_measurements(left, right, sweeps, nvls_by_gpu_count(), hardware.nvlink(4).per_direction)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- explorer

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
