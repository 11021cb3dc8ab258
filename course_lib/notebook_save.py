"""A saved notebook shows each explorer's static view, not a widget whose model is gone.

An explorer's output carries the live widget (``application/vnd.jupyter.widget-view+json``) and its
static view (``text/html`` with the plot and readout, ``image/png``). JupyterLab renders the widget
view whenever an output has one; reopened after the kernel that held its model has gone, the output
reads "Error displaying widget: model not found". :func:`static_fallback` removes the widget view
from every output that also carries an explorer's static view, so what is saved (and exported, or
shown on GitHub) is the plot and readout.

The learner's lab runs it on every save (``pre_save_hook``, set by the Makefile's lab targets:
``--ContentsManager.pre_save_hook=course_lib.notebook_save.pre_save_hook``). The live page is not
reloaded on save, so the sliders keep working until the notebook is closed; run the cell again for
a live explorer.
"""
from __future__ import annotations

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATIC_MARK = "course-static-caption"  # the static view's caption class (widgets.STATIC_CAPTION_CLASS)


def _has_static_view(data) -> bool:
    html = data.get("text/html", "")
    html = "".join(html) if isinstance(html, list) else str(html)
    return STATIC_MARK in html and "image/png" in data


def static_fallback(nb) -> int:
    """Drop the widget view from each output of ``nb`` (a notebook dict or NotebookNode) that also
    carries an explorer's static view; returns how many outputs changed. Other outputs are untouched."""
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("nb must be a notebook (a dict with a 'cells' list)")
    changed = 0
    for cell in nb["cells"]:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data")
            if isinstance(data, dict) and WIDGET_VIEW in data and _has_static_view(data):
                del data[WIDGET_VIEW]
                changed += 1
    return changed


def pre_save_hook(model, **kwargs):
    """jupyter_server's ``ContentsManager.pre_save_hook``: a notebook is saved with static explorer views."""
    if not isinstance(model, dict):
        raise ValueError(f"model must be a contents model (a dict with 'type' and 'content'), got {type(model).__name__}")
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        static_fallback(model["content"])
