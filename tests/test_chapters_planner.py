"""Chapter 08 library: the brief, memory, systems, time and GPU-hours, published runs, exercises, explorer."""
import json
import math
import time
from importlib import resources

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import checks, datafiles, grading, hardware, parallel, units  # noqa: E402
from course_lib.chapters import planner as pl  # noqa: E402
from course_lib.exercises import answers_ch08 as ch08, specs  # noqa: E402

P70 = parallel.model("llama2-70b").params


# ---------------------------------------------------------------- the brief

def test_brief_defaults_and_limits():
    b = pl.BRIEF
    assert (b.model, b.tokens, b.global_batch, b.max_gpus) == ("llama2-70b", 2.0e12, 1024, 2048)
    assert b.tokens_per_step == 1024 * 4096
    assert b.meets(29.9, 0.9e6, 2048)["all"]
    miss = b.meets(31, 0.9e6, 4096)
    assert not miss["days"] and miss["gpu_hours"] and not miss["gpus"] and not miss["all"]


@pytest.mark.parametrize("kwargs, name", [({"model": "gpt-9"}, "model"), ({"tokens": 0}, "tokens"),
                                          ({"global_batch": 0}, "global_batch"), ({"max_days": -1}, "max_days"),
                                          ({"systems": ()}, "systems"), ({"systems": ("dgx-h999",)}, "systems")])
def test_brief_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        pl.Brief(**kwargs)


def test_meets_validates():
    with pytest.raises(ValueError, match="days"):
        pl.BRIEF.meets(0, 1e6, 8)
    with pytest.raises(ValueError, match="gpus"):
        pl.BRIEF.meets(1, 1e6, 0.5)


# ---------------------------------------------------------------- memory

