"""Chapter 04, patterns: what each collective leaves in which buffer, and which rank sends to which in each algorithm.
"""
from __future__ import annotations

from ... import collectives, costmodel, style, validate
from ...views import collectives as views


COLLECTIVES = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce", "all_to_all")


# the all-reduce algorithms the chapter compares: registry ids (course_lib.collectives), labels from the registry
ALGORITHMS = ("naive", "ring", "binomial_tree", "recursive_doubling", "halving_doubling", "double_binary_tree")


ALGORITHM_LABELS = {a: collectives.label("all_reduce", a) for a in ALGORITHMS}
PATTERN_ALGORITHMS = ("naive", "ring", "binomial_tree", "recursive_doubling", "halving_doubling")
MIN_SIZE, MAX_SIZE = 1e3, 1e10  # explorer range: 1 KB .. 10 GB


def _ranks(name, value, low=1, high=1024):
    return validate.integer(name, value, low=low, high=high)


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
                 "all ranks; dotted: nothing there)", fontsize=style.FONT_TITLE)
    if new:  # panels as wide as the page allows: 8 ranks' cells still hold their 8 pt labels
        fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=1 - 0.95 / fig.get_figheight(), wspace=0.02)
    return axes


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
        return [[(r, (r + 1) % p) for r in range(p)] for _ in range(int(collectives.get("all_reduce").algorithm("ring").steps(p)))]
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


def show_collectives_table(ranks=8):
    """Display ``collectives_table`` as HTML."""
    views.show_collectives_table(collectives_table(ranks), ranks)


def show_algorithm_table(nbytes, ranks, bandwidth, latency):
    """Display ``algorithm_table`` as HTML (sizes SI, bandwidth per direction)."""
    views.show_algorithm_table(algorithm_table(nbytes, ranks, bandwidth, latency))
