"""Chapter 10 / chapter 07 explorers: expert-parallel and context-parallel numbers, readouts and the live widgets."""
import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

from course_lib import parallel  # noqa: E402
from course_lib.chapters import moe  # noqa: E402


def test_ep_layer_costs_follow_the_link():
    rows = {r["ep"]: r for r in moe.ep_scan("deepseek-v3", "dgx-h100")}
    assert rows[1]["a2a_s"] == 0 and not rows[8]["crosses_nodes"] and rows[16]["crosses_nodes"]
    assert rows[64]["off_node_share"] == pytest.approx(56 / 64)
    assert rows[64]["a2a_s"] > 5 * rows[8]["a2a_s"]                  # the NIC share is ~8x below NVLink
    assert rows[8]["expert_state_bytes_per_layer"] == pytest.approx(8 * rows[64]["expert_state_bytes_per_layer"])
    m = parallel.model("deepseek-v3")
    assert rows[8]["bytes"] == pytest.approx(4096 * 8 * 7168 * 2)
    skew = moe.ep_layer_costs("deepseek-v3", ep=8, imbalance=1.5)
    assert skew["compute_s"] == pytest.approx(1.5 * rows[8]["compute_s"]) and m.top_k == 8


def test_moe_variant_and_errors():
    v = moe.moe_variant("mixtral-8x7b", experts=16, top_k=4)
    assert v.experts == 16 and v.top_k == 4 and v.params > parallel.model("mixtral-8x7b").params
    with pytest.raises(ValueError, match="base"):
        moe.moe_variant("llama3-8b")
    with pytest.raises(ValueError, match="top_k"):
        moe.moe_variant("mixtral-8x7b", top_k=9)
    assert "does not divide" in moe._ep_readout(8, 2, 16, 1.0, base="mixtral-8x7b")


def test_cp_scan_and_readout():
    rows = {r["cp"]: r for r in moe.cp_scan("llama3-8b", "dgx-h100", seq_len=131072)}
    assert rows[8]["hidden"] and not rows[64]["hidden"]
    assert rows[2]["activation_bytes"] == pytest.approx(2 * rows[4]["activation_bytes"])
    assert "EXPOSED" in moe._cp_readout("llama3-8b", 8192, 16) and "hidden" in moe._cp_readout("llama3-8b", 131072, 8)


def test_chapters_build_and_react():
    ep = moe.expert_parallel_explorer()
    before = ep.readout
    ep.controls["ep"].value = 64
    assert ep.readout != before and "leaves the node" in ep.readout
    cp = moe.context_parallel_explorer()
    cp.controls["cp"].value = 64
    assert "EXPOSED" in cp.readout


def test_frames_and_in_place_updates():
    f = moe.ep_frame(8, 2, 4, 1.0, base="mixtral-8x7b")
    assert [lbl.split("\n")[0] for lbl in f.labels] == ["EP 1", "EP 2", "EP 4", "EP 8"] and f.chosen == 2
    assert moe.ep_frame(8, 2, 64, 1.0, base="mixtral-8x7b").chosen is None  # 64 does not divide 8 experts
    ep = moe.expert_parallel_explorer()
    time_ax, memory_ax = ep.axes
    bars, memory = list(time_ax.patches), list(memory_ax.patches)
    ep.render(imbalance=2.0)  # same degrees: the same bars, new heights
    assert list(time_ax.patches) == bars and list(memory_ax.patches) == memory
    frame = moe.ep_frame(**ep.values())
    assert [b.get_height() for b in bars[:len(frame.comm)]] == list(frame.comm)
    assert [b.get_height() for b in memory] == pytest.approx(list(moe.ep_memory(**ep.values())["gb"]))
    ep.render(experts=8)  # fewer degrees: drawn again with as many bars as degrees
    assert len([b for b in time_ax.patches if b.get_visible()]) == 2 * len(moe.ep_frame(**ep.values()).labels) + 1
    assert len(memory_ax.patches) == len(moe.ep_memory(**ep.values())["labels"])
    cp = moe.context_parallel_explorer()
    cp.render(seq_len=1048576)
    frame = moe.cp_frame(**cp.values())
    assert cp.axes.get_ylim()[1] >= max(frame.compute) and cp.axes.get_yscale() == "log"


def test_exercise_answers_follow_from_the_library():
    """Chapter 10's exercises (issue 23: configurations the chapter does not print) agree with the model."""
    from course_lib import grading, hardware
    from course_lib.parallel.links import _members_per_node

    h100 = hardware.resolve_system("dgx-h100")
    # 10.1: s b / t tokens x top-k x h x 2 bytes, as experts.ep_phase sizes a call
    assert grading.expected("10.1") == 8192 * 1 / 4 * 2 * 6144 * 2
    # 10.3 / 10.4: EP 16 with TP 2 keeps 4 members per node; the NIC share bounds the all-to-all
    k = _members_per_node(h100, 16, 2)
    assert grading.expected("10.3") == pytest.approx((16 - k) / 16)
    nic, nvlink = h100.nic_bandwidth_per_gpu, h100.gpu_link.per_direction
    assert (16 - k) / 16 / nic > (k - 1) / 16 / nvlink and grading.expected("10.4") == "A"
    # 10.5: on 40 GB A100s EP 8 alone does not fit; among the layouts that fit, C is fastest: TP 4 (D) cuts every
    # GEMM to a quarter of its width, which the GEMM-shape compute prices (11.3 vs 12.7 s), more than C's bubble
    layouts = {"A": dict(tp=1, ep=8, pp=1), "B": dict(tp=8, ep=8, pp=1), "C": dict(tp=1, ep=8, pp=2),
               "D": dict(tp=4, ep=2, pp=1)}
    runs = {letter: parallel.estimate("mixtral-8x7b", "aws-p4d", gpus=64, global_batch=256, seq_len=4096, zero=1, **kw)
            for letter, kw in layouts.items()}
    fitting = {letter: e.step_time_s for letter, e in runs.items() if e.fits}
    assert not runs["A"].fits and min(fitting, key=fitting.get) == grading.expected("10.5")
