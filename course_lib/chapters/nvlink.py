"""Chapter 02: NVLink as point-to-point links, how they are split between peers, and rings.

Every bandwidth is bytes/s **per direction** unless a name says ``bidirectional``
(vendors quote NVLink as the sum of both directions: H100 900 GB/s = 2 x 450).
Link counts and rates come from :mod:`course_lib.hardware`; collective times from
:mod:`course_lib.costmodel`; graphs, per-pair bandwidth and single-ring bottlenecks
from :mod:`course_lib.topology`. What this module adds for the chapter: splitting a
GPU's links over the peers of a full mesh, packing several rings onto the links of a
mesh (why NCCL uses several rings on a DGX-1), the bridge vs PCIe comparison, the
published measurements in ``data/published_nvlink.json``, and the mesh explorer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import costmodel, datafiles, evidence, hardware, topology, units, validate
from ..views import nvlink as views
from ..widgets import explorer, gpu_count_slider, link_speed_slider

MESH_GPU_COUNTS = tuple(range(2, 17))
MAX_RING_SEARCH_GPUS = 10
# Vendor figures that public material quotes, as catalog links (bytes/s per direction).
VENDOR_QUOTES = (
    ("A100 (NVLink 3)", lambda: hardware.nvlink(3)),
    ("H100 (NVLink 4)", lambda: hardware.nvlink(4)),
    ("H200 (DGX H200)", lambda: hardware.system("dgx-h200").gpu_link),
    ("GB200 / B200 (NVLink 5)", lambda: hardware.nvlink(5)),
)


# ---------------------------------------------------------------- links per GPU x per-link rate

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


# ---------------------------------------------------------------- full mesh: links split between peers

def _mesh_args(gpus, links_per_gpu):
    gpus = validate.integer("gpus", gpus, low=2, high=64)
    links_per_gpu = validate.integer("links_per_gpu", links_per_gpu, low=1, high=72)
    if links_per_gpu < gpus - 1:
        raise ValueError(f"links_per_gpu must be at least gpus - 1 = {gpus - 1} for a full mesh of {gpus} GPUs "
                         f"(every pair needs a link), got {links_per_gpu}")
    return gpus, links_per_gpu


def is_full_mesh_possible(gpus, links_per_gpu) -> bool:
    """True when every GPU has at least one link for each of its ``gpus - 1`` peers."""
    gpus = validate.integer("gpus", gpus, low=2, high=64)
    links_per_gpu = validate.integer("links_per_gpu", links_per_gpu, low=1, high=72)
    return links_per_gpu >= gpus - 1


def per_peer_bandwidth(gpus, links_per_gpu, link_bw) -> float:
    """Bytes/s per direction between two GPUs of a full mesh, the links split evenly over the peers.

    links_per_gpu x link_bw / (gpus - 1): 18 x 25 GB/s / 7 = 64.3 GB/s per direction for 8 H100s.
    """
    gpus, links_per_gpu = _mesh_args(gpus, links_per_gpu)
    return gpu_bandwidth(links_per_gpu, link_bw) / (gpus - 1)


def mesh_link_counts(gpus, links_per_gpu) -> dict:
    """Whole links per GPU pair in a full mesh: ``{(a, b): count}`` for a < b.

    Every pair gets ``links_per_gpu // (gpus - 1)`` links; the remainder r goes to
    a regular pattern (GPU i to i +- 1 ... i +- r/2, and i to i + gpus/2 when r is
    odd), so some peers get one link more. When r is odd and ``gpus`` is odd one
    link per GPU stays unused (an odd number of link ends cannot pair up).
    """
    gpus, links_per_gpu = _mesh_args(gpus, links_per_gpu)
    base, extra = divmod(links_per_gpu, gpus - 1)
    counts = {(a, b): base for a in range(gpus) for b in range(a + 1, gpus)}
    offsets = list(range(1, extra // 2 + 1))
    for k in offsets:
        for i in range(gpus):
            a, b = sorted((i, (i + k) % gpus))
            counts[(a, b)] += 1
    if extra % 2 and gpus % 2 == 0:
        for i in range(gpus // 2):
            counts[(i, i + gpus // 2)] += 1
    return counts


def full_mesh(gpus, links_per_gpu, link_bw, name=None) -> topology.Topology:
    """A full mesh of ``gpus`` GPUs with ``links_per_gpu`` whole links each (``mesh_link_counts``).

    link_bw: bytes/s per direction of one link. Returns a :class:`course_lib.topology.Topology`
    (so ``pair_bandwidth``, ``ring_bottleneck`` and ``draw`` work on it).
    """
    counts = mesh_link_counts(gpus, links_per_gpu)
    link_bw = validate.positive("link_bw", link_bw)
    gpus = validate.integer("gpus", gpus, low=2, high=64)
    topo = topology.Topology(name=name or f"Full mesh: {gpus} GPUs, {links_per_gpu} links each")
    for i in range(gpus):
        angle = math.pi / 2 - 2 * math.pi * i / gpus
        topo.add(f"gpu{i}", "gpu", (3 * math.cos(angle), 3 * math.sin(angle)))
    for (a, b), count in counts.items():
        if count:
            topo.connect(f"gpu{a}", f"gpu{b}", count * link_bw, f"{count}x NVLink")
    topo.ring_order = [f"gpu{i}" for i in range(gpus)]
    return topo


def mesh_allreduce(nbytes, gpus, links_per_gpu, link_bw, latency=0.0) -> dict:
    """Ring all-reduce of ``nbytes`` on a full mesh, links split evenly (seconds, bytes/s per direction).

    ``one_ring``: a single ring only uses the links to its next neighbour (per-peer bandwidth);
    ``all_links``: enough rings (NCCL channels) to keep every link busy, i.e. the GPU's whole
    NVLink, which is also what an NVSwitch port with the same links gives. latency: seconds per step.
    """
    per_peer = per_peer_bandwidth(gpus, links_per_gpu, link_bw)
    total = gpu_bandwidth(links_per_gpu, link_bw)
    one = costmodel.collective_time("all_reduce", nbytes, gpus, per_peer, latency, "ring")
    every = costmodel.collective_time("all_reduce", nbytes, gpus, total, latency, "ring")
    return {"per_peer_bw": per_peer, "gpu_bw": total, "one_ring_s": one, "all_links_s": every,
            "rings_needed": gpus - 1 if gpus > 2 else 1}


def point_to_point_time(nbytes, bandwidth) -> float:
    """Seconds to copy ``nbytes`` one way over ``bandwidth`` bytes/s per direction (no latency)."""
    nbytes = validate.non_negative("nbytes", nbytes)
    return nbytes / validate.positive("bandwidth", bandwidth)


# ---------------------------------------------------------------- rings on a mesh (DGX-1)

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
    ax = dgx1_topology().draw(ax=ax)
    ax.legend(loc="lower right", fontsize=topology.readable_points(ax.figure), frameon=False)
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
        topology.bridge_pair(sid).draw(ax=ax)  # its legend sits under the drawing, clear of the link labels
        ax.set_title(f"{title}\n(GB/s per direction)", fontsize=topology.readable_points(ax.figure))
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


# ---------------------------------------------------------------- bridge vs PCIe

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


# ---------------------------------------------------------------- published measurements

@lru_cache(maxsize=1)
def published_nvlink() -> dict:
    """The parsed ``data/published_nvlink.json`` (measurements with their sources)."""
    return datafiles.load("published_nvlink.json")


def measurements() -> list[dict]:
    """Measured vs spec for each published case: GB/s, ``ratio`` = measured / spec (same direction)."""
    data = published_nvlink()
    cases = {c["id"]: c for c in costmodel.published()["cases"]}
    rows = []
    for m in data["measurements"]:
        link = hardware.link(m["link"])
        if "published_collectives_case" in m:
            case = cases[m["published_collectives_case"]]
            gb_s, nbytes, source_id = case["busbw_gb_s"], case["nbytes"], case["source"]
        else:
            gb_s, nbytes, source_id = m["gb_s"], m.get("nbytes"), m["source"]
        src = datafiles.source(source_id)
        spec = link.per_direction if m["direction"] == "per direction" else link.bidirectional
        c = evidence.compare(m["id"], spec / units.GB, evidence.measurement(gb_s, f"GB/s {m['direction']}", source_id))
        rows.append({"id": m["id"], "system": m["system"], "kind": m["kind"], "direction": m["direction"],
                     "link": link.name, "spec_gb_s": spec / units.GB, "measured_gb_s": gb_s,
                     "ratio": c.measured_over_model, "nbytes": nbytes, "note": m.get("note", ""),
                     "source": src["title"], "url": src["url"], "source_id": source_id})
    return rows


def model_vs_measured(case="a100-allreduce-azure") -> dict:
    """``costmodel.predict`` ring busbw (spec and achievable) next to one measured all-reduce, GB/s per direction."""
    entries = {m["id"]: m for m in published_nvlink()["measurements"]}
    rows = {r["id"]: r for r in measurements()}
    case = validate.choice("case", case, rows)
    entry, row = entries[case], rows[case]
    if "published_collectives_case" in entry:
        system = next(c["system"] for c in costmodel.published()["cases"]
                      if c["id"] == entry["published_collectives_case"])
    else:
        system = entry.get("catalog_system")
    if system is None or row["nbytes"] is None:
        raise ValueError(f"case must be an all-reduce on a catalog system, got {case!r}; "
                         f"all-reduce cases: {', '.join(k for k, r in rows.items() if r['nbytes'])}")
    spec = costmodel.predict("all_reduce", row["nbytes"], system, algorithm="ring", achievable=False)
    real = costmodel.predict("all_reduce", row["nbytes"], system, algorithm="ring", achievable=True)
    c = evidence.compare(case, float(real.busbw[0]) / units.GB,
                         evidence.measurement(row["measured_gb_s"], "GB/s busbw per direction", row["source_id"]))
    return {"case": case, "system": system, "nbytes": row["nbytes"], "measured_gb_s": row["measured_gb_s"],
            "spec_busbw_gb_s": float(spec.busbw[0]) / units.GB,
            "achievable_busbw_gb_s": c.model, "ratio": c.ratio, "url": c.measured.url,
            "efficiency": costmodel.efficiency("nvlink")}


# ---------------------------------------------------------------- tables and figures (drawn by views.nvlink)

def show_generations():
    """Table: NVLink 1-5, links x per-link rate = per-GPU bandwidth, per direction and bidirectional."""
    views.show_generations(generations())


def show_vendor_quotes():
    """Table: the vendor's bidirectional figure and the per-direction half."""
    views.show_vendor_quotes(vendor_quotes())


