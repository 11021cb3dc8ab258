"""``python -m course_lib predict`` and ``compare``: the cost model in nccl-tests' own columns.

predict prints size (B), count (elements), type, redop, root, time (us), algbw and busbw
(GB/s, 1e9 bytes/s) for a size sweep ``-b`` to ``-e`` growing by ``-f``, as all_reduce_perf does.
Sizes follow nccl-tests: ``-e 16G`` is 16 GiB. compare reads a real nccl-tests output file and
prints measured vs predicted per size, with the ratio predicted/measured.
"""
from __future__ import annotations

import sys

import numpy as np

from . import cli, collectives, costmodel, datafiles, plausible, systemfile, units, validate
from .costmodel import ranges as regime_ranges
from .diagnostics import compare, nccl_log, nccl_tests
from .diagnostics import tuning_compare as _tuning

TYPE_SIZES = {"int8": 1, "uint8": 1, "half": 2, "bfloat16": 2, "float": 4, "int32": 4, "double": 8, "int64": 8}


MAX_ROWS = 10_000  # a sweep's rows: nccl-tests' own sweeps have a few dozen


def sweep_rows(min_bytes, max_bytes, factor=2.0, step=None) -> float:
    """Rows of the sweep ``sweep`` would return, counted without building it (ValueError on bad input).

    A float: ``inf`` where the count overflows (a subnormal step or min_bytes).
    """
    lo = units.parse_size(min_bytes, name="min_bytes")
    hi = units.parse_size(max_bytes, name="max_bytes")
    if hi < lo:
        raise ValueError(f"max_bytes must be >= min_bytes ({lo:.0f} bytes), got {hi:.0f}")
    if step is not None:
        step = validate.positive("step", units.parse_size(step, name="step"))
        with np.errstate(over="ignore"):
            return float(np.floor((hi - lo) / step)) + 1
    factor = validate.number("factor", factor, low=1.0, low_inclusive=False)
    if lo <= 0:
        raise ValueError(f"min_bytes must be > 0 with a growth factor, got {lo:g}")
    with np.errstate(over="ignore", divide="ignore"):
        return float(np.floor(np.log(hi / lo) / np.log(factor) + 1e-9)) + 1


def sweep(min_bytes, max_bytes, factor=2.0, step=None, max_rows: int = MAX_ROWS) -> np.ndarray:
    """Sizes from min_bytes to max_bytes (bytes), multiplied by factor (or increased by step bytes).

    At most ``max_rows`` sizes: a longer sweep is refused before any memory is taken
    (``-b 8 -e 1T -i 1`` would be 1.1e12 rows).
    """
    max_rows = validate.integer("max_rows", max_rows, low=1, high=10**7)
    rows = sweep_rows(min_bytes, max_bytes, factor, step)
    lo = units.parse_size(min_bytes, name="min_bytes")
    hi = units.parse_size(max_bytes, name="max_bytes")
    if rows > max_rows:
        param = "step" if step is not None else "factor"
        raise ValueError(f"{param} gives {rows:.3g} sizes from {lo:.0f} to {hi:.0f} bytes; at most {max_rows} "
                         f"rows are allowed: use a larger {param} or a narrower min_bytes..max_bytes range")
    if step is not None:
        step = units.parse_size(step, name="step")
        return lo + step * np.arange(int(rows), dtype=float)
    return np.floor(lo * float(factor) ** np.arange(int(rows)))


def _count(coll, nbytes, ranks, dtype):
    return coll.elements(nbytes, ranks, TYPE_SIZES[dtype]).astype(np.int64)


def prediction_ranges(pred: costmodel.Prediction, system, network=None) -> list:
    """One ``costmodel.Range`` per size of ``pred`` on ``system`` (fabric kind ``network``), or None per size
    where the prediction uses spec bandwidth (ranges are measured against the achievable model)."""
    if not pred.achievable:
        return [None] * len(pred.nbytes)
    return costmodel.ranges_for(pred.nbytes, pred.nodes, system, network)


def _span(low, high) -> str:
    return f"{low:.3g}-{high:.3g}"


def range_lines(ranges) -> list[str]:
    """'# range:' lines, one per regime of a sweep's ``ranges`` (``prediction_ranges``), in size order."""
    if all(r is None for r in ranges):
        return ["# range: none with --spec (the published runs are measured against the achievable model)"]
    seen = dict.fromkeys(r for r in ranges if r is not None)
    return [f"# range: {r.describe()}" for r in seen]


