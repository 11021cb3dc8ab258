"""Fit the compute-efficiency constants (``data/published_training.json`` ``compute_efficiency``) on the
published training cases whose role is ``fit``, and write them back with each fit case's ratio.

    python scripts/fit_compute_efficiency.py          # fit and write
    python scripts/fit_compute_efficiency.py --check  # exit 1 if the stored fit is not what a refit gives

Least squares of log(predicted / measured) over the fit cases, by Nelder-Mead over (e_max bf16, e_max fp8,
elementwise_scale). Test and informed cases are never read here.
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course_lib.parallel import efficiency, published  # noqa: E402
from course_lib.parallel.validation import case_prediction  # noqa: E402

DATA = ROOT / "course_lib" / "data" / "published_training.json"
BOUNDS = ((0.2, 1.0), (0.2, 1.0), (0.0, 20.0))
START = (0.7, 0.7, 2.0)   # a fixed start, so that a refit (--check) lands where the stored fit did


def _consts(x) -> dict:
    return {"e_max": {"bf16": round(x[0], 4), "fp8": round(x[1], 4)}, "elementwise_scale": round(x[2], 3)}


def fit_cases() -> list[dict]:
    return [c for c in published()["cases"] if c.get("role") == "fit" and c["kind"] == "throughput"]


def ratios(x) -> dict:
    """Each fit case's predicted / measured; a case with a ``pair`` enters as the ratio of the two cases' ratios
    (a speedup: predicted over measured), its pair (``fit_for`` names it) not at all on its own."""
    with efficiency.using(_consts(x)):
        raw = {c["id"]: case_prediction(c)["ratio"] for c in fit_cases()}
    paired = {c["pair"] for c in fit_cases() if "pair" in c}
    out = {}
    for c in fit_cases():
        if c["id"] in paired:
            continue
        out[c["id"]] = raw[c["id"]] / raw[c["pair"]] if "pair" in c else raw[c["id"]]
    return out


def loss(x) -> float:
    if any(not lo <= v <= hi for v, (lo, hi) in zip(x, BOUNDS)):
        return 1e9
    return sum(math.log(r) ** 2 for r in ratios(x).values())


def nelder_mead(f, x0, step=0.05, iters=200, tol=1e-7):
    pts = [list(x0)] + [[v + (step if i == j else 0) for j, v in enumerate(x0)] for i in range(len(x0))]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(len(pts)), key=vals.__getitem__)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        if vals[-1] - vals[0] < tol:
            break
        c = [sum(p[j] for p in pts[:-1]) / (len(pts) - 1) for j in range(len(x0))]
        r = [c[j] + (c[j] - pts[-1][j]) for j in range(len(x0))]
        fr = f(r)
        if fr < vals[0]:
            e = [c[j] + 2 * (c[j] - pts[-1][j]) for j in range(len(x0))]
            fe = f(e)
            pts[-1], vals[-1] = (e, fe) if fe < fr else (r, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = r, fr
        else:
            k = [c[j] + 0.5 * (pts[-1][j] - c[j]) for j in range(len(x0))]
            fk = f(k)
            if fk < vals[-1]:
                pts[-1], vals[-1] = k, fk
            else:
                pts = [pts[0]] + [[pts[0][j] + 0.5 * (p[j] - pts[0][j]) for j in range(len(x0))] for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    best = min(range(len(pts)), key=vals.__getitem__)
    return pts[best]


def fit() -> dict:
    x = nelder_mead(loss, list(START), iters=400)
    consts = _consts(x)
    rs = ratios([consts["e_max"]["bf16"], consts["e_max"]["fp8"], consts["elementwise_scale"]])
    return {"constants": consts, "fit": {"cases": {k: round(v, 4) for k, v in rs.items()},
                                         "ratio_low": round(min(rs.values()), 4),
                                         "ratio_high": round(max(rs.values()), 4)}}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    result = fit()
    text = DATA.read_text()
    data = json.loads(text)
    block = data["compute_efficiency"]
    if "--check" in argv:
        same = block["constants"] == result["constants"] and block["fit"] == result["fit"]
        print("stored fit matches a refit" if same else f"stored fit differs: refit gives {result}")
        return 0 if same else 1
    pattern = re.compile(r'^    "constants": .*\n    "fit": .*\},\n', re.M)
    if len(pattern.findall(text)) != 1:
        raise ValueError("published_training.json: compute_efficiency must hold one constants line and one fit line")
    DATA.write_text(pattern.sub(lambda _: f'    "constants": {json.dumps(result["constants"])},\n'
                                          f'    "fit": {json.dumps(result["fit"])}}},\n', text))
    json.loads(DATA.read_text())
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
