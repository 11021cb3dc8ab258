"""All-to-all benchmark (expert parallelism's dispatch/combine): gloo's ``all_to_all_single`` beside
the learner's pairwise exchange, in the same nccl-tests form as ``bench``.

    python -m course_lib.lab.bench --collective all_to_all --algorithms builtin,pairwise -b 64K -e 16M

Size is each rank's whole send buffer (nccl-tests' alltoall convention: ``total``); busbw =
algbw x (p-1)/p. Timing follows ``bench``: batches of back-to-back operations after a barrier,
algorithms interleaved and rotating, the slowest rank's median per operation. Correctness:
rank r's chunk j holds the small integers ``(13 r + j + k) % 251``, so the expected output is
known exactly and ``#wrong`` counts elements that differ on any rank.
"""
from __future__ import annotations

import statistics

from .. import validate
from . import metrics
from .bench import _sizes, batch_for, time_ops

ALGORITHM_NAMES = ("builtin", "pairwise")


def _ops(names):
    import torch.distributed as dist

    from . import algorithms

    table = {"builtin": lambda out, inp: dist.all_to_all_single(out, inp),
             "pairwise": algorithms.pairwise_all_to_all}
    return {n: table[n] for n in names}


def _chunks(rank, p, c, dtype):
    import torch

    j = torch.arange(p).repeat_interleave(c)
    k = torch.arange(c).repeat(p)
    return ((13 * rank + j + k) % 251).to(dtype)


def measure(rank: int, world_size: int, sizes, algorithms, dtype="float32", warmup=2, iters=5) -> list[dict]:
    """Worker body (one rank, group joined): one row per size and algorithm, the same on every rank."""
    import torch
    import torch.distributed as dist

    torch_dtype = getattr(torch, dtype)
    itemsize = torch.empty(0, dtype=torch_dtype).element_size()
    fns = _ops(algorithms)
    p = world_size
    rows = []
    for nbytes in sizes:
        c = max(1, int(nbytes) // (itemsize * p))
        inp = _chunks(rank, p, c, torch_dtype)
        out = torch.empty_like(inp)
        # what rank j sent here: its chunk `rank`
        expected = torch.cat([_chunks(j, p, c, torch_dtype)[rank * c:(rank + 1) * c] for j in range(p)])
        size = inp.numel() * itemsize
        batch = batch_for(size)
        names = list(algorithms)
        times = {n: [] for n in names}
        for rep in range(warmup + iters):
            shift = rep % len(names)
            for name in names[shift:] + names[:shift]:
                dist.barrier()
                elapsed = time_ops(lambda: fns[name](out, inp), batch)
                if rep >= warmup:
                    times[name].extend(elapsed)
        wrong = []
        for name in names:
            out.zero_()
            fns[name](out, inp)
            wrong.append(int((out != expected).sum()))
        bad = torch.tensor(wrong, dtype=torch.float64)
        dist.all_reduce(bad)
        for i, name in enumerate(names):
            slowest = torch.tensor(times[name], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            ts = slowest.tolist()
            med = statistics.median(ts)
            rows.append({"size": size, "count": inp.numel(), "type": dtype, "ranks": p, "algorithm": name,
                         "collective": "all_to_all", "time_s": med, "mean_s": statistics.fmean(ts), "times_s": ts,
                         "batch": batch, "algbw": metrics.algbw(size, med),
                         "busbw": metrics.busbw("all_to_all", size, med, p), "wrong": int(bad[i].item())})
    return rows


def _worker(rank, world_size, config):
    return measure(rank, world_size, **config)


def config(sizes, algorithms, dtype="float32", warmup=2, iters=5) -> dict:
    """Checked arguments for ``measure``: sizes (bytes or '1M'), algorithms (names or a comma string)."""
    if isinstance(algorithms, str):
        algorithms = [a.strip() for a in algorithms.split(",") if a.strip()]
    algorithms = tuple(validate.choice("algorithms", a, ALGORITHM_NAMES) for a in algorithms)
    if not algorithms:
        raise ValueError("algorithms must name at least one of " + ", ".join(ALGORITHM_NAMES))
    return {"sizes": _sizes(sizes), "algorithms": algorithms,
            "dtype": validate.choice("dtype", dtype, ("float32", "float64", "int32", "int64")),
            "warmup": validate.integer("warmup", warmup, low=0, high=1000),
            "iters": validate.integer("iters", iters, low=1, high=10000)}


def sweep(sizes=("64K", "1M", "16M"), ranks=(2,), algorithms=("builtin", "pairwise"), dtype="float32",
          warmup: int = 2, iters: int = 5, timeout: float = 120, echo: bool = False):
    """Benchmark all-to-all ``algorithms`` over ``sizes`` and ``ranks`` counts on local gloo ranks; a ``SweepResult``."""
    from .bench import SweepResult
    from .launch import run

    cfg = config(sizes, algorithms, dtype, warmup, iters)
    if isinstance(ranks, int):
        ranks = (ranks,)
    ranks = [validate.integer("ranks", r, low=1, high=64) for r in ranks]
    result = SweepResult()
    for p in ranks:
        result.rows.extend(run(_worker, ranks=p, timeout=timeout, args=(cfg,), echo=echo)[0])
    return result


# ---------------------------------------------------------------- the chapter-10 exercise

CHECK_CASES = ((1, "int64"), (5, "float32"), (4096, "float32"))   # elements per chunk, dtype


def _check_worker(rank, world_size, fn):
    import torch
    import torch.distributed as dist

    for count, dtype in CHECK_CASES:
        inp = _chunks(rank, world_size, count, getattr(torch, dtype))
        mine, ref = torch.zeros_like(inp), torch.empty_like(inp)
        fn(mine, inp.clone(), rank, world_size)
        dist.all_to_all_single(ref, inp)
        if not torch.equal(mine, ref):
            bad = int((mine != ref).view(world_size, count).any(dim=1).nonzero()[0])
            return {"ok": False, "detail": f"chunk {bad} of rank {rank}'s output differs from all_to_all_single "
                                           f"({count} element(s) per chunk, {dtype})"}
    return {"ok": True, "detail": ""}


def all_to_all_checker(fn, ranks=(2, 3), timeout: float = 60) -> tuple[bool, str]:
    """Grade ``fn(output, input, rank, world_size)``: on each rank count, output chunk j must equal rank j's
    input chunk r (what ``all_to_all_single`` gives). (ok, message); NotImplementedError when unanswered."""
    from .launch import RankError, RankTimeout, run

    for p in ranks:
        try:
            outcome = run(_check_worker, ranks=p, timeout=timeout, args=(fn,), start_method="fork", echo=False)
        except RankTimeout:
            return False, (f"Your all-to-all on {p} ranks did not finish within {timeout:g} s: a deadlock? Post "
                           "each step's receive (irecv) and send (isend) together and wait on both.")
        except RankError as err:
            if err.cause.startswith("NotImplementedError"):
                raise NotImplementedError from None
            return False, f"Your all-to-all on {p} ranks failed: rank {err.rank} raised {err.cause}"
        bad = next((o for o in outcome if not o["ok"]), None)
        if bad:
            return False, (f"Not yet on {p} ranks: {bad['detail']}. Hint: at step s, send chunk (rank+s) % p "
                           "to rank (rank+s) % p and receive into chunk (rank-s) % p from rank (rank-s) % p; "
                           "copy your own chunk first.")
    return True, f"Correct: your all-to-all matches all_to_all_single on {', '.join(map(str, ranks))} ranks."
