"""Chapter 01, PCIe trees: GPUs on CPU root ports or behind switches, copies through the host, the switch explorer.

Bandwidths in bytes/s per direction; trees come from :mod:`course_lib.topology`.
"""
from __future__ import annotations

from html import escape

import numpy as np

from ... import hardware, style, topology, units, validate
from ...views import graphs
from ...views import pcie as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider
from .links import LANES, describe_link, generations


MODES = ("to-host", "staged", "p2p-switch")
MODE_LABELS = {
    "to-host": "every GPU copies to host memory",
    "staged": "GPU -> host -> GPU (no P2P: two copies)",
    "p2p-switch": "P2P between GPUs under the switch",
}
EXPLORER_GPU_COUNTS = (1, 2, 4, 8, 16)


def transfer_time(nbytes, bandwidth, latency=0.0) -> float:
    """Seconds to move ``nbytes`` bytes over ``bandwidth`` bytes/s (per direction), plus ``latency`` seconds."""
    nbytes = validate.non_negative("nbytes", nbytes)
    bandwidth = validate.positive("bandwidth", bandwidth)
    latency = validate.non_negative("latency", latency)
    return latency + nbytes / bandwidth


def shared_bandwidth(link_bandwidth, uplink_bandwidth, gpus) -> float:
    """Bytes/s per direction each GPU gets when ``gpus`` GPUs behind one switch use its uplink at once.

    min(own link, uplink / gpus): below the switch every GPU has its own link; above it they share one.
    """
    link_bandwidth = validate.positive("link_bandwidth", link_bandwidth)
    uplink_bandwidth = validate.positive("uplink_bandwidth", uplink_bandwidth)
    gpus = validate.integer("gpus", gpus, low=1, high=1024)
    return min(link_bandwidth, uplink_bandwidth / gpus)


def staged_copy_time(nbytes, src_bandwidth, dst_bandwidth=None, pipelined=False) -> float:
    """Seconds to copy GPU -> host memory -> GPU without P2P (bandwidths in bytes/s per direction).

    Two copies one after the other: nbytes/src + nbytes/dst. ``pipelined=True`` models a driver
    that overlaps the two halves in chunks: nbytes / min(src, dst), the best case.
    """
    nbytes = validate.non_negative("nbytes", nbytes)
    src = validate.positive("src_bandwidth", src_bandwidth)
    dst = src if dst_bandwidth is None else validate.positive("dst_bandwidth", dst_bandwidth)
    if not isinstance(pipelined, bool):
        raise ValueError(f"pipelined must be True or False, got {pipelined!r}")
    return nbytes / min(src, dst) if pipelined else nbytes / src + nbytes / dst


def switch_copy_time(nbytes, gpus, link_bandwidth, uplink_bandwidth, mode="staged") -> float:
    """Seconds for each of ``gpus`` GPUs behind one PCIe switch to move ``nbytes`` at the same time.

    mode "to-host": every GPU copies to host memory through the shared uplink;
    "staged": every GPU sends to another GPU through host memory (no P2P), two copies each
    through the uplink; "p2p-switch": GPUs copy to each other through the switch (P2P) and
    never touch the uplink. Bandwidths in bytes/s per direction.
    """
    nbytes = validate.non_negative("nbytes", nbytes)
    mode = validate.choice("mode", mode, MODES)
    each = shared_bandwidth(link_bandwidth, uplink_bandwidth, gpus)
    if mode == "to-host":
        return nbytes / each
    if mode == "staged":
        return 2 * nbytes / each
    return nbytes / link_bandwidth


