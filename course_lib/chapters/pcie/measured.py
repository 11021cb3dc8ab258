"""Chapter 01, measured: published host<->device copies (pinned and pageable) and your own measurement against the spec.
"""
from __future__ import annotations

from ... import evidence, hardware, units, validate
from ...lab.host_device import DIRECTIONS, MEMORIES, HostDeviceMeasurement, measure_host_device_bandwidth  # noqa: F401 (public here)
from ...views import pcie as views
from .links import LANES, generations, published


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
