"""Chapter 04: the collectives lab: the model side of every figure and explorer of the chapter.

The six collectives as before/after buffers; the message patterns of the all-reduce algorithms
and their alpha-beta cost (:func:`course_lib.costmodel.collective_time`); the ring all-reduce step
by step, in the chunk order of :func:`course_lib.lab.algorithms.ring_all_reduce`; the ring and
cost explorers; the lab's oversubscription table and predict-then-measure comparison; published
sweeps against the model. Drawing lives in :mod:`course_lib.views.collectives`.

Units: sizes in bytes, times in seconds, bandwidths in bytes/s **per direction** unless a
name says otherwise (``link_gb_s`` is GB/s per direction, ``latency_us`` microseconds).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from .. import collectives, costmodel, datafiles, evidence, hardware, units, validate
from ..views import collectives as views
from ..views.collectives import format_oversubscription, oversubscription_lines  # noqa: F401 (public here)
from ..widgets import GPU_COUNTS, explorer, gpu_count_slider, link_speed_slider

COLLECTIVES = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce", "all_to_all")
# the all-reduce algorithms the chapter compares: registry ids (course_lib.collectives), labels from the registry
ALGORITHMS = ("naive", "ring", "binomial_tree", "recursive_doubling", "halving_doubling", "double_binary_tree")
ALGORITHM_LABELS = {a: collectives.label("all_reduce", a) for a in ALGORITHMS}
PATTERN_ALGORITHMS = ("naive", "ring", "binomial_tree", "recursive_doubling", "halving_doubling")
RING_RANKS = (2, 3, 4, 5, 6, 8)
EXPLORER_RANKS = tuple(p for p in GPU_COUNTS if p <= 1024)
MIN_SIZE, MAX_SIZE = 1e3, 1e10  # explorer range: 1 KB .. 10 GB


def _ranks(name, value, low=1, high=1024):
    return validate.integer(name, value, low=low, high=high)


# ---------------------------------------------------------------- the six collectives

_LETTERS = "ABCDEFGH"


def collective_buffers(collective, ranks=4):
    """What each rank holds before and after ``collective`` on ``ranks`` ranks (2-8).

    Returns ``(before, after)``: one list per rank of cells; a cell is ``None`` (nothing
    there) or ``(label, owner)``: ``owner`` is the rank whose data it is, or ``"sum"`` for a
    reduced value. Rank r's input is letter r (``A``, ``B``, ...); ``A1`` is chunk 1 of
    rank 0's buffer; ``Σ1`` is chunk 1 summed over all ranks. For all-to-all, ``B3`` is the
    piece rank 1 has for rank 3.
    """
    collective = validate.choice("collective", collective, COLLECTIVES)
    p = _ranks("ranks", ranks, low=2, high=8)
    own = lambda r, c: (f"{_LETTERS[r]}{c}", r)  # noqa: E731
    total = lambda c: (f"Σ{c}", "sum")  # noqa: E731
    if collective == "broadcast":
        before = [[("A", 0)]] + [[None] for _ in range(1, p)]
        after = [[("A", 0)] for _ in range(p)]
    elif collective == "reduce":
        before = [[(_LETTERS[r], r)] for r in range(p)]
        after = [[("Σ", "sum")]] + [[(_LETTERS[r], r)] for r in range(1, p)]
    elif collective == "all_gather":
        before = [[(_LETTERS[r], r) if c == r else None for c in range(p)] for r in range(p)]
        after = [[(_LETTERS[c], c) for c in range(p)] for _ in range(p)]
    elif collective == "reduce_scatter":
        before = [[own(r, c) for c in range(p)] for r in range(p)]
        after = [[total(c) if c == r else None for c in range(p)] for r in range(p)]
    elif collective == "all_reduce":
        before = [[own(r, c) for c in range(p)] for r in range(p)]
        after = [[total(c) for c in range(p)] for _ in range(p)]
    else:  # all_to_all: rank r's piece c goes to rank c, into slot r: a transpose
        before = [[own(r, c) for c in range(p)] for r in range(p)]
        after = [[own(c, r) for c in range(p)] for r in range(p)]
    return before, after


def collectives_table(ranks=8) -> list[dict]:
    """One row per collective: what it does, where training uses it, and nccl-tests' busbw factor at ``ranks``.

    The busbw factor (costmodel.busbw_factor) is also the number of bytes each rank must move
    through its link per byte of nccl-tests' size, with the best send/receive algorithm.
    """
    p = _ranks("ranks", ranks, low=1, high=1_000_000)
    what = {
        "broadcast": ("one rank's buffer is copied to every rank",
                      "start of training: rank 0's initial weights to every replica"),
        "reduce": ("the element-wise sum of all buffers lands on one rank",
                   "a loss or a metric summed on rank 0"),
        "all_gather": ("each rank contributes one piece; every rank ends with all pieces",
                       "ZeRO-3 / FSDP gathering parameter shards before a layer runs"),
        "reduce_scatter": ("the sum is computed and cut in pieces; rank r keeps piece r",
                           "ZeRO-2/3 / FSDP: each rank keeps the summed gradients of its shard"),
        "all_reduce": ("every rank ends with the element-wise sum of all buffers",
                       "data parallelism (DDP): gradients; tensor parallelism: activations"),
        "all_to_all": ("rank r sends its piece c to rank c: a transpose of pieces",
                       "mixture of experts: tokens to their experts and back"),
    }
    return [{"collective": c, "what": what[c][0], "used_for": what[c][1],
             "busbw_factor": costmodel.busbw_factor(c, p)} for c in COLLECTIVES]


def draw_collectives(ranks=4, axes=None):
    """Draw the six collectives on ``ranks`` (2-8) ranks: buffers before (left) and after (right).

    ``axes``: six matplotlib Axes, or None for a new 2 x 3 figure. Returns the axes.
    """
    p = _ranks("ranks", ranks, low=2, high=8)
    new = axes is None
    # notebook width (drawn at full size); each row as tall as its widest panel's buffers at 3.7 in wide
    row_in = 0.4 + 3.7 * (1.25 * p + 2.3) / (2 * p + 4.1)
    axes = views.axes_grid(axes, (3, 2), (7.5, 0.95 + 3 * row_in))
    for ax, name in zip(axes, COLLECTIVES):
        views.draw_collective(ax, name, *collective_buffers(name, p))
    fig = axes[0].figure
    fig.suptitle(f"The six collectives on {p} ranks\n(letters: each rank's data; Σ: summed over "
                 "all ranks; dotted: nothing there)", fontsize=10)
    if new:  # panels as wide as the page allows: 8 ranks' cells still hold their 8 pt labels
        fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=1 - 0.95 / fig.get_figheight(), wspace=0.02)
    return axes


# ---------------------------------------------------------------- algorithms

def algorithm_pattern(algorithm, ranks=8) -> list[list[tuple[int, int]]]:
    """Messages of one all-reduce ``algorithm`` on ``ranks`` (2-64), step by step.

    Returns one list per step of ``(src, dst)`` messages sent in that step. ``algorithm``
    is one of ``PATTERN_ALGORITHMS``. The naive algorithm has two phases (all to rank 0,
    rank 0 to all); rank 0 really sends its p-1 messages one after another, which the
    alpha-beta model counts as bandwidth, not as steps. Recursive doubling and
    halving-doubling need a power of two here (the library folds the extra ranks in first).
    """
    algorithm = validate.choice("algorithm", algorithm, PATTERN_ALGORITHMS)
    p = _ranks("ranks", ranks, low=2, high=64)
    if algorithm == "naive":
        return [[(r, 0) for r in range(1, p)], [(0, r) for r in range(1, p)]]
    if algorithm == "ring":
        return [[(r, (r + 1) % p) for r in range(p)] for _ in range(2 * (p - 1))]
    if algorithm == "binomial_tree":  # reduce to rank 0, then broadcast back down
        up, mask = [], 1
        while mask < p:
            up.append([(r, r - mask) for r in range(p) if r & mask and not r & (mask - 1)])
            mask <<= 1
        return up + [[(b, a) for a, b in step] for step in reversed(up)]
    if p & (p - 1):
        raise ValueError(f"ranks must be a power of two for {algorithm} in this drawing, got {p}")
    masks = []
    mask = p >> 1
    while mask:
        masks.append(mask)
        mask >>= 1
    exchange = lambda m: [(r, r ^ m) for r in range(p)]  # noqa: E731 - both directions at once
    if algorithm == "recursive_doubling":
        return [exchange(m) for m in reversed(masks)]
    return [exchange(m) for m in masks] + [exchange(m) for m in reversed(masks)]


def algorithm_table(nbytes, ranks, bandwidth, latency) -> list[dict]:
    """Alpha-beta cost of each all-reduce algorithm of ``ALGORITHMS`` from costmodel.collective_time.

    ``nbytes`` (> 0, bytes per rank), ``ranks`` (1-1e6), ``bandwidth`` (bytes/s per direction,
    > 0), ``latency`` (alpha, s per step, >= 0). Each row: ``steps`` (latency terms),
    ``bytes_per_rank`` (what the busiest rank sends), ``time_s`` and ``vs_lower_bound``
    (time over the 2(p-1)/p n/B bound; inf for one rank).
    """
    n = validate.positive("nbytes", nbytes)
    p = _ranks("ranks", ranks, low=1, high=1_000_000)
    bw = validate.positive("bandwidth", bandwidth)
    alpha = validate.non_negative("latency", latency)
    bound = costmodel.lower_bound_time(n, p, bw)
    rows = []
    for name in ALGORITHMS:
        steps, factor = collectives.terms("all_reduce", name, p)
        t = costmodel.collective_time("all_reduce", n, p, bw, alpha, name)
        rows.append({"algorithm": name, "label": ALGORITHM_LABELS[name], "steps": steps,
                     "bytes_per_rank": factor * n, "time_s": t,
                     "latency_share": steps * alpha / t if t > 0 else 0.0,
                     "vs_lower_bound": t / bound if bound > 0 else float("inf")})
    return rows


def draw_algorithms(ranks=8, axes=None):
    """Draw who sends to whom in the naive, ring, tree and halving-doubling all-reduces on ``ranks``.

    ``ranks``: a power of two in [2, 16]. ``axes``: four Axes or None. Colour = step
    (dark early, light late). Returns the axes.
    """
    p = _ranks("ranks", ranks, low=2, high=16)
    if p & (p - 1):
        raise ValueError(f"ranks must be a power of two in [2, 16], got {p}")
    axes = views.axes_grid(axes, (2, 2), (7.5, 7.2))  # 2 x 2 at notebook width: drawn at full size
    views.draw_patterns(axes, p, algorithm_pattern("binomial_tree", p), views.tree_layout(p),
                        algorithm_pattern("halving_doubling", p))
    return axes


# ---------------------------------------------------------------- the ring, step by step

def ring_steps(ranks) -> int:
    """Number of steps of a ring all-reduce on ``ranks`` (1-64): 2(p-1)."""
    return 2 * (_ranks("ranks", ranks, low=1, high=64) - 1)


def ring_schedule(ranks) -> list[list[dict]]:
    """The transfers of each ring step (index 0 is step 1), in the library's chunk order.

    Reduce-scatter step s (0-based): rank r sends chunk (r-s-1) mod p to rank r+1 and adds
    the chunk (r-s-2) mod p it receives from rank r-1. All-gather step s: rank r sends
    chunk (r-s) mod p and stores the chunk (r-s-1) mod p it receives. Each transfer is a
    dict ``src``, ``dst``, ``chunk``, ``phase`` ('reduce-scatter' or 'all-gather').
    """
    p = _ranks("ranks", ranks, low=1, high=64)
    out = []
    for s in range(p - 1):
        out.append([{"src": r, "dst": (r + 1) % p, "chunk": (r - s - 1) % p, "phase": "reduce-scatter"}
                    for r in range(p)])
    for s in range(p - 1):
        out.append([{"src": r, "dst": (r + 1) % p, "chunk": (r - s) % p, "phase": "all-gather"}
                    for r in range(p)])
    return out


def ring_states(ranks) -> list[list[list[frozenset]]]:
    """Contents of every chunk on every rank after each step of the ring (index 0: before step 1).

    ``states[k][r][c]`` is the set of ranks whose data chunk c of rank r holds after k
    steps: {r} at the start, all ranks when it is fully reduced. Simulated from
    ``ring_schedule``: sends use the state before the step, all at once.
    """
    p = _ranks("ranks", ranks, low=1, high=64)
    state = [[frozenset({r}) for _ in range(p)] for r in range(p)]
    states = [state]
    for transfers in ring_schedule(p):
        new = [row[:] for row in state]
        for t in transfers:
            data = state[t["src"]][t["chunk"]]
            if t["phase"] == "reduce-scatter":
                new[t["dst"]][t["chunk"]] = state[t["dst"]][t["chunk"]] | data
            else:
                new[t["dst"]][t["chunk"]] = data
        state = new
        states.append(state)
    return states


def owned_chunks(state) -> dict[int, list[int]]:
    """For one state of ``ring_states``: rank -> the chunks it holds fully reduced (all ranks summed)."""
    if not isinstance(state, (list, tuple)) or not state:
        raise ValueError("state must be one entry of ring_states(...): a list of ranks' chunk sets")
    p = len(state)
    everyone = frozenset(range(p))
    return {r: [c for c, s in enumerate(row) if s == everyone] for r, row in enumerate(state)}


def ring_step_info(step, ranks=4) -> dict:
    """What happens at ``step`` (0 = start, up to 2(p-1)) of a ring on ``ranks`` (2-8): phase and a sentence."""
    p = _ranks("ranks", ranks, low=2, high=8)
    step = validate.integer("step", step, low=0, high=2 * (p - 1))
    if step == 0:
        return {"phase": "start", "step": 0, "text": f"Start: each of the {p} ranks holds its own buffer, "
                                                     f"cut into {p} chunks."}
    transfers = ring_schedule(p)[step - 1]
    phase = transfers[0]["phase"]
    k = step if phase == "reduce-scatter" else step - (p - 1)
    if phase == "reduce-scatter":
        text = (f"Reduce-scatter step {k} of {p - 1}: every rank sends one chunk (1/{p} of the buffer) to its "
                "right neighbour and adds the chunk arriving from its left into its own copy.")
        if k == p - 1:
            text += " Now each rank owns one fully reduced chunk (black border)."
    else:
        text = (f"All-gather step {k} of {p - 1}: every rank forwards a finished chunk to the right; the "
                "receiver overwrites its copy, no adding.")
        if k == p - 1:
            text += " Done: every rank holds the whole sum."
    return {"phase": phase, "step": step, "transfers": transfers, "text": text}


def draw_ring_step(step=0, ranks=4, ax=None, fontsize=8):
    """Draw the ring's chunks after ``step`` steps (0 to 2(p-1)) and the transfers of that step.

    Each rank is a row of p cells placed clockwise around a circle; a cell lists the ranks whose
    data it holds (darker = more of the sum; from 5 ranks on, a count); fully reduced chunks
    have a black border and a Σ. Arrows show the chunk each rank sent in this step (red:
    reduce-scatter, green: all-gather). ``ranks`` 2-8; ``fontsize`` 8-14 (every text). Returns the Axes.
    """
    import matplotlib.pyplot as plt
    p = _ranks("ranks", ranks, low=2, high=8)
    step = validate.integer("step", step, low=0, high=2 * (p - 1))
    fontsize = validate.number("fontsize", fontsize, low=8, high=14)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 5.2))
    return views.draw_ring_state(ax, ring_states(p)[step], ring_step_info(step, p), step, fontsize)


def draw_ring_steps(ranks=4, ncols=4):
    """Every step of the ring on ``ranks`` (2-6) in one figure (the static step-through). Returns the figure."""
    p = _ranks("ranks", ranks, low=2, high=6)
    ncols = validate.integer("ncols", ncols, low=1, high=8)
    return views.draw_ring_steps(ring_states(p), [ring_step_info(k, p) for k in range(ring_steps(p) + 1)], ncols)


def _ring_draw(ax, ranks, step):
    draw_ring_step(min(step, 2 * (ranks - 1)), ranks, ax=ax)


def _ring_readout(ranks, step):
    step = min(step, 2 * (ranks - 1))
    info = ring_step_info(step, ranks)
    owned = owned_chunks(ring_states(ranks)[step])
    done = sum(len(v) for v in owned.values())
    return (f"{info['text']} Fully reduced chunks so far: {done} of {ranks * ranks} "
            f"(ranks x chunks). Each step moves 1/{ranks} of the buffer per rank; "
            f"{2 * (ranks - 1)} steps move 2({ranks}-1)/{ranks} = {2 * (ranks - 1) / ranks:.3g} buffers per rank.")


def ring_explorer(ranks=4, step=0):
    """Live step-through of the ring: sliders on ranks (2-8) and step (0 to 2(p-1)); static view first.

    Shows: a ring all-reduce takes 2(p-1) steps of one 1/p chunk per rank: p-1 reduce-scatter steps
    leave each rank one fully reduced chunk, and p-1 all-gather steps give every rank all of them.
    """
    import ipywidgets as w
    if ranks not in RING_RANKS:
        raise ValueError(f"ranks must be one of {RING_RANKS}, got {ranks!r}")
    step = validate.integer("step", step, low=0, high=2 * (ranks - 1))
    controls = {
        "ranks": w.SelectionSlider(options=RING_RANKS, value=ranks, description="ranks (GPUs)"),
        "step": w.IntSlider(value=step, min=0, max=2 * (ranks - 1), description="step"),
    }
    def _limit(change):  # the step slider follows the number of steps of the chosen ring (before the redraw)
        controls["step"].max = 2 * (change["new"] - 1)

    controls["ranks"].observe(_limit, names="value")
    return explorer(_ring_draw, controls, readout=_ring_readout, title="The ring all-reduce, step by step",
                    figsize=(5.6, 5.6))


# ---------------------------------------------------------------- the cost explorer

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
            f"({row['latency_share']:.0%} of it latency); algbw {units.format_bandwidth(costmodel.algbw(n, t))}, "
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


# ---------------------------------------------------------------- predict, measure, oversubscribe

def _rows_at(rows, algorithm):
    return {(r["ranks"], r["size"]): r for r in rows if r["algorithm"] == algorithm}


def oversubscription_table(cal, rows, ranks=4, base=2, algorithm="builtin") -> list[dict]:
    """How a run on ``ranks`` compares with one on ``base`` ranks, measured and modelled, per size.

    ``cal``: a ``lab.calibrate.Calibration``; ``rows``: benchmark rows holding both rank counts.
    Columns: ``measured_ratio`` (time on ranks / time on base), ``model_ratio`` (the fitted
    ring model without contention), ``stretched_ratio`` (with the stretch max(1, ranks/cores)),
    ``pred_over_measured`` (the stretched model over the measured time on ``ranks``).
    """
    ranks = _ranks("ranks", ranks, low=2, high=64)
    base = _ranks("base", base, low=1, high=64)
    if not hasattr(cal, "predict") or not hasattr(cal, "cores"):
        raise ValueError("cal must be a Calibration from lab.calibrate.calibrate()")
    from ..lab.calibrate import contention
    at = _rows_at(rows, algorithm)
    out = []
    for (p, size), row in sorted(at.items()):
        if p != ranks or (base, size) not in at:
            continue
        t_base, t = at[(base, size)]["time_s"], row["time_s"]
        model = cal.predict(size, ranks, stretch=1.0) / cal.predict(size, base, stretch=1.0)
        stretch = contention(ranks, cal.cores) / contention(base, cal.cores)
        out.append({"size": size, "measured_base_s": t_base, "measured_s": t, "measured_ratio": t / t_base,
                    "model_ratio": model, "stretched_ratio": model * stretch,
                    "pred_over_measured": evidence.ratio(cal.predict(size, ranks), t)})
    if not out:
        raise ValueError(f"rows must hold {algorithm} rows for both {base} and {ranks} ranks at the same sizes")
    return out


def compare_prediction(predicted_s, rows, nbytes, ranks, cal, algorithm="builtin") -> list[str]:
    """Lines comparing a learner's prediction (s, or None) with the measured time and the calibrated model.

    ``rows``: benchmark rows that include ``nbytes`` (bytes) on ``ranks``. An unanswered
    prediction (None) is reported as such; the expected answer is never printed.
    """
    from ..lab.calibrate import contention
    n = int(validate.positive("nbytes", nbytes))
    p = _ranks("ranks", ranks, low=1, high=64)
    at = _rows_at(rows, algorithm)
    if (p, n) not in at:
        raise ValueError(f"rows must hold a {algorithm} measurement of nbytes={n} on ranks={p}")
    measured = at[(p, n)]["time_s"]
    stretch = contention(p, cal.cores)
    lines = [f"measured here: {units.format_bytes(n, binary=True)} on {p} ranks, {algorithm}: {units.format_time(measured)}"
             f" ({cal.cores} cores, stretch max(1, {p}/{cal.cores}) = {stretch:g})",
             f"the model with this machine's fit (alpha, beta, gamma, stretch): {units.format_time(cal.predict(n, p))}"]
    if predicted_s is None or predicted_s is Ellipsis:
        lines.insert(0, "your prediction: not answered yet (exercise 04.5)")
        return lines
    try:
        pred = float(predicted_s)
    except (TypeError, ValueError):
        return [f"your prediction must be a number of seconds, got {type(predicted_s).__name__}"] + lines
    if not math.isfinite(pred) or pred <= 0:
        return ["your prediction must be a positive number of seconds"] + lines
    lines.insert(0, f"your prediction (given alpha and beta, no stretch): {units.format_time(pred)}")
    lines.append(f"measured / your prediction = {measured / pred:.2f}; "
                 f"measured / (your prediction x stretch) = {measured / (pred * stretch):.2f}")
    return lines


# ---------------------------------------------------------------- published measurements vs the model

def published_sweeps(min_points=4) -> dict:
    """Single-node all-reduce sweeps among the published cases: source id -> sorted cases (>= ``min_points``)."""
    min_points = validate.integer("min_points", min_points, low=2, high=100)
    groups: dict = {}
    for case in costmodel.published()["cases"]:
        if case["collective"] == "all_reduce" and case.get("nodes", 1) == 1:
            groups.setdefault(case["source"], []).append(case)
    return {k: sorted(v, key=lambda c: c["nbytes"]) for k, v in groups.items() if len(v) >= min_points}


def plot_published(ax=None, min_points=4):
    """Published 8-GPU all-reduce sweeps (busbw, GB/s per direction) against the simple ring model.

    Per sweep: measured points; the ring at spec bandwidth (alpha-beta with the course's
    latencies, no efficiency); the course model (achievable efficiencies, NCCL-like choice
    of algorithm); the link's per-direction rate, which no send/receive algorithm can beat.
    """
    import matplotlib.pyplot as plt
    sweeps = published_sweeps(min_points)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.4))  # the sweeps' legend goes under the Axes
    grid = np.logspace(3, np.log10(16 * 2**30), 100)
    model = {}
    for cases in sweeps.values():
        system = cases[0]["system"]
        link = hardware.system(system).gpu_link
        model[system] = {
            "simple": costmodel.predict("all_reduce", grid, system, algorithm="ring", achievable=False).busbw / units.GB,
            "course": costmodel.predict("all_reduce", grid, system, achievable=True).busbw / units.GB,
            "link_name": link.name, "link_gb_s": link.per_direction / units.GB}
    return views.draw_sweeps(ax, sweeps, grid, model)


def model_failures(small=2**20) -> list[str]:
    """Sentences, computed from the published cases, where the simple ring model and reality part.

    Small messages (< ``small`` bytes): the model's latency; busbw above the link's rate
    (in-network reduction); multi-node cases off by more than 1.5x in the course model.
    """
    small = validate.positive("small", small)
    lines = []
    cases = costmodel.published()["cases"]
    table = {r["id"]: r for r in costmodel.validation_table()}
    tiny = [c for c in cases if c["collective"] == "all_reduce" and c.get("nodes", 1) == 1 and c["nbytes"] < small]
    if tiny:
        worst = max(tiny, key=lambda c: abs(math.log(table[c["id"]]["ratio"])))
        simple = costmodel.predict("all_reduce", worst["nbytes"], worst["system"], algorithm="ring", achievable=False)
        lines.append(f"Small messages: {units.format_bytes(worst['nbytes'], binary=True)} on {worst['as_measured']}: "
                     f"measured busbw {worst['busbw_gb_s']:g} GB/s, simple model {float(simple.busbw[0]) / units.GB:.3g} "
                     f"GB/s, course model {table[worst['id']]['predicted_busbw'] / units.GB:.3g} GB/s. Here the time is "
                     "a fixed launch cost and per-step latencies that vary between machines "
                     f"({datafiles.source(worst['source'])['url']}).")
    above = [c for c in cases if c["collective"] == "all_reduce" and c.get("nodes", 1) == 1
             and c["busbw_gb_s"] * units.GB > hardware.system(c["system"]).gpu_link.per_direction]
    if above:
        best = max(above, key=lambda c: c["busbw_gb_s"])
        link = hardware.system(best["system"]).gpu_link
        lines.append(f"Above the line rate: {units.format_bytes(best['nbytes'], binary=True)} on {best['as_measured']}: "
                     f"busbw {best['busbw_gb_s']:g} GB/s, more than the {link.per_direction / units.GB:g} GB/s per "
                     f"direction of {link.name}. No send/receive algorithm can do that; NVSwitch adds the data "
                     f"in the switch (NVLS), so busbw is no longer a wire rate ({datafiles.source(best['source'])['url']}).")
    multi = [c for c in cases if c["collective"] == "all_reduce" and c.get("nodes", 1) > 1
             and abs(math.log(table[c["id"]]["ratio"])) > math.log(1.5)]
    for c in multi[:2]:
        r = table[c["id"]]
        lines.append(f"Across nodes: {c['as_measured']}: measured {c['busbw_gb_s']:g} GB/s busbw, course model "
                     f"{r['predicted_busbw'] / units.GB:.3g} GB/s ({r['algorithm']}), {r['ratio']:.2g}x off; NCCL's choice of "
                     f"algorithm and NIC placement decide, which the model does not see ({datafiles.source(c['source'])['url']}).")
    return lines


# ---------------------------------------------------------------- small views


def show_collectives_table(ranks=8):
    """Display ``collectives_table`` as HTML."""
    views.show_collectives_table(collectives_table(ranks), ranks)


def show_algorithm_table(nbytes, ranks, bandwidth, latency):
    """Display ``algorithm_table`` as HTML (sizes SI, bandwidth per direction)."""
    views.show_algorithm_table(algorithm_table(nbytes, ranks, bandwidth, latency))
