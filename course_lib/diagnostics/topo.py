"""``nvidia-smi topo -m``: the GPU/NIC connection matrix, CPU and NUMA affinity.

Each cell names the path between two devices, from closest to farthest:
NV# (# bonded NVLinks), PIX (one PCIe switch), PXB (several PCIe switches),
PHB (through a CPU's PCIe host bridge), NODE (between host bridges of one NUMA
node), SYS (across the CPU socket interconnect). Columns may be separated by
tabs or runs of spaces; NICs appear as ``mlx5_*`` or ``NIC#`` (mapped by the
"NIC Legend" when present).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .common import fail, lines

PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")  # closest first
PAIR_CLASSES = ("NV",) + PCIE_PATHS
_NV = re.compile(r"^NV(\d+)$")
_GPU = re.compile(r"^GPU(\d+)$")
_AFFINITY_WORDS = ("CPU", "NUMA", "GPU")  # "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_EXPECTED_CELL = "a connection (X, NV#, PIX, PXB, PHB, NODE or SYS)"


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

    @staticmethod
    def pair_class(cell: str) -> str:
        """``NV`` for any NV#, else the PCIe path itself."""
        return "NV" if _NV.match(cell) else cell

    def pairs(self) -> list[tuple[int, int, str]]:
        """Every unordered GPU pair (i < j) with its path."""
        n = len(self.gpus)
        return [(i, j, self.gpu_links[i][j]) for i in range(n) for j in range(i + 1, n)]

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
        best = min(row, key=PCIE_PATHS.index)
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
                "numa_affinity": list(self.numa_affinity), "nic_legend": self.nic_legend}


def _is_cell(token: str) -> bool:
    return token == "X" or token in PCIE_PATHS or token == "SOC" or bool(_NV.match(token))


def _check_cell(cell, line_no, row_name, column):
    if cell == "SOC":  # what older drivers printed for SYS
        return "SYS"
    if _is_cell(cell):
        return cell
    raise fail(line_no, f"{_EXPECTED_CELL} in row {row_name}, column {column}", cell)


def _header(numbered):
    for no, line in numbered:
        if not line.strip() or "nvidia-smi" in line or line.lstrip().startswith(("$", "#")):
            continue  # blank lines and the command that printed the matrix
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
        return no, devices, len(gpus), affinity
    raise fail(1, "the header of nvidia-smi topo -m starting with GPU0", None)


@dataclass
class _Rows:
    """The matrix rows ``parse`` read: paths per device, their line numbers, NIC rows without a column."""

    rows: dict
    row_lines: dict
    extra_nics: list   # (name, paths to the GPUs, line) of NIC rows whose NIC has no header column
    cpu: list
    numa: list
    end: int           # index in ``numbered`` of the first line after the matrix


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
    idx = next(i for i, (no, _) in enumerate(numbered) if no == header_no) + 1
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
            raise fail(no, f"{n_dev} connection columns after {name}", f"{len(cells)} in {stripped!r}")
        checked = [_check_cell(c, no, name, devices[k]) for k, c in enumerate(cells[:n_dev])]
        pos = devices.index(name)
        if checked[pos] != "X":
            raise fail(no, f"X where row {name} meets column {name}", checked[pos])
        out.rows[name], out.row_lines[name] = checked, no
        if pos < n_gpu:
            values = dict(zip(affinity, cells[n_dev:]))
            out.cpu[pos], out.numa[pos] = values.get("CPU Affinity"), values.get("NUMA Affinity")
        want = next(expected, None)
    if want is not None and _GPU.match(want):
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
            m = _LEGEND.match(line)
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
            if rows[a][j] != rows[b][i]:
                raise fail(row_lines[b], f"{b}-{a} to match {a}-{b} ({rows[a][j]}): the matrix is symmetric",
                           rows[b][i])
    for k, nic in enumerate(devices[n_gpu:]):
        if nic in rows:
            for i, g in enumerate(gpus):
                if rows[nic][i] != rows[g][n_gpu + k]:
                    raise fail(row_lines[nic], f"{nic}-{g} to match {g}-{nic} ({rows[g][n_gpu + k]})", rows[nic][i])


def parse(text) -> TopoMatrix:
    """Parse ``nvidia-smi topo -m`` output; ValueError names the line and what it expected."""
    numbered = lines(text)
    header_no, devices, n_gpu, affinity = _header(numbered)
    r = _read_rows(numbered, header_no, devices, n_gpu, affinity)
    legend = _read_legend(numbered[r.end:])
    gpus = tuple(devices[:n_gpu])
    _check_symmetric(r, devices, n_gpu)
    gpu_nic = [list(r.rows[g][n_gpu:]) for g in gpus]
    names = list(devices[n_gpu:])
    for name, cells, _ in r.extra_nics:
        names.append(name)
        for i in range(n_gpu):
            gpu_nic[i].append(cells[i])
    missing = [n for n in names if n.startswith("NIC") and legend and n not in legend]
    if missing:
        raise fail(numbered[-1][0], f"a NIC legend entry for {missing[0]}", None)
    nics = tuple(legend.get(n, n) for n in names)
    return TopoMatrix(gpus=gpus, nics=nics, gpu_links=tuple(tuple(r.rows[g][:n_gpu]) for g in gpus),
                      gpu_nic=tuple(tuple(row) for row in gpu_nic), cpu_affinity=tuple(r.cpu),
                      numa_affinity=tuple(r.numa), nic_legend=bool(legend))
