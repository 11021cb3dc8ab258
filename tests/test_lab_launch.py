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


def test_a_stall_names_the_rank_that_stalled_and_where():
    with pytest.raises(lab.RankTimeout) as info:
        lab.run(_stall, ranks=3, timeout=2, echo=False)
    err = info.value
    assert err.unfinished == [0, 1, 2]
    assert err.stalled == [0] and err.rank == 0
    assert "_stall" in err.where[0] and "time.sleep" in err.where[0]
    assert "rank 0 at _stall" in str(err) and "ranks [1, 2] waited for it" in str(err)


def _deadlock(rank, world_size):
    other = torch.zeros(1)
    dist.recv(other, 1 - rank)  # both receive first: neither ever sends


def test_a_deadlock_says_every_rank_waited():
    with pytest.raises(lab.RankTimeout, match="a deadlock: every rank waited for a peer") as info:
        lab.run(_deadlock, ranks=2, timeout=2, echo=False)
    assert info.value.stalled == [0, 1]


def _spin(rank, world_size):
    while True:
        pass


def test_ranks_that_spin_without_waiting_are_not_called_a_deadlock():
    with pytest.raises(lab.RankTimeout) as info:
        lab.run(_spin, ranks=2, timeout=2, echo=False)
    assert info.value.kind == "busy", str(info.value)
    assert "deadlock" in str(info.value) and "not a deadlock" in str(info.value)
    assert "_spin" in str(info.value)


def _busy_collectives(rank, world_size):
    t = torch.ones(4)
    while True:
        dist.all_reduce(t)


def test_ranks_still_communicating_at_the_timeout_are_called_slow_not_deadlocked():
    with pytest.raises(lab.RankTimeout) as info:
        lab.run(_busy_collectives, ranks=2, timeout=2, echo=False)
    assert info.value.kind == "slow", str(info.value)
    assert "slow, not a deadlock" in str(info.value) and sum(info.value.cpu_ticks.values()) > 2


def _reports_then_fails(rank, world_size):
    lab.launch.report({"step": 1, "rank": rank})
    if rank == 1:
        raise ValueError("after the report")
    dist.barrier()


def test_values_reported_before_a_failure_reach_the_launcher():
    got = []
    with pytest.raises(lab.RankError, match="after the report"):
        lab.run(_reports_then_fails, ranks=2, timeout=30, echo=False, progress=lambda r, v: got.append((r, v)))
    assert sorted(got) == [(0, {"step": 1, "rank": 0}), (1, {"step": 1, "rank": 1})]


def _flood(rank, world_size, lines):
    for i in range(lines):
        print(f"line {i} " + "x" * 40)
    raise RuntimeError("after the flood")


def test_rank_output_is_bounded_in_the_log_and_in_the_kernel(monkeypatch, capsys):
    """Past the cap a rank's log says what it dropped; the kernel keeps the last KEEP_LINES lines."""
    from course_lib.lab import rank_process

    monkeypatch.setattr(rank_process, "MAX_LOG_BYTES", 50_000)
    monkeypatch.setattr(launch, "KEEP_LINES", 100)
    with pytest.raises(lab.RankError, match="after the flood") as info:
        lab.run(_flood, ranks=1, timeout=60, args=(5000,), init=False)
    out = capsys.readouterr().out.splitlines()
    printed = [line for line in out if line.startswith("[rank 0] line ")]
    assert 900 < len(printed) < 1100  # 50 kB of 50-byte lines
    assert any("further output is dropped and counted" in line for line in out)
    dropped = next(line for line in out if "of this rank's output were dropped" in line)
    assert int(dropped.split("[rank 0] [")[1].split()[0]) == 5000 - len(printed)
    tail = info.value.output.splitlines()
    assert tail[0].startswith("[") and "earlier lines of rank 0 not kept: the kernel keeps the last 100" in tail[0]
    assert len(tail) == 101 and tail[-1] == dropped[len("[rank 0] "):]


def test_parse_stack_reads_the_main_thread_of_a_faulthandler_dump():
    text = ("main thread 0x7f01\n"
            "Thread 0x00007f02 (most recent call first):\n  File \"/t/x.py\", line 3 in helper\n\n"
            "Current thread 0x00007f01 (most recent call first):\n"
            "  File \"/t/a.py\", line 97 in _stall\n  File \"/t/launch.py\", line 5 in _child\n")
    assert launch.parse_stack(text) == [("/t/a.py", 97, "_stall"), ("/t/launch.py", 5, "_child")]
    assert launch.parse_stack("garbage") == []


