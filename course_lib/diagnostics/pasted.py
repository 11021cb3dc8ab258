"""Text as people paste it: colour codes, CRLF, a BOM, the prompt and the command before the output.

``read(text)`` returns a ``Pasted``: the text cleaned (ANSI escape codes, a byte-order mark and
carriage returns removed) with the leading lines that are not the tool's output (a shell prompt
with its command, ``+ mpirun ...`` traces, ssh warnings, ``Hello from`` lines, hostfile lines,
Open MPI's boxes of dashes) blanked, so that every reader's line numbers stay those of the file.
Nothing is dropped silently: ``skipped`` lists each blanked line and why, and ``command`` keeps
what the command lines said (the test's name, its sizes, ``-g``, the process count and hosts).
Every pattern here is linear in the line's length: a pasted line may hold 40,000 spaces.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import json_results

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
# tools whose command line may open a paste; the prompt before it is optional
TOOLS = ("nvidia-smi", "ibstat", "ibstatus", "ibv_devinfo", "ibv_devices", "lspci", "rdma", "iblinkinfo",
         "mpirun", "mpiexec", "mpirun.mpich", "mpirun.openmpi", "srun", "torchrun", "python", "python3", "sudo",
         "docker", "kubectl", "bash", "sh", "cat", "grep", "setpci", "env", "time", "numactl", "ibdev2netdev")
_PROMPT = re.compile(r"^\s*(?:\([\w.-]{1,40}\)\s*)?(?:\[[^\]]{1,120}\][#$%]|[\w.-]{1,64}@[\w.-]{1,64}"
                     r"(?::[^\s#$%]{0,200})?\s?[#$%]|[\w.-]{1,40}:[~/][^\s#$%]{0,200}\s?[#$%]|[$%>])(?:\s|$)")
_TRACE = re.compile(r"^\+{1,3} \S")
_PERF = re.compile(r"(?:^|[/\s])(\w+?)_perf(?:_mpi)?\b")
_FLAG = re.compile(r"(?:^|\s)(-[bgefntN]|--minbytes|--maxbytes|--ngpus|-np|--np|-n|-H|--host|-t|--test|-npernode|"
                   r"--npernode|--ntasks-per-node)"
                   r"(?:\s+|=)(\S+)")
_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+)=(\S+)")
_OMPI_BOX = re.compile(r"^-{20,}\s*$")
_NOISE = (  # (why, pattern) for launcher lines that are not the tool's output
    ("ssh warning", re.compile(r"^\s*(?:Warning: Permanently added|ssh: |Warning: .*known hosts)")),
    ("launcher greeting", re.compile(r"^\s*Hello from\b")),
    ("hostfile line", re.compile(r"^\s*[\w.-]+\s+slots=\d+(?:\s+max[-_]slots=\d+)?\s*$")),
    ("job scheduler", re.compile(r"^\s*(?:srun|salloc|sbatch): ")),
)


@dataclass(frozen=True)
class Pasted:
    """A pasted output after cleaning: ``text`` keeps one line per line of the file."""

    text: str
    skipped: tuple[tuple[int, str, str], ...] = ()   # (line, text, why)
    command: dict = field(default_factory=dict)      # what the command lines said

    def skipped_json(self) -> list[dict]:
        return [{"line": no, "text": text[:200], "why": why} for no, text, why in self.skipped]


# decorations a paste carries on every line, each anchored and bounded (linear in the line's length):
# Open MPI --tag-output '[1,0]<stdout>:' (with --timestamp-output a ctime before it), kubectl logs --timestamps
# and CloudWatch ISO 8601 stamps, syslog-style 'Mon DD HH:MM:SS', tmux/screen pane borders
# (--timestamp-output alone prints the ctime and '<stdout>:' without the '[job,rank]' tag)
_TAG = re.compile(r"^(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}(?:\[\d{1,9},\d{1,9}\])?|"
                  r"\[\d{1,9},\d{1,9}\])<std(?:out|err)>:")
# pdsh / clush put the host before every line ('node-1: ', '10.3.35.83: '), srun --label the task ('0: ').
# A host name here holds a digit (node-1, gpu07, ip-10-0-0-1, an IPv4 address), which no tool's own
# 'Key: value' line at the start of a line does (CA:, hca_id:, Switch:); a prefix is only stripped when it
# opens most of the paste's lines
_HOST = re.compile(r"^([A-Za-z0-9][\w.-]{0,62}): ")
_STAMP = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?(?:\s|\t|\|)")
_STAMP_ANYWHERE = re.compile(r"\n\d{4}-\d\d-\d\d[T ]\d\d:")
_BORDER = "│┃║"


def undecorate(line: str) -> str:
    """One line without the decorations of a launcher, a log collector or a terminal multiplexer."""
    if line[:1] in _BORDER:  # the border and the one space after it; the output's own indentation stays
        line = line[1:]
    if line.rstrip(" ")[-1:] in _BORDER and line.strip(" "):
        line = line.rstrip(" ")[:-1].rstrip(" ")
    if line[:2].isdigit():
        m = _STAMP.match(line)
        if m:
            line = line[m.end():]
    if line[:1] == "[" or line[:3].isalpha():
        m = _TAG.match(line)
        if m:
            line = line[m.end():]
    return line


def _host_of(line: str) -> str | None:
    m = _HOST.match(line)
    if m is None or not any(c.isdigit() for c in m.group(1)):
        return None
    return m.group(1)


def strip_hosts(text: str) -> str:
    """``text`` without the ``host: `` that a parallel shell (pdsh, clush, a launcher's tag) put before each line,
    where such a prefix opens at least half of the non-blank lines (and at least two); else ``text`` unchanged."""
    rows = text.split("\n")
    hosts = [_host_of(line[:80]) if line[:1].isalnum() else None for line in rows]
    filled = sum(1 for line in rows if line.strip())
    prefixed = sum(1 for h in hosts if h is not None)
    if prefixed < 2 or prefixed * 2 < filled:
        return text
    return "\n".join(line[len(h) + 2:] if h is not None else line for line, h in zip(rows, hosts))


def clean(text) -> str:
    """``text`` without a BOM, ANSI escape codes and carriage returns (CRLF, CR CR LF and a lone CR become LF),
    and without per-line decorations (``undecorate``: MPI tags, timestamps, pane borders)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be the output as a string, got {type(text).__name__}")
    text = text.lstrip("\ufeff")
    if "\r" in text:  # CRLF, and CR CR LF from a CRLF text copied once more through Windows
        text = "\n".join(line.rstrip("\r") for line in text.split("\n")).replace("\r", "\n")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if ">:" in text or "│" in text or "┃" in text or "║" in text or _STAMP_ANYWHERE.search(text) \
            or _STAMP.match(text[:64]):
        text = "\n".join(undecorate(line) for line in text.split("\n"))
    if ": " in text[:4096]:
        text = strip_hosts(text)
    return text.lstrip("\ufeff")


def is_command(line: str) -> str | None:
    """The command of a prompt or command line (``user@host:~$ ibstat`` -> ``ibstat``), else None."""
    m = _PROMPT.match(line)
    rest = line[m.end():].strip() if m else line.strip()
    if _TRACE.match(line):
        return line.lstrip("+ ").strip()
    words = rest.split(maxsplit=1)
    if not words:
        return "" if m else None
    first = words[0]
    while "=" in first and not first.startswith("-") and len(words) > 1:  # VAR=value tool ...
        words = words[1].split(maxsplit=1)
        first = words[0]
    name = first.rsplit("/", 1)[-1]
    if name in TOOLS or name.endswith("_perf") or name.endswith(".sh") or (m and not first.startswith("#")):
        return rest
    return None


def command_facts(commands: list[str]) -> dict:
    """What command lines say about an nccl-tests run: test, sizes, -g, processes, hosts, NCCL_ variables."""
    out: dict = {}
    named = [c for c in commands if _PERF.search(c)]
    for cmd in named or commands:  # a launcher line that names the test speaks for it, not `mpirun hostname`
        m = _PERF.search(cmd)
        if m and "test" not in out:
            out["test"] = m.group(1)
        perf_at = m.start() if m else len(cmd)
        for f in _FLAG.finditer(cmd):
            flag, value = f.group(1), f.group(2)
            key = {"-b": "min_bytes", "--minbytes": "min_bytes", "-e": "max_bytes", "--maxbytes": "max_bytes",
                   "-f": "factor", "-g": "gpus_per_process", "--ngpus": "gpus_per_process", "-np": "processes",
                   "--np": "processes", "-N": "processes_per_node", "-npernode": "processes_per_node",
                   "--npernode": "processes_per_node", "--ntasks-per-node": "processes_per_node", "-H": "hosts", "--host": "hosts",
                   "-t": "test", "--test": "test"}.get(flag)
            if flag == "-n":  # mpirun's process count before the test binary, nccl-tests' iterations after it
                key = "processes" if f.start() < perf_at else None
            if key in ("min_bytes", "max_bytes", "gpus_per_process", "processes") and f.start() < perf_at \
                    and key != "processes":
                continue  # a launcher's own -b/-e/-g before the test binary
            if key == "test" and (value[:1].isdigit() or not re.fullmatch(r"[A-Za-z_]+", value)):
                continue  # nccl-tests' own -t is its thread count
            if key == "hosts":
                out.setdefault(key, [h.split(":")[0] for h in value.split(",") if h])
            elif key is not None:
                out.setdefault(key, value)
        if "rccl" in cmd.lower():
            out.setdefault("suite", "rccl-tests")
        for name, value in _ENV.findall(cmd):
            out.setdefault("env", {}).setdefault(name, value)
    return out


def _later_commands(raw: list[str], done: set[int]) -> list[str]:
    """Launcher lines after the output started (a wrapper echoing its command, a command continued with
    a backslash over several lines): they still name the test, its sizes and its processes."""
    out, i = [], 0
    while i < len(raw):
        line = raw[i]
        if i + 1 not in done and ("_perf" in line or "mpirun" in line or "srun" in line) \
                and (is_command(line) is not None or "build/" in line):
            m = _PROMPT.match(line)
            parts = [line[m.end():] if m else line]
            while parts[-1].rstrip().endswith("\\") and i + 1 < len(raw) and len(parts) < 64:
                i += 1
                m = _PROMPT.match(raw[i])
                parts.append(raw[i][m.end():] if m else raw[i])
            out.append(" ".join(p.rstrip().rstrip("\\").strip() for p in parts))
        i += 1
    return out


def read(text) -> Pasted:
    """Clean ``text`` and blank its leading non-output lines (see the module docstring)."""
    lines = clean(text).split("\n")
    skipped, commands = [], []
    in_box = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if in_box:
            skipped.append((i + 1, line, "Open MPI message"))
            in_box = not _OMPI_BOX.match(stripped)
            lines[i] = ""
            continue
        if not stripped:
            continue
        why = None
        cmd = is_command(line)
        if cmd is not None:
            why = "prompt or command line"
            if cmd:
                commands.append(cmd)
        elif _OMPI_BOX.match(stripped):
            why, in_box = "Open MPI message", True
        else:
            why = next((w for w, pattern in _NOISE if pattern.match(line)), None)
        if why is None:
            break
        skipped.append((i + 1, line, why))
        lines[i] = ""
    for i in range(len(lines) - 1, -1, -1):  # a prompt left at the end of a paste
        if not lines[i].strip():
            continue
        m = _PROMPT.match(lines[i])
        if m and not lines[i][m.end():].strip():
            skipped.append((i + 1, lines[i], "prompt line"))
            lines[i] = ""
        break
    commands += _later_commands(clean(text).split("\n"), {no for no, _, _ in skipped})
    return Pasted(text="\n".join(lines), skipped=tuple(sorted(skipped)), command=command_facts(commands))


# ---- one paste, many parts -------------------------------------------------------------------------------------
# What starts a part of each kind, tested on one line (its first _LONG characters); a part goes on until a line
# starts another kind or a prompt/command line. NCCL's own log lines ('NCCL INFO', 'NCCL WARN') form one log part
# wherever they are, also interleaved with an nccl-tests table: the table goes on around them.
_LONG = 4096
_CELL = r"(?:X|NV\d{1,3}|PIX|PXB|PHB|NODE|SYS|SOC)"
_ROW = re.compile(r"^\s*\d{1,20}\s+\d{1,20}\s+(?:float|double|half|bfloat16|int8|uint8|int32|uint32|int64|uint64|"
                  r"fp8_e4m3|fp8_e5m2|fp16|bf16|fp32|fp64)\s+(?:sum|prod|max|min|avg|none|mulsum)\s")
_NCCL_LINE = re.compile(r"\b[NR]CCL (?:INFO|WARN|TRACE|ABORT)\b|Watchdog caught collective|NCCL [Ee]rror \d|"
                        r"unhandled (?:system|cuda|CUDA|hip|HIP) error|ncclUnhandled\w{0,20}Error|ncclSystemError|"
                        r"ncclRemoteError|ncclInternalError|ncclInvalidUsage")
_WHOLE_LOG = re.compile(r"NCCL version \S|Using network |NET/(?:IB|Socket|Plugin|OFI)|ncclCommInitRank|Init COMPLETE")
_ENV_LINE = re.compile(r"^\s*(?:export |declare -x |setenv )?[A-Za-z_][A-Za-z0-9_]{0,127}=")
_STARTS = (  # (kind, test), first match wins
    ("nccl_tests", lambda l: ("Collective test " in l or "nThread " in l or "rccl-tests:" in l
                              or "NCCL Tests compiled" in l or bool(_ROW.match(l))
                              or bool(re.match(r"#\s*Rank\s+\d{1,7}\s+(?:Group|Pid|on)\s", l))
                              or bool(re.match(r"#\s+size\s+count\s+type\s+redop\s", l))
                              or l.lstrip().startswith('{"nccl') or l.lstrip().startswith('{"rccl')
                              or (l.lstrip()[:1] == "{" and ('"bus_bw"' in l or '"busbw"' in l)))),
    ("nccl_topo", lambda l: "<system version=" in l or "=== System : maxBw" in l),
    ("nccl_debug", lambda l: bool(re.match(r"\s*(?:NCCL version \d|Using network |NET/(?:IB|Socket|Plugin|OFI)"
                                           r"|Watchdog caught collective|RuntimeError: NCCL|torch.distributed.DistBackendError)", l))),
    ("smi_pcie", lambda l: "==NVSMI LOG==" in l or l.strip() == "GPU Link Info"),
    ("lspci_acs", lambda l: l.lstrip().startswith("ACSCtl:")),
    ("ibstat", lambda l: bool(re.match(r"CA '[^']{1,200}'\s*$|\s*hca_id:|Infiniband device '", l))),
    ("rdma_link", lambda l: bool(re.match(r"link [\w.-]{1,64}/\d{1,4} ", l))),
    ("iblinkinfo", lambda l: ("==(" in l and ")==>" in l) or bool(re.match(r"(?:CA|Switch): \S", l))),
    ("nvlink_status", lambda l: bool(re.match(r"\s*GPU \d{1,3}: .{0,200}\(UUID: |\s*Link \d{1,3}: (?:<inactive>|[0-9.]+ GB/s)", l))),
    ("rocm_smi", lambda l: "ROCm System Management Interface" in l or "between two GPUs" in l),
    ("topo", lambda l: bool(re.match(r"\s*GPU0\s+(?:GPU1|X\b|CPU Affinity|NIC0|\S+_\d)", l))
             or bool(re.match(r"\s*(?:GPU|NIC)\d{1,3}\s+" + _CELL + r"\s", l))),
)
_CONTEXT = ("prompt", "env", "other")
MAX_PARTS = 32  # more parts than this are merged by kind


@dataclass(frozen=True)
class Part:
    """One part of a paste: its ``kind`` (a reader's kind, or ``prompt``, ``env``, ``other``) and its lines
    (1-based numbers in the pasted file, not always consecutive: an NCCL log may be interleaved with a table)."""

    kind: str
    lines: tuple[int, ...]

    @property
    def start(self) -> int:
        return self.lines[0]

    @property
    def end(self) -> int:
        return self.lines[-1]

    def ranges(self) -> list[tuple[int, int]]:
        """The part's lines as (first, last) runs."""
        out: list[list[int]] = []
        for no in self.lines:
            if out and no == out[-1][1] + 1:
                out[-1][1] = no
            else:
                out.append([no, no])
        return [(a, b) for a, b in out]

    def span(self) -> str:
        """'lines 3-40' or 'lines 3-9, 12-20' (at most four runs named)."""
        runs = self.ranges()
        shown = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:4])
        return f"line{'s' if len(self.lines) > 1 else ''} {shown}" + (f" and {len(runs) - 4} more runs" if len(runs) > 4 else "")

    def text_of(self, all_lines: list[str]) -> str:
        """The paste with every line that is not this part's blanked (line numbers stay the file's)."""
        keep = set(self.lines)
        return "\n".join(line if i in keep else "" for i, line in enumerate(all_lines, start=1))

    def to_json(self) -> dict:
        return {"kind": self.kind, "start": self.start, "end": self.end,
                "ranges": [list(r) for r in self.ranges()]}


