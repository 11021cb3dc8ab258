"""``NCCL_DEBUG=INFO`` logs: version, ranks, the transport of each channel, network, GPUDirect RDMA.

Lines from many ranks interleave in any order, and a pasted log may have lost its
``host:pid:tid [dev] NCCL INFO`` prefixes; both are accepted. A line the reader
recognises but cannot read (a channel without a known transport, a version that is
not a version) is an error naming the line.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from . import failures as _failures
from .common import fail, lines

TRANSPORTS = ("CollNet", "NET/IB", "NET/OFI", "NET/Socket", "NVLS", "P2P", "SHM")
# 'NCCL version 2.19.3+cuda12.3' (init.cc), RCCL's 'RCCL version 2.18.3+hip6.0' (ROCm/rccl src/init.cc VERSION_STRING)
# and the 'RCCL version : 2.30.4-HEAD:2b22ab0' of RCCL's newer banner
_VERSION = re.compile(r"([NR])CCL version\s{0,4}:?\s{0,4}(\S+)")
_VERSION_OK = re.compile(r"^\d+\.\d+\.\d+")
_NRANKS = re.compile(r"\bn[Rr]anks (\S+)")
_NNODES = re.compile(r"\bnNodes (\S+)")
# a connection, as src/transport/{p2p,shm,net}.cc print it across releases: 'Ring 00 : 0[0] -> 1[1] via P2P/IPC' and
# 'Ring 00 : 1 -> 0 [receive] via NET/Socket/0' (2.4), 'Channel 00 : 0[1b000] -> 1[1c000] via direct shared memory'
# (2.5-2.12; SHM keeps 'Channel NN :' without '/conn' later too), 'Channel 00/0 : 0[0] -> 8[0] [send] via
# NET/IB/0/GDRDMA' (2.12 on; the rank's [x] is its busId, later its NVML index)
_CHANNEL_VIA = re.compile(r"^(?:Channel|Ring) (\d+)(?:/\d+)? : (\d+)(?:\[[0-9a-fA-F]+\])? -> (\d+)(?:\[[0-9a-fA-F]+\])?"
                          r"(?: \[(send|receive)\])? via (.*)$")
_CHANNEL_START = re.compile(r"^(?:Channel|Ring) \d+(?:/\d+)? : \d+(?:\[| -> )")
_RING = re.compile(r"^(?:Ring (\d+) :|Channel (\d+)/\d+ :\s+\d)")
_TREE = re.compile(r"^Tree (\d+) :")
_TREES = re.compile(r"\[(\d+)\] \S*->")
_IB_USING = re.compile(r"^NET/IB ?: Using (.*?)(?: \[RO\])?; OOB")
_IB_DEV = re.compile(r"\[\d+\](\S+?:\d+)/(\w+)")
_GDR = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for (?:GPU \S+ / )?HCA (\d+) '([^']+)'")
_NETWORK = re.compile(r"^Using network (.+)$")
_OFI_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is ([\w;.-]+)")
# GB200 / NVL72 multi-node NVLink (src/init.cc, src/mnnvl.cc): 'MNNVL busId 0x... fabric UUID a.b cliqueId 0x7fff
# state 3 healthMask 0x0' per GPU, 'MNNVL 1 cliqueId 7fff cliqueSize 72 cliqueRank 3 nvlDomainSize 72' per comm
_MNNVL_FABRIC = re.compile(r"^MNNVL busId \S+ fabric UUID ([0-9a-fA-F.]{1,40}) cliqueId (0x[0-9a-fA-F]{1,16}) state (\d+)"
                           r"(?: healthMask (0x[0-9a-fA-F]{1,16}))?")
# NCCL_DEBUG_SUBSYS=TUNING: rank 0 prints NCCL's own model (src/graph/tuning.cc, ncclTopoTuneModel, 2.x): blocks of
# '  Algorithm   |   Tree   Ring   CollNetDirect |', '  Protocol    |  LL | LL128 | Simple | ...',
# ' Max NThreads |', then per collective 'AllReduce |  14.4/ 11.1 | ...': latency (us) / bandwidth (GB/s)
_TUNE_CELL = re.compile(r"^\s*(-?[0-9.]{1,20}(?:e[+-]?\d{1,3})?)\s*/\s*(-?[0-9.]{1,20}(?:e[+-]?\d{1,3})?)\s*$")
_TUNE_FUNCS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv", "AllToAll", "Send",
               "Recv", "AllGatherV", "ReduceScatterV")
_MNNVL_COMM = re.compile(r"^MNNVL (\d) cliqueId ([0-9a-fA-F]{1,16}) cliqueSize (\d{1,7})")
_MNNVL_FLAG = re.compile(r"\bMNNVL (\d)\s*$")
_NVLS_CHANNELS = re.compile(r"(\d+) nvls channels")
_PXN = re.compile(r"via NET/[^/]+/\d+\(\d+\)")


@dataclass(frozen=True)
class NcclLog:
    """What an NCCL_DEBUG=INFO log says about how NCCL moved data.

    ``channel_transports`` counts channel connections by their detailed transport
    (``P2P/IPC``, ``P2P/CUMEM``, ``NET/IB/GDRDMA`` ...); ``transports`` is the sorted
    set of transport families seen anywhere (channels, chosen network, NVLS, CollNet).
    ``gdr`` is True/False where the log says GPUDirect RDMA was enabled/disabled, else None.
    """

    nccl_version: str | None
    nranks: int | None
    nnodes: int | None
    transports: tuple[str, ...]
    channel_transports: tuple[tuple[str, int], ...]
    network: str | None
    ib_devices: tuple[str, ...]
    ib_link_layers: tuple[str, ...]
    gdr: bool | None
    gdr_disabled_hcas: tuple[str, ...]
    socket_fallback: bool
    ib_missing: bool
    ofi_provider: str | None
    nvls_available: bool
    collnet_plugin: bool
    rings: int  # distinct ring channels seen
    trees: int  # distinct tree channels seen
    pxn: bool
    warnings: tuple[str, ...]
    failures: tuple = ()  # failures.Failure, in the order they first appear
    mnnvl: bool | None = None          # multi-node NVLink (GB200 NVL72): the comm line's 'MNNVL 1'
    mnnvl_clique_size: int | None = None
    fabric_uuids: tuple[str, ...] = ()  # NVLink fabric UUIDs the GPUs report (one per NVL domain)
    library: str = "NCCL"               # RCCL where the log prints 'RCCL version'
    clique_ids: tuple[str, ...] = ()    # MNNVL cliqueIds the GPUs report
    health_masks: tuple[str, ...] = ()  # MNNVL healthMask values other than 0x0 (a degraded NVLink fabric)
    tuning: tuple = ()                  # NCCL's own predictions: (collective, algorithm, protocol, latency_us, bw_GB_s)
    socket_line: int | None = None      # the first line that shows NET/Socket or 'NET/IB : No device found'

    def to_json(self) -> dict:
        return {"nccl_version": self.nccl_version or "not in the file", "nranks": self.nranks, "nnodes": self.nnodes,
                "transports": list(self.transports), "channel_transports": dict(self.channel_transports),
                "network": self.network, "ib_devices": list(self.ib_devices), "gdr": self.gdr,
                "socket_fallback": self.socket_fallback, "ofi_provider": self.ofi_provider,
                "nvls_available": self.nvls_available, "rings": self.rings, "trees": self.trees, "pxn": self.pxn,
                "mnnvl": self.mnnvl, "mnnvl_clique_size": self.mnnvl_clique_size,
                "fabric_uuids": list(self.fabric_uuids), "library": self.library, "clique_ids": list(self.clique_ids),
                "health_masks": list(self.health_masks),
                "tuning": [{"collective": c, "algorithm": a, "protocol": p, "latency_us": lat, "bandwidth_gb_s": bw}
                           for c, a, p, lat, bw in self.tuning],
                "failures": [f.to_json() for f in self.failures]}


def _family(detail: str) -> str | None:
    """The transport family of a channel's ``via ...`` text (``P2P/IPC/read`` -> ``P2P``)."""
    if detail.startswith("P2P/"):
        return "P2P"
    if detail.startswith("SHM") or detail.startswith("direct shared memory"):
        return "SHM"
    if detail.startswith("NVLS"):
        return "NVLS"
    if detail.startswith("COLLNET") or detail.startswith("CollNet"):
        return "CollNet"
    if detail.startswith("NET/"):
        name = detail[4:].split("/")[0]
        if name.startswith("IB"):
            return "NET/IB"
        if name == "Socket":
            return "NET/Socket"
        if name in ("OFI", "AWS Libfabric", "Libfabric") or "Libfabric" in name:
            return "NET/OFI"
    return None


