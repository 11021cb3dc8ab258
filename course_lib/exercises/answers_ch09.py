"""Chapter 09 (your cluster): the answer models of 09.6-09.8, computed from the cost model on the chapter's
RTX 4090 box and, for 09.8, on the system file that is itself the answer (the key entry's ``system_toml``)."""
from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path

from .. import costmodel, systemfile, units
from ..diagnostics import nccl_tests
from . import key_field

SYSTEMS = Path(__file__).resolve().parent.parent / "data" / "systems"


def _rtx4090_box():
    return systemfile.load_system(SYSTEMS / "rtx4090x4_p2p.toml")


@lru_cache(maxsize=None)
def rtx4090_ports_per_node() -> int:
    """09.6: chapter 09's box on 4 nodes: the fewest 25 Gb/s ports per node that keep 75% of one box's busbw."""
    box = _rtx4090_box()
    one_box = costmodel.predict("all_reduce", 2**30, box).busbw[0]
    return next(k for k in range(1, 65)
                if costmodel.predict("all_reduce", 2**30, box.variant(nics_per_node=k, nic_gbit_s=25, fabric="roce"),
                                     nodes=4).busbw[0] >= 0.75 * one_box)


@lru_cache(maxsize=None)
def rtx4090_predicted_over_measured() -> float:
    """09.7: chapter 09's box: the cost model's busbw of a 1 GiB all-reduce over the measured one."""
    box = _rtx4090_box()
    measured = nccl_tests.parse_nccl_tests((SYSTEMS / "rtx4090x4_p2p_all_reduce_perf.txt").read_text())
    row = next(r for r in measured["rows"] if r["size"] == 2**30)
    return costmodel.predict("all_reduce", 2**30, box).busbw[0] / units.GB / row["busbw"]


@lru_cache(maxsize=None)
def system_file_busbw(system_toml: str) -> float:
    """09.8: a system file's predicted busbw (GB/s) of a 1 GiB all-reduce on all its nodes.

    The file is the answer half of a design exercise, so the package does not hold it: it is the key
    entry's ``system_toml`` (the instructor's key); only this computation ships.
    """
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "system.toml"
        path.write_text(system_toml, encoding="utf-8")
        system = systemfile.load_system(path)
    nodes = systemfile.nodes_default(system)
    return costmodel.predict("all_reduce", 2**30, system, nodes=nodes).busbw[0] / units.GB


MODELS = {"09.6": lambda entry: rtx4090_ports_per_node(),
          "09.7": lambda entry: rtx4090_predicted_over_measured(),
          "09.8": lambda entry: system_file_busbw(key_field(entry, "system_toml", str))}
