"""Fit / informed / test integrity of the published collective cases, and the ranges built on the test cases."""
import fnmatch
import json
import re

import numpy as np
import pytest

from course_lib import costmodel as cm
from course_lib import datafiles
from course_lib.costmodel import ranges

DERIVATION_FILES = ("efficiency.json", "fabrics.json")


def _derivations(node, where=""):
    """(place, text) of every string under a key that holds a derivation, at any depth."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and "derivation" in key:
                yield f"{where}.{key}", value
            yield from _derivations(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _derivations(value, f"{where}[{i}]")


def _all_derivations():
    return [(f"{name}{place}", text) for name in DERIVATION_FILES
            for place, text in _derivations(datafiles.load(name))]


def named_cases(text, case_ids) -> set:
    """Case ids a derivation names as evidence: written out, or matched by a glob such as a-*-32G-tree.

    A mention the derivation itself labels a test (``test case(s) ...`` up to the next ``)``, ``;`` or
    sentence end: a check of the constant, not a source of it) is not evidence.
    """
    text = re.sub(r"test cases?\b[^;)]*?(?:[;)]|\.(?:\s|$)|$)", " ", text)
    named = {cid for cid in case_ids if re.search(rf"(?<![\w-]){re.escape(cid)}(?![\w-])", text)}
    for pattern in re.findall(r"[\w.-]*\*[\w.*-]*", text):
        if "-" in pattern:
            named |= set(fnmatch.filter(case_ids, pattern))
    return named


def test_named_cases_finds_ids_and_globs():
    ids = ["a-1node-x", "a-2node-x", "b-1node"]
    assert named_cases("fit cases a-*-x and b-1node", ids) == {"a-1node-x", "a-2node-x", "b-1node"}
    assert named_cases("a-1node-xy is another case", ids) == set()
    assert named_cases("fit on b-1node; checked on (test cases a-*-x). Then a-2node-x", ids) == {"b-1node", "a-2node-x"}


def test_no_derivation_is_a_placeholder():
    found = _all_derivations()
    assert len(found) >= 20
    for place, text in found:
        assert len(text.split()) >= 6 and not re.search(r"placeholder|\btodo\b|\btbd\b|xxx", text, re.I), place


def test_no_derivation_names_a_test_case():
    """A case a derivation cites was looked at while setting or choosing something: it cannot be a test case."""
    roles = {c["id"]: c["role"] for c in cm.published()["cases"]}
    cited = {}
    for place, text in _all_derivations():
        for cid in named_cases(text, list(roles)):
            cited.setdefault(cid, place)
    assert len(cited) >= 10                     # the derivations do name their cases
    wrong = {cid: place for cid, place in cited.items() if roles[cid] == "test"}
    assert not wrong, f"derivations name test cases: {wrong}"


def test_roles_are_three_and_informed_cases_say_what_they_informed():
    cases = cm.published()["cases"]
    assert {c["role"] for c in cases} == set(cm.ROLES)
    for c in cases:
        assert (c["role"] == "informed") == bool(c.get("informed")), c["id"]
        assert (c["role"] == "fit") >= bool(c.get("fit_for")), c["id"]
    informed = {c["id"] for c in cases if c["role"] == "informed"}
    assert {"p4dn-efa-2node-1G", "a3mega-2node-8589934592", "together-slinky-b200-4node-32G-nvls",
            "hf-playbook-allreduce-256MB-64node"} <= informed


def test_also_cases_are_re_runs_of_fit_cases_and_out_of_every_test_figure():
    """A re-run of a fit case (same cluster, algorithm, size, node count, days apart) lands on it by construction."""
    cases = {c["id"]: c for c in cm.published()["cases"]}
    also = [c for c in cases.values() if c["role"] == "also"]
    assert also
    for c in also:
        fit = cases[c["also_of"]]
        assert fit["role"] == "fit" and fit["id"] != c["id"]
        for key in ("system", "collective", "nbytes", "nodes", "algorithm"):
            assert c.get(key) == fit.get(key), (c["id"], key)
    assert all(("also_of" in c) == (c["role"] == "also") for c in cases.values())
    rows = cm.validation_table()
    test_ids = {r["id"] for r in rows if r["role"] == "test"}
    assert not test_ids & {c["id"] for c in also}
    goals = cm.validation_goals(rows)
    assert sum(g["cases"] for g in goals[:3]) == len(test_ids)


def test_duplicates_and_the_memory_note_are_dropped_not_tested():
    data = cm.published()
    ids = {c["id"] for c in data["cases"]}
    dropped = {d["id"]: d for d in data["dropped"]}
    assert {"h100-ring-2140", "h100-nvls-2140", "h100-node-8G", "h100-node-nvls", "hgx-h100-1node-309",
            "azure-h200-8G"} <= set(dropped)
    assert not ids & set(dropped) and all(d["why"] and d["same_as"] for d in dropped.values())
    assert "together-slinky-memory" not in datafiles.bibliography()
    assert not any(c["source"] == "together-slinky-memory" for c in data["cases"])
    # no test case repeats a fit case's measurement (same source, system, collective, nodes, size, algorithm, busbw)
    key = lambda c: (c["source"], c["system"], c["collective"], c.get("nodes", 1), c["nbytes"], c["algorithm"],
                     c["busbw_gb_s"])
    fit = {key(c) for c in data["cases"] if c["role"] == "fit"}
    assert not [c["id"] for c in data["cases"] if c["role"] == "test" and key(c) in fit]


def test_every_fit_case_quotes_its_source_and_says_where():
    for c in cm.published()["cases"]:
        if c["role"] == "fit":
            assert c.get("quote") and c.get("where"), c["id"]


def test_an_assumed_fabric_figure_is_not_labelled_fit():
    for kind, row in cm.fabrics_data()["fabrics"].items():
        if str(row.get("efficiency_derivation", "")).startswith("assumed"):
            assert row.get("role") == "assumed", kind


def test_headline_and_goals_count_test_cases_only():
    rows = cm.validation_table()
    s = cm.validation_summary(rows)
    test = [r for r in rows if r["role"] == "test"]
    assert s["test_cases"] == len(test) and s["cases"] == s["fit_cases"] + s["informed_cases"] + s["also_cases"] + s["test_cases"]
    assert s["large"] == sum(1 for r in test if r["nbytes"] >= 2**28)
    goal = cm.validation_goals(rows)[0]
    assert goal["cases"] == sum(1 for r in test if r["nbytes"] >= 2**27)
    informed = {r["id"] for r in rows if r["role"] == "informed"}
    assert not informed & set(cm.validation_goals(rows)[-1]["misses"])


# ---------------------------------------------------------------- ranges

def test_regime_is_size_band_scale_and_network_stack():
    assert cm.regime(2**33, 1, "dgx-h100") == cm.Regime(">= 128 MiB", "1 node", "NVLink")
    assert cm.regime(2**20, 2, "aws-p5").family == "EFA"
    assert cm.regime(2**20, 2, "gcp-a3-mega").family == "TCPX/TCPXO"
    assert cm.regime(2**10, 64, "dgx-h100") == cm.Regime("< 1 MiB", "> 16 nodes", "InfiniBand")
    assert cm.regime(2**30, 4, "dgx-h100", network="ethernet_tcp").family == "TCP sockets"
    assert cm.regime(2**30, 1, "azure-nd-mi300x-v5").family == "xGMI"
    assert cm.family_of("azure-nd-mi300x-v5", 1).startswith("AMD cdna3")
    assert cm.family_of("dgx-h100", 2) == "NVIDIA hopper InfiniBand"
    # every fabric kind names its stack in the data, and unlike stacks are not pooled
    stacks = {k: cm.fabric_kind(k)["stack"] for k in cm.fabric_kind_ids()}
    assert stacks["efa"] != stacks["tcpxo"] != stacks["slingshot"] != stacks["roce_gib"] != stacks["infiniband"]
    with pytest.raises(ValueError, match="nodes"):
        cm.regime(8, 0, "dgx-h100")


def test_an_own_range_is_source_weighted_and_conformal():
    rows = [r for r in cm.coverage_by_regime() if r["made"] == "own"]
    assert rows
    for r in rows:
        assert r["cases"] >= ranges.MIN_CASES and r["sources"] >= ranges.MIN_SOURCES
        ratios = ranges.regime_ratios()[next(k for k in ranges.regime_ratios() if str(k) == r["regime"])]
        inside = np.mean([r["low"] <= x <= r["high"] for x in ratios])
        assert inside >= ranges.SHARE - 0.15, r["regime"]        # it holds about its share of its own cases
    rng = cm.range_for(2**33, 1, "dgx-h100")
    assert rng.busbw(100.0) == pytest.approx((100 * rng.low, 100 * rng.high))
    assert rng.time(10.0) == pytest.approx((10 / rng.high, 10 / rng.low))
    assert "published runs measured" in rng.describe() and rng.how in rng.describe()
    # with few sources the bounds are the extremes (split-conformal at the source level, k = 0)
    C = ranges._Case
    reg = cm.Regime("< 1 MiB", "1 node", "NVLink")
    few = [C(x, s, "f", reg, i) for i, (x, s) in enumerate([(0.5, "a"), (1.0, "a"), (2.0, "b"), (1.1, "c")])]
    assert ranges.source_spread(few) == (0.5, 2.0)
    with pytest.raises(ValueError, match="ratios"):
        ranges.spread([1.0])


def test_every_regime_gets_a_range_that_says_how_it_was_made():
    for system, nodes, nbytes in (("dgx-h100", 64, 2**24), ("azure-nd-mi300x-v5", 1, 2**14),
                                  ("gcp-a3-mega", 8, 2**10), ("amd-mi355x-8gpu", 4, 2**20), ("dgx-b200", 2, 2**33)):
        rng = cm.range_for(nbytes, nodes, system)
        assert rng.known and rng.low < 1 < rng.high or rng.known, (system, nodes)
        assert rng.made in ("own", "borrowed", "wide") and rng.how
        if rng.made != "own":
            assert "widened by the across-family spread" in rng.how
    assert cm.range_for(2**14, 1, "azure-nd-mi300x-v5").how.startswith(("wide:", "borrowed:"))


def test_ranges_use_test_cases_only():
    counted = sum(len(v) for v in ranges.regime_ratios().values())
    assert counted == sum(1 for r in cm.validation_table() if r["role"] == "test")


def test_coverage_is_checked_leaving_out_a_source_and_a_family():
    rows = cm.coverage_by_regime()
    assert sum(r["cases"] for r in rows) == sum(len(v) for v in ranges.regime_ratios().values())
    for r in rows:
        for way in ("by_case", "by_source", "by_family"):
            c = r[way]
            assert 0 <= c["covered"] <= c["checked"] == r["cases"]   # every case is checked: a range always exists
    s = cm.coverage_summary(rows)
    assert s["nominal"] == ranges.SHARE
    # the nominal coverage holds out of sample, leaving out whole families and whole sources (within 10 points)
    assert s["by_family"]["coverage"] >= ranges.SHARE - 0.10 and s["met_by_family"]
    assert s["by_source"]["coverage"] >= ranges.SHARE - 0.10


def test_validation_json_carries_the_ranges(capsys):
    from course_lib.__main__ import main
    assert main(["validation", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["by_regime"]) == set(cm.ROLES) and out["ranges"]


def test_step_range_scales_only_the_exposed_communication():
    from types import SimpleNamespace as NS
    t = NS(kind="data parallel", crosses_nodes=True, group_size=64, bytes_per_call=2**30, exposed_s=0.2)
    idle = NS(kind="pipeline", crosses_nodes=True, group_size=64, bytes_per_call=2**20, exposed_s=0.0)
    est = NS(step_time_s=1.0, nodes=8, traffic=[t, idle])
    rng = cm.range_for(2**30, 8, "dgx-h100")
    r = cm.step_range(est, "dgx-h100")
    assert r["known"] and r["low_s"] == pytest.approx(0.8 + 0.2 / rng.high) and r["high_s"] == pytest.approx(0.8 + 0.2 / rng.low)
    mid = NS(kind="tensor parallel", crosses_nodes=True, group_size=64, bytes_per_call=2**24, exposed_s=0.1)
    r = cm.step_range(NS(step_time_s=1.0, nodes=64, traffic=[t, mid]), "dgx-h100")
    big, small = cm.range_for(2**30, 8, "dgx-h100"), cm.range_for(2**24, 64, "dgx-h100")  # every kind has a range
    assert r["known"] and not r["missing"]
    assert r["high_s"] == pytest.approx(0.7 + 0.2 / big.low + 0.1 / small.low)
    # nothing exposed: the step is its own range, and the phrase says why
    hidden = NS(step_time_s=1.0, nodes=8, traffic=[idle])
    assert cm.step_range(hidden, "dgx-h100")["exposed"] == [] and "no exposed communication" in cm.step_phrase(
        hidden, "dgx-h100")


def test_explorer_readouts_carry_the_range_of_their_regime():
    from course_lib.chapters import your_cluster
    from course_lib.chapters.data_parallel import scaling as data_parallel
    from course_lib.chapters.infiniband import hierarchical as infiniband
    from course_lib.chapters.planner import interactive as planner
    texts = [your_cluster._readout(4, 2, 25.0), infiniband._readout(2, 8, 400.0, 450.0, 8, 1.0, True),
             data_parallel._readout("megatron-1.7b", 64, 50.0, 0, 1, True),
             planner._readout("llama2-70b", "dgx-h200", 1024, 50.0, 450.0, 1024, 2.0)]
    for text in texts:
        assert any(k in text for k in ("x of the model", "spread of published", "no range")), text
    rng = cm.range_for(2**30, 2, infiniband._config(8, 8, 400.0, 450.0))
    assert f"{rng.low:.2f}-{rng.high:.2f}x of the model" in texts[1]
    assert "spec bandwidth" in infiniband._readout(2, 8, 400.0, 450.0, 8, 1.0, False)


def test_unusual_means_outside_the_range_and_not_near_the_model():
    rng = cm.Range(cm.Regime(">= 128 MiB", "1 node", "NVLink"), 40, 10, 0.90, 1.00)
    assert rng.unusual(1.01) is False          # just above a range that ends at 1.00: within 5% of the model
    assert rng.unusual(1.10) is True and rng.unusual(0.80) is True and rng.unusual(0.95) is False
    assert cm.Range(rng.regime, 3, 1, None, None).unusual(0.5) is None


def test_plugin_ranges_below_128_mib_say_the_per_message_cost_is_assumed_none():
    c = cm.efficiency_data()["plugin_message_cost"]
    assert c["role"] == "assumed" and c["assumed"] and c["us_per_proxy_step"] == 0.0
    mid = cm.range_for(2**24, 2, "gcp-a3-mega")
    assert mid.regime.family in ranges.PLUGIN_STACKS and "plugin_message_cost" in mid.describe()
    assert "plugin_message_cost" in cm.range_phrase(100.0, mid)
    assert mid.caveat and not cm.range_for(2**30, 2, "gcp-a3-mega").caveat       # large sizes: no caveat
    assert not cm.range_for(2**24, 2, "dgx-h100").caveat                          # InfiniBand: NCCL's own transport
