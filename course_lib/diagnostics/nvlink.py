"""``nvidia-smi nvlink -s``: each GPU's NVLinks, their rate and which are inactive.

The rate nvidia-smi prints is one link's rate in GB/s per direction (V100 25.781,
A100 25, H100/H800 26.562); ``<inactive>`` marks a link that did not train.
Lines of dots that a person put in a pasted copy to stand for GPUs left out are skipped.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .common import fail, is_elision, lines

_GPU = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: [^)]*\))?\s*$")
_LINK = re.compile(r"^Link (\d+): (.*)$")
_RATE = re.compile(r"^([0-9.]+) GB/s$")


@dataclass(frozen=True)
class NvlinkGpu:
    """One GPU: ``links[k]`` is link k's rate in GB/s per direction, None where inactive."""

    index: int
    name: str
    links: tuple[float | None, ...]

    @property
    def active(self) -> int:
        return sum(r is not None for r in self.links)

    @property
    def inactive(self) -> list[int]:
        return [k for k, r in enumerate(self.links) if r is None]


@dataclass(frozen=True)
class NvlinkStatus:
    gpus: tuple[NvlinkGpu, ...]
    elided: bool = False  # the copy has lines of dots standing for GPUs left out

    @property
    def excerpt(self) -> bool:
        """Only some GPUs shown: dots stand for left-out GPUs, or the indices do not run 0, 1, 2 ..."""
        return self.elided or [g.index for g in self.gpus] != list(range(len(self.gpus)))

    @property
    def links_per_gpu(self) -> int:
        """The most links any GPU lists (active or not)."""
        return max(len(g.links) for g in self.gpus)

    @property
    def gb_s_per_link(self) -> float | None:
        """The most common rate of an active link, GB/s per direction (None if every link is inactive)."""
        rates = Counter(r for g in self.gpus for r in g.links if r is not None)
        return rates.most_common(1)[0][0] if rates else None

    def to_json(self) -> dict:
        return {"gpus": len(self.gpus), "gpu_indices": [g.index for g in self.gpus], "excerpt": self.excerpt,
                "links_per_gpu": self.links_per_gpu, "gb_s_per_link": self.gb_s_per_link,
                "per_gpu": [{"gpu": g.index, "name": g.name, "active": g.active, "inactive": g.inactive}
                            for g in self.gpus]}


def parse(text) -> NvlinkStatus:
    """Parse ``nvidia-smi nvlink -s``; ValueError names the line and what it expected."""
    gpus: list[NvlinkGpu] = []
    cur = None  # (index, name, rates, header line)

    def close():
        if cur is not None:
            if not cur[2]:
                raise fail(cur[3] + 1, f"'Link 0: ...' under GPU {cur[0]}", None)
            gpus.append(NvlinkGpu(cur[0], cur[1], tuple(cur[2])))

    numbered = lines(text)
    elided = False
    for no, raw in numbered:
        line = raw.strip()
        if not line or is_elision(line):
            elided = elided or bool(line)
            continue
        m = _GPU.match(line)
        if m:
            close()
            index = int(m.group(1))
            if gpus and index <= gpus[-1].index:
                raise fail(no, f"a GPU after GPU {gpus[-1].index} (GPUs are listed in order)", line)
            cur = (index, m.group(2), [], no)
            continue
        m = _LINK.match(line)
        if not m:
            raise fail(no, "'GPU n: NAME (UUID: ...)' or 'Link k: RATE GB/s' or 'Link k: <inactive>'", line)
        if cur is None:
            raise fail(no, "a 'GPU n: ...' line before its links", line)
        k, value = int(m.group(1)), m.group(2).strip()
        if k != len(cur[2]):
            raise fail(no, f"Link {len(cur[2])} of GPU {cur[0]} (links are listed in order)", line)
        if value == "<inactive>":
            cur[2].append(None)
            continue
        r = _RATE.match(value)
        if not r:
            raise fail(no, "a link rate such as '26.562 GB/s' or '<inactive>'", value)
        cur[2].append(float(r.group(1)))
    close()
    if not gpus:
        raise fail(1, "'GPU n: NAME (UUID: ...)' followed by its links", numbered[0][1] if numbered else None)
    return NvlinkStatus(gpus=tuple(gpus), elided=elided)
