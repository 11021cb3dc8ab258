"""A verdict with its reason: each finding's status (``ok``, ``warn``, ``fail``), its cause and the next command.

:class:`Finding` is a ``str`` (callers that join, search or print findings keep working) that also carries
``status``, ``cause`` and ``next_command``, the way cluster health checks report. :func:`busbw_verdict` judges an
nccl-tests run's busbw at its largest size against the band the course's model and range give for the machine
(``compare.assumptions`` / ``compare.prediction``, as ``python -m course_lib compare`` does): inside, ok; below
with NET/Socket or a fallback in the paste's NCCL log, fail; below without a known cause, warn.
"""
from __future__ import annotations

from .. import costmodel, hardware, units
from . import compare

STATUSES = ("ok", "warn", "fail")
DEFAULT_SYSTEM = "dgx-h100"  # priced when neither --system nor a topo -m matrix says what the machine is


class Finding(str):
    """A finding's text, with ``status`` (one of STATUSES), ``cause`` and ``next_command`` ("" where none)."""

    status: str
    cause: str
    next_command: str

    def __new__(cls, text, status: str = "ok", cause: str = "", next_command: str = ""):
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        obj = super().__new__(cls, text)
        obj.status, obj.cause, obj.next_command = status, str(cause), str(next_command)
        return obj

    def __reduce__(self):
        return (Finding, (str(self), self.status, self.cause, self.next_command))

    def relabel(self, text: str) -> Finding:
        """The same verdict with another text (a part's finding prefixed with the part's name)."""
        return Finding(text, self.status, self.cause, self.next_command)

    def line(self) -> str:
        """The text line inspect prints: the status word first."""
        return f"{self.status}: {self}"

    def to_json(self) -> dict:
        return {"status": self.status, "text": str(self), "cause": self.cause, "next_command": self.next_command}


def as_finding(text) -> Finding:
    """``text`` as a Finding: itself where it is one, else an ``ok`` finding (what was read, no problem named)."""
    return text if isinstance(text, Finding) else Finding(text)


def worst(findings) -> str:
    """The worst status among ``findings`` (ok where there are none)."""
    return max((as_finding(f).status for f in findings), key=STATUSES.index, default="ok")


def _machine(system, closest) -> tuple[hardware.System, str]:
    if system is not None:
        return system, f"{system.id} (given)"
    if closest is not None:
        return closest[0], f"{closest[0].id} (closest to the topo -m matrix in the paste)"
    return hardware.system(DEFAULT_SYSTEM), f"{DEFAULT_SYSTEM} (GUESSED: nothing in the paste names the machine; pass --system ID)"


def expected_busbw(run, system=None, closest=None, nccl_version=None) -> dict | None:
    """The course's expected busbw at ``run``'s largest size (an ``NcclTestsRun``): ``compare``'s model and range on
    ``system`` (a ``hardware.System``), else ``closest`` (``(system, gpus, reason)`` of a topo -m matrix), else a
    guessed catalog system; ``nccl_version`` (the paste's NCCL log's) where the run's header names none.
    None where the run has no rows or no collective."""
    if not run.rows or run.collective is None:
        return None
    parsed = run.as_dict()
    sys_, said = _machine(system, closest)
    assumed = compare.assumptions(parsed, sys_, run.collective)
    if not parsed["nccl_version"] and costmodel.nccl_version_stated(nccl_version):
        parsed["nccl_version"] = nccl_version
    pred, ranges = compare.prediction(parsed, sys_, run.collective, assumed)
    rows = compare.rows(parsed["rows"], pred, ranges)
    i = max(range(len(rows)), key=lambda k: rows[k]["size"])
    row, rng = rows[i], ranges[i]
    band = rng.busbw(row["predicted_busbw"]) if rng is not None and rng.known else None
    return {"collective": run.collective, "size": row["size"], "measured_busbw_gb_s": row["measured_busbw"], "predicted_busbw_gb_s": row["predicted_busbw"],
            "band_gb_s": list(band) if band else None, "unusual": row["unusual"], "ratio": row["ratio"],
            "algorithm": row["algorithm"], "protocol": row["protocol"], "system": sys_.id, "system_from": said,
            "nodes": assumed["nodes"][0], "gpus_per_node": min(assumed["gpus_per_node"][0], sys_.gpus_per_node),
            "nccl_version": pred.nccl_version, "fabric": assumed["fabric"][0], "nic_gbit_s": assumed["nic_gbit_s"][0],
            "nics_per_node": assumed["nics_per_node"][0],
            "guessed": [k for k, (_, why) in assumed.items() if "GUESSED" in why]}


