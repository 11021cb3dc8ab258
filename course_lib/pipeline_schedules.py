"""Pipeline schedules, simulated: GPipe, 1F1B (PipeDream-Flush) and Megatron-LM's interleaved 1F1B.

:func:`pipeline_schedule` runs each device's ops in order (an op starts when its device is free and
its input has arrived) and returns a :class:`Schedule`: every op with its start and end, the time the
step takes, the bubble it leaves (measured, next to the formula ``(p-1)/(v m)``), the activations each
device holds at its peak, and the sends between devices. :func:`stage_timing` gives a real model's
forward, backward and send times on one stage (from ``parallel.estimate``). Chapter 07 draws and explores it
(:mod:`course_lib.chapters.model_parallel`, :mod:`course_lib.views.model_parallel`).

Units: seconds (or any time unit the caller uses for forward, backward and send times).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import hardware, parallel, validate

SCHEDULES = ("gpipe", "1f1b")


@dataclass(frozen=True)
class Op:
    """One forward (F) or backward (B) pass of one micro-batch on one model chunk of one device; times in seconds."""

    device: int
    chunk: int
    micro_batch: int
    kind: str
    start: float
    end: float


@dataclass
class Schedule:
    """A simulated pipeline schedule: the ops, the time it takes and the bubble it leaves."""

    name: str
    stages: int
    micro_batches: int
    interleave: int
    forward_time: float
    backward_time: float
    send_time: float
    ops: list = field(repr=False)
    makespan: float = 0.0
    peak_in_flight: list = field(default_factory=list)  # per device, in micro-batches of its activations
    sends: int = 0                                        # activation + gradient sends between devices

    @property
    def ideal(self) -> float:
        """Time without any bubble: every device busy with m forward and m backward passes."""
        return self.micro_batches * (self.forward_time + self.backward_time)

    @property
    def bubble_fraction(self) -> float:
        """Measured idle time / ideal time (the convention of (p-1)/m)."""
        return self.makespan / self.ideal - 1.0

    @property
    def formula(self) -> float:
        """(p-1)/(v m): the bubble fraction the formula predicts."""
        return (self.stages - 1) / (self.interleave * self.micro_batches)


def _orders(p: int, m: int, v: int, schedule: str) -> list[list[tuple[str, int, int]]]:
    """Each device's op order: (kind, chunk, micro_batch)."""
    orders = []
    for d in range(p):
        if schedule == "gpipe":
            orders.append([("F", 0, j) for j in range(m)] + [("B", 0, j) for j in range(m)])
            continue
        if v == 1:  # 1F1B (PipeDream-Flush): warm up with p-d-1 forwards, then alternate, then drain
            w = min(p - d - 1, m)
            ops = [("F", 0, j) for j in range(w)]
            for k in range(m - w):
                ops += [("F", 0, w + k), ("B", 0, k)]
            orders.append(ops + [("B", 0, k) for k in range(m - w, m)])
            continue
        # interleaved 1F1B (Megatron-LM): micro-batches in groups of p, chunk by chunk
        total = m * v

        def step(k: int, forward: bool) -> tuple[str, int, int]:
            group, within = divmod(k, p * v)
            chunk = within // p
            return ("F" if forward else "B", chunk if forward else v - 1 - chunk, group * p + k % p)

        w = min(2 * (p - d - 1) + (v - 1) * p, total)
        ops = [step(k, True) for k in range(w)]
        for k in range(total - w):
            ops += [step(w + k, True), step(k, False)]
        orders.append(ops + [step(k, False) for k in range(total - w, total)])
    return orders


