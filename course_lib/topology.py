"""Topologies as graphs: per-pair bandwidth, bisection bandwidth, ring bottleneck (drawn by :mod:`course_lib.views.graphs`).

Nodes are GPUs, switches (PCIe, NVSwitch, InfiniBand), CPUs and NICs; every edge is a
full-duplex link with a bandwidth in bytes/s **per direction** (the same in each direction).
Per-pair bandwidth is the maximum flow between two GPUs (parallel paths add up, and
flows may be forwarded by other GPUs, as NCCL does through NVLink to reach another rail's NIC);
bisection bandwidth is the smallest flow across any split of the GPUs into two equal
halves (exact up to 16 GPUs, an upper-bound estimate from a few natural splits above).
An NVSwitch is drawn as one non-blocking switch (the chips of a baseboard merged).
"""
from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

from . import datafiles, hardware, units, validate

KINDS = ("gpu", "cpu", "pcie_switch", "nvswitch", "nic", "ib_switch")


@lru_cache(maxsize=1)
def _data() -> dict:
    return datafiles.load("topology.json")


@dataclass
class Topology:
    """A graph of devices and links; bandwidths in bytes/s per direction."""

    name: str
    kinds: dict = field(default_factory=dict)      # node -> kind
    links: dict = field(default_factory=dict)      # frozenset({a, b}) -> bytes/s per direction
    labels: dict = field(default_factory=dict)     # frozenset({a, b}) -> link name
    pos: dict = field(default_factory=dict)        # node -> (x, y) for drawing
    ring_order: list = field(default_factory=list)  # default GPU order for ring_bottleneck

    def add(self, node: str, kind: str, xy: tuple[float, float] = (0.0, 0.0)) -> None:
        self.kinds[node] = validate.choice("kind", kind, KINDS)
        self.pos[node] = xy

    def connect(self, a: str, b: str, bandwidth: float, label: str = "") -> None:
        """Join a and b with a full-duplex link of ``bandwidth`` bytes/s per direction (adds to an existing one)."""
        for node in (a, b):
            if node not in self.kinds:
                raise ValueError(f"node must be one of the topology's nodes; got {node!r}")
        bandwidth = validate.positive("bandwidth", bandwidth)
        key = frozenset((a, b))
        self.links[key] = self.links.get(key, 0.0) + bandwidth
        if label:
            self.labels[key] = label

    @property
    def gpus(self) -> list:
        return [n for n, k in self.kinds.items() if k == "gpu"]

    def _neighbours(self):
        nb = {n: {} for n in self.kinds}
        for key, bw in self.links.items():
            a, b = tuple(key)
            nb[a][b] = bw
            nb[b][a] = bw
        return nb

    def _check_gpu(self, name: str, node: str) -> str:
        if node not in self.kinds or self.kinds[node] != "gpu":
            raise ValueError(f"{name} must be one of the GPUs {self.gpus[:8]}{'...' if len(self.gpus) > 8 else ''}; got {node!r}")
        return node

    # ------------------------------------------------------------ flows
    def _max_flow(self, sources: Iterable[str], sinks: Iterable[str]) -> float:
        nb = self._neighbours()
        cap = {(a, b): bw for a in nb for b, bw in nb[a].items()}
        src, snk = ("__src__",), ("__snk__",)
        adj = {n: set(nb[n]) for n in nb}
        adj[src], adj[snk] = set(), set()
        big = float("inf")
        for s in sources:
            cap[(src, s)] = big
            adj[src].add(s)
            adj[s].add(src)
        for t in sinks:
            cap[(t, snk)] = big
            adj[t].add(snk)
            adj[snk].add(t)
        flow = 0.0
        while True:
            parent = {src: None}
            queue = deque([src])
            while queue and snk not in parent:
                u = queue.popleft()
                for v in adj[u]:
                    if v not in parent and cap.get((u, v), 0.0) > 1e-9:
                        parent[v] = u
                        queue.append(v)
            if snk not in parent:
                return flow
            path_cap, v = big, snk
            while parent[v] is not None:
                path_cap = min(path_cap, cap[(parent[v], v)])
                v = parent[v]
            v = snk
            while parent[v] is not None:
                u = parent[v]
                cap[(u, v)] -= path_cap
                cap[(v, u)] = cap.get((v, u), 0.0) + path_cap
                v = u
            flow += path_cap

    def pair_bandwidth(self, a: str, b: str) -> float:
        """Most bytes/s GPU ``a`` can send to GPU ``b`` (per direction) using every path at once."""
        a, b = self._check_gpu("a", a), self._check_gpu("b", b)
        if a == b:
            raise ValueError("b must differ from a")
        return self._max_flow([a], [b])

    def bisection_bandwidth(self) -> float:
        """Smallest bytes/s (per direction) across any split of the GPUs into equal halves.

        Exact (every split) up to 16 GPUs; above that the minimum over contiguous and
        interleaved splits, which is an upper bound on the true bisection.
        """
        gpus = self.gpus
        if len(gpus) < 2:
            raise ValueError("the topology must have at least 2 GPUs for a bisection")
        half = len(gpus) // 2
        if len(gpus) <= 16:
            first, rest = gpus[0], gpus[1:]
            splits = ([first, *c] for c in itertools.combinations(rest, half - 1))
        else:
            splits = [gpus[:half], gpus[::2][:half]]
        best = float("inf")
        for left in splits:
            right = [g for g in gpus if g not in left]
            best = min(best, self._max_flow(left, right[:len(left)] if len(gpus) % 2 else right))
        return best

    # ------------------------------------------------------------ rings
    def _widest_path(self, a: str, b: str, through_gpus: bool = False):
        nb = self._neighbours()
        best = {a: float("inf")}
        parent = {a: None}
        todo = {a}
        while todo:
            u = max(todo, key=lambda n: best[n])
            todo.remove(u)
            if u == b:
                break
            for v, bw in nb[u].items():
                # a path may pass through switches and CPUs but not through another GPU
                if self.kinds[v] == "gpu" and v != b and not through_gpus:
                    continue
                width = min(best[u], bw)
                if width > best.get(v, 0.0):
                    best[v], parent[v] = width, u
                    todo.add(v)
        if b not in parent:
            if not through_gpus:  # no switch path: forward through other GPUs (store and forward)
                return self._widest_path(a, b, through_gpus=True)
            raise ValueError(f"no path from {a!r} to {b!r}")
        path, v = [], b
        while v is not None:
            path.append(v)
            v = parent[v]
        return path[::-1]

    def ring_bottleneck(self, order: Sequence[str] | None = None) -> dict:
        """Lay one ring over the GPUs (``order``, default catalog order) and find its slowest link.

        Each hop follows the widest path (through switches and CPUs; through other GPUs only
        where nothing else connects them); a link carrying k hops in one direction gives each
        bandwidth/k. Returns ``{"bandwidth": bytes/s per direction, "link": (a, b), "hops_on_link": k}``.
        """
        order = list((self.ring_order or self.gpus) if order is None else order)
        for node in order:
            self._check_gpu("order", node)
        if len(order) < 2 or len(set(order)) != len(order):
            raise ValueError("order must list at least 2 distinct GPUs")
        load = {}
        for a, b in zip(order, order[1:] + order[:1]):
            path = self._widest_path(a, b)
            for u, v in zip(path, path[1:]):
                load[(u, v)] = load.get((u, v), 0) + 1
        worst = min(load, key=lambda e: self.links[frozenset(e)] / load[e])
        return {"bandwidth": self.links[frozenset(worst)] / load[worst], "link": worst, "hops_on_link": load[worst]}

    # ------------------------------------------------------------ views
    def describe(self) -> str:
        lines = [f"{self.name}: {len(self.gpus)} GPUs, {len(self.kinds)} devices, {len(self.links)} links"]
        for key, bw in sorted(self.links.items(), key=lambda kv: sorted(kv[0])):
            a, b = sorted(key)
            lines.append(f"  {a} <-> {b}: {units.format_bandwidth(bw)} {self.labels.get(key, '')}".rstrip())
        return "\n".join(lines)


