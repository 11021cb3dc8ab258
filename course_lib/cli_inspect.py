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
from .diagnostics import tuning_compare as _tuning
from .diagnostics import verdict as _verdict


_PART_NAMES = {"nccl_tests": "nccl-tests table", "nccl_debug": "NCCL log", "topo": "topo -m matrix",
               "nvlink_status": "nvlink -s", "smi_pcie": "nvidia-smi -q", "ibstat": "ibstat", "rdma_link": "rdma link",
               "iblinkinfo": "iblinkinfo", "lspci_acs": "lspci ACSCtl", "nccl_topo": "NCCL topology dump",
               "rocm_smi": "rocm-smi --showtopo", "prompt": "prompt/command", "env": "environment dump", "other": "other text"}


def part_summary(kind: str, result) -> str:
    """A few words on what one part says (``nccl-tests all_reduce, 16 ranks``; ``NET/Socket (no IB device found)``)."""
    if kind == "nccl_tests":
        ranks = f"{result.ranks} ranks" if result.ranks else "ranks not in the file"
        cut = f" (the copy ends after {result.cut_after} B)" if result.cut_after is not None else ""
        return f"{result.tool.split(' (')[0]} {result.collective or 'collective not in the file'}, {ranks}{cut}"
    if kind == "nccl_debug":
        if result.socket_fallback:
            net = "NET/Socket" + (" (no IB device found)" if result.ib_missing else "")
        else:
            net = ", ".join(result.transports) or "no transport named"
        return (f"NCCL {result.nccl_version}: " if result.nccl_version else "") + net
    if kind == "topo":
        return f"{len(result.gpus)} GPU(s), {len(result.nics)} NIC(s)" + (" (cut off)" if result.missing_rows else "")
    if kind == "rocm_smi":
        pairs = result.pair_counts()
        return f"{result.gpus} AMD GPU(s)" + (": " + ", ".join(f"{v} {k}" for k, v in pairs.items()) if pairs else "")
    if kind == "ibstat":
        return f"{result.tool}, {len(result.ports)} port(s), {sum(p.state == 'Active' for p in result.ports)} Active"
    return _PART_NAMES.get(kind, kind)


def _summary(readings: list[dict], main: dict) -> str:
    """One line for the whole paste: the main part, then the others (those inside it said so)."""
    text = part_summary(main["kind"], main["result"])
    if main["kind"] != "nccl_tests":
        text = f"{_PART_NAMES[main['kind']]}: {text}"
    lo, hi = main["part"].start, main["part"].end
    for r in readings:
        if r is main or r["result"] is None:
            continue
        inside = lo <= r["part"].start <= hi
        name = _PART_NAMES[r["kind"]]
        text += (f", and the {name} inside it: " if inside else f"; {name} ({r['part'].span()}): ") \
            + part_summary(r["kind"], r["result"])
    return text


def inspect_texts(items: list[tuple[str, str]], system=None) -> list[dict]:
    """Detect, split, parse and explain outputs of one machine, given as ``(label, text)`` pairs.

    One dict per item: ``{"file", "kind", <main part's keys>, "findings", "skipped_lines", "parts", "summary"}``.
    A paste may hold several outputs (an nccl-tests table with the NCCL log inside it, a prompt and an env dump
    before a matrix): ``parts`` lists each (kind, start, end, ranges, findings, error) and ``findings`` merges
    theirs, the main part's first, the others' named by part and lines. ``skipped_lines``: the prompt, command and
    launcher lines before the output, each with its line number and why. A topology matrix also gets
    ``predicted_all_reduce`` (lowered by inactive links where an ``nvlink -s`` output is given too), on ``system``
    (a ``hardware.System``, e.g. from a system file) when given, else on the closest catalog system. A paste whose
    NCCL log has a TUNING table gets ``tuning_vs_course`` (``diagnostics.tuning_compare``: NCCL's own model beside
    the course's per algorithm x protocol, on ``system``, the matrix's closest system, or a guess it names).
    """
    parsed = []
    for label, text in items:
        try:
            readings = diagnostics.read_parts(text)
            _refuse_a_document(text, readings)
        except ValueError as exc:
            raise ValueError(f"{label}: {_unread(text, exc)}") from None
        parsed.append((label, readings, diagnostics.read(text).skipped_json()))
    nvlink_status = next((r["result"] for _, readings, _ in parsed for r in readings
                          if r["kind"] == "nvlink_status" and r["result"] is not None), None)
    out = []
    for label, readings, skipped in parsed:
        main = diagnostics.main_part(readings)
        topo_reading = next((r for r in readings if r["kind"] == "topo" and r["result"] is not None), None)
        closest = _system.closest_system(topo_reading["result"]) if topo_reading is not None else None
        log = next((r for r in readings if r["kind"] == "nccl_debug" and r["result"] is not None), None)
        parts, merged, expected = [], [], None
        for r in readings:
            found = []
            if r["result"] is not None:
                found = [_verdict.as_finding(f) for f in _findings.findings(r["kind"], r["result"])]
                if r["kind"] == "nccl_debug" and "=== System : maxBw" in r["text"]:
                    found += [_verdict.as_finding(f) for f in _topology_of_log(r["text"])]
                if r["kind"] == "nccl_tests" and expected is None:
                    expected, judged = _busbw_verdict(r["result"], system, closest, log)
                    found += judged
            elif r["error"]:
                found = [_verdict.Finding(f"this part could not be read: {r['error']}", "warn", "a part no reader could "
                                          "read", "python -m course_lib inspect FILE with that output alone")]
            parts.append({**r["part"].to_json(), "findings": found, **({"error": r["error"]} if r["error"] else {})})
            if r is main:
                merged = found + merged
            elif found:
                merged += [f.relabel(f"{_PART_NAMES[r['kind']]} part ({r['part'].span()}): {f}") for f in found]
        obj = {"file": label, "kind": main["kind"], **main["result"].to_json(), "findings": merged,
               "skipped_lines": skipped, "parts": parts, "summary": _summary(readings, main)}
        if expected is not None:
            obj["expected_busbw"] = expected
        if topo_reading is not None:
            obj["predicted_all_reduce"] = _system.predicted_busbw(topo_reading["result"], nvlink_status, system)
            if system is not None:
                obj["findings"] += [_verdict.Finding(m, "warn", f"the matrix disagrees with {system.id}",
                                                     "nvidia-smi topo -m; check the system file")
                                    for m in _system.mismatches(topo_reading["result"], system)]
        tuned = next((r for r in readings if r["kind"] == "nccl_debug" and r["result"] is not None
                      and r["result"].tuning), None)
        if tuned is not None:
            m = _tuning.machine(tuned["result"], system, closest)
            obj["tuning_vs_course"] = _tuning.to_json(_tuning.compare(tuned["result"], m), m)
        obj["verdicts"] = [_verdict.as_finding(f).to_json() for f in obj["findings"]]
        out.append(obj)
    return out


