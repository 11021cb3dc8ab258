"""The hardware catalog: links, GPUs and whole systems, each with its source.

The numbers live in ``data/hardware.json``; this module turns them into objects
and derives what should be derived (PCIe bandwidth from transfer rate, encoding
and lane count; NVLink bandwidth from links x per-link rate).

All bandwidths are bytes per second **per direction**; ``Link.bidirectional``
gives the total that vendors usually quote.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache

from . import datafiles, units, validate

PCIE_LANE_COUNTS = (1, 2, 4, 8, 16)
# How a system's NICs carry NCCL traffic: InfiniBand verbs, RDMA over Converged Ethernet, AWS Elastic
# Fabric Adapter (libfabric), HPE Slingshot, plain TCP sockets. The ids and their numbers live in
# data/fabrics.json, read once (fabrics_data; the cost model reads its numbers through it too).


@lru_cache(maxsize=1)
def fabrics_data() -> dict:
    """The parsed ``data/fabrics.json``: scale-out fabric kinds with efficiency, latency and sources."""
    return datafiles.load("fabrics.json")


FABRICS = tuple(fabrics_data()["fabrics"])


@lru_cache(maxsize=1)
def catalog() -> dict:
    """The raw catalog (parsed ``data/hardware.json``)."""
    return datafiles.load("hardware.json")


def _system_source(sys: "System") -> dict:
    """A system's citation: the bibliography's for a catalog system; a system file's own text (a URL or a note)."""
    if sys.source in datafiles.bibliography():
        return datafiles.source(sys.source)
    text = sys.source.strip()
    return {"title": text, "url": text if text.startswith(("http://", "https://")) else ""}


@dataclass(frozen=True)
class Link:
    """One link (or one GPU's bundle of links): bandwidth in bytes/s per direction."""

    id: str
    name: str
    family: str  # pcie, nvlink, infiniband, ethernet
    per_direction: float
    source: str
    detail: str = ""

    @property
    def bidirectional(self) -> float:
        """Both directions added together, bytes/s: the figure vendors usually quote."""
        return 2 * self.per_direction

    def describe(self) -> str:
        per = units.format_bandwidth(self.per_direction)
        both = units.format_bandwidth(self.bidirectional, direction="bidirectional")
        return f"{self.name}: {per} ({both})"


# ---------------------------------------------------------------- PCIe

def _pcie_entry(generation):
    generation = validate.integer("generation", generation, low=1, high=len(catalog()["pcie"]))
    return catalog()["pcie"][generation - 1]


def pcie_lane_bandwidth(generation) -> float:
    """Payload bandwidth of one PCIe lane, bytes/s per direction.

    transfer rate (GT/s, one bit per transfer per lane) x encoding efficiency / 8.
    Gen3: 8 GT/s x 128/130 / 8 = 0.985 GB/s.
    """
    entry = _pcie_entry(generation)
    efficiency = entry["payload_bits"] / entry["line_bits"]
    return entry["transfer_rate_gt_s"] * 1e9 * efficiency / units.BITS_PER_BYTE


def pcie_link(generation, lanes=16) -> Link:
    """A PCIe link of ``lanes`` lanes (1, 2, 4, 8 or 16) of one generation (1-7)."""
    entry = _pcie_entry(generation)
    lanes = validate.integer("lanes", lanes, low=1, high=16)
    if lanes not in PCIE_LANE_COUNTS:
        raise ValueError(f"lanes must be one of {PCIE_LANE_COUNTS}, got {lanes}")
    detail = (f"{entry['transfer_rate_gt_s']:g} GT/s per lane, {entry['encoding']}, x{lanes}")
    return Link(id=f"pcie-gen{entry['generation']}-x{lanes}", name=f"PCIe Gen{entry['generation']} x{lanes}",
                family="pcie", per_direction=pcie_lane_bandwidth(entry["generation"]) * lanes,
                source=entry["source"], detail=detail)


# ---------------------------------------------------------------- NVLink

def _nvlink_entry(generation):
    generation = validate.integer("generation", generation, low=1, high=len(catalog()["nvlink"]))
    return catalog()["nvlink"][generation - 1]


def nvlink(generation, links=None) -> Link:
    """NVLink of one generation (1-5): ``links`` links (default: all of a GPU's)."""
    entry = _nvlink_entry(generation)
    if links is None:
        links = entry["links_per_gpu"]
    links = validate.integer("links", links, low=1, high=entry["links_per_gpu"])
    per_link = entry["link_gb_s_per_direction"] * units.GB
    return Link(id=f"nvlink-{entry['generation']}-x{links}", name=f"NVLink {entry['generation']} x{links}",
                family="nvlink", per_direction=per_link * links, source=entry["source"],
                detail=f"{links} links x {entry['link_gb_s_per_direction']:g} GB/s per direction")


