"""Findings with their reasons, for each kind of parsed output: what a practitioner concludes from it.

Bandwidths are GB/s (1e9 bytes/s) per direction unless a sentence says bidirectional;
link rates come from the hardware catalog, never typed here. A finding that names a problem is a
``verdict.Finding`` (a str with ``status`` warn or fail, its ``cause`` and the ``next_command``); the others are
plain strings, read as ``ok`` (``verdict.as_finding``).
"""
from __future__ import annotations

import re

from .. import hardware, units
from . import failures as _failures
from .ibstat import LINK_LAYERS, UNKNOWN_STATE, IbStatus
from .nccl_log import NcclLog
from .nccl_topo import LOC_BW_GB_S
from .nvlink import NvlinkStatus
from .smi_pcie import SmiPcie
from .topo import PCIE_PATHS, TopoMatrix
from .verdict import Finding

_PATH_MEANING = {
    "PIX": "share one PCIe switch: P2P stays below the CPU",
    "PXB": "sit behind several PCIe switches: P2P stays below the CPU",
    "PHB": "meet at a CPU's PCIe host bridge: P2P goes up through the CPU",
    "NODE": "sit under different host bridges of one CPU: P2P crosses inside the socket",
    "SYS": "sit on different CPU sockets: P2P crosses the socket link (QPI/UPI/Infinity Fabric)",
}


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 3, 5] -> 'GPU0-3, GPU5'."""
    out, start = [], None
    for k, i in enumerate(indices):
        if start is None:
            start = i
        if k + 1 == len(indices) or indices[k + 1] != i + 1:
            out.append(f"GPU{start}" if start == i else f"GPU{start}-{i}")
            start = None
    return ", ".join(out)


def topo_findings(t: TopoMatrix) -> list[str]:
    """Findings for ``nvidia-smi topo -m``: NVLink, socket crossings, NIC placement, NUMA."""
    n, pairs, counts = len(t.gpus), t.pairs(), t.pair_counts()
    if n == 1:
        return [f"1 GPU, {len(t.nics)} NIC(s): no GPU pairs, so nothing in this machine crosses NVLink or PCIe "
                "between GPUs; collectives need a second GPU (busbw of an all-reduce over one rank is 0 by definition)"]
    out = [f"{n} GPU(s), {len(t.nics)} NIC(s); GPU pairs by path: "
           + ", ".join(f"{k} {v}" for k, v in counts.items() if v)]
    out += [Finding(f"the copy is incomplete: {note}", "warn", "a cut-off copy of nvidia-smi topo -m",
                    "nvidia-smi topo -m (paste all of it)") for note in t.notes]
    out += _lost_nvlinks(t)
    out += _fewer_nvlinks(t)
    nv = t.nv_counts()
    if pairs and counts["NV"] == len(pairs):
        kinds = "/".join(f"NV{k}" for k in nv)
        out.append(f"every GPU pair{' the copy shows' if t.missing_rows else ''} is {kinds} (bonded NVLinks): an NVSwitch or a full NVLink mesh, so "
                   f"tensor-parallel groups may take any GPUs of the node")
    elif counts["NV"]:
        first = next((i, j) for i, j, c in pairs if t.pair_class(c) == "NV")
        out.append(f"{counts['NV']} of {len(pairs)} GPU pairs have NVLink (e.g. GPU{first[0]}-GPU{first[1]} is "
                   f"{t.gpu_links[first[0]][first[1]]}); the others go over PCIe: put tensor-parallel groups on "
                   f"NVLink-connected GPUs")
    groups = t.socket_groups()
    sys_pairs = [(i, j) for i, j, c in pairs if c == "SYS"]
    if sys_pairs:
        i, j = sys_pairs[0]
        if len(groups) > 1 and any(len(g) > 1 for g in groups):
            out.append(f"GPU{i}-GPU{j} is SYS ({len(sys_pairs)} such pairs): P2P crosses the CPU socket link; "
                       f"keep TP groups within {' and '.join(_ranges(g) for g in groups)}")
        else:
            out.append(f"GPU{i}-GPU{j} is SYS, and so is every pair: no two GPUs share a socket-local path, "
                       f"so every GPU-to-GPU transfer crosses the CPU socket link")
    for path in PCIE_PATHS[:-1]:
        hit = [(i, j) for i, j, c in pairs if c == path]
        if hit:
            i, j = hit[0]
            out.append(f"GPU{i}-GPU{j} is {path} ({len(hit)} such pair{'s' if len(hit) > 1 else ''}): "
                       f"those GPUs {_PATH_MEANING[path]}")
    if t.nics:
        close = []
        for k, nic in enumerate(t.nics):
            col = [t.gpu_nic[g][k] for g in range(n)]
            if all(c == "?" for c in col):
                continue
            best = min((c for c in col if c != "?"), key=PCIE_PATHS.index)
            if best in ("PIX", "PXB"):
                near = [g for g in range(n) if col[g] == best]
                close.append(f"{nic} ({_ranges(near)}, {best})")
            elif "?" in col:
                continue  # the rows that would say whether a GPU shares its switch are not in the copy
            else:
                out.append(Finding(f"{nic} shares no PCIe switch with any GPU (closest: {best}): GPUDirect RDMA to it "
                                   f"goes through the CPU; keep it for storage or management, or expect lower bandwidth",
                                   "warn", f"{nic} sits at {best} from every GPU", "nvidia-smi topo -m; ibdev2netdev"))
        if close:
            out.append("NICs behind a PCIe switch shared with GPUs (pair them as rails): " + "; ".join(close))
        for g in range(n):
            best, nics = t.nearest_nics(g)
            if best and best not in ("PIX", "PXB"):
                out.append(f"GPU{g} has no NIC behind its PCIe switch (closest: {', '.join(nics)} at {best}): its "
                           f"network traffic crosses the host bridge, or NCCL routes it through a peer GPU (PXN)")
    numa = {}
    for g, node in enumerate(t.numa_affinity):
        if node not in (None, "N/A"):
            numa.setdefault(node, []).append(g)
    if len(numa) > 1:
        parts = [f"{_ranges(gs)} on node {node}" for node, gs in numa.items()]
        out.append("NUMA: " + "; ".join(parts) + ": bind each rank's CPU threads and memory to its GPU's node "
                   "(the CPU Affinity column lists the cores)")
    return out


def _lost_nvlinks(t: TopoMatrix) -> list[str]:
    """A GPU with no NVLink to any peer while the other GPUs reach each other over NV#: its links are down."""
    n = len(t.gpus)
    nv_of = [[j for j in range(n) if j != i and t.pair_class(t.gpu_links[i][j]) == "NV"] for i in range(n)]
    linked = [i for i in range(n) if nv_of[i]]
    if len(linked) < 2 or len(linked) == n:
        return []
    peers = sorted({t.gpu_links[i][j] for i in linked for j in nv_of[i]})
    out = []
    for g in range(n):
        if nv_of[g]:
            continue
        paths = sorted({c for j, c in enumerate(t.gpu_links[g]) if j != g and c != "?"})
        if not paths:
            continue
        out.append(Finding(
            f"GPU{g} has no NVLink to any GPU ({'/'.join(paths)} to its peers) while {len(linked)} other GPUs "
            f"reach each other over {'/'.join(peers)}: its NVLinks are down or did not train (the GPU, its "
            f"board or the NVSwitch tray); traffic to it goes over PCIe. Next: nvidia-smi nvlink -s -i {g}; "
            f"nvidia-smi nvlink -e -i {g}; nvidia-smi -q -i {g} | grep -i -A3 fabric", "warn",
            f"GPU{g} has fewer NVLinks than its peers", f"nvidia-smi nvlink -s -i {g}"))
    return out


