"""PCIe Access Control Services from ``lspci -vvv``: which bridges redirect peer-to-peer traffic.

Each bridge that supports ACS prints an ``ACSCtl:`` line of seven flags (``SrcValid+ TransBlk-
ReqRedir+ ...``), ``+`` for on. With request or completion redirect on, a read or write from one
GPU to another below that bridge is sent up to the root complex (and its IOMMU) instead of across
the switch: GPU peer-to-peer and GPUDirect RDMA slow down, fail or hang. NCCL's troubleshooting
guide asks for ACS off on bare metal. Other lines (device headers, ``ACSCap:``) are read for the
device name or skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .common import fail, lines

FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
REDIRECT = ("ReqRedir", "CmpltRedir")
_CTL = re.compile(r"^\s*ACSCtl:\s*(.*)$")
_DEVICE = re.compile(r"^([0-9a-fA-F]{2,4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s")
_FLAG = re.compile(r"^([A-Za-z]+)([+-])$")


@dataclass(frozen=True)
class AcsBridge:
    """One ``ACSCtl:`` line: ``flags`` maps each of ``FLAGS`` to on (True) or off."""

    device: str | None
    flags: tuple[tuple[str, bool], ...]
    line: int

    @property
    def enabled(self) -> bool:
        return any(on for _, on in self.flags)

    @property
    def redirects(self) -> bool:
        return any(on for name, on in self.flags if name in REDIRECT)


@dataclass(frozen=True)
class AcsStatus:
    bridges: tuple[AcsBridge, ...]

    def to_json(self) -> dict:
        return {"bridges": len(self.bridges), "acs_enabled": sum(b.enabled for b in self.bridges),
                "redirecting": sum(b.redirects for b in self.bridges),
                "redirecting_devices": [b.device for b in self.bridges if b.redirects and b.device]}


def parse(text) -> AcsStatus:
    """The ``ACSCtl:`` lines of an ``lspci -vvv`` output (or of ``lspci -vvv | grep ACSCtl``)."""
    bridges, device = [], None
    for no, line in lines(text):
        d = _DEVICE.match(line)
        if d:
            device = d.group(1)
            continue
        m = _CTL.match(line)
        if not m:
            continue
        tokens = m.group(1).split()
        if len(tokens) != len(FLAGS):
            raise fail(no, f"{len(FLAGS)} ACS flags ({' '.join(f + '±' for f in FLAGS)})", line.strip())
        flags = []
        for expected, token in zip(FLAGS, tokens):
            f = _FLAG.match(token)
            if not f or f.group(1) != expected:
                raise fail(no, f"the flag {expected}+ or {expected}-", token)
            flags.append((expected, f.group(2) == "+"))
        bridges.append(AcsBridge(device=device, flags=tuple(flags), line=no))
        device = None
    if not bridges:
        raise fail(1, "lspci -vvv output with ACSCtl: lines", None)
    return AcsStatus(bridges=tuple(bridges))
