"""How sure a prediction is: where published runs in the same regime measured, against the model.

A regime is size band x scale band x fabric family (``regime``). Its range is the central ``SHARE`` of
measured / predicted busbw over the published TEST cases in it (``validation_table``, role ``test``:
fit and informed cases are left out, as they are not independent of the model). A regime with fewer
than ``MIN_CASES`` test cases has no range, and says so. ``coverage_by_regime`` checks the range
honestly: each test case is left out with every other case of its source, and the range of the
remaining sources must hold it.

The test cases' ratios are computed once per process (``regime_ratios`` is cached), so a readout that
asks for a range costs a dictionary look-up after the first call.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import hardware, units, validate
from .efficiencies import system_fabric_kind
from .validation import SCALE_REGIMES, case_system, published, scale_regime, validation_table

SIZE_BANDS = (("< 1 MiB", 0, 2**20), ("1-128 MiB", 2**20, 2**27), (">= 128 MiB", 2**27, float("inf")))
SHARE = 0.80        # the range holds the central 80% of a regime's test cases (10th to 90th percentile)
MIN_CASES = 8       # fewer test cases than this: no range, the regime says it has too few
MIN_SOURCES = 3     # ... or cases from fewer sources than this: one cluster's runs are that cluster, not a regime
NEAR_MODEL = 0.05   # the course's choice: within 5% of the model a run is never called unusual (nccl-tests' own
                    # run-to-run spread is a few percent, and a narrow range can end just short of 1.00)
RDMA_KINDS = ("infiniband", "roce")   # NCCL's own NET/IB transport
SOCKET_KINDS = ("ethernet_tcp",)      # NCCL's own NET/Socket; every other kind goes through a net plugin
FAMILIES = ("NVSwitch", "other GPU links", "InfiniBand/RoCE", "plugin network", "TCP sockets")


def size_band(nbytes) -> str:
    """The range's size band of ``nbytes`` (bytes): < 1 MiB, 1-128 MiB or >= 128 MiB."""
    nbytes = validate.non_negative("nbytes", nbytes)
    return next(name for name, lo, hi in SIZE_BANDS if lo <= nbytes < hi)


def fabric_family(system, nodes, network=None) -> str:
    """What carries the bytes: on one node the GPU links (NVSwitch or other GPU links), across nodes the
    network kind's family (InfiniBand/RoCE, a plugin network such as EFA, TCPXO or Slingshot, or TCP sockets).

    network: a fabric kind (``fabric_kind_ids()``) overriding the system's.
    """
    sys_ = hardware.resolve_system(system)
    nodes = validate.integer("nodes", nodes, low=1, high=10_000_000)
    if nodes == 1:
        return "NVSwitch" if sys_.interconnect == "nvswitch" else "other GPU links"
    kind = network or system_fabric_kind(sys_)
    return "InfiniBand/RoCE" if kind in RDMA_KINDS else "TCP sockets" if kind in SOCKET_KINDS else "plugin network"


@dataclass(frozen=True)
class Regime:
    """A size band, a scale band (``validation.SCALE_REGIMES``) and a fabric family."""
    size: str
    scale: str
    family: str

    def __str__(self) -> str:
        return f"{self.size}, {self.scale}, {self.family}"


def regime(nbytes, nodes, system, network=None) -> Regime:
    """The regime of a prediction: ``nbytes`` (bytes) on ``nodes`` nodes of ``system`` (fabric kind ``network``)."""
    return Regime(size_band(nbytes), scale_regime(nodes), fabric_family(system, nodes, network))


def _case_regime(case) -> Regime:
    return regime(case["nbytes"], case.get("nodes", 1), case_system(case), case.get("fabric"))


@lru_cache(maxsize=1)
def _regime_cases() -> dict:
    """{Regime: tuple of (measured / predicted busbw, source id) of its published TEST cases}, once per process."""
    cases = {c["id"]: c for c in published()["cases"]}
    out: dict = {}
    for r in validation_table():
        if r["role"] == "test":
            out.setdefault(_case_regime(cases[r["id"]]), []).append((1.0 / r["ratio"], r["source"]))
    return {k: tuple(v) for k, v in out.items()}


def regime_ratios() -> dict:
    """{Regime: tuple of measured / predicted busbw of its published TEST cases} (cached)."""
    return {k: tuple(x for x, _ in v) for k, v in _regime_cases().items()}


