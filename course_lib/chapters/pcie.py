"""Chapter 01: PCIe lanes and generations, the PCIe tree, staging through host memory, offloading.

Every bandwidth is bytes/s **per direction** unless a name says ``bidirectional``.
Link rates come from :mod:`course_lib.hardware` (derived from transfer rate, encoding
and lane count); published host<->device measurements, CPU lane counts and CPU-GPU
NVLink figures come from ``data/published_pcie.json``, each with its source.
Drawings of PCIe trees come from :mod:`course_lib.topology`.
"""
from __future__ import annotations

from functools import lru_cache
from html import escape

import numpy as np

from .. import datafiles, evidence, hardware, tables, topology, units, validate
from ..lab.host_device import (DIRECTIONS, MEMORIES, HostDeviceMeasurement,  # noqa: F401 (public here)
                               measure_host_device_bandwidth)
from ..views import pcie as views
from ..widgets import explorer, gpu_count_slider, link_speed_slider

LANES = hardware.PCIE_LANE_COUNTS
MODES = ("to-host", "staged", "p2p-switch")
MODE_LABELS = {
    "to-host": "every GPU copies to host memory",
    "staged": "GPU -> host -> GPU (no P2P: two copies)",
    "p2p-switch": "P2P between GPUs under the switch",
}
EXPLORER_GPU_COUNTS = (1, 2, 4, 8, 16)


# ---------------------------------------------------------------- data

@lru_cache(maxsize=1)
def published() -> dict:
    """The raw ``data/published_pcie.json``: measurements, CPU-GPU links, CPU lanes, sources."""
    return datafiles.load("published_pcie.json")


def generations() -> tuple[int, ...]:
    """The PCIe generations in the catalog (1 ... 7)."""
    return tuple(row["generation"] for row in hardware.catalog()["pcie"])


# ---------------------------------------------------------------- link arithmetic

def encoding_efficiency(generation) -> float:
    """Fraction of the bits on the wire that carry data: 8/10 (Gen1-2), 128/130 (Gen3-5), 236/256 (FLIT, Gen6-7: TLP bytes only)."""
    generation = validate.integer("generation", generation, low=1, high=len(generations()))
    row = hardware.catalog()["pcie"][generation - 1]
    return row["payload_bits"] / row["line_bits"]


def link_steps(generation, lanes=16) -> dict:
    """The derivation of a link's bandwidth, step by step.

    transfer rate (GT/s, one bit per transfer per lane) x lanes = raw Gb/s on the wire;
    x encoding efficiency = data Gb/s; / 8 = GB/s per direction; x 2 = bidirectional total.
    """
    link = hardware.pcie_link(generation, lanes)
    row = hardware.catalog()["pcie"][int(generation) - 1]
    raw_gbit = row["transfer_rate_gt_s"] * link_lanes(link)
    data_gbit = raw_gbit * encoding_efficiency(generation)
    return {"name": link.name, "generation": row["generation"], "lanes": link_lanes(link),
            "gt_s_per_lane": row["transfer_rate_gt_s"], "encoding": row["encoding"],
            "efficiency": encoding_efficiency(generation),
            "raw_gbit_s": raw_gbit, "data_gbit_s": data_gbit,
            "gb_s_per_direction": link.per_direction / units.GB,
            "gb_s_bidirectional": link.bidirectional / units.GB, "source": datafiles.source(link.source)["url"]}


def link_lanes(link: hardware.Link) -> int:
    """Lane count of a PCIe link from the catalog (``pcie-gen4-x16`` -> 16)."""
    if not isinstance(link, hardware.Link) or link.family != "pcie":
        raise ValueError(f"link must be a PCIe hardware.Link such as hardware.pcie_link(4, 16), got {link!r}")
    return int(link.id.rsplit("-x", 1)[1])


