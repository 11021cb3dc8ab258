"""Issue 32, by kind of failure a blind check found: each paste below is written from the FORMAT as the tools print
it (the source file and tag are named beside each), never copied from a sample, so that the readers are held to
the format rather than to one machine's output."""
from __future__ import annotations

import json

import pytest

from course_lib import cli_inspect
from course_lib import diagnostics as d
from course_lib.diagnostics import failures, nccl_log, nccl_tests, pasted, rocm_smi

# nccl-tests src/util.cu (HEAD, 2.17+): the header lines, the rank lines ('#  Rank %2d Group %2d Pid %6d on %10s
# device %2d [%04x:%02x:%02x] %s'), the two column-header lines with '#wrong', rows of
# '%12li  %12li  %8s  %6s  %6s' then per placement '  %7s  %6s  %6s  %6g'
HEAD = ("# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703\n"
        "# Collective test starting: all_reduce_perf\n"
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
        "validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n"
        "#  Rank  0 Group  0 Pid  41233 on    gpu-a01 device  0 [0000:18:00] NVIDIA A100-SXM4-80GB\n"
        "#  Rank  1 Group  0 Pid  41234 on    gpu-a01 device  1 [0000:2a:00] NVIDIA A100-SXM4-80GB\n#\n")
COLS = ("#                                                              out-of-place                       in-place\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n")


def _row(size, time_us, algbw, busbw, wrong="0"):
    return (f"{size:12d}  {size // 4:12d}  {'float':>8}  {'sum':>6}  {-1:6d}  {time_us:7.2f}  {algbw:6.2f}  {busbw:6.2f}  "
            f"{wrong:>6}  {time_us:7.2f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:>6}\n")


ROWS = "".join(_row(s, 10 + s / 2e5, s / (10 + s / 2e5) / 1e3, s / (10 + s / 2e5) / 1e3) for s in (8 << k for k in range(0, 27, 4)))
CLOSING = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 53.2104 \n#\n\n# Collective test concluded: all_reduce_perf\n"


# ---- kind 1: a copy with result rows that ends early is a run with results, cut; never 'failed before its first size'
@pytest.mark.parametrize("cut", ["no closing lines", "inside a row", "no avg line, then a prompt"])
def test_a_cut_off_table_is_a_run_with_results_that_the_copy_cut(cut):
    text = HEAD + COLS + ROWS
    if cut == "inside a row":
        text = text.rstrip("\n")[:-30] + "\n"
    elif cut == "no avg line, then a prompt":
        text += "user@gpu-a01:~$ \n"
    run = nccl_tests.parse(text)
    assert run.rows and not run.failed_before_first_size and run.cut_after == run.rows[-1]["size"]
    assert run.last_row_partial == (cut == "inside a row")
    found = " ".join(cli_inspect.inspect_text(text)["findings"])
    assert "failed before" not in found and "the copy ends after size" in found
    whole = nccl_tests.parse(text + CLOSING if cut == "no closing lines" else HEAD + COLS + ROWS + CLOSING)
    assert whole.cut_after is None and whole.avg_busbw == pytest.approx(53.2104)  # kind 7: the Avg line is read
    assert "Avg bus bandwidth" in " ".join(cli_inspect.inspect_text(HEAD + COLS + ROWS + CLOSING)["findings"])


@pytest.mark.parametrize("prefix", ["node-1: ", "10.3.35.83: ", "0: ", "Thu Jul 18 10:00:00 2024<stdout>:",
                                    "Thu Jul 18 10:00:00 2024[1,0]<stdout>:"])
def test_a_prefix_before_every_line_is_taken_off(prefix):
    """pdsh/clush put 'host: ' before each line, srun --label the task's number; Open MPI --timestamp-output (with or without --tag-output) a
    ctime and '<stdout>:' (ompi/orte iof)."""
    text = "".join(prefix + line + "\n" for line in (HEAD + COLS + ROWS + CLOSING).splitlines())
    run = d.parse(text)[1]
    assert (len(run.rows), run.ranks, run.failed_before_first_size, run.avg_busbw) == (7, 2, False, 53.2104)


