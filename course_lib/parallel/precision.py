"""Training precision recipes (``data/precision.json``): which GEMMs run at which tensor peak, the memory an FP8
recipe adds, and which communication it sends in FP8."""
from __future__ import annotations

from functools import lru_cache

from .. import datafiles, hardware, validate
from ..hardware import PRECISIONS  # noqa: F401 - the precisions of a GPU's peaks and of the recipes


@lru_cache(maxsize=1)
def precision_data() -> dict:
    """The parsed ``data/precision.json``."""
    return datafiles.load("precision.json")


def recipe(precision: str) -> dict:
    """One recipe of ``data/precision.json`` by name (``bf16``, ``fp8``, ``mxfp8``): its linear-layer peak, the
    FP8 weight copies' bytes per linear parameter, the bytes per value of saved linear inputs, source and note."""
    table = precision_data()["recipes"]
    return dict(table[validate.choice("precision", precision, table)])


def fp8_dispatch_bytes() -> float:
    """Bytes per value of an FP8 MoE dispatch (DeepSeek-V3's recipe): the combine stays BF16."""
    return float(precision_data()["fp8_communication"]["dispatch"]["bytes_per_value"])


def precision_summary(precision: str, gpu: hardware.GPU) -> str:
    """One line for a readout: the recipe, the peak its linear layers run at on ``gpu`` and what stays BF16."""
    r = recipe(precision)
    peak = gpu.peak_flops(r["linear_peak"]) / 1e12
    if precision == "bf16":
        return f"precision BF16: every GEMM at the {gpu.name}'s dense BF16 peak {peak:,.0f} TFLOP/s"
    return (f"precision {r['name']}: linear layers at the dense {r['linear_peak'].upper()} peak {peak:,.0f} TFLOP/s; "
            f"attention scores/values, norms, router, embedding and output layer in BF16 "
            f"({gpu.bf16_flops / 1e12:,.0f} TFLOP/s); +{r['fp8_weight_bytes_per_linear_param']:g} B per linear weight "
            f"(FP8 copy and transpose), linear inputs saved at {r['saved_linear_input_bytes']:g} B a value")