def describe_link(generation, lanes=16) -> str:
    """One line: 'Gen4 x16: 16 GT/s x 16 lanes = 256 Gb/s raw; x 128/130 = 252 Gb/s data; / 8 = 31.5 GB/s per direction'."""
    s = link_steps(generation, lanes)
    row = hardware.catalog()["pcie"][s["generation"] - 1]
    eff = s["encoding"].split(" ")[0] if s["generation"] < 6 else f"{row['payload_bits']}/{row['line_bits']} (FLIT)"
    lanes_word = "lane" if s["lanes"] == 1 else "lanes"
    return (f"PCIe Gen{s['generation']} x{s['lanes']}: {s['gt_s_per_lane']:g} GT/s x {s['lanes']} {lanes_word} = "
            f"{s['raw_gbit_s']:.4g} Gb/s on the wire; x {eff} = {s['data_gbit_s']:.4g} Gb/s of data; "
            f"/ 8 = {s['gb_s_per_direction']:.4g} GB/s per direction ({s['gb_s_bidirectional']:.4g} GB/s bidirectional)")


def generation_table(lanes=16) -> list[dict]:
    """One row per generation: year, GT/s, encoding, efficiency, one lane and ``lanes`` lanes (GB/s per direction), bidirectional."""
    lanes = validate.integer("lanes", lanes, low=1, high=16)
    rows = []
    for row in hardware.catalog()["pcie"]:
        g = row["generation"]
        link = hardware.pcie_link(g, lanes)
        rows.append({"generation": g, "year": row["year"], "gt_s_per_lane": row["transfer_rate_gt_s"],
                     "encoding": row["encoding"].split(" (")[0], "efficiency": round(encoding_efficiency(g), 4),
                     "x1_gb_s_per_direction": round(hardware.pcie_lane_bandwidth(g) / units.GB, 3),
                     f"x{lanes}_gb_s_per_direction": round(link.per_direction / units.GB, 2),
                     f"x{lanes}_gb_s_bidirectional": round(link.bidirectional / units.GB, 2)})
    return rows


def print_table(rows, columns=None) -> None:
    """Print a list of dicts as an aligned text table with human headers (:func:`course_lib.tables.text_table`)."""
    print(tables.text_table(rows, columns))


def source_material_claims() -> dict:
    """The figures popular articles label 'bidirectional' (GB/s), keyed by generation."""
    claims = published()["source_material_claims"]
    return {int(k): float(v) for k, v in claims["gb_s_called_bidirectional"].items()}


# ---------------------------------------------------------------- time to move bytes

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


# ---------------------------------------------------------------- lanes

def lane_budget(gpus, nics=0, nvme=0, gpu_lanes=16, nic_lanes=16, nvme_lanes=4) -> int:
    """PCIe lanes a server needs: gpus x gpu_lanes + nics x nic_lanes + nvme drives x nvme_lanes."""
    counts = [validate.integer(n, v, low=0, high=1024) for n, v in (("gpus", gpus), ("nics", nics), ("nvme", nvme))]
    widths = []
    for name, value in (("gpu_lanes", gpu_lanes), ("nic_lanes", nic_lanes), ("nvme_lanes", nvme_lanes)):
        value = validate.integer(name, value, low=1, high=16)
        if value not in LANES:
            raise ValueError(f"{name} must be one of {LANES}, got {value}")
        widths.append(value)
    return sum(c * w for c, w in zip(counts, widths))


def cpu_lanes(config="epyc-rome-2p") -> dict:
    """A CPU configuration from the data file with ``usable_lanes`` = sockets x (lanes per socket - socket link)."""
    rows = {r["id"]: r for r in published()["cpu_lanes"]}
    row = dict(rows[validate.choice("config", config, rows)])
    row["usable_lanes"] = row["sockets"] * (row["lanes_per_socket"] - row["lanes_for_socket_link"])
    return row


def gpus_on_cpu_lanes(usable_lanes, lanes_per_gpu=16) -> int:
    """How many GPUs of ``lanes_per_gpu`` lanes fit on the CPU's lanes alone (nothing else attached)."""
    usable_lanes = validate.integer("usable_lanes", usable_lanes, low=0, high=4096)
    lanes_per_gpu = validate.integer("lanes_per_gpu", lanes_per_gpu, low=1, high=16)
    return usable_lanes // lanes_per_gpu


