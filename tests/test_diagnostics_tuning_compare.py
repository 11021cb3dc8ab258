"""NCCL's TUNING table beside the course's model (issue 32 item 9): one row per algorithm x protocol NCCL printed,
NCCL's numbers verbatim, the course's equal to what ``costmodel.predict`` prices, in NCCL's units."""
import json

import numpy as np
import pytest

from course_lib import __main__ as cli
from course_lib import cli_inspect, collectives, costmodel, diagnostics, hardware, units
from course_lib.diagnostics import nccl_log
from course_lib.diagnostics import tuning_compare as tc

SAMPLE = "nccl_log_tuning_rtx5090_socket.log"


@pytest.fixture(autouse=True)
def _fresh_commands():
    cli._EXTRA_COMMANDS.clear()
    yield
    cli._EXTRA_COMMANDS.clear()


def _cells(text):
    """(function, algorithm, protocol) -> the 'lat/bw' text NCCL printed, read here independently of the reader."""
    out, algos, protos = {}, [], []
    for line in text.splitlines():
        body = line.split("NCCL INFO", 1)[-1]
        cells = body.split("|")
        head = cells[0].strip()
        if head == "Algorithm":
            algos = [w for c in cells[1:] for w in c.split()]
        elif head == "Protocol":
            protos = [c.strip() for c in cells[1:] if c.strip()]
        elif head in tc.COLLECTIVES and algos:
            vals = [c.strip() for c in cells[1:] if c.strip()]
            for i, v in enumerate(vals):
                out[(head, algos[i // 3], protos[i])] = v
    return out


def _log_and_machine(system_id=None, text=None):
    log = nccl_log.parse(text or diagnostics.sample_text(SAMPLE))
    return log, tc.machine(log, hardware.system(system_id) if system_id else None)


def test_one_row_per_algorithm_and_protocol_nccl_printed_with_its_numbers_verbatim():
    text = diagnostics.sample_text(SAMPLE)
    cells = _cells(text)
    log, m = _log_and_machine("consumer-5090-pcie")
    rows = tc.compare(log, m)
    assert len(rows) == len(cells) == len({(r["collective"], r["algorithm"], r["protocol"]) for r in rows})
    for r in rows:
        lat, bw = cells[(r["collective"], r["algorithm"], r["protocol"])].split("/")
        assert (r["nccl_latency_us"], r["nccl_bw_gb_s"]) == (float(lat), float(bw))
    ring = next(r for r in rows if (r["collective"], r["algorithm"], r["protocol"]) == ("AllReduce", "Ring", "Simple"))
    assert (ring["nccl_latency_us"], ring["nccl_bw_gb_s"]) == (36.4, 2.4)


@pytest.mark.parametrize("system_id", ["consumer-5090-pcie", "dgx-h100"])
def test_the_course_values_are_what_predict_prices_for_that_algorithm_and_protocol(system_id):
    log, m = _log_and_machine(system_id)
    launch = costmodel.fabric(m.system).launch
    checked = 0
    for r in tc.compare(log, m):
        algo = tc.ALGORITHMS.get(r["algorithm"])
        if r["course_bw_gb_s"] is None:
            assert r["course_note"], r
            continue
        coll = tc.COLLECTIVES[r["collective"]]
        big = 2.0**34
        pred = costmodel.predict(coll, [0.0, big / 2, big], m.system, gpus_per_node=m.gpus_per_node, nodes=m.nodes,
                                 algorithm=algo, protocol=r["protocol"], nccl_version=m.nccl_version)
        t0, t1, t2 = pred.time_s
        assert r["course_latency_us"] == pytest.approx((t0 - launch) * 1e6, rel=1e-9, abs=1e-9)
        algbw = (big / 2) / (t2 - t1) / units.GB
        factor = collectives.get(coll).busbw_factor(pred.ranks) if r["bw_sense"] == "busbw" else 1.0
        assert r["course_bw_gb_s"] == pytest.approx(algbw * factor, rel=1e-6)
        # the course's bandwidth is algorithm bandwidth: a large size's predicted algbw approaches it
        assert float(pred.algbw[2]) / units.GB == pytest.approx(algbw, rel=0.01)
        checked += 1
    assert checked >= 4


def test_units_nccl_bandwidth_is_algorithm_bandwidth_per_rank():
    # a ring all-reduce: NCCL's printed number is busbw x nRanks / (2 (nRanks - 1)) (tuning.cc), so on 8 ranks
    # it is 4/7 of the bus bandwidth; the course's column is in that sense too, not busbw
    log, m = _log_and_machine("dgx-h100")
    assert m.gpus_per_node * m.nodes == 8
    row = next(r for r in tc.compare(log, m) if (r["collective"], r["algorithm"], r["protocol"]) == ("AllReduce", "Ring", "Simple"))
    pred = costmodel.predict("all_reduce", 2.0**33, m.system, gpus_per_node=8, nodes=1, algorithm="ring", protocol="Simple")
    assert row["course_bw_gb_s"] == pytest.approx(float(pred.busbw[0]) / units.GB * 8 / 14, rel=0.01)
    assert row["bw_sense"] == "algbw" and row["course_bw_gb_s"] < float(pred.busbw[0]) / units.GB
    assert tc.nccl_sense("AllGather", "PAT") == "busbw" and tc.nccl_sense("AllGather", "Ring") == "algbw"
    data = tc.to_json(tc.compare(log, m), m)
    assert data["units"]["latency"] == "us" and "GB/s (1e9 B/s) per rank" in data["units"]["bandwidth"]
    assert data["launch_us_left_out"] == pytest.approx(costmodel.fabric(m.system).launch * 1e6)


def test_a_large_difference_has_a_reason_and_an_agreement_none():
    log, m = _log_and_machine("consumer-5090-pcie")
    for r in tc.compare(log, m):
        far = any(x is not None and not 0.75 <= x <= 1.25 for x in (r["latency_ratio"], r["bw_ratio"]))
        assert bool(r["reason"]) == (far and r["course_note"] is None), r
    # the tree's two-node rule is named for a two-node all-reduce tree that differs
    two = ("n0:1:1 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
           "n0:1:1 [0] NCCL INFO   Algorithm   |                            Tree                  |\n"
           "n0:1:1 [0] NCCL INFO   Protocol    |             LL |          LL128 |         Simple |\n"
           "n0:1:1 [0] NCCL INFO     AllReduce |    14.4/  11.1 |    21.4/  84.0 |    56.0/  40.0 |\n")
    log2, m2 = _log_and_machine("dgx-h100", two)
    assert (m2.nodes, m2.gpus_per_node) == (2, 8)
    simple = next(r for r in tc.compare(log2, m2) if r["protocol"] == "Simple")
    assert "two-node rule" in simple["reason"]


def test_the_machine_says_what_it_guessed():
    log, m = _log_and_machine()
    assert m.system.id == tc.DEFAULT_SYSTEM and "system" in m.guessed and "nodes" in m.guessed
    log, m = _log_and_machine("consumer-5090-pcie")
    assert "system" not in m.guessed and m.facts["nccl_version"][0] == "2.29.7+cuda12.9"


def test_inspect_prints_the_table_after_the_findings_and_lists_it_in_json(capsys):
    assert cli.main(["inspect", "--sample", SAMPLE, "--system", "consumer-5090-pcie"]) == 0
    out = capsys.readouterr().out
    assert "NCCL's own cost model (its TUNING table) beside the course's on consumer-5090-pcie" in out
    assert out.index("NCCL predicts for AllReduce") < out.index("beside the course's")
    assert "AllReduce     Ring/Simple" in out and "rows have bandwidth 0" in out
    assert cli.main(["inspect", "--json", "--sample", SAMPLE]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    table = report["tuning_vs_course"]
    assert len(table["rows"]) == len(_cells(diagnostics.sample_text(SAMPLE))) and "system" in table["guessed"]
    assert "tuning.cc at v2." in table["nccl_source"]


def test_no_tuning_table_no_comparison():
    obj = cli_inspect.inspect_text(diagnostics.sample_text("nccl_log_16_ranks_mlx5.log"))
    assert "tuning_vs_course" not in obj
    assert np.isfinite(tc.DIFFER)


def test_compare_sets_the_tuning_table_beside_the_model_on_the_machine_it_assumes(tmp_path, capsys):
    tuning = [ln for ln in diagnostics.sample_text(SAMPLE).splitlines() if "|" in ln]
    rows = "".join(f"{s:12d}  {s // 4:12d}     float     sum      -1  {100.0:7.1f}  {s / 1e5:6.2f}  {s / 1e5 * 1.75:6.2f}"
                   f"       0  {100.0:7.1f}  {s / 1e5:6.2f}  {s / 1e5 * 1.75:6.2f}       0\n" for s in (1 << 20, 1 << 22))
    path = tmp_path / "run.txt"
    path.write_text("\n".join(tuning) + "\n" + "# nThread 1 nGpus 8 minBytes 8 maxBytes 4194304\n"
                    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
                    + rows)
    assert cli.main(["compare", str(path), "--system", "dgx-h100", "--collective", "all_reduce", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    table = data["tuning_vs_course"]
    assert table["system"] == "dgx-h100" and table["nodes"] == data["nodes"] and table["gpus_per_node"] == data["gpus_per_node"]
    assert len(table["rows"]) == len(_cells(diagnostics.sample_text(SAMPLE)))
    assert cli.main(["compare", str(path), "--system", "dgx-h100", "--collective", "all_reduce"]) == 0
    assert "# tuning: NCCL's own cost model (its TUNING table) beside the course's on dgx-h100" in capsys.readouterr().out
