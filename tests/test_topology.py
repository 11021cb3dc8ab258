"""Topologies: per-pair, bisection, ring bottleneck, drawing."""
import matplotlib
matplotlib.use("Agg")
import pytest

from course_lib import datafiles, topology as tp
from course_lib.views import graphs


def test_every_named_topology_builds_and_draws():
    for name in tp.BUILDERS:
        topo = tp.named(name)
        assert len(topo.gpus) >= 2
        if len(topo.gpus) <= 32:
            ax = graphs.draw(topo)
            assert ax.get_title()
            matplotlib.pyplot.close(ax.figure)


def test_nvswitch_full_bisection_and_ring():
    t = tp.nvswitch_system("dgx-h100")
    assert t.pair_bandwidth("gpu0", "gpu5") == pytest.approx(450e9)
    assert t.bisection_bandwidth() == pytest.approx(4 * 450e9)
    assert t.ring_bottleneck()["bandwidth"] == pytest.approx(450e9)


def test_dgx1_mesh_and_pcie_tree():
    m = tp.dgx1_hybrid_cube_mesh()
    assert m.pair_bandwidth("gpu0", "gpu3") == pytest.approx(150e9)  # max flow uses every path
    assert m.ring_bottleneck()["bandwidth"] == pytest.approx(25e9)   # one NVLink 2 link on the ring
    assert m.bisection_bandwidth() == pytest.approx(150e9)
    for switches in (True, False):
        p = tp.pcie_tree(switches)
        assert p.ring_bottleneck()["bandwidth"] == pytest.approx(31.5e9, rel=0.01)
    # Gen4 pairs with Rome's 128 GB/s xGMI: the cut runs through the PCIe links, not between the sockets.
    assert tp.pcie_tree(True).bisection_bandwidth() == pytest.approx(2 * 31.5e9, rel=0.01)   # two switch uplinks
    assert tp.pcie_tree(False).bisection_bandwidth() == pytest.approx(4 * 31.5e9, rel=0.01)  # four root ports
    # Gen3 pairs with Cascade Lake's 3x UPI; the socket link limits once a generation's slots outgrow it.
    assert tp.pcie_tree(False, generation=3).bisection_bandwidth() == pytest.approx(62.4e9)
    assert tp.pcie_tree(True, generation=7).ring_bottleneck()["bandwidth"] == pytest.approx(128e9)


def test_socket_link_matches_the_pcie_generation_era():
    assert tp.socket_link(3)["gb_s_per_direction"] == 62.4 and "Cascade Lake" in tp.socket_link(3)["cpu"]
    assert "Rome" in tp.socket_link(4)["cpu"] and not tp.socket_link(4)["assumed"]
    assert "Sapphire Rapids" in tp.socket_link(5)["cpu"] and not tp.socket_link(5)["assumed"]
    assert tp.socket_link(6)["assumed"] and tp.socket_link(7)["assumed"]   # no Gen6 two-socket CPU in the data
    sources = datafiles.bibliography()
    assert all(tp.socket_link(g)["source"] in sources for g in range(1, 8))
    labels = tp.pcie_tree(True, generation=5).labels.values()
    assert tp.socket_link(5)["name"] in labels
    with pytest.raises(ValueError, match="generation"):
        tp.socket_link(8)


def test_bridge_and_fat_tree():
    b = tp.bridge_pair()
    assert b.ring_bottleneck()["bandwidth"] == pytest.approx(56.25e9)
    f = tp.rail_fat_tree("dgx-h100", nodes=4)
    assert f.ring_bottleneck()["bandwidth"] == pytest.approx(50e9)  # one NDR NIC per ring
    assert f.bisection_bandwidth() == pytest.approx(2 * 8 * 50e9)


def test_bad_inputs():
    with pytest.raises(ValueError, match="name"):
        tp.named("dgx-9")
    with pytest.raises(ValueError, match="a"):
        tp.nvswitch_system("dgx-h100").pair_bandwidth("cpu9", "gpu1")
    with pytest.raises(ValueError, match="system_id"):
        tp.nvswitch_system("pcie-8gpu")
    with pytest.raises(ValueError, match="nodes"):
        tp.rail_fat_tree(nodes=0)
