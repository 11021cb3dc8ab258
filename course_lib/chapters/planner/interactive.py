"""Chapter 08, the planner explorer: model, system, GPUs, links, batch and tokens -> the best layout's step and time to train.
"""
from __future__ import annotations

import math

from ... import costmodel, hardware, parallel, units, validate
from ...views import planner as views
from ...widgets import explorer, gpu_count_slider, link_speed_slider
from .brief import ALL_SYSTEMS, Brief, _CACHE
from .runs import plan_run, run_numbers


EXPLORER_MODELS = ("llama2-70b", "llama3-70b", "llama2-13b", "gpt3-175b", "llama3-405b")
EXPLORER_GPUS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
EXPLORER_BATCHES = (256, 512, 1024, 2048, 4096)


def _explorer_plan(model, system, gpus, global_batch, nic_gbit_s, nvlink_gb_s, precision="bf16"):
    if not _has_peak(system, precision):   # nothing to search: the readout says why
        return parallel.Plan(model=parallel.model(model).name, system=system, gpus=gpus, global_batch=global_batch,
                             ranked=[], searched=0, rejected_memory=0, explanation=[])
    return plan_run(model, system, gpus, global_batch, nic_gbit_s=nic_gbit_s,
                    gpu_link_gb_s=nvlink_gb_s, fast=True, precision=precision)


def _has_peak(system, precision) -> bool:
    """Whether the system's GPU has a dense tensor peak for ``precision`` in the catalog."""
    gpu = hardware.resolve_system(system).gpu
    return precision == "bf16" or getattr(gpu, f"{precision}_flops") is not None


def _cached_plan(*key):
    if key not in _CACHE:
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = _explorer_plan(*key)
    return _CACHE[key]


def draw_breakdown(ax, plan_, top=6):
    """Stacked bars: the step time of the plan's best layouts split into compute, bubble and exposed traffic."""
    if not isinstance(plan_, parallel.Plan):
        raise ValueError(f"plan_ must be a parallel.Plan, got {type(plan_).__name__}")
    return views.draw_breakdown(ax, plan_.ranked[:validate.integer("top", top, low=1, high=50)])


def _title(model, system, gpus, nic_gbit_s, nvlink_gb_s, global_batch, tokens_t, precision="bf16") -> str:
    p = _cached_plan(model, system, gpus, global_batch, nic_gbit_s, nvlink_gb_s, precision)
    title = f"{parallel.model(model).name} on {gpus:,} GPUs of {system}, batch {global_batch}"
    if p.ranked:
        n = run_numbers(p.best, tokens_t * 1e12)
        title += f": {n['days']:.1f} days, {n['gpu_hours'] / 1e6:.2f} M GPU-hours for {tokens_t:.3g}T tokens"
    return title


def _draw(ax, **values):
    view = views.BreakdownView(ax)

    def update(model, system, gpus, nic_gbit_s, nvlink_gb_s, global_batch, tokens_t, precision="bf16"):
        view.update(_cached_plan(model, system, gpus, global_batch, nic_gbit_s, nvlink_gb_s, precision).ranked,
                    _title(model, system, gpus, nic_gbit_s, nvlink_gb_s, global_batch, tokens_t, precision))
    update(**values)
    return update


def _readout(model, system, gpus, nic_gbit_s, nvlink_gb_s, global_batch, tokens_t, precision="bf16"):
    if not _has_peak(system, precision):
        gpu = hardware.resolve_system(system).gpu
        return (f"The {gpu.name} has no dense {precision.upper()} peak in the catalog ({gpu.fp8_note or 'none'}): "
                "choose precision bf16 or another system.")
    p = _cached_plan(model, system, gpus, global_batch, nic_gbit_s, nvlink_gb_s, precision)
    sys_ = hardware.resolve_system(system).variant(nic_gbit_s=nic_gbit_s, gpu_link_gb_s=nvlink_gb_s)
    links = (f"Links: GPU {nvlink_gb_s:.3g} GB/s per direction, network "
             f"{sys_.nic_bandwidth_per_gpu / units.GB:.3g} GB/s per direction per GPU "
             f"({sys_.nics_per_node} NICs of {nic_gbit_s:.3g} Gb/s per {sys_.gpus_per_node}-GPU node)")
    if not p.ranked:
        return f"No layout fits in memory ({p.searched} searched). {links}."
    b = p.best
    n = run_numbers(b, tokens_t * 1e12)
    brief = Brief(model=model, tokens=tokens_t * 1e12, global_batch=global_batch)
    ok = brief.meets(n["days"], n["gpu_hours"], gpus)
    nodes = math.ceil(gpus / sys_.gpus_per_node)
    partial = "" if gpus % sys_.gpus_per_node == 0 else " (last one partly used)"
    return (f"Best of {p.searched} layouts: <b>{b.layout}</b>, micro-batch {b.micro_batch}, ZeRO-{b.zero}, "
            f"recompute {b.recompute}; memory {b.memory['total'] / units.GB:.0f} of "
            f"{b.memory['usable'] / units.GB:.0f} GB usable; <b>{b.tokens_per_s_per_gpu:,.0f} tokens/s per GPU</b>, "
            f"MFU {b.mfu:.0%}, bubble {b.bubble_fraction:.1%}; {costmodel.step_phrase(b, sys_)}; "
            f"{parallel.training_range_phrase(b)}. "
            f"{tokens_t:.3g}T tokens: <b>{n['days']:.1f} days</b> "
            f"{views.mark(ok['days'])} (brief: {brief.max_days:g}), <b>{n['gpu_hours'] / 1e6:.2f} M GPU-hours</b> "
            f"{views.mark(ok['gpu_hours'])} (brief: {brief.max_gpu_hours / 1e6:g} M), {gpus:,} GPUs {views.mark(ok['gpus'])} "
            f"on {nodes} node(s){partial}. {links}. Reduced search (micro-batch 1-2, ZeRO-1, interleave 1-2, TP up "
            f"to 16): parallel.plan's full search can find a few % more."
            + ("" if precision == "bf16" else f" {parallel.precision_summary(precision, sys_.gpu)}."))


