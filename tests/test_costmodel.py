"""Cost model: definitions, validation against published data, speed."""
import dataclasses
import time

import numpy as np
import pytest

from course_lib import costmodel as cm, datafiles, hardware


def test_busbw_factors_match_nccl_tests():
    assert cm.busbw_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    for c in ("reduce_scatter", "all_gather", "all_to_all"):
        assert cm.busbw_factor(c, 8) == pytest.approx(7 / 8)
    assert cm.busbw_factor("broadcast", 8) == 1.0 and cm.busbw_factor("reduce", 8) == 1.0
    assert cm.busbw("all_reduce", 1e9, 0.01, 8) == pytest.approx(1e11 * 1.75)
    assert cm.algbw(2e9, 0.5) == pytest.approx(4e9)


def test_scalar_in_float_out_and_vectorised():
    t = cm.collective_time("all_reduce", 1e6, 8, 100e9, 1e-6)
    assert isinstance(t, float)
    assert t == pytest.approx(14e-6 + 1.75 * 1e6 / 100e9)
    arr = cm.collective_time("all_reduce", np.array([1e3, 1e6]), 8, 100e9, 1e-6)
    assert arr.shape == (2,)


def test_unsupported_pair_names_algorithm():
    with pytest.raises(ValueError, match="algorithm"):
        cm.collective_time("all_to_all", 1e6, 8, 1e9, 0, algorithm="ring")


@pytest.mark.parametrize("kwargs, name", [
    (dict(nbytes=-1), "nbytes"), (dict(ranks=0), "ranks"), (dict(bandwidth=0), "bandwidth"),
    (dict(latency=-1e-6), "latency"), (dict(collective="all_reduse"), "collective"), (dict(algorithm="magic"), "algorithm"),
])
def test_bad_input_names_parameter(kwargs, name):
    args = dict(collective="all_reduce", nbytes=1e6, ranks=8, bandwidth=1e9, latency=1e-6)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        cm.collective_time(**args)


def test_predict_bad_inputs():
    with pytest.raises(ValueError, match="system"):
        cm.predict("all_reduce", 1e6, "dgx-z9000")
    with pytest.raises(ValueError, match="gpus_per_node"):
        cm.predict("all_reduce", 1e6, "dgx-h100", gpus_per_node=0)
    with pytest.raises(ValueError, match="nodes"):
        cm.predict("all_reduce", 1e6, "dgx-h100", nodes=0)
    with pytest.raises(ValueError, match="bits"):
        cm.predict("all_reduce", "16Gb", "dgx-h100")
    with pytest.raises(ValueError, match="algorithm"):
        cm.predict("all_gather", 1e6, "dgx-a100", algorithm="nvls")


def test_predict_shapes_and_system_object():
    sys_ = hardware.system("dgx-a100")
    pred = cm.predict("all_reduce", np.logspace(3, 10, 50), sys_)
    assert pred.time_s.shape == pred.busbw.shape == pred.algbw.shape == (50,)
    assert pred.ranks == 8 and isinstance(pred.algorithm, str)
    spec = cm.predict("all_reduce", 2**33, "dgx-a100", achievable=False)
    assert spec.busbw[0] == pytest.approx(300e9, rel=0.01)  # spec NVLink 3: 300 GB/s per direction


def test_hierarchical_multi_node_is_network_bound():
    one = cm.predict("all_reduce", 2**33, "dgx-a100", algorithm="ring")
    four = cm.predict("all_reduce", 2**33, "dgx-a100", nodes=4, algorithm="ring")
    assert four.busbw[0] < one.busbw[0]  # the intra- vs inter-node cliff
    assert four.busbw[0] == pytest.approx(8 * 25e9 * cm.efficiency("infiniband"), rel=0.02)
    h = cm.predict("all_reduce", 2**33, "dgx-h100", nodes=4, algorithm="hierarchical")
    assert h.busbw[0] > 0


