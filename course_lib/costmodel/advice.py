"""Why a measured collective differs from the cost model, and what to try: ``compare``'s advice.

The model (:mod:`course_lib.costmodel`) assumes a fabric's fitted per-step latency, NCCL's own NET/IB
or a net plugin, the catalog's links and NICs, and NCCL's two-node tree only where ``fabrics.json``
says NCCL runs it. Where a measured nccl-tests run sits far from the prediction (predicted / measured
busbw above 1.5 or below 0.67), :func:`compare_advice` names which of those assumptions likely broke
and the NCCL flags that tell. :func:`unusual` judges one size's ratio against its regime's published
range (:mod:`course_lib.costmodel.ranges`), with the fixed 0.67-1.5 where the regime has none.
"""
from __future__ import annotations

from .. import units, validate
from .efficiencies import fabric_kind_ids
from .ranges import Range

# what to check on fabrics that NCCL reaches through a net plugin instead of NET/IB (fabrics.json kinds)
PLUGIN_CHECKS = {
    "tcpxo": "NCCL_DEBUG=INFO should name the FasTrak (TCPXO) net plugin, not NET/Socket; the RxDM (TCPXO daemon) "
             "must run on every node; source Google's nccl-env-profile.sh so NCCL_FASTRAK_IFNAME lists all 8 GPU NICs",
    "efa": "NCCL_DEBUG=INFO should name NET/OFI (the aws-ofi-nccl plugin) with the efa provider, not NET/Socket; "
           "fi_info -p efa lists the devices",
    "slingshot": "NCCL_DEBUG=INFO should name NET/OFI with the cxi provider, not NET/Socket",
}
PLUGIN_CHECKS["efa_p6"] = PLUGIN_CHECKS["efa"]
PLUGIN_CHECKS["roce_gib"] = ("NCCL_DEBUG=INFO should name the gIB net plugin, not NET/Socket; source Google's gIB NCCL "
                              "environment script on every node so NCCL uses all 8 GPU NICs")
PLUGIN_CHECKS["efa_v1"] = PLUGIN_CHECKS["efa"] + "; NCCL_PROTO=simple (the plugin sets it on first-generation EFA)"
NATIVE_FABRICS = ("infiniband", "roce", "ethernet_tcp")  # NCCL's own NET/IB and NET/Socket, no plugin


