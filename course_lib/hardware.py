"""The hardware catalog: links, GPUs and whole systems, each with its source.

The numbers live in ``data/hardware.json``; this module turns them into objects
and derives what should be derived (PCIe bandwidth from transfer rate, encoding
and lane count; NVLink bandwidth from links x per-link rate).

All bandwidths are bytes per second **per direction**; ``Link.bidirectional``
gives the total that vendors usually quote.
"""
from __future__ import annotations

import dataclasses
import warnings
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

def _pcie_entry(generation: int) -> dict:
    generation = validate.integer("generation", generation, low=1, high=len(catalog()["pcie"]))
    return catalog()["pcie"][generation - 1]


def pcie_lane_bandwidth(generation: int) -> float:
    """Payload bandwidth of one PCIe lane, bytes/s per direction.

    transfer rate (GT/s, one bit per transfer per lane) x encoding efficiency / 8.
    Gen3: 8 GT/s x 128/130 / 8 = 0.985 GB/s.
    """
    entry = _pcie_entry(generation)
    efficiency = entry["payload_bits"] / entry["line_bits"]
    return entry["transfer_rate_gt_s"] * 1e9 * efficiency / units.BITS_PER_BYTE


def pcie_link(generation: int, lanes: int = 16) -> Link:
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

def _nvlink_entry(generation: int) -> dict:
    generation = validate.integer("generation", generation, low=1, high=len(catalog()["nvlink"]))
    return catalog()["nvlink"][generation - 1]


def nvlink(generation: int, links: int | None = None) -> Link:
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


def nvswitch_generation(generation: int) -> dict:
    """One NVSwitch generation's catalog row; an unknown generation raises ValueError naming the known ones."""
    rows = {row["generation"]: row for row in catalog()["nvswitch"]}
    if generation not in rows:
        raise ValueError(f"NVSwitch generation {generation!r} is not in data/hardware.json \"nvswitch\"; "
                         f"known generations: {', '.join(map(str, rows))}")
    return dict(rows[generation])


def nvswitch_layout_id(generation: int) -> str:
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


def network(network_id: str) -> Link:
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


def link(link_id: str) -> Link:
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
    fp8_flops: float | None = None    # dense FP8 tensor peak, FLOP/s; None: none recorded
    mxfp8_flops: float | None = None  # dense MXFP8 (block-scaled FP8, Blackwell) peak, FLOP/s; None: none
    hbm_bytes_per_s: float | None = None  # memory bandwidth, bytes/s (read + write together, as vendors quote it)
    fp8_note: str = ""

    def peak_flops(self, precision: str = "bf16") -> float:
        """Dense tensor peak in FLOP/s for ``precision`` (``PRECISIONS``); a GPU without that peak is refused."""
        precision = validate.choice("precision", precision, PRECISIONS)
        value = {"bf16": self.bf16_flops, "fp8": self.fp8_flops, "mxfp8": self.mxfp8_flops}[precision]
        if value is None:
            have = ", ".join(p for p in PRECISIONS if p == "bf16" or getattr(self, f"{p}_flops") is not None)
            raise ValueError(f"precision must be one this GPU has a peak for ({self.name}: {have}), got {precision}")
        return value


PRECISIONS = ("bf16", "fp8", "mxfp8")  # the precisions of a GPU's tensor peaks (hardware.json) and of parallel's recipes


def gpu(gpu_id: str) -> GPU:
    """A GPU by id (``h100-sxm``, ``a100-sxm`` ...): memory in bytes, dense BF16/FP8/MXFP8 peaks in FLOP/s, HBM
    bandwidth in bytes/s, NCCL generation."""
    rows = {r["id"]: r for r in catalog()["gpus"]}
    row = rows[validate.choice("gpu_id", gpu_id, rows)]
    tflops = lambda key: None if row.get(key) is None else row[key] * 1e12  # noqa: E731
    return GPU(id=row["id"], name=row["name"], memory_bytes=row["memory_gb"] * units.GB,
               bf16_flops=row["bf16_dense_tflops"] * 1e12, source=row["source"], note=row.get("note", ""),
               nccl_arch=row.get("nccl_arch"), fp8_flops=tflops("fp8_dense_tflops"),
               mxfp8_flops=tflops("mxfp8_dense_tflops"),
               hbm_bytes_per_s=None if row.get("hbm_tb_s") is None else row["hbm_tb_s"] * 1e12,
               fp8_note=row.get("fp8_note", ""))


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

    def variant(self, *, gpus_per_node: int | None = None, nics_per_node: int | None = None, nic_gbit_s: float | None = None, gpu_link_gb_s: float | None = None,
                name: str | None = None, fabric: str | None = None) -> "System":
        """This system with other counts or link rates, for what-if questions.

        gpus_per_node, nics_per_node: counts (1-72); nic_gbit_s: one NIC port in Gb/s (bits, as
        vendors quote it) per direction; gpu_link_gb_s: one GPU's port into the node fabric (NVLink or
        PCIe) in GB/s (bytes) per direction; both checked against the catalog's ranges (``plausible``). Omitted values keep this
        system's. fabric: how the NICs carry traffic, one of ``FABRICS`` (e.g. ``"roce"``). Returns a
        new System whose id ends in ``-what-if`` when anything changed.
        """
        g = self.gpus_per_node if gpus_per_node is None else validate.integer("gpus_per_node", gpus_per_node,
                                                                              low=1, high=72)
        k = self.nics_per_node if nics_per_node is None else validate.integer("nics_per_node", nics_per_node,
                                                                              low=1, high=72)
        nic = self.nic
        if nic_gbit_s is not None:
            rate = check("nic_gbit_s", validate.number("nic_gbit_s", nic_gbit_s), "nic_gbit_s",
                                   warn=False)  # a what-if: refused past physics only
            nic = dataclasses.replace(nic, id=f"{nic.family}-{rate:g}g", name=f"{rate:g} Gb/s {nic.family} port",
                                      per_direction=units.gbit_to_gbyte(rate) * units.GB,
                                      detail=f"{rate:g} Gb/s per direction")
        gpu_link = self.gpu_link
        if gpu_link_gb_s is not None:
            rate = check("gpu_link_gb_s", validate.number("gpu_link_gb_s", gpu_link_gb_s),
                                   "gpu_link_gb_s_per_direction", warn=False)
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


