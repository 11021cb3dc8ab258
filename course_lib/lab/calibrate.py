"""Calibrate the alpha-beta(-gamma) model on this machine and compare it with measured all-reduces.

The model, self-contained here (a later change may point it to ``costmodel``):

* a message of n bytes between two ranks takes ``alpha + n * beta`` seconds
  (alpha: latency, s; beta: s per byte, 1/bandwidth);
* a ring all-reduce on p ranks takes ``2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma``,
  gamma (s per byte) being the cost of adding a received byte into the local buffer;
* with more ranks than cores, ranks take turns on the cores: every term is stretched by
  the contention factor ``max(1, ranks / cores)``.

Two measurements give alpha and beta: **ping-pong** (one message at a time, half the round
trip) and **simultaneous exchange** (both ranks send and receive at once, as in every ring
step). The ring model uses the exchange fit, since that is what a ring step does.

The model is only as good as the moment it was calibrated in: on a shared or virtual machine
the same exchange can take 30% longer a minute later. ``measure_same_run`` therefore times, in
the same repetitions as the all-reduces, the pieces the ring is made of: one ring step's
exchange of n/p bytes (one pair of ranks alone, and every pair at once) and its add. Two
predictions follow: the **alpha-beta fit** of those exchanges (a straight line through all
sizes), and the **step model**, ``2(p-1)`` measured exchanges plus ``p-1`` measured adds at
each size, which tests the ring's decomposition without the straight line's error.

In a notebook::

    cal = lab.calibrate.calibrate()                  # about 5 s on 2 cores
    rows = lab.bench.sweep(sizes=lab.bench.size_range("64K", "16M", 4), ranks=(2, 4)).rows
    cal.plot(ax, rows)                               # measured points over the model's curves
    print(cal.report(rows))                          # predicted / measured per size

    run = lab.calibrate.measure_same_run(["64K", "1M", "16M"], ranks=2)
    print(run.report())                              # both predictions / measured, per size
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

import numpy as np

from .. import units, validate

DEFAULT_SIZES = (1024, 16 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024, 16 * 1024 * 1024)


@dataclass(frozen=True)
class AlphaBeta:
    """A fitted link: ``time(n) = alpha + n * beta``; alpha in s, beta in s/byte."""

    alpha: float
    beta: float

    @property
    def bandwidth(self) -> float:
        """1 / beta, bytes/s (per direction)."""
        return 1.0 / self.beta if self.beta > 0 else float("inf")

    def predict(self, nbytes):
        """Time in s for a message of ``nbytes`` (>= 0, scalar or array)."""
        n = validate.sizes("nbytes", nbytes, allow_zero=True)
        out = self.alpha + n * self.beta
        return float(out) if out.ndim == 0 else out

    def __str__(self) -> str:
        return (f"alpha = {units.format_time(max(self.alpha, 0.0))}, "
                f"beta = {self.beta * 1e9:.3g} ns/byte ({units.format_bandwidth(self.bandwidth)})")


def fit(sizes, times) -> AlphaBeta:
    """Least-squares fit of ``time = alpha + n * beta`` minimising the *relative* error.

    ``sizes`` in bytes (>= 0) and ``times`` in s (> 0), same length, at least 2 distinct sizes.
    """
    n = validate.sizes("sizes", sizes, allow_zero=True).reshape(-1)
    t = validate.sizes("times", times).reshape(-1)
    if n.shape != t.shape:
        raise ValueError(f"times must have one entry per size ({n.size}), got {t.size}")
    if np.unique(n).size < 2:
        raise ValueError("sizes must hold at least 2 distinct values to fit alpha and beta")
    design = np.stack([1.0 / t, n / t], axis=1)
    (alpha, beta), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if beta <= 0:  # flat data: keep a tiny positive slope so the bandwidth stays finite
        beta = 1e-15
    if alpha < 0:  # refit the slope alone through the origin
        alpha, beta = 0.0, float(np.sum(n / t) / np.sum((n / t) ** 2))
    return AlphaBeta(float(alpha), float(beta))


def contention(ranks, cores=None) -> float:
    """Stretch factor when ``ranks`` (>= 1) share ``cores`` (>= 1; default: this machine's): max(1, ranks/cores)."""
    ranks = validate.integer("ranks", ranks, low=1, high=1_000_000)
    cores = _cores() if cores is None else validate.integer("cores", cores, low=1, high=1_000_000)
    return max(1.0, ranks / cores)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def ring_all_reduce_time(nbytes, ranks, alpha, beta, gamma=0.0, stretch=1.0):
    """Model time (s) of a ring all-reduce of ``nbytes`` on ``ranks`` (>= 1).

    ``alpha`` s, ``beta`` and ``gamma`` s/byte (>= 0), ``stretch`` >= 1 multiplies everything.
    """
    n = validate.sizes("nbytes", nbytes, allow_zero=True)
    p = validate.integer("ranks", ranks, low=1, high=1_000_000)
    alpha = validate.non_negative("alpha", alpha)
    beta = validate.non_negative("beta", beta)
    gamma = validate.non_negative("gamma", gamma)
    stretch = validate.number("stretch", stretch, low=1.0)
    out = stretch * (2 * (p - 1) * alpha + (p - 1) / p * n * (2 * beta + gamma))
    return float(out) if out.ndim == 0 else out


def _links_worker(rank, world_size, sizes, iters, warmup):
    import torch
    import torch.distributed as dist

    from .algorithms import _exchange
    from .bench import batch_for, time_ops

    other = 1 - rank
    rows = []
    for nbytes in sizes:
        count = max(1, nbytes // 4)
        send = torch.ones(count)
        recv = torch.empty(count)
        acc = torch.zeros(count)
        batch = batch_for(count * 4)  # back-to-back operations per sample, timed as in bench.measure

        def round_trip():
            if rank == 0:
                dist.send(send, 1)
                dist.recv(recv, 1)
            else:
                dist.recv(recv, 0)
                dist.send(send, 0)

        def exchange():
            _exchange(send, other, recv, other)

        samples = {"pingpong": [], "exchange": [], "add": []}
        for rep in range(warmup + iters):
            dist.barrier()
            pingpong = [t / 2 for t in time_ops(round_trip, batch)]
            dist.barrier()
            exchanged = time_ops(exchange, batch)
            added = time_ops(lambda: acc.add_(recv), batch)
            if rep >= warmup:
                samples["pingpong"] += pingpong
                samples["exchange"] += exchanged
                samples["add"] += added
        times = torch.tensor([samples[k] for k in ("pingpong", "exchange", "add")], dtype=torch.float64)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)  # each operation: the slower rank
        medians = [statistics.median(row) for row in times.tolist()]
        rows.append({"size": count * 4, "pingpong_s": medians[0], "exchange_s": medians[1],
                     "add_s": medians[2]})
    return rows


def measure_links(sizes=DEFAULT_SIZES, iters: int = 7, warmup: int = 2, timeout: float = 120) -> list[dict]:
    """Ping-pong, simultaneous exchange and local add times (s) between 2 ranks per size.

    Timed per operation as ``bench.measure`` times all-reduces (median of the slower rank's
    operations), so the fit and the benchmark read the clock the same way.

    ``sizes`` in bytes (1 to 1 GiB); ``iters`` in [1, 1000]; ``warmup`` in [0, 100]; ``timeout`` s.
    """
    sizes = [int(s) for s in validate.sizes("sizes", sizes).reshape(-1)]
    for s in sizes:
        validate.number("sizes", s, low=1, high=2**30)
    iters = validate.integer("iters", iters, low=1, high=1000)
    warmup = validate.integer("warmup", warmup, low=0, high=100)
    from .launch import run

    return run(_links_worker, ranks=2, timeout=timeout, args=(sizes, iters, warmup), echo=False)[0]


@dataclass(frozen=True)
class Calibration:
    """Fits from ``measure_links``: ping-pong and exchange ``AlphaBeta``, gamma (s/byte), cores.

    ``pingpong`` is None when the links were measured by ``measure_same_run`` (exchange only).
    """

    pingpong: AlphaBeta | None
    exchange: AlphaBeta
    gamma: float
    cores: int
    links: tuple = ()

    def predict(self, nbytes, ranks, stretch=None):
        """Ring all-reduce time (s) for ``nbytes`` on ``ranks``; ``stretch`` defaults to ``contention``."""
        ranks = validate.integer("ranks", ranks, low=1, high=1_000_000)
        stretch = contention(ranks, self.cores) if stretch is None else stretch
        return ring_all_reduce_time(nbytes, ranks, self.exchange.alpha, self.exchange.beta, self.gamma, stretch)

    def compare(self, rows, algorithm="builtin", stretch=None) -> list[dict]:
        """For benchmark ``rows`` of ``algorithm``: size, ranks, measured, predicted (s) and their ratio."""
        out = []
        for row in rows:
            if row["algorithm"] != algorithm:
                continue
            predicted = self.predict(row["size"], row["ranks"], stretch)
            out.append({"size": row["size"], "ranks": row["ranks"], "measured_s": row["time_s"],
                        "predicted_s": predicted, "ratio": predicted / row["time_s"]})
        return out

    def report(self, rows, algorithm="builtin", stretch=None) -> str:
        """Printable table of ``compare`` with the fitted parameters on top."""
        lines = [f"exchange fit: {self.exchange}"]
        if self.pingpong is not None:
            lines.append(f"ping-pong fit: {self.pingpong}")
        lines += [f"gamma (add) = {self.gamma * 1e9:.3g} ns/byte; cores = {self.cores}",
                  f"{'ranks':>5} {'size':>12} {'measured':>10} {'predicted':>10} {'pred/meas':>9} stretch"]
        for c in self.compare(rows, algorithm, stretch):
            s = contention(c["ranks"], self.cores) if stretch is None else stretch
            lines.append(f"{c['ranks']:>5} {c['size']:>12} {units.format_time(c['measured_s']):>10} "
                         f"{units.format_time(c['predicted_s']):>10} {c['ratio']:>9.2f} {s:.2f}")
        return "\n".join(lines)

    def plot(self, ax, rows=(), algorithms=("builtin", "ring")):
        """Draw model curves per rank count and measured points on a matplotlib ``ax``; returns ax."""
        rank_counts = sorted({r["ranks"] for r in rows}) or [2]
        sizes = [r["size"] for r in rows] or [1024, 64 * 2**20]
        grid = np.logspace(np.log10(min(sizes)), np.log10(max(sizes)), 100)
        markers = dict(zip(algorithms, "os^vD"))
        for i, p in enumerate(rank_counts):
            color = f"C{i}"
            ax.plot(grid, self.predict(grid, p), color=color,
                    label=f"model, {p} ranks (stretch {contention(p, self.cores):.2g})")
            for alg in algorithms:
                pts = [(r["size"], r["time_s"]) for r in rows if r["ranks"] == p and r["algorithm"] == alg]
                if pts:
                    x, y = zip(*pts)
                    ax.plot(x, y, linestyle="none", marker=markers.get(alg, "x"), color=color,
                            label=f"measured {alg}, {p} ranks")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("all-reduce time (s)")
        ax.legend(fontsize="small")
        return ax


def calibrate(sizes=DEFAULT_SIZES, iters: int = 7, warmup: int = 2, timeout: float = 120,
              cores=None) -> Calibration:
    """Measure and fit in one call (see ``measure_links`` for the ranges); ``cores`` default: this machine's."""
    cores = _cores() if cores is None else validate.integer("cores", cores, low=1, high=1_000_000)
    links = measure_links(sizes, iters, warmup, timeout)
    return from_links(links, cores)


def from_links(links, cores) -> Calibration:
    """Fit a ``Calibration`` from ``measure_links`` rows (at least 2 sizes); ``cores`` >= 1.

    Rows need ``size`` (bytes), ``exchange_s`` and ``add_s``; ``pingpong_s`` is optional.
    """
    cores = validate.integer("cores", cores, low=1, high=1_000_000)
    if not isinstance(links, (list, tuple)) or len(links) < 2:
        raise ValueError("links must be a list of at least 2 rows from measure_links")
    n = [r["size"] for r in links]
    pingpong = fit(n, [r["pingpong_s"] for r in links]) if all("pingpong_s" in r for r in links) else None
    exchange = fit(n, [r["exchange_s"] for r in links])
    big = [r for r in links if r["size"] >= 256 * 1024] or links
    gamma = float(np.median([r["add_s"] / r["size"] for r in big]))
    return Calibration(pingpong, exchange, gamma, cores, tuple(links))


# ------------------------------------------------------------------ same-run calibration

def _ring_step_probes(rank, world_size):
    """Probes for ``bench.measure_with_probes``: one ring step of an all-reduce of ``count`` elements.

    ``exchange_s``: ranks 0 and 1 swap n/p bytes while the others wait (a step without
    contention); ``exchange_all_s`` (even rank counts above 2): every pair swaps at once, as
    every rank does in a ring step; ``add_s``: adding n/p received bytes into a buffer.
    """
    import torch

    from .algorithms import _exchange

    partner = rank ^ 1

    def probes(count, itemsize):
        step_bytes = max(4, count * itemsize // world_size)
        send, recv, acc = torch.ones(step_bytes // 4), torch.empty(step_bytes // 4), torch.zeros(step_bytes // 4)

        def exchange():
            _exchange(send, partner, recv, partner)

        def exchange_alone():
            if rank < 2:
                exchange()

        ops = {"exchange_s": (exchange_alone, step_bytes), "add_s": (lambda: acc.add_(recv), step_bytes)}
        if world_size > 2 and world_size % 2 == 0:
            ops["exchange_all_s"] = (exchange, step_bytes)
        return ops

    return probes


def _same_run_worker(rank, world_size, config):
    from .bench import measure_with_probes

    return measure_with_probes(rank, world_size, probes=_ring_step_probes(rank, world_size), **config)


def step_model_time(step: dict, ranks, stretch=1.0, contended: bool = False) -> float:
    """Ring all-reduce time (s) from one measured step: ``stretch * (2(p-1) exchange + (p-1) add)``.

    ``step``: a ``SameRun.steps`` row; ``contended`` uses the exchange with every pair at once.
    """
    p = validate.integer("ranks", ranks, low=2, high=1_000_000)
    stretch = validate.number("stretch", stretch, low=1.0)
    exchange = step["exchange_all_s" if contended else "exchange_s"]
    return stretch * (2 * (p - 1) * exchange + (p - 1) * step["add_s"])


@dataclass
class SameRun:
    """All-reduce ``rows`` (as ``bench.sweep``) and their ring ``steps``, timed in the same repetitions.

    A step row: ``size`` (the all-reduce's bytes), ``step_size`` (n/p bytes), ``exchange_s``,
    ``add_s`` and, for even rank counts above 2, ``exchange_all_s`` (s, medians).
    """

    ranks: int
    cores: int
    rows: list
    steps: list

    def calibration(self) -> Calibration:
        """The alpha-beta(-gamma) fit of this run's uncontended exchanges and adds."""
        links = [{"size": s["step_size"], "exchange_s": s["exchange_s"], "add_s": s["add_s"]} for s in self.steps]
        return from_links(links, self.cores)

    def compare(self, algorithm: str = "builtin") -> list[dict]:
        """Per size: measured (s) and predicted/measured for the fit (``fit``), the step model
        (``steps``), both stretched by ``contention(ranks, cores)``, and the step model with the
        exchange measured under contention (``steps_contended``, None below 4 ranks); ``fit`` is
        None with fewer than 2 sizes."""
        cal = self.calibration() if len(self.steps) >= 2 else None
        stretch = contention(self.ranks, self.cores)
        steps = {s["size"]: s for s in self.steps}
        out = []
        for row in self.rows:
            if row["algorithm"] != algorithm:
                continue
            step, measured = steps[row["size"]], row["time_s"]
            contended = (step_model_time(step, self.ranks, contended=True) / measured
                         if "exchange_all_s" in step else None)
            out.append({"size": row["size"], "ranks": self.ranks, "measured_s": measured,
                        "fit": cal.predict(row["size"], self.ranks, stretch) / measured if cal else None,
                        "steps": step_model_time(step, self.ranks, stretch) / measured,
                        "steps_contended": contended, "stretch": stretch,
                        "measured_stretch": (step["exchange_all_s"] / step["exchange_s"]
                                             if "exchange_all_s" in step else None)})
        return out

    def report(self, algorithm: str = "builtin") -> str:
        """Printable predicted/measured table for ``algorithm``, with the fit on top."""
        head = f"{self.ranks} ranks on {self.cores} cores, stretch {contention(self.ranks, self.cores):.2g}; "
        if len(self.steps) >= 2:
            cal = self.calibration()
            head += f"fit of this run's exchanges: {cal.exchange}; gamma = {cal.gamma * 1e9:.3g} ns/byte"
        else:
            head += "no fit (one size)"
        lines = [head, f"{'size':>12} {'measured':>10} {'fit':>6} {'steps':>6} {'steps, contended':>16} "
                       f"{'exchange all/alone':>18}   (predicted/measured; {algorithm})"]

        def cell(value):
            return "-" if value is None else f"{value:.2f}"

        for c in self.compare(algorithm):
            lines.append(f"{c['size']:>12} {units.format_time(c['measured_s']):>10} {cell(c['fit']):>6} "
                         f"{cell(c['steps']):>6} {cell(c['steps_contended']):>16} {cell(c['measured_stretch']):>18}")
        return "\n".join(lines)


def measure_same_run(sizes=("64K", "1M", "16M"), ranks: int = 2, algorithms=("builtin",), iters: int = 7,
                     warmup: int = 2, pipeline: int = 8, timeout: float = 300, cores=None) -> SameRun:
    """Time all-reduces of ``sizes`` on ``ranks`` (2 to 64) local ranks, and their ring steps, interleaved.

    ``algorithms``, ``iters``, ``warmup``, ``pipeline`` as in ``bench.sweep``; ``timeout`` s;
    ``cores`` (default: this machine's) sets the contention stretch.
    """
    from .bench import _config
    from .launch import run

    ranks = validate.integer("ranks", ranks, low=2, high=64)
    cores = _cores() if cores is None else validate.integer("cores", cores, low=1, high=1_000_000)
    config = _config(sizes, algorithms, "float32", warmup, iters, pipeline)
    rows, probe_rows = run(_same_run_worker, ranks=ranks, timeout=timeout, args=(config,), echo=False)[0]
    steps = [{"step_size": max(4, r["size"] // ranks), **r} for r in probe_rows]
    return SameRun(ranks, cores, rows, steps)
