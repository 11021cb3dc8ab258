"""Collective benchmark in the form of nccl-tests: built-in and hand-written algorithms side by side.

From a notebook::

    result = lab.bench.sweep(sizes=["64K", "1M", "16M"], ranks=(2,), algorithms=("builtin", "ring"))
    print(result)              # the table; result.rows holds one dict per (ranks, size, algorithm)

From a shell (local ranks, gloo on 127.0.0.1)::

    python -m course_lib.lab.bench --ranks 2,4 -b 64K -e 64M -f 4
    python -m course_lib.lab.bench --collective all_to_all --algorithms builtin,direct -b 64K -e 16M

Under torchrun, on one node or many (NCCL when GPUs are present, gloo otherwise)::

    torchrun --standalone --nproc_per_node=8 -m course_lib.lab.bench -b 1M -e 1G -f 2

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

import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from .. import units, validate
from ..progress import Progress
from . import budget, metrics
from .processes import usable_cores as _cores

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

    from . import algorithms

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

    from . import algorithms

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
    from .launch import current, report

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


HEADER = (f"#{'size':>12} {'count':>12} {'type':>8} {'ranks':>5} {'algorithm':>17} "
          f"{'time(us)':>10} {'mean(us)':>10} {'algbw(GB/s)':>11} {'busbw(GB/s)':>11} {'#wrong':>6}")


def format_row(row) -> str:
    """One row of the table (see ``format_rows``)."""
    mean = row.get("mean_s", row["time_s"])
    return (f" {row['size']:>12d} {row['count']:>12d} {row['type']:>8} {row['ranks']:>5d} "
            f"{row['algorithm']:>17} {row['time_s'] * 1e6:>10.1f} {mean * 1e6:>10.1f} "
            f"{row['algbw'] / 1e9:>11.3f} {row['busbw'] / 1e9:>11.3f} {row['wrong']:>6d}"
            + (f"  ({row['oversubscribed']}: not this machine's speed)" if row.get("oversubscribed") else ""))


def format_rows(rows) -> str:
    """nccl-tests-style table of benchmark rows: median and mean time per operation (us),
    algbw and busbw from the median (GB/s, SI, per direction)."""
    return "\n".join([HEADER] + [format_row(row) for row in rows])


@dataclass
class SweepResult:
    """Rows of a sweep (one dict per ranks x size x algorithm) and the table that prints them."""

    rows: list = field(default_factory=list)

    def table(self) -> str:
        return format_rows(self.rows)

    def __str__(self) -> str:
        return self.table()

    def select(self, algorithm=None, ranks=None) -> list[dict]:
        """Rows of one ``algorithm`` and/or one ``ranks`` count."""
        return [r for r in self.rows if (algorithm is None or r["algorithm"] == algorithm)
                and (ranks is None or r["ranks"] == ranks)]

    def ratio(self, algorithm, reference="builtin", ranks=None) -> dict:
        """{size: busbw(algorithm) / busbw(reference)} for the rows of ``ranks``."""
        mine = {(r["ranks"], r["size"]): r for r in self.select(algorithm, ranks)}
        ref = {(r["ranks"], r["size"]): r for r in self.select(reference, ranks)}
        return {key[1]: mine[key]["busbw"] / ref[key]["busbw"] for key in mine if key in ref}


def _sizes(sizes, name="sizes"):
    if isinstance(sizes, (str, int, float)):
        sizes = [sizes]
    out = []
    for size in sizes:
        try:
            nbytes = units.parse_size(size)
            nbytes = validate.number(name, nbytes, low=1, high=MAX_BYTES)
        except ValueError as exc:
            raise ValueError(f"{name} must be a size from 1 byte to 2G (bytes, or like 64K, 16M, 1G); "
                             f"got {size!r}") from exc
        out.append(int(nbytes))
    if not out:
        raise ValueError("sizes must not be empty")
    return out


def size_range(minbytes, maxbytes, factor=2.0) -> list[int]:
    """Sizes from ``minbytes`` to ``maxbytes`` (bytes or '64K'-style), each ``factor`` (> 1) times the last."""
    return _size_range(minbytes, maxbytes, factor)


def _size_range(minbytes, maxbytes, factor, names=None) -> list[int]:
    """``size_range``; ``names`` maps a parameter to the name its errors carry (the command line's flag)."""
    name = (names or {}).get
    low, high = _sizes(minbytes, name("minbytes", "minbytes"))[0], _sizes(maxbytes, name("maxbytes", "maxbytes"))[0]
    factor = validate.number(name("factor", "factor"), factor, low=1.0, high=1024.0, low_inclusive=False)
    if high < low:
        raise ValueError(f"{name('maxbytes', 'maxbytes')} must be >= minbytes ({units.format_bytes(low, binary=True)}) "
                         f"and <= 2G; got {units.format_bytes(high, binary=True)}")
    out, size = [], float(low)
    while size <= high * (1 + 1e-9):
        out.append(int(round(size)))
        size *= factor
    return out


def _config(sizes, algorithms, dtype, warmup, iters, pipeline, collective="all_reduce", names=None) -> dict:
    """Checked keyword arguments of ``measure``; ``names`` maps a parameter to the name its errors carry."""
    name = (names or {}).get
    coll = COLLECTIVES[validate.choice(name("collective", "collective"), collective, tuple(COLLECTIVES))]
    if algorithms is None:
        algorithms = coll.default_algorithms
    if isinstance(algorithms, str):
        algorithms = [a.strip() for a in algorithms.split(",") if a.strip()]
    algorithms = tuple(validate.choice(name("algorithms", "algorithms"), metrics.registry_id(a), coll.algorithms)
                       for a in algorithms)
    if not algorithms:
        raise ValueError(f"{name('algorithms', 'algorithms')} must name at least one of {', '.join(coll.algorithms)}")
    return {"sizes": _sizes(sizes), "algorithms": algorithms, "collective": coll.name,
            "dtype": validate.choice(name("dtype", "dtype"), dtype, DTYPES),
            "warmup": validate.integer(name("warmup", "warmup"), warmup, low=0, high=1000),
            "iters": validate.integer(name("iters", "iters"), iters, low=1, high=10000),
            "pipeline": validate.integer(name("pipeline", "pipeline"), pipeline, low=1, high=64)}


class SweepIncomplete(RuntimeError):
    """A sweep that a failure or a timeout stopped: ``result`` holds the rows measured before it (a
    ``SweepResult``), ``error`` the launcher's error; the message is one line saying what happened."""

    def __init__(self, message: str, result: "SweepResult", error: BaseException):
        super().__init__(message)
        self.result, self.error = result, error


def steps_per_op(collective: str, algorithms, ranks: int) -> int:
    """The most latency steps (alpha-beta ``steps(p)``) an operation of ``algorithms`` takes on ``ranks``
    ranks: each waits for a peer, so on an oversubscribed machine each waits for the scheduler too.
    gloo's built-in all-reduce is counted as a ring; a learner's own algorithm as the collective's ring."""
    from .. import collectives

    known = collectives.get(collective).algorithms  # the bench's ids are the registry's; builtin is not
    fallback = "ring" if collective == "all_reduce" else "direct"
    return int(max(collectives.terms(collective, a if a in known else fallback, ranks)[0] for a in algorithms))


def _incomplete_line(err, ranks, config, probe, measured, sizes_total) -> str:
    """The one line a stopped sweep ends with: slow (with the figures), a deadlock, or the rank error."""
    from .launch import RankTimeout

    done = f"{measured} of {sizes_total} sizes of {ranks} ranks measured"
    if not isinstance(err, RankTimeout):
        return f"{ranks} ranks: {str(err).splitlines()[0]} ({done})"
    steps = steps_per_op(config["collective"], config["algorithms"], ranks)
    if err.kind == "deadlock":
        return f"{ranks} ranks did not finish within {err.timeout:g} s ({str(err).split(' s (', 1)[1]}; {done}"
    if err.kind in ("slow", "unknown", "stalled", "busy") or probe:
        per_op = ""
        if probe:
            name, seconds = max(probe["seconds_per_op"].items(), key=lambda kv: kv[1])
            per_op = (f", {seconds:.3g} s per operation measured so far ({name}, "
                      f"{units.format_bytes(probe['size'], binary=True)})")
        slow = "slow, not a deadlock" if err.kind == "slow" else f"timed out ({err.kind})"
        return (f"{ranks} ranks did not finish within {err.timeout:g} s: {slow} ({ranks} ranks on {_cores()} "
                f"cores, {steps} steps per operation{per_op}); {done}; give it more time (--timeout) "
                "or use fewer ranks (--ranks)")
    return f"{ranks} ranks: {str(err).splitlines()[0]} ({done})"


def sweep(sizes=("64K", "1M", "16M"), ranks=(2,), algorithms=None, dtype="float32",
          warmup: int = 2, iters: int = 5, pipeline: int = 8, timeout: float = 120,
          backend: str = "gloo", echo: bool = False, collective: str = "all_reduce",
          on_row=None, on_note=None) -> SweepResult:
    """Benchmark ``collective``'s ``algorithms`` over ``sizes`` (bytes or '16M'; <= 2 GiB) and ``ranks`` counts.

    ``collective``: a name in ``COLLECTIVES`` (``all_reduce``, ``all_to_all``); ``algorithms``: some of
    its ``algorithms`` (default: built-in and ring for all_reduce, built-in and pairwise for all_to_all).
    ``warmup`` in [0, 1000] and ``iters`` in [1, 10000] repetitions; ``pipeline`` in [1, 64]
    sub-chunks for the ring; ``timeout`` (s) per rank count. ``on_row(row)`` hears each row as soon
    as its size is measured; ``on_note(line)`` a line when a size's first operations show that it
    will take more than ``SLOW_SIZE_S`` seconds (with the estimate, and whether the timeout leaves
    room). Returns a ``SweepResult``; a rank failure or a timeout raises ``SweepIncomplete``, whose
    ``result`` keeps the rows measured before it.
    """
    config = _config(sizes, algorithms, dtype, warmup, iters, pipeline, collective)
    if isinstance(ranks, int):
        ranks = (ranks,)
    ranks = [validate.integer("ranks", r, low=1, high=64) for r in ranks]
    check_memory(max(config["sizes"]), max(ranks), backend)
    if on_row is not None and not callable(on_row):
        raise ValueError(f"on_row must be a callable taking one row (a dict) or None, got {on_row!r}")
    from .launch import RankError, run

    result = SweepResult()
    sizes_done = Progress(len(ranks) * len(config["sizes"]), "bench", "sizes")
    for p in ranks:
        seen = {"probe": None, "sizes": 0, "start": time.monotonic()}
        sizes_done.note = f"{p} ranks, {units.format_bytes(config['sizes'][0], binary=True)}"

        def progress(rank, value):
            if value.get("kind") == "probe":
                seen["probe"] = value
                line = _slow_size_note(value, config, timeout - (time.monotonic() - seen["start"]))
                if line and on_note is not None:
                    sizes_done.clear()
                    on_note(line)
            elif value.get("kind") == "rows":
                seen["sizes"] += 1
                shared = budget.oversubscribed_note()  # other learners' ranks on this server, now
                sizes_done.clear()  # rows printed to the same terminal start on a clean line
                for row in value["rows"]:
                    if shared:
                        row["oversubscribed"] = shared
                    result.rows.append(row)
                    if on_row is not None:
                        on_row(row)
                following = config["sizes"][seen["sizes"]:seen["sizes"] + 1]
                sizes_done.update(1, note=f"{p} ranks, {units.format_bytes(following[0], binary=True)}"
                                  if following else f"{p} ranks done")

        try:
            run(_worker, ranks=p, timeout=timeout, args=(config,), backend=backend, echo=echo, progress=progress)
        except RankError as err:
            sizes_done.close()
            line = _incomplete_line(err, p, config, seen["probe"], seen["sizes"], len(config["sizes"]))
            raise SweepIncomplete(line, result, err) from None
    sizes_done.close()
    return result


SLOW_SIZE_S = 10.0  # a size expected to take longer than this is announced with its estimate


def size_seconds(seconds_per_op: dict, size: int, warmup: int, iters: int) -> float:
    """How long measuring one size takes once its first operations took ``seconds_per_op`` (by name):
    the repetitions ``measure_with_probes`` then runs, each a batch cut to ``REP_BUDGET_S``."""
    reps = (0 if max(seconds_per_op.values()) > REP_BUDGET_S else warmup) + iters
    return sum(t * reps * max(1, min(batch_for(size), int(REP_BUDGET_S / max(t, 1e-9))))
               for t in seconds_per_op.values())


def _slow_size_note(probe, config, seconds_left) -> str | None:
    est = size_seconds(probe["seconds_per_op"], probe["size"], config["warmup"], config["iters"])
    if est <= SLOW_SIZE_S:
        return None
    name, slowest = max(probe["seconds_per_op"].items(), key=lambda kv: kv[1])
    room = ("within the time left" if est < seconds_left else
            f"more than the {max(seconds_left, 0):.0f} s the timeout leaves: raise --timeout, or use fewer ranks")
    return (f"note: {probe['ranks']} ranks, {units.format_bytes(probe['size'], binary=True)}: {slowest:.3g} s per "
            f"operation ({name}, {steps_per_op(config['collective'], config['algorithms'], probe['ranks'])} steps); "
            f"this size takes about {est:.0f} s, {room}")


ONE_RANK_NOTE = ("note: 1 rank: nothing crosses a link between ranks, so busbw is 0 by definition ((n-1)/n = 0); "
                 "the times are the launch and a local copy, not the interconnect: start 2 or more ranks")


def oversubscription_note(ranks: int, collective: str, algorithms) -> str | None:
    """One line when ``ranks`` local ranks outnumber this machine's cores (their steps then wait for
    the scheduler: a small operation may take seconds), else None."""
    cores = _cores()
    if ranks <= cores:
        return None
    steps = steps_per_op(collective, algorithms, ranks)
    return (f"note: {ranks} ranks share {cores} cores: an operation takes up to {steps} steps, each waiting for a "
            "rank the scheduler has parked, so expect small sizes to take far longer than the cost model says; "
            "fewer operations are timed per repetition when they are slow")


def _gpu_free_bytes():
    """The least free memory of this machine's GPUs in bytes, from nvidia-smi; None when it cannot tell.

    Not torch.cuda.mem_get_info: that starts CUDA in this process, and ranks forked from a process with
    CUDA started cannot use it ("Cannot re-initialize CUDA in forked subprocess"); under torchrun it
    would open a context on every GPU from every rank.
    """
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        return min(int(line) for line in out.split()) * 2**20  # MiB
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def check_memory(max_bytes, ranks, backend="gloo") -> None:
    """Refuse (``ValueError``) a run whose ``ranks`` local ranks cannot hold ``max_bytes`` messages:
    each needs about ``memory.BENCH_FACTOR`` (6) times the message, measured. For ``backend``
    "nccl" the check is per GPU, against its free memory."""
    from . import memory

    if backend == "nccl":
        import torch

        if not torch.cuda.is_available():
            return
        free = _gpu_free_bytes()
        if free is None:
            return
        memory.check(memory.bench_bytes(max_bytes, 1), f"a {units.format_bytes(max_bytes, binary=True)} message "
                     "on one GPU", "lower maxbytes (-e)", available=free)
        return
    memory.check(memory.bench_bytes(max_bytes, ranks),
                 f"a {units.format_bytes(max_bytes, binary=True)} message on {ranks} ranks "
                 f"({memory.BENCH_FACTOR:g} x the message per rank, measured)",
                 "lower maxbytes (-e) or ranks (--ranks)")


def _rank_counts(text):
    try:
        counts = [int(r) for r in str(text).split(",") if r.strip()]
    except ValueError:
        counts = []
    if not counts:
        raise ValueError(f"ranks (--ranks) must be a comma list of integers in [1, 64]; got {text!r}")
    return [validate.integer("ranks (--ranks)", r, low=1, high=64) for r in counts]


def _ring_p2p(tensor, rank, world_size):
    from . import algorithms

    algorithms.ring_all_reduce(tensor, transport="p2p")


def race(fn=None, sizes=("1M", "16M", "64M"), ranks=2, iters=5, warmup=1, pipeline=8, timeout=120.0,
         verbose=True) -> SweepResult:
    """Race a learner's ring ``fn(tensor, rank, world_size)`` against gloo's built-in all-reduce and the
    library's ring (``pipeline`` in [1, 64] sub-chunks; its transfers as gloo collectives, and as
    ``isend``/``irecv`` like the learner's: ``ring, p2p``), float32, one ``sweep`` run.

    ``fn`` is first graded by ``course_lib.exercises.ring.check_ring`` on ``ranks`` (2-8) ranks; one that is not
    answered, wrong, raises or deadlocks is left out with a printed note (``verbose``), so the race
    never fails because of it. ``fn=None`` races the library only. ``sizes``, ``iters``, ``warmup``
    and ``timeout`` as in ``sweep``. Rows are named ``builtin``, ``ring``, ``ring, p2p`` and
    ``yours``; ``result.ratio("yours")`` is your throughput over gloo's.
    """
    from ..exercises import ring as ring_check
    from .launch import RankError, RankTimeout, run

    config = _config(sizes, ("builtin", "ring"), "float32", warmup, iters, pipeline)
    ranks = validate.integer("ranks", ranks, low=2, high=8)
    timeout = validate.number("timeout", timeout, low=0.0, high=3600.0, low_inclusive=False)
    if fn is not None and not callable(fn):
        raise ValueError(f"fn must be a function (tensor, rank, world_size) -> None, or None; got {fn!r}")
    check_memory(max(config["sizes"]), ranks)
    say = print if verbose else (lambda *a, **k: None)
    custom = {"ring, p2p": _ring_p2p}
    if fn is not None:
        verdict = ring_check.check_ring(fn, ranks=(ranks,), timeout=min(timeout, 30.0), verbose=False)
        if verdict.correct:
            custom["yours"] = fn
        else:
            say(f"Note: your ring is left out of the race ({verdict.message})")
    def race_once():
        return run(_worker, ranks=ranks, timeout=timeout, args=(dict(config, custom=custom),),
                   start_method="fork", echo=False)[0]

    result = SweepResult()
    try:
        result.rows = race_once()
    except (RankError, RankTimeout) as err:
        if "yours" not in custom:
            raise
        say(f"Note: your ring failed during the race ({str(err).splitlines()[0]}); racing the library only.")
        custom.pop("yours")
        result.rows = race_once()
    return result


def _parse(argv):
    from ..cli import ArgumentParser  # the course's one error path: one line, exit 2

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
    from ..cli import report

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
    from .launch import LabLimitError

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


if __name__ == "__main__":
    sys.exit(main())
