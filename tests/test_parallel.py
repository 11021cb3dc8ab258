"""Tests for course_lib.parallel: formulas, memory, traffic, step time, planner, validation."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from course_lib import costmodel, datafiles, parallel as P

GPT3 = P.model("gpt3-175b")


def test_parameter_counts_match_published_sizes():
    assert GPT3.params == pytest.approx(175e9, rel=0.01)
    assert P.model("megatron-1008b").params == pytest.approx(1008e9, rel=0.005)
    assert P.model("megatron-145.6b").params == pytest.approx(145.6e9, rel=0.005)
    assert P.model("llama2-70b").params == pytest.approx(69e9, rel=0.02)
    assert P.model("llama3-8b").params == pytest.approx(8.0e9, rel=0.03)


def test_every_model_and_case_cites_a_source():
    sources = datafiles.bibliography()
    for row in P.models_data()["models"]:
        assert row["source"] in sources
    pub = P.published()
    for case in pub["cases"]:
        assert case["source"] in sources and case["where"]
    for row in pub["model_assumptions"].values():
        assert row["derivation"]


@pytest.mark.parametrize("recompute, coeff, vocab_div", [("none", 72, 12), ("full", 96, 16)])
def test_training_flops_closed_forms(recompute, coeff, vocab_div):
    m = P.Transformer("gpt", layers=96, hidden=12288, heads=96, vocab=51200, seq_len=2048)
    B, s, l, h, V = 1536, 2048, 96, 12288, 51200
    expected = coeff * B * s * l * h * h * (1 + s / (6 * h) + V / (vocab_div * l * h))
    assert P.training_flops(m, B, recompute) == pytest.approx(expected, rel=1e-12)


def test_selective_recompute_adds_only_attention_matmuls():
    none = P.training_flops(GPT3, 8, "none")
    sel = P.training_flops(GPT3, 8, "selective")
    assert sel - none == pytest.approx(8 * 4 * GPT3.seq_len ** 2 * GPT3.hidden * GPT3.layers)


def test_activation_memory_korthikanti():
    s, b, h, a = 2048, 1, 12288, 96
    sbh = s * b * h
    assert P.activation_bytes_per_layer(GPT3, 1, 1) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert P.activation_bytes_per_layer(GPT3, 1, 8) == pytest.approx(sbh * (10 + 24 / 8 + 5 * a * s / (h * 8)))
    assert P.activation_bytes_per_layer(GPT3, 1, 8, sequence_parallel=True) == pytest.approx(
        sbh / 8 * (34 + 5 * a * s / h))
    assert P.activation_bytes_per_layer(GPT3, 1, 8, "selective", True) == pytest.approx(34 * sbh / 8)
    assert P.activation_bytes_per_layer(GPT3, 1, 8, "full", True) == pytest.approx(2 * sbh / 8)


@pytest.mark.parametrize("zero, total", [(0, 120e9), (1, 31.4e9), (2, 16.6e9), (3, 1.88e9)])
def test_zero_paper_memory(zero, total):
    assert P.model_state_bytes(7.5e9, 64, zero)["total"] == pytest.approx(total, rel=0.01)


def test_estimate_gpt3_1024_a100_is_plausible():
    e = P.estimate("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536)
    assert e.fits and e.dp == 8 and e.micro_batches == 192
    assert e.bubble_fraction == pytest.approx(15 / 192)
    assert e.step_time_s == pytest.approx(sum(e.breakdown().values()), rel=1e-9)
    assert 100 < e.tflops_per_gpu < 180
    assert e.mfu < e.hfu < 1
    kinds = {t.kind: t for t in e.traffic}
    assert not kinds["tensor parallel"].crosses_nodes
    assert kinds["pipeline send/recv"].crosses_nodes and kinds["data parallel grads"].crosses_nodes
    text = e.summary()
    assert "TP8 x PP16 x DP8" in text and "MFU" in text
    assert e.to_dict()["layout"] == "TP8 x PP16 x DP8"


def test_tensor_parallel_leaving_the_node_costs_more():
    kw = dict(gpus=512, pp=8, global_batch=512, recompute="full")
    inside = P.estimate("gpt3-175b", "dgx-a100", tp=8, **kw)
    outside = P.estimate("gpt3-175b", "dgx-a100", tp=16, **kw)
    assert outside.traffic[0].crosses_nodes and not inside.traffic[0].crosses_nodes
    share_in = inside.tp_exposed_s / inside.step_time_s
    share_out = outside.tp_exposed_s / outside.step_time_s
    assert share_out > 1.5 * share_in
    assert outside.tflops_per_gpu < inside.tflops_per_gpu


def test_pcie_box_tp_is_slower_than_nvswitch():
    kw = dict(gpus=8, tp=8, pp=1, global_batch=8, recompute="full")
    nv = P.estimate("megatron-7.5b", "dgx-a100", **kw)
    pcie = P.estimate("megatron-7.5b", "pcie-8gpu", **kw)
    assert pcie.tp_exposed_s > 5 * nv.tp_exposed_s


def test_bubble_shrinks_with_micro_batches_and_interleaving():
    base = dict(gpus=128, tp=8, pp=16, recompute="full")
    small = P.estimate("gpt3-175b", "dgx-a100", global_batch=16, **base)
    large = P.estimate("gpt3-175b", "dgx-a100", global_batch=128, **base)
    inter = P.estimate("gpt3-175b", "dgx-a100", global_batch=128, interleave=2, **base)
    assert small.bubble_fraction == pytest.approx(15 / 16)
    assert large.bubble_fraction == pytest.approx(15 / 128)
    assert inter.bubble_fraction == pytest.approx(15 / 256)
    assert small.tflops_per_gpu < large.tflops_per_gpu < inter.tflops_per_gpu
    assert inter.memory["activations"] > large.memory["activations"]


def test_dp_efficiency_declines_as_dp_grows_at_fixed_batch():
    tf = [P.estimate("gpt3-175b", "dgx-a100", gpus=g, tp=8, pp=12, global_batch=1536, dp_overlap=False)
          .tflops_per_gpu for g in (384, 768, 1536)]
    assert tf[0] > tf[1] > tf[2]


def test_zero_stages_reduce_memory_and_zero3_adds_traffic():
    kw = dict(gpus=64, tp=1, pp=1, global_batch=64, recompute="full")
    mems = [P.estimate("megatron-7.5b", "dgx-a100", zero=z, **kw).memory["total"] for z in range(4)]
    assert mems == sorted(mems, reverse=True)
    z3 = P.estimate("megatron-7.5b", "dgx-a100", zero=3, **kw)
    z0 = P.estimate("megatron-7.5b", "dgx-a100", zero=0, **kw)
    assert sum(t.time_s for t in z3.traffic) > 1.4 * sum(t.time_s for t in z0.traffic)


def test_dp_overlap_hides_communication():
    kw = dict(gpus=256, tp=8, pp=1, global_batch=1024)
    assert (P.estimate("megatron-18.4b", "dgx-a100", dp_overlap=True, **kw).dp_exposed_s
            < P.estimate("megatron-18.4b", "dgx-a100", dp_overlap=False, **kw).dp_exposed_s)


def test_does_not_fit_is_reported():
    e = P.estimate("gpt3-175b", "dgx-a100", gpus=8, tp=8, pp=1, global_batch=8)
    assert not e.fits and "DOES NOT FIT" in e.summary()


@pytest.mark.parametrize("kwargs, name", [
    (dict(tp=5), "tp"), (dict(tp=8, pp=7), "pp"), (dict(global_batch=100), "global_batch"),
    (dict(zero=-1), "zero"), (dict(zero=4), "zero"), (dict(recompute="some"), "recompute"),
    (dict(gpu_efficiency=1.5), "gpu_efficiency"), (dict(interleave=5, pp=2), "interleave"),
    (dict(micro_batch=0), "micro_batch"), (dict(dp=3), "dp"),
])
def test_bad_inputs_name_the_parameter(kwargs, name):
    args = dict(gpus=64, tp=8, pp=1, global_batch=64)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        P.estimate("gpt3-175b", "dgx-a100", **args)


def test_bad_model_and_system():
    with pytest.raises(ValueError, match="model_id"):
        P.model("gpt-5")
    with pytest.raises(ValueError, match="system must be one of"):
        P.estimate("gpt3-175b", "no-such", gpus=8, global_batch=8)
    with pytest.raises(ValueError, match="heads"):
        P.Transformer("x", layers=2, hidden=100, heads=3, vocab=10, seq_len=8)


def test_planner_gpt3_1024_a100():
    result = P.plan("gpt3-175b", "dgx-a100", gpus=1024, global_batch=1536)
    best = result.best
    assert best.fits and best.tp <= 8 and best.tp * best.pp * best.dp == 1024
    times = [e.step_time_s for e in result.ranked]
    assert times == sorted(times)
    assert result.explanation and "stays inside" in result.explanation[1]
    assert any(e.tp > 8 for e in result.ranked)  # cross-node TP considered and ranked lower
    assert min(e.step_time_s for e in result.ranked if e.tp > 8) > best.step_time_s
    d = result.to_dict(top=3)
    assert len(d["top"]) == 3 and d["best"]["layout"] == best.layout
    assert "Why the winner wins" in result.summary()


def test_planner_reports_nothing_fits():
    result = P.plan("gpt3-175b", "consumer-4090-pcie", gpus=2, global_batch=2)
    assert result.ranked == [] and "no layout fits" in result.explanation[0]
    with pytest.raises(ValueError):
        result.best


def test_planner_validates():
    with pytest.raises(ValueError, match="global_batch"):
        P.plan("gpt3-175b", "dgx-a100", gpus=64, global_batch=0)
    with pytest.raises(ValueError, match="zero_stages"):
        P.plan("gpt3-175b", "dgx-a100", gpus=64, global_batch=64, zero_stages=(5,))


def test_validation_table_relative_effects():
    rows = {r["id"]: r for r in P.validation_table()}
    for key in ("zero20-fig1-baseline", "zero20-fig1-os", "zero20-fig1-os-g", "zero20-fig1-os-g-p"):
        assert rows[key]["ratio"] == pytest.approx(1.0, abs=0.01)
    # absolute level within 25% for the Megatron PTD-P cases (one untuned efficiency for all)
    for key, r in rows.items():
        if key.startswith("mlm21") and "zero3" not in key:
            assert 0.7 < r["ratio"] < 1.3, key
    # the decline with data-parallel size at fixed batch: measured 153 -> 149 -> 141
    pred = [rows[f"mlm21-t2-ptdp-175b-{g}"]["predicted"] for g in (384, 768, 1536)]
    meas = [rows[f"mlm21-t2-ptdp-175b-{g}"]["measured"] for g in (384, 768, 1536)]
    for i in (1, 2):
        assert pred[i] / pred[0] == pytest.approx(meas[i] / meas[0], abs=0.03)
    text = P.validation_summary()
    assert "mlm21-gpt3-1024" in text


def test_uses_the_real_costmodel():
    # the time of a TP all-reduce comes from costmodel.collective_time on the group's link
    link = P.group_link("dgx-a100", 8, 1)
    assert not link.crosses_nodes
    expected = costmodel.launch_latency() + costmodel.collective_time("all_reduce", 1e8, 8, link.bandwidth,
                                                                      link.latency, "ring")
    assert P._coll("all_reduce", 1e8, 8, link) == pytest.approx(expected)
    across = P.group_link("dgx-a100", 16, 8)
    assert across.crosses_nodes and across.bandwidth < link.bandwidth


def test_one_cross_node_price_for_data_and_tensor_parallelism():
    # a 2 GB all-reduce over 64 DGX H100 nodes: the data-parallel and tensor-parallel paths ask one function
    n, ranks = 2e9, 64 * 8
    one = P.group_collective_time("dgx-h100", "all_reduce", n, ranks)
    assert P.cross_node_all_reduce_time("dgx-h100", n, ranks) == one
    ring_or_tree = costmodel.predict("all_reduce", n, "dgx-h100", nodes=64, algorithm=("ring", "tree"))
    assert one == pytest.approx(float(ring_or_tree.time_s[0]))
    # predict's own default may pick NVLS, which the in-node ring price (_coll) leaves out: only that differs
    default = costmodel.predict("all_reduce", n, "dgx-h100", nodes=64)
    assert default.algorithms[0] == "nvls" and default.time_s[0] < one
    a100 = costmodel.predict("all_reduce", n, "dgx-a100", nodes=64)  # no NVLink SHARP: the same price
    assert P.group_collective_time("dgx-a100", "all_reduce", n, ranks) == pytest.approx(float(a100.time_s[0]))
    # ZeRO-1's reduce-scatter + all-gather across nodes costs what DDP's all-reduce does, within 5%
    rs_ag = sum(P.group_collective_time("dgx-h100", c, n, ranks) for c in ("reduce_scatter", "all_gather"))
    assert rs_ag == pytest.approx(one, rel=0.05)


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_data_parallel_rows_use_the_group_price(zero):
    e = P.estimate("megatron-1.7b", "dgx-h100", gpus=64, global_batch=64, zero=zero, dp_overlap=False)
    rows = [t for t in e.traffic if t.crosses_nodes]
    assert rows
    for t in rows:
        one = sum(P.group_collective_time("dgx-h100", c, t.bytes_per_call, t.group_size) for c in t.collectives)
        assert t.time_s == pytest.approx(t.calls_per_step * one)


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4, 8]), mb=st.sampled_from([1, 2]),
       rc=st.sampled_from(list(P.RECOMPUTE)), zero=st.sampled_from([0, 1]))
def test_properties(tp, pp, mb, rc, zero):
    gpus = 256
    d = gpus // (tp * pp)
    e = P.estimate("megatron-39.1b", "dgx-a100", gpus=gpus, tp=tp, pp=pp, global_batch=d * mb * 8,
                   micro_batch=mb, recompute=rc, zero=zero)
    assert e.step_time_s > 0 and math.isfinite(e.step_time_s)
    assert e.step_time_s >= e.compute_s
    assert 0 < e.mfu <= e.hfu <= e.gpu_efficiency + 1e-9
    assert e.memory["total"] > 0


def test_resolve_model_takes_an_id_or_a_transformer():
    m = P.model("gpt3-175b")
    assert P.resolve_model(m) is m
    assert P.resolve_model("gpt3-175b") == m
    with pytest.raises(ValueError, match="model must be one of"):
        P.resolve_model("gpt-5")
    with pytest.raises(ValueError, match="model_id must be a catalog id"):
        P.resolve_model(42, name="model_id")


def test_estimate_is_its_phases():
    e = P.estimate("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536, zero=1)
    L = P.layout("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536, zero=1)
    assert P.memory_phase(L) == e.memory
    c = P.compute_phase(L)
    assert c.compute_s == e.compute_s
    notes = []
    tp, pp, dp = P.tp_phase(L, notes), P.pp_phase(L), P.dp_phase(L, c, notes)
    assert [t.kind for t in tp + pp + dp] == [t.kind for t in e.traffic]
    assert sum(t.exposed_s for t in dp) == e.dp_exposed_s
    assert dp[0].collectives == ("reduce_scatter", "all_gather") and tp[0].collectives == ("all_reduce",)
    # bytes each GPU sends: RS + AG of the gradients = 2 (d-1)/d x gradient bytes
    d = e.dp
    assert dp[0].sent_per_gpu == pytest.approx(2 * (d - 1) / d * dp[0].bytes_per_call)
    assert pp[0].collectives == () and pp[0].sent_per_gpu == pp[0].calls_per_step * pp[0].bytes_per_call


def test_pipeline_sends_use_the_systems_own_link_latency():
    # inside a PCIe box the stage-to-stage send pays the PCIe hop, not NVLink's
    e = P.estimate("megatron-1.7b", "pcie-8gpu", gpus=8, tp=1, pp=2, global_batch=8)
    send = next(t for t in e.traffic if t.kind == "pipeline send/recv")
    link = P.group_link("pcie-8gpu", 2, 4)
    one = costmodel.hop_latency("pcie") + send.bytes_per_call / link.bandwidth
    assert send.time_s == pytest.approx(send.calls_per_step * one)


def test_one_measured_layer_checks_both_compute_and_memory_formulas():
    """What chapter 07 says of the H200 layer measurements (benchmarks/device_compute_check.py): compute efficiency
    grows with the matrices past the one assumed constant, and fused attention keeps what the selective formula
    counts, far below the no-recomputation one."""
    from course_lib import parallel

    rows = parallel.layer_efficiency_measured()
    assert [r["model"] for r in rows][0] == "megatron-1.7b" and len(rows) == 6
    small, large = rows[0], rows[1:]
    assert small["fraction_low"] <= small["assumed"] * 1.05 and small["fraction_high"] >= small["assumed"] * 0.9
    assert all(r["over_assumed"] > 1.25 for r in large)
    assert all(r["fraction_high"] < r["matmul_fraction"] for r in rows)  # a layer never beats a plain big product
    assert all(0.85 < r["activation_over_selective"] < 1.15 for r in rows)
    assert all(r["activation_over_none"] < 0.35 for r in rows)
