"""Read what practitioners read: ``nvidia-smi topo -m``, ``nvidia-smi nvlink -s``, the PCIe part of
``nvidia-smi -q``, ``ibstat``/``ibv_devinfo``/``ibstatus``, the ``ACSCtl`` lines of ``lspci -vvv`` and ``NCCL_DEBUG=INFO`` logs.

One module per kind of output, each with ``parse(text)`` returning a small frozen dataclass;
bad input raises ValueError naming the line and what was expected. ``detect(text)`` names
the kind of a text, ``parse(text)`` reads it whatever its kind. Published samples of each
kind ship in ``course_lib/data/samples`` (``common.sample_names()``, with their sources).
"""
from __future__ import annotations

import re

from . import acs, ibstat, nccl_log, nvlink, smi_pcie, topo
from .common import fail, lines, sample_names, sample_path, sample_sources, sample_text

READERS = {"topo": topo.parse, "nvlink_status": nvlink.parse, "smi_pcie": smi_pcie.parse,
           "ibstat": ibstat.parse, "nccl_debug": nccl_log.parse, "lspci_acs": acs.parse}
KINDS = tuple(READERS)

_MARKERS = (  # (kind, pattern), first match wins
    ("nccl_debug", re.compile(r"NCCL (INFO|WARN)|NCCL version \S+|^Using network |^NET/(IB|Socket|Plugin)")),
    ("smi_pcie", re.compile(r"==NVSMI LOG==|^\s*GPU Link Info\s*$")),
    ("lspci_acs", re.compile(r"^\s*ACSCtl:")),
    ("ibstat", re.compile(r"^CA '[^']+'\s*$|^\s*hca_id:|^Infiniband device '")),
    ("nvlink_status", re.compile(r"^\s*Link \d+: (<inactive>|[0-9.]+ GB/s)")),
    ("topo", re.compile(r"^\s*GPU0\s+(GPU1|X\b|CPU Affinity|NIC0|\S+_\d)")),
)


def detect(text) -> str:
    """The kind of output ``text`` is: one of ``KINDS``; ValueError if none."""
    numbered = lines(text)
    body = "\n".join(line for _, line in numbered)
    for kind, pattern in _MARKERS:
        if any(pattern.search(line) for _, line in numbered):
            return kind
    first = next(((no, line.strip()) for no, line in numbered if line.strip()), (1, None))
    raise fail(first[0], "the output of nvidia-smi topo -m, nvidia-smi nvlink -s, nvidia-smi -q, "
                         "ibstat/ibv_devinfo/ibstatus, lspci -vvv (ACSCtl) or an NCCL_DEBUG=INFO log", first[1] if body else None)


def parse(text, kind: str | None = None):
    """``(kind, result)`` for ``text``; ``kind`` defaults to ``detect(text)``."""
    if kind is None:
        kind = detect(text)
    elif kind not in READERS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return kind, READERS[kind](text)


__all__ = ["KINDS", "READERS", "detect", "parse", "fail", "lines", "sample_names", "sample_path",
           "sample_sources", "sample_text", "acs", "ibstat", "nccl_log", "nvlink", "smi_pcie", "topo"]
