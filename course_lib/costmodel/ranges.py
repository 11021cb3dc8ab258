"""How sure a prediction is: where published runs in the same regime measured, against the model.

A regime is size band x scale band x network stack (``regime``: NVLink, xGMI or PCIe inside a node; InfiniBand,
RoCE, gIB, EFA, TCPX/TCPXO, Slingshot or TCP sockets between nodes). A family is vendor x GPU generation x stack
(``family_of``): the unit a new cluster differs by. A regime's range is the central ``SHARE`` (nominal coverage)
of measured / predicted busbw over its published TEST cases, each source weighing the same and taken as
split-conformal bounds at the source level (``source_spread``), so that it holds a case of a new cluster from
the same population with at least that probability. A regime with fewer than
``MIN_CASES`` cases, ``MIN_SOURCES`` sources or ``MIN_FAMILIES`` families borrows: first from the same stack's
neighbouring sizes and scales, then from every stack at its size and scale class, then from every test case; a
borrowed spread is widened by the across-family spread (the spread of the families' median ratios at that
size). Every prediction gets a range, saying how it was made (``Range.how``), never none.

``coverage_by_regime`` checks it out of sample: each test case's range is rebuilt without the case's whole
source (leave-one-source-out) and, separately, without its whole family (leave-one-family-out), and must hold it.
The test cases' ratios are computed once per process (cached).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, Sequence

import numpy as np

from .. import hardware, units, validate
from .efficiencies import fabric_kind, system_fabric_kind
from .validation import SCALE_REGIMES, case_system, published, scale_regime, validation_table

SIZE_BANDS = (("< 1 MiB", 0, 2**20), ("1-128 MiB", 2**20, 2**27), (">= 128 MiB", 2**27, float("inf")))
SHARE = 0.80        # nominal coverage: the range holds the central 80% of a regime's test cases
MIN_CASES = 8       # fewer test cases than this in a regime: it borrows its neighbours' spread
MIN_SOURCES = 3     # ... or cases from fewer sources than this: one cluster's runs are that cluster, not a regime
MIN_FAMILIES = 2    # ... or from fewer families (vendor x GPU generation x stack) than this
NEAR_MODEL = 0.05   # the course's choice: within 5% of the model a run is never called unusual (nccl-tests' own
                    # run-to-run spread is a few percent, and a narrow range can end just short of 1.00)
ONE_NODE_STACKS = {"nvlink": "NVLink", "infinity-fabric": "xGMI", "pcie": "PCIe"}  # by the GPU link's family
PLUGIN_STACKS = ("EFA", "TCPX/TCPXO", "gIB", "Slingshot")  # a net plugin between NCCL and the NIC


def size_band(nbytes: float) -> str:
    """The range's size band of ``nbytes`` (bytes): < 1 MiB, 1-128 MiB or >= 128 MiB."""
    nbytes = validate.non_negative("nbytes", nbytes)
    return next(name for name, lo, hi in SIZE_BANDS if lo <= nbytes < hi)


def stack_of(system: str | hardware.System, nodes: int, network: str | None = None) -> str:
    """What carries the bytes: on one node the GPU links (NVLink, xGMI or PCIe), across nodes the network kind's
    software stack (fabrics.json ``stack``: InfiniBand, RoCE, gIB, EFA, TCPX/TCPXO, Slingshot, TCP sockets).

    network: a fabric kind (``fabric_kind_ids()``) overriding the system's.
    """
    sys_ = hardware.resolve_system(system)
    nodes = validate.integer("nodes", nodes, low=1, high=10_000_000)
    if nodes == 1:
        return ONE_NODE_STACKS.get(sys_.gpu_link.family, sys_.gpu_link.family)
    kind = network or system_fabric_kind(sys_)
    return fabric_kind(kind).get("stack", kind)


fabric_family = stack_of  # the older name: a regime's third part