def _network_family(name: str) -> str | None:
    if name.startswith("IB"):
        return "NET/IB"
    if name == "Socket":
        return "NET/Socket"
    if "Libfabric" in name or name.startswith("OFI"):
        return "NET/OFI"
    return None


def _detail(via: str) -> str:
    """``P2P/IPC/read`` -> ``P2P/IPC``; ``NET/IB/0/GDRDMA`` -> ``NET/IB/GDRDMA``; ``NET/Socket/3`` -> ``NET/Socket``."""
    if via.startswith("direct shared memory"):
        return "SHM"
    parts = via.split("/")
    if parts[0] == "NET":
        keep = [parts[0], parts[1]] + [p for p in parts[2:] if p in ("GDRDMA", "Shared")]
        return "/".join(keep)
    return "/".join(parts[:2])


@dataclass
class _Scan:
    """What ``parse`` has read so far from one log (filled line by line by the ``_read_*`` helpers)."""

    version: str | None = None
    library: str = "NCCL"
    nranks: int | None = None
    nnodes: int | None = None
    network: str | None = None
    provider: str | None = None
    channels: Counter = field(default_factory=Counter)
    families: set = field(default_factory=set)
    ib_devices: list = field(default_factory=list)
    link_layers: list = field(default_factory=list)
    gdr_on: list = field(default_factory=list)
    gdr_off: list = field(default_factory=list)
    rings: set = field(default_factory=set)
    trees: set = field(default_factory=set)
    ib_missing: bool = False
    nvls: bool = False
    collnet: bool = False
    pxn: bool = False
    warnings: list = field(default_factory=list)
    recognised: int = 0
    info_lines: int = 0
    mnnvl: bool | None = None
    clique_size: int | None = None
    fabric_uuids: list = field(default_factory=list)
    clique_ids: list = field(default_factory=list)
    health_masks: list = field(default_factory=list)
    tune_algos: list = field(default_factory=list)
    tune_protos: list = field(default_factory=list)
    tuning: dict = field(default_factory=dict)
    tune_flat: bool = False  # the older one-line 'Latency/AlgBw' header: one algorithm/protocol per cell
    socket_line: int | None = None


