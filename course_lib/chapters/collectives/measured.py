"""Chapter 04, measured: the lab's timings against the model, oversubscribed CPU ranks, published sweeps and where the model fails.
"""
from __future__ import annotations

import math

import numpy as np

from ... import costmodel, datafiles, evidence, hardware, units, validate
from ...views import collectives as views
from ...views.collectives import format_oversubscription, oversubscription_lines  # noqa: F401 (public here)
from .patterns import _ranks


def _rows_at(rows, algorithm):
    return {(r["ranks"], r["size"]): r for r in rows if r["algorithm"] == algorithm}


def oversubscription_table(cal, rows, ranks=4, base=2, algorithm="builtin") -> list[dict]:
    """How a run on ``ranks`` compares with one on ``base`` ranks, measured and modelled, per size.

    ``cal``: a ``lab.calibrate.Calibration``; ``rows``: benchmark rows holding both rank counts.
    Columns: ``measured_ratio`` (time on ranks / time on base), ``model_ratio`` (the fitted
    ring model without contention), ``stretched_ratio`` (with the stretch max(1, ranks/cores)),
    ``pred_over_measured`` (the stretched model over the measured time on ``ranks``).
    """
    ranks = _ranks("ranks", ranks, low=2, high=64)
    base = _ranks("base", base, low=1, high=64)
    if not hasattr(cal, "predict") or not hasattr(cal, "cores"):
        raise ValueError("cal must be a Calibration from lab.calibrate.calibrate()")
    from ...lab.calibrate import contention
    at = _rows_at(rows, algorithm)
    out = []
    for (p, size), row in sorted(at.items()):
        if p != ranks or (base, size) not in at:
            continue
        t_base, t = at[(base, size)]["time_s"], row["time_s"]
        model = cal.predict(size, ranks, stretch=1.0) / cal.predict(size, base, stretch=1.0)
        stretch = contention(ranks, cal.cores) / contention(base, cal.cores)
        out.append({"size": size, "measured_base_s": t_base, "measured_s": t, "measured_ratio": t / t_base,
                    "model_ratio": model, "stretched_ratio": model * stretch,
                    "pred_over_measured": evidence.ratio(cal.predict(size, ranks), t)})
    if not out:
        raise ValueError(f"rows must hold {algorithm} rows for both {base} and {ranks} ranks at the same sizes")
    return out


def compare_prediction(predicted_s, rows, nbytes, ranks, cal, algorithm="builtin") -> list[str]:
    """Lines comparing a learner's prediction (s, or None) with the measured time and the calibrated model.

    ``rows``: benchmark rows that include ``nbytes`` (bytes) on ``ranks``. An unanswered
    prediction (None) is reported as such; the expected answer is never printed.
    """
    from ...lab.calibrate import contention
    n = int(validate.positive("nbytes", nbytes))
    p = _ranks("ranks", ranks, low=1, high=64)
    at = _rows_at(rows, algorithm)
    if (p, n) not in at:
        raise ValueError(f"rows must hold a {algorithm} measurement of nbytes={n} on ranks={p}")
    measured = at[(p, n)]["time_s"]
    stretch = contention(p, cal.cores)
    lines = [f"measured here: {units.format_bytes(n, binary=True)} on {p} ranks, {algorithm}: {units.format_time(measured)}"
             f" ({cal.cores} cores, stretch max(1, {p}/{cal.cores}) = {stretch:g})",
             f"the model with this machine's fit (alpha, beta, gamma, stretch): {units.format_time(cal.predict(n, p))}"]
    if predicted_s is None or predicted_s is Ellipsis:
        lines.insert(0, "your prediction: not answered yet (exercise 04.5)")
        return lines
    try:
        pred = float(predicted_s)
    except (TypeError, ValueError):
        return [f"your prediction must be a number of seconds, got {type(predicted_s).__name__}"] + lines
    if not math.isfinite(pred) or pred <= 0:
        return ["your prediction must be a positive number of seconds"] + lines
    lines.insert(0, f"your prediction (given alpha and beta, no stretch): {units.format_time(pred)}")
    lines.append(f"measured / your prediction = {measured / pred:.2f}; "
                 f"measured / (your prediction x stretch) = {measured / (pred * stretch):.2f}")
    return lines


