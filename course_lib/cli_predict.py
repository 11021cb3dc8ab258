"""``python -m course_lib predict`` and ``compare``: the cost model in nccl-tests' own columns.

predict prints size (B), count (elements), type, redop, root, time (us), algbw and busbw
(GB/s, 1e9 bytes/s) for a size sweep ``-b`` to ``-e`` growing by ``-f``, as all_reduce_perf does.
Sizes follow nccl-tests: ``-e 16G`` is 16 GiB. compare reads a real nccl-tests output file and
prints measured vs predicted per size, with the ratio predicted/measured.
"""
from __future__ import annotations

import re

import numpy as np

from . import cli, collectives, costmodel, datafiles, evidence, systemfile, units, validate

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


def format_table(pred: costmodel.Prediction, dtype="float") -> str:
    """The prediction as nccl-tests-style lines (header lines start with '#')."""
    lines = [f"# course_lib cost model: {pred.collective} on {pred.system}, {pred.nodes} node(s) x "
             f"{pred.gpus_per_node} GPUs = {pred.ranks} ranks, algorithm {pred.algorithm}, "
             f"{'achievable' if pred.achievable else 'spec'} bandwidth",
             "#  size: bytes; time: us; algbw, busbw: GB/s (1e9 B/s) as nccl-tests defines them",
             "#", f"#{'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>6} {'time':>10} {'algbw':>8} {'busbw':>8}  algo/proto",
             f"#{'(B)':>12} {'(elements)':>12} {'':>8} {'':>6} {'':>6} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}"]
    coll = collectives.get(pred.collective)
    counts = _count(coll, pred.nbytes, pred.ranks, dtype)
    redop, root = coll.reduction or "none", "0" if coll.has_root else "-1"
    for i, n in enumerate(pred.nbytes):
        lines.append(f" {int(n):>12d} {counts[i]:>12d} {dtype:>8} {redop:>6} "
                     f"{root:>6} {pred.time_s[i] * 1e6:>10.2f} "
                     f"{pred.algbw[i] / units.GB:>8.2f} {pred.busbw[i] / units.GB:>8.2f}  {pred.algorithms[i]}/{pred.protocols[i]}")
    for note in pred.notes:
        lines.append(f"# note: {note}")
    if pred.ranks == 1:
        lines.append("# note: one rank: no byte crosses a link, so busbw is 0 (bus bandwidth is undefined here); "
                     "the time is the call's fixed cost alone, so algbw is not a link's rate either")
    return "\n".join(lines)


def _to_json(pred: costmodel.Prediction) -> dict:
    return {"collective": pred.collective, "system": pred.system, "nodes": pred.nodes,
            "gpus_per_node": pred.gpus_per_node, "ranks": pred.ranks, "algorithm": pred.algorithm,
            "achievable": pred.achievable, "units": {"size": "bytes", "time": "us", "algbw": "GB/s", "busbw": "GB/s"},
            "rows": [{"size": int(n), "time_us": float(t * 1e6), "algbw_gb_s": float(a / units.GB),
                      "busbw_gb_s": float(b / units.GB), "algorithm": str(al), "protocol": str(pr)}
                     for n, t, a, b, al, pr in zip(pred.nbytes, pred.time_s, pred.algbw, pred.busbw, pred.algorithms,
                                                   pred.protocols)],
            "notes": pred.notes, "efficiencies": costmodel.efficiency_table()}


def _collective_arg(text):
    name = text.lower().replace("alltoall", "all_to_all").removesuffix("_perf")
    return validate.choice("collective", name, collectives.ids())


def _predict(args) -> int:
    collective = _collective_arg(args.collective)
    sizes = sweep(args.minbytes, args.maxbytes, args.stepfactor, args.stepbytes)
    sys_ = systemfile.system_from_args(args)
    nodes = args.nodes if args.nodes is not None else systemfile.nodes_default(sys_)
    pred = costmodel.predict(collective, sizes, sys_, gpus_per_node=args.ngpus, nodes=nodes,
                             algorithm=args.algo, achievable=not args.spec, nics_per_node=args.nics)
    if args.json:
        print(cli.dumps(_to_json(pred)))
    else:
        print(format_table(pred, args.datatype))
    return 0


