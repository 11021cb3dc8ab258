"""``nvidia-smi topo -m``: the GPU/NIC connection matrix, CPU and NUMA affinity.

Each cell names the path between two devices, from closest to farthest:
NV# (# bonded NVLinks), PIX (one PCIe switch), PXB (several PCIe switches),
PHB (through a CPU's PCIe host bridge), NODE (between host bridges of one NUMA
node), SYS (across the CPU socket interconnect). Columns may be separated by
tabs or runs of spaces; NICs appear as ``mlx5_*`` or ``NIC#`` (mapped by the
"NIC Legend" when present).

The reader is tolerant of the ways a table reaches it: a label or command line before it, the header line
dropped (the rows name themselves and their diagonal X says where each stands), the table cut off after
some rows (the GPU-GPU paths of the missing rows come from the columns of the rows that are there, by
symmetry; paths no row shows read ``?``). What is missing is listed in ``missing_rows`` and ``notes``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .common import fail, lines

PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")  # closest first
PAIR_CLASSES = ("NV",) + PCIE_PATHS
_NV = re.compile(r"^NV(\d+)$")
_GPU = re.compile(r"^GPU(\d+)$")
_AFFINITY_WORDS = ("CPU", "NUMA", "GPU")  # "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_EXPECTED_CELL = "a connection (X, NV#, PIX, PXB, PHB, NODE or SYS)"
UNKNOWN = "?"  # a path no row of a cut-off copy shows


@dataclass(frozen=True)
class TopoMatrix:
    """A parsed ``nvidia-smi topo -m``.

    ``gpu_links[i][j]`` is the path between GPU i and GPU j ("X" on the diagonal);
    ``gpu_nic[i][k]`` the path between GPU i and NIC k; ``nics`` holds device
    names (``mlx5_0``), or ``NIC#`` where no legend maps them.
    """

    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    gpu_links: tuple[tuple[str, ...], ...]
    gpu_nic: tuple[tuple[str, ...], ...]
    cpu_affinity: tuple[str | None, ...]
    numa_affinity: tuple[str | None, ...]
    nic_legend: bool = False
    missing_rows: tuple[str, ...] = ()   # devices the header lists with no row in the copy (a cut-off table)
    header: bool = True                  # False where the copy starts at the GPU0 row
    notes: tuple[str, ...] = ()          # what else the copy lacks

    @staticmethod
    def pair_class(cell: str) -> str:
        """``NV`` for any NV#, else the PCIe path itself."""
        return "NV" if _NV.match(cell) else cell

    def pairs(self) -> list[tuple[int, int, str]]:
        """Every unordered GPU pair (i < j) with its path."""
        n = len(self.gpus)
        return [(i, j, self.gpu_links[i][j]) for i in range(n) for j in range(i + 1, n)
                if self.gpu_links[i][j] != UNKNOWN]

    def pair_counts(self) -> dict[str, int]:
        """How many unordered GPU pairs go over each path class (NV, PIX, PXB, PHB, NODE, SYS)."""
        counts = dict.fromkeys(PAIR_CLASSES, 0)
        for _, _, cell in self.pairs():
            counts[self.pair_class(cell)] += 1
        return counts

    def nv_counts(self) -> list[int]:
        """The distinct NV# values (bonded NVLinks per GPU pair), sorted."""
        return sorted({int(_NV.match(c).group(1)) for _, _, c in self.pairs() if _NV.match(c)})

    def nearest_nics(self, gpu: int) -> tuple[str, list[str]]:
        """The closest PCIe path from GPU ``gpu`` to any NIC and the NICs at that distance."""
        if not self.nics:
            return "", []
        row = self.gpu_nic[gpu]
        known = [c for c in row if c != UNKNOWN]
        if not known:
            return "", []
        best = min(known, key=PCIE_PATHS.index)
        return best, [self.nics[k] for k, c in enumerate(row) if c == best]

    def socket_groups(self) -> list[list[int]]:
        """GPUs grouped so that no pair inside a group is SYS (connected components of the non-SYS paths)."""
        n, seen, groups = len(self.gpus), set(), []
        for start in range(n):
            if start in seen:
                continue
            group, todo = [], [start]
            seen.add(start)
            while todo:
                i = todo.pop()
                group.append(i)
                for j in range(n):
                    if j not in seen and self.gpu_links[i][j] != "SYS":
                        seen.add(j)
                        todo.append(j)
            groups.append(sorted(group))
        return groups

    def to_json(self) -> dict:
        return {"gpus": len(self.gpus), "nics": list(self.nics), "gpu_pairs": self.pair_counts(),
                "nv_counts": self.nv_counts(), "cpu_affinity": list(self.cpu_affinity),
                "numa_affinity": list(self.numa_affinity), "nic_legend": self.nic_legend,
                "missing_rows": list(self.missing_rows), "header": self.header, "notes": list(self.notes)}


