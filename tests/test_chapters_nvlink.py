"""Chapter 02 library: links x rate, full-mesh split, rings on the DGX-1, bridges, measurements, explorer."""
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import checks, grading, costmodel, hardware, topology  # noqa: E402
from course_lib.chapters import nvlink as nv  # noqa: E402
from course_lib.exercises import specs  # noqa: E402


# ---------------------------------------------------------------- links x rate

def test_generations_are_links_times_rate_per_direction():
    rows = {r["generation"]: r for r in nv.generations()}
    assert [rows[g]["links"] for g in range(1, 6)] == [4, 6, 12, 18, 18]
    assert [rows[g]["gb_s_per_direction"] for g in range(1, 6)] == [80, 150, 300, 450, 900]
    assert all(r["gb_s_bidirectional"] == 2 * r["gb_s_per_direction"] for r in rows.values())
    assert all(r["source"].startswith("https://") for r in rows.values())


def test_vendor_quotes_are_bidirectional_and_halve_to_per_direction():
    quotes = {r["gpu"]: r for r in nv.vendor_quotes()}
    assert quotes["A100 (NVLink 3)"]["gb_s_bidirectional"] == 600
    assert quotes["H100 (NVLink 4)"]["gb_s_per_direction"] == 450
    assert quotes["H200 (DGX H200)"]["gb_s_bidirectional"] == 900
    assert quotes["GB200 / B200 (NVLink 5)"]["gb_s_bidirectional"] == 1800
    assert quotes["GB200 / B200 (NVLink 5)"]["gb_s_per_direction"] == 900


def test_gpu_bandwidth_and_bad_input():
    assert nv.gpu_bandwidth(18, 25e9) == pytest.approx(450e9)
    with pytest.raises(ValueError, match="links"):
        nv.gpu_bandwidth(0, 25e9)
    with pytest.raises(ValueError, match="link_bw"):
        nv.gpu_bandwidth(18, 0)


# ---------------------------------------------------------------- full mesh

def test_900_over_7_peers_is_64_per_direction():
    per_peer = nv.per_peer_bandwidth(8, 18, 25e9)
    assert per_peer == pytest.approx(450e9 / 7)
    assert 2 * per_peer == pytest.approx(128.57e9, rel=1e-3)  # the "~128 GB/s" claim is bidirectional
    assert nv.per_peer_bandwidth(8, 12, 25e9) == pytest.approx(300e9 / 7)


def test_per_peer_rejects_bad_input():
    with pytest.raises(ValueError, match="gpus"):
        nv.per_peer_bandwidth(1, 18, 25e9)
    with pytest.raises(ValueError, match="links_per_gpu"):
        nv.per_peer_bandwidth(8, 6, 25e9)  # the DGX-1 case: 6 links, 7 peers
    with pytest.raises(ValueError, match="link_bw"):
        nv.per_peer_bandwidth(8, 18, -1)
    assert not nv.is_full_mesh_possible(8, 6)
    assert nv.is_full_mesh_possible(8, 7)


@pytest.mark.parametrize("gpus,links", [(8, 18), (4, 12), (4, 6), (5, 5), (6, 7), (2, 4), (16, 18)])
def test_mesh_link_counts_are_whole_and_nearly_even(gpus, links):
    counts = nv.mesh_link_counts(gpus, links)
    assert len(counts) == gpus * (gpus - 1) // 2
    base = links // (gpus - 1)
    assert set(counts.values()) <= {base, base + 1}
    degree = [sum(c for pair, c in counts.items() if g in pair) for g in range(gpus)]
    extra = links % (gpus - 1)
    expected = links if not (extra % 2 and gpus % 2) else links - 1  # odd link ends cannot pair up
    assert degree == [expected] * gpus


def test_full_mesh_topology_and_rings():
    mesh = nv.full_mesh(8, 18, 25e9)
    assert len(mesh.gpus) == 8 and len(mesh.links) == 28
    assert mesh.ring_bottleneck()["bandwidth"] in (50e9, 75e9)
    assert mesh.pair_bandwidth("gpu0", "gpu1") == pytest.approx(450e9)  # max flow relays through peers
    with pytest.raises(ValueError, match="link_bw"):
        nv.full_mesh(8, 18, 0)


