"""Chapter 03 library: switch-chip layouts, mesh vs switch arithmetic, NVLS traffic, data, views, explorer."""
import json
import math
from importlib import resources

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import checks, costmodel, datafiles, hardware, topology, units  # noqa: E402
from course_lib.chapters import nvswitch as nv  # noqa: E402

H100 = 450e9  # bytes/s per direction (18 x 25 GB/s)


# ---------------------------------------------------------------- data

def test_data_file_is_valid_json_and_every_entry_cites_a_source():
    data = json.loads(resources.files("course_lib").joinpath("data/nvswitch.json").read_text())
    assert data["_about"]
    for lay in data["layouts"].values():
        for sid in [lay["source"], *lay.get("also", [])]:
            assert datafiles.source(sid)["url"].startswith("http")
    for m in data["measurements"]:
        assert datafiles.source(m["source"])["url"].startswith("http")
        assert m["system"] is None or m["system"] in hardware.system_ids()
    assert datafiles.source(data["nvls_by_gpu_count"]["source"])["url"].startswith("http")
    assert datafiles.source(data["switch_system"]["source"])["url"].startswith("http")


def test_layouts_agree_with_the_catalog():
    for lay in map(nv.layout, nv.layout_ids()):
        spread = lay["links_per_gpu_per_chip"]
        assert len(spread) == lay["chips_reached_per_gpu"] <= lay["chips"]
        assert sum(spread) == lay["links_per_gpu"]
        gen = hardware.nvswitch_generations()[lay["nvswitch_generation"] - 1]
        assert hardware.nvlink_generations()[gen["nvlink_generation"] - 1]["links_per_gpu"] == lay["links_per_gpu"]
    for gen in hardware.nvswitch_generations():  # the layout each generation names in hardware.json shows it
        lay = nv.layout(hardware.nvswitch_layout_id(gen["generation"]))
        assert lay["chips"] == gen["chips_in_system"] and lay["nvswitch_generation"] == gen["generation"]


# ---------------------------------------------------------------- generations and ports

def test_generations_ports_and_chip_bandwidth():
    rows = nv.generations()
    catalog = hardware.nvswitch_generations()
    assert [r["generation"] for r in rows] == [g["generation"] for g in catalog]  # one row per catalog generation
    for row, gen in zip(rows, catalog):  # each row is its catalog row: ports x one NVLink port of its generation
        assert row["ports_per_chip"] == gen["ports"]
        assert row["chip_per_direction"] == gen["ports"] * hardware.nvlink(gen["nvlink_generation"], 1).per_direction
        assert row["in_network_reduction"] is bool(gen["in_network_reduction"])
    assert all(r["chip_bidirectional"] == 2 * r["chip_per_direction"] for r in rows)
    # rows of history, looked up by generation (a new generation adds a row and moves none of these)
    by_gen = {r["generation"]: r for r in rows}
    assert {g: by_gen[g]["ports_per_chip"] for g in (1, 2, 3, 4)} == {1: 18, 2: 36, 3: 64, 4: 72}
    assert {g: by_gen[g]["chip_per_direction"] / units.GB for g in (1, 2, 3, 4)} == {1: 450, 2: 900, 3: 1600, 4: 3600}
    assert {g: by_gen[g]["in_network_reduction"] for g in (1, 2, 3, 4)} == {1: False, 2: False, 3: True, 4: True}
    assert by_gen[3]["links_per_gpu_per_chip"] == "5 + 4 + 4 + 5 over 4 chips"
    assert by_gen[2]["links_per_gpu_per_chip"] == "2 to each of 6 chips"


def test_port_budgets_close():
    for sid in nv.layout_ids():
        b = nv.port_budget(sid)
        assert b["gpu_ports"] == b["gpu_links"]
        assert b["unused_ports"] >= 0
        assert b["total_ports"] == b["chips"] * b["ports_per_chip"]
    assert nv.port_budget("dgx-2")["unused_ports"] == 24
    assert nv.port_budget("dgx-2")["trunk_ports"] == 96
    assert nv.port_budget("dgx-h100")["external_ports"] == 72
    assert nv.port_budget("gb200-nvl72")["unused_ports"] == 0
    assert nv.port_budget("dgx-b200")["unused_ports"] == 0


