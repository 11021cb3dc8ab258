"""What plan chooses when the user leaves a setting out, and the layouts it no longer refuses (issue 34)."""
from __future__ import annotations

import pytest

from course_lib import parallel as P
from course_lib.__main__ import main


def test_unset_zero_and_recompute_are_the_fastest_that_fit_and_said():
    kw = dict(gpus=128, tp=8, global_batch=512)
    chosen = P.estimate_choosing("megatron-7.5b", "dgx-h100", **kw)
    assert chosen.fits and chosen.zero == 1   # replicas to shard over: the distributed optimizer
    tried = [P.estimate("megatron-7.5b", "dgx-h100", zero=1, recompute=rc, **kw) for rc in P.AUTO_RECOMPUTE]
    fastest = min((e for e in tried if e.fits), key=lambda e: e.step_time_s)
    assert chosen.recompute == fastest.recompute and chosen.step_time_s == pytest.approx(fastest.step_time_s)
    assert chosen.notes[0].startswith(f"chose recompute {chosen.recompute} and ZeRO-1")


def test_given_values_are_kept_and_not_announced():
    e = P.estimate_choosing("megatron-7.5b", "dgx-h100", gpus=128, tp=8, global_batch=512, zero=0, recompute="full")
    ref = P.estimate("megatron-7.5b", "dgx-h100", gpus=128, tp=8, global_batch=512, zero=0, recompute="full")
    assert (e.zero, e.recompute) == (0, "full") and e.step_time_s == pytest.approx(ref.step_time_s)
    assert not any(n.startswith("chose") for n in e.notes)


def test_one_replica_keeps_zero_0():
    e = P.estimate_choosing("megatron-1.7b", "dgx-h100", gpus=8, tp=8, global_batch=8)
    assert e.zero == 0 and e.dp == 1


def test_cli_says_what_it_chose(capsys):
    assert main(["plan", "--model", "megatron-7.5b", "--system", "dgx-h100", "--nodes", "16", "--tp", "8",
                 "--global-batch", "512"]) == 0
    assert "(--recompute/--zero not given)" in capsys.readouterr().out
    assert main(["plan", "--model", "megatron-7.5b", "--system", "dgx-h100", "--nodes", "16", "--tp", "8",
                 "--global-batch", "512", "--zero", "0", "--recompute", "full"]) == 0
    assert "not given" not in capsys.readouterr().out


def test_zero3_with_pipeline_is_priced_with_zero1_states_and_says_so():
    kw = dict(gpus=64, tp=8, pp=2, global_batch=64)
    z3, z1 = (P.estimate("gpt3-175b", "dgx-a100", zero=z, **kw) for z in (3, 1))
    assert z3.memory["total"] == pytest.approx(z1.memory["total"]) and z3.sharding == "ZeRO-3/FSDP"
    assert any("pipeline" in n and "once per step" in n for n in z3.notes)
    assert z3.step_time_s == pytest.approx(z1.step_time_s, rel=1e-6)


def test_ep_that_cannot_fold_with_etp_tp_gets_etp_1_and_says_so():
    # EP 64 x TP 8 = 512 does not divide the 64 ranks of TP x DP; ETP 1 folds EP over them
    L = P.layout("deepseek-v3", "dgx-h100", gpus=64, tp=8, pp=1, ep=64, global_batch=64)
    assert L.etp == 1 and any(c.startswith("etp 1 (not given") for c in L.chosen)
    assert P.layout("deepseek-v3", "dgx-h100", gpus=512, tp=8, pp=1, ep=64, global_batch=512).etp == 8


def test_moe_layers_that_no_rule_splits_interleave_over_virtual_stages():
    m = P.model("deepseek-v3")
    for p, v in ((8, 2), (8, 4), (16, 2)):
        stages, rule = P.stage_layer_counts(m, p, v)
        assert rule == "spread" and sum(stages) == m.layers and len(stages) == p
        assert max(stages) - min(stages) <= v
