"""EXERCISE ANSWER MODEL (chapter 08's exercises, read by grading.MODELS): moved here as it was, one block, for
helper w27ex to move into course_lib/exercises/. Nothing in the chapter uses it.
"""
from __future__ import annotations

from ... import hardware, parallel
from .brief import BRIEF, memory_rows, min_gpus_for_states
from .published import published_runs
from .runs import compare_systems, gpu_hours, required_tokens_per_s, run_numbers


def _why_h200_wins() -> str:
    """'B' while the premise of exercise 08.3 holds in the library: same peak and links, only memory differs,
    and the H200's winner fits without pipeline parallelism a layout the H100 cannot hold; otherwise '?'."""
    h100, h200 = hardware.system("dgx-h100"), hardware.system("dgx-h200")
    rows = {r["system"]: r for r in compare_systems(BRIEF, gpus=1024, systems=("dgx-h100", "dgx-h200"))}
    best100, best200 = rows["dgx-h100"]["estimate"], rows["dgx-h200"]["estimate"]
    same = (h100.gpu.bf16_flops == h200.gpu.bf16_flops
            and h100.gpu_link.per_direction == h200.gpu_link.per_direction
            and h100.nic_bandwidth_per_gpu == h200.nic_bandwidth_per_gpu
            and h200.gpu.memory_bytes > h100.gpu.memory_bytes)
    layout = {"tp": best200.tp, "pp": best200.pp, "micro_batch": best200.micro_batch, "zero": best200.zero,
              "recompute": best200.recompute}
    h100_cannot = not memory_rows(BRIEF.model, "dgx-h100", 1024, BRIEF.global_batch, [layout])[0]["fits"]
    ok = same and h100_cannot and best200.pp == 1 and best100.pp > 1 and \
        rows["dgx-h200"]["gpu_hours"] < rows["dgx-h100"]["gpu_hours"]
    return "B" if ok else "?"


def expected_answers() -> dict:
    """The graded answers of chapter 08 computed from the library now (tests compare them with 08.json)."""
    params = parallel.model(BRIEF.model).params
    gpu80 = hardware.system("dgx-h100").gpu.memory_bytes
    a100_13b = parallel.plan("llama2-13b", "dgx-a100", gpus=1024, global_batch=BRIEF.global_batch).best
    h100 = parallel.plan(BRIEF.model, "dgx-h100", gpus=2048, global_batch=BRIEF.global_batch).best
    bubble = parallel.estimate(BRIEF.model, "dgx-h100", gpus=1024, tp=4, pp=4, interleave=4, micro_batch=1,
                               global_batch=BRIEF.global_batch, zero=1, recompute="selective",
                               sequence_parallel=True).bubble_fraction
    published_13b = published_runs()["facts"]["llama2-gpu-hours"]["llama2-13b"]
    return {"08.1": required_tokens_per_s(BRIEF.tokens, BRIEF.max_days),
            "08.2": min_gpus_for_states(params, gpu80, zero=3),
            "08.3": _why_h200_wins(),
            "08.4": bubble,
            "08.5": run_numbers(h100, BRIEF.tokens)["days"],
            "08.6": gpu_hours(BRIEF.tokens, a100_13b.tokens_per_s_per_gpu) / published_13b}
