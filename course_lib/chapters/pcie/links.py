"""Chapter 01, PCIe links: generations, encoding, lanes, a link's rate, CPU lane budgets (data/published_pcie.json).

Link rates come from :mod:`course_lib.hardware` (transfer rate, encoding and lane count), bytes/s per
direction unless a name says ``bidirectional``.
"""
from __future__ import annotations

from functools import lru_cache

from ... import datafiles, hardware, tables, units, validate
from ...views import pcie as views


LANES = hardware.PCIE_LANE_COUNTS


@lru_cache(maxsize=1)
def published() -> dict:
    """The raw ``data/published_pcie.json``: measurements, CPU-GPU links, CPU lanes, sources."""
    return datafiles.load("published_pcie.json")


def generations() -> tuple[int, ...]:
    """The PCIe generations in the catalog (1 ... 7)."""
    return tuple(row["generation"] for row in hardware.catalog()["pcie"])


def encoding_efficiency(generation) -> float:
    """Fraction of the bits on the wire that carry data: 8/10 (Gen1-2), 128/130 (Gen3-5), 236/256 (FLIT, Gen6-7: TLP bytes only)."""
    generation = validate.integer("generation", generation, low=1, high=len(generations()))
    row = hardware.catalog()["pcie"][generation - 1]
    return row["payload_bits"] / row["line_bits"]


def link_steps(generation, lanes=16) -> dict:
    """The derivation of a link's bandwidth, step by step.

    transfer rate (GT/s, one bit per transfer per lane) x lanes = raw Gb/s on the wire;
    x encoding efficiency = data Gb/s; / 8 = GB/s per direction; x 2 = bidirectional total.
    """
    link = hardware.pcie_link(generation, lanes)
    row = hardware.catalog()["pcie"][int(generation) - 1]
    raw_gbit = row["transfer_rate_gt_s"] * link_lanes(link)
    data_gbit = raw_gbit * encoding_efficiency(generation)
    return {"name": link.name, "generation": row["generation"], "lanes": link_lanes(link),
            "gt_s_per_lane": row["transfer_rate_gt_s"], "encoding": row["encoding"],
            "efficiency": encoding_efficiency(generation),
            "raw_gbit_s": raw_gbit, "data_gbit_s": data_gbit,
            "gb_s_per_direction": link.per_direction / units.GB,
            "gb_s_bidirectional": link.bidirectional / units.GB, "source": datafiles.source(link.source)["url"]}


def link_lanes(link: hardware.Link) -> int:
    """Lane count of a PCIe link from the catalog (``pcie-gen4-x16`` -> 16)."""
    if not isinstance(link, hardware.Link) or link.family != "pcie":
        raise ValueError(f"link must be a PCIe hardware.Link such as hardware.pcie_link(4, 16), got {link!r}")
    return int(link.id.rsplit("-x", 1)[1])


def describe_link(generation, lanes=16) -> str:
    """One line: 'Gen4 x16: 16 GT/s x 16 lanes = 256 Gb/s raw; x 128/130 = 252 Gb/s data; / 8 = 31.5 GB/s per direction'."""
    s = link_steps(generation, lanes)
    row = hardware.catalog()["pcie"][s["generation"] - 1]
    eff = s["encoding"].split(" ")[0] if s["generation"] < 6 else f"{row['payload_bits']}/{row['line_bits']} (FLIT)"
    lanes_word = "lane" if s["lanes"] == 1 else "lanes"
    return (f"PCIe Gen{s['generation']} x{s['lanes']}: {s['gt_s_per_lane']:g} GT/s x {s['lanes']} {lanes_word} = "
            f"{s['raw_gbit_s']:.4g} Gb/s on the wire; x {eff} = {s['data_gbit_s']:.4g} Gb/s of data; "
            f"/ 8 = {s['gb_s_per_direction']:.4g} GB/s per direction ({s['gb_s_bidirectional']:.4g} GB/s bidirectional)")


def generation_table(lanes=16) -> list[dict]:
    """One row per generation: year, GT/s, encoding, efficiency, one lane and ``lanes`` lanes (GB/s per direction), bidirectional."""
    lanes = validate.integer("lanes", lanes, low=1, high=16)
    rows = []
    for row in hardware.catalog()["pcie"]:
        g = row["generation"]
        link = hardware.pcie_link(g, lanes)
        rows.append({"generation": g, "year": row["year"], "gt_s_per_lane": row["transfer_rate_gt_s"],
                     "encoding": row["encoding"].split(" (")[0], "efficiency": round(encoding_efficiency(g), 4),
                     "x1_gb_s_per_direction": round(hardware.pcie_lane_bandwidth(g) / units.GB, 3),
                     f"x{lanes}_gb_s_per_direction": round(link.per_direction / units.GB, 2),
                     f"x{lanes}_gb_s_bidirectional": round(link.bidirectional / units.GB, 2)})
    return rows


def print_table(rows, columns=None) -> None:
    """Print a list of dicts as an aligned text table with human headers (:func:`course_lib.tables.text_table`)."""
    print(tables.text_table(rows, columns))


def source_material_claims() -> dict:
    """The figures popular articles label 'bidirectional' (GB/s), keyed by generation."""
    claims = published()["source_material_claims"]
    return {int(k): float(v) for k, v in claims["gb_s_called_bidirectional"].items()}


def lane_budget(gpus, nics=0, nvme=0, gpu_lanes=16, nic_lanes=16, nvme_lanes=4) -> int:
    """PCIe lanes a server needs: gpus x gpu_lanes + nics x nic_lanes + nvme drives x nvme_lanes."""
    counts = [validate.integer(n, v, low=0, high=1024) for n, v in (("gpus", gpus), ("nics", nics), ("nvme", nvme))]
    widths = []
    for name, value in (("gpu_lanes", gpu_lanes), ("nic_lanes", nic_lanes), ("nvme_lanes", nvme_lanes)):
        value = validate.integer(name, value, low=1, high=16)
        if value not in LANES:
            raise ValueError(f"{name} must be one of {LANES}, got {value}")
        widths.append(value)
    return sum(c * w for c, w in zip(counts, widths))


def cpu_lanes(config="epyc-rome-2p") -> dict:
    """A CPU configuration from the data file with ``usable_lanes`` = sockets x (lanes per socket - socket link)."""
    rows = {r["id"]: r for r in published()["cpu_lanes"]}
    row = dict(rows[validate.choice("config", config, rows)])
    row["usable_lanes"] = row["sockets"] * (row["lanes_per_socket"] - row["lanes_for_socket_link"])
    return row


def gpus_on_cpu_lanes(usable_lanes, lanes_per_gpu=16) -> int:
    """How many GPUs of ``lanes_per_gpu`` lanes fit on the CPU's lanes alone (nothing else attached)."""
    usable_lanes = validate.integer("usable_lanes", usable_lanes, low=0, high=4096)
    lanes_per_gpu = validate.integer("lanes_per_gpu", lanes_per_gpu, low=1, high=16)
    return usable_lanes // lanes_per_gpu


def plot_generations(ax=None, lanes=16):
    """Bars: each generation's x16 bandwidth per direction and bidirectional; red marks where the source text says 'bidirectional'."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    return views.draw_generations(ax, generation_table(lanes), source_material_claims(), lanes)


def plot_lanes(ax=None):
    """Per-direction bandwidth for every generation x lane count (log scale)."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    by_generation = {g: [hardware.pcie_link(g, n).per_direction / units.GB for n in LANES] for g in generations()}
    return views.draw_lanes(ax, LANES, by_generation)
