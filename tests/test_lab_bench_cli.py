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
    (["--collective", "all_to_all", "--algorithms", "ring"], "algorithms (--algorithms)", "builtin, direct"),
    (["--collective", "all_to_all", "--algorithms", ","], "algorithms (--algorithms)", "builtin, direct"),
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
    assert bench._config([64], None, "float32", 0, 1, 8, "all_to_all")["algorithms"] == ("builtin", "direct")
    assert bench._config([64], None, "float32", 0, 1, 8)["algorithms"] == ("builtin", "ring")


def test_algorithm_ids_are_the_registrys_and_the_old_names_still_work():
    from course_lib import collectives
    from course_lib.lab import algorithms
    for coll in bench.COLLECTIVES.values():  # every hand-written algorithm is a registry id of its collective
        assert set(coll.algorithms) - {"builtin"} <= set(collectives.get(coll.name).algorithms), coll.name
    assert set(algorithms.ALGORITHMS) == set(bench.COLLECTIVES["all_reduce"].algorithms) - {"builtin"}
    assert set(algorithms.ALL_TO_ALL_ALGORITHMS) == set(bench.COLLECTIVES["all_to_all"].algorithms) - {"builtin"}
    # a notebook or a shell line written with the lab's older names runs as the registry's ids
    assert bench._config([64], "builtin,tree", "float32", 0, 1, 8)["algorithms"] == ("builtin", "binomial_tree")
    assert bench._config([64], ["pairwise"], "float32", 0, 1, 8, "all_to_all")["algorithms"] == ("direct",)
    assert bench.steps_per_op("all_reduce", ("binomial_tree",), 8) == collectives.terms("all_reduce",
                                                                                        "binomial_tree", 8)[0]


def _failing_at(numel_over, slow=False):
    """The all-reduce collective with an operation that raises (or, ``slow``, all-reduces 20000 times)
    once the buffer holds more than ``numel_over`` elements: a later size of a sweep goes wrong."""
    import dataclasses

    import torch.distributed as dist

    real = bench.COLLECTIVES["all_reduce"]

    def op(name, pipeline):
        fn = real.op(name, pipeline)

        def run(out, inp):
            if out.numel() > numel_over:
                if not slow:
                    raise RuntimeError("deliberate failure at the second size")
                for _ in range(20000):
                    dist.all_reduce(out)
            fn(out, inp)
        return run

    return dataclasses.replace(real, op=op)


def test_rows_are_streamed_and_kept_when_a_later_size_fails(monkeypatch, capsys):
    monkeypatch.setitem(bench.COLLECTIVES, "all_reduce", _failing_at(256))
    heard = []
    with pytest.raises(bench.SweepIncomplete) as info:
        bench.sweep(sizes=["1K", "4K"], ranks=(2,), warmup=0, iters=1, timeout=60, on_row=heard.append)
    assert [(r["size"], r["algorithm"]) for r in info.value.result.rows] == [(1024, "builtin"), (1024, "ring")]
    assert heard == info.value.result.rows
    assert str(info.value).startswith("2 ranks: rank ") and "deliberate failure at the second size" in str(info.value)
    assert str(info.value).endswith("(1 of 2 sizes of 2 ranks measured)") and "\n" not in str(info.value)
    assert bench.main(["-b", "1K", "-e", "4K", "-n", "1", "-w", "0"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == bench.HEADER and [line.split()[0] for line in out.splitlines()[1:]] == ["1024"] * 2
    assert len(err.splitlines()) == 1 and err.startswith("error: 2 ranks: rank ") and "Traceback" not in err


def test_a_sweep_too_slow_for_its_timeout_is_called_slow_with_its_figures(monkeypatch):
    monkeypatch.setitem(bench.COLLECTIVES, "all_reduce", _failing_at(256, slow=True))
    with pytest.raises(bench.SweepIncomplete) as info:
        bench.sweep(sizes=["1K", "4K"], ranks=(2,), algorithms="builtin", warmup=0, iters=3, timeout=5)
    line = str(info.value)
    assert line.startswith("2 ranks did not finish within 5 s: slow, not a deadlock (2 ranks on "), line
    assert "2 steps per operation" in line and "1 of 2 sizes of 2 ranks measured" in line and "deadlock:" not in line
    assert "give it more time (--timeout) or use fewer ranks (--ranks)" in line
    assert len(info.value.result.rows) == 1


def test_many_ranks_on_few_cores_are_announced_with_their_steps(monkeypatch):
    monkeypatch.setattr(bench.runner, "_cores", lambda: 2)  # where oversubscription_note reads it
    assert bench.oversubscription_note(2, "all_reduce", ("builtin",)) is None
    note = bench.oversubscription_note(64, "all_reduce", ("builtin", "ring"))
    assert note.startswith("note: 64 ranks share ") and "up to 126 steps" in note
    assert bench.steps_per_op("all_reduce", ("naive",), 8) == 2 * (8 - 1)   # the root pays one alpha per message


def test_a_slow_size_is_announced_with_an_estimate_from_its_first_operations():
    config = {"warmup": 2, "iters": 5, "collective": "all_reduce", "algorithms": ("builtin", "ring")}
    probe = {"size": 1024, "ranks": 64, "seconds_per_op": {"builtin": 0.5, "ring": 23.0}}
    assert bench.size_seconds(probe["seconds_per_op"], 1024, 2, 5) == pytest.approx(5 * 0.5 * 1 + 5 * 23.0)
    assert bench.size_seconds({"builtin": 1e-4}, 1024, 2, 5) == pytest.approx(7 * 20 * 1e-4)
    line = bench._slow_size_note(probe, config, seconds_left=100)
    assert line == ("note: 64 ranks, 1 KiB: 23 s per operation (ring, 126 steps); this size takes about 118 s, "
                    "more than the 100 s the timeout leaves: raise --timeout, or use fewer ranks")
    assert bench._slow_size_note({**probe, "seconds_per_op": {"builtin": 1e-4}}, config, 100) is None


@pytest.mark.parametrize("torchrun", [False, True])
def test_one_rank_says_that_busbw_is_zero_by_definition(monkeypatch, capsys, torchrun):
    """A learner with one GPU runs the bench on 1 rank (seen on a one-GPU H200 under torchrun): it says what the
    numbers are not, once, before the rows."""
    if torchrun:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        for k, v in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                     "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}.items():
            monkeypatch.setenv(k, v)
    assert bench.main(["--ranks", "1", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "--backend", "gloo"]) == 0
    out, err = capsys.readouterr()
    assert err.count(bench.ONE_RANK_NOTE) == 1 and "busbw is 0 by definition" in err
    assert "1024" in out and out.count("\n") >= 2