def test_hierarchical_prediction_carries_its_phases():
    sizes = [2**20, 2**33]
    h = cm.predict("all_reduce", sizes, "dgx-h100", nodes=4, algorithm="hierarchical", achievable=False)
    ph = h.phases
    assert np.allclose(ph.launch_s + ph.reduce_scatter_s + ph.inter_node_s + ph.all_gather_s, h.time_s)
    # spec NVLink 450 GB/s, one 50 GB/s NIC per GPU: each GPU all-reduces its 1/8 shard over 4 nodes
    n = 2**33
    assert ph.reduce_scatter_s[1] == pytest.approx(7 / 8 * n / 450e9, rel=1e-3)
    assert ph.inter_node_s[1] == pytest.approx(2 * 3 / 4 * (n / 8) / 50e9, rel=1e-3)
    assert cm.predict("all_reduce", sizes, "dgx-h100", nodes=4, algorithm="ring").phases is None
    one = cm.predict("all_reduce", n, "dgx-h100", algorithm="hierarchical")  # one node: no network phase
    assert np.all(one.phases.inter_node_s == 0.0)
    f = cm.fabric("dgx-h100")  # textbook: reduce-scatter + all-gather = the alpha-beta ring, no NCCL protocol terms
    assert one.time_s[0] == pytest.approx(f.launch + cm.collective_time("all_reduce", n, 8, f.intra_bw, f.intra_hop))
    with pytest.raises(ValueError, match="not available"):
        cm.predict("all_gather", n, "dgx-h100", nodes=2, algorithm="hierarchical")


def test_two_level_all_reduce_is_the_sum_of_rings():
    ph = cm.two_level_all_reduce(8e9, 8, 4, 400e9, 50e9)
    assert ph.time_s == pytest.approx(2 * 7 / 8 * 8e9 / 400e9 + 2 * 3 / 4 * 1e9 / 50e9)
    for kwargs, name in (({"gpus_per_node": 0}, "gpus_per_node"), ({"nodes": 0}, "nodes"),
                         ({"intra_bw": 0}, "bandwidth"), ({"launch": -1}, "launch")):
        args = dict(nbytes=1e9, gpus_per_node=8, nodes=2, intra_bw=1e9, net_bw_per_gpu=1e9)
        args.update(kwargs)
        with pytest.raises(ValueError, match=name):
            cm.two_level_all_reduce(**args)


def test_efficiencies_are_sourced_and_visible():
    rows = cm.efficiency_table()
    assert {r["technology"] for r in rows} >= {"nvlink", "nvls", "pcie", "infiniband"}
    assert all(r["url"].startswith("https://") and 0 < r["efficiency"] <= 1 for r in rows)


def test_validation_against_published_measurements():
    rows = cm.validation_table()
    summary = cm.validation_summary(rows)
    assert summary["cases"] >= 100 and summary["sources"] >= 15
    assert all(r["source"] in datafiles.bibliography() for r in rows)
    # within +-20% at >= 256 MB, fit and test together: 0.80 since the A3 Mega sample runs on its own fabric
    # kind (tcpxo, NVLS off as Google requires) instead of InfiniBand-like RoCE, where 2 of its sizes matched by luck
    assert summary["large_share"] >= 0.80
    assert summary["small_share"] >= 0.9      # within +-50% below 1 MB


# Measured after issue 24 (informed roles, duplicates dropped, NCCL 2.32 tables, CollNet): >= 128 MiB 150 of
# 187 (80%; 139 of 176 without the 11 CollNet cases), 1-128 MiB 26 of 41, < 1 MiB 35 of 38, sweeps 129 of 150.
# Issue 33 (each case's NCCL release chooses ring or tree): 1-128 MiB 29 -> 25 of 41, sweeps 129 -> 125 of 150.
# Through NCCL 2.30 a two-node tree is rated by intra-node bandwidth, so the releases these runs used pick it at
# 1-16 MiB too; priced as it runs (each byte crosses once) it is too fast on plugin stacks (p3dn EFA, A3 Mega
# TCPXO, Polaris Slingshot), where the model has no per-message plugin cost (efficiency.json plugin_message_cost).
# Large two-node runs gain (MareNostrum 5 0.63 -> 1.01, A3 Mega 0.62/0.56 -> 1.01/0.91).
# The five forced-tree re-runs of one cluster's fit runs (the next day, within 0.3%) are role also (issue 33):
# >= 128 MiB 150 of 187 -> 145 of 182 (79.7%), under the 80% goal.
PINNED_GOALS = {">= 128 MiB within 20%": (0.79, 182), "1-128 MiB within 35%": (0.60, 41),
                "< 1 MiB within 50%": (0.92, 38)}