# ---------------------------------------------------------------- builders

def socket_link(generation: int) -> dict:
    """The CPU-to-CPU link of a two-socket server of PCIe ``generation``'s era (1-7), from topology.json.

    Keys: ``cpu``, ``name``, ``gb_s_per_direction``, ``assumed`` (True where no CPU of that era is in
    the data and a neighbouring generation's link is borrowed) and ``source``.
    """
    rows = _data()["cpu_interconnects"]["by_pcie_generation"]
    generation = validate.integer("generation", generation, low=1, high=len(rows))
    return dict(next(r for r in rows if r["pcie_generation"] == generation))


def pcie_tree(switches: bool = True, gpus: int = 8, generation: int = 4, lanes: int = 16) -> Topology:
    """Two CPU sockets, GPUs on PCIe (behind PCIe switches, two GPUs each, or on CPU root ports).

    The sockets are joined by the socket link of the generation's era (``socket_link``).
    """
    if not isinstance(switches, bool):
        raise ValueError(f"switches must be True or False, got {switches!r}")
    gpus = validate.integer("gpus", gpus, low=2, high=16)
    if gpus % 2:
        raise ValueError(f"gpus must be even (split over two sockets), got {gpus}")
    link = hardware.pcie_link(generation, lanes)
    upi = socket_link(generation)
    topo = Topology(name=f"PCIe Gen{generation} tree, 2 sockets, {'with' if switches else 'without'} PCIe switches")
    topo.add("cpu0", "cpu", (-2.0, 2.0))
    topo.add("cpu1", "cpu", (2.0, 2.0))
    topo.connect("cpu0", "cpu1", upi["gb_s_per_direction"] * units.GB, upi["name"])
    per_socket = gpus // 2
    for i in range(gpus):
        socket = i // per_socket
        x = (i - gpus / 2 + 0.5) * 1.0
        topo.add(f"gpu{i}", "gpu", (x, 0.0))
        if switches:
            sw = f"plx{i // 2}"
            if sw not in topo.kinds:
                topo.add(sw, "pcie_switch", (x + 0.5, 1.0))
                topo.connect(sw, f"cpu{socket}", link.per_direction, link.name)
            topo.connect(f"gpu{i}", sw, link.per_direction, link.name)
        else:
            topo.connect(f"gpu{i}", f"cpu{socket}", link.per_direction, link.name)
    return topo


