"""evidence: a measurement with its source; model-vs-measured rows; and the tables built on it."""
import math

import pytest

from course_lib import costmodel, evidence, parallel
from course_lib.chapters import infiniband, nvlink, nvswitch, pcie, planner


def test_a_comparison_row_carries_ratio_unit_and_citation():
    m = evidence.measurement(370.0, "GB/s per direction", "nccl-tests-212", high=380.0)
    c = evidence.compare("h100-ring", 405.0, m)
    assert m.mid == 375.0 and c.ratio == pytest.approx(405 / 375) and c.measured_over_model == pytest.approx(375 / 405)
    row = c.row()
    assert row["url"] == "https://github.com/NVIDIA/nccl-tests/issues/212" and row["unit"] == "GB/s per direction"
    assert (row["measured_low"], row["measured_high"]) == (370.0, 380.0)
    assert c.within(0.1) and not c.within(0.05)
    here = evidence.measurement(1.0, "s")
    assert here.citation["title"] == "measured on this machine"


def test_summary_median_and_worst():
    cs = [evidence.compare(i, model, evidence.measurement(10.0, "GB/s", "nccl-tests-290"))
          for i, model in enumerate((9.0, 10.0, 11.0, 20.0))]
    s = evidence.summary(cs, tolerance=0.2)
    assert s["cases"] == 4 and s["within"] == 3 and s["worst_case"] == "3" and s["worst_ratio"] == 2.0
    assert s["median_ratio"] == pytest.approx(1.05)
    assert math.isnan(evidence.compare("zero", 1.0, evidence.measurement(0.0, "GB/s")).ratio)


@pytest.mark.parametrize("call, name", [
    (lambda: evidence.measurement("fast", "GB/s"), "value"),
    (lambda: evidence.measurement(1.0, ""), "unit"),
    (lambda: evidence.measurement(2.0, "GB/s", high=1.0), "high"),
    (lambda: evidence.measurement(1.0, "GB/s", "no-such-paper"), "source_id"),
    (lambda: evidence.compare("x", float("nan"), evidence.measurement(1.0, "GB/s")), "model"),
    (lambda: evidence.compare("x", 1.0, 1.0), "measured"),
    (lambda: evidence.within(1.0, -0.1), "tolerance"),
    (lambda: evidence.median([]), "values"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_the_library_comparison_tables_agree_with_evidence():
    """Each table's ratio is evidence's model/measured (or measured/model for a spec), with a resolvable source."""
    for r in costmodel.validation_table():
        assert r["ratio"] == pytest.approx(r["predicted_busbw"] / r["measured_busbw"])
    for r in parallel.validation_table():
        assert r["ratio"] == pytest.approx(r["predicted"] / r["measured"]) and r["url"].startswith("https://")
    for r in planner.published_comparison():
        assert r["ratio"] == pytest.approx(r["predicted"] / r["published"])
    for r in nvlink.measurements():
        assert r["ratio"] == pytest.approx(r["measured_gb_s"] / r["spec_gb_s"])
    for r in pcie.measurements():
        assert r["fraction_of_spec"] == pytest.approx(r["gb_s_mid"] / r["spec_gb_s"])
    for r in infiniband.model_vs_measured():
        mid = (r["measured_low"] + r["measured_high"]) / 2
        assert r["ratio"] == pytest.approx(r["model_busbw"] / mid) and r["source"].startswith("https://")
    for r in nvswitch.nvls_by_gpu_count():
        assert r["ratio_nvls"] == pytest.approx(r["model_nvls"] / r["measured_nvls"])
    mv = nvlink.model_vs_measured()
    assert mv["ratio"] == pytest.approx(mv["achievable_busbw_gb_s"] / mv["measured_gb_s"]) and mv["url"].startswith("https://")
