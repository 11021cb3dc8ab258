"""The model against published training runs: Megatron/ZeRO cases, and FSDP/CP/MoE/all-to-all cases."""
from __future__ import annotations

import math
from functools import lru_cache

from .. import datafiles, evidence, hardware, units
from ..transformer import model_state_bytes
from .layouts import published
from .links import _members_per_node, all_to_all_time
from .results import Estimate
from .step import estimate


def _case_estimate(case: dict, gpu_efficiency=None) -> Estimate:
    defaults = published()["defaults_for_unstated_fields"]
    get = lambda k: case.get(k, defaults.get(k))  # noqa: E731
    return estimate(case["model"], case["system"], gpus=case["gpus"], tp=case["tp"], pp=case["pp"],
                    global_batch=case["global_batch"], micro_batch=get("micro_batch"), zero=get("zero"),
                    recompute=get("recompute"), interleave=get("interleave"),
                    sequence_parallel=get("sequence_parallel"), dp_overlap=get("dp_overlap"),
                    gpu_efficiency=gpu_efficiency)


def validation_table(gpu_efficiency=None) -> list[dict]:
    """Every published case: predicted, measured, predicted/measured, and the ratio within its group.

    ``relative`` is (predicted/measured) divided by the median of that ratio in the case's group:
    it shows whether the model gets the relative effect (scaling, layout) right even when the
    absolute level (set by gpu_efficiency) is off.
    """
    rows = []
    for case in published()["cases"]:
        src = datafiles.source(case["source"])
        row = {"id": case["id"], "group": case["group"], "kind": case["kind"], "where": case["where"],
               "source": src["title"].split(",")[0], "url": src["url"], "assumed": case.get("assumed", [])}
        if case["kind"] == "memory":
            pred = model_state_bytes(case["params"], case["dp"], case["zero"])["total"]
            row.update(config=f"{case['params'] / 1e9:g}B params, DP {case['dp']}, ZeRO-{case['zero']}",
                       quantity="model states GB/GPU", predicted=pred / units.GB,
                       measured=case["measured_model_state_bytes"] / units.GB)
        else:
            e = _case_estimate(case, gpu_efficiency)
            row.update(config=f"{case['model']} {case['gpus']} GPUs {e.layout} ZeRO-{e.zero} B{case['global_batch']} "
                              f"mb{e.micro_batch}", quantity="TFLOP/s per GPU", predicted=e.tflops_per_gpu,
                       measured=float(case["measured_tflops_per_gpu"]), fits=e.fits)
        row["ratio"] = evidence.compare(case["id"], row["predicted"],
                                        evidence.measurement(row["measured"], row["quantity"], case["source"])).ratio
        rows.append(row)
    groups = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row["ratio"])
    for row in rows:
        row["relative"] = row["ratio"] / evidence.median(groups[row["group"]])
    return rows


def validation_summary(rows=None) -> str:
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


def _case_system(name) -> hardware.System:
    """A catalog system, or one of the data file's named variants (H800 = an H100 node with less NVLink)."""
    variants = published_modern()["systems"]
    if name in variants:
        v = variants[name]
        return hardware.system(v["base"]).variant(gpu_link_gb_s=v["gpu_link_gb_s"], name=v["name"])
    return hardware.system(name)


def all_to_all_bottleneck_bandwidth(system, nbytes, ranks, stride=1) -> float:
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


def modern_validation_summary(rows=None) -> str:
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
    ``activation_over_selective`` (measured over the formula with recompute none / selective). A check of
    both formulas: nothing here sets them.
    """
    from ..transformer import activation_bytes_per_layer
    from .layouts import assumption

    block = published()["layer_efficiency_h200"]
    assumed = assumption("gpu_efficiency")
    rows = []
    for row in block["layers"]:
        formula = {rc: activation_bytes_per_layer(row["model"], recompute=rc) for rc in ("none", "selective")}
        lo, hi = min(row["fraction_of_peak"]), max(row["fraction_of_peak"])
        rows.append({**row, "gpu": block["gpu"], "assumed": assumed, "fraction_low": lo, "fraction_high": hi,
                     "over_assumed": lo / assumed, "matmul_fraction": min(block["matmul_8192_tflops"]) /
                     block["peak_bf16_tflops"], "activation_over_none": row["activation_bytes"] / formula["none"],
                     "activation_over_selective": row["activation_bytes"] / formula["selective"],
                     "source": block["source"]})
    return rows