def compare_advice(rows: list[dict], nodes: int, fabric: str | None = None) -> list[str]:
    """Likely causes and NCCL flags to try where predicted/measured is above 1.5 or below 0.67.

    fabric: the fabric kind assumed (``costmodel.fabric_kind_ids()``); plugin fabrics (TCPXO, EFA, Slingshot)
    get their own checks instead of InfiniBand's. rows: compare's rows, each with ``size`` (bytes) and
    ``ratio`` (predicted / measured busbw, None where the file had neither).
    """
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, dict) and {"size", "ratio"} <= r.keys()
                                                       for r in rows):
        raise ValueError(f"rows must be a list of dicts with 'size' and 'ratio' (compare's rows), got {rows!r:.80}")
    nodes = validate.integer("nodes", nodes, low=1)
    if fabric is not None:
        fabric = validate.choice("fabric", fabric, fabric_kind_ids())
    plugin = PLUGIN_CHECKS.get(fabric)
    slow = [r for r in rows if r["ratio"] is not None and r["ratio"] > 1.5]
    fast = [r for r in rows if r["ratio"] is not None and r["ratio"] < 0.67]
    span = lambda rs: f"{units.format_bytes(rs[0]['size'], binary=True)}-{units.format_bytes(rs[-1]['size'], binary=True)}"
    out = []
    small_slow = [r for r in slow if r["size"] < 2**20]
    big_slow = [r for r in slow if r["size"] >= 2**20]
    if small_slow:
        out.append(f"measured slower than the model at {span(small_slow)} (ratio up to "
                   f"{max(r['ratio'] for r in small_slow):.2f}): a fixed cost per call the model does not see: launch "
                   "overhead and CPU speed, a proxy thread starved of CPU, or (across nodes) the network's latency "
                   "(TCP sockets, EFA/SRD). Try: NCCL_DEBUG=INFO (look for 'NET/Socket' instead of 'NET/IB'); "
                   "NCCL_PROTO=LL; bind ranks to their GPU's NUMA node; nccl-tests -G 1 (CUDA graphs)")
    if big_slow and nodes > 1 and plugin:
        out.append(f"measured slower than the model at {span(big_slow)} (ratio up to "
                   f"{max(r['ratio'] for r in big_slow):.2f}) across nodes on {fabric}: the network delivers less "
                   "than assumed, or each message costs more than the fabric's fitted per-step latency. Likely: fewer "
                   "or slower NICs than assumed (--nics, --nic-gbit), the plugin not loaded (TCP fallback), a "
                   f"congested fabric. Try: NCCL_ALGO=Ring to measure the network alone; {plugin}")
    elif big_slow and nodes > 1:
        out.append(f"measured slower than the model at {span(big_slow)} (ratio up to "
                   f"{max(r['ratio'] for r in big_slow):.2f}) across nodes: the network delivers less than assumed. "
                   "Likely: fewer or slower NICs than assumed (--nics, --nic-gbit), GPUDirect RDMA off (no 'GDRDMA' in "
                   "NCCL_DEBUG=INFO channel lines), PCIe ACS or the IOMMU left on, TCP fallback, a congested or "
                   "oversubscribed fabric. Try: NCCL_ALGO=Ring to measure the network alone; NCCL_IB_HCA to list "
                   "every NIC; NCCL_NET_GDR_LEVEL=PHB; ib_write_bw between the two nodes")
    elif big_slow:
        out.append(f"measured slower than the model at {span(big_slow)} (ratio up to "
                   f"{max(r['ratio'] for r in big_slow):.2f}) inside one node: NVLink links down or fewer than the "
                   "catalog's (nvidia-smi nvlink --status), P2P off (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL), traffic "
                   "crossing CPU sockets on a PCIe box, NVLS off where the model used it. Try: NCCL_ALGO=Ring and "
                   "NCCL_NVLS_ENABLE=1 in turn; nvidia-smi topo -m")
    fast_small = [r for r in fast if r["size"] < 2**20]
    fast_big = [r for r in fast if r["size"] >= 2**20]
    rest = fast
    if fast_small and nodes > 1:
        out.append(f"measured faster than the model at {span(fast_small)} (ratio down to "
                   f"{min(r['ratio'] for r in fast_small):.2f}) across nodes: each network step costs less here than "
                   f"the {fabric or 'fabric'} latency the course fit on another machine, or NCCL used fewer network "
                   "steps (a tree instead of a ring). Nothing to fix; note your own latency for the model")
        rest = fast_big
    if fast_big and nodes == 2:
        out.append(f"measured faster than the model at {span(fast_big)} (ratio down to "
                   f"{min(r['ratio'] for r in fast_big):.2f}) on two nodes: NCCL's tree or NVLS tree sends each byte "
                   "across the network once on two nodes and can beat the NICs' rate; the model prices the tree that "
                   "way only at the sizes where the release it prices with picks it (through 2.30 NCCL picked it for large sizes too: --nccl-version). Try: "
                   "NCCL_ALGO=Ring to see the network itself, --algo tree to compare with the tree, or --nics / "
                   "--nic-gbit if the nodes have more network than assumed")
        rest = [r for r in rest if r["size"] < 2**20]
    if rest:
        out.append(f"measured faster than the model at {span(rest)} (ratio down to {min(r['ratio'] for r in rest):.2f}): "
                   "more or faster links than assumed (--system, --nics, --nic-gbit, -g), in-network reduction "
                   "(NVLS or SHARP: NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE) the model did not use, or a launch cost "
                   "lower than the course's 15 us (small sizes). Try: --algo nvls; check the NCCL version")
    return out


def unusual(ratio: float | None, rng: Range | None) -> str | None:
    """Why a row of compare is unusual: ``"range"`` where its measured/predicted (1 / ``ratio``) is unusual for
    the regime's range ``rng`` (``Range.unusual``); ``"fixed"`` where the regime has no range and ``ratio`` is
    beyond 0.67-1.5 (a fallback); None where it is not unusual or has no ratio."""
    if rng is not None and not isinstance(rng, Range):
        raise ValueError(f"rng must be a costmodel.Range or None, got {rng!r:.80}")
    if ratio is None:
        return None
    ratio = validate.positive("ratio", ratio)
    if rng is not None and rng.known:
        return "range" if rng.unusual(1 / ratio) else None
    return "fixed" if (ratio > 1.5 or ratio < 0.67) else None
