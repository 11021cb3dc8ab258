"""A measured nccl-tests run set against the cost model: what ``compare`` assumes, and its ratios per size.

:func:`assumptions` says, for each fact the model needs (nodes, GPUs per node, NICs, NIC rate, fabric,
algorithm, protocol, NCCL version), its value and where it came from: a flag, the file, inferred from
busbw/algbw (:func:`course_lib.diagnostics.nccl_tests.ranks_from_bandwidths`), or GUESSED from the
catalog. :func:`rows` pairs each measured size with the prediction: ratio = predicted / measured busbw,
and whether it is unusual for its regime (:func:`course_lib.costmodel.advice.unusual`).
"""
from __future__ import annotations

import math

import numpy as np

from .. import costmodel, evidence, systemfile, units
from . import nccl_tests

_NCCL_ALGOS = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "nvls", "collnetdirect": None,
               "collnetchain": None, "pat": None}


def finite(value):
    """A float for JSON: None (null) where it is NaN or infinite."""
    value = float(value)
    return value if math.isfinite(value) else None


def _per_node(parsed) -> int | None:
    """Nodes from the launcher line (``-np 16 -npernode 8`` -> 2), or None."""
    cmd = parsed.get("command", {})
    try:
        procs, per_node = int(cmd["processes"]), int(cmd["processes_per_node"])
    except (KeyError, ValueError):
        return None
    return procs // per_node if 0 < per_node <= procs and procs % per_node == 0 else None


