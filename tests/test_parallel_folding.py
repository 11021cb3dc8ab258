"""MoE parallel folding (ETP x EP x expert DP over TP x CP x DP), MLA attention and DeepSeek-V3's layer layout."""
import pytest

from course_lib import parallel as P
from course_lib.__main__ import main

DSV3 = dict(gpus=2048, pp=16, global_batch=4096, zero=1, recompute="selective", sequence_parallel=True)


def test_mla_attention_parameters_follow_the_config():
    m = P.model("deepseek-v3")
    h, heads = 7168, 128
    expected = (h * 1536 + 1536 * heads * (128 + 64)          # query: down- and up-projection
                + h * (512 + 64) + 512 * heads * (128 + 128)  # K/V latent and shared RoPE key, then up-projection
                + heads * 128 * h + 1536 + 512)               # output projection, the two latent norms
    assert m._attention_params == expected
    assert m.attention_widths["kv"] == heads * (192 + 128) and m.attention_widths["latent"] == 1536 + 512 + 64
    assert m.params == pytest.approx(671e9, rel=0.01) and m.active_params == pytest.approx(37e9, rel=0.03)
    # attention FLOPs per token and layer: 2 s (q + v widths), not 4 s h
    flops = P.training_flops_parts(m, 1, "none")["attention"]
    assert flops == pytest.approx(3 * (61 + 1) * 4096 * 2 * 4096 * (heads * 192 + heads * 128))


@pytest.mark.parametrize("model_id, total, active", [
    ("qwen3-235b-a22b", 235e9, 22e9), ("qwen3-30b-a3b", 30.5e9, 3.3e9), ("mixtral-8x22b", 141e9, 39e9),
    ("nemotron4-340b", 341e9, 341e9), ("llama3.1-405b", 405e9, 405e9), ("kimi-k2", 1.04e12, 32e9)])
def test_new_models_match_their_published_sizes(model_id, total, active):
    m = P.model(model_id)
    assert m.params == pytest.approx(total, rel=0.02) and m.active_params == pytest.approx(active, rel=0.03)


def test_ep_folds_over_the_tensor_parallel_ranks():
    folded = P.layout("deepseek-v3", "dgx-h100", tp=8, ep=8, etp=1, **DSV3)
    classic = P.layout("deepseek-v3", "dgx-h100", tp=8, ep=8, **DSV3)   # etp = tp: EP over DP, 8 ranks 8 apart
    assert classic.etp == 8 and folded.etp == 1
    a2a = lambda L: [t for t in P.estimate_layout(L).traffic if t.kind == "expert parallel all-to-all"][0]  # noqa
    assert not a2a(folded).crosses_nodes and a2a(classic).crosses_nodes
    assert folded.expert_data_parallel == 8 * 16 // 8 and classic.expert_data_parallel == 128 // 64
    dense, experts = folded.stage_param_split(3)
    m = P.model("deepseek-v3")
    assert experts == pytest.approx(4 * m.routed_layer_params / 8)     # routed experts split by EP x ETP only
    e = P.estimate_layout(classic)
    etp = [t for t in e.traffic if t.kind == "expert tensor parallel"]
    assert etp and etp[0].collectives == ("all_gather", "reduce_scatter") and etp[0].group_size == 8
    assert not [t for t in P.estimate_layout(folded).traffic if t.kind == "expert tensor parallel"]
    assert "(EP8, ETP1)" in P.estimate_layout(folded).layout
    # the experts' gradients reduce over the expert-DP group, etp x ep apart
    grads = [t for t in P.estimate_layout(folded).traffic if t.kind.startswith("expert ZeRO")][0]
    assert grads.group_size == folded.expert_data_parallel


def test_folding_errors_name_the_parameter():
    with pytest.raises(ValueError, match="^ep must divide the experts .* tp x cp x dp"):
        P.estimate("deepseek-v3", "dgx-h100", gpus=64, pp=1, tp=8, ep=128, etp=1, global_batch=64)
    with pytest.raises(ValueError, match="^etp must divide the expert FFN"):
        P.estimate("deepseek-v3", "dgx-h100", gpus=64, tp=1, etp=3, global_batch=64)
    with pytest.raises(ValueError, match="^etp must be left unset"):
        P.estimate("llama3-8b", "dgx-h100", gpus=8, tp=2, etp=1, global_batch=8)


def test_mtp_and_the_output_layer_ride_on_the_last_stage():
    L = P.layout("deepseek-v3", "dgx-h100", tp=8, ep=8, etp=1, pp_layers=(3,) + (4,) * 14 + (2,), **DSV3)
    t = P.stage_compute_s(L)
    per_layer = t[1] / 4
    assert t[15] > 2 * per_layer + 2 * (t[0] - 3 * per_layer)   # two layers, the MTP layer and two output heads
    m = P.model("deepseek-v3")
    assert sum(L.stage_param_split(15)) > sum(L.stage_param_split(14)) / 2   # MTP module and output layer
    assert m.mtp_params == pytest.approx(m.layer_params + 2 * 7168 ** 2 + 2 * 7168)


def test_ring_attention_passes_mlas_up_projected_kv():
    kw = dict(gpus=64, tp=1, cp=4, ep=8, global_batch=16, recompute="full", seq_len=16384)
    ring = [t for t in P.estimate("deepseek-v3", "dgx-h100", pp=4, **kw).traffic if "ring" in t.kind][0]
    assert ring.bytes_per_call == pytest.approx(2 * 16384 / 4 * 128 * (192 + 128))


def test_planner_tries_folded_layouts(capsys):
    p = P.plan("qwen3-30b-a3b", "dgx-h100", gpus=64, global_batch=256, micro_batches=(1,), zero_stages=(1,),
               recompute_options=("selective",), interleave_options=(1,), ep_options=(8,), max_tp=4)
    assert {e.etp for e in p.ranked if e.tp > 1} >= {1}
    assert main(["plan", "--model", "deepseek-v3", "--system", "dgx-h100", "--gpus", "2048", "--tp", "8",
                 "--pp", "16", "--ep", "64", "--etp", "1", "--global-batch", "4096", "--zero", "1"]) == 0
    assert "(EP64, ETP1)" in capsys.readouterr().out
