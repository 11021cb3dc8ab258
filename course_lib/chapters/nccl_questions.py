"""Chapter 09's last section: the questions people keep asking in NVIDIA/nccl and nccl-tests issues, each
answered once with numbers the course's model computes for the learner's system.

The questions, where the course teaches each and the threads where it was asked are data
(``data/nccl_questions.json``, threads by source id). Each ``*_answer`` function returns the numbers one
answer needs, as a dict, from the catalog and ``costmodel.predict`` (the one cross-node price); the
chapter prints them and glues them into the prose.
"""
from __future__ import annotations

import ipaddress
from functools import lru_cache

from .. import costmodel, datafiles, hardware, units, validate


@lru_cache(maxsize=1)
def _data() -> dict:
    return datafiles.load("nccl_questions.json")


def questions() -> list[dict]:
    """Every question: id, question, taught (chapter, section) pairs, and its threads (id, title, url)."""
    rows = []
    for q in _data()["questions"]:
        threads = [(sid, datafiles.source(sid)["title"], datafiles.source(sid)["url"]) for sid in q["sources"]]
        rows.append({**q, "threads": threads})
    return rows


def question(qid) -> dict:
    """One question of :func:`questions` by id (ValueError naming the ids)."""
    known = {q["id"]: q for q in questions()}
    return known[validate.choice("qid", qid, known)]


def threads(qid) -> str:
    """Where ``qid`` is taught and the threads where it was asked, as lines to print."""
    q = question(qid)
    lines = [f"Q: {q['question']}", "   taught in " + "; ".join(f'chapter {c} ("{s}")' for c, s in q["taught"])]
    lines += [f"   - {url}  ({title.split(':', 1)[0]})" for _, title, url in q["threads"]]
    return "\n".join(lines)


def _busbw(collective, nbytes, system, **kw) -> float:
    return float(costmodel.predict(collective, nbytes, system, **kw).busbw[0])


def line_rate_answer(system="dgx-h100", nbytes=2**30) -> dict:
    """Why busbw can exceed the line rate. In a node: the ring's and NVLS's busbw against the GPU link per
    direction (NVLS None where the switch cannot add). On two nodes joined by one of the system's NICs each:
    NCCL's tree, which sends each byte across the network once there, against the ring and the NIC's rate.
    Bytes/s per direction."""
    sys_ = hardware.resolve_system(system)
    try:
        nvls = costmodel.predict("all_reduce", nbytes, sys_, algorithm="nvls")
        nvls_busbw, nvls_algbw = float(nvls.busbw[0]), float(nvls.algbw[0])
    except ValueError:   # no NVLink SHARP on this system
        nvls_busbw = nvls_algbw = None
    one_nic = sys_.variant(nics_per_node=1)
    return {"system": sys_.id, "link": sys_.gpu_link.per_direction, "ranks": sys_.gpus_per_node,
            "ring_busbw": _busbw("all_reduce", nbytes, sys_, algorithm="ring"),
            "nvls_busbw": nvls_busbw, "nvls_algbw": nvls_algbw, "nic": sys_.nic.per_direction,
            "two_node_tree_busbw": _busbw("all_reduce", nbytes, one_nic, nodes=2, algorithm="tree"),
            "two_node_ring_busbw": _busbw("all_reduce", nbytes, one_nic, nodes=2, algorithm="ring")}


def units_answer(system="dgx-h100") -> dict:
    """The system's links as vendors quote them and as busbw measures them (bytes/s per direction)."""
    sys_ = hardware.resolve_system(system)
    nic = sys_.nic
    return {"system": sys_.id, "gpu_link": sys_.gpu_link.name, "gpu_link_bidirectional": sys_.gpu_link.bidirectional,
            "gpu_link_per_direction": sys_.gpu_link.per_direction, "nic": nic.name,
            "nic_gbit_s": nic.per_direction * 8 / units.GB, "nic_per_direction": nic.per_direction,
            "nic_achievable": nic.per_direction * costmodel.efficiency(costmodel.fabric(sys_).net_tech)}


def low_busbw_answer(system="dgx-h100", nodes=2, small=8 * 2**20, large=8 * 2**30) -> dict:
    """Why busbw is low: a small message against a large one, and the same nodes over TCP sockets
    (``network="ethernet_tcp"``) and with one NIC per node instead of one per GPU. Bytes/s per direction."""
    sys_ = hardware.resolve_system(system)
    n = validate.integer("nodes", nodes, low=2, high=10_000)
    return {"system": sys_.id, "nodes": n, "small": small, "large": large,
            "small_busbw": _busbw("all_reduce", small, sys_, nodes=n),
            "large_busbw": _busbw("all_reduce", large, sys_, nodes=n),
            "tcp_busbw": _busbw("all_reduce", large, sys_, nodes=n, network="ethernet_tcp"),
            "one_nic_busbw": _busbw("all_reduce", large, sys_, nodes=n, nics_per_node=1),
            "nic_line": sys_.nics_per_node * sys_.nic.per_direction / sys_.gpus_per_node}