def test_port_arithmetic():
    assert nv.ports_needed(8, 12) == 96
    assert nv.min_switch_chips(8, 12, 36) == 3
    assert nv.min_switch_chips(72, 18, 72) == 18
    assert nv.min_switch_chips(8, 18, 64) == 3
    assert nv.spread_links(18, 4) == [5, 5, 4, 4]
    assert nv.spread_links(12, 6) == [2] * 6
    assert sum(nv.spread_links(17, 5)) == 17


# ---------------------------------------------------------------- mesh vs switch

def _mesh(gpus, per_gpu_bw):
    topo = topology.Topology(name="mesh")
    for i in range(gpus):
        topo.add(f"gpu{i}", "gpu")
    for a in range(gpus):
        for b in range(a + 1, gpus):
            topo.connect(f"gpu{a}", f"gpu{b}", per_gpu_bw / (gpus - 1))
    return topo


@pytest.mark.parametrize("gpus", [2, 4, 6, 8])
def test_bisection_formulas_match_topology_max_flow(gpus):
    assert nv.mesh_bisection(gpus, H100) == pytest.approx(_mesh(gpus, H100).bisection_bandwidth())
    assert nv.switch_bisection(gpus, H100) == pytest.approx(nv.switch_topology(gpus, H100).bisection_bandwidth())


def test_dgx_bisections_and_the_nvl72_headline():
    assert nv.switch_bisection(8, H100) == pytest.approx(1.8e12)
    assert topology.nvswitch_system("dgx-h100").bisection_bandwidth() == pytest.approx(1.8e12)
    assert nv.mesh_pair_bandwidth(8, H100) == pytest.approx(H100 / 7)
    nvl72 = nv.domain_summary("gb200-nvl72")
    assert nvl72["aggregate_bidirectional"] == pytest.approx(129.6e12)  # NVIDIA's "130 TB/s"
    assert nvl72["bisection"] == pytest.approx(32.4e12)
    assert nvl72["aggregate_bidirectional"] / nvl72["bisection"] == pytest.approx(4)


@pytest.mark.parametrize("sid", ["dgx-a100", "dgx-h100"])
def test_chip_level_drawing_has_the_same_bisection_as_one_switch(sid):
    chips = nv.chip_topology(sid)
    merged = topology.nvswitch_system(sid)
    assert chips.bisection_bandwidth() == pytest.approx(merged.bisection_bandwidth())
    assert chips.pair_bandwidth("gpu0", "gpu7") == pytest.approx(merged.pair_bandwidth("gpu0", "gpu7"))


# ---------------------------------------------------------------- all-reduce traffic

def test_wire_factors_and_busbw_over_wire():
    assert nv.wire_factor("ring", 8) == pytest.approx(1.75)
    assert nv.wire_factor("nvls", 8) == 1.0
    assert nv.wire_factor("nvls_refined", 8) == pytest.approx(9 / 8)
    assert nv.busbw_over_wire(8, "ring") == pytest.approx(1.0)
    assert nv.busbw_over_wire(8, "nvls_refined") == pytest.approx(14 / 9)
    assert nv.busbw_over_wire(2, "nvls_refined") < 1  # NVLS moves more than a ring on 2 GPUs
    assert nv.bytes_per_gpu(1e9, 8, "ring") == pytest.approx(1.75e9)


def test_all_reduce_times_match_the_cost_model():
    t = nv.all_reduce_times(4e9, 8, H100, latency=0)
    assert t["switch_ring"] == pytest.approx(costmodel.lower_bound_time(4e9, 8, H100))
    assert t["switch_ring"] == pytest.approx(0.015555, rel=1e-3)
    assert t["switch_nvls"] == pytest.approx(4e9 / H100)
    assert t["mesh_all_wires"] == pytest.approx(t["switch_ring"])  # a perfect mesh matches the switch
    assert t["mesh_one_ring"] == pytest.approx(7 * t["switch_ring"])
    assert nv.all_reduce_times(4e9, 8, H100)["switch_ring"] > t["switch_ring"]  # default latency adds


