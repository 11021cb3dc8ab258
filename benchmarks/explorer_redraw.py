"""Time one slider event per explorer: model + readout + draw + PNG image (median of several).

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/explorer_redraw.py [--repeat N]

Every explorer in course_lib/chapters (each ``*_explorer`` function) is built at its defaults inside an IPython shell whose display
formatter renders matplotlib figures to PNG (as a notebook kernel's inline backend does), so the
time of an event includes the image, whichever way the explorer shell produces it. Wall time is
what a learner waits; CPU time (this process) is shown too, as the machine may be shared. One event = the
first slider (or, failing that, the first control with options) moved between two neighbouring
values; each explorer is timed ``--repeat`` times after one warm-up event. The goal (issue 13, item
11) is every explorer at or under 100 ms per event. The last line reads ``slowest: N ms (name)``.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, ahead of this folder

import matplotlib

matplotlib.use("Agg")

def explorers() -> list[tuple[str, str]]:
    """Every explorer in course_lib/chapters: (module, builder), a builder being a function named *_explorer."""
    import importlib
    import inspect
    import pkgutil

    import course_lib.chapters as package
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"course_lib.chapters.{info.name}")
        found += [(info.name, name) for name, fn in inspect.getmembers(mod, inspect.isfunction)
                  if name.endswith("_explorer") and f"{fn.__module__}.".startswith(f"{mod.__name__}.")]
    return found


GOAL_MS = 100.0


def _shell():
    """An IPython shell that renders figures to PNG on display, as the notebook's inline backend does."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.pylabtools import select_figure_formats

    shell = InteractiveShell.instance()
    select_figure_formats(shell, {"png"})
    return shell


def _event_values(control):
    """Two neighbouring values of ``control`` to move between: (the value now, its neighbour)."""
    now = control.value
    options = getattr(control, "options", None)
    if options:
        labels = [o[1] if isinstance(o, tuple) else o for o in options]
        i = labels.index(now)
        return now, labels[i + 1] if i + 1 < len(labels) else labels[i - 1]
    step = getattr(control, "step", None) or 1
    if hasattr(control, "base"):  # FloatLogSlider: step is in exponent units
        up = now * control.base ** step
        return now, up if up <= control.base ** control.max else now / control.base ** step
    up = now + step
    return now, up if up <= control.max else now - step


def _slider(handle):
    controls = list(handle.controls.values())
    sliders = [c for c in controls if "Slider" in type(c).__name__]
    return (sliders or [c for c in controls if getattr(c, "options", None)])[0]


def time_explorer(module: str, func: str, repeat: int) -> dict:
    import importlib

    mod = importlib.import_module(f"course_lib.chapters.{module}")
    with contextlib.redirect_stdout(io.StringIO()):
        handle = getattr(mod, func)()
        control = _slider(handle)
        a, b = _event_values(control)
        control.value = b  # warm-up event
        times, cpu = [], []
        for i in range(repeat):
            target = a if i % 2 == 0 else b
            t0, c0 = time.perf_counter(), time.process_time()
            control.value = target
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    import matplotlib.pyplot as plt
    plt.close("all")
    name = control.description or "?"
    return {"explorer": f"{module}.{func}", "control": name, "median_ms": 1e3 * statistics.median(times),
            "min_ms": 1e3 * min(times), "max_ms": 1e3 * max(times),
            "cpu_ms": 1e3 * statistics.median(cpu)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed events per explorer (default 7)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        print(f"error: --repeat must be >= 1; got {args.repeat}", file=sys.stderr)
        return 2
    _shell()
    rows = [time_explorer(m, f, args.repeat) for m, f in explorers()]
    width = max(len(r["explorer"]) for r in rows)
    print(f"{'explorer':<{width}}  {'median ms':>9}  {'min ms':>7}  {'max ms':>7}  {'CPU ms':>7}  {'<=100 ms':>8}  slider moved")
    for r in rows:
        ok = "yes" if r["median_ms"] <= GOAL_MS else "NO"
        print(f"{r['explorer']:<{width}}  {r['median_ms']:9.1f}  {r['min_ms']:7.1f}  {r['max_ms']:7.1f}  {r['cpu_ms']:7.1f}  {ok:>8}  "
              f"{r['control']}")
    worst = max(rows, key=lambda r: r["median_ms"])
    print(f"slowest: {worst['median_ms']:.0f} ms ({worst['explorer']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
