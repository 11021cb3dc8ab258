"""The ring exercise checker: correct, not answered, wrong with a case and hint, deadlock, crash."""
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from course_lib.lab import algorithms, exercises  # noqa: E402
from tests.test_lab_helpers import live_children  # noqa: E402

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork"),
              pytest.mark.timeout(120)]


def p2p_ring(tensor, rank, world_size):
    """A learner's ring as chapter 04's solution writes it: reduce-scatter then all-gather, isend/irecv."""
    flat = tensor.view(-1)
    bounds = algorithms.chunk_bounds(flat.numel(), world_size)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size

    def step(send_chunk, recv_chunk, add):
        (s0, s1), (r0, r1) = bounds[send_chunk], bounds[recv_chunk]
        incoming = torch.empty(r1 - r0, dtype=flat.dtype) if add else flat[r0:r1]
        pending = ([dist.irecv(incoming, left)] if r1 > r0 else []) + ([dist.isend(flat[s0:s1], right)] if s1 > s0 else [])
        for request in pending:
            request.wait()
        if add and r1 > r0:
            flat[r0:r1] += incoming

    for s in range(world_size - 1):
        step((rank - s - 1) % world_size, (rank - s - 2) % world_size, add=True)
    for s in range(world_size - 1):
        step((rank - s) % world_size, (rank - s - 1) % world_size, add=False)


def test_reference_ring_is_correct():
    result = exercises.check_ring(p2p_ring, verbose=False)
    assert result.correct, result.message
    exercises.grade_ring(p2p_ring)


def test_the_librarys_ring_is_not_a_point_to_point_answer():
    # lab.algorithms' fast ring hands each neighbour exchange to gloo's all_to_all_single: a built-in
    # collective, so it is not what the exercise asks the learner to write
    result = exercises.check_ring(lambda t, rank, p: algorithms.ring_all_reduce(t), ranks=(2,), verbose=False)
    assert result.status == "wrong" and "built-in" in result.message


def test_not_answered(capsys):
    def todo(tensor, rank, world_size):
        raise NotImplementedError

    result = exercises.check_ring(todo)
    assert result.status == "not answered"
    assert "not answered yet" in capsys.readouterr().out
    assert exercises.check_ring(None, verbose=False).status == "not answered"
    with pytest.raises(AssertionError, match="not answered"):
        exercises.grade_ring(todo)


def test_wrong_on_sizes_not_divisible_names_case_and_hint():
    def divisible_only(tensor, rank, world_size):
        n = tensor.numel() // world_size * world_size
        if n:
            p2p_ring(tensor[:n], rank, world_size)

    result = exercises.check_ring(divisible_only, verbose=False)
    assert result.status == "wrong"
    assert result.case["ranks"] == 2 and result.case["size"] == 1
    assert "Hint" in result.message


def test_wrong_when_not_in_place():
    def copy_only(tensor, rank, world_size):
        return tensor * world_size

    result = exercises.check_ring(copy_only, ranks=(2,), verbose=False)
    assert result.status == "wrong" and "in place" in result.message


def test_deadlock_is_a_timeout_and_leaves_nothing():
    def both_receive(tensor, rank, world_size):
        dist.recv(tensor, (rank + 1) % world_size)

    result = exercises.check_ring(both_receive, ranks=(2,), timeout=2, verbose=False)
    assert result.status == "timeout" and "deadlock" in result.message
    assert live_children() == []


def test_crash_names_rank():
    def crash(tensor, rank, world_size):
        if rank == 1:
            raise IndexError("bad index")
        dist.barrier()

    result = exercises.check_ring(crash, ranks=(2,), verbose=False)
    assert result.status == "error" and "rank 1" in result.message and "IndexError" in result.message


def test_validation():
    with pytest.raises(ValueError, match="fn"):
        exercises.check_ring(3)
    with pytest.raises(ValueError, match="ranks"):
        exercises.check_ring(lambda t, r, p: None, ranks=(1,))
    with pytest.raises(ValueError, match="timeout"):
        exercises.check_ring(lambda t, r, p: None, timeout=-1)


def test_ring_checker_adapts_check_ring_for_the_callable_exercise_kind():
    ok, message = exercises.ring_checker(p2p_ring, ranks=(2,))
    assert ok and message.startswith("Correct")
    ok, message = exercises.ring_checker(lambda t, rank, p: None, ranks=(2,))
    assert not ok and "Hint" in message

    def todo(tensor, rank, world_size):
        raise NotImplementedError()

    with pytest.raises(NotImplementedError):
        exercises.ring_checker(todo, ranks=(2,))
    with pytest.raises(NotImplementedError):
        exercises.ring_checker(None)


def test_builtin_all_reduce_scores_nothing():
    def builtin(tensor, rank, world_size):
        dist.all_reduce(tensor)

    result = exercises.check_ring(builtin, ranks=(2,), verbose=False)
    assert result.status == "wrong" and "dist.all_reduce" in result.message and "built-in" in result.message


def test_copying_the_expected_sum_without_communication_scores_nothing():
    def copycat(tensor, rank, world_size):
        tensor.copy_(exercises._expected(tensor.numel(), str(tensor.dtype).split(".")[1], world_size))

    result = exercises.check_ring(copycat, ranks=(2,), verbose=False)
    assert result.status == "wrong" and "sent 0 bytes" in result.message


def test_ring_bytes_counts_every_chunk_twice_around():
    assert exercises.ring_bytes(1000, 4, 2) == 2 * 1 * 1000 * 4
    assert exercises.ring_bytes(7, 8, 3) == 2 * 2 * 7 * 8
