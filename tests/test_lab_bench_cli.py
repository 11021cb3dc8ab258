"""lab.bench's command line answers bad input with one line ``error: ...`` and status 2, and the
memory check refuses runs the machine cannot hold before any rank starts."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from course_lib.lab import bench, memory  # noqa: E402
from tests.test_lab_helpers import live_children  # noqa: E402

BAD = [
    (["--ranks", "0"], "ranks (--ranks)", "[1, 64]"),
    (["--ranks", "2,x"], "ranks (--ranks)", "[1, 64]"),
    (["-b", "1X"], "minbytes (-b)", "2G"),
    (["-e", "5G"], "maxbytes (-e)", "2G"),
    (["-b", "4M", "-e", "64K"], "maxbytes", ">= minbytes"),
    (["--algorithms", "foo"], "algorithms (--algorithms)", "builtin, ring"),
    (["-n", "0"], "iters (-n)", "[1, 10000]"),
    (["-n", "x"], "-n/--iters", "int"),
    (["-w", "-1"], "warmup (-w)", "[0, 1000]"),
    (["-f", "1"], "stepfactor (-f)", "(1, 1024]"),
    (["--pipeline", "99"], "pipeline (--pipeline)", "[1, 64]"),
    (["--timeout", "0"], "timeout (--timeout)", "(0, 3600]"),
    (["-d", "int8"], "-d/--dtype", "float32"),
    (["--bogus"], "unrecognized", "--bogus"),
    (["--ranks", "64", "-b", "2G", "-e", "2G"], "64 ranks", "available"),
    # all_to_all is checked by the same code, so its errors name the flag too (they did not when it had its own path)
    (["--collective", "all_to_all", "-n", "0"], "iters (-n)", "[1, 10000]"),
    (["--collective", "all_to_all", "-w", "-1"], "warmup (-w)", "[0, 1000]"),
    (["--collective", "all_to_all", "--algorithms", "ring"], "algorithms (--algorithms)", "builtin, pairwise"),
    (["--collective", "all_to_all", "--algorithms", ","], "algorithms (--algorithms)", "builtin, pairwise"),
]


@pytest.mark.parametrize("argv, name, allowed", BAD)
def test_bad_argument_is_one_line_and_status_2(argv, name, allowed, capsys):
    assert bench.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert name in lines[0] and allowed in lines[0]
    assert live_children() == []  # refused before any rank started


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_nccl_without_a_gpu_is_refused(capsys):
    assert bench.main(["--backend", "nccl"]) == 2
    assert capsys.readouterr().err.strip() == ("error: backend (--backend) nccl needs CUDA GPUs and this "
                                               "machine has none; use gloo or auto")


def test_the_command_line_itself_prints_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "course_lib.lab.bench", "-b", "4M", "-e", "64K"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: maxbytes (-e) must be >= minbytes (4 MiB) and <= 2G; "
                                                "got 64 KiB"]


def test_memory_figures():
    assert memory.bench_bytes(2**30, 2) == 2 * (memory.BENCH_FACTOR * 2**30 + memory.RANK_OVERHEAD_BYTES)
    assert memory.ddp_bytes(1000, 0, 1) == memory.DDP_PARAM_FACTOR * 4000 + memory.DDP_OVERHEAD_BYTES
    free = memory.available_bytes()
    assert free is None or free > 0
    with pytest.raises(ValueError, match="ranks"):
        memory.bench_bytes(1, 0)


def test_check_names_the_figure_and_what_is_available():
    memory.check(1e9, "x", "y", available=2e9)  # fits: nothing happens
    with pytest.raises(ValueError, match=r"^a run needs about 3 GB of memory and only 2 GB is available; lower it$"):
        memory.check(3e9, "a run", "lower it", available=2e9)


def test_sweep_refuses_before_starting_ranks(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 1e9)
    with pytest.raises(ValueError, match=r"a 64 MiB message on 4 ranks .* needs about 2.01 GB .* only 1 GB"):
        bench.sweep(sizes=["64M"], ranks=(2, 4))
    assert live_children() == []


def test_nccl_memory_check_reads_nvidia_smi_and_never_starts_cuda(tmp_path, monkeypatch):
    # ranks are forked after the check: a parent that started CUDA would leave them unable to use it
    import torch

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 80000\necho 1000\n")  # MiB free on two GPUs; the check uses the least
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert bench._gpu_free_bytes() == 1000 * 2**20
    with pytest.raises(ValueError, match="lower maxbytes"):
        bench.check_memory(2**30, 1, "nccl")
    bench.check_memory(2**20, 1, "nccl")  # about 106 MB fits in 1000 MiB
    assert not torch.cuda.is_initialized()


def test_errors_carry_the_name_they_are_given_not_a_relabelled_prefix():
    names = {"iters": "iters (-n)", "maxbytes": "maxbytes (-e)"}
    with pytest.raises(ValueError, match=r"^iters \(-n\) must be in \[1, 10000\], got 0$"):
        bench._config([64], None, "float32", 0, 0, 8, names=names)
    with pytest.raises(ValueError, match=r"^maxbytes \(-e\) must be >= minbytes"):
        bench._size_range("1M", "1K", 2, names)
    with pytest.raises(ValueError, match=r"^iters must be in"):  # the library's own name without them
        bench._config([64], None, "float32", 0, 0, 8)
    assert bench._config([64], None, "float32", 0, 1, 8, "all_to_all")["algorithms"] == ("builtin", "pairwise")
    assert bench._config([64], None, "float32", 0, 1, 8)["algorithms"] == ("builtin", "ring")
