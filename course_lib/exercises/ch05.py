"""Chapter 05 (InfiniBand): the checker of exercise 05.6 (its answer model, 05.10's, is in ``answers_ch05``)."""
from __future__ import annotations

from .. import costmodel
from . import own_work


# ---------------------------------------------------------------- 05.6: the two-level all-reduce as a function

def _reference_hierarchical(nbytes, nodes, g, nvlink_bw, nic_bw_per_gpu):
    ph = costmodel.two_level_all_reduce(nbytes, g, nodes, nvlink_bw, nic_bw_per_gpu)
    return ph.reduce_scatter_s + ph.all_gather_s, ph.inter_node_s


_CHECK_CASES = ((10e9, 4, 8, 450e9, 50e9), (1e9, 2, 8, 300e9, 25e9), (4e9, 16, 4, 150e9, 12.5e9),
                (2e9, 3, 2, 100e9, 50e9))


def check_hierarchical_time(func):
    """Checker for exercise 05.6: ``func(nbytes, nodes, gpus_per_node, nvlink_bw, nic_bw_per_gpu)`` -> seconds."""
    if not callable(func):
        raise ValueError("func must be a function")
    for n, N, g, bw, nic in _CHECK_CASES:
        with own_work.forbidding((costmodel.two_level_all_reduce,)) as used:
            got = func(n, N, g, bw, nic)  # a stub raises NotImplementedError: reported as "not answered yet"
        if used:
            return False, own_work.refusal(used, "two-level all-reduce").capitalize() + "."
        try:
            got = float(got)
        except (TypeError, ValueError):
            return False, f"hierarchical_time must return a number of seconds, got {type(got).__name__}."
        intra, inter = _reference_hierarchical(n, N, g, bw, nic)
        want = intra + inter
        if abs(got - want) <= 1e-3 * want:
            continue
        close = lambda x: abs(got - x) <= 1e-3 * abs(x)
        case = f"(nbytes={n:g}, nodes={N}, gpus_per_node={g})"
        if close(intra + inter * g):
            return False, (f"Too slow for {case}: across nodes each GPU all-reduces only its 1/g shard "
                           "(nbytes / gpus_per_node); the node's NICs share the work.")
        if close(inter):
            return False, f"For {case} you left out the reduce-scatter and all-gather inside the node."
        if close(intra):
            return False, f"For {case} you left out the all-reduce across nodes."
        if close(2 * (N * g - 1) / (N * g) * n / nic):
            return False, f"For {case} that is a flat ring over all GPUs at NIC speed, not the two-level scheme."
        if close(intra / 2 + inter):
            return False, f"For {case} the node phases move 2(g-1)/g x nbytes in total: reduce-scatter and all-gather each (g-1)/g."
        return False, (f"Not yet for {case}: expected reduce-scatter (g-1)/g*n/B_nvlink + all-reduce "
                       "2(N-1)/N*(n/g)/B_nic + all-gather (g-1)/g*n/B_nvlink.")
    return True, "Correct: your two-level all-reduce matches the model on every test case."
