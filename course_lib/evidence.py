"""Evidence: a measurement with its source, and model-vs-measured comparisons.

Every comparison table of the course (``costmodel.validation_table``, ``parallel.validation_table``,
``predict --compare``, and the chapters' published-measurement tables) builds its rows from
:class:`Comparison`, so ``ratio`` means one thing everywhere: model / measured, same unit, same
direction. Sources are ids of the course bibliography (``data/sources.json``, :func:`datafiles.source`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from . import datafiles, validate

HERE = {"title": "measured on this machine", "url": "", "publisher": "", "year": None}


@dataclass(frozen=True)
class Measurement:
    """A measured value (or the low end of a stated range, with ``high`` its top), its unit and source.

    ``source_id`` is an id of ``data/sources.json``; ``None`` means measured here, by the learner.
    """
    value: float
    unit: str
    source_id: str | None = None
    high: float | None = None
    what: str = ""

    def __post_init__(self) -> None:
        value = validate.number("value", self.value)
        object.__setattr__(self, "value", value)
        if self.high is not None:
            object.__setattr__(self, "high", validate.number("high", self.high, low=value))
        if not isinstance(self.unit, str) or not self.unit:
            raise ValueError(f"unit must be a non-empty string such as 'GB/s per direction'; got {self.unit!r}")
        if self.source_id is not None:
            datafiles.source(self.source_id)   # raises ValueError naming source_id

    @property
    def mid(self) -> float:
        """The value, or the middle of the stated range."""
        return self.value if self.high is None else 0.5 * (self.value + self.high)

    @property
    def citation(self) -> dict:
        """The source's bibliography entry (title, url, publisher, year), or :data:`HERE`."""
        return dict(HERE) if self.source_id is None else datafiles.source(self.source_id)

    @property
    def url(self) -> str:
        return self.citation["url"]


@dataclass(frozen=True)
class Comparison:
    """One model value next to one measurement of the same quantity, in the measurement's unit."""
    case: str
    model: float
    measured: Measurement

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", validate.number("model", self.model))

    @property
    def ratio(self) -> float:
        """model / measured (the middle of a stated range); nan when the measurement is 0."""
        return ratio(self.model, self.measured.mid)

    @property
    def measured_over_model(self) -> float:
        """measured / model: the achieved fraction when the model is a spec or a bound."""
        return ratio(self.measured.mid, self.model)

    def within(self, tolerance: float) -> bool:
        """True when model / measured is within 1 +- ``tolerance``."""
        return within(self.ratio, tolerance)

    def row(self) -> dict:
        """The comparison as a table row: case, model, measured (low, high), unit, ratio, source, url."""
        m = self.measured
        return {"case": self.case, "model": self.model, "measured": m.mid, "measured_low": m.value,
                "measured_high": m.value if m.high is None else m.high, "unit": m.unit, "ratio": self.ratio,
                "source": m.source_id, "url": m.url}


def measurement(value: float, unit: str, source_id: str | None = None, *, high: float | None = None, what: str = "") -> Measurement:
    """Shorthand for :class:`Measurement`."""
    return Measurement(value, unit, source_id, high, what)


def compare(case: str, model: float, measured: Measurement) -> Comparison:
    """Model vs one measurement."""
    if not isinstance(measured, Measurement):
        raise ValueError(f"measured must be an evidence.Measurement; got {type(measured).__name__}")
    return Comparison(str(case), model, measured)


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``; nan when the denominator is 0 (a measurement of 0 compares with nothing)."""
    numerator, denominator = validate.number("numerator", numerator), validate.number("denominator", denominator)
    return numerator / denominator if denominator else float("nan")


def within(value_ratio: float, tolerance: float) -> bool:
    """True when a model/measured ratio lies within 1 +- ``tolerance`` (e.g. 0.2 for +-20%)."""
    tolerance = validate.non_negative("tolerance", tolerance)
    return abs(value_ratio - 1) <= tolerance


def median(values: Iterable[float]) -> float:
    """The median of a non-empty list of ratios."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"values must be a list of ratios; got {values!r}")
    values = sorted(validate.number("values item", v) for v in values)
    if not values:
        raise ValueError("values must hold at least one ratio; got none")
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else 0.5 * (values[mid - 1] + values[mid])


def _comparisons(comparisons: Iterable[Comparison]) -> list[Comparison]:
    items = list(comparisons) if not isinstance(comparisons, (str, bytes)) and hasattr(comparisons, "__iter__") else None
    if items is None or not all(isinstance(c, Comparison) for c in items):
        raise ValueError(f"comparisons must be a list of evidence.Comparison; got {comparisons!r}"[:200])
    return items


def table(comparisons: Iterable[Comparison]) -> list[dict]:
    """Rows of several comparisons (:meth:`Comparison.row`)."""
    return [c.row() for c in _comparisons(comparisons)]


def summary(comparisons: Iterable[Comparison], tolerance: float = 0.2) -> dict:
    """How many comparisons, the share within +- ``tolerance``, the median and the worst model/measured."""
    comparisons = _comparisons(comparisons)
    ratios = [c.ratio for c in comparisons if not math.isnan(c.ratio)]
    if not ratios:
        raise ValueError("comparisons must hold at least one comparison with a non-zero measurement")
    worst = max((c for c in comparisons if not math.isnan(c.ratio)), key=lambda c: abs(math.log(c.ratio)) if c.ratio > 0 else math.inf)
    inside = sum(within(r, tolerance) for r in ratios)
    return {"cases": len(comparisons), "within": inside, "share_within": inside / len(ratios),
            "median_ratio": median(ratios), "worst_case": worst.case, "worst_ratio": worst.ratio}