def format_table(pred: costmodel.Prediction, dtype="float", system=None, network=None) -> str:
    """The prediction as nccl-tests-style lines (header lines start with '#').

    system (and network, a fabric kind): the system ``pred`` was made for; given, each row also shows the
    busbw range published runs in its regime measured (``costmodel.range_for``), and the table ends with
    one line per regime saying where that range comes from.
    """
    ranges = prediction_ranges(pred, system, network) if system is not None else None
    extra = f" {'busbw range':>13}" if ranges else ""
    lines = [f"# course_lib cost model: {pred.collective} on {pred.system}, {pred.nodes} node(s) x "
             f"{pred.gpus_per_node} GPUs = {pred.ranks} ranks, algorithm {pred.algorithm}, "
             f"{'achievable' if pred.achievable else 'spec'} bandwidth",
             f"# NCCL {pred.nccl_version} rules choose the algorithm and protocol ({pred.nccl_version_from})",
             "#  size: bytes; time: us; algbw, busbw: GB/s (1e9 B/s) as nccl-tests defines them"
             + ("; busbw range: what published runs in the same regime measured (GB/s; see '# range:')" if ranges else ""),
             "#", f"#{'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>6} {'time':>10} {'algbw':>8} {'busbw':>8}"
             f"  algo/proto{extra}",
             f"#{'(B)':>12} {'(elements)':>12} {'':>8} {'':>6} {'':>6} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}"]
    coll = collectives.get(pred.collective)
    counts = _count(coll, pred.nbytes, pred.ranks, dtype)
    redop, root = coll.reduction or "none", "0" if coll.has_root else "-1"
    for i, n in enumerate(pred.nbytes):
        line = (f" {int(n):>12d} {counts[i]:>12d} {dtype:>8} {redop:>6} "
                f"{root:>6} {pred.time_s[i] * 1e6:>10.2f} "
                f"{pred.algbw[i] / units.GB:>8.2f} {pred.busbw[i] / units.GB:>8.2f}  {pred.algorithms[i]}/{pred.protocols[i]}")
        if ranges:
            band = ranges[i].busbw(pred.busbw[i] / units.GB) if ranges[i] is not None else None
            line += f" {(_span(*band) if band else '-'):>13}"
        lines.append(line)
    for note in pred.notes:
        lines.append(f"# note: {note}")
    if pred.ranks == 1:
        lines.append("# note: one rank: no byte crosses a link, so busbw is 0 (bus bandwidth is undefined here); "
                     "the time is the call's fixed cost alone, so algbw is not a link's rate either")
    if ranges:
        lines += range_lines(ranges)
    return "\n".join(lines)


def _to_json(pred: costmodel.Prediction, ranges) -> dict:
    return {"collective": pred.collective, "system": pred.system, "nodes": pred.nodes,
            "nccl_version": pred.nccl_version, "nccl_version_from": pred.nccl_version_from,
            "gpus_per_node": pred.gpus_per_node, "ranks": pred.ranks, "algorithm": pred.algorithm,
            "achievable": pred.achievable, "units": {"size": "bytes", "time": "us", "algbw": "GB/s", "busbw": "GB/s"},
            "rows": [{"size": int(n), "time_us": float(t * 1e6), "algbw_gb_s": float(a / units.GB),
                      "busbw_gb_s": float(b / units.GB), "algorithm": str(al), "protocol": str(pr),
                      "range": costmodel.range_json(rng, float(b / units.GB))}
                     for n, t, a, b, al, pr, rng in zip(pred.nbytes, pred.time_s, pred.algbw, pred.busbw,
                                                        pred.algorithms, pred.protocols, ranges)],
            "notes": pred.notes, "efficiencies": costmodel.efficiency_table()}


def _collective_arg(name: str) -> str:
    """all_reduce_perf, allreduce, AllReduce, all-reduce -> all_reduce (ValueError with a suggestion if none)."""
    return nccl_tests.collective_id(str(name).replace("-", "_").replace(" ", "_"))


def _plausible_flags(args) -> None:
    """The physical flags given, against the catalog's ranges (``plausible``): a warning or a refusal."""
    for flag, dest, quantity in (("--nic-gbit", "nic_gbit", "nic_gbit_s"), ("--nics", "nics", "nics_per_node"),
                                 ("-g/--ngpus", "ngpus", "gpus_per_node")):
        if getattr(args, dest, None) is not None:
            plausible.check(flag, getattr(args, dest), quantity)


