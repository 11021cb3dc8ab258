"""The lab's all-to-all: the pairwise exchange against gloo's all_to_all_single, and its benchmark."""
import sys

import pytest

torch = pytest.importorskip("torch")

from course_lib.lab import algorithms, bench, bench_all_to_all, run  # noqa: E402

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")]


def _check(rank, world_size, count):
    import torch.distributed as dist
    inp = torch.arange(count * world_size, dtype=torch.int64) + 1000 * rank
    mine, ref = torch.empty_like(inp), torch.empty_like(inp)
    algorithms.pairwise_all_to_all(mine, inp)
    dist.all_to_all_single(ref, inp)
    bad = None
    try:
        algorithms.pairwise_all_to_all(torch.empty(count * world_size + 1, dtype=torch.int64),
                                       torch.empty(count * world_size + 1, dtype=torch.int64))
    except ValueError as e:
        bad = str(e)
    return torch.equal(mine, ref), bad


@pytest.mark.parametrize("ranks, count", [(2, 1), (3, 5), (4, 1000)])
def test_pairwise_matches_gloo(ranks, count):
    results = run(_check, ranks=ranks, timeout=60, args=(count,), echo=False)
    assert all(same for same, _ in results)
    if ranks > 1:
        assert all(msg and msg.startswith("input must") for _, msg in results)


def test_bench_rows_are_correct_and_in_nccl_tests_form():
    result = bench_all_to_all.sweep(sizes=[4096, 65536], ranks=(2, 3), warmup=0, iters=1, timeout=60)
    assert len(result.rows) == 2 * 2 * 2 and all(r["wrong"] == 0 for r in result.rows)
    r = result.rows[0]
    assert r["busbw"] == pytest.approx(r["algbw"] * (r["ranks"] - 1) / r["ranks"])
    with pytest.raises(ValueError, match="algorithms"):
        bench_all_to_all.config([4096], "builtin,ring")


def test_bench_cli_all_to_all(capsys):
    assert bench.main(["--collective", "all_to_all", "--algorithms", "builtin,pairwise", "-b", "4K", "-e", "4K",
                       "-n", "1", "-w", "0"]) == 0
    out = capsys.readouterr().out
    assert "pairwise" in out and "builtin" in out


def _good(output, input, rank, world_size):
    algorithms.pairwise_all_to_all(output, input)


def _swapped(output, input, rank, world_size):
    output.copy_(input)


def _todo(output, input, rank, world_size):
    raise NotImplementedError


def test_the_exercise_checker():
    assert bench_all_to_all.all_to_all_checker(_good)[0]
    ok, msg = bench_all_to_all.all_to_all_checker(_swapped)
    assert not ok and "chunk" in msg
    with pytest.raises(NotImplementedError):
        bench_all_to_all.all_to_all_checker(_todo)