def _fewer_nvlinks(t: TopoMatrix) -> list[Finding]:
    """A GPU whose every pair shows fewer bonded NVLinks (NV#) than the pairs among its peers, which all agree
    (behind an NVSwitch every pair shows all of a GPU's links): some of its NVLinks are down."""
    n = len(t.gpus)

    def links(i, j):
        m = re.match(r"NV(\d+)$", t.gpu_links[i][j])
        return int(m.group(1)) if m else None

    out = []
    for g in range(n):
        mine = [links(g, j) for j in range(n) if j != g]
        others = {links(i, j) for i in range(n) for j in range(i + 1, n) if g not in (i, j)}
        if n < 3 or None in mine or len(others) != 1 or None in others:
            continue
        peers = others.pop()
        if max(mine) < peers:
            out.append(Finding(
                f"GPU{g} shows NV{max(mine)} to its peers while they reach each other over NV{peers}: "
                f"{peers - max(mine)} of its NVLinks are down or did not train; a ring through it runs at its pace",
                "warn", f"GPU{g} has fewer NVLinks than its peers", f"nvidia-smi nvlink -s -i {g}"))
    return out


def nccl_findings(log: NcclLog) -> list[str]:
    """Findings for an NCCL_DEBUG=INFO log: which transports carried the data, and what that costs."""
    out = [_failure(f, log.ib_link_layers) for f in log.failures]
    head = [f"{log.library} {log.nccl_version}" if log.nccl_version else f"{log.library} version: not in the file"]
    if log.library == "RCCL":
        head[0] += " (RCCL: AMD's port of NCCL for ROCm GPUs)"
    if log.nranks:
        head.append(f"{log.nranks} rank(s)" + (f" on {log.nnodes} node(s)" if log.nnodes else ""))
    out.append(", ".join(head) + "; transports: " + (", ".join(log.transports) or "none named"))
    if log.socket_fallback:
        eth100 = hardware.network("eth-100g").per_direction
        why = "the log says 'NET/IB : No device found'" if log.ib_missing else "no IB or libfabric transport is named"
        one_node = " (this run is one node, so nothing crossed it yet)" if log.nnodes == 1 else ""
        at = f" (first shown on line {log.socket_line})" if log.socket_line else ""
        out.append(Finding(
            f"NCCL used NET/Socket{one_node}: no IB transport loaded ({why}); inter-node data goes over TCP, so expect "
            f"at most the Ethernet line rate, about {units.format_bandwidth(eth100)} for a 100 Gb/s port and "
            f"usually less, against about {units.format_bandwidth(hardware.network('ib-ndr').per_direction)} per NDR InfiniBand "
            f"port; install the RDMA stack or the cloud's NCCL net plugin{at}", "ok" if log.nnodes == 1 else "warn",
            f"NCCL fell back to NET/Socket ({why})", "ibv_devinfo; ls /sys/class/infiniband"))
    if "NET/IB" in log.transports:
        layers = "/".join(log.ib_link_layers) or "link layer not shown"
        devs = ", ".join(log.ib_devices) or "devices not listed"
        out.append(f"NCCL used NET/IB ({layers}) on {len(log.ib_devices)} port(s): {devs}")
    if log.gdr is False:
        out.append(Finding(f"GPUDirect RDMA is disabled for {', '.join(log.gdr_disabled_hcas)}: NIC traffic is staged "
                           f"through host memory; load nvidia_peermem (or use a DMA-BUF capable driver) and keep PCIe ACS "
                           f"off outside virtual machines", "warn", "GPUDirect RDMA disabled",
                           "lsmod | grep nvidia_peermem"))
    elif log.gdr:
        out.append("GPUDirect RDMA is in use: the NICs read and write GPU memory directly (GDRDMA)")
    if log.ofi_provider is not None:
        if "efa" in log.ofi_provider:
            out.append(f"NCCL used the libfabric plugin (NET/OFI) on EFA, provider {log.ofi_provider}")
        else:
            out.append(Finding(f"NCCL used the libfabric plugin (NET/OFI) with provider {log.ofi_provider}: that is TCP, "
                               f"not EFA RDMA; check that the EFA devices are visible (fi_info -p efa)", "warn",
                               f"libfabric provider {log.ofi_provider}, not EFA", "fi_info -p efa"))
    meaning = {"P2P/IPC": "GPU to GPU directly between processes (NVLink or PCIe P2P)",
               "P2P/CUMEM": "GPU to GPU directly, memory shared through CUDA's cuMem API",
               "P2P/direct pointer": "GPU to GPU directly, one process driving several GPUs",
               "SHM": "through host shared memory: P2P is off or impossible between these GPUs "
                      "(different sockets, ACS/IOMMU, or NCCL_P2P_DISABLE)"}
    for detail, count in log.channel_transports:
        key = "SHM" if detail.startswith("SHM") else detail
        if key in meaning:
            out.append(f"{count} channel connection(s) via {detail}: {meaning[key]}")
    if log.nvls_available:
        out.append("NVLS is available: the NVSwitch reduces data in the switch (NVLink SHARP), so all-reduce busbw "
                   "can exceed the per-GPU link rate")
    if log.mnnvl or log.fabric_uuids:
        size = f", clique of {log.mnnvl_clique_size} GPUs" if log.mnnvl_clique_size else ""
        fabric = (f"; fabric UUID {', '.join(log.fabric_uuids[:2])}" + (" (several: the GPUs are in different NVLink "
                  "domains, so NCCL cannot use multi-node NVLink between them)" if len(log.fabric_uuids) > 1 else "")
                  if log.fabric_uuids else "")
        state = "in use" if log.mnnvl else "not in use (MNNVL 0)" if log.mnnvl is False else "reported"
        out.append(f"multi-node NVLink (MNNVL, GB200 NVL72-class) {state}{size}{fabric}: GPUs of different trays reach "
                   f"each other over NVLink through the NVLink switch trays, not over the NICs")
    if log.clique_ids and (log.mnnvl or log.fabric_uuids):
        out.append(f"MNNVL cliqueId(s): {', '.join(log.clique_ids[:4])}" + (
            " (several cliques: GPUs in different cliques do not share multi-node NVLink)" if len(log.clique_ids) > 1 else ""))
    if log.health_masks:
        out.append(Finding(f"MNNVL healthMask {', '.join(log.health_masks[:3])} (not 0x0): the GPU reports its NVLink fabric "
                           "degraded; Next: nvidia-smi -q | grep -i -A8 fabric on that node, and the NVLink switch trays' health",
                           "warn", "a degraded NVLink fabric", "nvidia-smi -q | grep -i -A8 fabric"))
    if log.tuning:
        out += _tuning_findings(log.tuning)
    if log.collnet_plugin:
        out.append("a CollNet plugin (SHARP) is loaded: reductions can run in the InfiniBand switches")
    if log.rings or log.trees:
        out.append(f"{log.rings} ring channel(s) and {log.trees} tree channel(s) appear in the log")
    if log.pxn:
        out.append("PXN: some network sends leave through a peer GPU's NIC (the proxy rank in parentheses)")
    if log.warnings:
        out.append(Finding(f"{len(log.warnings)} NCCL WARN line(s); the first: {log.warnings[0]}", "warn",
                           "NCCL printed WARN lines", "grep 'NCCL WARN' in the whole log"))
    return out


