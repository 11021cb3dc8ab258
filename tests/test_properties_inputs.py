"""Hypothesis: public functions given any input raise only ValueError naming the parameter, or return finite numbers.

One parameter at a time gets anything (None, bools, huge ints, NaN, inf, strings, bytes, nested
lists, 2-D arrays, objects whose ``__float__`` raises) while the others stay valid. The outcome is
either a ValueError whose message names that parameter, or a result with no inf and no NaN in it.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_lib import cli_predict, collectives, costmodel, units, validate


class Hostile:
    """A learner's object whose conversions all raise."""

    def __float__(self):
        raise RuntimeError("no float for you")

    def __index__(self):
        raise RuntimeError("no int for you")

    def __str__(self):
        raise RuntimeError("no str for you")


anything = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**400),
    st.floats(), st.floats(min_value=-1e3, max_value=1e20), st.sampled_from([5e-324, 1e-300, 1e300, 1.7e308]), st.text(max_size=12), st.binary(max_size=8),
    st.complex_numbers(), st.lists(st.floats(), max_size=3), st.lists(st.lists(st.integers(), max_size=2), max_size=2),
    st.just(np.ones((2, 2)) * 1e6), st.just(np.array([])), st.just(Hostile()), st.just(object()),
    st.sampled_from(["16G", "1e400", "1e400G", "nan", "inf", "-1", "8b", "0x10", "1_000", " 64 KiB ", "1.5 GB",
                     "9" * 400, "1e-400", "", "G"]),
)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _finite(result) -> bool:
    if isinstance(result, int):  # an unbounded integer parameter: exact, never inf or NaN
        return True
    arr = np.asarray(result, dtype=float)
    return bool(np.all(np.isfinite(arr)))


def outcome(call, name):
    """Run ``call``: a ValueError must name ``name``; anything else must be finite. Returns the result or None."""
    try:
        result = call()
    except ValueError as exc:
        assert name in str(exc), f"ValueError does not name {name!r}: {exc}"
        return None
    return result


@SETTINGS
@given(anything)
def test_parse_size(value):
    result = outcome(lambda: units.parse_size(value), "size")
    if result is not None:
        assert isinstance(result, float) and math.isfinite(result) and result >= 0


@SETTINGS
@given(st.from_regex(r"\A\s?[0-9]{0,400}\.?[0-9]{1,3}([eE][+-]?[0-9]{1,4})?\s?[kKmMgGtTpP]?i?[bB]?\Z"))
def test_parse_size_of_size_like_text(text):
    result = outcome(lambda: units.parse_size(text, name="max_bytes"), "max_bytes")
    if result is not None:
        assert math.isfinite(result) and 0 <= result <= units.MAX_SIZE_BYTES


@SETTINGS
@given(st.one_of(anything, st.from_regex(r"\A[0-9]{1,4}(\.[0-9])?([eE][0-9]{1,3})? ?[kKmMgGtT]?[bB]/s\Z")))
def test_parse_bandwidth(value):
    result = outcome(lambda: units.parse_bandwidth(value), "bandwidth")
    if result is not None:
        assert math.isfinite(result) and result >= 0


@SETTINGS
@given(anything, st.sampled_from(["format_bytes", "format_bandwidth", "format_time", "bits_to_bytes",
                                  "bytes_to_bits", "gbit_to_gbyte", "per_direction", "bidirectional"]))
def test_unit_conversions_and_formats(value, func):
    names = {"format_bytes": "nbytes", "format_bandwidth": "bytes_per_s", "format_time": "seconds",
             "bits_to_bytes": "bits", "bytes_to_bits": "nbytes", "gbit_to_gbyte": "gbit_per_s",
             "per_direction": "bidirectional_bw", "bidirectional": "per_direction_bw"}
    result = outcome(lambda: getattr(units, func)(value), names[func])
    if result is not None and not isinstance(result, str):
        assert _finite(result)


