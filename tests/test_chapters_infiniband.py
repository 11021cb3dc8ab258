"""Chapter 05 library: link arithmetic, the two-level all-reduce, rails, ranks, data, checker, explorer."""
import json
from importlib import resources

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import checks, costmodel, datafiles, hardware, units  # noqa: E402
from course_lib.chapters import infiniband as ib  # noqa: E402
from course_lib.exercises import ch05  # noqa: E402


# ---------------------------------------------------------------- link arithmetic

def test_ib_generations_are_bits_per_direction():
    rows = {r["id"]: r for r in ib.ib_generations()}
    assert [rows[i]["gbit_s_per_direction"] for i in ib.IB_GENERATIONS] == [100, 200, 400, 800]
    assert [rows[i]["gb_s_per_direction"] for i in ib.IB_GENERATIONS] == [12.5, 25, 50, 100]
    assert rows["ib-ndr"]["gb_s_bidirectional"] == 100
    assert all(r["source"].startswith("https://") for r in rows.values())


def test_ndr200_is_25_gb_s_per_direction_not_100():
    assert hardware.network("ib-ndr200").per_direction == 25e9


def test_dgx_h100_injection_nvlink_and_ratio():
    assert ib.node_injection("dgx-h100") == pytest.approx(400e9)
    assert ib.node_nvlink("dgx-h100") == pytest.approx(3.6e12)
    assert ib.intra_inter_ratio("dgx-h100") == pytest.approx(9.0)
    assert ib.intra_inter_ratio("dgx-a100") == pytest.approx(12.0)


def test_node_injection_of_a_variant_and_bad_system():
    s = hardware.system("dgx-h100").variant(nics_per_node=1, nic_gbit_s=800)
    assert ib.node_injection(s) == pytest.approx(100e9)
    with pytest.raises(ValueError, match="system"):
        ib.node_injection(42)


# ---------------------------------------------------------------- two-level all-reduce

def test_hierarchical_phases_match_the_formula_and_predict():
    ph = ib.hierarchical_phases(10e9, 4, "dgx-h100")
    ideal = 2 * 7 / 8 * 10e9 / 450e9 + 2 * 3 / 4 * (10e9 / 8) / 50e9
    assert ph["time_s"] == pytest.approx(ideal, rel=2e-3)
    # phases + launch add up to costmodel.predict, and the launch is the model's fixed cost
    total = ph["reduce_scatter_s"] + ph["inter_node_s"] + ph["all_gather_s"] + ph["launch_s"]
    assert total == pytest.approx(ph["time_s"])
    assert ph["launch_s"] == pytest.approx(costmodel.launch_latency(), rel=1e-6)
    pred = costmodel.predict("all_reduce", 10e9, "dgx-h100", nodes=4, algorithm="hierarchical", achievable=False)
    assert ph["time_s"] == pytest.approx(float(pred.time_s[0]))
    assert ph["busbw"] == pytest.approx(10e9 / ph["time_s"] * 2 * 31 / 32)


def test_one_node_is_the_ring_and_has_no_network_phase():
    ph = ib.hierarchical_phases("1G", 1, "dgx-h100")
    assert ph["inter_node_s"] == 0
    f = costmodel.fabric("dgx-h100", achievable=False)  # the textbook alpha-beta ring (NCCL's protocols aside)
    ring = f.launch + costmodel.collective_time("all_reduce", 2**30, 8, f.intra_bw, f.intra_hop, "ring")
    assert ph["time_s"] == pytest.approx(ring)


def test_hierarchical_phases_validates():
    with pytest.raises(ValueError, match="nbytes"):
        ib.hierarchical_phases(0, 2)
    with pytest.raises(ValueError, match="nodes"):
        ib.hierarchical_phases(1e9, 0)
    with pytest.raises(ValueError, match="achievable"):
        ib.hierarchical_phases(1e9, 2, achievable="yes")


def test_the_cliff_is_small_with_a_nic_per_gpu_and_steep_with_one_per_node():
    per_gpu = ib.cliff(10e9, "dgx-h100")
    assert 1.5 < per_gpu["hierarchical_slowdown"] < 1.8
    assert 1.1 < per_gpu["ring_slowdown"] < 1.3
    one_nic = ib.cliff(10e9, hardware.system("dgx-h100").variant(nics_per_node=1))
    assert one_nic["hierarchical_slowdown"] > 5
    with pytest.raises(ValueError, match="nodes"):
        ib.cliff(1e9, "dgx-h100", nodes=1)


def test_scaling_curve_drops_at_the_node_boundary():
    c = ib.scaling_curve(1e9, "dgx-h100", max_nodes=16)
    assert list(c["intra_gpus"]) == [2, 4, 8]
    assert list(c["nodes"]) == [2, 4, 8, 16]
    assert c["hierarchical_busbw"][0] < 0.7 * c["intra_busbw"][-1]
    assert all(c["ring_busbw"] <= ib.node_injection("dgx-h100") * 1.0001)
    with pytest.raises(ValueError, match="max_nodes"):
        ib.scaling_curve(1e9, "dgx-h100", max_nodes=1)


