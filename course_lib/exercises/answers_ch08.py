"""Chapter 08 (capstone): its answers computed from the library now, by the chapter's own planner.

``expected_answers`` gives 08.1-08.6 as the chapter computes them (a test compares the answer key with
them); 08.5 and 08.6 are answer models (:data:`MODELS`): graded against this computation, not a typed
number. The planner is imported inside the functions: it draws (widgets, matplotlib).
"""
from __future__ import annotations

from functools import lru_cache

from .. import hardware, parallel


def _why_h200_wins(pl) -> str:
    """'B' while the premise of exercise 08.3 holds in the library: same peak and links, only memory differs,
    and the H200's winner fits without pipeline parallelism a layout the H100 cannot hold; otherwise '?'."""
    h100, h200 = hardware.system("dgx-h100"), hardware.system("dgx-h200")
    rows = {r["system"]: r for r in pl.compare_systems(pl.BRIEF, gpus=1024, systems=("dgx-h100", "dgx-h200"))}
    best100, best200 = rows["dgx-h100"]["estimate"], rows["dgx-h200"]["estimate"]
    same = (h100.gpu.bf16_flops == h200.gpu.bf16_flops
            and h100.gpu_link.per_direction == h200.gpu_link.per_direction
            and h100.nic_bandwidth_per_gpu == h200.nic_bandwidth_per_gpu
            and h200.gpu.memory_bytes > h100.gpu.memory_bytes)
    layout = {"tp": best200.tp, "pp": best200.pp, "micro_batch": best200.micro_batch, "zero": best200.zero,
              "recompute": best200.recompute}
    h100_cannot = not pl.memory_rows(pl.BRIEF.model, "dgx-h100", 1024, pl.BRIEF.global_batch, [layout])[0]["fits"]
    ok = same and h100_cannot and best200.pp == 1 and best100.pp > 1 and \
        rows["dgx-h200"]["gpu_hours"] < rows["dgx-h100"]["gpu_hours"]
    return "B" if ok else "?"


def expected_answers() -> dict:
    """The graded answers of chapter 08 computed from the library now (tests compare them with the key)."""
    from ..chapters import planner as pl

    brief = pl.BRIEF
    params = parallel.model(brief.model).params
    gpu80 = hardware.system("dgx-h100").gpu.memory_bytes
    a100_13b = parallel.plan("llama2-13b", "dgx-a100", gpus=1024, global_batch=brief.global_batch).best
    h100 = parallel.plan(brief.model, "dgx-h100", gpus=2048, global_batch=brief.global_batch).best
    bubble = parallel.estimate(brief.model, "dgx-h100", gpus=1024, tp=4, pp=4, interleave=4, micro_batch=1,
                               global_batch=brief.global_batch, zero=1, recompute="selective",
                               sequence_parallel=True).bubble_fraction
    published_13b = pl.published_runs()["facts"]["llama2-gpu-hours"]["llama2-13b"]
    return {"08.1": pl.required_tokens_per_s(brief.tokens, brief.max_days),
            "08.2": pl.min_gpus_for_states(params, gpu80, zero=3),
            "08.3": _why_h200_wins(pl),
            "08.4": bubble,
            "08.5": pl.run_numbers(h100, brief.tokens)["days"],
            "08.6": pl.gpu_hours(brief.tokens, a100_13b.tokens_per_s_per_gpu) / published_13b}


@lru_cache(maxsize=None)
def _answers() -> dict:
    return expected_answers()


MODELS = {"08.5": lambda entry: _answers()["08.5"],
          "08.6": lambda entry: _answers()["08.6"]}
