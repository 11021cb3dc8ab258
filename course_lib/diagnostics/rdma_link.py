"""``rdma link`` (iproute2): each RDMA port's state, physical state and the network device behind it.

``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev p1p1``: a port with a ``netdev`` is an
Ethernet port (RoCE, or Soft-RoCE for ``rxe*`` devices); InfiniBand ports print ``lid`` and ``sm_lid``
instead. ``rdma link`` prints no rate: ``ibstat`` or ``ethtool NETDEV`` does.
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import fail, lines

_KEYS = ("subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev", "netdev_index")


@dataclass(frozen=True)
class RdmaPort:
    device: str
    port: int
    state: str
    physical_state: str | None
    netdev: str | None
    lid: str | None
    line: int

    @property
    def link_layer(self) -> str:
        """``Ethernet`` (RoCE) where a netdev backs the port, ``InfiniBand`` where it has a LID, else unknown."""
        return "Ethernet" if self.netdev else "InfiniBand" if self.lid is not None else "unknown"

    @property
    def soft_roce(self) -> bool:
        return self.device.startswith(("rxe", "siw"))


@dataclass(frozen=True)
class RdmaLinks:
    ports: tuple[RdmaPort, ...]

    def to_json(self) -> dict:
        return {"ports": [{"device": p.device, "port": p.port, "state": p.state, "physical_state": p.physical_state,
                           "netdev": p.netdev, "link_layer": p.link_layer, "soft_roce": p.soft_roce}
                          for p in self.ports]}


def parse(text) -> RdmaLinks:
    """Parse ``rdma link`` / ``rdma link show``; ValueError names the line and what it expected."""
    ports = []
    numbered = lines(text)
    for no, raw in numbered:
        tokens = raw.split()
        if not tokens:
            continue
        if tokens[0] != "link" or len(tokens) < 2 or "/" not in tokens[1]:
            raise fail(no, "a line 'link DEVICE/PORT state STATE physical_state ... [netdev NAME]'", raw.strip())
        device, _, port = tokens[1].rpartition("/")
        if not device or not port.isdigit() or len(port) > 4:
            raise fail(no, "DEVICE/PORT such as mlx5_0/1 after 'link'", tokens[1])
        values = {}
        for key, value in zip(tokens[2::2], tokens[3::2]):
            if key in _KEYS:
                values[key] = value
        if "state" not in values:
            raise fail(no, f"'state STATE' for {tokens[1]}", raw.strip())
        ports.append(RdmaPort(device, int(port), values["state"], values.get("physical_state"), values.get("netdev"),
                              values.get("lid"), no))
    if not ports:
        raise fail(1, "rdma link output: lines 'link mlx5_0/1 state ACTIVE ...'", None)
    return RdmaLinks(ports=tuple(ports))
