"""Read what practitioners read, as they paste it: ``nvidia-smi topo -m``, ``nvidia-smi nvlink -s``, the PCIe
part of ``nvidia-smi -q``, ``ibstat``/``ibv_devinfo``/``ibstatus``, ``rdma link``, ``iblinkinfo``, the ``ACSCtl``
lines of ``lspci -vvv``, ``NCCL_DEBUG=INFO`` logs (failures included), NCCL's topology dump (XML or log) and
nccl-tests / rccl-tests outputs.

One module per kind of output, each with ``parse(text)`` returning a small frozen dataclass;
bad input raises ValueError naming the line and what was expected. ``read(text)`` first cleans a paste
(``pasted``: colour codes, CRLF, a BOM, the prompt and launcher lines before the output, which it lists);
``detect(text)`` names the kind of a text from its body, not its first line; ``parse(text)`` reads it
whatever its kind. Published samples of each kind ship in ``course_lib/data/samples``
(``common.sample_names()``, with their sources).
"""
from __future__ import annotations

import re

from . import (acs, failures, ibstat, iblinkinfo, nccl_log, nccl_tests, nccl_topo, nvlink, pasted, rdma_link,
               smi_pcie, topo)
from .common import fail, lines, sample_names, sample_path, sample_sources, sample_text

READERS = {"topo": topo.parse, "nvlink_status": nvlink.parse, "smi_pcie": smi_pcie.parse,
           "ibstat": ibstat.parse, "nccl_debug": nccl_log.parse, "lspci_acs": acs.parse,
           "nccl_tests": nccl_tests.parse, "nccl_topo": nccl_topo.parse, "rdma_link": rdma_link.parse,
           "iblinkinfo": iblinkinfo.parse}
KINDS = tuple(READERS)

_ROW = re.compile(r"^\s*\d{1,20}\s+\d{1,20}\s+(?:float|double|half|bfloat16|int8|uint8|int32|uint32|int64|uint64|"
                  r"fp8_e4m3|fp8_e5m2)\s+(?:sum|prod|max|min|avg|none|mulsum)\s")
_MARKERS = (  # (kind, test on one line), first kind with a matching line wins
    ("nccl_tests", lambda l: ("Collective test " in l or "nThread " in l or "rccl-tests:" in l
                              or bool(_ROW.match(l))) and "NCCL INFO" not in l),
    ("nccl_topo", lambda l: "<system version=" in l or "=== System : maxBw" in l or "<gpu dev=" in l),
    ("nccl_debug", lambda l: bool(re.search(r"NCCL (?:INFO|WARN)|NCCL version \S+|^Using network |^NET/(?:IB|Socket|Plugin)|"
                                            r"Watchdog caught collective|NCCL Error \d|unhandled system error", l))),
    ("smi_pcie", lambda l: "==NVSMI LOG==" in l or l.strip() == "GPU Link Info"),
    ("lspci_acs", lambda l: l.lstrip().startswith("ACSCtl:")),
    ("ibstat", lambda l: bool(re.match(r"CA '[^']+'\s*$|\s*hca_id:|Infiniband device '", l))),
    ("rdma_link", lambda l: bool(re.match(r"link [\w.-]+/\d+ ", l))),
    ("iblinkinfo", lambda l: "==(" in l and ")==>" in l),
    ("nvlink_status", lambda l: bool(re.match(r"\s*Link \d+: (?:<inactive>|[0-9.]+ GB/s)", l))),
    ("topo", lambda l: bool(re.match(r"\s*GPU0\s+(?:GPU1|X\b|CPU Affinity|NIC0|\S+_\d)", l))),
)
_WHOLE_LOG = re.compile(r"NCCL version \S+|Using network |NET/(?:IB|Socket|Plugin|OFI)|ncclCommInitRank")
_LONG = 4096  # a marker is looked for in a line's first characters only


def read(text) -> pasted.Pasted:
    """``text`` cleaned, with its leading prompt and launcher lines blanked and listed (``pasted.read``)."""
    return pasted.read(text)


def detect(text) -> str:
    """The kind of output ``text`` is: one of ``KINDS``; ValueError if none."""
    numbered = lines(pasted.clean(text))
    for kind, test in _MARKERS:
        if any(test(line[:_LONG]) for _, line in numbered):
            if kind == "nccl_topo" and any(_WHOLE_LOG.search(line[:_LONG]) for _, line in numbered):
                return "nccl_debug"  # a whole INFO log that also printed its topology: the log is read, topology too
            return kind
    first = next(((no, line.strip()) for no, line in numbered if line.strip()), None)
    if first is None:
        raise ValueError("the output is empty: nothing to read (nvidia-smi nvlink -s prints nothing on a GPU "
                         "without NVLink, and ibstat nothing without an InfiniBand adapter)")
    raise fail(first[0], "the output of nvidia-smi topo -m, nvidia-smi nvlink -s, nvidia-smi -q, "
                         "ibstat/ibv_devinfo/ibstatus, rdma link, iblinkinfo, lspci -vvv (ACSCtl), an NCCL_DEBUG=INFO "
                         "log, an NCCL topology dump or an nccl-tests/rccl-tests output", first[1])


def parse(text, kind: str | None = None):
    """``(kind, result)`` for ``text`` (cleaned first); ``kind`` defaults to ``detect(text)``."""
    if kind is not None and kind not in READERS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    clean = pasted.read(text).text
    if kind is None:
        kind = detect(clean)
    return kind, READERS[kind](text if kind == "nccl_tests" else clean)  # nccl-tests keeps its command lines


__all__ = ["KINDS", "READERS", "detect", "parse", "read", "fail", "lines", "sample_names", "sample_path",
           "sample_sources", "sample_text", "acs", "failures", "ibstat", "iblinkinfo", "nccl_log", "nccl_tests",
           "nccl_topo", "nvlink", "pasted", "rdma_link", "smi_pcie", "topo"]