def nvlink_generations() -> list[dict]:
    """The NVLink generations as catalog rows (links per GPU, per-link rate, source)."""
    return [dict(row) for row in catalog()["nvlink"]]


def nvswitch_generations() -> list[dict]:
    """The NVSwitch generations as catalog rows (ports, system, domain size, SHARP, layout)."""
    return [dict(row) for row in catalog()["nvswitch"]]


def nvswitch_generation(generation) -> dict:
    """One NVSwitch generation's catalog row; an unknown generation raises ValueError naming the known ones."""
    rows = {row["generation"]: row for row in catalog()["nvswitch"]}
    if generation not in rows:
        raise ValueError(f"NVSwitch generation {generation!r} is not in data/hardware.json \"nvswitch\"; "
                         f"known generations: {', '.join(map(str, rows))}")
    return dict(rows[generation])


def nvswitch_layout_id(generation) -> str:
    """The ``data/nvswitch.json`` layout that shows an NVSwitch generation (its catalog row's ``layout``).

    An unknown generation, or one whose row names no layout of nvswitch.json, raises ValueError naming it.
    """
    layouts = datafiles.load("nvswitch.json")["layouts"]
    layout = nvswitch_generation(generation).get("layout")
    if layout not in layouts:
        raise ValueError(f"NVSwitch generation {generation} (data/hardware.json) has layout {layout!r}, not a layout of "
                         f"data/nvswitch.json; known layouts: {', '.join(layouts)}")
    return layout


# ---------------------------------------------------------------- networks

def network_ids() -> list[str]:
    return [row["id"] for row in catalog()["networks"]]


def network(network_id) -> Link:
    """One network port (InfiniBand or Ethernet) by id, e.g. ``"ib-ndr"``: bytes/s per direction."""
    network_id = validate.choice("network_id", network_id, network_ids())
    row = next(r for r in catalog()["networks"] if r["id"] == network_id)
    return Link(id=row["id"], name=row["name"], family=row["family"],
                per_direction=units.gbit_to_gbyte(row["gbit_s_per_direction"]) * units.GB,
                source=row["source"], detail=f"{row['gbit_s_per_direction']:g} Gb/s per direction")


def links() -> list[Link]:
    """Every standard link: PCIe x16 of each generation, NVLink per GPU of each generation, each network port."""
    out = [pcie_link(row["generation"], 16) for row in catalog()["pcie"]]
    out += [nvlink(row["generation"]) for row in catalog()["nvlink"]]
    out += [network(i) for i in network_ids()]
    return out


def link(link_id) -> Link:
    """A link by id: ``pcie-gen5-x16``, ``nvlink-4`` (all links) or ``nvlink-4-x2``, ``ib-ndr``, ``eth-400g``."""
    if not isinstance(link_id, str):
        raise ValueError(f"link_id must be a string such as 'pcie-gen5-x16', 'nvlink-4' or 'ib-ndr', got {link_id!r}")
    text = link_id.lower().strip()
    try:
        if text.startswith("pcie-gen"):
            gen, _, lanes = text[len("pcie-gen"):].partition("-x")
            return pcie_link(int(gen), int(lanes or 16))
        if text.startswith("nvlink-"):
            gen, _, count = text[len("nvlink-"):].partition("-x")
            return nvlink(int(gen), int(count) if count else None)
    except ValueError as exc:
        if "must" in str(exc):
            raise
        raise ValueError(f"link_id {link_id!r} is not understood; use e.g. 'pcie-gen5-x16', 'nvlink-4', 'ib-ndr'") from None
    if text in network_ids():
        return network(text)
    known = [l.id for l in links()]
    raise ValueError(f"link_id {link_id!r} is unknown; known links: {', '.join(known)}")


# ---------------------------------------------------------------- GPUs and systems

@dataclass(frozen=True)
class GPU:
    id: str
    name: str
    memory_bytes: float
    bf16_flops: float  # dense peak, FLOP/s
    source: str
    note: str = ""
    nccl_arch: str | None = None  # the row of NCCL's per-generation tables (hardware.json); None: not stated


def gpu(gpu_id) -> GPU:
    """A GPU by id (``h100-sxm``, ``a100-sxm`` ...): memory in bytes, dense BF16 peak in FLOP/s, NCCL generation."""
    rows = {r["id"]: r for r in catalog()["gpus"]}
    row = rows[validate.choice("gpu_id", gpu_id, rows)]
    return GPU(id=row["id"], name=row["name"], memory_bytes=row["memory_gb"] * units.GB,
               bf16_flops=row["bf16_dense_tflops"] * 1e12, source=row["source"], note=row.get("note", ""),
               nccl_arch=row.get("nccl_arch"))


