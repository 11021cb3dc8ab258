"""The PCIe part of ``nvidia-smi -q``: each GPU's link generation and width, now and at most.

GPUs lower their PCIe link (generation, sometimes width) when idle to save power, so a
link that reads "Gen1" at idle is not a fault; compare under load.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .common import fail, lines

_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 ._()/-]*")


class _Line(tuple):
    """(indent, key, value) of a 'Key : value' line or (indent, heading) of a heading, read like a match."""

    def group(self, k):
        return self[k - 1]


def _kv(raw: str):
    """A 'Key : value' line split with str.partition (linear in the line's length), or None."""
    body = raw.lstrip()
    key, sep, value = body.partition(":")
    key = key.rstrip()
    if not sep or not _NAME.fullmatch(key):
        return None
    return _Line((raw[:len(raw) - len(body)], key, value.strip()))


def _head(raw: str):
    body = raw.lstrip()
    name = body.rstrip()
    return _Line((raw[:len(raw) - len(body)], name)) if _NAME.fullmatch(name) else None


@dataclass(frozen=True)
class PcieGpu:
    """One GPU's PCIe link: generation and lane count, current and max."""

    bus_id: str
    name: str | None
    gen_current: int
    gen_max: int
    width_current: int
    width_max: int
    line: int

    @property
    def trained_down(self) -> bool:
        return self.gen_current < self.gen_max or self.width_current < self.width_max

    def to_json(self) -> dict:
        return {"bus_id": self.bus_id, "name": self.name, "gen_current": self.gen_current, "gen_max": self.gen_max,
                "width_current": self.width_current, "width_max": self.width_max}


@dataclass(frozen=True)
class SmiPcie:
    gpus: tuple[PcieGpu, ...]

    def to_json(self) -> dict:
        return {"gpus": [g.to_json() for g in self.gpus]}


def _int(no, text, what):
    m = re.match(r"^(\d+)x?$", text)
    if not m:
        raise fail(no, what, text)
    return int(m.group(1))


def parse(text) -> SmiPcie:
    """Parse ``nvidia-smi -q`` (its PCI blocks); ValueError names the line and what it expected."""
    numbered = lines(text)
    gpus: list[PcieGpu] = []
    cur = None
    section: list[tuple[int, str]] = []  # (indent, heading) stack

    def close(end_no):
        if cur is None:
            return
        missing = [k for k in ("gen_current", "gen_max", "width_current", "width_max") if cur[k] is None]
        if missing:
            raise fail(end_no, f"the GPU Link Info (PCIe Generation and Link Width, Max and Current) of GPU "
                               f"{cur['bus_id']} (missing {', '.join(missing)})", None if end_no > numbered[-1][0]
                       else numbered[end_no - 1][1].strip())
        gpus.append(PcieGpu(**cur))

    for no, raw in numbered:
        if not raw.strip() or raw.startswith("="):
            continue
        m = _GPU.match(raw)
        if m:
            close(no)
            cur = {"bus_id": m.group(1), "name": None, "gen_current": None, "gen_max": None,
                   "width_current": None, "width_max": None, "line": no}
            section = []
            continue
        kv = _kv(raw)
        head = None if kv else _head(raw)
        if not kv and not head:
            raise fail(no, "a 'Key : value' line or a section heading", raw.strip())
        indent = len((kv or head).group(1).expandtabs())
        while section and section[-1][0] >= indent:
            section.pop()
        if head:
            section.append((indent, head.group(2)))
            continue
        if cur is None:
            continue  # the log's header: timestamp, driver version, attached GPUs
        key, value = kv.group(2), kv.group(3)
        path = [name for _, name in section]
        if key == "Product Name":
            cur["name"] = value
        elif path[-1:] == ["PCIe Generation"] and key in ("Max", "Current"):
            cur["gen_max" if key == "Max" else "gen_current"] = _int(no, value, "a PCIe generation such as '4'")
        elif path[-1:] == ["Link Width"] and key in ("Max", "Current"):
            cur["width_max" if key == "Max" else "width_current"] = _int(no, value, "a link width such as '16x'")
    close(numbered[-1][0] + 1 if numbered else 1)
    if not gpus:
        raise fail(1, "nvidia-smi -q output with a 'GPU 00000000:18:00.0' section", None)
    return SmiPcie(gpus=tuple(gpus))