def test_pcie_tree_and_fabric_comparison():
    tree = nv.pcie_tree_numbers(8, 4)
    assert tree["bisection"] == pytest.approx(2 * 31.5e9, rel=0.01)  # two switch uplinks; Rome's xGMI is wider
    assert nv.pcie_tree_numbers(8, 6)["bisection"] == pytest.approx(128e9)  # the (assumed) socket link
    # chapter 03: with era-matched socket links a ring is slot-bound up to Gen6, socket-bound only at Gen7
    for g in (3, 4, 5, 6):
        assert nv.pcie_tree_numbers(8, g)["ring_bw"] == pytest.approx(hardware.pcie_link(g, 16).per_direction)
    assert nv.pcie_tree_numbers(8, 7)["ring_bw"] < hardware.pcie_link(7, 16).per_direction
    assert tree["link"] == pytest.approx(hardware.pcie_link(4, 16).per_direction)
    rows = nv.fabric_comparison(8, H100, 1e9)
    assert [r["fabric"].split()[0] for r in rows] == ["NVSwitch", "full", "PCIe"]
    switch, mesh, pcie = rows
    assert switch["bisection"] > mesh["bisection"] > pcie["bisection"]
    assert switch["all_reduce_nvls_s"] < switch["all_reduce_s"] < mesh["all_reduce_s"]
    assert mesh["all_reduce_all_wires_s"] == pytest.approx(switch["all_reduce_s"])
    big = nv.fabric_comparison(32, H100, 1e9)  # no PCIe tree of 32 GPUs; a mesh only with 31 NVLinks per GPU
    most_links = max(row["links_per_gpu"] for row in hardware.nvlink_generations())
    assert len(big) == 2 and big[1]["buildable"] == (32 - 1 <= most_links)


# ---------------------------------------------------------------- measurements

def test_measurements_busbw_exceeds_line_rate_only_with_nvls():
    rows = nv.nvls_measurements()
    assert rows
    for r in rows:
        if r["algorithm"] == "ring":
            assert r["busbw_over_line"] < 0.9
        if r["system"].startswith("NVIDIA DGX H") and r["algorithm"] != "ring":
            assert r["busbw_over_line"] > 1.0
    a100 = [r for r in rows if "A100" in r["system"]]
    assert a100 and all(r["busbw_over_line"] < 1 for r in a100)


def test_model_tracks_the_nvls_scan_where_nvls_helps():
    rows = nv.nvls_by_gpu_count()
    assert [r["gpus"] for r in rows] == list(range(2, 9))
    for r in rows:
        assert r["model_ring"] == pytest.approx(r["measured_ring"], rel=0.05)
        if r["gpus"] >= 5:
            assert r["model_nvls"] == pytest.approx(r["measured_nvls"], rel=0.06)
        assert r["model_best"] == max(r["model_ring"], r["model_nvls"])


def test_size_sweeps():
    h200 = nv.size_sweep("dgx-h200")
    assert h200["nvls"] is not None and len(h200["sizes"]) == len(h200["measured"])
    assert h200["nvls"].max() > h200["line_rate"]
    assert nv.size_sweep("dgx-a100")["nvls"] is None
    with pytest.raises(ValueError, match="system_id"):
        nv.size_sweep("gb200-nvl72")


# ---------------------------------------------------------------- exercises

