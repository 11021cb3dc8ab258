"""The rank side of the bench: each collective's inputs and operations, and how one size is timed.

Timing: every repetition meets at a barrier, then runs ``batch_for(size)`` operations back
to back on every rank (as nccl-tests does) and stamps the clock after each one. The first
operation of a batch carries the skew with which ranks left the barrier (one message latency
or more) and is dropped when the batch has more than one; the others start when the previous
operation ended, on every rank. An operation's time is the slowest rank's. ``time_s`` is the
median over all timed operations of ``iters`` repetitions after ``warmup`` untimed ones, and
``mean_s`` their mean, the figure nccl-tests prints. On a busy or virtual machine the two
differ: one operation in twenty may stall for milliseconds when the scheduler parks a rank,
which moves the mean but not the median. (On GPUs the clock is read once per batch, after a
synchronize, and every operation gets the batch's average.) Algorithms run interleaved inside
each repetition (rotating order), so a noisy neighbour slows them all alike and their ratio
stays fair. Correctness is checked on the first, untimed operation of each algorithm, run from
a fresh copy of the inputs: they hold small integers, so every algorithm's sum is exact and the
correctness column compares bits (``#wrong`` counts elements that differ on any rank). That
operation also measures how long one takes: where one is slower than ``REP_BUDGET_S`` (many
ranks on few cores), a repetition times fewer back to back and the warm-up repetitions are
skipped (the first operation was the warm-up), so a 64-rank sweep ends in minutes, not hours.

Collectives: as in nccl-tests, each one fills one ``Collective`` (name, byte count, inputs with
their exact expected output, the operation of each algorithm) in ``COLLECTIVES``, and the
harness (``measure``, ``sweep``, the command line) runs any of them the same way. ``all_reduce``
(the default) and ``all_to_all`` (expert parallelism's dispatch, ``--collective all_to_all``:
gloo's ``all_to_all_single`` beside the hand-written exchange, ``direct``; size is each rank's whole send
buffer, nccl-tests' convention). The busbw factor and the algorithm ids are the course registry's
(``course_lib.collectives``; ``builtin`` is gloo's own); the lab's older names ``tree`` and ``pairwise``
are accepted as aliases (``metrics.ALGORITHM_ALIASES``).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

from ... import validate
from .. import metrics

DTYPES = ("float32", "float64", "int32", "int64")
MAX_BYTES = 2 * 2**30


@dataclass(frozen=True)
class Collective:
    """One collective the bench runs: what nccl-tests' per-collective struct holds.

    ``count(nbytes, itemsize, ranks)``: elements in each rank's buffer for a message of ``nbytes``;
    ``inputs(count, rank, ranks, dtype, device)``: (this rank's input, the exact output it must end
    with); ``op(algorithm, pipeline)``: ``f(out, inp)``, one operation writing ``out`` (which holds a
    copy of ``inp`` before it runs); ``yours(fn, rank, ranks)``: the same for a learner's function,
    called as the chapter's exercise calls it. The busbw factor is the registry's, by ``name``.
    """

    name: str
    algorithms: tuple
    default_algorithms: tuple
    count: Callable
    inputs: Callable
    op: Callable
    yours: Callable


def _all_reduce_op(name, pipeline):
    import torch.distributed as dist

    from .. import algorithms

    if name == "builtin":
        return lambda out, inp: dist.all_reduce(out)
    if name == "ring":
        return lambda out, inp: algorithms.ring_all_reduce(out, pipeline=pipeline)
    fn = getattr(algorithms, f"{name}_all_reduce")
    return lambda out, inp: fn(out)


def _all_reduce_inputs(count, rank, world_size, dtype, device):
    """This rank's input (element i holds i % 13 + rank) and the exact sum over all ranks.

    Built in place from one int32 index, so the setup never holds more than the two results
    and the index (the int64 temporaries of ``arange(...) % 13 + rank`` cost 6 bytes per byte
    of a float32 message).
    """
    import torch

    index = torch.arange(count, dtype=torch.int32, device=device).remainder_(13)
    src = index.to(dtype, copy=True).add_(rank)
    expected = index.to(dtype, copy=True).mul_(world_size).add_(world_size * (world_size - 1) // 2)
    return src, expected


def _all_to_all_op(name, pipeline):
    import torch.distributed as dist

    from .. import algorithms

    if name == "builtin":
        return lambda out, inp: dist.all_to_all_single(out, inp)
    return getattr(algorithms, f"{name}_all_to_all")


def _all_to_all_inputs(count, rank, world_size, dtype, device="cpu"):
    """This rank's send buffer of ``count`` elements (``world_size`` chunks of c = count / p; chunk j,
    for rank j, holds ``(13 rank + j + k) % 251``, k < c) and what it must receive: chunk j from
    rank j, its chunk ``rank``, so ``(13 j + rank + k) % 251``. Small integers: exact in every dtype."""
    import torch

    c = count // world_size
    j = torch.arange(world_size, dtype=torch.int32, device=device).repeat_interleave(c)
    jk = torch.arange(c, dtype=torch.int32, device=device).repeat(world_size).add_(j)
    src = jk.add(13 * rank).remainder_(251).to(dtype)
    expected = j.mul_(12).add_(jk).add_(rank).remainder_(251).to(dtype)  # 13 j + k + rank
    return src, expected


COLLECTIVES = {c.name: c for c in (
    Collective("all_reduce", ("builtin", "ring", "naive", "halving_doubling", "binomial_tree"), ("builtin", "ring"),
               count=lambda nbytes, itemsize, p: max(1, int(nbytes) // itemsize),
               inputs=_all_reduce_inputs, op=_all_reduce_op,
               yours=lambda fn, rank, p: lambda out, inp: fn(out, rank, p)),
    Collective("all_to_all", ("builtin", "direct"), ("builtin", "direct"),
               count=lambda nbytes, itemsize, p: p * max(1, int(nbytes) // (itemsize * p)),
               inputs=_all_to_all_inputs, op=_all_to_all_op,
               yours=lambda fn, rank, p: lambda out, inp: fn(out, inp, rank, p)),
)}


BATCH_BYTES = 16 * 2**20
MAX_BATCH = 20


def batch_for(nbytes) -> int:
    """Operations timed back to back per repetition: enough to move ``BATCH_BYTES`` (16 MiB),
    between 1 and ``MAX_BATCH`` (20). ``nbytes`` > 0."""
    nbytes = validate.positive("nbytes", nbytes)
    return max(1, min(MAX_BATCH, int(BATCH_BYTES // nbytes)))


REP_BUDGET_S = 0.5  # the longest a repetition's batch of one operation should take


def _first_ops(ops, names, buf, src, expected, checked, sync, device) -> tuple[dict, list]:
    """One untimed operation of each of ``names``, from a fresh copy of the inputs: (seconds each took,
    the slowest rank's; for each of ``checked``, the elements that differ from ``expected`` on any rank)."""
    import torch
    import torch.distributed as dist

    took, wrong = [], []
    for name in names:
        buf.copy_(src)
        sync()
        dist.barrier()
        start = time.perf_counter()
        ops[name][0]()
        sync()
        took.append(time.perf_counter() - start)
        if name in checked:
            wrong.append(int((buf != expected).sum()))
    slowest = torch.tensor(took, dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    bad = torch.tensor(wrong, dtype=torch.float64, device=device)
    dist.all_reduce(bad, op=dist.ReduceOp.SUM)
    return dict(zip(names, slowest.tolist())), [int(x) for x in bad.tolist()]


def time_ops(op, batch: int, sync=lambda: None, per_op: bool = True) -> list[float]:
    """Run ``op()`` ``batch`` (>= 1) times back to back; seconds per operation.

    ``per_op``: one time per operation, the first dropped when ``batch`` > 1 (it carries the
    barrier's skew); otherwise one entry, the batch's average, read after ``sync()``.
    """
    if not per_op:
        start = time.perf_counter()
        for _ in range(batch):
            op()
        sync()
        return [(time.perf_counter() - start) / batch]
    stamps = [time.perf_counter()]
    for _ in range(batch):
        op()
        stamps.append(time.perf_counter())
    elapsed = [b - a for a, b in zip(stamps, stamps[1:])]
    return elapsed[1:] if batch > 1 else elapsed


def measure(rank: int, world_size: int, sizes, algorithms, dtype="float32", warmup=2, iters=5,
            pipeline=8, device="cpu", custom=None, collective="all_reduce") -> list[dict]:
    """Worker body (one rank, process group already joined): returns the rows, same on every rank."""
    return measure_with_probes(rank, world_size, sizes, algorithms, dtype, warmup, iters, pipeline, device,
                               custom=custom, collective=collective)[0]


def measure_with_probes(rank: int, world_size: int, sizes, algorithms, dtype="float32", warmup=2, iters=5,
                        pipeline=8, device="cpu", probes=None, custom=None,
                        collective="all_reduce", report=None) -> tuple[list[dict], list[dict]]:
    """``measure``, plus other operations timed in the same repetitions as the collective's.

    ``probes(count, itemsize)`` returns ``{name: (op, nbytes)}`` for one size (``count``
    elements): each ``op()`` is timed like the collective, ``batch_for(nbytes)`` back to back.
    Returns (rows, probe rows); a probe row holds ``size`` (the collective's bytes), the
    median seconds per operation of every probe, the slowest rank's, and under ``times`` each
    probe's list of those per-operation times. ``custom`` ``{name: fn}`` adds algorithms of one's
    own (a learner's ring: ``fn(tensor, rank, world_size)`` for all_reduce, ``fn(output, input,
    rank, world_size)`` for all_to_all), timed and checked like the built-in ones.

    Before a size is timed, one untimed operation of each kind measures how long it takes (the slowest
    rank's), and a repetition's batch is cut to what fits ``REP_BUDGET_S``: many ranks on few cores
    make a small all-reduce take seconds, and 20 of them per repetition would take minutes.
    ``report(dict)``, if given, hears each such measurement (``{"kind": "probe", "seconds_per_op": ...}``).
    """
    import torch
    import torch.distributed as dist

    coll = COLLECTIVES[collective]
    torch_dtype = getattr(torch, dtype)
    itemsize = torch.empty(0, dtype=torch_dtype).element_size()
    fns = {name: coll.op(name, pipeline) for name in algorithms}
    fns.update({name: coll.yours(fn, rank, world_size) for name, fn in (custom or {}).items()})
    algorithms = list(fns)
    on_gpu = device.startswith("cuda")
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    rows, probe_rows = [], []
    for nbytes in sizes:
        count = coll.count(nbytes, itemsize, world_size)
        src, expected = coll.inputs(count, rank, world_size, torch_dtype, device)
        buf = torch.empty_like(src)
        batch = batch_for(count * itemsize)

        def run_with(name):
            return lambda: fns[name](buf, src)

        ops = {name: (run_with(name), batch) for name in algorithms}
        extra = probes(count, itemsize) if probes else {}
        ops.update({name: (op, batch_for(max(1, size))) for name, (op, size) in extra.items()})
        names = list(ops)
        per_op, bad = _first_ops(ops, names, buf, src, expected, algorithms, sync, device)
        ops = {name: (op, max(1, min(batch, int(REP_BUDGET_S / max(per_op[name], 1e-9)))))
               for name, (op, batch) in ops.items()}
        if report is not None:
            report({"kind": "probe", "size": count * itemsize, "ranks": world_size, "seconds_per_op": per_op})
        size_warmup = 0 if max(per_op.values()) > REP_BUDGET_S else warmup  # the first op warmed up; more: minutes
        times = {name: [] for name in names}
        for rep in range(size_warmup + iters):
            shift = rep % len(names)
            for name in names[shift:] + names[:shift]:
                buf.copy_(src)
                sync()
                dist.barrier()
                elapsed = time_ops(ops[name][0], ops[name][1], sync, per_op=not on_gpu)
                if rep >= size_warmup:
                    times[name].extend(elapsed)
        stats = {}
        for name in names:  # one tensor per operation: probes may time a different count per repetition
            slowest = torch.tensor(times[name], dtype=torch.float64, device=device)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            stats[name] = slowest.tolist()
        size = count * itemsize
        for i, name in enumerate(algorithms):
            med = statistics.median(stats[name])
            rows.append({"size": size, "count": count, "type": dtype, "ranks": world_size,
                         "algorithm": name, "collective": coll.name, "time_s": med,
                         "mean_s": statistics.fmean(stats[name]), "times_s": stats[name], "batch": ops[name][1],
                         "algbw": metrics.algbw(size, med),
                         "busbw": metrics.busbw(coll.name, size, med, world_size),
                         "wrong": bad[i]})
        if extra:
            probe_rows.append({"size": size, "ranks": world_size,
                               **{name: statistics.median(stats[name]) for name in extra},
                               "times": {name: stats[name] for name in extra}})
    return rows, probe_rows


def _worker(rank, world_size, config):
    """One rank of a sweep: each size measured in turn; rank 0 hands each size's rows (and the time an
    operation took, before they are timed) to the launcher as soon as it has them."""
    from ..launch import current, report

    info = current()
    device = info.device if info else "cpu"
    tell = report if rank == 0 else None
    rows = []
    for nbytes in config["sizes"]:
        size_rows = measure_with_probes(rank, world_size, **dict(config, sizes=[nbytes]), device=device,
                                        report=tell)[0]
        if tell:
            tell({"kind": "rows", "rows": size_rows})
        rows.extend(size_rows)
    return rows