@SETTINGS
@given(anything)
def test_validate_helpers_name_the_parameter(value):
    for call in (lambda: validate.number("width", value, low=0, high=10), lambda: validate.integer("width", value, low=1),
                 lambda: validate.positive("width", value), lambda: validate.fraction("width", value),
                 lambda: validate.choice("width", value, ("a", "b")), lambda: validate.sizes("width", value)):
        result = outcome(call, "width")
        if result is not None and not isinstance(result, str):
            assert _finite(result)


VALID = {"collective": "all_reduce", "nbytes": 2**20, "ranks": 8, "bandwidth": 100e9, "latency": 5e-6,
         "algorithm": "ring"}


@SETTINGS
@given(st.sampled_from(sorted(VALID)), anything)
def test_collective_time(param, value):
    kwargs = dict(VALID, **{param: value})
    name = {"collective": "collective", "algorithm": "algorithm"}.get(param, param)
    result = outcome(lambda: costmodel.collective_time(**kwargs), name)
    if result is not None:
        assert _finite(result) and np.all(np.asarray(result) >= 0)


@SETTINGS
@given(st.sampled_from(collectives.ids()), st.integers(min_value=1, max_value=10_000_000),
       st.floats(min_value=0, max_value=units.MAX_SIZE_BYTES), st.floats(min_value=1.0, max_value=1e15),
       st.floats(min_value=0, max_value=1.0))
def test_collective_time_is_finite_over_the_allowed_ranges(collective, ranks, nbytes, bandwidth, latency):
    for algorithm in collectives.get(collective).algorithms:
        assert math.isfinite(costmodel.collective_time(collective, nbytes, ranks, bandwidth, latency, algorithm))


PREDICT = {"collective": "all_reduce", "nbytes": [2**10, 2**20], "system": "dgx-h100", "gpus_per_node": 8,
           "nodes": 2, "algorithm": "auto", "nics_per_node": None}


@SETTINGS
@given(st.sampled_from(sorted(PREDICT)), anything)
def test_predict(param, value):
    kwargs = dict(PREDICT, **{param: value})
    name = {"system": "system", "nics_per_node": "nics"}.get(param, param)
    pred = outcome(lambda: costmodel.predict(**kwargs), name)
    if pred is not None:
        assert pred.nbytes.ndim == 1
        assert _finite(pred.time_s) and _finite(pred.algbw) and _finite(pred.busbw)


@SETTINGS
@given(st.sampled_from(["nbytes", "time_s"]), anything)
def test_algbw_and_busbw(param, value):
    kwargs = {"nbytes": 2**20, "time_s": 1e-5, param: value}
    for call in (lambda: costmodel.algbw(**kwargs), lambda: costmodel.busbw("broadcast", ranks=4, **kwargs)):
        result = outcome(call, param)
        if result is not None:
            assert _finite(result)


@SETTINGS
@given(st.sampled_from(["min_bytes", "max_bytes", "factor", "step"]), anything)
def test_sweep(param, value):
    kwargs = {"min_bytes": "32K", "max_bytes": "16G", "factor": 2.0, "step": None, param: value}
    result = outcome(lambda: cli_predict.sweep(**kwargs), param)
    if result is not None:
        assert result.ndim == 1 and 1 <= result.size <= cli_predict.MAX_ROWS and _finite(result)


@pytest.mark.parametrize("collective", collectives.ids())
def test_one_rank_has_no_bus_bandwidth(collective):
    pred = costmodel.predict(collective, [2**30], "dgx-h100", gpus_per_node=1)
    assert pred.ranks == 1 and float(pred.busbw[0]) == 0.0
    assert "busbw is 0" in cli_predict.format_table(pred)


def _exercise_ids():
    from course_lib import checks

    return [eid for chapter in checks.chapters() for eid in checks.exercises(chapter)]


@SETTINGS
@given(st.sampled_from(_exercise_ids()), st.one_of(anything, st.just(lambda *args, **kwargs: 1 / 0)))
def test_check_never_raises_on_any_answer(exercise_id, answer):
    from course_lib import checks

    result = checks.evaluate(exercise_id, answer)
    assert result.status in ("correct", "wrong", "not answered") and str(result)
