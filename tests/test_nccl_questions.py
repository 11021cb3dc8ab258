"""Chapter 09's questions people ask: the data (threads cited, sections that exist), and each answer's numbers."""
import re

import pytest

from course_lib import costmodel, datafiles, hardware, manifest, systemfile
from course_lib.chapters import nccl_questions as faq


def test_every_question_cites_threads_and_names_a_section_that_exists():
    chapters = {c.number: c.source.read_text(encoding="utf-8") for c in manifest.chapters()}
    rows = faq.questions()
    assert len(rows) == len({q["id"] for q in rows}) >= 9
    for q in rows:
        assert q["question"].endswith("?") and q["threads"], q["id"]
        for sid, title, url in q["threads"]:
            assert datafiles.source(sid)["url"] == url and re.match(r"https://github\.com/NVIDIA/nccl", url), sid
        for chapter, section in q["taught"]:
            headings = re.findall(r"^# #{2,3} (.+)$", chapters[chapter], flags=re.MULTILINE)
            assert any(h.startswith(section) for h in headings), f"{q['id']}: chapter {chapter} has no '{section}'"
    # the ninth answers chapter 09's own source: every question is asked there, once
    text = chapters["09"]
    assert all(text.count(f'faq.threads("{q["id"]}")') == 1 for q in rows)
    assert "Q: " + rows[0]["question"] in faq.threads(rows[0]["id"])
    with pytest.raises(ValueError, match="qid"):
        faq.question("no-such-question")


def test_busbw_above_the_line_rate_only_where_the_ranks_stop_doing_the_adding():
    a = faq.line_rate_answer("dgx-h100")
    assert a["ring_busbw"] < a["link"] < a["nvls_busbw"]            # NVLS: the switch adds
    assert a["nvls_busbw"] == pytest.approx(a["nvls_algbw"] * 2 * 7 / 8)
    assert a["two_node_ring_busbw"] < a["nic"] < a["two_node_tree_busbw"]   # two nodes: each byte crosses once
    assert faq.line_rate_answer("dgx-a100")["nvls_busbw"] is None  # NVSwitch 2 cannot add


def test_units_answer_per_direction_and_bits():
    u = faq.units_answer("dgx-h100")
    assert u["gpu_link_bidirectional"] == 2 * u["gpu_link_per_direction"]
    assert u["nic_gbit_s"] == pytest.approx(8 * u["nic_per_direction"] / 1e9)
    assert u["nic_achievable"] < u["nic_per_direction"]


def test_low_busbw_causes_each_cost_bandwidth():
    low = faq.low_busbw_answer("dgx-h100", nodes=2)
    assert low["small_busbw"] < 0.5 * low["large_busbw"]
    assert low["tcp_busbw"] < low["large_busbw"] and low["one_nic_busbw"] < 0.3 * low["large_busbw"]
    assert low["large_busbw"] == pytest.approx(float(costmodel.predict("all_reduce", low["large"], "dgx-h100",
                                                                       nodes=2).busbw[0]))
    with pytest.raises(ValueError, match="nodes"):
        faq.low_busbw_answer(nodes=1)


def test_ncc_l_picks_the_tree_for_small_messages_and_the_ring_for_large_ones():
    rows = faq.algorithm_answer("dgx-h100", nodes=4)
    picks = [r["algorithm"] for r in rows]
    assert picks[0] == "tree" and picks[-1] == "ring"
    first_ring = picks.index("ring")
    assert set(picks[first_ring:]) == {"ring"}                    # one switch, from that size on
    assert [r["size"] for r in rows] == sorted(r["size"] for r in rows)


def test_pxn_counts():
    p = faq.pxn_answer("dgx-h100", nodes=2)
    assert p["flows_per_node_pair"] == 64 and p["cross_rail_without_pxn"] == 56
    assert p["messages_per_nic_without_pxn"] == 8 and p["messages_per_nic_with_pxn"] == 1


def test_all_to_all_reaches_n_over_n_minus_1_times_the_nic_share():
    rows = {r["nodes"]: r for r in faq.all_to_all_answer("dgx-h100", nodes=(2, 4, 16))}
    for n, r in rows.items():
        assert r["ratio"] == pytest.approx(n / (n - 1), rel=0.1)
        assert r["leaves_node"] == pytest.approx((n - 1) / n)
    assert rows[2]["busbw"] > rows[4]["busbw"] > rows[16]["busbw"]


def test_traffic_class_and_gid_choice():
    assert faq.traffic_class(106) == {"tc": 106, "dscp": 26, "ecn": 2, "ecn_capable": True}
    assert faq.traffic_class(136)["dscp"] == 34 and not faq.traffic_class(136)["ecn_capable"]
    with pytest.raises(ValueError, match="tc"):
        faq.traffic_class(256)
    table = [(0, "fe80::1", "v1"), (1, "fe80::1", "v2"), (2, "::ffff:10.1.0.7", "v1"), (3, "::ffff:10.1.0.7", "v2")]
    assert faq.routable_roce_v2_gid(table) == 3
    assert faq.routable_roce_v2_gid(table[:2] + [(5, "fd00::7", "v2")]) == 5   # a routable IPv6 GID, when no IPv4
    with pytest.raises(ValueError, match="rows"):
        faq.routable_roce_v2_gid(table[:3])


def test_the_hang_demo_names_the_rank_that_stalled():
    verdict = faq.hang_demo(timeout=4.0)
    assert "rank 1 at _hanging_rank" in verdict and "waited for it" in verdict
    with pytest.raises(ValueError, match="timeout"):
        faq.hang_demo(timeout=0)


def test_answers_accept_the_learner_s_own_system():
    box = systemfile.load_system(hardware.__file__.replace("hardware.py", "data/systems/rtx4090x4_p2p.toml"))
    assert faq.units_answer(box)["gpu_link_per_direction"] > 0
    assert faq.line_rate_answer(box)["nvls_busbw"] is None
