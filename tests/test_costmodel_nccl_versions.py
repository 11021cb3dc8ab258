"""NCCL's release as an input: each release's tables and two-node tree rule, read from efficiency.json."""
import numpy as np
import pytest

from course_lib import costmodel, datafiles
from course_lib.costmodel.nccl import _version_key

RELEASES = costmodel.efficiency_data()["nccl_protocols"]["releases"]


def test_every_release_names_its_tag_source_and_date_and_its_changes_apply():
    for key, rel in RELEASES.items():
        assert rel["tag"] and rel["first_tag_date"] and rel["note"], key
        assert datafiles.source(rel["source"])["url"], key
        table = costmodel.protocol_table(key)  # every dotted path exists in the base table
        for path, value in rel["set"].items():
            node = table
            for k in path.split("."):
                node = node[k]
            assert node == value, (key, path)


def test_releases_are_ordered_and_the_tree_rule_changes_once():
    keys = costmodel.nccl_versions()
    assert [_version_key(k) for k in keys] == sorted(_version_key(k) for k in keys)
    dates = [RELEASES[k]["first_tag_date"] for k in keys]
    assert dates == sorted(dates)
    rules = [costmodel.two_node_tree_rule(k) for k in keys]
    assert set(rules) <= {"intra", "min"} and rules[-1] == "min"
    assert rules == sorted(rules, key=lambda r: r == "min")  # every intra-rule release is older than every min-rule one
    assert costmodel.default_nccl_version() == keys[-1]


def test_a_version_maps_to_the_newest_release_at_or_below_it():
    keys = costmodel.nccl_versions()
    for key in keys:
        patch = f"{key}.9+cuda12.9"
        assert costmodel.nccl_release(patch)[0] == key
    oldest = keys[0]
    major, minor = _version_key(oldest)
    got, how = costmodel.nccl_release(f"{major}.{minor - 1}.3")
    assert got == oldest and how.startswith("assumed")
    assert costmodel.nccl_release(None)[0] == keys[-1]
    major, minor = _version_key(keys[-1])
    for bad in (f"{major}.{minor + 1}", "abc", "3.1", ""):
        with pytest.raises(ValueError, match="nccl_version"):
            costmodel.nccl_release(bad)


def test_default_prediction_is_the_newest_release():
    sizes = 2.0 ** np.arange(10, 34, 3)
    a = costmodel.predict("all_reduce", sizes, "dgx-h100", nodes=2)
    b = costmodel.predict("all_reduce", sizes, "dgx-h100", nodes=2, nccl_version=costmodel.default_nccl_version())
    assert np.array_equal(a.time_s, b.time_s) and a.nccl_version == costmodel.default_nccl_version()


def test_the_intra_rule_picks_the_two_node_tree_at_least_where_the_min_rule_does():
    """Through 2.30 NCCL rates a two-node tree by intra-node bandwidth (up to twice the network's): never slower."""
    keys = costmodel.nccl_versions()
    intra = [k for k in keys if costmodel.two_node_tree_rule(k) == "intra"]
    new = [k for k in keys if costmodel.two_node_tree_rule(k) == "min"]
    if not intra or not new:
        pytest.skip("one rule only in the data")
    sizes = 2.0 ** np.arange(20, 35)
    for system in ("dgx-h100", "dgx-a100"):
        old = costmodel.predict("all_reduce", sizes, system, nodes=2, algorithm=("ring", "tree"), nccl_version=intra[-1])
        cur = costmodel.predict("all_reduce", sizes, system, nodes=2, algorithm=("ring", "tree"), nccl_version=new[0])
        assert np.all((old.algorithms == "tree") | (cur.algorithms != "tree"))
        assert np.sum(old.algorithms == "tree") > np.sum(cur.algorithms == "tree")


def test_validation_prices_each_case_with_the_release_it_ran_or_says_what_it_assumed():
    rows = costmodel.validation_table()
    cases = {c["id"]: c for c in costmodel.published()["cases"]}
    for r in rows:
        assert r["nccl_priced"] in costmodel.nccl_versions()
        stated = (cases[r["id"]].get("conditions") or {}).get("nccl")
        if stated is None or _version_key(stated) is None:
            assert r["nccl_from"].startswith("assumed"), r["id"]
        elif _version_key(stated) >= _version_key(costmodel.nccl_versions()[0]):
            assert r["nccl_priced"] == costmodel.nccl_release(stated)[0], r["id"]


def test_predict_cli_takes_the_version_and_refuses_a_bad_one(capsys):
    from course_lib.__main__ import main
    assert main(["predict", "all_reduce", "--system", "dgx-h100", "--nodes", "2", "--nccl-version", "2.21.5"]) == 0
    assert "NCCL 2.21" in capsys.readouterr().out
    assert main(["predict", "all_reduce", "--system", "dgx-h100", "--nccl-version", "9.9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--nccl-version" in err[0]


def test_amd_gpus_are_priced_with_rccls_own_latencies_over_xgmi():
    """RCCL maps xGMI to its NVLink path: an AMD node takes RCCL's xGMI row and base latencies (efficiency.json
    nccl_protocols.rccl), not PCIe's; an NVIDIA node keeps NCCL's; LL128 stays off on xGMI (RCCL's default)."""
    from course_lib.costmodel.nccl import base_latency_us
    table = costmodel.protocol_table()
    amd = costmodel.fabric("azure-nd-mi300x-v5")
    assert amd.intra_tech == "xgmi" and amd.arch in table["rccl"]["generations"]
    assert base_latency_us(amd, "ring", "LL") == table["rccl"]["base_latency_us"]["ring"]["LL"]
    nv = costmodel.fabric("dgx-h100")
    assert base_latency_us(nv, "ring", "LL") == table["base_latency_us"]["ring"]["LL"]
    p = costmodel.predict("all_reduce", [2**10, 2**24], "azure-nd-mi300x-v5")
    assert "LL128" not in set(p.protocols)
    steps = 2 * (8 - 1)
    row = table["hw_latency_us"]["xgmi"]["ring"]["LL"]
    want = amd.launch + 1e-6 * (table["rccl"]["base_latency_us"]["ring"]["LL"] + steps * row)
    assert p.protocols[0] == "LL" and p.time_s[0] > want and p.time_s[0] < want * 1.05  # latency-bound at 1 KiB
