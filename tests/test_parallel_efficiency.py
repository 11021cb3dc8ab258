"""Compute efficiency that follows the GEMM: shapes, the fit on named fit runs, checks and ranges."""
import importlib.util
from pathlib import Path

import pytest

from course_lib import hardware, parallel as P
from course_lib.__main__ import main
from course_lib.parallel import efficiency

ROOT = Path(__file__).resolve().parents[1]


def _fit_script():
    spec = importlib.util.spec_from_file_location("fit_ce", ROOT / "scripts" / "fit_compute_efficiency.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_layer_gemms_follow_the_model_and_the_layout():
    m = P.model("llama3-70b")
    g = P.layer_gemms(m, tp=8, cp=1, micro_batch=2)["dense"]
    T = 2 * 8192
    assert g[0] == (T, 8192, (8192 + 8 * 256) / 8, 1)             # QKV: 64 query heads, 8 KV heads of 128
    assert g[2] == (T, 8192, 2 * 28672 / 8, 1) and g[3] == (T, 28672 / 8, 8192, 1)
    q = P.layer_gemms(P.model("qwen3-30b-a3b"), ep=8)["moe"]
    assert q[-1] == (4096 * 8 * 8 / 128, 768, 2048, 128 / 8)       # each of 16 local experts sees 2048 tokens


def test_efficiency_follows_the_gemm_shape_and_precision():
    gpu = hardware.gpu("h100-sxm")
    frac = []
    for mid in ("megatron-1.7b", "llama3-405b"):
        m = P.model(mid)
        x = P.layer_seconds(m, gpu)["dense"]
        frac.append((x["gemm"] + x["attention"]) / (x["gemm"] + x["attention"] + x["elementwise"] / 3))
    assert frac[0] < frac[1]                                       # elementwise work weighs more on a narrow layer
    thin = efficiency._gemm_s(64, 8192, 8192, 1, gpu.bf16_flops, 0.7, gpu.hbm_bytes_per_s, 2, False)
    wide = efficiency._gemm_s(8192, 8192, 8192, 1, gpu.bf16_flops, 0.7, gpu.hbm_bytes_per_s, 2, False)
    assert thin / 64 > 2 * wide / 8192                            # a thin product is memory-bound
    with pytest.raises(ValueError, match="^gpu must state its HBM"):
        P.layer_seconds(m, hardware.GPU("x", "X", 1e9, 1e14, "none"))


def test_the_stored_fit_is_what_a_refit_gives_on_the_fit_runs_only():
    fit = _fit_script()
    assert {c["id"] for c in fit.fit_cases()} == {c["id"] for c in P.published()["cases"] if c.get("role") == "fit"}
    result = fit.fit()
    stored = P.published()["compute_efficiency"]
    assert result["constants"] == stored["constants"] and result["fit"] == stored["fit"]
    assert stored["fit"]["ratio_low"] <= 1 <= stored["fit"]["ratio_high"]


def test_h200_layer_measurements_check_the_function_and_set_nothing():
    rows = P.layer_efficiency_measured()
    assert all(0.75 < r["predicted_over_measured"] < 1.25 for r in rows)
    assert rows[0]["predicted_fraction"] < rows[-1]["predicted_fraction"]   # the trend with width


def test_validation_roles_follow_the_source_and_ranges_come_from_test_runs():
    rows = P.training_validation_table()
    roles = {r["role"] for r in rows}
    assert roles == {"fit", "informed", "test"}
    for r in rows:
        if r["source"] in ("torchtitan-perf-h100", "megatron-2021"):
            assert r["role"] != "test"                            # a fit source's runs are never test runs
    e = P.estimate("llama3-70b", "dgx-h100", gpus=64, tp=8, pp=2, global_batch=64)
    r = P.training_range(e)
    spread = P.regime_spread("dense BF16")
    tests = [x["ratio"] for x in rows if x["role"] == "test" and x["regime"] == "dense BF16"]
    assert spread["cases"] == len(tests) >= 2 and r["low_s"] == pytest.approx(e.step_time_s * min(tests))
    assert r["compute_low_s"] <= r["compute_high_s"]
    moe = P.training_range(P.estimate("mixtral-8x7b", "dgx-h100", gpus=64, ep=8, global_batch=64, seq_len=4096,
                                      precision="fp8"))
    assert moe["test_known"] and moe["test_own_regime"] == "MoE FP8" and moe["test_regime"] == "all"


def test_plan_prints_both_ranges(capsys):
    assert main(["plan", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2",
                 "--global-batch", "64"]) == 0
    out = capsys.readouterr().out
    assert "range (published training runs): compute priced by the GEMM-shape fit" in out
    assert main(["plan", "--validate"]) == 0
    out = capsys.readouterr().out
    assert "test only" in out and "fit residuals" in out and "check (sets nothing)" in out
