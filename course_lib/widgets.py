"""Explorers: sliders over the course's models, each with a static plot.

Every explorer first shows a static plot at its default settings (so GitHub,
nbviewer and exported HTML show something), then the live version: controls, a
text readout (CSS class ``course-readout``) and a plot that redraws on change.
Chapter-specific explorers are built with :func:`explorer`.
"""
from __future__ import annotations

from html import escape
from typing import Callable

import matplotlib.pyplot as plt

from . import validate

STATIC_CAPTION_CLASS = "course-static-caption"
GPU_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def gpu_count_slider(value=8, options=GPU_COUNTS, description="GPUs"):
    """A slider over powers-of-two GPU counts."""
    import ipywidgets as w
    options = tuple(validate.integer("options item", o, low=1) for o in options)
    value = validate.integer("value", value, low=1)
    if value not in options:
        raise ValueError(f"value must be one of {options}, got {value}")
    return w.SelectionSlider(options=options, value=value, description=description,
                             continuous_update=False, style={"description_width": "initial"})


def link_speed_slider(value=50.0, low=1.0, high=2000.0, description="link GB/s per direction"):
    """A log slider over link bandwidth in GB/s per direction."""
    import ipywidgets as w
    import math
    low, high = validate.positive("low", low), validate.positive("high", high)
    value = validate.number("value", value, low=low, high=high)
    return w.FloatLogSlider(value=value, base=10, min=math.log10(low), max=math.log10(high), step=0.01,
                            description=description, continuous_update=False, readout_format=".3g",
                            style={"description_width": "initial"}, layout={"width": "480px"})


def explorer(draw: Callable, controls: dict, *, readout: Callable | None = None,
             title: str = "", figsize=(7.5, 4.2)):
    """Display a static plot at the defaults, then a live explorer; returns an :class:`Explorer` handle.

    ``draw(ax, **values)`` draws on a matplotlib Axes; ``readout(**values)``
    returns a one-line text summary; ``controls`` maps keyword names to widgets.
    """
    import ipywidgets as w
    from IPython.display import HTML, display

    if not callable(draw):
        raise ValueError("draw must be a function draw(ax, **values)")
    if not isinstance(controls, dict) or not controls:
        raise ValueError("controls must be a non-empty dict of name -> widget")

    def values():
        return {name: control.value for name, control in controls.items()}

    def figure(vals):
        fig, ax = plt.subplots(figsize=figsize)
        draw(ax, **vals)
        fig.tight_layout()
        return fig

    # Static view: an ordinary image output, visible without a widget frontend.
    defaults = values()
    display(HTML(f'<div class="{STATIC_CAPTION_CLASS}"><i>Static view at the default settings '
                 '(shown everywhere; the live explorer with sliders follows).</i></div>'))
    static = figure(defaults)
    if title:
        static.suptitle(f"{title} (static view at the default settings)", fontsize=10)
        static.tight_layout()
    display(static)
    plt.close(static)
    if readout is not None:
        display(HTML(f"<p><b>At the defaults:</b> {readout(**defaults)}</p>"))

    # Live view.
    text = w.HTML()
    text.add_class("course-readout")
    plot = w.Output()

    def update(_change=None):
        vals = values()
        if readout is not None:
            text.value = readout(**vals)
        with plot:
            plot.clear_output(wait=True)
            fig = figure(vals)
            display(fig)
            plt.close(fig)

    for control in controls.values():
        control.observe(update, names="value")
    update()
    header = w.HTML(f"<b>{title}</b> (live: move the sliders)" if title else "<b>Live explorer</b>")
    box = w.VBox([header, *controls.values(), text, plot])
    box.add_class("course-explorer")
    display(box)
    return Explorer(box, controls, text if readout is not None else None)


def html_table(rows, columns) -> str:
    """A small HTML table of ``rows``; ``columns`` maps header -> function(row) -> text
    (a dict, or a list of (header, function) pairs). Cell text is HTML-escaped."""
    pairs = list(columns.items()) if isinstance(columns, dict) else list(columns or ())
    if not pairs or not all(isinstance(p, tuple) and len(p) == 2 and callable(p[1]) for p in pairs):
        raise ValueError("columns must be a non-empty dict (or list of pairs) of header -> function(row)")
    head = "".join(f"<th>{escape(str(h))}</th>" for h, _ in pairs)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(fn(r)))}</td>" for _, fn in pairs) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def show_html(html: str) -> None:
    """Display an HTML fragment in the notebook."""
    from IPython.display import HTML, display
    display(HTML(html))


class Explorer:
    """Handle on an explorer that :func:`explorer` has already displayed.

    ``box`` is the live widget (``children``: header, controls, readout, plot).
    As the last expression of a cell it shows nothing more: the explorer is on
    screen already, and showing the box again would draw it twice.
    """

    def __init__(self, box, controls: dict, readout_widget=None):
        self.box = box
        self.controls = dict(controls)
        self._readout_widget = readout_widget

    @property
    def readout(self) -> str:
        """The live readout's current text (HTML), or "" where the explorer has none."""
        return self._readout_widget.value if self._readout_widget is not None else ""

    def values(self) -> dict:
        """The controls' current values, by keyword name."""
        return {name: control.value for name, control in self.controls.items()}

    @property
    def children(self):
        return self.box.children

    def _ipython_display_(self):
        pass
