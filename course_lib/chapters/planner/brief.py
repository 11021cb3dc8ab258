"""Chapter 08, the brief: what is asked, how much memory the model's states and activations take, the systems offered.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ... import datafiles, hardware, parallel, topology, units, validate
from ...views import planner as views
from ...widgets import show_html


SECONDS_PER_DAY = 86400.0
SECONDS_PER_HOUR = 3600.0
OFFERED_SYSTEMS = ("pcie-8gpu", "dgx-a100", "dgx-h100", "dgx-h200")   # what the brief's provider rents out
ROADMAP_SYSTEMS = ("dgx-b200", "gb200-nvl72")                         # in the catalog, not offered by the brief
ALL_SYSTEMS = OFFERED_SYSTEMS + ROADMAP_SYSTEMS
BREAKDOWN_COLOURS = views.BREAKDOWN_COLOURS   # the same colours as chapter 07's step-time split


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


_CACHE: dict = {}
