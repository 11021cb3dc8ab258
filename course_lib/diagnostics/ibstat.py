"""RDMA ports from ``ibstat``, ``ibv_devinfo`` or ``ibstatus``: device, port, state, rate, link layer.

``Rate`` is the port's signalling rate in Gb/s per direction as the tools print it
(ibstat ``Rate: 400``; ibstatus ``rate: 200 Gb/sec (4X HDR)``). Plain ``ibv_devinfo``
does not print a rate (``-v`` prints width and speed), so the rate may be unknown.
The link layer tells InfiniBand from Ethernet (RoCE). A port block without a link-layer line gets
``"unknown"``, not InfiniBand: ibstat prints ``Link layer`` only when built with libibumad's link-layer
field (infiniband-diags ibstat.c, ``#ifdef HAVE_UMAD_PORT_LINK_LAYER``), and then for every port, so a
missing line means an older build or a cut copy, and neither says which layer the port runs. (The
ibstat_mlx4_two_ports_down sample is cut after port 2's ``Rate``; its source, linux-rdma/rdma-core
pull request 847 with rdma-core 32, prints ``Link layer: InfiniBand`` there.)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .common import fail, lines

STATES = ("Active", "Down", "Initializing", "Armed", "Polling")
LINK_LAYERS = ("InfiniBand", "Ethernet")
UNKNOWN_LINK_LAYER = "unknown"  # the output has no link-layer line for the port
UNKNOWN_STATE = "not in the copy"  # a copy cut before the port's State line
NO_CA = "CA name not in the copy"
_KEY = re.compile(r"[A-Za-z_][A-Za-z_ ]{0,63}")
_CA = re.compile(r"^CA '([^']+)'\s*$")
_PORT = re.compile(r"^\s*Port (\d+):\s*$")
_HCA = re.compile(r"^\s*hca_id:\s*(\S+)\s*$")
_DEVINFO_PORT = re.compile(r"^\s*port:\s*(\d+)\s*$")
_IBSTATUS = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:\s*$")
_WIDTH = re.compile(r"^(\d+)X")
_SPEED = re.compile(r"^([0-9.]+) Gbps")


@dataclass(frozen=True)
class IbPort:
    """One RDMA port: ``rate_gbps`` in Gb/s per direction (None where the tool did not print it);
    ``link_layer`` one of :data:`LINK_LAYERS`, or :data:`UNKNOWN_LINK_LAYER` where the output has none."""

    ca: str
    port: int
    state: str
    rate_gbps: float | None
    link_layer: str
    line: int

    def to_json(self) -> dict:
        return {"ca": self.ca, "port": self.port, "rate_gbps": self.rate_gbps, "link_layer": self.link_layer,
                "state": self.state}


@dataclass(frozen=True)
class IbStatus:
    """All ports of one ``ibstat`` / ``ibv_devinfo`` / ``ibstatus`` output; ``tool`` says which."""

    tool: str
    ports: tuple[IbPort, ...]

    def to_json(self) -> dict:
        return {"tool": self.tool, "ports": [p.to_json() for p in self.ports]}


def _state(no, text):
    # ibstat: "Active"; ibv_devinfo: "PORT_ACTIVE (4)"; ibstatus: "4: ACTIVE"
    word = text.split("(")[0].split(":")[-1].strip().removeprefix("PORT_").lower()
    for s in STATES:
        if s.lower() == word or (s == "Initializing" and word == "init"):
            return s
    raise fail(no, f"a port state ({', '.join(STATES)})", text)


def _layer(no, text):
    for layer in LINK_LAYERS:
        if text.strip().lower() == layer.lower():
            return layer
    raise fail(no, "a link layer (InfiniBand or Ethernet)", text)


def _rate(no, text):
    m = re.match(r"^([0-9.]+)(?:\s*Gb/sec.*)?$", text.strip())
    if not m:
        raise fail(no, "a rate in Gb/s such as 'Rate: 400' or 'rate: 200 Gb/sec (4X HDR)'", text)
    return float(m.group(1))


def _kv(line: str):
    """(key, value) of a 'key: value' line, or None; str.partition, so linear in the line's length."""
    key, sep, value = line.partition(":")
    key = key.strip()
    if not sep or not _KEY.fullmatch(key[:65]) or len(key) > 64:
        return None
    return key, value.strip()