def test_a_host_prefix_is_stripped_only_where_most_lines_carry_one():
    iblinkinfo_like = "CA: node1 mlx5_0:\n      0x1 1 1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==> 2 1[ ]\n"
    assert pasted.strip_hosts(iblinkinfo_like) == iblinkinfo_like  # 'CA' holds no digit: not a host
    assert pasted.strip_hosts("gpu1: Test NCCL failure x\nnext line\nand another\n").startswith("gpu1: ")


# ---- kind 2: NCCL's transport lines across releases (src/transport/{p2p,shm,net}.cc at v2.4.8-1, v2.7.8-1,
# v2.12.12-1, v2.19.3-1, v2.23.4-1), and the aws-ofi-nccl network name 'AWS Libfabric'
@pytest.mark.parametrize("line, detail, family", [
    ("Ring 00 : 0[0] -> 1[1] via P2P/IPC", "P2P/IPC", "P2P"),                                 # 2.4 p2p.cc
    ("Ring 00 : 1 -> 0 [receive] via NET/Socket/0", "NET/Socket", "NET/Socket"),              # 2.4 net.cc
    ("Ring 01 : 0[0] -> 1[1] via direct shared memory", "SHM", "SHM"),                        # 2.4 shm.cc
    ("Channel 00 : 0[1b000] -> 1[1c000] via direct shared memory", "SHM", "SHM"),             # 2.7 shm.cc
    ("Channel 00 : 0[1b000] -> 1[1c000] via P2P/IPC", "P2P/IPC", "P2P"),                      # 2.7 p2p.cc
    ("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", "SHM/direct", "SHM"),                 # 2.19 shm.cc
    ("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", "P2P/CUMEM", "P2P"),                   # 2.19 p2p.cc
    ("Channel 00/1 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA", "NET/IB/GDRDMA", "NET/IB"),  # 2.12+ net.cc
    ("Channel 01/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA", "NET/AWS Libfabric/GDRDMA", "NET/OFI"),
])
def test_channel_lines_of_every_release_name_their_transport(line, detail, family):
    log = nccl_log.parse(f"node1:1234:1260 [0] NCCL INFO {line}\n")
    assert dict(log.channel_transports) == {detail: 1} and log.transports == (family,)


def test_an_old_socket_only_log_is_a_socket_fallback():
    log = nccl_log.parse("NCCL version 2.4.8+cuda10.1\n"
                         "n1:1:1 [0] NCCL INFO NET/IB : No device found.\n"
                         "n1:1:2 [0] NCCL INFO Ring 00 :    0   1\n"
                         "n1:1:2 [0] NCCL INFO Ring 00 : 0 -> 1 [send] via NET/Socket/0\n"
                         "n1:1:2 [0] NCCL INFO Ring 00 : 1 -> 0 [receive] via NET/Socket/0\n")
    assert log.socket_fallback and log.ib_missing and log.rings == 1


# ---- kind 3: formats that were refused
ROCM = d.sample_text("rocm_smi_showtopo_4x_mi300a.txt")


def test_rocm_smi_showtopo_is_read_not_refused():
    kind, topo = d.parse("$ rocm-smi --showtopo\n" + ROCM)
    assert kind == "rocm_smi" and topo.gpus == 4 and topo.pair_counts() == {"XGMI": 6}
    assert dict(topo.numa) == {0: 0, 1: 1, 2: 2, 3: 3}
    cut = ROCM[:ROCM.index("GPU2   XGMI")]  # cut inside the link-type matrix: read as far as it goes
    part = rocm_smi.parse(cut)
    assert part.gpus == 4 and any("GPU2, GPU3" in n for n in part.notes)
    # GPU3 cut off from the xGMI mesh: its row and column read PCIE
    rows = ROCM.split("\n")
    at = rows.index(next(r for r in rows if r.startswith("GPU3   XGMI")))
    rows[at] = "GPU3   PCIE         PCIE         PCIE         0            "
    for i in range(at - 3, at):  # and GPU3's column in the rows above
        rows[i] = rows[i][:-13] + "PCIE".ljust(13)
    found = " ".join(cli_inspect.inspect_text("\n".join(rows))["findings"])
    assert "3 GPU pair(s) are XGMI, 3 PCIE" in found
    assert "rocm-smi --showtopo: 4 AMD GPU(s)" in found


