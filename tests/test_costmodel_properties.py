"""Hypothesis properties of the alpha-beta collective model."""
import numpy as np
from hypothesis import given, settings, strategies as st

from course_lib import collectives, costmodel as cm

ranks = st.integers(min_value=2, max_value=512)
sizes = st.floats(min_value=1.0, max_value=1e11)
bws = st.floats(min_value=1e8, max_value=2e12)
lats = st.floats(min_value=0.0, max_value=1e-4)
pairs = st.sampled_from([(c, a) for c in collectives.ids() for a in collectives.get(c).algorithms])


@settings(max_examples=150, deadline=None)
@given(pairs, ranks, sizes, sizes, bws, lats)
def test_time_grows_with_size(pair, p, a, b, bw, alpha):
    c, alg = pair
    lo, hi = sorted((a, b))
    assert cm.collective_time(c, lo, p, bw, alpha, alg) <= cm.collective_time(c, hi, p, bw, alpha, alg)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([a for a in collectives.get("all_reduce").algorithms if a != "in_network"]), ranks, sizes, bws, lats)
def test_no_all_reduce_beats_bandwidth_bound(alg, p, n, bw, alpha):
    t = cm.collective_time("all_reduce", n, p, bw, alpha, alg)
    assert t >= cm.lower_bound_time(n, p, bw) * (1 - 1e-12)
    # so busbw never exceeds the link bandwidth without in-network reduction
    assert cm.busbw("all_reduce", n, t, p) <= bw * (1 + 1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=9), sizes, bws)
def test_ring_and_halving_doubling_agree_on_bandwidth_for_powers_of_two(k, n, bw):
    p = 2**k
    ring = cm.collective_time("all_reduce", n, p, bw, 0.0, "ring")
    rab = cm.collective_time("all_reduce", n, p, bw, 0.0, "halving_doubling")
    assert np.isclose(ring, rab)
    assert np.isclose(cm.collective_time("all_gather", n, p, bw, 0, "ring"),
                      cm.collective_time("all_gather", n, p, bw, 0, "recursive_doubling"))


@settings(max_examples=100, deadline=None)
@given(sizes, bws, lats)
def test_two_ranks_ring_tree_and_halving_doubling_coincide(n, bw, alpha):
    assert np.isclose(cm.collective_time("all_reduce", n, 2, bw, alpha, "ring"),
                      cm.collective_time("all_reduce", n, 2, bw, alpha, "halving_doubling"))
    assert np.isclose(cm.collective_time("broadcast", n, 2, bw, alpha, "ring"),
                      cm.collective_time("broadcast", n, 2, bw, alpha, "binomial_tree"))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["dgx-a100", "dgx-h100", "pcie-8gpu", "dgx-1-v100"]), st.integers(1, 8),
       st.lists(sizes, min_size=2, max_size=20))
def test_predict_busbw_below_link_without_in_network(system, nodes, ns):
    pred = cm.predict("all_reduce", np.sort(ns), system, nodes=nodes, algorithm="ring", achievable=False)
    f = cm.fabric(system, achievable=False)
    assert np.all(pred.busbw <= f.intra_bw * (1 + 1e-9))
    assert np.all(np.diff(pred.time_s) >= 0)


@settings(max_examples=60, deadline=None)
@given(st.floats(max_value=-1e-3, min_value=-1e12))
def test_negative_sizes_refused(n):
    try:
        cm.predict("all_reduce", n, "dgx-h100")
    except ValueError as exc:
        assert "nbytes" in str(exc)
    else:
        raise AssertionError("negative size accepted")
