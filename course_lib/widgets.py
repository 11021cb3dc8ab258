"""The explorer shell: controls, a readout and one plot that redraws in place.

:func:`explorer` builds a live explorer from a *view* (``draw(axes, **values)``) and a dict of
controls. The figure is made once; a slider event either calls the updater that ``draw``
returned (artists updated in place with ``set_data``/``set_ydata``) or, for views without one,
clears the same Axes and draws again. Either way the figure is rendered once to a PNG shown in an
``Image`` widget: no figure is re-created and no layout is recomputed per event.

The explorer is ONE output whose mime bundle carries both the live widget (JupyterLab, VS Code)
and a static view at the default settings (``text/html`` with the readout and the plot, and
``image/png``), which exported HTML, nbviewer and GitHub show where no widget frontend runs; the
lab's pre-save hook redraws that view at the learner's last settings (:mod:`course_lib.notebook_save`).

The plot is drawn for the width it is shown at: a zero-height probe (:func:`width_probe`, an
anywidget) reports the output area's width, and a figure designed wider is drawn again that wide, its
text at the same sizes in points (:meth:`Explorer.fit_width`). Slider labels wrap to a second line
rather than lose their unit, and after a kernel restart the explorer shows a banner saying to run
the cell again (:data:`EXPLORER_CSS`, carried in the explorer's header).

Every control row shrinks with the output area, from 620 px down to 400 px, its description
taking a share of it (:data:`DESCRIPTION_WIDTH`); a slider keeps a track of at least
:data:`MIN_TRACK_PX` pixels at full width and :data:`MIN_NARROW_TRACK_PX` at 400 px. Tests drive an explorer through its handle (:class:`Explorer`):
``.readout``, ``.render(**values)``, ``.controls``, ``.values()`` and ``.image``.
"""
from __future__ import annotations

import base64
import io
from html import escape
from typing import Callable

from . import validate
from . import notebook_save
from .notebook_save import READOUT_MARK, STATIC_MARK

STATIC_CAPTION_CLASS = STATIC_MARK
EXPLORER_CLASS = "course-explorer"
READOUT_CLASS = READOUT_MARK  # the pre-save hook finds the readout by it
GPU_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

# Control geometry (ipywidgets 8). A control row is as wide as the output area, at most CONTROL_PX (620 px,
# more for a long selection readout) and down to NARROW_AREA_PX (400 px): the description takes
# DESCRIPTION_SHARE of the row, between DESCRIPTION_MIN_PX and DESCRIPTION_PX; the slider track is what is
# left after the value readout (64 px, or the longest label) and margins (about 16 px). So a slider keeps a
# track of MIN_TRACK_PX at full width and of MIN_NARROW_TRACK_PX in a 400 px output area (JupyterLab at
# 900 px with its file browser open leaves about 468 px).
DESCRIPTION_PX = 250
DESCRIPTION_MIN_PX = 96
DESCRIPTION_SHARE = 0.4
CONTROL_PX = 620
NARROW_AREA_PX = 400
READOUT_PX = 64
MARGINS_PX = 16
MIN_TRACK_PX = 250
MIN_NARROW_TRACK_PX = 120
DPI = 100
DESCRIPTION_WIDTH = f"clamp({DESCRIPTION_MIN_PX}px, {DESCRIPTION_SHARE * 100:g}%, {DESCRIPTION_PX}px)"

# When its kernel restarts, ipywidgets marks every view of the old kernel's models with this class (the
# models' comm is gone: a slider still moves, but nothing answers). The explorer's style then shows a
# banner saying what to do, dims the stale plot and readout, stops the controls and hides the
# per-control red "disconnected" icons. The text is the banner's, in CSS (the style travels with the
# explorer's header, so it works wherever the widget renders, with no extension to install).
DISCONNECTED_CLASS = "jupyter-widgets-disconnected"
DEAD_BANNER = ("This explorer's kernel has restarted or stopped: its sliders no longer change anything. "
               "Run this cell again (or Run > Run All Cells) for a live explorer.")
