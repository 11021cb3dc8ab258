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

import dataclasses

from . import (acs, failures, ibstat, iblinkinfo, nccl_log, nccl_tests, nccl_topo, nvlink, pasted, rdma_link,
               rocm_smi, smi_pcie, topo)
from .common import fail, lines, sample_names, sample_path, sample_sources, sample_text

READERS = {"topo": topo.parse, "nvlink_status": nvlink.parse, "smi_pcie": smi_pcie.parse,
           "ibstat": ibstat.parse, "nccl_debug": nccl_log.parse, "lspci_acs": acs.parse,
           "nccl_tests": nccl_tests.parse, "nccl_topo": nccl_topo.parse, "rdma_link": rdma_link.parse,
           "iblinkinfo": iblinkinfo.parse, "rocm_smi": rocm_smi.parse}
KINDS = tuple(READERS)

_CONTEXT_KINDS = ("prompt", "env", "other")
# a paste's main part, when it has several: a result table before the matrix, the matrix before the log
_MAIN_ORDER = ("nccl_tests", "topo", "rocm_smi", "nvlink_status", "smi_pcie", "ibstat", "rdma_link", "iblinkinfo", "lspci_acs",
               "nccl_topo", "nccl_debug")


def read(text) -> pasted.Pasted:
    """``text`` cleaned, with its leading prompt and launcher lines blanked and listed (``pasted.read``)."""
    return pasted.read(text)


def _refusal(all_lines) -> ValueError:
    first = next(((no, line.strip()) for no, line in enumerate(all_lines, start=1) if line.strip()), None)
    if first is None:
        return ValueError("the output is empty: nothing to read (nvidia-smi nvlink -s prints nothing on a GPU "
                          "without NVLink, and ibstat nothing without an InfiniBand adapter)")
    return fail(first[0], "the output of nvidia-smi topo -m, nvidia-smi nvlink -s, nvidia-smi -q, "
                          "ibstat/ibv_devinfo/ibstatus, rdma link, iblinkinfo, lspci -vvv (ACSCtl), an NCCL_DEBUG=INFO "
                          "log, an NCCL topology dump or an nccl-tests/rccl-tests output", first[1])


def _main(parts) -> pasted.Part | None:
    readable = [p for p in parts if p.kind in READERS]
    return min(readable, key=lambda p: _MAIN_ORDER.index(p.kind), default=None)


def detect(text) -> str:
    """The kind of output ``text`` is (its main part, see ``read_parts``): one of ``KINDS``; ValueError if none."""
    all_lines, parts = pasted.split(text)
    main = _main(parts)
    if main is None:
        raise _refusal(all_lines)
    return main.kind


def _reader_text(part: pasted.Part, parts, all_lines) -> str:
    """What a part's reader is given: its lines, and for nccl-tests the command and env lines of the paste too
    (they name the test, its sizes, the processes and NCCL_ALGO/NCCL_PROTO)."""
    if part.kind != "nccl_tests":
        return part.text_of(all_lines)
    keep = set(part.lines).union(*(p.lines for p in parts if p.kind in ("prompt", "env")))
    return "\n".join(line if i in keep else "" for i, line in enumerate(all_lines, start=1))


def read_parts(text) -> list[dict]:
    """Every part of a paste with what its reader made of it, in the order the parts start:
    ``{"part": Part, "kind", "result" (None where unread), "error" (the reader's one line, or None), "text" (what
    the reader was given: the paste with the other parts' lines blanked)}``.
    ValueError (one line) when no part is an output a reader knows."""
    all_lines, parts = pasted.split(text)
    if _main(parts) is None:
        raise _refusal(all_lines)
    out = []
    for part in parts:
        item = {"part": part, "kind": part.kind, "result": None, "error": None, "text": ""}
        if part.kind in READERS:
            item["text"] = _reader_text(part, parts, all_lines)
            try:
                item["result"] = READERS[part.kind](item["text"])
            except ValueError as exc:
                item["error"] = str(exc)
        out.append(item)
    if not any(i["result"] is not None for i in out):
        bad = next(i for i in out if i["error"])
        raise ValueError(bad["error"])
    _ranks_from_log(out)
    return out


def _ranks_from_log(readings: list[dict]) -> None:
    """An nccl-tests part whose copy names no rank count takes the ``nranks`` of the NCCL log inside the paste
    (the communicator's 'comm 0x... rank 0 nranks 16' line), and says so."""
    log = next((i for i in readings if i["kind"] == "nccl_debug" and i["result"] is not None
                and i["result"].nranks), None)
    if log is None:
        return
    for item in readings:
        run = item["result"]
        if item["kind"] == "nccl_tests" and run is not None and run.ranks is None:
            item["result"] = dataclasses.replace(
                run, ranks=log["result"].nranks,
                ranks_from=f"nranks in the NCCL INFO lines ({log['part'].span()}); the table part names none")


def main_part(readings: list[dict]) -> dict:
    """The reading that speaks for the paste (an nccl-tests table before a matrix, a matrix before a log)."""
    read = [i for i in readings if i["result"] is not None]
    return min(read, key=lambda i: _MAIN_ORDER.index(i["kind"]))


def parse(text, kind: str | None = None):
    """``(kind, result)`` for ``text`` (cleaned first); ``kind`` defaults to the main part's (``read_parts``)."""
    if kind is not None and kind not in READERS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind is not None:
        clean = pasted.read(text).text
        return kind, READERS[kind](text if kind == "nccl_tests" else clean)
    readings = read_parts(text)
    main = main_part(readings)
    return main["kind"], main["result"]


__all__ = ["KINDS", "READERS", "detect", "main_part", "parse", "read", "read_parts", "fail", "lines", "sample_names", "sample_path",
           "sample_sources", "sample_text", "acs", "failures", "ibstat", "iblinkinfo", "nccl_log", "nccl_tests",
           "nccl_topo", "nvlink", "pasted", "rdma_link", "rocm_smi", "smi_pcie", "topo"]
