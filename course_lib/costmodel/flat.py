"""The flat alpha-beta model: algbw/busbw, one collective on one link, and the textbook two-level
and two-tier compositions of it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import collectives, units, validate


def _sizes(nbytes: validate.Sizes, name: str = "nbytes") -> np.ndarray:
    if isinstance(nbytes, str):
        nbytes = units.parse_size(nbytes, name=name)
    return validate.sizes(name, nbytes, allow_zero=True)


def _ret(array: np.ndarray, scalar_in: bool) -> float | np.ndarray:
    return float(array) if scalar_in else array


def algbw(nbytes: validate.Sizes, time_s: float | np.ndarray) -> float | np.ndarray:
    """Algorithm bandwidth as nccl-tests defines it: size / time, bytes/s."""
    n = _sizes(nbytes)
    t = validate.sizes("time_s", time_s)
    scalar = n.ndim == 0 and t.ndim == 0
    with np.errstate(over="ignore"):
        return _ret(validate.finite_result("nbytes / time_s", n / t), scalar)


def busbw_factor(collective: str, ranks: int) -> float:
    """nccl-tests' busbw / algbw factor, from the registry (``collectives``): e.g. all_reduce 2(n-1)/n."""
    return collectives.busbw_factor(collective, ranks)


def busbw(collective: str, nbytes: validate.Sizes, time_s: float | np.ndarray, ranks: int) -> float | np.ndarray:
    """Bus bandwidth as nccl-tests defines it: algbw x factor (see ``busbw_factor``), bytes/s.

    For all_gather / reduce_scatter / all_to_all, ``nbytes`` is the total buffer (nccl-tests' size column).
    """
    factor = busbw_factor(collective, ranks)
    return algbw(nbytes, time_s) * factor


def collective_time(collective: str, nbytes: validate.Sizes, ranks: int, bandwidth: float, latency: float, algorithm: str = "ring") -> float | np.ndarray:
    """Time of one collective on a flat group, seconds (alpha-beta model).

    nbytes: bytes (scalar or array; see the module's size convention); ranks >= 1;
    bandwidth: bytes/s per direction per rank; latency: seconds per step.
    Vectorised over ``nbytes``: scalar in -> float out. ``in_network`` assumes the
    switch reduces (NVLS / SHARP) and is the only algorithm allowed below the
    2(p-1)/p * n/B all-reduce bound.
    """
    algo = collectives.get(collective).algorithm(algorithm)
    n = _sizes(nbytes)
    scalar = n.ndim == 0 and not isinstance(nbytes, (list, tuple))
    p = validate.integer("ranks", ranks, low=1, high=10_000_000)
    bw = validate.positive("bandwidth", bandwidth)
    alpha = validate.non_negative("latency", latency)
    steps, factor = algo.terms(p)
    with np.errstate(over="ignore"):
        time_s = validate.finite_result("the time from nbytes, bandwidth and latency", steps * alpha + factor * n / bw)
    return _ret(time_s, scalar)


@dataclass(frozen=True)
class TwoLevelPhases:
    """The textbook two-level (hierarchical) all-reduce, phase by phase, seconds (scalars or arrays).

    reduce-scatter inside each node, ring all-reduce of each GPU's 1/g shard across nodes (GPU k
    of every node over its share of the NICs), all-gather inside the node, one after another.
    """

    reduce_scatter_s: object
    inter_node_s: object
    all_gather_s: object
    launch_s: object = 0.0

    @property
    def time_s(self) -> float | np.ndarray:
        """All phases one after another, seconds."""
        return self.launch_s + self.reduce_scatter_s + self.inter_node_s + self.all_gather_s

    def as_dict(self) -> dict:
        """Phase name -> seconds, in the order they run."""
        return {"launch_s": self.launch_s, "reduce_scatter_s": self.reduce_scatter_s,
                "inter_node_s": self.inter_node_s, "all_gather_s": self.all_gather_s}


def two_level_all_reduce(nbytes: validate.Sizes, gpus_per_node: int, nodes: int, intra_bw: float, net_bw_per_gpu: float, intra_hop: float = 0.0, net_hop: float = 0.0,
                         launch: float = 0.0) -> TwoLevelPhases:
    """Phases of the two-level all-reduce of ``nbytes`` (bytes per GPU, scalar or array).

    gpus_per_node g and nodes N >= 1; intra_bw: one GPU's port into the node fabric and
    net_bw_per_gpu: its share of the node's NICs, both bytes/s per direction; intra_hop,
    net_hop: seconds per step; launch: seconds per call. Each phase is a ring (``collective_time``).
    """
    g = validate.integer("gpus_per_node", gpus_per_node, low=1, high=10_000_000)
    N = validate.integer("nodes", nodes, low=1, high=10_000_000)
    rs = collective_time("reduce_scatter", nbytes, g, intra_bw, intra_hop, "ring")
    inter = collective_time("all_reduce", _sizes(nbytes) / g, N, net_bw_per_gpu, net_hop, "ring")
    ag = collective_time("all_gather", nbytes, g, intra_bw, intra_hop, "ring")
    return TwoLevelPhases(reduce_scatter_s=rs, inter_node_s=inter, all_gather_s=ag,
                          launch_s=validate.non_negative("launch", launch))


def two_tier_all_to_all(nbytes: validate.Sizes, ranks: int, per_node: int, intra_bw: float, net_bw_per_gpu: float, net_hop: float = 0.0, launch: float = 0.0) -> float | np.ndarray:
    """Direct all-to-all across nodes, seconds: each rank sends (p-k)/p of its buffer over its NIC share
    and (k-1)/p over the GPU fabric, all at once (k ranks per node). Vectorised over nbytes."""
    scalar = np.ndim(nbytes) == 0 and not isinstance(nbytes, (list, tuple))
    n = _sizes(nbytes)
    p = validate.integer("ranks", ranks, low=1, high=10_000_000)
    k = validate.integer("per_node", per_node, low=1, high=p)
    intra_bw, net_bw_per_gpu = validate.positive("intra_bw", intra_bw), validate.positive("net_bw_per_gpu", net_bw_per_gpu)
    net_hop, launch = validate.non_negative("net_hop", net_hop), validate.non_negative("launch", launch)
    t_net = (p - k) / p * n / net_bw_per_gpu
    t_intra = (k - 1) / p * n / intra_bw
    return _ret(launch + net_hop + np.maximum(t_net, t_intra), scalar)


def lower_bound_time(nbytes: validate.Sizes, ranks: int, bandwidth: float) -> float | np.ndarray:
    """All-reduce bandwidth lower bound 2(p-1)/p * n / B, seconds (no in-network reduction)."""
    n = _sizes(nbytes)
    scalar = n.ndim == 0
    p = validate.integer("ranks", ranks, low=1)
    bw = validate.positive("bandwidth", bandwidth)
    with np.errstate(over="ignore"):
        bound = collectives.get("all_reduce").algorithm("ring").volume(p) * n / bw
        return _ret(validate.finite_result("nbytes / bandwidth", bound), scalar)