EXPLORER_CSS = f"""
.{EXPLORER_CLASS} .widget-label {{ white-space: normal; overflow: visible; text-overflow: clip;
  height: auto; line-height: 1.2; align-self: center; overflow-wrap: anywhere; }}
.{EXPLORER_CLASS} .widget-inline-hbox {{ height: auto; min-height: var(--jp-widgets-inline-height, 28px); }}
.{EXPLORER_CLASS} .{DISCONNECTED_CLASS}::before {{ content: none; display: none; }}
.{EXPLORER_CLASS}.{DISCONNECTED_CLASS}::before {{ content: "{DEAD_BANNER}"; display: block;
  font: 600 13px/1.4 var(--jp-ui-font-family, sans-serif); color: #7a1f1f; background: #fde8e8;
  border: 1px solid #d9534f; border-radius: 3px; padding: 6px 10px; margin: 0 0 6px 0; }}
.{EXPLORER_CLASS}.{DISCONNECTED_CLASS} > :not(:first-child) {{ opacity: 0.4; pointer-events: none; filter: grayscale(1); }}
"""


# The plot is drawn for the width it is shown at: a probe in the explorer reports the output area's width,
# and a figure designed wider than that is drawn again that wide (the same text sizes in points, so 8 pt
# text reads as 8 pt, 11 px, instead of being scaled down with the image), at least MIN_FIGURE_PX wide;
# its height shrinks with it, to no less than MIN_HEIGHT_SHARE of the design's. Widths within
# REFIT_STEP_PX of the drawn one change nothing.
MIN_FIGURE_PX = 360
MIN_HEIGHT_SHARE = 0.7
REFIT_STEP_PX = 24
_PROBE_ESM = """
export default {
  render({ model, el }) {
    el.style.cssText = "width: 100%; height: 0; overflow: hidden; align-self: stretch;";
    let timer = null;
    const report = () => {
      const px = Math.round(el.getBoundingClientRect().width);
      if (px > 0 && px !== model.get("width_px")) { model.set("width_px", px); model.save_changes(); }
    };
    const observer = new ResizeObserver(() => { clearTimeout(timer); timer = setTimeout(report, 300); });
    observer.observe(el);
    return () => { observer.disconnect(); clearTimeout(timer); };
  }
};
"""


def width_probe():
    """A zero-height widget whose ``width_px`` is the width (CSS px) it is shown at (0 until shown)."""
    import anywidget
    import traitlets

    global _Probe
    if _Probe is None:
        class WidthProbe(anywidget.AnyWidget):
            _esm = _PROBE_ESM
            width_px = traitlets.Int(0).tag(sync=True)
        _Probe = WidthProbe
    return _Probe()


_Probe = None


def fitted_figsize(design, shown_px) -> tuple[float, float]:
    """The figure size (inches at DPI) to draw a figure designed at ``design`` (w, h inches) for an
    output area ``shown_px`` wide: never wider than the design, at least MIN_FIGURE_PX."""
    width_in, height_in = (validate.positive("design width", design[0]), validate.positive("design height", design[1]))
    shown_px = validate.integer("shown_px", shown_px, low=1)
    fitted = min(width_in, max(MIN_FIGURE_PX, shown_px) / DPI)
    return fitted, height_in * max(MIN_HEIGHT_SHARE, fitted / width_in)


CHAR_PX = 7.5  # a readout character at the widgets' 13 px font, generously


def readout_px(control) -> int:
    """Width (px) of a slider's value readout: 64 px, or wider for a selection slider's long labels."""
    if not getattr(control, "readout", True):
        return 0
    labels = getattr(control, "_options_labels", None) or ()
    longest = max((len(str(label)) for label in labels), default=0)
    return max(READOUT_PX, int(longest * CHAR_PX) + 8)


def row_px(control, area_px=None) -> int:
    """Width (px) of ``control``'s row in an output area ``area_px`` wide (default: wide enough for all of it)."""
    widest = int(str(control.layout.max_width).removesuffix("px"))
    return widest if area_px is None else min(widest, validate.integer("area_px", area_px, low=1))


def description_px(control, area_px=None) -> float:
    """Width (px) the description takes in that row (``DESCRIPTION_WIDTH``: a share of the row, clamped)."""
    return min(DESCRIPTION_PX, max(DESCRIPTION_MIN_PX, DESCRIPTION_SHARE * row_px(control, area_px)))


