"""Chapter 04 library: collectives, algorithm patterns, the ring step-through, explorers, lab helpers."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import checks, grading, costmodel, hardware, units  # noqa: E402
from course_lib.chapters import collectives as cl  # noqa: E402
from course_lib.exercises import specs  # noqa: E402
from course_lib.lab import calibrate  # noqa: E402


# ---------------------------------------------------------------- the six collectives

def test_collective_buffers_before_and_after():
    before, after = cl.collective_buffers("all_reduce", 4)
    assert len(before) == len(after) == 4
    assert all(cell == (f"Σ{c}", "sum") for row in after for c, cell in enumerate(row))
    _, rs = cl.collective_buffers("reduce_scatter", 4)
    for r, row in enumerate(rs):
        assert [c for c, cell in enumerate(row) if cell is not None] == [r]
        assert row[r][1] == "sum"
    before, after = cl.collective_buffers("all_to_all", 3)
    assert all(after[r][c] == before[c][r] for r in range(3) for c in range(3))  # a transpose
    before, after = cl.collective_buffers("broadcast", 5)
    assert before[1] == [None] and all(row == [("A", 0)] for row in after)
    before, after = cl.collective_buffers("all_gather", 2)
    assert before == [[("A", 0), None], [None, ("B", 1)]]
    _, red = cl.collective_buffers("reduce", 3)
    assert red[0] == [("Σ", "sum")] and red[2] == [("C", 2)]


def test_collective_buffers_validates():
    with pytest.raises(ValueError, match="collective"):
        cl.collective_buffers("allreduce", 4)
    with pytest.raises(ValueError, match="ranks"):
        cl.collective_buffers("all_reduce", 9)
    with pytest.raises(ValueError, match="ranks"):
        cl.collective_buffers("all_reduce", 1)


def test_collectives_table_uses_the_nccl_tests_factors():
    rows = {r["collective"]: r for r in cl.collectives_table(8)}
    assert set(rows) == set(cl.COLLECTIVES)
    assert rows["all_reduce"]["busbw_factor"] == pytest.approx(1.75)
    assert rows["all_gather"]["busbw_factor"] == pytest.approx(7 / 8)
    assert rows["broadcast"]["busbw_factor"] == 1.0
    with pytest.raises(ValueError, match="ranks"):
        cl.collectives_table(0)


# ---------------------------------------------------------------- algorithms

@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_patterns_have_the_models_number_of_steps(p):
    steps = {row["algorithm"]: row["steps"] for row in cl.algorithm_table(1e6, p, 1e9, 1e-6)}
    for name in ("ring", "binomial_tree", "recursive_doubling", "halving_doubling"):
        assert len(cl.algorithm_pattern(name, p)) == steps[name], name
    # naive: two rounds, but rank 0 handles each of its messages in turn, one alpha each: 2(p-1) in the model
    naive = cl.algorithm_pattern("naive", p)
    assert len(naive) == 2 and steps["naive"] == sum(0 in pair for step in naive for pair in step) == 2 * (p - 1)


def test_pattern_shapes():
    ring = cl.algorithm_pattern("ring", 5)
    assert len(ring) == 8 and all(sorted(step) == [(r, (r + 1) % 5) for r in range(5)] for step in ring)
    tree = cl.algorithm_pattern("binomial_tree", 6)  # not a power of two: every rank but 0 sends up exactly once
    up = [m for step in tree[:len(tree) // 2] for m in step]
    assert sorted(src for src, _ in up) == [1, 2, 3, 4, 5]
    hd = cl.algorithm_pattern("halving_doubling", 8)
    assert [abs(a - b) for a, b in (step[0] for step in hd)] == [4, 2, 1, 1, 2, 4]
    assert [abs(a - b) for a, b in (s[0] for s in cl.algorithm_pattern("recursive_doubling", 8))] == [1, 2, 4]
    with pytest.raises(ValueError, match="power of two"):
        cl.algorithm_pattern("halving_doubling", 6)
    with pytest.raises(ValueError, match="algorithm"):
        cl.algorithm_pattern("butterfly", 8)
    with pytest.raises(ValueError, match="ranks"):
        cl.algorithm_pattern("ring", 1)


def test_algorithm_table_against_the_bound():
    rows = {r["algorithm"]: r for r in cl.algorithm_table(1e9, 8, 450e9, 0.0)}
    assert rows["ring"]["vs_lower_bound"] == pytest.approx(1.0)
    assert rows["halving_doubling"]["vs_lower_bound"] == pytest.approx(1.0)
    assert rows["recursive_doubling"]["vs_lower_bound"] == pytest.approx(3 / 1.75)
    assert rows["naive"]["bytes_per_rank"] == pytest.approx(14e9)
    assert rows["ring"]["time_s"] == pytest.approx(costmodel.lower_bound_time(1e9, 8, 450e9))
    for kwargs, name in (({"nbytes": 0}, "nbytes"), ({"ranks": 0}, "ranks"), ({"bandwidth": -1}, "bandwidth"),
                         ({"latency": -1e-6}, "latency")):
        args = {"nbytes": 1e6, "ranks": 8, "bandwidth": 1e9, "latency": 1e-6, **kwargs}
        with pytest.raises(ValueError, match=name):
            cl.algorithm_table(**args)


def test_small_messages_favour_few_steps_and_large_the_least_volume():
    """Whatever the chapter's ALGORITHMS hold (a new one may win): at 256 KB on 64 ranks the latency term rules,
    so the fastest takes fewer steps than the least-volume algorithm; at 10 GB on 8 the bandwidth term does, so
    the fastest moves the least volume. Either way it is the one of least alpha x steps + volume x n / B."""
    from course_lib import collectives
    terms = lambda algorithm, p: collectives.get("all_reduce").algorithm(algorithm).terms(p)
    time = lambda algorithm, n, p: terms(algorithm, p)[0] * 5e-6 + terms(algorithm, p)[1] * n / 450e9
    small, large = cl.fastest(256e3, 64, 450e9, 5e-6), cl.fastest(10e9, 8, 450e9, 5e-6)
    least_volume = min(cl.ALGORITHMS, key=lambda a: (terms(a, 64)[1], terms(a, 64)[0]))
    assert terms(small, 64)[0] < terms(least_volume, 64)[0]
    assert terms(large, 8)[1] == min(terms(a, 8)[1] for a in cl.ALGORITHMS)
    for chosen, n, p in ((small, 256e3, 64), (large, 10e9, 8)):
        assert time(chosen, n, p) == pytest.approx(min(time(a, n, p) for a in cl.ALGORITHMS))
    size = cl.crossover_size(8, 450e9, costmodel.hop_latency("nvlink"))
    assert 1e5 < size < 1e8
    assert cl.crossover_size(2, 1e9, 1e-4) is None  # on 2 ranks recursive doubling is never slower


def test_cost_curves_ring_meets_the_bound_without_latency():
    c = cl.cost_curves(8, 450e9, 0.0, sizes=[1e6, 1e9])
    assert c["ring"] == pytest.approx(c["lower_bound"])
    assert all(c["naive"] > c["ring"])
    with pytest.raises(ValueError, match="sizes"):
        cl.cost_curves(8, 450e9, 0.0, sizes=[0])


# ---------------------------------------------------------------- the ring, step by step

@pytest.mark.parametrize("p", range(2, 9))
def test_ring_reduce_scatter_leaves_one_reduced_chunk_per_rank(p):
    states = cl.ring_states(p)
    assert len(states) == 2 * (p - 1) + 1 == cl.ring_steps(p) + 1
    assert cl.owned_chunks(states[0]) == {r: [] for r in range(p)}
    assert cl.owned_chunks(states[p - 1]) == {r: [r] for r in range(p)}  # the library's order
    assert cl.owned_chunks(states[-1]) == {r: list(range(p)) for r in range(p)}


@pytest.mark.parametrize("p", [2, 3, 4, 7])
def test_ring_never_adds_a_contribution_twice(p):
    states = cl.ring_states(p)
    for k, transfers in enumerate(cl.ring_schedule(p)):
        before = states[k]
        for t in transfers:
            assert t["dst"] == (t["src"] + 1) % p
            if t["phase"] == "reduce-scatter":
                assert not before[t["src"]][t["chunk"]] & before[t["dst"]][t["chunk"]]
            else:
                assert before[t["src"]][t["chunk"]] == frozenset(range(p))  # only finished chunks travel
        # every rank sends exactly one chunk and receives exactly one per step
        assert sorted(t["src"] for t in transfers) == list(range(p))


def test_ring_step_info_and_validation():
    assert cl.ring_step_info(0, 4)["phase"] == "start"
    info = cl.ring_step_info(3, 4)
    assert info["phase"] == "reduce-scatter" and "fully reduced" in info["text"]
    assert cl.ring_step_info(4, 4)["phase"] == "all-gather"
    assert "whole sum" in cl.ring_step_info(6, 4)["text"]
    with pytest.raises(ValueError, match="step"):
        cl.ring_step_info(7, 4)
    with pytest.raises(ValueError, match="ranks"):
        cl.ring_states(0)
    with pytest.raises(ValueError, match="state"):
        cl.owned_chunks([])


def test_ring_drawings_draw():
    ax = cl.draw_ring_step(3, 4)
    full = [p for p in ax.patches if getattr(p, "get_linewidth", lambda: 0)() >= 2.0 and hasattr(p, "get_width")]
    assert len(full) == 4  # one fully reduced chunk per rank after the reduce-scatter
    assert "reduce-scatter" in ax.get_title()
    plt.close(ax.figure)
    ax = cl.draw_ring_step(0, 8)
    assert ax.get_title().startswith("start")
    plt.close(ax.figure)
    fig = cl.draw_ring_steps(3)
    assert sum(1 for a in fig.axes if a.get_title()) == 5
    plt.close(fig)
    with pytest.raises(ValueError, match="step"):
        cl.draw_ring_step(-1, 4)
    with pytest.raises(ValueError, match="ranks"):
        cl.draw_ring_steps(7)


def test_static_diagrams_draw():
    axes = cl.draw_collectives(4)
    assert [a.get_title() for a in axes] == [c.replace("_", "-") for c in cl.COLLECTIVES]
    plt.close(axes[0].figure)
    axes = cl.draw_algorithms(8)
    assert len(axes) == 4 and all(a.get_title() for a in axes)
    plt.close(axes[0].figure)
    with pytest.raises(ValueError, match="ranks"):
        cl.draw_algorithms(6)
    _, axes = plt.subplots(1, 2)
    with pytest.raises(ValueError, match="axes"):
        cl.draw_collectives(4, axes=axes)
    plt.close("all")


# ---------------------------------------------------------------- explorers

def test_cost_draw_and_readout():
    fig, ax = plt.subplots()
    cl.draw_cost(ax, 1000.0, 8, 450.0, 0.6, "ring")
    assert len(ax.lines) == len(cl.ALGORITHMS) + 3  # curves, bound, your point, where the ring overtakes
    plt.close(fig)
    text = cl.cost_readout(1000.0, 8, 450.0, 0.0, "ring")
    assert "busbw <b>450 GB/s per direction</b>" in text and "(1.00x)" in text
    assert "recursive doubling" in cl.cost_readout(0.256, 64, 450.0, 5.0, "ring")  # the fastest there
    for kwargs, name in (({"size_mb": 0}, "size_mb"), ({"ranks": 1}, "ranks"), ({"link_gb_s": 0}, "link_gb_s"),
                         ({"latency_us": -1}, "latency_us"), ({"algorithm": "magic"}, "algorithm")):
        args = {"size_mb": 1.0, "ranks": 8, "link_gb_s": 450.0, "latency_us": 1.0, "algorithm": "ring", **kwargs}
        with pytest.raises(ValueError, match=name):
            cl.cost_readout(**args)


def test_cost_explorer_readout_follows_ranks_and_algorithm():
    box = cl.cost_explorer()
    assert {"size_mb", "ranks", "link_gb_s", "latency_us", "algorithm"} == set(box.controls)
    readout = box.render(ranks=64, algorithm="naive")
    assert "on 64 ranks" in readout and "naive" in readout
    plt.close("all")
    with pytest.raises(ValueError, match="ranks"):
        cl.cost_explorer(ranks=6)
    with pytest.raises(ValueError, match="link_gb_s"):
        cl.cost_explorer(link_gb_s=0)


def test_ring_explorer_step_follows_ranks():
    box = cl.ring_explorer(ranks=4, step=2)
    controls = box.controls
    assert controls["step"].max == 6
    controls["ranks"].value = 8
    assert controls["step"].max == 14
    controls["step"].value = 7
    assert "8 of 64" in box.readout  # after the reduce-scatter: one chunk per rank
    controls["ranks"].value = 2  # the step is clamped, nothing breaks
    assert controls["step"].max == 2
    plt.close("all")
    with pytest.raises(ValueError, match="ranks"):
        cl.ring_explorer(ranks=7)
    with pytest.raises(ValueError, match="step"):
        cl.ring_explorer(ranks=4, step=9)


# ---------------------------------------------------------------- predict, measure, oversubscribe

def _cal(cores=2):
    ab = calibrate.AlphaBeta(1e-4, 1e-9)
    return calibrate.Calibration(pingpong=ab, exchange=ab, gamma=1e-10, cores=cores)


def _rows(times):
    return [{"size": size, "ranks": p, "algorithm": "builtin", "time_s": t} for (p, size), t in times.items()]


def test_oversubscription_table_and_lines():
    cal = _cal(cores=2)
    small, large = 65536, 16 * 2**20
    rows = _rows({(2, small): 1e-3, (4, small): 1e-2, (2, large): 2e-2, (4, large): 6e-2})
    table = cl.oversubscription_table(cal, rows)
    assert [r["size"] for r in table] == [small, large]
    big = table[1]
    assert big["measured_ratio"] == pytest.approx(3.0)
    assert big["model_ratio"] == pytest.approx(cal.predict(large, 4, stretch=1) / cal.predict(large, 2, stretch=1))
    assert big["stretched_ratio"] == pytest.approx(2 * big["model_ratio"])
    assert big["pred_over_measured"] == pytest.approx(cal.predict(large, 4) / 6e-2)
    lines = cl.oversubscription_lines(table)
    assert "more than even the stretched model" in lines[0]
    assert "close to the stretched model" in lines[1]
    assert "4 ranks vs 2 ranks on 2 cores" in cl.format_oversubscription(table, cores=2)
    with pytest.raises(ValueError, match="rows"):
        cl.oversubscription_table(cal, _rows({(2, small): 1e-3}))
    with pytest.raises(ValueError, match="cal"):
        cl.oversubscription_table("fit", rows)
    with pytest.raises(ValueError, match="table"):
        cl.oversubscription_lines([])


def test_compare_prediction_never_shows_the_expected_answer():
    cal = _cal()
    n = 4 * 2**20
    rows = _rows({(4, n): 0.012})
    expected = grading.expected("04.5")
    lines = cl.compare_prediction(None, rows, n, 4, cal)
    assert "not answered yet" in lines[0]
    assert units.format_time(expected) not in "\n".join(lines)
    lines = cl.compare_prediction(0.006, rows, n, 4, cal)
    assert "measured / your prediction = 2.00" in lines[-1]
    assert "must be a number" in cl.compare_prediction("soon", rows, n, 4, cal)[0]
    with pytest.raises(ValueError, match="rows"):
        cl.compare_prediction(0.006, rows, n, 2, cal)


# ---------------------------------------------------------------- published measurements

def test_published_sweeps_and_model_failures():
    sweeps = cl.published_sweeps()
    assert sweeps
    for cases in sweeps.values():
        assert len(cases) >= 4 and all(c.get("nodes", 1) == 1 for c in cases)
        assert [c["nbytes"] for c in cases] == sorted(c["nbytes"] for c in cases)
    lines = cl.model_failures()
    assert lines and all("https://" in line for line in lines)
    assert any(line.startswith("Small messages") for line in lines)
    for cases in sweeps.values():   # the "8-GPU" figure: every sweep ran on 8 GPUs (no GB200 NVL72's 72)
        assert all((c.get("gpus_per_node") or hardware.system(c["system"]).gpus_per_node) == 8 for c in cases)
    ax = cl.plot_published()
    assert ax.get_title()
    import io
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png", bbox_inches="tight")
    width_px = int.from_bytes(buffer.getvalue()[16:20], "big")   # the PNG header's width
    assert width_px <= 1000, width_px   # it was 1639 px, a long legend label beside an 8-inch plot
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="min_points"):
        cl.published_sweeps(1)


# ---------------------------------------------------------------- exercises 04.x

def test_exercise_answers_match_the_library():
    nvl3 = hardware.nvlink(3)
    assert checks.evaluate("04.1", costmodel.lower_bound_time(14e9, 8, nvl3.per_direction)).correct
    assert checks.evaluate("04.2", costmodel.busbw("all_reduce", 1073741824, 5012.3e-6, 8) / units.GB).correct
    assert checks.evaluate("04.3", "C").correct
    assert checks.spec("04.3")["choices"][2] == "C" and cl.fastest(256e3, 64, 450e9, 5e-6) == "recursive_doubling"
    predicted = calibrate.ring_all_reduce_time(4 * 2**20, 4, 200e-6, 1e-9)
    assert checks.evaluate("04.5", predicted).correct


def test_exercise_hints_name_the_mistake():
    bidir = costmodel.lower_bound_time(14e9, 8, nvl3_bidirectional())
    assert "bidirectional" in checks.evaluate("04.1", bidir).message
    assert "2(p-1)/p" in checks.evaluate("04.1", 14e9 / 300e9).message
    algbw = costmodel.algbw(1073741824, 5012.3e-6) / units.GB
    assert "algbw" in checks.evaluate("04.2", algbw).message
    assert "microseconds" in checks.evaluate("04.2", algbw * 1.75 / 1000).message
    no_latency = 1.5 * 4 * 2**20 * 1e-9
    assert "latency" in checks.evaluate("04.5", no_latency).message
    assert "reduce-scatter" in checks.evaluate("04.5", 0.5 * grading.expected("04.5")).message
    for wrong in ("A", "B", "D"):  # choice hints explain the mistake without naming the answer
        message = checks.evaluate("04.3", wrong).message
        assert message and "recursive doubling" not in message.lower()
    assert "Answer with one of" in checks.evaluate("04.3", "ring").message


def nvl3_bidirectional():
    return hardware.nvlink(3).bidirectional


def test_every_hint_factor_is_distinct_within_tolerance():
    for exercise_id, s in {i: specs.full(i) for i in checks.exercises("04")}.items():
        if s["kind"] != "number":
            continue
        factors = [1.0] + [h["factor"] for h in s.get("hints", [])]
        for name in s.get("mistakes", []):
            factors += [f for f, _ in checks.COMMON_MISTAKES[name]]
        for i, a in enumerate(factors):
            for b in factors[i + 1:]:
                assert abs(a - b) > s["rtol"] * max(a, b), (exercise_id, a, b)


def test_collectives_table_factor_is_finite():
    assert math.isfinite(cl.collectives_table(2)[0]["busbw_factor"])


def test_cost_explorer_moves_the_same_artists():
    box = cl.cost_explorer()
    lines = list(box.axes.lines)
    box.render(ranks=64, algorithm="binomial_tree", latency_us=5.0)
    assert list(box.axes.lines) == lines
    v = box.values()
    curves = cl.cost_curves(64, v["link_gb_s"] * units.GB, v["latency_us"] * 1e-6)
    k = list(cl.ALGORITHM_LABELS).index("binomial_tree")
    assert lines[k].get_ydata() == pytest.approx(curves["binomial_tree"]) and lines[k].get_linewidth() == 2.6
    labels = [t.get_text() for t in box.axes.get_legend().get_texts()]
    assert [label for label in labels if "(chosen)" in label] == [cl.ALGORITHM_LABELS["binomial_tree"] + " (chosen)"]
    plt.close("all")