def _tuning_findings(tuning) -> list[str]:
    """NCCL's own predictions (the TUNING table rank 0 prints), listed per collective, the usable ones only."""
    by_coll: dict = {}
    for coll, algo, proto, lat, bw in tuning:
        by_coll.setdefault(coll, []).append((algo, proto, lat, bw))
    out = [f"NCCL's own cost model is in the log (NCCL_DEBUG_SUBSYS=TUNING table, rank 0): per collective, its "
           f"prediction of latency (us) and bandwidth (GB/s) for each algorithm x protocol; {len(tuning)} entries "
           f"for {len(by_coll)} collective(s); bandwidth 0 means NCCL will not use that pair"]
    for coll, rows in by_coll.items():
        used = [r for r in rows if r[3] > 0]
        if not used:
            out.append(f"NCCL predicts for {coll}: no usable algorithm x protocol (all bandwidths 0)")
            continue
        best = max(used, key=lambda r: r[3])
        out.append(f"NCCL predicts for {coll}: " + ", ".join(f"{a}/{p} {lat:g} us, {bw:g} GB/s" for a, p, lat, bw in used)
                   + f" (highest bandwidth: {best[0]}/{best[1]})")
    return out


def _port_name(rate_gbps: float, link_layer: str) -> str:
    """The catalog's name for a port of this rate and link layer; "" where the layer is not known."""
    family = {"Ethernet": "ethernet", "InfiniBand": "infiniband"}.get(link_layer)
    if family is None:
        return ""
    for net_id in hardware.network_ids():
        link = hardware.network(net_id)
        if link.family == family and abs(units.gbit_per_s(link.per_direction) - rate_gbps) < 1e-6:
            return f" ({link.name})"
    return ""


