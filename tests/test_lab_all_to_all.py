"""The lab's all-to-all: the pairwise exchange against gloo's all_to_all_single, and its benchmark."""
import dataclasses
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402

from course_lib.exercises import ch10  # noqa: E402
from course_lib.lab import algorithms, bench, run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")]


def _check(rank, world_size, count):
    import torch.distributed as dist
    inp = torch.arange(count * world_size, dtype=torch.int64) + 1000 * rank
    mine, ref = torch.empty_like(inp), torch.empty_like(inp)
    algorithms.direct_all_to_all(mine, inp)
    dist.all_to_all_single(ref, inp)
    bad = None
    try:
        algorithms.direct_all_to_all(torch.empty(count * world_size + 1, dtype=torch.int64),
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
    result = bench.sweep(sizes=[4096, 65536], ranks=(2, 3), warmup=0, iters=1, timeout=60, collective="all_to_all")
    assert len(result.rows) == 2 * 2 * 2 and all(r["wrong"] == 0 for r in result.rows)
    assert {r["algorithm"] for r in result.rows} == {"builtin", "direct"}
    assert {r["collective"] for r in result.rows} == {"all_to_all"}
    r = result.rows[0]
    assert r["busbw"] == pytest.approx(r["algbw"] * (r["ranks"] - 1) / r["ranks"])
    assert r["count"] == 4096 // 4 and result.rows[-1]["count"] == 3 * (65536 // 12)  # whole chunks per rank
    with pytest.raises(ValueError, match=r"^algorithms must be one of builtin, direct; got 'ring'"):
        bench.sweep(sizes=[4096], algorithms="builtin,ring", collective="all_to_all")
    with pytest.raises(ValueError, match=r"^collective must be one of all_reduce, all_to_all"):
        bench.sweep(sizes=[4096], collective="all_gather")


def test_chapter_10_names_the_bench_and_the_exercises_directly():
    """Chapter 10 calls bench.sweep(collective="all_to_all"); its exercise file names exercises.ch10:all_to_all_checker."""
    spec = json.loads((ROOT / "course_lib" / "exercises" / "10.json").read_text())
    checkers = {e.get("checker") for e in spec.values() if isinstance(e, dict)}
    assert "course_lib.exercises.ch10:all_to_all_checker" in checkers
    assert not any("bench_all_to_all" in str(c) for c in checkers)
    rows = bench.sweep(sizes=[4096], ranks=(2,), warmup=0, iters=1, timeout=60, collective="all_to_all").rows
    assert [(r["collective"], r["algorithm"], r["wrong"]) for r in rows] == [("all_to_all", "builtin", 0),
                                                                            ("all_to_all", "direct", 0)]


def _wrong_inputs(count, rank, world_size, dtype, device="cpu"):
    src, expected = bench._all_to_all_inputs(count, rank, world_size, dtype, device)
    return src, expected + 1


def test_wrong_elements_are_counted_by_the_shared_harness(monkeypatch):
    """The harness counts the elements that differ from a collective's expected output, whichever it is."""
    broken = dataclasses.replace(bench.COLLECTIVES["all_to_all"], inputs=_wrong_inputs)
    monkeypatch.setitem(bench.COLLECTIVES, "all_to_all", broken)
    rows = run(bench._worker, ranks=2, timeout=60, start_method="fork", echo=False,
               args=(bench._config([4096], None, "float32", 0, 1, 8, "all_to_all"),))[0]
    assert [r["wrong"] for r in rows] == [2 * 1024, 2 * 1024]  # every element on both ranks


def test_inputs_expect_what_rank_j_sends():
    p, c = 3, 4
    sent = [bench._all_to_all_inputs(p * c, r, p, torch.int64)[0] for r in range(p)]
    for r in range(p):
        expected = bench._all_to_all_inputs(p * c, r, p, torch.int64)[1]
        assert torch.equal(expected, torch.cat([sent[j][r * c:(r + 1) * c] for j in range(p)]))


def test_bench_cli_all_to_all(capsys):
    assert bench.main(["--collective", "all_to_all", "--algorithms", "builtin,direct", "-b", "4K", "-e", "4K",
                       "-n", "1", "-w", "0"]) == 0
    out = capsys.readouterr().out
    assert "direct" in out and "builtin" in out
    assert bench.main(["--collective", "all_to_all", "-b", "4K", "-e", "4K", "-n", "1", "-w", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()  # its default algorithms, not all_reduce's
    assert lines[0] == bench.HEADER and [line.split()[4] for line in lines[1:]] == ["builtin", "direct"]
    assert bench.main(["--collective", "all_to_all", "--algorithms", "ring"]) == 2
    assert capsys.readouterr().err.startswith("error: algorithms (--algorithms) must be one of builtin, direct")


def _chapter_solution():
    """Chapter 10's own answer to 10.7 (the pairwise exchange written by hand), read from its source the way the
    grader reads a submission's cell (grading_code.extract): the checker is tested on what the chapter teaches."""
    import jupytext

    from course_lib import grading_code, manifest

    chapter = next(c for c in manifest.chapters() if c.number == "10")
    cell = next(c for c in jupytext.read(chapter.source, fmt="py:percent").cells if c.metadata.get("exercise") == "10.7")
    namespace: dict = {}
    exec(grading_code.extract(cell.source, "my_all_to_all"), namespace)  # the course's own source, not a learner's
    return namespace["my_all_to_all"]


def _copied(output, input, rank, world_size):
    algorithms.direct_all_to_all(output, input)   # the library's own: the copy route of issue 36


def _swapped(output, input, rank, world_size):
    output.copy_(input)


def _todo(output, input, rank, world_size):
    raise NotImplementedError


def test_the_exercise_checker():
    assert ch10.all_to_all_checker(_chapter_solution())[0]
    ok, msg = ch10.all_to_all_checker(_copied)
    assert not ok and "direct_all_to_all" in msg
    ok, msg = ch10.all_to_all_checker(_swapped)
    assert not ok and "chunk" in msg
    with pytest.raises(NotImplementedError):
        ch10.all_to_all_checker(_todo)


_SAVED_A2A = dist.all_to_all_single  # saved at import, before any check wraps torch.distributed's functions


def _builtin(output, input, rank, world_size):
    dist.all_to_all_single(output, input)


def _saved_builtin(output, input, rank, world_size):
    _SAVED_A2A(output, input)


def _copycat(output, input, rank, world_size):
    """Builds the answer from the bench's known inputs without sending anything."""
    from course_lib.lab.bench import _all_to_all_inputs
    count = input.numel() // world_size
    for j in range(world_size):
        theirs, _ = _all_to_all_inputs(input.numel(), j, world_size, input.dtype)
        output[j * count:(j + 1) * count] = theirs[rank * count:(rank + 1) * count]


@pytest.mark.parametrize("fn, words", [(_builtin, "built-in collective"), (_saved_builtin, "built-in collective"),
                                       (_copycat, "sent 0 bytes")])
def test_the_exercise_checker_wants_the_chunks_moved_point_to_point(fn, words):
    """10.7 is to build all-to-all from sends: the built-in one (called, or saved before the check) and a copy of
    the expected output scored 'Correct' before; each now names what it did."""
    ok, msg = ch10.all_to_all_checker(fn, ranks=(2,))
    assert not ok and words in msg, msg
