"""``iblinkinfo``: every link of an InfiniBand fabric as the subnet manager sees it, node by node.

Each port line reads ``LID PORT[  ] ==( WIDTH LANE-SPEED Gbps STATE/ PHYS)==> REMOTE-LID REMOTE-PORT[ ]
"REMOTE NAME"``, under a ``CA: NAME:`` or ``Switch: GUID NAME:`` heading (``-l`` puts the node on each
line). The speed is one lane's signalling rate: a port's rate is width x lane speed, and the lane speed
names the generation (10 QDR, 14.0625 FDR, 25.78125 EDR, 53.125 HDR, 106.25 NDR, 212.5 XDR Gb/s).
SHARP's aggregation nodes show up as CAs named ``... Aggregation Node``. Lines of dots that a person
put in to stand for left-out lines are skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .common import fail, is_elision, lines

GENERATIONS = ((2.5, "SDR"), (5.0, "DDR"), (10.0, "QDR"), (10.3125, "FDR10"), (14.0625, "FDR"), (25.78125, "EDR"),
               (53.125, "HDR"), (106.25, "NDR"), (212.5, "XDR"))
_NODE = re.compile(r"^\s*(CA|Switch|Router):(.*)$")
_WIDTH = re.compile(r"(\d+)X\b")
_SPEED = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*Gbps")
_STATE = re.compile(r"(\w+)/\s*(\w+)\s*$")
_PORT = re.compile(r"(\d+)\[[^\]]*\]\s*$")
_REMOTE = re.compile(r"^\s*(?:0x[0-9a-fA-F]+\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s*\"([^\"]*)\"")


@dataclass(frozen=True)
class IbLink:
    node: str
    node_type: str
    port: int
    width: int | None
    lane_gbps: float | None
    state: str
    physical_state: str
    remote: str | None
    remote_port: int | None
    line: int

    @property
    def rate_gbps(self) -> float | None:
        return None if self.width is None or self.lane_gbps is None else self.width * self.lane_gbps

    @property
    def generation(self) -> str | None:
        if self.lane_gbps is None:
            return None
        return next((name for speed, name in GENERATIONS if abs(speed - self.lane_gbps) < 0.01), None)


@dataclass(frozen=True)
class IbFabric:
    links: tuple[IbLink, ...]

    def nodes(self, node_type: str) -> list[str]:
        return list(dict.fromkeys(l.node for l in self.links if l.node_type == node_type))

    def to_json(self) -> dict:
        up = [l for l in self.links if l.state == "Active"]
        return {"cas": len(self.nodes("CA")), "switches": len(self.nodes("Switch")), "ports": len(self.links),
                "active": len(up), "down": len(self.links) - len(up),
                "rates": sorted({f"{l.width}X {l.generation or l.lane_gbps}" for l in up if l.rate_gbps}),
                "aggregation_nodes": [n for n in self.nodes("CA") if "Aggregation Node" in n],
                "links": [{"node": l.node, "type": l.node_type, "port": l.port, "state": l.state,
                           "physical_state": l.physical_state, "width": l.width, "lane_gbps": l.lane_gbps,
                           "rate_gbps": l.rate_gbps, "generation": l.generation, "remote": l.remote,
                           "remote_port": l.remote_port} for l in self.links]}


def _link(no, line, node, node_type) -> IbLink:
    left, _, rest = line.partition("==(")
    mid, sep, remote = rest.partition(")==>")
    if not sep or len(mid) > 120 or len(left) > 400:
        raise fail(no, "a link '...==( 4X 25.78125 Gbps Active/  LinkUp)==> ...'", line.strip())
    tokens = left.split()
    if tokens and tokens[0].startswith("0x") and '"' in left:  # iblinkinfo -l: GUID "node name" LID PORT[ ]
        node = left[left.find('"') + 1:left.rfind('"')].strip() or node
        tokens = left[left.rfind('"') + 1:].split()
        node_type = node_type or "CA"
    port = _PORT.search(" ".join(tokens)) if tokens else None
    if not port:
        raise fail(no, "the port number 'N[  ]' before '==('", left.strip())
    state = _STATE.search(mid)
    if not state:
        raise fail(no, "a port state such as 'Active/  LinkUp' or 'Down/ Polling'", mid.strip())
    width, speed = _WIDTH.search(mid), _SPEED.search(mid)
    r = _REMOTE.match(remote)
    return IbLink(node=node or "?", node_type=node_type or "?", port=int(port.group(1)),
                  width=int(width.group(1)) if width else None, lane_gbps=float(speed.group(1)) if speed else None,
                  state=state.group(1), physical_state=state.group(2), remote=r.group(3) if r else None,
                  remote_port=int(r.group(2)) if r else None, line=no)


def parse(text) -> IbFabric:
    """Parse ``iblinkinfo`` (with or without ``-l``); ValueError names the line and what it expected."""
    links, node, node_type = [], None, None
    for no, raw in lines(text):
        stripped = raw.strip()
        if not stripped or is_elision(stripped):
            continue
        m = _NODE.match(raw)
        if m and "==(" not in raw:
            node_type, name = m.group(1), m.group(2).strip().rstrip(":").strip()
            node = name.split(None, 1)[1] if node_type == "Switch" and name.startswith("0x") and " " in name else name
            continue
        if "==(" not in raw:
            raise fail(no, "'CA: NAME:', 'Switch: GUID NAME:' or a port line with '==( ... )==>'", stripped)
        links.append(_link(no, raw, node, node_type))
    if not links:
        raise fail(1, "iblinkinfo output: port lines with '==( ... )==>'", None)
    return IbFabric(links=tuple(links))