def _is_cell(token: str) -> bool:
    return token == "X" or token in PCIE_PATHS or token == "SOC" or bool(_NV.match(token))


def _check_cell(cell, line_no, row_name, column):
    if cell == "SOC":  # what older drivers printed for SYS
        return "SYS"
    if _is_cell(cell):
        return cell
    raise fail(line_no, f"{_EXPECTED_CELL} in row {row_name}, column {column}", cell)


_ROW_START = re.compile(r"^\s*([A-Za-z][\w.-]{0,40})\s+(?:X|NV\d{1,3}|PIX|PXB|PHB|NODE|SYS|SOC)(?:\s|$)")


def _headerless(numbered):
    """(line before the first row, devices, GPUs, affinity) from rows whose header line was dropped:
    each row's diagonal X says its column; columns no row names are left out as unnamed."""
    names, first = [], None
    for no, line in numbered:
        m = _ROW_START.match(line[:4096])
        if m is None:
            if first is not None and (not line.strip() or line.strip().startswith("Legend")):
                break
            continue
        if first is None:
            first = no
        cells = line.split()[1:]
        pos = next((k for k, c in enumerate(cells[:4096]) if c == "X"), None)
        names.append((m.group(1), pos, len([c for c in cells if _is_cell(c)])))
    if first is None:
        return None
    width = max(n for _, _, n in names)
    devices = [None] * width
    for name, pos, _ in names:
        if pos is not None and pos < width and devices[pos] is None:
            devices[pos] = name
    n_gpu = 0
    while n_gpu < width and devices[n_gpu] is not None and _GPU.match(devices[n_gpu]):
        n_gpu += 1
    if n_gpu == 0:
        return None
    nic_rows = [k for k in range(n_gpu, width) if devices[k] is not None]
    for k in range(n_gpu, width):  # a cut copy: a column with no row is a GPU when the GPUs run on past it
        if devices[k] is None:
            devices[k] = f"GPU{k}" if not nic_rows or k < min(nic_rows) else f"NIC{k - n_gpu}"
    n_gpu = sum(1 for d in devices if _GPU.match(d))
    return first - 1, devices, n_gpu, ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]