def algorithm_answer(system="dgx-h100", nodes=4, sizes=tuple(2**k for k in range(12, 35, 2))) -> list[dict]:
    """NCCL's pick between ring and tree by size (``costmodel.predict`` restricted to them, as NCCL_ALGO=Ring,Tree):
    size, algorithm, protocol and busbw per row."""
    sys_ = hardware.resolve_system(system)
    p = costmodel.predict("all_reduce", list(sizes), sys_, nodes=validate.integer("nodes", nodes, low=2, high=10_000),
                          algorithm=("ring", "tree"))
    return [{"size": float(s), "algorithm": str(a), "protocol": str(pr), "busbw": float(b)}
            for s, a, pr, b in zip(p.nbytes, p.algorithms, p.protocols, p.busbw)]


def pxn_answer(system="dgx-h100", nodes=2) -> dict:
    """An all-to-all over ``nodes`` nodes on a rail-optimised fabric, counted per node pair: GPU-to-GPU flows that
    leave the node, how many would change rails (and climb to the spine) without PXN, and network messages
    per NIC when PXN gathers the messages of a node's GPUs for one remote GPU on that GPU's rail."""
    sys_ = hardware.resolve_system(system)
    g = sys_.gpus_per_node
    n = validate.integer("nodes", nodes, low=2, high=10_000)
    flows = g * g                       # every GPU of one node to every GPU of another
    cross_rail = g * (g - 1)            # GPU i to GPU j != i: different rails when rail = local GPU index
    return {"system": sys_.id, "gpus_per_node": g, "nodes": n, "rails": sys_.nics_per_node,
            "flows_per_node_pair": flows, "cross_rail_without_pxn": cross_rail,
            "messages_per_nic_without_pxn": flows // max(1, sys_.nics_per_node),
            "messages_per_nic_with_pxn": g // max(1, sys_.nics_per_node)}


def all_to_all_answer(system="dgx-h100", nodes=(1, 2, 4, 16), nbytes=2**30) -> list[dict]:
    """What an all-to-all should reach: busbw on 1, 2, 4 and 16 nodes against each GPU's NIC share, whose
    ratio falls from N/(N-1) on N nodes towards 1 (each GPU's NIC carries the (N-1)/N that leaves the node)."""
    sys_ = hardware.resolve_system(system)
    fab = costmodel.fabric(sys_)
    rows = []
    for N in nodes:
        N = validate.integer("nodes", N, low=1, high=10_000)
        busbw = _busbw("all_to_all", nbytes, sys_, nodes=N)
        rows.append({"nodes": N, "busbw": busbw, "nic_per_gpu": fab.net_bw_per_gpu,
                     "ratio": busbw / fab.net_bw_per_gpu, "leaves_node": (N - 1) / N})
    return rows


def traffic_class(tc) -> dict:
    """``NCCL_IB_TC`` is the whole 8-bit traffic-class byte of RoCE v2's IP header: its top six bits are the
    DSCP the switches classify by (and map to a lossless priority), its low two the ECN field."""
    tc = validate.integer("tc", tc, low=0, high=255)
    return {"tc": tc, "dscp": tc >> 2, "ecn": tc & 3, "ecn_capable": (tc & 3) in (1, 2)}


def routable_roce_v2_gid(rows) -> int:
    """The GID index NCCL should use from ``rows`` of (index, gid text, RoCE version "v1"/"v2"): the RoCE v2 GID of
    an IPv4 address (``::ffff:a.b.c.d``), else of a routable IPv6 one; a link-local fe80:: GID is never routed.
    ValueError if there is none."""
    best = None
    for index, gid, version in rows:
        addr = ipaddress.IPv6Address(str(gid).strip())
        if str(version).lower() != "v2" or addr.is_link_local or addr.is_unspecified:
            continue
        rank = 0 if addr.ipv4_mapped is not None else 1
        if best is None or rank < best[0]:
            best = (rank, int(index))
    if best is None:
        raise ValueError("rows must hold a RoCE v2 GID of a routable address (not fe80:: link-local)")
    return best[1]


def hang_demo(timeout=4.0) -> str:
    """Run 2 ranks where rank 1 never joins an all-reduce, with the lab's launcher: the one-line verdict it gives
    (which rank stalled, where, and that the other waited in a collective). Takes ``timeout`` (0.5-30) s."""
    timeout = validate.number("timeout", timeout, low=0.5, high=30.0)
    import torch  # noqa: F401 - imported before the ranks fork, so that they do not spend the timeout importing it
    import torch.distributed  # noqa: F401

    from ..lab import launch

    try:
        launch.run(_hanging_rank, ranks=2, timeout=timeout, echo=False)
    except launch.RankTimeout as exc:
        return str(exc).splitlines()[0]
    raise RuntimeError("the hang demo finished: rank 1 was meant to stall")


def _hanging_rank(rank, world_size):
    """Rank 0 all-reduces; rank 1 is stuck in a loop of its own and never calls the collective."""
    import time

    import torch
    import torch.distributed as dist

    if rank == 1:
        while True:   # a rank stuck in its own code (a data loader, an exception path that skips a collective)
            time.sleep(0.01)
    dist.all_reduce(torch.ones(4))
