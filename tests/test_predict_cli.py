"""python -m course_lib predict / compare."""
import json

import pytest

from course_lib import __main__ as cli
from course_lib.cli_predict import sweep
from course_lib.diagnostics.nccl_tests import parse_nccl_tests

SAMPLE = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20
# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid 1 on nodeA device  0 [0x01] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 2 on nodeA device  1 [0x02] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1    40.00   26.21   45.88      0    39.00   26.89   47.05      0
  8589934592    2147483648     float     sum      -1    31356  273.95  479.41      0    31308  274.36  480.14      0
"""


@pytest.fixture(autouse=True)
def _fresh_commands():
    # __main__.main() appends the extra commands on every call; start each test from none
    cli._EXTRA_COMMANDS.clear()
    yield
    cli._EXTRA_COMMANDS.clear()


def test_sweep_follows_nccl_tests_sizes():
    s = sweep("32K", "16G", 2)
    assert s[0] == 32768 and s[-1] == 16 * 2**30 and len(s) == 20


def test_predict_table(capsys):
    assert cli.main(["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "8", "-e", "16G", "-f", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [l for l in out if l and not l.startswith("#")]
    assert len(rows) == 32 and rows[-1].split()[0] == str(16 * 2**30)


def test_predict_json_nodes_algo(capsys):
    assert cli.main(["predict", "all_gather", "--system", "dgx-h100", "--nodes", "4", "--algo", "ring",
                     "-b", "1M", "-e", "1G", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ranks"] == 32 and data["rows"][0]["algorithm"] == "ring"


def test_predict_errors(capsys):
    assert cli.main(["predict", "all_reduce", "--system", "nope", "-b", "1M", "-e", "1G"]) == 2
    assert "system" in capsys.readouterr().err
    cli._EXTRA_COMMANDS.clear()
    assert cli.main(["predict", "all_reduce", "--system", "dgx-h100", "-b", "1Mb", "-e", "1G"]) == 2


def test_compare(tmp_path, capsys):
    parsed = parse_nccl_tests(SAMPLE)
    assert parsed["collective"] == "all_reduce" and parsed["rows"][1]["busbw"] == 479.41
    f = tmp_path / "run.txt"
    f.write_text(SAMPLE)
    assert cli.main(["compare", str(f), "--system", "dgx-h100", "-g", "8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert abs(data["rows"][1]["ratio"] - 1) < 0.2


def test_validation_command_prints_every_case_with_its_ratio(capsys):
    from course_lib import costmodel

    assert cli.main(["validation"]) == 0
    summary = capsys.readouterr().out.splitlines()
    assert len(summary) <= 20 and any("goals on the TEST cases" in line for line in summary[:5])  # issue 37 item 6
    assert all(g["name"] in "\n".join(summary) for g in costmodel.validation_goals())
    assert any("--details" in line for line in summary)
    assert cli.main(["validation", "--details"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:len(summary)] == summary
    rows = costmodel.validation_table()
    for r in rows:
        assert r["id"] in out and f"{r['ratio']:.2f}" in out
    assert f"{len(rows)} published nccl-tests runs" in out
    assert cli.main(["validation", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["cases"]) == len(rows)
    assert all(c["source"]["url"].startswith("https://") for c in data["cases"])


def test_predict_shows_each_rows_range_and_where_it_comes_from(capsys):
    from course_lib import costmodel

    assert cli.main(["predict", "all_reduce", "--system", "aws-p5", "--nodes", "2", "-b", "8", "-e", "8G", "-f", "1024"]) == 0
    out = capsys.readouterr().out
    big = costmodel.range_for(2**33, 2, "aws-p5")
    assert big.known and f"# range: {big.describe()}" in out
    small_rng = costmodel.range_for(8, 2, "aws-p5")                          # small sizes on 2 EFA nodes: borrowed
    assert small_rng.made != "own" and f"# range: {small_rng.describe()}" in out
    row = next(line for line in out.splitlines() if line.split() and line.split()[0] == str(2**33))
    busbw = float(row.split()[7])
    low, high = (float(x) for x in row.split()[-1].split("-"))
    assert low == pytest.approx(busbw * big.low, rel=0.01) and high == pytest.approx(busbw * big.high, rel=0.01)
    small = next(line for line in out.splitlines() if line.split() and line.split()[0] == "8")
    assert small.split()[-1] != "-"                                          # every size gets a range
    assert cli.main(["predict", "all_reduce", "--system", "dgx-h100", "--nodes", "64", "-b", "1G", "-e", "1G", "--json"]) == 0
    rng = json.loads(capsys.readouterr().out)["rows"][0]["range"]
    assert rng["known"] and rng["regime"] == ">= 128 MiB, > 16 nodes, InfiniBand"
    assert rng["busbw_low_gb_s"] < rng["busbw_high_gb_s"]
    assert cli.main(["predict", "all_reduce", "--system", "dgx-h100", "-b", "1G", "-e", "1G", "--spec"]) == 0
    assert "# range: none with --spec" in capsys.readouterr().out
