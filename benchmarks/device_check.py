"""Run the course's GPU code paths on a real CUDA machine, and keep what its own tools print.

CI has no GPU, so three parts of the course never run there: chapter 01's host<->device copy
measurement (``lab.host_device``), ``inspect --local`` reading this machine's ``nvidia-smi``, and the
lab benchmark under ``torchrun`` with the NCCL backend. This script runs each on the machine it is
started on and writes, under ``--out`` (a folder):

- ``raw/``: the verbatim outputs of ``nvidia-smi`` (plain, ``-L``, ``topo -m``, ``nvlink -s``, ``-q``,
  the PCIe query), the NCCL_DEBUG=INFO log and topology dump of a one-rank NCCL run, and what the
  course printed for each (``inspect`` on every raw file, ``report_measurement``, the bench rows);
- ``summary.json``: the host<->device bandwidths by size, memory and direction, the link nvidia-smi
  reports and its per-direction spec, and each step's exit status.

Usage (a machine with a CUDA GPU and torch; a venv is not needed, ``PYTHONPATH`` at the repository):

    PYTHONPATH=. python3 benchmarks/device_check.py --out /tmp/device_check

Without a GPU every step still runs and reports why it measured nothing (the CPU check of this script).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SMI = {
    "smi.txt": ["nvidia-smi"],
    "smi_L.txt": ["nvidia-smi", "-L"],
    "topo_m.txt": ["nvidia-smi", "topo", "-m"],
    "nvlink_s.txt": ["nvidia-smi", "nvlink", "-s"],
    "smi_q.txt": ["nvidia-smi", "-q"],
    "lspci_vv.txt": ["lspci", "-vv"],
    "pcie_query.txt": ["nvidia-smi", "--query-gpu=name,pcie.link.gen.max,pcie.link.width.max,"
                       "pcie.link.gen.gpucurrent,pcie.link.width.current,driver_version", "--format=csv"],
}
SIZES_BYTES = (1_000_000, 16_000_000, 256_000_000, 1_000_000_000)


def run(cmd, out_file: Path, env=None, timeout=180) -> dict:
    """Run one command, keep stdout+stderr verbatim in ``out_file``; return its status."""
    start = time.perf_counter()
    if shutil.which(cmd[0]) is None:
        out_file.write_text(f"{cmd[0]}: not installed here\n")
        return {"cmd": " ".join(cmd), "rc": None, "why": "not installed"}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        out_file.write_text(p.stdout + (("\n--- stderr ---\n" + p.stderr) if p.stderr else ""))
        return {"cmd": " ".join(cmd), "rc": p.returncode, "seconds": round(time.perf_counter() - start, 1)}
    except subprocess.TimeoutExpired:
        out_file.write_text(f"timed out after {timeout} s\n")
        return {"cmd": " ".join(cmd), "rc": None, "why": f"timeout {timeout} s"}


def host_device(raw: Path) -> list[dict]:
    """Chapter 01's measurement at several sizes, and the chapter's own report of the 256 MB one."""
    import contextlib
    import io

    from course_lib.chapters import pcie
    from course_lib.lab.host_device import measure_host_device_bandwidth

    rows, report = [], io.StringIO()
    for nbytes in SIZES_BYTES:
        m = measure_host_device_bandwidth(nbytes=nbytes, repeats=5 if nbytes < 1e9 else 3)
        if not m.available:
            report.write(f"{nbytes}: {m.reason}\n")
            break
        for r in m.results:
            rows.append({"nbytes": nbytes, "device": m.device_name, "pcie_generation": m.pcie_generation,
                         "pcie_lanes": m.pcie_lanes, **r, "gb_s": round(r["bytes_per_s"] / 1e9, 2)})
        if nbytes == 256_000_000:  # what chapter 01's cell prints
            with contextlib.redirect_stdout(report):
                pcie.report_measurement(m)
    (raw / "chapter01_report.txt").write_text(report.getvalue())
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for raw/ and summary.json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    summary = {"steps": {}}
    for name, cmd in SMI.items():
        summary["steps"][name] = run(cmd, raw / name)
    py = sys.executable
    summary["steps"]["inspect_local"] = run([py, "-m", "course_lib", "inspect", "--local"], raw / "inspect_local.txt")
    try:
        summary["host_device"] = host_device(raw)
    except Exception as exc:  # keep going: the other steps are worth having
        summary["host_device_error"] = f"{type(exc).__name__}: {exc}"
    env = dict(os.environ, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,GRAPH,ENV,TUNING",
               NCCL_TOPO_DUMP_FILE=str(raw / "nccl_topo_dump.xml"), PYTHONUNBUFFERED="1")
    torchrun = shutil.which("torchrun")
    bench = ([torchrun] if torchrun else [py, "-m", "torch.distributed.run"]) + [
        "--nproc_per_node", "1", "-m", "course_lib.lab.bench", "-b", "1M", "-e", "64M", "-f", "4", "--backend", "nccl"]
    summary["steps"]["bench_nccl"] = run(bench, raw / "bench_nccl_1rank.txt", env=env)
    for name in ("topo_m.txt", "nvlink_s.txt", "smi_q.txt", "bench_nccl_1rank.txt", "nccl_topo_dump.xml"):
        if (raw / name).exists():
            summary["steps"][f"inspect {name}"] = run([py, "-m", "course_lib", "inspect", str(raw / name)],
                                                      raw / f"inspect_{name}.out")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