def _predict(args) -> int:
    _plausible_flags(args)
    collective = _collective_arg(args.collective)
    sizes = sweep(args.minbytes, args.maxbytes, args.stepfactor, args.stepbytes)
    sys_ = systemfile.system_from_args(args)
    nodes = args.nodes if args.nodes is not None else systemfile.nodes_default(sys_)
    pred = costmodel.predict(collective, sizes, sys_, gpus_per_node=args.ngpus, nodes=nodes,
                             algorithm=args.algo, achievable=not args.spec, nics_per_node=args.nics,
                             network=args.fabric, protocol=args.proto, nccl_version=args.nccl_version)
    if args.json:
        print(cli.dumps(_to_json(pred, prediction_ranges(pred, sys_, args.fabric))))
    else:
        print(format_table(pred, args.datatype, system=sys_, network=args.fabric))
    return 0


# ---------------------------------------------------------------- compare


MAX_COMPARE_BYTES = 4 * 2**20  # an nccl-tests log is a few KB; NCCL_DEBUG=INFO output of a large job a few MB
UNUSUAL_FLAGS = {"range": "  <-- unusual: outside the range", "fixed": "  <-- beyond 0.67-1.5 (no range here)", None: ""}
_NO_RANGE_NOTE = "; sizes whose regime has no range are judged by the fixed 0.67-1.5"


def dropped_rows(text: str, run) -> list[str]:
    """One line per row of an nccl-tests output that ``compare`` does not use: its line number and why.

    The reader refuses a row whose time or bandwidth is negative or not finite (``run.refused_rows``); a line
    that starts as a row does (size and count) but that the reader did not keep had too few numbers."""
    refused = set(run.refused_rows)
    sizes = [r["size"] for r in run.rows]
    out = []
    for no, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        tokens = line.split()
        if len(tokens) < 2 or not (tokens[0].isdigit() and tokens[1].isdigit()):
            continue
        if no in refused:
            out.append(f"line {no}: a time or bandwidth is negative or not a number: {line.strip()[:80]!r}")
        elif sizes and int(tokens[0]) == sizes[0]:
            sizes.pop(0)
        else:
            out.append(f"line {no}: not read as a result row (too few columns): {line.strip()[:80]!r}")
    return out


