"""The registry of collectives and their algorithms: every fact about a collective, once.

In the spirit of nccl-tests' per-collective struct (its ``testColl``: name, busbw factor,
size arithmetic), each ``Collective`` holds its id, label, nccl-tests' busbw factor (a short
function beside it), its size convention, its reduction op, whether it has a root, and its
*flat* algorithms: for each, the alpha-beta terms ``steps(p)`` (latency steps) and
``volume(p)`` (bytes each rank pushes through its port per byte of ``nbytes``), so that

    time = steps(p) x alpha + volume(p) x nbytes / B        (B: bytes/s per direction)

Size convention (nccl-tests' ``size`` column): ``per_rank`` means nbytes is the buffer on each
rank (all_reduce, broadcast, reduce); ``total`` means the whole buffer, of which each rank owns
nbytes / p (all_gather, reduce_scatter, all_to_all).

System-level algorithms (``ring``, ``tree``, ``nvls``, ``hierarchical``, ``direct``, ``collnet`` in
``costmodel.predict``) use a whole system's fabric; their formulas live in ``costmodel``; each
collective lists which of them apply, and their labels are here too.

Add a collective or an algorithm with ``register`` (or by adding an entry below); costmodel,
the CLI, lab.metrics, parallel and the explorers read this registry and need no other edit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from . import validate

if TYPE_CHECKING:
    import numpy as np


def log2_steps(p: int) -> int:
    """ceil(log2 p): rounds of a doubling or tree algorithm on p ranks (0 for one rank)."""
    return int(math.ceil(math.log2(p))) if p > 1 else 0


def _share(p: int) -> float:
    return (p - 1) / p


@dataclass(frozen=True)
class Algorithm:
    """A flat algorithm: ``steps(p)`` latency steps and ``volume(p)`` bytes per rank per byte of size."""

    id: str
    label: str
    steps: Callable[[int], float]
    volume: Callable[[int], float]
    note: str = ""

    def terms(self, ranks: int) -> tuple[float, float]:
        """(latency steps, bytes-per-rank factor) on ``ranks`` ranks; (0, 0) for one rank."""
        if ranks <= 1:
            return 0.0, 0.0
        return float(self.steps(ranks)), float(self.volume(ranks))


@dataclass(frozen=True)
class Collective:
    """One collective: what nccl-tests needs to print it and what the cost model needs to time it."""

    id: str
    label: str
    busbw_factor: Callable[[int], float]  # busbw = algbw x busbw_factor(p) (nccl-tests)
    size_convention: str                  # "per_rank" or "total"
    reduction: str | None                 # "sum" or None
    has_root: bool
    algorithms: dict = field(default_factory=dict)      # id -> Algorithm (flat, alpha-beta terms)
    system_algorithms: tuple = ()                        # costmodel.predict's fabric-level algorithms

    def algorithm(self, algorithm_id: str) -> Algorithm:
        """The flat algorithm ``algorithm_id`` of this collective (ValueError naming the allowed ids)."""
        if not isinstance(algorithm_id, str) or algorithm_id not in self.algorithms:
            raise ValueError(f"algorithm must be one of {', '.join(self.algorithms)} for {self.id}; "
                             f"got {algorithm_id!r}")
        return self.algorithms[algorithm_id]

    def elements(self, nbytes: float | np.ndarray, ranks: int, type_bytes: int) -> float | np.ndarray:
        """nccl-tests' count column: elements per rank's buffer (``total`` sizes are split over ranks)."""
        per = nbytes / type_bytes
        return per / ranks if self.size_convention == "total" else per


# ---------------------------------------------------------------- busbw factors (nccl-tests' PERFORMANCE.md)

def all_reduce_factor(p: int) -> float:
    """2(p-1)/p: a reduce-scatter then an all-gather, each (p-1)/p."""
    return 2 * (p - 1) / p


def gather_factor(p: int) -> float:
    """(p-1)/p: each rank receives (or sends) all but its own share."""
    return (p - 1) / p


def rooted_factor(p: int) -> float:
    """1: the root's buffer crosses every link once; 0 on one rank, where no byte crosses a link
    (as the other factors give at p = 1; nccl-tests would print algbw there, a local copy's rate)."""
    return 1.0 if p > 1 else 0.0


# ---------------------------------------------------------------- flat algorithms (alpha-beta terms)

RING = Algorithm("ring", "ring", lambda p: 2 * (p - 1), lambda p: 2 * _share(p),
                 "reduce-scatter then all-gather around a ring")
BINOMIAL_TREE = Algorithm("binomial_tree", "binomial tree", lambda p: 2 * log2_steps(p), lambda p: 2 * log2_steps(p),
                          "reduce up a binomial tree, broadcast down; whole message per level, not pipelined")
DOUBLE_BINARY_TREE = Algorithm("double_binary_tree", "double binary tree (NCCL)", lambda p: 2 * log2_steps(p),
                               lambda p: 2.0, "two pipelined binary trees, each carrying half")
RECURSIVE_DOUBLING = Algorithm("recursive_doubling", "recursive doubling", log2_steps, log2_steps,
                               "log2 p exchanges of the whole buffer")
HALVING_DOUBLING = Algorithm("halving_doubling", "halving-doubling", lambda p: 2 * log2_steps(p),
                             lambda p: 2 * _share(p), "Rabenseifner: halving reduce-scatter + doubling all-gather")
# The naive algorithms' root handles its p-1 messages one after another, each with its start-up cost
# (the "linear" algorithms' (p-1) alpha of Thakur, Rabenseifner and Gropp 2005,
# doi:10.1177/1094342005051521): charged one alpha per step, they are never the cheap choice at scale.
NAIVE = Algorithm("naive", "naive (parameter server)", lambda p: 2 * (p - 1), lambda p: 2 * (p - 1),
                  "everyone sends to rank 0, which sends the sum back: p-1 messages in and p-1 out of rank 0")
IN_NETWORK = Algorithm("in_network", "in-network reduction (NVLS / SHARP)", lambda p: 2, lambda p: 1.0,
                       "send once to the switch, receive the sum once")

RING_SHARE = Algorithm("ring", "ring", lambda p: p - 1, _share, "p-1 steps of one share each")
HALVING_SHARE = Algorithm("recursive_doubling", "recursive halving / doubling", log2_steps, _share,
                          "log2 p steps, halving (or doubling) the data each time")
DIRECT_SHARE = Algorithm("direct", "direct (pairwise)", lambda p: 1, _share,
                         "every rank sends each share straight to its owner at once")

CHAIN = Algorithm("ring", "ring (pipelined chain)", lambda p: p - 1, lambda p: 1.0, "pipelined chain from the root")
BINOMIAL_ROOTED = Algorithm("binomial_tree", "binomial tree", log2_steps, log2_steps, "not pipelined")
DOUBLE_BINARY_ROOTED = Algorithm("double_binary_tree", "double binary tree (NCCL)", log2_steps, lambda p: 1.0)
NAIVE_ROOTED = Algorithm("naive", "naive (root sends p-1 copies)", lambda p: p - 1, lambda p: p - 1)
IN_NETWORK_ROOTED = Algorithm("in_network", "in-network (switch multicast / reduction)", lambda p: 1, lambda p: 1.0)


def _by_id(*algorithms: Algorithm) -> dict:
    return {a.id: a for a in algorithms}


_SHARE_ALGORITHMS = _by_id(RING_SHARE, HALVING_SHARE, replace(HALVING_SHARE, id="halving_doubling",
                                                                label="halving-doubling"), DIRECT_SHARE)
_ROOTED_ALGORITHMS = _by_id(CHAIN, BINOMIAL_ROOTED, DOUBLE_BINARY_ROOTED, NAIVE_ROOTED, IN_NETWORK_ROOTED)

# labels of costmodel.predict's fabric-level algorithms
SYSTEM_ALGORITHM_LABELS = {
    "ring": "ring (NCCL-style rings on every rail)",
    "tree": "NCCL tree (chain in a node, double binary tree across nodes)",
    "nvls": "NVLS (in-switch reduction, NVLink SHARP)",
    "hierarchical": "hierarchical (textbook two-level)",
    "direct": "direct (pairwise, all at once)",
    "collnet": "CollNet / SHARP (reduction in the InfiniBand switches across nodes; NVLS in the node where it can)",
}

_REGISTRY: dict[str, Collective] = {}


def register(collective: Collective) -> Collective:
    """Add (or replace) a collective in the registry; returns it."""
    if not isinstance(collective, Collective):
        raise ValueError(f"collective must be a collectives.Collective, got {type(collective).__name__}")
    if collective.size_convention not in ("per_rank", "total"):
        raise ValueError(f"size_convention must be 'per_rank' or 'total', got {collective.size_convention!r}")
    _REGISTRY[collective.id] = collective
    return collective


def unregister(collective_id: str) -> None:
    """Remove a collective (tests use it to undo a ``register``)."""
    _REGISTRY.pop(collective_id, None)


register(Collective("all_reduce", "all-reduce", all_reduce_factor, "per_rank", "sum", False,
                    _by_id(RING, BINOMIAL_TREE, DOUBLE_BINARY_TREE, RECURSIVE_DOUBLING, HALVING_DOUBLING, NAIVE,
                           IN_NETWORK),
                    ("ring", "tree", "nvls", "hierarchical", "collnet")))
register(Collective("reduce_scatter", "reduce-scatter", gather_factor, "total", "sum", False,
                    dict(_SHARE_ALGORITHMS), ("ring",)))
register(Collective("all_gather", "all-gather", gather_factor, "total", None, False,
                    dict(_SHARE_ALGORITHMS), ("ring",)))
register(Collective("broadcast", "broadcast", rooted_factor, "per_rank", None, True,
                    dict(_ROOTED_ALGORITHMS), ("ring", "tree", "nvls")))
register(Collective("reduce", "reduce", rooted_factor, "per_rank", "sum", True,
                    dict(_ROOTED_ALGORITHMS), ("ring", "tree", "nvls")))
register(Collective("all_to_all", "all-to-all", gather_factor, "total", None, False,
                    _by_id(DIRECT_SHARE), ("direct",)))


# ---------------------------------------------------------------- look-ups

def ids() -> tuple:
    """Every registered collective id, in registration order."""
    return tuple(_REGISTRY)


def get(collective_id: str) -> Collective:
    """The registered collective ``collective_id`` (ValueError naming the allowed ids).

    Case, hyphens and underscores are ignored: ``all-reduce``, ``allreduce`` and ``All_Reduce`` are ``all_reduce``.
    """
    return _REGISTRY[validate.choice("collective", collective_id, _REGISTRY, fold=True)]


def algorithm_ids(collective_id: str | None = None) -> tuple:
    """Flat algorithm ids of one collective, or of all collectives (registry order, no repeats)."""
    colls = [get(collective_id)] if collective_id is not None else _REGISTRY.values()
    return tuple(dict.fromkeys(a for c in colls for a in c.algorithms))


def busbw_factor(collective_id: str, ranks: int) -> float:
    """nccl-tests' busbw / algbw factor of ``collective_id`` on ``ranks`` (>= 1) ranks."""
    coll = get(collective_id)
    return float(coll.busbw_factor(validate.integer("ranks", ranks, low=1, high=10_000_000)))


def label(collective_id: str, algorithm_id: str | None = None) -> str:
    """Display label of a collective, or of one of its algorithms (flat or system-level)."""
    coll = get(collective_id)
    if algorithm_id is None:
        return coll.label
    if algorithm_id in coll.algorithms:
        return coll.algorithms[algorithm_id].label
    if algorithm_id in coll.system_algorithms:
        return SYSTEM_ALGORITHM_LABELS[algorithm_id]
    raise ValueError(f"algorithm must be one of {', '.join(list(coll.algorithms) + list(coll.system_algorithms))} "
                     f"for {collective_id}; got {algorithm_id!r}")


def terms(collective_id: str, algorithm_id: str, ranks: int) -> tuple[float, float]:
    """(latency steps, bytes-per-rank factor) of a flat algorithm: time = steps x alpha + factor x n / B."""
    return get(collective_id).algorithm(algorithm_id).terms(ranks)