def test_min_gpus_for_states_llama2_70b():
    assert pl.min_gpus_for_states(P70, 80e9, zero=3) == math.ceil(16 * P70 / 80e9) == 14
    assert pl.min_gpus_for_states(P70, 80e9, zero=0) is None
    assert pl.min_gpus_for_states(P70, 80e9, zero=1) is None     # 4 bytes/param stay whole: 276 GB
    assert pl.min_gpus_for_states(P70, 80e9, zero=2) is None     # 2 bytes/param stay whole: 138 GB
    assert pl.min_gpus_for_states(P70, 141e9, zero=2) == 319
    # TP x PP divides everything first; the result counts all GPUs (dp x model_parallel)
    n = pl.min_gpus_for_states(P70, 80e9, zero=1, model_parallel=8)
    assert n % 8 == 0
    states = parallel.model_state_bytes(P70 / 8, n // 8, 1)["total"]
    assert states <= 80e9 < parallel.model_state_bytes(P70 / 8, n // 8 - 1, 1)["total"]
    assert pl.min_gpus_for_states(1e9, 80e9, zero=0) == 1


@pytest.mark.parametrize("kwargs, name", [({"params": 0}, "params"), ({"gpu_memory_bytes": -1}, "gpu_memory_bytes"),
                                          ({"zero": 4}, "zero"), ({"model_parallel": 0}, "model_parallel")])
def test_min_gpus_for_states_validates(kwargs, name):
    args = {"params": P70, "gpu_memory_bytes": 80e9, **kwargs}
    with pytest.raises(ValueError, match=name):
        pl.min_gpus_for_states(**args)


def test_states_table_splits_16_bytes_per_parameter():
    rows = pl.states_table(P70, (80, 141))
    assert [r["zero"] for r in rows] == [0, 1, 2, 3]
    for r in rows:
        assert r["fixed_gb"] + r["divided_gb"] == pytest.approx(16 * P70 / units.GB)
    assert rows[1]["fixed_gb"] == pytest.approx(4 * P70 / units.GB)
    assert rows[3]["min_gpus"] == {80: 14, 141: 8}
    with pytest.raises(ValueError, match="memories_gb"):
        pl.states_table(P70, ())


def test_activation_rows_recomputation_and_tp_divide():
    rows = {r["recompute"]: r for r in pl.activation_rows("llama2-70b", tps=(1, 8))}
    assert rows["none"][1] > rows["selective"][1] > rows["full"][1]
    assert rows["full"][8] == pytest.approx(rows["full"][1] / 8)
    assert rows["full"][1] == pytest.approx(2 * 4096 * 8192 * 80 / 1e9)
    with pytest.raises(ValueError, match="recomputes"):
        pl.activation_rows("llama2-70b", recomputes=("sometimes",))
    with pytest.raises(ValueError, match="tps"):
        pl.activation_rows("llama2-70b", tps=())


def test_memory_rows_h200_holds_what_h100_cannot():
    layout = [dict(tp=4, pp=1, micro_batch=2)]
    h100 = pl.memory_rows("llama2-70b", "dgx-h100", 1024, 1024, layout)[0]
    h200 = pl.memory_rows("llama2-70b", "dgx-h200", 1024, 1024, layout)[0]
    assert not h100["fits"] and h200["fits"]
    assert h100["total_gb"] == pytest.approx(h200["total_gb"])
    assert h200["weights_gb"] == pytest.approx(h200["gradients_gb"])
    with pytest.raises(ValueError, match="layouts"):
        pl.memory_rows("llama2-70b", "dgx-h100", 1024, 1024, [dict(tp=4)])


# ---------------------------------------------------------------- systems and links

def test_system_rows_are_per_direction():
    rows = {r["id"]: r for r in pl.system_rows()}
    h = rows["dgx-h100"]
    assert (h["gpu_link_gb_s"], h["gpu_link_gb_s_bidirectional"], h["net_gb_s_per_gpu"]) == (450, 900, 50)
    assert h["ratio"] == pytest.approx(9.0)
    assert rows["dgx-h200"]["memory_gb"] == 141
    assert rows["gb200-nvl72"]["domain"] == 72
    assert rows["pcie-8gpu"]["net_gb_s_per_gpu"] == pytest.approx(12.5)
    assert all(r["source"].startswith("https://") for r in rows.values())
    with pytest.raises(ValueError, match="system"):
        pl.system_rows(["dgx-h999"])


def test_slower_links_never_speed_up_the_plan():
    rows = pl.link_sensitivity(pl.BRIEF, "dgx-h200", 1024, nic_gbit_s=(100, 25), gpu_link_gb_s=(64,), fast=True)
    assert [r["case"] for r in rows][0] == "catalog"
    days = [r["days"] for r in rows]
    assert days[0] <= days[1] <= days[2]
    assert days[3] > days[0]
    with pytest.raises(ValueError, match="nic_gbit_s"):
        pl.link_sensitivity(pl.BRIEF, "dgx-h200", 1024, nic_gbit_s=100)


# ---------------------------------------------------------------- time and GPU-hours

def test_rate_time_and_gpu_hours():
    assert pl.required_tokens_per_s(2e12, 30) == pytest.approx(2e12 / (30 * 86400))
    assert pl.time_to_train_s(1e6, 1e3) == pytest.approx(1e3)
    assert pl.gpu_hours(3.6e6, 1.0) == pytest.approx(1000)
    for fn, args, name in ((pl.required_tokens_per_s, (2e12, 0), "days"), (pl.required_tokens_per_s, (0, 3), "tokens"),
                           (pl.time_to_train_s, (1, -1), "tokens_per_s"),
                           (pl.gpu_hours, (1, 0), "tokens_per_s_per_gpu")):
        with pytest.raises(ValueError, match=name):
            fn(*args)


def test_run_numbers_gpu_hours_are_days_times_gpus():
    best = pl.plan_run("llama2-70b", "dgx-h200", 512, 1024, fast=True).best
    n = pl.run_numbers(best, 2e12)
    assert n["gpu_hours"] == pytest.approx(n["days"] * 24 * 512)
    assert n["tokens_per_s"] == pytest.approx(best.tokens_per_s_per_gpu * 512)
    with pytest.raises(ValueError, match="estimate"):
        pl.run_numbers("TP4", 2e12)


def test_plan_run_fast_search_is_smaller_and_quick():
    full = pl.plan_run("llama2-70b", "dgx-h100", 1024, 1024)
    t0 = time.perf_counter()
    fast = pl.plan_run("llama2-70b", "dgx-h100", 1024, 1024, fast=True)
    elapsed = time.perf_counter() - t0
    assert fast.searched < full.searched / 2
    assert fast.best.step_time_s >= full.best.step_time_s
    assert fast.best.step_time_s <= 1.05 * full.best.step_time_s
    assert elapsed < 2.0  # one explorer redraw runs one such search
    with pytest.raises(ValueError, match="fast"):
        pl.plan_run("llama2-70b", "dgx-h100", 1024, 1024, fast="yes")


def test_compare_systems_ticks_the_brief():
    rows = {r["system"]: r for r in pl.compare_systems(pl.BRIEF, gpus=1024, fast=True)}
    assert set(rows) == set(pl.OFFERED_SYSTEMS)
    assert not rows["dgx-a100"]["meets"]["all"] and rows["dgx-h200"]["meets"]["all"]
    assert rows["pcie-8gpu"]["gpu_hours"] > rows["dgx-a100"]["gpu_hours"]  # same chip, slower links
    assert pl.lowest_gpu_hours(list(rows.values())) == "dgx-h200"
    with pytest.raises(ValueError, match="brief"):
        pl.compare_systems("llama2-70b")
    with pytest.raises(ValueError, match="rows"):
        pl.lowest_gpu_hours([])


def test_compare_systems_reports_nothing_fits():
    brief = pl.Brief(model="llama3-405b", global_batch=256)
    row = pl.compare_systems(brief, gpus=8, systems=("dgx-h100",), fast=True)[0]
    assert not row["fits"] and row["days"] == math.inf and not row["meets"]["all"]


def test_traffic_rows_put_tp_inside_the_node():
    best = pl.plan_run("llama2-70b", "dgx-h200", 1024, 1024, fast=True).best
    rows = {r["kind"]: r for r in pl.traffic_rows(best)}
    assert not rows["tensor parallel"]["crosses_nodes"]
    dp = next(r for k, r in rows.items() if "ZeRO" in k or "data parallel" in k)
    assert dp["crosses_nodes"] and dp["exposed_s"] < dp["time_s"]
    with pytest.raises(ValueError, match="estimate"):
        pl.traffic_rows(None)


def test_gpu_sweep_gpu_hours_rise_past_the_batch_limit():
    rows = pl.gpu_sweep(pl.BRIEF, systems=("dgx-h100",), counts=(1024, 8192))
    small, big = rows
    assert big["days"] < small["days"] and big["gpu_hours"] > small["gpu_hours"]
    with pytest.raises(ValueError, match="counts"):
        pl.gpu_sweep(pl.BRIEF, counts=())


# ---------------------------------------------------------------- published runs

def test_published_runs_are_sourced():
    data = pl.published_runs()
    for run in data["runs"]:
        assert run["source"] in datafiles.bibliography() and isinstance(run["assumed"], list)
        assert run["model"] in parallel.model_ids() and run["system"] in hardware.system_ids()
    llama2 = next(r for r in data["runs"] if r["id"] == "llama2-70b-a100")
    assert llama2["published"]["gpu_hours"] == 1720320 and llama2["tokens"] == 2.0e12
    assert data["facts"]["llama3-405b-reliability"]["interruptions"] == 466


def test_published_comparison_within_the_stated_band():
    rows = {r["id"]: r for r in pl.published_comparison()}
    for r in rows.values():
        assert 0.65 < r["ratio"] < 1.25, r   # GPU-hours include restarts the planner leaves out (optimistic)
    assert rows["gpt3-175b-megatron"]["quantity"] == "days"
    assert rows["gpt3-175b-megatron"]["layout"].startswith("TP8 x PP16")
    with pytest.raises(ValueError, match="run_id"):
        pl.predict_run("gpt-5")


def test_validation_ranges_cover_every_group():
    groups = {r["group"]: r for r in pl.validation_ranges()}
    assert set(groups) == {row["group"] for row in parallel.validation_table()}
    assert groups["ptdp-vs-zero3-175b"]["high"] > 1.5  # ZeRO-3 at scale: the model is optimistic


# ---------------------------------------------------------------- exercises

def _exercises():
    """Chapter 08's specs with their feedback (solutions/feedback.json: hints and choice feedback)."""
    text = resources.files("course_lib").joinpath("exercises/08.json").read_text(encoding="utf-8")
    return {i: {**s, **specs.feedback(i)} for i, s in json.loads(text).items()}


def test_exercise_data_matches_the_library():
    data, expected = _exercises(), ch08.expected_answers()
    assert set(expected) <= set(data)  # the rest are predictions (08.8) and written answers
    for key, value in expected.items():
        spec = data[key]
        if spec["kind"] == "choice":
            assert grading.expected(key) == value, key
        else:
            assert grading.expected(key) == pytest.approx(value, rel=spec["rtol"] / 4), key


def test_every_hint_is_reachable_and_not_the_answer():
    for key, spec in _exercises().items():
        if spec["kind"] == "free_text":
            continue  # graded by hand
        assert checks.evaluate(key, None).status == "not answered"
        if spec["kind"] == "choice":
            assert checks.evaluate(key, grading.expected(key)).correct
            for letter, hint in spec["choice_hints"].items():
                assert checks.evaluate(key, letter).message == hint
            continue
        assert checks.evaluate(key, grading.expected(key)).correct
        for item in spec.get("hints", []):
            assert abs(item["factor"] - 1) > spec["rtol"], (key, item)
            assert checks.evaluate(key, grading.expected(key) * item["factor"]).message == item["hint"], (key, item)


# ---------------------------------------------------------------- views and the explorer

def test_plots_draw_without_error():
    axes = pl.draw_systems()
    assert "DGX H200" in axes[0].get_title() and "NVL72" in axes[1].get_title()
    rows = pl.gpu_sweep(pl.BRIEF, systems=("dgx-h200",), counts=(512, 1024))
    axes = pl.plot_gpu_sweep(rows)
    assert axes[0].get_lines()
    ax = pl.plot_published_comparison()
    assert ax.get_title()
    _, ax = plt.subplots()
    pl.draw_breakdown(ax, pl.plan_run("llama3-405b", "dgx-h100", 8, 256, fast=True))
    assert any("no layout fits" in t.get_text() for t in ax.texts)
    with pytest.raises(ValueError, match="plan_"):
        pl.draw_breakdown(ax, None)
    plt.close("all")


def test_show_functions_render_html():
    pl.show_brief()
    pl.show_states_table(P70)
    pl.show_activation_rows("llama2-70b")
    pl.show_system_rows()
    pl.show_validation_ranges()
    with pytest.raises(ValueError, match="brief"):
        pl.show_brief("llama2-70b")


def test_explorer_builds_without_a_frontend_and_follows_the_system():
    box = pl.planner_explorer()
    controls = box.controls
    assert {"gpus", "nic_gbit_s", "nvlink_gb_s", "system", "model", "global_batch", "tokens_t"} <= set(controls)
    best = pl.plan_run("llama2-70b", "dgx-h200", 1024, 1024, fast=True).best
    assert f"{best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU" in box.readout and "precision" in controls
    controls["system"].value = "dgx-a100"      # link sliders follow the catalog
    assert controls["nic_gbit_s"].value == pytest.approx(200.0)
    assert controls["nvlink_gb_s"].value == pytest.approx(300.0)
    assert "✘" in box.readout                    # A100 on 1,024 GPUs misses the brief
    assert "NICs of 25 Gb/s" in box.render(gpus=2048, nic_gbit_s=25.0)
    plt.close("all")


@pytest.mark.parametrize("kwargs, name", [({"gpus": 1000}, "gpus"), ({"model": "gpt-9"}, "model"),
                                          ({"system": "dgx-h999"}, "system"), ({"global_batch": 100}, "global_batch"),
                                          ({"tokens_t": 50}, "tokens_t"), ({"nic_gbit_s": 5}, "nic_gbit_s"),
                                          ({"nvlink_gb_s": 1}, "nvlink_gb_s")])
def test_explorer_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        pl.planner_explorer(**kwargs)


def test_llama2_power_per_model_follows_table_2():
    caps = pl.published_runs()["facts"]["llama2-power-caps"]
    assert caps["watts_by_model"]["llama2-70b"] == caps["rsc_watts"] == 400
    assert [m for m, w in caps["watts_by_model"].items() if w == caps["production_watts"]] == ["llama2-34b"]
    run = next(r for r in pl.published_runs()["runs"] if r["model"] == "llama2-70b")
    assert "half of the training ran at a 350 W" not in run["note"]
