"""NCCL's own cost model (its ``NCCL_DEBUG_SUBSYS=TUNING`` table) beside the course's, per algorithm x protocol.

What NCCL prints (NVIDIA/nccl ``src/graph/tuning.cc`` at tag v2.23.4-1, ``ncclTopoTuneModel``; read, not copied):
rank 0 prints ``latency/bandwidth`` per collective, algorithm and protocol. The latency (us) is NCCL's base
latency plus its per-step hardware latencies; the bandwidth (GB/s, 1e9 B/s) is ``bandwidths[coll][algo][proto]``:
the bus bandwidth of its channels (``nChannels x bw``, with the per-protocol refinements) converted to *algorithm*
bandwidth (x nRanks/nsteps for a ring, x 0.5 for a tree, x 5/6 for NVLS), per rank, for the buffer nccl-tests
calls ``size`` (the total buffer for all-gather and reduce-scatter: ``ncclFuncMaxSendRecvCount``). Its estimate of
a call is ``time_us = latency + bytes / (1000 x bandwidth)`` (``ncclTopoGetAlgoTime``), without a launch cost.
All-gather and reduce-scatter rows of algorithms other than Ring are not converted: their number is bus bandwidth.

The course's terms for the same algorithm x protocol are those ``predict --algo A --proto P`` prices
(``costmodel.predict`` with that algorithm forced): its latency is the predicted time at size 0 less the course's
launch latency (which NCCL's table leaves out), its bandwidth the slope of the predicted time between two large
sizes, in the same sense as NCCL's number (algorithm bandwidth, or bus bandwidth where NCCL prints that).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import collectives, costmodel, hardware, units

NCCL_TAG = "v2.23.4-1"  # the tuning.cc read for the meaning of the printed numbers
DIFFER = 0.25           # a ratio beyond 1 +- this gets a reason
# NCCL's algorithm names (ncclAlgoStr) -> the course's predict algorithm (None: the course does not model it)
ALGORITHMS = {"Tree": "tree", "Ring": "ring", "CollNetDirect": "collnet", "CollNetChain": None, "NVLS": "nvls",
              "NVLSTree": "nvls", "PAT": None}
# NCCL's function names (ncclFuncStr) -> course collectives
COLLECTIVES = {"AllReduce": "all_reduce", "Broadcast": "broadcast", "Reduce": "reduce", "AllGather": "all_gather",
               "ReduceScatter": "reduce_scatter"}
_SIZES = np.array([0.0, 2.0**32, 2.0**33])  # size 0 for the latency, two large sizes for the slope
DEFAULT_SYSTEM = "dgx-h100"


@dataclass(frozen=True)
class Machine:
    """What the course prices with: a system, GPUs per node, nodes, an NCCL release, and where each came from."""

    system: hardware.System
    gpus_per_node: int
    nodes: int
    nccl_version: str | None
    facts: dict = field(default_factory=dict)  # fact -> (value, where it came from; 'GUESSED' when guessed)

    @property
    def guessed(self) -> list[str]:
        return [k for k, (_, why) in self.facts.items() if "GUESSED" in why]


def machine(log, system: hardware.System | None = None, closest=None) -> Machine:
    """The machine a log's TUNING table was made on, as the course can price it: ``system`` (``--system``/
    ``--system-file``) when given, else ``closest`` (``(system, gpus, reason)`` from a topo -m matrix in the same
    paste), else the catalog's DEFAULT_SYSTEM, GUESSED; ranks and nodes from the log's nranks/nNodes lines."""
    facts = {}
    if system is not None:
        sys_, facts["system"] = system, (system.id, "given (--system / --system-file)")
    elif closest is not None:
        sys_, facts["system"] = closest[0], (closest[0].id, f"the topo -m matrix in the paste: {closest[2]}")
    else:
        sys_ = hardware.system(DEFAULT_SYSTEM)
        facts["system"] = (sys_.id, "GUESSED: the log names no GPU or NIC model; pass --system ID")
    ranks, nodes = log.nranks, log.nnodes
    if nodes:
        facts["nodes"] = (nodes, "log: nNodes")
    elif ranks:
        nodes = -(-ranks // sys_.gpus_per_node)
        facts["nodes"] = (nodes, f"GUESSED: {ranks} ranks / {sys_.gpus_per_node} GPUs per node of {sys_.id} (no nNodes line)")
    else:
        nodes = 1
        facts["nodes"] = (1, "GUESSED: the log has no nranks or nNodes line")
    if ranks:
        g = max(1, min(sys_.gpus_per_node, ranks // nodes))
        facts["gpus_per_node"] = (g, f"log: nranks {ranks} / {nodes} node(s)")
    else:
        g = sys_.gpus_per_node
        facts["gpus_per_node"] = (g, f"GUESSED: {sys_.id}'s {g}")
    version = log.nccl_version if costmodel.nccl_version_stated(log.nccl_version) else None
    facts["nccl_version"] = ((log.nccl_version, "log") if version else
                             (costmodel.default_nccl_version(), "default (the log's version is not one the course prices)"
                              if log.nccl_version else "default: the log prints no version"))
    return Machine(sys_, g, nodes, version, facts)


def nccl_sense(collective: str, algorithm: str) -> str:
    """``algbw`` or ``busbw``: what NCCL's printed bandwidth is for that row (tuning.cc: all-gather and
    reduce-scatter of algorithms other than Ring are left as bus bandwidth)."""
    return "busbw" if collective in ("AllGather", "ReduceScatter") and algorithm != "Ring" else "algbw"


def course_terms(collective: str, algorithm: str, protocol: str, m: Machine) -> tuple[float, float] | str:
    """(latency us, bandwidth GB/s in NCCL's sense) the course prices for one NCCL row, or why it has none."""
    coll, algo = COLLECTIVES.get(collective), ALGORITHMS.get(algorithm)
    if coll is None:
        return f"the course has no model of NCCL's {collective}"
    if algo is None:
        return f"the course does not model NCCL's {algorithm}"
    if protocol not in costmodel.PROTOCOLS:
        return f"unknown protocol {protocol!r}"
    try:
        pred = costmodel.predict(coll, _SIZES, m.system, gpus_per_node=m.gpus_per_node, nodes=m.nodes,
                                 algorithm=algo, protocol=protocol, nccl_version=m.nccl_version)
    except ValueError as exc:
        return str(exc).split(" (")[0]
    t = np.asarray(pred.time_s, dtype=float)
    if not np.all(np.isfinite(t)) or t[2] <= t[1]:
        return "the course's time does not grow with size here"
    launch = costmodel.fabric(m.system).launch
    bw = (_SIZES[2] - _SIZES[1]) / (t[2] - t[1])
    if nccl_sense(collective, algorithm) == "busbw":
        bw *= collectives.get(coll).busbw_factor(pred.ranks)
    return float((t[0] - launch) * 1e6), float(bw / units.GB)


def _ratio(course, nccl):
    return course / nccl if course is not None and nccl else None


def _far(r) -> bool:
    return r is not None and not (1 - DIFFER <= r <= 1 + DIFFER)


def reason(collective: str, algorithm: str, protocol: str, m: Machine, lat_ratio, bw_ratio, simple_ratio=None) -> str:
    """A short reason where the two models differ by more than DIFFER (empty where they agree). ``simple_ratio``:
    the bandwidth ratio of the same algorithm's Simple row; an LL or LL128 row with the same gap owes it to that."""
    f = costmodel.fabric(m.system)
    T = costmodel.protocol_table()  # the tables the course prices with (the newest it reads)
    out = []
    same_gap = (protocol != "Simple" and simple_ratio is not None and bw_ratio is not None
                and not _far(bw_ratio / simple_ratio))
    if _far(bw_ratio) and same_gap:
        out.append(f"the same gap as {algorithm}/Simple: both models scale that bandwidth alike for {protocol}")
    elif _far(bw_ratio):
        if protocol == "LL":
            factor = T["ll_bw_factor"]["ring" if algorithm == "Ring" else "tree"]
            caps = T["ll_max_bw_gb_s"]
            cap = caps["one_node"].get(f.arch) if m.nodes == 1 else caps["2"] if m.nodes == 2 else caps["4"]
            out.append(f"LL's efficiency: both take {factor:g} of the bandwidth, NCCL's capped at its llMaxBw "
                       f"({cap} GB/s here by the course's table)")
        elif protocol == "LL128":
            out.append(f"LL128: NCCL's per-channel cap x its own channel count (the course: {f.channels} channels x "
                       f"{T['ll128_max_bw_per_channel_gb_s'].get(f.arch, '?')} GB/s on {f.arch})")
        if algorithm == "Tree" and m.nodes == 2 and collective == "AllReduce":
            out.append("the tree's two-node rule: the course prices each byte crossing the network once, NCCL "
                       "rates the tree at half its bus bandwidth")
        elif algorithm == "Tree" and collective == "AllReduce":
            out.append("NCCL rates a tree at half its bus bandwidth (x 0.92, capped per arch)")
        if algorithm in ("NVLS", "NVLSTree"):
            out.append("NVLS: the course's in-switch efficiency against NCCL's 5/6 of min(bwIntra, bwInter)")
        if algorithm.startswith("CollNet"):
            out.append("CollNet: the course's SHARP efficiency against NCCL's GPU-per-NIC factor")
        if protocol == "Simple" and algorithm == "Ring":
            tech = f.intra_tech if m.nodes == 1 else f.net_tech
            out.append(f"the course's efficiency table ({tech} at {costmodel.efficiency(tech):g} of {m.system.id}'s "
                       f"link rate) against the paths NCCL's topology search found, "
                       f"{'slower' if bw_ratio > 1 else 'faster'} than that")
    if _far(lat_ratio):
        out.append(f"latency: the course's per-step terms (NCCL {T['release']}'s tables, {m.nodes} node(s) x "
                   f"{m.gpus_per_node} GPUs over {f.intra_tech}" + (f" and {f.net_tech}" if m.nodes > 1 else "")
                   + ") against NCCL's for the paths it found")
    if out and m.guessed:
        out.append(f"{', '.join(m.guessed)} GUESSED")
    return "; ".join(out)


def compare(log, m: Machine) -> list[dict]:
    """One row per (collective, algorithm, protocol) NCCL printed, in the log's order: NCCL's latency (us) and
    bandwidth (GB/s) verbatim, the course's (None where it has none, with ``course_note``), their ratios
    (course / NCCL) and a reason where they differ by more than DIFFER."""
    out = []
    simple = {(c, a): (bw, course_terms(c, a, p, m)) for c, a, p, _, bw in log.tuning if p == "Simple"}
    for coll, algo, proto, lat, bw in log.tuning:
        terms = course_terms(coll, algo, proto, m)
        c_lat, c_bw = terms if isinstance(terms, tuple) else (None, None)
        row = {"collective": coll, "algorithm": algo, "protocol": proto, "nccl_latency_us": lat,
               "course_latency_us": c_lat, "nccl_bw_gb_s": bw, "course_bw_gb_s": c_bw,
               "bw_sense": nccl_sense(coll, algo), "latency_ratio": _ratio(c_lat, lat), "bw_ratio": _ratio(c_bw, bw),
               "course_note": None if isinstance(terms, tuple) else terms, "reason": ""}
        if bw == 0:
            row["course_note"] = "NCCL's bandwidth 0: it turned this algorithm/protocol off on this machine"
        elif isinstance(terms, tuple):
            s_bw, s_terms = simple.get((coll, algo), (None, None))
            s_ratio = _ratio(s_terms[1], s_bw) if isinstance(s_terms, tuple) else None
            row["reason"] = reason(coll, algo, proto, m, row["latency_ratio"], row["bw_ratio"], s_ratio)
        out.append(row)
    return out


def to_json(rows: list[dict], m: Machine) -> dict:
    """``inspect --json``'s ``tuning_vs_course``: the machine priced, the units, the rows."""
    return {"system": m.system.id, "nodes": m.nodes, "gpus_per_node": m.gpus_per_node,
            "assumed": {k: {"value": v, "from": why} for k, (v, why) in m.facts.items()}, "guessed": m.guessed,
            "units": {"latency": "us", "bandwidth": "GB/s (1e9 B/s) per rank; algorithm bandwidth unless bw_sense "
                      "is busbw", "ratio": "course / NCCL"},
            "nccl_source": f"NVIDIA/nccl src/graph/tuning.cc at {NCCL_TAG}",
            "launch_us_left_out": costmodel.fabric(m.system).launch * 1e6, "rows": rows}


def format_json(data: dict) -> list[str]:
    """``to_json``'s dict as text lines for ``inspect``: the rows NCCL enabled (bandwidth > 0), then a count of
    the others."""
    rows = data["rows"]
    lines = [f"NCCL's own cost model (its TUNING table) beside the course's on {data['system']}, {data['nodes']} node(s) "
             f"x {data['gpus_per_node']} GPUs: latency us, bandwidth GB/s per rank (algorithm bandwidth, as NCCL "
             f"prints it; * = bus bandwidth), c/N = course / NCCL; the course's latency leaves out its "
             f"{data['launch_us_left_out']:.3g} us launch cost, which NCCL's table does not count",
             "  assumed: " + "; ".join(f"{k} {v['value']} ({v['from']})" for k, v in data["assumed"].items())]

    def cell(v, w, d=1):
        return f"{'-':>{w}}" if v is None else f"{v:>{w}.{d}f}"

    lines.append(f"  {'collective':<13} {'algo/proto':<20} {'NCCL lat':>8} {'course':>8} {'c/N':>5} {'NCCL bw':>8} "
                 f"{'course':>8} {'c/N':>5}  why")
    off = [r for r in rows if not r["nccl_bw_gb_s"]]
    for r in rows:
        if not r["nccl_bw_gb_s"]:
            continue
        star = "*" if r["bw_sense"] == "busbw" else " "
        why = r["course_note"] or r["reason"]
        lines.append(f"  {r['collective']:<13} {r['algorithm'] + '/' + r['protocol']:<20} {cell(r['nccl_latency_us'], 8)} "
                     f"{cell(r['course_latency_us'], 8)} {cell(r['latency_ratio'], 5, 2)} {cell(r['nccl_bw_gb_s'], 8)}"
                     f"{star}{cell(r['course_bw_gb_s'], 8)} {cell(r['bw_ratio'], 5, 2)}  {why}".rstrip())
    if off:
        lines.append(f"  ({len(off)} of {len(rows)} rows have bandwidth 0: NCCL turned those algorithm/protocol "
                     "pairs off on this machine; --json lists them)")
    return lines
