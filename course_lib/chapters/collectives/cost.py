"""Chapter 04, cost: each algorithm's alpha-beta time over message sizes, the fastest one and the crossovers, the cost explorer.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ... import costmodel, hardware, units, validate
from ...views import collectives as views
from ...widgets import GPU_COUNTS, explorer, gpu_count_slider, link_speed_slider
from .patterns import ALGORITHMS, ALGORITHM_LABELS, MAX_SIZE, MIN_SIZE, _ranks, algorithm_table


EXPLORER_RANKS = tuple(p for p in GPU_COUNTS if p <= 1024)


def cost_curves(ranks, bandwidth, latency, sizes=None) -> dict:
    """All-reduce time (s) vs size for every algorithm of ``ALGORITHMS`` and the lower bound.

    ``ranks`` 1-1e6; ``bandwidth`` bytes/s per direction; ``latency`` s per step;
    ``sizes`` bytes (default 1 KB to 10 GB). Returns ``{"sizes": ..., name: times, "lower_bound": ...}``.
    """
    p = _ranks("ranks", ranks, low=1, high=1_000_000)
    bw = validate.positive("bandwidth", bandwidth)
    alpha = validate.non_negative("latency", latency)
    n = np.logspace(np.log10(MIN_SIZE), np.log10(MAX_SIZE), 120) if sizes is None else \
        np.atleast_1d(validate.sizes("sizes", sizes)).astype(float)
    out = {"sizes": n}
    for name in ALGORITHMS:
        out[name] = np.asarray(costmodel.collective_time("all_reduce", n, p, bw, alpha, name), dtype=float)
    out["lower_bound"] = np.asarray(costmodel.lower_bound_time(n, p, bw), dtype=float)
    return out


def fastest(nbytes, ranks, bandwidth, latency) -> str:
    """Name (key of ``ALGORITHMS``) of the fastest all-reduce algorithm in the alpha-beta model."""
    rows = algorithm_table(nbytes, ranks, bandwidth, latency)
    return min(rows, key=lambda r: r["time_s"])["algorithm"]


def crossover_size(ranks, bandwidth, latency, algorithm="recursive_doubling", versus="ring"):
    """Size (bytes) above which ``versus`` beats ``algorithm``, both all-reduce; None if it never does (1 KB-10 GB)."""
    algorithm = validate.choice("algorithm", algorithm, list(ALGORITHMS))
    versus = validate.choice("versus", versus, list(ALGORITHMS))
    curves = cost_curves(ranks, bandwidth, latency, np.logspace(np.log10(MIN_SIZE), np.log10(MAX_SIZE), 2000))
    better = curves[versus] < curves[algorithm]
    if not better.any():
        return None
    return float(curves["sizes"][np.argmax(better)])


def _check_cost_inputs(size_mb, ranks, link_gb_s, latency_us, algorithm):
    validate.number("size_mb", size_mb, low=MIN_SIZE / 1e6, high=MAX_SIZE / 1e6)
    _ranks("ranks", ranks, low=2, high=1024)
    validate.number("link_gb_s", link_gb_s, low=0.1, high=5000)
    validate.number("latency_us", latency_us, low=0.0, high=10_000)
    return validate.choice("algorithm", algorithm, list(ALGORITHMS))


@lru_cache(maxsize=256)
def _explorer_curves(ranks, link_gb_s, latency_us):
    return cost_curves(ranks, link_gb_s * units.GB, latency_us * 1e-6)


def _cost_view_args(size_mb, ranks, link_gb_s, latency_us, algorithm):
    algorithm = _check_cost_inputs(size_mb, ranks, link_gb_s, latency_us, algorithm)
    size = size_mb * 1e6
    t = costmodel.collective_time("all_reduce", size, ranks, link_gb_s * units.GB, latency_us * 1e-6, algorithm)
    return (_explorer_curves(ranks, link_gb_s, latency_us), algorithm, (size, t),
            f"All-reduce, alpha-beta model: {ranks} ranks, {link_gb_s:.3g} GB/s per direction, "
            f"alpha = {latency_us:.3g} us per step", _explorer_crossover(ranks, link_gb_s, latency_us))


@lru_cache(maxsize=256)
def _explorer_crossover(ranks, link_gb_s, latency_us, versus="recursive_doubling"):
    return crossover_size(ranks, link_gb_s * units.GB, latency_us * 1e-6, algorithm=versus, versus="ring")


def draw_cost(ax, size_mb, ranks, link_gb_s, latency_us, algorithm):
    """Explorer plot: time vs size for every algorithm (chosen one bold), the lower bound, your point.

    ``size_mb`` MB (1e-3 to 1e4), ``ranks`` 2-1024, ``link_gb_s`` GB/s per direction, ``latency_us``
    alpha in microseconds per step, ``algorithm`` a key of ``ALGORITHMS``. Returns the updater
    ``update(**values)`` that later slider events call (the same artists, moved in place).
    """
    update = views.draw_cost_curves(ax, ALGORITHM_LABELS,
                                    *_cost_view_args(size_mb, ranks, link_gb_s, latency_us, algorithm))
    return lambda **values: update(*_cost_view_args(**values))


def cost_readout(size_mb, ranks, link_gb_s, latency_us, algorithm) -> str:
    """One line for the explorer: time, algbw, busbw and the bound at the chosen point (HTML)."""
    algorithm = _check_cost_inputs(size_mb, ranks, link_gb_s, latency_us, algorithm)
    n, bw, alpha = size_mb * 1e6, link_gb_s * units.GB, latency_us * 1e-6
    rows = {r["algorithm"]: r for r in algorithm_table(n, ranks, bw, alpha)}
    row = rows[algorithm]
    best = min(rows.values(), key=lambda r: r["time_s"])
    bound = costmodel.lower_bound_time(n, ranks, bw)
    t = row["time_s"]
    text = (f"{ALGORITHM_LABELS[algorithm]}, {units.format_bytes(n)} on {ranks} ranks: <b>{units.format_time(t)}</b> "
            f"({row['latency_share']:.0%} of it latency); algbw {costmodel.algbw(n, t) / units.GB:.3g} GB/s (size / time, not a link rate), "
            f"busbw <b>{units.format_bandwidth(costmodel.busbw('all_reduce', n, t, ranks))}</b>; "
            f"lower bound {units.format_time(bound)} ({row['vs_lower_bound']:.2f}x). "
            f"Fastest here: <b>{best['label']}</b> ({units.format_time(best['time_s'])}).")
    return text + " " + ring_verdict(n, ranks, link_gb_s, latency_us)


def ring_verdict(nbytes, ranks, link_gb_s, latency_us) -> str:
    """Where the ring wins at these settings: the size from which it beats recursive doubling and the
    binomial tree (the dotted line on the plot), and how it stands against halving-doubling, which in
    this model always matches its bytes in fewer steps."""
    rd = _explorer_crossover(ranks, link_gb_s, latency_us)
    tree = _explorer_crossover(ranks, link_gb_s, latency_us, versus="binomial_tree")
    say = lambda size: f"from {units.format_bytes(size)}" if size else "never in 1 KB-10 GB"  # noqa: E731
    where = "above" if rd is not None and nbytes >= rd else "below"
    return (f"The ring beats recursive doubling {say(rd)} (you are {where} it) and the binomial tree {say(tree)}; "
            f"halving-doubling sends the same bytes in {2 * int(np.log2(ranks))} steps, not {2 * (ranks - 1)}: this "
            f"model never puts the ring ahead of it (section 2 says why libraries still use rings).")


def cost_explorer(size_mb=1000.0, ranks=8, link_gb_s=None, latency_us=None, algorithm="ring"):
    """Sliders: message size (MB), ranks, link speed (GB/s per direction), alpha (us) and algorithm.

    Defaults: 1 GB on 8 ranks over NVLink 4 (the catalog's per-direction rate) with the
    per-hop latency of the course's cost model. Shows a static plot first.

    Shows: small all-reduces are latency-bound and favour few-step algorithms, large ones are
    bandwidth-bound and the ring and halving-doubling reach the lower bound, and the ring overtakes
    recursive doubling from a size that grows with the ranks and alpha.
    """
    import ipywidgets as w
    link_gb_s = hardware.nvlink(4).per_direction / units.GB if link_gb_s is None else link_gb_s
    latency_us = costmodel.hop_latency("nvlink") * 1e6 if latency_us is None else latency_us
    algorithm = _check_cost_inputs(size_mb, ranks, link_gb_s, latency_us, algorithm)
    if ranks not in EXPLORER_RANKS:
        raise ValueError(f"ranks must be one of {EXPLORER_RANKS}, got {ranks!r}")
    controls = {
        "size_mb": w.FloatLogSlider(value=size_mb, base=10, min=-3, max=4, step=0.05,
                                    description="message MB per rank", readout_format=".3g"),
        "ranks": gpu_count_slider(ranks, options=EXPLORER_RANKS, description="ranks (GPUs)"),
        "link_gb_s": link_speed_slider(link_gb_s, low=0.1, high=2000, description="link GB/s per direction"),
        "latency_us": w.FloatLogSlider(value=max(latency_us, 0.01), base=10, min=-1, max=3, step=0.05,
                                       description="alpha, us per step", readout_format=".3g"),
        "algorithm": w.Dropdown(options=[(ALGORITHM_LABELS[k], k) for k in ALGORITHMS], value=algorithm,
                                description="algorithm"),
    }
    return explorer(draw_cost, controls, readout=cost_readout,
                    title="All-reduce algorithms in the alpha-beta model", figsize=(8, 4.6))