def test_a_headerless_old_table_and_the_first_releases_time_unit():
    # nccl-tests b188a15 (2017) src/all_reduce.cu: 'bytes N type op time algbw busbw res', the time in ms
    # (deltaSec * 1.0E3, '%7.3f') and res the largest difference ('%7.0le')
    old_cols = ("#                                                 out-of-place                    in-place\n"
                "#       bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n")
    rows = ("     8388608       2097152   float     sum    1.583   5.30   9.27    1e-06    1.512   5.55   9.71    0e+00\n"
            "    16777216       4194304   float     sum    3.050   5.50   9.62    0e+00    3.001   5.59   9.78    0e+00\n")
    run = nccl_tests.parse(old_cols + rows)
    assert run.error_column == "max error" and run.rows[0]["time_us"] == pytest.approx(1583.0)
    assert not run.failures  # kind 5: an error of 1e-06 / 0e+00 is a max difference, not wrong elements
    headerless = nccl_tests.parse(rows)  # no header at all: '1e-06' printed with %le is still not a count
    assert len(headerless.rows) == 2 and not headerless.failures
    assert headerless.rows[0]["time_us"] == pytest.approx(1583.0)  # size / algbw says the time is in ms
    assert nccl_tests.parse(COLS + ROWS).rows[-1]["time_us"] == pytest.approx(10 + (8 << 24) / 2e5, abs=0.01)


def test_a_prompt_then_one_failure_line_is_a_run_that_failed():
    # nccl-tests src/common.h CUDACHECK: '%s: Test CUDA failure %s:%d '%s'' with cudaGetErrorString's text
    text = ("user@gpu-node-07:~/nccl-tests$ ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 4\n"
            "gpu-node-07: Test CUDA failure common.cu:892 'invalid argument'\n")
    kind, run = d.parse(text)
    assert kind == "nccl_tests" and run.failed_before_first_size and run.collective == "all_reduce"
    (f,) = run.failures
    # kind 4: 'invalid argument' here is CUDA's, not NCCL's ncclInvalidArgument: no NCCL code is printed
    assert (f.kind, f.code, f.host) == ("cuda_error", None, "gpu-node-07")
    assert "NCCL error code not in the file" in failures.finding(f)


@pytest.mark.parametrize("line, code", [
    ("NCCL failure all_reduce.cu:95 'unhandled cuda error'", 1),   # ncclGetErrorString quoted by an NCCL failure
    ("RuntimeError: NCCL Error 2: unhandled system error", 2),      # the code printed
    ("ValueError: invalid argument", None),                        # any library's words: no NCCL code
])
def test_an_nccl_code_only_where_the_text_gives_one(line, code):
    found = failures.find([(1, line)])
    assert [f.code for f in found] == ([code] if found else [])