def _spawn_and_fail(rank, world_size, folder):
    import subprocess

    proc = subprocess.Popen(["sleep", "60"])
    with open(os.path.join(folder, f"pid{rank}"), "w") as handle:
        handle.write(str(proc.pid))
    dist.barrier()
    if rank == 1:
        raise RuntimeError("deliberate")
    time.sleep(60)


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_ranks_own_subprocesses_die_with_it(tmp_path):
    with pytest.raises(lab.RankError, match="deliberate"):
        lab.run(_spawn_and_fail, ranks=2, timeout=30, args=(str(tmp_path),), echo=False)
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in range(2)]
    deadline = time.monotonic() + 2
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in pids)


def test_an_interrupt_during_the_forks_is_held_then_raised():
    """Inside the block nothing is raised; at its end the interrupt is raised (or dropped). Whether the handler
    records it inside the block depends on the threads the process has (a native thread started before the
    block, torch's or zmq's, may take the signal; one started inside inherits it blocked): either way unblocking
    at the end runs the pending handler at once, so the outcome is the same."""
    with pytest.raises(KeyboardInterrupt):
        with launch._HeldInterrupt() as held:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # nothing is raised in here
    assert held.hit
    with launch._HeldInterrupt(reraise=False) as dropped:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    assert dropped.hit
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _dead_pid():
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    return dead.pid


def _interrupting_cleanup(monkeypatch):
    real = launch._kill_all

    def kill_all(procs):
        os.kill(os.getpid(), signal.SIGINT)  # a Stop pressed while a finished launch cleans up
        time.sleep(0.05)
        real(procs)

    monkeypatch.setattr(launch, "_kill_all", kill_all)