def track_px(control, area_px=None) -> int | None:
    """The slider track width (px) ``control`` gets in an output area ``area_px`` wide (default: full
    width); None for a control with no track."""
    if "Slider" not in type(control).__name__:
        return None
    return int(row_px(control, area_px) - description_px(control, area_px) - readout_px(control) - MARGINS_PX)


def fit_control(control):
    """Give ``control`` the shell's row: as wide as the output area up to 620 px (more for a long
    readout), a description that shrinks with it (``DESCRIPTION_WIDTH``), no updates mid-drag."""
    control.style.description_width = DESCRIPTION_WIDTH
    extra = readout_px(control) - READOUT_PX if "Slider" in type(control).__name__ else 0
    control.layout.width = "100%"
    control.layout.max_width = f"{CONTROL_PX + max(0, extra)}px"
    if hasattr(control, "continuous_update"):
        control.continuous_update = False
    if control.description and not getattr(control, "tooltip", None):
        control.tooltip = control.description  # a description cut by the narrow width stays readable
    return control


def gpu_count_slider(value=8, options=GPU_COUNTS, description="GPUs"):
    """A slider over powers-of-two GPU counts."""
    import ipywidgets as w
    options = tuple(validate.integer("options item", o, low=1) for o in options)
    value = validate.integer("value", value, low=1)
    if value not in options:
        raise ValueError(f"value must be one of {options}, got {value}")
    return fit_control(w.SelectionSlider(options=options, value=value, description=description))


def link_speed_slider(value=50.0, low=1.0, high=2000.0, description="link GB/s per direction"):
    """A log slider over link bandwidth in GB/s per direction."""
    import ipywidgets as w
    import math
    low, high = validate.positive("low", low), validate.positive("high", high)
    value = validate.number("value", value, low=low, high=high)
    return fit_control(w.FloatLogSlider(value=value, base=10, min=math.log10(low), max=math.log10(high), step=0.01,
                                        description=description, readout_format=".3g"))


