"""Chapter 00's gradient exchange drawn: step time against link bandwidth, the reference links, yours.

Each function draws a result that :mod:`course_lib.chapters.gradients` computed; none computes a model number.
"""
from __future__ import annotations

from .. import style, units


def _labels(c):
    return (f"ring all-reduce, {c['gpus']} GPUs", f"your link: {units.format_time(c['chosen_s'])}",
            f"Exchanging {units.format_bytes(c['gradient_bytes'])} of gradients over {c['gpus']} GPUs")


def draw_exchange(ax, c):
    """Draw ``c`` (``gradients.exchange_curve``) once; returns ``update(c)`` that moves the same artists."""
    from matplotlib.ticker import FuncFormatter
    curve_label, chosen_label, title = _labels(c)
    (curve,) = ax.loglog(c["speeds_gb_s"], c["times_s"], color=style.colour("algorithm", "ring"), label=curve_label)
    refs = ax.plot([r[1] for r in c["references"]], [r[2] for r in c["references"]], "o", color=style.REFERENCE)[0]
    notes = style.name_points_along(ax, c["references"])
    (chosen,) = ax.plot(c["link_gb_s"], c["chosen_s"], "D", color=style.YOURS, label=chosen_label)
    style.decorate(ax, title=title, xlabel="link bandwidth per GPU, GB/s per direction",
                   ylabel="time per step", fontsize=style.FONT_NORMAL)
    # Plain tick labels (1, 10, 100 GB/s; 10 ms, 1 s): cheaper to draw on every event than mathtext powers of ten.
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    style.time_axis(ax, "y")
    legend = ax.legend(loc="upper right", fontsize=style.FONT_SMALL)

    def update(c):
        curve.set_ydata(c["times_s"])
        refs.set_ydata([r[2] for r in c["references"]])
        for note, (_, gb_s, t) in zip(notes, c["references"]):
            note.xy = (gb_s, t)
        chosen.set_data([c["link_gb_s"]], [c["chosen_s"]])
        curve_label, chosen_label, title = _labels(c)
        for text, label in zip(legend.get_texts(), (curve_label, chosen_label)):
            text.set_text(label)
        ax.set_title(title, fontsize=style.FONT_TITLE)
        ax.relim()
        ax.autoscale_view()

    return update
