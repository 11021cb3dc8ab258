"""Chapter 05, measured: published multi-node runs and transports against the model, validation failures, CollNet across nodes.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ... import costmodel, datafiles, evidence, hardware, units, validate
from ...views import infiniband as views
from ...widgets import show_html
from .links import node_injection


@lru_cache(maxsize=1)
def published_multinode() -> dict:
    """The parsed ``data/published_multinode.json``: measurements with their sources."""
    return datafiles.load("published_multinode.json")


def transports_table() -> list[dict]:
    """InfiniBand, RoCE and TCP: line rate vs what NCCL achieves per NIC, GB/s per direction, with sources."""
    rows = []
    for row in published_multinode()["per_nic"]:
        if "network" in row:
            line = hardware.network(row["network"]).per_direction
        else:
            line = units.gbit_to_gbyte(row["line_gbit_s"]) * units.GB
        low, high = row["achieved_gb_s"]
        rows.append({"transport": row["transport"], "kind": row["kind"],
                     "line_gbit_s": units.gbit_per_s(line), "line_gb_s": line / units.GB,
                     "achieved_low_gb_s": low, "achieved_high_gb_s": high,
                     "efficiency_low": low * units.GB / line, "efficiency_high": high * units.GB / line,
                     "what": row["what"], "source": datafiles.source(row["source"])["url"]})
    return rows


def _model_row(case_id, label, system, nodes, nbytes, measured, source_id, nics=None, algorithm=None, note=""):
    sys_ = hardware.resolve_system(system)
    if nics is not None:
        sys_ = sys_.variant(nics_per_node=nics)
    textbook = costmodel.predict("all_reduce", nbytes, sys_, nodes=nodes,
                                 algorithm="hierarchical" if nodes > 1 else "ring", achievable=False)
    ring = costmodel.predict("all_reduce", nbytes, sys_, nodes=nodes, algorithm="ring", achievable=False)
    model = costmodel.predict("all_reduce", nbytes, sys_, nodes=nodes, algorithm=algorithm or "auto", achievable=True)
    c = evidence.compare(case_id, float(model.busbw[0]),
                         evidence.measurement(measured[0] * units.GB, "B/s busbw", source_id, high=measured[1] * units.GB))
    return {"id": case_id, "label": label, "system": sys_.id, "base_system": hardware.resolve_system(system).id, "nodes": nodes, "nics_per_node": sys_.nics_per_node,
            "nbytes": nbytes, "measured_low": c.measured.value, "measured_high": c.measured.high,
            "textbook_busbw": float(textbook.busbw[0]), "ring_busbw": float(ring.busbw[0]),
            "model_busbw": c.model, "model_algorithm": model.algorithm, "ratio": c.ratio, "source": c.measured.url, "note": note}


def model_vs_measured() -> list[dict]:
    """Published all-reduce busbw (bytes/s) next to three models of the same run.

    ``textbook_busbw``: two-level all-reduce, phases one after another, spec bandwidth;
    ``ring_busbw``: NCCL-style rings, NVLink and NICs pipelined, spec bandwidth;
    ``model_busbw``: costmodel.predict with the algorithm the source states (``auto``, its
    fastest, when it states none) and the sourced efficiencies.
    Cases come from data/published_multinode.json and data/published_collectives.json.
    """
    rows = []
    for case in published_multinode()["allreduce"]:
        label = f"{case['system']}, {case['nodes']} node{'s' if case['nodes'] > 1 else ''}"
        if case.get("nics_per_node"):
            label += f", {case['nics_per_node']} NICs/node"
        label += f" ({case['algorithm']})"
        rows.append(_model_row(case["id"], label, case["system"], case["nodes"], case.get("nbytes", 2**33),
                               case["busbw_gb_s"], case["source"], case.get("nics_per_node"),
                               case["algorithm"], case["what"]))
    theirs = costmodel.published()
    for case in theirs["cases"]:
        # large multi-node runs on InfiniBand/RoCE nodes of the catalog's shape (the rest: validation_failure_plot)
        if case.get("nodes", 1) < 2 or case["nbytes"] < 2**27 or "nic_gbit_s" in case or "gpus_per_node" in case \
                or case["collective"] != "all_reduce" \
                or (case.get("fabric") or costmodel.system_fabric_kind(case["system"])) not in ("infiniband", "roce"):
            continue
        label = f"{case['system']}, {case['nodes']} nodes"
        if case.get("nics_per_node"):
            label += f", {case['nics_per_node']} NICs/node"
        label += f" ({case.get('algorithm') or 'NCCL default'})"
        rows.append(_model_row(case["id"], label, case["system"], case["nodes"], case["nbytes"],
                               (case["busbw_gb_s"], case["busbw_gb_s"]), case["source"],
                               case.get("nics_per_node"), case.get("algorithm"), case.get("as_measured", "")))
    return rows


def comparison_lines(rows=None) -> list[str]:
    """The headline comparisons of model_vs_measured as sentences (GB/s per direction)."""
    rows = model_vs_measured() if rows is None else rows
    by_id = {r["id"]: r for r in rows}
    gb = lambda x: f"{x / units.GB:.0f}"
    rng = lambda r: gb(r["measured_low"]) if r["measured_low"] == r["measured_high"] else \
        f"{gb(r['measured_low'])}-{gb(r['measured_high'])}"
    lines = []
    r = by_id.get("dgx-h100-multinode-ring")
    if r:
        s = hardware.system(r["base_system"])
        mid = (r["measured_low"] + r["measured_high"]) / 2
        lines.append(f"DGX H100 nodes, {r['nics_per_node']} NDR NICs each, rings across nodes: measured {rng(r)} GB/s "
                     f"({r['measured_low'] / r['nics_per_node'] / units.GB:.1f}-{r['measured_high'] / r['nics_per_node'] / units.GB:.1f} per NIC); "
                     f"network bound {gb(r['nics_per_node'] * s.nic.per_direction)}; pipelined-ring model "
                     f"{gb(r['ring_busbw'])}; textbook two-level {gb(r['textbook_busbw'])} "
                     f"({1 - r['textbook_busbw'] / mid:.0%} below the measurement)")
    ring, nvls = by_id.get("dgx-h100-node-ring"), by_id.get("dgx-h100-node-nvls")
    if ring and nvls:
        spec = hardware.system(ring["base_system"]).gpu_link.per_direction
        lines.append(f"One DGX H100 node: ring measured {rng(ring)} GB/s of {gb(spec)} GB/s NVLink "
                     f"({ring['measured_low'] / spec:.0%}); with NVLink SHARP {rng(nvls)} GB/s")
    r = by_id.get("a100-2node-2nic-tree")
    if r:
        s = hardware.system(r["base_system"])
        lines.append(f"Two A100 nodes, {r['nics_per_node']} HDR NICs each, NCCL's tree: measured {rng(r)} GB/s, above the "
                     f"{gb(r['nics_per_node'] * s.nic.per_direction)} GB/s the NICs can carry")
    return lines


def show_transports():
    """Table: line rate vs achieved per NIC for InfiniBand, RoCE and TCP."""
    show_html(views.transports_table(transports_table()))


def show_model_vs_measured(rows=None):
    """Table: measured busbw against the three models, GB/s per direction."""
    rows = model_vs_measured() if rows is None else rows
    show_html(views.model_vs_measured_table(rows))


def plot_model_vs_measured(ax=None, rows=None):
    """Measured busbw (bars show the stated range) with the three model values per run."""
    import matplotlib.pyplot as plt
    rows = model_vs_measured() if rows is None else rows
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.25 * len(rows) + 1.6))  # 8 pt labels on rows 0.25 in apart
    return views.draw_model_vs_measured(ax, rows)


def plot_transports(ax=None):
    """Share of line rate NCCL reaches per NIC over InfiniBand, RoCE and TCP."""
    import matplotlib.pyplot as plt
    rows = transports_table()
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.2))
    return views.draw_transports(ax, rows)


def validation_failure_plot(rows=None, role="test"):
    """Where the model stops being true: predicted / measured busbw of every published case by size
    (colour: node count), and of the node-count sweeps against nodes (both panels model/measured).

    rows: ``costmodel.validation_table()`` rows (default: all); role: ``test`` (default), ``fit``,
    ``informed`` or ``all``. Both panels show that role's cases only. Returns the figure.
    """
    import matplotlib.pyplot as plt
    rows, chosen = costmodel.rows_of_role(rows, role)
    by_regime = [(name, [r for r in chosen if r["scale_regime"] == name]) for name, _, _ in costmodel.SCALE_REGIMES]
    worst = sorted(chosen, key=lambda r: -abs(np.log(r["ratio"])))[:4]
    sweeps: dict = {}
    for r in chosen:
        if r.get("sweep"):
            sweeps.setdefault(r["sweep"], []).append(r)
    sweeps = [(name, sorted(rs, key=lambda r: r["nodes"]))
              for name, rs in sorted(sweeps.items()) if len({x["nodes"] for x in rs}) > 1]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7.5, 8.4))
    views.draw_validation_ratios(ax, by_regime, worst, role)
    views.draw_node_sweeps(ax2, sweeps)
    fig.tight_layout()
    return fig


COLLNET_NODES = (2, 4, 8, 16, 32, 64)


def collnet_view(system="dgx-b200", nbytes=16 * 2**30, nodes=COLLNET_NODES) -> dict:
    """CollNet (InfiniBand SHARP) against NCCL's ring and NVLS tree across nodes, with the published CollNet runs.

    Returns busbw in bytes/s per algorithm and node count (``costmodel.predict``, forced algorithm), the
    node's NIC line rate (the ring's ceiling) and the published CollNet cases (``published_collectives.json``,
    each with its role: ``fit`` set the SHARP efficiency, ``test`` never did) with their model ratios.
    """
    sys_ = hardware.resolve_system(system)
    nodes = tuple(validate.integer("nodes", n, low=2, high=100_000) for n in nodes)
    algos = ("ring", "nvls", "collnet") if sys_.in_network_reduction else ("ring", "collnet")
    busbw = {a: [float(costmodel.predict("all_reduce", nbytes, sys_, nodes=n, algorithm=a).busbw[0]) for n in nodes]
             for a in algos}
    cases = [c for c in costmodel.published()["cases"] if c.get("algorithm") == "collnet"]
    rows = {r["id"]: r for r in costmodel.validation_table(cases)}
    published = [{"id": c["id"], "nodes": c["nodes"], "busbw": c["busbw_gb_s"] * units.GB, "role": c["role"],
                  "nbytes": c["nbytes"], "ratio": rows[c["id"]]["ratio"], "source": c["source"]} for c in cases]
    return {"system": sys_.id, "nbytes": nbytes, "nodes": nodes, "busbw": busbw,
            "nic_line_rate": node_injection(sys_), "published": published,
            "sharp_efficiency": costmodel.collnet_constants()["efficiency"]}


def show_collnet(view=None):
    """Table: the published CollNet runs (fit and test) with the model's ratio."""
    v = collnet_view() if view is None else view
    show_html(views.collnet_table(v["published"]))


def plot_collnet(ax=None, view=None):
    """busbw against node count: ring, NVLS tree and CollNet (SHARP) predicted, published CollNet runs, NIC rate."""
    import matplotlib.pyplot as plt
    v = collnet_view() if view is None else view
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    return views.draw_collnet(ax, v)