def _compare(args) -> int:
    _plausible_flags(args)
    text = cli.read_text(args.file, MAX_COMPARE_BYTES, "file", what="the text that an nccl-tests run printed")
    try:
        run = nccl_tests.parse(text)
    except ValueError:
        raise ValueError(f"file {args.file!r} has no nccl-tests result rows (lines starting with size and count); "
                         "pass the text that an nccl-tests run printed") from None
    if not run.rows:
        said = f"; it printed last: {run.last_words}" if run.last_words else ""
        raise ValueError(f"file {args.file!r}: the run failed before its first size (header only){said}; "
                         "python -m course_lib inspect FILE explains the failure")
    parsed = run.as_dict()
    for line in dropped_rows(text, run):  # on stderr, so that --json stays one JSON document
        print(f"# dropped: {line}", file=sys.stderr)
    collective = _collective_arg(args.collective) if args.collective else parsed["collective"]
    if collective is None:
        raise ValueError("collective is not in the file; pass --collective (e.g. all_reduce)")
    sys_ = systemfile.system_from_args(args)
    if args.nic_gbit:
        sys_ = sys_.variant(nic_gbit_s=args.nic_gbit)
    assumed = compare.assumptions(parsed, sys_, collective, nodes=args.nodes, gpus_per_node=args.ngpus,
                                  nics_per_node=args.nics, nic_gbit_s=args.nic_gbit, fabric=args.fabric,
                                  algorithm=args.algo, protocol=args.proto)
    nodes, g = assumed["nodes"][0], min(assumed["gpus_per_node"][0], sys_.gpus_per_node)
    version = args.nccl_version or (parsed["nccl_version"] if costmodel.nccl_version_stated(parsed["nccl_version"])
                                    else None)
    pred, row_ranges = compare.prediction(parsed, sys_, collective, assumed, nics_per_node=args.nics,
                                          nccl_version=args.nccl_version)
    assumed["nccl_version"] = (pred.nccl_version, "--nccl-version" if args.nccl_version else
                               pred.nccl_version_from if version is None else f"file: {parsed['nccl_version']}")
    out = compare.rows(parsed["rows"], pred, row_ranges)
    advice = costmodel.compare_advice(out, nodes, assumed["fabric"][0])
    guessed = [k for k, (_, why) in assumed.items() if "GUESSED" in why]
    tuning = _tuning_of(text, sys_, g, nodes, version, assumed)
    if args.json:
        print(cli.dumps({"collective": collective, "system": sys_.id, "nodes": nodes, "gpus_per_node": g,
                         "assumed": {k: {"value": v, "from": why} for k, (v, why) in assumed.items()},
                         "guessed": guessed, "advice": advice,
                         "units": {"time": "us", "busbw": "GB/s"}, "rows": out,
                         **({"tuning_vs_course": tuning} if tuning else {})}))
        return 0
    print(f"# {collective} on {sys_.id}: {nodes} node(s) x {g} GPUs; busbw in GB/s, time in us; "
          "ratio = predicted / measured busbw; n/a: not in the file")
    print("# assumed:")
    for key, (value, why) in assumed.items():
        print(f"#   {key:<14} {value!s:<12} ({why})")
    if guessed:
        print(f"# guessed, not read from the file: {', '.join(guessed)}")

    def cell(value, width, digits=2):
        return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.{digits}f}"

    print(f"#{'size':>12} {'meas time':>10} {'pred time':>10} {'meas busbw':>10} {'pred busbw':>10} {'ratio':>6} "
          f"{'meas/pred':>9} {'range':>9}  algo/proto")
    for r, rng in zip(out, row_ranges):
        flag = UNUSUAL_FLAGS[r["unusual"]]
        inverse = None if r["ratio"] is None else 1 / r["ratio"]
        span = f"{rng.low:.2f}-{rng.high:.2f}" if rng is not None and rng.known else "-"
        print(f" {r['size']:>12d} {cell(r['measured_time_us'], 10)} {cell(r['predicted_time_us'], 10)} "
              f"{cell(r['measured_busbw'], 10)} {cell(r['predicted_busbw'], 10)} {cell(r['ratio'], 6)} "
              f"{cell(inverse, 9)} {span:>9}  {r['algorithm']}/{r['protocol']}{flag}")
    print("# ratio = predicted / measured busbw; meas/pred = its inverse, set against the range: what published runs "
          "in the same regime measured, as a multiple of the model")
    for line in range_lines(row_ranges):
        print(line)
    odd = [r for r in out if r["unusual"]]
    no_range = _NO_RANGE_NOTE if any(r is None or not r.known for r in row_ranges) else ""
    if odd:
        print(f"# unusual: {len(odd)} of {len(out)} sizes measured outside the range of published runs in their "
              f"regime, by more than {regime_ranges.NEAR_MODEL:.0%} from the model{no_range}: look there first")
    else:
        print(f"# unusual: none: every size is inside its regime's range or within {regime_ranges.NEAR_MODEL:.0%} of the "
              f"model{no_range}")
    for line in advice:
        print(f"# advice: {line}")
    if not advice:
        print("# advice: every ratio is within 0.67-1.5")
    if tuning:
        print("\n".join("# tuning: " + line for line in _tuning.format_json(tuning)))
    return 0


def _tuning_of(text, sys_, gpus_per_node, nodes, version, assumed) -> dict | None:
    """A TUNING table in the file's NCCL INFO lines, beside the course's model on the machine compare assumed
    (``diagnostics.tuning_compare``); None where the file has none."""
    if "NCCL INFO" not in text:
        return None
    try:
        log = nccl_log.parse(text)
    except ValueError:
        return None
    if not log.tuning:
        return None
    facts = {"system": (sys_.id, "as compare assumes it"), "nodes": assumed["nodes"],
             "gpus_per_node": (gpus_per_node, assumed["gpus_per_node"][1]),
             "nccl_version": (version or "default", "file or --nccl-version" if version else "default")}
    m = _tuning.Machine(sys_, gpus_per_node, nodes, version, facts)
    return _tuning.to_json(_tuning.compare(log, m), m)