def family_of(system: str | hardware.System, nodes: int, network: str | None = None) -> str:
    """A system family: vendor x GPU generation x stack, e.g. 'NVIDIA hopper InfiniBand', 'AMD cdna3 xGMI'."""
    sys_ = hardware.resolve_system(system)
    arch = sys_.gpu.nccl_arch or sys_.gpu.id
    vendor = "AMD" if str(arch).startswith("cdna") else "NVIDIA"
    return f"{vendor} {arch} {stack_of(sys_, nodes, network)}"


@dataclass(frozen=True)
class Regime:
    """A size band, a scale band (``validation.SCALE_REGIMES``) and a network stack (``family``, the older name)."""
    size: str
    scale: str
    family: str

    def __str__(self) -> str:
        return f"{self.size}, {self.scale}, {self.family}"


def regime(nbytes: float, nodes: int, system: str | hardware.System, network: str | None = None) -> Regime:
    """The regime of a prediction: ``nbytes`` (bytes) on ``nodes`` nodes of ``system`` (fabric kind ``network``)."""
    return Regime(size_band(nbytes), scale_regime(nodes), stack_of(system, nodes, network))


class StepTraffic(Protocol):
    """What ``step_range`` reads of one traffic row of a training step (``parallel.Traffic``)."""

    kind: str
    crosses_nodes: bool
    group_size: int
    bytes_per_call: float
    exposed_s: float


class StepEstimate(Protocol):
    """What ``step_range`` reads of a training step's estimate (``parallel.Estimate``, a layer above this one)."""

    step_time_s: float
    nodes: int

    @property
    def traffic(self) -> Sequence[StepTraffic]: ...


@dataclass(frozen=True)
class _Case:
    ratio: float      # measured / predicted busbw
    source: str
    family: str
    regime: Regime
    index: int


@lru_cache(maxsize=1)
def _cases() -> tuple:
    """Every published TEST case as a _Case, once per process."""
    cases = {c["id"]: c for c in published()["cases"]}
    out = []
    for r in validation_table():
        if r["role"] != "test":
            continue
        c = cases[r["id"]]
        sys_, nodes = case_system(c), c.get("nodes", 1)
        out.append(_Case(1.0 / r["ratio"], r["source"], family_of(sys_, nodes, c.get("fabric")),
                         regime(c["nbytes"], nodes, sys_, c.get("fabric")), len(out)))
    return tuple(out)


def _regime_cases() -> dict:
    """{Regime: tuple of (measured / predicted busbw, source id) of its published TEST cases}."""
    out: dict = {}
    for c in _cases():
        out.setdefault(c.regime, []).append((c.ratio, c.source))
    return {k: tuple(v) for k, v in out.items()}


def regime_ratios() -> dict:
    """{Regime: tuple of measured / predicted busbw of its published TEST cases} (cached)."""
    return {k: tuple(x for x, _ in v) for k, v in _regime_cases().items()}


def spread(ratios: Sequence[float]) -> tuple[float, float]:
    """(low, high): split-conformal bounds holding the central ``SHARE`` of measured/predicted ``ratios``: the k-th
    smallest and largest of n with k = floor((1 - SHARE) / 2 x (n + 1)), the extremes where k is 0."""
    ratios = np.asarray(ratios, dtype=float)
    if ratios.ndim != 1 or ratios.size < 2 or not np.all(np.isfinite(ratios)) or np.any(ratios <= 0):
        raise ValueError(f"ratios must be at least two positive finite numbers; got {ratios!r}")
    x = np.sort(ratios)
    k = int(np.floor((1 - SHARE) / 2 * (x.size + 1)))
    return (float(x[k - 1]), float(x[x.size - k])) if k >= 1 else (float(x[0]), float(x[-1]))


