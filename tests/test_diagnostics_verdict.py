"""A verdict with its reason (issue 32 item 5): every finding has a status ok/warn/fail, a cause and a next command;
an nccl-tests run's busbw at its largest size is judged against the band compare's model and range give."""
import json

import pytest

from course_lib import __main__ as cli
from course_lib import cli_inspect, costmodel, diagnostics, hardware, units
from course_lib.diagnostics import compare, nccl_tests
from course_lib.diagnostics import verdict as v


@pytest.fixture(autouse=True)
def _fresh_commands():
    cli._EXTRA_COMMANDS.clear()
    yield
    cli._EXTRA_COMMANDS.clear()


HOSTS = ("gpu-node-1", "gpu-node-2")
SOCKET_LOG = ("gpu-node-1:4242:4242 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
              "gpu-node-1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
              "gpu-node-1:4242:4242 [0] NCCL INFO NET/IB : No device found.",
              "gpu-node-1:4242:4242 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
              "gpu-node-1:4242:4242 [0] NCCL INFO Using network Socket")
IB_LOG = ("gpu-node-1:4242:4242 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
          "gpu-node-1:4242:4242 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
          "gpu-node-1:4242:4242 [0] NCCL INFO Using network IB")


def _run(busbw_at_largest: float) -> str:
    """An all_reduce_perf output on 2 nodes x 8 GPUs whose largest size (256 MiB) measured ``busbw_at_largest``."""
    head = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0", "#", "# Using devices"]
    head += [f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {HOSTS[r // 8]} device  {r % 8} [0x{r:02x}] NVIDIA H100 80GB HBM3"
             for r in range(16)]
    head += ["#", "#                                                              out-of-place                       in-place",
             "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong",
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)"]
    rows = []
    for size, busbw in ((1 << 20, 5.0), (1 << 24, 20.0), (1 << 28, busbw_at_largest)):
        algbw = busbw * 16 / 30
        t = size / (algbw * 1e3)
        rows.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {t:7.1f}  {algbw:6.2f}  {busbw:6.2f}       0"
                    f"  {t:7.1f}  {algbw:6.2f}  {busbw:6.2f}       0")
    tail = ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 10.1 ", "#"]
    return head, rows, tail


def _paste(busbw_at_largest: float, log=SOCKET_LOG) -> str:
    """The run with the NCCL INFO lines inside it, as people paste it (log lines after the rank lines)."""
    head, rows, tail = _run(busbw_at_largest)
    return "\n".join(head[:19] + list(log) + head[19:] + rows + tail) + "\n"


SYSTEM = hardware.system("dgx-h100")


def _expected(busbw):
    run = nccl_tests.parse(_paste(busbw))
    return run, v.expected_busbw(run, SYSTEM, nccl_version="2.21.5+cuda12.4")


def test_the_band_is_compares_model_and_range():
    run, e = _expected(38.0)
    parsed = run.as_dict()
    assumed = compare.assumptions(parsed, SYSTEM, "all_reduce")
    pred, ranges = compare.prediction(parsed, SYSTEM, "all_reduce", assumed, nccl_version="2.21.5")
    assert e["nccl_version"] == pred.nccl_version == costmodel.nccl_release("2.21.5")[0]
    big = pred.busbw[-1] / units.GB
    assert (e["nodes"], e["gpus_per_node"], e["size"]) == (2, 8, 1 << 28)
    assert e["predicted_busbw_gb_s"] == pytest.approx(big)
    assert e["band_gb_s"] == pytest.approx(list(ranges[-1].busbw(big)))
    direct = costmodel.predict("all_reduce", [1 << 20, 1 << 24, 1 << 28], SYSTEM, nodes=2, gpus_per_node=8,
                               nccl_version="2.21.5")
    assert e["predicted_busbw_gb_s"] == pytest.approx(float(direct.busbw[-1]) / units.GB)


def test_below_the_band_with_net_socket_in_the_log_is_a_fail_naming_the_line():
    paste = _paste(38.0)
    report = cli_inspect.inspect_texts([("mixed", paste)], SYSTEM)[0]
    busbw = [x for x in report["verdicts"] if "256 MiB all_reduce 38 GB/s" in x["text"]]
    assert len(busbw) == 1, report["verdicts"]
    (f,) = busbw
    low, high = report["expected_busbw"]["band_gb_s"]
    assert 38.0 < low
    line = paste.splitlines().index(SOCKET_LOG[2]) + 1
    assert f["status"] == "fail" and f"expected {low:.3g}-{high:.3g} GB/s" in f["text"]
    assert f"fail; NCCL ran over NET/Socket (NET/IB : No device found) (line {line}): see the NCCL log part" in f["text"]
    assert f["next_command"] and f["cause"]


def test_below_the_band_without_a_known_cause_is_a_warn_and_inside_it_ok():
    below = cli_inspect.inspect_texts([("ib", _paste(38.0, IB_LOG))], SYSTEM)[0]
    (f,) = [x for x in below["verdicts"] if "256 MiB all_reduce" in x["text"]]
    assert f["status"] == "warn" and "nothing in the paste says why" in f["text"]
    _, e = _expected(38.0)
    inside = sum(e["band_gb_s"]) / 2
    ok = cli_inspect.inspect_texts([("ib", _paste(inside, IB_LOG))], SYSTEM)[0]
    (g,) = [x for x in ok["verdicts"] if "256 MiB all_reduce" in x["text"]]
    assert g["status"] == "ok"


def test_every_finding_has_a_status_and_the_text_output_starts_with_it(capsys):
    names = diagnostics.sample_names()
    assert cli.main(["inspect", "--json"] + [a for n in names for a in ("--sample", n)]) == 0
    for r in json.loads(capsys.readouterr().out):
        assert len(r["verdicts"]) == len(r["findings"]), r["file"]
        for f, x in zip(r["findings"], r["verdicts"]):
            assert x["text"] == f and x["status"] in v.STATUSES
            if x["status"] != "ok":
                assert x["cause"] and x["next_command"], x
    assert cli.main(["inspect", "--sample", "ibstat_mlx4_two_ports_down.txt"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  - ")]
    assert lines and all(ln[4:].split(":")[0] in v.STATUSES for ln in lines)
    assert any(ln.startswith("  - warn: ") and "Down" in ln for ln in lines)


@pytest.mark.parametrize("text, status, command", [
    (SOCKET_LOG[0] + "\ngpu-node-1:4242:4242 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n",
     "warn", "lsmod | grep nvidia_peermem"),
])
def test_a_problem_finding_names_its_next_command(text, status, command):
    report = cli_inspect.inspect_text(text)
    hit = [x for x in report["verdicts"] if x["next_command"] == command]
    assert hit and hit[0]["status"] == status, report["verdicts"]


def test_port_down_and_a_gpu_without_nvlinks_are_warnings_with_their_commands():
    ib = cli_inspect.inspect_text(diagnostics.sample_text("ibstat_mlx4_two_ports_down.txt"))
    down = [x for x in ib["verdicts"] if x["status"] == "warn"]
    assert down and all(x["next_command"].startswith("ibstat") for x in down)
    nv = cli_inspect.inspect_text(diagnostics.sample_text("nvlink_v100_inactive.txt"))
    assert any(x["status"] == "warn" and "nvidia-smi nvlink" in x["next_command"] for x in nv["verdicts"])


def test_finding_is_a_string_and_refuses_an_unknown_status():
    f = v.Finding("a port is Down", "warn", "cable", "ibstat")
    assert f == "a port is Down" and "Down" in f and f.line() == "warn: a port is Down"
    assert f.relabel("ibstat part: a port is Down").status == "warn"
    assert v.as_finding("plain").status == "ok" and v.worst(["plain", f]) == "warn"
    with pytest.raises(ValueError, match="status must be one of ok, warn, fail"):
        v.Finding("x", "bad")


def test_a_gpu_with_fewer_nvlinks_than_its_peers_is_a_warning():
    text = diagnostics.sample_text("topo_4x_h100_nv6_nic_rows.txt")
    lines = text.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("GPU2"))
    lines[row] = lines[row].replace("NV6", "NV4")
    for i, ln in enumerate(lines):  # the matrix is symmetric: GPU2's column too
        if ln.startswith(("GPU0", "GPU1", "GPU3")):
            cells = ln.split()
            cells[3] = "NV4"
            lines[i] = "    ".join(cells)
    report = cli_inspect.inspect_text("\n".join(lines) + "\n")
    warn = [x for x in report["verdicts"] if x["status"] == "warn" and "GPU2 shows NV4" in x["text"]]
    assert warn and warn[0]["next_command"] == "nvidia-smi nvlink -s -i 2", report["verdicts"]
    whole = cli_inspect.inspect_text(text)
    assert not any("fewer NVLinks" in x["cause"] for x in whole["verdicts"])
