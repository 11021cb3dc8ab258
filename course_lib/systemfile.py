"""Describe a machine that is not in the catalog in a small TOML file, and load it as a ``hardware.System``.

Example (every bandwidth is per direction; rates of NVLink and PCIe come from the catalog's
generation tables unless the file overrides the per-link rate)::

    [system]
    id = "lab-l40s"                     # required
    name = "4x L40S on PCIe Gen4"       # optional, defaults to id
    gpu = "a100-pcie"                   # required: a catalog GPU id, or describe it in an optional [gpu] table:
                                        # [gpu] name = "...", memory_gb = 48, bf16_dense_tflops = 362 (those three
                                        # required there), nccl_arch = "ampere" (NCCL's table row; needed to price it)
    gpus_per_node = 4                   # required
    nodes = 2                           # optional, default 1 (kept in System.raw["nodes"])
    cpu_sockets = 2                     # optional, default 1
    p2p = true                          # optional: GPU peer-to-peer over PCIe allowed
    source = "https://... (where these numbers come from)"   # required

    [gpu_link]                          # required table
    kind = "pcie"                       # required: "pcie", "nvlink" or "infinity_fabric" (AMD Instinct)
    # for nvlink: generation = 4, links = 18, topology = "nvswitch" | "mesh" | "bridge",
    #             nvswitch_generation = 3, link_gb_s_per_direction = 14.0625 (optional override)
    # for infinity_fabric: links = 7, link_gb_s_per_direction = 64 (one link to each other GPU)

    [pcie]                              # required table
    generation = 4                      # required
    lanes_per_gpu = 16                  # optional, default 16
    switches = 2                        # optional, default 0

    [network]                           # required table
    kind = "eth-100g"                   # required: a catalog network id, or gbit_s = 25 (one port, per
                                        # direction) with fabric
    fabric = "roce"                     # optional: infiniband, roce, efa, slingshot, ethernet_tcp or tcpxo
    count = 2                           # required: NIC ports per node
    [[network.nic]]                     # optional: which GPUs each NIC serves
    name = "mlx5_0"
    gpus = [0, 1]

Errors name the file, the field and its line: ``lab.toml: field pcie.generation (line 14): ...``.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import tomllib
import warnings
from pathlib import Path
from typing import Callable, TypeVar

from . import hardware, plausible, textfiles, units, validate

T = TypeVar("T")

_FIELDS = {
    "system": {"id", "name", "gpu", "gpus_per_node", "nodes", "cpu_sockets", "p2p", "source", "note", "mnnvl"},
    "gpu_link": {"kind", "generation", "links", "topology", "nvswitch_generation", "link_gb_s_per_direction"},
    "pcie": {"generation", "lanes_per_gpu", "switches"},
    "network": {"kind", "fabric", "gbit_s", "count", "nic"},
    "gpu": {"name", "memory_gb", "bf16_dense_tflops", "fp8_dense_tflops", "mxfp8_dense_tflops", "hbm_tb_s", "source",
            "note", "nccl_arch"},
    "network.nic": {"name", "gpus"},
}
_REQUIRED = {"system": ("id", "gpu", "gpus_per_node", "source"), "gpu_link": ("kind",), "pcie": ("generation",),
             "network": ("count",), "gpu": ("name", "memory_gb", "bf16_dense_tflops")}
_TABLES = ("system", "gpu", "gpu_link", "pcie", "network")
# "ethernet" (an Ethernet port, fabric not named) is kept for files written before fabrics had names.
_NETWORK_FABRICS = hardware.FABRICS + ("ethernet",)
_TOPOLOGY = {"nvswitch": ("nvswitch", "nvswitch"), "mesh": ("nvlink-mesh", "full-mesh"),
             "bridge": ("nvlink-bridge", "bridge")}
_TABLE = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")


class _Where:
    """Line numbers of tables and keys in the file, for error messages (tomllib does not keep them)."""

    def __init__(self, text: str) -> None:
        self.lines: dict[str, int] = {}
        table, counts = "", {}
        for no, line in enumerate(text.splitlines(), start=1):
            m = _TABLE.match(line)
            if m:
                table = m.group(1)
                if line.strip().startswith("[["):
                    self.lines.setdefault(table, no)
                    counts[table] = counts.get(table, -1) + 1
                    table = f"{table}[{counts[table]}]"
                self.lines.setdefault(table, no)
                continue
            k = _KEY.match(line)
            if k:
                self.lines.setdefault(f"{table}.{k.group(1)}" if table else k.group(1), no)

    def line(self, field: str) -> int | None:
        while field:
            if field in self.lines:
                return self.lines[field]
            field = field.rpartition(".")[0]
        return None


def _error(path: str | Path, where: _Where, field: str, problem: str) -> ValueError:
    line = where.line(field)
    at = f" (line {line})" if line else ""
    return ValueError(f"{path}: field {field}{at}: {problem}")


def _check(path: str | Path, where: _Where, field: str, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """Run a validate.* check and re-raise its ValueError naming the file, field and line."""
    try:
        return fn(field, *args, **kwargs)
    except ValueError as exc:
        raise _error(path, where, field, str(exc).removeprefix(f"{field} ")) from None


def _plausible(path: str | Path, where: _Where, field: str, value: float, quantity: str) -> float:
    """``plausible.check`` of a physical field: a refusal or a warning names the file, field and line."""
    value = _check(path, where, field, validate.positive, value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", plausible.PlausibilityWarning)
        try:
            plausible.check(field, value, quantity)
        except ValueError as exc:
            raise _error(path, where, field, str(exc).removeprefix(f"{field} ")) from None
    for w in caught:
        line = where.line(field)
        warnings.warn(plausible.PlausibilityWarning(f"{path}: field {field}{f' (line {line})' if line else ''}: "
                                                    f"{str(w.message).removeprefix(f'{field} = ')}"), stacklevel=3)
    return value


def _table(path: str | Path, where: _Where, data: dict, name: str) -> dict:
    table = data.get(name)
    if table is None:
        raise _error(path, where, name, f"missing table [{name}]")
    if not isinstance(table, dict):
        raise _error(path, where, name, f"must be a table [{name}]")
    for key in table:
        if key not in _FIELDS[name]:
            raise _error(path, where, f"{name}.{key}", f"unknown field; known fields of [{name}]: "
                                                     f"{', '.join(sorted(_FIELDS[name]))}")
    for key in _REQUIRED.get(name, ()):
        if key not in table:
            raise _error(path, where, name, f"missing required field {name}.{key}")
    return table


def _string(path: str | Path, where: _Where, field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _error(path, where, field, f"must be a non-empty string, got {value!r}")
    return value


def _bool(path: str | Path, where: _Where, field: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _error(path, where, field, f"must be true or false, got {value!r}")
    return value


def _int(path: str | Path, where: _Where, field: str, value: object, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _error(path, where, field, f"must be a whole number, got {value!r}")
    return _check(path, where, field, validate.integer, value, low=low, high=high)


def _read_gpu(p: Path, where: _Where, data: dict, s: dict, gpu_id: str) -> hardware.GPU:
    """The [gpu] table (a GPU the catalog does not know), else the catalog GPU ``system.gpu`` names."""
    if "gpu" not in data:
        return hardware.gpu(_check(p, where, "system.gpu", validate.choice, gpu_id,
                                   [row["id"] for row in hardware.catalog()["gpus"]]))
    g = _table(p, where, data, "gpu")
    return hardware.GPU(
        id=gpu_id, name=_string(p, where, "gpu.name", g["name"]),
        memory_bytes=_plausible(p, where, "gpu.memory_gb", g["memory_gb"], "memory_gb") * units.GB,
        bf16_flops=_plausible(p, where, "gpu.bf16_dense_tflops", g["bf16_dense_tflops"], "bf16_dense_tflops") * 1e12,
        source=_string(p, where, "gpu.source", g.get("source", s["source"])), note=g.get("note", ""),
        nccl_arch=_string(p, where, "gpu.nccl_arch", g["nccl_arch"]) if "nccl_arch" in g else None,
        **{f"{k}_flops": _check(p, where, f"gpu.{k}_dense_tflops", validate.positive, g[f"{k}_dense_tflops"]) * 1e12
           for k in ("fp8", "mxfp8") if f"{k}_dense_tflops" in g},
        hbm_bytes_per_s=_check(p, where, "gpu.hbm_tb_s", validate.positive, g["hbm_tb_s"]) * 1e12
        if "hbm_tb_s" in g else None)


def _read_pcie(p: Path, where: _Where, data: dict) -> tuple[hardware.Link, int]:
    """The [pcie] table: (the PCIe link of one GPU, the number of PCIe switches)."""
    pc = _table(p, where, data, "pcie")
    pcie_gen = _int(p, where, "pcie.generation", pc["generation"], low=1, high=len(hardware.catalog()["pcie"]))
    lanes = _int(p, where, "pcie.lanes_per_gpu", pc.get("lanes_per_gpu", 16), low=1, high=16)
    if lanes not in hardware.PCIE_LANE_COUNTS:
        raise _error(p, where, "pcie.lanes_per_gpu", f"must be one of {hardware.PCIE_LANE_COUNTS}, got {lanes}")
    switches = _int(p, where, "pcie.switches", pc.get("switches", 0), low=0, high=1024)
    return hardware.pcie_link(pcie_gen, lanes), switches


def _read_gpu_link(p: Path, where: _Where, data: dict, sys_id: str, pcie: hardware.Link) -> tuple[str, str, hardware.Link, int | None]:
    """The [gpu_link] table: (interconnect, topology, the GPU-to-GPU link, NVSwitch generation or None)."""
    gl = _table(p, where, data, "gpu_link")
    kind = _check(p, where, "gpu_link.kind", validate.choice, gl["kind"], ("pcie", "nvlink", "infinity_fabric"))
    if kind == "infinity_fabric":
        return _read_infinity_fabric(p, where, gl)
    if kind == "pcie":
        extra = sorted(set(gl) - {"kind"})
        if extra:
            raise _error(p, where, f"gpu_link.{extra[0]}", "only applies to kind = \"nvlink\"")
        return "pcie", "pcie-tree", pcie, None
    for key in ("generation", "links"):
        if key not in gl:
            raise _error(p, where, "gpu_link", f"missing required field gpu_link.{key} for kind = \"nvlink\"")
    generations = hardware.nvlink_generations()
    gen = _int(p, where, "gpu_link.generation", gl["generation"], low=1, high=len(generations))
    links = _int(p, where, "gpu_link.links", gl["links"], low=1, high=generations[gen - 1]["links_per_gpu"])
    nvswitch_gen = None
    if "nvswitch_generation" in gl:
        nvswitch_gen = _int(p, where, "gpu_link.nvswitch_generation", gl["nvswitch_generation"], low=1,
                            high=len(hardware.nvswitch_generations()))
    shape = gl.get("topology", "nvswitch" if nvswitch_gen else "mesh")
    shape = _check(p, where, "gpu_link.topology", validate.choice, shape, tuple(_TOPOLOGY))
    if shape == "nvswitch" and nvswitch_gen is None:
        raise _error(p, where, "gpu_link.topology", "topology = \"nvswitch\" needs gpu_link.nvswitch_generation")
    if shape != "nvswitch" and nvswitch_gen is not None:
        raise _error(p, where, "gpu_link.nvswitch_generation", f"does not apply to topology = \"{shape}\"")
    interconnect, topology = _TOPOLOGY[shape]
    gpu_link = hardware.nvlink(gen, links)
    if "link_gb_s_per_direction" in gl:
        rate = _plausible(p, where, "gpu_link.link_gb_s_per_direction", gl["link_gb_s_per_direction"],
                          "link_gb_s_per_direction")
        gpu_link = dataclasses.replace(gpu_link, id=f"{sys_id}-nvlink", per_direction=rate * units.GB * links,
                                       detail=f"{links} links x {rate:g} GB/s per direction (from {p.name})")
    return interconnect, topology, gpu_link, nvswitch_gen


def _read_infinity_fabric(p: Path, where: _Where, gl: dict) -> tuple[str, str, hardware.Link, None]:
    """[gpu_link] kind = "infinity_fabric": an AMD Instinct mesh, ``links`` x ``link_gb_s_per_direction``."""
    extra = sorted(set(gl) - {"kind", "links", "link_gb_s_per_direction"})
    if extra:
        raise _error(p, where, f"gpu_link.{extra[0]}", "does not apply to kind = \"infinity_fabric\"")
    for key in ("links", "link_gb_s_per_direction"):
        if key not in gl:
            raise _error(p, where, "gpu_link", f"missing required field gpu_link.{key} for kind = \"infinity_fabric\"")
    links = _int(p, where, "gpu_link.links", gl["links"], low=1, high=64)
    rate = _plausible(p, where, "gpu_link.link_gb_s_per_direction", gl["link_gb_s_per_direction"],
                      "link_gb_s_per_direction")
    return "infinity-fabric-mesh", "full-mesh", hardware.Link(
        id=f"infinity-fabric-x{links}", name=f"Infinity Fabric x{links}", family="infinity-fabric",
        per_direction=links * rate * units.GB, source=str(p), detail=f"{links} links x {rate:g} GB/s per direction"), None


def _read_nic(p: Path, where: _Where, net: dict, fabric: str, source: str) -> hardware.Link:
    """The NIC of [network]: a catalog id (``kind``), or a fabric and a rate in Gb/s (``gbit_s``)."""
    if "kind" in net:
        if "gbit_s" in net:
            raise _error(p, where, "network.gbit_s", "give either network.kind (a catalog id) or network.gbit_s")
        nic = hardware.network(_check(p, where, "network.kind", validate.choice, net["kind"], hardware.network_ids()))
        if not hardware.fabric_runs_on(fabric, nic.family):
            raise _error(p, where, "network.fabric", f"fabric {fabric!r} does not run on {nic.name} ports")
        return nic
    for key in ("fabric", "gbit_s"):
        if key not in net:
            raise _error(p, where, "network", f"missing network.kind, or network.{key} with the other of fabric/gbit_s")
    gbit = _plausible(p, where, "network.gbit_s", net["gbit_s"], "nic_gbit_s")
    family = "infiniband" if fabric == "infiniband" else "ethernet"
    return hardware.Link(id=f"{fabric}-{gbit:g}g", name=f"{gbit:g} Gb/s {fabric}", family=family,
                         per_direction=units.gbit_to_gbyte(gbit) * units.GB, source=source,
                         detail=f"{gbit:g} Gb/s per direction (from {p.name})")


def _read_nic_rows(p: Path, where: _Where, net: dict, gpus: int, count: int) -> list[dict]:
    """The [[network.nic]] rows: each NIC's name and the GPU indices it serves."""
    nic_gpus = []
    nic_rows = net.get("nic", [])
    if not isinstance(nic_rows, list):
        raise _error(p, where, "network.nic", "must be an array of tables [[network.nic]]")
    for i, row in enumerate(nic_rows):
        field = f"network.nic[{i}]"
        for key in row:
            if key not in _FIELDS["network.nic"]:
                raise _error(p, where, f"{field}.{key}", "unknown field; known fields: gpus, name")
        served = row.get("gpus")
        if not isinstance(served, list) or not served:
            raise _error(p, where, f"{field}.gpus", f"must be a list of GPU indices, got {served!r}")
        for g in served:
            _int(p, where, f"{field}.gpus", g, low=0, high=gpus - 1)
        nic_gpus.append({"name": row.get("name", f"NIC{i}"), "gpus": list(served)})
    if len(nic_gpus) > count:
        raise _error(p, where, "network.nic", f"lists {len(nic_gpus)} NICs but network.count is {count}")
    return nic_gpus


