"""Chapter 09's scaled-out box drawn: all-reduce busbw over message sizes, one box against several.

Each function draws a frame that :mod:`course_lib.chapters.your_cluster` computed; none computes a model number.
"""
from __future__ import annotations

from .. import style, units


def _label(f):
    return f"{f['nodes']} boxes, {f['nics_per_node']} x {f['nic_gbit_s']:.3g} Gb/s RoCE each, predicted"


def draw_scaling(ax, frame):
    """Draw ``frame`` (``your_cluster.scaling_frame``) once; returns ``update(frame)``, which moves the
    scaled-out curve (hidden, with its legend entry, for one box)."""
    sizes = frame["sizes"]
    (one,) = ax.plot(sizes, frame["one_box_gb_s"], "o-", color=style.colour("reach", "inside"), ms=4, label="one box, predicted")
    (measured,) = ax.plot(frame["measured_sizes"], frame["measured_gb_s"], "D", color=style.INK, ms=7,
                          label="one box, measured (published)")
    (many,) = ax.plot(sizes, frame["scaled_gb_s"], "s--", color=style.colour("reach", "across"), ms=4, label=_label(frame))
    ax.set_xscale("log", base=2)
    ticks = sizes[::3]
    ax.set_xticks(ticks, [units.format_bytes(s, binary=True) for s in ticks])
    ax.set_xlabel("message size")
    ax.set_ylabel("all-reduce busbw, GB/s")
    ax.set_title("4x RTX 4090 (PCIe Gen4 x16, P2P on), from its system file", fontsize=style.FONT_TITLE)
    legend = {}

    def update(frame):
        nodes = frame["nodes"]
        many.set_ydata(frame["scaled_gb_s"])
        many.set_label(_label(frame))
        if legend.get("many") != (nodes > 1):  # one box: no scaled-out curve, and no legend entry for it
            many.set_visible(nodes > 1)
            if "box" in legend:
                legend["box"].remove()
            shown = [one, measured, many] if nodes > 1 else [one, measured]
            legend["box"] = ax.legend(shown, [line.get_label() for line in shown], fontsize=style.FONT_NORMAL, loc="lower right")  # 8.4 pt on the notebook's 7.5 in
            legend["many"] = nodes > 1
        elif nodes > 1:
            legend["box"].get_texts()[-1].set_text(many.get_label())
        ax.relim(visible_only=True)
        ax.set_autoscale_on(True)
        ax.autoscale_view()
        ax.set_ylim(bottom=0)

    update(frame)
    return update