def source_spread(cases: Sequence[_Case]) -> tuple[float, float]:
    """(low, high) of measured / predicted over ``cases`` (``_Case`` rows), each source weighing the same: the
    question a range answers is where a NEW cluster lands, and one source's long sweep is one cluster. With S
    sources, the central ``SHARE`` of them: split-conformal at the source level, k = floor((1 - SHARE) / 2 x
    (S + 1)); where k is 0 (fewer than 9 sources at 80%) the extremes of every case, else the source-weighted
    quantiles at k / (S + 1) and 1 - k / (S + 1)."""
    per: dict = {}
    for c in cases:
        per[c.source] = per.get(c.source, 0) + 1
    x = np.array([c.ratio for c in cases], dtype=float)
    if x.size < 2:
        raise ValueError(f"cases must be at least two test cases; got {len(cases)}")
    k = int(np.floor((1 - SHARE) / 2 * (len(per) + 1)))
    if k == 0:
        return float(x.min()), float(x.max())
    order = np.argsort(x)
    w = np.array([1.0 / per[cases[i].source] for i in order])
    cum = np.cumsum(w) / w.sum()
    tail = k / (len(per) + 1)
    lo = x[order][np.searchsorted(cum, tail)]
    hi = x[order][min(x.size - 1, np.searchsorted(cum, 1 - tail))]
    return float(lo), float(hi)


def _enough(cs: Sequence[_Case]) -> bool:
    return len(cs) >= MIN_CASES and len({c.source for c in cs}) >= MIN_SOURCES and \
        len({c.family for c in cs}) >= MIN_FAMILIES


def family_spread(band: str, cases: Sequence[_Case] | None = None) -> float:
    """The across-family spread at a size band: the standard deviation of ln(median measured / predicted) over the
    families with at least two test cases there (0 where fewer than two families have)."""
    cases = _cases() if cases is None else cases
    by_family: dict = {}
    for c in cases:
        if c.regime.size == band:
            by_family.setdefault(c.family, []).append(np.log(c.ratio))
    medians = [np.median(v) for v in by_family.values() if len(v) >= 2]
    return float(np.std(medians, ddof=1)) if len(medians) >= 2 else 0.0


def _multi(scale: str) -> bool:
    return scale != SCALE_REGIMES[0][0]


def _band_index(band: str) -> int:
    return [b for b, _, _ in SIZE_BANDS].index(band)


def _build(reg: Regime, cases: Sequence[_Case]) -> tuple:
    """(low, high, how, made, pool) for a regime from ``cases`` (the test cases left in)."""
    own = [c for c in cases if c.regime == reg]
    if _enough(own):
        lo, hi = source_spread(own)
        return lo, hi, (f"{len(own)} test cases from {len({c.source for c in own})} sources and "
                        f"{len({c.family for c in own})} families in this regime"), "own", own
    s = family_spread(reg.size, cases)
    here = f"{len(own)} published test run(s) in this regime" if own else "no published test run in this regime"
    near = [c for c in cases if c.regime.family == reg.family and _multi(c.regime.scale) == _multi(reg.scale)
            and abs(_band_index(c.regime.size) - _band_index(reg.size)) <= 1]
    if _enough(near):
        lo, hi = source_spread(near)
        return lo * np.exp(-s), hi * np.exp(s), (
            f"borrowed: {here}; the spread of {len(near)} {reg.family} runs at neighbouring sizes and scales, "
            f"widened by the across-family spread (x{np.exp(s):.2f})"), "borrowed", near
    wide = [c for c in cases if c.regime.size == reg.size and _multi(c.regime.scale) == _multi(reg.scale)]
    where = "across nodes" if _multi(reg.scale) else "in one node"
    if not _enough(wide):
        wide = list(cases)
        where = "of any kind"
    lo, hi = source_spread(wide)
    return lo * np.exp(-s), hi * np.exp(s), (
        f"wide: {here} and too few on this stack ({reg.family}) {reg.size}; the spread of {len(wide)} runs "
        f"{where} at this size, widened by the across-family spread (x{np.exp(s):.2f})"), "wide", wide


