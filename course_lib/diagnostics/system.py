"""The catalog system closest to a ``nvidia-smi topo -m`` matrix, and its predicted all-reduce busbw.

A topology matrix shows paths, not link rates, so the closest catalog system lends what the
matrix cannot say (GPU model, NVLink generation, NICs). Its NVLink count is set to what the
matrix shows: behind an NVSwitch every pair shows all of a GPU's links (NV12 on A100, NV18 on
H100); in a full mesh each pair shows its share, so a GPU has NV# x (GPUs - 1) links. No GPU
has more than 18 NVLinks, which tells the two apart.
"""
from __future__ import annotations

import dataclasses

from .. import costmodel, hardware, systemfile, units
from .nvlink import NvlinkStatus
from .topo import TopoMatrix

MAX_NVLINKS_PER_GPU = max(row["links_per_gpu"] for row in hardware.nvlink_generations())
BUSBW_MESSAGE_BYTES = 2**30  # 1 GiB, the large-message end of an nccl-tests sweep


def closest_system(t: TopoMatrix) -> tuple[hardware.System, int, str] | None:
    """``(system, gpus_per_node, reason)`` for the matrix, or None where no catalog system fits."""
    n, counts, nv = len(t.gpus), t.pair_counts(), t.nv_counts()
    pairs = len(t.pairs())
    if pairs and counts["NV"] == pairs and len(nv) == 1:
        k = nv[0]
        links = k * (n - 1) if k * (n - 1) <= MAX_NVLINKS_PER_GPU else k
        shape = "a full NVLink mesh" if links != k or n == 2 else "an NVSwitch"
        base = hardware.system("dgx-h100" if links > 12 else "dgx-a100")
        gen = base.raw["nvlink_generation"]
        if n > base.gpus_per_node or links > hardware.nvlink_generations()[gen - 1]["links_per_gpu"]:
            return None
        system, changes = base, []
        if links != base.raw["nvlink_links_per_gpu"]:
            system = dataclasses.replace(system, id=f"{system.id}-nvlink-x{links}", gpu_link=hardware.nvlink(gen, links))
            changes.append(f"{links} NVLinks per GPU")
        if shape != "an NVSwitch":  # a mesh has no switch to reduce in
            system = dataclasses.replace(system, id=f"{system.id}-mesh", interconnect="nvlink-mesh",
                                         topology="full-mesh", nvswitch_generation=None)
            changes.append("no NVSwitch")
        reason = (f"every pair NV{k}: read as {shape} with {links} NVLinks per GPU; closest catalog system "
                  f"{base.id} (NVLink {gen})" + (f", changed to {' and '.join(changes)}" if changes else ""))
        return system, n, reason
    if counts["NV"]:
        base = hardware.system("dgx-1-v100")
        if n > base.gpus_per_node:
            return None
        return base, n, "some pairs NVLink, others PCIe: closest catalog system dgx-1-v100 (hybrid cube-mesh)"
    if n <= 2 and not counts["SYS"]:
        base = hardware.system("consumer-4090-pcie")
        return base, n, "PCIe only, one socket, two GPUs: closest catalog system consumer-4090-pcie"
    base = hardware.system("pcie-8gpu")
    if n > base.gpus_per_node:
        return None
    sockets = len(t.socket_groups())
    system = base if sockets == base.cpu_sockets else dataclasses.replace(
        base, id=f"{base.id}-{sockets}-socket", cpu_sockets=sockets)
    return system, n, (f"PCIe only, GPUs on {sockets} CPU socket(s): closest catalog system pcie-8gpu"
                       + ("" if system is base else f", changed to {sockets} socket(s)"))


def with_nvlink_status(system: hardware.System, status: NvlinkStatus) -> tuple[hardware.System, str | None]:
    """``system`` with its NVLink bandwidth scaled to the weakest GPU's active links in ``nvidia-smi nvlink -s``.

    A ring moves at the pace of its slowest GPU, so one GPU with links down slows every GPU.
    """
    if system.gpu_link.family != "nvlink":
        return system, None
    worst = min(status.gpus, key=lambda gpu: gpu.active / len(gpu.links))
    if not worst.inactive:
        return system, None
    share = worst.active / len(worst.links)
    link = dataclasses.replace(system.gpu_link, id=f"{system.gpu_link.id}-degraded",
                               per_direction=system.gpu_link.per_direction * share,
                               detail=f"{system.gpu_link.detail}, x {worst.active}/{len(worst.links)} links active")
    return (dataclasses.replace(system, id=f"{system.id}-degraded", gpu_link=link),
            f"GPU{worst.index} has {worst.active} of {len(worst.links)} NVLinks active (nvidia-smi nvlink -s): "
            f"NVLink bandwidth scaled by {share:.2f}, as the slowest GPU paces a ring")


