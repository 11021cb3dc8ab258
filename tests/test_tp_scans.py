"""Cross-node tensor parallelism: the network model's price and the published TP scans (course_lib.tp_scans)."""
import json

import pytest

from course_lib import costmodel, datafiles, parallel, tp_scans
from course_lib.__main__ import main

FALL_FACTOR = 1.2  # the model's TP 8 -> 16 fall must be within 1.2x of the published fall (either way)


@pytest.fixture(scope="module")
def rows():
    return tp_scans.scan_table()


def test_scans_are_sourced_and_split():
    scans = tp_scans.published()["scans"]
    assert {s["split"] for s in scans} == {"fit", "informed"}  # both shaped a choice (issue 24)
    for s in scans:
        assert datafiles.source(s["source"])["url"].startswith("https://")
        assert len(s["tp"]) == len(s["micro_batch"]) == len(s["measured_tokens_per_s_per_gpu"])
        assert s["anchor_tp"] in s["tp"] and max(s["tp"]) > 8


def test_table_is_relative_to_the_in_node_anchor(rows):
    for r in rows:
        assert r["crosses_nodes"] == (r["tp"] > 8)
        if r["tp"] == 8:
            assert r["measured_rel"] == pytest.approx(1.0) and r["predicted_rel"] == pytest.approx(1.0)


# Issue 24 moved these: under NCCL 2.32's latency table the tree's Simple protocol costs 4 us per NVLink step
# (it was 28), so the cross-node TP all-reduce on P5 got cheaper and the model's fall from TP 8 to 16 is now
# 0.83 and 0.79 of the published one (it was 0.84-0.87). Known misses, kept strict: a fix makes them fail.
@pytest.mark.parametrize("scan", tp_scans.scan_ids())
def test_model_fall_from_tp8_to_tp16_is_within_the_stated_factor_of_published(rows, scan):
    f = tp_scans.fall(rows, scan, 8, 16)
    assert f["measured"] > 0.4  # the published per-GPU throughput loses over 40% once TP leaves the node
    assert 1 / FALL_FACTOR <= f["factor"] <= FALL_FACTOR, f


def test_cross_node_tp_all_reduce_is_the_ring_or_tree_that_nccl_would_pick():
    """Not the faster of the two: NCCL picks by its own estimate (costmodel.nccl_prefers_tree), and at this size
    on two P5 nodes it runs the ring although the tree, priced as it really runs, would be faster."""
    n = 2 * 4096 * 16 * 3072
    ring, tree = (float(costmodel.predict("all_reduce", n, "aws-p5", gpus_per_node=8, nodes=2, algorithm=a).time_s[0])
                  for a in ("ring", "tree"))
    assert tree < ring
    assert parallel.cross_node_all_reduce_time("aws-p5", n, 16) == pytest.approx(ring)
    # more nodes, more network steps: never cheaper
    assert parallel.cross_node_all_reduce_time("aws-p5", n, 32) >= parallel.cross_node_all_reduce_time("aws-p5", n, 16)
    # a small all-reduce across nodes pays network latency that NVLink does not
    inside = parallel._coll("all_reduce", 2**16, 8, parallel.group_link("aws-p5", 8, 1))
    assert parallel.cross_node_all_reduce_time("aws-p5", 2**16, 16) > 2 * inside


def test_tp_phase_uses_the_network_price_only_across_nodes():
    for tp, across in ((8, False), (16, True)):
        e = parallel.estimate("megatron-3.6b", "aws-p5", gpus=tp, tp=tp, global_batch=4, micro_batch=4,
                              recompute="none", seq_len=4096)
        tr = e.traffic[0]
        assert tr.kind == "tensor parallel" and tr.crosses_nodes == across
        one = parallel.cross_node_all_reduce_time("aws-p5", tr.bytes_per_call, tp) if across else \
            parallel._coll("all_reduce", tr.bytes_per_call, tp, parallel.group_link("aws-p5", tp, 1))
        assert tr.time_s == pytest.approx(tr.calls_per_step * one) and tr.exposed_s == tr.time_s


def test_bad_arguments_name_the_parameter(rows):
    with pytest.raises(ValueError, match="tp_to"):
        tp_scans.fall(rows, "usp-3b-tp", 8, 12)
    with pytest.raises(ValueError, match="scan_id"):
        tp_scans.fall(rows, "nope")
    with pytest.raises(ValueError, match="scan"):
        tp_scans.scan_table("nope")
    with pytest.raises(ValueError, match="ranks"):
        parallel.cross_node_all_reduce_time("aws-p5", 1024, 0)


def test_cli_validate_tp(capsys):
    assert main(["plan", "--validate-tp"]) == 0
    out = capsys.readouterr().out
    assert all(sid in out for sid in tp_scans.scan_ids()) and "TP 8 -> 16" in out
    assert main(["plan", "--validate-tp", "--json"]) == 0
    assert {r["scan"] for r in json.loads(capsys.readouterr().out)} == set(tp_scans.scan_ids())