# ---------------------------------------------------------------- CPU-GPU NVLink and offloading

def cpu_gpu_links() -> list[dict]:
    """CPU-GPU links that are not PCIe (POWER9-V100 NVLink 2, Grace Hopper NVLink-C2C), GB/s per direction and both."""
    out = []
    for row in published()["cpu_gpu_links"]:
        per = row["links"] * row["link_gb_s_per_direction"]
        out.append({"id": row["id"], "name": row["name"], "gb_s_per_direction": per, "gb_s_bidirectional": 2 * per,
                    "source": datafiles.source(row["source"])["url"]})
    return out


def cpu_gpu_link(link_id) -> hardware.Link:
    """A CPU-GPU NVLink from the data file as a :class:`hardware.Link` (bytes/s per direction)."""
    rows = {r["id"]: r for r in published()["cpu_gpu_links"]}
    row = rows[validate.choice("link_id", link_id, rows)]
    per = row["links"] * row["link_gb_s_per_direction"] * units.GB
    return hardware.Link(id=row["id"], name=row["name"], family="nvlink", per_direction=per, source=row["source"],
                         detail=f"{row['links']} x {row['link_gb_s_per_direction']:g} GB/s per direction")


def offload_bytes(parameters, bytes_per_value=None) -> float:
    """Bytes ZeRO-Offload moves each way per step: one 2-byte (FP16) value per parameter down and one up."""
    parameters = validate.positive("parameters", parameters)
    if bytes_per_value is None:
        bytes_per_value = published()["offload"]["bytes_per_parameter_to_host"]
    bytes_per_value = validate.number("bytes_per_value", bytes_per_value, low=0.5, high=8)
    return parameters * bytes_per_value


def offload_time(parameters, bandwidth, gpus=1, bytes_per_value=None, overlap=False) -> float:
    """Seconds per step to move ZeRO-Offload's gradients to the host and parameters back.

    Each of ``gpus`` data-parallel GPUs moves its 1/gpus share over its own link of ``bandwidth``
    bytes/s per direction. The two transfers run one after the other (gradients during backward,
    parameters after the CPU's optimizer step); ``overlap=True`` assumes they fully overlap,
    which full duplex allows because they go in opposite directions.
    """
    bandwidth = validate.positive("bandwidth", bandwidth)
    gpus = validate.integer("gpus", gpus, low=1, high=100_000)
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True or False, got {overlap!r}")
    one_way = offload_bytes(parameters, bytes_per_value) / gpus / bandwidth
    return one_way if overlap else 2 * one_way


# ---------------------------------------------------------------- published measurements

def _value(gb_s) -> tuple[float, float, float]:
    if isinstance(gb_s, list):
        return (gb_s[0] + gb_s[1]) / 2, gb_s[0], gb_s[1]
    return float(gb_s), float(gb_s), float(gb_s)


def measurements(generation=None, memory=None) -> list[dict]:
    """Published host<->device measurements with the link's spec and the achieved fraction (per direction)."""
    if generation is not None:
        generation = validate.integer("generation", generation, low=1, high=len(generations()))
    if memory is not None:
        memory = validate.choice("memory", memory, MEMORIES)
    rows = []
    for m in published()["measurements"]:
        if generation is not None and m["generation"] != generation:
            continue
        if memory is not None and m["memory"] != memory:
            continue
        mid, low, high = _value(m["gb_s"])
        spec = hardware.pcie_link(m["generation"], m["lanes"]).per_direction / units.GB
        if m["direction"] == "bidirectional_sum":
            spec *= 2
        c = evidence.compare(m["id"], spec, evidence.measurement(low, "GB/s", m["source"], high=high))
        rows.append({**m, "gb_s_mid": mid, "gb_s_low": low, "gb_s_high": high, "spec_gb_s": spec,
                     "fraction_of_spec": c.measured_over_model, "url": c.measured.url})
    return rows


