"""Chapter 07, validation: published model-parallel runs against the model, and the efficiency that would match one.
"""
from __future__ import annotations

from ... import parallel, validate
from ...views import model_parallel as views
from ...widgets import show_html


def validation_rows(include_zero3=False) -> list[dict]:
    """The throughput rows of ``parallel.validation_table`` (ZeRO-3 rows left out unless asked; chapter 06 has them)."""
    if not isinstance(include_zero3, bool):
        raise ValueError(f"include_zero3 must be True or False, got {include_zero3!r}")
    return [r for r in parallel.validation_table() if r["kind"] == "throughput"
            and (include_zero3 or "ZeRO-3" not in r["config"])]


def show_validation(rows=None):
    """Table: predicted vs measured TFLOP/s per GPU, with the source of each measurement."""
    show_html(views.validation_table(validation_rows() if rows is None else rows))


def plot_validation(rows=None, ax=None):
    """Predicted vs measured TFLOP/s per GPU for the published Megatron-LM runs."""
    import matplotlib.pyplot as plt
    rows = validation_rows() if rows is None else rows
    if not rows:
        raise ValueError("rows must not be empty")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    return views.draw_validation(ax, rows)


def efficiency_to_match(case_id="mlm21-gpt3-1024") -> float:
    """The gpu_efficiency at which the model reproduces one published throughput exactly (bisection)."""
    ids = [r["id"] for r in validation_rows(include_zero3=True)]
    case_id = validate.choice("case_id", case_id, ids)

    def ratio(eff):
        return next(r["ratio"] for r in parallel.validation_table(gpu_efficiency=eff) if r["id"] == case_id)

    lo, hi = 0.05, 1.0
    if ratio(hi) < 1:
        return 1.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(mid) < 1 else (lo, mid)
    return 0.5 * (lo + hi)