def test_nccl_tests_json_output_is_read():
    # nccl-tests src/util.cu (HEAD) jsonOutputInit / writeBenchmarkLine*: one object with nccl_version as
    # NCCL_VERSION_CODE, args, the rank records and per size {size, ..., out_of_place: {time, alg_bw, bus_bw, nwrong}}
    doc = {"version": 1, "args": ["./build/all_gather_perf", "-b", "8", "-e", "128M"], "nccl_version": 22703,
           "devices": [{"rank": r, "group": 0, "pid": 9, "hostname": "h0", "device": r, "device_hex": "0x1",
                        "device_info": "GPU"} for r in range(4)],
           "results": [{"size": 1 << k, "count": 1 << (k - 2), "type": "float", "redop": "none", "root": "-1",
                        "out_of_place": {"time": 10.0 + k, "alg_bw": 0.5 * k, "bus_bw": 0.375 * k, "nwrong": 0},
                        "in_place": None} for k in range(3, 10)]}
    for text in (json.dumps(doc), json.dumps(doc, indent=2)):
        kind, run = d.parse(text)
        assert kind == "nccl_tests" and (run.collective, run.ranks, run.nccl_version, len(run.rows)) == (
            "all_gather", 4, "2.27.3", 7)
    lines = "".join(json.dumps({"name": "AllReduce", "size": 1 << k, "time": 9.5, "algbw": 1.0, "busbw": 1.5}) + "\n"
                    for k in range(3, 6))
    run = d.parse(lines)[1]
    assert run.collective == "all_reduce" and len(run.rows) == 3


# ---- kind 6: ranks
def test_two_jobs_each_listing_rank_0_are_not_one_job_of_two():
    one = ("# Using devices\n#  Rank  0 Group  0 Pid  1001 on node-a device  0 [0x18] NVIDIA H100\n")
    two = one.replace("1001", "2002").replace("node-a", "node-b")
    run = nccl_tests.parse(one + two + COLS + _row(1 << 20, 20.0, 52.4, 0.0) + CLOSING)
    assert run.jobs == 2 and run.ranks == 1 and "separate jobs" in run.ranks_from


@pytest.mark.parametrize("rank_line", ["#   Rank  {r} Pid  {p} on host1 device  {r} [0x04] Tesla V100-SXM2-32GB",
                                       "#  Rank  {r} Group  0 Pid  {p} on host1 device  {r} [0x04] Tesla V100",
                                       "#   Rank {r} on host1 device {r} [0x04] Tesla P100-PCIE-16GB"])
def test_old_rank_lists_are_counted(rank_line):
    ranks = "".join(rank_line.format(r=r, p=100 + r) + "\n" for r in range(4))
    run = nccl_tests.parse("# Using devices\n" + ranks + COLS + _row(1 << 20, 20.0, 52.4, 78.6) + CLOSING)
    assert (run.ranks, run.jobs) == (4, 1)


def test_ranks_from_the_nccl_info_line_when_the_table_names_none():
    text = ("n0:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 16 cudaDev 0 busId 18000 - Init COMPLETE\n"
            + COLS + _row(1 << 20, 20.0, 52.4, 98.2) + CLOSING)
    run = d.parse(text)[1]
    assert run.ranks == 16 and "nranks in the NCCL INFO lines" in run.ranks_from


# ---- kind 7: RCCL, TUNING tables, MNNVL, aws-ofi-nccl's empty provider list
@pytest.mark.parametrize("line, version", [("RCCL version 2.18.3+hip6.0 HEAD:2b22ab0", "2.18.3+hip6.0"),
                                           ("RCCL version : 2.30.4-HEAD:2b22ab0", "2.30.4-HEAD:2b22ab0")])
def test_rccl_is_named_with_its_version(line, version):
    # ROCm/rccl src/init.cc VERSION_STRING 'RCCL version X.Y.Z+hipA.B'; the newer banner 'RCCL version : ...'
    log = nccl_log.parse(f"h:1:1 [0] NCCL INFO {line}\n")
    assert (log.library, log.nccl_version) == ("RCCL", version)
    assert "RCCL" in d.parse(f"h:1:1 [0] NCCL INFO {line}\n")[1].library


