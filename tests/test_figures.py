"""Every public figure of course_lib is readable at notebook width.

Each public ``draw_*`` / ``plot_*`` function of course_lib (and ``Topology.draw`` for every named
topology) is rendered with Agg at 100 dpi. JupyterLab shrinks a wider image to the output area, about
7.5 in (750 px) wide, so a text's size as read is its size in points times min(1, 7.5 in / figure
width). The test fails on any text under 8 pt as read, and on two texts whose boxes overlap.
Every explorer's figure (at its defaults, laid out by its shell) gets the same check. Functions and
explorers that still fail are listed in KNOWN_FAILURES and KNOWN_EXPLORER_FAILURES (strict xfail,
so each shows up as soon as it is fixed).
"""
from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
from unittest import mock

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import course_lib  # noqa: E402
from course_lib import topology  # noqa: E402
from course_lib.views import graphs  # noqa: E402

NOTEBOOK_WIDTH_IN = 7.5
DPI = 100
MIN_POINTS = 8.0
OVERLAP_PX = 1.0  # boxes may touch; they overlap when they share more than a pixel each way


def _axes(figsize=(8, 4.4)):
    return plt.subplots(figsize=figsize)[1]


def _schedule():
    from course_lib.chapters import model_parallel
    return (model_parallel.pipeline_schedule(4, 8),), {}


def _rings():
    from course_lib.chapters import nvlink
    rings = nvlink.dgx1_rings(nbytes=1e9)
    return (rings["topology"], rings["packed_rings"]), {"title": "DGX-1: three rings over disjoint links"}


def _sweep():
    from course_lib.chapters import planner
    return (planner.gpu_sweep(planner.BRIEF, systems=("dgx-a100", "dgx-h100", "dgx-h200")), planner.BRIEF), {}


def _breakdown():  # the planner explorer's defaults: the system's catalog link speeds, GB/s per direction
    from course_lib import hardware, units
    from course_lib.chapters import planner
    s = hardware.system("dgx-h200")
    plan = planner.interactive._cached_plan("llama2-70b", "dgx-h200", 1024, 1024, s.nic.per_direction / units.GB,
                                s.gpu_link.per_direction / units.GB)
    return (_axes((8.5, 4.4)), plan), {}


def _ddp_trace():  # a made-up profiled step on 2 ranks: 6 layers, a bucket each, all-reduces beside the backward ops
    from course_lib.lab import ddp_trace
    events = [(ddp_trace.FORWARD, 0, 8000, 1)]
    for k in range(6):
        t = 9000 + 5000 * k
        events += [(ddp_trace.BACKWARD_PREFIX + "AddmmBackward0", t, t + 4000, 1),
                   (ddp_trace.BACKWARD_PREFIX + "torch::autograd::AccumulateGrad", t + 4000, t + 5000, 1),
                   (ddp_trace.LAUNCH, t + 4500, t + 4600, 1), (ddp_trace.ALL_REDUCE, t + 4600, t + 8600, 2 + k % 2)]
    events += [(ddp_trace.COPY_BACK, 39600, 40000, 1), ("Optimizer.step#SGD.step", 40000, 41000, 1)]
    spans = [s for r in range(2) for s in ddp_trace.spans_from_events(r, events, 0, 0.0003 * r)]
    trace = ddp_trace.DDPTrace(ranks=2, width=512, depth=6, batch=64, bucket_cap_mb=0.5, grad_bytes=6303744,
                               buckets=[1050624.0] * 6, spans=spans)
    return (trace,), {}


# Arguments for functions that need some, by the module that defines them (a chapter package's submodule);
# everything else is called with its defaults.
ARGUMENTS = {
    "course_lib.chapters.collectives.cost.draw_cost": lambda: ((_axes(), 64.0, 8, 50.0, 5.0, "ring"), {}),
    "course_lib.chapters.model_parallel.pipeline.draw_schedule": _schedule,
    "course_lib.chapters.nvlink.rings.draw_rings": _rings,
    "course_lib.chapters.planner.runs.plot_gpu_sweep": _sweep,
    "course_lib.chapters.planner.interactive.draw_breakdown": _breakdown,
    "course_lib.chapters.data_parallel.trace.draw_ddp_trace": _ddp_trace,
}

# Explorer figures (the views' authors' modules) that still fail, measured when this test was written:
# "function": "what fails". Strict xfail: a fixed one fails here until its entry is removed.
KNOWN_FAILURES: dict[str, str] = {
}


# Explorer figures (each ``*_explorer`` at its defaults) that still fail: "module.explorer": "what fails".
KNOWN_EXPLORER_FAILURES: dict[str, str] = {
}


def _public_figure_functions():
    found = {}
    for info in pkgutil.walk_packages(course_lib.__path__, "course_lib."):
        if info.name.endswith("__main__") or info.name.startswith("course_lib.views"):
            continue  # views draw a model's result; each is rendered through its explorer's draw_/plot_ function
        module = importlib.import_module(info.name)
        for name, fn in vars(module).items():
            if (name.startswith(("draw_", "plot_")) and inspect.isfunction(fn)
                    and fn.__module__ == module.__name__):
                found[f"{module.__name__}.{name}"] = fn
    return found


FUNCTIONS = _public_figure_functions()
TOPOLOGIES = sorted(topology.BUILDERS)


def _render(call):
    """Run ``call`` and return every figure it made (closed afterwards by the caller)."""
    plt.close("all")
    call()
    return [plt.figure(n) for n in plt.get_fignums()]


