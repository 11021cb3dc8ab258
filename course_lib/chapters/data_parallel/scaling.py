"""Chapter 06, scaling: data-parallel step time and scaling efficiency over GPUs, the DP ring on the fabric, the scaling explorer.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from html import escape

import numpy as np

from ... import costmodel, hardware, parallel, topology, units, validate
from ...views import data_parallel as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider


SCALING_GPUS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
BASE_SYSTEM = "dgx-h100"
RECOMPUTE = "selective"


def dp_estimate(model="megatron-1.7b", gpus=64, nic_gbit_s=None, zero=0, seqs_per_gpu=1, overlap=True,
                base=BASE_SYSTEM, global_batch=None) -> parallel.Estimate:
    """parallel.estimate for pure data parallelism (TP = PP = 1) with ZeRO stage ``zero``.

    Each GPU runs ``seqs_per_gpu`` sequences per step as micro-batches of one (weak scaling),
    unless ``global_batch`` (a multiple of gpus) fixes the total (strong scaling). Selective
    activation recomputation; nic_gbit_s: one NIC per GPU at this rate, Gb/s (bits) per direction as
    vendors quote it (None: the catalog's NICs). The GPUs inside a node keep the catalog's fabric.
    """
    gpus = validate.integer("gpus", gpus, low=1, high=10**6)
    spg = validate.integer("seqs_per_gpu", seqs_per_gpu, low=1, high=10**4)
    if global_batch is None:
        batch = gpus * spg
    else:
        batch = validate.integer("global_batch", global_batch, low=1, high=10**9)
        if batch % gpus:
            raise ValueError(f"global_batch must be a multiple of gpus ({gpus}), got {batch}")
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True or False, got {overlap!r}")
    sys_ = hardware.resolve_system(base, name="base")
    if nic_gbit_s is not None:
        sys_ = sys_.variant(nics_per_node=sys_.gpus_per_node, nic_gbit_s=nic_gbit_s)
    return parallel.estimate(model, sys_, gpus=gpus, tp=1, pp=1, global_batch=batch,
                             micro_batch=1, zero=validate.integer("zero", zero, low=0, high=3),
                             recompute=RECOMPUTE, dp_overlap=overlap)


def _dp_comm(e: parallel.Estimate) -> float:
    return sum(t.time_s for t in e.traffic)


def scaling_curve(model="megatron-1.7b", nic_gbit_s=None, zero=0, seqs_per_gpu=1, overlap=True,
                  gpus=SCALING_GPUS, base=BASE_SYSTEM) -> dict:
    """Weak scaling (every GPU keeps ``seqs_per_gpu`` sequences per step) over ``gpus`` counts.

    Arrays (seconds; efficiency in (0, 1]): compute, exposed and total data-parallel
    communication, step; efficiency = step on 1 GPU / step on N; speedup = N x efficiency;
    memory per GPU (bytes) and whether it fits.
    """
    counts = [validate.integer("gpus", g, low=1, high=10**6) for g in gpus]
    if not counts:
        raise ValueError("gpus must list at least one GPU count")
    est = [dp_estimate(model, g, nic_gbit_s, zero if g > 1 else 0, seqs_per_gpu, overlap, base) for g in counts]
    one = dp_estimate(model, 1, nic_gbit_s, 0, seqs_per_gpu, overlap, base).step_time_s
    step = np.array([e.step_time_s for e in est])
    eff = one / step
    return {"gpus": np.array(counts), "compute_s": np.array([e.compute_s for e in est]),
            "exposed_s": np.array([e.dp_exposed_s for e in est]), "comm_s": np.array([_dp_comm(e) for e in est]),
            "step_s": step, "efficiency": eff, "speedup": eff * np.array(counts),
            "memory_bytes": np.array([e.memory["total"] for e in est]),
            "usable_bytes": est[0].memory["usable"], "fits": np.array([e.fits for e in est]),
            "model": est[0].model, "system": est[0].system}


def strong_scaling(model="megatron-1.7b", global_batch=512, nic_gbit_s=None, zero=0, overlap=True,
                   gpus=SCALING_GPUS, base=BASE_SYSTEM) -> dict:
    """Strong scaling: the global batch (sequences) stays fixed; counts that do not divide it are skipped.

    speedup = step on 1 GPU / step on N (the single GPU runs the whole batch as micro-batches);
    efficiency = speedup / N.
    """
    batch = validate.integer("global_batch", global_batch, low=1, high=10**9)
    counts = [validate.integer("gpus", g, low=1, high=10**6) for g in gpus]
    counts = [g for g in counts if batch % g == 0]
    if not counts:
        raise ValueError(f"gpus must include a count that divides global_batch ({batch})")
    est = [dp_estimate(model, g, nic_gbit_s, zero if g > 1 else 0, 1, overlap, base, global_batch=batch) for g in counts]
    one = dp_estimate(model, 1, nic_gbit_s, 0, 1, overlap, base, global_batch=batch).step_time_s
    step = np.array([e.step_time_s for e in est])
    speedup = one / step
    return {"gpus": np.array(counts), "step_s": step, "compute_s": np.array([e.compute_s for e in est]),
            "exposed_s": np.array([e.dp_exposed_s for e in est]), "speedup": speedup,
            "efficiency": speedup / np.array(counts), "global_batch": batch, "model": est[0].model}


def ring_order(nodes, gpus_per_node, ring=0) -> list:
    """GPU names of DP ring ``ring`` (0 <= ring < gpus_per_node) over ``nodes`` nodes, as in
    topology.rail_fat_tree: each node visited in turn, every other node backwards, the start
    shifted by ``ring`` so that ring r leaves each node on a different rail."""
    nodes = validate.integer("nodes", nodes, low=1, high=64)
    g = validate.integer("gpus_per_node", gpus_per_node, low=1, high=16)
    r = validate.integer("ring", ring, low=0, high=g - 1)
    local = [(r + i) % g for i in range(g)]
    return [f"n{n}.gpu{i}" for n in range(nodes) for i in (local if n % 2 == 0 else local[::-1])]


def dp_ring_bandwidth(system=BASE_SYSTEM, nodes=2, ring=0) -> dict:
    """One DP ring laid over the rail-optimised fat tree: its bottleneck link (topology.ring_bottleneck),
    and the bandwidth per rank the course model gives the DP group (parallel.group_link), bytes/s per direction."""
    sys_ = hardware.resolve_system(system)
    topo = topology.rail_fat_tree(sys_.id, nodes)
    order = ring_order(nodes, sys_.gpus_per_node, ring)
    one = topo.ring_bottleneck(order)
    group = parallel.group_link(sys_, nodes * sys_.gpus_per_node, 1)
    return {"one_ring": one["bandwidth"], "bottleneck_link": one["link"], "rings": sys_.nics_per_node,
            "all_rings": min(sys_.gpu_link.per_direction, sys_.nics_per_node * sys_.nic.per_direction),
            "model_per_rank": group.bandwidth, "model_link": group.name, "order": order}


def ring_leaves(topo, order) -> dict:
    """For each hop (a, b) of ring ``order`` that leaves a node: the leaf switch (rail) it crosses."""
    hops = {}
    for a, b in zip(order, order[1:] + order[:1]):
        if a.split(".")[0] != b.split(".")[0]:
            hops[(a, b)] = next(n for n in topo.kinds if n.startswith("leaf")
                                and frozenset((a, n)) in topo.links and frozenset((b, n)) in topo.links)
    return hops


def draw_dp_ring(system=BASE_SYSTEM, nodes=2, ring=0, ax=None):
    """The rail-optimised fat tree with one DP ring drawn on it (arrows), crossings marked. Returns ax."""
    import matplotlib.pyplot as plt

    sys_ = hardware.resolve_system(system)
    topo = topology.rail_fat_tree(sys_.id, nodes)
    order = ring_order(nodes, sys_.gpus_per_node, ring)
    info = dp_ring_bandwidth(sys_, nodes, ring)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.8))  # notebook width: drawn at full size
    return views.draw_dp_ring(ax, topo, order, ring_leaves(topo, order), info, sys_.name, sys_.gpu_link.name,
                              nodes, ring)


def model_options() -> list[tuple]:
    """(label, id) for every catalog model, smallest first."""
    ids = sorted(parallel.model_ids(), key=lambda i: parallel.model(i).params)
    return [(f"{parallel.model(i).name} ({parallel.model(i).params / 1e9:.3g}B)", i) for i in ids]


# The explorer's plot and readout ask for the same estimates on every event: computed once each.
_cached_estimate = lru_cache(maxsize=256)(lambda *args: dp_estimate(*args))


_cached_curve = lru_cache(maxsize=32)(lambda *args: scaling_curve(*args))


@dataclasses.dataclass(frozen=True)
class ScalingView:
    """What the scaling explorer shows: weak scaling over SCALING_GPUS (seconds, efficiency in (0, 1])
    and, at the chosen GPU count, memory per GPU in GB per ZeRO stage (rows) and part (columns:
    weights, gradients, optimizer, activations)."""
    model: str
    zero: int
    gpus: np.ndarray
    compute_s: np.ndarray
    exposed_s: np.ndarray
    comm_s: np.ndarray
    step_s: np.ndarray
    efficiency: np.ndarray
    selected: int            # index of the chosen GPU count in ``gpus``
    selected_gpus: int
    gpus_per_node: int
    memory_gb: np.ndarray    # shape (4, 4)
    usable_gb: float
    link_gb_s: float = 0.0   # the network slider, GB/s per GPU per direction (for the title)
    seqs_per_gpu: int = 1
    overlap: bool = True


@lru_cache(maxsize=64)
def scaling_view(model, gpus, link_gb_s, zero, seqs_per_gpu, overlap) -> ScalingView:
    """The explorer's model result at these slider values (cached: the plot and readout share it)."""
    nic_gbit_s = units.bytes_to_bits(link_gb_s)
    curve = _cached_curve(model, nic_gbit_s, zero, seqs_per_gpu, overlap)
    est = [_cached_estimate(model, gpus, nic_gbit_s, z, seqs_per_gpu, overlap) for z in range(4)]
    memory = np.array([[e.memory[part] for part in views.MEMORY_PARTS] for e in est]) / units.GB
    return ScalingView(model=curve["model"], zero=zero, gpus=curve["gpus"], compute_s=curve["compute_s"],
                       exposed_s=curve["exposed_s"], comm_s=curve["comm_s"], step_s=curve["step_s"],
                       efficiency=curve["efficiency"], selected=list(curve["gpus"]).index(gpus), selected_gpus=gpus,
                       gpus_per_node=hardware.system(BASE_SYSTEM).gpus_per_node, memory_gb=memory,
                       usable_gb=est[0].memory["usable"] / units.GB, link_gb_s=link_gb_s,
                       seqs_per_gpu=seqs_per_gpu, overlap=overlap)


def _axes(fig):
    """Step time (with its efficiency twin) above, memory per GPU below: one column at notebook width."""
    ax1, ax2 = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1.5, 1]})
    return [ax1, ax2, ax1.twinx()]