def _is_special(m) -> bool:
    """True for measurements that are not one GPU copying one way from local memory with copy engines."""
    return (m["placement"] in ("remote socket", "all GPUs at once") or "while" in m["direction"]
            or m["direction"] == "bidirectional_sum" or "kernel copies" in m["tool"])


def measurement(measurement_id) -> dict:
    """One published measurement by id (see ``measurements()``), with spec and fraction of spec."""
    rows = {m["id"]: m for m in measurements()}
    return rows[validate.choice("measurement_id", measurement_id, rows)]


def achievable_summary() -> list[dict]:
    """Per generation: spec (GB/s per direction), best published pinned and pageable copy, and their fractions.

    Only single-GPU, local-socket, copy-engine measurements count as 'best'.
    """
    out = []
    for g in sorted({m["generation"] for m in published()["measurements"]}):
        spec = hardware.pcie_link(g, 16).per_direction / units.GB
        row = {"generation": g, "spec_gb_s_per_direction": round(spec, 2)}
        for memory in MEMORIES:
            good = [m for m in measurements(g, memory) if not _is_special(m)]
            if good:
                best = max(good, key=lambda m: m["gb_s_high"])
                row[f"best_{memory}_gb_s"] = best["gb_s_high"]
                row[f"{memory}_fraction"] = round(best["gb_s_high"] / spec, 2)
            else:
                row[f"best_{memory}_gb_s"] = None
                row[f"{memory}_fraction"] = None
        out.append(row)
    return out


# ---------------------------------------------------------------- measuring on a real GPU (course_lib.lab.host_device)

def report_measurement(measured: HostDeviceMeasurement, generation=None, lanes=None) -> list[dict]:
    """Print the measurement against its link's spec (or, without a GPU, say so); return the rows.

    generation/lanes override what nvidia-smi reported (needed where it is unavailable).
    """
    if not isinstance(measured, HostDeviceMeasurement):
        raise ValueError("measured must be the result of measure_host_device_bandwidth()")
    if not measured.available:
        print(f"No measurement: {measured.reason}.")
        print("The plot below shows published bandwidthTest/nvbandwidth results instead.")
        return []
    gen = measured.pcie_generation if generation is None else validate.integer("generation", generation, low=1, high=7)
    width = measured.pcie_lanes if lanes is None else validate.integer("lanes", lanes, low=1, high=16)
    spec = hardware.pcie_link(gen, width).per_direction if gen and width in LANES else None
    print(f"{measured.device_name}: {units.format_bytes(measured.nbytes)} per copy"
          + (f", link PCIe Gen{gen} x{width}: {units.format_bandwidth(spec)} spec" if spec else
             " (link unknown: pass generation= and lanes=)"))
    rows = []
    for r in measured.results:
        frac = r["bytes_per_s"] / spec if spec else None
        rows.append({**r, "fraction_of_spec": frac})
        print(f"  {r['direction']:>3} {r['memory']:<8} {units.format_bandwidth(r['bytes_per_s'])}"
              + (f"  = {frac:.0%} of spec" if frac else ""))
    return rows


# ---------------------------------------------------------------- plots

def plot_generations(ax=None, lanes=16):
    """Bars: each generation's x16 bandwidth per direction and bidirectional; red marks where the source text says 'bidirectional'."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    return views.draw_generations(ax, generation_table(lanes), source_material_claims(), lanes)


def plot_lanes(ax=None):
    """Per-direction bandwidth for every generation x lane count (log scale)."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    by_generation = {g: [hardware.pcie_link(g, n).per_direction / units.GB for n in LANES] for g in generations()}
    return views.draw_lanes(ax, LANES, by_generation)