def draw_pcie_trees(generation=4):
    """Two 2-socket 8-GPU PCIe trees side by side: GPUs on CPU root ports, and GPUs behind PCIe switches."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    for ax, switches in zip(axes, (False, True)):
        graphs.draw(topology.pcie_tree(switches, gpus=8, generation=generation), ax=ax)  # text sized for the width
    fig.tight_layout()
    return fig


def host_bandwidth_per_gpu(topo: topology.Topology) -> dict:
    """Bytes/s per direction each GPU gets to its CPU when every GPU copies to host memory at once.

    A GPU on a CPU root port keeps its own link; GPUs behind a PCIe switch share the switch's uplink.
    """
    if not isinstance(topo, topology.Topology):
        raise ValueError(f"topo must be a course_lib.topology.Topology, got {topo!r}")
    out = {}
    for gpu in topo.gpus:
        links = [(key, bw) for key, bw in topo.links.items() if gpu in key]
        if len(links) != 1:
            raise ValueError(f"topo must be a PCIe tree with one link per GPU; {gpu!r} has {len(links)}")
        key, bw = links[0]
        (up,) = key - {gpu}
        if topo.kinds[up] not in ("cpu", "pcie_switch"):
            raise ValueError(f"topo must be a PCIe tree (GPUs on CPUs or PCIe switches); {gpu!r} hangs on a {topo.kinds[up]}")
        if topo.kinds[up] == "pcie_switch":
            below = [g for g in topo.gpus if frozenset((g, up)) in topo.links]
            uplink = sum(v for k, v in topo.links.items() if up in k and all(topo.kinds[n] != "gpu" for n in k))
            out[gpu] = min(bw, uplink / len(below))
        else:
            out[gpu] = bw
    return out


def cpu_lanes_used(topo: topology.Topology, lanes=16) -> int:
    """CPU lanes taken by the tree: one x``lanes`` port per device attached straight to a CPU (CPU-CPU links excluded)."""
    if not isinstance(topo, topology.Topology):
        raise ValueError(f"topo must be a course_lib.topology.Topology, got {topo!r}")
    lanes = validate.integer("lanes", lanes, low=1, high=16)
    ports = [k for k in topo.links if any(topo.kinds[n] == "cpu" for n in k)
             and not all(topo.kinds[n] == "cpu" for n in k)]
    return len(ports) * lanes


def draw_system(system_id="consumer-4090-pcie"):
    """Draw a 2-GPU catalog system (CPU and both GPUs with their links) from :mod:`course_lib.topology`."""
    import matplotlib.pyplot as plt
    _, ax = plt.subplots(figsize=(6.5, 3.2))
    graphs.draw(topology.bridge_pair(system_id), ax=ax)
    ax.set_title(ax.get_title(), fontsize=style.FONT_NORMAL)
    return ax


def tree_summary(generation=4) -> list[dict]:
    """Both 8-GPU trees: CPU lanes used, host bandwidth per GPU, GPU pairs, bisection (GB/s per direction)."""
    rows = []
    for switches in (False, True):
        t = topology.pcie_tree(switches, gpus=8, generation=generation)
        host = host_bandwidth_per_gpu(t)
        rows.append({"tree": "with PCIe switches" if switches else "GPUs on CPU root ports",
                     "CPU lanes used": cpu_lanes_used(t),
                     "to host, all GPUs at once": round(min(host.values()) / units.GB, 1),
                     "gpu0->gpu1": round(t.pair_bandwidth("gpu0", "gpu1") / units.GB, 1),
                     "gpu0->gpu7 (other socket)": round(t.pair_bandwidth("gpu0", "gpu7") / units.GB, 1),
                     "bisection (4 GPUs -> 4 GPUs)": round(t.bisection_bandwidth() / units.GB, 1)})
    return rows


def switch_curves(generation, lanes, gpus, uplink_gb_s, payload_gb, mode) -> dict:
    """The switch explorer's model result: seconds per copy mode over ``EXPLORER_GPU_COUNTS``, and at ``gpus``."""
    link = hardware.pcie_link(generation, lanes).per_direction
    uplink, nbytes = uplink_gb_s * units.GB, payload_gb * units.GB
    counts = np.array(EXPLORER_GPU_COUNTS)
    return {"counts": counts, "link_gb_s": link / units.GB, "nbytes": nbytes,
            "times_s": {m: [switch_copy_time(nbytes, int(n), link, uplink, m) for n in counts] for m in MODES},
            "chosen_s": switch_copy_time(nbytes, gpus, link, uplink, mode)}