def pipeline_schedule(stages: int, micro_batches: int, schedule: str = "1f1b", interleave: int = 1, forward_time: float = 1.0, backward_time: float = 2.0,
                      send_time: float = 0.0) -> Schedule:
    """Simulate a pipeline schedule and measure its bubble.

    stages p (devices), micro_batches m, schedule ``gpipe`` or ``1f1b`` (with ``interleave`` v > 1:
    Megatron's interleaved 1F1B, v model chunks per device, m a multiple of p). forward_time and
    backward_time: seconds of one micro-batch on one stage (all of its chunks); send_time: seconds
    added whenever an activation or gradient moves to another device. Each device runs its ops in
    order; an op starts when its device is free and its input has arrived.
    """
    p = validate.integer("stages", stages, low=1, high=256)
    m = validate.integer("micro_batches", micro_batches, low=1, high=4096)
    schedule = validate.choice("schedule", schedule, SCHEDULES)
    v = validate.integer("interleave", interleave, low=1, high=16)
    tf = validate.positive("forward_time", forward_time)
    tb = validate.positive("backward_time", backward_time)
    ts = validate.non_negative("send_time", send_time)
    if v > 1 and schedule == "gpipe":
        raise ValueError("interleave must be 1 with schedule 'gpipe' (interleaving is a 1F1B schedule)")
    if v > 1 and (p == 1 or m % p):
        raise ValueError(f"micro_batches must be a multiple of stages ({p}) for the interleaved schedule, got {m}")
    if p * m * v > 40_000:
        raise ValueError(f"stages x micro_batches x interleave must be <= 40000 to simulate, got {p * m * v}")
    orders = _orders(p, m, v, schedule)
    last = p * v - 1
    end, ops, sends = {}, [], 0
    ptr, free = [0] * p, [0.0] * p
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for d in range(p):
            while ptr[d] < len(orders[d]):
                kind, c, j = orders[d][ptr[d]]
                vs = c * p + d                      # virtual stage: chunk c of device d
                if kind == "F":
                    dep = ("F", vs - 1, j) if vs > 0 else None
                else:
                    dep = ("B", vs + 1, j) if vs < last else ("F", vs, j)
                if dep is not None and dep not in end:
                    break
                ready = 0.0
                if dep is not None:
                    remote = dep[1] % p != d
                    ready = end[dep] + (ts if remote else 0.0)
                    sends += remote
                start = max(free[d], ready)
                stop = start + (tf if kind == "F" else tb) / v
                end[(kind, vs, j)] = stop
                free[d] = stop
                ops.append(Op(d, c, j, kind, start, stop))
                ptr[d] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("the schedule deadlocked")
    peaks = []
    for order in orders:
        live = peak = 0.0
        for kind, _, _ in order:
            live += (1 if kind == "F" else -1) / v
            peak = max(peak, live)
        peaks.append(peak)
    name = "GPipe" if schedule == "gpipe" else ("1F1B" if v == 1 else f"interleaved 1F1B (v={v})")
    return Schedule(name=name, stages=p, micro_batches=m, interleave=v, forward_time=tf, backward_time=tb,
                    send_time=ts, ops=ops, makespan=max(o.end for o in ops), peak_in_flight=peaks, sends=sends)


def stage_timing(model_id: str = "gpt3-175b", system: str | hardware.System = "dgx-a100", stages: int = 8, tp: int = 8, micro_batch: int = 1) -> dict:
    """Seconds of one micro-batch's forward and backward pass on one pipeline stage, and one send between stages.

    From ``parallel.estimate`` with no recomputation (backward = 2 x forward) and one pipeline of
    ``stages`` stages of ``tp`` GPUs: forward_s, backward_s, send_bytes (per GPU, after the scatter/gather
    optimisation when the send crosses nodes), link (where sends go), link_bandwidth (bytes/s per direction).
    """
    m = parallel.resolve_model(model_id, name="model_id")
    sys_ = hardware.resolve_system(system)
    p = validate.integer("stages", stages, low=2, high=m.layers)
    t = validate.integer("tp", tp, low=1, high=m.heads)
    e = parallel.estimate(m, sys_, gpus=t * p, tp=t, pp=p, global_batch=p * micro_batch, micro_batch=micro_batch,
                          recompute="none")
    t_mb = e.compute_s / e.micro_batches
    send = next(tr for tr in e.traffic if tr.kind.startswith("pipeline"))
    link = parallel.group_link(sys_, p, t)
    bw = parallel.pair_bandwidth(sys_, link)
    return {"forward_s": t_mb / 3, "backward_s": 2 * t_mb / 3, "send_bytes": send.bytes_per_call, "link": send.link,
            "crosses_nodes": send.crosses_nodes, "link_bandwidth": bw, "gpus": e.gpus}
