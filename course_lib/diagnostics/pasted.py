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


def clean(text) -> str:
    """``text`` without a BOM, ANSI escape codes and carriage returns (CRLF, CR CR LF and a lone CR become LF)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be the output as a string, got {type(text).__name__}")
    text = text.lstrip("\ufeff")
    if "\r" in text:  # CRLF, and CR CR LF from a CRLF text copied once more through Windows
        text = "\n".join(line.rstrip("\r") for line in text.split("\n")).replace("\r", "\n")
    return _ANSI.sub("", text) if "\x1b" in text else text


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