def test_mesh_allreduce_one_ring_vs_all_links():
    r = nv.mesh_allreduce(1e9, 8, 18, 25e9)
    assert r["one_ring_s"] == pytest.approx(2 * 7 / 8 * 1e9 / (450e9 / 7))
    assert r["all_links_s"] == pytest.approx(2 * 7 / 8 * 1e9 / 450e9)
    assert r["rings_needed"] == 7
    two = nv.mesh_allreduce(1e9, 2, 4, 25e9)
    assert two["one_ring_s"] == pytest.approx(two["all_links_s"])
    with pytest.raises(ValueError, match="nbytes"):
        nv.mesh_allreduce(-1, 8, 18, 25e9)
    assert nv.point_to_point_time(900e9, 450e9) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="bandwidth"):
        nv.point_to_point_time(1e9, 0)


# ---------------------------------------------------------------- rings on the DGX-1

def test_hamiltonian_cycles_of_small_meshes():
    assert len(nv.hamiltonian_cycles(nv.full_mesh(4, 3, 25e9))) == 3   # K4
    assert len(nv.hamiltonian_cycles(nv.full_mesh(5, 4, 25e9))) == 12  # K5: 4!/2
    for cycle in nv.hamiltonian_cycles(topology.dgx1_hybrid_cube_mesh()):
        assert sorted(cycle) == sorted(f"gpu{i}" for i in range(8))
    with pytest.raises(ValueError, match="topo"):
        nv.hamiltonian_cycles(nv.full_mesh(12, 11, 25e9))
    with pytest.raises(ValueError, match="topo"):
        nv.hamiltonian_cycles("dgx-1")


def test_dgx1_one_ring_vs_several():
    r = nv.dgx1_rings(1e9)
    assert r["default_ring_bw"] == pytest.approx(25e9)
    assert r["best_single_ring_bw"] == pytest.approx(50e9)
    assert len(r["packed_rings"]) == 3 and r["packed_directed_rings"] == 6
    assert r["packed_bw"] == pytest.approx(r["gpu_bw"]) == pytest.approx(150e9)
    assert r["default_ring_s"] == pytest.approx(0.07)
    assert r["packed_s"] == pytest.approx(0.07 / 6)
    with pytest.raises(ValueError, match="nbytes"):
        nv.dgx1_rings(0)


def test_rings_bandwidth_matches_topology_for_one_ring_and_checks_input():
    topo = nv.dgx1_topology()
    order = list(topo.ring_order)
    assert nv.rings_bandwidth(topo, [order], both_directions=False) == pytest.approx(
        topo.ring_bottleneck(order)["bandwidth"])
    with pytest.raises(ValueError, match="rings"):
        nv.rings_bandwidth(topo, [["gpu0", "gpu5", "gpu1"]])  # gpu0 and gpu5 are not linked
    with pytest.raises(ValueError, match="rings"):
        nv.rings_bandwidth(topo, [])
    with pytest.raises(ValueError, match="both_directions"):
        nv.rings_bandwidth(topo, [order], both_directions="yes")
    with pytest.raises(ValueError, match="link_bw"):
        nv.direct_links(topo, 20e9)  # 25 and 50 GB/s are not whole numbers of 20 GB/s links


def test_dgx1_direct_links_vs_max_flow():
    rows = {r["peer"]: r for r in nv.dgx1_direct_links()}
    assert sorted(r["links"] for r in rows.values()) == [0, 0, 0, 1, 1, 2, 2]
    assert sum(r["links"] for r in rows.values()) == 6
    assert all(r["max_flow_gb_s"] == pytest.approx(150) for r in rows.values())


# ---------------------------------------------------------------- bridge, PCIe

def test_bridge_vs_pcie():
    rows = {r["id"]: r for r in nv.bridge_vs_pcie(1e9)}
    bridge, pcie = rows["workstation-3090-bridge"], rows["consumer-4090-pcie"]
    assert bridge["link_gb_s_per_direction"] == pytest.approx(56.25)
    assert bridge["link_gb_s_bidirectional"] == pytest.approx(112.5)
    assert not pcie["nvlink"] and not pcie["p2p"]
    assert pcie["gpu_to_gpu_gb_s_per_direction"] < pcie["link_gb_s_per_direction"]  # staged through host
    assert bridge["spec_s"] < pcie["spec_s"] and bridge["spec_s"] <= bridge["achievable_s"]
    with pytest.raises(ValueError, match="nbytes"):
        nv.bridge_vs_pcie(0)


