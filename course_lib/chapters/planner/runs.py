"""Chapter 08, runs: plan a run on a system, its time to train and GPU-hours, systems compared, link sensitivity, GPU sweeps.
"""
from __future__ import annotations

import math

from ... import hardware, parallel, units, validate
from ...views import planner as views
from ...widgets import show_html
from .brief import BRIEF, Brief, SECONDS_PER_DAY, SECONDS_PER_HOUR


SWEEP_GPUS = (256, 512, 1024, 2048, 4096, 8192)


# A reduced search for the explorer: one planner run must stay well under a second on a laptop core.
FAST_SEARCH = {"micro_batches": (1, 2), "zero_stages": (1,), "recompute_options": ("selective", "full"),
               "interleave_options": (1, 2), "max_tp": 16}


def plan_run(model, system, gpus, global_batch, *, nic_gbit_s=None, gpu_link_gb_s=None, fast=False,
             precision="bf16") -> parallel.Plan:
    """parallel.plan for ``gpus`` GPUs of ``system``, optionally with another NIC rate (Gb/s, bits, per
    direction, as vendors quote it) or GPU-link rate (GB/s, bytes, per direction): ``System.variant``;
    ``precision`` is the training recipe (``parallel.PRECISIONS``).

    fast=True searches the explorer's reduced space (FAST_SEARCH), otherwise parallel.plan's defaults.
    """
    if not isinstance(fast, bool):
        raise ValueError(f"fast must be True or False, got {fast!r}")
    sys_ = hardware.resolve_system(system).variant(nic_gbit_s=nic_gbit_s, gpu_link_gb_s=gpu_link_gb_s)
    gpus = validate.integer("gpus", gpus, low=1, high=10**6)
    return parallel.plan(model, sys_, gpus=gpus, global_batch=global_batch, precision=precision,
                         **(FAST_SEARCH if fast else {}))


def required_tokens_per_s(tokens, days) -> float:
    """Tokens per second the whole cluster must sustain to train ``tokens`` in ``days``."""
    tokens = validate.positive("tokens", tokens)
    days = validate.positive("days", days)
    return tokens / (days * SECONDS_PER_DAY)


def time_to_train_s(tokens, tokens_per_s) -> float:
    """Seconds to train ``tokens`` at ``tokens_per_s`` (whole cluster)."""
    return validate.positive("tokens", tokens) / validate.positive("tokens_per_s", tokens_per_s)


def gpu_hours(tokens, tokens_per_s_per_gpu) -> float:
    """GPU-hours to train ``tokens`` at ``tokens_per_s_per_gpu``: independent of the GPU count."""
    return validate.positive("tokens", tokens) / validate.positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu) \
        / SECONDS_PER_HOUR


def run_numbers(estimate, tokens) -> dict:
    """From one parallel.Estimate: cluster tokens/s, days and GPU-hours for ``tokens``."""
    if not isinstance(estimate, parallel.Estimate):
        raise ValueError(f"estimate must be a parallel.Estimate (plan.best), got {type(estimate).__name__}")
    tps = estimate.tokens_per_s_per_gpu * estimate.gpus
    return {"tokens_per_s": tps, "days": time_to_train_s(tokens, tps) / SECONDS_PER_DAY,
            "gpu_hours": gpu_hours(tokens, estimate.tokens_per_s_per_gpu), "gpus": estimate.gpus}


def _row(plan_, sid, gpus, brief):
    if not plan_.ranked:
        meets = {"days": False, "gpu_hours": False, "gpus": gpus <= brief.max_gpus, "all": False}
        return {"system": sid, "gpus": gpus, "fits": False, "layout": "nothing fits", "days": math.inf,
                "gpu_hours": math.inf, "meets": meets}
    b = plan_.best
    nums = run_numbers(b, brief.tokens)
    return {"system": sid, "gpus": gpus, "fits": True, "layout": b.layout, "micro_batch": b.micro_batch,
            "zero": b.zero, "recompute": b.recompute, "tokens_per_s_per_gpu": b.tokens_per_s_per_gpu, "mfu": b.mfu,
            "memory_gb": b.memory["total"] / units.GB, "bubble": b.bubble_fraction, **nums,
            "meets": brief.meets(nums["days"], nums["gpu_hours"], gpus), "estimate": b}


