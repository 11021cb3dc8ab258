"""Failures in NCCL logs and nccl-tests outputs: what failed, between whom, and what to run next.

``find(lines)`` returns one ``Failure`` per kind and pair of ends (repeats are counted): an InfiniBand
completion error (``NET/IB : Got completion ... with error 12``), a failed verbs call (``Call to ibv_...
failed``), a PyTorch watchdog timeout, NCCL's ``unhandled system error`` / ``unhandled cuda error`` /
``remote error``, a socket or shared-memory failure. The host, process and GPU come from the
``host:pid:tid [gpu]`` prefix, the rank from that process's ``comm ... rank R nranks N`` line, the
device and port from the ``NET/IB : Using [0]mlx5_0:1/IB`` line of the same host, the NCCL error
code from the ``-> N`` lines NCCL prints as the error climbs its call stack. What a failure usually
means and the next command to run are in ``MEANING`` and ``NEXT``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

NCCL_CODES = {1: "unhandled cuda error", 2: "unhandled system error", 3: "internal error", 4: "invalid argument",
              5: "invalid usage", 6: "remote error", 7: "in progress"}
IBV_STATUS = {4: "IBV_WC_LOC_PROT_ERR", 5: "IBV_WC_WR_FLUSH_ERR", 10: "IBV_WC_REM_ACCESS_ERR",
              11: "IBV_WC_REM_OP_ERR", 12: "IBV_WC_RETRY_EXC_ERR", 13: "IBV_WC_RNR_RETRY_EXC_ERR"}
_PREFIX = re.compile(r"^\s*(?:\[\d+\]\s*)?([\w.-]{1,128}):(\d{1,9}):(\d{1,9}) \[(\d{1,4})\]")
_TEST_HOST = re.compile(r"^\s*([\w.-]{1,128}): Test (?:NCCL|CUDA|HIP) failure")
_GIDS = re.compile(r"localGid ([0-9a-fA-F:.]{2,64}) remoteGids ?([0-9a-fA-F:.]{2,64})")
_COMM = re.compile(r"\bcomm 0x[0-9a-f]+ rank (\d+) nranks (\d+)")
_IB_USING = re.compile(r"NET/IB ?: Using ((?:\[\d+\]\S+ ?)+)")
_IB_DEV = re.compile(r"\[\d+\]([\w.-]+):(\d+)/(\w+)")
_COMPLETION = re.compile(r"Got completion (?:from peer ([^\s<]{1,64})(?:<\d+>)? )?with (?:error |status=)"
                         r"(?:([A-Z_]{1,40})\()?(\d{1,4})")
_VENDOR = re.compile(r"vendor[ _]err(?:or)? ?=?(\d{1,6})")
_HCA = re.compile(r"\bhca ([\w.-]+)")
_IBV_CALL = re.compile(r"Call to (ibv_\w{1,40}) failed(?: with error ([^\n]{0,80}?))?\s*$")
_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)")
_TIMEOUT_MS = re.compile(r"Timeout\(ms\)=(\d+)")
_RANK = re.compile(r"\[Rank (\d+)\]")
_CODE_CLIMB = re.compile(r"NCCL INFO [\w/.]+:\d+ -> (\d)\b")
# ncclGetErrorString (src/init.cc) and NCCL's RAS client (src/ras/client_support.cc) print these, in lower
# or capital case; nccl-tests quotes them ('unhandled cuda error / <last error>'); RCCL hipifies 'cuda' to 'hip'
_NCCL_ERROR = re.compile(r"NCCL Error (\d)|(unhandled (?:system|cuda|hip) error|internal error|remote process "
                         r"exited or there was a network error|remote process error|invalid usage|invalid argument)",
                         re.IGNORECASE)
# nccl-tests' CUDACHECK (src/common.h): 'HOST: Test CUDA failure common.cu:892 'invalid argument'' (the first
# releases: 'Cuda failure file:line '...''), rccl-tests' HIPCHECK the same with HIP: cudaGetErrorString's text,
# not an NCCL error, so no NCCL code goes with it
_CUDA_FAILURE = re.compile(r"(?:CUDA|Cuda|HIP|Hip|hip) failure (\S{1,200}) '([^']{0,200})'")
_WRONG = re.compile(r"Out of bounds values : (\d{1,12}) FAILED|#wrong=(\d{1,12})")
_OFI = re.compile(r"NET/OFI.{0,80}(?:Couldn't find any optimal provider|Unable to find a usable provider|"
                  r"fi_getinfo\(?\)? call failed|No providers? (?:found|available)|No eligible providers)|"
                  r"OFI fi_getinfo\(\) call failed", re.IGNORECASE)
_SOCKET = re.compile(r"Connection (?:closed by remote peer|refused|reset by peer|timed out)|socketPollConnect|"
                     r"Connect to (\S+) failed|bootstrap.{0,40}(?:failed|timeout)")
_SHM = re.compile(r"Error while creating shared memory segment|shm_open|No space left on device")
_PEER_ADDR = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3})(?:<\d+>)?")

MEANING = {
    "ib_completion_error": "the NIC gave up on a transfer to its peer. Status 12 (retry count exceeded) means the "
                           "two NICs cannot reach each other (a port down, RoCE v2 on the wrong GID or subnet, no "
                           "route) or the fabric drops packets (a bad cable, congestion, PFC/ECN off on RoCE)",
    "ibv_call_failed": "a verbs call to the RDMA NIC failed: creating a queue pair runs out of locked memory or "
                       "device access (containers: ulimit -l, /dev/infiniband, IPC_LOCK); moving it to ready fails "
                       "when the peer's address is unreachable (RoCE GID index, route, MTU)",
    "watchdog_timeout": "a collective did not finish within the timeout: a rank hung or died, ranks called "
                        "collectives in different orders, or the network stalled under the collective",
    "system_error": "a system call or library NCCL needs failed: often /dev/shm too small in a container, no "
                    "usable network interface, or an RDMA device that cannot be opened; the WARN line before it "
                    "names the call",
    "cuda_error": "a CUDA call failed: an NCCL built for another CUDA than the driver's, or a GPU in a bad state",
    "remote_error": "a peer process exited or its network connection broke: the first failure is in another "
                    "rank's log",
    "socket_error": "a TCP connection between ranks failed (bootstrap or NET/Socket): a firewall, the wrong "
                    "interface, or a peer that exited",
    "shm_error": "shared memory for the intra-node transport could not be created: /dev/shm is too small "
                 "(Docker's default is 64 MB)",
    "nccl_failure": "the test stopped on an NCCL error; the WARN lines before it name the cause",
    "wrong_results": "nccl-tests checked the results and found wrong values (#wrong > 0, 'Out of bounds values "
                     "... FAILED'): data was corrupted on the way, usually a P2P path that does not work (ACS or an "
                     "IOMMU on PCIe, a faulty NVLink) or memory errors on a GPU",
    "ofi_no_provider": "the libfabric plugin (aws-ofi-nccl) found no usable provider: the EFA devices are not visible "
                       "(not attached, not passed into the container) or libfabric was built without EFA",
}
NEXT = {
    "ib_completion_error": "ibstat (IB) or rdma link (RoCE) on both hosts: every port Active; then ibv_rc_pingpong "
                           "-d DEVICE -g GID_INDEX between the two hosts; on RoCE set NCCL_IB_GID_INDEX to the RoCE v2 "
                           "GID (show_gids) and check the MTU is the same on both ends; raise NCCL_IB_TIMEOUT only "
                           "when pingpong works",
    "ibv_call_failed": "ulimit -l (unlimited), ls /dev/infiniband inside the container, ibv_devinfo; for "
                       "ibv_modify_qp: ibv_rc_pingpong between the hosts, NCCL_IB_GID_INDEX on RoCE, the MTU",
    "watchdog_timeout": "find the rank that is behind (its SeqNum is lower, or it is missing), py-spy dump it; "
                        "rerun with NCCL_DEBUG=INFO and TORCH_NCCL_TRACE_BUFFER_SIZE set; then ibstat / rdma link",
    "system_error": "rerun with NCCL_DEBUG=INFO; df -h /dev/shm (docker --ipc=host or --shm-size); "
                    "NCCL_SOCKET_IFNAME to the right interface; ibv_devinfo",
    "cuda_error": "nvidia-smi; compare the NCCL version's +cudaX.Y with the driver's CUDA; NCCL_DEBUG=INFO",
    "remote_error": "read the log of the other rank or host first; then ibstat / rdma link and ibv_rc_pingpong "
                    "between the two hosts",
    "socket_error": "NCCL_SOCKET_IFNAME to the interface the hosts share; open the firewall between the hosts "
                    "(nc -zv HOST PORT); check the peer did not exit first",
    "shm_error": "df -h /dev/shm; docker run --ipc=host (or --shm-size=1g); NCCL_SHM_DISABLE=1 as a slow workaround",
    "nccl_failure": "rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) and read the first WARN line",
    "wrong_results": "rerun with NCCL_P2P_DISABLE=1: if the errors go, check ACS (lspci -vvv | grep ACSCtl) and the "
                     "IOMMU; nvidia-smi -q -d ECC,ROW_REMAPPER; nvidia-smi nvlink -e",
    "ofi_no_provider": "fi_info -p efa (lists the EFA devices); in a container pass /dev/infiniband; FI_PROVIDER=efa; "
                       "check the aws-ofi-nccl and libfabric versions",
}


@dataclass(frozen=True)
class Failure:
    kind: str
    line: int
    host: str | None = None
    gpu: str | None = None
    rank: int | None = None
    peer: str | None = None
    device: str | None = None
    port: str | None = None
    status: str | None = None
    code: int | None = None
    detail: str = ""
    count: int = 1

    def to_json(self) -> dict:
        return {"kind": self.kind, "line": self.line, "host": self.host, "gpu": self.gpu, "rank": self.rank,
                "peer": self.peer, "device": self.device or "not in the file", "port": self.port or "not in the file",
                "status": self.status, "nccl_error_code": self.code, "detail": self.detail, "count": self.count}


def _prefix(line):
    m = _PREFIX.match(line)
    if m:
        return m.group(1), m.group(2), m.group(4)
    t = _TEST_HOST.match(line)
    return (t.group(1), None, None) if t else (None, None, None)


def _classify(line):
    """(kind, peer, status, code, detail) of a failure line, or None."""
    if "completion" in line:
        m = _COMPLETION.search(line)
        if m:
            code = int(m.group(3))
            name = m.group(2) or IBV_STATUS.get(code, "")
            vendor = _VENDOR.search(line)
            hca = _HCA.search(line)
            gids = _GIDS.search(line)
            detail = f"status {code}{f' ({name})' if name else ''}" + (f", vendor err {vendor.group(1)}" if vendor else "")
            if gids:
                detail += f", local GID {gids.group(1)}, remote GID {gids.group(2)}"
            return "ib_completion_error", m.group(1), detail, None, hca.group(1) if hca else None
    if "Call to ibv_" in line:
        m = _IBV_CALL.search(line)
        if m:
            return "ibv_call_failed", None, f"{m.group(1)} failed" + (f" ({m.group(2)})" if m.group(2) else ""), None, None
    if "Watchdog caught" in line:
        m = _WATCHDOG.search(line)
        if m:
            t = _TIMEOUT_MS.search(line)
            return ("watchdog_timeout", None, f"{m.group(2)} SeqNum {m.group(1)}" +
                    (f" past its timeout of {int(t.group(1)) / 1000:g} s" if t else ""), None, None)
    if "wrong" in line or "Out of bounds" in line:
        m = _WRONG.search(line)
        if m and int(m.group(1) or m.group(2)) > 0:
            return "wrong_results", None, f"{int(m.group(1) or m.group(2))} wrong value(s)", None, None
    if "OFI" in line:
        m = _OFI.search(line)
        if m:
            return "ofi_no_provider", None, m.group(0)[:100], None, None
    if "failure" in line and ("CUDA" in line or "Cuda" in line or "HIP" in line or "ip failure" in line):
        m = _CUDA_FAILURE.search(line)
        if m:
            api = "HIP" if "ip failure" in m.group(0) or "HIP" in m.group(0) else "CUDA"
            return "cuda_error", None, f"{api} error '{m.group(2)}' at {m.group(1)}", None, None
    if "rror" in line or "NCCL failure" in line or "RROR" in line or "nvalid" in line:
        m = _NCCL_ERROR.search(line)
        if m:
            text = (m.group(2) or "").lower().replace(" hip ", " cuda ")
            # a code only where the text prints one: 'NCCL Error 2', or NCCL's own error string quoted by an NCCL
            # failure or WARN line (ncclGetErrorString maps each code to one string); a bare 'invalid argument'
            # elsewhere may be any library's
            ncclish = "NCCL" in line or "ncclUnhandled" in line or "ncclInvalid" in line or "ncclSystem" in line
            named = next((c for c, t in NCCL_CODES.items() if t == text), 6 if text.startswith("remote") else None)
            code = int(m.group(1)) if m.group(1) else (named if ncclish else None)
            kind = {1: "cuda_error", 2: "system_error", 6: "remote_error"}.get(code if code else named, "nccl_failure")
            return kind, None, NCCL_CODES.get(code, text), code, None
    if "WARN" in line or "rror" in line:
        if _SHM.search(line):
            return "shm_error", None, line.split("WARN", 1)[-1].strip()[:120], None, None
        m = _SOCKET.search(line)
        if m:
            peer = _PEER_ADDR.search(line)
            return "socket_error", peer.group(1) if peer else None, m.group(0)[:80], None, None
    return None


def find(numbered) -> list[Failure]:
    """The failures of a log given as (line number, line) pairs, one per kind and pair of ends, in order."""
    ranks, devices, found, order = {}, {}, {}, []
    pending_code: dict = {}
    for no, line in numbered:
        if len(line) > 4000:
            line = line[:4000]
        c = _classify(line)
        if c is None and "nranks" not in line and "NET/IB" not in line and " -> " not in line:
            continue  # nothing on this line for a failure: skip the prefix
        host, pid, gpu = _prefix(line)
        if "nranks" in line:
            m = _COMM.search(line)
            if m and host:
                ranks[(host, pid)] = int(m.group(1))
        if "NET/IB" in line and "Using" in line:
            m = _IB_USING.search(line)
            if m and host is not None:
                devices.setdefault(host, _IB_DEV.findall(m.group(1)))
            elif m:
                devices.setdefault(None, _IB_DEV.findall(m.group(1)))
        if " -> " in line and (host, pid) in pending_code:
            m = _CODE_CLIMB.search(line)
            if m:
                key = pending_code.pop((host, pid))
                found[key] = replace(found[key], code=int(m.group(1)))
        if c is None:
            continue
        kind, peer, detail, code, hca = c
        rank = ranks.get((host, pid))
        if kind == "watchdog_timeout":
            r = _RANK.search(line)
            rank = int(r.group(1)) if r else rank
        key = (kind, host, peer) if kind != "watchdog_timeout" else (kind, detail.split(" past")[0])
        if key in found:
            f = found[key]
            ranks_seen = f.rank if kind != "watchdog_timeout" else f.detail
            found[key] = replace(f, count=f.count + 1,
                                 detail=f.detail if kind != "watchdog_timeout" or rank is None or f"rank {rank}" in
                                 ranks_seen else f.detail + f", rank {rank}")
            continue
        if kind == "watchdog_timeout" and rank is not None:
            detail = f"{detail}; ranks that timed out: rank {rank}"
        dev_list = devices.get(host) or devices.get(None) or []
        device = hca or (dev_list[0][0] if len(dev_list) == 1 else None)
        port = dev_list[0][1] if len(dev_list) == 1 else None
        found[key] = Failure(kind=kind, line=no, host=host, gpu=gpu, rank=rank, peer=peer, device=device, port=port,
                             status=detail if kind == "ib_completion_error" else None, code=code, detail=detail)
        order.append(key)
        if code is None and host is not None:
            pending_code[(host, pid)] = key
    out = []
    for key in order:
        f = found[key]
        if f.device is None and (devices.get(f.host) or devices.get(None)):
            names = ", ".join(f"{d}:{p}" for d, p, _ in (devices.get(f.host) or devices.get(None)))
            f = replace(f, device=f"one of {names}")
        out.append(f)
    return out


def finding(f: Failure, link_layers=()) -> str:
    """One line: what failed, between whom, on which device and port, the NCCL code, the meaning, the next step."""
    where = f.host or ("the job" if f.kind == "watchdog_timeout" else "host not in the file")
    if f.rank is not None and f.kind != "watchdog_timeout":
        where += f" (rank {f.rank}"
        where += f", GPU {f.gpu})" if f.gpu is not None else ")"
    elif f.gpu is not None:
        where += f" (GPU {f.gpu})"
    other = f" and peer {f.peer}" if f.peer else ""
    times = f" ({f.count} times)" if f.count > 1 else ""
    code = f"NCCL error code {f.code} ({NCCL_CODES.get(f.code, '?')})" if f.code else "NCCL error code not in the file"
    dev = f"device {f.device or 'not in the file'}, port {f.port or 'not in the file'}"
    nxt = NEXT[f.kind]
    if f.kind in ("ib_completion_error", "ibv_call_failed") and "RoCE" in link_layers:
        nxt += "; this log's ports run RoCE: NCCL_IB_GID_INDEX first"
    return (f"FAILED ({f.kind.replace('_', ' ')}, line {f.line}): {where}{other}{times}: {f.detail}; {dev}; {code}. "
            f"Usually: {MEANING[f.kind]}. Next: {nxt}")
