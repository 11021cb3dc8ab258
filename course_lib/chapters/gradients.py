"""Chapter 00: how long does exchanging one step's gradients take?"""
from __future__ import annotations

import numpy as np

from .. import costmodel, hardware, units, validate
from ..views import gradients as views
from ..widgets import explorer, gpu_count_slider, link_speed_slider

# Reference links drawn on the plot: per-GPU bandwidth per direction from the catalog.
REFERENCE_LINKS = (
    ("PCIe Gen4 x16", lambda: hardware.pcie_link(4, 16).per_direction),
    ("PCIe Gen5 x16", lambda: hardware.pcie_link(5, 16).per_direction),
    ("IB NDR (1 NIC/GPU)", lambda: hardware.network("ib-ndr").per_direction),
    ("NVLink 3 (A100)", lambda: hardware.nvlink(3).per_direction),
    ("NVLink 4 (H100)", lambda: hardware.nvlink(4).per_direction),
    ("NVLink 5 (B200)", lambda: hardware.nvlink(5).per_direction),
)


def gradient_bytes(parameters, bytes_per_value=2) -> float:
    """Bytes of gradients one step produces: one value per parameter (BF16/FP16: 2 bytes)."""
    parameters = validate.positive("parameters", parameters)
    bytes_per_value = validate.number("bytes_per_value", bytes_per_value, low=0.5, high=8)
    return parameters * bytes_per_value


def exchange_time(parameters, gpus, link_bytes_per_s, bytes_per_value=2, latency=0.0):
    """Seconds for a ring all-reduce of one step's gradients over links of ``link_bytes_per_s``
    (bytes/s per direction per GPU), with ``latency`` seconds per ring step."""
    gpus = validate.integer("gpus", gpus, low=2, high=100_000)
    link = validate.positive("link_bytes_per_s", link_bytes_per_s)
    nbytes = gradient_bytes(parameters, bytes_per_value)
    return costmodel.collective_time("all_reduce", nbytes, gpus, link, latency, algorithm="ring")


SPEEDS_GB_S = np.logspace(0, np.log10(2000), 200)  # the curve's x axis, GB/s per direction


def exchange_curve(gpus, link_gb_s, parameters_b, dtype_bytes) -> dict:
    """The explorer's model result: step time over ``SPEEDS_GB_S``, at each reference link and at yours."""
    p = parameters_b * 1e9
    refs = [(name, bandwidth() / units.GB) for name, bandwidth in REFERENCE_LINKS]
    # No latency term: the time is inversely proportional to the bandwidth (one model call, not 200).
    at_one_gb_s = exchange_time(p, gpus, units.GB, dtype_bytes)
    return {"speeds_gb_s": SPEEDS_GB_S, "times_s": at_one_gb_s / SPEEDS_GB_S,
            "references": [(name, gb_s, exchange_time(p, gpus, gb_s * units.GB, dtype_bytes)) for name, gb_s in refs],
            "chosen_s": exchange_time(p, gpus, link_gb_s * units.GB, dtype_bytes),
            "gradient_bytes": gradient_bytes(p, dtype_bytes), "gpus": gpus, "link_gb_s": link_gb_s}


def _draw(ax, gpus, link_gb_s, parameters_b, dtype_bytes):
    """Draw once (:func:`course_lib.views.gradients.draw_exchange`); returns the updater for later slider events."""
    update = views.draw_exchange(ax, exchange_curve(gpus, link_gb_s, parameters_b, dtype_bytes))
    return lambda **values: update(exchange_curve(**values))


def _readout(gpus, link_gb_s, parameters_b, dtype_bytes):
    nbytes = gradient_bytes(parameters_b * 1e9, dtype_bytes)
    t = exchange_time(parameters_b * 1e9, gpus, link_gb_s * units.GB, dtype_bytes)
    return (f"Ring all-reduce of {units.format_bytes(nbytes)} over {gpus} GPUs at "
            f"{link_gb_s:.3g} GB/s per direction: <b>{units.format_time(t)}</b> per step "
            f"(each GPU sends {units.format_bytes(2 * (gpus - 1) / gpus * nbytes)})")


def gradient_exchange_explorer(parameters_b=70.0, gpus=8, link_gb_s=50.0):
    """Sliders on GPU count, link speed (GB/s per direction), model size and precision.

    Shows: the time to exchange one step's gradients doubles with the model size and halves with the
    link speed, but barely grows with the GPU count, because a ring sends 2(p-1)/p of the buffer per
    GPU.
    """
    import ipywidgets as w
    controls = {
        "gpus": gpu_count_slider(gpus),
        "link_gb_s": link_speed_slider(link_gb_s),
        "parameters_b": w.FloatLogSlider(value=parameters_b, base=10, min=0, max=np.log10(2000), step=0.01,
                                         description="parameters (billions)", readout_format=".3g"),
        "dtype_bytes": w.Dropdown(options=[("BF16/FP16 (2 bytes)", 2), ("FP32 (4 bytes)", 4)], value=2,
                                  description="gradient type"),
    }
    return explorer(_draw, controls, readout=_readout, title="Time to exchange one step's gradients")
