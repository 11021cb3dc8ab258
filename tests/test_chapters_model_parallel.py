"""Chapter 07 library: TP bytes and ratios, pipeline schedules, rank order, traffic, grid, validation, explorers."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import checks, datafiles, grading, hardware, parallel  # noqa: E402
from course_lib.chapters import model_parallel as mp  # noqa: E402

GPT3_LAYOUT = dict(gpus=1024, tp=8, pp=16, global_batch=1536, recompute="full")


@pytest.fixture(scope="module")
def pub():
    return parallel.estimate("gpt3-175b", "dgx-a100", **GPT3_LAYOUT)


# ---------------------------------------------------------------- tensor parallelism

def test_tp_allreduce_bytes_is_b_s_h_in_bf16():
    assert mp.tp_allreduce_bytes("gpt3-175b") == 1 * 2048 * 12288 * 2 == 50_331_648
    assert mp.tp_allreduce_bytes("gpt3-175b", micro_batch=4, bytes_per_value=4) == 4 * 2048 * 12288 * 4
    assert mp.tp_allreduce_bytes(parallel.model("llama3-70b")) == 8192 * 8192 * 2


def test_tp_allreduce_bytes_validates():
    with pytest.raises(ValueError, match="micro_batch"):
        mp.tp_allreduce_bytes("gpt3-175b", micro_batch=0)
    with pytest.raises(ValueError, match="bytes_per_value"):
        mp.tp_allreduce_bytes("gpt3-175b", bytes_per_value=16)
    with pytest.raises(ValueError, match="model_id"):
        mp.tp_allreduce_bytes("gpt-5")
    with pytest.raises(ValueError, match="model_id"):
        mp.tp_allreduce_bytes(175)


def test_tp_comm_to_compute_matches_the_gpt_closed_form():
    m = parallel.model("gpt3-175b")
    h, s, F, B = m.hidden, m.seq_len, 150e12, 240e9
    for t in (2, 8, 16):
        closed = 4 * (t - 1) * F / (3 * B * (6 * h + s))
        # the library counts logits and the layer's biases too: within 1% for GPT-3
        assert mp.tp_comm_to_compute(m, t, B, F) == pytest.approx(closed, rel=0.01)
    assert mp.tp_comm_to_compute(m, 1, B, F) == 0.0
    assert mp.tp_comm_to_compute(m, 16, B, F) > 2 * mp.tp_comm_to_compute(m, 8, B, F)


def test_tp_comm_to_compute_validates():
    with pytest.raises(ValueError, match="tp"):
        mp.tp_comm_to_compute("gpt3-175b", 0, 1e9, 1e12)
    with pytest.raises(ValueError, match="link_bytes_per_s"):
        mp.tp_comm_to_compute("gpt3-175b", 8, 0, 1e12)
    with pytest.raises(ValueError, match="flops_per_s"):
        mp.tp_comm_to_compute("gpt3-175b", 8, 1e9, -1)


def test_tp_link_comparison_nvlink_vs_nic_share():
    a = mp.tp_link_comparison("gpt3-175b", "dgx-a100", tp=8)
    assert a["nvlink_bw"] == pytest.approx(300e9 * 0.8)
    assert a["nic_bw"] == pytest.approx(25e9 * 0.94)
    assert a["ratio_nic"] / a["ratio_nvlink"] == pytest.approx(a["nvlink_bw"] / a["nic_bw"])
    assert 0.05 < a["ratio_nvlink"] < 0.1 < 0.5 < a["ratio_nic"]
    h = mp.tp_link_comparison("gpt3-175b", "dgx-h100", tp=8)
    assert h["ratio_nvlink"] > a["ratio_nvlink"]  # 3x the FLOP/s, 1.5x the NVLink
    with pytest.raises(ValueError, match="tp"):
        mp.tp_link_comparison(tp=1)
    with pytest.raises(ValueError, match="system"):
        mp.tp_link_comparison(system="dgx-z")


def test_tp_scan_drops_when_tp_leaves_the_node():
    for sid in ("dgx-a100", "dgx-h100"):
        rows = {r["tp"]: r for r in mp.tp_scan("gpt3-175b", sid, pp=16, dp=8, micro_batches=192)}
        assert [rows[t]["gpus"] for t in (1, 8, 32)] == [128, 1024, 4096]
        assert not rows[8]["crosses_nodes"] and rows[16]["crosses_nodes"]
        assert rows[16]["tflops_per_gpu"] < rows[8]["tflops_per_gpu"] < rows[1]["tflops_per_gpu"]
        assert rows[16]["tp_share"] > 1.8 * rows[8]["tp_share"]
        assert not rows[1]["fits"] and rows[8]["fits"]
    with pytest.raises(ValueError, match="tps"):
        mp.tp_scan(tps=[])
    with pytest.raises(ValueError, match="pp"):
        mp.tp_scan(pp=0)


def test_sequence_parallel_same_time_less_memory():
    sp = mp.sequence_parallel_comparison("gpt3-175b", "dgx-a100", tp=8)
    assert sp["bytes"] == 50_331_648
    assert sp["rs_ag_s"] == pytest.approx(sp["all_reduce_s"])
    assert sp["activations_with_sp"] < 0.4 * sp["activations_without_sp"]
    with pytest.raises(ValueError, match="tp"):
        mp.sequence_parallel_comparison(tp=1)


# ---------------------------------------------------------------- pipeline schedules

@pytest.mark.parametrize("p,m,schedule,v", [(4, 8, "gpipe", 1), (4, 8, "1f1b", 1), (8, 32, "1f1b", 1),
                                            (4, 8, "1f1b", 2), (8, 32, "1f1b", 2), (8, 32, "1f1b", 4),
                                            (16, 64, "1f1b", 3), (8, 3, "1f1b", 1), (1, 5, "1f1b", 1)])
def test_measured_bubble_equals_the_formula(p, m, schedule, v):
    s = mp.pipeline_schedule(p, m, schedule, interleave=v)
    assert s.formula == pytest.approx((p - 1) / (v * m))
    assert s.bubble_fraction == pytest.approx(s.formula, abs=1e-9)
    assert s.makespan == pytest.approx((m + (p - 1) / v) * 3.0)
    assert len(s.ops) == 2 * p * m * v
    # every micro-batch's backward on a device follows its forward there
    for o in s.ops:
        if o.kind == "B":
            fwd = next(x for x in s.ops if x.kind == "F" and (x.device, x.chunk, x.micro_batch) ==
                       (o.device, o.chunk, o.micro_batch))
            assert fwd.end <= o.start + 1e-12


def test_memory_in_flight_gpipe_1f1b_interleaved():
    assert mp.pipeline_schedule(4, 8, "gpipe").peak_in_flight == [8, 8, 8, 8]
    assert mp.pipeline_schedule(4, 8, "1f1b").peak_in_flight == [4, 3, 2, 1]
    # interleaved: p + (p-1)/v on the first stage, as course_lib.parallel assumes
    assert mp.pipeline_schedule(8, 32, "1f1b", 2).peak_in_flight[0] == pytest.approx(8 + 7 / 2)


def test_sends_and_send_time():
    one = mp.pipeline_schedule(4, 8, "1f1b")
    assert one.sends == 2 * (4 - 1) * 8
    two = mp.pipeline_schedule(4, 8, "1f1b", interleave=2)
    assert two.sends == 2 * (4 * 2 - 1) * 8
    slow = mp.pipeline_schedule(4, 8, "1f1b", send_time=0.5)
    assert slow.makespan > one.makespan
    assert mp.pipeline_schedule(1, 4, send_time=5).makespan == pytest.approx(12.0)


def test_pipeline_schedule_validates():
    with pytest.raises(ValueError, match="stages"):
        mp.pipeline_schedule(0, 4)
    with pytest.raises(ValueError, match="micro_batches"):
        mp.pipeline_schedule(4, 0)
    with pytest.raises(ValueError, match="schedule"):
        mp.pipeline_schedule(4, 8, "zero-bubble")
    with pytest.raises(ValueError, match="interleave"):
        mp.pipeline_schedule(4, 8, "gpipe", interleave=2)
    with pytest.raises(ValueError, match="micro_batches"):
        mp.pipeline_schedule(4, 6, "1f1b", interleave=2)
    with pytest.raises(ValueError, match="forward_time"):
        mp.pipeline_schedule(4, 8, forward_time=0)
    with pytest.raises(ValueError, match="send_time"):
        mp.pipeline_schedule(4, 8, send_time=-1)
    with pytest.raises(ValueError, match="stages x micro_batches"):
        mp.pipeline_schedule(256, 4096)


def test_schedule_drawings():
    ax = mp.draw_schedule(mp.pipeline_schedule(4, 8, "1f1b", 2))
    assert "interleaved" in ax.get_title()
    fig = mp.compare_schedules(4, 8, 2)
    assert len(fig.axes) == 3
    plt.close("all")
    with pytest.raises(ValueError, match="sched"):
        mp.draw_schedule("1f1b")
    with pytest.raises(ValueError, match="time_unit"):
        mp.draw_schedule(mp.pipeline_schedule(2, 2), time_unit=0)
    with pytest.raises(ValueError, match="interleave"):
        mp.compare_schedules(interleave=1)


def test_stage_timing_from_parallel_estimate():
    st = mp.stage_timing("gpt3-175b", "dgx-a100", stages=16, tp=8)
    assert st["backward_s"] == pytest.approx(2 * st["forward_s"])
    assert st["crosses_nodes"] and st["gpus"] == 128
    assert st["send_bytes"] == pytest.approx(2048 * 12288 * 2 / 8)  # scatter/gather across nodes
    assert st["link_bandwidth"] == pytest.approx(25e9 * 0.94)
    with pytest.raises(ValueError, match="stages"):
        mp.stage_timing(stages=1)


# ---------------------------------------------------------------- ranks and links

def test_megatron_rank_order_round_trip():
    t, p, d = 8, 16, 8
    for rank in (0, 7, 8, 63, 64, 1023):
        c = mp.megatron_coordinates(rank, t, p, d)
        assert c["pp_rank"] * t * d + c["dp_rank"] * t + c["tp_rank"] == rank
    assert mp.megatron_coordinates(64, t, p, d) == {"tp_rank": 0, "dp_rank": 0, "pp_rank": 1}
    with pytest.raises(ValueError, match="rank"):
        mp.megatron_coordinates(1024, t, p, d)
    with pytest.raises(ValueError, match="tp"):
        mp.megatron_coordinates(0, 0, p, d)


def test_rank_map_dp_and_pp_partners_share_a_local_index():
    ranks = mp.rank_map(8, 4, 4, gpus_per_node=8)
    assert len(ranks) == 128
    by_rank = {r["rank"]: r for r in ranks}
    for r in ranks:  # DP partner (stride t) and PP partner (stride t d): another node, same GPU index = same rail
        for stride in (8, 32):
            other = by_rank.get(r["rank"] + stride)
            if other:
                assert other["local"] == r["local"] and other["node"] != r["node"]
    with pytest.raises(ValueError, match="gpus_per_node"):
        mp.rank_map(2, 2, 2, gpus_per_node=0)


def test_group_links_put_tp_on_nvlink_and_dp_pp_on_the_rails():
    g = mp.group_links("dgx-a100", tp=8, pp=16, dp=8)
    assert not g["tensor parallel"]["crosses_nodes"] and "NVLink" in g["tensor parallel"]["link"]
    assert g["data parallel"]["crosses_nodes"] and g["pipeline"]["crosses_nodes"]
    assert g["pipeline"]["stride"] == 64
    assert mp.group_links("dgx-a100", 8, 1, 1)["pipeline"]["link"] == "(no group)"


def test_draw_rank_map():
    ax = mp.draw_rank_map(4, 2, 4, "dgx-a100")
    assert "Megatron rank order" in ax.get_title()
    plt.close("all")
    with pytest.raises(ValueError, match="at most 8 nodes"):
        mp.draw_rank_map(8, 16, 8)


# ---------------------------------------------------------------- traffic

def test_traffic_rows_bytes_sent_per_gpu(pub):
    rows = {r["kind"]: r for r in mp.traffic_rows(pub)}
    tp = rows["tensor parallel"]
    assert tp["calls"] == 6 * 6 * 192
    assert tp["sent_per_gpu"] == pytest.approx(6912 * 50_331_648 * 2 * 7 / 8)
    pipe = rows["pipeline send/recv"]
    assert pipe["sent_per_gpu"] == pytest.approx(pipe["calls"] * pipe["bytes_per_call"])
    split = mp.sent_by_link(pub)
    assert split["inside"] == pytest.approx(tp["sent_per_gpu"])
    assert split["across"] / split["total"] < 0.02
    with pytest.raises(ValueError, match="est"):
        mp.traffic_rows({"traffic": []})


def test_show_functions_render(pub):
    mp.show_traffic(pub)
    mp.show_validation()
    mp.show_plan(parallel.plan("megatron-1.7b", "dgx-a100", gpus=16, global_batch=64))
    with pytest.raises(ValueError, match="plan_"):
        mp.show_plan(pub)


# ---------------------------------------------------------------- the grid

def test_layout_grid_cells_and_reasons():
    grid = mp.layout_grid("gpt3-175b", "dgx-a100", 1024, 192, tps=(1, 8, 64), pps=(16, 5))
    assert grid["invalid"][(64, 16)].startswith("TP 64 does not divide")
    assert grid["invalid"][(8, 5)].startswith("PP 5 does not divide")
    e = grid["cells"][(8, 16)]
    assert (e.dp, e.micro_batches, e.global_batch) == (8, 192, 1536)
    assert e.bubble_fraction == pytest.approx(15 / 192)
    assert not grid["cells"][(1, 16)].fits
    assert mp.best_fitting(grid) is e
    with pytest.raises(ValueError, match="grid"):
        mp.best_fitting([])
    with pytest.raises(ValueError, match="tps"):
        mp.layout_grid(tps=())
    with pytest.raises(ValueError, match="sequence_parallel"):
        mp.layout_grid(sequence_parallel="yes")


def test_nothing_fits_on_too_few_gpus():
    grid = mp.layout_grid("gpt3-175b", "dgx-a100", 8, 8, tps=(1, 2, 4, 8), pps=(1, 2, 4, 8))
    assert mp.best_fitting(grid) is None


# ---------------------------------------------------------------- validation and published statements

def test_validation_rows_and_efficiency_to_match():
    rows = mp.validation_rows()
    assert rows and all("ZeRO-3" not in r["config"] for r in rows)
    assert len(mp.validation_rows(include_zero3=True)) > len(rows)
    gpt3 = next(r for r in rows if r["id"] == "mlm21-gpt3-1024")
    assert gpt3["measured"] == 140 and 0.85 < gpt3["ratio"] < 1.15   # the GEMM-shape compute, fit on Table 1
    eff = mp.efficiency_to_match("mlm21-gpt3-1024")
    assert parallel.assumption("gpu_efficiency") < eff < 0.7
    ratio = next(r["ratio"] for r in parallel.validation_table(gpu_efficiency=eff) if r["id"] == "mlm21-gpt3-1024")
    assert ratio == pytest.approx(1.0, abs=1e-3)
    ax = mp.plot_validation(rows)
    assert ax.get_xlabel()
    plt.close("all")
    with pytest.raises(ValueError, match="case_id"):
        mp.efficiency_to_match("no-such-case")
    with pytest.raises(ValueError, match="include_zero3"):
        mp.validation_rows(include_zero3="no")
    with pytest.raises(ValueError, match="rows"):
        mp.plot_validation([])


def test_published_claims_have_sources():
    data = mp.published_claims()
    for c in data["claims"]:
        assert c["where"] and datafiles.source(c["source"])["url"].startswith("https://")
    assert mp.claim("tp-allreduces-per-layer")["value"] == 4
    assert mp.claim("tp-best-at-node-size")["value"] == hardware.system("dgx-a100").gpus_per_node
    with pytest.raises(ValueError, match="claim_id"):
        mp.claim("tp-is-free")


def test_plot_tp_crossing():
    fig = mp.plot_tp_crossing("gpt3-175b", ("dgx-a100",), pp=16, dp=8, micro_batches=192)
    assert len(fig.axes) == 2
    plt.close("all")
    with pytest.raises(ValueError, match="systems"):
        mp.plot_tp_crossing(systems=())


# ---------------------------------------------------------------- exercises

def test_exercise_answers_agree_with_the_library(pub):
    m = grading.expected("07.1")  # the fewest micro-batches, a multiple of 8, that keep p = 8's bubble at 5%
    assert m % 8 == 0 and mp.pipeline_schedule(8, m).bubble_fraction <= 0.05 < mp.pipeline_schedule(8, m - 8).bubble_fraction
    assert mp.pipeline_schedule(8, m, interleave=2).bubble_fraction == pytest.approx(mp.pipeline_schedule(8, m).bubble_fraction / 2)
    assert checks.evaluate("07.3", mp.tp_allreduce_bytes("llama3-405b")).correct
    h100 = hardware.nvlink(4).per_direction
    assert checks.evaluate("07.5", 2 * 7 / 8 * mp.tp_allreduce_bytes("llama3-405b") / h100 * 1e6).correct
    none = parallel.estimate("gpt3-175b", "dgx-a100", **{**GPT3_LAYOUT, "recompute": "none"})
    assert checks.evaluate("07.4", mp.traffic_rows(none)[0]["calls"]).correct
    assert not checks.evaluate("07.4", mp.traffic_rows(pub)[0]["calls"]).correct  # 6912: recomputation
    fits = {letter: parallel.estimate("gpt3-175b", "dgx-a100", gpus=512, tp=t, pp=p, global_batch=512).fits
            for letter, (t, p) in {"A": (8, 2), "B": (4, 8), "C": (8, 8), "D": (1, 8)}.items()}
    assert [k for k, v in fits.items() if v] == [grading.expected("07.6")]


def test_exercise_hints_catch_common_slips():
    assert "p - 1" in checks.evaluate("07.1", 160).message and "multiple" in checks.evaluate("07.1", 140).message
    assert "not for free" in checks.evaluate("07.2", "B").message
    assert "TP degree" in checks.evaluate("07.3", 268_435_456 / 8).message
    assert "8,192" in checks.evaluate("07.3", 2048 * 16384 * 2).message
    assert "recomputation" in checks.evaluate("07.4", 6912).message
    us = grading.expected("07.5")
    assert "bidirectional" in checks.evaluate("07.5", us / 2).message
    assert "already" in checks.evaluate("07.5", us * 2).message
    assert "seconds" in checks.evaluate("07.5", us * 1e-6).message
    assert "milliseconds" in checks.evaluate("07.5", us * 1e-3).message


# ---------------------------------------------------------------- explorers

def test_layout_explorer_readout_follows_the_layout_and_the_system():
    box = mp.layout_explorer()
    assert "TP8 x PP16 x DP8" in box.readout and "fits" in box.readout
    assert "does not divide the 96 heads" in box.render(tp=64)
    assert "TP16 x PP16" in box.render(tp=16, nic_gbit_s=25.0)
    box.controls["system"].value = "dgx-h100"  # resets the link sliders to the catalog's NDR and NVLink 4
    assert box.controls["nic_gbit_s"].value == pytest.approx(400)
    assert box.controls["nvlink_gb_s"].value == pytest.approx(450)
    plt.close("all")


def test_schedule_explorer_readout_follows_the_schedule():
    box = mp.schedule_explorer()
    assert "1F1B" in box.readout and "bubble" in box.readout
    assert "interleaved" in box.render(interleave=2)
    assert "multiple" in box.render(micro_batches=6)  # not a multiple of 4 stages
    assert "GPipe" in box.render(schedule="gpipe", interleave=1)
    plt.close("all")


def test_chapters_validate():
    with pytest.raises(ValueError, match="gpus"):
        mp.layout_explorer(gpus=1000)
    with pytest.raises(ValueError, match="tp"):
        mp.layout_explorer(tp=3)
    with pytest.raises(ValueError, match="model_id"):
        mp.layout_explorer(model_id="llama2-7b")
    with pytest.raises(ValueError, match="micro_batches"):
        mp.layout_explorer(micro_batches=7)
    with pytest.raises(ValueError, match="stages"):
        mp.schedule_explorer(stages=3)
    with pytest.raises(ValueError, match="interleave"):
        mp.schedule_explorer(interleave=8)
    with pytest.raises(ValueError, match="link_gb_s"):
        mp.schedule_explorer(link_gb_s=0)
