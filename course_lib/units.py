"""Units: bytes vs bits, SI vs binary prefixes, per direction vs bidirectional.

Conventions used everywhere in the course:

* sizes are in **bytes**; SI prefixes are powers of 1000 (1 GB = 1e9 bytes),
  binary prefixes powers of 1024 (1 GiB = 2**30 bytes);
* bandwidths are in **bytes per second per direction** unless a name says
  ``bidirectional``; network links are quoted by vendors in **bits** per second
  (400 Gb/s = 50 GB/s);
* times are in seconds.
"""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from . import validate

if TYPE_CHECKING:
    import numpy as np

BITS_PER_BYTE = 8

KB, MB, GB, TB, PB = 1e3, 1e6, 1e9, 1e12, 1e15
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40

_SI = {"": 1.0, "K": KB, "M": MB, "G": GB, "T": TB, "P": PB}
_BINARY = {"": 1.0, "K": KiB, "M": MiB, "G": GiB, "T": TiB, "P": 2.0**50}

MAX_SIZE_BYTES = 1e18  # 1 EB: far above any buffer, and exact arithmetic in float64 stays meaningful

DIRECTIONS = ("per direction", "bidirectional")


def bits_to_bytes(bits: float | np.ndarray) -> float | np.ndarray:
    """Bits -> bytes (divide by 8). Works on rates too: Gb/s -> GB/s."""
    return validate.non_negative("bits", bits) / BITS_PER_BYTE


def bytes_to_bits(nbytes: float | np.ndarray) -> float | np.ndarray:
    """Bytes -> bits (multiply by 8). Works on rates too: GB/s -> Gb/s."""
    return validate.finite_result("nbytes", validate.non_negative("nbytes", nbytes) * BITS_PER_BYTE)


def gbit_per_s(bytes_per_s: float | np.ndarray) -> float | np.ndarray:
    """A rate in bytes/s -> Gb/s, as NICs are sold: 50e9 B/s -> 400 Gb/s."""
    return bytes_to_bits(validate.non_negative("bytes_per_s", bytes_per_s)) / 1e9


def gbit_to_gbyte(gbit_per_s: float | np.ndarray) -> float | np.ndarray:
    """A network rate in Gb/s (what NICs are sold by) -> GB/s. 400 Gb/s -> 50 GB/s."""
    return validate.non_negative("gbit_per_s", gbit_per_s) / BITS_PER_BYTE


def per_direction(bidirectional_bw: float | np.ndarray) -> float | np.ndarray:
    """Bidirectional total -> per-direction bandwidth (half of it), bytes/s.

    Vendors quote NVLink as a bidirectional total (H100: 900 GB/s); a collective
    sending one way on each link can use at most the per-direction half (450 GB/s).
    """
    return validate.non_negative("bidirectional_bw", bidirectional_bw) / 2


def bidirectional(per_direction_bw: float | np.ndarray) -> float | np.ndarray:
    """Per-direction bandwidth -> bidirectional total (twice it), bytes/s."""
    return validate.finite_result("per_direction_bw", validate.non_negative("per_direction_bw", per_direction_bw) * 2)


_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtTpP]?)(i?)([bB]?)\s*$")


