"""Plausible ranges for physical inputs, read from the hardware catalog: warn beyond them, refuse past physics.

A learner's system file or flag may carry a rate or a count no machine has (a per-link rate of 64000 GB/s
typed for 64 GB/s). The catalog spans what real machines have; a value up to ``PLAUSIBLE_FACTOR`` beyond its
span (two hardware generations, each doubling) passes silently, one beyond that but within
``PHYSICAL_FACTOR`` gets one warning line (a ``PlausibilityWarning``; ``cli.run`` prints it as
``warning: ...`` on stderr), and one past that is refused (ValueError: ``error: ...``, exit status 2).
Each message states the catalog's range and the factors.
"""
from __future__ import annotations

import warnings
from functools import lru_cache

from . import hardware, units, validate

PLAUSIBLE_FACTOR = 4.0    # two generations beyond the catalog's span, each doubling: plausible
PHYSICAL_FACTOR = 100.0   # a hundred times beyond it: no such link, NIC or machine; refused


class PlausibilityWarning(validate.InputWarning):
    """A physical input outside what the catalog's machines have, by more than ``PLAUSIBLE_FACTOR``."""


@lru_cache(maxsize=1)
def catalog_ranges() -> dict[str, tuple[float, float, str]]:
    """quantity -> (lowest, highest, unit) over the catalog (``data/hardware.json``)."""
    nvlink = [float(g["link_gb_s_per_direction"]) for g in hardware.nvlink_generations()]
    links = [link.per_direction / units.GB for link in hardware.links()]
    nics = [units.gbit_per_s(hardware.network(i).per_direction) for i in hardware.network_ids()]
    gpus = [hardware.gpu(g) for g in sorted({s.gpu.id for s in hardware.systems()})]
    counts = [s.gpus_per_node for s in hardware.systems()]
    nic_counts = [s.nics_per_node for s in hardware.systems()]
    return {
        "link_gb_s_per_direction": (min(nvlink), max(nvlink), "GB/s per direction per link"),
        "gpu_link_gb_s_per_direction": (min(links), max(links), "GB/s per direction per GPU"),
        "nic_gbit_s": (min(nics), max(nics), "Gb/s per direction per NIC"),
        "memory_gb": (min(g.memory_bytes for g in gpus) / units.GB, max(g.memory_bytes for g in gpus) / units.GB,
                      "GB per GPU"),
        "bf16_dense_tflops": (min(g.bf16_flops for g in gpus) / 1e12, max(g.bf16_flops for g in gpus) / 1e12,
                              "TFLOP/s per GPU"),
        "gpus_per_node": (1.0, float(max(counts)), "GPUs per node"),
        "nics_per_node": (1.0, float(max(nic_counts)), "NICs per node"),
    }


def check(name: str, value: float, quantity: str, *, warn: bool = True) -> float:
    """``value`` of ``quantity`` (a key of ``catalog_ranges``) for parameter ``name``: returned when plausible,
    a ``PlausibilityWarning`` beyond ``PLAUSIBLE_FACTOR`` of the catalog's range (unless ``warn`` is False: a
    deliberate what-if), ValueError beyond ``PHYSICAL_FACTOR``."""
    quantity = validate.choice("quantity", quantity, catalog_ranges())
    value = validate.positive(name, value)
    low, high, unit = catalog_ranges()[quantity]
    span = f"the catalog's machines have {low:g}-{high:g} {unit}"
    if value > high * PHYSICAL_FACTOR or value < low / PHYSICAL_FACTOR:
        raise ValueError(f"{name} must be within {PHYSICAL_FACTOR:g}x of what real machines have "
                         f"({low / PHYSICAL_FACTOR:g}-{high * PHYSICAL_FACTOR:g} {unit}; {span}), got {value:g}")
    if warn and (value > high * PLAUSIBLE_FACTOR or value < low / PLAUSIBLE_FACTOR):
        warnings.warn(PlausibilityWarning(f"{name} = {value:g} {unit} is beyond {PLAUSIBLE_FACTOR:g}x of what real "
                                          f"machines have ({span}): a typo? The prediction uses it as given"),
                      stacklevel=2)
    return value
