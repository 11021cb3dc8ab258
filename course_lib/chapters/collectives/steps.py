"""Chapter 04, the all-reduce step by step for three algorithms: NCCL's ring, its double binary tree, and
NVLS (the switch adds): which chunk moves on which link in each step, and each step's time.

A plan is a list of steps; each step is a set of transfers (source, destination, chunk, add or copy) that
run at once, the NVSwitch being one more node (``SWITCH``) for NVLS. ``simulate`` plays the transfers and
returns what every chunk of every rank holds after each step (the ring step-through of ``ring`` uses it too).

The time of a step is the alpha-beta model of section 4 on the step's busiest port: one message of the
largest number of bytes any rank sends or receives in that step, ``costmodel.collective_time`` of a
two-rank broadcast (one alpha, one message). Summed over the steps that is the algorithm run step after
step; ``costmodel.collective_time`` of the all-reduce is the same algorithm as NCCL runs it, pipelined in
small pieces so that every step's links work at once: equal for the ring, whose steps are already
equal and back to back, lower for the tree and NVLS.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import collectives, costmodel, validate
from ...costmodel.nccl import _btree  # NCCL's binary tree (trees.cc ncclGetBtree), the one the cost model uses
from .patterns import _ranks

SWITCH = -1                       # the NVSwitch: a node of the NVLS plan that holds no buffer of its own
STEP_ALGORITHMS = ("ring", "double_binary_tree", "in_network")   # registry ids (course_lib.collectives)
STEP_LABELS = {a: collectives.label("all_reduce", a) for a in STEP_ALGORITHMS}
STEP_RANKS = (2, 3, 4, 5, 6, 8)


@dataclass(frozen=True)
class Transfer:
    """One chunk moving in a step: ``src`` to ``dst`` (a rank, or ``SWITCH``), added in or copied over."""

    src: int
    dst: int
    chunk: int
    op: str  # "add" or "copy"


@dataclass(frozen=True)
class Step:
    """The transfers that run together in one step, the half of the all-reduce it belongs to, and a sentence.

    ``phase`` is ``reduce-scatter`` (the reducing half: partial sums travel) or ``all-gather`` (the
    finished sums travel), the keys of ``style.PHASE_COLOURS``.
    """

    phase: str
    transfers: tuple
    text: str


@dataclass(frozen=True)
class StepPlan:
    """An all-reduce of one algorithm on ``ranks`` ranks: chunk names and sizes, the steps, the states.

    ``states[k][r][c]`` is the set of ranks whose data chunk c of rank r holds after k steps.
    ``chunk_fraction`` is each chunk's share of the buffer.
    """

    algorithm: str
    ranks: int
    chunk_names: tuple
    chunk_fraction: float
    steps: tuple
    states: tuple

    @property
    def label(self) -> str:
        return STEP_LABELS[self.algorithm]

    def port_fractions(self, k) -> tuple[float, float]:
        """(sent, received): the largest share of the buffer any rank sends, and receives, in step ``k`` (1-based)."""
        step = self.steps[validate.integer("k", k, low=1, high=len(self.steps)) - 1]
        sent = [0] * self.ranks
        received = [0] * self.ranks
        for t in step.transfers:
            if t.src != SWITCH:
                sent[t.src] += 1
            if t.dst != SWITCH:
                received[t.dst] += 1
        return max(sent) * self.chunk_fraction, max(received) * self.chunk_fraction

    def sent_fraction(self, rank) -> float:
        """Share of the buffer ``rank`` sends over the whole all-reduce (times the buffer: its bytes)."""
        rank = validate.integer("rank", rank, low=0, high=self.ranks - 1)
        return sum(t.src == rank for s in self.steps for t in s.transfers) * self.chunk_fraction

    def done(self, k) -> int:
        """Chunks, over all ranks, that hold the full sum after step ``k`` (0 = the start)."""
        everyone = frozenset(range(self.ranks))
        return sum(c == everyone for row in self.states[k] for c in row)


def simulate(ranks, chunks, steps) -> tuple:
    """What every chunk of every rank holds, before and after each step of ``steps`` (lists of ``Transfer``).

    All sends of a step read the state before it. A transfer into the ``SWITCH`` adds (or copies) into the
    switch's own copy of that chunk, which the step's transfers out of the switch then deliver: the switch
    reduces as the data passes. Returns ``states``: ``states[k][r][c]``, a frozenset of ranks, k = 0 ... steps.
    """
    p = _ranks("ranks", ranks, low=1, high=64)
    n = validate.integer("chunks", chunks, low=1, high=64)
    state = tuple(tuple(frozenset({r}) for _ in range(n)) for r in range(p))
    states = [state]
    for transfers in steps:
        new = [list(row) for row in state]
        switch = {}
        for t in transfers:   # into the switch first: it adds what arrives in this step
            if t.dst == SWITCH:
                switch[t.chunk] = switch.get(t.chunk, frozenset()) | state[t.src][t.chunk] if t.op == "add" \
                    else state[t.src][t.chunk]
        for t in transfers:
            if t.dst == SWITCH:
                continue
            data = switch[t.chunk] if t.src == SWITCH else state[t.src][t.chunk]
            new[t.dst][t.chunk] = new[t.dst][t.chunk] | data if t.op == "add" else data
        state = tuple(tuple(row) for row in new)
        states.append(state)
    return tuple(states)


# ---------------------------------------------------------------- the three schedules

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


def _ring(p) -> list[Step]:
    steps = []
    for k, transfers in enumerate(ring_schedule(p), start=1):
        phase = transfers[0]["phase"]
        op = "add" if phase == "reduce-scatter" else "copy"
        text = (f"every rank sends one chunk (1/{p} of the buffer) to its right neighbour, which adds it"
                if op == "add" else "every rank forwards a finished chunk to its right neighbour, which stores it")
        steps.append(Step(phase, tuple(Transfer(t["src"], t["dst"], t["chunk"], op) for t in transfers), text))
    return steps


def _trees(p) -> list[dict]:
    """NCCL's double binary tree over ``p`` ranks: for each tree, rank -> (parent or -1, children), real ranks.

    The first is ``ncclGetBtree``; the second mirrors it (rank r takes the place of p-1-r) for an even p
    and shifts it by one for an odd p (trees.cc ncclGetDtree), so a leaf of one tree is inside the other.
    """
    if p % 2:
        to_tree, from_tree = (lambda r: (r - 1) % p), (lambda t: (t + 1) % p)
    else:
        to_tree, from_tree = (lambda r: p - 1 - r), (lambda t: p - 1 - t)
    first = {r: _btree(p, r) for r in range(p)}
    second = {}
    for r in range(p):
        up, children = _btree(p, to_tree(r))
        second[r] = (from_tree(up) if up >= 0 else -1, [from_tree(c) for c in children])
    return [first, second]


def _heights(tree) -> dict:
    root = next(r for r, (up, _) in tree.items() if up < 0)
    height, depth = {}, {root: 0}

    def walk(r):
        for c in tree[r][1]:
            depth[c] = depth[r] + 1
        height[r] = 1 + max((walk(c) for c in tree[r][1]), default=-1)
        return height[r]
    walk(root)
    return {"height": height, "depth": depth, "root": root}


def _tree(p) -> list[Step]:
    trees = _trees(p)
    info = [_heights(t) for t in trees]
    top = max(i["height"][i["root"]] for i in info)   # both trees reduce for as many steps as the taller needs
    steps = []
    for k in range(1, top + 1):   # reduce: a rank sends its partial sum up once its children's have arrived
        transfers = [Transfer(r, up, half, "add") for half, (tree, i) in enumerate(zip(trees, info))
                     for r, (up, _) in tree.items() if up >= 0 and i["height"][r] == k - 1]
        steps.append(Step("reduce-scatter", tuple(transfers),
                          "each rank whose children have sent passes its partial sum of that tree's half up to its parent"))
    for k in range(1, top + 1):   # broadcast: the finished half travels down, one level a step
        transfers = [Transfer(r, c, half, "copy") for half, (tree, i) in enumerate(zip(trees, info))
                     for r, (_, children) in tree.items() if i["depth"][r] == k - 1 for c in children]
        steps.append(Step("all-gather", tuple(transfers),
                          "the summed halves travel down both trees, one level a step, each rank storing its copy"))
    return steps


def _nvls(p) -> list[Step]:
    reduce = tuple([Transfer(r, SWITCH, c, "add") for r in range(p) for c in range(p)]
                   + [Transfer(SWITCH, c, c, "copy") for c in range(p)])
    multicast = tuple([Transfer(c, SWITCH, c, "copy") for c in range(p)]
                      + [Transfer(SWITCH, r, c, "copy") for c in range(p) for r in range(p) if r != c])
    return [Step("reduce-scatter", reduce, "every GPU pushes its whole buffer into the switch, which adds chunk c "
                 "from all GPUs as it passes and hands the sum to GPU c (multimem.ld_reduce)"),
            Step("all-gather", multicast, "every GPU sends its summed chunk once; the switch copies it to all the "
                 "other GPUs (multicast, multimem.st)")]


_SCHEDULES = {"ring": (_ring, lambda p: p, lambda p: tuple(f"c{c}" for c in range(p))),
              "double_binary_tree": (_tree, lambda p: 2, lambda p: ("h0", "h1")),
              "in_network": (_nvls, lambda p: p, lambda p: tuple(f"c{c}" for c in range(p)))}


def step_plan(algorithm="ring", ranks=4) -> StepPlan:
    """The plan of an all-reduce on ``ranks`` (2-8) ranks with ``algorithm`` of ``STEP_ALGORITHMS``.

    ring: p chunks, 2(p-1) steps; double_binary_tree: the buffer's two halves, one down each of NCCL's two
    trees, reduced up and sent back down one level a step (2 ceil(log2 p) steps); in_network: p chunks,
    2 steps through the switch.
    """
    algorithm = validate.choice("algorithm", algorithm, STEP_ALGORITHMS)
    p = _ranks("ranks", ranks, low=2, high=8)
    build, chunks, names = _SCHEDULES[algorithm]
    steps = build(p)
    states = simulate(p, chunks(p), [s.transfers for s in steps])
    return StepPlan(algorithm, p, names(p), 1.0 / chunks(p), tuple(steps), states)


@dataclass(frozen=True)
class StepTimes:
    """The seconds of each step (one after another), their sum, and the model's pipelined time."""

    plan: StepPlan
    nbytes: float
    bandwidth: float
    latency: float
    step_s: tuple
    pipelined_s: float

    @property
    def stepwise_s(self) -> float:
        """The steps one after another, seconds."""
        return sum(self.step_s)

    @property
    def busbw(self) -> float:
        """nccl-tests' busbw of the pipelined time, bytes/s (above ``bandwidth`` only when a switch adds)."""
        return costmodel.busbw("all_reduce", self.nbytes, self.pipelined_s, self.plan.ranks)

    def start_s(self, k) -> float:
        """When step ``k`` (1-based) starts, steps one after another, seconds."""
        k = validate.integer("k", k, low=1, high=len(self.step_s))
        return sum(self.step_s[:k - 1])


