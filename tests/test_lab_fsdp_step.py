"""A real FSDP2 step on 2 CPU ranks: the bytes its collectives move are the model's ZeRO-3 bytes."""
import sys

import pytest

pytest.importorskip("torch")

from course_lib import parallel  # noqa: E402
from course_lib.lab import fsdp_step  # noqa: E402

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")]


def test_fsdp2_step_moves_the_models_bytes():
    r = fsdp_step.run_step(ranks=2, layers=3, width=64, micro_batches=2)
    # 2 micro-batches x (4 forward gathers + 3 backward gathers: the root stays gathered); 4 units' grads each
    assert r["calls"] == {"all_gather": 14, "reduce_scatter": 8}
    assert r["ratio_root_kept"] == {"all_gather": 1.0, "reduce_scatter": 1.0}
    assert r["ratio"]["reduce_scatter"] == 1.0 and 0.9 < r["ratio"]["all_gather"] < 1.0
    assert "counted" in fsdp_step.summary(r)


def test_zero3_step_bytes_is_what_dp_phase_counts():
    assert parallel.zero3_step_bytes(100, 3) == {"all_gather": 600, "reduce_scatter": 300}
    e = parallel.estimate("megatron-1.7b", "dgx-a100", gpus=8, global_batch=16, zero=3)
    rows = {t.kind: t for t in e.traffic}
    model = parallel.zero3_step_bytes(rows["ZeRO-3 grads"].bytes_per_call, e.micro_batches)
    assert rows["ZeRO-3 weight gathers"].calls_per_step * rows["ZeRO-3 weight gathers"].bytes_per_call == \
        model["all_gather"]
    with pytest.raises(ValueError, match="ranks"):
        fsdp_step.run_step(ranks=1)