def _tuning_log():
    # src/graph/tuning.cc (v2.23.4-1), rank 0 with NCCL_DEBUG_SUBSYS=TUNING: per block of 3 algorithms,
    # '  Algorithm   |' + ' %14s   %14s   %14s |' each, '  Protocol    |' + ' %14s |' each, ' Max NThreads |',
    # then '%13s |' + '%8.1f/%6.1f |' per algorithm x protocol
    pre = "n0:1:2 [0] NCCL INFO "
    algos, protos = ("Tree", "Ring", "CollNetDirect"), ("LL", "LL128", "Simple")
    out = [pre + "  Algorithm   |" + "".join(" %14s   %14s   %14s |" % ("", a, "") for a in algos),
           pre + "  Protocol    |" + "".join(" %14s |" % p for _ in algos for p in protos),
           pre + " Max NThreads |" + "".join(" %14d |" % n for n in (512, 640, 512) * 3)]
    vals = [(14.4, 11.1), (21.4, 84.0), (56.0, 100.0), (10.4, 11.1), (18.8, 97.8), (28.0, 118.0)] + [(0, 0)] * 3
    out.append(pre + "%13s |" % "AllReduce" + "".join("%8.1f/%6.1f |" % v for v in vals))
    return "\n".join(out) + "\n"


def test_ncclS_own_tuning_table_is_read_and_listed():
    log = nccl_log.parse(_tuning_log())
    table = {(c, a, p): (lat, bw) for c, a, p, lat, bw in log.tuning}
    assert table[("AllReduce", "Ring", "Simple")] == (28.0, 118.0) and table[("AllReduce", "Tree", "LL")] == (14.4, 11.1)
    assert len(table) == 9
    found = " ".join(cli_inspect.inspect_text(_tuning_log())["findings"])
    assert "NCCL's own cost model" in found and "Ring/Simple 28 us, 118 GB/s" in found and "CollNetDirect/" not in found


def test_the_older_one_line_tuning_header_is_read_too():
    # src/graph/tuning.cc (v2.12.12-1): 'Latency/AlgBw |' + ' %7s/%6s |' per algorithm x protocol
    pre = "n0:1:2 [0] NCCL INFO "
    pairs = [(a, p) for a in ("Tree", "Ring") for p in ("LL", "LL128", "Simple")]
    text = (pre + "Latency/AlgBw |" + "".join(" %7s/%6s |" % ap for ap in pairs) + "\n"
            + pre + "%13s |" % "AllReduce" + "".join("%8.1f/%6.1f |" % (5.0 + i, 10.0 * i) for i in range(6)) + "\n")
    table = {(a, p): (lat, bw) for _, a, p, lat, bw in nccl_log.parse(text).tuning}
    assert table[("Ring", "Simple")] == (10.0, 50.0) and table[("Tree", "LL")] == (5.0, 0.0) and len(table) == 6


def test_mnnvl_lines_and_an_unhealthy_fabric():
    # src/init.cc (v2.27.3-1) 'MNNVL busId 0x%lx fabric UUID %lx.%lx cliqueId 0x%x state %d healthMask 0x%x';
    # src/mnnvl.cc 'MNNVL %d cliqueId %x cliqueSize %d cliqueRank %d'
    log = nccl_log.parse("n0:1:1 [0] NCCL INFO MNNVL busId 0x1b000 fabric UUID 9f.42 cliqueId 0x7fff state 3 healthMask 0x4\n"
                         "n0:1:1 [0] NCCL INFO MNNVL 1 cliqueId 7fff cliqueSize 72 cliqueRank 3\n")
    assert log.mnnvl and log.clique_ids == ("0x7fff",) and log.health_masks == ("0x4",)
    assert "healthMask 0x4" in " ".join(cli_inspect.inspect_text(
        "n0:1:1 [0] NCCL INFO MNNVL busId 0x1b000 fabric UUID 9f.42 cliqueId 0x7fff state 3 healthMask 0x4\n")["findings"])


def test_aws_ofi_ncclS_empty_provider_list_is_a_finding():
    # aws-ofi-nccl src/nccl_ofi_rdma.cpp NCCL_OFI_INFO(..., "No eligible providers were found")
    (f,) = failures.find([(1, "ip-10-0-0-1:12:12 [0] NCCL INFO NET/OFI No eligible providers were found")])
    assert f.kind == "ofi_no_provider"
