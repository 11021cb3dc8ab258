"""Chapter 08 (capstone): plan a training run from the catalog, predict it, compare it with published runs.

Everything here arranges :mod:`course_lib.parallel` (memory, traffic, step time, the
planner) for the capstone: the brief, what must fit in memory, the candidate systems
with their links (bytes/s **per direction**, bidirectional only where named),
time-to-train and GPU-hours, a GPU-count sweep, the published runs in
``data/published_runs.json``, and the full planner explorer. What-if systems (another
NIC or GPU-link rate) come from :meth:`course_lib.hardware.System.variant`.

Units: bytes, seconds, tokens; days and GPU-hours where the name says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .. import costmodel, datafiles, evidence, hardware, parallel, topology, units, validate
from ..views import planner as views
from ..widgets import explorer, gpu_count_slider, link_speed_slider, show_html

SECONDS_PER_DAY = 86400.0
SECONDS_PER_HOUR = 3600.0
OFFERED_SYSTEMS = ("pcie-8gpu", "dgx-a100", "dgx-h100", "dgx-h200")   # what the brief's provider rents out
ROADMAP_SYSTEMS = ("dgx-b200", "gb200-nvl72")                         # in the catalog, not offered by the brief
ALL_SYSTEMS = OFFERED_SYSTEMS + ROADMAP_SYSTEMS
EXPLORER_MODELS = ("llama2-70b", "llama3-70b", "llama2-13b", "gpt3-175b", "llama3-405b")
EXPLORER_GPUS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
EXPLORER_BATCHES = (256, 512, 1024, 2048, 4096)
SWEEP_GPUS = (256, 512, 1024, 2048, 4096, 8192)
# A reduced search for the explorer: one planner run must stay well under a second on a laptop core.
FAST_SEARCH = {"micro_batches": (1, 2), "zero_stages": (1,), "recompute_options": ("selective", "full"),
               "interleave_options": (1, 2), "max_tp": 16}
BREAKDOWN_COLOURS = views.BREAKDOWN_COLOURS   # the same colours as chapter 07's step-time split


# ---------------------------------------------------------------- the brief

@dataclass(frozen=True)
class Brief:
    """The capstone's assignment: a model, tokens, a global batch, and the limits to meet.

    tokens: pretraining tokens; global_batch: sequences per step; max_gpus: GPUs available;
    max_days: wall-clock days; max_gpu_hours: the compute budget; systems: catalog ids offered.
    """

    model: str = "llama2-70b"
    tokens: float = 2.0e12
    global_batch: int = 1024
    max_gpus: int = 2048
    max_days: float = 30.0
    max_gpu_hours: float = 1.0e6
    systems: tuple = OFFERED_SYSTEMS

    def __post_init__(self):
        validate.choice("model", self.model, parallel.model_ids())
        validate.positive("tokens", self.tokens)
        validate.integer("global_batch", self.global_batch, low=1, high=10**7)
        validate.integer("max_gpus", self.max_gpus, low=1, high=10**7)
        validate.positive("max_days", self.max_days)
        validate.positive("max_gpu_hours", self.max_gpu_hours)
        if not isinstance(self.systems, tuple) or not self.systems:
            raise ValueError(f"systems must be a non-empty tuple of catalog ids, got {self.systems!r}")
        for s in self.systems:
            validate.choice("systems item", s, hardware.system_ids())

    @property
    def seq_len(self) -> int:
        return parallel.model(self.model).seq_len

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    def meets(self, days, gpu_hours_, gpus) -> dict:
        """Which limits a plan meets: {'days': bool, 'gpu_hours': bool, 'gpus': bool, 'all': bool}."""
        days = validate.positive("days", days)
        gpu_hours_ = validate.positive("gpu_hours", gpu_hours_)
        gpus = validate.integer("gpus", gpus, low=1, high=10**7)
        out = {"days": days <= self.max_days, "gpu_hours": gpu_hours_ <= self.max_gpu_hours,
               "gpus": gpus <= self.max_gpus}
        out["all"] = all(out.values())
        return out


BRIEF = Brief()


def show_brief(brief: Brief = BRIEF):
    """The brief as a table."""
    if not isinstance(brief, Brief):
        raise ValueError(f"brief must be a planner.Brief, got {brief!r}")
    show_html(views.brief_table(brief, parallel.model(brief.model), [hardware.system(s).name for s in brief.systems]))


# ---------------------------------------------------------------- 1. memory

def _state_split(params, zero):
    """(bytes per GPU that ZeRO leaves whole, bytes it divides by dp), from parallel.model_state_bytes."""
    one = parallel.model_state_bytes(params, 1, zero)["total"]
    two = parallel.model_state_bytes(params, 2, zero)["total"]
    divided = 2 * (one - two)
    return one - divided, divided


def min_gpus_for_states(params, gpu_memory_bytes, zero=3, model_parallel=1):
    """Fewest GPUs whose memory holds the model states (weights, gradients, Adam), or None.

    params: parameter count; gpu_memory_bytes: what one GPU may use (bytes); zero: ZeRO stage 0-3;
    model_parallel: tp x pp, which divides every state first. Returns dp x model_parallel GPUs.
    Activations are not counted. None means no number of data-parallel GPUs is enough: the
    part ZeRO does not divide is too big for one GPU.
    """
    params = validate.positive("params", params)
    memory = validate.positive("gpu_memory_bytes", gpu_memory_bytes)
    zero = validate.integer("zero", zero, low=0, high=3)
    mp = validate.integer("model_parallel", model_parallel, low=1, high=10**6)
    fixed, divided = _state_split(params / mp, zero)
    if divided == 0:
        return 1 if fixed <= memory else None
    if fixed >= memory:
        return None
    d = math.ceil(divided / (memory - fixed) - 1e-9)
    return max(1, d) * mp


def states_table(params, memories_gb=(80, 141, 180)) -> list[dict]:
    """For ZeRO 0-3: bytes per GPU that stay whole, and the fewest GPUs that hold the states per memory size.

    memories_gb: GPU memory sizes in GB (SI). Each row: zero, fixed_gb, divided_gb, and
    ``min_gpus`` mapping memory GB -> GPU count or None (impossible with data parallelism alone).
    """
    params = validate.positive("params", params)
    if not isinstance(memories_gb, (list, tuple)) or not memories_gb:
        raise ValueError(f"memories_gb must be a non-empty list of GB values, got {memories_gb!r}")
    memories_gb = [validate.positive("memories_gb item", x) for x in memories_gb]
    rows = []
    for zero in range(4):
        fixed, divided = _state_split(params, zero)
        rows.append({"zero": zero, "fixed_gb": fixed / units.GB, "divided_gb": divided / units.GB,
                     "min_gpus": {m: min_gpus_for_states(params, m * units.GB, zero) for m in memories_gb}})
    return rows


def show_states_table(params, memories_gb=(80, 141, 180)):
    """The states table as HTML: what stays on every GPU, and the fewest GPUs per memory size."""
    show_html(views.states_table(states_table(params, memories_gb)))


def activation_rows(model, tps=(1, 4, 8), recomputes=("none", "selective", "full"), micro_batch=1) -> list[dict]:
    """Activation GB one GPU stores for one micro-batch through all layers (sequence parallel with TP > 1).

    From parallel.activation_bytes_per_layer x layers; pipeline stages divide it by pp but the
    first stage keeps up to pp micro-batches in flight, so this is also what a first stage holds.
    """
    m = parallel.model(model)
    if not isinstance(tps, (list, tuple)) or not tps:
        raise ValueError(f"tps must be a non-empty list of tensor-parallel sizes, got {tps!r}")
    if not isinstance(recomputes, (list, tuple)) or not recomputes:
        raise ValueError(f"recomputes must be a non-empty list of {', '.join(parallel.RECOMPUTE)}")
    rows = []
    for rc in recomputes:
        row = {"recompute": validate.choice("recomputes item", rc, parallel.RECOMPUTE)}
        for t in tps:
            per_layer = parallel.activation_bytes_per_layer(m, micro_batch, t, rc, sequence_parallel=t > 1)
            row[t] = per_layer * m.layers / units.GB
        rows.append(row)
    return rows


def show_activation_rows(model, tps=(1, 4, 8), recomputes=("none", "selective", "full"), micro_batch=1):
    """activation_rows as HTML: GB per GPU for all layers, one micro-batch."""
    show_html(views.activation_table(activation_rows(model, tps, recomputes, micro_batch), tps))


def memory_rows(model, system, gpus, global_batch, layouts) -> list[dict]:
    """Memory per GPU (GB) for a few layouts, from parallel.estimate.

    layouts: list of dicts with tp, pp and optionally zero, recompute, micro_batch, interleave.
    Each row: layout text, zero, recompute, weights/gradients/optimizer/activations/total/usable GB, fits.
    """
    if not isinstance(layouts, (list, tuple)) or not layouts:
        raise ValueError("layouts must be a non-empty list of dicts with tp and pp")
    rows = []
    for lay in layouts:
        if not isinstance(lay, dict) or "tp" not in lay or "pp" not in lay:
            raise ValueError(f"layouts items must be dicts with tp and pp, got {lay!r}")
        e = parallel.estimate(model, system, gpus=gpus, tp=lay["tp"], pp=lay["pp"], global_batch=global_batch,
                              micro_batch=lay.get("micro_batch", 1), zero=lay.get("zero", 1),
                              recompute=lay.get("recompute", "selective"), interleave=lay.get("interleave", 1),
                              sequence_parallel=lay["tp"] > 1)
        mem = {k: v / units.GB for k, v in e.memory.items()}
        rows.append({"layout": e.layout, "zero": e.zero, "recompute": e.recompute, "micro_batch": e.micro_batch,
                     **{f"{k}_gb": v for k, v in mem.items()}, "fits": e.fits})
    return rows


def show_memory_rows(rows):
    """Memory rows as an HTML table (GB per GPU)."""
    show_html(views.memory_table(rows))


# ---------------------------------------------------------------- 2. systems

def system_rows(system_ids=ALL_SYSTEMS) -> list[dict]:
    """The candidate systems: GPU memory and peak, NVLink domain, GPU link and network per GPU.

    Bandwidths in GB/s per direction (``gpu_link_gb_s_bidirectional`` is the vendor's total);
    ``ratio`` is GPU link / network per GPU; ``source`` is the catalog citation's URL.
    """
    if not isinstance(system_ids, (list, tuple)) or not system_ids:
        raise ValueError("system_ids must be a non-empty list of catalog ids")
    rows = []
    for sid in system_ids:
        s = hardware.resolve_system(sid)
        net = s.nic_bandwidth_per_gpu
        rows.append({"id": s.id, "name": s.name, "gpu": s.gpu.name, "memory_gb": s.gpu.memory_bytes / units.GB,
                     "bf16_tflops": s.gpu.bf16_flops / 1e12, "domain": s.gpus_per_node,
                     "gpu_link": s.gpu_link.name, "gpu_link_gb_s": s.gpu_link.per_direction / units.GB,
                     "gpu_link_gb_s_bidirectional": s.gpu_link.bidirectional / units.GB,
                     "nic": f"{s.nics_per_node} x {s.nic.name} ({s.nic.detail})",
                     "net_gb_s_per_gpu": net / units.GB, "ratio": s.gpu_link.per_direction / net,
                     "source": datafiles.source(s.source)["url"]})
    return rows


def show_system_rows(system_ids=ALL_SYSTEMS):
    """The candidate systems as an HTML table, per direction first."""
    show_html(views.system_table(system_rows(system_ids)))


def draw_systems(axes=None):
    """Topology of the offered DGX H200 nodes (rail-optimised fat tree, 2 nodes) and of a GB200 NVL72 domain."""
    import matplotlib.pyplot as plt
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1.7, 1]})
    if len(axes) != 2:
        raise ValueError("axes must be two matplotlib Axes")
    return views.draw_systems(axes, topology.rail_fat_tree("dgx-h200", 2), hardware.system("dgx-h200"),
                              topology.nvswitch_system("gb200-nvl72"), hardware.system("gb200-nvl72"))


# ---------------------------------------------------------------- 3-4. planning, time and GPU-hours

def plan_run(model, system, gpus, global_batch, *, nic_gbit_s=None, gpu_link_gb_s=None, fast=False) -> parallel.Plan:
    """parallel.plan for ``gpus`` GPUs of ``system``, optionally with another NIC rate (Gb/s, bits, per
    direction, as vendors quote it) or GPU-link rate (GB/s, bytes, per direction): ``System.variant``.

    fast=True searches the explorer's reduced space (FAST_SEARCH), otherwise parallel.plan's defaults.
    """
    if not isinstance(fast, bool):
        raise ValueError(f"fast must be True or False, got {fast!r}")
    sys_ = hardware.resolve_system(system).variant(nic_gbit_s=nic_gbit_s, gpu_link_gb_s=gpu_link_gb_s)
    gpus = validate.integer("gpus", gpus, low=1, high=10**6)
    return parallel.plan(model, sys_, gpus=gpus, global_batch=global_batch, **(FAST_SEARCH if fast else {}))


def required_tokens_per_s(tokens, days) -> float:
    """Tokens per second the whole cluster must sustain to train ``tokens`` in ``days``."""
    tokens = validate.positive("tokens", tokens)
    days = validate.positive("days", days)
    return tokens / (days * SECONDS_PER_DAY)


def time_to_train_s(tokens, tokens_per_s) -> float:
    """Seconds to train ``tokens`` at ``tokens_per_s`` (whole cluster)."""
    return validate.positive("tokens", tokens) / validate.positive("tokens_per_s", tokens_per_s)


def gpu_hours(tokens, tokens_per_s_per_gpu) -> float:
    """GPU-hours to train ``tokens`` at ``tokens_per_s_per_gpu``: independent of the GPU count."""
    return validate.positive("tokens", tokens) / validate.positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu) \
        / SECONDS_PER_HOUR


def run_numbers(estimate, tokens) -> dict:
    """From one parallel.Estimate: cluster tokens/s, days and GPU-hours for ``tokens``."""
    if not isinstance(estimate, parallel.Estimate):
        raise ValueError(f"estimate must be a parallel.Estimate (plan.best), got {type(estimate).__name__}")
    tps = estimate.tokens_per_s_per_gpu * estimate.gpus
    return {"tokens_per_s": tps, "days": time_to_train_s(tokens, tps) / SECONDS_PER_DAY,
            "gpu_hours": gpu_hours(tokens, estimate.tokens_per_s_per_gpu), "gpus": estimate.gpus}


def _row(plan_, sid, gpus, brief):
    if not plan_.ranked:
        meets = {"days": False, "gpu_hours": False, "gpus": gpus <= brief.max_gpus, "all": False}
        return {"system": sid, "gpus": gpus, "fits": False, "layout": "nothing fits", "days": math.inf,
                "gpu_hours": math.inf, "meets": meets}
    b = plan_.best
    nums = run_numbers(b, brief.tokens)
    return {"system": sid, "gpus": gpus, "fits": True, "layout": b.layout, "micro_batch": b.micro_batch,
            "zero": b.zero, "recompute": b.recompute, "tokens_per_s_per_gpu": b.tokens_per_s_per_gpu, "mfu": b.mfu,
            "memory_gb": b.memory["total"] / units.GB, "bubble": b.bubble_fraction, **nums,
            "meets": brief.meets(nums["days"], nums["gpu_hours"], gpus), "estimate": b}


def compare_systems(brief: Brief = BRIEF, gpus=1024, systems=None, fast=False) -> list[dict]:
    """The planner's best layout on ``gpus`` GPUs of each system: layout, tokens/s per GPU, days, GPU-hours, meets."""
    if not isinstance(brief, Brief):
        raise ValueError(f"brief must be a planner.Brief, got {brief!r}")
    systems = brief.systems if systems is None else systems
    if not isinstance(systems, (list, tuple)) or not systems:
        raise ValueError("systems must be a non-empty list of catalog ids")
    return [_row(plan_run(brief.model, sid, gpus, brief.global_batch, fast=fast), sid, gpus, brief)
            for sid in systems]


def lowest_gpu_hours(rows) -> str:
    """The system id with the fewest GPU-hours among compare_systems rows."""
    if not rows:
        raise ValueError("rows must be a non-empty list from compare_systems")
    return min(rows, key=lambda r: r["gpu_hours"])["system"]



def show_comparison(rows, brief: Brief = BRIEF):
    """compare_systems rows as an HTML table with the brief's limits ticked."""
    show_html(views.comparison_table(rows, brief.max_days, brief.max_gpu_hours))


def traffic_rows(estimate) -> list[dict]:
    """What each parallel group sends per step, on which link, and how much of it shows (seconds)."""
    if not isinstance(estimate, parallel.Estimate):
        raise ValueError(f"estimate must be a parallel.Estimate, got {type(estimate).__name__}")
    return [t.as_row() for t in estimate.traffic]


def show_traffic(estimate):
    """traffic_rows as HTML, with the step time for scale."""
    show_html(views.traffic_table(estimate, traffic_rows(estimate)))


def link_sensitivity(brief: Brief = BRIEF, system="dgx-h200", gpus=1024, nic_gbit_s=(), gpu_link_gb_s=(),
                     fast=False) -> list[dict]:
    """compare_systems-style rows for one system as its NIC rate (Gb/s, bits, per direction) or GPU-link
    rate (GB/s, bytes, per direction) changes.

    The first row is the catalog system; then one row per nic_gbit_s value, then per gpu_link_gb_s value.
    """
    if not isinstance(brief, Brief):
        raise ValueError(f"brief must be a planner.Brief, got {brief!r}")
    for name, seq in (("nic_gbit_s", nic_gbit_s), ("gpu_link_gb_s", gpu_link_gb_s)):
        if not isinstance(seq, (list, tuple)):
            raise ValueError(f"{name} must be a list of rates, got {seq!r}")
    base = hardware.resolve_system(system)
    cases = [("catalog", {})] + [(f"NIC {x:g} Gb/s per direction", {"nic_gbit_s": x}) for x in nic_gbit_s] + \
            [(f"GPU link {x:g} GB/s per direction", {"gpu_link_gb_s": x}) for x in gpu_link_gb_s]
    rows = []
    for label, kw in cases:
        r = _row(plan_run(brief.model, base, gpus, brief.global_batch, fast=fast, **kw), base.id, gpus, brief)
        r["case"] = label
        rows.append(r)
    return rows


def show_link_sensitivity(rows):
    """link_sensitivity rows as HTML."""
    show_html(views.sensitivity_table(rows))


def gpu_sweep(brief: Brief = BRIEF, systems=("dgx-a100", "dgx-h100", "dgx-h200"), counts=SWEEP_GPUS,
              fast=True) -> list[dict]:
    """compare_systems rows for every system x GPU count (the explorer's reduced search by default)."""
    if not isinstance(counts, (list, tuple)) or not counts:
        raise ValueError("counts must be a non-empty list of GPU counts")
    rows = []
    for n in counts:
        n = validate.integer("counts item", n, low=1, high=10**6)
        rows += compare_systems(brief, gpus=n, systems=systems, fast=fast)
    return rows


def plot_gpu_sweep(rows, brief: Brief = BRIEF, axes=None):
    """Days and GPU-hours against GPU count, one line per system; the brief's limits dotted."""
    import matplotlib.pyplot as plt
    if not rows:
        raise ValueError("rows must be a non-empty list from gpu_sweep")
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.6))  # one above the other, at notebook width
        views.draw_gpu_sweep(axes, rows, brief, parallel.model(brief.model).name)
        fig.tight_layout()
        return axes
    return views.draw_gpu_sweep(axes, rows, brief, parallel.model(brief.model).name)


