"""Chapter 04's step-through of the ring, NCCL's double binary tree and NVLS: the plans, the simulation, the times."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib import collectives, costmodel  # noqa: E402
from course_lib.chapters import collectives as cl  # noqa: E402
from course_lib.chapters.collectives import steps  # noqa: E402

CASES = [(a, p) for a in cl.STEP_ALGORITHMS for p in cl.STEP_RANKS]


@pytest.mark.parametrize("algorithm, ranks", CASES)
def test_every_plan_ends_with_the_full_sum_everywhere_in_the_registry_s_steps(algorithm, ranks):
    plan = cl.step_plan(algorithm, ranks)
    everyone = frozenset(range(ranks))
    assert all(chunk == everyone for row in plan.states[-1] for chunk in row)
    assert plan.done(len(plan.steps)) == ranks * len(plan.chunk_names) and plan.done(0) == 0
    # as many steps as the registry's alpha-beta terms count
    assert len(plan.steps) == collectives.terms("all_reduce", algorithm, ranks)[0]
    # nothing is summed twice: a chunk never holds a rank's data more than once (sets), and only adds grow it
    for before, after in zip(plan.states, plan.states[1:]):
        for r in range(ranks):
            for c in range(len(plan.chunk_names)):
                assert before[r][c] <= after[r][c] or after[r][c] == everyone


@pytest.mark.parametrize("ranks", cl.STEP_RANKS)
def test_the_busiest_rank_sends_what_the_model_counts(ranks):
    ring = cl.step_plan("ring", ranks)
    assert max(ring.sent_fraction(r) for r in range(ranks)) == pytest.approx(2 * (ranks - 1) / ranks)
    tree = cl.step_plan("double_binary_tree", ranks)
    # the two trees load the busiest rank as NCCL's trees do in the cost model (1 on 2 ranks, 1.5 on 3, then 2)
    assert max(tree.sent_fraction(r) for r in range(ranks)) == pytest.approx(costmodel.double_binary_tree_load(ranks))
    nvls = cl.step_plan("in_network", ranks)
    # every GPU pushes its whole buffer up once and its own summed chunk once more; the switch does the adding
    assert all(nvls.sent_fraction(r) == pytest.approx(1 + 1 / ranks) for r in range(ranks))


def test_the_ring_step_through_is_the_ring_explorer_s_simulation():
    for p in (2, 3, 4, 8):
        plan = cl.step_plan("ring", p)
        assert [[list(row) for row in s] for s in plan.states] == cl.ring_states(p)
        assert all(plan.port_fractions(k) == (1 / p, 1 / p) for k in range(1, len(plan.steps) + 1))


def test_the_trees_are_ncc_ls_a_leaf_of_one_is_inside_the_other():
    for p in (4, 5, 8):
        first, second = steps._trees(p)
        leaves = [{r for r, (_, kids) in t.items() if not kids} for t in (first, second)]
        assert not leaves[0] & leaves[1] or p % 2   # even p: the mirror makes every leaf an inner node of the other
        for tree in (first, second):
            assert sum(up < 0 for up, _ in tree.values()) == 1          # one root
            for r, (up, kids) in tree.items():
                assert all(tree[c][0] == r for c in kids)               # children name their parent


def test_simulate_adds_in_the_switch():
    S = steps.SWITCH
    up = [steps.Transfer(r, S, 0, "add") for r in range(3)] + [steps.Transfer(S, 1, 0, "copy")]
    states = cl.simulate(3, 1, [up])
    assert states[1][1][0] == frozenset({0, 1, 2}) and states[1][0][0] == frozenset({0})
    with pytest.raises(ValueError, match="chunks"):
        cl.simulate(3, 0, [])


@pytest.mark.parametrize("algorithm, ranks", CASES)
def test_step_times_are_alpha_beta_on_the_busiest_port(algorithm, ranks):
    plan = cl.step_plan(algorithm, ranks)
    t = cl.step_times(plan, 1e9, 450e9, 1e-6)
    for k, seconds in enumerate(t.step_s, start=1):
        assert seconds == pytest.approx(1e-6 + max(plan.port_fractions(k)) * 1e9 / 450e9)
    assert t.pipelined_s == pytest.approx(costmodel.collective_time("all_reduce", 1e9, ranks, 450e9, 1e-6, algorithm))
    assert t.start_s(1) == 0.0 and t.start_s(len(t.step_s)) == pytest.approx(t.stepwise_s - t.step_s[-1])


def test_pipelining_is_what_makes_the_tree_and_nvls_fast():
    ring, tree, nvls = (cl.step_times(cl.step_plan(a, 8), 1e9, 450e9, 1e-6) for a in cl.STEP_ALGORITHMS)
    assert ring.stepwise_s == pytest.approx(ring.pipelined_s)          # the ring's steps are already back to back
    assert tree.stepwise_s > 2 * tree.pipelined_s and nvls.stepwise_s > 1.8 * nvls.pipelined_s
    assert nvls.pipelined_s < ring.pipelined_s < tree.pipelined_s     # a large buffer: bytes decide
    assert nvls.busbw > 450e9 >= ring.busbw                           # only a switch that adds beats the link rate
    small = [cl.step_times(cl.step_plan(a, 8), 1e4, 450e9, 1e-6) for a in ("ring", "double_binary_tree")]
    assert small[1].pipelined_s < small[0].pipelined_s                # a small one: steps decide


@pytest.mark.parametrize("kwargs, name", [({"algorithm": "naive"}, "algorithm"), ({"ranks": 9}, "ranks"),
                                          ({"ranks": 1}, "ranks")])
def test_step_plan_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        cl.step_plan(**{"algorithm": "ring", "ranks": 4, **kwargs})


def test_step_times_and_drawing_validate():
    plan = cl.step_plan("ring", 4)
    for args, name in (((None, 1e9, 1e9, 0), "plan"), ((plan, 0, 1e9, 0), "nbytes"), ((plan, 1, 0, 0), "bandwidth"),
                       ((plan, 1, 1e9, -1), "latency")):
        with pytest.raises(ValueError, match=name):
            cl.step_times(*args)
    with pytest.raises(ValueError, match="step"):
        cl.draw_allreduce_step("ring", 4, 7)
    with pytest.raises(ValueError, match="k"):
        plan.port_fractions(0)


def test_readout_and_drawings():
    text = cl.step_readout("in_network", 8, 1, 1000.0, 450.0)
    assert "Step 1 of 2" in text and "above the link" in text and "not above" not in text
    assert "not above" in cl.step_readout("ring", 8, 3, 1000.0, 450.0)
    assert "Start" in cl.step_readout("double_binary_tree", 4, 0, 1.0, 450.0)
    axes = cl.draw_allreduce_step("double_binary_tree", 4, 3)
    assert "step 3 of 4" in axes["state"].get_title()
    fig = cl.draw_allreduce_timelines(ranks=4)
    assert len(fig.axes) == 3 and "ring" in fig.axes[0].get_title(loc="left")
    plt.close("all")