def new_axes(axes=1, figsize=(7.5, 4.2)):
    """A figure (not pyplot's: nothing shows it behind the shell's back) and its Axes.

    ``axes``: a count (one row), a (rows, cols) pair, a mosaic (list of lists of names, as
    ``Figure.subplot_mosaic``) or a function ``fig -> axes``. Returns (figure, axes): one Axes,
    a flat list, or a dict for a mosaic.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    import matplotlib

    fig = Figure(figsize=figsize, dpi=DPI)
    FigureCanvasAgg(fig)
    # Titles at a fixed height: placing them automatically measures every tick label on every draw.
    with matplotlib.rc_context({"axes.titley": 1.0}):
        if callable(axes):
            return fig, axes(fig)
        if isinstance(axes, list):
            return fig, fig.subplot_mosaic(axes)
        if isinstance(axes, tuple):
            rows, cols = (validate.integer("axes rows", axes[0], low=1, high=8),
                          validate.integer("axes cols", axes[1], low=1, high=8))
        else:
            rows, cols = 1, validate.integer("axes", axes, low=1, high=8)
        made = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    return fig, made[0] if len(made) == 1 else made


def _all_axes(axes) -> list:
    if isinstance(axes, dict):
        return list(axes.values())
    return list(axes) if isinstance(axes, (list, tuple)) else [axes]


def grow_to_fit(fig, pad_in=0.05) -> None:
    """Grow the figure (Axes keep their size and place in inches) until every artist is inside it.

    A notebook's inline backend crops each image to its artists (``bbox_inches="tight"``); the shell
    renders the canvas as it is, so a legend placed below its Axes would be cut off. Done once.
    """
    bbox = fig.get_tightbbox(fig.canvas.get_renderer())
    w, h = fig.get_size_inches()
    left, bottom = max(0.0, -bbox.x0) + pad_in, max(0.0, -bbox.y0) + pad_in
    right, top = max(0.0, bbox.x1 - w) + pad_in, max(0.0, bbox.y1 - h) + pad_in
    if max(left, bottom, right, top) <= 2 * pad_in:
        return
    new_w, new_h = w + left + right, h + bottom + top
    # every position is read before any is set: a twin Axes (twinx) moves with its sibling, so moving
    # them one after the other would move the pair twice
    placed = [(ax, ax.get_position()) for ax in fig.axes]
    for ax, p in placed:
        ax.set_position([(p.x0 * w + left) / new_w, (p.y0 * h + bottom) / new_h, p.width * w / new_w,
                         p.height * h / new_h])
    fig.set_size_inches(new_w, new_h)


def fit_to_width(fig) -> None:
    """Keep text inside a figure drawn narrower than designed: titles wrap at its edges, and a legend
    wider than the figure takes fewer columns (grow_to_fit then adds height, not width)."""
    width_px = fig.get_figwidth() * fig.dpi
    texts = [fig._suptitle] if getattr(fig, "_suptitle", None) is not None else []
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title]
    for text in texts:
        if text.get_text():
            text.set_wrap(True)
    renderer = fig.canvas.get_renderer()
    for legend in [*fig.legends, *(ax.legend_ for ax in fig.axes if ax.legend_ is not None)]:
        while legend._ncols > 1 and legend.get_window_extent(renderer).width > width_px:
            _repack_legend(legend, legend._ncols - 1)


def _repack_legend(legend, ncols: int) -> None:
    """Lay a legend's entries out in ``ncols`` columns (Legend.set_ncols alone does not re-pack a
    legend already made): the same entries, in order, the same spacing."""
    import numpy as np
    from matplotlib.offsetbox import VPacker

    box = legend._legend_handle_box
    columns = box.get_children()
    if not columns:
        return
    entries = [entry for column in columns for entry in column.get_children()]
    first = columns[0]
    box._children = [VPacker(pad=0, sep=first.sep, align=first.align, children=list(chunk))
                     for chunk in np.array_split(np.array(entries, dtype=object), ncols) if len(chunk)]
    for column in box._children:
        column.set_figure(legend.get_figure(root=False))
        column.axes = legend.axes
    legend.set_ncols(ncols)


def lighten(axes) -> None:
    """No minor ticks on log axes: their tick objects and labels cost more to draw than the data."""
    from matplotlib.ticker import NullLocator

    for ax in _all_axes(axes):
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log" and not isinstance(axis.get_minor_locator(), NullLocator):
                axis.set_minor_locator(NullLocator())


def clear_artists(ax) -> None:
    """Remove what a view drew on ``ax`` but keep the Axes, its axis and tick objects (rebuilding
    ticks is most of the cost of ``ax.cla()``); limits go back to autoscaling on the new data."""
    from matplotlib.transforms import Bbox

    for artist in [*ax.lines, *ax.patches, *ax.texts, *ax.collections, *ax.images, *ax.tables, *ax.artists]:
        artist.remove()
    ax.containers.clear()  # bar containers: the legend would still list the old bars
    if ax.legend_ is not None:
        ax.legend_.remove()
    for text in (ax.title, ax._left_title, ax._right_title):
        text.set_text("")
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_axis_on()
    ax.set_prop_cycle(None)
    ax.dataLim.set(Bbox.null())
    ax.ignore_existing_data_limits = True
    ax.set_autoscale_on(True)
    ax._request_autoscale_view()


def png(fig) -> bytes:
    """The figure as PNG bytes: one Agg draw, encoded at a fast zlib level (the image changes on every event)."""
    import numpy as np
    from PIL import Image

    import matplotlib

    with matplotlib.rc_context({"text.hinting": "no_hinting"}):  # glyphs without hinting: ~15% faster, as legible
        fig.canvas.draw()
    buf = io.BytesIO()
    Image.fromarray(np.asarray(fig.canvas.buffer_rgba())).save(buf, format="png", compress_level=1)
    return buf.getvalue()


class Explorer:
    """A live explorer: controls, readout, one figure redrawn in place. Made by :func:`explorer`.

    ``readout``: the readout's text (HTML); ``render(**values)``: set controls and redraw once;
    ``image``: the plot's PNG bytes; ``box``: the widget (header, controls, readout, image).
    """

    def __init__(self, draw: Callable, controls: dict, readout: Callable | None, title: str, axes, figsize,
                 follow: dict | None = None):
        import ipywidgets as w

        self.controls = {name: fit_control(c) for name, c in controls.items()}
        self._draw, self._readout_fn, self.title = draw, readout, title
        self._axes_spec, self.design_size = axes, tuple(figsize)
        self.drawn_size = self.design_size  # the size asked of the figure (grow_to_fit may add a margin)
        self.figure, self.axes = new_axes(axes, figsize)
        self._updater = None
        self._hold = False
        self._follow = dict(follow or {})
        unknown = sorted(set(self._follow) - set(self.controls))
        if unknown or not all(callable(f) for f in self._follow.values()):
            raise ValueError(f"follow must map control names to functions value -> {{name: value}}; got {unknown}")
        self._readout = w.HTML(layout=w.Layout(max_width="100%"))
        self._readout.add_class(READOUT_CLASS)
        # the plot scales down with a narrow output area rather than overflowing it
        self._image = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))
        heading = f"<b>{escape(title)}</b> (live: move the sliders)" if title else "<b>Live explorer</b>"
        header = w.HTML(f"<style>{EXPLORER_CSS}</style>{heading}")
        self._probe = width_probe()
        self.box = w.VBox([header, *self.controls.values(), self._readout, self._image, self._probe])
        self.box.add_class(EXPLORER_CLASS)
        self._first_draw()
        self._batch, self._pending = 0, False
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
            self._one_draw_per_message(control)
        self._probe.observe(lambda change: self.fit_width(change["new"]), names="width_px")

    # -- drawing
    def _first_draw(self):
        import warnings

        from matplotlib.layout_engine import TightLayoutEngine

        values = self.values()
        result = self._draw(self.axes, **values)
        self._updater = result if callable(result) else None
        lighten(self.axes)
        self._fit_text()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tight_layout's "not compatible" warning on odd mosaics
            # Once: every later event keeps this layout. Executed directly, as fig.tight_layout() would
            # leave a layout engine on the figure, and a figure with one is drawn twice per image.
            TightLayoutEngine().execute(self.figure)
        grow_to_fit(self.figure)
        self._show(values)

    def _redraw(self, values):
        if self._updater is not None:
            self._updater(**values)
            return
        for ax in _all_axes(self.axes):
            clear_artists(ax)
        self._draw(self.axes, **values)
        lighten(self.axes)
        self._fit_text()

    def _fit_text(self):
        if self.drawn_size[0] < self.design_size[0]:  # the design's own text fits its own width
            fit_to_width(self.figure)

    def _show(self, values):
        self._readout.value = self._readout_fn(**values) if self._readout_fn is not None else ""
        self._image.value = png(self.figure)

    def _set_quietly(self, values: dict):
        self._hold = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._hold = False

    def _one_draw_per_message(self, control):
        """A message from the front end (one slider move) draws once, however many controls it changes:
        a chapter's own observer may clamp another control (fewer ranks, fewer steps), and each change
        would otherwise draw. Changes made by code (``c.value = v``) still draw at once."""
        receive = control.set_state

        def set_state(sync_data):
            self._batch += 1
            try:
                receive(sync_data)
            finally:
                self._batch -= 1
                if not self._batch and self._pending:
                    self._pending = False
                    self._on_change()
        control.set_state = set_state

    def _on_change(self, change=None):
        if self._hold:
            return
        for name, rule in self._follow.items():  # e.g. the PCIe uplink follows the generation
            if change is not None and change.get("owner") is self.controls[name]:
                self._set_quietly(rule(change["new"]))
        if self._batch:  # inside a front-end message: drawn once, when it has been applied
            self._pending = True
            return
        values = self.values()
        self._redraw(values)
        self._show(values)

    # -- public
    def fit_width(self, shown_px: int) -> bool:
        """Draw the plot again for an output area ``shown_px`` wide (a new figure of
        :func:`fitted_figsize`); returns whether it was redrawn (False: the drawn width is close enough)."""
        if not shown_px:
            return False
        size = fitted_figsize(self.design_size, shown_px)
        if abs(size[0] - self.drawn_size[0]) * DPI < REFIT_STEP_PX:
            return False
        self.drawn_size = size
        self.figure, self.axes = new_axes(self._axes_spec, size)
        self._first_draw()
        return True

    @property
    def shown_px(self) -> int:
        """The width (CSS px) the front end reports the explorer is shown at (0: not shown yet)."""
        return self._probe.width_px

    def values(self) -> dict:
        """The controls' current values, by keyword name."""
        return {name: control.value for name, control in self.controls.items()}

    def render(self, **values) -> str:
        """Set the named controls (one redraw for all of them); returns the new readout."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ValueError(f"values must name controls among {sorted(self.controls)}; got {unknown}")
        followed = {}
        for name, rule in self._follow.items():  # as a slider move would, unless given explicitly
            if name in values:
                followed.update({k: v for k, v in rule(values[name]).items() if k not in values})
        self._set_quietly({**values, **followed})
        self._on_change()
        return self.readout

    @property
    def readout(self) -> str:
        """The readout's current text (HTML); "" where the explorer has none."""
        return self._readout.value

    @property
    def image(self) -> bytes:
        """The plot as PNG bytes, as shown now."""
        return bytes(self._image.value)

    @property
    def children(self):
        return self.box.children

    def mimebundle(self) -> dict:
        """The one output: the live widget plus its static view (HTML with the plot, and the PNG)."""
        data = {}
        try:
            data.update(self.box._repr_mimebundle_() or {})
        except Exception:  # no kernel comm (plain Python): the static view alone
            pass
        encoded = base64.b64encode(self.image).decode("ascii")
        data["text/html"] = notebook_save.static_view(self.title, encoded, self.readout)
        data["image/png"] = encoded
        data["text/plain"] = f"{self.title or 'Explorer'}: {plain_text(self.readout)}"
        return data

    def _ipython_display_(self):
        pass  # explorer() displayed it already; as a cell's last value it must not show twice


