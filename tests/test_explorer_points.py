"""Each explorer shows the point its text makes (issue 23.4).

Every ``*_explorer`` states, in its docstring after ``Shows:``, the one sentence it exists to show;
docs/explorers.md lists the same sentences. For each explorer a check below moves its controls the way
the sentence says and asserts that the readout (or the plotted data, or a plot title) changes that way.
A new explorer without a sentence, or without a check here, fails ``test_every_explorer_states_its_point``.
"""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from tests.test_explorer_contract import EXPLORERS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "explorers.md"

_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_BYTES = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_NUMBER = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)"


def plain(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def times(html: str) -> list[float]:
    """Every duration in a readout, in seconds, in order."""
    return [float(v) * _TIME[u] for v, u in re.findall(_NUMBER + r" (ns|us|ms|min|h|s)\b", plain(html))]


def first_time_after(html: str, label: str) -> float:
    return times(plain(html).split(label, 1)[1])[0]


def sizes(html: str) -> list[float]:
    """Every size (SI bytes) in a readout, in order."""
    return [float(v) * _BYTES[u] for v, u in re.findall(_NUMBER + r" (TB|GB|MB|KB|B)\b(?!/)", plain(html))]


def number_after(html: str, label: str) -> float:
    match = re.search(re.escape(label) + r"\s*" + _NUMBER, plain(html))
    assert match, f"{label!r} not in {plain(html)!r}"
    return float(match.group(1))


def shows(fn) -> str:
    """The sentence after ``Shows:`` in ``fn``'s docstring, on one line ('' if none)."""
    doc = fn.__doc__ or ""
    match = re.search(r"Shows:\s*(.+?)(?:\n\s*\n|\Z)", doc, re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""


@pytest.fixture
def quiet(monkeypatch):
    import IPython.display
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: None)
    yield
    plt.close("all")


CHECKS = {}


def check(explorer_id):
    def register(fn):
        CHECKS[explorer_id] = fn
        return fn
    return register


def test_every_explorer_states_its_point():
    documented = " ".join(DOCS.read_text(encoding="utf-8").split())
    for param in EXPLORERS:
        module, name = param.values
        sentence = shows(getattr(module, name))
        assert sentence.endswith("."), f"{param.id}: no 'Shows: <one sentence>.' in its docstring"
        assert sentence in documented, f"{param.id}: docs/explorers.md does not list its sentence: {sentence}"
        assert param.id in CHECKS, f"{param.id}: no check in tests/test_explorer_points.py"
    assert set(CHECKS) == {p.id for p in EXPLORERS}


# ---------------------------------------------------------------- chapter 00

@check("gradients.gradient_exchange_explorer")
def _gradients(h):
    base = first_time_after(h.readout, "per direction:")
    assert first_time_after(h.render(parameters_b=140.0), "per direction:") == pytest.approx(2 * base, rel=0.02)
    assert first_time_after(h.render(parameters_b=70.0, link_gb_s=100.0), "per direction:") == \
        pytest.approx(base / 2, rel=0.02)
    h.render(link_gb_s=50.0)
    many = first_time_after(h.render(gpus=512), "per direction:")
    assert base < many < 1.2 * base  # 2(p-1)/p: from 8 to 512 GPUs the time grows by less than 15%
    assert h.axes.get_title().endswith("over 512 GPUs")  # the title follows the GPU slider


# ---------------------------------------------------------------- chapter 01

@check("pcie.pcie_explorer")
def _pcie(h):
    h.render(mode="to-host", gpus=1)
    alone = times(h.readout)[-1]
    shared = times(h.render(gpus=4))[-1]
    assert shared > 1.5 * alone  # four GPUs share the uplink
    staged = times(h.render(mode="staged"))[-1]
    p2p = times(h.render(mode="p2p-switch"))[-1]
    assert staged == pytest.approx(2 * shared, rel=0.02) and p2p < staged / 2


@check("pcie.offload_explorer")
def _offload(h):
    base = times(h.readout)[-1]
    assert times(h.render(parameters_b=26.0))[-1] == pytest.approx(2 * base, rel=0.05)
    h.render(parameters_b=13.0)
    assert times(h.render(gpus=4))[-1] == pytest.approx(base / 4, rel=0.05)
    h.render(gpus=1)
    assert times(h.render(overlap=True))[-1] == pytest.approx(base / 2, rel=0.05)


# ---------------------------------------------------------------- chapter 02

@check("nvlink.mesh_explorer")
def _mesh(h):
    h.render(gpus=4)
    four = number_after(h.readout, "links =")
    eight = number_after(h.render(gpus=8), "links =")
    assert four > eight  # the same links shared among more peers
    assert "No full mesh" in h.render(gpus=16, links_per_gpu=12)


# ---------------------------------------------------------------- chapter 03

@check("nvswitch.fabric_explorer")
def _fabric(h):
    def pairs(readout):
        return {part.split(":")[0].strip(): number_after(part, "one pair") for part in plain(readout).split(";")
                if "one pair" in part}
    eight = pairs(h.render(gpus=8))
    sixteen = pairs(h.render(gpus=16))
    switch = next(k for k in eight if k.startswith("NVSwitch"))
    mesh = next(k for k in eight if k.startswith("full mesh"))
    assert sixteen[switch] == eight[switch]           # every pair keeps the GPU's full bandwidth
    assert sixteen[mesh] < eight[mesh]                # a mesh splits it among more peers


# ---------------------------------------------------------------- chapter 04

@check("collectives.ring_explorer")
def _ring(h):
    def reduced(readout):
        return number_after(readout, "Fully reduced chunks so far:")
    p = h.values()["ranks"]
    assert h.controls["step"].max == 2 * (p - 1)  # steps 1 .. 2(p-1) after the start
    assert reduced(h.render(step=0)) == 0
    half = h.render(step=p - 1)
    assert "Reduce-scatter step" in half and reduced(half) == p  # each rank owns one reduced chunk
    end = h.render(step=2 * (p - 1))
    assert "All-gather step" in end and reduced(end) == p * p  # every rank holds every chunk
    h.render(ranks=6)
    assert h.controls["step"].max == 2 * (6 - 1)


@check("collectives.allreduce_steps_explorer")
def _steps(h):
    def stepwise_and_pipelined(readout):
        rest = plain(readout).split("one after another:", 1)[1]
        return times(rest)[:2]
    def steps_of(readout):
        return int(number_after(readout, "of "))
    # the ring: 2(p-1) steps, each moving one 1/p chunk per rank (250 MB of 1 GB on 4 ranks)
    ring = h.render(algorithm="ring", ranks=4, size_mb=1000.0, step=1)
    assert "Step 1 of 6" in plain(ring) and h.controls["play"].max == 6
    assert "sends 250 MB and receives 250 MB" in plain(ring)
    # the tree: 2 log2 p steps of halves; NVLS: two steps through the switch, which adds
    tree = h.render(algorithm="double_binary_tree", ranks=8, step=1)
    assert "Step 1 of 6" in plain(tree) and "sends 500 MB" in plain(tree)
    nvls = h.render(algorithm="in_network", step=2)
    assert "Step 2 of 2" in plain(nvls) and "the switch copies it" in plain(nvls)
    # playing moves the step the drawing shows
    h.render(play=1)
    assert h.values()["step"] == 1 and "step 1 of 2" in h.axes["state"].get_title()
    # pipelined: tree about the ring for a large buffer, NVLS faster, its busbw above the link rate
    pipelined = {a: stepwise_and_pipelined(h.render(algorithm=a, ranks=8, step=1))[1]
                 for a in ("ring", "double_binary_tree", "in_network")}
    assert pipelined["in_network"] < pipelined["ring"] < pipelined["double_binary_tree"] < 1.2 * pipelined["ring"]
    assert "above the link" in plain(h.render(algorithm="in_network")) and "not above" in plain(h.render(algorithm="ring"))
    stepwise, piped = stepwise_and_pipelined(h.render(algorithm="double_binary_tree"))
    assert stepwise > 2 * piped   # one level at a time is far slower than pipelined


@check("collectives.cost_explorer")
def _cost(h):
    def crossover(readout):
        return sizes(readout.split("The ring beats recursive doubling", 1)[1])[0]
    # large messages: the ring sits on the lower bound
    assert "(1.00x)" in h.render(size_mb=1000.0, ranks=8)
    # small ones are latency-bound: a few-step algorithm is fastest, never the naive one at 1024 ranks
    small = h.render(size_mb=0.001, ranks=1024)
    assert "Fastest here: recursive doubling" in plain(small)
    for ranks in (64, 256, 1024):
        assert "Fastest here: naive" not in plain(h.render(size_mb=0.001, ranks=ranks))
    # the ring starts to win from a size the readout names and the plot marks; it grows with ranks and alpha
    h.render(size_mb=1000.0, ranks=8, latency_us=1.0)
    at_8 = crossover(h.readout)
    assert crossover(h.render(ranks=64)) > at_8
    assert crossover(h.render(ranks=8, latency_us=100.0)) > at_8
    line = next(line for line in h.axes.lines if line.get_linestyle() == ":")
    assert line.get_visible() and line.get_xdata()[0] == pytest.approx(crossover(h.readout), rel=0.05)
    assert "8 ranks" in h.axes.get_title() and "alpha = 100 us" in h.axes.get_title()


# ---------------------------------------------------------------- chapter 05

@check("infiniband.cliff_explorer")
def _cliff(h):
    def slowdown(readout):
        return number_after(readout, "in one node (")
    with_nics = slowdown(h.readout)
    assert "No cap below the NICs' rate applies" in plain(h.readout)
    one_nic = slowdown(h.render(nics_per_node=1))
    assert one_nic > 3 * with_nics  # few NICs: the real cliff
    h.render(nics_per_node=8)
    # every cap the model applies is named, in the readout and (the usable rate) in the title
    fast = plain(h.render(nic_gbit_s=800.0))
    assert "PCIe cap" in fast and "PCIe Gen5 x16" in fast and "usable" in h.axes.get_title()
    assert "node decline" in plain(h.render(nodes=64)) and "64 x 8 GPUs" in h.axes.get_title()
    assert "measured efficiencies" in plain(h.render(achievable=True))
    # from 16 to 512 GPUs busbw keeps falling (the chapter no longer says "almost flat")
    ring = next(line for line in h.axes.lines if line.get_linestyle() == "--")
    ys = list(ring.get_ydata())
    assert ys[-1] < 0.9 * ys[0]


# ---------------------------------------------------------------- chapter 06

@check("data_parallel.dp_scaling_explorer")
def _dp(h):
    def efficiency(readout):
        return number_after(readout, "scaling efficiency")
    base = efficiency(h.readout)
    slow = efficiency(h.render(link_gb_s=5.0))
    assert slow < base and "network 5 GB/s per GPU" in h.figure.axes[0].get_title()
    no_overlap = efficiency(h.render(overlap=False))
    assert no_overlap < slow
    mem0 = number_after(h.render(zero=0), "Memory per GPU")
    mem3 = number_after(h.render(zero=3), "Memory per GPU")
    assert mem3 < mem0


# ---------------------------------------------------------------- chapter 07

@check("model_parallel.schedule_explorer")
def _schedule(h):
    def bubble(readout):
        return number_after(readout, "bubble")
    base = bubble(h.render(schedule="1f1b", interleave=1, stages=4, micro_batches=8))
    assert bubble(h.render(micro_batches=32)) < base
    assert bubble(h.render(micro_batches=8, stages=16)) > base
    h.render(stages=4)
    assert bubble(h.render(interleave=2)) < base


@check("model_parallel.layout_explorer")
def _layout(h):
    inside = h.render(tp=8, pp=16)
    assert "fits" in plain(inside)
    step_inside = first_time_after(inside, "step")
    across = h.render(tp=16, pp=8)
    assert "impossible" in plain(across) or first_time_after(across, "step") > step_inside
    too_few = plain(h.render(tp=8, pp=1))
    assert "does not fit" in too_few or "impossible" in too_few


@check("moe.context_parallel_explorer")
def _context(h):
    assert "hidden" in plain(h.render(seq_len=131072, cp=8))
    assert "EXPOSED" in plain(h.render(seq_len=8192, cp=16))
    assert "hidden" in plain(h.render(seq_len=1048576, cp=16))
    assert "1,048,576 tokens" in h.axes.get_title()


# ---------------------------------------------------------------- chapter 08

@check("planner.planner_explorer")
def _planner(h):
    def days(readout):
        return number_after(readout, "tokens:")
    base = days(h.readout)
    more = days(h.render(gpus=2 * h.values()["gpus"]))
    assert more < base


# ---------------------------------------------------------------- chapter 09

@check("your_cluster.scaling_explorer")
def _your_cluster(h):
    def busbw(readout):
        return number_after(readout, "per box:")
    one_box = busbw(h.render(nodes=1))
    four = busbw(h.render(nodes=4))
    assert four < one_box
    assert busbw(h.render(nics_per_node=8)) > four


# ---------------------------------------------------------------- chapter 10

@check("moe.expert_parallel_explorer")
def _experts(h):
    def memory(readout):
        return sizes(plain(readout).split("of routed-expert states")[0])[-1]

    def all_to_all(readout):
        return first_time_after(readout, "leaves the node):")
    time_ax, memory_ax = h.axes
    h.render(experts=8, top_k=8, ep=8)
    a2a8, mem8, bars8 = all_to_all(h.readout), memory(h.readout), [b.get_height() for b in memory_ax.patches]
    h.render(experts=256)
    # more experts: the memory per GPU grows with them (and so do the plotted bars), the all-to-all does not
    assert memory(h.readout) == pytest.approx(32 * mem8, rel=0.02)
    assert all_to_all(h.readout) == pytest.approx(a2a8, rel=0.01)
    assert max(b.get_height() for b in memory_ax.patches) > 10 * max(bars8)
    assert "experts 256" not in memory_ax.get_title() and "256 experts" in memory_ax.get_title()
    # and more experts open wider EP degrees, whose all-to-all leaves the node and is slower
    assert "Spread over EP 16" in plain(h.readout) and "8 experts leave no wider spread" not in plain(h.readout)
    wider = all_to_all(h.render(ep=16))
    assert wider > 2 * a2a8 and memory(h.readout) == pytest.approx(16 * mem8, rel=0.02)
    # top-k sets the bytes and the compute
    h.render(ep=8)
    assert all_to_all(h.render(top_k=2)) < a2a8 / 2
    # the title follows the controls: a changed model is not called by the catalog's name alone
    assert "top-k 2 (catalog 8)" in time_ax.get_title()
    h.render(experts=8)
    assert "experts 8 (catalog 256)" in time_ax.get_title()


# ---------------------------------------------------------------- every check above (registered before this line)

@pytest.mark.parametrize("explorer_id", sorted(CHECKS))
def test_explorer_shows_its_point(explorer_id, quiet):
    module, name = next(p.values for p in EXPLORERS if p.id == explorer_id)
    CHECKS[explorer_id](getattr(module, name)())
