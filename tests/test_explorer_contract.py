"""The explorer contract, once for every explorer (replaces the generic per-chapter copies).

Every ``*_explorer`` function of course_lib/chapters builds at its defaults as ONE output whose
mime bundle carries the live widget and a static view (HTML caption + PNG); every control row
shrinks with the output area, keeping a slider track of at least 250 px at full width and 120 px in a
400 px output area; ``render(**values)`` with
every control moved gives a non-empty readout and a new PNG from the same figure and Axes (nothing
re-created); the readout at the defaults is what tests/golden/explorers.txt records.
"""
import importlib
import inspect
import pkgutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

import course_lib.chapters
from course_lib import widgets

PNG = b"\x89PNG\r\n\x1a\n"


def _all_explorers():
    found = []
    for info in pkgutil.iter_modules(course_lib.chapters.__path__):
        mod = importlib.import_module(f"course_lib.chapters.{info.name}")
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if name.endswith("_explorer") and f"{fn.__module__}.".startswith(f"{mod.__name__}."):  # its own or its package's
                found.append(pytest.param(mod, name, id=f"{info.name}.{name}"))
    return found


EXPLORERS = _all_explorers()


def test_every_chapter_explorer_is_covered():
    ids = {p.id for p in EXPLORERS}
    assert len(ids) >= 12 and "pcie.pcie_explorer" in ids and "planner.planner_explorer" in ids


def _other_value(control):
    """A value of ``control`` other than its current one (None where it has no other)."""
    options = getattr(control, "options", None)
    if options:
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        others = [v for v in values if v != control.value]
        return others[len(others) // 2] if others else None
    if isinstance(control.value, bool):
        return not control.value
    if hasattr(control, "base"):  # log slider: min/max are exponents
        low, high = control.base ** control.min, control.base ** control.max
        return (low * high) ** 0.5 if control.value != (low * high) ** 0.5 else high
    if hasattr(control, "max"):
        mid = type(control.value)((control.min + control.max) / 2)
        return mid if mid != control.value else control.max
    return None


@pytest.fixture
def shown(monkeypatch):
    """What explorer() displays (outside a kernel): a list of display() calls."""
    import IPython.display
    calls = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: calls.append((objs, kw)))
    yield calls
    plt.close("all")


@pytest.mark.parametrize("module, name", EXPLORERS)
def test_explorer_contract(module, name, shown):
    figures_before = len(plt.get_fignums())
    handle = getattr(module, name)()
    # one output: the live widget and its static view in one mime bundle
    assert len(shown) == 1, f"{name} displayed {len(shown)} outputs"
    (bundle,), kw = shown[0]
    assert kw.get("raw") is True and isinstance(bundle, dict)
    assert widgets.STATIC_CAPTION_CLASS in bundle["text/html"] and "data:image/png;base64," in bundle["text/html"]
    assert bundle["image/png"] and handle.readout and handle.readout in bundle["text/html"]
    # controls: rows that shrink with the output area (620 px down to 400 px), a usable slider track at both
    for key, control in handle.controls.items():
        assert control.style.description_width == widgets.DESCRIPTION_WIDTH, key
        assert control.layout.width == "100%", f"{key}: a fixed-width row overflows a narrow output area"
        track = widgets.track_px(control)
        assert track is None or track >= widgets.MIN_TRACK_PX, f"{key}: slider track {track} px"
        narrow = widgets.track_px(control, widgets.NARROW_AREA_PX)
        assert narrow is None or narrow >= widgets.MIN_NARROW_TRACK_PX, f"{key}: {narrow} px track at 400 px"
    # a redraw with every control moved: same figure and Axes, new image, non-empty readout
    figure, axes, image, defaults = handle.figure, list(handle.figure.axes), handle.image, handle.values()
    assert image.startswith(PNG)
    moved = {k: v for k, c in handle.controls.items() if (v := _other_value(c)) is not None}
    assert moved, f"{name}: no control can move"
    for key, value in moved.items():   # one control at a time, as a learner would
        assert handle.render(**{key: value}).strip(), f"{name}: empty readout after moving {key}"
    assert handle.figure is figure and list(handle.figure.axes) == axes
    assert handle.image.startswith(PNG) and handle.image != image
    # back at the defaults, the redrawn figure is the first one, pixel for pixel: nothing stale is left
    handle.render(**defaults)
    assert handle.image == image, f"{name}: the plot at the defaults differs after a round trip"
    assert len(plt.get_fignums()) == figures_before, "the shell must not open pyplot figures"


def test_render_names_a_bad_control(shown):
    from course_lib.chapters import gradients
    handle = gradients.gradient_exchange_explorer()
    with pytest.raises(ValueError, match="values"):
        handle.render(bogus=1)


def test_shell_checks_its_arguments(shown):
    import ipywidgets as w
    with pytest.raises(ValueError, match="draw"):
        widgets.explorer(None, {"x": w.IntSlider()})
    with pytest.raises(ValueError, match="controls"):
        widgets.explorer(lambda ax, x: None, {})
    with pytest.raises(ValueError, match="follow"):
        widgets.explorer(lambda ax, x: None, {"x": w.IntSlider()}, follow={"y": lambda v: {}})


def test_in_place_updater_is_called_instead_of_a_redraw(shown):
    import ipywidgets as w
    calls = []

    def draw(ax, x):
        (line,) = ax.plot([0, 1], [0, x])

        def update(x):
            calls.append(x)
            line.set_ydata([0, x])
        return update

    handle = widgets.explorer(draw, {"x": w.IntSlider(value=1, min=0, max=9)}, readout=lambda x: f"x={x}")
    line = handle.axes.lines[0]
    assert handle.render(x=5) == "x=5" and calls == [5]
    assert list(handle.axes.lines) == [line] and list(line.get_ydata()) == [0, 5]