def _read_network(p: Path, where: _Where, data: dict, gpus: int, source: str) -> tuple[int, str, hardware.Link, list[dict]]:
    """The [network] table: (NICs per node, fabric id or "" for the family's default, the NIC, NIC rows)."""
    net = _table(p, where, data, "network")
    count = _int(p, where, "network.count", net["count"], low=1, high=100_000)
    fabric = ""
    if "fabric" in net:
        fabric = _check(p, where, "network.fabric", validate.choice, net["fabric"], _NETWORK_FABRICS)
    nic = _read_nic(p, where, net, fabric, source)
    if fabric == "ethernet":
        fabric = ""  # an Ethernet port whose fabric is not named: hardware.default_fabric decides
    return count, fabric, nic, _read_nic_rows(p, where, net, gpus, count)


MAX_FILE_BYTES = 2**20  # a system description is a few lines of TOML
MAX_NESTING = 32        # arrays and inline tables inside each other; a system file needs 3


def _toml_nesting(text: str) -> int:
    """How deep arrays and inline tables nest in TOML ``text`` (brackets and braces outside strings and
    comments; a table header counts 1 or 2), read without parsing, so a file nested thousands deep
    costs a loop, not the parser's recursion."""
    depth = deepest = i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "#":
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith(('"""', "'''"), i):
            quote = text[i:i + 3]
            end = i + 3
            while True:
                end = text.find(quote, end)
                if end < 0 or quote == "'''" or text[end - 1] != "\\":
                    break
                end += 1
            i = n if end < 0 else end + 3
            continue
        elif c in "\"'":
            end = i + 1
            while end < n and text[end] not in (c, "\n"):
                end += 2 if c == '"' and text[end] == "\\" else 1
            i = end
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
        i += 1
    return deepest


