"""Chapter 05, racks, rails and ranks: the rail-optimised fat tree, switch hops, torchrun's ranks and the node boundaries a ring crosses.
"""
from __future__ import annotations

from ... import hardware, topology, validate
from ...views import graphs
from ...views import infiniband as views
from ...widgets import show_html


def rail_topology(system="dgx-h100", nodes=2) -> topology.Topology:
    """The rail-optimised fat tree of course_lib.topology: NIC k of every node on leaf switch k."""
    sys_ = hardware.resolve_system(system)
    nodes = validate.integer("nodes", nodes, low=1, high=64)
    return topology.rail_fat_tree(sys_.id, nodes)


def switch_hops(topo, a, b) -> int:
    """InfiniBand switches a message crosses from GPU ``a`` to GPU ``b`` through the network only (no NVLink)."""
    if not isinstance(topo, topology.Topology):
        raise ValueError(f"topo must be a course_lib.topology.Topology, got {type(topo).__name__}")
    for name, node in (("a", a), ("b", b)):
        if topo.kinds.get(node) != "gpu":
            raise ValueError(f"{name} must be one of the topology's GPUs such as {topo.gpus[0]!r}; got {node!r}")
    if a == b:
        raise ValueError("b must differ from a")
    neighbours = {node: set() for node in topo.kinds}
    for key in topo.links:
        u, v = tuple(key)
        neighbours[u].add(v)
        neighbours[v].add(u)
    frontier, seen, depth = [a], {a}, 0
    while frontier:
        depth += 1
        nxt = []
        for u in frontier:
            for v in neighbours[u]:
                if v == b:
                    return depth - 1  # switches passed = edges - 1
                if v not in seen and topo.kinds[v] == "ib_switch":
                    seen.add(v)
                    nxt.append(v)
        frontier = nxt
    raise ValueError(f"no network path from {a!r} to {b!r}")


def global_rank(node_rank, local_rank, nproc_per_node) -> int:
    """The RANK torchrun gives local rank ``local_rank`` on node ``node_rank`` (both from 0)."""
    nproc = validate.integer("nproc_per_node", nproc_per_node, low=1, high=1024)
    node_rank = validate.integer("node_rank", node_rank, low=0)
    local_rank = validate.integer("local_rank", local_rank, low=0, high=nproc - 1)
    return node_rank * nproc + local_rank


def rank_table(nnodes, nproc_per_node) -> list[dict]:
    """Every process of a torchrun job: node, LOCAL_RANK (= GPU index), RANK, WORLD_SIZE."""
    nnodes = validate.integer("nnodes", nnodes, low=1, high=4096)
    nproc = validate.integer("nproc_per_node", nproc_per_node, low=1, high=1024)
    return [{"node_rank": n, "local_rank": r, "rank": global_rank(n, r, nproc), "world_size": nnodes * nproc}
            for n in range(nnodes) for r in range(nproc)]


def ring_crossings(nnodes, nproc_per_node) -> dict:
    """A ring in RANK order: how many of its hops stay inside a node (NVLink) and how many cross the network."""
    rows = rank_table(nnodes, nproc_per_node)
    p = len(rows)
    if p < 2:
        return {"ranks": p, "nvlink_hops": 0, "network_hops": 0}
    network = sum(1 for i in range(p) if rows[i]["node_rank"] != rows[(i + 1) % p]["node_rank"])
    return {"ranks": p, "nvlink_hops": p - network, "network_hops": network}


def show_rank_table(nnodes=2, nproc_per_node=4):
    """Table of the environment torchrun gives each process."""
    show_html(views.rank_table(rank_table(nnodes, nproc_per_node)))


def draw_rails(system="dgx-h100", nodes=2, ax=None):
    """Draw the rail-optimised fat tree: GPU k of every node on leaf switch k (``views.graphs.draw_rails``)."""
    return graphs.draw_rails(rail_topology(system, nodes), ax=ax)