DGX1_CUBE_LAYOUT = {"gpu0": (0.0, 0.0), "gpu1": (3.0, 0.0), "gpu2": (0.0, 3.0), "gpu3": (3.0, 3.0),
                    "gpu4": (1.6, 1.1), "gpu5": (4.6, 1.1), "gpu6": (1.6, 4.1), "gpu7": (4.6, 4.1)}


def dgx1_hybrid_cube_mesh() -> Topology:
    """DGX-1 (V100): 8 GPUs, 6 NVLink 2 links each, two fully linked quads joined GPU to GPU."""
    nv = hardware.nvlink(2, 1)
    topo = Topology(name="DGX-1 V100 hybrid cube-mesh (NVLink 2)")
    for i in range(8):  # GPUs on the corners of a cube (0-3 front face, 4-7 back), so no link crosses a GPU
        topo.add(f"gpu{i}", "gpu", DGX1_CUBE_LAYOUT[f"gpu{i}"])
    for a, b, count in _data()["dgx1_links"]["pairs"]:
        topo.connect(f"gpu{a}", f"gpu{b}", count * nv.per_direction, f"{count}x NVLink 2")
    topo.ring_order = [f"gpu{i}" for i in (0, 1, 5, 4, 7, 6, 2, 3)]  # a ring on direct NVLinks only
    return topo


def bridge_pair(system_id: str = "workstation-3090-bridge") -> Topology:
    """Two GPUs joined by an NVLink bridge, both also on the CPU's PCIe."""
    sys_ = hardware.system(system_id)
    if sys_.gpus_per_node != 2:
        raise ValueError(f"system_id must be a 2-GPU system, got {system_id!r} with {sys_.gpus_per_node} GPUs")
    topo = Topology(name=f"{sys_.name}")
    topo.add("cpu0", "cpu", (0.0, 1.5))
    topo.add("gpu0", "gpu", (-1.0, 0.0))
    topo.add("gpu1", "gpu", (1.0, 0.0))
    for g in ("gpu0", "gpu1"):
        topo.connect(g, "cpu0", sys_.pcie.per_direction, sys_.pcie.name)
    if sys_.interconnect != "pcie":
        topo.connect("gpu0", "gpu1", sys_.gpu_link.per_direction, sys_.gpu_link.name)
    return topo