SWEEPS_PINNED = (35, 0.82)  # 120 of 145 once the re-runs are out


def test_goals_on_the_test_set_are_pinned():
    """Issue 14's goals, measured on the test cases alone (never used to set a constant or make a choice).

    On the test cases >= 128 MiB (issue 24 moved 18 informed cases and 11 duplicates out of the test set and
    added 11 CollNet test cases) the first goal sits just under 80%: the misses are named in chapter 05.
    Issue 24's NCCL 2.32 tables moved 1-128 MiB and < 1 MiB down, all on first-generation EFA (p3dn, p4d),
    whose Simple-only stack had been priced with the old 28 us per intra-node tree step: that latency stood
    in for the plugin's per-message cost. MareNostrum 5 on its own board (no NVSwitch) misses at 2 nodes
    (0.63), where NCCL ran its two-node tree, not the ring the model picks there.
    """
    rows = cm.validation_table()
    goals = {g["name"]: g for g in cm.validation_goals(rows)}
    pinned = PINNED_GOALS
    for name, (floor, cases) in pinned.items():
        g = goals[name]
        assert g["cases"] >= cases and g["share"] >= floor, (name, g)
    assert goals["< 1 MiB within 50%"]["met"]
    assert all(g["met"] == (g["share"] >= g["wanted"]) for g in goals.values() if g["cases"])
    sweeps = goals["node-count sweeps within 35%"]
    assert len(sweeps["sweeps"]) >= SWEEPS_PINNED[0] and sweeps["share"] >= SWEEPS_PINNED[1]
    # misses explained in chapter 05: an untuned A100 RoCE 100G cluster (100 -> 40 GB/s from 2 to 6 nodes),
    # Slingshot's small messages on Polaris, a shared fabric's congestion (Azure); the playbook's 256 MB
    # sweep misses too, but it informed P5's EFA figure, so it is not a test case
    for miss in ("a100-roce-100g-6node-169", "polaris-a100-8node-1M", "jz-azure-ndh100v5-8G-64node-sl0"):
        assert miss in sweeps["misses"]
    assert not any(m.startswith("hf-playbook-") for m in sweeps["misses"])
    # the physical bound: NVLS algbw never above the per-direction NVLink rate
    for system in ("dgx-h100", "dgx-b200", "gb200-nvl72"):
        pred = cm.predict("all_reduce", 2**34, system, algorithm="nvls")
        assert pred.algbw[0] <= hardware.system(system).gpu_link.per_direction


def test_sweep_of_1000_sizes_is_fast():
    sizes = np.logspace(3, 10, 1000)
    cm.predict("all_reduce", sizes, "dgx-h100")
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        cm.predict("all_reduce", sizes, "dgx-h100")
        best = min(best, time.perf_counter() - t0)
    assert best < 5e-3  # goal 1 ms; generous bound for a shared CI machine
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        cm.collective_time("all_reduce", sizes, 8, 450e9, 1e-6)
        best = min(best, time.perf_counter() - t0)
    assert best < 1e-3


def test_no_p2p_staging_is_a_labelled_assumption_applied_once():
    staging = cm.efficiency_data()["no_p2p_staging"]
    assert staging["assumed"] is True and "assumption" in staging["derivation"]
    factor = cm.no_p2p_staging_factor()
    assert factor == staging["factor"] == 2
    box = hardware.system("consumer-4090-pcie")   # no P2P: staged through host memory
    f = cm.fabric(box)
    assert f.intra_bw == pytest.approx(box.pcie.per_direction * cm.efficiency("pcie") / factor)
    p2p = cm.fabric("pcie-8gpu")                   # P2P: no staging factor
    assert p2p.intra_bw == pytest.approx(hardware.system("pcie-8gpu").pcie.per_direction * cm.efficiency("pcie"))


