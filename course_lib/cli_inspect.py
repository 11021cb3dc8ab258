"""``python -m course_lib inspect FILE...``: read nvidia-smi, ibstat and NCCL outputs, print findings.

Each file's kind is detected from its body (``nvidia-smi topo -m``, ``nvidia-smi nvlink -s``, ``nvidia-smi -q``,
``ibstat``/``ibv_devinfo``/``ibstatus``, ``rdma link``, ``iblinkinfo``, ``NCCL_DEBUG=INFO`` with its failures,
NCCL's topology dump, nccl-tests/rccl-tests); a prompt, colour codes and launcher lines pasted with it are
skipped and listed. The findings say what the output means and why. For a topology matrix it also predicts the all-reduce busbw on the closest
catalog system. ``--json`` prints a list with one object per file. ``--sample NAME`` reads a
shipped sample (``--list-samples`` names them).
"""
from __future__ import annotations

import re
import sys

from . import cli, diagnostics, systemfile, textfiles
from .diagnostics import findings as _findings
from .diagnostics import system as _system


def inspect_texts(items: list[tuple[str, str]], system=None) -> list[dict]:
    """Detect, parse and explain outputs of one machine, given as ``(label, text)`` pairs.

    One dict per item: ``{"file", "kind", <kind's keys>, "findings", "skipped_lines"}`` (``skipped_lines``:
    the prompt, command and launcher lines the reader left out, each with its line number and why); a topology matrix also
    gets ``predicted_all_reduce`` (lowered by inactive links where an ``nvlink -s`` output is given too),
    on ``system`` (a ``hardware.System``, e.g. from a system file) when given, else on the closest
    catalog system.
    """
    parsed = []
    for label, text in items:
        try:
            parsed.append((label, *diagnostics.parse(text), diagnostics.read(text).skipped_json()))
        except ValueError as exc:
            raise ValueError(f"{label}: {_unread(text, exc)}") from None
    nvlink_status = next((r for _, kind, r, _ in parsed if kind == "nvlink_status"), None)
    out = []
    for (label, kind, result, skipped), (_, text) in zip(parsed, items):
        obj = {"file": label, "kind": kind, **result.to_json(), "findings": _findings.findings(kind, result),
               "skipped_lines": skipped}
        if kind == "nccl_debug" and "=== System : maxBw" in text:
            obj["findings"] += _topology_of_log(text)
        if kind == "topo":
            obj["predicted_all_reduce"] = _system.predicted_busbw(result, nvlink_status, system)
            if system is not None:
                obj["findings"] += _system.mismatches(result, system)
        out.append(obj)
    return out


_DOCUMENT = re.compile(r"^\s*(?:```|\|[\s:|-]*---[\s:|-]*\||<!DOCTYPE|<html|\{\s*\"cells\")", re.MULTILINE | re.IGNORECASE)


def _unread(text: str, exc: ValueError) -> str:
    """Why ``text`` could not be read, for its error line: the reader's ``exc``, said plainly when the text
    is no tool's output at all (a Markdown or HTML document that only quotes outputs, or a paste whose
    every line was a prompt or launcher line)."""
    kept = diagnostics.read(text)
    if not kept.text.strip() and text.strip():
        no, line, why = kept.skipped[0]
        return (f"not a recognised tool output: its {len(kept.skipped)} non-blank line(s) read as what came before an "
                f"output (line {no}, {why}: {line.strip()[:60]!r}), and no output follows; paste what the command printed")
    try:
        diagnostics.detect(kept.text)
    except ValueError:  # no line of any tool's output
        return f"not a recognised tool output: {exc}"
    if _DOCUMENT.search(text):
        return (f"not a recognised tool output: it is a document (Markdown code fences, a table or HTML) that quotes "
                f"outputs, and reading it as one failed ({exc}); pass the saved output itself")
    return str(exc)