def compare_systems(brief: Brief = BRIEF, gpus=1024, systems=None, fast=False) -> list[dict]:
    """The planner's best layout on ``gpus`` GPUs of each system: layout, tokens/s per GPU, days, GPU-hours, meets."""
    if not isinstance(brief, Brief):
        raise ValueError(f"brief must be a planner.Brief, got {brief!r}")
    systems = brief.systems if systems is None else systems
    if not isinstance(systems, (list, tuple)) or not systems:
        raise ValueError("systems must be a non-empty list of catalog ids")
    return [_row(plan_run(brief.model, sid, gpus, brief.global_batch, fast=fast), sid, gpus, brief)
            for sid in systems]


def lowest_gpu_hours(rows) -> str:
    """The system id with the fewest GPU-hours among compare_systems rows."""
    if not rows:
        raise ValueError("rows must be a non-empty list from compare_systems")
    return min(rows, key=lambda r: r["gpu_hours"])["system"]


def show_comparison(rows, brief: Brief = BRIEF):
    """compare_systems rows as an HTML table with the brief's limits ticked."""
    show_html(views.comparison_table(rows, brief.max_days, brief.max_gpu_hours))


def traffic_rows(estimate) -> list[dict]:
    """What each parallel group sends per step, on which link, and how much of it shows (seconds)."""
    if not isinstance(estimate, parallel.Estimate):
        raise ValueError(f"estimate must be a parallel.Estimate, got {type(estimate).__name__}")
    return [t.as_row() for t in estimate.traffic]


def show_traffic(estimate):
    """traffic_rows as HTML, with the step time for scale."""
    show_html(views.traffic_table(estimate, traffic_rows(estimate)))


def link_sensitivity(brief: Brief = BRIEF, system="dgx-h200", gpus=1024, nic_gbit_s=(), gpu_link_gb_s=(),
                     fast=False) -> list[dict]:
    """compare_systems-style rows for one system as its NIC rate (Gb/s, bits, per direction) or GPU-link
    rate (GB/s, bytes, per direction) changes.

    The first row is the catalog system; then one row per nic_gbit_s value, then per gpu_link_gb_s value.
    """
    if not isinstance(brief, Brief):
        raise ValueError(f"brief must be a planner.Brief, got {brief!r}")
    for name, seq in (("nic_gbit_s", nic_gbit_s), ("gpu_link_gb_s", gpu_link_gb_s)):
        if not isinstance(seq, (list, tuple)):
            raise ValueError(f"{name} must be a list of rates, got {seq!r}")
    base = hardware.resolve_system(system)
    cases = [("catalog", {})] + [(f"NIC {x:g} Gb/s per direction", {"nic_gbit_s": x}) for x in nic_gbit_s] + \
            [(f"GPU link {x:g} GB/s per direction", {"gpu_link_gb_s": x}) for x in gpu_link_gb_s]
    rows = []
    for label, kw in cases:
        r = _row(plan_run(brief.model, base, gpus, brief.global_batch, fast=fast, **kw), base.id, gpus, brief)
        r["case"] = label
        rows.append(r)
    return rows


def show_link_sensitivity(rows):
    """link_sensitivity rows as HTML."""
    show_html(views.sensitivity_table(rows))


def gpu_sweep(brief: Brief = BRIEF, systems=("dgx-a100", "dgx-h100", "dgx-h200"), counts=SWEEP_GPUS,
              fast=True) -> list[dict]:
    """compare_systems rows for every system x GPU count (the explorer's reduced search by default)."""
    if not isinstance(counts, (list, tuple)) or not counts:
        raise ValueError("counts must be a non-empty list of GPU counts")
    rows = []
    for n in counts:
        n = validate.integer("counts item", n, low=1, high=10**6)
        rows += compare_systems(brief, gpus=n, systems=systems, fast=fast)
    return rows


def plot_gpu_sweep(rows, brief: Brief = BRIEF, axes=None):
    """Days and GPU-hours against GPU count, one line per system; the brief's limits dotted."""
    import matplotlib.pyplot as plt
    if not rows:
        raise ValueError("rows must be a non-empty list from gpu_sweep")
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.6))  # one above the other, at notebook width
        views.draw_gpu_sweep(axes, rows, brief, parallel.model(brief.model).name)
        fig.tight_layout()
        return axes
    return views.draw_gpu_sweep(axes, rows, brief, parallel.model(brief.model).name)
