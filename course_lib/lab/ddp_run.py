"""A small, real DistributedDataParallel run on the CPU (gloo), timed, for chapter 06.

``run()`` starts 2 ranks with :func:`course_lib.lab.run`, wraps a tiny MLP in
``torch.nn.parallel.DistributedDataParallel`` with a chosen ``bucket_cap_mb`` and
measures, in the same run and under the same load:

* the training step **with** DDP's gradient all-reduce and **without** it (``no_sync``):
  the difference is the communication the step could not hide (exposed);
* one all-reduce of all gradients alone, flat and bucket by bucket (no compute around it);
* the loopback link: simultaneous exchange between the two ranks at a few sizes, fitted to
  ``time = alpha + n / B`` (``lab.calibrate.fit``), and the cost of adding received bytes;
* that DDP's gradients are the average of the ranks' local gradients (all-reduce, then
  divide by the world size);
* optionally the same step on 1 rank alone, for the speedup of 2 ranks over 1.

The all-reduce is then predicted with the course's alpha-beta ring
(``costmodel.collective_time``) from the measured alpha and B. Times are seconds,
sizes bytes, bandwidths bytes/s per direction.

Where this stops being true: the two ranks share the machine's cores, caches and
memory bandwidth, and "the network" is a memory copy through the kernel's loopback.
A GPU has its own compute and a separate link; here communication and computation
compete for the same cores, so overlap is much weaker than on GPUs.

The worker (``_worker``) lives here so that spawned ranks can import it.
"""
from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import asdict, dataclass, field

from .. import costmodel, units, validate
from .processes import usable_cores as _cores

BYTES_PER_FP32 = 4
MIB = 2**20
LINK_SIZES = (64 * 1024, 512 * 1024, 2 * MIB, 8 * MIB)  # bytes, for the loopback fit


# ---------------------------------------------------------------- pure helpers

def parameter_count(width=512, depth=4) -> int:
    """Parameters of ``tiny_model(width, depth)``: depth x (width^2 weights + width biases)."""
    width = validate.integer("width", width, low=1, high=16384)
    depth = validate.integer("depth", depth, low=1, high=64)
    return depth * (width * width + width)


def bucket_sizes(tensor_bytes, cap_bytes) -> list:
    """Bucket sizes (bytes) when gradients of ``tensor_bytes`` (in the order they become ready)
    are packed as DDP packs them: add tensors to a bucket until it holds at least ``cap_bytes``,
    then start a new one. ``cap_bytes`` > 0; every tensor size > 0."""
    cap = validate.positive("cap_bytes", cap_bytes)
    sizes = [float(x) for x in validate.sizes("tensor_bytes", tensor_bytes).reshape(-1)]
    out, current = [], 0.0
    for size in sizes:
        current += size
        if current >= cap:
            out.append(current)
            current = 0.0
    if current > 0:
        out.append(current)
    return out


def tiny_model(width=512, depth=4):
    """A stack of ``depth`` Linear(width, width) + ReLU layers (FP32)."""
    import torch

    width = validate.integer("width", width, low=1, high=16384)
    depth = validate.integer("depth", depth, low=1, high=64)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


# ---------------------------------------------------------------- the worker

def _median_max(times, dist, torch):
    """Median over repetitions of the slowest rank's time (a step is as slow as its slowest rank)."""
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return statistics.median(t.tolist())


def _ddp_buckets(ddp):
    """Bucket sizes (bytes) DDP settled on, from its logging data; None if this torch does not say."""
    try:
        data = ddp._get_ddp_logging_data()
        text = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes")
        return [float(x) for x in str(text).split(",") if x.strip()]
    except Exception:  # noqa: BLE001 - private API: fall back to our own packing
        return None


def _link(dist, torch, rank, sizes, reps):
    """Simultaneous exchange between rank pairs (0-1, 2-3 ...: both send and receive at once), and the local add."""
    other = rank ^ 1
    rows = []
    for nbytes in sizes:
        count = nbytes // BYTES_PER_FP32
        send, recv, acc = torch.ones(count), torch.empty(count), torch.zeros(count)
        ex, add = [], []
        for rep in range(reps + 1):
            dist.barrier()
            start = time.perf_counter()
            works = [dist.irecv(recv, other), dist.isend(send, other)]
            for work in works:
                work.wait()
            t_ex = time.perf_counter() - start
            start = time.perf_counter()
            acc.add_(recv)
            t_add = time.perf_counter() - start
            if rep:
                ex.append(t_ex)
                add.append(t_add)
        rows.append({"size": count * BYTES_PER_FP32, "exchange_s": _median_max(ex, dist, torch),
                     "add_s": _median_max(add, dist, torch)})
    return rows