def _tool(numbered):
    """(tool, index in ``numbered`` where its output starts); a label, comment or prompt line before it is
    skipped. A copy without its first device line but with 'Port N:' blocks is ibstat with the CA unnamed."""
    for i, (no, line) in enumerate(numbered):
        head = line[:4096]
        if _CA.match(head.strip()):
            return "ibstat", i
        if _HCA.match(head):
            return "ibv_devinfo", i
        if _IBSTATUS.match(head.strip()):
            return "ibstatus", i
    for i, (no, line) in enumerate(numbered):
        if _PORT.match(line[:4096]):
            return "ibstat", i
    first = next(((no, line.strip()) for no, line in numbered if line.strip()), None)
    if first is None:
        raise fail(1, "the output of ibstat, ibv_devinfo or ibstatus", None)
    raise fail(first[0], "ibstat's \"CA 'mlx5_0'\", ibv_devinfo's 'hca_id: mlx5_0' or ibstatus's "
                         "\"Infiniband device 'mlx5_0' port 1 status:\"", first[1])


def parse(text) -> IbStatus:
    """Parse ibstat, ibv_devinfo or ibstatus output; ValueError names the line and what it expected."""
    numbered = lines(text)
    tool, start = _tool(numbered)
    ports: list[IbPort] = []
    ca = NO_CA if tool == "ibstat" and not _CA.match(numbered[start][1].strip()) else None
    cur: dict | None = None

    def close(end_no):
        if cur is None:
            return
        if cur["state"] is None and end_no <= numbered[-1][0]:
            raise fail(end_no, f"a state line for port {cur['port']} of {cur['ca']}", numbered[end_no - 1][1].strip())
        ports.append(IbPort(cur["ca"], cur["port"], cur["state"] or UNKNOWN_STATE, cur["rate"],
                            cur["layer"] or UNKNOWN_LINK_LAYER, cur["line"]))

    for no, line in numbered[start:]:
        line = line[:4096]
        stripped = line.strip()
        if not stripped:
            continue
        head = _CA.match(stripped) if tool == "ibstat" else _HCA.match(line) if tool == "ibv_devinfo" else None
        if head:
            close(no)
            ca, cur = head.group(1), None
            continue
        if tool == "ibstatus":
            m = _IBSTATUS.match(stripped)
            if m:
                close(no)
                ca, cur = m.group(1), {"ca": m.group(1), "port": int(m.group(2)), "state": None, "rate": None,
                                       "layer": None, "line": no, "width": None}
                continue
        m = (_PORT if tool == "ibstat" else _DEVINFO_PORT).match(line)
        if m and tool != "ibstatus":
            if ca is None:
                raise fail(no, "a device line before the first port", stripped)
            close(no)
            cur = {"ca": ca, "port": int(m.group(1)), "state": None, "rate": None, "layer": None, "line": no,
                   "width": None}
            continue
        kv = _kv(line)
        if not kv:
            raise fail(no, "a 'key: value' line", stripped)
        key, value = kv[0].lower(), kv[1]
        if cur is None:
            continue  # device-level keys (CA type, firmware, GUIDs ...)
        if key == "state":
            cur["state"] = _state(no, value)
        elif key == "rate":
            cur["rate"] = _rate(no, value)
        elif key in ("link layer", "link_layer"):
            cur["layer"] = _layer(no, value)
        elif key == "active_width":
            w = _WIDTH.match(value)
            if not w:
                raise fail(no, "an active width such as '4X (2)'", value)
            cur["width"] = int(w.group(1))
        elif key == "active_speed":
            s = _SPEED.match(value)
            if not s:
                raise fail(no, "an active speed such as '25.0 Gbps (32)'", value)
            if cur["width"]:
                cur["rate"] = round(cur["width"] * float(s.group(1)), 3)
    close(numbered[-1][0] + 1)
    if not ports:
        raise fail(numbered[-1][0] + 1, "at least one port", None)
    return IbStatus(tool=tool, ports=tuple(ports))