def show_bridge_vs_pcie(nbytes=1e9):
    """Table: 3090 bridge vs 4090 PCIe, bandwidth and 2-GPU all-reduce time."""
    views.show_bridge_vs_pcie(bridge_vs_pcie(nbytes), nbytes)


def show_dgx1_links():
    """Table: GPU 0's neighbours in a DGX-1, direct links vs max flow."""
    views.show_dgx1_links(dgx1_direct_links())


def show_measurements():
    """Table: published measurements next to the spec, with the ratio and source."""
    views.show_measurements(measurements())


def plot_measurements(ax=None):
    """Bar chart: measured / spec for each published case, with the course model's NVLink efficiency."""
    import matplotlib.pyplot as plt
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        views.draw_measurements(ax, measurements(), costmodel.efficiency("nvlink"))
        fig.tight_layout()  # the case names inside the figure's 7.5 in
        return ax
    return views.draw_measurements(ax, measurements(), costmodel.efficiency("nvlink"))


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


# ---------------------------------------------------------------- explorer

@dataclass(frozen=True)
class MeshSeries:
    """The mesh explorer's model result: ring all-reduce seconds over ``counts`` GPUs (NaN: no full mesh)."""

    gpus: int
    links_per_gpu: int
    link_gb_s: float
    nbytes: float
    counts: np.ndarray
    one_ring_s: np.ndarray
    all_links_s: np.ndarray
    references: tuple             # (label, seconds) of the two-GPU consumer systems at spec bandwidth
    chosen_buildable: bool
    chosen_one_ring_s: float
    chosen_all_links_s: float


