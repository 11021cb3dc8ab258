"""The bench's command line: ``python -m course_lib.lab.bench`` on local ranks, or one rank of a torchrun job.

Bad input prints one line ``error: ...`` naming the option and its range, exit status 2.
"""
from __future__ import annotations

import os
import sys

from ... import validate
from .runner import SweepIncomplete, _config, _size_range, check_memory, oversubscription_note, sweep
from .table import HEADER, format_row, format_rows
from .timing import COLLECTIVES, DTYPES, measure


ONE_RANK_NOTE = ("note: 1 rank: nothing crosses a link between ranks, so busbw is 0 by definition ((n-1)/n = 0); "
                 "the times are the launch and a local copy, not the interconnect: start 2 or more ranks")


def _rank_counts(text):
    try:
        counts = [int(r) for r in str(text).split(",") if r.strip()]
    except ValueError:
        counts = []
    if not counts:
        raise ValueError(f"ranks (--ranks) must be a comma list of integers in [1, 64]; got {text!r}")
    return [validate.integer("ranks (--ranks)", r, low=1, high=64) for r in counts]


def _parse(argv):
    from ...cli import ArgumentParser  # the course's one error path: one line, exit 2

    parser = ArgumentParser(prog="python -m course_lib.lab.bench",
                                     description="Collective benchmark in nccl-tests form "
                                                 "(built-in vs hand-written algorithms).")
    parser.add_argument("-b", "--minbytes", default="64K", help="smallest size (bytes, or 64K, 1M...)")
    parser.add_argument("-e", "--maxbytes", default="64M", help="largest size")
    parser.add_argument("-f", "--stepfactor", type=float, default=4.0, help="size multiplier")
    parser.add_argument("-n", "--iters", type=int, default=5, help="timed repetitions (median reported)")
    parser.add_argument("-w", "--warmup", type=int, default=2, help="untimed repetitions")
    parser.add_argument("-d", "--dtype", default="float32", choices=DTYPES)
    parser.add_argument("--algorithms", default=None,
                        help="comma list; " + "; ".join(f"{c.name}: {','.join(c.algorithms)} (default "
                                                       f"{','.join(c.default_algorithms)})"
                                                       for c in COLLECTIVES.values()))
    parser.add_argument("--ranks", default="2", help="comma list of local rank counts (ignored under torchrun)")
    parser.add_argument("--pipeline", type=int, default=8, help="ring sub-chunks per step")
    parser.add_argument("--backend", default="auto", choices=("auto", "gloo", "nccl"))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per rank count")
    parser.add_argument("--collective", default="all_reduce", choices=tuple(COLLECTIVES),
                        help="all_to_all: the built-in all_to_all_single beside the hand-written direct exchange")
    return parser.parse_args(argv)


# what the command line's errors call each parameter: its name and the flag that sets it
CLI_NAMES = {"minbytes": "minbytes (-b)", "maxbytes": "maxbytes (-e)", "factor": "stepfactor (-f)",
             "iters": "iters (-n)", "warmup": "warmup (-w)", "dtype": "dtype (-d)", "pipeline": "pipeline (--pipeline)",
             "algorithms": "algorithms (--algorithms)", "collective": "collective (--collective)",
             "timeout": "timeout (--timeout)"}


def _checked(argv):
    """Parsed and checked command line: (args, config, local rank counts); ``ValueError`` names the option."""
    args = _parse(argv)
    sizes = _size_range(args.minbytes, args.maxbytes, args.stepfactor, CLI_NAMES)
    config = _config(sizes, args.algorithms, args.dtype, args.warmup, args.iters, args.pipeline, args.collective,
                     names=CLI_NAMES)
    validate.number(CLI_NAMES["timeout"], args.timeout, low=0.0, high=3600.0, low_inclusive=False)
    ranks = _rank_counts(args.ranks)
    if args.backend == "nccl":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("backend (--backend) nccl needs CUDA GPUs and this machine has none; "
                             "use gloo or auto")
    return args, config, ranks


def main(argv=None) -> int:
    """Command line: local ranks via ``run``, or one rank of a ``torchrun`` job when RANK is set.

    Bad input prints one line ``error: ...`` naming the option and its range, exit status 2.
    """
    from ...cli import report

    try:
        args, config, ranks = _checked(argv)
        under_torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ \
            and "course-lab-rank" not in _process_name()
        backend = args.backend
        if backend == "auto":
            import torch

            backend = "nccl" if under_torchrun and torch.cuda.is_available() else "gloo"
        local = int(os.environ.get("LOCAL_WORLD_SIZE", 1)) if under_torchrun else max(ranks)
        check_memory(max(config["sizes"]), local, backend)
    except SystemExit as exc:  # --help (0), or argparse's one-line error (2), already printed
        return exc.code if isinstance(exc.code, int) else 0
    except ValueError as exc:
        return report(exc)
    if under_torchrun:
        rows = _torchrun(config, args)
        if rows is None:
            return 0
        print(format_rows(rows), flush=True)
        return 0
    from ..launch import LabLimitError

    note = oversubscription_note(max(ranks), config["collective"], config["algorithms"])
    if note:
        print(note, file=sys.stderr, flush=True)
    if 1 in ranks:
        print(ONE_RANK_NOTE, file=sys.stderr, flush=True)
    print(HEADER, flush=True)
    try:  # each size's rows are printed as soon as they are measured, and kept when a later size fails
        sweep(ranks=ranks, backend=backend, timeout=args.timeout, on_row=lambda row: print(format_row(row), flush=True),
              on_note=lambda line: print(line, file=sys.stderr, flush=True), **config)
    except (SweepIncomplete, LabLimitError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


def _process_name():
    import multiprocessing

    return multiprocessing.current_process().name


def _torchrun(config, args):
    """One rank of a torchrun job: join from the environment, measure, print on rank 0."""
    import datetime

    import torch
    import torch.distributed as dist

    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = "cpu"
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo" if os.environ.get("MASTER_ADDR", "127.0.0.1")
                          in ("127.0.0.1", "localhost") else "")
    if not os.environ["GLOO_SOCKET_IFNAME"]:
        del os.environ["GLOO_SOCKET_IFNAME"]
    # device_id binds the NCCL communicator to this rank's GPU (without it torch warns that it guesses)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout),
                            **({"device_id": torch.device(device)} if backend == "nccl" else {}))
    if dist.get_rank() == 0 and dist.get_world_size() == 1:
        print(ONE_RANK_NOTE, file=sys.stderr, flush=True)
    try:
        rows = measure(dist.get_rank(), dist.get_world_size(), device=device, **config)
    finally:
        rank = dist.get_rank()
        dist.destroy_process_group()
    return rows if rank == 0 else None
