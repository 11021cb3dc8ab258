"""Drawings of chapter 01 (PCIe): generations, lanes, the switch explorer and the offload explorer.

Each function draws a result that :mod:`course_lib.chapters.pcie` computed; none computes a model number.
"""
from __future__ import annotations

import numpy as np

from .. import style, units


def draw_generations(ax, rows, claims, lanes):
    """Per-direction and bidirectional bars per generation (``rows`` from ``generation_table``); ``claims``
    (generation -> GB/s) marks the source text's 'bidirectional' figures."""
    gens = np.array([r["generation"] for r in rows])
    per = np.array([r[f"x{lanes}_gb_s_per_direction"] for r in rows])
    ax.bar(gens - 0.2, per, width=0.4, color=style.colour("link", "pcie"), label="per direction")
    ax.bar(gens + 0.2, 2 * per, width=0.4, color=style.colour("link", "pcie"), alpha=0.35, label="bidirectional (both added)")
    for g, v in zip(gens, per):
        ax.text(g - 0.2, v, f"{v:.3g}", ha="center", va="bottom", fontsize=style.FONT_SMALL)
    ax.plot([g - 0.2 for g in claims], list(claims.values()), "x", color=style.MEASURED, markersize=9, mew=2,
            label="source text's 'bidirectional' figure")
    ax.set_xticks(gens, [f"Gen{g}" for g in gens])
    ax.set_ylabel(f"x{lanes} GB/s")
    ax.set_title(f"PCIe x{lanes}: the source text's 'bidirectional' numbers sit on the per-direction bars")
    ax.legend(fontsize=style.FONT_SMALL, loc="upper left")
    ax.grid(True, axis="y", alpha=0.3)
    return ax


def draw_lanes(ax, lanes, by_generation):
    """GB/s per direction against lane count, one line per generation (``by_generation``: gen -> values)."""
    for g, values in by_generation.items():
        ax.plot(lanes, values, "o-", label=f"Gen{g}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(lanes, [f"x{n}" for n in lanes])
    ax.set_xlabel("lanes")
    ax.set_ylabel("GB/s per direction")
    ax.set_title("Generation x lanes: each generation doubles, each doubling of lanes doubles")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=style.FONT_SMALL, ncol=2)
    return ax


def draw_published(ax, specs, rows, yours=()):
    """Published copies (``rows`` of ``measurements`` with a ``special`` flag) against each x16 link's spec
    (``specs``: generation -> GB/s per direction); ``yours``: (generation, GB/s) of the learner's GPU."""
    gens = sorted(specs)
    for g in gens:
        ax.hlines(specs[g], g - 0.4, g + 0.4, color=style.INK, lw=2, label="spec, x16 per direction" if g == gens[0] else None)
    styles = {"pinned": ("o", style.series(0)), "pageable": ("v", style.series(4))}
    seen = set()
    rng = np.random.default_rng(0)  # the same horizontal jitter on every drawing
    for m in rows:
        marker, colour = styles[m["memory"]]
        label = m["memory"] + (": other socket, all GPUs, both directions, or kernel copies"
                               if m["special"] else ", one GPU, one direction")
        x = m["generation"] + rng.uniform(-0.3, 0.3)
        ax.errorbar(x, m["gb_s_mid"], yerr=[[m["gb_s_mid"] - m["gb_s_low"]], [m["gb_s_high"] - m["gb_s_mid"]]],
                    fmt=marker, color=colour, mfc=style.PAPER if m["special"] else colour, ms=6,
                    label=label if label not in seen else None)
        seen.add(label)
    for k, (g, gb_s) in enumerate(yours):
        ax.plot(g, gb_s, "D", color=style.YOURS, ms=8, label="your GPU" if k == 0 else None)
    ax.set_xticks(gens, [f"Gen{g} x16" for g in gens])
    ax.set_ylim(0, 1.35 * specs[max(gens)])
    ax.set_ylabel("GB/s per direction")
    ax.set_title("Achievable vs spec: published bandwidthTest / nvbandwidth / busGrind copies")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=style.FONT_SMALL, loc="upper left")
    return ax


def draw_switch(ax, curves, mode_labels, mode, gpus, title):
    """Seconds against GPUs behind one uplink, per copy mode (``mode`` bold); your GPU count marked.
    Returns ``update(curves, mode, gpus, title)``, which moves the same artists."""
    counts = curves["counts"]
    lines = {m: ax.plot(counts, curves["times_s"][m], "--", color=colour, ms=4, label=mode_labels[m])[0]
             for m, colour in zip(mode_labels, (style.series(0), style.series(4), style.series(2)))}
    (mark,) = ax.plot([], [], "D", color=style.YOURS, ms=9, label="your GPUs")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(counts, [str(c) for c in counts])
    ax.set_xlabel("GPUs behind one PCIe switch uplink")
    ax.set_ylabel("time (every GPU moves the payload at once)")
    style.time_axis(ax, "y")  # plain tick labels ("100 ms"): mathtext powers of ten cost more to draw
    ax.grid(True, which="major", alpha=0.3)
    legend = ax.legend(fontsize=style.FONT_SMALL, loc="upper left")
    handles, texts = legend.get_lines(), legend.get_texts()

    def update(curves, mode, gpus, title):
        for k, (m, line) in enumerate(lines.items()):
            chosen = m == mode
            line.set_ydata(curves["times_s"][m])
            for artist in (line, handles[k]):
                artist.set(linestyle="-" if chosen else "--", marker="o" if chosen else "", lw=2.5 if chosen else 1)
        mark.set_data([gpus], [curves["chosen_s"]])
        texts[-1].set_text(f"{gpus} GPUs: {units.format_time(curves['chosen_s'])}")
        ax.set_title(title, fontsize=style.FONT_NORMAL)
        ax.relim()
        ax.autoscale_view()

    update(curves, mode, gpus, title)
    return update


def draw_offload(ax, curve, link_gb_s, label):
    """Seconds of offload traffic per step against the CPU-GPU link speed, reference links and yours.
    Returns ``update(curve, link_gb_s, label)``, which moves the same artists."""
    (line,) = ax.plot(curve["speeds_gb_s"], curve["times_s"], color=style.colour("link", "pcie"), label=label)
    (refs,) = ax.plot([r[1] for r in curve["references"]], [r[2] for r in curve["references"]], "o", color=style.REFERENCE)
    notes = style.name_points_along(ax, curve["references"])
    (mark,) = ax.plot([], [], "D", color=style.YOURS, label="your link")
    ax.set_xscale("log")
    ax.set_yscale("log")
    style.time_axis(ax, "y")  # plain tick labels ("100 ms"): mathtext powers of ten cost more to draw
    ax.set_xlabel("CPU-GPU link, GB/s per direction")
    ax.set_ylabel("transfer time per step")
    ax.set_title("ZeRO-Offload: FP16 gradients down, FP16 parameters up, every step", fontsize=style.FONT_NORMAL)
    ax.grid(True, which="major", alpha=0.3)
    texts = ax.legend(fontsize=style.FONT_SMALL).get_texts()

    def update(curve, link_gb_s, label):
        line.set_ydata(curve["times_s"])
        refs.set_ydata([r[2] for r in curve["references"]])
        for note, (_, gb_s, t) in zip(notes, curve["references"]):
            note.xy = (gb_s, t)
        mark.set_data([link_gb_s], [curve["chosen_s"]])
        texts[0].set_text(label)
        texts[1].set_text(f"your link: {units.format_time(curve['chosen_s'])}")
        ax.relim()
        ax.autoscale_view()

    update(curve, link_gb_s, label)
    return update