def step_times(plan: StepPlan, nbytes, bandwidth, latency) -> StepTimes:
    """Time each step of ``plan`` for a buffer of ``nbytes`` per rank on links of ``bandwidth`` bytes/s per
    direction with ``latency`` seconds per step: one message of the busiest port's bytes in that step
    (``costmodel.collective_time`` of a broadcast between two ranks: alpha + bytes / B); and the all-reduce
    as the model prices it pipelined (``costmodel.collective_time`` with the plan's algorithm)."""
    if not isinstance(plan, StepPlan):
        raise ValueError(f"plan must be a StepPlan (from step_plan(...)), got {type(plan).__name__}")
    n = validate.positive("nbytes", nbytes)
    bw = validate.positive("bandwidth", bandwidth)
    alpha = validate.non_negative("latency", latency)
    times = tuple(float(costmodel.collective_time("broadcast", max(plan.port_fractions(k)) * n, 2, bw, alpha, "ring"))
                  for k in range(1, len(plan.steps) + 1))
    pipelined = float(costmodel.collective_time("all_reduce", n, plan.ranks, bw, alpha, plan.algorithm))
    return StepTimes(plan, n, bw, alpha, times, pipelined)


# ---------------------------------------------------------------- drawing and the explorer

def _default_link() -> tuple[float, float]:
    """NVLink 4's bytes/s per direction (the catalog) and the course's per-step NVLink latency."""
    from ... import hardware
    return hardware.nvlink(4).per_direction, costmodel.hop_latency("nvlink")