def assumptions(parsed, sys_, collective, *, nodes=None, gpus_per_node=None, nics_per_node=None, nic_gbit_s=None,
                fabric=None, algorithm="auto", protocol="auto") -> dict:
    """What compare assumes about the run ``parsed`` (``NcclTestsRun.as_dict()``) of ``collective`` on ``sys_``:
    {fact: (value, where it came from: flag, file, inferred or GUESSED)}. The keywords are the command's flags
    (None or "auto": not given)."""
    out = {}
    ranks_in_file = parsed["ranks"]
    inferred = None if ranks_in_file else nccl_tests.ranks_from_bandwidths(collective, parsed["rows"])
    if nodes:
        out["nodes"] = (nodes, "flag --nodes")
    elif parsed["hosts"]:
        out["nodes"] = (len(parsed["hosts"]), f"file: {len(parsed['hosts'])} host name(s) in the rank lines")
    elif _per_node(parsed):
        out["nodes"] = (_per_node(parsed), "file: launcher line (processes / processes per node)")
    elif "file" in (sys_.raw or {}):
        out["nodes"] = (systemfile.nodes_default(sys_), "system file (the log has no rank lines)")
    else:
        out["nodes"] = (1, "GUESSED: the file has no rank lines; pass --nodes")
    nodes = out["nodes"][0]
    if gpus_per_node:
        out["gpus_per_node"] = (gpus_per_node, "flag -g")
    elif ranks_in_file:
        out["gpus_per_node"] = (max(1, ranks_in_file // nodes),
                                f"file: {ranks_in_file} ranks ({parsed.get('ranks_from', 'rank lines')}) / {nodes} node(s)")
    elif inferred:
        out["gpus_per_node"] = (max(1, min(sys_.gpus_per_node, inferred // nodes)),
                                f"inferred: busbw/algbw in the file implies {inferred} ranks; / {nodes} node(s)")
    else:
        out["gpus_per_node"] = (sys_.gpus_per_node, f"GUESSED: the catalog's {sys_.id}; pass -g")
    out["nics_per_node"] = ((nics_per_node, "flag --nics") if nics_per_node else
                            (sys_.nics_per_node, f"catalog {sys_.id} (nccl-tests does not print NICs): GUESSED"))
    rate = nic_gbit_s or units.gbit_per_s(sys_.nic.per_direction)
    out["nic_gbit_s"] = (rate, "flag --nic-gbit" if nic_gbit_s else f"catalog {sys_.id} ({sys_.nic.name}): GUESSED")
    kind = fabric or costmodel.system_fabric_kind(sys_)
    named = getattr(sys_, "fabric", "")
    out["fabric"] = (kind, "flag --fabric" if fabric else
                     f"{sys_.id} names it, the log does not: GUESSED" if named else
                     f"default of {sys_.id}'s NIC family, the log does not say: GUESSED")
    forced_algo = parsed["env"].get("algo")
    if algorithm != "auto":
        out["algorithm"] = (algorithm, "flag --algo")
    elif forced_algo and _NCCL_ALGOS.get(forced_algo.lower().split(",")[0]):
        out["algorithm"] = (_NCCL_ALGOS[forced_algo.lower().split(",")[0]], f"file: NCCL_ALGO={forced_algo}")
    else:
        out["algorithm"] = ("auto", "model's fastest per size (NCCL chooses too; the log does not say which it took)")
    forced_proto = parsed["env"].get("proto")
    if protocol != "auto":
        out["protocol"] = (protocol, "flag --proto")
    elif forced_proto and forced_proto in costmodel.PROTOCOLS:
        out["protocol"] = (forced_proto, f"file: NCCL_PROTO={forced_proto}")
    else:
        out["protocol"] = ("auto", "model's fastest per size")
    out["nccl_version"] = (parsed["nccl_version"] or "not in the file", "file" if parsed["nccl_version"] else "-")
    return out


def prediction(parsed, sys_, collective, assumed, *, nics_per_node=None, nccl_version=None):
    """``(Prediction, ranges)`` for the measured sizes of ``parsed`` on ``sys_`` with what :func:`assumptions`
    assumed: ``costmodel.predict`` and, per size, the range published runs in its regime measured
    (``costmodel.ranges_for``; None per size where the prediction uses spec bandwidth). ``nccl_version``: the
    release to price with (default: the file's, where it names one the course reads)."""
    nodes, g = assumed["nodes"][0], min(assumed["gpus_per_node"][0], sys_.gpus_per_node)
    sizes = np.array([r["size"] for r in parsed["rows"]], dtype=float)
    version = nccl_version or (parsed["nccl_version"] if costmodel.nccl_version_stated(parsed["nccl_version"])
                               else None)
    pred = costmodel.predict(collective, sizes, sys_, gpus_per_node=g, nodes=nodes, algorithm=assumed["algorithm"][0],
                             nics_per_node=nics_per_node, network=assumed["fabric"][0],
                             protocol=assumed["protocol"][0], nccl_version=version)
    ranges = (costmodel.ranges_for(pred.nbytes, pred.nodes, sys_, assumed["fabric"][0]) if pred.achievable
              else [None] * len(sizes))
    return pred, ranges


def rows(parsed_rows, pred: costmodel.Prediction, ranges) -> list[dict]:
    """One row per measured size: measured and predicted time (us) and busbw (GB/s), ratio = predicted /
    measured busbw (None where the file has neither a time nor a busbw), the size's range and ``unusual``."""
    out = []
    for r, t, b, al, pr, rng in zip(parsed_rows, pred.time_s, pred.busbw, pred.algorithms, pred.protocols, ranges):
        measured = finite(r["busbw"])
        ratio = None
        if finite(r["time_us"]) and t > 0:
            # predicted / measured busbw = measured / predicted time (same size, same factor); the times
            # keep their digits where nccl-tests rounds a small busbw to 0.00
            ratio = finite(evidence.ratio(r["time_us"], t * 1e6))
        elif measured:
            ratio = finite(evidence.ratio(b / units.GB, measured))
        out.append({"size": r["size"], "measured_time_us": finite(r["time_us"]), "predicted_time_us": finite(t * 1e6),
                    "measured_busbw": measured, "predicted_busbw": finite(b / units.GB), "ratio": ratio,
                    "algorithm": str(al), "protocol": str(pr), "range": costmodel.range_json(rng, float(b / units.GB)),
                    "unusual": costmodel.unusual(ratio, rng)})
    return out