@dataclass(frozen=True)
class Range:
    """measured / predicted of published test runs in (or borrowed for) a regime: ``low``-``high``, made as ``how``
    says (``made``: own, borrowed or wide) from ``cases`` cases of ``sources`` sources."""
    regime: Regime
    cases: int
    sources: int
    low: float | None
    high: float | None
    how: str = ""
    made: str = "own"
    families: int = 0

    @property
    def known(self) -> bool:
        return self.low is not None

    def busbw(self, predicted: float) -> tuple[float, float] | None:
        """(low, high) busbw a run may measure given the model's ``predicted`` busbw (same units); None if unknown."""
        return None if not self.known else (predicted * self.low, predicted * self.high)

    def time(self, predicted: float) -> tuple[float, float] | None:
        """(low, high) time a run may take given the model's ``predicted`` time: time scales as 1 / busbw."""
        return None if not self.known else (predicted / self.high, predicted / self.low)

    def holds(self, ratio: float) -> bool | None:
        """Whether a measured / predicted ``ratio`` lies inside the range (None where there is no range)."""
        return None if not self.known else bool(self.low <= ratio <= self.high)

    def unusual(self, ratio: float) -> bool | None:
        """Whether a measured / predicted ``ratio`` is unusual for its regime: outside the range and more than
        ``NEAR_MODEL`` from the model (None where there is no range)."""
        if not self.known:
            return None
        return bool(not self.holds(ratio) and abs(ratio - 1.0) > NEAR_MODEL)

    @property
    def caveat(self) -> str:
        """What the model leaves out in this regime, as a clause starting '; ' (or ''): below 128 MiB on a
        plugin network, the plugin's per-message software cost (efficiency.json ``plugin_message_cost``)."""
        if self.regime.family in PLUGIN_STACKS and self.regime.size != SIZE_BANDS[-1][0]:
            return ("; the model has no per-message cost for the network plugin (assumed none: no form fit its "
                    "fit cases, efficiency.json plugin_message_cost), so runs here are often slower")
        return ""

    def describe(self) -> str:
        """One sentence: what published runs in (or near) this regime measured against the model, and how."""
        if not self.known:
            return f"{self.regime}: no published test run at all, so no range{self.caveat}"
        return (f"{self.regime}: published runs measured {self.low:.2f}-{self.high:.2f}x of the model "
                f"({SHARE:.0%} nominal; {self.how}){self.caveat}")


def range_for(nbytes: float, nodes: int, system: str | hardware.System, network: str | None = None) -> Range:
    """The range of a prediction of ``nbytes`` on ``nodes`` nodes of ``system`` (fabric kind ``network``)."""
    reg = regime(nbytes, nodes, system, network)
    return _range(reg)


@lru_cache(maxsize=None)
def _range(reg: Regime) -> Range:
    cases = _cases()
    if len(cases) < 2:
        return Range(reg, 0, 0, None, None, "no published test cases", "none")
    own = [c for c in cases if c.regime == reg]
    lo, hi, how, made, pool = _build(reg, cases)
    return Range(reg, len(own), len({c.source for c in own}), float(lo), float(hi), how, made,
                 len({c.family for c in own}))


def ranges_for(nbytes: validate.Sizes, nodes: int, system: str | hardware.System, network: str | None = None) -> list[Range]:
    """``range_for`` for each size of a sweep ``nbytes`` (bytes)."""
    sizes = [validate.non_negative("nbytes", n) for n in np.atleast_1d(np.asarray(nbytes, dtype=object))]
    return [range_for(n, nodes, system, network) for n in sizes]


LEAVE_OUT = {"by_case": lambda c, x: c.index == x.index, "by_source": lambda c, x: c.source == x.source,
             "by_family": lambda c, x: c.family == x.family}


@lru_cache(maxsize=1)
def _left_out_all() -> dict:
    """{way: {case index: (covered, made)}}: each test case against the range rebuilt without it (by_case),
    without its whole source (by_source) or without its whole family (by_family)."""
    cases = _cases()
    out: dict = {}
    for way, drop in LEAVE_OUT.items():
        res = {}
        for x in cases:
            rest = [c for c in cases if not drop(c, x)]
            if len(rest) < 2:
                continue
            lo, hi, _, made, _ = _build(x.regime, rest)
            res[x.index] = (bool(lo <= x.ratio <= hi), made)
        out[way] = res
    return out