def test_nvls_latency_is_nccl_hardware_latency_and_costs_more_than_a_ring():
    table = cm.protocol_table()
    assert table["hw_latency_us"]["nvlink"]["nvls"] == 25.0 and table["base_latency_us"]["nvls"] == 0.0   # NCCL 2.31
    assert "tuning constants" in datafiles.source(table["source"])["title"]
    small = cm.predict("all_reduce", 1024, "dgx-h100")
    assert small.algorithms[0] == "ring" and small.protocols[0] == "LL"     # NVLS pays 25 us, a ring LL ~15
    nvls = cm.predict("all_reduce", 1024, "dgx-h100", algorithm="nvls")
    assert nvls.time_s[0] - small.time_s[0] == pytest.approx((25.0 - 6.6 - 14 * 0.6) * 1e-6, rel=0.05)


def test_fabric_kinds_are_sourced_and_selectable():
    assert set(cm.fabric_kind_ids()) == {"infiniband", "roce", "roce_gib", "efa", "efa_p6", "efa_v1", "slingshot", "ethernet_tcp",
                                        "tcpxo"}
    sources = datafiles.bibliography()
    for kind in cm.fabric_kind_ids():
        row = cm.fabric_kind(kind)
        assert 0 < row["efficiency"] <= 1 and row["hop_latency_us"] > 0
        assert row["efficiency_source"] in sources and row["latency_source"] in sources
    assert cm.system_fabric_kind("dgx-h100") == "infiniband"          # NIC family default
    tcp = cm.fabric("dgx-h100", network="ethernet_tcp")
    ib = cm.fabric("dgx-h100")
    assert tcp.net_bw_node == pytest.approx(ib.net_bw_node * 0.40 / 0.94)
    efa = cm.predict("all_reduce", 8, "dgx-h100", nodes=2, network="efa")
    assert efa.time_s[0] > cm.predict("all_reduce", 8, "dgx-h100", nodes=2).time_s[0]
    with pytest.raises(ValueError, match="network"):
        cm.fabric("dgx-h100", network="token-ring")


def test_validation_by_regime_splits_fit_and_test():
    rows = cm.validation_table()
    assert {r["role"] for r in rows} == set(cm.ROLES) == {"fit", "informed", "also", "test"}
    assert all("role" in c for c in cm.published()["cases"])       # every case says which set it is in
    for role in cm.ROLES:
        cells = cm.validation_by_regime(rows, role)
        assert sum(c["cases"] for c in cells) == sum(1 for r in rows if r["role"] == role)
        for c in cells:
            assert c["within_20pct"] <= c["within_50pct"] <= c["cases"]
    assert cm.size_regime(2**16 - 1) == "< 64 KiB" and cm.size_regime(2**27) == ">= 128 MiB"
    assert cm.scale_regime(2) == "2 nodes" and cm.scale_regime(17) == "> 16 nodes"
    with pytest.raises(ValueError, match="role"):
        cm.validation_by_regime(rows, "train")