def format_regimes(cells, title) -> str:
    """A validation-by-regime table (``costmodel.validation_by_regime``) as text lines."""
    lines = [f"# {title}",
             f"#  {'size':<13} {'scale':<11} {'cases':>5} {'+-20%':>9} {'+-50%':>9}  worst (pred/meas)"]
    for c in cells:
        lines.append(f"   {c['size']:<13} {c['scale']:<11} {c['cases']:>5} "
                     f"{c['within_20pct']:>3} {c['share_20pct']:>4.0%} {c['within_50pct']:>3} {c['share_50pct']:>4.0%}"
                     f"  {c['worst_ratio']:.2f} {c['worst_id']}")
    if not cells:
        lines.append("   (no cases)")
    return "\n".join(lines)


def format_coverage(rows) -> str:
    """The ranges by regime (``costmodel.coverage_by_regime``) with their coverage out of sample, as text lines."""
    def share(c):
        return f"{'-':>12}" if c["coverage"] is None else f"{c['covered']:>3}/{c['checked']:<3} {c['coverage']:>4.0%}"
    lines = [f"# ranges by regime (measured/predicted, nominal coverage {regime_ranges.SHARE:.0%}: size band x scale x "
             f"network stack; own: >= {regime_ranges.MIN_CASES} test cases from >= {regime_ranges.MIN_SOURCES} sources "
             f"and >= {regime_ranges.MIN_FAMILIES} families, else borrowed from the stack's neighbours or wide, widened "
             "by the across-family spread) and how often each held a case it did not see: leaving out its whole "
             "source (LOSO) or its whole family, vendor x GPU generation x stack (LOFO)",
             f"#  {'regime':<36} {'cases':>5} {'srcs':>4} {'fams':>4} {'range':>11} {'made':<8} {'LOSO':>12} {'LOFO':>12}"]
    for r in rows:
        rng = f"{r['low']:.2f}-{r['high']:.2f}" if r["low"] is not None else "none"
        lines.append(f"   {r['regime']:<36} {r['cases']:>5} {r['sources']:>4} {r['families']:>4} {rng:>11} {r['made']:<8} "
                     f"{share(r['by_source']):>12} {share(r['by_family']):>12}")
    s = costmodel.coverage_summary(rows)
    lines.append(f"   {'all regimes':<36} {sum(r['cases'] for r in rows):>5} {'':>4} {'':>4} {'':>11} {'':<8} "
                 f"{share(s['by_source']):>12} {share(s['by_family']):>12}")
    return "\n".join(lines)


def _goal_lines(rows) -> list[str]:
    out = []
    for g in costmodel.validation_goals(rows):
        miss = f"; misses: {', '.join(g['misses'])}" if g.get("misses") else ""
        out.append(f"   {g['name']:<30} {g['within']:>3} of {g['cases']:<3} ({g['share']:.1%}; wanted {g['wanted']:.0%}) "
                   f"{'met' if g['met'] else 'NOT met'}{miss}")
    return out


def validation_summary_lines(rows, coverage) -> list[str]:
    """The first lines ``validation`` prints: the cases by role, the goals, the ranges' coverage out of sample,
    the NCCL releases the cases were priced with, and where the details are."""
    s = costmodel.validation_summary(rows)
    lines = [f"# course_lib cost model vs {s['cases']} published nccl-tests runs from {s['sources']} sources: "
             f"{s['fit_cases']} fit, {s['informed_cases']} informed, {s['also_cases']} also (re-runs of fit cases), "
             f"{s['test_cases']} test",
             "# fit: set a constant; informed: shaped a structural choice; also: a re-run of a fit case; only test "
             "cases count below",
             "# goals on the TEST cases (ratio = predicted / measured busbw):"]
    lines += [line.split("; misses:")[0] + (f" ({len(g['misses'])} misses: --details)" if g.get("misses") else "")
              for line, g in zip(_goal_lines(rows), costmodel.validation_goals(rows))]
    lines += regime_ranges.coverage_summary_lines(coverage)
    lines.append(f"#   by regime: --details ({len(coverage)} regimes)")
    priced: dict = {}
    assumed = 0
    for r in rows:
        priced[r["nccl_priced"]] = priced.get(r["nccl_priced"], 0) + 1
        assumed += r["nccl_from"].startswith("assumed")
    order = [v for v in costmodel.nccl_versions() if v in priced]
    lines.append("# NCCL release each case was priced with (its rules choose ring/tree and protocol): "
                 + ", ".join(f"{v} x{priced[v]}" for v in order)
                 + f"; {assumed} assumed (no release stated, or older than 2.18: --details says which)")
    lines.append("# details: python -m course_lib validation --details (every case, by-regime tables, ranges by "
                 "regime, node-count sweeps); --json for all of it with sources")
    return lines