def coverage_by_regime() -> list[dict]:
    """How often a regime's range holds a test case it did not see, three ways.

    ``by_case`` (leave one case out), ``by_source`` (leave out every case of the case's source: one cluster's
    sweep is not independent of itself) and ``by_family`` (leave out every case of its family, vendor x GPU
    generation x stack: what a cluster of a kind the course has not seen meets). Each rebuilds the range the
    way ``range_for`` would from what is left (borrowing where too little is left), so every case is checked.
    One dict per regime that has test cases, in band order: regime (str), size, scale, family (the stack),
    cases, sources, families, low, high, how, made (the range from all its cases), and by_case / by_source /
    by_family: {checked, covered, coverage (covered / checked; None where none could be checked)}.
    """
    cases = _cases()
    left = _left_out_all()
    regimes = sorted({c.regime for c in cases}, key=lambda r: (_band_index(r.size),
                     [s for s, _, _ in SCALE_REGIMES].index(r.scale), r.family))
    out = []
    for reg in regimes:
        mine = [c for c in cases if c.regime == reg]
        rng = _range(reg)
        row = {"regime": str(reg), "size": reg.size, "scale": reg.scale, "family": reg.family, "cases": len(mine),
               "sources": len({c.source for c in mine}), "families": len({c.family for c in mine}),
               "low": rng.low, "high": rng.high, "how": rng.how, "made": rng.made}
        for way in LEAVE_OUT:
            got = [left[way][c.index][0] for c in mine if c.index in left[way]]
            row[way] = {"checked": len(got), "covered": sum(got), "coverage": sum(got) / len(got) if got else None}
        out.append(row)
    return out


def _regime_rows(rows: list[dict] | None) -> list:
    """``rows`` as given to the coverage summaries: a list of :func:`coverage_by_regime` rows, else ValueError."""
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, dict) and "made" in r for r in rows):
        raise ValueError(f"rows must be a list of coverage_by_regime() rows; got {type(rows).__name__}")
    return list(rows)


def coverage_summary(rows: list[dict] | None = None) -> dict:
    """Nominal coverage and the coverage out of sample, pooled over regimes: {nominal, by_case, by_source,
    by_family: {checked, covered, coverage}, met_by_family: LOFO coverage within 10 points of nominal or above}."""
    rows = coverage_by_regime() if rows is None else _regime_rows(rows)
    out: dict = {"nominal": SHARE}
    for way in LEAVE_OUT:
        checked = sum(r[way]["checked"] for r in rows)
        covered = sum(r[way]["covered"] for r in rows)
        out[way] = {"checked": checked, "covered": covered, "coverage": covered / checked if checked else None}
    lofo = out["by_family"]["coverage"]
    out["met_by_family"] = lofo is not None and lofo >= SHARE - 0.10
    return out


def coverage_summary_lines(rows: list[dict] | None = None) -> list[str]:
    """validation's summary of the ranges: the nominal coverage and how often ranges held cases they did not see."""
    rows = coverage_by_regime() if rows is None else _regime_rows(rows)
    s = coverage_summary(rows)
    made: dict = {}
    for r in rows:
        made[r["made"]] = made.get(r["made"], 0) + 1
    lines = [f"# ranges: nominal coverage {SHARE:.0%}; every regime prints one ("
             + ", ".join(f"{v} {k}" for k, v in made.items()) + "); held out of sample:"]
    for way, what in (("by_source", "leave one source out"), ("by_family", "leave one family out")):
        c = s[way]
        lines.append(f"#   {what:<22} {c['covered']:>3} of {c['checked']:<3} ({c['coverage']:.0%})"
                     + (f"  {'met' if s['met_by_family'] else 'NOT met'} (within 10 points of {SHARE:.0%})"
                        if way == "by_family" else ""))
    return lines


def range_phrase(predicted_gb_s: float, rng: Range) -> str:
    """For a readout: 'published runs (R) measured 0.62-1.05x of the model (80% nominal; how it was made):
    232-393 GB/s' around a predicted busbw (GB/s)."""
    predicted_gb_s = validate.non_negative("predicted_gb_s", predicted_gb_s)
    if not isinstance(rng, Range):
        raise ValueError(f"rng must be a costmodel.Range (from range_for); got {rng!r}")
    if not rng.known:
        return f"no range ({rng.regime}: no published test run at all){rng.caveat}"
    low, high = rng.busbw(predicted_gb_s)
    return (f"published runs ({rng.regime}) measured {rng.low:.2f}-{rng.high:.2f}x of the model "
            f"({SHARE:.0%} nominal; {rng.how}): {low:.3g}-{high:.3g} GB/s{rng.caveat}")


