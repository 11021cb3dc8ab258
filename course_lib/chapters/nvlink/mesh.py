"""Chapter 02, full meshes: a GPU's links split between its peers, the all-reduce on a mesh, the mesh explorer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ... import costmodel, topology, units, validate
from ...views import nvlink as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider
from .links import gpu_bandwidth


MESH_GPU_COUNTS = tuple(range(2, 17))


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
