"""The collectives lab: real all-reduces over torch.distributed on the learner's own machine.

``run(fn, ranks=2, timeout=30)`` runs a function on local ranks (gloo on 127.0.0.1);
``algorithms`` holds hand-written collectives; ``bench.sweep`` measures them in
nccl-tests form; ``calibrate`` fits alpha and beta; ``traffic`` counts what a rank sends (the
exercise checkers of ``course_lib.exercises`` use it).
"""
from .launch import LabLimitError, RankError, RankTimeout, current, init_process_group, run
from . import metrics  # noqa: E402

__all__ = ["run", "RankError", "RankTimeout", "LabLimitError", "current", "init_process_group", "algorithms", "metrics",
           "bench", "calibrate", "memory", "traffic"]


def __getattr__(name):
    if name in ("algorithms", "bench", "calibrate", "memory", "ddp_run", "ddp_trace", "traffic"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