def test_a_stop_during_the_cleanup_of_a_finished_launch_is_raised_after_it(monkeypatch):
    _interrupting_cleanup(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        lab.run(_sum_ranks, ranks=2, timeout=30, args=(1,), echo=False)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_stop_during_cleanup_does_not_hide_the_error_already_on_its_way(monkeypatch):
    _interrupting_cleanup(monkeypatch)
    with pytest.raises(lab.RankError, match="deliberate"):
        lab.run(_raise_on_one, ranks=2, timeout=30, echo=False)


def test_the_stop_drill_loses_no_stop_in_a_loop_of_launches():
    """The drill's loop mode (benchmarks/lab_stop_drill.py --loop): Stops pressed at random moments of a
    loop of launches, each one must end the loop. A few tries here; the benchmark runs 40 or more."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "lab_stop_drill.py"), "--loop", "6",
                          "--ranks", "2", "--skip", "stop,launch,kill"], capture_output=True, text=True,
                         timeout=100, env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("loop drill:"))
    assert "6 tries" in line and " lost 0," in line, out.stdout


def test_stale_folders_of_dead_launchers_are_removed(tmp_path):
    stale = tmp_path / f"course_lab_{_dead_pid()}_abc"
    stale.mkdir()
    (stale / "rank0.log").write_text("x")
    mine = tmp_path / f"course_lab_{os.getpid()}_def"
    mine.mkdir()
    assert launch.clean_stale_folders(str(tmp_path)) == [str(stale)]
    assert not stale.exists() and mine.exists()


def test_the_sweep_never_kills_a_process_that_reused_a_recorded_pid(tmp_path):
    """A dead run's folder records its launcher and a rank by pid and start time; both pids are now held
    by an unrelated ``sleep`` (its start time differs): the folder goes, the sleep lives."""
    import subprocess

    from course_lib.lab import processes

    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)  # leads a group of its own, too
    try:
        real = processes.start_time(sleeper.pid)
        assert real is not None
        reused_rank = tmp_path / f"course_lab_{_dead_pid()}_rank"
        reused_rank.mkdir()
        (reused_rank / processes.OWNER_FILE).write_text(f"{_dead_pid()} 1 {os.getsid(0)}\n")
        (reused_rank / processes.PIDS_FILE).write_text(f"{sleeper.pid} {real - 1}\n")
        reused_launcher = tmp_path / f"course_lab_{sleeper.pid}_kernel"  # the launcher's pid reused as well
        reused_launcher.mkdir()
        (reused_launcher / processes.OWNER_FILE).write_text(f"{sleeper.pid} {real - 1} {os.getsid(0)}\n")
        (reused_launcher / processes.PIDS_FILE).write_text(f"{sleeper.pid} {real - 1}\n")
        assert sorted(launch.clean_stale_folders(str(tmp_path))) == sorted([str(reused_rank), str(reused_launcher)])
        assert not reused_rank.exists() and not reused_launcher.exists()
        time.sleep(0.1)
        assert sleeper.poll() is None and processes.start_time(sleeper.pid) == real
        # the same folder with the sleep's true start time is the run's own rank: it is killed
        (reused_rank).mkdir()
        (reused_rank / processes.OWNER_FILE).write_text(f"{_dead_pid()} 1 {os.getsid(sleeper.pid)}\n")
        (reused_rank / processes.PIDS_FILE).write_text(f"{sleeper.pid} {real}\n")
        assert launch.clean_stale_folders(str(tmp_path)) == [str(reused_rank)]
        assert sleeper.wait(timeout=5) == -signal.SIGKILL
    finally:
        sleeper.kill()
        sleeper.wait()


_LEADER = """
import os, subprocess
os.setpgid(0, 0)
print(subprocess.Popen(["sleep", "60"]).pid, flush=True)
"""


def test_the_sweep_kills_what_a_dead_rank_left_in_its_process_group(tmp_path):
    """The rank is gone, its subprocess lives on in the rank's process group (in this session, started
    after the rank): that one is the run's, and the sweep kills it."""
    import subprocess

    from course_lib.lab import processes

    leader = subprocess.Popen([sys.executable, "-c", _LEADER], stdout=subprocess.PIPE, text=True)
    start = processes.start_time(leader.pid)  # alive or a zombie: the pid is still the leader's
    orphan = int(leader.stdout.readline())
    leader.wait()
    try:
        folder = tmp_path / f"course_lab_{_dead_pid()}_rank"
        folder.mkdir()
        (folder / processes.OWNER_FILE).write_text(f"{_dead_pid()} 1 {os.getsid(0)}\n")
        (folder / processes.PIDS_FILE).write_text(f"{leader.pid} {start}\n")
        assert not _gone(orphan)
        assert launch.clean_stale_folders(str(tmp_path)) == [str(folder)]
        deadline = time.monotonic() + 2
        while not _gone(orphan) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(orphan)
    finally:
        try:
            os.kill(orphan, signal.SIGKILL)
        except ProcessLookupError:
            pass


_KILLED_KERNEL = """
import sys, time
from course_lib import lab
def hang(rank, world_size):
    import subprocess
    subprocess.Popen(["sleep", "60"])
    time.sleep(60)
print("go", flush=True)
lab.run(hang, ranks=2, timeout=60, echo=False)
"""


def _session(sid):
    return launch.session_members(sid)


def test_a_killed_kernel_leaves_no_process_and_no_folder(tmp_path):
    import subprocess

    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=os.getcwd())
    kernel = subprocess.Popen([sys.executable, "-c", _KILLED_KERNEL], stdout=subprocess.PIPE, env=env,
                              start_new_session=True, text=True)
    assert kernel.stdout.readline().strip() == "go"
    deadline = time.monotonic() + 30  # kernel, watcher, 2 ranks, 2 sleeps
    while len(_session(kernel.pid)) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_session(kernel.pid)) == 6
    os.kill(kernel.pid, signal.SIGKILL)
    kernel.wait()
    deadline = time.monotonic() + 3
    while (_session(kernel.pid) or list(tmp_path.glob("course_lab_*"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _session(kernel.pid) == []
    assert list(tmp_path.glob("course_lab_*")) == []


def _chatty(rank, world_size):
    for i in range(20000):
        print(f"line {i}")


def test_many_lines_are_echoed_in_order(capsys):
    lab.run(_chatty, ranks=2, timeout=60, init=False)
    out = capsys.readouterr().out.splitlines()
    mine = [line for line in out if line.startswith("[rank 1] ")]
    assert mine == [f"[rank 1] line {i}" for i in range(20000)]