@lru_cache(maxsize=16)
def _bridge_reference(nbytes):
    out = []
    for sid, label in (("workstation-3090-bridge", "2x RTX 3090, bridge"), ("consumer-4090-pcie", "2x RTX 4090, PCIe")):
        t = float(costmodel.predict("all_reduce", nbytes, sid, achievable=False).time_s[0])
        out.append((label, t))
    return tuple(out)


@lru_cache(maxsize=256)
def mesh_series(gpus, links_per_gpu, link_gb_s, size_gb) -> MeshSeries:
    """``mesh_allreduce`` over ``MESH_GPU_COUNTS`` for the explorer (cached: one model run per setting)."""
    nbytes, link_bw, lat = size_gb * units.GB, link_gb_s * units.GB, costmodel.hop_latency("nvlink")
    counts = np.array(MESH_GPU_COUNTS)
    runs = {int(p): mesh_allreduce(nbytes, int(p), links_per_gpu, link_bw, lat) for p in counts if p - 1 <= links_per_gpu}
    col = lambda key: np.array([runs[p][key] if p in runs else np.nan for p in counts])  # noqa: E731
    mine = runs.get(gpus)
    return MeshSeries(gpus=gpus, links_per_gpu=links_per_gpu, link_gb_s=link_gb_s, nbytes=nbytes, counts=counts,
                      one_ring_s=col("one_ring_s"), all_links_s=col("all_links_s"),
                      references=_bridge_reference(nbytes), chosen_buildable=mine is not None,
                      chosen_one_ring_s=mine["one_ring_s"] if mine else np.nan,
                      chosen_all_links_s=mine["all_links_s"] if mine else np.nan)


