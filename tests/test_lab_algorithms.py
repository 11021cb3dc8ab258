"""Hand-written collectives give exactly what dist.all_reduce gives, on awkward sizes and dtypes."""
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from course_lib import lab  # noqa: E402
from course_lib.lab import algorithms as A  # noqa: E402
from tests.test_lab_helpers import live_children  # noqa: E402

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork"),
              pytest.mark.timeout(180)]

SIZES = (1, 2, 3, 7, 13, 1000, 4099)
DTYPES = ("float32", "float64", "int32", "int64")


def _compare_all(rank, world_size, pipeline):
    failures = []
    for n in SIZES:
        for dtype in DTYPES:
            g = torch.Generator().manual_seed(1000 * n + rank)
            base = torch.randint(-1000, 1000, (n,), generator=g).to(getattr(torch, dtype))
            ref = base.clone()
            dist.all_reduce(ref)
            for name in A.ALGORITHMS:
                t = base.clone()
                if name == "ring":
                    A.ring_all_reduce(t, pipeline=pipeline)
                else:
                    A.all_reduce(t, name)
                if not torch.equal(t, ref):
                    failures.append((name, n, dtype))
            t = base.clone()  # the ring's transfers as isend/irecv, as a learner writes them
            A.ring_all_reduce(t, pipeline=pipeline, transport="p2p")
            if not torch.equal(t, ref):
                failures.append(("ring p2p", n, dtype))
            # reduce-scatter and all-gather on their own
            t = base.clone()
            start, stop = A.ring_reduce_scatter(t)
            if not torch.equal(t[start:stop], ref[start:stop]):
                failures.append(("reduce_scatter", n, dtype))
            gathered = torch.zeros_like(base)
            gathered[start:stop] = ref[start:stop]
            A.ring_all_gather(gathered)
            if not torch.equal(gathered, ref):
                failures.append(("all_gather", n, dtype))
    # random floats: not bit-equal to gloo (order of additions) but identical on every rank and close
    x = torch.randn(10007, generator=torch.Generator().manual_seed(rank), dtype=torch.float64).float()
    ref = x.clone()
    dist.all_reduce(ref)
    for name in A.ALGORITHMS:
        t = x.clone()
        A.all_reduce(t, name)
        if not torch.allclose(t, ref, rtol=1e-5, atol=1e-5):
            failures.append((name, "randn", "float32"))
        gathered = [torch.empty_like(t) for _ in range(world_size)]
        dist.all_gather(gathered, t)
        if not all(torch.equal(g, t) for g in gathered):
            failures.append((name, "ranks disagree", "float32"))
    return failures


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5])
def test_algorithms_match_builtin(ranks):
    results = lab.run(_compare_all, ranks=ranks, timeout=120, args=(3,), echo=False)
    assert results == [[]] * ranks
    assert live_children() == []


def _big_ring(rank, world_size, pipeline):
    t = (torch.arange(3_000_017) % 11 + rank).float()  # 12 MB: several pipelined sub-chunks
    A.ring_all_reduce(t, pipeline=pipeline)
    expected = (torch.arange(3_000_017) % 11 * world_size + sum(range(world_size))).float()
    return torch.equal(t, expected)


@pytest.mark.parametrize("pipeline", [1, 8])
def test_pipelined_ring_on_large_tensor(pipeline):
    assert lab.run(_big_ring, ranks=3, timeout=120, args=(pipeline,), echo=False) == [True] * 3


def test_chunk_bounds():
    assert A.chunk_bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert A.chunk_bounds(1, 3) == [(0, 1), (1, 1), (1, 1)]
    assert A.chunk_bounds(0, 2) == [(0, 0), (0, 0)]
    with pytest.raises(ValueError, match="parts"):
        A.chunk_bounds(5, 0)
    with pytest.raises(ValueError, match="numel"):
        A.chunk_bounds(-1, 2)


def test_inputs_validated_outside_a_group():
    with pytest.raises(ValueError, match="tensor must be a torch.Tensor"):
        A.ring_all_reduce([1, 2])
    with pytest.raises(ValueError, match="contiguous"):
        A.ring_all_reduce(torch.ones(4, 4).t())
    with pytest.raises(ValueError, match="process group"):
        A.ring_all_reduce(torch.ones(4))
    with pytest.raises(ValueError, match="algorithm"):
        A.all_reduce(torch.ones(4), "butterfly")
    with pytest.raises(ValueError, match="pipeline"):
        A.ring_all_reduce(torch.ones(4), pipeline=0)
