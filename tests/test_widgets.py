"""Shared view helpers in course_lib.widgets."""
import pytest

from course_lib import widgets


def test_html_table_takes_a_dict_or_pairs_and_escapes():
    rows = [{"a": 1, "b": "<x>"}]
    by_dict = widgets.html_table(rows, {"A": lambda r: r["a"], "B": lambda r: r["b"]})
    by_pairs = widgets.html_table(rows, [("A", lambda r: r["a"]), ("B", lambda r: r["b"])])
    assert by_dict == by_pairs
    assert "<th>A</th>" in by_dict and "<td>1</td>" in by_dict and "&lt;x&gt;" in by_dict


@pytest.mark.parametrize("columns", [{}, [], None, {"A": 1}, [("A",)]])
def test_html_table_names_the_bad_parameter(columns):
    with pytest.raises(ValueError, match="columns"):
        widgets.html_table([], columns)


def test_control_rows_shrink_with_the_output_area_and_keep_a_usable_track():
    """Issue 26.6: a row is as wide as the output area (at most 620 px, down to 400 px), not fixed at 620 px;
    the description takes a clamped share of it, so the track stays usable when the area narrows."""
    import ipywidgets as w
    slider = widgets.fit_control(w.IntSlider(description="a long description that would eat the track"))
    assert slider.style.description_width == widgets.DESCRIPTION_WIDTH == "clamp(96px, 40%, 250px)"
    assert slider.layout.width == "100%" and slider.layout.max_width == f"{widgets.CONTROL_PX}px"
    assert widgets.track_px(slider) >= widgets.MIN_TRACK_PX
    at_468 = widgets.track_px(slider, 468)  # JupyterLab at 900 px with the file browser open
    at_400 = widgets.track_px(slider, widgets.NARROW_AREA_PX)
    assert widgets.track_px(slider) > at_468 > at_400 >= widgets.MIN_NARROW_TRACK_PX
    assert widgets.description_px(slider, 400) == 160 and widgets.description_px(slider, 620) == 248
    long = widgets.fit_control(w.SelectionSlider(options=["a rather long option label", "b"], description="x"))
    assert long.layout.max_width == f"{widgets.CONTROL_PX + widgets.readout_px(long) - widgets.READOUT_PX}px"
    assert widgets.track_px(widgets.fit_control(w.Dropdown(options=[1, 2]))) is None  # no track


def test_grow_to_fit_keeps_a_legend_below_its_axes_in_the_image():
    fig, ax = widgets.new_axes(1, figsize=(4, 3))
    ax.plot([0, 1], label="a line")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3))
    fig.subplots_adjust(bottom=0.1)
    before = fig.get_size_inches().copy()
    widgets.grow_to_fit(fig)
    bbox = fig.get_tightbbox(fig.canvas.get_renderer())
    assert fig.get_size_inches()[1] > before[1] and bbox.y0 >= -0.01
    assert widgets.png(fig).startswith(b"\x89PNG")


def test_plain_text_keeps_a_monospace_tables_columns():
    """A readout table padded with spaces keeps its columns in the text/plain fallback: runs of spaces
    and &nbsp; stay, <br> and row ends start lines (the old version collapsed double spaces)."""
    rows = [("system", "busbw GB/s"), ("dgx-a100", "230.5"), ("azure-nd-mi300x-v5", "48")]
    width = max(len(r[0]) for r in rows) + 2
    table = "\n".join(f"{a:<{width}}{b:>10}" for a, b in rows)
    text = widgets.plain_text(f"<p><b>Readout</b></p><pre>{table}</pre>")
    assert text.splitlines() == ["Readout", *table.splitlines()]
    assert len({line.index(line.split()[-1]) + len(line.split()[-1]) for line in table.splitlines()}) == 1
    padded = "<br>".join(f"{a}{'&nbsp;' * (width - len(a))}{b}" for a, b in rows)
    assert widgets.plain_text(padded).splitlines() == [f"{a:<{width}}{b}" for a, b in rows]


def test_plain_text_drops_inline_tags_without_stray_spaces():
    assert widgets.plain_text("step <b>4.9 s</b>, MFU <i>43%</i>; a &lt; b") == "step 4.9 s, MFU 43%; a < b"
    assert widgets.plain_text("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>") == "a b\nc d"


