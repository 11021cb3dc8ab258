"""Benchmark rows and table, metrics, and the alpha-beta calibration."""
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from course_lib.lab import bench, calibrate, metrics  # noqa: E402
from tests.test_lab_helpers import live_children  # noqa: E402

pytestmark = [pytest.mark.timeout(180)]
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")


def test_busbw_follows_nccl_tests():
    assert metrics.algbw(1e9, 0.5) == 2e9
    assert metrics.busbw("all_reduce", 1e9, 1.0, 4) == pytest.approx(1.5e9)
    assert metrics.busbw("all_gather", 1e9, 1.0, 4) == pytest.approx(0.75e9)
    with pytest.raises(ValueError, match="time_s"):
        metrics.algbw(1, 0)
    with pytest.raises(ValueError, match="collective"):
        metrics.busbw("scatter", 1, 1, 2)


def test_size_range():
    assert bench.size_range("64K", "1M", 4) == [65536, 262144, 1048576]
    assert bench.size_range(8, 8) == [8]
    with pytest.raises(ValueError, match="maxbytes"):
        bench.size_range("1M", "64K")
    with pytest.raises(ValueError, match="factor"):
        bench.size_range(1, 8, 1)


@linux
def test_sweep_rows_and_table():
    result = bench.sweep(sizes=[4, 1000, 65536], ranks=(2, 3), algorithms=("builtin", "ring", "tree"),
                         dtype="int32", warmup=1, iters=2, timeout=60)
    assert len(result.rows) == 3 * 2 * 3
    assert all(r["wrong"] == 0 for r in result.rows)
    row = result.select("ring", 3)[-1]
    assert row["size"] == 65536 and row["count"] == 16384 and row["type"] == "int32"
    assert row["busbw"] == pytest.approx(row["algbw"] * 4 / 3)
    table = str(result)
    assert table.splitlines()[0].startswith("#") and "busbw(GB/s)" in table
    assert len(table.splitlines()) == 1 + len(result.rows)
    assert set(result.ratio("ring", ranks=2)) == {4, 1000, 65536}
    assert live_children() == []


def test_sweep_validates():
    with pytest.raises(ValueError, match="algorithms"):
        bench.sweep(algorithms=("warp",))
    with pytest.raises(ValueError, match="dtype"):
        bench.sweep(dtype="float16x")
    with pytest.raises(ValueError, match="iters"):
        bench.sweep(iters=0)
    with pytest.raises(ValueError, match="sizes"):
        bench.sweep(sizes=[0])
    with pytest.raises(ValueError, match="ranks"):
        bench.sweep(ranks=(0,))


