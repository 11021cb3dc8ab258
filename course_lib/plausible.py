"""Plausible ranges for physical inputs, read from the hardware catalog: warn beyond them, refuse past physics.

A learner's system file or flag may carry a rate or a count no machine has (a per-link rate of 64000 GB/s
typed for 64 GB/s). The catalog spans what real machines have; a value up to ``PLAUSIBLE_FACTOR`` beyond its
span (two hardware generations, each doubling) passes silently, one beyond that but within
``PHYSICAL_FACTOR`` gets one warning line (a ``PlausibilityWarning``; ``cli.run`` prints it as
``warning: ...`` on stderr), and one past that is refused (ValueError: ``error: ...``, exit status 2).
Each message states the catalog's range and the factors.
"""
from __future__ import annotations

# One home, beside the catalog it reads (hardware imports nothing of this module: no import cycle).
from .hardware import PHYSICAL_FACTOR, PLAUSIBLE_FACTOR, PlausibilityWarning, catalog_ranges, check

__all__ = ["PHYSICAL_FACTOR", "PLAUSIBLE_FACTOR", "PlausibilityWarning", "catalog_ranges", "check"]
