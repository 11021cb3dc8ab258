"""Chapter 10 (mixture of experts) and chapter 07's context-parallel section: the numbers behind the explorers.

Everything comes from :mod:`course_lib.parallel` (``estimate``, ``all_to_all_time``,
``ring_attention_condition``); this module arranges it per MoE layer or per ring step and draws it.

* expert parallelism: for one MoE layer and micro-batch, the dispatch all-to-all (bytes, link,
  time) beside the routed experts' compute, over the EP degree, the experts, top-k and imbalance;
* context parallelism: one ring-attention step's K/V transfer beside its attention compute, over
  the sequence length and the CP degree, and the activation memory per GPU.

Units: bytes, seconds, FLOP/s; bandwidths in bytes/s **per direction**.
"""
from __future__ import annotations

import dataclasses

from .. import hardware, parallel, style, units, validate
from ..views import moe as views
from ..widgets import explorer

EP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
EXPERT_COUNTS = (8, 16, 32, 64, 128, 256)
TOP_K = (1, 2, 4, 8)
IMBALANCE = (1.0, 1.1, 1.25, 1.5, 2.0)
SEQ_LENS = (8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576)
CP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
CP_MODELS = ("llama3-8b", "llama3-70b", "llama3-405b")


# ---------------------------------------------------------------- expert parallelism

def moe_variant(base="deepseek-v3", experts=None, top_k=None) -> parallel.Transformer:
    """A catalog MoE with another expert count or top-k (what-if); the catalog's when both are None."""
    m = parallel.resolve_model(base, name="base")
    if not m.experts:
        raise ValueError(f"base must be an MoE model (mixtral-8x7b, deepseek-v3, llama4-scout), got {base!r}")
    changes = {}
    if experts is not None:
        changes["experts"] = validate.integer("experts", experts, low=1, high=4096)
    if top_k is not None:
        changes["top_k"] = validate.integer("top_k", top_k, low=1, high=changes.get("experts", m.experts))
    return dataclasses.replace(m, **changes) if changes else m


