"""Chapter 02, rings on a mesh: direct links, Hamiltonian cycles packed into rings, DGX-1's hybrid cube mesh.
"""
from __future__ import annotations

from ... import costmodel, hardware, style, topology, units, validate
from ...views import graphs
from ...views import nvlink as views
from .links import BRIDGE_SYSTEMS


MAX_RING_SEARCH_GPUS = 10


def _check_topology(topo):
    if not isinstance(topo, topology.Topology):
        raise ValueError(f"topo must be a course_lib.topology.Topology, got {type(topo).__name__}")
    return topo


def direct_links(topo, link_bw) -> dict:
    """Whole NVLink links between GPU pairs: ``{frozenset({a, b}): count}`` (GPU-to-GPU edges only).

    link_bw: bytes/s per direction of one link; an edge of 50 GB/s with 25 GB/s links counts 2.
    """
    topo = _check_topology(topo)
    link_bw = validate.positive("link_bw", link_bw)
    out = {}
    for key, bw in topo.links.items():
        if all(topo.kinds[n] == "gpu" for n in key):
            count = bw / link_bw
            if abs(count - round(count)) > 1e-6 or round(count) < 1:
                raise ValueError(f"link_bw must divide every GPU-to-GPU link; {sorted(key)} carries "
                                 f"{bw / units.GB:g} GB/s, not a whole number of {link_bw / units.GB:g} GB/s links")
            out[key] = int(round(count))
    return out


def hamiltonian_cycles(topo) -> list[tuple]:
    """Every ring through all GPUs over direct GPU-to-GPU links, once per cycle (not per direction or start).

    Only for small graphs (at most ``MAX_RING_SEARCH_GPUS`` GPUs); rings start at the first GPU.
    """
    topo = _check_topology(topo)
    gpus = topo.gpus
    if not 3 <= len(gpus) <= MAX_RING_SEARCH_GPUS:
        raise ValueError(f"topo must have 3 to {MAX_RING_SEARCH_GPUS} GPUs for a ring search, got {len(gpus)}")
    nb = {g: set() for g in gpus}
    for key in topo.links:
        if all(topo.kinds[n] == "gpu" for n in key):
            a, b = tuple(key)
            nb[a].add(b)
            nb[b].add(a)
    start, index = gpus[0], {g: i for i, g in enumerate(gpus)}
    cycles = []

    def extend(path, seen):
        if len(path) == len(gpus):
            if start in nb[path[-1]] and index[path[1]] < index[path[-1]]:
                cycles.append(tuple(path))
            return
        for nxt in sorted(nb[path[-1]], key=index.get):
            if nxt not in seen:
                seen.add(nxt)
                path.append(nxt)
                extend(path, seen)
                path.pop()
                seen.remove(nxt)

    extend([start], {start})
    return cycles


def _ring_edges(ring):
    return [frozenset((a, b)) for a, b in zip(ring, ring[1:] + ring[:1])]


def pack_rings(topo, link_bw) -> list[tuple]:
    """The most rings through all GPUs that fit on the links at once, each link used by one ring.

    A doubled link can carry two rings. Each ring returned can run in both directions
    (links are full duplex), which is how NCCL keeps every link busy on a DGX-1.
    """
    counts = direct_links(topo, link_bw)
    cycles = hamiltonian_cycles(topo)
    degree = {g: 0 for g in topo.gpus}
    for key, c in counts.items():
        for g in key:
            degree[g] += c
    bound = min(degree.values()) // 2
    best: list = []

    def search(i, chosen, left):
        nonlocal best
        if len(chosen) > len(best):
            best = list(chosen)
        if len(best) == bound or i == len(cycles) or len(chosen) + (len(cycles) - i) <= len(best):
            return
        edges = _ring_edges(list(cycles[i]))
        if all(left.get(e, 0) >= 1 for e in edges):
            for e in edges:
                left[e] -= 1
            chosen.append(cycles[i])
            search(i, chosen, left)  # the same cycle may fit again on doubled links
            chosen.pop()
            for e in edges:
                left[e] += 1
        search(i + 1, chosen, left)

    search(0, [], dict(counts))
    return best


def rings_bandwidth(topo, rings, both_directions=True) -> float:
    """Bytes/s per direction that a set of rings delivers to an all-reduce (sum of the rings' rates).

    Each ring sends one way round (and, with ``both_directions``, a second ring the other way).
    A link carrying k rings in one direction gives each 1/k of its bandwidth; a ring runs at its
    slowest hop. For one ring in one direction this equals ``topo.ring_bottleneck(order)``.
    """
    topo = _check_topology(topo)
    if not isinstance(both_directions, bool):
        raise ValueError(f"both_directions must be True or False, got {both_directions!r}")
    if not isinstance(rings, (list, tuple)) or not rings:
        raise ValueError("rings must be a non-empty list of GPU orders")
    directed = []
    for ring in rings:
        ring = list(ring)
        if len(ring) < 2 or len(set(ring)) != len(ring) or any(topo.kinds.get(g) != "gpu" for g in ring):
            raise ValueError(f"rings must list distinct GPUs of the topology, got {ring!r}")
        directed.append(ring)
        if both_directions and len(ring) > 2:
            directed.append(ring[::-1])
    load = {}
    for ring in directed:
        for a, b in zip(ring, ring[1:] + ring[:1]):
            if frozenset((a, b)) not in topo.links:
                raise ValueError(f"rings must follow direct links; {a} and {b} are not linked")
            load[(a, b)] = load.get((a, b), 0) + 1
    total = 0.0
    for ring in directed:
        total += min(topo.links[frozenset((a, b))] / load[(a, b)] for a, b in zip(ring, ring[1:] + ring[:1]))
    return total


