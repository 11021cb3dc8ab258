"""One palette (course_lib.style): the same category has the same colour in every chapter."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from course_lib import collectives, parallel, style
from course_lib.chapters import collectives as ch04, model_parallel as ch07, planner as ch08


def test_chapters_07_and_08_colour_a_training_step_the_same_way():
    assert ch07.BREAKDOWN_COLOURS is style.STEP_COLOURS and ch08.BREAKDOWN_COLOURS is style.STEP_COLOURS
    est = parallel.estimate(parallel.model("gpt3-175b"), "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536)
    assert set(est.breakdown()) == set(style.STEP_COLOURS)


def test_every_algorithm_id_has_a_colour():
    for collective in collectives.ids():
        for algorithm in collectives.algorithm_ids(collective):
            assert style.colour("algorithm", algorithm)
    assert set(ch04.ALGORITHMS) <= set(style.ALGORITHM_COLOURS)


def test_colour_names_a_bad_kind_or_key():
    with pytest.raises(ValueError, match="kind"):
        style.colour("flavour", "ring")
    with pytest.raises(ValueError, match="key"):
        style.colour("algorithm", "carrier-pigeon")


def test_axis_helpers_write_units():
    fig, ax = plt.subplots()
    ax.plot([2**10, 2**30], [1e-6, 1e-1])
    style.bytes_axis(ax, "x")
    style.time_axis(ax, "y", log=True)
    style.decorate(ax, title="t", xlabel="size", ylabel="time")
    fig.canvas.draw()
    xlabels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    ylabels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert any("MiB" in s or "GiB" in s for s in xlabels), xlabels
    assert any(s.endswith(("us", "ms")) for s in ylabels), ylabels
    assert ax.get_xscale() == "log" and ax.get_title() == "t"
    with pytest.raises(ValueError, match="axis"):
        style.bytes_axis(ax, "z")
    plt.close(fig)


def _drawing_modules():
    """Every module of the views and the chapters, packages walked (topology, a lower layer, keeps its device colours)."""
    import importlib
    import pkgutil

    import course_lib.chapters
    import course_lib.views
    names = [info.name for package in (course_lib.views, course_lib.chapters)
             for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [importlib.import_module(n) for n in names]


def test_no_view_or_explorer_keeps_a_palette_of_its_own():
    palettes = {id(v) for name, v in vars(style).items() if name.endswith("COLOURS")}
    for module in _drawing_modules():
        own = [name for name, v in vars(module).items()
               if name.upper().lstrip("_").endswith("COLOURS") and id(v) not in palettes]
        assert not own, f"{module.__name__} defines {own}: put the colours in course_lib.style"


def test_no_view_or_explorer_writes_a_colour_code():
    import inspect
    import re
    for module in _drawing_modules():
        codes = re.findall(r"[\"']#[0-9a-fA-F]{6}[\"']", inspect.getsource(module))
        assert not codes, f"{module.__name__} writes {codes}: name the colour in course_lib.style"


def test_chapter_06_memory_uses_the_memory_palette():
    from course_lib.chapters import data_parallel as ch06
    fig, ax = plt.subplots()
    ch06.draw_zero_memory(ax=ax)
    faces = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
    plt.close(fig)
    assert {style.colour("memory", part) for part in ("weights", "gradients", "optimizer")} <= faces
