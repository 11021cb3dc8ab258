"""Chapter 06 library: what DDP sends, overlap, ZeRO traffic and memory, scaling, published data, explorer."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import numpy as np  # noqa: E402

from course_lib import checks, grading, costmodel, hardware, parallel, topology, units  # noqa: E402
from course_lib.chapters import data_parallel as dp  # noqa: E402


# ---------------------------------------------------------------- what DDP sends

def test_bytes_sent_per_gpu_is_the_ring_volume():
    assert dp.bytes_sent_per_gpu("all_reduce", 14e9, 8) == pytest.approx(2 * 7 / 8 * 14e9)
    assert dp.bytes_sent_per_gpu("all_gather", 14e9, 8) == pytest.approx(7 / 8 * 14e9)
    assert dp.bytes_sent_per_gpu("reduce_scatter", 14e9, 1) == 0.0
    for args, name in ((("broadcast", 1e9, 8), "collective"), (("all_reduce", -1, 8), "nbytes"),
                       (("all_reduce", 1e9, 0), "gpus")):
        with pytest.raises(ValueError, match=name):
            dp.bytes_sent_per_gpu(*args)


def test_ddp_default_bucket_is_25_mib_and_bucket_count_rounds_up():
    assert dp.DDP_BUCKET_BYTES == 25 * 2**20
    assert dp.bucket_count(350e6 * 4) == math.ceil(1.4e9 / (25 * 2**20)) == 54
    assert dp.bucket_count(25 * 2**20) == 1
    assert dp.bucket_count(25 * 2**20 + 1) == 2
    with pytest.raises(ValueError, match="nbytes"):
        dp.bucket_count(0)
    with pytest.raises(ValueError, match="bucket_bytes"):
        dp.bucket_count(1e9, -5)


def test_ddp_traffic():
    t = dp.ddp_traffic(7e9, 8)
    assert t["gradient_bytes"] == 14e9
    assert t["bytes_sent_per_gpu"] == pytest.approx(24.5e9)
    assert t["buckets"] == math.ceil(14e9 / (25 * 2**20))
    assert dp.ddp_traffic(7e9, 8, bytes_per_value=4)["gradient_bytes"] == 28e9
    with pytest.raises(ValueError, match="bytes_per_value"):
        dp.ddp_traffic(7e9, 8, bytes_per_value=16)
    with pytest.raises(ValueError, match="params"):
        dp.ddp_traffic(0, 8)


# ---------------------------------------------------------------- overlap

@pytest.mark.parametrize("bwd, comm, n", [(0.12, 0.15, 6), (0.12, 0.06, 6), (1.0, 3.0, 10), (0.5, 0.5, 1)])
def test_overlap_schedule_matches_the_closed_form(bwd, comm, n):
    b, c = bwd / n, comm / n
    expected = c + (n - 1) * max(0.0, c - b)
    sched = dp.overlap_schedule(bwd, comm, n, forward_s=0.05)
    assert sched["exposed_s"] == pytest.approx(expected)
    assert sched["step_s"] == pytest.approx(0.05 + bwd + expected)
    assert sched["hidden_s"] == pytest.approx(comm - expected)
    assert dp.exposed_time(bwd, comm, n) == pytest.approx(expected)
    # the communication stream never runs two buckets at once, nor a bucket before its gradients exist
    for (_, s1, e1), (_, s2, _e2) in zip(sched["comm"], sched["comm"][1:]):
        assert s2 >= e1 - 1e-12
    for i, (_, start, _) in enumerate(sched["comm"]):
        assert start >= 0.05 + (i + 1) * b - 1e-12


def test_without_overlap_everything_is_exposed():
    sched = dp.overlap_schedule(0.12, 0.15, 6, overlap=False)
    assert sched["exposed_s"] == pytest.approx(0.15)
    assert sched["hidden_s"] == pytest.approx(0.0)


def test_many_buckets_approach_the_rule_parallel_uses():
    # parallel.estimate: exposed = max(last bucket, comm - backward window)
    bwd, comm = 0.12, 0.15
    assert dp.exposed_time(bwd, comm, 10_000) == pytest.approx(max(comm / 10_000, comm - bwd), rel=1e-3)
    assert dp.exposed_time(bwd, 0.06, 10_000) == pytest.approx(0.06 / 10_000)


def test_overlap_validates():
    for kwargs, name in (({"backward_s": 0}, "backward_s"), ({"comm_s": -1}, "comm_s"), ({"buckets": 0}, "buckets"),
                         ({"forward_s": -0.1}, "forward_s"), ({"overlap": "yes"}, "overlap")):
        args = {"backward_s": 0.1, "comm_s": 0.1, "buckets": 4, **kwargs}
        with pytest.raises(ValueError, match=name):
            dp.overlap_schedule(**args)


def test_scaling_efficiency():
    assert dp.scaling_efficiency(0.18, 0.05) == pytest.approx(0.18 / 0.23)
    assert dp.scaling_efficiency(1.0, 0.0) == 1.0
    with pytest.raises(ValueError, match="compute_s"):
        dp.scaling_efficiency(0, 0.1)
    with pytest.raises(ValueError, match="exposed_s"):
        dp.scaling_efficiency(1, -0.1)


# ---------------------------------------------------------------- ZeRO

def test_zero_traffic_stages_1_and_2_equal_ddp_and_stage_3_is_one_and_a_half():
    for z in (0, 1, 2):
        assert dp.zero_traffic(7.5e9, 64, z)["ratio_to_ddp"] == pytest.approx(1.0)
    z3 = dp.zero_traffic(7.5e9, 64, 3)
    assert z3["ratio_to_ddp"] == pytest.approx(1.5)
    assert z3["bytes_sent"] == pytest.approx(3 * 63 / 64 * 15e9)
    assert [op["collective"] for op in z3["ops"]] == ["all_gather", "all_gather", "reduce_scatter"]
    with pytest.raises(ValueError, match="zero"):
        dp.zero_traffic(7.5e9, 64, 4)


def test_zero_table_uses_parallel_memory_and_matches_the_zero_paper():
    rows = dp.zero_table(7.5e9, 64)
    published = {c["zero"]: c["measured_model_state_bytes"] for c in parallel.published()["cases"]
                 if c["kind"] == "memory"}
    for r in rows:
        assert r["total"] == pytest.approx(parallel.model_state_bytes(7.5e9, 64, r["zero"])["total"])
        assert r["total"] == pytest.approx(published[r["zero"]], rel=0.01)
    assert rows[0]["total"] == pytest.approx(16 * 7.5e9)
    assert rows[2]["total"] == pytest.approx(2 * 7.5e9 + 14 * 7.5e9 / 64)


# ---------------------------------------------------------------- step time and scaling

def test_dp_estimate_is_parallel_estimate_with_tp_pp_1():
    e = dp.dp_estimate("megatron-1.7b", 64, 400, zero=1, seqs_per_gpu=2)
    one_nic_per_gpu = hardware.system("dgx-h100").variant(nics_per_node=8, nic_gbit_s=400)
    ref = parallel.estimate("megatron-1.7b", one_nic_per_gpu, gpus=64, tp=1, pp=1, global_batch=128, micro_batch=1,
                            zero=1, recompute="selective")
    assert e.step_time_s == pytest.approx(ref.step_time_s)
    assert (e.tp, e.pp, e.dp) == (1, 1, 64)
    with pytest.raises(ValueError, match="global_batch"):
        dp.dp_estimate("megatron-1.7b", 64, global_batch=100)
    with pytest.raises(ValueError, match="overlap"):
        dp.dp_estimate("megatron-1.7b", 8, overlap=1)
    with pytest.raises(ValueError, match="nic_gbit_s"):
        dp.dp_estimate("megatron-1.7b", 8, nic_gbit_s=0)
    with pytest.raises(ValueError, match="base"):
        dp.dp_estimate("megatron-1.7b", 8, base="dgx-h999")


def test_weak_scaling_curve_is_compute_over_step():
    c = dp.scaling_curve("megatron-7.5b", 100, zero=1)
    assert list(c["gpus"]) == list(dp.SCALING_GPUS)
    assert c["efficiency"][0] == pytest.approx(1.0)
    assert c["efficiency"] == pytest.approx(c["compute_s"] / c["step_s"])
    assert c["speedup"] == pytest.approx(c["efficiency"] * c["gpus"])
    # inside one node NVLink hides the all-reduce; at 12.5 GB/s per GPU across nodes it does not
    assert c["efficiency"][3] > 0.99 > 0.8 > c["efficiency"][4]
    # a faster network restores it
    assert dp.scaling_curve("megatron-7.5b", 400, zero=1)["efficiency"][4] > 0.99


def test_no_overlap_costs_efficiency_and_zero3_costs_more():
    on = dp.scaling_curve("megatron-1.7b", 50, gpus=(64,))["efficiency"][0]
    off = dp.scaling_curve("megatron-1.7b", 50, overlap=False, gpus=(64,))["efficiency"][0]
    z3 = dp.scaling_curve("megatron-1.7b", 50, zero=3, gpus=(64,))["efficiency"][0]
    assert off < on and z3 < on


def test_strong_scaling_skips_counts_that_do_not_divide_the_batch():
    s = dp.strong_scaling("megatron-1.7b", 96, 12.5, gpus=(1, 2, 4, 8, 16, 32, 64))
    assert list(s["gpus"]) == [1, 2, 4, 8, 16, 32]
    assert s["speedup"][0] == pytest.approx(1.0)
    assert s["efficiency"] == pytest.approx(s["speedup"] / s["gpus"])
    with pytest.raises(ValueError, match="gpus"):
        dp.strong_scaling("megatron-1.7b", 3, gpus=(2, 4))


def test_scaling_validates():
    with pytest.raises(ValueError, match="gpus"):
        dp.scaling_curve(gpus=())
    with pytest.raises(ValueError, match="seqs_per_gpu"):
        dp.scaling_curve(seqs_per_gpu=0)
    with pytest.raises(ValueError, match="model"):
        dp.scaling_curve("gpt-9")


# ---------------------------------------------------------------- the DP ring

def test_ring_orders_cross_nodes_on_one_rail_each():
    order = dp.ring_order(2, 8, ring=3)
    assert order[:8] == [f"n0.gpu{i % 8}" for i in range(3, 11)]
    assert order[8:] == [f"n1.gpu{i}" for i in (2, 1, 0, 7, 6, 5, 4, 3)]
    assert len(set(order)) == 16
    with pytest.raises(ValueError, match="ring"):
        dp.ring_order(2, 8, ring=8)


def test_dp_ring_bandwidth_one_nic_per_ring_eight_rings_per_node():
    info = dp.dp_ring_bandwidth("dgx-h100", 2)
    assert info["one_ring"] == pytest.approx(50e9)
    assert info["rings"] == 8
    assert info["all_rings"] == pytest.approx(400e9)
    assert info["model_per_rank"] == pytest.approx(parallel.group_link("dgx-h100", 16, 1).bandwidth)
    for ring in range(8):
        assert dp.dp_ring_bandwidth("dgx-h100", 2, ring)["one_ring"] == pytest.approx(50e9)


# ---------------------------------------------------------------- published data

def test_published_scaling_cites_sources():
    rows = dp.published_scaling_rows()
    assert len(rows) >= 4
    for r in rows:
        assert 0 < r["efficiency"] <= 1 and r["url"].startswith("https://") and r["where"]
    assert min(r["efficiency"] for r in rows) < 0.8  # not linear


def test_megatron_rows_and_the_zero3_collapse():
    rows = dp.megatron_dp_rows()
    z3 = [r for r in rows if r["scheme"] == "ZeRO-3"]
    assert [r["gpus"] for r in z3] == [384, 768, 1536]
    assert z3[-1]["ratio"] > 3 and z3[1]["ratio"] > 1.5            # the model is 1.5-4.6x optimistic
    ptdp = [r for r in rows if r["scheme"] == "PTD-P"]
    assert abs(ptdp[-1]["measured_efficiency"] - ptdp[-1]["predicted_efficiency"]) < 0.03


def test_zero3_ladder_brackets_the_measurement():
    for r in dp.zero3_ladder():
        assert r["model"] >= r["no_overlap"] and r["model"] >= r["own_nic"] >= r["own_nic_no_overlap"]
        assert r["own_nic_no_overlap"] * 0.9 <= r["measured"] <= r["model"] * 1.01


# ---------------------------------------------------------------- drawing and explorer

def test_drawings_draw():
    for fn in (dp.draw_overlap_timeline, dp.draw_zero_memory, dp.draw_dp_ring, dp.plot_zero3_ladder):
        ax = fn()
        assert ax.get_title()
        plt.close(ax.figure)
    with pytest.raises(ValueError, match="capacity_bytes"):
        dp.draw_zero_memory(capacity_bytes=0)


def test_scaling_view_is_the_scaling_curve_and_the_estimates():
    v = dp.scaling_view("megatron-7.5b", 64, 12.5, 1, 1, True)
    curve = dp.scaling_curve("megatron-7.5b", units.bytes_to_bits(12.5), 1, 1, True)
    assert np.array_equal(v.step_s, curve["step_s"]) and v.gpus[v.selected] == v.selected_gpus == 64
    est = dp.dp_estimate("megatron-7.5b", 64, units.bytes_to_bits(12.5), 3, 1, True)
    assert v.memory_gb.shape == (4, 4) and v.memory_gb[3].sum() == pytest.approx(est.memory["total"] / units.GB)
    assert v.usable_gb == pytest.approx(est.memory["usable"] / units.GB)


def test_explorer_moves_its_artists_instead_of_making_new_ones():
    ex = dp.dp_scaling_explorer(model="megatron-7.5b", gpus=64, link_gb_s=12.5)
    ax1, ax2, _ = ex.axes
    bars = list(ax1.patches)
    ex.render(gpus=8, zero=3, model=ex.controls["model"].options[-1][1])
    assert list(ax1.patches) == bars and len(ax2.patches) == 17
    v = dp.scaling_view(**ex.values())
    chosen = bars[-1]  # the outline of the chosen GPU count
    assert chosen.get_height() == pytest.approx(v.step_s[v.selected])
    assert ax1.get_ylim()[1] >= v.step_s.max() and "ZeRO-3" in ax1.get_title()
    assert ax2.get_ylim()[1] >= v.memory_gb.sum(axis=1).max()
    plt.close("all")


def test_explorer_reads_at_notebook_width_one_panel_above_the_other():
    ex = dp.dp_scaling_explorer()
    ax1, ax2, twin = ex.axes
    assert ex.figure.get_figwidth() <= 7.5 + 1e-9
    assert ax2.get_position().y1 < ax1.get_position().y0 and twin.get_position().bounds == ax1.get_position().bounds
    # the largest model on two GPUs: 5-digit tick labels stay clear of the y labels, which stay in the figure
    ex.render(model=ex.controls["model"].options[-1][1], gpus=2, seqs_per_gpu=16, link_gb_s=1.0)
    renderer = ex.figure.canvas.get_renderer()
    for ax in (ax1, ax2):
        label = ax.yaxis.label.get_window_extent(renderer)
        ticks = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
        assert max(len(t.get_text()) for t in ax.get_yticklabels()) >= 4
        assert label.x0 >= 0 and all(label.x1 <= box.x0 for box in ticks), ax.get_ylabel()
    plt.close("all")


def test_ring_leaves_name_the_rail_of_each_crossing():
    topo = topology.rail_fat_tree("dgx-h100", 2)
    order = dp.ring_order(2, 8, ring=3)
    leaves = dp.ring_leaves(topo, order)
    assert len(leaves) == 2 and all(topo.kinds[leaf] == "ib_switch" for leaf in leaves.values())


def test_model_options_sorted_by_size():
    opts = dp.model_options()
    sizes = [parallel.model(i).params for _, i in opts]
    assert sizes == sorted(sizes) and len(opts) == len(parallel.model_ids())


def test_explorer_readout_follows_gpus_zero_and_overlap():
    ex = dp.dp_scaling_explorer(model="megatron-7.5b", gpus=64, link_gb_s=12.5, zero=1)
    assert "64 GPUs" in ex.readout and "ZeRO-1" in ex.readout
    readout = ex.render(gpus=8, zero=3)
    assert "8 GPUs" in readout and "ZeRO-3" in readout and "inside one node" in readout
    assert "not overlapped" in ex.render(link_gb_s=400, overlap=False)
    plt.close("all")


def test_explorer_validates():
    with pytest.raises(ValueError, match="model"):
        dp.dp_scaling_explorer(model="gpt-9")
    with pytest.raises(ValueError, match="value"):
        dp.dp_scaling_explorer(gpus=3)
    with pytest.raises(ValueError, match="zero"):
        dp.dp_scaling_explorer(zero=5)


# ---------------------------------------------------------------- exercises

def test_exercise_answers_follow_from_the_library():
    assert grading.expected("06.1") == pytest.approx(dp.ddp_traffic(13e9, 8)["bytes_sent_per_gpu"])
    t = costmodel.collective_time("all_reduce", 26e9, 8, 300e9, 0.0, "ring")  # not section 2's 7B
    assert grading.expected("06.2") == pytest.approx(t)
    assert grading.expected("06.3") == pytest.approx(dp.exposed_time(0.12, 0.162, 6))
    assert grading.expected("06.4") == pytest.approx(dp.scaling_efficiency(0.18, dp.exposed_time(0.12, 0.162, 6)))
    assert grading.expected("06.5") == dp.bucket_count(350e6 * 4)
    assert grading.expected("06.6") == pytest.approx(parallel.model_state_bytes(13e9, 16, 2)["total"] / units.GB)


@pytest.mark.parametrize("exercise, wrong, fragment", [
    ("06.1", 26e9, "2(p-1)/p"), ("06.1", 91e9, "FP32"),
    ("06.2", 0.1517 / 2, "per-direction"), ("06.2", 151.67, "milliseconds"),
    ("06.3", 0.162, "overlap"), ("06.3", 0.042, "first bucket"), ("06.3", 0.027, "backlog"),
    ("06.4", 74.38, "fraction"), ("06.4", 0.18 / 0.342, "hidden"),
    ("06.5", 56, "MiB"), ("06.5", 53, "round up"), ("06.5", 27, "FP32"),
    ("06.6", 61.75, "ZeRO-1"), ("06.6", 13, "ZeRO-3"), ("06.6", 208, "shard"),
    ("06.6", 37.375e9 / 2**30, "GiB"), ("06.6", 27.625, "optimizer"),
    ("06.7", "C", "reduce-scatter"), ("06.7", "A", "divides"),
])
def test_exercise_hints_catch_common_mistakes(exercise, wrong, fragment):
    result = checks.evaluate(exercise, wrong)
    assert result.status == "wrong"
    assert fragment.lower() in result.message.lower(), result.message
