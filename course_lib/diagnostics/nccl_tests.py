"""nccl-tests and rccl-tests outputs: the result rows, the collective, the ranks, and runs that failed.

A run's output may lack its header (a wrapper script or an MPI launcher printed only the rows):
the collective then comes from the launcher line (``all_reduce_perf -b 1K ...``, ``-t all_gather``)
or from the closing ``# Collective test concluded: ...`` line, the ranks from the ``# Rank`` lines,
else from ``-np`` x ``-g`` on the command line. A run that stops after its header failed before its
first size: ``failed_before_first_size`` says so and ``last_words`` holds what was printed last.
A row whose time or bandwidth is negative or not a finite number (a damaged copy) is refused and
counted in ``refused_rows``, never passed on. Times in us; algbw and busbw in GB/s (1e9 B/s), as
nccl-tests prints them; the out-of-place columns are used.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .. import collectives, validate
from . import failures as _failures
from . import pasted
from .json_results import read_json, version_of_code  # noqa: F401  (version_of_code: part of this module's API)

_MPI_PREFIX = re.compile(r"\[\d+(?:,\d+)?\](?:<std(?:out|err)>)?:?")
_RANK = re.compile(r"#?\s*Rank\s+(\d{1,7})(?:\s+Group\s+\d+)?(?:\s+Pid\s+\d+)?\s+on\s+(\S+)\s+device\b")
_ENV = re.compile(r"\bNCCL_(ALGO|PROTO)\s*=\s*([A-Za-z0-9_,^]+)")
# 'NCCL version 2.19.3', 'RCCL version : 2.18.3' / 'RCCL version 2.20.5+hip6.2', and nccl-tests' newer header
# '# nccl-tests version 2.17.1 nccl-headers=22602 nccl-library=22602': NCCL_VERSION_CODE, a number
_VERSION = re.compile(r"(?:NCCL version|nccl-library=|RCCL version)\s{0,8}:?\s{0,8}([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})")
_VERSION_CODE = re.compile(r"nccl-library=(\d{4,6})\b")
_NGPUS = re.compile(r"\bnGpus\s+(\d+)")
_STARTING = re.compile(r"Collective test (?:starting|concluded):\s*(\w+)")
_HEADER = re.compile(r"^#?\s*(?:nThread \d+ nGpus|Collective test starting|Using devices|rccl-tests: Version|"
                     r"NCCL Tests compiled|\s*size\s+count\s+type|\s*bytes\s+N\s+type|\s*\(B\)\s+\(elements\))")
_FAILURE = re.compile(r"NCCL failure|Test failure|NCCL WARN|Cuda failure|error|Error|failed|Aborted|Killed")
_WORD = re.compile(r"[A-Za-z_]+")
# the closing lines of a run that finished: ' Out of bounds values : 0 OK', ' Avg bus bandwidth    : 186.5 '
# (a '#' before them from nccl-tests 2.x on; common.cu)
_AVG = re.compile(r"Avg bus bandwidth\s{0,40}:\s{0,20}([0-9][0-9.]{0,20}(?:[eE][+-]?\d{1,3})?)")
_CLOSING = ("Avg bus bandwidth", "Out of bounds values", "Collective test concluded")
# a rank line's index, host and pid ('#  Rank  0 Group  0 Pid  41233 on gpu-a01 device 0', older '#   Rank  0 Pid
# 1234 on host device 0' and '#   Rank  0 on host device 0'); used to tell one job from several pasted together
_RANK_PID = re.compile(r"Rank\s+(\d{1,7})(?:\s+Group\s+\d+)?(?:\s+Pid\s+(\d+))?\s+on\s+(\S+)")
_UNKNOWN_TOOL = "nccl-tests or rccl-tests (the output does not say which)"


def collective_id(name: str) -> str:
    """``all_reduce_perf`` / ``alltoall`` / ``AllGather`` -> the course's collective id (ValueError if none)."""
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", str(name)).lower()
    text = text.replace("alltoall", "all_to_all").replace("allreduce", "all_reduce").replace("allgather", "all_gather")
    text = text.replace("reducescatter", "reduce_scatter").removesuffix("_perf").removesuffix("_perf_mpi")
    return validate.choice("collective", text, collectives.ids())


