"""Chapter 09: a machine described in a system file, scaled out to more nodes, beside its own nccl-tests run.

The example machine is ``data/systems/rtx4090x4_p2p.toml`` (four RTX 4090 on PCIe Gen4 x16 with
peer-to-peer on) and its published ``all_reduce_perf`` rows. Predictions come from
:func:`course_lib.costmodel.predict`; bandwidths are bytes/s per direction, NIC rates Gb/s (bits).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import costmodel, hardware, systemfile, units, validate
from ..diagnostics import nccl_tests
from ..views import your_cluster as views
from ..widgets import explorer, gpu_count_slider, link_speed_slider

SYSTEMS = Path(hardware.__file__).resolve().parent / "data" / "systems"
EXAMPLE_SYSTEM = SYSTEMS / "rtx4090x4_p2p.toml"
EXAMPLE_RUN = SYSTEMS / "rtx4090x4_p2p_all_reduce_perf.txt"
NODE_COUNTS = (1, 2, 4, 8, 16, 32)
NICS_PER_NODE = (1, 2, 4, 8)
SIZES = 2.0 ** np.arange(20, 33)  # 1 MiB to 4 GiB, nccl-tests style


@lru_cache(maxsize=1)
def example_system() -> hardware.System:
    """The shipped 4x RTX 4090 machine, read from its system file."""
    return systemfile.load_system(EXAMPLE_SYSTEM)


@lru_cache(maxsize=1)
def measured_run() -> dict:
    """The published all_reduce_perf rows of that machine (``nccl_tests.parse_nccl_tests``)."""
    return nccl_tests.parse_nccl_tests(EXAMPLE_RUN.read_text(encoding="utf-8"))


def scaled(nics_per_node: int, nic_gbit_s: float, fabric: str = "roce") -> hardware.System:
    """The example machine with ``nics_per_node`` ports of ``nic_gbit_s`` Gb/s (per direction) each,
    running ``fabric`` (RoCE by default: the box's own file names no RDMA fabric)."""
    return example_system().variant(nics_per_node=nics_per_node, nic_gbit_s=nic_gbit_s, fabric=fabric)


@lru_cache(maxsize=1)
def _one_box_busbw_gb_s() -> np.ndarray:
    return costmodel.predict("all_reduce", SIZES, example_system()).busbw / units.GB


@lru_cache(maxsize=64)
def _scaled_busbw_gb_s(nodes, nics_per_node, nic_gbit_s) -> np.ndarray:
    """busbw (GB/s) over SIZES of ``nodes`` boxes with these NICs (cached: one model call per event)."""
    return costmodel.predict("all_reduce", SIZES, scaled(nics_per_node, nic_gbit_s), nodes=nodes).busbw / units.GB


def scaling_frame(nodes, nics_per_node, nic_gbit_s) -> dict:
    """The explorer's model result: busbw (GB/s) over SIZES for one box predicted, the published one-box run, and
    ``nodes`` boxes with these NICs (RoCE)."""
    run = measured_run()["rows"]
    return {"sizes": SIZES, "one_box_gb_s": _one_box_busbw_gb_s(),
            "measured_sizes": [r["size"] for r in run], "measured_gb_s": [r["busbw"] for r in run],
            "scaled_gb_s": _scaled_busbw_gb_s(nodes, nics_per_node, nic_gbit_s),
            "nodes": nodes, "nics_per_node": nics_per_node, "nic_gbit_s": nic_gbit_s}


def _draw(ax, nodes, nics_per_node, nic_gbit_s):
    """Draw once (:func:`course_lib.views.your_cluster.draw_scaling`); returns the updater for later events."""
    update = views.draw_scaling(ax, scaling_frame(nodes, nics_per_node, nic_gbit_s))
    return lambda **values: update(scaling_frame(**values))


def _readout(nodes, nics_per_node, nic_gbit_s):
    one = costmodel.predict("all_reduce", 2**30, example_system()).busbw[0]
    many = costmodel.predict("all_reduce", 2**30, scaled(nics_per_node, nic_gbit_s), nodes=nodes)
    share = many.busbw[0] / one
    rng = costmodel.range_for(2**30, nodes, scaled(nics_per_node, nic_gbit_s))
    return (f"1 GiB all-reduce: one box {one / units.GB:.3g} GB/s busbw; {nodes} box(es) with {nics_per_node} x "
            f"{nic_gbit_s:.3g} Gb/s RoCE per box: <b>{many.busbw[0] / units.GB:.3g} GB/s</b> ({share:.0%} of one box, "
            f"{many.algorithms[0]}); {costmodel.range_phrase(many.busbw[0] / units.GB, rng)}")


def scaling_explorer(nodes=4, nics_per_node=2, nic_gbit_s=25.0):
    """Sliders: boxes, NIC ports per box, Gb/s (bits) per port per direction.

    Shows: a box's all-reduce bandwidth falls once the job spans boxes over RoCE, and more NIC ports
    per box win part of it back.
    """
    if nodes not in NODE_COUNTS:
        raise ValueError(f"nodes must be one of {NODE_COUNTS}, got {nodes!r}")
    if nics_per_node not in NICS_PER_NODE:
        raise ValueError(f"nics_per_node must be one of {NICS_PER_NODE}, got {nics_per_node!r}")
    validate.number("nic_gbit_s", nic_gbit_s, low=10, high=800)
    controls = {
        "nodes": gpu_count_slider(nodes, options=NODE_COUNTS, description="boxes"),
        "nics_per_node": gpu_count_slider(nics_per_node, options=NICS_PER_NODE, description="NIC ports per box"),
        "nic_gbit_s": link_speed_slider(nic_gbit_s, low=10, high=800, description="Gb/s (bits!) per port per direction"),
    }
    return explorer(_draw, controls, readout=_readout, title="Your machine, scaled out", figsize=(8, 4.4))
