"""A real profiler trace of one DDP training step on CPU ranks (gloo), for chapter 06.

``trace()`` starts 2 ranks with :func:`course_lib.lab.run`, wraps chapter 06's small MLP
(``ddp_run.tiny_model``) in ``DistributedDataParallel`` with small buckets, runs a few untimed steps (DDP
rebuilds its buckets after the first), and records one step with ``torch.profiler`` on every rank. It keeps
what a timeline needs, per rank:

* **compute** on the training thread: the forward pass, each backward op (autograd's
  ``evaluate_function: <Op>Backward0`` and the gradient accumulations), DDP's copy of the averaged buckets
  back into ``.grad`` and the optimizer step;
* **communication** on gloo's threads: each bucket's ``gloo:all_reduce``, in the order DDP launched them
  (bucket 0 first: the last layers' gradients), with the moment DDP launched it (``c10d::allreduce_``).

All ranks share rank 0's clock (the ranks run on one machine), starting at rank 0's forward pass. From the
spans it measures how much of the all-reduce ran while the backward pass was still computing
(``overlap_s``) and how much ran after it (``exposed_s``). Times are seconds, sizes bytes.

Where it stops being true: the two ranks and gloo's threads share this machine's cores, so a bucket's
all-reduce and the backward pass take turns for the same cores (on GPUs, NCCL's kernels and the NICs run
beside the compute); the profiler adds a few microseconds per op. The structure is DDP's own: buckets
launched as soon as their gradients are ready, one after another, while later layers still compute.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .. import units, validate
from .ddp_run import MIB, _ddp_buckets, bucket_sizes, tiny_model

BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
ALL_REDUCE = "gloo:all_reduce"
LAUNCH = "c10d::allreduce_"
COPY_BACK = "torch.distributed.ddp.reducer::copy_bucket_to_grad"
FORWARD = "DistributedDataParallel.forward"
OPTIMIZER_PREFIX = "Optimizer.step#"


@dataclass(frozen=True)
class Span:
    """One recorded interval on one rank: its lane (``compute`` or ``communication``), what ran, when (s)."""

    rank: int
    lane: str
    kind: str        # forward, backward, copy back, optimizer, all-reduce, launch
    name: str
    start_s: float
    end_s: float
    bucket: int | None = None
    thread: int = 0  # the profiler's thread id: gloo runs a bucket's all-reduce on one of its worker threads

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def _kind(name) -> str | None:
    """The timeline kind of a profiler event's name, or None for one the timeline leaves out."""
    if name == FORWARD:
        return "forward"
    if name.startswith(BACKWARD_PREFIX):
        return "backward"
    if name == COPY_BACK:
        return "copy back"
    if name.startswith(OPTIMIZER_PREFIX):
        return "optimizer"
    if name == ALL_REDUCE:
        return "all-reduce"
    if name == LAUNCH:
        return "launch"
    return None


def spans_from_events(rank, events, origin_us=None, shift_s=0.0) -> list[Span]:
    """Timeline spans of one rank from profiler events ``(name, start_us, end_us[, thread])`` (any order).

    A span's time is ``(t - origin_us) / 1e6 + shift_s`` seconds: ``origin_us`` defaults to the rank's own
    forward pass (or its first event); ``shift_s`` moves a rank onto another rank's clock. All-reduces and
    launches are numbered in start order: the n-th all-reduce is bucket n.
    """
    rows = [(str(e[0]), float(e[1]), float(e[2]), int(e[3]) if len(e) > 3 else 0) for e in events
            if _kind(str(e[0])) is not None]
    if not rows:
        return []
    if origin_us is None:
        origin_us = forward_start_us(events)
    out, counters = [], {"all-reduce": 0, "launch": 0}
    for name, start, end, thread in sorted(rows, key=lambda r: r[1]):
        kind = _kind(name)
        bucket = None
        if kind in counters:
            bucket, counters[kind] = counters[kind], counters[kind] + 1
        lane = "communication" if kind == "all-reduce" else "compute"
        label = name.removeprefix(BACKWARD_PREFIX).removeprefix("torch::autograd::")
        out.append(Span(rank, lane, kind, label, (start - origin_us) * 1e-6 + shift_s,
                        (end - origin_us) * 1e-6 + shift_s, bucket, thread))
    return out


