"""Calibrate the alpha-beta(-gamma) model on this machine and compare it with measured all-reduces.

The model, self-contained here (a later change may point it to ``costmodel``):

* a message of n bytes between two ranks takes ``alpha + n * beta`` seconds
  (alpha: latency, s; beta: s per byte, 1/bandwidth);
* a ring all-reduce on p ranks takes ``2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma``,
  gamma (s per byte) being the cost of adding a received byte into the local buffer, plus,
  where measured, the fixed cost of calling the collective (``overhead``, s, paid once);
* with more ranks than cores, ranks take turns on the cores: every term is stretched by
  the contention factor ``max(1, ranks / cores)``.

Two measurements give alpha and beta: **ping-pong** (one message at a time, half the round
trip) and **simultaneous exchange** (both ranks send and receive at once, as in every ring
step). The ring model uses the exchange fit, since that is what a ring step does.

The model is only as good as the moment it was calibrated in: on a shared or virtual machine
the same exchange can take 30% longer a minute later. ``measure_same_run`` therefore times, in
the same repetitions as the all-reduces, the pieces the ring is made of, at each size: one ring
step of n/p bytes (every rank at once; above 2 ranks also one pair alone), the fixed cost of
calling a collective, and the add. Steps go through gloo's own collective path (an all-to-all
that sends to one neighbour only): timed with Python-level send/recv, a third or more of them
stall for milliseconds on a virtual machine, which gloo's all-reduce does not. Two predictions
follow: the **alpha-beta fit** (a straight line through all sizes: alpha from the steps of one
pair alone, stretched when ranks outnumber cores; beta from the steps with every rank at
once), and the **step model**, the call cost plus ``2(p-1)``
measured steps plus ``p-1`` measured adds at each size, which tests the ring's decomposition
without the straight line's error and with contention measured rather than modelled.

In a notebook::

    cal = lab.calibrate.calibrate()                  # about 5 s on 2 cores
    rows = lab.bench.sweep(sizes=lab.bench.size_range("64K", "16M", 4), ranks=(2, 4)).rows
    cal.plot(ax, rows)                               # measured points over the model's curves
    print(cal.report(rows))                          # predicted / measured per size

    run = lab.calibrate.measure_same_run(["64K", "1M", "16M"], ranks=2)
    print(run.report())                              # both predictions / measured, per size
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from .. import collectives, evidence, units, validate
from .processes import usable_cores as _cores

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


def ring_all_reduce_time(nbytes, ranks, alpha, beta, gamma=0.0, stretch=1.0, overhead=0.0):
    """Model time (s) of a ring all-reduce of ``nbytes`` on ``ranks`` (>= 1).

    ``alpha`` s, ``beta`` and ``gamma`` s/byte (>= 0), ``stretch`` >= 1 multiplies everything;
    ``overhead`` (s, >= 0): the fixed cost of calling the collective, paid once.
    """
    n = validate.sizes("nbytes", nbytes, allow_zero=True)
    p = validate.integer("ranks", ranks, low=1, high=1_000_000)
    alpha = validate.non_negative("alpha", alpha)
    beta = validate.non_negative("beta", beta)
    gamma = validate.non_negative("gamma", gamma)
    stretch = validate.number("stretch", stretch, low=1.0)
    overhead = validate.non_negative("overhead", overhead)
    ring, reduced = _ring_terms(p)
    out = stretch * (overhead + ring.steps(p) * alpha + ring.volume(p) * n * beta + reduced.volume(p) * n * gamma)
    return float(out) if out.ndim == 0 else out


def _ring_terms(p: int):
    """The registry's ring all-reduce (steps 2(p-1), volume 2(p-1)/p) and its reduce-scatter half, whose
    p-1 steps each add one share ((p-1)/p of the buffer is reduced): one home for the ring's terms."""
    return (collectives.get("all_reduce").algorithm("ring"), collectives.get("reduce_scatter").algorithm("ring"))


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

    ``pingpong`` is None when the links were measured by ``measure_same_run`` (exchange only);
    ``overhead`` (s) is the fixed cost of calling a collective, paid once per all-reduce (0 when
    not measured).
    """

    pingpong: AlphaBeta | None
    exchange: AlphaBeta
    gamma: float
    cores: int
    links: tuple = ()
    overhead: float = 0.0

    def predict(self, nbytes, ranks, stretch=None):
        """Ring all-reduce time (s) for ``nbytes`` on ``ranks``; ``stretch`` defaults to ``contention``."""
        ranks = validate.integer("ranks", ranks, low=1, high=1_000_000)
        stretch = contention(ranks, self.cores) if stretch is None else stretch
        return ring_all_reduce_time(nbytes, ranks, self.exchange.alpha, self.exchange.beta, self.gamma, stretch,
                                    self.overhead)

    def compare(self, rows, algorithm="builtin", stretch=None) -> list[dict]:
        """For benchmark ``rows`` of ``algorithm``: size, ranks, measured, predicted (s) and their ratio."""
        out = []
        for row in rows:
            if row["algorithm"] != algorithm:
                continue
            predicted = self.predict(row["size"], row["ranks"], stretch)
            out.append({"size": row["size"], "ranks": row["ranks"], "measured_s": row["time_s"],
                        "predicted_s": predicted, "ratio": evidence.ratio(predicted, row["time_s"])})
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


def from_links(links, cores, overhead=0.0) -> Calibration:
    """Fit a ``Calibration`` from ``measure_links`` rows (at least 2 sizes); ``cores`` >= 1;
    ``overhead`` (s, >= 0) the collective's call cost.

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
    overhead = validate.non_negative("overhead", overhead)
    return Calibration(pingpong, exchange, gamma, cores, tuple(links), overhead)


