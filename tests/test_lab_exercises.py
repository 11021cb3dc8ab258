"""The ring exercise checker: correct, not answered, wrong with a case and hint, deadlock, crash."""
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from course_lib.exercises import ch04  # noqa: E402
from course_lib.exercises import ring as exercises  # noqa: E402
from course_lib.lab import algorithms  # noqa: E402
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


def buggy_ring(rs=(1, 2), ag=(0, 1), add=True, recv_dtype=None):
    """The chapter's ring with one bug: the chunk offsets of each phase (send, receive), stored instead of
    added, or a receive buffer of a fixed dtype."""
    def ring(tensor, rank, world_size):
        flat, p = tensor.view(-1), world_size
        bounds = algorithms.chunk_bounds(flat.numel(), p)
        right, left = (rank + 1) % p, (rank - 1) % p

        def step(send_chunk, recv_chunk, reduce):
            (s0, s1), (r0, r1) = bounds[send_chunk], bounds[recv_chunk]
            incoming = torch.empty(r1 - r0, dtype=recv_dtype or flat.dtype) if reduce else flat[r0:r1]
            pending = ([dist.irecv(incoming, left)] if r1 > r0 else []) + ([dist.isend(flat[s0:s1], right)] if s1 > s0 else [])
            for request in pending:
                request.wait()
            if reduce and r1 > r0:
                if add:
                    flat[r0:r1] += incoming
                else:
                    flat[r0:r1] = incoming

        for s in range(p - 1):
            step((rank - s - rs[0]) % p, (rank - s - rs[1]) % p, True)
        for s in range(p - 1):
            step((rank - s - ag[0]) % p, (rank - s - ag[1]) % p, False)
    return ring


# The messages issue 23 asks for, verbatim: each found from the data (which cases passed, what every
# rank holds, what each send carried), not from the shape of the failing case.
OFF_BY_ONE = (
    "Not yet: on 2 ranks with 12 element(s) of float32, rank 0 has 12 wrong element(s); the first is element 0 "
    "(chunk 0, elements 0-5): expected -224, got -904. That chunk holds rank 1's input alone.\n"
    "What each rank holds, chunk by chunk (rN = rank N's input): rank 0: [r1, r0]; rank 1: [r1, r0].\n"
    "Hint: Rank 0's send 2 (all-gather step 0) carried chunk 1; in the chapter's order it is chunk 0 = (r-s) mod p: "
    "a chunk index one off.")
NO_REDUCTION = (
    "Not yet: on 2 ranks with 12 element(s) of float32, rank 0 has 12 wrong element(s); the first is element 0 "
    "(chunk 0, elements 0-5): expected -224, got -904. That chunk holds rank 1's input alone.\n"
    "What each rank holds, chunk by chunk (rN = rank N's input): rank 0: [r1, r0]; rank 1: [r1, r0].\n"
    "Hint: Rank 0's send 2 (all-gather step 0), chunk 0, carried rank 1's input alone; by then it should carry the "
    "full sum: a received chunk was stored where the reduce-scatter must add it (+=).")
WRONG_DTYPE = (
    "Ring all-reduce on 2 ranks failed with 12 element(s) of float64: rank {rank} failed: the process died from "
    "SIGABRT (killed, out of memory, or a crash); before it died it printed: \"op.preamble.length <= op.nbytes. "
    "48 vs 24. Received data size doesn't match expected size. Is there a distributed collective mismatch in your "
    "code?\". Rank {rank} receives into a float32 buffer while its tensor is float64. Hint: the same size passed in "
    "float32: the dtype is the difference. Receive into a buffer of the input's dtype (torch.empty_like(chunk), or "
    "dtype=tensor.dtype).")
CORRECT = "Correct: your ring all-reduce matches dist.all_reduce on 2, 3 ranks for 40 sizes x dtypes."


def test_an_off_by_one_chunk_index_is_named_with_the_send_that_shows_it():
    # the all-gather copied the reduce-scatter's offsets: rank r sends chunk r-1, not its summed chunk r
    result = exercises.check_ring(buggy_ring(ag=(1, 2)), ranks=(2,), verbose=False)
    assert (result.status, result.message) == ("wrong", OFF_BY_ONE)
    assert "empty" not in result.message   # the old guess from the case's shape
    three = exercises.check_ring(buggy_ring(rs=(0, 1)), ranks=(3,), verbose=False)
    assert "Rank 0's send 1 (reduce-scatter step 0) carried chunk 0; in the chapter's order it is chunk 2" in three.message


def test_a_missing_reduction_is_named_from_what_the_sends_carried():
    result = exercises.check_ring(buggy_ring(add=False), ranks=(2,), verbose=False)
    assert (result.status, result.message) == ("wrong", NO_REDUCTION)


def test_a_wrong_receive_dtype_shows_glooss_own_words_and_the_buffer():
    result = exercises.check_ring(buggy_ring(recv_dtype=torch.float32), ranks=(2,), verbose=False)
    assert result.status == "error" and result.case == {"size": 12, "dtype": "float64", "ranks": 2}
    assert result.message in {WRONG_DTYPE.format(rank=r) for r in (0, 1)}, result.message
    assert "SIGABRT" in result.message and "Received data size doesn't match expected size" in result.message


def test_the_correct_ring_message():
    assert exercises.check_ring(buggy_ring(), verbose=False).message == CORRECT


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
    ok, message = ch04.ring_checker(p2p_ring, ranks=(2,))
    assert ok and message.startswith("Correct")
    ok, message = ch04.ring_checker(lambda t, rank, p: None, ranks=(2,))
    assert not ok and "Hint" in message

    def todo(tensor, rank, world_size):
        raise NotImplementedError()

    with pytest.raises(NotImplementedError):
        ch04.ring_checker(todo, ranks=(2,))
    with pytest.raises(NotImplementedError):
        ch04.ring_checker(None)


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


_SAVED_ALL_REDUCE = dist.all_reduce  # saved at import, before any check wraps torch.distributed's functions


def test_a_saved_all_reduce_padded_with_point_to_point_traffic_scores_nothing():
    """Issue 26's attack on 04.4: a reference to dist.all_reduce taken before the check (so the module-level
    wrapper never sees the call), with one send of the tensor's size per rank so the byte count looks like a
    ring's. The process group's own collective method is wrapped too, and that is where the call lands."""
    def padded(tensor, rank, world_size):
        _SAVED_ALL_REDUCE(tensor)
        pad = torch.zeros_like(tensor)
        peer = 1 - rank
        if rank == 0:
            dist.send(pad, peer)
            dist.recv(pad, peer)
        else:
            dist.recv(pad, peer)
            dist.send(pad, peer)

    result = exercises.check_ring(padded, ranks=(2,), verbose=False)
    assert result.status == "wrong" and "built-in collective" in result.message, result.message
    assert "allreduce (the process group's own)" in result.message


def test_the_librarys_point_to_point_ring_is_not_the_learners_either():
    """The copy route of issue 36: lab.algorithms.ring_all_reduce with p2p sends passed as the learner's ring."""
    def copied(t, rank, p):
        algorithms.ring_all_reduce(t, transport="p2p")

    result = exercises.check_ring(copied, ranks=(2,), verbose=False)
    assert result.status == "wrong" and "ring_all_reduce" in result.message and "yourself" in result.message