def forward_start_us(events) -> float:
    """When the forward pass started among profiler events ``(name, start_us, ...)`` (else the first kept one)."""
    kept = [(str(e[0]), float(e[1])) for e in events if _kind(str(e[0])) is not None]
    if not kept:
        raise ValueError("events must hold at least one event of the DDP step (forward, backward or all-reduce)")
    return min((t for n, t in kept if n == FORWARD), default=min(t for _, t in kept))


def _merged(intervals) -> list[tuple[float, float]]:
    """Union of (start, end) intervals, as sorted disjoint intervals."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _overlap(a, b) -> float:
    """Total time (s) two sets of disjoint sorted intervals share."""
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


# ---------------------------------------------------------------- the worker

def _worker(rank, world_size, cfg):
    """One rank: untimed DDP steps, then one step under torch.profiler; its events and DDP's buckets."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = tiny_model(cfg["width"], cfg["depth"])
    ddp = DDP(model, bucket_cap_mb=cfg["bucket_cap_mb"])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    x = torch.randn(cfg["batch"], cfg["width"], generator=torch.Generator().manual_seed(1000 + rank))

    def step():
        opt.zero_grad(set_to_none=False)
        ddp(x).pow(2).mean().backward()
        opt.step()

    for _ in range(cfg["warmup"]):
        step()
    dist.barrier()
    clock_s = time.time()  # the wall clock the ranks share, at this rank's profiler start
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = [(e.name, e.time_range.start, e.time_range.end, e.thread) for e in prof.events()
              if _kind(e.name) is not None]
    params = list(model.parameters())
    grad_bytes = sum(p.numel() * p.element_size() for p in params)
    buckets = _ddp_buckets(ddp)
    if not buckets or abs(sum(buckets) - grad_bytes) > 1:
        buckets = bucket_sizes([p.numel() * p.element_size() for p in reversed(params)], cfg["bucket_cap_mb"] * MIB)
    return {"events": events, "buckets": buckets, "grad_bytes": grad_bytes, "clock_s": clock_s}


# ---------------------------------------------------------------- result