def _draw(axes, **values):
    update = views.draw_scaling(axes, scaling_view(**values))
    return lambda **v: update(scaling_view(**v))


def _readout(model, gpus, link_gb_s, zero, seqs_per_gpu, overlap):
    e = _cached_estimate(model, gpus, units.bytes_to_bits(link_gb_s), zero, seqs_per_gpu, overlap)
    comm = _dp_comm(e)
    eff = e.compute_s / e.step_time_s  # pure DP: the step is compute + exposed communication
    base = hardware.system(BASE_SYSTEM)
    where = (f"inside one node over {base.gpu_link.name}" if gpus <= base.gpus_per_node
             else f"across nodes: each GPU's NIC at {link_gb_s:.3g} GB/s per direction")
    mem = e.memory
    return (f"{escape(e.model)} on {gpus} GPUs, ZeRO-{zero}, {seqs_per_gpu} sequence(s) per GPU: "
            f"{costmodel.step_phrase(e, base)} = compute {units.format_time(e.compute_s)} + exposed "
            f"communication {units.format_time(e.dp_exposed_s)} (of {units.format_time(comm)}; "
            f"{'overlapped' if overlap else 'not overlapped'}); scaling efficiency <b>{100 * eff:.1f}%</b>; "
            f"the DP ring runs {where}. Memory per GPU <b>{mem['total'] / units.GB:.1f} GB</b> of "
            f"{mem['usable'] / units.GB:.0f} GB usable ({'fits' if e.fits else 'does NOT fit'}).")