def published_sweeps(min_points=4, gpus=8) -> dict:
    """Single-node all-reduce sweeps on ``gpus`` GPUs among the published cases: source id -> sorted cases
    (>= ``min_points``). A case's GPUs are its ``gpus_per_node``, else its system's (72 on a GB200 NVL72)."""
    min_points = validate.integer("min_points", min_points, low=2, high=100)
    gpus = validate.integer("gpus", gpus, low=2, high=100_000)
    groups: dict = {}
    for case in costmodel.published()["cases"]:
        ranks = case.get("gpus_per_node") or hardware.system(case["system"]).gpus_per_node
        if case["collective"] == "all_reduce" and case.get("nodes", 1) == 1 and ranks == gpus:
            groups.setdefault(case["source"], []).append(case)
    return {k: sorted(v, key=lambda c: c["nbytes"]) for k, v in groups.items() if len(v) >= min_points}


def plot_published(ax=None, min_points=4):
    """Published 8-GPU all-reduce sweeps (busbw, GB/s per direction) against the simple ring model.

    Per sweep: measured points; the ring at spec bandwidth (alpha-beta with the course's
    latencies, no efficiency); the course model (achievable efficiencies, NCCL-like choice
    of algorithm); the link's per-direction rate, which no send/receive algorithm can beat.
    """
    import matplotlib.pyplot as plt
    sweeps = published_sweeps(min_points)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.4))  # the sweeps' legend goes under the Axes
    grid = np.logspace(3, np.log10(16 * 2**30), 100)
    model = {}
    for cases in sweeps.values():
        system = cases[0]["system"]
        link = hardware.system(system).gpu_link
        model[system] = {
            "simple": costmodel.predict("all_reduce", grid, system, algorithm="ring", achievable=False).busbw / units.GB,
            "course": costmodel.predict("all_reduce", grid, system, achievable=True).busbw / units.GB,
            "link_name": link.name, "link_gb_s": link.per_direction / units.GB}
    return views.draw_sweeps(ax, sweeps, grid, model)


def model_failures(small=2**20) -> list[str]:
    """Sentences, computed from the published cases, where the simple ring model and reality part.

    Small messages (< ``small`` bytes): the model's latency; busbw above the link's rate
    (in-network reduction); multi-node cases off by more than 1.5x in the course model.
    """
    small = validate.positive("small", small)
    lines = []
    cases = costmodel.published()["cases"]
    table = {r["id"]: r for r in costmodel.validation_table()}
    tiny = [c for c in cases if c["collective"] == "all_reduce" and c.get("nodes", 1) == 1 and c["nbytes"] < small]
    if tiny:
        worst = max(tiny, key=lambda c: abs(math.log(table[c["id"]]["ratio"])))
        simple = costmodel.predict("all_reduce", worst["nbytes"], worst["system"], algorithm="ring", achievable=False)
        lines.append(f"Small messages: {units.format_bytes(worst['nbytes'], binary=True)} on {worst['as_measured']}: "
                     f"measured busbw {worst['busbw_gb_s']:g} GB/s, simple model {float(simple.busbw[0]) / units.GB:.3g} "
                     f"GB/s, course model {table[worst['id']]['predicted_busbw'] / units.GB:.3g} GB/s. Here the time is "
                     "a fixed launch cost and per-step latencies that vary between machines "
                     f"({datafiles.source(worst['source'])['url']}).")
    above = [c for c in cases if c["collective"] == "all_reduce" and c.get("nodes", 1) == 1
             and c["busbw_gb_s"] * units.GB > hardware.system(c["system"]).gpu_link.per_direction]
    if above:
        best = max(above, key=lambda c: c["busbw_gb_s"])
        link = hardware.system(best["system"]).gpu_link
        lines.append(f"Above the line rate: {units.format_bytes(best['nbytes'], binary=True)} on {best['as_measured']}: "
                     f"busbw {best['busbw_gb_s']:g} GB/s, more than the {link.per_direction / units.GB:g} GB/s per "
                     f"direction of {link.name}. No send/receive algorithm can do that; NVSwitch adds the data "
                     f"in the switch (NVLS), so busbw is no longer a wire rate ({datafiles.source(best['source'])['url']}).")
    multi = [c for c in cases if c["collective"] == "all_reduce" and c.get("nodes", 1) > 1
             and abs(math.log(table[c["id"]]["ratio"])) > math.log(1.5)]
    for c in multi[:2]:
        r = table[c["id"]]
        lines.append(f"Across nodes: {c['as_measured']}: measured {c['busbw_gb_s']:g} GB/s busbw, course model "
                     f"{r['predicted_busbw'] / units.GB:.3g} GB/s ({r['algorithm']}), {r['ratio']:.2g}x off; NCCL's choice of "
                     f"algorithm and NIC placement decide, which the model does not see ({datafiles.source(c['source'])['url']}).")
    return lines
