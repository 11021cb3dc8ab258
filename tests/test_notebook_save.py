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