@dataclass(frozen=True)
class NcclTestsRun:
    """One nccl-tests / rccl-tests output (see the module docstring); ``*_from`` say where a value was read."""

    tool: str
    collective: str | None
    collective_from: str
    ranks: int | None
    ranks_from: str
    hosts: tuple[str, ...]
    rows: tuple[dict, ...]
    env: dict
    nccl_version: str | None
    gpus_per_process: int | None
    failed_before_first_size: bool
    last_words: str | None
    refused_rows: tuple[int, ...]
    command: dict
    failures: tuple = ()  # failures.Failure found in the output (NCCL WARN lines, "Test NCCL failure ...")
    avg_busbw: float | None = None     # the '# Avg bus bandwidth : X' line (GB/s), where the copy has it
    cut_after: int | None = None       # the last size of a copy that ends without the run's closing lines
    last_row_partial: bool = False     # the copy ends inside a row (fewer columns than the others)
    error_column: str = "not in the file"       # '#wrong' (a count), 'max error' (older releases: 'error'/'res')
    jobs: int = 1                      # separate jobs pasted together (each lists its own rank 0)

    def as_dict(self) -> dict:
        """The dict ``compare`` and the chapters read (rows as dicts of size, time_us, algbw, busbw)."""
        return {"collective": self.collective, "ranks": self.ranks, "hosts": list(self.hosts),
                "rows": [dict(r) for r in self.rows], "env": dict(self.env), "nccl_version": self.nccl_version,
                "gpus_per_process": self.gpus_per_process, "ranks_from": self.ranks_from,
                "collective_from": self.collective_from, "tool": self.tool,
                "failed_before_first_size": self.failed_before_first_size, "last_words": self.last_words,
                "refused_rows": list(self.refused_rows), "command": dict(self.command), "avg_busbw": self.avg_busbw,
                "cut_after": self.cut_after, "jobs": self.jobs}

    def to_json(self) -> dict:
        big = max(self.rows, key=lambda r: r["size"]) if self.rows else None
        return {"tool": self.tool, "collective": self.collective or "not in the file",
                "collective_from": self.collective_from, "ranks": self.ranks, "ranks_from": self.ranks_from,
                "hosts": list(self.hosts), "sizes": len(self.rows), "nccl_version": self.nccl_version or "not in the file",
                "largest_size": big["size"] if big else None, "busbw_at_largest_gb_s": big["busbw"] if big else None,
                "failed_before_first_size": self.failed_before_first_size, "last_words": self.last_words,
                "refused_rows": list(self.refused_rows), "env": dict(self.env),
                "avg_busbw_gb_s": self.avg_busbw, "cut_after": self.cut_after, "last_row_partial": self.last_row_partial,
                "error_column": self.error_column, "jobs": self.jobs,
                "failures": [f.to_json() for f in self.failures]}


def _row(tokens: list[str]):
    """(size, time_us, algbw, busbw) of a result row's tokens, or None where the line is not a row;
    ``"refused"`` where it is a row whose numbers are damaged (negative or not finite)."""
    if len(tokens) < 6 or not (tokens[0].isdigit() and tokens[1].isdigit()) or len(tokens[0]) > 20:
        return None
    rest = [t for t in tokens[3:] if not _WORD.fullmatch(t) or t == "N/A"]
    nums, absent = [], []   # absent: nccl-tests printed N/A (no bandwidth to show), not a damaged number
    for t in rest:
        try:
            nums.append(float(t))
        except ValueError:
            nums.append(float("nan"))
        absent.append(t == "N/A")
    if len(nums) % 2 == 1:  # the root column: out-of-place and in-place columns come in equal groups after it
        nums, absent = nums[1:], absent[1:]
    if len(nums) < 3:
        return None
    time_us, algbw, busbw = nums[:3]
    # a time must be a finite, non-negative number; a bandwidth too, unless printed as N/A (kept as NaN:
    # null in JSON, and judged from the time)
    if not (math.isfinite(time_us) and time_us >= 0):
        return "refused"
    if not all(gone or (math.isfinite(v) and v >= 0) for v, gone in zip((algbw, busbw), absent[1:3])):
        return "refused"
    wrong = nums[3] if len(nums) > 3 and not absent[3] and math.isfinite(nums[3]) and nums[3] > 0 else 0
    col = rest[len(rest) - len(nums) + 3] if len(nums) > 3 else ""
    exp = "e" in col or "E" in col  # '0e+00': a max error printed with %le, not a count
    return int(tokens[0]), time_us, algbw, busbw, wrong, len(nums), exp


def _int(value):
    try:
        n = int(str(value))
    except ValueError:
        return None
    return n if 0 < n < 10**7 else None