def test_node_sweep_study_measures_what_falls_beyond_the_model():
    study = {s["sweep"]: s for s in cm.node_sweep_study()}
    assert len(study) >= 20
    res = sorted(s["residual_per_doubling"] for s in study.values() if not s["fit_cases"])
    # with node_decline in the model the typical sweep has nothing left (median ~1.00); the outliers are
    # named in chapter 05: an untuned A100 RoCE 100G cluster (~0.58 per doubling) and the playbook's 256 MB
    assert 0.95 < res[len(res) // 2] < 1.05 and res[0] < 0.65
    assert study["a100-roce-100g-nodes-169"]["from_nodes"] == 3      # two nodes are left out where possible
    assert all(len(s["nodes"]) >= 2 for s in study.values())
    with pytest.raises(ValueError, match="rows"):
        cm.node_sweep_study([{"id": "x"}])


def test_tcpxo_is_set_from_fit_cases_and_keeps_nccl_to_ring_and_tree():
    row = cm.fabric_kind("tcpxo")
    fit = {c["id"]: c for c in cm.published()["cases"] if c["role"] == "fit"}
    assert row["efficiency_source"] == row["latency_source"] == "dstack-a3mega"
    assert {"dstack-a3mega-ag-8M", "dstack-a3mega-ag-8G"} <= set(fit)
    # the shipped A3 Mega run was never fit; its 1 and 8 GiB cases shaped tcpxo's two-node tree (informed)
    assert all(c["role"] in ("test", "informed") for c in cm.published()["cases"] if c["id"].startswith("a3mega-2node-"))
    assert cm.system_fabric_kind("gcp-a3-mega") == "tcpxo"
    for c in ("dstack-a3mega-ag-8M", "dstack-a3mega-ag-8G"):   # the fit reproduces its own cases
        r = cm.validation_table([fit[c]])[0]
        assert r["ratio"] == pytest.approx(1.0, abs=0.01)
    big = cm.predict("all_reduce", 2**33, "gcp-a3-mega", nodes=2)
    assert "nvls" not in set(big.algorithms) and "LL" not in set(big.protocols)  # NCCL_NVLS_ENABLE=0, no LL
    assert "nvls" in set(cm.predict("all_reduce", 2**33, "gcp-a3-mega").algorithms)  # one node: NVLS stays


# ---------------------------------------------------------------- node scaling (issue 14, second pass)

def test_double_binary_tree_load_follows_nccls_trees():
    # 2 nodes: one edge, each byte crosses once; 3: both trees are chains; 4 and beyond: interior nodes
    assert [cm.double_binary_tree_load(n) for n in (1, 2, 3, 4, 5, 8, 13, 64, 1000)] == \
        [0.0, 1.0, 1.5, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    assert all(cm.double_binary_tree_load(n) == 2.0 for n in range(4, 1025))   # what the shortcut beyond assumes
    with pytest.raises(ValueError, match="nodes"):
        cm.double_binary_tree_load(0)


def test_tree_correction_is_nccls_table_by_size():
    # index log2(size / 64 B): 64 B -> 0, 1 MiB -> 14, 256 MiB -> 22; from 512 MiB (index 23) on, 1
    assert cm.tree_correction([64, 2**20, 2**28], "Simple").tolist() == [0.9, 0.5, 0.9]
    assert cm.tree_correction([2**29, 2**33], "LL").tolist() == [1.0, 1.0]
    assert cm.tree_correction([2**20 + 5], "LL128").tolist() == cm.tree_correction([2**20], "LL128").tolist()
    with pytest.raises(ValueError, match="protocol"):
        cm.tree_correction(2**20, "LL64")


def test_two_node_tree_is_chosen_per_size_by_nccls_estimate_and_priced_as_it_runs():
    sizes = [2**k for k in range(3, 35)]
    for system in ("dgx-a100", "gcp-a3-mega", "aws-p4d", "alps-gh200"):
        p = cm.predict("all_reduce", sizes, system, nodes=2)
        tree = p.algorithms == "tree"
        # NCCL's estimate: the tree for small messages, the ring for large ones (its size-by-size tree
        # correction can flip a middle size back and forth, as NCCL itself does)
        assert tree[0] and not tree[-1], system
        ring_or_tree = np.isin(p.algorithms, ["ring", "tree"])
        f = cm.fabric(system)
        prefers = cm.nccl_prefers_tree("all_reduce", np.asarray(sizes, dtype=float),
                                       f.gpus_per_node, 2, f, f.required_protocol)
        assert np.array_equal(tree[ring_or_tree], prefers[ring_or_tree]), system
        # the tree that runs is priced as NCCL_ALGO=Tree is: each byte crosses the network once
        forced = cm.predict("all_reduce", sizes, system, nodes=2, algorithm="tree")
        np.testing.assert_allclose(p.time_s[tree], forced.time_s[tree])
    # large all-reduces on two nodes: the ring at the NICs' rate on every fabric (A3 Mega: 200 GB/s of NICs)
    big = 2**33
    a3 = cm.predict("all_reduce", big, "gcp-a3-mega", nodes=2)
    assert a3.algorithms[0] == "ring" and a3.busbw[0] < cm.fabric("gcp-a3-mega").net_bw_node
    ring = cm.predict("all_reduce", big, "dgx-a100", nodes=2, algorithm="ring").busbw[0]
    assert cm.predict("all_reduce", big, "dgx-a100", nodes=2, algorithm="tree").busbw[0] > 1.05 * ring
    # NCCL_ALGO=Ring,Tree still chooses between them; NCCL_ALGO=Tree alone is not masked
    assert cm.predict("all_reduce", big, "dgx-a100", nodes=2, algorithm=("tree",)).algorithms[0] == "tree"
    # three nodes: the tree is back to two crossings unless forced (then 1.5)
    assert cm.predict("all_reduce", big, "gcp-a3-mega", nodes=3).busbw[0] < cm.fabric("gcp-a3-mega").net_bw_node


def test_first_generation_efa_runs_simple_only():
    for nodes in (1, 2, 4):
        p = cm.predict("all_reduce", [8, 2**20, 2**30], "aws-p4d", nodes=nodes)
        assert set(p.protocols) == {"Simple"} and any("NCCL_PROTO=Simple" in n for n in p.notes)
    assert set(cm.predict("all_reduce", [8, 2**20], "aws-p5", nodes=2).protocols) != {"Simple"}
    assert cm.fabric_kind("efa_v1")["nccl"]["protocol_source"] in datafiles.bibliography()


def test_mnnvl_domains_run_the_ring_between_them():
    p = cm.predict("all_reduce", [2**20, 2**29, 2**32], "gb200-nvl72", nodes=20)
    assert set(p.algorithms) == {"ring"}
    assert cm.predict("all_reduce", 2**32, "gb200-nvl72", nodes=3, gpus_per_node=8, nics_per_node=8,
                      algorithm="tree").algorithms[0] == "tree"            # forced, as in nccl issue 1801
    with pytest.raises(ValueError, match="nvls"):
        cm.predict("all_reduce", 2**30, "gb200-nvl72", nodes=2, algorithm="nvls")


def test_tree_network_rate_is_capped_on_hopper_and_blackwell_only():
    cap = cm.efficiency_data()["tree_net_cap"]
    b200 = cm.fabric("dgx-b200")
    assert cm.tree_net_rate(b200, 8) == pytest.approx(cap["gb_s_per_node"] * 1e9)
    assert cm.tree_net_rate(b200, 8) < b200.net_bw_node
    a100 = cm.fabric("dgx-a100")
    assert cm.tree_net_rate(a100, 8) == a100.net_bw_node
    # forced tree on B200 from 4 nodes: about half the NICs' rate, whatever the node count
    busbw = [cm.predict("all_reduce", 2**35, "dgx-b200", nodes=n, algorithm="tree").busbw[0] / 1e9
             for n in (4, 16, 64)]
    assert all(150 < b < 230 for b in busbw)


def test_node_decline_is_one_up_to_its_threshold_and_fit_on_its_own_cases():
    c = cm.node_decline_constants()
    assert cm.node_decline(1) == cm.node_decline(c["from_nodes"]) == 1.0
    assert cm.node_decline(8 * c["from_nodes"]) == pytest.approx(c["per_doubling"] ** 3)
    assert 0.9 < c["per_doubling"] < 1.0
    fit = [x for x in cm.published()["cases"] if x.get("fit_for") == "efficiency.json node_decline"]
    assert len(fit) >= 4 and all(x["role"] == "fit" and x["source"] == c["source"] for x in fit)
    study = {s["sweep"]: s for s in cm.node_sweep_study()}
    assert study[fit[0]["sweep"]]["residual_per_doubling"] == pytest.approx(1.0, abs=0.02)
    with pytest.raises(ValueError, match="nodes"):
        cm.node_decline(0)


def test_every_fit_case_names_its_constant_and_the_constant_reproduces_it():
    fits = [x for x in cm.published()["cases"] if x.get("fit_for")]
    assert {x["fit_for"] for x in fits} >= {"fabrics.json efa_p6 efficiency", "fabrics.json efa_v1 hop latency",
                                           "efficiency.json tree_net_cap", "efficiency.json node_decline",
                                           "fabrics.json slingshot efficiency", "fabrics.json slingshot hop latency"}
    rows = {r["id"]: r for r in cm.validation_table(fits)}
    for x in fits:
        assert x["role"] == "fit"
        tol = 0.15 if x["fit_for"] == "efficiency.json node_decline" else 0.10  # a slope, not a level
        assert abs(np.log(rows[x["id"]]["ratio"])) < np.log(1 + tol), x["id"]


def test_predict_accepts_the_algorithms_nccl_may_choose_from():
    both = cm.predict("all_reduce", [2**20, 2**33], "dgx-h100", nodes=2, algorithm=("ring", "tree"))
    assert set(both.algorithms) <= {"ring", "tree"}
    with pytest.raises(ValueError, match="algorithm"):
        cm.predict("all_reduce", 2**20, "dgx-h100", nodes=2, algorithm=("ring", "bogus"))
    with pytest.raises(ValueError, match="algorithm"):
        cm.predict("all_reduce", 2**20, "dgx-h100", nodes=2, algorithm=())


def test_protocol_tables_come_from_one_nccl_version():
    """Latencies and bandwidths of nccl_protocols from one NCCL revision (issue 24): one source for both, the
    version recorded, LL at half the bus bandwidth as the file says, the tree's Simple NVLink latency NCCL 2.31's 4 us.
    (Issue 33: the files are the dev branch at makefiles/version.mk 2.31.0, not 2.32 as first labelled.)"""
    table = cm.protocol_table()
    assert table["source"] == table["bandwidth_source"] == "nccl-tuning-2.31" and table["nccl_version"] == "2.31"
    assert table["nccl_version"] == cm.default_nccl_version()
    assert table["ll_bw_factor"]["ring"] == 0.5 and "half the bus bandwidth" in table["about"] and "quarter" not in table["about"]
    assert table["hw_latency_us"]["nvlink"]["tree"]["Simple"] == 4.0 and table["hw_latency_us"]["net"]["tree"]["Simple"] == 14.0
    assert table["ll128_max_bw_per_channel_gb_s"]["blackwell"] == 40.0


def test_collnet_prices_sharp_across_nodes_and_only_where_asked():
    """CollNet (IB SHARP): each node's NICs carry each byte once, so busbw exceeds the NICs' rate; it needs
    InfiniBand switches, is never NCCL's default here (NCCL_COLLNET_ENABLE), and has no one-node form."""
    big = 16 * 2**30
    sharp = cm.predict("all_reduce", big, "dgx-b200", nodes=8, algorithm="collnet")
    ring = cm.predict("all_reduce", big, "dgx-b200", nodes=8, algorithm="ring")
    nics = hardware.system("dgx-b200").nic.per_direction * 8
    assert sharp.busbw[0] > nics > ring.busbw[0]
    assert sharp.busbw[0] == pytest.approx(2 * 63 / 64 * nics * cm.efficiency("infiniband") * cm.collnet_constants()["efficiency"],
                                           rel=0.01)
    assert "collnet" not in cm.predict("all_reduce", big, "dgx-b200", nodes=8).algorithms
    with pytest.raises(ValueError, match="CollNet needs SHARP switches .* this is tcpxo"):
        cm.predict("all_reduce", big, "gcp-a3-mega", nodes=8, algorithm="collnet")     # TCPXO: no SHARP switches
    with pytest.raises(ValueError, match="one node"):
        cm.predict("all_reduce", big, "dgx-b200", algorithm="collnet")
    fit = [r for r in cm.validation_table() if r["algorithm"] == "collnet"]
    assert {r["role"] for r in fit} == {"fit", "test"} and all(0.85 <= r["ratio"] <= 1.05 for r in fit)


def test_dgx_b300_nics_are_not_capped_by_a_gen5_slot():
    """ConnectX-8 at 800 Gb/s (100 GB/s per direction) sits on PCIe Gen6 x16 (~118 GB/s): the node's 8 NICs
    are its network rate; on Gen5 x16 (63 GB/s) each would be cut to 63% (issue 24)."""
    f = cm.fabric("dgx-b300")
    assert hardware.system("dgx-b300").pcie.name == "PCIe Gen6 x16"
    assert f.net_bw_node_for(8) == pytest.approx(f.net_bw_node) and f.pcie_bw > 100e9 * cm.efficiency("infiniband")
    gen5 = cm.fabric(dataclasses.replace(hardware.system("dgx-b300"), pcie=hardware.pcie_link(5, 16)))
    assert gen5.net_bw_node_for(8) < 0.6 * f.net_bw_node_for(8)


def test_nccl_generation_comes_from_data_and_an_unknown_one_is_refused():
    """RCCL GPUs get RCCL's own rows (its source named); a GPU whose generation has no row is refused by name."""
    assert cm.gpu_generation("amd-mi355x-8gpu") == "cdna4" and cm.gpu_generation("amd-mi325x-8gpu") == "cdna3"
    assert cm.gpu_generation("gb300-nvl72") == "blackwell" and cm.gpu_generation("hgx-h100-4gpu") == "hopper"
    table = cm.protocol_table()
    assert table["rccl"]["source"] in datafiles.load("sources.json") and "RCCL" in table["generations_note"]
    assert set(table["rccl"]["generations"]) == {cm.gpu_generation(s) for s in ("amd-mi355x-8gpu", "amd-mi325x-8gpu")}
    odd = dataclasses.replace(hardware.system("amd-mi355x-8gpu"),
                              gpu=dataclasses.replace(hardware.gpu("mi355x"), id="mystery", nccl_arch="cdna9"))
    with pytest.raises(ValueError, match="gpu mystery has NCCL generation 'cdna9'.*known generations: volta, ampere"):
        cm.predict("all_reduce", 2**20, odd)
    # a GPU that states no generation (a newer NVLink than the tables know, say) is refused, not priced as Ampere
    unstated = dataclasses.replace(hardware.system("dgx-b200"),
                                   gpu=dataclasses.replace(hardware.gpu("b200"), id="nvlink6-gpu", nccl_arch=None))
    with pytest.raises(ValueError, match=r"^gpu nvlink6-gpu states no nccl_arch .*known generations: volta"):
        cm.fabric(unstated)
    # every catalog GPU states a generation the tables have (no fallback through its NVLink generation)
    known = cm.protocol_table()["ll_max_bw_gb_s"]["one_node"]
    assert all(row["nccl_arch"] in known for row in hardware.catalog()["gpus"])
    assert [cm.gpu_generation(s) for s in ("dgx-1-v100", "dgx-a100", "aws-g6e-l40s", "azure-nd-mi300x-v5")] == ["volta", "ampere", "ampere", "cdna3"]


def test_hgx_h100_4gpu_has_no_nvls_and_prices_marenostrum():
    """The 4-GPU HGX board links its GPUs directly (no NVSwitch, so no NVLS); MareNostrum 5's cases use it."""
    assert not hardware.system("hgx-h100-4gpu").in_network_reduction
    assert "nvls" not in cm.predict("all_reduce", 2**32, "hgx-h100-4gpu").algorithms
    mn5 = [c for c in cm.published()["cases"] if c["id"].startswith("mn5-")]
    assert mn5 and all(c["system"] == "hgx-h100-4gpu" for c in mn5)


def test_cloud_roce_is_labelled_assumed_where_no_run_sets_it():
    """Issue 24: the RoCE cloud kind (gIB on GCP A3 Ultra and A4) has no published run in the data, so its
    efficiency and latency say 'assumed' in their role and derivation; no fit case claims them."""
    gib = cm.fabric_kind("roce_gib")
    assert gib["role"] == "assumed" and gib["assumed"] is True and gib["assumed_latency"] is True
    assert gib["efficiency_derivation"].startswith("assumed") and gib["latency_derivation"].startswith("assumed")
    assert cm.system_fabric_kind("gcp-a4") == cm.system_fabric_kind("gcp-a3-ultra") == "roce_gib"
    assert not [c for c in cm.published()["cases"] if "roce_gib" in str(c.get("fit_for", ""))]
