"""The model against published nccl-tests measurements: per case, per regime, and the accuracy goals on the test set."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import datafiles, evidence, hardware, units, validate
import re

from .efficiencies import efficiency_data, system_fabric_kind
from .nccl import _version_key, default_nccl_version
from .prediction import predict


@lru_cache(maxsize=1)
def published() -> dict:
    """The parsed ``data/published_collectives.json`` (measurements with their sources)."""
    return datafiles.load("published_collectives.json")


ROLES = ("fit", "informed", "also", "test")  # published_collectives.json _about says what each means
SIZE_REGIMES = (("< 64 KiB", 0, 2**16), ("64 KiB-1 MiB", 2**16, 2**20), ("1-128 MiB", 2**20, 2**27),
                (">= 128 MiB", 2**27, float("inf")))
SCALE_REGIMES = (("1 node", 1, 1), ("2 nodes", 2, 2), ("3-16 nodes", 3, 16), ("> 16 nodes", 17, 10**9))


def size_regime(nbytes: float) -> str:
    """The validation size regime of ``nbytes`` (bytes): < 64 KiB, 64 KiB-1 MiB, 1-128 MiB or >= 128 MiB."""
    nbytes = validate.non_negative("nbytes", nbytes)
    return next(name for name, lo, hi in SIZE_REGIMES if lo <= nbytes < hi)


def scale_regime(nodes: int) -> str:
    """The validation scale regime of a node count: 1 node, 2 nodes, 3-16 nodes or > 16 nodes."""
    nodes = validate.integer("nodes", nodes, low=1, high=10_000_000)
    return next(name for name, lo, hi in SCALE_REGIMES if lo <= nodes <= hi)


def case_system(case: dict) -> hardware.System:
    """The catalog system of a published case, with its NIC rate (``nic_gbit_s``) where the case overrides it."""
    if not isinstance(case, dict) or "system" not in case:
        raise ValueError(f"case must be a published case (a dict with 'system', as in published()['cases']); got {case!r}")
    sys_ = hardware.resolve_system(case["system"])
    if case.get("nic_gbit_s"):
        sys_ = sys_.variant(nic_gbit_s=case["nic_gbit_s"], name=f"{sys_.name}, {case['nic_gbit_s']:g} Gb/s NICs")
    return sys_


def case_nccl_version(case: dict) -> tuple[str | None, str]:
    """(the NCCL version a published case ran, as its ``conditions.nccl`` states it, or None; how the model takes it):
    a case that states none is priced with the default release (``default_nccl_version``) and says so."""
    stated = (case.get("conditions") or {}).get("nccl")
    if stated is not None and _version_key(stated) is not None:
        return str(stated).split()[0], "stated by the source"
    found = re.search(r"(20\d\d)-(\d\d)-(\d\d)", f"{case.get('source', '')} {case.get('id', '')}")
    year = (datafiles.source(case["source"]) or {}).get("year") if case.get("source") else None
    when = found.group(0) if found else (f"{year}-07-01" if year else None)
    if when is None:
        return None, f"assumed {default_nccl_version()}: the source states no NCCL version and no date"
    releases = efficiency_data()["nccl_protocols"]["releases"]
    out = [k for k, r in releases.items() if r["first_tag_date"] <= when] or [next(iter(releases))]
    return out[-1], f"assumed {out[-1]}: the source states no NCCL version; the newest release out at {when}"


def validation_table(cases: list[dict] | None = None) -> list[dict]:
    """Predicted vs measured for every published case: one dict per case with ``ratio`` = predicted/measured busbw.

    Each row carries the case's ``role`` (``ROLES``): ``fit`` (used to set a constant of the model),
    ``informed`` (looked at while making a structural choice: not independent, so out of every test
    statistic) or ``test`` (never looked at while setting or choosing anything), and its size and scale regimes.
    """
    if cases is not None and not (isinstance(cases, (list, tuple)) and all(isinstance(c, dict) for c in cases)):
        raise ValueError(f"cases must be a list of published cases (dicts); got {cases!r}")
    rows = []
    for case in published()["cases"] if cases is None else cases:
        version, version_from = case_nccl_version(case)
        pred = predict(case["collective"], case["nbytes"], case_system(case), gpus_per_node=case.get("gpus_per_node"),
                       nodes=case.get("nodes", 1), algorithm=case.get("algorithm") or "auto",
                       nics_per_node=case.get("nics_per_node"), network=case.get("fabric"), nccl_version=version)
        c = evidence.compare(case["id"], float(pred.busbw[0]),
                             evidence.measurement(case["busbw_gb_s"] * units.GB, "B/s busbw", case["source"]))
        rows.append({"id": case["id"], "system": case["system"], "collective": case["collective"],
                     "nodes": case.get("nodes", 1), "gpus_per_node": pred.gpus_per_node,
                     "nbytes": case["nbytes"], "algorithm": pred.algorithm, "protocol": str(pred.protocols[0]),
                     "measured_busbw": c.measured.value, "predicted_busbw": c.model,
                     "ratio": c.ratio, "source": case["source"], "role": case.get("role", "test"),
                     "size_regime": size_regime(case["nbytes"]), "scale_regime": scale_regime(case.get("nodes", 1)),
                     "sweep": case.get("sweep"), "nccl_stated": version, "nccl_priced": pred.nccl_version,
                     "nccl_from": version_from if version_from.startswith("assumed") else pred.nccl_version_from})
    return rows


def _within(rows: list[dict], tol: float) -> int:
    return sum(1 for r in rows if evidence.within(r["ratio"], tol))


def _table_rows(rows: list[dict] | None) -> list[dict]:
    """rows, checked to be rows of validation_table(); None gives validation_table()."""
    rows = validation_table() if rows is None else rows
    if not (isinstance(rows, (list, tuple)) and all(isinstance(r, dict) and "ratio" in r for r in rows)):
        raise ValueError(f"rows must be the rows of validation_table(); got {rows!r}")
    return rows


def _sweeps(rows: list[dict]) -> dict:
    """Rows that belong to a published sweep, grouped by its name (in the rows' order)."""
    sweeps: dict = {}
    for r in rows:
        if r.get("sweep"):
            sweeps.setdefault(r["sweep"], []).append(r)
    return sweeps


def rows_of_role(rows: list[dict] | None, role: str) -> tuple[list[dict], list[dict]]:
    """(all rows, the rows of one role: ``fit``, ``informed``, ``test`` or ``all``); rows default to validation_table()."""
    rows = _table_rows(rows)
    role = validate.choice("role", role, ROLES + ("all",))
    return rows, [r for r in rows if role == "all" or r["role"] == role]


def validation_by_regime(rows: list[dict] | None = None, role: str = "test") -> list[dict]:
    """Cells of size regime x scale regime for one role (``fit``, ``informed``, ``test`` or ``all``).

    Each cell: cases, within +-20% and +-50% (counts and shares) and the worst case (largest
    |log ratio|) with its ratio. Cells without cases are left out.
    """
    rows, chosen = rows_of_role(rows, role)
    cells = []
    for size, _, _ in SIZE_REGIMES:
        for scale, _, _ in SCALE_REGIMES:
            rs = [r for r in chosen if r["size_regime"] == size and r["scale_regime"] == scale]
            if not rs:
                continue
            worst = max(rs, key=lambda r: abs(np.log(r["ratio"])))
            cells.append({"size": size, "scale": scale, "cases": len(rs),
                          "within_20pct": _within(rs, 0.2), "within_50pct": _within(rs, 0.5),
                          "share_20pct": _within(rs, 0.2) / len(rs), "share_50pct": _within(rs, 0.5) / len(rs),
                          "worst_id": worst["id"], "worst_ratio": worst["ratio"]})
    return cells


def validation_summary(rows: list[dict] | None = None) -> dict:
    """The headline, on the TEST cases only: within +-20% at >= 256 MB, +-50% below 1 MB (256 MB = 2**28).

    ``cases``, ``fit_cases``, ``informed_cases``, ``test_cases`` and ``sources`` count every row; the
    shares (``large*``, ``small*``) count test rows alone, as fit and informed cases are not independent.
    """
    rows = _table_rows(rows)
    test = [r for r in rows if r["role"] == "test"]
    large = [r for r in test if r["nbytes"] >= 2**28]
    small = [r for r in test if r["nbytes"] < 2**20]
    out = {"cases": len(rows), "large": len(large), "large_within_20pct": _within(large, 0.2),
           "small": len(small), "small_within_50pct": _within(small, 0.5),
           "large_share": _within(large, 0.2) / len(large) if large else float("nan"),
           "small_share": _within(small, 0.5) / len(small) if small else float("nan")}
    out["fit_cases"] = sum(1 for r in rows if r["role"] == "fit")
    out["informed_cases"] = sum(1 for r in rows if r["role"] == "informed")
    out["also_cases"] = sum(1 for r in rows if r["role"] == "also")
    out["test_cases"] = len(test)
    out["sources"] = len({r["source"] for r in rows})
    return out


GOALS = (  # the accuracy goals on the TEST set: (name, lowest size, size bound, tolerance, share wanted)
    (">= 128 MiB within 20%", 2**27, float("inf"), 0.20, 0.80),
    ("1-128 MiB within 35%", 2**20, 2**27, 0.35, 0.70),
    ("< 1 MiB within 50%", 0, 2**20, 0.50, 0.70),
)


def validation_goals(rows: list[dict] | None = None, role: str = "test") -> list[dict]:
    """The accuracy goals by size on one role's cases, and node-count sweeps within 35%.

    One dict per goal: name, cases, within (count), share, wanted (share), met (bool). Node-count
    sweeps: that role's cases of every ``sweep`` whose node count varies.
    """
    rows, chosen = rows_of_role(rows, role)
    out = []
    for name, lo, hi, tol, wanted in GOALS:
        rs = [r for r in chosen if lo <= r["nbytes"] < hi]
        k = _within(rs, tol)
        out.append({"name": name, "cases": len(rs), "within": k, "share": k / len(rs) if rs else float("nan"),
                    "wanted": wanted, "met": bool(rs) and k / len(rs) >= wanted})
    # node-count sweeps (whose node count varies over all their cases): the cases of the chosen role
    chosen_ids = {r["id"] for r in chosen}
    node_rows = [r for rs in _sweeps(rows).values() if len({x["nodes"] for x in rs}) > 1 for r in rs
                 if r["id"] in chosen_ids]
    k = _within(node_rows, 0.35)
    out.append({"name": "node-count sweeps within 35%", "cases": len(node_rows), "within": k,
                "share": k / len(node_rows) if node_rows else float("nan"), "wanted": 1.0,
                "met": bool(node_rows) and k == len(node_rows),
                "sweeps": sorted({r["sweep"] for r in node_rows}),
                "misses": [r["id"] for r in node_rows if not evidence.within(r["ratio"], 0.35)]})
    return out


def node_sweep_study(rows: list[dict] | None = None) -> list[dict]:
    """Each published node-count sweep against the model: what falls with node count beyond it?

    The model already holds ``node_decline`` (efficiency.json, fit on one sweep). One dict per sweep with
    at least two node counts above one: sweep, fabric (kind), nccl (version or None), nodes,
    measured_gb_s, predicted_gb_s, fit_cases and informed_cases (how many of its cases set a constant, shaped a
    choice or re-ran a fit case: a sweep with any is not an independent test), and
    from_nodes and residual_per_doubling: (measured/predicted at the largest node count) / (the same at
    from_nodes), per doubling of the node count; 1.0 = the model already has the whole decline. from_nodes
    is the smallest count of 3 or more where the sweep has two such points (two nodes are special: NCCL's
    tree may send half the data there), else 2. A single empirical term would need these to agree and to
    come from fit cases; node_decline is the one that does.
    """
    rows = _table_rows(rows)
    cases = {c["id"]: c for c in published()["cases"]}
    out = []
    for name, rs in sorted(_sweeps(rows).items()):
        if len({r["nodes"] for r in rs}) < 2:
            continue
        rs = sorted(rs, key=lambda r: r["nodes"])
        multi = [r for r in rs if r["nodes"] > 2]
        multi = multi if len({r["nodes"] for r in multi}) > 1 else [r for r in rs if r["nodes"] > 1]
        if len({r["nodes"] for r in multi}) < 2:
            continue  # one multi-node count (e.g. 1 and 4 nodes): nothing to say about scaling
        first, last = multi[0], multi[-1]
        doublings = np.log2(last["nodes"] / first["nodes"])
        case = cases.get(first["id"], {})
        kind = case.get("fabric") or (system_fabric_kind(case_system(case)) if case else "")
        out.append({"sweep": name, "fabric": kind, "nccl": (case.get("conditions") or {}).get("nccl"),
                    "nodes": [r["nodes"] for r in rs],
                    "measured_gb_s": [r["measured_busbw"] / units.GB for r in rs],
                    "predicted_gb_s": [r["predicted_busbw"] / units.GB for r in rs],
                    "fit_cases": sum(1 for r in rs if r["role"] == "fit"),
                    "informed_cases": sum(1 for r in rs if r["role"] in ("informed", "also")), "from_nodes": first["nodes"],
                    "residual_per_doubling": float((first["ratio"] / last["ratio"]) ** (1 / doublings))
                    if doublings > 0 else float("nan")})
    return out