def busbw_factors(rows) -> list[float]:
    """busbw / algbw of the rows that show both (a bandwidth printed N/A is NaN) with algbw >= 1 GB/s, sorted:
    the collective's busbw factor at the run's rank count, what the collective or the ranks are inferred from."""
    return sorted(r["busbw"] / r["algbw"] for r in rows
                  if math.isfinite(r["algbw"]) and math.isfinite(r["busbw"]) and r["algbw"] >= 1.0)


def median_factor(rows) -> float | None:
    """The median of :func:`busbw_factors` (the middle one; the upper of the two middle ones for an even count:
    always a factor a row showed), or None where no row shows both bandwidths. Both inferences below use it."""
    factors = busbw_factors(rows)
    return factors[len(factors) // 2] if factors else None


def _from_bandwidths(rows, ranks):
    """The collective whose busbw/algbw factor at ``ranks`` matches the rows' (only where exactly one does)."""
    f = median_factor(rows)
    if f is None:
        return None, "not in the file"
    fits = {collectives.get(c).busbw_factor(ranks) for c in collectives.ids()
            if abs(collectives.get(c).busbw_factor(ranks) - f) < 0.02 * max(f, 1e-9)}
    names = [c for c in collectives.ids() if collectives.get(c).busbw_factor(ranks) in fits]
    if len(fits) == 1 and len(names) == 1:
        return names[0], f"inferred: busbw/algbw = {f:.3g} is {names[0]}'s factor at {ranks} ranks"
    return None, "not in the file"


def ranks_from_bandwidths(collective, rows):
    """Rank count implied by the rows' busbw / algbw (:func:`median_factor`) for ``collective``, or None.

    busbw = algbw x factor(p), and every collective's factor is top x (p-1)/p with top = 2 x factor(2)
    (all-reduce: 2(p-1)/p; all-gather, reduce-scatter, all-to-all: (p-1)/p), so p = top / (top - factor).
    None where the factor does not depend on p (broadcast, reduce) or no whole p >= 2 gives it.
    """
    coll = collectives.get(collective)
    f = median_factor(rows)
    if f is None or coll.busbw_factor(2) == coll.busbw_factor(3):
        return None
    top = 2 * coll.busbw_factor(2)
    if f >= top * 0.999:
        return None
    p = int(round(top / (top - f)))
    return p if p >= 2 and abs(coll.busbw_factor(p) - f) < 0.02 else None


def _from_json(text, data: dict) -> NcclTestsRun:
    """The run that a JSON output describes (see ``read_json``)."""
    cmd = pasted.command_facts([" ".join(data["args"])]) if data["args"] else {}
    collective, collective_from = None, "not in the file"
    for name, where in ((cmd.get("test"), "JSON args"), (data["name"], "JSON record")):
        if name and collective is None:
            try:
                collective, collective_from = collective_id(name), where
            except ValueError:
                pass
    ranks = max(data["ranks"]) + 1 if data["ranks"] else None
    tool = "rccl-tests" if "rccl" in text[:4096].lower() or cmd.get("suite") else "nccl-tests"
    wrong = ()
    if data["wrong"]:
        wrong = (_failures.Failure(kind="wrong_results", line=1, count=len(data["wrong"]),
                                   detail=f"{sum(data['wrong']):g} wrong value(s) in the nwrong field of "
                                          f"{len(data['wrong'])} record(s)"),)
    return NcclTestsRun(tool=tool, collective=collective, collective_from=collective_from, ranks=ranks,
                        ranks_from="highest rank index in the JSON rank records + 1" if ranks else "not in the file",
                        hosts=tuple(sorted(data["hosts"])), rows=tuple(data["rows"]), env={},
                        nccl_version=data["version"], gpus_per_process=None, failed_before_first_size=False,
                        last_words=None, refused_rows=(), command=cmd, failures=wrong,
                        error_column="#wrong" if data["wrong"] else "not in the file")


def parse(text) -> NcclTestsRun:
    """Read an nccl-tests / rccl-tests output; ValueError when it has neither result rows nor a header."""
    p = pasted.read(text)
    collective, collective_from = None, "not in the file"
    hosts, rank_lines, rows, refused, env, top_rank, elided = [], 0, [], [], {}, -1, False
    wrong_rows: list = []
    after_ranks = True  # something (the column header, a row) came after the last rank line
    version = ngpus = avg = None
    tool, header_seen, last_words = p.command.get("suite", _UNKNOWN_TOOL), False, None
    error_column, time_in_ms, closed, widths = "not in the file", False, False, []
    fragment = 0
    rank_ids: dict = {}  # rank index -> the distinct (pid, host) that listed it
    for no, raw in enumerate(p.text.split("\n"), start=1):
        line = _MPI_PREFIX.sub(" ", raw).strip() if "[" in raw else raw.strip()
        if not line:
            continue
        m = _STARTING.search(line)
        if m and collective is None:
            try:
                collective, collective_from = collective_id(m.group(1)), "header" if "starting" in line else "trailer"
            except ValueError:
                pass
        if "rccl-tests" in line or "RCCL version" in line or "AMD Instinct" in line:
            tool = "rccl-tests"
        elif tool == _UNKNOWN_TOOL and ("NCCL" in line or "NVIDIA" in line or "Tesla" in line or "GeForce" in line):
            tool = "nccl-tests"
        for key, value in _ENV.findall(line):
            env.setdefault(key.lower(), value)
        vm = _VERSION.search(line) if "ersion" in line or "library" in line else None
        if vm and version is None:
            version = vm.group(1)
        elif version is None and "nccl-library=" in line:
            cm = _VERSION_CODE.search(line)
            version = version_of_code(int(cm.group(1))) if cm else None
        if ngpus is None and "nGpus" in line:
            gm = _NGPUS.search(line)
            ngpus = int(gm.group(1)) if gm else None
        if "Avg bus" in line or "Out of bounds" in line or "concluded" in line:
            if any(c in line for c in _CLOSING):
                closed = True
                am = _AVG.search(line)
                if am and avg is None:
                    avg = float(am.group(1))
        if "Rank" in line:
            found = _RANK.findall(line)
            if found:
                for rid, pid, host in _RANK_PID.findall(line):
                    rank_ids.setdefault(int(rid), set()).add((pid, host))
                rank_lines += len(found)
                hosts.extend(h for _, h in found)
                top_rank = max([top_rank] + [int(r) for r, _ in found])
                after_ranks = False
                header_seen = True
                continue
        if "..." not in line:
            after_ranks = True  # a line that is not a rank line: the rank list ended before the copy did
        if _HEADER.match(line):
            header_seen = True
            if "#wrong" in line:       # nccl-tests from 2022 on: the count of wrong elements
                error_column = "#wrong"
            elif " error" in line or " res" in line:  # older releases: the largest difference found, %le
                error_column = "max error"
            if " bytes " in line and " N " in line:   # the first releases (2017) printed the time in ms
                time_in_ms = True
            continue
        if rank_lines and not rows and set(line.lstrip("#").strip()) <= {"."} and "..." in line:
            elided = True  # '#  ...' between rank lines: ranks were left out of the copy
            continue
        if line.startswith("#"):
            continue
        r = _row(line.split()) if line[:1].isdigit() or line[:1] == " " or line[0].isdigit() else None
        if r == "refused":
            refused.append(no)
        elif r is not None:
            after_ranks = True
            rows.append({"size": r[0], "time_us": r[1] * 1000 if time_in_ms else r[1], "algbw": r[2], "busbw": r[3]})
            widths.append((no, r[5]))
            counted = error_column == "#wrong" or (error_column == "not in the file" and not r[6])
            if r[4] and counted:
                wrong_rows.append((no, r[4]))
        elif _FAILURE.search(line) or header_seen:
            last_words = line[:300]
            if rows and line[:1].isdigit() and r is None:
                fragment = no  # the start of a row the copy cut short
    cmd = p.command
    if collective is None and "test" in cmd:
        try:
            collective, collective_from = collective_id(cmd["test"]), "launcher line"
        except ValueError:
            pass
    for name, value in cmd.get("env", {}).items():
        if name in ("NCCL_ALGO", "NCCL_PROTO"):
            env.setdefault(name[5:].lower(), value)
    g = ngpus or _int(cmd.get("gpus_per_process"))
    jobs = max((len(v) for v in rank_ids.values()), default=1)
    if jobs > 1 and rank_lines:  # rank 0 listed by several processes: several jobs pasted together
        per_job = top_rank + 1
        ranks, ranks_from = per_job, (f"highest rank index ({top_rank}) + 1, per job: rank 0 is listed {jobs} times "
                                      f"(by different processes), so these are {jobs} separate jobs of {per_job} "
                                      "rank(s) each, not one job")
    elif rank_lines and not after_ranks and not elided:  # the copy ends inside the rank list: a count would be low
        ranks, ranks_from = None, (f"not in the file: the copy ends in the rank list after {rank_lines} rank line(s), "
                                   f"so there are at least {max(rank_lines, top_rank + 1)}")
    elif rank_lines and top_rank + 1 > rank_lines:
        ranks, ranks_from = top_rank + 1, (f"highest rank index ({top_rank}); {rank_lines} rank lines shown"
                                           + (", the others elided" if elided else ""))
    elif rank_lines and top_rank + 1 < rank_lines:  # the same rank lines twice (a file pasted twice)
        ranks, ranks_from = top_rank + 1, f"highest rank index ({top_rank}) + 1; {rank_lines} rank lines, some repeated"
    elif rank_lines:
        ranks, ranks_from = rank_lines, "rank lines"
    elif _int(cmd.get("processes")):
        ranks, ranks_from = _int(cmd["processes"]) * (g or 1), "launcher line (-np" + (" x -g)" if g else ")")
    elif g and cmd.get("hosts"):
        ranks, ranks_from = g * len(cmd["hosts"]), "launcher line (-g x hosts)"
    else:
        ranks, ranks_from = None, "not in the file"
    if collective is None and ranks and rows:
        collective, collective_from = _from_bandwidths(rows, ranks)
    if not rows and not refused:
        data = read_json(pasted.clean(text))
        if data is not None:
            return _from_json(text, data)
    found = tuple(_failures.find(enumerate(p.text.split("\n"), start=1)))
    if not rows and not header_seen and not refused and any(
            "failure" in (line := p.text.split("\n")[f.line - 1]) and ("Test " in line or line.lstrip()[:4] in
                                                                         ("NCCL", "Cuda", "CUDA", "HIP "))
            for f in found):
        header_seen = True  # nccl-tests' own failure line (common.h) and nothing before it: the run failed at once
        last_words = last_words or p.text.split("\n")[found[0].line - 1].strip()[:300]
    if not rows and not header_seen and not refused:
        raise ValueError("text has no nccl-tests result rows (lines starting with size and count) and no "
                         "nccl-tests header")
    if rows and not time_in_ms and _times_are_ms(rows):
        rows = [dict(r, time_us=r["time_us"] * 1000) for r in rows]
    cut_after, partial = None, False
    if rows and not closed:
        cut_after = rows[-1]["size"]
        full = max(w for _, w in widths)
        partial = (widths[-1][1] < full and len(widths) > 1) or fragment > widths[-1][0]
    return NcclTestsRun(tool=tool, collective=collective, collective_from=collective_from, ranks=ranks,
                        ranks_from=ranks_from, hosts=tuple(sorted(set(hosts) or set(cmd.get("hosts", [])))),
                        rows=tuple(rows), env=env, nccl_version=version, gpus_per_process=g,
                        failed_before_first_size=not rows and header_seen, last_words=None if rows else last_words,
                        refused_rows=tuple(refused), command=cmd,
                        failures=found + _wrong_failure(wrong_rows), avg_busbw=avg, cut_after=cut_after, last_row_partial=partial,
                        error_column=error_column, jobs=jobs)


def _times_are_ms(rows) -> bool:
    """Whether the rows' time column is in ms (nccl-tests before 2019 printed deltaSec * 1e3), told from the rows
    themselves where no header says: algbw = size / time, so size / algbw is the time, and a printed time 1000
    times smaller than that (within 10 %, on the median of the rows with algbw >= 0.1 GB/s) is in ms."""
    ratios = sorted(r["size"] / (r["algbw"] * 1e3) / r["time_us"] for r in rows
                    if math.isfinite(r["algbw"]) and r["algbw"] >= 0.1 and r["time_us"] > 0)
    return bool(ratios) and abs(ratios[len(ratios) // 2] / 1000 - 1) < 0.1


def _wrong_failure(wrong_rows) -> tuple:
    """A failure for result rows whose #wrong column is not 0 (nccl-tests checked the data and it was wrong)."""
    if not wrong_rows:
        return ()
    total = sum(w for _, w in wrong_rows)
    return (_failures.Failure(kind="wrong_results", line=wrong_rows[0][0], count=len(wrong_rows),
                              detail=f"{total:g} wrong value(s) in the #wrong column of {len(wrong_rows)} row(s)"),)


def parse_nccl_tests(text) -> dict:
    """``parse(text).as_dict()`` for a run with result rows; ValueError when it has none.

    Keys: collective, ranks, hosts, rows ([{size, time_us, algbw, busbw}]), env (NCCL_ALGO / NCCL_PROTO found
    in the file), nccl_version, gpus_per_process, and where collective and ranks came from.
    """
    if not isinstance(text, str):
        raise ValueError("text must be the contents of an nccl-tests output file (str)")
    run = parse(text)
    if not run.rows:
        said = f"; it printed last: {run.last_words}" if run.last_words else ""
        raise ValueError(f"text has no nccl-tests result rows: the run failed before its first size{said}")
    return run.as_dict()
