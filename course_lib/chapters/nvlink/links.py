"""Chapter 02, NVLink links: generations (links per GPU x per-link rate), vendor quotes, bridges against PCIe.

Bandwidths in bytes/s per direction unless a name says bidirectional.
"""
from __future__ import annotations

from ... import costmodel, datafiles, hardware, units, validate
from ...views import nvlink as views


# Vendor figures that public material quotes, as catalog links (bytes/s per direction).
VENDOR_QUOTES = (
    ("A100 (NVLink 3)", lambda: hardware.nvlink(3)),
    ("H100 (NVLink 4)", lambda: hardware.nvlink(4)),
    ("H200 (DGX H200)", lambda: hardware.system("dgx-h200").gpu_link),
    ("GB200 / B200 (NVLink 5)", lambda: hardware.nvlink(5)),
)


def generations() -> list[dict]:
    """NVLink 1-5 from the catalog: links per GPU x per-link rate, GB/s per direction and bidirectional."""
    rows = []
    for row in hardware.nvlink_generations():
        link = hardware.nvlink(row["generation"])
        rows.append({"generation": row["generation"], "gpu": row["gpu"], "year": row["year"],
                     "links": row["links_per_gpu"], "link_gb_s_per_direction": row["link_gb_s_per_direction"],
                     "gb_s_per_direction": link.per_direction / units.GB,
                     "gb_s_bidirectional": link.bidirectional / units.GB,
                     "source": datafiles.source(row["source"])["url"]})
    return rows


def vendor_quotes() -> list[dict]:
    """The bidirectional totals vendors quote next to the per-direction half a collective can use (GB/s)."""
    rows = []
    for name, make in VENDOR_QUOTES:
        link = make()
        rows.append({"gpu": name, "gb_s_bidirectional": link.bidirectional / units.GB,
                     "gb_s_per_direction": link.per_direction / units.GB, "detail": link.detail,
                     "source": datafiles.source(link.source)["url"]})
    return rows


def gpu_bandwidth(links, link_bw) -> float:
    """One GPU's NVLink: ``links`` (1-72) x ``link_bw`` (bytes/s per direction per link), bytes/s per direction."""
    links = validate.integer("links", links, low=1, high=72)
    return links * validate.positive("link_bw", link_bw)


BRIDGE_SYSTEMS = ("workstation-3090-bridge", "consumer-4090-pcie")


def bridge_vs_pcie(nbytes=1e9) -> list[dict]:
    """Two consumer GPUs: RTX 3090 pair with an NVLink bridge vs RTX 4090 pair on PCIe (no P2P).

    GPU-to-GPU bandwidth in GB/s per direction and bidirectional, and the time of a 2-GPU
    all-reduce of ``nbytes`` from ``costmodel.predict`` at spec and at achievable bandwidth.
    """
    nbytes = validate.positive("nbytes", nbytes)
    rows = []
    for sid in BRIDGE_SYSTEMS:
        sys_ = hardware.system(sid)
        spec = costmodel.predict("all_reduce", nbytes, sid, achievable=False)
        real = costmodel.predict("all_reduce", nbytes, sid, achievable=True)
        fab = costmodel.fabric(sid, achievable=False)
        rows.append({"system": sys_.name, "id": sid, "gpu_link": sys_.gpu_link.name,
                     "nvlink": sys_.interconnect != "pcie", "p2p": sys_.p2p,
                     "link_gb_s_per_direction": sys_.gpu_link.per_direction / units.GB,
                     "link_gb_s_bidirectional": sys_.gpu_link.bidirectional / units.GB,
                     "gpu_to_gpu_gb_s_per_direction": fab.intra_bw / units.GB,
                     "spec_s": float(spec.time_s[0]), "achievable_s": float(real.time_s[0]),
                     "source": datafiles.source(sys_.source)["url"]})
    return rows


def nvlink_vs_pcie(system="dgx-h100", nbytes=1e9) -> dict:
    """In one NVLink system: what NVLink carries (GPU to GPU) and what PCIe still carries (host, NICs).

    Bandwidths in bytes/s per direction; times in seconds to move ``nbytes`` one way.
    """
    if not isinstance(system, str):
        raise ValueError(f"system must be a catalog id such as 'dgx-h100', got {system!r}")
    sys_ = hardware.resolve_system(system)
    if sys_.gpu_link.family != "nvlink":
        raise ValueError(f"system must have NVLink, got {system!r} ({sys_.interconnect})")
    nbytes = validate.positive("nbytes", nbytes)
    return {"system": sys_.name, "nvlink": sys_.gpu_link, "pcie": sys_.pcie,
            "ratio": sys_.gpu_link.per_direction / sys_.pcie.per_direction,
            "gpu_to_gpu_s": nbytes / sys_.gpu_link.per_direction,
            "host_to_gpu_s": nbytes / sys_.pcie.per_direction}


def show_generations():
    """Table: NVLink 1-5, links x per-link rate = per-GPU bandwidth, per direction and bidirectional."""
    views.show_generations(generations())


def show_vendor_quotes():
    """Table: the vendor's bidirectional figure and the per-direction half."""
    views.show_vendor_quotes(vendor_quotes())


def show_bridge_vs_pcie(nbytes=1e9):
    """Table: 3090 bridge vs 4090 PCIe, bandwidth and 2-GPU all-reduce time."""
    views.show_bridge_vs_pcie(bridge_vs_pcie(nbytes), nbytes)