def planner_explorer(model="llama2-70b", system="dgx-h200", gpus=1024, global_batch=1024, tokens_t=2.0,
                     nic_gbit_s=None, nvlink_gb_s=None, precision="bf16"):
    """The full planner: model, system, GPU count, NIC (Gb/s) and GPU-link (GB/s) speeds per direction, batch, tokens.

    nic_gbit_s / nvlink_gb_s default to the system's catalog values and follow the system
    dropdown; tokens_t is trillions of tokens; precision is the training recipe (bf16, fp8, mxfp8: the linear
    layers at that peak, where the GPU has one). Each redraw runs one reduced planner search.

    Shows: the planner's best layout and its training time follow the cluster: more GPUs shorten the
    days to train.
    """
    import ipywidgets as w
    model = validate.choice("model", model, EXPLORER_MODELS)
    system = validate.choice("system", system, hardware.system_ids())  # the catalog is the one list
    if gpus not in EXPLORER_GPUS:
        raise ValueError(f"gpus must be one of {EXPLORER_GPUS}, got {gpus!r}")
    if global_batch not in EXPLORER_BATCHES:
        raise ValueError(f"global_batch must be one of {EXPLORER_BATCHES}, got {global_batch!r}")
    tokens_t = validate.number("tokens_t", tokens_t, low=0.1, high=20)
    precision = validate.choice("precision", precision, parallel.PRECISIONS)
    sys_ = hardware.system(system)
    nic = (units.gbit_per_s(sys_.nic.per_direction) if nic_gbit_s is None
           else validate.number("nic_gbit_s", nic_gbit_s, low=10, high=1600))
    nvl = (sys_.gpu_link.per_direction / units.GB if nvlink_gb_s is None
           else validate.number("nvlink_gb_s", nvlink_gb_s, low=5, high=2000))
    controls = {
        "model": w.Dropdown(options=list(EXPLORER_MODELS), value=model, description="model"),
        "system": w.Dropdown(options=list(dict.fromkeys((*ALL_SYSTEMS, system))), value=system, description="system"),
        "gpus": gpu_count_slider(gpus, options=EXPLORER_GPUS, description="GPUs"),
        "nic_gbit_s": link_speed_slider(nic, low=10, high=1600, description="NIC port Gb/s (bits!) per direction"),
        "nvlink_gb_s": link_speed_slider(nvl, low=5, high=2000,
                                         description="GPU link (NVLink/PCIe) GB/s per direction"),
        "global_batch": gpu_count_slider(global_batch, options=EXPLORER_BATCHES,
                                         description="global batch (sequences)"),
        "tokens_t": w.FloatLogSlider(value=tokens_t, base=10, min=-1, max=math.log10(20), step=0.01,
                                     description="tokens (trillions)", readout_format=".3g"),
        "precision": w.Dropdown(options=list(parallel.PRECISIONS), value=precision, description="precision"),
    }

    def follow_system(system_id):  # a new system brings its own catalog link speeds (one redraw)
        s = hardware.system(system_id)
        return {"nic_gbit_s": units.gbit_per_s(s.nic.per_direction), "nvlink_gb_s": s.gpu_link.per_direction / units.GB}

    return explorer(_draw, controls, readout=_readout, title="Capstone planner: layouts, days and GPU-hours",
                    figsize=(8.5, 4.4), follow={"system": follow_system})
