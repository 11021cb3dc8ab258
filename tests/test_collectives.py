"""The collectives registry, and the recipe "add a collective or an algorithm" exercised end to end."""
import contextlib
import dataclasses
import io

import numpy as np
import pytest

from course_lib import collectives, costmodel, parallel
from course_lib.__main__ import main
from course_lib.collectives import Algorithm, Collective
from course_lib.lab import metrics


def test_registry_holds_the_six_nccl_collectives_with_their_conventions():
    assert set(collectives.ids()) == {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
                                      "all_to_all"}
    ar, ag, bc = (collectives.get(c) for c in ("all_reduce", "all_gather", "broadcast"))
    assert (ar.size_convention, ar.reduction, ar.has_root) == ("per_rank", "sum", False)
    assert (ag.size_convention, ag.reduction, ag.has_root) == ("total", None, False)
    assert (bc.size_convention, bc.reduction, bc.has_root) == ("per_rank", None, True)
    assert collectives.busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert collectives.busbw_factor("all_gather", 8) == pytest.approx(0.875)
    assert collectives.busbw_factor("reduce", 8) == 1.0


def test_one_id_per_algorithm_and_labels_from_the_registry():
    ar = collectives.get("all_reduce")
    assert "direct" not in ar.algorithms and "tree" not in ar.algorithms  # naive / binomial_tree; NCCL's is "tree"
    assert collectives.label("all_reduce", "naive") == "naive (parameter server)"
    assert collectives.label("all_reduce", "binomial_tree") == "binomial tree"
    assert "NCCL" in collectives.label("all_reduce", "tree")
    assert collectives.label("all_to_all") == "all-to-all"
    # the star through rank 0: 2 steps, rank 0 moves p-1 buffers in and p-1 out
    # the root pays one alpha per message, 2(p-1), not 2 (issue 23.4: naive looked fastest at 1024 ranks)
    assert collectives.terms("all_reduce", "naive", 8) == (14.0, 14.0)
    assert collectives.terms("all_reduce", "ring", 1) == (0.0, 0.0)
    with pytest.raises(ValueError, match="algorithm must be one of .*naive"):
        collectives.terms("all_reduce", "direct", 8)
    with pytest.raises(ValueError, match="collective"):
        collectives.get("gather")
    with pytest.raises(ValueError, match="size_convention"):
        collectives.register(dataclasses.replace(ar, id="x", size_convention="per_node"))


def test_the_ring_all_reduce_moves_what_busbw_assumes():
    # nccl-tests' busbw factor is the bytes a rank moves per byte of size with the ring
    for c in ("all_reduce", "reduce_scatter", "all_gather"):
        for p in (2, 3, 8, 64):
            assert collectives.terms(c, "ring", p)[1] == pytest.approx(collectives.busbw_factor(c, p))


def _cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


@pytest.fixture
def scatter():
    """A new collective, registered for one test: MPI_Scatter (the root sends rank r its share r)."""
    coll = collectives.register(Collective(
        "scatter", "scatter", collectives.gather_factor, "total", None, True,
        {"ring": Algorithm("ring", "ring (pipelined chain)", lambda p: p - 1, lambda p: (p - 1) / p),
         "naive": Algorithm("naive", "naive (root sends each share)", lambda p: p - 1, lambda p: (p - 1) / p)},
        ("ring",)))
    yield coll
    collectives.unregister("scatter")


def test_recipe_add_a_collective(scatter):
    n, p, bw = 8e9, 8, 100e9
    # the flat model, busbw and labels
    assert costmodel.collective_time("scatter", n, p, bw, 0.0, "ring") == pytest.approx(7 / 8 * n / bw)
    assert costmodel.busbw_factor("scatter", p) == pytest.approx(7 / 8)
    assert metrics.busbw("scatter", n, 1.0, p) == pytest.approx(7e9)
    assert collectives.label("scatter", "naive") == "naive (root sends each share)"
    # a whole system, one node and several (rings on every rail), as nccl-tests would print it
    one = costmodel.predict("scatter", [1e6, 1e9], "dgx-h100")
    assert list(one.algorithms) == ["ring", "ring"] and np.all(one.busbw > 0)
    many = costmodel.predict("scatter", 1e9, "dgx-h100", nodes=4)
    assert many.ranks == 32 and many.time_s[0] > one.time_s[1]
    assert costmodel.predict("scatter", 1e9, "dgx-h100", algorithm="naive").time_s[0] > 0
    status, text = _cli("predict", "scatter", "--system", "dgx-h100", "-b", "1M", "-e", "1M")
    row = [line for line in text.splitlines() if not line.startswith("#")][0].split()
    assert status == 0 and row[0] == str(2**20)
    assert row[1] == str(2**20 // 4 // 8)           # count: a total buffer split over 8 ranks, floats
    assert row[3:5] == ["none", "0"]                # no reduction, a root
    with pytest.raises(ValueError, match="not available"):
        costmodel.predict("scatter", 1e9, "dgx-h100", algorithm="tree")


@pytest.fixture
def pairwise_all_reduce():
    """A new all-reduce algorithm, registered for one test on a copy of the all_reduce entry."""
    original = collectives.get("all_reduce")
    algorithms = dict(original.algorithms, pairwise=Algorithm(
        "pairwise", "pairwise (direct reduce-scatter + all-gather)", lambda p: 2, lambda p: 2 * (p - 1) / p))
    yield collectives.register(dataclasses.replace(original, algorithms=algorithms))
    collectives.register(original)


def test_recipe_add_an_algorithm(pairwise_all_reduce):
    n, p, bw, alpha = 1e9, 8, 100e9, 1e-5
    t = costmodel.collective_time("all_reduce", n, p, bw, alpha, "pairwise")
    assert t == pytest.approx(2 * alpha + 1.75 * n / bw)
    assert collectives.label("all_reduce", "pairwise").startswith("pairwise")
    assert "pairwise" in costmodel.predict_algorithms()
    pred = costmodel.predict("all_reduce", n, "dgx-h100", algorithm="pairwise")
    assert pred.algorithm == "pairwise" and pred.busbw[0] > 0
    status, text = _cli("predict", "all_reduce", "--system", "dgx-h100", "--algo", "pairwise")
    # the last column is algorithm/protocol; an algorithm registered without NCCL protocols shows "-"
    rows = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert status == 0 and rows[-1].split()[-2] == "pairwise/-"   # before the busbw range column


def test_the_registry_is_restored_after_the_recipes():
    assert "scatter" not in collectives.ids()
    assert "pairwise" not in collectives.get("all_reduce").algorithms


def test_parallel_traffic_holds_registry_ids():
    e = parallel.estimate("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536, sequence_parallel=True)
    for tr in e.traffic:
        assert all(c in collectives.ids() for c in tr.collectives), tr
    assert e.traffic[0].collectives == ("reduce_scatter", "all_gather") and e.traffic[0].label == "RS+AG (SP)"
