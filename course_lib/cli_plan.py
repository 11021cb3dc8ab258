"""``python -m course_lib plan``: memory, traffic and step time of a parallel layout, or the planner's pick.

With --tp/--pp given it evaluates that layout; with --search (or without --tp) it runs the
planner and also prints the best layouts. Each step time comes with its range (``costmodel.step_range``:
the exposed communication scaled by the spread of published runs in its regimes, borrowed where a regime
has few). --json prints the result as JSON (SI units).
"""
from __future__ import annotations

from . import cli, costmodel, datafiles, parallel, systemfile, tp_scans


def _models_table() -> list[dict]:
    """Every catalog model: id, name, shape, parameters (total, active) and its source."""
    rows = []
    for mid in parallel.model_ids():
        m = parallel.model(mid)
        src = datafiles.source(m.source)
        rows.append({"id": mid, "name": m.name, "layers": m.layers, "hidden": m.hidden, "heads": m.heads,
                     "kv_heads": m.kv, "experts": m.experts, "top_k": m.top_k if m.experts else 0,
                     "attention": "MLA" if m.mla else ("GQA" if m.kv < m.heads else "MHA"), "seq_len": m.seq_len,
                     "params": m.params, "active_params": m.active_params, "source": m.source, "url": src["url"]})
    return rows