# ---------------------------------------------------------------- rails and ranks

def test_same_rail_is_one_switch_other_rail_three():
    topo = ib.rail_topology("dgx-h100", nodes=2)
    assert ib.switch_hops(topo, "n0.gpu0", "n1.gpu0") == 1
    assert ib.switch_hops(topo, "n0.gpu5", "n1.gpu5") == 1
    assert ib.switch_hops(topo, "n0.gpu0", "n1.gpu3") == 3
    with pytest.raises(ValueError, match="a must"):
        ib.switch_hops(topo, "leaf0", "n1.gpu0")
    with pytest.raises(ValueError, match="b must"):
        ib.switch_hops(topo, "n0.gpu0", "n0.gpu0")
    with pytest.raises(ValueError, match="topo"):
        ib.switch_hops("fat tree", "n0.gpu0", "n1.gpu0")


def test_rank_arithmetic():
    assert ib.global_rank(2, 3, 8) == 19
    table = ib.rank_table(2, 4)
    assert [r["rank"] for r in table] == list(range(8))
    assert {r["world_size"] for r in table} == {8}
    assert ib.ring_crossings(4, 8) == {"ranks": 32, "nvlink_hops": 28, "network_hops": 4}
    assert ib.ring_crossings(1, 8)["network_hops"] == 0
    with pytest.raises(ValueError, match="local_rank"):
        ib.global_rank(0, 8, 8)
    with pytest.raises(ValueError, match="nproc_per_node"):
        ib.rank_table(2, 0)
    with pytest.raises(ValueError, match="node_rank"):
        ib.global_rank(-1, 0, 8)


# ---------------------------------------------------------------- published data

def test_every_measurement_cites_a_source():
    data = ib.published_multinode()
    for row in data["per_nic"] + data["allreduce"]:
        assert row["source"] in datafiles.bibliography(), row["id"]
        low, high = row.get("achieved_gb_s", row.get("busbw_gb_s"))
        assert 0 < low <= high


def test_transports_rdma_beats_tcp():
    rows = {r["kind"]: r for r in ib.transports_table()}
    assert rows["infiniband"]["efficiency_high"] <= 1.0
    tcp = [r for r in ib.transports_table() if r["kind"] == "tcp"]
    rdma = [r for r in ib.transports_table() if r["kind"] != "tcp"]
    assert max(r["efficiency_low"] for r in tcp) < min(r["efficiency_low"] for r in rdma)


def test_model_vs_measured_rows():
    rows = {r["id"]: r for r in ib.model_vs_measured()}
    h100 = rows["dgx-h100-multinode-ring"]
    # the pipelined ring bound (8 NICs x 50 GB/s) brackets the measurement; the textbook model is below it
    assert h100["measured_low"] <= h100["ring_busbw"] * 1.0001
    assert h100["textbook_busbw"] < h100["measured_low"]
    # two nodes with NCCL's tree beat the NICs' line rate
    tree = rows["a100-2node-2nic-tree"]
    assert tree["measured_low"] > tree["ring_busbw"]
    # the cost model's own multi-node cases are included
    assert "dgx-a100-ring-multinode" in rows
    lines = ib.comparison_lines()
    assert len(lines) == 3 and "per NIC" in lines[0]


def test_data_file_is_valid_json_with_about():
    text = resources.files("course_lib").joinpath("data/published_multinode.json").read_text(encoding="utf-8")
    assert "per direction" in json.loads(text)["_about"]


# ---------------------------------------------------------------- exercise 05.6 checker

def _good(n, N, g, bw, nic):
    return 2 * (g - 1) / g * n / bw + 2 * (N - 1) / N * (n / g) / nic


def test_checker_accepts_the_model_and_explains_mistakes():
    assert checks.evaluate("05.6", _good).correct
    whole_buffer = lambda n, N, g, bw, nic: 2 * (g - 1) / g * n / bw + 2 * (N - 1) / N * n / nic
    ok, msg = ch05.check_hierarchical_time(whole_buffer)
    assert not ok and "1/g" in msg
    ok, msg = ch05.check_hierarchical_time(lambda n, N, g, bw, nic: 2 * (N - 1) / N * (n / g) / nic)
    assert not ok and "inside the node" in msg
    ok, msg = ch05.check_hierarchical_time(lambda *a: "fast")
    assert not ok and "number" in msg