def spread(ratios) -> tuple[float, float]:
    """(low, high): the central ``SHARE`` of measured/predicted ``ratios`` (linear-interpolated percentiles)."""
    ratios = np.asarray(ratios, dtype=float)
    if ratios.ndim != 1 or ratios.size < 2 or not np.all(np.isfinite(ratios)) or np.any(ratios <= 0):
        raise ValueError(f"ratios must be at least two positive finite numbers; got {ratios!r}")
    tail = (1 - SHARE) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Range:
    """measured / predicted of published test runs in a regime: ``low``-``high`` over ``cases`` cases, or
    ``low`` = ``high`` = None where the regime has fewer than ``MIN_CASES`` cases or ``MIN_SOURCES`` sources."""
    regime: Regime
    cases: int
    sources: int
    low: float | None
    high: float | None

    @property
    def known(self) -> bool:
        return self.low is not None

    def busbw(self, predicted):
        """(low, high) busbw a run may measure given the model's ``predicted`` busbw (same units); None if unknown."""
        return None if not self.known else (predicted * self.low, predicted * self.high)

    def time(self, predicted):
        """(low, high) time a run may take given the model's ``predicted`` time: time scales as 1 / busbw."""
        return None if not self.known else (predicted / self.high, predicted / self.low)

    def holds(self, ratio) -> bool | None:
        """Whether a measured / predicted ``ratio`` lies inside the range (None where there is no range)."""
        return None if not self.known else bool(self.low <= ratio <= self.high)

    def unusual(self, ratio) -> bool | None:
        """Whether a measured / predicted ``ratio`` is unusual for its regime: outside the range and more than
        ``NEAR_MODEL`` from the model (None where there is no range)."""
        if not self.known:
            return None
        return bool(not self.holds(ratio) and abs(ratio - 1.0) > NEAR_MODEL)

    @property
    def caveat(self) -> str:
        """What the model leaves out in this regime, as a clause starting '; ' (or ''): below 128 MiB on a
        plugin network, the plugin's per-message software cost (efficiency.json ``plugin_message_cost``)."""
        if self.regime.family == "plugin network" and self.regime.size != SIZE_BANDS[-1][0]:
            return ("; the model has no per-message cost for the network plugin (assumed none: no form fit its "
                    "fit cases, efficiency.json plugin_message_cost), so runs here are often slower")
        return ""

    def describe(self) -> str:
        """One sentence: what published runs in this regime measured against the model, or that there are too few."""
        if not self.known:
            return (f"{self.regime}: too few published test runs in this regime ({self.cases} from {self.sources} "
                    f"source(s); a range needs {MIN_CASES} from {MIN_SOURCES}), so no range{self.caveat}")
        return (f"{self.regime}: published runs in this regime measured {self.low:.2f}-{self.high:.2f}x of the model "
                f"({SHARE:.0%} of {self.cases} test cases){self.caveat}")


def range_for(nbytes, nodes, system, network=None) -> Range:
    """The range of a prediction of ``nbytes`` on ``nodes`` nodes of ``system`` (fabric kind ``network``)."""
    reg = regime(nbytes, nodes, system, network)
    pairs = _regime_cases().get(reg, ())
    sources = len({s for _, s in pairs})
    if not _enough(pairs):
        return Range(reg, len(pairs), sources, None, None)
    return Range(reg, len(pairs), sources, *spread([x for x, _ in pairs]))


def _enough(pairs) -> bool:
    """Whether (ratio, source) pairs are enough for a range: ``MIN_CASES`` cases from ``MIN_SOURCES`` sources."""
    return len(pairs) >= MIN_CASES and len({s for _, s in pairs}) >= MIN_SOURCES


def ranges_for(nbytes, nodes, system, network=None) -> list[Range]:
    """``range_for`` for each size of a sweep ``nbytes`` (bytes)."""
    sizes = [validate.non_negative("nbytes", n) for n in np.atleast_1d(np.asarray(nbytes, dtype=object))]
    return [range_for(n, nodes, system, network) for n in sizes]


def _left_out(pairs, by_source) -> dict:
    """Each (ratio, source) of ``pairs`` checked against the range of the others: every other case, or
    (``by_source``) the cases of other sources only."""
    checked = covered = 0
    for i, (x, source) in enumerate(pairs):
        others = [(y, s) for j, (y, s) in enumerate(pairs) if (s != source if by_source else j != i)]
        if _enough(others):
            lo, hi = spread([y for y, _ in others])
            checked += 1
            covered += bool(lo <= x <= hi)
    return {"checked": checked, "covered": covered, "coverage": covered / checked if checked else None}