def ibstat_findings(s: IbStatus) -> list[str]:
    """Findings for ibstat / ibv_devinfo / ibstatus: each port's state, rate and link layer."""
    out = []
    for p in s.ports:
        where = f"{p.ca} port {p.port}"
        layer = p.link_layer if p.link_layer in LINK_LAYERS else f"link layer {p.link_layer} (not in the output)"
        if p.rate_gbps is None:
            rate = "rate not printed (ibv_devinfo -v prints width and speed)"
        else:
            per = units.gbit_to_gbyte(p.rate_gbps) * units.GB
            rate = f"{p.rate_gbps:g} Gb/s = {units.format_bandwidth(per)}{_port_name(p.rate_gbps, p.link_layer)}"
        line, status, cause = f"{where}: {p.state}, {layer}, {rate}", "ok", ""
        if p.state == UNKNOWN_STATE:
            line += "; the copy is cut before this port's State line: run ibstat again to see whether it is Active"
            status, cause = "warn", f"{where}'s state is not in the copy"
        elif p.state != "Active":
            line += "; NCCL cannot use a port that is not Active: check the cable, the switch port and the subnet manager"
            status, cause = "warn", f"{where} is {p.state}"
        if p.link_layer == "Ethernet":
            line += "; Ethernet link layer means RoCE: NCCL reaches it through NET/IB, with NCCL_IB_GID_INDEX for RoCE v2"
        out.append(Finding(line, status, cause, f"ibstat {p.ca} {p.port}" if status != "ok" else ""))
    return out