def problems(fig) -> list[str]:
    """Texts under MIN_POINTS as read at notebook width, and pairs of texts whose boxes overlap."""
    fig.set_dpi(DPI)
    drawn, draw = [], matplotlib.text.Text.draw

    def record(text, renderer):  # the texts matplotlib really draws (not the tick labels of hidden axes)
        if text.get_visible() and text.get_text().strip() and text.get_alpha() != 0:
            drawn.append(text)
        return draw(text, renderer)
    with mock.patch.object(matplotlib.text.Text, "draw", record):
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    scale = min(1.0, NOTEBOOK_WIDTH_IN / fig.get_figwidth())
    texts = [t for t in dict.fromkeys(drawn) if _inside_its_axes(t, renderer)]
    found = []
    for t in texts:
        read = t.get_fontsize() * scale
        if read < MIN_POINTS - 1e-9:
            found.append(f"{t.get_text()[:40]!r} reads at {read:.1f} pt")
    boxes = [(t, t.get_window_extent(renderer)) for t in texts]
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        wide = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        high = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if wide > OVERLAP_PX and high > OVERLAP_PX:
            found.append(f"{a.get_text()[:30]!r} overlaps {b.get_text()[:30]!r}")
    return found


def _inside_its_axes(text, renderer) -> bool:
    """False for a text clipped away by its axes (data texts outside the view limits)."""
    box = text.get_window_extent(renderer)
    if box.width <= 0 or box.height <= 0:
        return False
    axes = text.axes
    if axes is None or not text.get_clip_on() or text.get_transform() != axes.transData:
        return True
    clip = axes.get_window_extent(renderer)
    return box.x1 > clip.x0 and box.x0 < clip.x1 and box.y1 > clip.y0 and box.y0 < clip.y1


def _case(name):
    marks = ()
    if name in KNOWN_FAILURES:
        marks = (pytest.mark.xfail(reason=f"{name}: {KNOWN_FAILURES[name]}", strict=True),)
    return pytest.param(name, id=name.removeprefix("course_lib."), marks=marks)


def test_every_figure_function_is_covered():
    needs_arguments = [name for name, fn in FUNCTIONS.items() if name not in ARGUMENTS and any(
        p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in inspect.signature(fn).parameters.values())]
    assert not needs_arguments, f"add arguments for {needs_arguments} to ARGUMENTS"
    assert set(KNOWN_FAILURES) <= set(FUNCTIONS), set(KNOWN_FAILURES) - set(FUNCTIONS)


@pytest.mark.parametrize("name", [_case(n) for n in sorted(FUNCTIONS)])
def test_figure_is_readable_at_notebook_width(name):
    fn = FUNCTIONS[name]

    def call():
        args, kwargs = ARGUMENTS[name]() if name in ARGUMENTS else ((), {})
        fn(*args, **kwargs)
    try:
        figures = _render(call)
        assert figures, f"{name} drew no figure"
        found = [f"figure {i}: {p}" for i, fig in enumerate(figures) for p in problems(fig)]
    finally:
        plt.close("all")
    assert not found, f"{name}:\n" + "\n".join(found[:20])


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_topology_drawing_is_readable_at_notebook_width(name):
    try:
        figures = _render(lambda: graphs.draw(topology.named(name)))
        found = [p for fig in figures for p in problems(fig)]
    finally:
        plt.close("all")
    assert not found, f"topology {name}:\n" + "\n".join(found[:20])


def _explorers():
    import course_lib.chapters
    found = {}
    for info in pkgutil.iter_modules(course_lib.chapters.__path__):
        module = importlib.import_module(f"course_lib.chapters.{info.name}")
        for name, fn in vars(module).items():
            if (name.endswith("_explorer") and inspect.isfunction(fn)
                    and f"{fn.__module__}.".startswith(f"{module.__name__}.")):  # its own or its package's
                found[f"{info.name}.{name}"] = fn
    return found


EXPLORERS = _explorers()


def _explorer_case(name):
    marks = ()
    if name in KNOWN_EXPLORER_FAILURES:
        marks = (pytest.mark.xfail(reason=f"{name}: {KNOWN_EXPLORER_FAILURES[name]}", strict=True),)
    return pytest.param(name, id=name, marks=marks)


def test_every_known_explorer_failure_is_an_explorer():
    assert EXPLORERS and set(KNOWN_EXPLORER_FAILURES) <= set(EXPLORERS), set(KNOWN_EXPLORER_FAILURES) - set(EXPLORERS)


@pytest.mark.parametrize("name", [_explorer_case(n) for n in sorted(EXPLORERS)])
def test_explorer_figure_is_readable_at_notebook_width(name, monkeypatch):
    """The explorer's figure at its defaults, as its shell laid it out (the figure the learner sees first)."""
    import IPython.display
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: None)
    found = problems(EXPLORERS[name]().figure)
    assert not found, f"{name}:\n" + "\n".join(found[:20])


def test_the_check_finds_small_and_overlapping_text():
    fig, ax = plt.subplots(figsize=(15, 4))  # drawn at half size in the notebook
    ax.text(0.5, 0.5, "a label", fontsize=12)
    ax.text(0.5, 0.5, "another label", fontsize=12)
    try:
        found = problems(fig)
    finally:
        plt.close(fig)
    assert any("reads at 6.0 pt" in p for p in found)
    assert any("overlaps" in p for p in found)
