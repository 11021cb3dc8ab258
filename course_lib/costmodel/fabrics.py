"""What one system offers a collective: per-GPU fabric and NIC bandwidths, hop latencies, channels."""
from __future__ import annotations

from dataclasses import dataclass

from .. import hardware, units, validate
from .efficiencies import (efficiency, efficiency_data, fabric_kind, fabric_kind_ids, hop_latency, launch_latency,
                           no_p2p_staging_factor, nvls_efficiency, system_fabric_kind)


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
    net_algorithms: tuple = ()  # across nodes, the only algorithms the fabric's NCCL setup allows; () = all
    net_protocols: tuple = ()   # across nodes, the only protocols it allows; () = all (fabrics.json "nccl")
    mnnvl: bool = False      # the NVLink domain spans trays (GB200 NVL72): between domains NCCL's default is the ring
    required_protocol: str | None = None  # NCCL_PROTO the fabric's stack sets for every collective (EFA v1: Simple)
    net_decline: float = 1.0  # the node-count decline already applied to net_bw_node (costmodel.node_decline)
    nccl_version: str | None = None  # the NCCL release whose tuning tables price it (costmodel.nccl_release); None: newest

    @property
    def net_bw_per_gpu(self) -> float:
        """One GPU's share of the node's NICs when every GPU sends at once, bytes/s per direction."""
        return self.net_bw_node / self.gpus_per_node

    def net_bw_node_for(self, gpus: int) -> float:
        """NIC bandwidth ``gpus`` GPUs of a node can drive: the NICs, or their PCIe links if fewer, bytes/s."""
        return min(self.net_bw_node, gpus * self.pcie_bw)

    def net_bw_per_gpu_for(self, gpus: int) -> float:
        """One GPU's share of ``net_bw_node_for(gpus)``, bytes/s per direction."""
        return self.net_bw_node_for(gpus) / gpus


def _nvlink_generation(sys_: hardware.System) -> int | None:
    """The NVLink generation of a system's GPU (the catalog GPU row), else the system's own ``raw`` entry, else None."""
    gen = next((r.get("nvlink_generation") for r in hardware.catalog()["gpus"] if r["id"] == sys_.gpu.id), None)
    return gen if gen is not None else (sys_.raw or {}).get("nvlink_generation")


def gpu_generation(system: str | hardware.System) -> str:
    """NCCL's GPU generation of a system (volta, ampere, hopper, blackwell, or an RCCL one: cdna3, cdna4): its GPU's
    ``nccl_arch`` (hardware.json, or a system file's [gpu] table). A GPU that states none, or one without a row in
    efficiency.json ``nccl_protocols``, raises ValueError naming it and the known generations."""
    sys_ = hardware.resolve_system(system)
    arch = sys_.gpu.nccl_arch
    known = efficiency_data()["nccl_protocols"]["ll_max_bw_gb_s"]["one_node"]
    if arch is None:
        raise ValueError(f"gpu {sys_.gpu.id} states no nccl_arch (the row of NCCL's per-generation tables it gets: "
                         f"its hardware.json gpus row, or a system file's [gpu] nccl_arch); "
                         f"known generations: {', '.join(known)}")
    if arch not in known:
        raise ValueError(f"gpu {sys_.gpu.id} has NCCL generation {arch!r}, which has no row in efficiency.json "
                         f"nccl_protocols; known generations: {', '.join(known)}")
    return arch


def channels_for(link: hardware.Link) -> int:
    """NCCL channels on a GPU link: its per-direction rate over NCCL's per-channel rate, 2 to 32 (efficiency.json)."""
    if not isinstance(link, hardware.Link):
        raise ValueError(f"link must be a hardware.Link (e.g. hardware.link('nvlink-4')); got {link!r}")
    ch = efficiency_data()["channels"]
    per = ch["per_channel_gb_s"]["nvlink" if link.family == "nvlink" else "pcie"] * units.GB
    return int(min(ch["max"], max(2, round(link.per_direction / per))))


def fabric(system: str | hardware.System, achievable: bool = True, nics_per_node: int | None = None, network: str | None = None) -> Fabric:
    """The bandwidths and latencies ``predict`` and ``parallel`` use for a system (spec x efficiency when achievable).

    network: a fabric kind (``fabric_kind_ids()``) overriding the system's (``system_fabric_kind``).
    NVLS: spec x the NVLink generation's measured NVLS efficiency, never above the link's rate.
    """
    sys_ = hardware.resolve_system(system)
    if not isinstance(achievable, bool):
        raise ValueError(f"achievable must be True or False, got {achievable!r}")
    # AMD Infinity Fabric: RCCL treats xGMI as its NVLink path type, with its own per-step latencies (efficiency.json)
    intra_tech = {"nvlink": "nvlink", "infinity-fabric": "xgmi"}.get(sys_.gpu_link.family, "pcie")
    eff = (lambda t: efficiency(t)) if achievable else (lambda t: 1.0)
    intra = sys_.gpu_link.per_direction * eff(intra_tech)
    if intra_tech == "pcie" and not sys_.p2p:
        intra /= no_p2p_staging_factor()  # assumed, not measured: see efficiency.json "no_p2p_staging"
    nvls = None
    if sys_.in_network_reduction:
        gen = _nvlink_generation(sys_) or 4  # a system file's catalog GPU gives it (its raw has none)
        nvls = sys_.gpu_link.per_direction * (nvls_efficiency(gen) if achievable else 1.0)
    nics = sys_.nics_per_node if nics_per_node is None else validate.integer("nics_per_node", nics_per_node, low=1, high=1024)
    net_tech = system_fabric_kind(sys_) if network is None else validate.choice("network", network,
                                                                                 fabric_kind_ids())
    net = sys_.nic.per_direction * nics * eff(net_tech)
    nccl = fabric_kind(net_tech).get("nccl", {})
    return Fabric(intra_bw=intra, intra_hop=hop_latency(intra_tech), intra_tech=intra_tech, nvls_bw=nvls,
                  net_bw_node=net, net_hop=hop_latency(net_tech), net_tech=net_tech, launch=launch_latency(),
                  gpus_per_node=sys_.gpus_per_node, channels=channels_for(sys_.gpu_link),
                  pcie_bw=sys_.pcie.per_direction * eff("pcie"), arch=gpu_generation(sys_),
                  net_algorithms=tuple(nccl.get("algorithms", ())), net_protocols=tuple(nccl.get("protocols", ())),
                  mnnvl=bool((sys_.raw or {}).get("mnnvl")),
                  required_protocol=nccl.get("protocol"))