def _validation(args) -> int:
    rows = costmodel.validation_table()
    summary = costmodel.validation_summary(rows)
    coverage = costmodel.coverage_by_regime()
    if args.json:
        print(cli.dumps({"cases": [dict(r, source=datafiles.source(r["source"])) for r in rows], "summary": summary,
                         "by_regime": {role: costmodel.validation_by_regime(rows, role) for role in costmodel.ROLES},
                         "goals": costmodel.validation_goals(rows), "node_sweeps": costmodel.node_sweep_study(rows),
                         "ranges": coverage, "range_coverage": costmodel.coverage_summary(coverage)}, indent=2))
        return 0
    print("\n".join(validation_summary_lines(rows, coverage)))
    if not args.details:
        return 0
    print("#")
    print("# ---- details")
    print(f"# {'case':<30} {'role':<8} {'system':<11} {'nodes':>5} {'size (B)':>12} {'algo/proto':>13} "
          f"{'measured':>9} {'predicted':>9} {'p/m':>6} {'NCCL':>5}  source")
    for r in rows:
        print(f"  {r['id']:<30} {r['role']:<8} {r['system']:<11} {r['nodes']:>5} {r['nbytes']:>12d} "
              f"{r['algorithm'] + '/' + r['protocol']:>13} {r['measured_busbw'] / units.GB:>9.1f} {r['predicted_busbw'] / units.GB:>9.1f} "
              f"{r['ratio']:>6.2f} {r['nccl_priced'] + ('*' if r['nccl_from'].startswith('assumed') else ''):>5}  {r['source']}")
    print("# NCCL: the release whose rules priced the case; * assumed (the source states none: the newest release out at "
          "its date; or older than the oldest tables read)")
    print(f"# TEST cases only: >= 256 MB: {summary['large_within_20pct']} of {summary['large']} within 20% "
          f"({summary['large_share']:.0%}); < 1 MB: {summary['small_within_50pct']} of {summary['small']} "
          f"within 50% ({summary['small_share']:.0%})")
    for role, title in (("fit", "FIT set (cases used to set a constant): by regime"),
                        ("informed", "INFORMED set (looked at while making a structural choice; not independent): "
                                     "by regime"),
                        ("also", "ALSO set (re-runs of fit cases: not independent): by regime"),
                        ("test", "TEST set (never used to set or choose anything): by regime")):
        print(format_regimes(costmodel.validation_by_regime(rows, role), title))
    print(format_coverage(coverage))
    print("# goals on the TEST set:")
    print("\n".join(_goal_lines(rows)))
    study = costmodel.node_sweep_study(rows)
    print("# node-count sweeps beyond the model: (measured/predicted) change per doubling of nodes (1.00 = none)")
    for s in study:
        print(f"   {s['sweep'][:40]:<40} {s['fabric']:<11} NCCL {(s['nccl'] or '?').split()[0][:12]:<12} "
              f"nodes {s['nodes'][0]}-{s['nodes'][-1]} "
              f"(from {s['from_nodes']})  {s['residual_per_doubling']:.2f}  fit/informed cases: "
              f"{s['fit_cases']}/{s['informed_cases']}")
    if study:
        res = sorted(s["residual_per_doubling"] for s in study if not s["fit_cases"] and not s["informed_cases"])
        decline = costmodel.node_decline_constants()
        print(f"# the model's decline: x{decline['per_doubling']} per doubling beyond {decline['from_nodes']} nodes "
              f"(fit on {decline['source']}); the {len(res)} sweeps without fit or informed cases then fall "
              f"{res[0]:.2f}-{res[-1]:.2f} per doubling beyond it, median {res[len(res) // 2]:.2f} (chapter 05)")
    return 0


# library parameter -> the dest of the flag that sets it (``cli`` names the flag in an error line)
FLAGS = {"nccl_version": "nccl_version", "nic_gbit_s": "nic_gbit", "gpus_per_node": "ngpus", "nics_per_node": "nics",
         "factor": "stepfactor", "step": "stepbytes",
         "min_bytes": "minbytes", "max_bytes": "maxbytes", "algorithm": "algo"}


