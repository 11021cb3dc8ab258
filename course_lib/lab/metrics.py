"""Bandwidth figures in the nccl-tests sense, for measured runs.

algbw = bytes / time; busbw = algbw x the collective's busbw factor from the registry
(``course_lib.collectives``: all-reduce 2(p-1)/p, reduce-scatter and all-gather (p-1)/p,
broadcast and reduce 1, all-to-all (p-1)/p). Bytes/s, SI.

The lab names its algorithms with the registry's ids too (``binomial_tree``, ``direct``, ...);
``ALGORITHM_ALIASES`` maps the lab's older names to them (``registry_id``), so that a notebook or a
command line written with ``tree`` or ``pairwise`` still runs.
"""
from __future__ import annotations

from .. import collectives, validate

ALGORITHM_ALIASES = {"tree": "binomial_tree", "pairwise": "direct"}  # the lab's older names, still accepted


def registry_id(name):
    """The registry's id for a lab algorithm ``name``: an ``ALGORITHM_ALIASES`` key becomes its id, the rest pass."""
    return ALGORITHM_ALIASES.get(name, name) if isinstance(name, str) else name


def algbw(nbytes, time_s) -> float:
    """Algorithm bandwidth, bytes/s: ``nbytes`` (>= 0) over ``time_s`` (> 0 s)."""
    return validate.non_negative("nbytes", nbytes) / validate.positive("time_s", time_s)


def busbw(collective, nbytes, time_s, ranks) -> float:
    """Bus bandwidth, bytes/s, as nccl-tests reports it; ``ranks`` in [1, 1e6]."""
    ranks = validate.integer("ranks", ranks, low=1, high=1_000_000)
    return algbw(nbytes, time_s) * collectives.busbw_factor(collective, ranks)
