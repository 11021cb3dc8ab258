"""Chapter 01, offloading: CPU-GPU links (PCIe and NVLink-C2C) and what ZeRO-Offload sends across them each step.
"""
from __future__ import annotations

import numpy as np

from ... import datafiles, hardware, units, validate
from ...views import pcie as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider
from .links import published


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
