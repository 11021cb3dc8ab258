"""Text tables for people: headers with units instead of dict keys, narrow enough not to wrap.

``header("x16_gb_s_bidirectional")`` gives ``"x16 GB/s bidirectional"``; :func:`text_table` prints
a list of dicts with such headers, wrapped onto two lines where that keeps a column narrow, and
numbers aligned on the right.
"""
from __future__ import annotations

import math
import re
import textwrap

# key fragments that are units: "<fragment>_s" is a rate (gb_s -> GB/s); the others stand alone
RATES = {"gb": "GB/s", "gt": "GT/s", "tb": "TB/s", "mb": "MB/s", "gbit": "Gb/s", "tbit": "Tb/s"}
UNITS = {"gb": "GB", "gib": "GiB", "tb": "TB", "mb": "MB", "us": "µs", "ms": "ms", "pct": "%"}
_RATE = re.compile(r"(?<![a-z0-9])(" + "|".join(RATES) + r")_s(?![a-z0-9])")
_UNIT = re.compile(r"(?<![a-z0-9])(" + "|".join(UNITS) + r")(?![a-z0-9])")


def header(key) -> str:
    """A column header for a dict key: units spelled out, underscores as spaces; other text unchanged."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string, got {key!r}")
    if " " in key or "_" not in key:
        return key
    text = _RATE.sub(lambda m: RATES[m.group(1)], key)
    text = _UNIT.sub(lambda m: UNITS[m.group(1)], text)
    return text.replace("_", " ")


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "-"
    return str(value)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def text_table(rows, columns=None) -> str:
    """``rows`` (a non-empty list of dicts) as aligned text; ``columns`` picks and orders the keys.

    Each header is :func:`header` of its key, wrapped onto at most two lines so the column is no
    wider than it must be; numbers are right-aligned, missing values "-".
    """
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError("rows must be a non-empty list of dicts")
    columns = list(rows[0].keys() if columns is None else columns)
    if not columns:
        raise ValueError("columns must name at least one key")
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    numeric = [all(_is_number(r.get(c)) or r.get(c) is None for r in rows) for c in columns]
    heads = []
    for i, c in enumerate(columns):
        title = header(c)
        widest_value = max(len(row[i]) for row in cells)
        width = max(widest_value, max(len(w) for w in title.split()), math.ceil(len(title) / 2))
        while len(textwrap.wrap(title, width)) > 2:
            width += 1
        heads.append(textwrap.wrap(title, width) or [""])
    widths = [max(max(len(line) for line in h), *(len(row[i]) for row in cells)) for i, h in enumerate(heads)]
    depth = max(len(h) for h in heads)
    lines = []
    for k in range(depth):  # headers bottom-aligned, so the last header line sits on the values
        parts = [(h[k - depth + len(h)] if k >= depth - len(h) else "") for h in heads]
        lines.append("  ".join(p.rjust(w) if num else p.ljust(w) for p, w, num in zip(parts, widths, numeric)))
    for row in cells:
        lines.append("  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(row, widths, numeric)))
    return "\n".join(line.rstrip() for line in lines)