def step_range(estimate: StepEstimate, system: str | hardware.System, network: str | None = None) -> dict:
    """The range of a training step's time: its exposed communication scaled by the range of each traffic kind.

    estimate: a ``parallel`` estimate (``step_time_s``, ``nodes`` and ``traffic``, each with ``kind``,
    ``crosses_nodes``, ``group_size``, ``bytes_per_call`` and ``exposed_s``). Compute and the pipeline bubble
    are taken as priced; each kind's exposed time t becomes t / high .. t / low of the range of its regime
    (its message size, the nodes its group spans, ``system``'s fabric). Returns low_s, high_s (None where a
    kind with exposed time has no range), known, missing (the kinds without a range) and exposed (the kinds
    with exposed time; none: all communication hides behind compute and the range is the step itself).
    """
    sys_ = hardware.resolve_system(system)
    step = float(estimate.step_time_s)
    low = high = step
    missing = []
    exposed = []
    for t in estimate.traffic:
        if t.exposed_s <= 0 or t.bytes_per_call <= 0:
            continue
        exposed.append(t.kind)
        nodes = max(2, -(-t.group_size // sys_.gpus_per_node)) if t.crosses_nodes else 1
        rng = range_for(t.bytes_per_call, min(nodes, estimate.nodes) if t.crosses_nodes else 1, sys_, network)
        if not rng.known:
            missing.append(t.kind)
            continue
        low += t.exposed_s / rng.high - t.exposed_s
        high += t.exposed_s / rng.low - t.exposed_s
    known = not missing
    return {"step_s": step, "low_s": low if known else None, "high_s": high if known else None, "known": known,
            "missing": missing, "exposed": exposed}


def step_phrase(estimate: StepEstimate, system: str | hardware.System, network: str | None = None) -> str:
    """The step time with its range, for a readout: 'step 1.2 s (published collectives in these regimes: 1.1-1.4 s)'."""
    r = step_range(estimate, system, network)
    if not r["exposed"]:
        return (f"step {units.format_time(r['step_s'])} (no exposed communication: it all hides behind compute, "
                "so the spread of published collective runs does not widen it)")
    if r["known"] and units.format_time(r["low_s"]) == units.format_time(r["high_s"]):
        return (f"step {units.format_time(r['step_s'])} (its exposed communication is too small for the spread of "
                "published collective runs in its regimes to move it)")
    if r["known"]:
        return (f"step {units.format_time(r['step_s'])} (with the spread of published collective runs in the "
                f"regimes of its exposed communication: {units.format_time(r['low_s'])} to {units.format_time(r['high_s'])})")
    return (f"step {units.format_time(r['step_s'])} (no range: too few published test runs for the regime of its "
            f"{', '.join(sorted(set(r['missing'])))} traffic)")


def range_json(rng: Range | None, busbw_gb_s: float) -> dict:
    """A row's range for JSON: regime, cases, measured/predicted low-high and the busbw band around the
    predicted ``busbw_gb_s`` (GB/s), or why none (``rng`` None: spec bandwidth)."""
    if rng is not None and not isinstance(rng, Range):
        raise ValueError(f"rng must be a costmodel.Range or None, got {rng!r:.80}")
    busbw_gb_s = validate.non_negative("busbw_gb_s", busbw_gb_s)
    if rng is None:
        return {"known": False, "why": "spec bandwidth: ranges are measured against the achievable model"}
    out = {"regime": str(rng.regime), "cases": rng.cases, "sources": rng.sources, "known": rng.known,
           "made": rng.made, "how": rng.how, "nominal_coverage": SHARE, "describe": rng.describe()}
    if rng.known:
        low, high = rng.busbw(busbw_gb_s)
        out.update(ratio_low=rng.low, ratio_high=rng.high, busbw_low_gb_s=low, busbw_high_gb_s=high)
    return out
