"""Chapter 03, measured: published NVLS (in-switch reduction) measurements by GPU count and size.
"""
from __future__ import annotations

import numpy as np

from ... import costmodel, datafiles, evidence, hardware, style, units, validate
from ...views import nvswitch as views
from .switches import nvswitch_data


def nvls_measurements() -> list[dict]:
    """Published all-reduce busbw with and without NVLS, next to the per-direction line rate (bytes/s)."""
    rows = []
    for m in nvswitch_data()["measurements"]:
        if m["system"] is not None:
            sys_ = hardware.system(m["system"])
            line, name = sys_.gpu_link.per_direction, sys_.name
        else:
            line, name = m["line_rate_gb_s"] * units.GB, m["system_name"]
        c = evidence.compare(m["id"], line, evidence.measurement(m["busbw_gb_s"] * units.GB, "B/s busbw", m["source"]))
        busbw = c.measured.value
        algbw = m["algbw_gb_s"] * units.GB if m.get("algbw_gb_s") else busbw / costmodel.busbw_factor("all_reduce", m["gpus"])
        rows.append({"id": m["id"], "system": name, "gpus": m["gpus"], "algorithm": m["algorithm"],
                     "busbw": busbw, "algbw": algbw, "line_rate": line, "busbw_over_line": c.measured_over_model,
                     "who": m["who"], "source": c.measured.url})
    return rows


def nvls_by_gpu_count() -> list[dict]:
    """nccl issue 1455 (8x H100, 2-4 GB) against the course model, per GPU count; busbw in bytes/s.

    Model: ``costmodel.predict`` with ``algorithm`` ring and nvls, achievable efficiencies.
    """
    data = nvswitch_data()["nvls_by_gpu_count"]
    n = data["nbytes_high"]
    rows = []
    for ring, nvls in zip(data["ring"], data["nvls"]):
        g = ring["gpus"]
        model_ring = float(costmodel.predict("all_reduce", n, data["system"], gpus_per_node=g, algorithm="ring").busbw[0])
        model_nvls = float(costmodel.predict("all_reduce", n, data["system"], gpus_per_node=g, algorithm="nvls").busbw[0])
        ring_c, nvls_c = (evidence.compare(f"{g} GPUs {name}", model, evidence.measurement(
            m["busbw_low"] * units.GB, "B/s busbw", data["source"], high=m["busbw_high"] * units.GB))
            for name, model, m in (("ring", model_ring, ring), ("nvls", model_nvls, nvls)))
        rows.append({"gpus": g, "measured_ring": ring_c.measured.mid, "measured_nvls": nvls_c.measured.mid,
                     "model_ring": model_ring, "model_nvls": model_nvls, "model_best": max(model_ring, model_nvls),
                     "ratio_ring": ring_c.ratio, "ratio_nvls": nvls_c.ratio})
    return rows


def size_sweep(system_id) -> dict:
    """Published single-node all-reduce sweeps (``costmodel.published()``) for one system, with the model.

    Returns sizes (bytes), measured busbw, and model busbw for ring, nvls (where possible) and auto.
    """
    system_id = validate.choice("system_id", system_id, hardware.system_ids())
    cases = [c for c in costmodel.published()["cases"]
             if c["system"] == system_id and c.get("nodes", 1) == 1 and c["collective"] == "all_reduce"
             and c["id"].startswith("azure") and "gpus_per_node" not in c]  # whole nodes only
    if not cases:
        raise ValueError(f"system_id must have a published single-node sweep; {system_id!r} has none")
    sizes = np.array([c["nbytes"] for c in cases], dtype=float)
    grid = np.logspace(10, 33.01, 120, base=2)
    out = {"system": hardware.system(system_id).name, "sizes": sizes,
           "measured": np.array([c["busbw_gb_s"] for c in cases]) * units.GB,
           "grid": grid, "source": datafiles.source(cases[0]["source"])["url"],
           "line_rate": hardware.system(system_id).gpu_link.per_direction}
    for algorithm in ("ring", "nvls", "auto"):
        try:
            out[algorithm] = costmodel.predict("all_reduce", grid, system_id, algorithm=algorithm).busbw
        except ValueError:
            out[algorithm] = None
    return out


def show_nvls_measurements():
    """Table of published busbw with and without NVLS against the per-direction line rate."""
    views.show_nvls_measurements(nvls_measurements())


def plot_measurements():
    """Two panels: busbw vs message size (A100 and H200 sweeps) and busbw vs GPU count with NVLS (H100)."""
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(2, 1, figsize=(7.5, 8.0))  # one above the other, at notebook width
    blue, red = style.SERIES_COLOURS[:2]  # one colour per system compared
    sweeps = [("A100", blue, size_sweep("dgx-a100")), ("H200", red, size_sweep("dgx-h200"))]
    views.draw_measurements(left, right, sweeps, nvls_by_gpu_count(), hardware.nvlink(4).per_direction)
    fig.tight_layout()
    return fig