def _header(numbered):
    """(header line number, devices, GPUs, affinity columns, whether a header line was there)."""
    for no, line in numbered:
        head = line[:4096]
        if not head.strip() or "nvidia-smi" in head or head.lstrip().startswith(("$", "#")):
            continue  # blank lines and the command that printed the matrix
        if _ROW_START.match(head) and head.split()[0] == "GPU0":  # the rows without their header
            found = _headerless(numbered)
            if found:
                return (*found, False)
        if not _GPU.match(head.split()[0]):
            continue  # a label such as 'topo -m output:' before the matrix
        line = head
        tokens = line.split()
        devices = []
        for tok in tokens:
            if tok in _AFFINITY_WORDS:
                break
            devices.append(tok)
        if not devices or devices[0] != "GPU0" or any(_is_cell(d) for d in devices):
            raise fail(no, "the header of nvidia-smi topo -m starting with GPU0", line.strip())
        gpus = [d for d in devices if _GPU.match(d)]
        if devices[:len(gpus)] != [f"GPU{i}" for i in range(len(gpus))]:
            raise fail(no, f"GPU0 ... GPU{len(gpus) - 1} in order, then the NICs", " ".join(devices))
        rest = " ".join(tokens[len(devices):])
        affinity = [name for name in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") if name in rest]
        return no, devices, len(gpus), affinity, True
    first = next(((no, line.strip()) for no, line in numbered if line.strip()), (1, None))
    raise fail(first[0], "the header of nvidia-smi topo -m starting with GPU0", first[1])


@dataclass
class _Rows:
    """The matrix rows ``parse`` read: paths per device, their line numbers, NIC rows without a column."""

    rows: dict
    row_lines: dict
    extra_nics: list   # (name, paths to the GPUs, line) of NIC rows whose NIC has no header column
    cpu: list
    numa: list
    end: int           # index in ``numbered`` of the first line after the matrix
    missing: list = field(default_factory=list)   # devices with a column and no row
    notes: list = field(default_factory=list)


def _extra_nic_row(no, name, cells, stripped, want, rows, devices, n_gpu):
    """A row that is not the next one expected: a NIC without a header column (a clipped copy), else an error."""
    if name in rows:
        raise fail(no, f"one row per device, but {name} has one already", stripped)
    if want is not None and (_GPU.match(want) or name in devices):
        raise fail(no, f"row {want} (rows follow the header's order)", name)
    # a NIC row whose NIC has no column in the header (a clipped copy): paths to the GPUs only
    if _GPU.match(name) or len(cells) < n_gpu:
        raise fail(no, f"a NIC row with {n_gpu} paths to the GPUs", stripped)
    return name, [_check_cell(c, no, name, devices[k]) for k, c in enumerate(cells[:n_gpu])], no


def _read_rows(numbered, header_no, devices, n_gpu, affinity) -> _Rows:
    """The rows after the header, in the header's order, each checked; CPU and NUMA affinity of the GPUs."""
    n_dev = len(devices)
    out = _Rows(rows={}, row_lines={}, extra_nics=[], cpu=[None] * n_gpu, numa=[None] * n_gpu, end=0)
    idx = next((i for i, (no, _) in enumerate(numbered) if no == header_no), -1) + 1
    expected = iter(devices)
    want = next(expected)
    last_no = header_no
    while idx < len(numbered):
        no, line = numbered[idx]
        stripped = line.strip()
        if not stripped or stripped.startswith("Legend"):
            break
        tokens = stripped.split()
        name, cells = tokens[0], tokens[1:]
        last_no = no
        idx += 1
        if name != want:
            out.extra_nics.append(_extra_nic_row(no, name, cells, stripped, want, out.rows, devices, n_gpu))
            continue
        if len(cells) < n_dev:
            after = numbered[idx][1].strip() if idx < len(numbered) else ""
            if after and not after.startswith("Legend"):
                raise fail(no, f"{n_dev} connection columns after {name}", f"{len(cells)} in {stripped!r}")
            out.notes.append(f"row {name} (line {no}) is cut off after {len(cells)} of {n_dev} columns")
            break
        checked = [_check_cell(c, no, name, devices[k]) for k, c in enumerate(cells[:n_dev])]
        pos = devices.index(name)
        if checked[pos] != "X":
            raise fail(no, f"X where row {name} meets column {name}", checked[pos])
        out.rows[name], out.row_lines[name] = checked, no
        if pos < n_gpu:
            values = dict(zip(affinity, cells[n_dev:]))
            out.cpu[pos], out.numa[pos] = values.get("CPU Affinity"), values.get("NUMA Affinity")
        want = next(expected, None)
    if want is not None:
        out.missing = [want] + list(expected)
        if not out.rows:
            got = numbered[idx][1].strip() if idx < len(numbered) else None
            raise fail(numbered[idx][0] if idx < len(numbered) else last_no + 1,
                       f"row {want} (the header lists {n_gpu} GPUs)", got)
    out.end = idx
    return out


def _read_legend(numbered) -> dict[str, str]:
    """The "NIC Legend" after the matrix: NIC# -> device name."""
    legend: dict[str, str] = {}
    in_legend = False
    for no, line in numbered:
        if line.strip().startswith("NIC Legend"):
            in_legend = True
            continue
        if in_legend and line.strip():
            m = _LEGEND.match(line[:4096])
            if not m:
                raise fail(no, "a NIC legend line such as 'NIC0: mlx5_0'", line.strip())
            legend[m.group(1)] = m.group(2)
    return legend


def _check_symmetric(r: _Rows, devices, n_gpu) -> None:
    """GPU-GPU paths read the same both ways, and so do GPU-NIC paths where the NIC has a row."""
    rows, row_lines = r.rows, r.row_lines
    gpus = devices[:n_gpu]
    for i, a in enumerate(gpus):
        for j, b in enumerate(gpus):
            if a in rows and b in rows and rows[a][j] != rows[b][i]:
                raise fail(row_lines[b], f"{b}-{a} to match {a}-{b} ({rows[a][j]}): the matrix is symmetric",
                           rows[b][i])
    for k, nic in enumerate(devices[n_gpu:]):
        if nic in rows:
            for i, g in enumerate(gpus):
                if g in rows and rows[nic][i] != rows[g][n_gpu + k]:
                    raise fail(row_lines[nic], f"{nic}-{g} to match {g}-{nic} ({rows[g][n_gpu + k]})", rows[nic][i])


def _filled(r: _Rows, devices, n_gpu) -> tuple[list, list]:
    """GPU-GPU and GPU-NIC paths of every GPU, a missing row's taken from the other rows' columns (the matrix is
    symmetric); UNKNOWN where no row shows the path."""
    gpus = devices[:n_gpu]
    links, nic = [], []
    for i, g in enumerate(gpus):
        if g in r.rows:
            links.append(list(r.rows[g][:n_gpu]))
            nic.append(list(r.rows[g][n_gpu:]))
            continue
        links.append(["X" if j == i else r.rows[b][i] if b in r.rows else UNKNOWN for j, b in enumerate(gpus)])
        nic.append([r.rows[d][i] if d in r.rows else UNKNOWN for d in devices[n_gpu:]])
    return links, nic


def parse(text) -> TopoMatrix:
    """Parse ``nvidia-smi topo -m`` output (whole, cut off or without its header); ValueError names the line
    and what it expected where the text is not that table."""
    numbered = lines(text)
    header_no, devices, n_gpu, affinity, has_header = _header(numbered)
    r = _read_rows(numbered, header_no, devices, n_gpu, affinity)
    legend = _read_legend(numbered[r.end:])
    gpus = tuple(devices[:n_gpu])
    _check_symmetric(r, devices, n_gpu)
    links, gpu_nic = _filled(r, devices, n_gpu)
    names = list(devices[n_gpu:])
    for name, cells, _ in r.extra_nics:
        names.append(name)
        for i in range(n_gpu):
            gpu_nic[i].append(cells[i])
    missing = [n for n in names if n.startswith("NIC") and legend and n not in legend]
    notes = list(r.notes)
    if missing:
        notes.append(f"the NIC legend names no device for {', '.join(missing)}")
    if not legend and any(_LEGEND.match(f"{n}: x") for n in names):
        notes.append("no NIC legend in the copy: the NICs keep nvidia-smi's NIC# labels (the legend after the "
                     "matrix maps them to devices such as mlx5_0)")
    if not has_header:
        notes.append("the header line (GPU0 GPU1 ... CPU Affinity) is not in the copy: the columns are read from "
                     "each row's X, and the affinity columns in nvidia-smi's order")
    if r.missing:
        notes.append(f"the table is cut off: no row for {', '.join(r.missing)}"
                     + ("; their paths to each other are not in the copy (shown as ?)" if
                        sum(1 for m in r.missing if _GPU.match(m)) > 1 else ""))
    nics = tuple(legend.get(n, n) for n in names)
    return TopoMatrix(gpus=gpus, nics=nics, gpu_links=tuple(tuple(row) for row in links),
                      gpu_nic=tuple(tuple(row) for row in gpu_nic), cpu_affinity=tuple(r.cpu),
                      numa_affinity=tuple(r.numa), nic_legend=bool(legend), missing_rows=tuple(r.missing),
                      header=has_header, notes=tuple(notes))
