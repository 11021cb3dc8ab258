"""Chapter 05, links: InfiniBand generations per 4x port and what a node injects into the network against its NVLink.

Bandwidths in bytes/s per direction unless a name says bits or bidirectional.
"""
from __future__ import annotations

from ... import datafiles, hardware, units
from ...views import infiniband as views
from ...widgets import show_html


IB_GENERATIONS = ("ib-edr", "ib-hdr", "ib-ndr", "ib-xdr")


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


def show_generations():
    """Table of InfiniBand generations per 4x port, bits and bytes, per direction and both."""
    show_html(views.generations_table(ib_generations()))
