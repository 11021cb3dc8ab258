"""Tests for ``python -m course_lib plan``."""
import json
import subprocess
import sys

import pytest

from course_lib.__main__ import main


def test_plan_layout_text(capsys):
    assert main(["plan", "--gpus", "1024", "--tp", "8", "--pp", "16", "--global-batch", "1536"]) == 0
    out = capsys.readouterr().out
    assert "TP8 x PP16 x DP8" in out and "TFLOP/s per GPU" in out and "pipeline bubble" in out


def test_plan_step_time_carries_its_range_or_says_why_not(capsys):
    from course_lib import costmodel, parallel
    args = ["--model", "megatron-7.5b", "--system", "dgx-h100", "--nodes", "16", "--tp", "8", "--global-batch", "512"]
    # the CLI prices what it prints: zero and recompute left unset are chosen (estimate_choosing)
    est = parallel.estimate_choosing(parallel.model("megatron-7.5b"), "dgx-h100", tp=8, nodes=16, global_batch=512)
    r = costmodel.step_range(est, "dgx-h100")
    assert r["known"] and r["low_s"] < r["step_s"] < r["high_s"]
    assert main(["plan", *args]) == 0
    assert f"  range: {costmodel.step_phrase(est, 'dgx-h100')}" in capsys.readouterr().out
    assert main(["plan", *args, "--json"]) == 0
    rng = json.loads(capsys.readouterr().out)["estimate"]["step_range"]
    assert rng["low_s"] == pytest.approx(r["low_s"]) and rng["high_s"] == pytest.approx(r["high_s"])
    # pipeline sends across nodes: a regime with few published runs borrows a wide range, and the step has one
    assert main(["plan", "--model", "gpt3-175b", "--system", "dgx-h100", "--nodes", "64", "--tp", "8", "--pp", "8"]) == 0
    assert "with the spread of published collective runs in the regimes of its exposed communication" in \
        capsys.readouterr().out
    # the planner's best layout too
    assert main(["plan", "--gpus", "64", "--model", "megatron-7.5b", "--system", "dgx-h100", "--global-batch", "64",
                 "--json", "--top", "2"]) == 0
    assert "known" in json.loads(capsys.readouterr().out)["plan"]["best_step_range"]


def test_plan_search_json(capsys):
    assert main(["plan", "--gpus", "1024", "--global-batch", "1536", "--json", "--top", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["plan"]["top"]) == 3 and data["plan"]["best"]["fits"]


def test_plan_layout_and_search_json(capsys):
    assert main(["plan", "--gpus", "64", "--model", "megatron-7.5b", "--tp", "4", "--global-batch", "64",
                 "--search", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["estimate"]["tp"] == 4 and data["plan"]["top"]


def test_plan_validate(capsys):
    assert main(["plan", "--validate"]) == 0
    assert "zero20-fig1-os" in capsys.readouterr().out


def test_plan_errors_name_the_parameter(capsys):
    assert main(["plan", "--gpus", "64", "--tp", "5", "--global-batch", "64"]) == 2
    assert "tp must" in capsys.readouterr().err
    assert main(["plan"]) == 2
    assert "nodes" in capsys.readouterr().err


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "course_lib", "plan", "--gpus", "64", "--model", "megatron-7.5b",
                          "--tp", "4", "--global-batch", "64", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["estimate"]["dp"] == 16


def test_plan_lists_every_model_with_its_source(capsys):
    from course_lib import datafiles, parallel
    assert main(["plan", "--list-models"]) == 0
    out = capsys.readouterr().out
    for mid in parallel.model_ids():
        assert f"\n{mid} " in out and parallel.model(mid).source in out
    assert main(["plan", "--list-models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == parallel.model_ids()
    assert all(r["url"] == datafiles.source(r["source"])["url"] for r in rows)


def test_a_search_where_nothing_fits_names_no_winner(capsys):
    assert main(["plan", "--gpus", "8", "--search"]) == 0
    out = capsys.readouterr().out
    assert "Why the winner wins" not in out and "No winner:" in out and "no layout fits in memory" in out


def test_cross_node_data_parallel_note_says_what_its_rate_is(capsys):
    assert main(["plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--tp", "8",
                     "--pp", "16"]) == 0
    note = next(l for l in capsys.readouterr().out.splitlines() if "traffic crosses nodes" in l)
    assert "bus bandwidth per rank (nccl-tests' busbw" in note and "not a link's rate: one NIC is" in note