def nvlink_findings(s: NvlinkStatus) -> list[str]:
    """Findings for nvidia-smi nvlink -s: inactive links and what the active ones add up to."""
    out = []
    rate = s.gb_s_per_link
    for g in s.gpus:
        if g.inactive:
            active_bw = sum(r for r in g.links if r is not None)
            out.append(Finding(f"GPU{g.index} has {g.active} of {len(g.links)} NVLinks active (inactive: "
                               f"{', '.join(f'link {k}' for k in g.inactive)}): {active_bw:.4g} GB/s per direction instead "
                               f"of {len(g.links) * (rate or 0):.4g}; a link that does not train points to the GPU board, "
                               f"the NVSwitch tray or its connector (see nvidia-smi nvlink -e)", "warn",
                               f"GPU{g.index} has fewer NVLinks active than its peers", f"nvidia-smi nvlink -e -i {g.index}"))
    shown = [g.index for g in s.gpus]
    if s.excerpt:  # GPUs left out before, between or after the ones shown
        out.append(f"the output shows only {', '.join(f'GPU{i}' for i in shown)}: the other GPUs were left out "
                   f"of this copy, so nothing here says whether their links are active")
    full = [g for g in s.gpus if not g.inactive]
    if full and rate is not None:
        links = len(full[0].links)
        per_gpu = links * rate
        out.append(f"{len(full)} GPU(s) listed with all {links} NVLinks active at {rate:g} GB/s per direction per "
                   f"link: {per_gpu:.4g} GB/s per direction per GPU ({2 * per_gpu:.4g} GB/s bidirectional)")
    return out


def pcie_findings(s: SmiPcie) -> list[str]:
    """Findings for the PCIe part of nvidia-smi -q: the link now against its maximum."""
    out = []
    for g in s.gpus:
        best = hardware.pcie_link(g.gen_max, g.width_max)
        line = (f"{g.bus_id} ({g.name or 'GPU'}): PCIe Gen{g.gen_current} x{g.width_current} now, at most "
                f"Gen{g.gen_max} x{g.width_max} = {units.format_bandwidth(best.per_direction)}")
        if g.trained_down:
            line += ("; the link reads below its maximum: GPUs lower it when idle to save power, so read it again "
                     "under load; if it stays low, suspect the slot, a riser or the BIOS setting")
            line = Finding(line, "warn", f"{g.bus_id}'s PCIe link reads below its maximum",
                           "nvidia-smi -q -d PCIE (under load)")
        out.append(line)
    return out


def acs_findings(s) -> list[str]:
    """What the ACSCtl lines mean for GPU peer-to-peer."""
    data = s.to_json()
    n, on, redirect = data["bridges"], data["acs_enabled"], data["redirecting"]
    if not redirect:
        return [f"{n} PCIe bridge(s) print ACSCtl; none redirects peer requests (ReqRedir-/CmpltRedir-): "
                "ACS does not block GPU peer-to-peer here"]
    lines_ = ", ".join(str(b.line) for b in s.bridges if b.redirects)
    return [Finding(f"{redirect} of {n} PCIe bridges redirect peer requests (ReqRedir+ or CmpltRedir+; lines {lines_}); "
            f"{on} have some ACS flag on", "warn", "PCIe ACS redirects peer-to-peer requests",
                    "sudo lspci -vvv | grep -i acsctl"),
            "with redirect on, a GPU's write to another GPU below that bridge goes up to the root complex and the "
            "IOMMU instead of across the switch: NCCL's P2P transport slows down, fails or hangs, and GPUDirect RDMA "
            "with it; on bare metal turn ACS off (BIOS, or setpci on the bridges) or boot with iommu=pt; "
            "NCCL_P2P_DISABLE=1 is the slow workaround (NCCL falls back to SHM through host memory)"]


