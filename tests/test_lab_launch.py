"""The lab launcher: results, output, faults, timeouts, interrupts, and nothing left behind."""
import os
import signal
import sys
import threading
import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from course_lib import lab  # noqa: E402
from course_lib.lab import launch  # noqa: E402
from tests.test_lab_helpers import live_children  # noqa: E402

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc and fork"),
              pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def no_leftovers():
    yield
    deadline = time.monotonic() + 2
    while live_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_children() == []


def _sum_ranks(rank, world_size, scale):
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    print(f"hello from {rank}")
    return t.item() * scale


def test_returns_per_rank_results_and_prefixed_output(capsys):
    assert lab.run(_sum_ranks, ranks=3, timeout=60, args=(2,)) == [12.0, 12.0, 12.0]
    out = capsys.readouterr().out
    for rank in range(3):
        assert f"[rank {rank}] hello from {rank}" in out


def test_notebook_style_closure_runs_with_fork():
    offset = 100  # a closure over a local: what a notebook cell produces

    def local(rank, world_size):
        return rank + offset

    assert lab.run(local, ranks=2, timeout=30, echo=False) == [100, 101]


def test_fork_after_parent_used_torch_threads():
    torch.randn(512, 512) @ torch.randn(512, 512)  # start the parent's intra-op pool
    assert lab.run(_sum_ranks, ranks=2, timeout=30, args=(1,), echo=False) == [3.0, 3.0]


def test_spawn_with_importable_function():
    assert lab.run(_sum_ranks, ranks=2, timeout=60, args=(1,), start_method="spawn", echo=False) == [3.0, 3.0]


def _raise_on_one(rank, world_size):
    if rank == 1:
        raise ZeroDivisionError("deliberate")
    dist.barrier()


def test_rank_exception_names_rank_and_cause_quickly():
    start = time.monotonic()
    with pytest.raises(lab.RankError) as info:
        lab.run(_raise_on_one, ranks=2, timeout=30, echo=False)
    assert time.monotonic() - start < 10
    assert info.value.rank == 1
    assert "ZeroDivisionError: deliberate" in str(info.value)
    assert "_raise_on_one" in str(info.value)  # traceback included


def _sigkill_one(rank, world_size):
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(torch.ones(3))


def test_rank_killed_by_sigkill():
    start = time.monotonic()
    with pytest.raises(lab.RankError, match="rank 1 failed: .*SIGKILL"):
        lab.run(_sigkill_one, ranks=3, timeout=30, echo=False)
    assert time.monotonic() - start < 10


def _never_joins(rank, world_size):
    if rank == 1:
        time.sleep(600)
    lab.init_process_group(timeout=600)


def test_rank_that_never_joins_fails_within_timeout():
    start = time.monotonic()
    with pytest.raises(lab.RankTimeout) as info:
        lab.run(_never_joins, ranks=2, timeout=2, init=False, echo=False)
    assert 2 <= time.monotonic() - start < 8
    assert info.value.never_joined == [1]


def _stall(rank, world_size):
    if rank == 0:
        time.sleep(600)
    dist.barrier()


def test_stalled_rank_times_out_and_next_run_starts_at_once():
    with pytest.raises(lab.RankTimeout, match="did not finish within 1.5 s"):
        lab.run(_stall, ranks=2, timeout=1.5, echo=False)
    start = time.monotonic()
    assert lab.run(_sum_ranks, ranks=2, timeout=30, args=(1,), echo=False) == [3.0, 3.0]
    assert time.monotonic() - start < 10


def test_keyboard_interrupt_kills_every_child():
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            lab.run(_stall, ranks=2, timeout=60, echo=False)
    finally:
        timer.cancel()


def _unpicklable(rank, world_size):
    return lambda: None


def test_unpicklable_result_is_a_clear_error():
    with pytest.raises(lab.RankError, match="cannot be pickled"):
        lab.run(_unpicklable, ranks=1, timeout=30, echo=False)


def _where(rank, world_size):
    info = lab.current()
    return (info.rank, info.world_size, info.backend, os.environ["MASTER_ADDR"],
            os.environ["GLOO_SOCKET_IFNAME"], torch.get_num_threads())


def test_loopback_only_and_threads():
    assert lab.run(_where, ranks=2, timeout=30, echo=False, threads=1) == [
        (0, 2, "gloo", "127.0.0.1", launch._loopback_name(), 1),
        (1, 2, "gloo", "127.0.0.1", launch._loopback_name(), 1)]
    assert lab.current() is None


@pytest.mark.parametrize("kwargs, name", [
    ({"ranks": 0}, "ranks"), ({"ranks": 65}, "ranks"), ({"ranks": 2.5}, "ranks"),
    ({"timeout": 0}, "timeout"), ({"timeout": float("nan")}, "timeout"),
    ({"backend": "mpi"}, "backend"), ({"start_method": "thread"}, "start_method"),
    ({"threads": 0}, "threads"), ({"args": [1]}, "args"), ({"kwargs": 3}, "kwargs")])
def test_run_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        lab.run(_sum_ranks, **kwargs)


def test_run_refuses_non_callable_and_spawn_of_main():
    with pytest.raises(ValueError, match="fn"):
        lab.run(42)

    def local(rank, world_size):
        return rank
    local.__module__ = "__main__"
    with pytest.raises(ValueError, match="fn must live in an importable module"):
        lab.run(local, start_method="spawn")


class _Exited:
    def __init__(self, exitcode):
        self.exitcode = exitcode


def _report(workdir, rank, payload):
    import pickle

    with open(os.path.join(workdir, f"rank{rank}.result"), "wb") as handle:
        pickle.dump(payload, handle)


def test_the_earliest_failure_is_reported_when_several_ranks_have_exited(tmp_path):
    # rank 1 raised first; rank 0 failed a moment later because rank 1's connection closed.
    # Both exited before the parent looked: the cause is rank 1, whatever the polling order.
    _report(tmp_path, 0, {"ok": False, "type": "RuntimeError", "message": "Connection closed by peer",
                          "traceback": "", "failed_at": 2.0})
    _report(tmp_path, 1, {"ok": False, "type": "IndexError", "message": "bad index", "traceback": "",
                          "failed_at": 1.0})
    _report(tmp_path, 2, {"ok": True, "value": 3})
    procs = [_Exited(1), _Exited(1), _Exited(0), _Exited(None)]
    error = launch._first_failure(procs, str(tmp_path), [False] * 4)
    assert error.rank == 1 and "IndexError" in error.cause
    # a rank that died without a word (SIGKILL) is the cause of its peers' errors
    fresh = tmp_path / "killed"
    fresh.mkdir()
    _report(fresh, 0, {"ok": False, "type": "RuntimeError", "message": "Connection reset by peer",
                       "traceback": "", "failed_at": 1.0})
    killed = launch._first_failure([_Exited(1), _Exited(-signal.SIGKILL)], str(fresh), [False, False])
    assert killed.rank == 1 and "SIGKILL" in killed.cause
