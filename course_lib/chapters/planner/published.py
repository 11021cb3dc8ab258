"""Chapter 08, published runs: end-to-end training runs as published against the planner's prediction, and its validation ranges.
"""
from __future__ import annotations

from functools import lru_cache

from ... import datafiles, evidence, parallel, validate
from ...views import planner as views
from ...widgets import show_html
from .runs import run_numbers


@lru_cache(maxsize=1)
def published_runs() -> dict:
    """The parsed ``data/published_runs.json``: sources, runs, facts."""
    return datafiles.load("published_runs.json")


def predict_run(run_id) -> dict:
    """The course's prediction for one published run: tokens/s per GPU, days, GPU-hours, layout.

    A run that states tp and pp is estimated in that layout; otherwise the planner's best
    layout (parallel.plan defaults) on the run's system, GPU count and batch.
    """
    runs = {r["id"]: r for r in published_runs()["runs"]}
    run = runs[validate.choice("run_id", run_id, runs)]
    if "tp" in run:
        e = parallel.estimate(run["model"], run["system"], gpus=run["gpus"], tp=run["tp"], pp=run["pp"],
                              global_batch=run["global_batch"], micro_batch=run.get("micro_batch", 1),
                              recompute=run.get("recompute", "full"), zero=0)
    else:
        e = parallel.plan(run["model"], run["system"], gpus=run["gpus"], global_batch=run["global_batch"]).best
    return {"layout": e.layout, "micro_batch": e.micro_batch, "recompute": e.recompute,
            "tokens_per_s_per_gpu": e.tokens_per_s_per_gpu, "mfu": e.mfu, **run_numbers(e, run["tokens"])}


def published_comparison() -> list[dict]:
    """Every published run next to its prediction: quantity, published, predicted, predicted/published."""
    data = published_runs()
    rows = []
    for run in data["runs"]:
        pred = predict_run(run["id"])
        quantity = "gpu_hours" if "gpu_hours" in run["published"] else "days"
        published = float(run["published"][quantity])
        c = evidence.compare(run["id"], pred[quantity], evidence.measurement(published, quantity, run["source"]))
        rows.append({"id": run["id"], "label": run["label"], "system": run["system"], "gpus": run["gpus"],
                     "quantity": quantity, "published": published, "predicted": pred[quantity],
                     "ratio": c.ratio, "layout": pred["layout"], "mfu": pred["mfu"],
                     "assumed": run["assumed"], "note": run["note"], "where": run["where"], "url": c.measured.url})
    return rows


def show_published_comparison(rows=None):
    """published_comparison as HTML."""
    show_html(views.published_table(published_comparison() if rows is None else rows))


def plot_published_comparison(rows=None, ax=None):
    """Predicted / published for each run, with the +-20% band."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.4))
    return views.draw_published_comparison(ax, published_comparison() if rows is None else rows)


def validation_ranges() -> list[dict]:
    """parallel.validation_table summarised by group: cases, lowest and highest predicted/measured."""
    groups = {}
    for row in parallel.validation_table():
        groups.setdefault(row["group"], []).append(row)
    return [{"group": g, "cases": len(rows), "quantity": rows[0]["quantity"], "low": min(r["ratio"] for r in rows),
             "high": max(r["ratio"] for r in rows), "source": rows[0]["source"]} for g, rows in groups.items()]


def show_validation_ranges():
    """validation_ranges as HTML."""
    show_html(views.validation_ranges_table(validation_ranges()))