def rdma_link_findings(r) -> list[str]:
    """Findings for ``rdma link``: which ports are up, RoCE or InfiniBand, Soft-RoCE."""
    out = []
    for p in r.ports:
        layer = {"Ethernet": f"Ethernet (RoCE) on netdev {p.netdev}", "InfiniBand": "InfiniBand"}.get(
            p.link_layer, "link layer not shown")
        line = f"{p.device} port {p.port}: {p.state}, {p.physical_state or 'physical state not shown'}, {layer}"
        down = p.state != "ACTIVE"
        if down:
            line += ("; NCCL cannot use a port that is not ACTIVE: check the cable and the switch port (ip link show "
                     f"{p.netdev}; ethtool {p.netdev})" if p.netdev else "; check the cable, the switch port and the "
                     "subnet manager (ibstat)")
        if p.soft_roce:
            line += ("; rxe/siw is software RDMA (Soft-RoCE/iWARP) on an ordinary NIC: NCCL can use it, but at TCP-class "
                     "bandwidth and latency and without GPUDirect RDMA")
        elif p.link_layer == "Ethernet":
            line += "; NCCL reaches RoCE through NET/IB: set NCCL_IB_GID_INDEX to the port's RoCE v2 GID (show_gids)"
        out.append(Finding(line, "warn", f"{p.device} port {p.port} is {p.state}",
                           f"ip link show {p.netdev}" if p.netdev else "ibstat") if down else line)
    out.append("rdma link prints no rate: ibstat (or ethtool NETDEV) gives each port's speed")
    return out


def iblinkinfo_findings(f) -> list[str]:
    """Findings for iblinkinfo: links up and down, their rates, links trained below the best, SHARP nodes."""
    up = [l for l in f.links if l.state == "Active"]
    down = [l for l in f.links if l.state != "Active"]
    out = [f"{len(f.nodes('CA'))} CA(s) and {len(f.nodes('Switch'))} switch(es) listed; {len(up)} port(s) Active, "
           f"{len(down)} not"]
    rated = [l for l in up if l.rate_gbps]
    if rated:
        best = max(l.rate_gbps for l in rated)
        kinds = sorted({(l.width, l.lane_gbps, l.generation) for l in rated}, key=lambda k: -(k[0] * k[1]))
        out.append("active links run at " + ", ".join(
            f"{w}X {g or ''} ({w} lanes x {s} Gb/s = {w * s:g} Gb/s signalling, about "
            f"{units.format_bandwidth(units.gbit_to_gbyte(w * s * (0.8 if s <= 10 else 64 / 66)) * units.GB)} of data)"
            for w, s, g in kinds))
        slow = [l for l in rated if l.rate_gbps < best - 1e-9]
        if slow:
            l = slow[0]
            out.append(Finding(f"{len(slow)} active link(s) run below the fastest (e.g. {l.node} port {l.port}: {l.width}X at "
                               f"{l.lane_gbps:g} Gb/s per lane): a link trained down; reseat or replace the cable, check the "
                               f"port with ibportstate and mlxlink", "warn", "a link trained below its peers' rate",
                               f"mlxlink -d <device> -p {l.port}"))
    if down:
        sw = [l for l in down if l.node_type == "Switch"]
        if sw and len(sw) == len(down):
            out.append(f"the {len(down)} ports that are not Active are switch ports ({down[0].state}/"
                       f"{down[0].physical_state}): nothing cabled, unless a node is missing from the CA list")
        else:
            ca = next((l for l in down if l.node_type != "Switch"), down[0])
            out.append(Finding(f"{ca.node} port {ca.port} is {ca.state}/{ca.physical_state}: NCCL cannot use it; check its cable "
                               f"and run ibstat on that host", "warn", f"{ca.node} port {ca.port} is {ca.state}", "ibstat"))
    agg = [n for n in f.nodes("CA") if "Aggregation Node" in n]
    if agg:
        out.append(f"{len(agg)} SHARP aggregation node(s) ({agg[0]}): the switches can reduce in the network "
                   f"(NCCL_COLLNET_ENABLE=1 with the SHARP plugin)")
    return out


_IP_INTERFACE = re.compile(r"^(?:eth|en|ib|bond|wl|lo)[0-9a-z]*$")  # netdevs (eth0, ens5, ib0), not mlx5_0 or efa_0


