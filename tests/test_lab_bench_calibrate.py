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


def _step(size, ranks, exchange, add, exchange_all=None):
    row = {"size": size, "step_size": size // ranks, "ranks": ranks, "exchange_s": exchange, "add_s": add}
    if exchange_all is not None:
        row["exchange_all_s"] = exchange_all
    return row


def test_step_model_adds_up_the_ring_steps():
    step = _step(4 << 20, 4, exchange=1e-3, add=1e-4, exchange_all=3e-3)
    assert calibrate.step_model_time(step, 4) == pytest.approx(6 * 1e-3 + 3 * 1e-4)
    assert calibrate.step_model_time(step, 4, stretch=2) == pytest.approx(2 * (6e-3 + 3e-4))
    assert calibrate.step_model_time(step, 4, contended=True) == pytest.approx(6 * 3e-3 + 3e-4)
    with pytest.raises(ValueError, match="stretch"):
        calibrate.step_model_time(step, 4, stretch=0.5)
    with pytest.raises(ValueError, match="ranks"):
        calibrate.step_model_time(step, 1)


def test_same_run_compare_uses_its_own_fit_and_the_stretch():
    alpha, beta, gamma = 100e-6, 1e-9, 1e-10
    sizes = [1 << 16, 1 << 20, 1 << 24]
    steps = [_step(n, 4, alpha + n / 4 * beta, n / 4 * gamma, exchange_all=2 * (alpha + n / 4 * beta)) for n in sizes]
    measured = {n: 2 * calibrate.ring_all_reduce_time(n, 4, alpha, beta, gamma) for n in sizes}
    rows = [{"size": n, "algorithm": "builtin", "time_s": measured[n]} for n in sizes]
    run = calibrate.SameRun(ranks=4, cores=2, rows=rows, steps=steps)
    cal = run.calibration()
    assert cal.exchange.alpha == pytest.approx(alpha, rel=1e-6) and cal.exchange.beta == pytest.approx(beta, rel=1e-6)
    assert cal.pingpong is None
    for c in run.compare("builtin"):
        assert c["stretch"] == 2.0 and c["measured_stretch"] == pytest.approx(2.0)
        assert c["fit"] == pytest.approx(1.0, rel=1e-6)  # stretch 2 x model = the "measurement"
        assert c["steps"] == pytest.approx(1.0, rel=1e-6)
        assert c["steps_contended"] < 1.0  # doubling only the exchange leaves the adds unstretched
    report = run.report("builtin")
    assert "4 ranks on 2 cores" in report and "steps, contended" in report and str(1 << 24) in report
    assert run.compare("ring") == []


@linux
def test_measure_same_run_times_steps_beside_all_reduces():
    run = calibrate.measure_same_run(["16K", "256K"], ranks=2, algorithms=("builtin", "ring"), iters=2, warmup=1,
                                     cores=2)
    assert [r["wrong"] for r in run.rows] == [0, 0, 0, 0]
    assert [s["step_size"] for s in run.steps] == [8192, 131072]
    assert all(s["exchange_s"] > 0 and s["add_s"] > 0 and "exchange_all_s" not in s for s in run.steps)
    assert len(run.compare("builtin")) == 2 and all(c["steps_contended"] is None for c in run.compare("ring"))
    four = calibrate.measure_same_run(["64K"], ranks=4, iters=1, warmup=0, cores=2)
    assert four.steps[0]["exchange_all_s"] > 0 and four.compare()[0]["stretch"] == 2.0
    assert live_children() == []
    with pytest.raises(ValueError, match="ranks"):
        calibrate.measure_same_run(["64K"], ranks=1)