# ---------------------------------------------------------------- 5. published runs

@lru_cache(maxsize=1)
def published_runs() -> dict:
    """The parsed ``data/published_runs.json``: sources, runs, facts."""
    return datafiles.load("published_runs.json")


def predict_run(run_id) -> dict:
    """The course's prediction for one published run: tokens/s per GPU, days, GPU-hours, layout.

    A run that states tp and pp is estimated in that layout; otherwise the planner's best
    layout (parallel.plan defaults) on the run's system, GPU count and batch.
    """
    runs = {r["id"]: r for r in published_runs()["runs"]}
    run = runs[validate.choice("run_id", run_id, runs)]
    if "tp" in run:
        e = parallel.estimate(run["model"], run["system"], gpus=run["gpus"], tp=run["tp"], pp=run["pp"],
                              global_batch=run["global_batch"], micro_batch=run.get("micro_batch", 1),
                              recompute=run.get("recompute", "full"), zero=0)
    else:
        e = parallel.plan(run["model"], run["system"], gpus=run["gpus"], global_batch=run["global_batch"]).best
    return {"layout": e.layout, "micro_batch": e.micro_batch, "recompute": e.recompute,
            "tokens_per_s_per_gpu": e.tokens_per_s_per_gpu, "mfu": e.mfu, **run_numbers(e, run["tokens"])}