def draw_allreduce_step(algorithm="ring", ranks=4, step=1, nbytes=1e9, bandwidth=None, latency=None, axes=None):
    """Step ``step`` (0 = the start) of ``algorithm`` on ``ranks`` ranks: the chunks and arrows above, the
    steps' time line below (NVLink 4 and its per-step latency unless ``bandwidth``/``latency`` are given).
    ``axes``: a dict with "state" and "time" Axes, or None for a new figure. Returns the axes."""
    from ...views import steps as views

    plan = step_plan(algorithm, ranks)
    k = validate.integer("step", step, low=0, high=len(plan.steps))
    bw, alpha = _default_link()
    times = step_times(plan, nbytes, bw if bandwidth is None else bandwidth, alpha if latency is None else latency)
    if axes is None:
        import matplotlib.pyplot as plt
        fig = plt.figure(figsize=(6.4, 7.0))
        axes = fig.subplot_mosaic([["state"], ["time"]], height_ratios=[4.6, 1.4])
    views.draw_state(axes["state"], plan, k)
    views.draw_timeline(axes["time"], times, k)
    return axes


def draw_allreduce_timelines(ranks=8, nbytes=1e9, bandwidth=None, latency=None):
    """The static view of the step-through: for the ring, the tree and NVLS on ``ranks`` ranks, every step's
    time one after another and the pipelined all-reduce, on one time axis. Returns the figure."""
    import matplotlib.pyplot as plt
    from ...views import steps as views

    bw, alpha = _default_link()
    all_times = [step_times(step_plan(a, ranks), nbytes, bw if bandwidth is None else bandwidth,
                            alpha if latency is None else latency) for a in STEP_ALGORITHMS]
    fig, axes = plt.subplots(len(all_times), 1, figsize=(7.5, 1.55 * len(all_times) + 0.5), sharex=True)
    views.draw_timelines(list(axes), all_times)
    fig.tight_layout()
    return fig


