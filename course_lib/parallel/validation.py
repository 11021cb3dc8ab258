"""The model against published training runs: Megatron/ZeRO cases, and FSDP/CP/MoE/all-to-all cases."""
from __future__ import annotations

import math
from functools import lru_cache

from .. import datafiles, evidence, hardware, units, validate
from ..transformer import model_state_bytes
from .layouts import published
from .planner import estimate_choosing
from .links import _members_per_node, all_to_all_time
from .results import Estimate
from .step import estimate


CASE_KEYS = ("cp", "ep", "etp", "fsdp", "hsdp", "seq_len", "precision", "fp8_dispatch", "pp_layers", "ep_overlap")


def _case_estimate(case: dict, gpu_efficiency: float | None = None, defaults: dict | None = None) -> Estimate:
    """The case priced: its fields, the unstated ones from ``defaults`` (published_training.json's
    ``defaults_for_unstated_fields`` unless given; ``{}`` leaves them to ``estimate``'s own defaults)."""
    defaults = published()["defaults_for_unstated_fields"] if defaults is None else defaults
    keys = ("micro_batch", "zero", "recompute", "interleave", "sequence_parallel", "dp_overlap")
    stated = {k: case.get(k, defaults.get(k)) for k in keys if k in case or k in defaults}
    price = estimate
    if "chosen" in (stated.get("zero"), stated.get("recompute")):   # as the plan CLI chooses them
        price = estimate_choosing
        stated.update({k: None for k in ("zero", "recompute") if stated.get(k) == "chosen"})
    return price(case["model"], _case_system(case["system"]), gpus=case["gpus"], tp=case.get("tp", 1),
                 pp=case.get("pp", 1), global_batch=case["global_batch"], gpu_efficiency=gpu_efficiency,
                 **stated, **{k: case[k] for k in CASE_KEYS if k in case})


def case_prediction(case: dict, gpu_efficiency: float | None = None, defaults: dict | None = None) -> dict:
    """One published throughput case priced: predicted and measured in the case's own quantity (hardware or
    model TFLOP/s per GPU, or tokens/s per GPU), their ratio, and the estimate (``defaults``: ``_case_estimate``)."""
    e = _case_estimate(case, gpu_efficiency, defaults)
    if "measured_tokens_per_s_per_gpu" in case:
        quantity, pred, meas = "tokens/s per GPU", e.tokens_per_s_per_gpu, case["measured_tokens_per_s_per_gpu"]
    elif case.get("quantity") == "model":
        quantity, pred, meas = "model TFLOP/s per GPU", e.model_tflops_per_gpu, case["measured_tflops_per_gpu"]
    else:
        quantity, pred, meas = "TFLOP/s per GPU", e.tflops_per_gpu, case["measured_tflops_per_gpu"]
    return {"quantity": quantity, "predicted": pred, "measured": float(meas), "ratio": pred / meas, "estimate": e}


def validation_table(gpu_efficiency: float | None = None) -> list[dict]:
    """Every published case: predicted, measured, predicted/measured, and the ratio within its group.

    ``relative`` is (predicted/measured) divided by the median of that ratio in the case's group:
    it shows whether the model gets the relative effect (scaling, layout) right even when the
    absolute level (set by gpu_efficiency) is off.
    """
    rows = []
    for case in published()["cases"]:
        src = datafiles.source(case["source"])
        row = {"id": case["id"], "group": case["group"], "kind": case["kind"], "where": case["where"],
               "role": case.get("role", "test"), "precision": case.get("precision", "bf16"),
               "source": src["title"].split(",")[0], "url": src["url"], "assumed": case.get("assumed", [])}
        if case["kind"] == "memory":
            pred = model_state_bytes(case["params"], case["dp"], case["zero"])["total"]
            row.update(config=f"{case['params'] / 1e9:g}B params, DP {case['dp']}, ZeRO-{case['zero']}",
                       quantity="model states GB/GPU", predicted=pred / units.GB,
                       measured=case["measured_model_state_bytes"] / units.GB)
        else:
            pr = case_prediction(case, gpu_efficiency)
            e = pr["estimate"]
            row.update(config=f"{case['model']} {case['gpus']} GPUs {e.layout} {e.sharding} B{case['global_batch']} "
                              f"mb{e.micro_batch}" + ("" if e.precision == "bf16" else f" {e.precision.upper()}"),
                       quantity=pr["quantity"], predicted=pr["predicted"], measured=pr["measured"], fits=e.fits)
        row["ratio"] = evidence.compare(case["id"], row["predicted"],
                                        evidence.measurement(row["measured"], row["quantity"], case["source"])).ratio
        rows.append(row)
    groups = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row["ratio"])
    for row in rows:
        row["relative"] = row["ratio"] / evidence.median(groups[row["group"]])
    return rows


