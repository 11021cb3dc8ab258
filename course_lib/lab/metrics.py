"""Bandwidth figures in the nccl-tests sense (kept here so a later change can point to costmodel).

algbw = bytes / time; busbw = algbw x a factor that makes every collective comparable with
the link bandwidth: all-reduce 2(p-1)/p, reduce-scatter and all-gather (p-1)/p,
broadcast and reduce 1. Bytes/s, SI.
"""
from __future__ import annotations

from .. import validate

_FACTORS = {"all_reduce": lambda p: 2 * (p - 1) / p,
            "reduce_scatter": lambda p: (p - 1) / p,
            "all_gather": lambda p: (p - 1) / p,
            "broadcast": lambda p: 1.0,
            "reduce": lambda p: 1.0}


def algbw(nbytes, time_s) -> float:
    """Algorithm bandwidth, bytes/s: ``nbytes`` (>= 0) over ``time_s`` (> 0 s)."""
    return validate.non_negative("nbytes", nbytes) / validate.positive("time_s", time_s)


def busbw(collective, nbytes, time_s, ranks) -> float:
    """Bus bandwidth, bytes/s, as nccl-tests reports it; ``ranks`` in [1, 1e6]."""
    collective = validate.choice("collective", collective, tuple(_FACTORS))
    ranks = validate.integer("ranks", ranks, low=1, high=1_000_000)
    return algbw(nbytes, time_s) * _FACTORS[collective](ranks)