def step_readout(algorithm, ranks, step, size_mb, link_gb_s) -> str:
    """The explorer's readout at one step: what moved, the step's time, and the whole all-reduce both ways."""
    from ... import units

    plan = step_plan(algorithm, ranks)
    k = min(validate.integer("step", step, low=0, high=10**6), len(plan.steps))
    times = step_times(plan, size_mb * 1e6, link_gb_s * 1e9, _default_link()[1])
    ft, fb = units.format_time, units.format_bytes
    if k == 0:
        head = (f"<b>Start</b>: each of the {ranks} ranks holds its own buffer in {len(plan.chunk_names)} chunks "
                f"({', '.join(plan.chunk_names[:4])}{', ...' if len(plan.chunk_names) > 4 else ''}).")
    else:
        sent, received = plan.port_fractions(k)
        head = (f"<b>Step {k} of {len(plan.steps)}</b>: {plan.steps[k - 1].text}. The busiest port sends "
                f"{fb(sent * times.nbytes)} and receives {fb(received * times.nbytes)}: alpha + bytes / B = "
                f"{ft(times.step_s[k - 1])}; steps so far {ft(sum(times.step_s[:k]))}.")
    bw = times.bandwidth
    above = "above" if times.busbw > bw * 1.001 else "not above"
    return (f"{head} Fully reduced chunks: {plan.done(k)} of {ranks * len(plan.chunk_names)}. All "
            f"{len(plan.steps)} steps one after another: {ft(times.stepwise_s)}; pipelined, as NCCL runs it "
            f"(costmodel.collective_time): {ft(times.pipelined_s)}, busbw {units.format_bandwidth(times.busbw)}, "
            f"{above} the link's {units.format_bandwidth(bw)}.")


