"""Time the planner's searches (goal: a GPT-3-size search under 2 s, with EP, CP and FSDP in the space).

Run: python benchmarks/planner_speed.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, ahead of this folder

from course_lib import parallel  # noqa: E402


def best_of(fn, repeat=3):
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


CASES = {
    "gpt3-175b, 1024 A100, default space": lambda: parallel.plan("gpt3-175b", "dgx-a100", gpus=1024,
                                                                   global_batch=1536),
    "gpt3-175b, 1024 A100, + CP 1-4, ZeRO 0/1/3, HSDP 8": lambda: parallel.plan(
        "gpt3-175b", "dgx-a100", gpus=1024, global_batch=1536, cp_options=(1, 2, 4), zero_stages=(0, 1, 3),
        hsdp_options=(None, 8)),
    "deepseek-v3, 2048 H100, EP 1-256": lambda: parallel.plan("deepseek-v3", "dgx-h100", gpus=2048,
                                                              global_batch=15360),
    "mixtral-8x7b, 64 H100, EP 1-8, s=4096": lambda: parallel.plan("mixtral-8x7b", "dgx-h100", gpus=64,
                                                                   global_batch=256, seq_len=4096),
}

if __name__ == "__main__":
    for name, fn in CASES.items():
        t, p = best_of(fn)
        print(f"{name:<52} {t:6.2f} s  {p.searched:>6} layouts, best {p.best.layout}")