@dataclass(frozen=True)
class System:
    """A node (or rack-scale NVLink domain) from the catalog.

    ``gpu_link`` is what one GPU can send into the node's GPU fabric, per
    direction; ``nic`` is one network port; a node has ``nics_per_node`` of them.
    """

    id: str
    name: str
    gpu: GPU
    gpus_per_node: int
    interconnect: str  # pcie, nvlink-mesh, nvlink-bridge, nvswitch
    topology: str
    gpu_link: Link
    pcie: Link
    nic: Link
    nics_per_node: int
    source: str
    p2p: bool = True
    nvswitch_generation: int | None = None
    cpu_sockets: int = 1
    pcie_switches: int | None = 0  # None where the vendor does not publish it
    note: str = ""
    fabric: str = ""  # one of FABRICS; "" = the default of the NIC's family (default_fabric)
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def nic_bandwidth_per_gpu(self) -> float:
        """Network bandwidth one GPU gets when every GPU sends at once, bytes/s per direction."""
        return self.nic.per_direction * self.nics_per_node / self.gpus_per_node

    def variant(self, *, gpus_per_node=None, nics_per_node=None, nic_gbit_s=None, gpu_link_gb_s=None,
                name=None, fabric=None) -> "System":
        """This system with other counts or link rates, for what-if questions.

        gpus_per_node, nics_per_node: counts (1-72); nic_gbit_s: one NIC port in Gb/s (bits, as
        vendors quote it) per direction (0.1-3200); gpu_link_gb_s: one GPU's port into the node
        fabric (NVLink or PCIe) in GB/s (bytes) per direction (1-5000). Omitted values keep this
        system's. fabric: how the NICs carry traffic, one of ``FABRICS`` (e.g. ``"roce"``). Returns a
        new System whose id ends in ``-what-if`` when anything changed.
        """
        g = self.gpus_per_node if gpus_per_node is None else validate.integer("gpus_per_node", gpus_per_node,
                                                                              low=1, high=72)
        k = self.nics_per_node if nics_per_node is None else validate.integer("nics_per_node", nics_per_node,
                                                                              low=1, high=72)
        nic = self.nic
        if nic_gbit_s is not None:
            rate = validate.number("nic_gbit_s", nic_gbit_s, low=0.1, high=3200)
            nic = dataclasses.replace(nic, id=f"{nic.family}-{rate:g}g", name=f"{rate:g} Gb/s {nic.family} port",
                                      per_direction=units.gbit_to_gbyte(rate) * units.GB,
                                      detail=f"{rate:g} Gb/s per direction")
        gpu_link = self.gpu_link
        if gpu_link_gb_s is not None:
            rate = validate.number("gpu_link_gb_s", gpu_link_gb_s, low=1, high=5000)
            gpu_link = dataclasses.replace(gpu_link, id=f"{gpu_link.family}-{rate:g}",
                                           name=f"{rate:g} GB/s {gpu_link.family}",
                                           per_direction=rate * units.GB, detail=f"{rate:g} GB/s per direction")
        kind = self.fabric if fabric is None else validate.choice("fabric", fabric, FABRICS)
        if not fabric_runs_on(kind, nic.family):
            raise ValueError(f"fabric must run on the system's {nic.family} NICs; got {kind!r}")
        if ((g, k, nic, gpu_link, kind) == (self.gpus_per_node, self.nics_per_node, self.nic, self.gpu_link, self.fabric)
                and name is None):
            return self
        raw = dict(self.raw)
        if kind:
            raw["fabric"] = kind
        return dataclasses.replace(self, id=f"{self.id}-what-if", name=name or f"{self.name} (what-if)",
                                   gpus_per_node=g, nics_per_node=k, nic=nic, gpu_link=gpu_link, fabric=kind, raw=raw)

    @property
    def nic_fabric(self) -> str:
        """How the NICs carry traffic: ``fabric`` if named, else ``default_fabric`` of the NIC's family."""
        return self.fabric or default_fabric(self.nic.family)

    @property
    def in_network_reduction(self) -> bool:
        """True where the NVSwitch can reduce in the switch (NVLink SHARP / NVLS)."""
        gen = self.nvswitch_generation
        return gen is not None and bool(nvswitch_generation(gen)["in_network_reduction"])


def fabric_runs_on(fabric: str, family: str) -> bool:
    """Whether a fabric kind (or "" for the family's default) can run on NICs of ``family``:
    InfiniBand verbs only on InfiniBand ports, and InfiniBand ports only with them. ``"ethernet"``
    (an Ethernet port whose fabric a system file does not name) counts as an Ethernet fabric."""
    fabric = validate.choice("fabric", fabric, ("",) + FABRICS + ("ethernet",))
    family = validate.choice("family", family, _fabric_defaults())
    return not (fabric == "infiniband" and family != "infiniband"
                or family == "infiniband" and fabric not in ("", "infiniband"))