def _read_toml(path: str | Path) -> tuple[Path, str, dict]:
    """(path, text, parsed TOML) of a system file; refuses a missing, oversized, binary, too deeply nested
    or non-TOML file."""
    text = textfiles.read_text(path, MAX_FILE_BYTES, "system file",
                               what="the path of a TOML system description (see course_lib/data/systems/)")
    p = Path(path)
    nesting = _toml_nesting(text)
    if nesting > MAX_NESTING:
        raise ValueError(f"system file {p}: arrays or tables nest {nesting} deep, more than the {MAX_NESTING} "
                         "a system description may use; pass a TOML system description (see course_lib/data/systems/)")
    try:
        return p, text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"system file {p}: not valid TOML: {exc}") from None
    except RecursionError:  # nesting the count above missed (it reads brackets, not TOML)
        raise ValueError(f"system file {p}: nested too deeply to read; pass a TOML system description "
                         "(see course_lib/data/systems/)") from None


def load_system(path: str | Path) -> hardware.System:
    """A ``hardware.System`` from a TOML system file; ValueError names the field and its line."""
    p, text, data = _read_toml(path)
    where = _Where(text)
    for key in data:
        if key not in _TABLES:
            raise _error(p, where, key, "unknown table; known tables: " + ", ".join(f"[{t}]" for t in _TABLES))

    s = _table(p, where, data, "system")
    sys_id = _string(p, where, "system.id", s["id"])
    gpu = _read_gpu(p, where, data, s, _string(p, where, "system.gpu", s["gpu"]))
    gpus = _int(p, where, "system.gpus_per_node", s["gpus_per_node"], low=1, high=100_000)
    _plausible(p, where, "system.gpus_per_node", gpus, "gpus_per_node")
    nodes = _int(p, where, "system.nodes", s.get("nodes", 1), low=1, high=100_000)
    sockets = _int(p, where, "system.cpu_sockets", s.get("cpu_sockets", 1), low=1, high=1024)
    p2p = _bool(p, where, "system.p2p", s.get("p2p", True))
    _bool(p, where, "system.mnnvl", s.get("mnnvl", False))  # an NVLink domain spanning trays (GB200/GB300 NVL72)
    source = _string(p, where, "system.source", s["source"])
    pcie, switches = _read_pcie(p, where, data)
    interconnect, topology, gpu_link, nvswitch_gen = _read_gpu_link(p, where, data, sys_id, pcie)
    count, fabric, nic, nic_gpus = _read_network(p, where, data, gpus, source)

    raw = dict(s, nodes=nodes, nic_gpus=nic_gpus, file=str(p), pcie_switches=switches)
    if fabric:  # as in the catalog: no "fabric" key means the NIC family's default (costmodel.system_fabric_kind)
        raw["fabric"] = fabric
    return hardware.System(id=sys_id, name=s.get("name", sys_id), gpu=gpu, gpus_per_node=gpus,
                           interconnect=interconnect, topology=topology, gpu_link=gpu_link, pcie=pcie, nic=nic,
                           nics_per_node=count, source=source, p2p=p2p, nvswitch_generation=nvswitch_gen,
                           cpu_sockets=sockets, pcie_switches=switches, note=s.get("note", ""), fabric=fabric,
                           raw=raw)


