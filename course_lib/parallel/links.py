"""Which link a parallel group's traffic uses, and what its collectives cost on it (seconds).

A group inside one node uses the GPU fabric, one across nodes the NICs (``costmodel.fabric``);
collective times come from ``costmodel``: inside a node alpha-beta on a ring, across nodes the network
model (``costmodel.predict``), the one cross-node price of every phase; all-to-all two-tier across nodes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .. import costmodel, hardware, validate


@dataclass(frozen=True)
class GroupLink:
    """Where a parallel group's traffic goes: link name, bytes/s per direction per rank, hop latency (s)."""

    name: str
    bandwidth: float
    latency: float
    crosses_nodes: bool


def group_link(system: str | hardware.System, size: int, stride: int) -> GroupLink:
    """The link a group of ``size`` ranks, ``stride`` ranks apart, uses on ``system``.

    Inside one node: the GPU fabric (NVLink/NVSwitch or PCIe) at its achievable bandwidth
    (``costmodel.fabric``). Across nodes: a ring whose bottleneck is ``min(fabric, k x NIC share
    per GPU)`` where k members of the group sit in each node (every GPU of a node communicates at once).
    """
    sys_ = hardware.resolve_system(system)
    return _group_link(sys_, *_check_group(size, stride))


def _check_group(size: int, stride: int) -> tuple[int, int]:
    return validate.integer("size", size, low=1, high=10**7), validate.integer("stride", stride, low=1, high=10**7)


@lru_cache(maxsize=256)
def _fabric(sys_: hardware.System) -> costmodel.Fabric:
    """``costmodel.fabric`` of a (hashable) System, kept: the planner asks thousands of times."""
    return costmodel.fabric(sys_)