def _topology_of_log(text: str) -> list[str]:
    """An INFO log that also printed NCCL's topology (``NCCL_DEBUG_SUBSYS`` with GRAPH): that block's findings."""
    try:
        topo = diagnostics.nccl_topo.parse(diagnostics.read(text).text)
    except ValueError as exc:
        return [f"topology: the '=== System' block could not be read ({exc})"]
    return [f"topology: {f}" for f in _findings.nccl_topo_findings(topo)]


def inspect_text(text: str, label: str = "<text>") -> dict:
    """``inspect_texts`` for a single output."""
    return inspect_texts([(label, text)])[0]


MAX_FILE_BYTES = 16 * 2**20  # an nvidia-smi -q of a large node is ~1 MB; an NCCL_DEBUG log a few MB


def _read(path: str) -> str:
    return textfiles.read_text(path, MAX_FILE_BYTES, "file",
                               what="one saved nvidia-smi, ibstat, lspci or NCCL_DEBUG output")


def format_report(obj: dict) -> str:
    """One file's findings as indented text."""
    lines = [f"{obj['file']}: {obj['kind']}"]
    if obj.get("skipped_lines"):
        lines.append(f"  (skipped {len(obj['skipped_lines'])} line(s) that are not the output: "
                     + "; ".join(f"line {s['line']} {s['why']}" for s in obj["skipped_lines"][:3])
                     + (" ..." if len(obj["skipped_lines"]) > 3 else "") + ")")
    lines += [f"  - {f}" for f in obj["findings"]]
    pred = obj.get("predicted_all_reduce")
    if pred:
        lines.append(f"  - predicted all-reduce busbw for a 1 GiB message on {pred['gpus']} GPUs: "
                     f"{pred['busbw_gb_s']:g} GB/s ({pred['algorithm']}; {pred['reason']})")
        lines += [f"    note: {n}" for n in pred["notes"]]
    elif obj["kind"] == "topo" and obj["gpus"] >= 2:
        lines.append("  - no catalog system is close enough to predict this machine")
    return "\n".join(lines)


def _run(args) -> int:
    if args.list_samples:
        for name, row in diagnostics.sample_sources().items():
            print(f"{name:<42} {row['kind']:<14} {row.get('url') or 'measured: ' + row['measured']}")
        return 0
    items = [(p, None) for p in args.files] + [(f"sample:{s}", s) for s in args.sample]
    system = systemfile.system_from_args(args)
    local = []
    if args.local:
        from .diagnostics import local as _local
        local, notes = _local.collect()
        for note in notes:  # on stderr, so that --json stays one JSON document
            print(f"# {note}", file=sys.stderr)
        if not local and not items and system is None:
            print("# none of nvidia-smi and ibstat answered here: try --sample NAME (--list-samples)")
            return 0
    if not items and not local and system is None:
        raise ValueError("give at least one FILE (or --sample NAME; --list-samples names them, "
                         "or --system-file PATH)")
    reports = inspect_texts([(label, diagnostics.sample_text(sample) if sample else _read(label))
                             for label, sample in items] + local, system)
    if system is not None:
        reports.insert(0, dict(file=args.system_file or f"system:{system.id}", **_system.system_report(system)))
    if args.json:
        print(cli.dumps(reports))
    else:
        print("\n\n".join(format_report(r) for r in reports))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("inspect", help="read nvidia-smi / ibstat / NCCL_DEBUG outputs and explain them")
    p.add_argument("files", nargs="*", metavar="FILE", help="saved output of nvidia-smi topo -m, nvlink -s, -q, "
                                                              "ibstat, ibv_devinfo, ibstatus or an NCCL_DEBUG=INFO log")
    p.add_argument("--sample", action="append", default=[], metavar="NAME", help="read a shipped sample instead")
    p.add_argument("--list-samples", action="store_true", help="list the shipped samples and their sources")
    p.add_argument("--local", action="store_true", help="also run this machine's nvidia-smi topo -m, nvlink -s and "
                                                         "ibstat where they exist (missing tools are skipped)")
    systemfile.add_system_arguments(p, required=False)
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per file")
    p.set_defaults(func=_run, flags={"name": "sample"})
