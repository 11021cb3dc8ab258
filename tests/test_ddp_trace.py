"""Chapter 06's profiler trace: events to spans, the overlap arithmetic, validation, the drawing, one real run."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib.chapters import data_parallel as dp  # noqa: E402
from course_lib.lab import ddp_trace  # noqa: E402

BWD = ddp_trace.BACKWARD_PREFIX


def _events():
    """A made-up step (microseconds): forward 0-10, three backward ops 10-40, two buckets' all-reduces on two
    gloo threads (one beside the backward pass, one running on after it), an op the timeline leaves out."""
    return [("aten::mm", 12, 13, 1), (ddp_trace.FORWARD, 0, 10, 1), (BWD + "AddmmBackward0", 10, 20, 1),
            (BWD + "torch::autograd::AccumulateGrad", 20, 30, 1), (ddp_trace.LAUNCH, 21, 22, 1),
            (ddp_trace.ALL_REDUCE, 22, 28, 2), (BWD + "AddmmBackward0", 30, 40, 1), (ddp_trace.LAUNCH, 38, 39, 1),
            (ddp_trace.ALL_REDUCE, 39, 50, 3), (ddp_trace.COPY_BACK, 50, 51, 1), ("Optimizer.step#SGD.step", 51, 55, 1)]


def _trace(events=None, ranks=1):
    spans = [s for r in range(ranks) for s in ddp_trace.spans_from_events(r, events or _events())]
    return ddp_trace.DDPTrace(ranks=ranks, width=8, depth=2, batch=4, bucket_cap_mb=0.5, grad_bytes=800,
                              buckets=[400.0, 400.0], spans=spans)


def test_events_become_spans_on_lanes_numbered_by_bucket():
    spans = ddp_trace.spans_from_events(0, _events())
    assert [s.kind for s in spans] == ["forward", "backward", "backward", "launch", "all-reduce", "backward",
                                       "launch", "all-reduce", "copy back", "optimizer"]   # aten::mm left out
    reduces = [s for s in spans if s.kind == "all-reduce"]
    assert [s.bucket for s in reduces] == [0, 1] and {s.lane for s in reduces} == {"communication"}
    assert [s.thread for s in reduces] == [2, 3]
    assert spans[0].start_s == 0.0 and reduces[1].end_s == pytest.approx(50e-6)
    assert spans[2].name == "AccumulateGrad"                       # prefixes dropped from the labels
    moved = ddp_trace.spans_from_events(1, _events(), origin_us=10, shift_s=1e-3)
    assert moved[0].start_s == pytest.approx(-10e-6 + 1e-3)           # another rank on rank 0's clock
    assert ddp_trace.spans_from_events(0, [("aten::mm", 0, 1)]) == []
    with pytest.raises(ValueError, match="events"):
        ddp_trace.forward_start_us([("aten::mm", 0, 1)])


def test_overlap_and_exposed_come_from_the_spans():
    t = _trace()
    assert t.backward_window(0) == (pytest.approx(10e-6), pytest.approx(40e-6))
    assert t.comm_s(0) == pytest.approx(17e-6)
    assert t.overlap_s(0) == pytest.approx(6e-6 + 1e-6)               # bucket 0 wholly, bucket 1 for 39-40
    assert t.exposed_s(0) == pytest.approx(10e-6)                     # bucket 1 runs on to 50
    assert t.overlap_s(0) + t.exposed_s(0) == pytest.approx(t.comm_s(0))
    assert t.buckets_during_backward(0) == 2
    assert "2 bucket all-reduces" in t.summary()
    with pytest.raises(ValueError, match="rank"):
        t.of(1)


def test_lanes_and_drawing():
    t = _trace(ranks=2)
    lanes, windows, marks = dp.trace_lanes(t)
    assert [label for label, _ in lanes] == ["rank 0: training thread", "rank 0: gloo threads",
                                             "rank 1: training thread", "rank 1: gloo threads"]
    assert all(s.kind != "launch" for s in lanes[0][1]) and len(marks) == 4 and len(windows) == 2
    ax = dp.draw_ddp_trace(t)
    assert "2 buckets" in ax.get_title() and len(ax.get_yticklabels()) == 4
    plt.close("all")


@pytest.mark.parametrize("kwargs, name", [({"width": 4}, "width"), ({"depth": 0}, "depth"), ({"batch": 0}, "batch"),
                                          ({"bucket_cap_mb": 0}, "bucket_cap_mb"), ({"warmup": 0}, "warmup"),
                                          ({"timeout": 0}, "timeout"), ({"ranks": 1}, "ranks")])
def test_trace_validates_before_starting_anything(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ddp_trace.trace(**kwargs)


def test_a_small_real_trace():
    t = ddp_trace.trace(width=128, depth=3, batch=16, bucket_cap_mb=0.05, warmup=2)
    assert len(t.buckets) == 3 and sum(t.buckets) == t.grad_bytes == 3 * (128 * 128 + 128) * 4
    for r in range(2):
        assert len(t.of(r, "backward")) >= 3 and len(t.of(r, "forward")) == 1
        assert [s.bucket for s in t.of(r, "all-reduce")] == [0, 1, 2]   # one gloo all-reduce per bucket
        assert len(t.of(r, "launch")) == 3
        assert t.overlap_s(r) + t.exposed_s(r) <= t.comm_s(r) + 1e-9
        # DDP launches bucket 0 (the last layer's gradients) before the backward pass is over
        assert t.of(r, "launch")[0].start_s < t.backward_window(r)[1]