@dataclass
class DDPTrace:
    """The spans of one profiled DDP step on every rank, and what they say about overlap. Seconds, bytes."""

    ranks: int
    width: int
    depth: int
    batch: int
    bucket_cap_mb: float
    grad_bytes: int
    buckets: list
    spans: list = field(default_factory=list)

    def of(self, rank, kind=None) -> list[Span]:
        """The spans of ``rank`` (0 <= rank < ranks), of one ``kind`` if given, in start order."""
        rank = validate.integer("rank", rank, low=0, high=self.ranks - 1)
        return [s for s in self.spans if s.rank == rank and (kind is None or s.kind == kind)]

    def backward_window(self, rank=0) -> tuple[float, float]:
        """(start, end) of the backward pass on ``rank``: its first to its last backward op, s."""
        ops = self.of(rank, "backward")
        if not ops:
            return (0.0, 0.0)
        return min(s.start_s for s in ops), max(s.end_s for s in ops)

    def comm_s(self, rank=0) -> float:
        """Time gloo's threads spent in all-reduces on ``rank`` (their union), s."""
        return sum(e - s for s, e in _merged((x.start_s, x.end_s) for x in self.of(rank, "all-reduce")))

    def overlap_s(self, rank=0) -> float:
        """All-reduce time on ``rank`` that ran while a backward op was computing, s."""
        comm = _merged((x.start_s, x.end_s) for x in self.of(rank, "all-reduce"))
        compute = _merged((x.start_s, x.end_s) for x in self.of(rank, "backward"))
        return _overlap(comm, compute)

    def exposed_s(self, rank=0) -> float:
        """All-reduce time on ``rank`` after the backward pass ended: what the step waited for, s."""
        end = self.backward_window(rank)[1]
        comm = _merged((x.start_s, x.end_s) for x in self.of(rank, "all-reduce"))
        return sum(max(0.0, e - max(s, end)) for s, e in comm)

    def buckets_during_backward(self, rank=0) -> int:
        """How many buckets' all-reduces started before ``rank``'s backward pass ended."""
        end = self.backward_window(rank)[1]
        return sum(1 for x in self.of(rank, "all-reduce") if x.start_s < end)

    def summary(self) -> str:
        ft = units.format_time
        lines = [f"torch.profiler, one DDP step on {self.ranks} CPU ranks (gloo): MLP {self.depth} x "
                 f"Linear({self.width}, {self.width}), batch {self.batch} per rank, "
                 f"{units.format_bytes(self.grad_bytes)} of gradients in {len(self.buckets)} buckets "
                 f"(bucket_cap_mb={self.bucket_cap_mb:g})"]
        for r in range(self.ranks):
            start, end = self.backward_window(r)
            n = len(self.of(r, "all-reduce"))
            lines.append(f"  rank {r}: backward {ft(end - start)}, {n} bucket all-reduces on gloo's threads, "
                         f"{self.buckets_during_backward(r)} of them started during the backward pass; "
                         f"all-reduce {ft(self.comm_s(r))}, of which {ft(self.overlap_s(r))} beside backward ops "
                         f"and {ft(self.exposed_s(r))} after the backward pass")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def trace(width=512, depth=6, batch=64, bucket_cap_mb=0.5, warmup=3, timeout=60.0, ranks=2) -> DDPTrace:
    """Profile one DDP step on ``ranks`` (2-8) local gloo ranks; see the module docstring.

    width in [8, 2048] and depth in [1, 16] size the MLP; batch in [1, 1024] samples per rank;
    bucket_cap_mb in (0, 64] MiB (DDP's unit; the default puts each layer in a bucket of its own);
    warmup in [1, 20] untimed steps first; timeout in (0, 600] s for the whole launch. About 2-4 s on
    2 cores with the defaults.
    """
    width = validate.integer("width", width, low=8, high=2048)
    depth = validate.integer("depth", depth, low=1, high=16)
    batch = validate.integer("batch", batch, low=1, high=1024)
    bucket_cap_mb = validate.number("bucket_cap_mb", bucket_cap_mb, low=0.0, high=64.0, low_inclusive=False)
    warmup = validate.integer("warmup", warmup, low=1, high=20)
    timeout = validate.number("timeout", timeout, low=0.0, high=600.0, low_inclusive=False)
    ranks = validate.integer("ranks", ranks, low=2, high=8)
    from .ddp_run import check_memory
    check_memory(width, depth, batch, ranks)

    # imported before the ranks fork (as ddp_run does): DDP's constructor imports torch._dynamo, which
    # takes seconds, and every rank would import it again
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch.distributed  # noqa: F401
    import torch.profiler  # noqa: F401
    from . import launch as lab

    cfg = {"width": width, "depth": depth, "batch": batch, "bucket_cap_mb": bucket_cap_mb, "warmup": warmup}
    out = lab.run(_worker, ranks=ranks, timeout=timeout, args=(cfg,), echo=False)
    # one clock for all ranks: rank 0's, from its forward pass; each profiler started at its rank's clock_s
    origin = forward_start_us(out[0]["events"])
    spans = [s for r, o in enumerate(out)
             for s in spans_from_events(r, o["events"], origin, o["clock_s"] - out[0]["clock_s"])]
    return DDPTrace(ranks=ranks, width=width, depth=depth, batch=batch, bucket_cap_mb=bucket_cap_mb,
                    grad_bytes=out[0]["grad_bytes"], buckets=out[0]["buckets"], spans=spans)