# ---------------------------------------------------------------- compare

_RANK_RE = re.compile(r"#\s*Rank\s+\d+.*?\bon\s+(\S+)\s+device")


def parse_nccl_tests(text) -> dict:
    """Parse nccl-tests output: rows of size, time (us), algbw and busbw (GB/s), out-of-place and in-place.

    Returns ``{"collective", "ranks", "hosts", "rows": [{"size", "time_us", "algbw", "busbw"}]}``;
    the out-of-place column is used. Works with and without the ``root`` column and MPI ``[0]`` prefixes.
    """
    if not isinstance(text, str):
        raise ValueError("text must be the contents of an nccl-tests output file (str)")
    collective, hosts, ranks, rows = None, [], 0, []
    for raw in text.splitlines():
        line = re.sub(r"\[\d+\]", " ", raw).strip()
        m = re.search(r"Collective test starting:\s*(\w+)", line) or re.search(r"build/(\w+?)_perf", line)
        if m and collective is None:
            try:
                collective = _collective_arg(m.group(1))
            except ValueError:
                pass
        rm = _RANK_RE.search(line)
        if rm:
            ranks += 1
            hosts.append(rm.group(1))
            continue
        if not line or line.startswith("#"):
            continue
        tokens = line.split()
        if len(tokens) < 6 or not (tokens[0].isdigit() and tokens[1].isdigit()):
            continue
        rest = [t for t in tokens[3:] if not re.fullmatch(r"[A-Za-z_]+", t) or t == "N/A"]
        nums = []
        for t in rest:
            try:
                nums.append(float(t))
            except ValueError:
                nums.append(float("nan"))
        if len(nums) in (5, 9):  # root column present
            nums = nums[1:]
        if len(nums) < 3:
            continue
        rows.append({"size": int(tokens[0]), "time_us": nums[0], "algbw": nums[1], "busbw": nums[2]})
    if not rows:
        raise ValueError("text has no nccl-tests result rows (lines starting with size and count)")
    return {"collective": collective, "ranks": ranks or None, "hosts": sorted(set(hosts)), "rows": rows}


MAX_COMPARE_BYTES = 4 * 2**20  # an nccl-tests log is a few KB; NCCL_DEBUG=INFO output of a large job a few MB


def _finite(value):
    """A float for JSON: None (null) where it is NaN or infinite."""
    value = float(value)
    return value if np.isfinite(value) else None