def _busbw_verdict(run, system, closest, log) -> tuple[dict | None, list]:
    """(``verdict.expected_busbw``, [its verdict]) for an nccl-tests part, judged with the paste's NCCL log."""
    try:
        expected = _verdict.expected_busbw(run, system, closest,
                                           log["result"].nccl_version if log is not None else None)
    except ValueError as exc:
        return None, [_verdict.Finding(f"the course could not price this run ({exc}): no expected busbw", "warn",
                                       "the run's facts are outside the course's model",
                                       "python -m course_lib compare FILE --system ID")]
    if expected is None:
        return None, []
    span = f"the NCCL log part, {log['part'].span()}" if log is not None else "the NCCL log part"
    return expected, [_verdict.busbw_verdict(expected, log["result"] if log is not None else None, span)]


_DOCUMENT = re.compile(r"^\s*(?:```|\|[\s:|-]*---[\s:|-]*\||<!DOCTYPE|<html|\{\s*\"cells\")", re.MULTILINE | re.IGNORECASE)


def _refuse_a_document(text: str, readings: list) -> None:
    """ValueError for a document that only quotes outputs (a README, a notebook, a web page): Markdown fences,
    tables or HTML, with most of its lines in no tool's part. A paste from an issue keeps its fences around an
    output that fills most of it, and is read."""
    if not _DOCUMENT.search(text):
        return
    lines = sum(1 for line in text.splitlines() if line.strip())
    other = sum(b - a + 1 for r in readings if r["kind"] in ("other", "prompt")
                for a, b in r["part"].to_json()["ranges"])
    if lines and other > lines / 2:
        raise ValueError(f"{other} of its {lines} lines are no tool's output")


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
    if obj.get("summary") and len(obj.get("parts", [])) > 1:
        lines.append(f"  {obj['summary']}")
        lines.append("  parts: " + "; ".join(f"{p['kind']} (lines {p['start']}-{p['end']})" for p in obj["parts"]))
    if obj.get("skipped_lines"):
        lines.append(f"  (skipped {len(obj['skipped_lines'])} line(s) that are not the output: "
                     + "; ".join(f"line {s['line']} {s['why']}" for s in obj["skipped_lines"][:3])
                     + (" ..." if len(obj["skipped_lines"]) > 3 else "") + ")")
    verdicts = obj.get("verdicts") or [{"status": "ok", "text": f} for f in obj["findings"]]
    lines += [f"  - {v['status']}: {v['text']}" for v in verdicts]
    pred = obj.get("predicted_all_reduce")
    if pred:
        lines.append(f"  - predicted all-reduce busbw for a 1 GiB message on {pred['gpus']} GPUs: "
                     f"{pred['busbw_gb_s']:g} GB/s ({pred['algorithm']}; {pred['reason']})")
        lines += [f"    note: {n}" for n in pred["notes"]]
    elif obj["kind"] == "topo" and obj["gpus"] >= 2:
        lines.append("  - no catalog system is close enough to predict this machine")
    tuning = obj.get("tuning_vs_course")
    if tuning:
        lines += ["  " + line for line in _tuning.format_json(tuning)]
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