def _switch_view_args(generation, lanes, gpus, uplink_gb_s, payload_gb, mode):
    c = switch_curves(generation, lanes, gpus, uplink_gb_s, payload_gb, mode)
    return (c, mode, gpus, f"Gen{generation} x{lanes} GPUs ({c['link_gb_s']:.3g} GB/s per direction each), "
                           f"uplink {uplink_gb_s:.3g} GB/s per direction, {units.format_bytes(c['nbytes'])} each")


def _draw_switch(ax, **values):
    args = _switch_view_args(**values)
    update = views.draw_switch(ax, args[0], MODE_LABELS, *args[1:])
    return lambda **values: update(*_switch_view_args(**values))


def _readout_switch(generation, lanes, gpus, uplink_gb_s, payload_gb, mode):
    link = hardware.pcie_link(generation, lanes).per_direction
    uplink = uplink_gb_s * units.GB
    each = shared_bandwidth(link, uplink, gpus)
    t = switch_copy_time(payload_gb * units.GB, gpus, link, uplink, mode)
    return (f"{escape(describe_link(generation, lanes))}.<br>{gpus} GPU(s) sharing a {uplink_gb_s:.3g} GB/s uplink get "
            f"{units.format_bandwidth(each)} each through it. {escape(MODE_LABELS[mode])}: "
            f"<b>{units.format_time(t)}</b> for {units.format_bytes(payload_gb * units.GB)} per GPU.")


def pcie_explorer(generation=4, lanes=16, gpus=4, uplink_gb_s=None, payload_gb=1.0, mode="staged"):
    """Sliders on generation, lanes, GPU count behind one switch, uplink speed (GB/s per direction), payload, copy mode.

    Shows: GPUs behind one PCIe switch share its uplink, so copies through the host slow down as
    more GPUs share it, staging GPU to GPU through the host costs two such copies, and P2P under the
    switch avoids the uplink.
    """
    import ipywidgets as w
    generation = validate.integer("generation", generation, low=1, high=len(generations()))
    lanes = validate.integer("lanes", lanes, low=1, high=16)
    if lanes not in LANES:
        raise ValueError(f"lanes must be one of {LANES}, got {lanes}")
    if uplink_gb_s is None:
        uplink_gb_s = hardware.pcie_link(generation, 16).per_direction / units.GB
    mode = validate.choice("mode", mode, MODES)
    payload_gb = validate.number("payload_gb", payload_gb, low=0.001, high=1000)
    controls = {
        "generation": w.SelectionSlider(options=generations(), value=generation, description="PCIe generation"),
        "lanes": w.SelectionSlider(options=LANES, value=lanes, description="lanes per GPU"),
        "gpus": gpu_count_slider(gpus, options=EXPLORER_GPU_COUNTS, description="GPUs behind the switch"),
        "uplink_gb_s": link_speed_slider(uplink_gb_s, low=1.0, high=500.0,
                                         description="switch uplink GB/s per direction"),
        "payload_gb": w.FloatLogSlider(value=payload_gb, base=10, min=-3, max=3, step=0.01,
                                       description="payload per GPU (GB)", readout_format=".3g"),
        "mode": w.Dropdown(options=[(MODE_LABELS[m], m) for m in MODES], value=mode, description="traffic"),
    }
    return explorer(_draw_switch, controls, readout=_readout_switch, follow={"generation": _uplink_for},
                    title="PCIe link, switch uplink and GPU count -> transfer time")


def _uplink_for(generation) -> dict:
    """The switch's x16 uplink is of the chosen generation: moving the generation moves the uplink."""
    return {"uplink_gb_s": hardware.pcie_link(generation, 16).per_direction / units.GB}
