"""Chapter 06, measured: published data-parallel scaling, Megatron's PTD-P against ZeRO-3, the ZeRO-3 ladder against the model.
"""
from __future__ import annotations

from functools import lru_cache

from ... import datafiles, hardware, parallel
from ...views import data_parallel as views
from ...widgets import show_html
from .scaling import _dp_comm


@lru_cache(maxsize=1)
def published_dp_scaling() -> dict:
    """The parsed ``data/published_dp_scaling.json`` (scaling efficiencies with sources)."""
    return datafiles.load("published_dp_scaling.json")


def published_scaling_rows() -> list[dict]:
    """Published DP scaling efficiencies: model, GPUs, efficiency, network, source URL."""
    data = published_dp_scaling()
    return [{"model": c["model"], "gpus": c["gpus"], "baseline_gpus": c["baseline_gpus"],
             "efficiency": c["efficiency"], "network": c["network"], "where": c["where"],
             "url": datafiles.source(c["source"])["url"]} for c in data["cases"]]


def megatron_dp_rows() -> list[dict]:
    """The GPT-3 175B rows of Megatron-LM's PTD-P vs ZeRO-3 comparison: measured and predicted TFLOP/s
    per GPU (parallel.validation_table), and each family's efficiency relative to its 384-GPU run."""
    rows = [r for r in parallel.validation_table() if r["group"] == "ptdp-vs-zero3-175b"]
    cases = {c["id"]: c for c in parallel.published()["cases"]}
    out = []
    for r in rows:
        case = cases[r["id"]]
        out.append({"id": r["id"], "scheme": "ZeRO-3" if case.get("zero", 0) == 3 else "PTD-P",
                    "gpus": case["gpus"], "measured": r["measured"], "predicted": r["predicted"],
                    "ratio": r["ratio"], "url": r["url"], "config": r["config"]})
    for scheme in ("PTD-P", "ZeRO-3"):
        fam = sorted((x for x in out if x["scheme"] == scheme), key=lambda x: x["gpus"])
        for x in fam:
            x["measured_efficiency"] = x["measured"] / fam[0]["measured"]
            x["predicted_efficiency"] = x["predicted"] / fam[0]["predicted"]
    return sorted(out, key=lambda x: (x["scheme"], x["gpus"]))


def zero3_ladder() -> list[dict]:
    """The published ZeRO-3 runs (GPT-3 175B, 384-1536 A100) next to four variants of the course model:
    as is; without overlap; each GPU limited to its own NIC (no help from NVLink and the node's other
    NICs); both. TFLOP/s per GPU. The variants are what-ifs, not fits."""
    defaults = parallel.published()["defaults_for_unstated_fields"]
    rows = []
    for case in parallel.published()["cases"]:
        if case.get("group") != "ptdp-vs-zero3-175b" or case.get("zero", 0) != 3:
            continue
        base = hardware.system(case["system"])
        own_nic = base.variant(gpus_per_node=1, nics_per_node=1)
        get = lambda k: case.get(k, defaults.get(k))  # noqa: E731
        row = {"gpus": case["gpus"], "micro_batch": get("micro_batch"), "measured": float(case["measured_tflops_per_gpu"])}
        for name, sys_, ov in (("model", base, True), ("no_overlap", base, False),
                               ("own_nic", own_nic, True), ("own_nic_no_overlap", own_nic, False)):
            e = parallel.estimate(case["model"], sys_, gpus=case["gpus"], tp=1, pp=1, global_batch=case["global_batch"],
                                  micro_batch=get("micro_batch"), zero=3, recompute=get("recompute"), dp_overlap=ov)
            row[name] = e.tflops_per_gpu
            if name == "model":
                row["compute_s"] = e.compute_s
                row["comm_s"] = _dp_comm(e)
        rows.append(row)
    return sorted(rows, key=lambda r: r["gpus"])


def plot_zero3_ladder(ax=None, rows=None):
    """Measured ZeRO-3 and PTD-P throughput per GPU against the model and its pessimistic variants. Returns ax."""
    import matplotlib.pyplot as plt

    rows = zero3_ladder() if rows is None else rows
    ptdp = [r for r in megatron_dp_rows() if r["scheme"] == "PTD-P"]
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4))
    return views.draw_zero3_ladder(ax, rows, ptdp)


def show_published_scaling():
    """Display the published DP scaling efficiencies with their sources."""
    show_html(views.published_scaling_table(published_scaling_rows()))


def show_megatron_dp():
    """Display the PTD-P and ZeRO-3 rows: measured vs predicted, and efficiency vs 384 GPUs."""
    show_html(views.megatron_dp_table(megatron_dp_rows()))


def show_zero3_ladder(rows=None):
    """Display :func:`zero3_ladder` as a table (TFLOP/s per GPU)."""
    rows = zero3_ladder() if rows is None else rows
    show_html(views.zero3_ladder_table(rows))
