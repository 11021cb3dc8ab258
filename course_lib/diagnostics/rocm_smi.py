"""``rocm-smi --showtopo`` (AMD GPUs): the weight, hops and link-type matrices between GPUs, and each GPU's NUMA node.

rocm-smi (ROCm/rocm_smi_lib, python_smi_tools/rocm_smi.py, showTopo*) prints sections under
``=== Weight between two GPUs ===``, ``=== Hops between two GPUs ===``, ``=== Link Type between two GPUs ===``
(a header line ``GPU0 GPU1 ...``, then one row per GPU, ``0`` on the diagonal; link types ``XGMI`` or ``PCIE``)
and ``=== Numa Nodes ===`` (``GPU[0] : (Topology) Numa Node: 0``, or ``GPU 0 : ...`` in newer releases).
A copy cut inside a matrix is read as far as it goes, and the missing rows are named.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .common import fail, lines

_SECTION = re.compile(r"^=+\s*([A-Za-z][A-Za-z ]{0,60}?)\s*=+\s*$")
_ROW = re.compile(r"^\s*GPU(\d{1,3})\s+(\S.*)$")
_NUMA = re.compile(r"^GPU\s?\[?(\d{1,3})\]?\s*:\s*\(Topology\) Numa Node:\s*(-?\d{1,4})")
_MATRICES = {"Weight between two GPUs": "weight", "Hops between two GPUs": "hops",
             "Link Type between two GPUs": "link_type"}
LINK_TYPES = ("XGMI", "PCIE")


@dataclass(frozen=True)
class RocmTopo:
    """What ``rocm-smi --showtopo`` says: ``gpus`` (the count the headers name), each matrix as rows of cells
    (``?`` where the copy lost the row), the NUMA node of each GPU listed, and ``notes`` on what is missing."""

    gpus: int
    link_type: tuple[tuple[str, ...], ...]
    weight: tuple[tuple[str, ...], ...]
    hops: tuple[tuple[str, ...], ...]
    numa: tuple[tuple[int, int], ...]
    notes: tuple[str, ...]

    def pair_counts(self) -> dict:
        """GPU pairs (i < j) by link type, from the link-type matrix (``?`` for a pair the copy lost)."""
        out: dict = {}
        for i, row in enumerate(self.link_type):
            for j in range(i + 1, min(len(row), self.gpus)):
                cell = row[j] if row[j] != "?" else self.link_type[j][i]  # the matrix is symmetric
                cell = "not in the copy" if cell == "?" else cell
                out[cell] = out.get(cell, 0) + 1
        return out

    def to_json(self) -> dict:
        return {"gpus": self.gpus, "link_type": [list(r) for r in self.link_type],
                "weight": [list(r) for r in self.weight], "hops": [list(r) for r in self.hops],
                "numa": {f"GPU{g}": n for g, n in self.numa}, "pairs_by_link_type": self.pair_counts(),
                "notes": list(self.notes)}


def parse(text) -> RocmTopo:
    """Read ``rocm-smi --showtopo`` (or any of its matrices alone); ValueError where no matrix or NUMA line is."""
    section, header = None, 0
    mats: dict = {"weight": {}, "hops": {}, "link_type": {}}
    headers: dict = {}
    numa: dict = {}
    seen = False
    for no, raw in lines(text):
        line = raw.rstrip()
        if not line.strip():
            continue
        if line.lstrip()[:1] == "=":
            m = _SECTION.match(line.strip())
            section = _MATRICES.get(m.group(1).strip()) if m else None
            header = 0
            if m and ("ROCm" in m.group(1) or m.group(1).strip() in _MATRICES or "Numa" in m.group(1)):
                seen = True
            continue
        n = _NUMA.match(line.strip()) if "Numa Node" in line else None
        if n:
            numa[int(n.group(1))] = int(n.group(2))
            seen = True
            continue
        if section is None:
            continue
        words = line.split()
        if words and all(w.startswith("GPU") and w[3:].isdigit() for w in words):
            header = len(words)
            headers[section] = header
            continue
        r = _ROW.match(line)
        if r and header:
            cells = tuple(r.group(2).split())
            if len(cells) > header:
                raise fail(no, f"a row of {header} cells after GPU{r.group(1)}", line.strip())
            mats[section][int(r.group(1))] = cells + ("?",) * (header - len(cells))
            seen = True
    if not seen or not (headers or numa):
        raise fail(1, "rocm-smi --showtopo output ('=== Link Type between two GPUs ===' and its matrix)",
                   text.strip().split("\n")[0][:80] if isinstance(text, str) and text.strip() else None)
    gpus = max(list(headers.values()) + [g + 1 for g in numa] + [0])
    notes = []
    out = {}
    for key, rows in mats.items():
        if key not in headers:
            out[key] = ()
            continue
        missing = [g for g in range(gpus) if g not in rows]
        if missing:
            notes.append(f"the {key.replace('_', '-')} matrix has no row for "
                         + ", ".join(f"GPU{g}" for g in missing) + " (the copy is cut there)")
        out[key] = tuple(rows.get(g, ("?",) * gpus) for g in range(gpus))
    if "link_type" not in headers:
        notes.append("no link-type matrix in the copy (rocm-smi --showtopotype prints it)")
    return RocmTopo(gpus=gpus, link_type=out["link_type"], weight=out["weight"], hops=out["hops"],
                    numa=tuple(sorted(numa.items())), notes=tuple(notes))