def nccl_topo_findings(t) -> list[str]:
    """Findings for NCCL's topology (XML dump or the System lines of a log)."""
    out = [f"NCCL's topology ({t.form}): {t.gpus} GPU(s), {len(t.nets)} network port(s), {t.cpus} CPU node(s)"
           + ("; the pasted dump is cut short, so counts are a lower bound" if t.truncated else "")]
    if t.nvlinks_per_gpu and not any(t.nvlinks_per_gpu):
        out.append("no NVLink: every GPU reaches the others (if any) over PCIe or the CPU")
    elif t.nvlinks_per_gpu:
        links = sorted(set(t.nvlinks_per_gpu))
        out.append(f"NVLinks per GPU: {', '.join(map(str, links))}" + ("; they end at NVSwitches" if t.nvswitch
                                                                         else "; GPU to GPU (no NVSwitch named)"))
    elif t.nvswitch:
        out.append("the GPUs reach an NVSwitch (NVS node)")
    if t.link_bw_gb_s:
        out.append("link bandwidths NCCL assumes (GB/s per direction): " +
                   ", ".join(f"{k} {v:g}" for k, v in sorted(t.link_bw_gb_s.items())))
    if t.placeholder_links:
        out.append(f"{len(t.placeholder_links)} link(s) at 5000 GB/s ({', '.join(t.placeholder_links[:3])}): not a "
                   "rate but NCCL's placeholder for a link it could not measure (LOC_BW), e.g. a virtual NIC that is "
                   "not a PCI device; that link's real rate is not in the log")
    if t.max_bw_gb_s is not None and t.max_bw_gb_s == LOC_BW_GB_S:
        out.append(f"maxBw {t.max_bw_gb_s:g} GB/s is the placeholder too: NCCL found no path from a GPU to a peer "
                   "GPU or a measured NIC to bound its rings and trees (one GPU alone, for instance)")
    elif t.max_bw_gb_s is not None:
        out.append(f"maxBw {t.max_bw_gb_s:g} GB/s, totalBw {t.total_bw_gb_s:g} GB/s: maxBw is the best bandwidth NCCL "
                   "found from one GPU to the network or its peers, an upper bound for its rings and trees")
    if t.nets:
        speeds = sorted({n["speed_gbit_s"] for n in t.nets})
        ip = [n["name"] for n in t.nets if _IP_INTERFACE.match(n["name"])]
        no_gdr = [n["name"] for n in t.nets if n["gdr"] is False and n["name"] not in ip]
        out.append(f"network ports: {', '.join(n['name'] for n in t.nets)} at {', '.join(f'{v:g}' for v in speeds)} "
                   "Gb/s" + (f"; GPUDirect RDMA off (gdr=0) on {', '.join(no_gdr)}: traffic is staged through host "
                             "memory (nvidia_peermem, ACS)" if no_gdr else ""))
        if ip:
            out.append(f"{', '.join(ip)}: an IP interface, not an RDMA device, so NCCL's socket transport (TCP through "
                       "host memory) carries that traffic and GPUDirect RDMA does not apply; NCCL found no "
                       "InfiniBand, RoCE or EFA device on this machine")
    return out


def nccl_tests_findings(r) -> list[str]:
    """Findings for an nccl-tests / rccl-tests output: what ran, where the facts came from, or how it failed."""
    what = r.collective or "collective not in the file"
    ranks = f"{r.ranks} rank(s) ({r.ranks_from})" if r.ranks else "ranks: not in the file"
    out = [_failure(f) for f in r.failures]
    out += [f"{r.tool}: {what} ({r.collective_from}), {ranks}"
           + (f" on {len(r.hosts)} host(s)" if r.hosts else "")
           + f"; NCCL version: {r.nccl_version or 'not in the file'}"]
    if r.failed_before_first_size:
        out.append(Finding("the run failed before its first size: no result row"
                           + (f"; it printed last: {r.last_words}" if r.last_words else "; nothing after the header"),
                           "fail", "the run stopped before its first result", "NCCL_DEBUG=INFO and rerun"))
    elif r.rows:
        big = max(r.rows, key=lambda row: row["size"])
        out.append(f"{len(r.rows)} size(s) up to {units.format_bytes(big['size'], binary=True)}: busbw "
                   f"{big['busbw']:g} GB/s at the largest (python -m course_lib compare FILE sets it beside the model)")
        if r.cut_after is not None:
            out.append(Finding(f"the copy ends after size {units.format_bytes(r.cut_after, binary=True)}"
                               + (" inside a row (its last columns are missing)" if r.last_row_partial else "")
                               + ", before the run's closing 'Avg bus bandwidth' line: the rows shown are results; the "
                               "larger sizes, if any ran, are not in the copy", "warn", "a cut-off copy",
                               "paste the whole output"))
    if r.avg_busbw is not None:
        out.append(f"Avg bus bandwidth (nccl-tests' mean busbw over all sizes, small ones included): {r.avg_busbw:g} GB/s")
    if r.jobs > 1:
        out.append(Finding(f"rank 0 is listed by {r.jobs} different processes: {r.jobs} separate jobs were pasted together (or "
                   "mpirun started copies of a binary built without MPI=1, each a job of its own); their rows are "
                   "not one run of more ranks", "warn", "several jobs pasted as one",
                   "build nccl-tests with MPI=1 and run one mpirun"))
    if r.error_column == "max error" and r.rows:
        out.append("the error column of this (older) nccl-tests is the largest difference from the expected values "
                   "(0e+00 or a rounding-size number is fine), not a count of wrong elements")
    if r.refused_rows:
        out.append(Finding(f"{len(r.refused_rows)} row(s) refused: a time or bandwidth that is negative or not a number "
                   f"(lines {', '.join(map(str, r.refused_rows[:5]))}): the copy is damaged there", "warn",
                   "damaged rows", "paste the output again"))
    return out


