"""Sourced efficiencies and latencies: ``data/efficiency.json`` and ``data/fabrics.json``, read once."""
from __future__ import annotations

from functools import lru_cache

from .. import datafiles, hardware, validate


@lru_cache(maxsize=1)
def efficiency_data() -> dict:
    """The parsed ``data/efficiency.json``: efficiencies, latencies and their sources."""
    return datafiles.load("efficiency.json")


def fabrics_data() -> dict:
    """The parsed ``data/fabrics.json``: scale-out fabric kinds with efficiency, latency and sources
    (``hardware.fabrics_data``, which reads it once for both modules)."""
    return hardware.fabrics_data()


def fabric_kind_ids() -> tuple:
    """Ids of the scale-out fabric kinds: infiniband, roce, efa, slingshot, ethernet_tcp, tcpxo."""
    return tuple(fabrics_data()["fabrics"])


def fabric_kind(fabric_id: str) -> dict:
    """One fabric kind's row of ``fabrics.json`` (efficiency, hop_latency_us, derivations, sources)."""
    kinds = fabrics_data()["fabrics"]
    return dict(kinds[validate.choice("fabric", fabric_id, kinds)])


def system_fabric_kind(system: str | hardware.System) -> str:
    """The fabric kind of a system: its ``fabric`` field, else the default for its NIC family
    (``hardware.System.nic_fabric``)."""
    return hardware.resolve_system(system).nic_fabric


def _technology_aliases() -> dict:
    """Network technologies of the older API: ``infiniband`` and ``ethernet`` (its default kind, RoCE)."""
    return {"infiniband": "infiniband", "ethernet": hardware.default_fabric("ethernet")}


def efficiency(technology: str) -> float:
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


def hop_latency(technology: str) -> float:
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


def nvls_efficiency(nvlink_generation: int | str) -> float:
    """NVLS algbw / per-direction NVLink rate for an NVLink generation (4: Hopper, 5: Blackwell), <= 1."""
    table = efficiency_data()["technologies"]["nvls"]["by_nvlink_generation"]
    if str(nvlink_generation) not in table:  # a new NVLink generation: the table to extend is named
        raise ValueError(f"nvlink_generation {validate.describe(str(nvlink_generation))} has no row in efficiency.json "
                         f"technologies.nvls.by_nvlink_generation (NVLS efficiency per NVLink generation); "
                         f"known generations: {', '.join(table)}")
    key = str(nvlink_generation)
    return min(1.0, float(table[key]["efficiency"]))