def test_exercise_answers_match_the_library():
    a100 = hardware.nvlink(3).per_direction
    assert checks.evaluate("03.1", nv.switch_bisection(8, a100) / units.GB).correct
    assert "DGX H100" in checks.evaluate("03.1", nv.switch_bisection(8, H100) / units.GB).message
    assert checks.evaluate("03.2", nv.all_reduce_times(4e9, 8, H100, latency=0)["switch_ring"]).correct
    times = nv.all_reduce_times(4e9, 8, H100, latency=0)
    assert times["switch_ring"] / times["switch_nvls"] == pytest.approx(1.75)  # 03.3's prediction, B
    assert checks.evaluate("03.3", "D").correct
    assert checks.evaluate("03.4", costmodel.algbw(8589934592, 31357e-6) / units.GB).correct
    assert checks.evaluate("03.6", nv.min_switch_chips(16, 18, 64)).correct
    # 03.7: half of the 32 nodes of the NVLink Switch System, each through its external links
    ss = nv.nvswitch_data()["switch_system"]
    leaving = ss["external_links_per_node"] * hardware.nvlink(4, 1).per_direction
    assert checks.evaluate("03.7", ss["nodes"] / 2 * leaving / 1e12).correct
    wrong = checks.evaluate("03.7", ss["nodes"] * leaving / 1e12)
    assert not wrong.correct and "all 32 nodes" in wrong.message


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, name", [
    (lambda: nv.switch_bisection(7, H100), "gpus"),
    (lambda: nv.mesh_bisection(8, -1), "per_gpu_bw"),
    (lambda: nv.mesh_pair_bandwidth(1, H100), "gpus"),
    (lambda: nv.switch_topology(2, 0), "per_gpu_bw"),
    (lambda: nv.layout("dgx-9"), "system_id"),
    (lambda: nv.port_budget("nope"), "system_id"),
    (lambda: nv.chip_topology("dgx-1"), "system_id"),
    (lambda: nv.chip_topology("dgx-2"), "system_id"),
    (lambda: nv.domain_summary("dgx-1-v100"), "system_id"),
    (lambda: nv.domain_summary("nope"), "system_id"),
    (lambda: nv.wire_factor("tree", 8), "algorithm"),
    (lambda: nv.wire_factor("ring", 1), "gpus"),
    (lambda: nv.bytes_per_gpu(0, 8), "nbytes"),
    (lambda: nv.min_switch_chips(8, 12, 0), "ports_per_chip"),
    (lambda: nv.ports_needed(0, 12), "gpus"),
    (lambda: nv.spread_links(4, 5), "chips"),
    (lambda: nv.all_reduce_times(1e9, 8, H100, latency=-1), "latency"),
    (lambda: nv.all_reduce_times(-1, 8, H100), "nbytes"),
    (lambda: nv.pcie_tree_numbers(32), "gpus"),
    (lambda: nv.pcie_tree_numbers(8, 9), "generation"),
    (lambda: nv.fabric_comparison(8, H100, 0), "nbytes"),
    (lambda: nv.aggregate_bidirectional(0, H100), "gpus"),
    (lambda: nv.draw_systems("dgx-a100"), "names"),
    (lambda: nv.draw_chips([]), "system_ids"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ---------------------------------------------------------------- views and the explorer

def test_tables_and_figures_render():
    nv.show_generations()
    nv.show_port_budgets()
    nv.show_fabric_comparison()
    nv.show_real_systems()
    nv.show_nvls_measurements()
    for fig in (nv.draw_systems(), nv.draw_chips(), nv.plot_measurements()):
        assert fig.axes
    plt.close("all")


def test_explorer_readout_follows_gpus_and_links():
    handle = nv.fabric_explorer()
    assert {"gpus", "link_gb_s", "size_gb", "pcie_generation"} == set(handle.controls)
    assert "NVSwitch" in handle.readout and "PCIe" in handle.readout
    readout = handle.render(gpus=64)
    assert "do not fit" in readout and "not buildable" in readout
    assert "900 GB/s" in handle.render(pcie_generation=5, link_gb_s=900.0)
    plt.close("all")


def test_explorer_validates():
    with pytest.raises(ValueError, match="gpus"):
        nv.fabric_explorer(gpus=3)
    with pytest.raises(ValueError, match="link_gb_s"):
        nv.fabric_explorer(link_gb_s=5000)
    with pytest.raises(ValueError, match="size_gb"):
        nv.fabric_explorer(size_gb=0)
    with pytest.raises(ValueError, match="pcie_generation"):
        nv.fabric_explorer(pcie_generation=2)


def test_ring_time_grows_little_with_gpu_count_on_a_switch():
    t8 = nv.all_reduce_times(1e9, 8, H100, latency=0)["switch_ring"]
    t256 = nv.all_reduce_times(1e9, 256, H100, latency=0)["switch_ring"]
    assert t256 / t8 == pytest.approx((2 * 255 / 256) / 1.75)
    assert math.isclose(nv.switch_bisection(256, H100) / nv.switch_bisection(8, H100), 32)


def test_fabric_series_is_the_model_the_explorer_draws():
    s = nv.fabric_series(8, 450.0, 1.0, 4)
    i = list(s.counts).index(8)
    assert s.switch_ring[i] == nv.all_reduce_times(1e9, 8, H100)["switch_ring"]
    assert s.mesh_bis[i] == nv.mesh_bisection(8, H100)
    assert list(s.tree_gpus) == [p for p in nv.GPU_COUNTS if p <= nv.PCIE_TREE_MAX_GPUS]
    assert s.tree_bis[-1] == nv.pcie_tree_numbers(16, 4)["bisection"]
    ex = nv.fabric_explorer()
    lines = [list(ax.lines) for ax in ex.axes]
    ex.render(pcie_generation=5, size_gb=10.0)
    assert [list(ax.lines) for ax in ex.axes] == lines  # the same artists, moved in place
    assert lines[0][0].get_ydata()[i] == nv.fabric_series(8, 450.0, 10.0, 5).switch_ring[i]
    assert "Gen5" in ex.figure.legends[0].get_texts()[-1].get_text()  # one legend, under both panels
    plt.close("all")
