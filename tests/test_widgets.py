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


def test_controls_get_a_fixed_description_and_a_usable_track():
    import ipywidgets as w
    slider = widgets.fit_control(w.IntSlider(description="a long description that would eat the track"))
    assert slider.style.description_width == f"{widgets.DESCRIPTION_PX}px"
    assert widgets.track_px(slider) >= widgets.MIN_TRACK_PX
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