def _members_per_node(sys_: hardware.System, ranks: int, stride: int) -> int:
    """How many of a group's ``ranks`` (``stride`` ranks apart) sit in one node: at least 1."""
    return max(1, min(ranks, sys_.gpus_per_node // stride))


@lru_cache(maxsize=8192)
def _group_link(sys_: hardware.System, size: int, stride: int) -> GroupLink:
    f = _fabric(sys_)
    if size == 1 or stride * size <= sys_.gpus_per_node:
        return GroupLink(sys_.gpu_link.name, f.intra_bw, f.intra_hop, False)
    k = _members_per_node(sys_, size, stride)
    return GroupLink(f"{sys_.nics_per_node} x {sys_.nic.name} per node", min(f.intra_bw, k * f.net_bw_per_gpu),
                     f.net_hop, True)


def _coll(collective: str, nbytes: float, ranks: int, link: GroupLink) -> float:
    """A collective inside one node: the registry's ring on the GPU fabric (alpha-beta), plus one launch."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return costmodel.launch_latency() + float(costmodel.collective_time(collective, nbytes, ranks, link.bandwidth,
                                                                        link.latency, "ring"))


# NCCL's algorithms for a group that spans nodes. NVLS is left out because every in-node price here is a
# ring (``_coll``): with NVLS across nodes only, a group would gain by leaving its node. So on a system
# with NVLink SHARP ``costmodel.predict``'s own default (which may pick NVLS) can be lower than this price.
CROSS_NODE_ALGORITHMS = {"all_reduce": ("ring", "tree"), "reduce_scatter": ("ring",), "all_gather": ("ring",)}


def cross_node_time(system: str | hardware.System, collective: str, nbytes: float, ranks: int, stride: int = 1) -> float:
    """One ``collective`` of ``nbytes`` over ``ranks`` ranks ``stride`` apart that span nodes, seconds: the
    one cross-node price that tensor, data and sharded data parallelism all use.

    Priced by the network model (``costmodel.predict``) for the nodes and GPUs per node the group
    occupies: NCCL's ring (and, for an all-reduce, tree) with their protocols (LL, LL128, Simple) at
    this size, a network latency on every step that crosses nodes; of ``CROSS_NODE_ALGORITHMS`` the one NCCL's
    own estimate picks (``costmodel.nccl_prefers_tree``), which is not always the faster. No other traffic
    shares the NICs.
    """
    sys_ = hardware.resolve_system(system)
    collective, nbytes = _check_cross_node(collective, nbytes)
    ranks = validate.integer("ranks", ranks, low=1, high=10**7)
    stride = validate.integer("stride", stride, low=1, high=10**7)
    return Links(sys_).cross_node_time(collective, nbytes, ranks, stride)


def _check_cross_node(collective: str, nbytes: float) -> tuple[str, float]:
    return (validate.choice("collective", collective, CROSS_NODE_ALGORITHMS),
            validate.non_negative("nbytes", nbytes))


@lru_cache(maxsize=8192)
def _cross_node_time(sys_: hardware.System, collective: str, nbytes: float, ranks: int, stride: int) -> float:
    per_node = _members_per_node(sys_, ranks, stride)
    return float(costmodel.predict(collective, nbytes, sys_, gpus_per_node=per_node, nodes=math.ceil(ranks / per_node),
                                   algorithm=CROSS_NODE_ALGORITHMS[collective]).time_s[0])


def cross_node_all_reduce_time(system: str | hardware.System, nbytes: float, ranks: int, stride: int = 1) -> float:
    """``cross_node_time`` of an all-reduce (chapter 07's tensor parallelism across nodes)."""
    return cross_node_time(system, "all_reduce", nbytes, ranks, stride)


def group_collective_time(system: str | hardware.System, collective: str, nbytes: float, ranks: int, stride: int = 1) -> float:
    """One ``collective`` of a parallel group of ``ranks`` ranks ``stride`` apart, seconds: the ring on
    the GPU fabric inside one node (``_coll``), ``cross_node_time`` across nodes. Every phase prices its
    reduce_scatter, all_gather and all-reduce here, so one group pays one price whichever phase asks."""
    sys_ = hardware.resolve_system(system)
    ranks, stride = _check_group(ranks, stride)
    if _group_link(sys_, ranks, stride).crosses_nodes:
        collective, nbytes = _check_cross_node(collective, nbytes)
    return Links(sys_).collective_time(collective, nbytes, ranks, stride)


def pair_bandwidth(system: str | hardware.System, link: GroupLink) -> float:
    """Bytes/s per direction of one send between two GPUs: one GPU's NIC share across nodes, else the link."""
    return Links(hardware.resolve_system(system)).pair_bandwidth(link)


def all_to_all_time(system: str | hardware.System, nbytes: float, ranks: int, stride: int) -> tuple[float, GroupLink]:
    """One all-to-all of ``nbytes`` per rank (its whole send buffer) over ``ranks`` ranks ``stride`` apart.

    Inside one NVLink domain: the registry's direct algorithm on the GPU fabric. Across nodes:
    ``costmodel.two_tier_all_to_all``: each rank sends (p-k)/p of its buffer through its share
    of the node's NICs and (k-1)/p over the GPU fabric, at once (k group members per node). This
    is the rail-optimised case: NCCL's PXN (or DeepEP's NVLink forwarding) first moves a message
    over NVLink to the GPU on the destination's rail, so every NIC carries an even share.
    Returns (seconds, the link that bounds it).
    """
    sys_ = hardware.resolve_system(system)
    ranks, stride = _check_group(ranks, stride)
    return Links(sys_).all_to_all_time(nbytes, ranks, stride)


@dataclass(frozen=True)
class Links:
    """The prices above for one already resolved ``System``, with arguments already checked: what every phase
    of an estimate asks (through ``Layout.links``), so one estimate resolves its system once, in ``layout``.
    The module's functions check their arguments, resolve the system and ask this."""

    system: hardware.System

    def link(self, size: int, stride: int) -> GroupLink:
        """``group_link`` on this system."""
        return _group_link(self.system, size, stride)

    def cross_node_time(self, collective: str, nbytes: float, ranks: int, stride: int = 1) -> float:
        """``cross_node_time`` on this system."""
        if ranks <= 1 or nbytes <= 0:
            return 0.0
        return _cross_node_time(self.system, collective, float(nbytes), ranks, stride)

    def collective_time(self, collective: str, nbytes: float, ranks: int, stride: int = 1) -> float:
        """``group_collective_time`` on this system."""
        link = self.link(ranks, stride)
        if link.crosses_nodes:
            return self.cross_node_time(collective, nbytes, ranks, stride)
        return _coll(collective, nbytes, ranks, link)

    def pair_bandwidth(self, link: GroupLink) -> float:
        """``pair_bandwidth`` on this system."""
        return _fabric(self.system).net_bw_per_gpu if link.crosses_nodes else link.bandwidth

    def all_to_all_time(self, nbytes: float, ranks: int, stride: int) -> tuple[float, GroupLink]:
        """``all_to_all_time`` on this system."""
        link = self.link(ranks, stride)
        if ranks <= 1 or nbytes <= 0:
            return 0.0, link
        if not link.crosses_nodes:
            return costmodel.launch_latency() + float(costmodel.collective_time(
                "all_to_all", nbytes, ranks, link.bandwidth, link.latency, "direct")), link
        k = _members_per_node(self.system, ranks, stride)
        f = _fabric(self.system)
        t = costmodel.two_tier_all_to_all(nbytes, ranks, k, f.intra_bw, f.net_bw_per_gpu, f.net_hop, f.launch)
        return float(t), link