def validation_summary(rows: list[dict] | None = None) -> str:
    """The validation table as text: predicted / measured for each published case."""
    rows = validation_table() if rows is None else rows
    lines = [f"{'case':<26} {'configuration':<62} {'quantity':<20} {'pred':>7} {'meas':>7} {'p/m':>5} {'rel':>5}"]
    for r in rows:
        lines.append(f"{r['id']:<26} {r['config'][:62]:<62} {r['quantity']:<20} {r['predicted']:>7.1f} "
                     f"{r['measured']:>7.1f} {r['ratio']:>5.2f} {r['relative']:>5.2f}")
    lines.append("p/m: predicted / measured. rel: p/m divided by the median p/m of the case's group "
                 "(1.00 = the relative effect is right).")
    return "\n".join(lines)


# ---------------------------------------------------------------- validation: FSDP, CP, MoE, all-to-all

@lru_cache(maxsize=1)
def published_modern() -> dict:
    """The parsed ``data/published_parallel_modern.json``: FSDP/HSDP, CP, MoE and all-to-all cases."""
    return datafiles.load("published_parallel_modern.json")


def _case_system(name: str) -> hardware.System:
    """A catalog system, or one of the data file's named variants (H800 = an H100 node with less NVLink)."""
    variants = published_modern()["systems"]
    if name in variants:
        v = variants[name]
        return hardware.system(v["base"]).variant(gpu_link_gb_s=v["gpu_link_gb_s"], name=v["name"])
    return hardware.system(name)


def all_to_all_bottleneck_bandwidth(system: str | hardware.System, nbytes: float, ranks: int, stride: int = 1) -> float:
    """Bytes/s through the bottleneck link of one all-to-all (NVLink inside a node, the NIC across nodes).

    What DeepEP reports: the bytes that crossed the slower link divided by the time. ``nbytes`` is
    one rank's whole send buffer.
    """
    sys_ = hardware.resolve_system(system)
    t, link = all_to_all_time(sys_, nbytes, ranks, stride)
    k = _members_per_node(sys_, ranks, stride)
    share = (ranks - k) / ranks if link.crosses_nodes else (ranks - 1) / ranks
    return share * nbytes / t


def modern_validation_table() -> list[dict]:
    """Every FSDP/CP/MoE/all-to-all case: predicted, measured, p/m, and p/m over its group's fitted scale.

    A group's scale is the geometric mean of p/m over its ``fit`` cases (1 when it has none);
    ``test`` cases never enter it. ``fitted`` = p/m / scale: 1.00 means the model gets the case
    right once the group's level is set.
    """
    rows = []
    data = published_modern()
    for case in data["cases"]:
        sys_ = _case_system(case["system"])
        row = {"id": case["id"], "group": case["group"], "split": case["split"], "kind": case["kind"],
               "where": case["where"], "source": case["source"], "url": datafiles.source(case["source"])["url"],
               "assumed": case.get("assumed", [])}
        if case["kind"] == "all_to_all":
            size = case["tokens"] * case["top_k"] * case["hidden"] * case["bytes_per_value"]
            row.update(config=f"all-to-all EP{case['ep']} on {case['system']}, {units.format_bytes(size)} per rank",
                       quantity="bottleneck GB/s", measured=float(case["measured_gb_s"]),
                       predicted=all_to_all_bottleneck_bandwidth(sys_, size, case["ep"]) / units.GB)
        else:
            keys = ("tp", "pp", "ep", "cp", "zero", "fsdp", "hsdp", "micro_batch", "recompute", "seq_len", "ep_overlap",
                    "precision", "fp8_dispatch", "etp", "pp_layers", "interleave", "sequence_parallel")
            e = estimate(case["model"], sys_, gpus=case["gpus"], global_batch=case["global_batch"],
                         **{k: case[k] for k in keys if k in case})
            seq = f" s={case['seq_len']}" if "seq_len" in case else ""
            row.update(config=f"{case['model']} {case['gpus']} GPUs {e.layout} {e.sharding}{seq}",
                       quantity="tokens/s per GPU", measured=float(case["measured_tokens_per_s_per_gpu"]),
                       predicted=e.tokens_per_s_per_gpu, fits=e.fits,
                       memory_bytes=e.memory["total"], usable_bytes=e.memory["usable"])
        row["ratio"] = row["predicted"] / row["measured"]
        rows.append(row)
    scales = {}
    for g in {r["group"] for r in rows}:
        fit = [r["ratio"] for r in rows if r["group"] == g and r["split"] == "fit"]
        scales[g] = math.exp(sum(math.log(x) for x in fit) / len(fit)) if fit else 1.0
    for r in rows:
        r["scale"] = scales[r["group"]]
        r["fitted"] = r["ratio"] / scales[r["group"]]
    return rows