def test_nvlink_vs_pcie():
    r = nv.nvlink_vs_pcie("dgx-h100", 1e9)
    assert r["ratio"] == pytest.approx(450 / 63.015, rel=1e-3)
    assert r["gpu_to_gpu_s"] == pytest.approx(1e9 / 450e9)
    with pytest.raises(ValueError, match="system"):
        nv.nvlink_vs_pcie("pcie-8gpu")
    with pytest.raises(ValueError, match="system"):
        nv.nvlink_vs_pcie(3)


# ---------------------------------------------------------------- measurements

def test_measurements_are_sourced_and_below_spec():
    rows = nv.measurements()
    assert len(rows) >= 6
    for r in rows:
        assert r["url"].startswith("https://")
        assert r["direction"] in ("per direction", "bidirectional")
        assert 0.5 < r["ratio"] < 1.0
    azure = next(r for r in rows if r["id"] == "a100-allreduce-azure")
    case = next(c for c in costmodel.published()["cases"] if c["id"] == "azure-a100-8G")
    assert azure["measured_gb_s"] == case["busbw_gb_s"] and azure["spec_gb_s"] == 300


def test_model_vs_measured():
    mv = nv.model_vs_measured("a100-allreduce-azure")
    assert mv["achievable_busbw_gb_s"] == pytest.approx(mv["efficiency"] * mv["spec_busbw_gb_s"], rel=1e-3)
    assert abs(mv["achievable_busbw_gb_s"] / mv["measured_gb_s"] - 1) < 0.1
    with pytest.raises(ValueError, match="case"):
        nv.model_vs_measured("nope")
    with pytest.raises(ValueError, match="case"):
        nv.model_vs_measured("h100-p2p-one-way")  # a copy, not an all-reduce


# ---------------------------------------------------------------- views and explorer

def test_plots_and_tables_build():
    plt.close("all")
    assert nv.plot_measurements().get_title()
    assert nv.draw_dgx1().get_title()
    r = nv.dgx1_rings()
    assert nv.draw_rings(r["topology"], r["packed_rings"], title="rings").get_title() == "rings"
    assert len(nv.draw_consumer_pairs()) == 2
    with pytest.raises(ValueError, match="rings"):
        nv.draw_rings(r["topology"], [["gpu0", "cpu0"]])
    with pytest.raises(ValueError, match="axes"):
        nv.draw_consumer_pairs(axes=[1, 2, 3])
    plt.close("all")


def test_explorer_readout_and_infeasible_meshes():
    plt.close("all")
    ex = nv.mesh_explorer(gpus=4, links_per_gpu=12, link_gb_s=25.0, size_gb=1.0)
    assert "No full mesh" in ex.render(gpus=8, links_per_gpu=6)
    assert "64.3 GB/s per direction" in nv.mesh._readout(8, 18, 25.0, 1.0)
    assert "No full mesh" in nv.mesh._readout(8, 6, 25.0, 1.0)
    fig, ax = plt.subplots()
    nv.mesh._draw(ax, 16, 6, 25.0, 1.0)  # infeasible choice still draws
    with pytest.raises(ValueError, match="links_per_gpu"):
        nv.mesh_explorer(links_per_gpu=0)
    plt.close("all")


# ---------------------------------------------------------------- exercises agree with the library