def rocm_smi_findings(t) -> list[str]:
    """Findings for ``rocm-smi --showtopo``: GPU pairs by link type (XGMI is AMD's Infinity Fabric GPU link)."""
    counts = t.pair_counts()
    out = [f"rocm-smi --showtopo: {t.gpus} AMD GPU(s)" + ("; GPU pairs by link type: "
           + ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "; no GPU pairs in the link-type matrix")]
    out += [Finding(f"the copy is incomplete: {note}", "warn", "a cut-off copy of rocm-smi --showtopo",
                    "rocm-smi --showtopo (paste all of it)") for note in t.notes]
    known = {k: v for k, v in counts.items() if k != "not in the copy"}
    if known and set(known) == {"XGMI"}:
        out.append("every GPU pair the copy shows is XGMI (Infinity Fabric links between the GPUs): RCCL's P2P "
                   "transport runs over xGMI, not PCIe")
    elif "XGMI" in known:
        pcie = next(((i, j) for i, row in enumerate(t.link_type) for j in range(i + 1, len(row)) if row[j] == "PCIE"), None)
        out.append(f"{known['XGMI']} GPU pair(s) are XGMI, {known.get('PCIE', 0)} PCIE"
                   + (f" (e.g. GPU{pcie[0]}-GPU{pcie[1]})" if pcie else "")
                   + ": keep tensor-parallel groups on XGMI-connected GPUs; the PCIE pairs cross the host")
    elif known and set(known) == {"PCIE"}:
        out.append("every GPU pair is PCIE: no Infinity Fabric (xGMI) link between the GPUs (a missing or unseated "
                   "bridge card on MI100/MI210-class boards); GPU-to-GPU traffic crosses PCIe")
    nodes = sorted({n for _, n in t.numa})
    if len(nodes) > 1:
        out.append("NUMA: " + "; ".join(f"{', '.join(f'GPU{g}' for g, n in t.numa if n == node)} on node {node}"
                                        for node in nodes) + ": bind each rank to its GPU's node")
    return out


def _failure(f, link_layers=()) -> Finding:
    """A failure's finding (``failures.finding``) as a ``fail`` verdict with its meaning and next step."""
    return Finding(_failures.finding(f, link_layers), "fail", _failures.MEANING[f.kind], _failures.NEXT[f.kind])


FINDERS = {"topo": topo_findings, "lspci_acs": acs_findings, "nccl_debug": nccl_findings, "ibstat": ibstat_findings,
           "nvlink_status": nvlink_findings, "smi_pcie": pcie_findings, "rdma_link": rdma_link_findings,
           "iblinkinfo": iblinkinfo_findings, "nccl_topo": nccl_topo_findings, "nccl_tests": nccl_tests_findings,
           "rocm_smi": rocm_smi_findings}


def findings(kind: str, result) -> list[str]:
    """The findings for one parsed output of ``kind`` (see ``diagnostics.KINDS``)."""
    if kind not in FINDERS:
        raise ValueError(f"kind must be one of {', '.join(FINDERS)}, got {kind!r}")
    return FINDERS[kind](result)