def line_kind(line: str) -> str | None:
    """The kind of part that ``line`` starts (see ``_STARTS``), ``nccl_log_line`` for NCCL's own log lines,
    ``prompt``/``env`` for a command or a VAR=value line, else None (it continues the part it is in)."""
    head = line[:_LONG]
    if "CCL INFO" in head or "CCL WARN" in head:
        return "nccl_log_line"
    if "NCCL failure " in head or "CUDA failure " in head or "Test failure" in head or "Cuda failure " in head \
            or "HIP failure " in head:
        return "test_failure"  # nccl-tests' own failure line: it ends the table it stands in, or is all there is
    if ("CCL " in head or "rror" in head or "atchdog" in head) and _NCCL_LINE.search(head):
        return "nccl_log_line"
    for kind, test in _STARTS:
        if test(head):
            return kind
    if is_command(head) is not None:
        return "prompt"
    if _ENV_LINE.match(head) and " " not in head.split("=", 1)[0].strip():
        return "env"
    return None


def split(text) -> tuple[list[str], tuple[Part, ...]]:
    """``(lines, parts)``: the cleaned lines of ``text`` and its parts, in the order they start.

    A part goes on through blank lines and lines that start nothing, up to the next line that starts another
    kind (or the same kind for those that print one block per device: ibstat, nvlink -s) or a prompt line;
    NCCL's log lines make one ``nccl_debug`` part wherever they stand. Lines before any part are ``other``.
    """
    cleaned = clean(text)
    all_lines = cleaned.split("\n")
    if cleaned.lstrip()[:1] in ("{", "["):  # a JSON document (nccl-tests -J, pretty-printed or not): one part
        if json_results.read_json(cleaned) is not None:
            nos = [no for no, line in enumerate(all_lines, start=1) if line.strip()]
            return all_lines, (Part("nccl_tests", tuple(nos)),)
    parts: list[tuple[str, list[int]]] = []
    log: list[int] = []
    current: list | None = None
    for no, line in enumerate(all_lines, start=1):
        if not line.strip():
            if current is not None and current[0] not in _CONTEXT:
                current[1].append(no)
            continue
        kind = line_kind(line)
        if kind == "test_failure":  # inside a part it continues it; after a prompt or alone it is an nccl-tests run
            kind = None if current is not None and current[0] not in _CONTEXT else "nccl_tests"
        if kind == "nccl_debug":  # a log line without its prefix ('NCCL version ...'): the log, wherever it stands
            kind = "nccl_log_line"
        if kind == "nccl_log_line":
            log.append(no)
            if current is not None and current[0] in ("nccl_debug",):
                current[1].append(no)
                log.pop()
            elif current is None or current[0] in _CONTEXT:
                current = ["nccl_debug", [no]]
                parts.append(current)
                log.pop()
            continue
        if kind is None:
            if current is None or current[0] in ("prompt", "env"):
                current = ["other", []]
                parts.append(current)
            current[1].append(no)
            continue
        if current is not None and current[0] == "rocm_smi" and kind == "topo":
            kind = "rocm_smi"  # a matrix's 'GPU0 GPU1 ...' header inside rocm-smi's output
        if current is not None and current[0] == kind and kind not in ("prompt",):
            current[1].append(no)
            continue
        if current is not None and current[0] == "nccl_debug" and kind in ("nccl_debug",):
            current[1].append(no)
            continue
        current = [kind, [no]]
        parts.append(current)
    # the NCCL log lines that stood inside other parts join the log part (or make one)
    if log:
        logs = [p for p in parts if p[0] == "nccl_debug"]
        if logs:
            logs[0][1].extend(log)
            logs[0][1].sort()
        else:
            parts.append(["nccl_debug", log])
    out = []
    for kind, nos in parts:
        while nos and not all_lines[nos[-1] - 1].strip():
            nos.pop()  # trailing blank lines belong to no part
        if nos:
            out.append(Part(kind, tuple(nos)))
    out.sort(key=lambda p: p.start)
    # several log parts (a log, a table, more log) are one log: merge them
    merged, log_part = [], None
    for p in out:
        if p.kind == "nccl_debug":
            if log_part is None:
                log_part = p
                merged.append(p)
            else:
                i = merged.index(log_part)
                log_part = Part("nccl_debug", tuple(sorted(set(log_part.lines) | set(p.lines))))
                merged[i] = log_part
            continue
        merged.append(p)
    if len(merged) > MAX_PARTS:  # a paste of many runs (a log of a loop, a file pasted twice): one part per kind,
        by_kind: dict = {}       # so that each reader reads the file once (linear time)
        for p in merged:
            by_kind.setdefault(p.kind, []).extend(p.lines)
        merged = sorted((Part(k, tuple(sorted(v))) for k, v in by_kind.items()), key=lambda p: p.start)
        log_part = next((p for p in merged if p.kind == "nccl_debug"), None)
    if log_part is not None:  # a log of nothing but NCCL's topology lines is that topology (NCCL_DEBUG_SUBSYS=GRAPH)
        body = [all_lines[no - 1][:_LONG] for no in log_part.lines]
        if any("=== System : maxBw" in l for l in body) and not any(_WHOLE_LOG.search(l) for l in body):
            merged[merged.index(log_part)] = Part("nccl_topo", log_part.lines)
    return all_lines, tuple(merged)
