"""Pipeline stages as Megatron-LM builds them: uneven splits, the slowest stage, memory per stage."""
import pytest

from course_lib import parallel as P
from course_lib.__main__ import main


@pytest.mark.parametrize("model_id, pp, v, expected, rule", [
    ("llama3-405b", 16, 1, (7,) + (8,) * 14 + (7,), "accounted"),    # 126 + embedding + loss = 128 = 16 x 8
    ("llama3-405b", 8, 8, (15,) + (16,) * 6 + (15,), "accounted"),   # NeMo's 405B recipe: PP 8, VP 8
    ("gpt3-175b", 16, 1, (6,) * 16, "even"),
    ("llama3-8b", 3, 1, (11, 11, 10), "accounted"),                  # 32 + loss = 33 = 3 x 11
])
def test_megatron_splits(model_id, pp, v, expected, rule):
    assert P.stage_layer_counts(model_id, pp, v) == (expected, rule)


def test_seventy_layers_on_twelve_stages_and_given_counts():
    m = P.Transformer("seventy", layers=70, hidden=8192, heads=64, vocab=128256, seq_len=4096)
    assert P.stage_layer_counts(m, 12) == ((5,) + (6,) * 10 + (5,), "accounted")
    assert P.stage_layer_counts("deepseek-v3", 16, pp_layers=(1, 4)) == ((1,) + (4,) * 15, "pp_layers")
    assert P.stage_layer_counts("deepseek-v3", 16, pp_layers=(None, 1)) == ((4,) * 15 + (1,), "pp_layers")
    counts = (3,) + (4,) * 14 + (2,)
    assert P.stage_layer_counts("deepseek-v3", 16, pp_layers=counts) == (counts, "pp_layers")
    for bad, name in (((2, 2), "pp_layers must leave"), ((3,) * 16, "pp_layers must add up"), ((1, 2, 3), "pp_layers must be")):
        with pytest.raises(ValueError, match=f"^{name}"):
            P.stage_layer_counts("deepseek-v3", 16, pp_layers=bad)
    with pytest.raises(ValueError, match="^interleave must divide"):
        P.stage_layer_counts("llama3-405b", 16, 3)


def test_the_slowest_stage_sets_the_step_and_the_others_fill_the_bubble():
    kw = dict(gpus=1024, tp=8, pp=16, global_batch=512, recompute="full", sequence_parallel=True)
    e = P.estimate("llama3-405b", "dgx-h100", **kw)
    L = P.layout("llama3-405b", "dgx-h100", **kw)
    t = P.stage_compute_s(L)
    assert t[15] > t[0] and t[1] == pytest.approx(8 / 7 * t[0])    # the output layer rides on the last stage
    assert e.compute_s == pytest.approx(L.micro_batches * max(t))
    comm = (e.tp_exposed_s + e.pp_exposed_s) / L.micro_batches
    assert e.bubble_s == pytest.approx(15 * comm + sum(t) - max(t))
    assert e.step_time_s == pytest.approx(sum(e.breakdown().values()), rel=1e-9)
    # even stages: the bubble is (p-1)/v slots, as before
    g = P.estimate("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536, interleave=2)
    slot = g.compute_s / g.micro_batches + (g.tp_exposed_s + g.pp_exposed_s) / g.micro_batches
    Lg = P.layout("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536, interleave=2)
    logits_extra = max(P.stage_compute_s(Lg)) - min(P.stage_compute_s(Lg))   # only the last stage differs
    assert g.bubble_s == pytest.approx(15 * (slot - logits_extra) / 2)


def test_memory_per_stage_the_worst_decides():
    kw = dict(gpus=1024, tp=8, pp=16, global_batch=512, recompute="selective", sequence_parallel=True)
    L = P.layout("llama3-405b", "dgx-h100", **kw)
    mems = [P.stage_memory(L, i) for i in range(16)]
    assert mems[0]["activations"] > mems[8]["activations"] > mems[15]["activations"] - 4 * 8192 * 128256 / 8
    assert P.memory_phase(L) == max(mems, key=lambda m: m["total"])
    e = P.estimate("llama3-405b", "dgx-h100", **kw)
    assert [s["layers"] for s in e.stages] == list(L.stage_layers) and "stages (accounted)" in e.summary()
    # embeddings: the input one on the first stage, the output layer on the last, none in the middle
    m = P.model("llama3-405b")
    assert L.stage_embedding_params(0) == L.stage_embedding_params(15) == m.vocab * m.hidden
    assert L.stage_embedding_params(7) == 0


def test_plan_cli_pp_layers(capsys):
    args = ["plan", "--model", "llama3-405b", "--system", "dgx-h100", "--gpus", "1024", "--tp", "8", "--pp", "16",
            "--global-batch", "512"]
    assert main([*args, "--pp-layers", "7,7"]) == 0
    assert "stages (pp_layers): layers 7 | 8 x14 | 7" in capsys.readouterr().out
    assert main([*args, "--pp-layers", "5,5"]) == 2
    assert capsys.readouterr().err.startswith("error: --pp-layers: pp_layers must leave")


def test_planner_searches_megatron_splits():
    space = P.planner._search_space(P.model("llama3-405b"), 1024, 8, micro_batches=(1,), zero_stages=(1,),
                                    recompute_options=("full",), interleave_options=(1,), ep_options=None,
                                    cp_options=(1,), cp_kind="ring", hsdp_options=(None,))
    assert 16 in space.pps and 8 in space.pps and 5 not in space.pps
