"""Chapter 06's real DDP run: pure helpers, the result's arithmetic, validation, and one small real run."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import costmodel, parallel  # noqa: E402
from course_lib.lab import ddp_run  # noqa: E402


def test_parameter_count():
    assert ddp_run.parameter_count(512, 4) == 4 * (512 * 512 + 512)
    with pytest.raises(ValueError, match="width"):
        ddp_run.parameter_count(0, 4)
    with pytest.raises(ValueError, match="depth"):
        ddp_run.parameter_count(8, 100)


def test_tiny_model_has_that_many_parameters():
    model = ddp_run.tiny_model(32, 3)
    assert sum(p.numel() for p in model.parameters()) == ddp_run.parameter_count(32, 3)


def test_bucket_sizes_pack_like_ddp():
    mib = 2**20
    # a bucket closes once it holds at least the cap; the rest goes into a last, smaller bucket
    assert ddp_run.bucket_sizes([0.6 * mib] * 5, mib) == [1.2 * mib, 1.2 * mib, 0.6 * mib]
    assert ddp_run.bucket_sizes([4 * mib, 1], mib) == [4 * mib, 1]
    assert sum(ddp_run.bucket_sizes([3, 5, 7, 11], 8)) == 26
    with pytest.raises(ValueError, match="cap_bytes"):
        ddp_run.bucket_sizes([1, 2], 0)
    with pytest.raises(ValueError, match="tensor_bytes"):
        ddp_run.bucket_sizes([1, -2], 8)


@pytest.mark.parametrize("nbytes, cap", [(10, 5), (11, 5), (4, 5), (97, 8)])
def test_bucket_sizes_of_small_tensors_count_as_parallel_bucket_count(nbytes, cap):
    # the lab packs real tensors; with tensors far smaller than a bucket it fills parallel.bucket_count of them
    assert len(ddp_run.bucket_sizes([1] * nbytes, cap)) == parallel.bucket_count(nbytes, cap)


def _fake(**over):
    base = dict(ranks=2, width=512, depth=4, batch=32, bucket_cap_mb=1.0, params=1_050_624, grad_bytes=4_202_496,
                buckets=[1_050_624.0] * 4, step_sync_s=0.030, step_nosync_s=0.020, allreduce_s=0.008,
                bucketed_allreduce_s=0.012, alpha_s=50e-6, bandwidth=1e9, add_bandwidth=5e9, average_error=0.0,
                local_vs_average=1e-5, grad_scale=1e-3, one_rank_step_s=0.012, cores=2)
    base.update(over)
    return ddp_run.DDPRun(**base)


def test_result_arithmetic():
    r = _fake()
    assert r.exposed_s == pytest.approx(0.010)
    assert r.hidden_fraction == pytest.approx(1 - 0.010 / 0.012)
    assert r.predicted_allreduce_s == pytest.approx(
        costmodel.collective_time("all_reduce", 4_202_496, 2, 1e9, 50e-6, "ring"))
    assert r.predicted_bucketed_s == pytest.approx(4 * (2 * 50e-6 + 1_050_624 / 1e9))
    assert r.predicted_with_adds_s == pytest.approx(r.predicted_bucketed_s + 4 * 0.5 * 1_050_624 / 5e9)
    assert r.speedup == pytest.approx(2 * 0.012 / 0.030)
    assert _fake(step_sync_s=0.019).exposed_s == 0.0
    assert _fake(one_rank_step_s=None).speedup is None
    d = r.to_dict()
    assert d["exposed_s"] == pytest.approx(0.010) and "speedup" in d
    assert "exposed" in r.summary() and "MiB" in str(r)
    ax = r.plot()
    assert ax.get_title()
    plt.close(ax.figure)


@pytest.mark.parametrize("kwargs, name", [
    ({"width": 4}, "width"), ({"depth": 0}, "depth"), ({"batch": 0}, "batch"), ({"bucket_cap_mb": 0}, "bucket_cap_mb"),
    ({"steps": 0}, "steps"), ({"warmup": -1}, "warmup"), ({"ranks": 3}, "ranks"), ({"ranks": 1}, "ranks"),
    ({"one_rank": 1}, "one_rank"), ({"link_sizes": [4096, 4096]}, "link_sizes"), ({"link_sizes": [10, 4096]}, "link_sizes"),
    ({"link_reps": 0}, "link_reps"), ({"timeout": 0}, "timeout"),
])
def test_run_validates_before_starting_anything(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ddp_run.run(**kwargs)


def test_a_small_real_run():
    r = ddp_run.run(width=64, depth=2, batch=8, bucket_cap_mb=0.01, steps=2, warmup=1,
                    link_sizes=(64 * 1024, 256 * 1024), link_reps=2, timeout=120)
    assert r.params == ddp_run.parameter_count(64, 2)
    assert r.grad_bytes == 4 * r.params
    assert sum(r.buckets) == pytest.approx(r.grad_bytes)
    assert len(r.buckets) >= 2          # 0.01 MiB buckets split 33 KB of gradients
    assert r.step_sync_s > 0 and r.step_nosync_s > 0 and r.allreduce_s > 0 and r.bucketed_allreduce_s > 0
    assert r.bandwidth > 0 and r.add_bandwidth > 0 and r.alpha_s >= 0
    # DDP's gradient is the average of the ranks' local gradients, which differ
    assert r.average_error <= 1e-6 * max(r.grad_scale, 1e-12) + 1e-12
    assert r.local_vs_average > 0
    assert r.one_rank_step_s > 0 and r.speedup > 0
    assert math.isfinite(r.predicted_with_adds_s)


def test_run_refuses_what_the_memory_cannot_hold(monkeypatch):
    from course_lib.lab import memory
    from tests.test_lab_helpers import live_children

    monkeypatch.setattr(memory, "available_bytes", lambda: 4e9)
    with pytest.raises(ValueError, match=r"DDP of an MLP 16 x Linear\(4096, 4096\) with batch 4096 on 8 ranks "
                                         r"needs about .* GB of memory and only 4 GB is available"):
        ddp_run.run(width=4096, depth=16, batch=4096, ranks=8)
    assert live_children() == []
    ddp_run.check_memory(512, 4, 32, 2)  # the defaults fit