def nvswitch_system(system_id: str = "dgx-h100") -> Topology:
    """An NVSwitch node (DGX A100/H100/B200, GB200 NVL72): every GPU on one non-blocking switch."""
    sys_ = hardware.system(system_id)
    if sys_.interconnect != "nvswitch":
        raise ValueError(f"system_id must be an NVSwitch system, got {system_id!r} ({sys_.interconnect})")
    topo = Topology(name=sys_.name)
    topo.add("nvswitch", "nvswitch", (0.0, 0.0))
    import math
    g = sys_.gpus_per_node
    for i in range(g):
        angle = 2 * math.pi * i / g
        topo.add(f"gpu{i}", "gpu", (math.cos(angle) * 3, math.sin(angle) * 3))
        topo.connect(f"gpu{i}", "nvswitch", sys_.gpu_link.per_direction, sys_.gpu_link.name)
    return topo


def rail_fat_tree(system_id: str = "dgx-h100", nodes: int = 4, spines: int | None = None) -> Topology:
    """Rail-optimised two-level InfiniBand fat tree: NIC k of every node on leaf switch k (rail k), full bisection to spines."""
    sys_ = hardware.system(system_id)
    nodes = validate.integer("nodes", nodes, low=1, high=64)
    g = sys_.gpus_per_node
    if g > 16:
        raise ValueError(f"system_id must have at most 16 GPUs per node for drawing a fat tree, got {g}")
    rails = sys_.nics_per_node
    spines = rails if spines is None else validate.integer("spines", spines, low=1, high=64)
    nic = sys_.nic.per_direction
    topo = Topology(name=f"{nodes} x {sys_.name} on a rail-optimised {sys_.nic.name} fat tree")
    for s in range(spines):
        topo.add(f"spine{s}", "ib_switch", ((s - spines / 2 + 0.5) * 2.0, 6.0))
    for r in range(rails):
        topo.add(f"leaf{r}", "ib_switch", ((r - rails / 2 + 0.5) * 2.0, 4.0))
        for s in range(spines):
            topo.connect(f"leaf{r}", f"spine{s}", nodes * nic / spines, sys_.nic.name)
    for n in range(nodes):
        sw = f"n{n}.nvsw"
        x0 = (n - nodes / 2 + 0.5) * (g + 2)
        topo.add(sw, "nvswitch" if sys_.interconnect == "nvswitch" else "pcie_switch", (x0, 0.0))
        for i in range(g):
            gpu = f"n{n}.gpu{i}"
            topo.add(gpu, "gpu", (x0 + (i - g / 2 + 0.5) * 0.9, 1.5))
            topo.connect(gpu, sw, sys_.gpu_link.per_direction, sys_.gpu_link.name)
            rail = i * rails // g
            topo.connect(gpu, f"leaf{rail}", nic * rails / g, sys_.nic.name)
    # snake order: node 0 forwards, node 1 backwards ..., so each hop between nodes stays on one rail
    topo.ring_order = [f"n{n}.gpu{i}" for n in range(nodes) for i in (range(g) if n % 2 == 0 else range(g - 1, -1, -1))]
    return topo


BUILDERS = {
    "pcie-tree-switches": lambda: pcie_tree(True),
    "pcie-tree-no-switches": lambda: pcie_tree(False),
    "dgx-1-hybrid-cube-mesh": dgx1_hybrid_cube_mesh,
    "bridge-3090": bridge_pair,
    "dgx-a100": lambda: nvswitch_system("dgx-a100"),
    "dgx-h100": lambda: nvswitch_system("dgx-h100"),
    "gb200-nvl72": lambda: nvswitch_system("gb200-nvl72"),
    "fat-tree-4x-dgx-h100": lambda: rail_fat_tree("dgx-h100", 4),
}


def named(name: str) -> Topology:
    """One of the course's topologies by name (``BUILDERS`` lists them)."""
    name = validate.choice("name", name, BUILDERS)
    return BUILDERS[name]()


def summary(topo: Topology) -> dict:
    """Per-pair range, bisection and ring bottleneck of a topology, GB/s per direction."""
    pairs = [topo.pair_bandwidth(topo.gpus[0], b) for b in topo.gpus[1:]]
    ring = topo.ring_bottleneck()
    return {"name": topo.name, "gpus": len(topo.gpus),
            "pair_gb_s_min": min(pairs) / units.GB, "pair_gb_s_max": max(pairs) / units.GB,
            "bisection_gb_s": topo.bisection_bandwidth() / units.GB,
            "ring_gb_s": ring["bandwidth"] / units.GB, "ring_bottleneck": ring["link"]}