def dp_scaling_explorer(model="megatron-1.7b", gpus=64, link_gb_s=50.0, zero=0, seqs_per_gpu=1, overlap=True):
    """Sliders: model size, GPU count, network GB/s per GPU (per direction), ZeRO stage, sequences
    per GPU, overlap. Shows step time (compute vs exposed communication), scaling efficiency and
    memory per GPU, from parallel.estimate on a DGX H100 cluster whose NICs you choose.

    Shows: data-parallel scaling efficiency falls when the gradient all-reduce cannot hide behind
    compute (a slower network, no overlap), while ZeRO stages cut the memory per GPU.
    """
    import ipywidgets as w

    opts = model_options()
    validate.choice("model", model, [i for _, i in opts])
    controls = {
        # a drop-down, sorted by size: a slider's readout of such long names leaves no track in a narrow output area
        "model": w.Dropdown(options=opts, value=model, description="model (by size)"),
        "gpus": gpu_count_slider(gpus),
        "link_gb_s": link_speed_slider(link_gb_s, low=1.0, high=400.0,
                                       description="network GB/s per GPU, per direction"),
        "zero": w.Dropdown(options=[("ZeRO-0 (plain DDP)", 0), ("ZeRO-1", 1), ("ZeRO-2", 2), ("ZeRO-3", 3)],
                           value=validate.integer("zero", zero, low=0, high=3), description="ZeRO stage"),
        "seqs_per_gpu": w.SelectionSlider(options=(1, 2, 4, 8, 16), value=seqs_per_gpu,
                                          description="sequences per GPU"),
        "overlap": w.Checkbox(value=bool(overlap), description="overlap communication with the backward pass"),
    }
    return explorer(_draw, controls, readout=_readout, figsize=(7.5, 6.6), axes=_axes,
                    title="Data parallelism: step time, scaling efficiency, memory per GPU")
