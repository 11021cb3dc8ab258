"""``python -m course_lib plan``: memory, traffic and step time of a parallel layout, or the planner's pick.

With --tp/--pp given it evaluates that layout; with --search (or without --tp) it runs the
planner and also prints the best layouts. --json prints the result as JSON (SI units).
"""
from __future__ import annotations


from . import cli, hardware, parallel


def _run(args) -> int:
    model = parallel.model(args.model)
    system = hardware.system(args.system)
    kwargs = dict(gpus=args.gpus, nodes=None if args.gpus else args.nodes)
    if args.validate:
        rows = parallel.validation_table(gpu_efficiency=args.gpu_efficiency)
        print(cli.dumps(rows) if args.json else parallel.validation_summary(rows))
        return 0
    out = {}
    if args.tp is not None or args.pp is not None:
        est = parallel.estimate(model, system, tp=args.tp or 1, pp=args.pp or 1, global_batch=args.global_batch,
                                micro_batch=args.micro_batch, zero=args.zero, recompute=args.recompute,
                                interleave=args.interleave, sequence_parallel=args.sequence_parallel,
                                gpu_efficiency=args.gpu_efficiency, dp_overlap=not args.no_dp_overlap, **kwargs)
        out["estimate"] = est.to_dict()
        if not args.json:
            print(est.summary())
    if args.search or (args.tp is None and args.pp is None):
        result = parallel.plan(model, system, global_batch=args.global_batch, gpu_efficiency=args.gpu_efficiency,
                               dp_overlap=not args.no_dp_overlap, **kwargs)
        out["plan"] = result.to_dict(top=args.top)
        if not args.json:
            if "estimate" in out:
                print()
            print(result.summary(top=args.top))
    if args.json:
        print(cli.dumps(out, default=str))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("plan", help="memory, traffic and step time of a TP x PP x DP layout; the planner")
    p.add_argument("--model", default="gpt3-175b", help=f"model id: {', '.join(parallel.model_ids())}")
    p.add_argument("--system", default="dgx-a100", help="system id (python -m course_lib systems)")
    p.add_argument("--nodes", type=cli.integer(low=1, high=10**6), default=None, help="number of nodes")
    p.add_argument("--gpus", type=cli.integer(low=1, high=10**7), default=None, help="number of GPUs (instead of --nodes)")
    p.add_argument("--tp", type=cli.integer(low=1), default=None, help="tensor-parallel size")
    p.add_argument("--pp", type=cli.integer(low=1), default=None, help="pipeline-parallel size")
    p.add_argument("--global-batch", type=cli.integer(low=1, high=10**9), default=1536, help="global batch, sequences")
    p.add_argument("--micro-batch", type=cli.integer(low=1), default=1, help="micro-batch, sequences")
    p.add_argument("--zero", type=cli.integer(low=0, high=3), default=0, help="ZeRO stage")
    p.add_argument("--recompute", default="full", choices=list(parallel.RECOMPUTE), help="activation recomputation")
    p.add_argument("--interleave", type=cli.integer(low=1), default=1, help="virtual pipeline stages per GPU")
    p.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism")
    p.add_argument("--gpu-efficiency", type=cli.number(low=0.0, high=1.0, low_inclusive=False), default=None,
                   help="fraction of peak FLOP/s reached by compute (default: the sourced assumption)")
    p.add_argument("--no-dp-overlap", action="store_true", help="do not overlap gradient all-reduce with backward")
    p.add_argument("--search", action="store_true", help="also run the planner")
    p.add_argument("--top", type=cli.integer(low=1, high=10**6), default=10, help="layouts the planner lists")
    p.add_argument("--validate", action="store_true", help="print the validation table against published results")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_check_and_run, flags={"model_id": "model", "system_id": "system"})


def _check_and_run(args) -> int:
    if args.gpus is None and args.nodes is None and not args.validate:
        raise ValueError("nodes must be given (--nodes N or --gpus N)")
    return _run(args)