def plain_text(html_text: str) -> str:
    """The readout without HTML tags (for the plain-text fallback).

    Spaces are kept as written, so a monospace table (a ``<pre>`` block, or columns padded with spaces
    or ``&nbsp;``) keeps its columns; ``<br>`` and the end of a paragraph, block, row or list item
    start a new line; a table cell's end leaves one space. Trailing spaces and blank edge lines go.
    """
    import re
    from html import unescape
    text = re.sub(r"<br\s*/?>|</(?:p|div|pre|tr|li|h[1-6]|table)\s*>", "\n", html_text, flags=re.IGNORECASE)
    text = re.sub(r"</t[dh]\s*>", " ", text, flags=re.IGNORECASE)
    text = unescape(re.sub(r"<[^>]*>", "", text)).replace("\xa0", " ")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def explorer(draw: Callable, controls: dict, *, readout: Callable | None = None, title: str = "",
             figsize=(7.5, 4.2), axes=1, follow: dict | None = None, show: bool = True) -> Explorer:
    """Build and display (``show``) a live explorer as one output; returns its :class:`Explorer` handle.

    ``draw(axes, **values)`` draws on the shell's Axes (see :func:`new_axes` for ``axes``) and may
    return ``update(**values)``, which later events call to change artists in place; without one,
    each event clears the Axes and calls ``draw`` again. ``readout(**values)`` returns a one-line
    HTML summary; ``controls`` maps keyword names to widgets. ``follow`` maps a control's name to
    ``rule(new_value) -> {other_name: value}``: moving that control sets the others first (one redraw).
    """
    if not callable(draw):
        raise ValueError("draw must be a function draw(axes, **values)")
    if not isinstance(controls, dict) or not controls:
        raise ValueError("controls must be a non-empty dict of name -> widget")
    handle = Explorer(draw, controls, readout, title, axes, figsize, follow)
    if show:
        from IPython.display import display
        # the title in the output's metadata: the pre-save hook redraws the static view with it
        display(handle.mimebundle(), raw=True, metadata={notebook_save.OUTPUT_META: {"title": title}})
    return handle


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
