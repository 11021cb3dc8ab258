"""Chapter 04, the ring all-reduce step by step: its schedule, the chunks each rank holds, the step-through explorer.
"""
from __future__ import annotations

from ... import collectives, style, validate
from ...views import ring as views
from ...widgets import explorer
from .patterns import _ranks
from .steps import _ring, ring_schedule, simulate


RING_RANKS = (2, 3, 4, 5, 6, 8)
_RING = collectives.get("all_reduce").algorithm("ring")


def ring_steps(ranks) -> int:
    """Number of steps of a ring all-reduce on ``ranks`` (1-64): 2(p-1), the registry's ring (``collectives``)."""
    return int(_RING.steps(_ranks("ranks", ranks, low=1, high=64)))


def ring_states(ranks) -> list[list[list[frozenset]]]:
    """Contents of every chunk on every rank after each step of the ring (index 0: before step 1).

    ``states[k][r][c]`` is the set of ranks whose data chunk c of rank r holds after k
    steps: {r} at the start, all ranks when it is fully reduced. Simulated from
    ``ring_schedule`` by ``steps.simulate``: sends use the state before the step, all at once.
    """
    p = _ranks("ranks", ranks, low=1, high=64)
    return [[list(row) for row in state] for state in simulate(p, p, [s.transfers for s in _ring(p)])]


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
    step = validate.integer("step", step, low=0, high=ring_steps(p))
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


def draw_ring_step(step=0, ranks=4, ax=None, fontsize=style.FONT_SMALL):
    """Draw the ring's chunks after ``step`` steps (0 to 2(p-1)) and the transfers of that step.

    Each rank is a row of p cells placed clockwise around a circle; a cell lists the ranks whose
    data it holds (darker = more of the sum; from 5 ranks on, a count); fully reduced chunks
    have a black border and a Σ. Arrows show the chunk each rank sent in this step (red:
    reduce-scatter, green: all-gather). ``ranks`` 2-8; ``fontsize`` 8-14 (every text). Returns the Axes.
    """
    import matplotlib.pyplot as plt
    p = _ranks("ranks", ranks, low=2, high=8)
    step = validate.integer("step", step, low=0, high=ring_steps(p))
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
    draw_ring_step(min(step, ring_steps(ranks)), ranks, ax=ax)


def _ring_readout(ranks, step):
    step = min(step, ring_steps(ranks))
    info = ring_step_info(step, ranks)
    owned = owned_chunks(ring_states(ranks)[step])
    done = sum(len(v) for v in owned.values())
    return (f"{info['text']} Fully reduced chunks so far: {done} of {ranks * ranks} "
            f"(ranks x chunks). Each step moves 1/{ranks} of the buffer per rank; "
            f"{ring_steps(ranks)} steps move 2({ranks}-1)/{ranks} = {_RING.volume(ranks):.3g} buffers per rank.")


def ring_explorer(ranks=4, step=0):
    """Live step-through of the ring: sliders on ranks (2-8) and step (0 to 2(p-1)); static view first.

    Shows: a ring all-reduce takes 2(p-1) steps of one 1/p chunk per rank: p-1 reduce-scatter steps
    leave each rank one fully reduced chunk, and p-1 all-gather steps give every rank all of them.
    """
    import ipywidgets as w
    if ranks not in RING_RANKS:
        raise ValueError(f"ranks must be one of {RING_RANKS}, got {ranks!r}")
    step = validate.integer("step", step, low=0, high=ring_steps(ranks))
    controls = {
        "ranks": w.SelectionSlider(options=RING_RANKS, value=ranks, description="ranks (GPUs)"),
        "step": w.IntSlider(value=step, min=0, max=ring_steps(ranks), description="step"),
    }
    def _limit(change):  # the step slider follows the number of steps of the chosen ring (before the redraw)
        controls["step"].max = 2 * (change["new"] - 1)

    controls["ranks"].observe(_limit, names="value")
    return explorer(_ring_draw, controls, readout=_ring_readout, title="The ring all-reduce, step by step",
                    figsize=(5.6, 5.6))