# ------------------------------------------------------------------ same-run calibration

def _ring_step_probes(rank, world_size):
    """Probes for ``bench.measure_with_probes``: the pieces of a ring all-reduce of ``count`` elements.

    Steps are timed through gloo's own collective path, as an all-to-all in which a rank sends
    n/p bytes to one neighbour and nothing to the others. (A step timed with Python-level
    ``isend``/``irecv`` is a poor proxy: on a virtual machine a third to a half of those waits
    stall for milliseconds, while gloo's all-reduce, which waits inside C++, rarely does.)

    ``step_s``: every rank sends n/p bytes to the next rank and receives n/p from the previous
    one, as in every ring step; ``step_alone_s`` (more than 2 ranks): ranks 0 and 1 swap n/p
    bytes in a group of their own while the others wait idle (a step without contention);
    ``call_s``: an all-reduce of an empty tensor, the fixed cost of calling a collective, which
    the all-reduce pays once and every timed step pays again; ``add_s``: adding n/p received
    bytes into a buffer.
    """
    import torch
    import torch.distributed as dist

    p = world_size
    nxt, prv = (rank + 1) % p, (rank - 1) % p
    empty = torch.empty(0)
    pair = dist.new_group([0, 1]) if p > 2 else None  # every rank must take part in creating it

    def all_to_all(elements, send_to, recv_from, size=p, group=None):
        ins, outs = [0] * size, [0] * size
        ins[send_to], outs[recv_from] = elements, elements
        send, recv = torch.ones(elements), torch.empty(elements)
        return lambda: dist.all_to_all_single(recv, send, outs, ins, group=group)

    def probes(count, itemsize):
        step_bytes = max(4, count * itemsize // p)
        elements = step_bytes // 4
        received, acc = torch.ones(elements), torch.zeros(elements)
        ops = {"step_s": (all_to_all(elements, nxt, prv), step_bytes),
               "call_s": (lambda: dist.all_reduce(empty), step_bytes),
               "add_s": (lambda: acc.add_(received), step_bytes)}
        if p > 2:
            swap = all_to_all(elements, 1 - rank, 1 - rank, 2, pair) if rank < 2 else (lambda: None)
            ops["step_alone_s"] = (swap, step_bytes)
        return ops

    return probes


def _same_run_worker(rank, world_size, config):
    from .bench import measure_with_probes

    return measure_with_probes(rank, world_size, probes=_ring_step_probes(rank, world_size), **config)


def step_model_time(step: dict, ranks, stretch=1.0, alone: bool = False) -> float:
    """Ring all-reduce time (s) from one measured step (a ``SameRun.steps`` row):
    ``stretch * (call + 2(p-1) (step - call) + (p-1) add)``.

    The all-reduce pays the collective's call cost once; each timed step paid it too, so it is
    taken off each step. ``alone`` uses the step without contention (``step_alone_s``).
    """
    p = validate.integer("ranks", ranks, low=2, high=1_000_000)
    stretch = validate.number("stretch", stretch, low=1.0)
    step_time = step["step_alone_s" if alone and "step_alone_s" in step else "step_s"]
    call = min(step.get("call_s", 0.0), step_time)
    ring, reduced = _ring_terms(p)
    return stretch * (call + ring.steps(p) * (step_time - call) + reduced.steps(p) * step["add_s"])


@dataclass
class SameRun:
    """All-reduce ``rows`` (as ``bench.sweep``) and their ring ``steps``, timed in the same repetitions.

    A step row: ``size`` (the all-reduce's bytes), ``step_size`` (n/p bytes), ``step_s``,
    ``call_s``, ``add_s`` and, above 2 ranks, ``step_alone_s`` (s; see ``_ring_step_probes``),
    and under ``times`` every probe's per-operation times. Rows and steps hold medians
    (``quantile`` 0.5); ``at(q)`` summarises the same run by another quantile.
    """

    ranks: int
    cores: int
    rows: list
    steps: list
    quantile: float = 0.5

    def at(self, quantile: float) -> "SameRun":
        """The same run with every time the ``quantile`` (0 to 1) of its per-operation times.

        0.5 is the median (as recorded). On a shared or virtual machine some operations stall
        for milliseconds while the host runs something else; when that happens to a third or
        more of them the median moves into the stalls. A lower quantile such as 0.25 is the
        typical *undisturbed* operation, which is what the model describes.
        """
        q = validate.number("quantile", quantile, low=0.0, high=1.0)
        rows = [{**r, "time_s": float(np.quantile(r["times_s"], q))} if r.get("times_s") else dict(r)
                for r in self.rows]
        steps = [{**s, **{k: float(np.quantile(v, q)) for k, v in s.get("times", {}).items() if v}}
                 for s in self.steps]
        return SameRun(self.ranks, self.cores, rows, steps, q)

    def calibration(self, contended: bool = False) -> Calibration:
        """The alpha-beta(-gamma) fit of this run's steps (call cost taken off) and adds, with the
        median call cost as ``overhead``: the steps of one pair alone or, with ``contended``, the
        steps with every rank at once (the same thing at 2 ranks)."""
        key = "step_alone_s" if self.ranks > 2 and not contended else "step_s"
        calls = [s.get("call_s", 0.0) for s in self.steps]
        links = [{"size": s["step_size"], "exchange_s": max(s[key] - c, 1e-9), "add_s": s["add_s"]}
                 for s, c in zip(self.steps, calls)]
        return from_links(links, self.cores, overhead=float(np.median(calls)))

    def predict_fit(self, nbytes) -> float:
        """The alpha-beta(-gamma) ring time (s) for ``nbytes`` (scalar or list) with this run's two
        contention terms.

        Latency: ``alpha`` of one pair alone times ``contention(ranks, cores)``, since a waiting
        rank must also wait its turn for a core. Bandwidth: ``beta``, the slope of the steps
        with every rank at once, since the ranks share the copy bandwidth however they are
        scheduled. At 2 ranks on 2 or more cores both are the plain fit. Plus the call cost.
        """
        alone, every = self.calibration(), self.calibration(contended=True)
        alpha = contention(self.ranks, self.cores) * alone.exchange.alpha
        return ring_all_reduce_time(nbytes, self.ranks, alpha, every.exchange.beta, every.gamma,
                                    overhead=alone.overhead)

    def compare(self, algorithm: str = "builtin") -> list[dict]:
        """Per size: measured (s) and predicted/measured for
        ``fit`` (``predict_fit``: the alpha-beta line with contention modelled; None with fewer
        than 2 sizes) and ``steps`` (the measured steps with every rank at once: contention
        measured); ``stretch`` is the latency's contention factor and ``measured_stretch`` step
        with every rank / step alone (None at 2 ranks)."""
        rows = [row for row in self.rows if row["algorithm"] == algorithm]
        fits = self.predict_fit([row["size"] for row in rows]) if rows and len(self.steps) >= 2 else None
        stretch = contention(self.ranks, self.cores)
        steps = {s["size"]: s for s in self.steps}
        out = []
        for i, row in enumerate(rows):
            step, measured = steps[row["size"]], row["time_s"]
            alone = step.get("step_alone_s")
            out.append({"size": row["size"], "ranks": self.ranks, "measured_s": measured,
                        "fit": evidence.ratio(float(fits[i]), measured) if fits is not None else None,
                        "steps": evidence.ratio(step_model_time(step, self.ranks), measured), "stretch": stretch,
                        "measured_stretch": step["step_s"] / alone if alone else None})
        return out

    def report(self, algorithm: str = "builtin") -> str:
        """Printable predicted/measured table for ``algorithm``, with the fit on top."""
        statistic = "median" if self.quantile == 0.5 else f"{self.quantile:.0%} quantile"
        head = (f"{self.ranks} ranks on {self.cores} cores, latency stretch {contention(self.ranks, self.cores):.2g}; "
                f"times: {statistic} of each operation\n")
        if len(self.steps) >= 2:
            cal, every = self.calibration(), self.calibration(contended=True)
            head += (f"fit of this run's steps: {cal.exchange}; gamma = {cal.gamma * 1e9:.3g} ns/byte; "
                     f"call = {units.format_time(cal.overhead)}")
            if self.ranks > 2:
                head += f"\nevery rank at once: beta = {every.exchange.beta * 1e9:.3g} ns/byte"
        else:
            head += "no fit (one size)"
        lines = [head, f"{'size':>12} {'measured':>10} {'fit':>6} {'steps':>6} {'step all/alone':>14}"
                       f"   (predicted/measured; {algorithm})"]

        def cell(value):
            return "-" if value is None else f"{value:.2f}"

        for c in self.compare(algorithm):
            lines.append(f"{c['size']:>12} {units.format_time(c['measured_s']):>10} {cell(c['fit']):>6} "
                         f"{cell(c['steps']):>6} {cell(c['measured_stretch']):>14}")
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
