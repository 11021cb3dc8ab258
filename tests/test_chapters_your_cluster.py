"""Chapter 09 explorer: the system-file machine scaled out, beside its published run."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import costmodel, units  # noqa: E402
from course_lib.chapters import your_cluster as yc  # noqa: E402


def test_example_machine_and_its_run():
    box = yc.example_system()
    assert box.id == "rtx4090x4-p2p" and box.gpus_per_node == 4
    rows = yc.measured_run()["rows"]
    assert [r["size"] for r in rows] == [2**28, 2**29, 2**30] and rows[-1]["busbw"] == 25.95


def test_readout_is_the_cost_model():
    one = costmodel.predict("all_reduce", 2**30, yc.example_system()).busbw[0]
    four = costmodel.predict("all_reduce", 2**30, yc.scaled(8, 25), nodes=4).busbw[0]
    text = yc._readout(4, 8, 25.0)
    assert f"{one / units.GB:.3g} GB/s" in text and f"{four / units.GB:.3g} GB/s" in text
    assert f"{four / one:.0%} of one box" in text and four < one  # 8 x 25 Gb/s cannot keep up with PCIe


def test_explorer_builds_without_a_frontend():
    box = yc.scaling_explorer()
    controls = {c.description: c for c in box.children if hasattr(c, "description")}
    assert {"boxes", "NIC ports per box"} <= set(controls)
    controls["boxes"].value = 16
    readout = next(c for c in box.children if "course-readout" in c._dom_classes)
    assert "16 box(es)" in readout.value
    plt.close("all")


def test_explorer_validates():
    with pytest.raises(ValueError, match="nodes"):
        yc.scaling_explorer(nodes=3)
    with pytest.raises(ValueError, match="nic_gbit_s"):
        yc.scaling_explorer(nic_gbit_s=5000)


def test_explorer_moves_the_scaled_curve_and_hides_it_for_one_box():
    box = yc.scaling_explorer()
    lines = list(box.axes.lines)
    labels = lambda: [t.get_text() for t in box.axes.get_legend().get_texts()]  # noqa: E731
    assert len(labels()) == 3
    box.render(nodes=1)
    assert list(box.axes.lines) == lines and len(labels()) == 2
    box.render(nodes=16, nic_gbit_s=100.0)
    assert list(box.axes.lines) == lines and labels()[-1].startswith("16 boxes")
    many = costmodel.predict("all_reduce", yc.SIZES, yc.scaled(2, 100.0), nodes=16).busbw / units.GB
    assert list(lines[-1].get_ydata()) == list(many)
    plt.close("all")