def published_comparison() -> list[dict]:
    """Every published run next to its prediction: quantity, published, predicted, predicted/published."""
    data = published_runs()
    rows = []
    for run in data["runs"]:
        pred = predict_run(run["id"])
        quantity = "gpu_hours" if "gpu_hours" in run["published"] else "days"
        published = float(run["published"][quantity])
        c = evidence.compare(run["id"], pred[quantity], evidence.measurement(published, quantity, run["source"]))
        rows.append({"id": run["id"], "label": run["label"], "system": run["system"], "gpus": run["gpus"],
                     "quantity": quantity, "published": published, "predicted": pred[quantity],
                     "ratio": c.ratio, "layout": pred["layout"], "mfu": pred["mfu"],
                     "assumed": run["assumed"], "note": run["note"], "where": run["where"], "url": c.measured.url})
    return rows


def show_published_comparison(rows=None):
    """published_comparison as HTML."""
    show_html(views.published_table(published_comparison() if rows is None else rows))


def plot_published_comparison(rows=None, ax=None):
    """Predicted / published for each run, with the +-20% band."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.4))
    return views.draw_published_comparison(ax, published_comparison() if rows is None else rows)


def validation_ranges() -> list[dict]:
    """parallel.validation_table summarised by group: cases, lowest and highest predicted/measured."""
    groups = {}
    for row in parallel.validation_table():
        groups.setdefault(row["group"], []).append(row)
    return [{"group": g, "cases": len(rows), "quantity": rows[0]["quantity"], "low": min(r["ratio"] for r in rows),
             "high": max(r["ratio"] for r in rows), "source": rows[0]["source"]} for g, rows in groups.items()]


def show_validation_ranges():
    """validation_ranges as HTML."""
    show_html(views.validation_ranges_table(validation_ranges()))


# ---------------------------------------------------------------- the explorer

def _explorer_plan(model, system, gpus, global_batch, nic_gb_s, nvlink_gb_s):
    return plan_run(model, system, gpus, global_batch, nic_gbit_s=units.bytes_to_bits(nic_gb_s),
                    gpu_link_gb_s=nvlink_gb_s, fast=True)


_CACHE: dict = {}


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


def _title(model, system, gpus, nic_gb_s, nvlink_gb_s, global_batch, tokens_t) -> str:
    p = _cached_plan(model, system, gpus, global_batch, nic_gb_s, nvlink_gb_s)
    title = f"{parallel.model(model).name} on {gpus:,} GPUs of {system}, batch {global_batch}"
    if p.ranked:
        n = run_numbers(p.best, tokens_t * 1e12)
        title += f": {n['days']:.1f} days, {n['gpu_hours'] / 1e6:.2f} M GPU-hours for {tokens_t:.3g}T tokens"
    return title


def _draw(ax, **values):
    view = views.BreakdownView(ax)

    def update(model, system, gpus, nic_gb_s, nvlink_gb_s, global_batch, tokens_t):
        view.update(_cached_plan(model, system, gpus, global_batch, nic_gb_s, nvlink_gb_s).ranked,
                    _title(model, system, gpus, nic_gb_s, nvlink_gb_s, global_batch, tokens_t))
    update(**values)
    return update


def _readout(model, system, gpus, nic_gb_s, nvlink_gb_s, global_batch, tokens_t):
    p = _cached_plan(model, system, gpus, global_batch, nic_gb_s, nvlink_gb_s)
    sys_ = hardware.resolve_system(system).variant(nic_gbit_s=units.bytes_to_bits(nic_gb_s), gpu_link_gb_s=nvlink_gb_s)
    links = (f"Links: GPU {nvlink_gb_s:.3g} GB/s per direction, network "
             f"{sys_.nic_bandwidth_per_gpu / units.GB:.3g} GB/s per direction per GPU "
             f"({sys_.nics_per_node} NICs of {nic_gb_s:.3g} GB/s per {sys_.gpus_per_node}-GPU node)")
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
            f"MFU {b.mfu:.0%}, bubble {b.bubble_fraction:.1%}; {costmodel.step_phrase(b, sys_)}. "
            f"{tokens_t:.3g}T tokens: <b>{n['days']:.1f} days</b> "
            f"{views.mark(ok['days'])} (brief: {brief.max_days:g}), <b>{n['gpu_hours'] / 1e6:.2f} M GPU-hours</b> "
            f"{views.mark(ok['gpu_hours'])} (brief: {brief.max_gpu_hours / 1e6:g} M), {gpus:,} GPUs {views.mark(ok['gpus'])} "
            f"on {nodes} node(s){partial}. {links}. Reduced search (micro-batch 1-2, ZeRO-1, interleave 1-2, TP up "
            f"to 16): parallel.plan's full search can find a few % more.")


def planner_explorer(model="llama2-70b", system="dgx-h200", gpus=1024, global_batch=1024, tokens_t=2.0,
                     nic_gb_s=None, nvlink_gb_s=None):
    """The full planner: model, system, GPU count, NIC and GPU-link speed (GB/s per direction), batch, tokens.

    nic_gb_s / nvlink_gb_s default to the system's catalog values and follow the system
    dropdown; tokens_t is trillions of tokens. Each redraw runs one reduced planner search.

    Shows: the planner's best layout and its training time follow the cluster: more GPUs shorten the
    days to train.
    """
    import ipywidgets as w
    model = validate.choice("model", model, EXPLORER_MODELS)
    system = validate.choice("system", system, ALL_SYSTEMS)
    if gpus not in EXPLORER_GPUS:
        raise ValueError(f"gpus must be one of {EXPLORER_GPUS}, got {gpus!r}")
    if global_batch not in EXPLORER_BATCHES:
        raise ValueError(f"global_batch must be one of {EXPLORER_BATCHES}, got {global_batch!r}")
    tokens_t = validate.number("tokens_t", tokens_t, low=0.1, high=20)
    sys_ = hardware.system(system)
    nic = (sys_.nic.per_direction / units.GB if nic_gb_s is None
           else validate.number("nic_gb_s", nic_gb_s, low=1, high=400))
    nvl = (sys_.gpu_link.per_direction / units.GB if nvlink_gb_s is None
           else validate.number("nvlink_gb_s", nvlink_gb_s, low=5, high=2000))
    controls = {
        "model": w.Dropdown(options=list(EXPLORER_MODELS), value=model, description="model"),
        "system": w.Dropdown(options=list(ALL_SYSTEMS), value=system, description="system"),
        "gpus": gpu_count_slider(gpus, options=EXPLORER_GPUS, description="GPUs"),
        "nic_gb_s": link_speed_slider(nic, low=1, high=400, description="NIC port GB/s per direction"),
        "nvlink_gb_s": link_speed_slider(nvl, low=5, high=2000,
                                         description="GPU link (NVLink/PCIe) GB/s per direction"),
        "global_batch": gpu_count_slider(global_batch, options=EXPLORER_BATCHES,
                                         description="global batch (sequences)"),
        "tokens_t": w.FloatLogSlider(value=tokens_t, base=10, min=-1, max=math.log10(20), step=0.01,
                                     description="tokens (trillions)", readout_format=".3g"),
    }

    def follow_system(system_id):  # a new system brings its own catalog link speeds (one redraw)
        s = hardware.system(system_id)
        return {"nic_gb_s": s.nic.per_direction / units.GB, "nvlink_gb_s": s.gpu_link.per_direction / units.GB}

    return explorer(_draw, controls, readout=_readout, title="Capstone planner: layouts, days and GPU-hours",
                    figsize=(8.5, 4.4), follow={"system": follow_system})