def _fallback(log, log_span) -> tuple[str, str] | None:
    """(cause, next command) where the paste's NCCL log shows NET/Socket or a fallback, else None."""
    if log is None:
        return None
    if log.socket_fallback:
        where = f"line {log.socket_line}" if log.socket_line else log_span
        why = " (NET/IB : No device found)" if log.ib_missing else ""
        return (f"NCCL ran over NET/Socket{why} ({where}): see the NCCL log part",
                "ibv_devinfo; ls /sys/class/infiniband; NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see why IB was not loaded")
    if log.gdr is False:
        return (f"GPUDirect RDMA is disabled for {', '.join(log.gdr_disabled_hcas)} ({log_span}): see the NCCL log part",
                "lsmod | grep nvidia_peermem")
    if log.ofi_provider is not None and "efa" not in log.ofi_provider:
        return (f"the libfabric plugin runs provider {log.ofi_provider}, not EFA ({log_span})", "fi_info -p efa")
    return None


def busbw_verdict(expected: dict, log=None, log_span: str = "the NCCL log part") -> Finding:
    """The verdict on ``expected_busbw``'s numbers: ok inside the band, fail below it with a fallback in ``log``
    (an ``NcclLog`` of the same paste), warn below it without a known cause or above it."""
    e = expected
    size = units.format_bytes(e["size"], binary=True)
    where = (f"{e['nodes']} node(s) x {e['gpus_per_node']} GPUs" + (f" with {e['nics_per_node']} x {e['nic_gbit_s']:g} Gb/s "
             f"{e['fabric']}" if e["nodes"] > 1 else "") + f" on {e['system_from']}")
    measured, model = e["measured_busbw_gb_s"], e["predicted_busbw_gb_s"]
    if e["band_gb_s"]:
        low, high = e["band_gb_s"]
        expect = f"expected {low:.3g}-{high:.3g} GB/s (model {model:.3g}, {e['algorithm']}/{e['protocol']})"
        below, above = measured is not None and measured < low, measured is not None and measured > high
    else:
        expect = f"model {model:.3g} GB/s ({e['algorithm']}/{e['protocol']}; no range in this regime: 0.67-1.5 of it)"
        below = e["unusual"] is not None and e["ratio"] is not None and e["ratio"] > 1
        above = e["unusual"] is not None and e["ratio"] is not None and e["ratio"] < 1
    got = "busbw not in the file" if measured is None else f"{measured:g} GB/s"
    head = f"{size} {e['collective']} {got}, {expect} for {where}"
    guessed = f" (guessed: {', '.join(e['guessed'])})" if e["guessed"] else ""
    cause = _fallback(log, log_span)
    if measured is None:
        return Finding(f"{head}: warn; no busbw to judge", "warn", "the row has no busbw", "rerun nccl-tests to its end")
    if below and cause:
        return Finding(f"{head}: fail; {cause[0]}", "fail", cause[0], cause[1])
    if below:
        return Finding(f"{head}: warn; below the band, and nothing in the paste says why{guessed}", "warn",
                       "below the course's band without a known cause",
                       "python -m course_lib compare FILE --system ID (per size, with advice); nvidia-smi topo -m; ibstat")
    if above:
        return Finding(f"{head}: warn; above the band: the machine is faster than the course assumed{guessed}", "warn",
                       "above the course's band: the assumed system or fabric is likely not this machine's",
                       "python -m course_lib inspect FILE --system ID")
    return Finding(f"{head}: ok{guessed}", "ok", "inside the course's band")