def parse_size(text: str | float, *, bare_prefix: str = "binary", name: str = "size") -> float:
    """Parse a size such as ``"16G"``, ``"1.5 GB"``, ``"64KiB"`` or ``"8"`` into bytes.

    ``GB``/``MB``... are SI (1e9, 1e6), ``GiB``/``MiB``... binary (2**30, 2**20).
    A bare prefix without ``B`` (``"16G"``) follows ``bare_prefix``: ``"binary"``
    by default, as nccl-tests reads ``-e 16G`` (17179869184 bytes). A lowercase
    ``b`` means bits and is refused: sizes are in bytes. The result is finite
    (``"1e400"`` is refused); ``name`` is the parameter named in the ValueError.
    """
    bare_prefix = validate.choice("bare_prefix", bare_prefix, ("binary", "si"))
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return validate.number(name, text, low=0.0, high=MAX_SIZE_BYTES)
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a string like '16G' or '1.5 GB', got {validate.describe(text)}")
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(f"{name} {validate.describe(text)} is not a size; use a number with an optional "
                         "prefix, e.g. '8', '64K', '16G', '1.5 GB', '2 GiB'")
    value, prefix, binary, unit = match.groups()
    if unit == "b":
        raise ValueError(f"{name} {text!r} is in bits (lowercase b); sizes are in bytes: "
                         f"write {value}{prefix.upper()}{binary}B, or divide a bit count by 8")
    if binary or (not unit and bare_prefix == "binary"):
        scale = _BINARY[prefix.upper()]
    else:
        scale = _SI[prefix.upper()]
    nbytes = float(value) * scale
    if not math.isfinite(nbytes) or nbytes > MAX_SIZE_BYTES:
        raise ValueError(f"{name} must be at most {MAX_SIZE_BYTES:g} bytes (1 EB); got {validate.describe(text)}")
    return nbytes


_RATE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT]?)([bB])(?:/s|ps)\s*$")


def parse_bandwidth(text: str | float) -> float:
    """Parse ``"400 Gb/s"`` (bits) or ``"900 GB/s"`` (bytes) into bytes per second (SI)."""
    if not isinstance(text, str):
        raise ValueError(f"bandwidth must be a string like '400 Gb/s' or '450 GB/s', got {text!r}")
    match = _RATE_RE.match(text)
    if not match:
        raise ValueError(f"bandwidth {text!r} is not a rate; write e.g. '400 Gb/s' (bits) or '450 GB/s' (bytes)")
    value, prefix, unit = match.groups()
    rate = float(value) * _SI[prefix.upper()]
    if not math.isfinite(rate):
        raise ValueError(f"bandwidth {text!r} is not a finite rate")
    return rate / BITS_PER_BYTE if unit == "b" else rate


def _scaled(value: float, table: dict, names: list[str]):
    for name in reversed(names):
        if abs(value) >= table[name]:
            return value / table[name], name
    return value, names[0]


def format_bytes(nbytes: float, *, binary: bool = False, digits: int = 3) -> str:
    """``140e9`` -> ``'140 GB'``; with ``binary=True`` -> ``'130 GiB'``."""
    nbytes = validate.non_negative("nbytes", nbytes)
    digits = validate.integer("digits", digits, low=1, high=12)
    if binary:
        table = {"B": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB}
    else:
        table = {"B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": TB, "PB": PB}
    value, name = _scaled(nbytes, table, list(table))
    return f"{value:.{digits}g} {name}"


def format_bandwidth(bytes_per_s: float, *, direction: str = "per direction", bits: bool = False,
                     digits: int = 3) -> str:
    """``450e9`` -> ``'450 GB/s per direction'``; ``bits=True`` -> ``'3.6 Tb/s ...'``."""
    bytes_per_s = validate.non_negative("bytes_per_s", bytes_per_s)
    direction = validate.choice("direction", direction, DIRECTIONS)
    digits = validate.integer("digits", digits, low=1, high=12)
    unit = "b/s" if bits else "B/s"
    value = bytes_per_s * (BITS_PER_BYTE if bits else 1)
    table = {f"{p}{unit}": s for p, s in zip(["", "K", "M", "G", "T", "P"], [1, KB, MB, GB, TB, PB])}
    value, name = _scaled(value, table, list(table))
    return f"{value:.{digits}g} {name} {direction}"


def format_time(seconds: float, *, digits: int = 3) -> str:
    """``0.00123`` -> ``'1.23 ms'``; picks ns, us, ms, s, min or h."""
    seconds = validate.non_negative("seconds", seconds)
    digits = validate.integer("digits", digits, low=1, high=12)
    if seconds >= 3600:
        return f"{seconds / 3600:.{digits}g} h"
    if seconds >= 60:
        return f"{seconds / 60:.{digits}g} min"
    for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if seconds >= scale:
            return f"{seconds / scale:.{digits}g} {name}"
    return f"{seconds / 1e-9:.{digits}g} ns"