def system(system_id: str) -> System:
    """A whole system by id, e.g. ``"dgx-h100"``; ``system_ids()`` lists them."""
    return _system_by_id(validate.choice("system_id", system_id, system_ids()))


def _system_by_id(system_id: str) -> System:
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


def resolve_system(system: str | System, name: str = "system") -> System:
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


# Plausible ranges for physical inputs, read from this catalog (re-exported by course_lib.plausible, whose
# docstring says the policy): warn beyond them, refuse past physics.
PLAUSIBLE_FACTOR = 4.0    # two generations beyond the catalog's span, each doubling: plausible
PHYSICAL_FACTOR = 100.0   # a hundred times beyond it: no such link, NIC or machine; refused


class PlausibilityWarning(validate.InputWarning):
    """A physical input outside what the catalog's machines have, by more than ``PLAUSIBLE_FACTOR``."""


@lru_cache(maxsize=1)
def catalog_ranges() -> dict[str, tuple[float, float, str]]:
    """quantity -> (lowest, highest, unit) over the catalog (``data/hardware.json``)."""
    nvlink = [float(g["link_gb_s_per_direction"]) for g in nvlink_generations()]
    gpu_links = [link.per_direction / units.GB for link in links()]
    nics = [units.gbit_per_s(network(i).per_direction) for i in network_ids()]
    gpus = [gpu(g) for g in sorted({s.gpu.id for s in systems()})]
    counts = [s.gpus_per_node for s in systems()]
    nic_counts = [s.nics_per_node for s in systems()]
    return {
        "link_gb_s_per_direction": (min(nvlink), max(nvlink), "GB/s per direction per link"),
        "gpu_link_gb_s_per_direction": (min(gpu_links), max(gpu_links), "GB/s per direction per GPU"),
        "nic_gbit_s": (min(nics), max(nics), "Gb/s per direction per NIC"),
        "memory_gb": (min(g.memory_bytes for g in gpus) / units.GB, max(g.memory_bytes for g in gpus) / units.GB,
                      "GB per GPU"),
        "bf16_dense_tflops": (min(g.bf16_flops for g in gpus) / 1e12, max(g.bf16_flops for g in gpus) / 1e12,
                              "TFLOP/s per GPU"),
        "gpus_per_node": (1.0, float(max(counts)), "GPUs per node"),
        "nics_per_node": (1.0, float(max(nic_counts)), "NICs per node"),
    }


def check(name: str, value: float, quantity: str, *, warn: bool = True) -> float:
    """``value`` of ``quantity`` (a key of ``catalog_ranges``) for parameter ``name``: returned when plausible,
    a ``PlausibilityWarning`` beyond ``PLAUSIBLE_FACTOR`` of the catalog's range (unless ``warn`` is False: a
    deliberate what-if), ValueError beyond ``PHYSICAL_FACTOR``."""
    quantity = validate.choice("quantity", quantity, catalog_ranges())
    value = validate.positive(name, value)
    low, high, unit = catalog_ranges()[quantity]
    span = f"the catalog's machines have {low:g}-{high:g} {unit}"
    if value > high * PHYSICAL_FACTOR or value < low / PHYSICAL_FACTOR:
        raise ValueError(f"{name} must be within {PHYSICAL_FACTOR:g}x of what real machines have "
                         f"({low / PHYSICAL_FACTOR:g}-{high * PHYSICAL_FACTOR:g} {unit}; {span}), got {value:g}")
    if warn and (value > high * PLAUSIBLE_FACTOR or value < low / PLAUSIBLE_FACTOR):
        warnings.warn(PlausibilityWarning(f"{name} = {value:g} {unit} is beyond {PLAUSIBLE_FACTOR:g}x of what real "
                                          f"machines have ({span}): a typo? The prediction uses it as given"),
                      stacklevel=2)
    return value
