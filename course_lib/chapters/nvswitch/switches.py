"""Chapter 03, switches: NVSwitch generations, ports per GPU and chips per domain, the catalog's layouts drawn.
"""
from __future__ import annotations

import math
from functools import lru_cache

from ... import datafiles, hardware, topology, validate
from ...views import nvswitch as views
from .fabrics import aggregate_bidirectional




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


def generations() -> list[dict]:
    """One row per NVSwitch generation: ports per chip, chip bandwidth, the system that used it, link spread.

    Bandwidths in bytes/s per direction (``*_bidirectional`` adds both directions).
    """
    rows = []
    for gen in hardware.nvswitch_generations():
        port = hardware.nvlink(gen["nvlink_generation"], 1).per_direction
        lay = layout(hardware.nvswitch_layout_id(gen["generation"]))
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
    ports = hardware.nvswitch_generation(lay["nvswitch_generation"])["ports"]
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


def chip_topology(system_id="dgx-h100") -> topology.Topology:
    """An NVSwitch system drawn chip by chip: every GPU joined to every switch chip by its share of links."""
    lay = layout(system_id)
    if lay["chips_reached_per_gpu"] != lay["chips"]:
        raise ValueError(f"system_id must be a system whose GPUs all reach every chip (one baseboard); "
                         f"{system_id!r} spans two baseboards")
    gen = hardware.nvswitch_generation(lay["nvswitch_generation"])
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


def show_generations():
    """Table of NVSwitch generations: ports, chip bandwidth per direction and both, systems, link spread."""
    views.show_generations(generations())


def show_port_budgets(system_ids=("dgx-2", "dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72")):
    """Table: where each system's switch ports go."""
    views.show_port_budgets([port_budget(s) for s in system_ids])


def show_real_systems(names=("pcie-tree-switches", "dgx-1-hybrid-cube-mesh", "dgx-a100", "dgx-h100")):
    """``topology.summary`` of real 8-GPU machines: per-pair range, bisection, ring bottleneck (GB/s per direction)."""
    views.show_real_systems([topology.summary(topology.named(n)) for n in names])


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