def allreduce_steps_explorer(algorithm="ring", ranks=4, step=1, size_mb=1000.0, link_gb_s=None):
    """Step through the ring, NCCL's double binary tree and NVLS with a Play button (or the step slider);
    sliders on ranks (2-8), size and link speed; the static view is the chosen step.

    Shows: the ring moves one 1/p chunk per rank in each of its 2(p-1) steps, the tree sends halves of the
    buffer up and down two trees in 2 log2 p steps, and NVLS needs two steps because the switch adds;
    pipelined, as NCCL runs them, the tree comes close to the ring for a large buffer and NVLS beats both, with
    a busbw above the link rate.
    """
    import ipywidgets as w

    from ...widgets import explorer, link_speed_slider

    algorithm = validate.choice("algorithm", algorithm, STEP_ALGORITHMS)
    if ranks not in STEP_RANKS:
        raise ValueError(f"ranks must be one of {STEP_RANKS}, got {ranks!r}")
    size_mb = validate.number("size_mb", size_mb, low=0.001, high=10_000.0)
    link = _default_link()[0] / 1e9 if link_gb_s is None else validate.number("link_gb_s", link_gb_s, low=1, high=2000)
    last = len(step_plan(algorithm, ranks).steps)
    step = validate.integer("step", step, low=0, high=last)
    controls = {
        "algorithm": w.Dropdown(options=[(STEP_LABELS[a], a) for a in STEP_ALGORITHMS], value=algorithm,
                                description="algorithm"),
        "ranks": w.SelectionSlider(options=STEP_RANKS, value=ranks, description="ranks (GPUs)"),
        "size_mb": w.FloatLogSlider(value=size_mb, base=10, min=-3, max=4, step=0.01, readout_format=".3g",
                                    description="size per rank, MB"),
        "link_gb_s": link_speed_slider(value=link, description="link GB/s per direction"),
        "step": w.IntSlider(value=step, min=0, max=last, description="step"),
        "play": w.Play(value=step, min=0, max=last, interval=1500, description="play the steps"),
    }

    def _limit(change):  # step and play follow the number of steps of the chosen algorithm and ranks
        steps = len(step_plan(controls["algorithm"].value, controls["ranks"].value).steps)
        for name in ("step", "play"):
            controls[name].max = steps

    controls["algorithm"].observe(_limit, names="value")
    controls["ranks"].observe(_limit, names="value")

    def draw(axes, algorithm, ranks, step, size_mb, link_gb_s, play):
        plan = step_plan(algorithm, ranks)
        draw_allreduce_step(algorithm, ranks, min(step, len(plan.steps)), size_mb * 1e6, link_gb_s * 1e9, None, axes)

    def readout(algorithm, ranks, step, size_mb, link_gb_s, play):
        return step_readout(algorithm, ranks, step, size_mb, link_gb_s)

    return explorer(draw, controls, readout=readout, title="All-reduce step by step: ring, tree, NVLS",
                    figsize=(6.4, 7.0), axes=lambda fig: fig.subplot_mosaic([["state"], ["time"]],
                                                                              height_ratios=[4.6, 1.4]),
                    follow={"play": lambda v: {"step": v}, "step": lambda v: {"play": v}})
