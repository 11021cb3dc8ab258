"""Published tensor-parallel scans against the planner: throughput per GPU as TP leaves the node.

Each scan (``data/published_tp_scans.json``) gives tokens/s per GPU of one model at TP 2 ... 32 on
8-GPU nodes. The planner (``parallel.estimate``, one TP group, no DP or PP) predicts the same points;
both are divided by their value at the scan's ``anchor_tp`` (inside one node), so the GPU-efficiency
constant cancels and what is compared is the **fall** with TP. ``ratio`` = predicted relative /
measured relative: above 1 the model falls less steeply than the measurement.
"""
from __future__ import annotations

from functools import lru_cache

from . import datafiles, hardware, parallel, validate


@lru_cache(maxsize=1)
def published() -> dict:
    """The parsed ``data/published_tp_scans.json``: TP scans with their sources, split fit / informed."""
    return datafiles.load("published_tp_scans.json")


def scan_ids() -> tuple:
    """Ids of the published TP scans."""
    return tuple(s["id"] for s in published()["scans"])


def _scan(scan_id: str) -> dict:
    scans = {s["id"]: s for s in published()["scans"]}
    return scans[validate.choice("scan", scan_id, scans)]


def scan_table(scan_id: str | None = None) -> list[dict]:
    """One row per scan and TP degree: measured and predicted tokens/s per GPU, both relative to the anchor TP.

    scan_id: one scan (``scan_ids()``) or None for all. Row keys: scan, split, tp, micro_batch,
    crosses_nodes, measured, predicted (tokens/s per GPU), measured_rel, predicted_rel, ratio, source.
    """
    scans = published()["scans"] if scan_id is None else [_scan(scan_id)]
    rows = []
    for s in scans:
        pts = []
        for t, mb, meas in zip(s["tp"], s["micro_batch"], s["measured_tokens_per_s_per_gpu"]):
            e = parallel.estimate(s["model"], s["system"], gpus=t, tp=t, global_batch=mb, micro_batch=mb,
                                  recompute=s["recompute"], seq_len=s["seq_len"],
                                  sequence_parallel=s["sequence_parallel"])
            pts.append((t, mb, float(meas), e))
        anchor = next(p for p in pts if p[0] == s["anchor_tp"])
        g = hardware.resolve_system(s["system"]).gpus_per_node
        for t, mb, meas, e in pts:
            m_rel, p_rel = meas / anchor[2], e.tokens_per_s_per_gpu / anchor[3].tokens_per_s_per_gpu
            rows.append({"scan": s["id"], "label": s["label"], "split": s["split"], "system": s["system"], "tp": t,
                         "micro_batch": mb, "crosses_nodes": t > g, "measured": meas,
                         "predicted": e.tokens_per_s_per_gpu, "measured_rel": m_rel, "predicted_rel": p_rel,
                         "ratio": p_rel / m_rel, "tp_share": e.tp_exposed_s / e.step_time_s,
                         "source": s["source"]})
    return rows


def _check_rows(rows: list[dict] | None) -> list:
    if not (isinstance(rows, (list, tuple)) and all(isinstance(r, dict) and "predicted_rel" in r for r in rows)):
        raise ValueError(f"rows must be the rows of tp_scans.scan_table(); got {rows!r}"[:200])
    return list(rows)


def fall(rows: list[dict], scan_id: str, tp_from: int = 8, tp_to: int = 16) -> dict:
    """Measured and predicted fall of throughput per GPU from ``tp_from`` to ``tp_to`` in one scan (1 - ratio).

    Returns {measured, predicted, factor}: factor = predicted fall / measured fall (1 = the same fall).
    """
    pick = {r["tp"]: r for r in _check_rows(rows) if r["scan"] == scan_id}
    if not pick:
        raise ValueError(f"scan_id must be a scan in rows ({sorted({r['scan'] for r in rows})}); got {scan_id!r}")
    for name, t in (("tp_from", tp_from), ("tp_to", tp_to)):
        if t not in pick:
            raise ValueError(f"{name} must be one of the scan's TP degrees {sorted(pick)}; got {t!r}")
    meas = 1 - pick[tp_to]["measured"] / pick[tp_from]["measured"]
    pred = 1 - pick[tp_to]["predicted"] / pick[tp_from]["predicted"]
    return {"measured": meas, "predicted": pred, "factor": pred / meas if meas else float("nan")}


def scan_summary(rows: list[dict] | None = None) -> str:
    """The TP-scan validation as text: one line per point, then the TP 8 -> 16 and 8 -> 32 falls per scan."""
    rows = scan_table() if rows is None else _check_rows(rows)
    lines = [f"{'scan':<14} {'split':<8} {'TP':>3} {'mb':>4} {'nodes':<6} {'measured':>9} {'model':>9} "
             f"{'meas/anchor':>11} {'model/anchor':>12} {'ratio':>6} {'TP share':>8}"]
    for r in rows:
        lines.append(f"{r['scan']:<14} {r['split']:<8} {r['tp']:>3} {r['micro_batch']:>4} "
                     f"{'across' if r['crosses_nodes'] else 'inside':<6} {r['measured']:>9.0f} {r['predicted']:>9.0f} "
                     f"{r['measured_rel']:>11.2f} {r['predicted_rel']:>12.2f} {r['ratio']:>6.2f} {r['tp_share']:>8.0%}")
    for sid in dict.fromkeys(r["scan"] for r in rows):
        tps = {r["tp"] for r in rows if r["scan"] == sid}
        for to in (16, 32):
            if {8, to} <= tps:
                f = fall(rows, sid, 8, to)
                lines.append(f"{sid}: TP 8 -> {to}: measured fall {f['measured']:.0%}, model {f['predicted']:.0%} "
                             f"(model / measured fall = {f['factor']:.2f})")
    lines.append("measured and model tokens/s per GPU; /anchor: divided by the scan's value at TP 8 (inside one node); "
                 "ratio = model/anchor over meas/anchor (above 1: the model falls less steeply). "
                 "fit scans were looked at to choose the cross-node pricing; informed scans to choose P5's EFA efficiency.")
    return "\n".join(lines)