def default_fabric(family: str) -> str:
    """The fabric a NIC family is taken to run when a system names none (``default_for_nic_family`` of
    data/fabrics.json: InfiniBand -> ``infiniband``, Ethernet -> ``roce``)."""
    defaults = _fabric_defaults()
    return defaults[validate.choice("family", family, defaults)]


def _fabric_defaults() -> dict:
    return fabrics_data()["default_for_nic_family"]


def system_ids() -> list[str]:
    return [row["id"] for row in catalog()["systems"]]


def system(system_id) -> System:
    """A whole system by id, e.g. ``"dgx-h100"``; ``system_ids()`` lists them."""
    return _system_by_id(validate.choice("system_id", system_id, system_ids()))


def _system_by_id(system_id) -> System:
    row = next(r for r in catalog()["systems"] if r["id"] == system_id)
    pcie = pcie_link(row["pcie_generation"], row["pcie_lanes_per_gpu"])
    if row["gpu_interconnect"] == "pcie":
        gpu_link = pcie
    elif row["gpu_interconnect"] == "infinity-fabric-mesh":  # AMD Instinct: one xGMI link to each other GPU
        k, rate = row["infinity_fabric_links_per_gpu"], row["infinity_fabric_link_gb_s_per_direction"]
        gpu_link = Link(id=f"infinity-fabric-x{k}", name=f"Infinity Fabric x{k}", family="infinity-fabric",
                        per_direction=k * rate * units.GB, source=row.get("also", [row["source"]])[-1],
                        detail=f"{k} links x {rate:g} GB/s per direction")
    else:
        gpu_link = nvlink(row["nvlink_generation"], row["nvlink_links_per_gpu"])
        if "nvlink_link_gb_s_per_direction" in row:  # GeForce bridge links run slower than data-centre NVLink
            rate = row["nvlink_link_gb_s_per_direction"] * units.GB * row["nvlink_links_per_gpu"]
            gpu_link = Link(id=f"nvlink-bridge-x{row['nvlink_links_per_gpu']}", name="NVLink bridge (GeForce)",
                            family="nvlink", per_direction=rate, source=row["source"],
                            detail=f"{row['nvlink_links_per_gpu']} links x {row['nvlink_link_gb_s_per_direction']:g} GB/s per direction")
    return System(id=row["id"], name=row["name"], gpu=gpu(row["gpu"]), gpus_per_node=row["gpus_per_node"],
                  interconnect=row["gpu_interconnect"], topology=row["topology"], gpu_link=gpu_link, pcie=pcie,
                  nic=network(row["nic"]), nics_per_node=row["nics_per_node"], source=row["source"],
                  p2p=row.get("p2p", True), nvswitch_generation=row.get("nvswitch_generation"),
                  cpu_sockets=row.get("cpu_sockets", 1), pcie_switches=row.get("pcie_switches", 0),
                  note=row.get("note", ""), fabric=row.get("fabric", ""), raw=dict(row))


def resolve_system(system, name: str = "system") -> System:
    """``system`` as a ``System``: one already, or a catalog id such as ``"dgx-h100"`` (``system_ids()``).

    The one resolver for systems: a bad value raises ValueError naming ``name`` and the catalog ids.
    """
    if isinstance(system, System):
        return system
    if isinstance(system, str):
        return _system_by_id(validate.choice(name, system, system_ids()))
    raise ValueError(f"{name} must be a catalog id ({', '.join(system_ids())}) or a hardware.System, "
                     f"got {system!r}")


def systems() -> list[System]:
    """Every system in the catalog."""
    return [system(i) for i in system_ids()]


def system_summary(sys: System) -> dict:
    """A JSON-ready summary of a system: GB/s per direction and the citation."""
    return {
        "id": sys.id, "name": sys.name, "gpu": sys.gpu.name, "gpus_per_node": sys.gpus_per_node,
        "interconnect": sys.interconnect, "gpu_link": sys.gpu_link.name,
        "gpu_link_gb_s_per_direction": round(sys.gpu_link.per_direction / units.GB, 3),
        "gpu_link_gb_s_bidirectional": round(sys.gpu_link.bidirectional / units.GB, 3),
        "nic": sys.nic.name, "nics_per_node": sys.nics_per_node, "fabric": sys.nic_fabric,
        "nic_gbit_s_per_direction": round(units.gbit_per_s(sys.nic.per_direction), 3),
        "in_network_reduction": sys.in_network_reduction,
        "source": _system_source(sys),
    }