def _draw(ax, gpus, links_per_gpu, link_gb_s, size_gb):
    update = views.draw_mesh(ax, mesh_series(gpus, links_per_gpu, link_gb_s, size_gb))
    return lambda **values: update(mesh_series(**values))


def _readout(gpus, links_per_gpu, link_gb_s, size_gb):
    link_bw = link_gb_s * units.GB
    total = gpu_bandwidth(links_per_gpu, link_bw)
    head = (f"{gpus} GPUs, {links_per_gpu} links x {link_gb_s:.3g} GB/s = "
            f"<b>{units.format_bandwidth(total)}</b> per GPU "
            f"({units.format_bandwidth(2 * total, direction='bidirectional')}). ")
    if gpus - 1 > links_per_gpu:
        return head + (f"<b>No full mesh</b>: {gpus - 1} peers but only {links_per_gpu} links, so some pairs have no "
                       "direct link (the DGX-1's case: 6 links, 7 peers) or a switch is needed (chapter 03).")
    r = mesh_allreduce(size_gb * units.GB, gpus, links_per_gpu, link_bw, costmodel.hop_latency("nvlink"))
    counts = mesh_link_counts(gpus, links_per_gpu).values()
    whole = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)} or {max(counts)}"
    return (head + f"Each of the {gpus - 1} peers gets {links_per_gpu / (gpus - 1):.3g} links = "
            f"<b>{units.format_bandwidth(r['per_peer_bw'])}</b> "
            f"({units.format_bandwidth(2 * r['per_peer_bw'], direction='bidirectional')}); with whole links "
            f"{whole} links per peer. Ring all-reduce of {units.format_bytes(size_gb * units.GB)}: one ring "
            f"<b>{units.format_time(r['one_ring_s'])}</b>, {r['rings_needed']} or more rings "
            f"<b>{units.format_time(r['all_links_s'])}</b> (spec bandwidth).")


def mesh_explorer(gpus=8, links_per_gpu=18, link_gb_s=25.0, size_gb=1.0):
    """Sliders on GPU count, links per GPU, per-link speed (GB/s per direction) and message size.

    Shows: in a full NVLink mesh a GPU's links are split among its peers, so each pair's bandwidth
    falls as GPUs are added, and beyond links + 1 GPUs no full mesh can be wired.
    """
    import ipywidgets as w
    controls = {
        "gpus": gpu_count_slider(gpus, options=MESH_GPU_COUNTS),
        "links_per_gpu": w.IntSlider(value=validate.integer("links_per_gpu", links_per_gpu, low=1, high=36),
                                     min=1, max=36, description="links per GPU"),
        "link_gb_s": link_speed_slider(link_gb_s, low=1.0, high=200.0, description="one link, GB/s per direction"),
        "size_gb": w.FloatLogSlider(value=validate.number("size_gb", size_gb, low=0.001, high=1000), base=10,
                                    min=-3, max=3, step=0.01, description="all-reduce size, GB", readout_format=".3g"),
    }
    return explorer(_draw, controls, readout=_readout, title="NVLink full mesh: links split between peers")
