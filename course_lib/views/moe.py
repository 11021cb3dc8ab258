"""Chapter 10's (and 07's context-parallel) explorers drawn: communication against compute per degree, expert memory.

Each function draws a frame that :mod:`course_lib.chapters.moe` computed; none computes a model number.
"""
from __future__ import annotations

from .. import style
from ..widgets import clear_artists


def draw_pairs(ax, frame, comm_label, compute_label, ylabel, log=False):
    """Draw ``frame`` (a ``moe.BarPairs``); returns ``update(frame)``, which moves the same bars (redrawn only
    when the number of degrees changes)."""
    state = {}

    def build(frame):
        x = range(len(frame.labels))
        state["comm"] = ax.bar([i - 0.2 for i in x], frame.comm, 0.4, label=comm_label, color=list(frame.comm_colours))
        state["compute"] = ax.bar([i + 0.2 for i in x], frame.compute, 0.4, label=compute_label,
                                  color=style.colour("step", "compute"))
        if log and ax.get_yscale() != "log":
            ax.set_yscale("log")
        ax.set_xticks(list(x), list(frame.labels))
        state["span"] = ax.axvspan(-0.5, 0.5, color=style.HIGHLIGHT, alpha=0.25, zorder=0)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=style.FONT_SMALL)
        state["n"] = len(frame.labels)
        state["labels"] = frame.labels

    def update(frame):
        if len(frame.labels) != state["n"]:
            clear_artists(ax)
            build(frame)
        elif frame.labels != state["labels"]:
            ax.set_xticks(list(range(len(frame.labels))), list(frame.labels))
            state["labels"] = frame.labels
        for bar, h, c in zip(state["comm"], frame.comm, frame.comm_colours):
            bar.set_height(h)
            bar.set_facecolor(c)
        for bar, h in zip(state["compute"], frame.compute):
            bar.set_height(h)
        state["span"].set_visible(frame.chosen is not None)
        if frame.chosen is not None:
            state["span"].set_x(frame.chosen - 0.5)
        ax.set_title(frame.title, fontsize=style.FONT_NORMAL)
        ax.relim()
        ax.set_autoscale_on(True)
        ax.autoscale_view()

    build(frame)
    update(frame)
    return update



def draw_memory(ax, frame):
    """Bars of routed-expert memory per EP degree, the chosen one outlined; returns ``update(frame)``."""
    state = {}

    def build(frame):
        state["bars"] = ax.bar(range(len(frame["labels"])), frame["gb"], 0.6, color=style.colour("memory", "optimizer"))
        ax.set_xticks(list(range(len(frame["labels"]))), list(frame["labels"]))
        if ax.get_yscale() != "log":  # once: setting it again would bring back the minor ticks the shell removed
            ax.set_yscale("log")
        ax.set_ylabel("GB per GPU and MoE layer")
        state["n"] = len(frame["labels"])

    def update(frame):
        if len(frame["labels"]) != state["n"]:
            clear_artists(ax)
            build(frame)
        ax.set_xticks(list(range(len(frame["labels"]))), list(frame["labels"]))
        for i, (bar, h) in enumerate(zip(state["bars"], frame["gb"])):
            bar.set_height(h)
            chosen = i == frame["chosen"]
            bar.set_edgecolor(style.INK if chosen else "none")
            bar.set_linewidth(2.0 if chosen else 0.0)
        ax.set_title(frame["title"], fontsize=style.FONT_NORMAL)
        ax.set_ylim(*frame["ylim"])

    build(frame)
    update(frame)
    return update