def modern_validation_summary(rows: list[dict] | None = None) -> str:
    """The FSDP/CP/MoE/all-to-all validation table as text, then each split's median |fitted - 1|."""
    rows = modern_validation_table() if rows is None else rows
    lines = [f"{'case':<28} {'split':<5} {'configuration':<64} {'quantity':<17} {'pred':>7} {'meas':>7} "
             f"{'p/m':>5} {'fit':>5}"]
    for r in rows:
        star = "*" if r.get("fits") is False else " "
        lines.append(f"{r['id']:<28} {r['split']:<5} {r['config'][:64]:<64} {r['quantity']:<17} "
                     f"{r['predicted']:>7.0f}{star}{r['measured']:>7.0f} {r['ratio']:>5.2f} {r['fitted']:>5.2f}")
    for split in ("fit", "test"):
        errs = sorted(abs(r["fitted"] - 1) for r in rows if r["split"] == split)
        if errs:
            mid = errs[len(errs) // 2] if len(errs) % 2 else 0.5 * (errs[len(errs) // 2 - 1] + errs[len(errs) // 2])
            lines.append(f"{split}: {len(errs)} cases, median |fit - 1| = {mid:.2f}, worst {errs[-1]:.2f}")
    lines.append("p/m: predicted / measured. fit: p/m divided by the group's scale (geometric mean of p/m over the "
                 "group's fit cases; test cases never set it). *: the model's memory check says the run does not fit "
                 "(see the case's 'assumed').")
    return "\n".join(lines)


def layer_efficiency_measured() -> list[dict]:
    """One layer's forward + backward on a real GPU (``published_training.json``'s ``layer_efficiency_h200``):
    per catalog model, the measured fraction of dense bf16 peak (two runs) beside the ``gpu_efficiency``
    assumption, and the bytes its forward kept beside ``activation_bytes_per_layer``.

    Each row: model, hidden, seq_len, ms and fraction_of_peak (both runs), ``fraction_low``/``fraction_high``,
    ``over_assumed`` (the lower run over the assumption), activation_bytes and ``activation_over_none`` /
    ``activation_over_selective`` (measured over the formula with recompute none / selective),
    ``predicted_fraction`` (the GEMM-shape function's layer, forward + backward) and its ratio to the runs' mean.
    A check of the formulas: nothing here sets them.
    """
    from ..transformer import activation_bytes_per_layer, layer_forward_flops_per_token, resolve_model
    from .efficiency import layer_seconds
    from .layouts import assumption

    block = published()["layer_efficiency_h200"]
    assumed = assumption("gpu_efficiency")
    gpu = hardware.gpu("h200-sxm" if block["gpu"] == "h200" else block["gpu"])
    rows = []
    for row in block["layers"]:
        formula = {rc: activation_bytes_per_layer(row["model"], recompute=rc) for rc in ("none", "selective")}
        lo, hi = min(row["fraction_of_peak"]), max(row["fraction_of_peak"])
        m = resolve_model(row["model"])
        x = layer_seconds(m, gpu)["dense"]
        predicted = 3 * m.seq_len * layer_forward_flops_per_token(m) / (
            3 * x["gemm"] + 3 * x["attention"] + x["elementwise"]) / gpu.bf16_flops
        rows.append({**row, "gpu": block["gpu"], "assumed": assumed, "fraction_low": lo, "fraction_high": hi,
                     "predicted_fraction": predicted, "predicted_over_measured": predicted / ((lo + hi) / 2),
                     "over_assumed": lo / assumed, "matmul_fraction": min(block["matmul_8192_tflops"]) /
                     block["peak_bf16_tflops"], "activation_over_none": row["activation_bytes"] / formula["none"],
                     "activation_over_selective": row["activation_bytes"] / formula["selective"],
                     "source": block["source"]})
    return rows


# ---------------------------------------------------------------- training runs: fit / informed / test by source

def _role(case: dict) -> str:
    """A case's role: its own (published_training.json), or its source's (``source_roles``; a fit source's runs
    that are not fit cases are informed), else test."""
    if "role" in case:
        return case["role"]
    role = published()["source_roles"].get(case["source"], {}).get("role", "test")
    return "informed" if role == "fit" else role   # a fit source's other runs: not independent of the fit


REGIMES = tuple(f"{kind} {precision}" for kind in ("dense", "MoE") for precision in ("BF16", "FP8"))  # _regime's


def _regime(e: Estimate) -> str:
    """The regime a step time belongs to for its range: dense or MoE, BF16 or FP8 (MXFP8 counts as FP8)."""
    return f"{'MoE' if e.ep > 1 or 'EP' in e.layout else 'dense'} {'BF16' if e.precision == 'bf16' else 'FP8'}"


@lru_cache(maxsize=1)
def training_validation_table() -> tuple:
    """Every published training throughput run priced as a learner would (``plan``'s defaults for what the
    source leaves out: recompute and ZeRO chosen as ``estimate_choosing`` chooses them): id, role (fit / informed / test, by source), regime, predicted, measured, ratio (p/m).

    From ``published_training.json`` (roles per case) and the throughput cases of
    ``published_parallel_modern.json`` (roles from ``source_roles``). Fit cases set the efficiency constants
    (``scripts/fit_compute_efficiency.py``); only test cases enter ``training_range``'s spreads.
    """
    rows = []
    cases = [(c, None) for c in published()["cases"] if c["kind"] == "throughput"]
    chosen = {"recompute": "chosen", "zero": "chosen"}   # the rest: estimate's defaults
    cases += [(c, chosen) for c in published_modern()["cases"] if c["kind"] == "throughput"]
    for case, defaults in cases:
        pr = case_prediction(case, defaults=defaults)
        e = pr["estimate"]
        rows.append({"id": case["id"], "role": _role(case), "source": case["source"], "where": case["where"],
                     "regime": _regime(e), "config": f"{case['model']} {case['gpus']} GPUs {e.layout} {e.sharding}"
                     + ("" if e.precision == "bf16" else f" {e.precision.upper()}"),
                     "quantity": pr["quantity"], "predicted": pr["predicted"], "measured": pr["measured"],
                     "ratio": pr["ratio"], "fits": e.fits, "assumed": case.get("assumed", [])})
    return tuple(rows)


def regime_spread(regime: str) -> dict:
    """The test runs' spread of predicted / measured throughput in one regime (``_regime``): cases, low, high;
    ``known`` False with fewer than two test runs. ``all`` is every test run's spread, whatever its regime."""
    tests = [r for r in training_validation_table() if r["role"] == "test"]
    regime = validate.choice("regime", regime, REGIMES + ("all",))
    ratios = [r["ratio"] for r in tests if r["regime"] == regime] if regime != "all" else [r["ratio"] for r in tests]
    return {"regime": regime, "cases": len(ratios), "known": len(ratios) >= 2,
            "low": min(ratios) if ratios else None, "high": max(ratios) if ratios else None}


def training_range(e: Estimate) -> dict:
    """A step time's range from the published training runs: the compute part (compute and the bubble's)
    scaled by the range of the efficiency fit's residuals, and the whole step by the spread of the test runs
    in its regime (a throughput p/m of r means the true step is r x the predicted one); where the regime has
    fewer than two test runs, by every test run's spread (``test_own_regime`` and ``test_own_cases`` say so)."""
    from .efficiency import fit_summary
    fit = fit_summary()["fit"]
    compute = e.compute_s + e.bubble_s * (e.compute_s / max(e.compute_s + e.tp_exposed_s + e.pp_exposed_s, 1e-30))
    rest = e.step_time_s - compute
    spread = regime_spread(_regime(e))
    if not spread["known"]:   # too few in its regime: every test run's spread, and the readout says so
        spread = dict(regime_spread("all"), own_regime=_regime(e), own_cases=spread["cases"])
    out = {"step_s": e.step_time_s, "fit_ratio_low": fit["ratio_low"], "fit_ratio_high": fit["ratio_high"],
           "compute_low_s": rest + compute * fit["ratio_low"], "compute_high_s": rest + compute * fit["ratio_high"],
           **{f"test_{k}": v for k, v in spread.items()}}
    if spread["known"]:
        out.update(low_s=e.step_time_s * spread["low"], high_s=e.step_time_s * spread["high"])
    return out


def training_range_phrase(e: Estimate) -> str:
    """The two ranges in words, for a readout."""
    from .. import units
    r = training_range(e)
    ft = units.format_time
    text = (f"compute priced by the GEMM-shape fit (its fit runs' p/m {r['fit_ratio_low']:.2f}-{r['fit_ratio_high']:.2f}):"
            f" step {ft(r['compute_low_s'])} to {ft(r['compute_high_s'])}; ")
    if not r["test_known"]:
        return text + "no test-run range: fewer than two published test runs"
    if "test_own_regime" in r:
        return text + (f"{r['test_own_cases']} published test run(s) in its regime ({r['test_own_regime']}), so all "
                       f"{r['test_cases']} test runs (p/m {r['test_low']:.2f}-{r['test_high']:.2f}): step "
                       f"{ft(r['low_s'])} to {ft(r['high_s'])}")
    return text + (f"published test runs in its regime ({r['test_regime']}, {r['test_cases']} runs, p/m "
                   f"{r['test_low']:.2f}-{r['test_high']:.2f}): step {ft(r['low_s'])} to {ft(r['high_s'])}")


def training_validation_summary(rows: list[dict] | None = None, all_roles: bool = False) -> str:
    """``plan --validate``: the test runs (p/m, and their median |p/m - 1| per regime), then the fit's residuals;
    fit and informed runs are listed only with ``all_roles``."""
    rows = list(training_validation_table()) if rows is None else rows
    from .efficiency import constants, fit_summary
    head = f"{'case':<26} {'role':<8} {'regime':<10} {'configuration':<58} {'quantity':<21} {'pred':>7} {'meas':>7} {'p/m':>5}"
    lines = ["Published training runs, test only (never looked at while setting or choosing anything):", head]
    show = [r for r in rows if all_roles or r["role"] == "test"]
    for r in show:
        star = "*" if r["fits"] is False else " "
        lines.append(f"{r['id']:<26} {r['role']:<8} {r['regime']:<10} {r['config'][:58]:<58} {r['quantity']:<21} "
                     f"{r['predicted']:>7.0f}{star}{r['measured']:>7.0f} {r['ratio']:>5.2f}")
    for regime in sorted({r["regime"] for r in rows if r["role"] == "test"}):
        s = regime_spread(regime)
        errs = sorted(abs(r["ratio"] - 1) for r in rows if r["role"] == "test" and r["regime"] == regime)
        mid = errs[len(errs) // 2] if len(errs) % 2 else 0.5 * (errs[len(errs) // 2 - 1] + errs[len(errs) // 2])
        lines.append(f"test, {regime}: {s['cases']} runs, p/m {s['low']:.2f}-{s['high']:.2f}, median |p/m - 1| = "
                     f"{mid:.2f}" + ("" if s["known"] else " (too few for a range)"))
    c, fit = constants(), fit_summary()["fit"]
    lines.append(f"compute efficiency (GEMM shapes): e_max BF16 {c['e_max']['bf16']:.3f}, FP8 {c['e_max']['fp8']:.3f} "
                 f"of the peak, elementwise x{c['elementwise_scale']:.2f}; fit residuals (p/m on "
                 f"{len(fit['cases'])} fit runs): {fit['ratio_low']:.2f}-{fit['ratio_high']:.2f}")
    lines.append("  fit: " + ", ".join(f"{k} {v:.2f}" for k, v in fit["cases"].items()))
    checks = layer_efficiency_measured()
    lines.append("check (sets nothing), one layer on an H200, fraction of BF16 peak predicted / measured: " + ", ".join(
        f"{r['model']} {r['predicted_fraction']:.2f}/{(r['fraction_low'] + r['fraction_high']) / 2:.2f}" for r in checks))
    lines.append("p/m: predicted / measured. *: the model's memory check says the run does not fit (see 'assumed'). "
                 "fit and informed runs: plan --validate --json, or training_validation_table().")
    return "\n".join(lines)
