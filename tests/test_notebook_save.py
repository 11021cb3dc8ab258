"""A saved notebook keeps each explorer's static view and drops its widget view (issue 26.6)."""
import copy

import pytest

from course_lib import notebook_save, widgets

VIEW = "application/vnd.jupyter.widget-view+json"


def _explorer_output():
    return {"output_type": "display_data", "metadata": {}, "data": {
        VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 0},
        "text/html": f'<div class="{widgets.STATIC_CAPTION_CLASS}">caption</div><img src="data:image/png;base64,AA"/>',
        "image/png": "AA", "text/plain": "Explorer: readout"}}


def _notebook():
    plain_widget = {"output_type": "display_data", "metadata": {},
                    "data": {VIEW: {"model_id": "def"}, "text/plain": "IntSlider(value=1)"}}
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "source": "# title", "metadata": {}},
        {"cell_type": "code", "source": "x.explorer()", "metadata": {}, "execution_count": 1,
         "outputs": [_explorer_output()]},
        {"cell_type": "code", "source": "w.IntSlider()", "metadata": {}, "execution_count": 2,
         "outputs": [plain_widget]},
    ]}


def test_an_explorers_widget_view_is_dropped_and_its_static_view_kept():
    nb = _notebook()
    assert notebook_save.static_fallback(nb) == 1
    data = nb["cells"][1]["outputs"][0]["data"]
    assert VIEW not in data and data["image/png"] == "AA" and widgets.STATIC_CAPTION_CLASS in data["text/html"]
    # a widget without a static view is left alone (nothing else to show), and a second pass changes nothing
    assert VIEW in nb["cells"][2]["outputs"][0]["data"]
    assert notebook_save.static_fallback(nb) == 0


def test_html_as_a_list_of_lines_is_read_too():
    nb = _notebook()
    out = nb["cells"][1]["outputs"][0]["data"]
    out["text/html"] = [out["text/html"][:20], out["text/html"][20:]]
    assert notebook_save.static_fallback(nb) == 1


def test_pre_save_hook_changes_notebooks_only():
    model = {"type": "notebook", "content": _notebook()}
    notebook_save.pre_save_hook(model, path="x.ipynb", contents_manager=None)
    assert VIEW not in model["content"]["cells"][1]["outputs"][0]["data"]
    text = {"type": "file", "content": "plain text"}
    before = copy.deepcopy(text)
    notebook_save.pre_save_hook(text, path="x.txt")
    assert text == before


def test_the_shell_marks_its_static_view_with_the_class_the_hook_looks_for():
    assert widgets.STATIC_CAPTION_CLASS == notebook_save.STATIC_MARK


def test_the_lab_targets_set_the_hook():
    from pathlib import Path
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    assert "--ContentsManager.pre_save_hook=course_lib.notebook_save.pre_save_hook" in makefile


@pytest.mark.parametrize("bad", [None, [], {"cells": None}])
def test_bad_input(bad):
    with pytest.raises(ValueError, match="nb"):
        notebook_save.static_fallback(bad)


def test_pre_save_hook_names_a_bad_model():
    with pytest.raises(ValueError, match="model"):
        notebook_save.pre_save_hook(None)


def _moved_explorer():
    """A real explorer displayed at its defaults, then moved; returns (output as displayed, handle)."""
    import base64

    import ipywidgets as w
    import matplotlib
    matplotlib.use("Agg")

    def draw(ax, n, speed, kind):
        ax.plot(range(n), [speed * kind] * n)

    controls = {"n": w.IntSlider(value=3, min=2, max=9, description="points"),
                "speed": widgets.link_speed_slider(50.0),
                "kind": w.Dropdown(options=[("ring", 1), ("tree", 2)], value=1, description="algorithm")}
    handle = widgets.explorer(draw, controls, readout=lambda n, speed, kind: f"n={n}, speed {speed:.3g}, kind {kind}",
                              title="Points & speeds", show=False)
    output = {"output_type": "display_data", "data": handle.mimebundle(),
              "metadata": {notebook_save.OUTPUT_META: {"title": handle.title}}}
    assert base64.b64decode(output["data"]["image/png"]) == handle.image
    handle.render(n=7, speed=200.0, kind=2)
    return output, handle


def test_the_static_view_is_redrawn_at_the_learners_last_settings_from_the_saved_widget_state():
    """Issue 37.4: a saved notebook shows what the learner left the explorer at (plot, readout, settings),
    read from the widget state JupyterLab saves; the explorer's models leave the saved state, others stay."""
    import base64

    import ipywidgets as w
    output, handle = _moved_explorer()
    default_png = output["data"]["image/png"]
    other = w.IntSlider(value=5, description="someone else's")
    state = w.Widget.get_manager_state(drop_defaults=True)
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"widgets": {notebook_save.WIDGET_STATE: state}},
          "cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [output]}]}
    assert notebook_save.static_fallback(nb) == 1
    data = nb["cells"][0]["outputs"][0]["data"]
    assert VIEW not in data
    last = base64.b64encode(handle.image).decode("ascii")
    assert data["image/png"] == last != default_png and f"base64,{last}" in data["text/html"]
    html = data["text/html"]
    assert handle.readout == "n=7, speed 200, kind 2" and handle.readout in html and "At these settings:" in html
    assert "points 7, link GB/s per direction 200, algorithm tree" in html and "Points &amp; speeds" in html
    assert widgets.STATIC_CAPTION_CLASS in html and "default" not in html
    saved = nb["metadata"]["widgets"][notebook_save.WIDGET_STATE]["state"]
    assert other.model_id in saved and handle.box.model_id not in saved
    assert not {c.model_id for c in handle.box.children} & set(saved)


def test_without_a_saved_widget_state_the_static_view_stays_at_the_defaults():
    output, handle = _moved_explorer()
    before = dict(output["data"])
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [output]}]}
    assert notebook_save.static_fallback(nb) == 1
    data = nb["cells"][0]["outputs"][0]["data"]
    assert data["text/html"] == before["text/html"] and "At the defaults:" in data["text/html"]
    assert "widgets" not in nb["metadata"]


def test_the_learners_lab_saves_the_widget_state_the_hook_reads():
    import json
    from pathlib import Path
    overrides = json.loads((Path(__file__).resolve().parents[1] / "jupyter" / "learner-settings" / "overrides.json")
                           .read_text())
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True