# ---------------------------------------------------------------- the CLI's --system / --system-file

def add_system_arguments(parser: argparse.ArgumentParser, *, required: bool = True, default: str | None = None) -> None:
    """Add ``--system ID`` and ``--system-file PATH`` (one of them) to an argparse parser."""
    if not hasattr(parser, "add_mutually_exclusive_group"):
        raise ValueError(f"parser must be an argparse.ArgumentParser, got {type(parser).__name__}")
    group = parser.add_mutually_exclusive_group(required=required and default is None)
    group.add_argument("--system", default=None, help="catalog system id (python -m course_lib systems)"
                                                      + (f"; default {default}" if default else ""))
    group.add_argument("--system-file", default=None, metavar="PATH",
                       help="a TOML file describing a machine not in the catalog (see course_lib/systemfile.py)")
    parser.set_defaults(system_default=default)


def system_from_args(args: argparse.Namespace) -> hardware.System | None:
    """The system the parsed ``--system``/``--system-file`` name (None where neither was given nor defaulted)."""
    if not (hasattr(args, "system") and hasattr(args, "system_file")):
        raise ValueError("args must be the parsed arguments of a parser given add_system_arguments "
                         f"(with system and system_file), got {type(args).__name__}")
    if getattr(args, "system_file", None):
        try:
            return load_system(args.system_file)
        except ValueError as exc:  # name the flag given (cli would take "system file ..." for --system)
            raise ValueError(f"--system-file: {exc}") from None
    sid = args.system or getattr(args, "system_default", None)
    return None if sid is None else hardware.resolve_system(sid)


def nodes_default(system: hardware.System) -> int:
    """Nodes a system file describes (``system.nodes``); 1 for a catalog system."""
    system = hardware.resolve_system(system)
    return int(system.raw.get("nodes", 1)) if "file" in system.raw else 1
