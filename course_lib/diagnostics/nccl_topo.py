"""NCCL's view of a node: the ``NCCL_TOPO_DUMP_FILE`` XML, or the ``=== System : maxBw ...`` tree of an INFO log.

The XML nests ``<cpu>``, ``<pci>`` (with ``link_speed`` and ``link_width``), ``<gpu dev sm rank gdr>`` with
its ``<nvlink target count>`` children, and ``<nic>`` with ``<net name speed port gdr>`` (speed in Mb/s).
A pasted copy is often cut in the middle: tags are read one by one, so a truncated file still reads.
The log form prints ``=== System : maxBw B totalBw T ===`` and then one line per link, ``+ PCI[24.0] -
GPU/3000 (0)``, ``+ NVL[370.8] - NVS/0``, ``+ NET[50.0] - NET/0 (...)``, with bandwidths in GB/s as NCCL's
topology search counts them (per direction). RCCL prints the same (AMD GPUs, ``gcn`` in the XML).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .common import fail, lines

_TAG = re.compile(r"<(system|cpu|pci|gpu|nvlink|nic|net|xgmi)\b([^<>]*)>")
_ATTR = re.compile(r"([\w.-]+)=\"([^\"<>]*)\"")
_SYSTEM_LINE = re.compile(r"=== System : maxBw ([0-9.]+) totalBw ([0-9.]+) ===")
_LOG_LINK = re.compile(r"\+ (PCI|NVL|NET|SYS|C2C|LOC|P2P)\[([0-9.]+)\] - (GPU|NIC|NET|NVS|PCI|CPU)/([0-9A-Fa-f-]+)")
_NET_BW = re.compile(r"NET/[0-9A-Fa-f-]+ \([^()]*/([0-9]+\.[0-9]+)\)")
NVSWITCH_CLASS = "0x068000"  # the PCI class NCCL gives an NVSwitch as an nvlink target
LOC_BW_GB_S = 5000.0  # NCCL's LOC_BW (src/graph/topo.h): the bandwidth it gives a link it did not measure


@dataclass(frozen=True)
class NcclTopo:
    """GPUs, NICs and links as NCCL saw them; ``form`` is ``xml`` or ``log``."""

    form: str
    gpus: int
    gpu_sm: tuple[int, ...]
    nvlinks_per_gpu: tuple[int, ...]
    nvswitch: bool
    nets: tuple[dict, ...]        # name, speed_gbit_s (per direction), port, gdr
    cpus: int
    max_bw_gb_s: float | None      # log form: NCCL's maxBw / totalBw, GB/s
    total_bw_gb_s: float | None
    link_bw_gb_s: dict             # log form: the largest bandwidth of each link type, GB/s (placeholders left out)
    truncated: bool
    placeholder_links: tuple = ()  # log form: links NCCL gave LOC_BW (5000 GB/s) instead of a measured rate


    def to_json(self) -> dict:
        return {"form": self.form, "gpus": self.gpus, "gpu_sm": list(self.gpu_sm),
                "nvlinks_per_gpu": list(self.nvlinks_per_gpu), "nvswitch": self.nvswitch, "nets": list(self.nets),
                "cpus": self.cpus, "max_bw_gb_s": self.max_bw_gb_s, "total_bw_gb_s": self.total_bw_gb_s,
                "link_bw_gb_s": dict(self.link_bw_gb_s), "truncated": self.truncated,
                "placeholder_links": list(self.placeholder_links)}


def _number(no, text, what):
    try:
        value = float(text)
    except ValueError:
        raise fail(no, what, text) from None
    if not (value >= 0 and value < 1e9):
        raise fail(no, what, text)
    return value


def _xml(numbered) -> NcclTopo:
    gpus, nvlinks, nets, cpus, nvswitch, closed = [], [], [], 0, False, False
    for no, line in numbered:
        if "</system>" in line:
            closed = True
        if "<" not in line:
            continue
        for tag, body in _TAG.findall(line):
            attrs = dict(_ATTR.findall(body))
            if tag == "cpu":
                cpus += 1
            elif tag == "gpu":
                gpus.append(int(_number(no, attrs.get("sm", "0"), "a GPU's sm such as sm=\"90\"")))
                nvlinks.append(0)
            elif tag in ("nvlink", "xgmi") and nvlinks:
                nvlinks[-1] += int(_number(no, attrs.get("count", "1"), "an nvlink count such as count=\"2\""))
                nvswitch = nvswitch or attrs.get("tclass") == NVSWITCH_CLASS
            elif tag == "net":
                speed = _number(no, attrs.get("speed", "0"), "a NIC speed in Mb/s such as speed=\"200000\"")
                nets.append({"name": attrs.get("name", "?"), "speed_gbit_s": speed / 1000, "port": attrs.get("port"),
                             "gdr": attrs.get("gdr") == "1"})
    return NcclTopo(form="xml", gpus=len(gpus), gpu_sm=tuple(gpus), nvlinks_per_gpu=tuple(nvlinks), nvswitch=nvswitch,
                    nets=tuple(nets), cpus=cpus, max_bw_gb_s=None, total_bw_gb_s=None, link_bw_gb_s={},
                    truncated=not closed)


def _log(numbered) -> NcclTopo:
    max_bw = total_bw = None
    gpus, nets, cpus, link_bw, nvswitch, placeholders = set(), {}, set(), {}, False, []
    for no, line in numbered:
        if "System : maxBw" in line:
            m = _SYSTEM_LINE.search(line)
            if not m:
                raise fail(no, "'=== System : maxBw B totalBw T ==='", line.strip())
            max_bw = _number(no, m.group(1), "a bandwidth in GB/s after maxBw")
            total_bw = _number(no, m.group(2), "a bandwidth in GB/s after totalBw")
            continue
        if "+ " not in line or "[" not in line:
            if "CPU/" in line and "(" in line and "NCCL INFO" in line and "+" not in line:
                cpus.add(line.split("CPU/")[1].split()[0])
            continue
        m = _LOG_LINK.search(line)
        if not m:
            continue
        kind, bw, node, ident = m.group(1), _number(no, m.group(2), "a bandwidth in GB/s in brackets"), m.group(3), m.group(4)
        if bw == LOC_BW_GB_S and kind != "LOC":
            placeholders.append(f"{kind} to {node}/{ident}")
        else:
            link_bw[kind] = max(link_bw.get(kind, 0.0), bw)
        if node == "GPU":
            gpus.add(ident)
        elif node == "NET":
            exact = _NET_BW.search(line)  # '(0/0/0/1.250000)': the same rate unrounded
            if exact and abs(float(exact.group(1)) - bw) <= 0.05 * max(bw, 0.1):
                bw = float(exact.group(1))
            nets[ident] = {"name": f"NET/{ident}", "speed_gbit_s": round(bw * 8, 3), "port": None, "gdr": None}
        elif node == "NVS":
            nvswitch = True
    if max_bw is None:
        raise fail(1, "'=== System : maxBw B totalBw T ===' before the topology lines", None)
    return NcclTopo(form="log", gpus=len(gpus), gpu_sm=(), nvlinks_per_gpu=(), nvswitch=nvswitch,
                    nets=tuple(nets.values()), cpus=len(cpus), max_bw_gb_s=max_bw, total_bw_gb_s=total_bw,
                    link_bw_gb_s=link_bw, truncated=False, placeholder_links=tuple(placeholders))


def parse(text) -> NcclTopo:
    """Parse an NCCL topology dump (XML) or the topology lines of an NCCL INFO log."""
    numbered = lines(text)
    if any("<system" in line or "<gpu " in line or "<pci " in line for _, line in numbered):
        return _xml(numbered)
    return _log(numbered)
