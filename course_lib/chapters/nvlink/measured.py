"""Chapter 02, measured: published NVLink measurements against the model.
"""
from __future__ import annotations

from functools import lru_cache

from ... import costmodel, datafiles, evidence, hardware, units, validate
from ...views import nvlink as views


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
