"""The planner: search layouts, keep those that fit, rank them by step time and say why the winner wins."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from .. import hardware, units, validate
from ..transformer import RECOMPUTE, Transformer, resolve_recompute
from .layouts import CP_KINDS, _check_precision, stage_layer_counts, _gpu_count, _model_with_seq_len, _ulysses_cps, _ulysses_fits, layout
from .results import Estimate
from .step import estimate_layout


AUTO_RECOMPUTE = ("none", "selective", "full")   # least recomputation first


def estimate_choosing(model_: str | Transformer, system: str | hardware.System, nodes: int | None = None, *, global_batch: int, zero: int | None = None, recompute: str | bool | None = None, **kwargs: object) -> Estimate:
    """``estimate`` with ``zero`` and ``recompute`` chosen where they are None, as a user expects of a tool (the
    ``plan`` CLI's defaults); given values are kept.

    Tried: recompute none, selective, full; with more than one data-parallel replica ZeRO-1 (the distributed
    optimizer current recipes run), else ZeRO-0; only if none of those fits, ZeRO-2 and ZeRO-3 too (under PP as
    ``Layout.state_zero`` prices them). The fastest that fits wins (ties: the least recomputation, the lower
    stage); if nothing fits, the one needing the least memory, marked as not fitting. The choice and why lead
    the estimate's notes.
    """
    model_ = _model_with_seq_len(model_)   # a bad model or system is refused by name before anything is tried
    system = hardware.resolve_system(system)
    kwargs["global_batch"] = global_batch
    recomputes = AUTO_RECOMPUTE if recompute is None else (resolve_recompute(recompute),)
    sharded = kwargs.get("fsdp") or kwargs.get("hsdp") is not None
    if zero is not None or sharded:
        zeros, more = ((3,) if sharded else (validate.integer("zero", zero, low=0, high=3),)), ()
    else:   # ZeRO-1 (the distributed optimizer) wherever there are replicas to shard over; 0 without
        zeros, more = None, (2, 3)
    tried = []
    replicas = layout(model_, system, nodes, zero=0 if zero is None else zero, recompute=recomputes[0],
                      **kwargs).replicas   # and a wrong layout is refused here, as ``estimate`` refuses it
    for group in (zeros, more):
        if group is None:
            group = (1,) if replicas > 1 else (0,)
        elif group is more and replicas == 1:
            break
        for z in group:
            for rc in recomputes:
                tried.append(estimate_layout(layout(model_, system, nodes, zero=z, recompute=rc, **kwargs)))
        if any(e.fits for e in tried):
            break
    fitting = [e for e in tried if e.fits]
    best = min(fitting, key=lambda e: e.step_time_s) if fitting else min(tried, key=lambda e: e.memory["total"])
    if zero is None and not sharded or recompute is None:
        gb = units.GB
        what = " and ".join(x for x, unset in ((f"recompute {best.recompute}", recompute is None),
                                                (f"{best.sharding}", zero is None and not sharded)) if unset)
        flags = "/".join(x for x, unset in (("--recompute", recompute is None),
                                             ("--zero", zero is None and not sharded)) if unset)
        lesser = [e for e in tried if (AUTO_RECOMPUTE.index(e.recompute), e.zero) <
                  (AUTO_RECOMPUTE.index(best.recompute), best.zero) and not e.fits]
        why = (f"the fastest of the {len(fitting)} of {len(tried)} settings tried that fit" if fitting else
               f"none of the {len(tried)} settings tried fits; this one needs the least memory")
        if lesser:
            e = min(lesser, key=lambda e: e.memory["total"])
            why += (f"; recompute {e.recompute} with {e.sharding} needs {e.memory['total'] / gb:.1f} GB of "
                    f"{e.memory['usable'] / gb:.0f} GB usable")
        best.notes.insert(0, f"chose {what} ({flags} not given): {why}; give {flags} to set it")
    return best


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


@dataclass
class Plan:
    """Ranked layouts that fit, the winner and why. ``ranked`` is best first."""

    model: str
    system: str
    gpus: int
    global_batch: int
    ranked: list
    searched: int
    rejected_memory: int
    explanation: list

    @property
    def best(self) -> Estimate:
        if not self.ranked:
            raise ValueError("no layout fits in memory; add GPUs, raise zero or recompute, or lower micro_batch")
        return self.ranked[0]

    def table(self, top: int = 10) -> list[dict]:
        """The top layouts as rows for a table or a plot."""
        top = validate.integer("top", top, low=1, high=10**6)
        return [{"rank": i + 1, "layout": e.layout, "tp": e.tp, "pp": e.pp, "dp": e.dp, "ep": e.ep, "cp": e.cp,
                 "sharding": e.sharding, "interleave": e.interleave,
                 "micro_batch": e.micro_batch, "zero": e.zero, "recompute": e.recompute,
                 "step_time_s": e.step_time_s, "tokens_per_s_per_gpu": e.tokens_per_s_per_gpu,
                 "tflops_per_gpu": e.tflops_per_gpu, "mfu": e.mfu, "memory_gb": e.memory["total"] / units.GB}
                for i, e in enumerate(self.ranked[:top])]

    def to_dict(self, top: int = 10) -> dict:
        return {"model": self.model, "system": self.system, "gpus": self.gpus, "global_batch": self.global_batch,
                "searched": self.searched, "rejected_memory": self.rejected_memory, "top": self.table(top),
                "best": self.best.to_dict() if self.ranked else None, "explanation": self.explanation}

    def summary(self, top: int = 10) -> str:
        lines = [f"Planner: {self.model} on {self.gpus} GPUs of {self.system}, batch {self.global_batch}: "
                 f"{self.searched} layouts searched, {self.rejected_memory} do not fit in memory"]
        rows = self.table(top)
        w = max([22] + [len(r["layout"]) for r in rows])
        lines.append(f"{'#':>3} {'layout':<{w}} {'mb':>3} {'ZeRO':>4} {'recompute':<9} {'step':>9} "
                     f"{'tok/s/GPU':>10} {'TFLOP/s':>8} {'MFU':>6} {'mem GB':>7}")
        for row in rows:
            lines.append(f"{row['rank']:>3} {row['layout']:<{w}} {row['micro_batch']:>3} {row['zero']:>4} "
                         f"{row['recompute']:<9} {units.format_time(row['step_time_s']):>9} "
                         f"{row['tokens_per_s_per_gpu']:>10,.0f} {row['tflops_per_gpu']:>8.0f} "
                         f"{100 * row['mfu']:>5.1f}% {row['memory_gb']:>7.1f}")
        lines.append("Why the winner wins:" if rows else "No winner:")
        lines += [f"  - {x}" for x in self.explanation]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


@dataclass(frozen=True)
class SearchSpace:
    """The planner's checked options, one tuple per dimension, in the order ``plan`` walks them."""

    tps: tuple
    cps: tuple
    pps: tuple
    micro_batches: tuple
    eps: tuple
    zero_stages: tuple
    hsdp: tuple
    recompute: tuple
    interleave: tuple
    cp_kind: str
    etps: tuple | None = None    # expert tensor-parallel sizes (None: each tp and 1)


def _search_space(m: Transformer, N: int, max_tp: int | None, *, micro_batches: Sequence[int], zero_stages: Sequence[int], recompute_options: Sequence[str], interleave_options: Sequence[int], ep_options: Sequence[int] | None,
                  cp_options: Sequence[int], cp_kind: str, hsdp_options: Sequence[int | None]) -> SearchSpace:
    """Check ``plan``'s option lists and add the TP and PP degrees that fit the model and ``N`` GPUs."""
    for name, seq in (("micro_batches", micro_batches), ("zero_stages", zero_stages),
                      ("interleave_options", interleave_options)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise ValueError(f"{name} must be a non-empty list of integers, got {seq!r}")
    zero_stages = [validate.integer("zero_stages", z, low=0, high=3) for z in zero_stages]
    micro_batches = [validate.integer("micro_batches", x, low=1, high=10**6) for x in micro_batches]
    interleave_options = [validate.integer("interleave_options", x, low=1, high=m.layers) for x in interleave_options]
    if not isinstance(recompute_options, (list, tuple)) or not recompute_options:
        raise ValueError(f"recompute_options must be a non-empty list of {', '.join(RECOMPUTE)}")
    recompute_options = [resolve_recompute(r) for r in recompute_options]
    if ep_options is None:
        ep_options = [x for x in (2 ** k for k in range(0, 21)) if m.experts and x <= m.experts and m.experts % x == 0] \
            or [1]
    for name, seq in (("ep_options", ep_options), ("cp_options", cp_options), ("hsdp_options", hsdp_options)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise ValueError(f"{name} must be a non-empty list, got {seq!r}")
    ep_options = [validate.integer("ep_options", x, low=1, high=max(1, m.experts)) for x in ep_options]
    cp_options = [validate.integer("cp_options", x, low=1, high=m.seq_len) for x in cp_options]
    cp_kind = validate.choice("cp_kind", cp_kind, CP_KINDS)
    hsdp_options = [None if x is None else validate.integer("hsdp_options", x, low=1, high=N) for x in hsdp_options]
    tps = [x for x in (2 ** k for k in range(0, 12)) if x <= max_tp and m.heads % x == 0 and N % x == 0]
    if cp_kind == "ulysses":  # a cp no searched tp splits the heads for would leave nothing to search
        allowed = sorted({c for t in tps for c in _ulysses_cps(m, t)})
        for c in cp_options:
            if c not in allowed:
                raise ValueError(f"cp_options must hold cp values Ulysses allows for {m.name} with tp in "
                                 f"{', '.join(map(str, tps))} ({', '.join(map(str, allowed))}: tp x cp divides the "
                                 f"{m.heads} heads, divides the {m.kv} KV heads or is a multiple of them, and cp "
                                 f"divides the sequence length {m.seq_len}); got {c}")
    # Megatron's splits: p divides l, or l + 1 / l + 2 with the loss (and embedding) counted as a layer;
    # an MoE also on powers of two with the course's spread (``stage_layer_counts``)
    pps = sorted(set(_divisors(m.layers)) | {x for x in range(2, m.layers + 1)
                                             if (m.layers + 1) % x == 0 or (m.layers + 2) % x == 0})
    if m.experts:
        pps = sorted(set(pps) | {x for x in (2 ** k for k in range(1, 12)) if x < m.layers})
    return SearchSpace(tps=tuple(tps), cps=tuple(cp_options), pps=tuple(pps), micro_batches=tuple(micro_batches),
                       eps=tuple(ep_options), zero_stages=tuple(zero_stages), hsdp=tuple(hsdp_options),
                       recompute=tuple(recompute_options), interleave=tuple(interleave_options), cp_kind=cp_kind)


def _interleaves(m: Transformer, p: int, v: int) -> bool:
    """Whether Megatron's split of ``m``'s layers on ``p`` stages gives every stage a multiple of ``v``."""
    try:
        stage_layer_counts(m, p, v)
    except ValueError:
        return False
    return True


def _etps(m: Transformer, tp: int, options: Sequence[int] | None) -> tuple:
    """Expert tensor-parallel sizes to try with attention TP ``tp``: ``options`` (None: tp and 1) that divide the
    expert FFN; one (tp) for a dense model."""
    if not m.experts:
        return (tp,)
    opts = (tp, 1) if options is None else options
    return tuple(dict.fromkeys(x for x in opts if m.expert_ffn % x == 0))


def _candidates(m: Transformer, N: int, B: int, space: SearchSpace) -> Iterator[dict]:
    """Every combination of ``space`` that ``layout`` accepts, as its keyword arguments, in search order."""
    for t in space.tps:
        for c in space.cps:
            if m.seq_len % c or (space.cp_kind == "ulysses" and not _ulysses_fits(m, t, c)):
                continue
            for p in space.pps:
                if N % (t * p * c):
                    continue
                d = N // (t * p * c)
                for b in space.micro_batches:
                    if B % (b * d):
                        continue
                    mb = B // (b * d)
                    for e_, et in ((e_, et) for e_ in space.eps for et in _etps(m, t, space.etps)):
                        if e_ > 1 and (m.experts % e_ or (t * d * c) % (e_ * et)) or (e_ == 1 and et != t):
                            continue
                        for z in space.zero_stages:
                            if (z >= 2 and p > 1) or (z > 0 and d * c == 1):
                                continue
                            for g in (space.hsdp if z == 3 else (None,)):
                                if g is not None and ((d * c) % g or (g * t) % (e_ * et) or g == d * c):
                                    continue
                                for rc in space.recompute:
                                    for v in space.interleave:
                                        if v > 1 and (p == 1 or mb % p or not _interleaves(m, p, v)):
                                            continue
                                        yield dict(tp=t, pp=p, micro_batch=b, zero=z, recompute=rc, interleave=v,
                                                   ep=e_, cp=c, hsdp=g, etp=et if m.experts else None)


def plan(model_: str | Transformer, system: str | hardware.System, nodes: int | None = None, *, global_batch: int, gpus: int | None = None, micro_batches: Sequence[int] = (1, 2, 4), zero_stages: Sequence[int] = (0, 1),
         recompute_options: Sequence[str] = ("selective", "full"), interleave_options: Sequence[int] = (1, 2, 4), max_tp: int | None = None, sequence_parallel: bool = True,
         gpu_efficiency: float | None = None, dp_overlap: bool = True, ep_options: Sequence[int] | None = None, cp_options: Sequence[int] = (1,), cp_kind: str = "ring", hsdp_options: Sequence[int | None] = (None,),
         moe_imbalance: float = 1.0, ep_overlap: bool = False, seq_len: int | None = None, precision: str = "bf16", fp8_dispatch: bool = False,
         etp_options: Sequence[int] | None = None) -> Plan:
    """Search TP x PP x DP (x micro-batch, ZeRO, recomputation, interleaving) and rank what fits by step time.

    TP runs over powers of two that divide the heads, up to ``max_tp`` (default: twice the GPUs
    of a node, so that layouts crossing the NVLink domain are shown losing); PP over divisors
    of the layer count (or of l + 1, l + 2: Megatron's split with the loss and embedding counted as layers).
    Returns a Plan whose ``ranked[0]`` is the winner. ZeRO-2/3 are left out
    by default: against published ZeRO-3 runs the model is 1.7-3.4x optimistic at 768-1536 GPUs
    (see ``validation_table``); pass ``zero_stages=(0, 1, 2, 3)`` to include them anyway.

    Also searched: expert parallelism over ``ep_options`` (default: every power of two dividing
    an MoE's experts; 1 for a dense model), context parallelism over ``cp_options`` (default 1)
    of ``cp_kind``, and with ZeRO-3 the FSDP/HSDP shard groups in ``hsdp_options`` (None = all
    cp x dp ranks). An MoE may use uneven pipeline stages, so PP also runs over powers of two.
    ``precision`` (bf16, fp8, mxfp8) and ``fp8_dispatch`` apply to every layout searched. An MoE also
    searches expert tensor parallelism over ``etp_options`` (default: the layout's tp, and 1: MoE parallel
    folding, EP laid over the attention's TP x DP ranks).
    """
    m = _model_with_seq_len(model_, seq_len)
    sys_ = hardware.resolve_system(system)
    N = _gpu_count(sys_, nodes, gpus)
    B = validate.integer("global_batch", global_batch, low=1, high=10**9)
    max_tp = 2 * sys_.gpus_per_node if max_tp is None else validate.integer("max_tp", max_tp, low=1, high=m.heads)
    space = _search_space(m, N, max_tp, micro_batches=micro_batches, zero_stages=zero_stages,
                          recompute_options=recompute_options, interleave_options=interleave_options,
                          ep_options=ep_options, cp_options=cp_options, cp_kind=cp_kind, hsdp_options=hsdp_options)
    _check_precision(m, sys_, precision, fp8_dispatch)
    if etp_options is not None:
        if not isinstance(etp_options, (list, tuple)) or not etp_options:
            raise ValueError(f"etp_options must be a non-empty list of integers, got {etp_options!r}")
        space = dataclasses.replace(space, etps=tuple(validate.integer("etp_options", x, low=1, high=4096)
                                                      for x in etp_options))
    fitting, searched, rejected = [], 0, 0
    common = dict(gpu_efficiency=gpu_efficiency, dp_overlap=dp_overlap, moe_imbalance=moe_imbalance,
                  ep_overlap=ep_overlap, cp_kind=space.cp_kind, precision=precision, fp8_dispatch=fp8_dispatch)
    for choice in _candidates(m, N, B, space):
        searched += 1
        L = layout(m, sys_, gpus=N, global_batch=B, sequence_parallel=sequence_parallel and choice["tp"] > 1,
                   **choice, **common)
        e = estimate_layout(L)
        if e.fits:
            fitting.append(e)
        else:
            rejected += 1
    fitting.sort(key=lambda e: (e.step_time_s, e.memory["total"]))
    result = Plan(model=m.name, system=sys_.id, gpus=N, global_batch=B, ranked=fitting, searched=searched,
                  rejected_memory=rejected, explanation=[])
    result.explanation = _explain(fitting, sys_) if fitting else [
        "no layout fits in memory: add GPUs, allow ZeRO-3 or full recomputation, or lower the micro-batch"]
    return result


def _explain(ranked: list[Estimate], sys_: hardware.System) -> list[str]:
    best = ranked[0]
    out = []
    bd = best.breakdown()
    parts = ", ".join(f"{k} {100 * v / best.step_time_s:.0f}%" for k, v in bd.items() if v > 0)
    out.append(f"{best.layout}, micro-batch {best.micro_batch}, {best.sharding}, recompute {best.recompute}: "
               f"step {units.format_time(best.step_time_s)} = {parts}; MFU {100 * best.mfu:.1f}%")
    gpn = sys_.gpus_per_node
    out.append(f"TP {best.tp} {'stays inside' if best.tp <= gpn else 'leaves'} the {gpn}-GPU {sys_.gpu_link.name} "
               f"domain; memory {best.memory['total'] / units.GB:.1f} of {best.memory['usable'] / units.GB:.0f} GB usable")

    def best_where(pred: Callable[[Estimate], bool]) -> Estimate | None:
        for e in ranked:
            if pred(e):
                return e
        return None

    rivals = [("the runner-up", best_where(lambda e: e is not best)),
              ("the best layout with TP across nodes", best_where(lambda e: e.tp > gpn)),
              ("the best layout with a smaller TP", best_where(lambda e: e.tp < best.tp)),
              ("the best layout with fewer pipeline stages", best_where(lambda e: e.pp < best.pp)),
              ("the best layout with more pipeline stages", best_where(lambda e: e.pp > best.pp)),
              ("the best layout with less expert parallelism", best_where(lambda e: e.ep < best.ep)),
              ("the best layout with more expert parallelism", best_where(lambda e: e.ep > best.ep)),
              ("the best layout with less context parallelism", best_where(lambda e: e.cp < best.cp)),
              ("the best layout with more context parallelism", best_where(lambda e: e.cp > best.cp))]
    seen = set()
    for label, e in rivals:
        if e is None or id(e) in seen or e is best:
            continue
        seen.add(id(e))
        diffs = {k: v - bd.get(k, 0.0) for k, v in e.breakdown().items()}
        worst = max(diffs, key=diffs.get)
        out.append(f"{label} ({e.layout}, mb {e.micro_batch}, {e.sharding}, {e.recompute}) is "
                   f"{100 * (e.step_time_s / best.step_time_s - 1):.1f}% slower, mostly {worst} "
                   f"(+{units.format_time(max(diffs[worst], 0))})")
    return out
