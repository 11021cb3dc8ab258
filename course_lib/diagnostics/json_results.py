"""nccl-tests' JSON output (``-J FILE``) and JSON lines of result records, and NCCL_VERSION_CODE.

Kept apart from the text reader so that ``pasted`` can tell a JSON document from a paste without importing it.
"""
from __future__ import annotations

import json
import math
import re

_VERSION_OK = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}")


def version_of_code(code: int) -> str:
    """NCCL_VERSION_CODE -> 'X.Y.Z': X*10000 + Y*100 + Z from NCCL 2.9 on, X*1000 + Y*100 + Z before (nccl.h)."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _json_docs(text: str) -> list:
    """The JSON values of ``text``: the whole text as one document (nccl-tests' -J file, pretty-printed or not),
    else one per line that holds a JSON object (JSON lines); [] where none parses."""
    body = text.strip()
    if body[:1] in "{[":
        try:
            return [json.loads(body)]
        except ValueError:
            pass
    out = []
    for line in body.split("\n"):
        line = line.strip().rstrip(",")
        if line[:1] == "{" and line[-1:] == "}":
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _num(value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return v


def read_json(text) -> dict | None:
    """What nccl-tests' JSON output (``-J FILE``, util.cu: 'results' records with size, and out_of_place
    {time, alg_bw, bus_bw, nwrong}; 'nccl_version' as NCCL_VERSION_CODE; 'args'; rank records) or JSON lines
    of result records (rccl-tests and wrappers: size with time/algbw/busbw, flat) say, or None where ``text``
    holds no such record. Walks the values iteratively (linear in their size)."""
    if not isinstance(text, str) or "{" not in text:
        return None
    out = {"rows": [], "version": None, "args": [], "ranks": set(), "hosts": set(), "wrong": [], "name": None}
    stack = list(_json_docs(text))
    seen = 0
    while stack and seen < 10**6:
        seen += 1
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(reversed(v))
            continue
        if not isinstance(v, dict):
            continue
        if isinstance(v.get("nccl_version"), int) and out["version"] is None:
            out["version"] = version_of_code(v["nccl_version"])
        elif isinstance(v.get("nccl_version"), str) and out["version"] is None:
            m = _VERSION_OK.match(v["nccl_version"])
            out["version"] = m.group(0) if m else None
        if isinstance(v.get("args"), list) and not out["args"]:
            out["args"] = [str(a) for a in v["args"][:64]]
        if isinstance(v.get("rank"), int) and isinstance(v.get("hostname"), str):
            out["ranks"].add(v["rank"])
            out["hosts"].add(v["hostname"])
        if "size" in v and isinstance(v.get("size"), (int, float)):
            res = v.get("out_of_place") if isinstance(v.get("out_of_place"), dict) else \
                v.get("in_place") if isinstance(v.get("in_place"), dict) else v
            t = _num(res.get("time", res.get("time_us", res.get("cpu_time"))))
            alg = _num(res.get("alg_bw", res.get("algbw")))
            bus = _num(res.get("bus_bw", res.get("busbw")))
            if math.isfinite(t) and t >= 0 and math.isfinite(bus):
                out["rows"].append({"size": int(v["size"]), "time_us": t, "algbw": alg, "busbw": bus})
                wrong = _num(res.get("nwrong", res.get("wrong")))
                if math.isfinite(wrong) and wrong > 0:
                    out["wrong"].append(wrong)
            for key in ("experiment_name", "name", "collective"):
                if isinstance(v.get(key), str) and out["name"] is None:
                    out["name"] = v[key]
            continue
        stack.extend(reversed(list(v.values())))
    return out if out["rows"] else None