def plot_published(ax=None, measured: HostDeviceMeasurement | None = None):
    """Published host<->device copies (pinned and pageable) against each x16 link's spec, GB/s per direction."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    gens = sorted({m["generation"] for m in published()["measurements"]})
    specs = {g: hardware.pcie_link(g, 16).per_direction / units.GB for g in gens}
    rows = [dict(m, special=_is_special(m)) for m in measurements() if m["direction"] != "bidirectional_sum"]
    yours = []
    if measured is not None and measured.available and measured.pcie_generation:
        yours = [(measured.pcie_generation, r["bytes_per_s"] / units.GB) for r in measured.results]
    return views.draw_published(ax, specs, rows, yours)


def draw_pcie_trees(generation=4):
    """Two 2-socket 8-GPU PCIe trees side by side: GPUs on CPU root ports, and GPUs behind PCIe switches."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    for ax, switches in zip(axes, (False, True)):
        topology.pcie_tree(switches, gpus=8, generation=generation).draw(ax=ax)  # text sized for the width
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
    topology.bridge_pair(system_id).draw(ax=ax)
    ax.set_title(ax.get_title(), fontsize=9)
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


# ---------------------------------------------------------------- explorers

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


def offload_curve(parameters_b, link_gb_s, gpus, overlap) -> dict:
    """The offload explorer's model result: seconds per step over link speeds, at reference links and at yours."""
    speeds = np.logspace(0, np.log10(1000), 200)
    p = parameters_b * 1e9
    refs = [(f"PCIe Gen{g} x16", hardware.pcie_link(g, 16).per_direction) for g in (3, 4, 5)]
    refs += [(r["name"].split(" (")[0], r["gb_s_per_direction"] * units.GB) for r in cpu_gpu_links()]
    return {"speeds_gb_s": speeds,
            "times_s": [offload_time(p, s * units.GB, gpus, overlap=overlap) for s in speeds],
            "references": [(name, bw / units.GB, offload_time(p, bw, gpus, overlap=overlap)) for name, bw in refs],
            "chosen_s": offload_time(p, link_gb_s * units.GB, gpus, overlap=overlap)}


def _offload_view_args(parameters_b, link_gb_s, gpus, overlap):
    return offload_curve(parameters_b, link_gb_s, gpus, overlap), link_gb_s, f"{parameters_b:.3g}B parameters, {gpus} GPU(s)"


def _draw_offload(ax, **values):
    update = views.draw_offload(ax, *_offload_view_args(**values))
    return lambda **values: update(*_offload_view_args(**values))


def _readout_offload(parameters_b, link_gb_s, gpus, overlap):
    p = parameters_b * 1e9
    each = offload_bytes(p) / gpus
    t = offload_time(p, link_gb_s * units.GB, gpus, overlap=overlap)
    return (f"Each GPU sends {units.format_bytes(each)} of gradients to the host and receives "
            f"{units.format_bytes(each)} of parameters at {link_gb_s:.3g} GB/s per direction: "
            f"<b>{units.format_time(t)}</b> per step ({'overlapped' if overlap else 'one after the other'}).")


def offload_explorer(parameters_b=13.0, link_gb_s=None, gpus=1, overlap=False):
    """Sliders on model size, CPU-GPU link speed (GB/s per direction), GPU count and overlap for ZeRO-Offload traffic.

    Shows: ZeRO-Offload moves every step's gradients and parameters across the CPU-GPU link, so its
    time grows with the model, falls with link speed and data-parallel GPUs, and overlapping the two
    directions halves it.
    """
    import ipywidgets as w
    if link_gb_s is None:
        link_gb_s = hardware.pcie_link(4, 16).per_direction / units.GB
    parameters_b = validate.number("parameters_b", parameters_b, low=0.1, high=2000)
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True or False, got {overlap!r}")
    controls = {
        "parameters_b": w.FloatLogSlider(value=parameters_b, base=10, min=-1, max=np.log10(2000), step=0.01,
                                         description="parameters (billions)", readout_format=".3g"),
        "link_gb_s": link_speed_slider(link_gb_s, low=1.0, high=1000.0, description="CPU-GPU link GB/s per direction"),
        "gpus": gpu_count_slider(gpus, options=(1, 2, 4, 8, 16, 32, 64), description="data-parallel GPUs"),
        "overlap": w.Checkbox(value=overlap, description="overlap the two directions"),
    }
    return explorer(_draw_offload, controls, readout=_readout_offload,
                    title="Offloading optimizer state: what crosses the CPU-GPU link each step")