def test_exercise_answers_match_the_library():
    assert checks.evaluate("05.1", "A").correct
    assert checks.evaluate("05.2", 4).correct
    assert checks.evaluate("05.3", hardware.system("azure-nc-h100-nvl").nic_bandwidth_per_gpu / units.GB).correct
    assert checks.evaluate("05.4", ib.intra_inter_ratio("azure-nc-h100-nvl")).correct
    # not the DGX H100 that section 3 prints
    assert not checks.evaluate("05.3", hardware.system("dgx-h100").nic_bandwidth_per_gpu / units.GB).correct
    assert checks.evaluate("05.5", ib.hierarchical_phases(10e9, 4)["time_s"]).correct
    assert checks.evaluate("05.7", ib.global_rank(2, 3, 8)).correct
    # common mistakes get their specific hints
    assert "1/8" in checks.evaluate("05.5", 2 * 7 / 8 * 10e9 / 450e9 + 1.5 * 10e9 / 50e9).message
    assert "bidirectional" in checks.evaluate("05.5", _good(10e9, 4, 8, 900e9, 100e9)).message
    assert "nics_per_node" in checks.evaluate("05.3", 2.5).message
    assert "whole VM" in checks.evaluate("05.3", 10).message
    assert "bidirectional" in checks.evaluate("05.4", 120).message
    assert "whole VM" in checks.evaluate("05.4", 30).message


# ---------------------------------------------------------------- views and the explorer

def test_plots_draw_without_error():
    for fn in (ib.plot_model_vs_measured, ib.plot_transports, ib.draw_rails):
        ax = fn()
        assert ax.get_title()
        plt.close(ax.figure)


def test_explorer_readout_follows_nodes_and_nics():
    box = ib.cliff_explorer()
    assert {"nodes", "gpus_per_node", "nics_per_node"} <= set(box.controls)
    assert "16 node(s)" in box.render(nodes=16, nics_per_node=1)
    plt.close("all")


def test_cliff_view_is_the_scaling_curve_and_the_phases():
    v = ib.cliff_view(4, 8, 400.0, 450.0, 8, 1.0, False)
    sys_ = hardware.system("dgx-h100").variant(gpus_per_node=8, nics_per_node=8, nic_gbit_s=400.0, gpu_link_gb_s=450.0)
    curve = ib.scaling_curve(units.GB, sys_, max_nodes=64)
    assert list(v.gpus) == list(curve["gpus"]) and v.ring_busbw_gb_s[-1] == curve["ring_busbw"][-1] / units.GB
    assert v.busbw_gb_s == ib.hierarchical_phases(units.GB, 4, sys_)["busbw"] / units.GB
    assert v.injection_gb_s == ib.node_injection(sys_) / units.GB


def test_explorer_moves_its_lines_and_drops_the_one_node_curve_at_one_gpu_per_node():
    box = ib.cliff_explorer()
    lines = list(box.axes.lines)
    labels = lambda: [t.get_text() for t in box.axes.get_legend().get_texts()]  # noqa: E731
    assert len(labels()) == 4
    box.render(nodes=256, gpus_per_node=1)
    assert list(box.axes.lines) == lines and len(labels()) == 3 and "256 x 1 GPUs" in labels()[-1]
    v = ib.cliff_view(**box.values())
    assert box.axes.get_ylim()[1] >= max(v.nvlink_gb_s, v.injection_gb_s) and box.axes.get_ylim()[0] == 0
    box.render(gpus_per_node=8)
    assert len(labels()) == 4
    plt.close("all")


def test_explorer_validates():
    with pytest.raises(ValueError, match="nodes"):
        ib.cliff_explorer(nodes=3)
    with pytest.raises(ValueError, match="nic_gbit_s"):
        ib.cliff_explorer(nic_gbit_s=5000)


def test_rail_scope_is_one_scalable_unit_and_sourced():
    data = ib.published_multinode()
    scope = data["rail_scope"]
    assert scope["nodes_per_scalable_unit"] == 32 and "spine" in scope["note"]
    assert all(src in datafiles.bibliography() for src in [scope["source"], *scope["also"]])


def test_validation_failure_plot_shows_every_test_case_and_the_node_sweeps():
    import matplotlib
    matplotlib.use("Agg")
    rows = costmodel.validation_table()
    fig = ib.validation_failure_plot(rows)
    scatter, sweeps = fig.axes
    shown = sum(len(c.get_offsets()) for c in scatter.collections if hasattr(c, "get_offsets") and len(c.get_offsets()))
    assert shown == sum(1 for r in rows if r["role"] == "test")
    n_sweeps = len(costmodel.node_sweep_study(rows))
    assert len(sweeps.get_lines()) >= n_sweeps >= 20     # one line per sweep (more sweeps: those with one multi-node count)
    with pytest.raises(ValueError, match="role"):
        ib.validation_failure_plot(rows, role="train")


def test_collnet_view_shows_busbw_above_the_nic_rate_only_with_in_network_reduction():
    """Chapter 05 section 9: from 4 nodes on CollNet (SHARP) passes the NICs' line rate and the ring does not;
    the published CollNet cases carry fit and test roles, and each test ratio is the model's."""
    v = ib.collnet_view()
    rate = v["nic_line_rate"]
    assert all(b < rate for b in v["busbw"]["ring"]) and all(b > rate for b in v["busbw"]["collnet"][1:])
    roles = {p["role"] for p in v["published"]}
    assert roles == {"fit", "test"} and len(v["published"]) >= 15
    with pytest.raises(ValueError, match="nodes"):
        ib.collnet_view(nodes=(1, 2))