@linux
def test_command_line_runs(capsys):
    assert bench.main(["-b", "1K", "-e", "4K", "-f", "4", "-n", "1", "-w", "0", "--ranks", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("#") and len(out) == 1 + 2 * 2


def test_fit_recovers_alpha_beta():
    n = np.array([1e3, 1e4, 1e5, 1e6, 1e7])
    t = 20e-6 + n / 2e9
    ab = calibrate.fit(n, t)
    assert ab.alpha == pytest.approx(20e-6, rel=1e-6)
    assert ab.bandwidth == pytest.approx(2e9, rel=1e-6)
    assert ab.predict(1e6) == pytest.approx(20e-6 + 1e6 / 2e9)
    assert "alpha" in str(ab)
    with pytest.raises(ValueError, match="times"):
        calibrate.fit([1, 2], [1.0])
    with pytest.raises(ValueError, match="sizes"):
        calibrate.fit([5, 5], [1.0, 1.0])


def test_model_and_contention():
    assert calibrate.contention(4, cores=2) == 2.0
    assert calibrate.contention(2, cores=8) == 1.0
    t2 = calibrate.ring_all_reduce_time(1e6, 2, 1e-5, 1e-9, 0.0)
    assert t2 == pytest.approx(2e-5 + 1e6 * 1e-9)
    assert calibrate.ring_all_reduce_time(1e6, 4, 1e-5, 1e-9, 0.0, stretch=2) == pytest.approx(
        2 * (6e-5 + 1.5e6 * 1e-9))
    with pytest.raises(ValueError, match="stretch"):
        calibrate.ring_all_reduce_time(1e6, 4, 1e-5, 1e-9, stretch=0.5)
    with pytest.raises(ValueError, match="cores"):
        calibrate.contention(2, cores=0)


@linux
def test_calibrate_end_to_end_and_plot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cal = calibrate.calibrate(sizes=[4096, 262144, 1048576], iters=2, warmup=1, cores=2)
    assert cal.exchange.alpha >= 0 and cal.exchange.beta > 0 and cal.gamma > 0
    rows = bench.sweep(sizes=[262144, 1048576], ranks=(2,), iters=2, warmup=1).rows
    compared = cal.compare(rows)
    assert len(compared) == 2 and all(c["ratio"] > 0 for c in compared)
    assert "pred/meas" in cal.report(rows)
    fig, ax = plt.subplots()
    assert cal.plot(ax, rows) is ax
    assert ax.get_xscale() == "log" and len(ax.lines) >= 2
    plt.close(fig)
    assert live_children() == []


def test_batch_for_amortises_small_operations():
    assert bench.batch_for(64 * 1024) == bench.MAX_BATCH
    assert bench.batch_for(1 << 20) == 16
    assert bench.batch_for(64 << 20) == 1
    with pytest.raises(ValueError, match="nbytes"):
        bench.batch_for(0)


def test_time_ops_drops_the_first_operation_of_a_batch():
    calls = []
    times = bench.time_ops(lambda: calls.append(1), 5)
    assert len(calls) == 5 and len(times) == 4 and all(t >= 0 for t in times)
    assert len(bench.time_ops(lambda: None, 1)) == 1  # a batch of one keeps its only operation
    synced = []
    averaged = bench.time_ops(lambda: calls.append(1), 4, sync=lambda: synced.append(1), per_op=False)
    assert len(averaged) == 1 and synced == [1]


def test_table_shows_median_and_mean():
    row = {"size": 1024, "count": 256, "type": "float32", "ranks": 2, "algorithm": "builtin",
           "time_s": 1e-4, "mean_s": 3e-4, "algbw": 1.024e7, "busbw": 1.024e7, "wrong": 0}
    header, line = bench.format_rows([row]).splitlines()
    assert "time(us)" in header and "mean(us)" in header
    assert "100.0" in line and "300.0" in line


def _step(size, ranks, step, add, call=0.0, alone=None):
    row = {"size": size, "step_size": size // ranks, "ranks": ranks, "step_s": step, "add_s": add, "call_s": call}
    if alone is not None:
        row["step_alone_s"] = alone
    return row


def test_step_model_adds_up_the_ring_steps_and_pays_the_call_once():
    step = _step(4 << 20, 4, step=3e-3, add=1e-4, call=1e-4, alone=1e-3)
    # the call cost is paid once, not once per step: 1e-4 + 6 (3e-3 - 1e-4) + 3 adds
    assert calibrate.step_model_time(step, 4) == pytest.approx(1e-4 + 6 * 2.9e-3 + 3e-4)
    assert calibrate.step_model_time(step, 4, alone=True) == pytest.approx(1e-4 + 6 * 0.9e-3 + 3e-4)
    assert calibrate.step_model_time(step, 4, stretch=2) == pytest.approx(2 * (1e-4 + 6 * 2.9e-3 + 3e-4))
    no_call = _step(1 << 20, 2, step=1e-3, add=1e-5)
    assert calibrate.step_model_time(no_call, 2) == pytest.approx(2 * 1e-3 + 1e-5)
    with pytest.raises(ValueError, match="stretch"):
        calibrate.step_model_time(step, 4, stretch=0.5)
    with pytest.raises(ValueError, match="ranks"):
        calibrate.step_model_time(step, 1)


def test_ring_model_overhead_is_paid_once_and_checked():
    base = calibrate.ring_all_reduce_time(1 << 20, 4, 1e-5, 1e-9)
    assert calibrate.ring_all_reduce_time(1 << 20, 4, 1e-5, 1e-9, overhead=5e-5) == pytest.approx(base + 5e-5)
    assert calibrate.ring_all_reduce_time(1 << 20, 4, 1e-5, 1e-9, stretch=2, overhead=5e-5) == pytest.approx(
        2 * (base + 5e-5))
    with pytest.raises(ValueError, match="overhead"):
        calibrate.ring_all_reduce_time(1 << 20, 4, 1e-5, 1e-9, overhead=-1)


def test_same_run_fit_stretches_latency_and_takes_bandwidth_from_the_contended_steps():
    alpha, beta, gamma, call = 100e-6, 1e-9, 1e-10, 50e-6
    sizes = [1 << 16, 1 << 20, 1 << 24]
    # a pair alone follows alpha-beta (plus the call cost every timed step pays); with every rank
    # at once each step takes twice as long, latency and bandwidth alike
    steps = [_step(n, 4, call + 2 * (alpha + n / 4 * beta), n / 4 * gamma, call, alone=call + alpha + n / 4 * beta)
             for n in sizes]
    measured = {n: calibrate.ring_all_reduce_time(n, 4, 2 * alpha, 2 * beta, gamma, overhead=call) for n in sizes}
    rows = [{"size": n, "algorithm": "builtin", "time_s": measured[n]} for n in sizes]
    run = calibrate.SameRun(ranks=4, cores=2, rows=rows, steps=steps)
    cal, every = run.calibration(), run.calibration(contended=True)
    assert cal.exchange.alpha == pytest.approx(alpha, rel=1e-6) and cal.exchange.beta == pytest.approx(beta, rel=1e-6)
    assert every.exchange.beta == pytest.approx(2 * beta, rel=1e-6)
    assert cal.overhead == pytest.approx(call) and cal.pingpong is None
    for c in run.compare("builtin"):
        assert c["stretch"] == 2.0 and c["measured_stretch"] > 1.0
        assert c["fit"] == pytest.approx(1.0, rel=1e-6)  # alpha x stretch 2, beta of the contended steps
        assert c["steps"] == pytest.approx(1.0, rel=1e-6)  # the contended steps themselves
    report = run.report("builtin")
    assert "4 ranks on 2 cores" in report and "every rank at once" in report and str(1 << 24) in report
    assert run.compare("ring") == []
    on_four_cores = calibrate.SameRun(ranks=4, cores=4, rows=rows, steps=steps).compare()
    assert all(c["fit"] < 1.0 for c in on_four_cores)  # no latency stretch with a core per rank


def test_same_run_at_a_quantile_summarises_every_operation_alike():
    # half the operations stall by 4 ms: the median moves into the stalls, the 25% quantile does not
    fast, slow = [1e-3] * 6 + [5e-3] * 6, [5e-4] * 6 + [4.5e-3] * 6
    rows = [{"size": 1 << 20, "algorithm": "builtin", "time_s": 3e-3, "times_s": fast}]
    steps = [{**_step(1 << 20, 2, step=2e-3, add=0.0), "times": {"step_s": slow, "add_s": [0.0] * 12}}]
    run = calibrate.SameRun(ranks=2, cores=2, rows=rows, steps=steps)
    quiet = run.at(0.25)
    assert quiet.quantile == 0.25 and run.quantile == 0.5
    assert quiet.rows[0]["time_s"] == pytest.approx(1e-3) and quiet.steps[0]["step_s"] == pytest.approx(5e-4)
    assert quiet.compare()[0]["steps"] == pytest.approx(1.0)  # 2 steps of 0.5 ms = the 1 ms all-reduce
    assert run.at(0.5).compare()[0]["steps"] == pytest.approx(2 * 2.5e-3 / 3e-3)
    assert run.rows[0]["time_s"] == 3e-3  # the original run is left as it was
    assert "25% quantile" in quiet.report() and "median" in run.report()
    with pytest.raises(ValueError, match="quantile"):
        run.at(1.5)


@linux
def test_measure_same_run_times_steps_beside_all_reduces():
    run = calibrate.measure_same_run(["16K", "256K"], ranks=2, algorithms=("builtin", "ring"), iters=2, warmup=1,
                                     cores=2)
    assert [r["wrong"] for r in run.rows] == [0, 0, 0, 0]
    assert [s["step_size"] for s in run.steps] == [8192, 131072]
    assert all(s["step_s"] > 0 and s["call_s"] > 0 and s["add_s"] > 0 and "step_alone_s" not in s for s in run.steps)
    assert all(len(s["times"]["step_s"]) >= 2 for s in run.steps)
    assert run.at(0.25).compare("builtin")[0]["steps"] > 0
    assert len(run.compare("builtin")) == 2 and all(c["measured_stretch"] is None for c in run.compare("ring"))
    four = calibrate.measure_same_run(["64K"], ranks=4, iters=1, warmup=0, cores=2)
    assert four.steps[0]["step_alone_s"] > 0 and four.compare()[0]["stretch"] == 2.0
    assert live_children() == []
    with pytest.raises(ValueError, match="ranks"):
        calibrate.measure_same_run(["64K"], ranks=1)


@linux
@pytest.mark.timeout(120)
def test_race_grades_the_learners_ring_then_races_it(capsys):
    def stub(tensor, rank, world_size):
        raise NotImplementedError()

    result = bench.race(stub, sizes=("64K",), ranks=2, iters=1, warmup=0, timeout=60)
    assert "left out of the race (Ring all-reduce: not answered yet.)" in capsys.readouterr().out
    assert [r["algorithm"] for r in result.rows] == ["builtin", "ring", "ring, p2p"]

    # the learner's own ring (the library's is refused inside an answer: exercises.own_work)
    from tests.test_lab_exercises import p2p_ring as mine

    result = bench.race(mine, sizes=(1000,), ranks=3, iters=1, warmup=0, timeout=60, verbose=False)
    assert [r["algorithm"] for r in result.rows] == ["builtin", "ring", "ring, p2p", "yours"]
    assert all(r["wrong"] == 0 and r["time_s"] > 0 for r in result.rows)
    assert set(result.ratio("yours")) == {1000}
    bench.race(lambda t, rank, p: t.add_(1), sizes=(1000,), ranks=2, iters=1, warmup=0, timeout=60)
    assert "left out of the race (Not yet: on 2 ranks" in capsys.readouterr().out
    assert live_children() == []


def test_race_validates():
    with pytest.raises(ValueError, match="sizes"):
        bench.race(None, sizes=("4G",))
    with pytest.raises(ValueError, match="ranks"):
        bench.race(None, ranks=1)
    with pytest.raises(ValueError, match="fn"):
        bench.race(42)
