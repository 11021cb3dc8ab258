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
