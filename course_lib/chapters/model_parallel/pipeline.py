"""Chapter 07, pipeline schedules (course_lib.pipeline_schedules) drawn and compared, and the schedule explorer.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ... import units, validate
from ...pipeline_schedules import SCHEDULES, Op, Schedule, pipeline_schedule, stage_timing  # noqa: F401 (public here)
from ...views import pipeline as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider


def draw_schedule(sched, ax=None, time_unit=1.0, unit_label="time units"):
    """Draw a schedule as a timeline: one row per device, forward passes blue, backward orange, idle white."""
    import matplotlib.pyplot as plt
    if not isinstance(sched, Schedule):
        raise ValueError(f"sched must be a Schedule from pipeline_schedule, got {type(sched).__name__}")
    scale = validate.positive("time_unit", time_unit)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.45 * sched.stages + 1.8))  # notebook width: drawn at full size
    return views.draw_schedule(ax, sched, scale, unit_label)


def compare_schedules(stages=4, micro_batches=8, interleave=2):
    """GPipe, 1F1B and interleaved 1F1B for the same p and m, one above the other, on one time axis."""
    import matplotlib.pyplot as plt
    p = validate.integer("stages", stages, low=2, high=16)
    m = validate.integer("micro_batches", micro_batches, low=1, high=64)
    v = validate.integer("interleave", interleave, low=2, high=8)
    scheds = [pipeline_schedule(p, m, "gpipe"), pipeline_schedule(p, m, "1f1b"),
              pipeline_schedule(p, m, "1f1b", interleave=v)]
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 1.8 + 1.45 * p), sharex=True)  # notebook width: full size
    views.draw_schedules(axes, scheds, "time (one forward pass of a stage = 1, backward = 2)")
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class ScheduleChoice:
    """What the schedule explorer shows: GPT-3 175B stage times (``stage_timing``), one send's seconds and
    the simulated schedule (None where interleaving is impossible: GPipe, or m not a multiple of p)."""

    timing: dict
    send_s: float
    schedule: Schedule | None


@lru_cache(maxsize=64)  # the plot and the readout of one slider event share one simulation
def schedule_choice(stages, micro_batches, interleave, schedule, link_gb_s, model_id="gpt3-175b",
                    system="dgx-a100") -> ScheduleChoice:
    """The schedule explorer's model: stage timing, send time over ``link_gb_s`` and the simulated schedule."""
    timing = stage_timing(model_id, system, stages)
    send = timing["send_bytes"] / (validate.positive("link_gb_s", link_gb_s) * units.GB)
    if interleave > 1 and (schedule == "gpipe" or micro_batches % stages):
        return ScheduleChoice(timing, send, None)
    return ScheduleChoice(timing, send, pipeline_schedule(stages, micro_batches, schedule, interleave,
                                                          timing["forward_s"], timing["backward_s"], send))


def _schedule_draw(ax, **values):
    view = views.ScheduleView(ax, 1e-3, "milliseconds")

    def update(**values):
        view.update(schedule_choice(**values).schedule, "interleaving needs the 1F1B schedule and m a multiple of p")
    update(**values)
    return update


def _schedule_readout(stages, micro_batches, interleave, schedule, link_gb_s):
    c = schedule_choice(stages, micro_batches, interleave, schedule, link_gb_s)
    s, timing = c.schedule, c.timing
    if s is None:
        return "Interleaving needs the 1F1B schedule and a number of micro-batches that is a multiple of the stages."
    return (f"{s.name}, {stages} stages x TP 8 = {timing['gpus']} GPUs, m = {micro_batches}: step "
            f"<b>{units.format_time(s.makespan)}</b> vs {units.format_time(s.ideal)} without a bubble; bubble "
            f"<b>{s.bubble_fraction:.3f}</b> (formula (p-1)/(v m) = {s.formula:.3f}); {s.sends} sends of "
            f"{units.format_bytes(timing['send_bytes'])} at {link_gb_s:.3g} GB/s per direction = "
            f"{units.format_time(c.send_s)} each; GPU 0 holds {s.peak_in_flight[0]:.3g} micro-batches of activations.")


def schedule_explorer(stages=4, micro_batches=8, interleave=1, schedule="1f1b", link_gb_s=25.0):
    """Sliders: pipeline stages (GPUs along the pipeline), micro-batches, interleaving, schedule, link GB/s.

    Times are GPT-3 175B with TP 8 on DGX A100 stages (parallel.estimate); a send carries one
    micro-batch's activations (or gradients) between stages over a link of ``link_gb_s``.

    Shows: the pipeline bubble is about (p-1)/(v m): more micro-batches or interleaving shrink it
    and more stages grow it.
    """
    import ipywidgets as w
    stages = validate.integer("stages", stages, low=2, high=32)
    if stages not in (2, 4, 8, 16, 32):
        raise ValueError(f"stages must be one of (2, 4, 8, 16, 32), got {stages}")
    micro_batches = validate.integer("micro_batches", micro_batches, low=1, high=64)
    if interleave not in (1, 2, 3, 4):
        raise ValueError(f"interleave must be one of (1, 2, 3, 4), got {interleave!r}")
    schedule = validate.choice("schedule", schedule, SCHEDULES)
    validate.number("link_gb_s", link_gb_s, low=0.1, high=1000)
    controls = {
        "stages": gpu_count_slider(stages, options=(2, 4, 8, 16, 32), description="pipeline stages p (nodes of 8 GPUs)"),
        "micro_batches": w.IntSlider(value=micro_batches, min=1, max=64, description="micro-batches m"),
        "interleave": w.Dropdown(options=[("none", 1), ("2 chunks per GPU", 2), ("3 chunks per GPU", 3),
                                          ("4 chunks per GPU", 4)], value=interleave,
                                 description="interleaving v"),
        "schedule": w.Dropdown(options=[("GPipe", "gpipe"), ("1F1B", "1f1b")], value=schedule,
                               description="schedule"),
        "link_gb_s": link_speed_slider(link_gb_s, low=0.1, high=1000,
                                       description="stage-to-stage link GB/s per direction"),
    }
    return explorer(_schedule_draw, controls, readout=_schedule_readout, title="Pipeline schedules",
                    figsize=(11, 4.0))