def register(subparsers) -> None:
    """Add the ``predict``, ``compare`` and ``validation`` commands to the course CLI."""
    p = subparsers.add_parser("predict", help="predict nccl-tests output for a collective on a catalog system")
    p.add_argument("collective", help=f"one of {', '.join(collectives.ids())}")
    systemfile.add_system_arguments(p)
    p.add_argument("-g", "--ngpus", type=cli.integer(low=1), default=None, help="GPUs per node (default: the system's)")
    p.add_argument("-b", "--minbytes", default="32M", help="smallest size, nccl-tests style (16G = 16 GiB)")
    p.add_argument("-e", "--maxbytes", default="32M", help="largest size")
    p.add_argument("-f", "--stepfactor", type=cli.number(low=1.0, low_inclusive=False), default=2.0,
                   help="size growth factor (> 1)")
    p.add_argument("-i", "--stepbytes", default=None, help="fixed size increment instead of a factor")
    p.add_argument("-d", "--datatype", default="float", choices=sorted(TYPE_SIZES), help="element type (count column)")
    p.add_argument("--nodes", type=cli.integer(low=1, high=100_000), default=None,
                   help="number of nodes (default 1, or the system file's)")
    p.add_argument("--nics", type=cli.integer(low=1), default=None, help="NICs per node (default: the system's)")
    p.add_argument("--fabric", default=None, choices=costmodel.fabric_kind_ids(),
                   help="network kind between nodes (default: the system's; data/fabrics.json)")
    p.add_argument("--proto", default="auto", choices=("auto",) + costmodel.PROTOCOLS,
                   help="NCCL protocol, as NCCL_PROTO (default: the fastest per size)")
    p.add_argument("--algo", default="auto", choices=costmodel.predict_algorithms(),
                   help="algorithm (default auto: fastest per size; flat ones on one node only)")
    p.add_argument("--spec", action="store_true", help="use spec bandwidth instead of achievable")
    p.add_argument("--nccl-version", dest="nccl_version", default=None, metavar="X.Y",
                   help=f"NCCL release whose tuning rules choose the algorithm and protocol (tables read for "
                        f"{', '.join(costmodel.nccl_versions())}; default {costmodel.default_nccl_version()}, the newest)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_predict, flags=FLAGS)

    c = subparsers.add_parser("compare", help="compare a real nccl-tests output file with the model")
    c.add_argument("file", help="nccl-tests output (text)")
    systemfile.add_system_arguments(c)
    c.add_argument("--collective", default=None, help="collective (default: read from the file)")
    c.add_argument("-g", "--ngpus", type=cli.integer(low=1), default=None, help="GPUs per node (default: from the file)")
    c.add_argument("--nodes", type=cli.integer(low=1, high=100_000), default=None,
                   help="nodes (default: distinct hosts in the file)")
    c.add_argument("--nics", type=cli.integer(low=1), default=None, help="NICs per node (default: the system's)")
    c.add_argument("--algo", default="auto", choices=costmodel.predict_algorithms(), help="algorithm for the model")
    c.add_argument("--proto", default="auto", choices=("auto",) + costmodel.PROTOCOLS,
                   help="NCCL protocol for the model (default: NCCL_PROTO in the file, else the fastest per size)")
    c.add_argument("--fabric", default=None, choices=costmodel.fabric_kind_ids(),
                   help="network kind between nodes (default: the system's)")
    c.add_argument("--nic-gbit", dest="nic_gbit", type=cli.number(low=0.0, low_inclusive=False), default=None,
                   help="one NIC's rate, Gb/s per direction (default: the system's; checked against the catalog's)")
    c.add_argument("--nccl-version", dest="nccl_version", default=None, metavar="X.Y",
                   help="NCCL release the run used, whose rules choose ring/tree and protocol (default: the file's, "
                        f"else {costmodel.default_nccl_version()})")
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(func=_compare, flags=FLAGS)

    v = subparsers.add_parser("validation", help="the cost model against published nccl-tests runs")
    v.add_argument("--details", action="store_true",
                   help="after the summary, every case, the by-regime tables, the ranges by regime and the node sweeps")
    v.add_argument("--json", action="store_true", help="print JSON with each case's source")
    v.set_defaults(func=_validation)
