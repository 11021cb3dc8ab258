"""Tests for the training precision recipes of course_lib.parallel (BF16, FP8, MXFP8)."""
import pytest

from course_lib import datafiles, hardware, parallel as P
from course_lib.__main__ import main

KW = dict(gpus=64, tp=8, pp=1, global_batch=64, recompute="selective", sequence_parallel=True)


def test_every_gpu_row_states_its_fp8_peaks_and_memory_bandwidth():
    sources = datafiles.bibliography()
    for row in hardware.catalog()["gpus"]:
        assert {"fp8_dense_tflops", "mxfp8_dense_tflops", "hbm_tb_s", "fp8_note"} <= set(row), row["id"]
        assert row["source"] in sources and row["fp8_note"]
        for key in ("fp8_dense_tflops", "mxfp8_dense_tflops"):
            if row[key] is not None:   # an FP8 tensor core runs at twice its BF16 rate on every GPU listed
                assert row[key] == pytest.approx(2 * row["bf16_dense_tflops"], rel=0.02), row["id"]
        g = hardware.gpu(row["id"])
        assert g.peak_flops("bf16") == g.bf16_flops and g.hbm_bytes_per_s > 0


def test_fp8_runs_the_linear_layers_at_the_fp8_peak_and_the_rest_at_bf16():
    kw = dict(KW, gpu_efficiency=0.5)   # one fraction of peak for every product: the FLOP split alone
    bf16 = P.estimate("llama3-70b", "dgx-h100", **kw)
    fp8 = P.estimate("llama3-70b", "dgx-h100", precision="fp8", **kw)
    L = P.layout("llama3-70b", "dgx-h100", precision="fp8", **kw)
    parts = P.training_flops_parts("llama3-70b", 64, "selective")
    gpu = hardware.gpu("h100-sxm")
    expected = (parts["linear"] / gpu.fp8_flops + (parts["attention"] + parts["logits"]) / gpu.bf16_flops) / \
        (64 * L.gpu_efficiency)
    assert fp8.compute_s == pytest.approx(expected, rel=1e-9)
    assert bf16.compute_s / 2 < fp8.compute_s < bf16.compute_s   # attention and the output layer stay BF16
    assert sum(parts.values()) == pytest.approx(P.training_flops("llama3-70b", 64, "selective"), rel=1e-12)
    # priced from the GEMM shapes (the default), FP8 gains less than 2x too: casts, attention and norms stay
    g16, g8 = (P.estimate("llama3-70b", "dgx-h100", precision=p, **KW).compute_s for p in ("bf16", "fp8"))
    assert g16 / 2 < g8 < g16


def test_fp8_memory_keeps_weight_copies_and_saves_fp8_linear_inputs():
    bf16 = P.estimate("llama3-70b", "dgx-h100", **KW)
    fp8 = P.estimate("llama3-70b", "dgx-h100", precision="fp8", **KW)
    mx = P.estimate("llama3-70b", "dgx-b200", precision="mxfp8", **KW)
    L = P.layout("llama3-70b", "dgx-h100", precision="fp8", **KW)
    assert bf16.memory["fp8_weights"] == 0
    assert fp8.memory["fp8_weights"] == pytest.approx(P.recipe("fp8")["fp8_weight_bytes_per_linear_param"]
                                                      * L.stage_linear_params())
    assert fp8.memory["activations"] < bf16.memory["activations"]
    assert {k: fp8.memory[k] for k in ("weights", "gradients", "optimizer")} == \
        {k: bf16.memory[k] for k in ("weights", "gradients", "optimizer")}   # BF16 weights, fp32 master and Adam kept
    assert mx.memory["fp8_weights"] > fp8.memory["fp8_weights"]          # its block scales
    m = P.model("llama3-70b")
    none = P.activation_bytes_per_layer(m, 1, 8, "selective", True)
    one = P.activation_bytes_per_layer(m, 1, 8, "selective", True, saved_linear_input_bytes=1.0)
    sbh = m.seq_len * m.hidden
    assert none - one == pytest.approx(sbh * (2 + (1 + m.ffn / m.hidden)) / 8)


def test_a_gpu_without_the_peak_is_refused_by_name(capsys):
    with pytest.raises(ValueError, match="^precision must be one this GPU has a peak for .*A100.*got fp8$"):
        P.estimate("llama3-70b", "dgx-a100", precision="fp8", **KW)
    with pytest.raises(ValueError, match="^precision"):
        P.plan("llama3-8b", "dgx-h100", gpus=8, global_batch=8, precision="mxfp8")
    with pytest.raises(ValueError, match="^fp8_dispatch"):
        P.estimate("llama3-70b", "dgx-h100", precision="fp8", fp8_dispatch=True, **KW)
    assert main(["plan", "--system", "dgx-a100", "--gpus", "64", "--tp", "8", "--precision", "fp8"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --precision: precision must") and "\n" not in err.strip()


def test_fp8_dispatch_moves_one_byte_per_value_one_way():
    kw = dict(gpus=64, global_batch=64, seq_len=4096, recompute="selective", ep=8, precision="fp8")
    bf16 = [t for t in P.estimate("mixtral-8x7b", "dgx-h100", **kw).traffic if t.kind.startswith("expert")][0]
    fp8 = [t for t in P.estimate("mixtral-8x7b", "dgx-h100", fp8_dispatch=True, **kw).traffic
           if t.kind.startswith("expert")][0]
    assert fp8.bytes_per_call == pytest.approx(0.75 * bf16.bytes_per_call) and fp8.time_s < bf16.time_s


def test_plan_cli_precision(capsys):
    assert main(["plan", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2",
                 "--global-batch", "64", "--precision", "fp8", "--recompute", "selective"]) == 0
    out = capsys.readouterr().out
    assert ", FP8" in out and "FP8 weight copies" in out and "linear layers at the dense FP8 peak 1,979" in out