def _compare(args) -> int:
    text = cli.read_text(args.file, MAX_COMPARE_BYTES, "file", what="the text that an nccl-tests run printed")
    try:
        parsed = parse_nccl_tests(text)
    except ValueError:
        raise ValueError(f"file {args.file!r} has no nccl-tests result rows (lines starting with size and count); "
                         "pass the text that an nccl-tests run printed") from None
    collective = _collective_arg(args.collective) if args.collective else parsed["collective"]
    if collective is None:
        raise ValueError("collective is not in the file; pass --collective (e.g. all_reduce)")
    sys_ = systemfile.system_from_args(args)
    nodes = args.nodes or (len(parsed["hosts"]) if parsed["hosts"] else systemfile.nodes_default(sys_))
    g = args.ngpus or (max(1, parsed["ranks"] // nodes) if parsed["ranks"] else sys_.gpus_per_node)
    sizes = np.array([r["size"] for r in parsed["rows"]], dtype=float)
    pred = costmodel.predict(collective, sizes, sys_, gpus_per_node=g, nodes=nodes, algorithm=args.algo,
                             nics_per_node=args.nics)
    out = []
    for r, t, b, al in zip(parsed["rows"], pred.time_s, pred.busbw, pred.algorithms):
        measured = _finite(r["busbw"])
        ratio = None
        if measured:
            ratio = _finite(evidence.compare(r["size"], b / units.GB,
                                             evidence.measurement(measured, "GB/s busbw", what=args.file)).ratio)
        out.append({"size": r["size"], "measured_time_us": _finite(r["time_us"]), "predicted_time_us": _finite(t * 1e6),
                    "measured_busbw": measured, "predicted_busbw": _finite(b / units.GB), "ratio": ratio,
                    "algorithm": str(al)})
    if args.json:
        print(cli.dumps({"collective": collective, "system": sys_.id, "nodes": nodes, "gpus_per_node": g,
                          "units": {"time": "us", "busbw": "GB/s"}, "rows": out}))
        return 0
    print(f"# {collective} on {sys_.id}: {nodes} node(s) x {g} GPUs; busbw in GB/s, time in us; "
          "ratio = predicted / measured busbw; n/a: not in the file")

    def cell(value, width, digits=2):
        return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.{digits}f}"

    print(f"#{'size':>12} {'meas time':>10} {'pred time':>10} {'meas busbw':>10} {'pred busbw':>10} {'ratio':>6}  algo")
    for r in out:
        print(f" {r['size']:>12d} {cell(r['measured_time_us'], 10)} {cell(r['predicted_time_us'], 10)} "
              f"{cell(r['measured_busbw'], 10)} {cell(r['predicted_busbw'], 10)} {cell(r['ratio'], 6)}  {r['algorithm']}")
    return 0


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


def _validation(args) -> int:
    rows = costmodel.validation_table()
    summary = costmodel.validation_summary(rows)
    if args.json:
        print(cli.dumps({"cases": [dict(r, source=datafiles.source(r["source"])) for r in rows], "summary": summary,
                         "by_regime": {role: costmodel.validation_by_regime(rows, role) for role in ("fit", "test")},
                         "goals": costmodel.validation_goals(rows)},
                         indent=2))
        return 0
    print("# course_lib cost model vs published nccl-tests runs (busbw in GB/s, predicted/measured)")
    print(f"# {'case':<30} {'role':<4} {'system':<11} {'nodes':>5} {'size (B)':>12} {'algo/proto':>13} "
          f"{'measured':>9} {'predicted':>9} {'p/m':>6}  source")
    for r in rows:
        print(f"  {r['id']:<30} {r['role']:<4} {r['system']:<11} {r['nodes']:>5} {r['nbytes']:>12d} "
              f"{r['algorithm'] + '/' + r['protocol']:>13} {r['measured_busbw'] / units.GB:>9.1f} {r['predicted_busbw'] / units.GB:>9.1f} "
              f"{r['ratio']:>6.2f}  {r['source']}")
    print(f"# {summary['cases']} cases ({summary['fit_cases']} fit, {summary['test_cases']} test) from "
          f"{summary['sources']} sources; >= 256 MB: {summary['large_within_20pct']} of {summary['large']} within 20% "
          f"({summary['large_share']:.0%}); < 1 MB: {summary['small_within_50pct']} of {summary['small']} "
          f"within 50% ({summary['small_share']:.0%}). Sources: --json")
    for role, title in (("fit", "FIT set (cases used to set a constant): by regime"),
                        ("test", "TEST set (never used to set a constant): by regime")):
        print(format_regimes(costmodel.validation_by_regime(rows, role), title))
    print("# goals on the TEST set (issue 14):")
    for g in costmodel.validation_goals(rows):
        miss = f"; misses: {', '.join(g['misses'])}" if g.get("misses") else ""
        print(f"   {g['name']:<30} {g['within']:>3} of {g['cases']:<3} ({g['share']:.0%}; wanted {g['wanted']:.0%}) "
              f"{'met' if g['met'] else 'NOT met'}{miss}")
    return 0


# library parameter -> the dest of the flag that sets it (``cli`` names the flag in an error line)
FLAGS = {"gpus_per_node": "ngpus", "nics_per_node": "nics", "factor": "stepfactor", "step": "stepbytes",
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
    p.add_argument("--algo", default="auto", choices=costmodel.predict_algorithms(),
                   help="algorithm (default auto: fastest per size; flat ones on one node only)")
    p.add_argument("--spec", action="store_true", help="use spec bandwidth instead of achievable")
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
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(func=_compare, flags=FLAGS)

    v = subparsers.add_parser("validation", help="the cost model against published nccl-tests runs")
    v.add_argument("--json", action="store_true", help="print JSON with each case's source")
    v.set_defaults(func=_validation)