def _read_tuning(scan: _Scan, body: str) -> bool:
    """A line of NCCL's TUNING table (see ``_TUNE_CELL``); True when the line was one."""
    if "|" not in body:
        return False
    cells = body.split("|")
    head = cells[0].strip()
    if head == "Algorithm":
        scan.tune_algos = [w for c in cells[1:] for w in c.split()]
        scan.tune_protos, scan.tune_flat = [], False
        return True
    if head == "Protocol":
        scan.tune_protos = [c.strip() for c in cells[1:] if c.strip()]
        return True
    if head == "Latency/AlgBw":  # NCCL 2.8-2.18: one header of 'Tree/    LL |' cells, algorithm/protocol each
        pairs = [c.split("/") for c in cells[1:] if c.strip()]
        scan.tune_algos = [a.strip() for a, *_ in pairs]
        scan.tune_protos = [(rest[0].strip() if rest else "?") for _, *rest in pairs]
        scan.tune_flat = True
        return True
    if head == "Max NThreads":
        return True
    if head not in _TUNE_FUNCS or not scan.tune_algos or not scan.tune_protos:
        return False
    values = [_TUNE_CELL.match(c) for c in cells[1:] if c.strip()]
    per = 1 if scan.tune_flat else max(1, len(scan.tune_protos) // len(scan.tune_algos))
    for i, m in enumerate(values):
        if m is None or i // per >= len(scan.tune_algos) or i >= len(scan.tune_protos):
            continue
        try:
            lat, bw = float(m.group(1)), float(m.group(2))
        except ValueError:
            continue
        if not (math.isfinite(lat) and math.isfinite(bw)) or lat < 0 or bw < 0:
            continue  # tuning.cc prints 0 where a pair is off, never a negative or infinite number: a damaged cell
        scan.tuning[(head, scan.tune_algos[i // per], scan.tune_protos[i])] = (lat, bw)
    scan.recognised += 1
    return True


def _read_header(scan: _Scan, no: int, line: str, body: str) -> None:
    """Warnings, the NCCL version and the communicator's ranks and nodes."""
    if "NCCL WARN" in line:
        scan.warnings.append(body)
        scan.recognised += 1
    m = _VERSION.search(line) if "version" in line else None
    if m:
        if not _VERSION_OK.match(m.group(2)):
            raise fail(no, "an NCCL version such as 2.19.3+cuda12.3", m.group(2))
        if scan.version is None or m.group(1) == "R":
            scan.version, scan.recognised = m.group(2), scan.recognised + 1
        if m.group(1) == "R":
            scan.library = "RCCL"
    m = _NRANKS.search(body) if "anks" in body else None
    if m and ("comm " in body or "Init" in body):
        if not m.group(1).isdigit():
            raise fail(no, "a whole number of ranks after 'nranks'", m.group(1))
        scan.nranks, scan.recognised = max(scan.nranks or 0, int(m.group(1))), scan.recognised + 1
        n = _NNODES.search(body)
        if n and n.group(1).isdigit():
            scan.nnodes = max(scan.nnodes or 0, int(n.group(1)))


def _read_channel(scan: _Scan, no: int, body: str) -> bool:
    """A channel connection 'N/M : a[x] -> b[y] via TRANSPORT'; True when the line was one."""
    if not (body[:1] in "CR" and _CHANNEL_START.match(body) and "->" in body):
        return False
    if body[:1] == "R" and " via " not in body:
        return False  # 'Ring 00 : 0 -> 1 -> 0': a ring's order (2.5-2.6), not a connection
    if " via" not in body:
        raise fail(no, "'via TRANSPORT' after the channel's ranks", body)
    m = _CHANNEL_VIA.match(body)
    fam = _family(m.group(5)) if m else None
    if fam is None:
        got = m.group(5) if m else body
        raise fail(no, "a channel 'N/M : a[x] -> b[y] via TRANSPORT' with a known transport "
                   "(P2P/..., SHM, NET/IB, NET/Socket, NET/OFI, NVLS, CollNet)", got)
    scan.channels[_detail(m.group(5))] += 1
    scan.families.add(fam)
    if fam == "NET/Socket" and scan.socket_line is None:
        scan.socket_line = no
    scan.pxn = scan.pxn or bool(_PXN.search(body))
    if "GDRDMA" in m.group(5):
        scan.gdr_on.append("channel")
    scan.recognised += 1
    return True


def _read_graphs(scan: _Scan, body: str) -> None:
    """Ring and tree channels."""
    if body[:1] not in ("R", "T", "C"):
        return
    m = _RING.match(body)
    if m:
        scan.rings.add(int(m.group(1) or m.group(2)))
        scan.recognised += 1
    m = _TREE.match(body)
    if m:
        scan.trees.add(int(m.group(1)))
        scan.recognised += 1
    if body.startswith("Trees "):
        scan.trees.update(int(k) for k in _TREES.findall(body))
        scan.recognised += 1


def _read_ib(scan: _Scan, no: int, body: str) -> None:
    """InfiniBand: no device found, the devices in use and their link layers, GPUDirect RDMA per HCA."""
    if "NET/IB" not in body and "GPU Direct" not in body:
        return
    if body.startswith("NET/IB") and "No device found" in body:
        scan.ib_missing, scan.recognised = True, scan.recognised + 1
        scan.socket_line = scan.socket_line or no
    m = _IB_USING.match(body)
    if m:
        devs = _IB_DEV.findall(m.group(1))
        if not devs and m.group(1).replace("[RO]", "").strip() == "":
            scan.ib_missing, scan.recognised = True, scan.recognised + 1  # NCCL 2.2x: 'Using [RO]; OOB' and no device
            return
        if not devs:
            raise fail(no, "IB devices such as '[0]mlx5_0:1/IB' after 'NET/IB : Using'", m.group(1))
        for dev, layer in devs:
            if dev not in scan.ib_devices:
                scan.ib_devices.append(dev)
            if layer not in scan.link_layers:
                scan.link_layers.append(layer)
        scan.recognised += 1
    m = _GDR.search(body)
    if m:
        (scan.gdr_on if m.group(1) == "Enabled" else scan.gdr_off).append(m.group(3))
        scan.recognised += 1


def _read_network(scan: _Scan, no: int, body: str) -> None:
    """The network NCCL chose, the OFI provider, NVLS and the CollNet plugin."""
    if not ("Using" in body or "rovider" in body or "NVLS" in body or "nvls" in body or "collnet" in body
            or "MNNVL" in body):
        return
    m = _NETWORK.match(body)
    if m:
        scan.network = m.group(1).strip()
        fam = _network_family(scan.network)
        if fam is None:
            raise fail(no, "a network name (IB, IBext_v8, Socket, AWS Libfabric ...) after 'Using network'",
                       scan.network)
        scan.families.add(fam)
        scan.recognised += 1
        if fam == "NET/Socket" and scan.socket_line is None:
            scan.socket_line = no
    m = _OFI_PROVIDER.search(body)
    if m:
        scan.provider = m.group(1)
        scan.families.add("NET/OFI")
        scan.recognised += 1
    if "NVLS multicast support is available" in body or "NVLS comm" in body:
        scan.nvls, scan.recognised = True, scan.recognised + 1
    m = _NVLS_CHANNELS.search(body) if "nvls channels" in body else None
    if m and int(m.group(1)) > 0:
        scan.nvls = True
    if "Loaded collnet plugin" in body:
        scan.collnet, scan.recognised = True, scan.recognised + 1
    if "MNNVL" in body:
        m = _MNNVL_FABRIC.match(body)
        if m:
            if m.group(1) not in scan.fabric_uuids:
                scan.fabric_uuids.append(m.group(1))
            if m.group(2) not in scan.clique_ids:
                scan.clique_ids.append(m.group(2))
            if m.group(4) and int(m.group(4), 16) and m.group(4) not in scan.health_masks:
                scan.health_masks.append(m.group(4))
            scan.recognised += 1
        m = _MNNVL_COMM.match(body)
        if m:
            scan.mnnvl, scan.clique_size = m.group(1) != "0", int(m.group(3))
            if "0x" + m.group(2) not in scan.clique_ids and m.group(2) not in scan.clique_ids:
                scan.clique_ids.append("0x" + m.group(2))
            scan.recognised += 1
        m = _MNNVL_FLAG.search(body)
        if m and scan.mnnvl is None:
            scan.mnnvl = m.group(1) != "0"


def _result(scan: _Scan, failures=()) -> NcclLog:
    """The NcclLog of a finished scan."""
    families = set(scan.families)
    if scan.nvls:
        families.add("NVLS")
    if scan.collnet:
        families.add("CollNet")
    socket_fallback = ("NET/Socket" in families and "NET/IB" not in families and "NET/OFI" not in families)
    gdr = True if scan.gdr_on else (False if scan.gdr_off else None)
    return NcclLog(nccl_version=scan.version, nranks=scan.nranks, nnodes=scan.nnodes,
                   transports=tuple(sorted(families)), channel_transports=tuple(sorted(scan.channels.items())),
                   network=scan.network, ib_devices=tuple(scan.ib_devices), ib_link_layers=tuple(scan.link_layers),
                   gdr=gdr, gdr_disabled_hcas=tuple(dict.fromkeys(scan.gdr_off)), socket_fallback=socket_fallback,
                   ib_missing=scan.ib_missing, ofi_provider=scan.provider, nvls_available=scan.nvls,
                   collnet_plugin=scan.collnet, rings=len(scan.rings), trees=len(scan.trees), pxn=scan.pxn,
                   warnings=tuple(scan.warnings), failures=tuple(failures), mnnvl=scan.mnnvl,
                   mnnvl_clique_size=scan.clique_size, fabric_uuids=tuple(scan.fabric_uuids), library=scan.library,
                   clique_ids=tuple(scan.clique_ids), health_masks=tuple(scan.health_masks),
                   tuning=tuple((c, a, p, lat, bw) for (c, a, p), (lat, bw) in scan.tuning.items()),
                   socket_line=scan.socket_line if socket_fallback else None)


def _body(line: str) -> str:
    """The line after its ``host:pid:tid [dev] NCCL INFO`` prefix (the line itself where it has none)."""
    at = line.find("NCCL INFO")
    if at < 0:
        at = line.find("NCCL WARN")
    if at < 0:
        return line
    return line[at + 10:at + 4106] if line[at + 9:at + 10] == " " else line[at + 9:at + 4105]


def parse(text) -> NcclLog:
    """Parse an NCCL_DEBUG=INFO log; ValueError names the line and what it expected."""
    numbered = lines(text)
    scan = _Scan()
    for no, raw in numbered:
        line = raw.strip()
        if not line:
            continue
        body = _body(line)
        if body is not line:
            scan.info_lines += 1
        _read_header(scan, no, line, body)
        if _read_channel(scan, no, body):
            continue
        if "|" in body and _read_tuning(scan, body):
            continue
        _read_graphs(scan, body)
        _read_ib(scan, no, body)
        _read_network(scan, no, body)
    found = _failures.find(numbered)
    if scan.recognised == 0 and not found and scan.info_lines == 0:
        raise fail(1, "an NCCL_DEBUG=INFO log (lines with 'NCCL INFO' or 'NCCL version')",
                   numbered[0][1].strip() if numbered else None)
    return _result(scan, found)