def coverage_by_regime() -> list[dict]:
    """How often a regime's range holds a test case it did not see, checked two ways.

    ``by_case`` (leave one case out): the range of the regime's other cases must hold the case.
    ``by_source`` (leave one source out, the stricter): cases of one source (one cluster's sweep, one
    report) are not independent of each other, so the range is computed from the cases of *other*
    sources only. A case is checked only where what is left is enough for a range (``MIN_CASES`` cases
    from ``MIN_SOURCES`` sources). One dict per regime that has test cases, in band order: regime (str),
    size, scale, family, cases, sources, low, high (the range from all its cases; None where too few), and
    by_case / by_source: {checked, covered, coverage (covered / checked; None where none could be
    checked)}: the honest shares to set against ``SHARE``.
    """
    table = _regime_cases()
    out = []
    for size, _, _ in SIZE_BANDS:
        for scale, _, _ in SCALE_REGIMES:
            for family in FAMILIES:
                reg = Regime(size, scale, family)
                pairs = table.get(reg)
                if not pairs:
                    continue
                row = {"regime": str(reg), "size": size, "scale": scale, "family": family, "cases": len(pairs),
                       "sources": len({s for _, s in pairs}), "low": None, "high": None}
                if _enough(pairs):
                    row["low"], row["high"] = spread([x for x, _ in pairs])
                row["by_case"] = _left_out(pairs, by_source=False)
                row["by_source"] = _left_out(pairs, by_source=True)
                out.append(row)
    return out


def coverage_summary_lines(rows=None) -> list[str]:
    """validation's summary of the ranges: the nominal coverage and how often ranges held cases they did not see."""
    rows = coverage_by_regime() if rows is None else rows
    lines = [f"# ranges: nominal coverage {SHARE:.0%} (the central {SHARE:.0%} of a regime's test cases); held out of sample:"]
    for key, what in (("by_case", "leave one case out"), ("by_source", "leave one source out")):
        checked = sum(r[key]["checked"] for r in rows)
        covered = sum(r[key]["covered"] for r in rows)
        lines.append(f"#   {what:<22} {covered:>3} of {checked:<3} ({covered / checked:.0%})" if checked else
                     f"#   {what:<22} none checked")
    return lines


def range_phrase(predicted_gb_s, rng: Range) -> str:
    """For a readout: 'published runs in this regime (R) measured 0.62-1.05x of the model (80% of 41 test cases):
    232-393 GB/s' around a predicted busbw (GB/s), or why the regime has no range."""
    predicted_gb_s = validate.non_negative("predicted_gb_s", predicted_gb_s)
    if not isinstance(rng, Range):
        raise ValueError(f"rng must be a costmodel.Range (from range_for); got {rng!r}")
    if not rng.known:
        return (f"too few published test runs in this regime ({rng.regime}: {rng.cases} from {rng.sources} "
                f"source(s)) for a range{rng.caveat}")
    low, high = rng.busbw(predicted_gb_s)
    return (f"published runs in this regime ({rng.regime}) measured {rng.low:.2f}-{rng.high:.2f}x of the model "
            f"({SHARE:.0%} of {rng.cases} test cases): {low:.3g}-{high:.3g} GB/s{rng.caveat}")


def step_range(estimate, system, network=None) -> dict:
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


def step_phrase(estimate, system, network=None) -> str:
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


def range_json(rng, busbw_gb_s):
    """A row's range for JSON: regime, cases, measured/predicted low-high and the busbw band around the
    predicted ``busbw_gb_s`` (GB/s), or why none (``rng`` None: spec bandwidth)."""
    if rng is not None and not isinstance(rng, Range):
        raise ValueError(f"rng must be a costmodel.Range or None, got {rng!r:.80}")
    busbw_gb_s = validate.non_negative("busbw_gb_s", busbw_gb_s)
    if rng is None:
        return {"known": False, "why": "spec bandwidth: ranges are measured against the achievable model"}
    out = {"regime": str(rng.regime), "cases": rng.cases, "sources": rng.sources, "known": rng.known,
           "describe": rng.describe()}
    if rng.known:
        low, high = rng.busbw(busbw_gb_s)
        out.update(ratio_low=rng.low, ratio_high=rng.high, busbw_low_gb_s=low, busbw_high_gb_s=high)
    return out
