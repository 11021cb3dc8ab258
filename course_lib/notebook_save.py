"""A saved notebook shows each explorer's static view at the learner's last settings, not a dead widget.

An explorer's output carries the live widget (``application/vnd.jupyter.widget-view+json``) and its
static view (``text/html`` with the plot and readout, ``image/png``), which the kernel makes at the
default settings. JupyterLab renders the widget view whenever an output has one; reopened after the
kernel that held its model has gone, the output reads "Error displaying widget: model not found".

:func:`static_fallback` removes the widget view from every output that also carries an explorer's
static view, so what is saved (and exported, or shown on GitHub) is the plot and readout. Where the
notebook carries the widgets' state (JupyterLab's "Save Widget State Automatically", which the
learner's lab turns on in ``jupyter/learner-settings/overrides.json``), the static view is first
rebuilt from it: the plot, readout and control settings the learner left the explorer at, and the
explorer's models are then dropped from the saved state (their plots would only bloat the file).

The learner's lab runs it on every save (``pre_save_hook``, set by the Makefile's lab targets:
``--ContentsManager.pre_save_hook=course_lib.notebook_save.pre_save_hook``). The live page is not
reloaded on save, so the sliders keep working until the notebook is closed; run the cell again for
a live explorer.
"""
from __future__ import annotations

from html import escape

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
STATIC_MARK = "course-static-caption"  # the static view's caption class (widgets.STATIC_CAPTION_CLASS)
READOUT_MARK = "course-readout"        # the readout widget's class (widgets.READOUT_CLASS)
OUTPUT_META = "course-explorer"        # an explorer output's metadata key: {"title": ...}
# Front-end defaults that a state saved with drop_defaults leaves out (ipywidgets 8's models).
_DEFAULTS = {"index": 0, "FloatLogSliderModel": 1.0, "FloatSliderModel": 0.0, "IntSliderModel": 0,
             "CheckboxModel": False, "ToggleButtonModel": False}


def static_view(title: str, png_b64: str, readout_html: str, settings: str | None = None) -> str:
    """The static view's HTML: caption, plot and readout; ``settings`` (plain text) names the controls'
    values it was drawn at, None for the defaults."""
    head = f"<b>{escape(title)}</b> " if title else ""
    if settings is None:
        where, lead = "static view at the default settings", "At the defaults:"
    else:
        where, lead = f"static view at the settings it was left at: {escape(settings)}", "At these settings:"
    return (f'<div class="{STATIC_MARK}">{head}<i>({where}; run the notebook for the live explorer)</i></div>'
            f'<img src="data:image/png;base64,{png_b64}" alt="{escape(title or "explorer")}"/>'
            f"<p><b>{lead}</b> {readout_html}</p>")


def _has_static_view(data: dict) -> bool:
    html = data.get("text/html", "")
    html = "".join(html) if isinstance(html, list) else str(html)
    return STATIC_MARK in html and "image/png" in data


def _child_ids(entry: dict | None) -> list[str]:
    children = (entry or {}).get("state", {}).get("children", [])
    return [c.removeprefix("IPY_MODEL_") for c in children if isinstance(c, str)]


def _setting(entry: dict) -> str | None:
    """``description value`` of one control's saved state (None for a model that is not a control)."""
    state, name = entry.get("state", {}), entry.get("model_name", "")
    description = state.get("description")
    if not description:
        return None
    labels = state.get("_options_labels")
    if labels:
        index = state.get("index", _DEFAULTS["index"])
        value = labels[index] if isinstance(index, int) and 0 <= index < len(labels) else None
    else:
        value = state.get("value", _DEFAULTS.get(name))
    if value is None or isinstance(value, (dict, list)):
        return None
    return f"{description} {value:.4g}" if isinstance(value, float) else f"{description} {value}"


def _last_view(models: dict, box_id: str):
    """(png_b64, readout_html, settings, model ids) of the explorer whose box is ``box_id``, or None."""
    box = models.get(box_id)
    if not isinstance(box, dict):
        return None
    png_b64, readout, settings, seen, todo = None, None, [], {box_id}, _child_ids(box)
    while todo:
        mid = todo.pop(0)
        entry = models.get(mid)
        if mid in seen or not isinstance(entry, dict):
            continue
        seen.add(mid)
        state, name = entry.get("state", {}), entry.get("model_name", "")
        if name == "ImageModel":
            png_b64 = next((b.get("data") for b in entry.get("buffers", [])
                            if b.get("path") == ["value"] and b.get("encoding") == "base64"), png_b64)
        elif READOUT_MARK in state.get("_dom_classes", ()):
            readout = state.get("value", "")
        elif (text := _setting(entry)) is not None:
            settings.append(text)
        todo.extend(_child_ids(entry))
    if not png_b64 or readout is None:
        return None
    return png_b64, readout, ", ".join(settings), seen


def _widget_models(nb: dict) -> dict:
    saved = nb.get("metadata", {}).get("widgets", {})
    state = saved.get(WIDGET_STATE, {}) if isinstance(saved, dict) else {}
    models = state.get("state", {}) if isinstance(state, dict) else {}
    return models if isinstance(models, dict) else {}


def static_fallback(nb: dict) -> int:
    """Drop the widget view from each output of ``nb`` (a notebook dict or NotebookNode) that also
    carries an explorer's static view, first redrawing that view at the explorer's last settings where
    the notebook saved its widgets' state; returns how many outputs changed. Other outputs are untouched."""
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("nb must be a notebook (a dict with a 'cells' list)")
    models, used = _widget_models(nb), set()
    changed = 0
    for cell in nb["cells"]:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data")
            if not (isinstance(data, dict) and WIDGET_VIEW in data and _has_static_view(data)):
                continue
            view = data.pop(WIDGET_VIEW)
            last = _last_view(models, view.get("model_id", "")) if isinstance(view, dict) else None
            if last is not None:
                png_b64, readout, settings, ids = last
                meta = output.get("metadata", {}).get(OUTPUT_META, {})
                title = meta.get("title", "") if isinstance(meta, dict) else ""
                data["text/html"] = static_view(title, png_b64, readout, settings)
                data["image/png"] = png_b64
                used |= ids
            changed += 1
    if used:
        for mid in used:
            models.pop(mid, None)
        if not models:
            nb["metadata"]["widgets"].pop(WIDGET_STATE, None)
            if not nb["metadata"]["widgets"]:
                del nb["metadata"]["widgets"]
    return changed


def pre_save_hook(model: dict, **kwargs: object) -> None:
    """jupyter_server's ``ContentsManager.pre_save_hook``: a notebook is saved with static explorer views."""
    if not isinstance(model, dict):
        raise ValueError(f"model must be a contents model (a dict with 'type' and 'content'), got {type(model).__name__}")
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        static_fallback(model["content"])