def ep_layer_costs(model_="deepseek-v3", system="dgx-h100", ep=8, tp=1, micro_batch=1, imbalance=1.0,
                   gpu_efficiency=None) -> dict:
    """One MoE layer, one micro-batch, forward: the dispatch all-to-all and the routed experts' compute.

    bytes = s b / tp tokens x top_k x h x 2 bytes x imbalance (one rank's send buffer);
    compute = 2 x top_k x expert weights x tokens x imbalance / (peak x efficiency). The combine
    moves the same bytes back; the backward pass repeats both. Returns seconds, bytes, the link
    and the share of the buffer that leaves the node. The all-to-all (bytes, link, time) is the planner's,
    ``parallel.ep_phase``; ``ep`` must divide the experts.
    """
    m = parallel.resolve_model(model_)
    sys_ = hardware.resolve_system(system)
    ep = validate.integer("ep", ep, low=1, high=max(1, m.experts))
    if m.experts % ep:  # each rank holds the same number of experts (as the planner's layouts require)
        raise ValueError(f"ep must divide the experts ({m.experts}), got {ep}")
    imbalance = validate.number("imbalance", imbalance, low=1.0, high=float(max(1, m.experts)))
    eff = parallel.assumption("gpu_efficiency") if gpu_efficiency is None else \
        validate.fraction("gpu_efficiency", gpu_efficiency)
    # EP1 sends nothing; its buffer is any EP degree's (the smallest that divides the experts)
    probe = ep if ep > 1 else next((d for d in range(2, m.experts + 1) if m.experts % d == 0), None)
    if probe is None:
        raise ValueError(f"model must have at least 2 experts for expert parallelism, got {m.experts}")
    dispatch = _dispatch(m, sys_, probe, tp, micro_batch, imbalance)
    nbytes = dispatch.bytes_per_call  # one rank's send buffer: the same at every EP degree
    if ep == 1:  # no expert parallelism: nothing leaves the GPU
        a2a_s, link_name, crosses = 0.0, sys_.gpu_link.name, False
    else:
        a2a_s, link_name, crosses = dispatch.time_s / dispatch.calls_per_step, dispatch.link, dispatch.crosses_nodes
    tokens = m.seq_len * micro_batch / tp
    flops = 2 * m.top_k * m.expert_params / tp * tokens * imbalance
    compute_s = flops / (sys_.gpu.bf16_flops * eff)
    g = sys_.gpus_per_node
    k = max(1, min(ep, g // tp)) if tp < g else 1
    off_node = (ep - k) / ep if crosses else 0.0
    per_param = sum(parallel.BYTES_PER_PARAM_ADAM.values())  # 16: weights, gradients and Adam's state
    expert_bytes = per_param * m.routed_layer_params * m.layers / m.moe_layers / (ep * tp) if m.moe_layers else 0.0
    return {"ep": ep, "bytes": nbytes, "a2a_s": a2a_s, "compute_s": compute_s, "link": link_name,
            "crosses_nodes": crosses, "off_node_share": off_node,
            "expert_state_bytes_per_layer": expert_bytes}


def _dispatch(m, sys_, ep, tp, micro_batch, imbalance) -> parallel.Traffic:
    """``parallel.ep_phase``'s all-to-all on ep x tp GPUs running one micro-batch without recomputation: the
    planner's own bytes per call, link and time (4 calls per MoE layer, so time_s / calls is one call)."""
    L = parallel.layout(m, sys_, gpus=ep * tp, tp=tp, ep=ep, global_batch=micro_batch * ep, micro_batch=micro_batch,
                        recompute="none", moe_imbalance=imbalance)
    (traffic,) = parallel.ep_phase(L, parallel.compute_phase(L), [])
    return traffic


def ep_scan(model_="deepseek-v3", system="dgx-h100", degrees=EP_DEGREES, **kw) -> list[dict]:
    """``ep_layer_costs`` for every EP degree that divides the experts."""
    m = parallel.resolve_model(model_)
    return [ep_layer_costs(m, system, ep=e, **kw) for e in degrees if e <= m.experts and m.experts % e == 0]


@dataclasses.dataclass(frozen=True)
class BarPairs:
    """One explorer frame: per degree (``labels``), communication (left bar, its colour) against compute
    (right bar), in the plot's unit; ``chosen``: index of the chosen degree (None: not among them)."""
    labels: tuple
    comm: tuple
    comm_colours: tuple
    compute: tuple
    chosen: int | None
    title: str


def ep_title(experts, top_k, imbalance, base="deepseek-v3", system="dgx-h100") -> str:
    """The EP explorer's title: the base model's shapes with the learner's experts and top-k, saying
    where they differ from the catalog's (so a changed model never reads as the catalog one)."""
    catalog = moe_variant(base)
    m = moe_variant(base, experts, top_k)
    pairs = (("experts", m.experts, catalog.experts), ("top-k", m.top_k, catalog.top_k))
    if all(mine == theirs for _, mine, theirs in pairs):
        shape = f"{catalog.name}: {m.experts} experts, top-{m.top_k}"
    else:
        shape = f"{catalog.name}'s shapes with " + ", ".join(
            f"{what} {mine}" + (f" (catalog {theirs})" if mine != theirs else "") for what, mine, theirs in pairs)
    return f"{shape}, imbalance {imbalance:g}, on {system}"


def ep_frame(experts, top_k, ep, imbalance, base="deepseek-v3", system="dgx-h100") -> BarPairs:
    """The EP explorer's time frame: ms per MoE layer and micro-batch (forward) per EP degree."""
    m = moe_variant(base, experts, top_k)
    rows = ep_scan(m, system, imbalance=imbalance)
    return BarPairs(labels=tuple(f"EP {r['ep']}" + ("\n(nodes)" if r["crosses_nodes"] else "") for r in rows),
                    comm=tuple(r["a2a_s"] * 1e3 for r in rows),
                    comm_colours=tuple(style.colour("reach", "across" if r["crosses_nodes"] else "inside")
                                       for r in rows),
                    compute=tuple(r["compute_s"] * 1e3 for r in rows),
                    chosen=next((i for i, r in enumerate(rows) if r["ep"] == ep), None),
                    title=ep_title(experts, top_k, imbalance, base, system) +
                    "\ngreen: inside the NVLink domain, orange: across nodes (NIC share)")


def ep_memory(experts, top_k, ep, imbalance, base="deepseek-v3", system="dgx-h100") -> dict:
    """The EP explorer's memory frame: routed-expert states (weights, gradients, Adam) per GPU and MoE
    layer in GB, per EP degree (``labels``, ``gb``) and the chosen one's index (None: not among them)."""
    m = moe_variant(base, experts, top_k)
    rows = ep_scan(m, system, imbalance=imbalance)
    # one scale for every expert count, so more experts show as taller bars
    fewest, most = moe_variant(base, min(EXPERT_COUNTS), top_k), moe_variant(base, max(EXPERT_COUNTS), top_k)
    low = ep_layer_costs(fewest, system, ep=fewest.experts)["expert_state_bytes_per_layer"] / units.GB
    high = ep_layer_costs(most, system, ep=1)["expert_state_bytes_per_layer"] / units.GB
    return {"labels": tuple(f"EP {r['ep']}" for r in rows), "ylim": (low / 2, high * 2),
            "gb": tuple(r["expert_state_bytes_per_layer"] / units.GB for r in rows),
            "chosen": next((i for i, r in enumerate(rows) if r["ep"] == ep), None),
            "title": f"{m.experts} experts / EP = experts per GPU: routed-expert states per GPU, one MoE layer"}


def _ep_draw(axes, experts, top_k, ep, imbalance, base="deepseek-v3", system="dgx-h100"):
    time_ax, memory_ax = axes
    update_time = views.draw_pairs(time_ax, ep_frame(experts, top_k, ep, imbalance, base, system), "dispatch all-to-all",
                              "routed experts' compute", "ms per MoE layer and micro-batch (forward)")
    update_memory = views.draw_memory(memory_ax, ep_memory(experts, top_k, ep, imbalance, base, system))

    def update(**v):
        update_time(ep_frame(base=base, system=system, **v))
        update_memory(ep_memory(base=base, system=system, **v))
    return update


def _ep_readout(experts, top_k, ep, imbalance, base="deepseek-v3", system="dgx-h100"):
    m = moe_variant(base, experts, top_k)
    if ep > m.experts or m.experts % ep:
        return f"EP {ep} does not divide {m.experts} experts."
    r = ep_layer_costs(m, system, ep=ep, imbalance=imbalance)
    text = (f"EP {ep}: each GPU holds {m.experts // ep} of {m.experts} experts, "
            f"<b>{units.format_bytes(r['expert_state_bytes_per_layer'])}</b> of routed-expert states per MoE layer; "
            f"each rank sends {units.format_bytes(r['bytes'])} per dispatch (top-{m.top_k} copies of its tokens) over "
            f"{r['link']} ({100 * r['off_node_share']:.0f}% leaves the node): <b>{units.format_time(r['a2a_s'])}</b> "
            f"against {units.format_time(r['compute_s'])} of expert compute.")
    wider = 2 * ep
    if wider <= m.experts and m.experts % wider == 0 and wider in EP_DEGREES:
        w = ep_layer_costs(m, system, ep=wider, imbalance=imbalance)
        text += (f" Spread over EP {wider}: {units.format_bytes(w['expert_state_bytes_per_layer'])} per GPU, but the "
                 f"all-to-all takes {units.format_time(w['a2a_s'])} over {w['link']}.")
    else:
        text += f" EP {ep} is the widest: {m.experts} experts leave no wider spread."
    return text


def expert_parallel_explorer(experts=256, top_k=8, ep=8, imbalance=1.0, base="deepseek-v3", system="dgx-h100"):
    """Sliders over experts, top-k, EP degree and imbalance: the all-to-all against the experts' compute
    (top), and the routed experts' memory per GPU (bottom), per EP degree.

    Shows: top-k (and imbalance) set the all-to-all bytes and the expert compute, the number of experts
    sets the memory (experts / EP per GPU), and holding more experts per GPU's memory takes a larger EP
    degree, whose all-to-all leaves the node and is several times slower.
    """
    import ipywidgets as w
    controls = {
        "experts": w.SelectionSlider(options=EXPERT_COUNTS, value=experts, description="experts"),
        "top_k": w.SelectionSlider(options=TOP_K, value=top_k, description="top-k"),
        "ep": w.SelectionSlider(options=EP_DEGREES, value=ep, description="EP degree"),
        "imbalance": w.SelectionSlider(options=IMBALANCE, value=imbalance, description="imbalance (busiest/mean)"),
    }
    draw = lambda axes, **v: _ep_draw(axes, base=base, system=system, **v)  # noqa: E731  (returns the updater)
    readout = lambda **v: _ep_readout(base=base, system=system, **v)  # noqa: E731
    return explorer(draw, controls, readout=readout, title="Expert parallelism: all-to-all, compute and memory",
                    axes=(2, 1), figsize=(7.5, 6.6))


# ---------------------------------------------------------------- context parallelism

def cp_scan(model_="llama3-8b", system="dgx-h100", seq_len=131072, degrees=CP_DEGREES, tp=1) -> list[dict]:
    """Ring attention per CP degree: ``parallel.ring_attention_condition`` plus activation memory per GPU."""
    m = dataclasses.replace(parallel.resolve_model(model_),
                            seq_len=validate.integer("seq_len", seq_len, low=1, high=100_000_000))
    rows = []
    for c in degrees:
        if m.seq_len % c:
            continue
        cond = parallel.ring_attention_condition(m, system, c, tp=tp)
        acts = parallel.activation_bytes_per_layer(m, 1, tp, "selective") * m.layers / c
        rows.append(dict(cond, cp=c, activation_bytes=acts))
    return rows


def cp_frame(model_id, seq_len, cp, system="dgx-h100") -> BarPairs:
    """The CP explorer's frame: us per ring step and layer (forward) per CP degree."""
    rows = cp_scan(model_id, system, seq_len)
    return BarPairs(labels=tuple(f"CP {r['cp']}" for r in rows), comm=tuple(r["transfer_step_s"] * 1e6 for r in rows),
                    comm_colours=tuple(style.colour("reach", "inside" if "NVLink" in r["link"] else "across")
                                       for r in rows),
                    compute=tuple(r["compute_step_s"] * 1e6 for r in rows),
                    chosen=next((i for i, r in enumerate(rows) if r["cp"] == cp), None),
                    title=f"{model_id}, {seq_len:,} tokens on {system}: hidden while blue >= green/orange")


def _cp_draw(ax, model_id, seq_len, cp, system="dgx-h100"):
    update = views.draw_pairs(ax, cp_frame(model_id, seq_len, cp, system), "K/V transfer per step",
                         "attention compute per step", "us per ring step, one layer (forward)", log=True)
    return lambda **v: update(cp_frame(system=system, **v))


def _cp_readout(model_id, seq_len, cp, system="dgx-h100"):
    rows = {r["cp"]: r for r in cp_scan(model_id, system, seq_len)}
    if cp not in rows:
        return f"CP {cp} does not divide {seq_len} tokens."
    r = rows[cp]
    return (f"CP {cp}: chunks of {r['chunk_tokens']:,.0f} tokens, threshold {r['threshold_tokens']:,.0f} over "
            f"{r['link']} -> K/V passing {'hidden' if r['hidden'] else 'EXPOSED'}; activations "
            f"{units.format_bytes(r['activation_bytes'])} per GPU (selective recomputation, micro-batch 1).")


def context_parallel_explorer(model_id="llama3-8b", seq_len=131072, cp=8, system="dgx-h100"):
    """Sliders over the model, sequence length and CP degree: ring attention's transfer vs compute.

    Shows: ring attention hides its K/V transfer only while each GPU's chunk of the sequence is long
    enough: more CP ranks on a short sequence expose it, a longer sequence hides it again.
    """
    import ipywidgets as w
    controls = {
        "model_id": w.Dropdown(options=CP_MODELS, value=model_id, description="model"),
        "seq_len": w.SelectionSlider(options=SEQ_LENS, value=seq_len, description="sequence length"),
        "cp": w.SelectionSlider(options=CP_DEGREES, value=cp, description="CP degree"),
    }
    draw = lambda ax, **v: _cp_draw(ax, system=system, **v)  # noqa: E731
    readout = lambda **v: _cp_readout(system=system, **v)  # noqa: E731
    return explorer(draw, controls, readout=readout, title="Context parallelism: ring attention")