# Cube layout for drawing the DGX-1: quad 0 as the front face, quad 1 as the back face; every
# link then has its own line (the diagonals of the two faces are the doubled in-quad links).
def dgx1_topology() -> topology.Topology:
    """The DGX-1 hybrid cube mesh (``topology.dgx1_hybrid_cube_mesh``), GPUs on a cube's corners."""
    return topology.dgx1_hybrid_cube_mesh()


def draw_dgx1(ax=None):
    """Draw the DGX-1 hybrid cube mesh (GB/s per direction on the links); returns the Axes."""
    ax = graphs.draw(dgx1_topology(), ax=ax)
    ax.legend(loc="lower right", fontsize=style.readable_points(ax.figure), frameon=False)
    return ax


def draw_consumer_pairs(axes=None):
    """Draw the 2x RTX 3090 bridge pair next to the 2x RTX 4090 PCIe pair; returns the two Axes."""
    import matplotlib.pyplot as plt
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    if len(axes) != 2:
        raise ValueError(f"axes must hold two matplotlib Axes, got {len(axes)}")
    titles = ("2x RTX 3090 + NVLink bridge", "2x RTX 4090: PCIe only, no peer-to-peer")
    for ax, sid, title in zip(axes, BRIDGE_SYSTEMS, titles):
        graphs.draw(topology.bridge_pair(sid), ax=ax)  # its legend sits under the drawing, clear of the link labels
        ax.set_title(f"{title}\n(GB/s per direction)", fontsize=style.readable_points(ax.figure))
    return axes


def dgx1_rings(nbytes=1e9) -> dict:
    """The DGX-1 (V100) hybrid cube mesh: one ring vs the rings NCCL can lay on its links.

    Returns bandwidths in bytes/s per direction and ring all-reduce times of ``nbytes`` in
    seconds (spec bandwidth, no latency): the topology module's default ring, the best
    single ring, and the packed rings run in both directions.
    """
    nbytes = validate.positive("nbytes", nbytes)
    topo = dgx1_topology()
    link_bw = hardware.nvlink(2, 1).per_direction
    gpu_bw = hardware.system("dgx-1-v100").gpu_link.per_direction
    p = len(topo.gpus)
    default = topo.ring_bottleneck()
    cycles = hamiltonian_cycles(topo)
    best_single = max(cycles, key=lambda c: rings_bandwidth(topo, [c], both_directions=False))
    packed = pack_rings(topo, link_bw)
    packed_bw = rings_bandwidth(topo, packed, both_directions=True)

    def t(bw):
        return costmodel.collective_time("all_reduce", nbytes, p, bw, 0.0, "ring")

    return {"topology": topo, "link_bw": link_bw, "gpu_bw": gpu_bw, "cycles": cycles,
            "default_ring": list(topo.ring_order), "default_ring_bw": default["bandwidth"],
            "default_ring_link": default["link"], "default_ring_s": t(default["bandwidth"]),
            "best_single_ring": list(best_single),
            "best_single_ring_bw": rings_bandwidth(topo, [best_single], both_directions=False),
            "best_single_ring_s": t(rings_bandwidth(topo, [best_single], both_directions=False)),
            "packed_rings": [list(c) for c in packed], "packed_directed_rings": 2 * len(packed),
            "packed_bw": packed_bw, "packed_s": t(packed_bw)}


def dgx1_direct_links() -> list[dict]:
    """GPU 0's NVLink neighbours in a DGX-1: links, direct GB/s per direction, max-flow GB/s per direction."""
    topo = topology.dgx1_hybrid_cube_mesh()
    counts = direct_links(topo, hardware.nvlink(2, 1).per_direction)
    rows = []
    for g in topo.gpus[1:]:
        n = counts.get(frozenset(("gpu0", g)), 0)
        rows.append({"peer": g, "links": n, "direct_gb_s": n * hardware.nvlink(2, 1).per_direction / units.GB,
                     "max_flow_gb_s": topo.pair_bandwidth("gpu0", g) / units.GB})
    return rows


def show_dgx1_links():
    """Table: GPU 0's neighbours in a DGX-1, direct links vs max flow."""
    views.show_dgx1_links(dgx1_direct_links())


def draw_rings(topo, rings, ax=None, title=None):
    """Draw a topology and overlay rings in colours (each ring offset slightly so they stay visible)."""
    import matplotlib.pyplot as plt
    topo = _check_topology(topo)
    if not isinstance(rings, (list, tuple)) or not rings:
        raise ValueError("rings must be a non-empty list of GPU orders")
    for g in (g for ring in rings for g in ring):
        if topo.kinds.get(g) != "gpu":
            raise ValueError(f"rings must list GPUs of the topology, got {g!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.2))
    return views.draw_rings(ax, topo, rings, title)