def test_exercise_answers_follow_from_the_library():
    assert grading.expected("02.1") == pytest.approx(hardware.nvlink(4).per_direction / 1e9 * 15 / 18)  # 3 links down
    assert grading.expected("02.2") == pytest.approx(nv.per_peer_bandwidth(8, 12, 25e9) / 1e9)
    t = costmodel.collective_time("all_reduce", 1e9, 8, hardware.nvlink(3).per_direction, 0.0, "ring")
    assert grading.expected("02.3") == pytest.approx(t * 1e3)  # a DGX A100: not the explorer's default H100
    # 02.5 (a prediction): the mesh copy is 7x slower than the switch copy
    mesh = nv.point_to_point_time(900e9, nv.per_peer_bandwidth(8, 18, 25e9))
    assert mesh / nv.point_to_point_time(900e9, hardware.nvlink(4).per_direction) == pytest.approx(7)
    assert grading.expected("02.5") == "A"
    # 02.7: 4 link-disjoint rings x 2 directions x 25 GB/s per GPU, the ring all-reduce of 1 GB in ms
    t = costmodel.collective_time("all_reduce", 1e9, 8, 4 * 2 * 25e9, 0.0, "ring")
    assert grading.expected("02.7") == pytest.approx(t * 1e3)


def test_exercise_hints_fire_on_the_classic_mistakes():
    assert "healthy" in checks.evaluate("02.1", 900).message and "up" in checks.evaluate("02.1", 450).message
    assert "both directions" in checks.evaluate("02.1", 750).message
    assert "one ring alone" in checks.evaluate("02.7", 70).message
    assert "7 peers" in checks.evaluate("02.2", 37.5).message
    assert "2(p-1)/p" in checks.evaluate("02.3", 1e9 / 300e9 * 1e3).message
    assert "milliseconds" in checks.evaluate("02.3", 2 * 7 / 8 * 1e9 / 300e9).message
    assert "DGX H100" in checks.evaluate("02.3", 2 * 7 / 8 * 1e9 / 450e9 * 1e3).message
    assert "direct" in checks.evaluate("02.5", "B").message
    assert checks.evaluate("02.4", "A").status == "wrong"
    assert checks.evaluate("02.8", None).status == "not answered"


def test_exercise_hint_factors_do_not_shadow_each_other():
    # exercise-specific hints come first and may deliberately replace a named mistake with the same
    # factor; among themselves they must be distinct, and none may fall within tolerance of 1
    for exercise_id, s in {i: specs.full(i) for i in checks.exercises("02")}.items():
        factors = [h["factor"] for h in s.get("hints", [])]
        rtol = s.get("rtol", 0.02)
        for i, a in enumerate(factors):
            assert abs(a - 1) > 2 * rtol, exercise_id
            for b in factors[i + 1:]:
                assert abs(a - b) > 2 * rtol * max(a, b), (exercise_id, a, b)


def test_mesh_series_is_the_model_the_explorer_draws():
    s = nv.mesh_series(8, 18, 25.0, 1.0)
    at8 = nv.mesh_allreduce(1e9, 8, 18, 25e9, costmodel.hop_latency("nvlink"))
    assert s.chosen_buildable and s.chosen_all_links_s == at8["all_links_s"]
    assert s.one_ring_s[list(s.counts).index(8)] == at8["one_ring_s"]
    assert np.isfinite(s.one_ring_s).all()  # 18 links reach 15 peers: every mesh up to 16 GPUs is buildable
    small = nv.mesh_series(8, 6, 25.0, 1.0)
    assert not small.chosen_buildable and np.isnan(small.all_links_s[-1])
    ex = nv.mesh_explorer()
    lines = list(ex.axes.lines)
    ex.render(links_per_gpu=6, size_gb=10.0)
    assert list(ex.axes.lines) == lines  # the same artists, moved in place
    assert np.allclose(lines[1].get_ydata(), nv.mesh_series(8, 6, 25.0, 10.0).all_links_s, equal_nan=True)
    plt.close("all")


def test_exercise_02_8_the_mesh_and_the_ring_wiring_pack_as_many_rings():
    """02.8's key: 4 GPUs with 6 links each pack 3 rings as a full mesh and 3 as a ring wiring (issue 36 item 5)."""
    from course_lib import topology as tp

    link = 25e9
    mesh = nv.full_mesh(4, 6, link)
    ring = tp.Topology(name="4 GPUs, 3 links to each neighbour")
    for i in range(4):
        ring.add(f"gpu{i}", "gpu", (i, 0))
    for i in range(4):
        ring.connect(f"gpu{i}", f"gpu{(i + 1) % 4}", 3 * link, "3x NVLink")
    assert len(nv.pack_rings(mesh, link)) == len(nv.pack_rings(ring, link)) == 3
    assert grading.expected("02.8") == "D"