def _run(args) -> int:
    if args.list_models:
        rows = _models_table()
        if args.json:
            print(cli.dumps(rows))
            return 0
        print(f"{'model':<17} {'name':<20} {'layers':>6} {'hidden':>6} {'attn':<4} {'experts':>9} {'params':>8} "
              f"{'active':>7}  source")
        for r in rows:
            moe = f"{r['experts']} top{r['top_k']}" if r["experts"] else "-"
            print(f"{r['id']:<17} {r['name'][:20]:<20} {r['layers']:>6} {r['hidden']:>6} {r['attention']:<4} "
                  f"{moe:>9} {r['params'] / 1e9:>7.1f}B {r['active_params'] / 1e9:>6.1f}B  {r['source']} ({r['url']})")
        return 0
    model = parallel.model(args.model)
    system = systemfile.system_from_args(args)
    kwargs = dict(gpus=args.gpus, nodes=args.nodes)  # counted (and checked against each other) by the library
    if args.validate_tp:
        rows = tp_scans.scan_table()
        print(cli.dumps(rows) if args.json else tp_scans.scan_summary(rows))
        return 0
    if args.validate_modern:
        rows = parallel.modern_validation_table()
        print(cli.dumps(rows) if args.json else parallel.modern_validation_summary(rows))
        return 0
    if args.validate:
        rows = list(parallel.training_validation_table())
        memory = [r for r in parallel.validation_table() if r["kind"] == "memory"]
        if args.json:
            print(cli.dumps({"training_runs": rows, "memory": memory}))
        else:
            print(parallel.training_validation_summary(rows))
            print("\nModel-state memory against the ZeRO paper (test):")
            print(parallel.validation_summary(memory))
        return 0
    out = {}
    modern = dict(seq_len=args.seq_len, moe_imbalance=args.moe_imbalance, ep_overlap=args.ep_overlap,
                  cp_kind=args.cp_kind, precision=args.precision, fp8_dispatch=args.fp8_dispatch)
    if any(x is not None for x in (args.tp, args.pp, args.ep, args.cp, args.hsdp)) or args.fsdp:
        est = parallel.estimate_choosing(model, system, tp=args.tp or 1, pp=args.pp or 1, global_batch=args.global_batch,
                                pp_layers=_pp_layers(args.pp_layers), etp=args.etp,
                                micro_batch=args.micro_batch, zero=args.zero, recompute=args.recompute,
                                interleave=args.interleave, sequence_parallel=args.sequence_parallel,
                                gpu_efficiency=args.gpu_efficiency, dp_overlap=not args.no_dp_overlap, **kwargs,
                                ep=args.ep or 1, cp=args.cp or 1, fsdp=args.fsdp, hsdp=args.hsdp, **modern)
        out["estimate"] = est.to_dict()
        out["estimate"]["step_range"] = costmodel.step_range(est, system)
        out["estimate"]["training_range"] = parallel.training_range(est)
        if not args.json:
            print(est.summary())
            print(f"  range: {costmodel.step_phrase(est, system)}")
            print(f"  range (published training runs): {parallel.training_range_phrase(est)}")
    if args.search or "estimate" not in out:
        search = {}
        if args.ep is not None:
            search["ep_options"] = (args.ep,)
        if args.cp is not None:
            search["cp_options"] = (args.cp,)
        if args.etp is not None:
            search["etp_options"] = (args.etp,)
        if args.fsdp or args.hsdp is not None:
            search["zero_stages"] = (3,)
            search["hsdp_options"] = (args.hsdp,)
        elif args.zero is not None:
            search["zero_stages"] = (args.zero,)
        # not given: the least recomputation that fits is searched too (the library's plan() keeps its own list)
        search["recompute_options"] = parallel.AUTO_RECOMPUTE if args.recompute is None else (args.recompute,)
        result = parallel.plan(model, system, global_batch=args.global_batch, gpu_efficiency=args.gpu_efficiency,
                               dp_overlap=not args.no_dp_overlap, **kwargs, **search, **modern)
        out["plan"] = result.to_dict(top=args.top)
        if result.ranked:
            out["plan"]["best_step_range"] = costmodel.step_range(result.best, system)
            out["plan"]["best_training_range"] = parallel.training_range(result.best)
        if not args.json:
            if "estimate" in out:
                print()
            print(result.summary(top=args.top))
            if result.ranked:
                print(f"range of the best layout's step: {costmodel.step_phrase(result.best, system)}")
                print(f"  and from published training runs: {parallel.training_range_phrase(result.best)}")
    if args.json:
        print(cli.dumps(out, default=str))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("plan", help="memory, traffic and step time of a TP x PP x DP layout; the planner")
    p.add_argument("--model", default="gpt3-175b", help=f"model id: {', '.join(parallel.model_ids())}")
    systemfile.add_system_arguments(p, default="dgx-a100")
    p.add_argument("--nodes", type=cli.integer(low=1, high=10**6), default=None, help="number of nodes")
    p.add_argument("--gpus", type=cli.integer(low=1, high=10**7), default=None, help="number of GPUs (instead of --nodes)")
    p.add_argument("--tp", type=cli.integer(low=1), default=None, help="tensor-parallel size")
    p.add_argument("--pp", type=cli.integer(low=1), default=None, help="pipeline-parallel size")
    p.add_argument("--global-batch", type=cli.integer(low=1, high=10**9), default=1536, help="global batch, sequences")
    p.add_argument("--micro-batch", type=cli.integer(low=1), default=1, help="micro-batch, sequences")
    p.add_argument("--zero", type=cli.integer(low=0, high=3), default=None,
                   help="ZeRO stage (default: chosen, and said: the fastest of ZeRO-0 and, with DP > 1, ZeRO-1 that "
                        "fits; ZeRO-2/3 only if neither does)")
    p.add_argument("--recompute", default=None, choices=list(parallel.RECOMPUTE),
                   help="activation recomputation (default: chosen, and said: the fastest of none, selective, full "
                        "that fits)")
    p.add_argument("--interleave", type=cli.integer(low=1), default=1, help="virtual pipeline stages per GPU")
    p.add_argument("--pp-layers", default=None, metavar="FIRST,LAST|N1,...,Np",
                   help="layers of the first and last pipeline stages (the rest split evenly; '-' leaves one to "
                        "the rule), or one count per stage; default: Megatron's rule (even, or the embedding and "
                        "loss counted as layers when pp divides layers + 2 or + 1)")
    p.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism")
    p.add_argument("--gpu-efficiency", type=cli.number(low=0.0, high=1.0, low_inclusive=False), default=None,
                   help="fraction of peak FLOP/s reached by compute (default: the sourced assumption)")
    p.add_argument("--no-dp-overlap", action="store_true", help="do not overlap gradient all-reduce with backward")
    p.add_argument("--ep", type=cli.integer(low=1, high=4096), default=None, help="expert-parallel size (an MoE model; divides its experts)")
    p.add_argument("--etp", type=cli.integer(low=1, high=4096), default=None,
                   help="expert tensor-parallel size (an MoE; default: --tp, Megatron's default). EP x ETP fold over "
                        "TP x CP x DP, so with --etp 1 expert parallelism can span the tensor-parallel ranks")
    p.add_argument("--cp", type=cli.integer(low=1, high=2**20), default=None, help="context-parallel size (divides the sequence length)")
    p.add_argument("--cp-kind", default="ring", choices=list(parallel.CP_KINDS),
                   help="context parallelism: ring attention or Ulysses all-to-all")
    p.add_argument("--fsdp", action="store_true", help="FSDP: ZeRO-3 over all data-parallel ranks")
    p.add_argument("--hsdp", type=cli.integer(low=1, high=10**7), default=None, metavar="SHARD_GROUP",
                   help="HSDP: shard within groups of SHARD_GROUP ranks, replicate across them")
    p.add_argument("--seq-len", type=cli.integer(low=1, high=10**8), default=None, help="sequence length (default: the model's)")
    p.add_argument("--moe-imbalance", type=cli.number(low=1.0, high=4096.0), default=1.0,
                   help="busiest expert rank's tokens / the mean (>= 1, dropless routing)")
    p.add_argument("--ep-overlap", action="store_true",
                   help="hide all-to-alls behind another micro-batch's compute (DualPipe-style)")
    p.add_argument("--precision", default="bf16", choices=list(parallel.PRECISIONS),
                   help="training precision recipe (Transformer Engine's: linear layers in FP8/MXFP8, attention, "
                        "norms, embedding and output layer in BF16); the GPU must have that peak")
    p.add_argument("--fp8-dispatch", action="store_true",
                   help="send the MoE dispatch all-to-all in FP8, the combine in BF16 (DeepSeek-V3); default: none")
    p.add_argument("--search", action="store_true", help="also run the planner")
    p.add_argument("--top", type=cli.integer(low=1, high=10**6), default=10, help="layouts the planner lists")
    p.add_argument("--validate", action="store_true", help="print the validation table against published results")
    p.add_argument("--validate-tp", action="store_true",
                   help="print published tensor-parallel scans (TP 2-32) against the planner, relative to TP 8")
    p.add_argument("--validate-modern", action="store_true",
                   help="print the validation table for FSDP/HSDP, context parallelism, MoE and all-to-all (fit/test)")
    p.add_argument("--list-models", action="store_true",
                   help="list the catalog's models: shape, parameters (total, active) and source")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_check_and_run, flags={"model_id": "model", "system_id": "system"})


def _pp_layers(text):
    """--pp-layers 'FIRST,LAST' or 'N1,...,Np' ('-' for a count the rule sets) as a tuple, or None."""
    if text is None:
        return None
    try:
        return tuple(None if x.strip() == "-" else int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"pp_layers must be FIRST,LAST or one integer count per stage, comma-separated "
                         f"('-' for one the rule sets), got {text!r}") from None


def _check_and_run(args) -> int:
    if args.gpus is None and args.nodes is None and not (args.validate or args.validate_modern or args.validate_tp
                                                          or args.list_models):
        raise ValueError("nodes must be given (--nodes N or --gpus N)")
    if args.fsdp and args.hsdp is not None:
        raise ValueError("fsdp and hsdp exclude each other: --fsdp shards over all ranks, --hsdp over groups")
    return _run(args)