def predicted_busbw(t: TopoMatrix, nvlink_status: NvlinkStatus | None = None,
                    system: hardware.System | None = None) -> dict | None:
    """Predicted all-reduce busbw (GB/s) for a 1 GiB message on the closest system, with how it was chosen.

    With ``nvlink_status`` (from the same machine) inactive NVLinks lower the prediction. With
    ``system`` (a catalog system or a system file the learner wrote) that system is used instead
    of the closest one, on the matrix's GPU count.
    """
    if len(t.gpus) < 2:
        return None  # one GPU: no collective between GPUs to predict (topo_findings says so)
    if system is not None:
        g = min(len(t.gpus), system.gpus_per_node)
        found = system, g, f"the given system {system.id} ({system.gpu_link.name}), {g} of its GPUs as in the matrix"
    else:
        found = closest_system(t)
    if found is None:
        return None
    system, g, reason = found
    if nvlink_status is not None:
        system, why = with_nvlink_status(system, nvlink_status)
        if why:
            reason = f"{reason}; {why}"
    pred = costmodel.predict("all_reduce", BUSBW_MESSAGE_BYTES, system, gpus_per_node=g)
    return {"system": system.id, "gpus": g, "reason": reason, "message_bytes": BUSBW_MESSAGE_BYTES,
            "algorithm": str(pred.algorithms[0]), "busbw_gb_s": round(float(pred.busbw[0]) / units.GB, 1),
            "gpu_link_gb_s_per_direction": round(system.gpu_link.per_direction / units.GB, 1),
            "notes": list(pred.notes)}


def system_report(system: hardware.System) -> dict:
    """What a system (catalog or file) says and predicts: one inspect report of kind ``system``.

    Predicted all-reduce busbw for a 1 GiB message on one node and, where the system spans more
    (``nodes`` in a system file), on all of its nodes.
    """
    nodes = systemfile.nodes_default(system)
    summary = hardware.system_summary(system)
    found = [f"{system.id}: {system.gpus_per_node} x {system.gpu.name} per node, {nodes} node(s); GPU link "
             f"{system.gpu_link.name}, {units.format_bandwidth(system.gpu_link.per_direction)}; "
             f"{system.nics_per_node} x {system.nic.name} per node ({system.nic_fabric}), "
             f"{units.format_bandwidth(system.nic_bandwidth_per_gpu)} per GPU"]
    if system.interconnect == "pcie" and not system.p2p:
        found.append("no GPU peer-to-peer: copies between GPUs stage through host memory")
    if system.interconnect == "pcie" and system.cpu_sockets > 1:
        found.append(f"{system.cpu_sockets} CPU sockets: pairs on different sockets cross the CPU link (SYS)")
    for row in system.raw.get("nic_gpus", []):
        found.append(f"{row['name']} serves GPU{', GPU'.join(map(str, row['gpus']))}")
    preds = []
    for n in sorted({1, nodes}):
        pred = costmodel.predict("all_reduce", BUSBW_MESSAGE_BYTES, system, nodes=n)
        preds.append({"nodes": n, "gpus": pred.ranks, "algorithm": str(pred.algorithms[0]),
                      "busbw_gb_s": round(float(pred.busbw[0]) / units.GB, 1), "notes": list(pred.notes)})
        found.append(f"predicted all-reduce busbw, 1 GiB on {n} node(s) x {system.gpus_per_node} GPUs: "
                     f"{preds[-1]['busbw_gb_s']:g} GB/s ({preds[-1]['algorithm']})")
    summary.pop("source", None)
    return {"kind": "system", "system": summary, "nodes": nodes, "predicted_all_reduce_by_nodes": preds,
            "findings": found}


def mismatches(t: TopoMatrix, system: hardware.System) -> list[str]:
    """Where a topology matrix disagrees with the system (file) it is said to come from: GPU and NIC counts,
    NVLink where the system has none (or the reverse), sockets."""
    out = []
    if len(t.gpus) != system.gpus_per_node:
        out.append(f"the matrix shows {len(t.gpus)} GPU(s) but {system.id} has {system.gpus_per_node} per node: "
                   "the prediction uses the smaller count; fix gpus_per_node if the file is wrong")
    rails = [nic for nic in t.nics if any(cell in ("PIX", "PXB") for cell in
                                          (t.gpu_nic[g][t.nics.index(nic)] for g in range(len(t.gpus))))]
    if t.nics and len(rails) != system.nics_per_node:
        out.append(f"the matrix shows {len(rails)} NIC(s) that share a PCIe switch with a GPU but {system.id} "
                   f"counts {system.nics_per_node} NICs per node")
    has_nv = t.pair_counts()["NV"] > 0
    if has_nv != (system.gpu_link.family == "nvlink"):
        out.append(f"the matrix {'shows' if has_nv else 'shows no'} NVLink but {system.id}'s GPU link is "
                   f"{system.gpu_link.name}")
    sockets = len(t.socket_groups())
    if sockets > 1 and sockets != system.cpu_sockets:
        out.append(f"the matrix's GPUs sit on {sockets} CPU sockets but {system.id} says {system.cpu_sockets}")
    return out