def _worker(rank, world_size, cfg):
    """One rank: DDP steps with and without sync, all-reduce alone, loopback link, correctness."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)  # same initial weights everywhere (DDP also broadcasts rank 0's)
    model = tiny_model(cfg["width"], cfg["depth"])
    ddp = DDP(model, bucket_cap_mb=cfg["bucket_cap_mb"])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own slice of the batch
    x = torch.randn(cfg["batch"], cfg["width"], generator=gen)

    def step(sync):
        opt.zero_grad(set_to_none=False)
        with contextlib.nullcontext() if sync else ddp.no_sync():
            loss = ddp(x).pow(2).mean()
            loss.backward()
        opt.step()

    for _ in range(cfg["warmup"]):
        step(True)
        step(False)
    with_sync, without = [], []
    for i in range(cfg["steps"]):  # interleaved, alternating order: drift hits both alike
        for sync in ((True, False) if i % 2 == 0 else (False, True)):
            dist.barrier()
            start = time.perf_counter()
            step(sync)
            (with_sync if sync else without).append(time.perf_counter() - start)
    out = {"step_sync_s": _median_max(with_sync, dist, torch), "step_nosync_s": _median_max(without, dist, torch)}

    # what DDP sends: one gradient per parameter, in buckets
    params = list(model.parameters())
    grad_bytes = sum(p.numel() * p.element_size() for p in params)
    buckets = _ddp_buckets(ddp)
    if not buckets or abs(sum(buckets) - grad_bytes) > 1:
        ready_order = [p.numel() * p.element_size() for p in reversed(params)]
        buckets = bucket_sizes(ready_order, cfg["bucket_cap_mb"] * MIB)
    out.update(params=sum(p.numel() for p in params), grad_bytes=grad_bytes, buckets=buckets)

    # the all-reduce alone: one flat buffer, then bucket by bucket
    flat = torch.ones(grad_bytes // BYTES_PER_FP32)
    parts = [torch.ones(int(b) // BYTES_PER_FP32) for b in buckets]
    t_flat, t_buckets = [], []
    for rep in range(cfg["steps"] + 1):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(flat)
        el = time.perf_counter() - start
        dist.barrier()
        start = time.perf_counter()
        for part in parts:
            dist.all_reduce(part)
        el_b = time.perf_counter() - start
        if rep:
            t_flat.append(el)
            t_buckets.append(el_b)
    out.update(allreduce_s=_median_max(t_flat, dist, torch), bucketed_allreduce_s=_median_max(t_buckets, dist, torch))

    # average = all-reduce (sum) then divide by the world size
    opt.zero_grad(set_to_none=False)
    with ddp.no_sync():
        ddp(x).pow(2).mean().backward()
    local = torch.cat([p.grad.reshape(-1) for p in params]).clone()
    manual = local.clone()
    dist.all_reduce(manual)
    manual /= world_size
    opt.zero_grad(set_to_none=False)
    ddp(x).pow(2).mean().backward()
    synced = torch.cat([p.grad.reshape(-1) for p in params])
    out.update(average_error=float((synced - manual).abs().max()),
               local_vs_average=float((synced - local).abs().max()),
               grad_scale=float(manual.abs().max()))

    out["link"] = _link(dist, torch, rank, cfg["link_sizes"], cfg["link_reps"])
    return out


def _single_worker(rank, world_size, cfg):
    """The same training step on one rank, no DDP: the baseline for the speedup."""
    import torch

    torch.manual_seed(0)
    model = tiny_model(cfg["width"], cfg["depth"])
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(cfg["batch"], cfg["width"], generator=torch.Generator().manual_seed(1000))
    times = []
    for i in range(cfg["warmup"] + cfg["steps"]):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        model(x).pow(2).mean().backward()
        opt.step()
        if i >= cfg["warmup"]:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---------------------------------------------------------------- result

@dataclass
class DDPRun:
    """Everything one ``run()`` measured and predicted. Seconds, bytes, bytes/s per direction."""

    ranks: int
    width: int
    depth: int
    batch: int
    bucket_cap_mb: float
    params: int
    grad_bytes: int
    buckets: list
    step_sync_s: float
    step_nosync_s: float
    allreduce_s: float
    bucketed_allreduce_s: float
    alpha_s: float
    bandwidth: float
    add_bandwidth: float
    average_error: float
    local_vs_average: float
    grad_scale: float
    one_rank_step_s: float | None = None
    cores: int = 1
    link: list = field(default_factory=list)

    @property
    def exposed_s(self) -> float:
        """Step time with DDP's all-reduce minus without it: the communication not hidden, s (>= 0)."""
        return max(0.0, self.step_sync_s - self.step_nosync_s)

    @property
    def hidden_fraction(self) -> float:
        """Share of the bucketed all-reduce (measured alone) that the step hid behind compute, 0-1."""
        if self.bucketed_allreduce_s <= 0:
            return 0.0
        return min(1.0, max(0.0, 1.0 - self.exposed_s / self.bucketed_allreduce_s))

    @property
    def predicted_allreduce_s(self) -> float:
        """Alpha-beta ring all-reduce of all gradients at once (costmodel.collective_time), s."""
        return costmodel.collective_time("all_reduce", self.grad_bytes, self.ranks, self.bandwidth,
                                         self.alpha_s, "ring")

    @property
    def predicted_bucketed_s(self) -> float:
        """Alpha-beta ring all-reduce bucket by bucket, one after another, s."""
        return sum(costmodel.collective_time("all_reduce", b, self.ranks, self.bandwidth, self.alpha_s, "ring")
                   for b in self.buckets)

    @property
    def predicted_with_adds_s(self) -> float:
        """The bucketed prediction plus the time to add the received halves ((p-1)/p n bytes), s."""
        adds = sum((self.ranks - 1) / self.ranks * b / self.add_bandwidth for b in self.buckets)
        return self.predicted_bucketed_s + adds

    @property
    def speedup(self) -> float | None:
        """Samples per second on ``ranks`` ranks over 1 rank: ranks x t(1 rank) / t(step with sync)."""
        if self.one_rank_step_s is None:
            return None
        return self.ranks * self.one_rank_step_s / self.step_sync_s

    def to_dict(self) -> dict:
        d = asdict(self)
        for name in ("exposed_s", "hidden_fraction", "predicted_allreduce_s", "predicted_bucketed_s",
                     "predicted_with_adds_s", "speedup"):
            d[name] = getattr(self, name)
        return d

    def summary(self) -> str:
        ft = units.format_time
        lines = [
            f"DDP on {self.ranks} CPU ranks (gloo over loopback, {self.cores} usable cores): MLP {self.depth} x "
            f"Linear({self.width}, {self.width}), batch {self.batch} per rank",
            f"  parameters {self.params:,}; FP32 gradients {units.format_bytes(self.grad_bytes)} in "
            f"{len(self.buckets)} buckets (bucket_cap_mb={self.bucket_cap_mb:g} MiB = "
            f"{units.format_bytes(self.bucket_cap_mb * MIB)})",
            f"  step without communication (no_sync): {ft(self.step_nosync_s)}",
            f"  step with DDP's all-reduce:           {ft(self.step_sync_s)}  -> exposed {ft(self.exposed_s)}",
            f"  all-reduce alone, bucket by bucket:   {ft(self.bucketed_allreduce_s)} (all at once: {ft(self.allreduce_s)})"
            f"  -> hidden {100 * self.hidden_fraction:.0f}%",
            f"  loopback link (exchange fit): alpha {ft(max(self.alpha_s, 0.0))}, "
            f"B {units.format_bandwidth(self.bandwidth)}; adding: {units.format_bandwidth(self.add_bandwidth)}",
            f"  alpha-beta ring prediction, bucket by bucket: {ft(self.predicted_bucketed_s)} "
            f"(measured / predicted = {self.bucketed_allreduce_s / self.predicted_bucketed_s:.1f}); "
            f"with the additions: {ft(self.predicted_with_adds_s)} "
            f"(ratio {self.bucketed_allreduce_s / self.predicted_with_adds_s:.1f})",
            f"  DDP gradient = (sum over ranks) / {self.ranks}: max difference {self.average_error:.1e} "
            f"(gradients are ~{self.grad_scale:.1e}; local vs averaged differ by {self.local_vs_average:.1e})",
        ]
        if self.one_rank_step_s is not None:
            lines.append(f"  1 rank alone: {ft(self.one_rank_step_s)} per step -> {self.ranks} ranks process "
                         f"{self.speedup:.2f}x the samples per second (ideal {self.ranks}x)")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()

    def plot(self, ax=None):
        """Bars: step without and with communication, the all-reduce alone, and its predictions. Returns ax."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7.5, 3.8))
        ms = 1e3
        labels = ["step,\nno_sync", "step,\nwith DDP", "all-reduce\nalone (measured)",
                  "alpha-beta\nprediction", "prediction\n+ additions"]
        values = [self.step_nosync_s, self.step_sync_s, self.bucketed_allreduce_s, self.predicted_bucketed_s,
                  self.predicted_with_adds_s]
        colours = ["tab:blue", "tab:blue", "tab:orange", "tab:gray", "tab:gray"]
        bars = ax.bar(range(len(values)), [v * ms for v in values], color=colours)
        ax.bar([1], [self.exposed_s * ms], bottom=[self.step_nosync_s * ms], color="tab:red",
               label=f"exposed communication {units.format_time(self.exposed_s)}")
        for bar, v in zip(bars, values):
            ax.annotate(units.format_time(v), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(values)), labels, fontsize=8)
        ax.set_ylabel("milliseconds (median)")
        ax.set_title(f"Real DDP on {self.ranks} CPU ranks: {units.format_bytes(self.grad_bytes)} of gradients "
                     f"in {len(self.buckets)} buckets", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(axis="y", alpha=0.3)
        return ax


def check_memory(width, depth, batch, ranks) -> None:
    """Refuse (``ValueError``) a run whose ranks cannot fit in the memory available: per rank about
    ``memory.DDP_PARAM_FACTOR`` copies of the FP32 parameters and ``memory.DDP_ACTIVATION_FACTOR``
    times the activations (batch x width x depth floats), measured."""
    from . import memory

    need = memory.ddp_bytes(parameter_count(width, depth), batch * width * depth * BYTES_PER_FP32, ranks)
    memory.check(need, f"DDP of an MLP {depth} x Linear({width}, {width}) with batch {batch} on {ranks} ranks",
                 "lower width, depth, batch or ranks")


def run(width=512, depth=4, batch=32, bucket_cap_mb=1.0, steps=5, warmup=2, one_rank=True,
        link_sizes=LINK_SIZES, link_reps=5, timeout=60.0, ranks=2) -> DDPRun:
    """Run and time DDP on ``ranks`` (2, 4, 6 or 8) local gloo ranks; see the module docstring.

    width in [8, 4096] and depth in [1, 16] size the MLP; batch in [1, 4096] samples per rank;
    bucket_cap_mb in (0, 1024] MiB (DDP's unit); steps in [1, 200] timed pairs after warmup
    in [0, 50] untimed ones; one_rank also times 1 rank alone; link_sizes (bytes, 1 KiB-64 MiB)
    and link_reps in [1, 50] for the loopback fit; timeout in (0, 600] s per launch.
    About 3-6 s on 2 cores with the defaults.
    """
    width = validate.integer("width", width, low=8, high=4096)
    depth = validate.integer("depth", depth, low=1, high=16)
    batch = validate.integer("batch", batch, low=1, high=4096)
    bucket_cap_mb = validate.number("bucket_cap_mb", bucket_cap_mb, low=0.0, high=1024.0, low_inclusive=False)
    steps = validate.integer("steps", steps, low=1, high=200)
    warmup = validate.integer("warmup", warmup, low=0, high=50)
    ranks = validate.integer("ranks", ranks, low=2, high=8)
    if ranks % 2:
        raise ValueError(f"ranks must be even (the link is measured between rank pairs), got {ranks}")
    if not isinstance(one_rank, bool):
        raise ValueError(f"one_rank must be True or False, got {one_rank!r}")
    sizes = [int(s) for s in validate.sizes("link_sizes", link_sizes).reshape(-1)]
    for s in sizes:
        validate.number("link_sizes", s, low=1024, high=64 * MIB)
    if len(set(sizes)) < 2:
        raise ValueError("link_sizes must hold at least 2 distinct sizes to fit alpha and B")
    link_reps = validate.integer("link_reps", link_reps, low=1, high=50)
    timeout = validate.number("timeout", timeout, low=0.0, high=600.0, low_inclusive=False)

    check_memory(width, depth, batch, ranks)

    # Imported before the ranks fork so that they inherit the modules instead of importing them
    # again: DDP's constructor imports torch._dynamo, which takes seconds.
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch.distributed  # noqa: F401
    from . import calibrate
    from . import launch as lab

    cfg = {"width": width, "depth": depth, "batch": batch, "bucket_cap_mb": bucket_cap_mb, "steps": steps,
           "warmup": warmup, "link_sizes": sizes, "link_reps": link_reps}
    out = lab.run(_worker, ranks=ranks, timeout=timeout, args=(cfg,), echo=False)[0]
    single = lab.run(_single_worker, ranks=1, timeout=timeout, args=(cfg,), init=False, echo=False)[0] \
        if one_rank else None
    fit = calibrate.fit([r["size"] for r in out["link"]], [r["exchange_s"] for r in out["link"]])
    big = max(out["link"], key=lambda r: r["size"])
    return DDPRun(ranks=ranks, width=width, depth=depth, batch=batch, bucket_cap_mb=bucket_cap_mb,
                  params=out["params"], grad_bytes=out["grad_bytes"], buckets=out["buckets"],
                  step_sync_s=out["step_sync_s"], step_nosync_s=out["step_nosync_s"],
                  allreduce_s=out["allreduce_s"], bucketed_allreduce_s=out["bucketed_allreduce_s"],
                  alpha_s=fit.alpha, bandwidth=fit.bandwidth, add_bandwidth=big["size"] / big["add_s"],
                  average_error=out["average_error"], local_vs_average=out["local_vs_average"],
                  grad_scale=out["grad_scale"], one_rank_step_s=single, cores=_cores(), link=out["link"])