def test_grow_to_fit_moves_a_twin_axes_pair_once():
    """A twinx pair moves together; grow_to_fit must not move it twice (Axes keep their size in inches)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4, 3))
    twin = ax.twinx()
    line, = ax.plot([0, 1])
    ax.legend([line], ["x"], loc="upper center", bbox_to_anchor=(0.5, -0.3))
    before = ax.get_position()
    w, h = fig.get_size_inches()
    widgets.grow_to_fit(fig)
    after = ax.get_position()
    w2, h2 = fig.get_size_inches()
    assert h2 > h                                                   # it grew for the legend below
    assert after.height * h2 == pytest.approx(before.height * h)    # the Axes kept its height in inches
    assert after.width * w2 == pytest.approx(before.width * w)
    assert twin.get_position().bounds == pytest.approx(after.bounds)
    plt.close(fig)


def _counted_explorer(monkeypatch, **kw):
    """An explorer whose 'ranks' control clamps its 'step' control (as chapter 04's ring does); returns
    (handle, draws: the list of values each figure render was made for)."""
    import ipywidgets as w
    import matplotlib
    matplotlib.use("Agg")
    draws = []
    real_png = widgets.png
    values = lambda: {name: c.value for name, c in controls.items()}  # noqa: E731
    monkeypatch.setattr(widgets, "png", lambda fig: draws.append(values()) or real_png(fig))
    controls = {"ranks": w.SelectionSlider(options=[2, 4, 8], value=8, description="ranks"),
                "step": w.IntSlider(value=14, min=0, max=14, description="step")}
    controls["ranks"].observe(lambda ch: setattr(controls["step"], "max", 2 * (ch["new"] - 1)), names="value")
    handle = widgets.explorer(lambda ax, ranks, step: ax.plot([0, step], [0, ranks]), controls, show=False, **kw)
    draws.clear()
    return handle, draws


def test_one_front_end_message_draws_once_even_when_it_clamps_another_control(monkeypatch):
    """Issue 37.4: a slider move that makes a chapter's observer clamp another control (fewer ranks: fewer
    steps) drew once per changed control; it draws once, with both changes applied."""
    handle, draws = _counted_explorer(monkeypatch)
    handle.controls["ranks"].set_state({"index": 0})   # what a comm message from the slider runs
    assert draws == [{"ranks": 2, "step": 2}]
    handle.controls["step"].set_state({"value": 1})
    assert draws[-1] == {"ranks": 2, "step": 1} and len(draws) == 2
    handle.controls["ranks"].value = 4                  # set by code: drawn at once, as before
    assert len(draws) == 3


def test_the_plot_is_drawn_again_for_a_narrower_output_area(monkeypatch):
    """Issue 37.4: a figure designed wider than its output area is drawn that wide (text sizes in points
    unchanged, a legend wider than it re-packed into fewer columns); a wide area changes nothing."""
    import io

    import ipywidgets as w
    import matplotlib
    from PIL import Image
    matplotlib.use("Agg")

    def draw(ax, n):
        for k in range(4):
            ax.plot([0, n], [k, k + n], label=f"a long legend entry number {k}")
        ax.set_title("a title long enough to need wrapping once the figure is narrow", fontsize=9)
        ax.legend(ncols=4, loc="upper center", bbox_to_anchor=(0.5, -0.15), fontsize=8)

    handle = widgets.explorer(draw, {"n": w.IntSlider(value=3, min=1, max=9, description="n")},
                              figsize=(11, 4.4), show=False)
    assert Image.open(io.BytesIO(handle.image)).width >= 1100
    assert not handle.fit_width(1400)                       # wider than the design: drawn as designed
    assert handle.fit_width(468)
    width_px = Image.open(io.BytesIO(handle.image)).width
    assert width_px <= 468 + 2, f"drawn {width_px} px wide for a 468 px area"
    assert handle.drawn_size == widgets.fitted_figsize((11, 4.4), 468)
    legend = handle.axes.get_legend()
    assert legend._ncols < 4 and all(t.get_fontsize() == 8 for t in legend.get_texts())
    assert not handle.fit_width(470)                        # within REFIT_STEP_PX: nothing redrawn
    handle.render(n=7)                                      # a move keeps the fitted width
    assert Image.open(io.BytesIO(handle.image)).width <= 470
    assert widgets.fitted_figsize((7.5, 4.2), 100)[0] * widgets.DPI == widgets.MIN_FIGURE_PX
    with pytest.raises(ValueError, match="shown_px"):
        widgets.fitted_figsize((7.5, 4.2), 0)


def test_the_explorer_carries_its_kernel_gone_banner_and_wrapping_labels():
    """The style the browser test checks in JupyterLab travels in the explorer's own header."""
    import ipywidgets as w
    import matplotlib
    matplotlib.use("Agg")
    handle = widgets.explorer(lambda ax, n: ax.plot([0, n]), {"n": w.IntSlider(description="n")}, show=False)
    header = handle.box.children[0].value
    assert f"<style>{widgets.EXPLORER_CSS}</style>" in header and "run this cell again" in widgets.DEAD_BANNER.lower()
    assert f".{widgets.EXPLORER_CLASS}.{widgets.DISCONNECTED_CLASS}::before" in widgets.EXPLORER_CSS
    assert "white-space: normal" in widgets.EXPLORER_CSS
