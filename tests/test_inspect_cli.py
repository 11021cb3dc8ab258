"""python -m course_lib inspect: findings with reasons, --json per file, one error line for bad files."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import __main__ as cli
from course_lib import costmodel, diagnostics, units
from course_lib.diagnostics import system as dsystem
from course_lib.diagnostics import topo

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_commands():
    cli._EXTRA_COMMANDS.clear()
    yield
    cli._EXTRA_COMMANDS.clear()


def run_json(capsys, *names):
    args = ["inspect", "--json"]
    for n in names:
        args += ["--sample", n]
    assert cli.main(args) == 0
    return json.loads(capsys.readouterr().out)


KEYS = {"topo": {"gpus", "nics", "gpu_pairs", "nv_counts"},
        "nccl_debug": {"nccl_version", "nranks", "transports", "ib_devices", "socket_fallback"},
        "ibstat": {"ports"},
        "nvlink_status": {"gpus", "links_per_gpu", "gb_s_per_link"},
        "smi_pcie": {"gpus"},
        "lspci_acs": {"bridges", "acs_enabled", "redirecting"},
        "rdma_link": {"ports"},
        "iblinkinfo": {"cas", "switches", "ports", "active", "down", "rates", "aggregation_nodes", "links"},
        "nccl_topo": {"form", "gpus", "nvlinks_per_gpu", "nvswitch", "nets", "max_bw_gb_s", "truncated"},
        "rocm_smi": {"gpus", "link_type", "pairs_by_link_type", "numa", "notes"},
        "nccl_tests": {"tool", "collective", "collective_from", "ranks", "ranks_from", "hosts", "sizes",
                       "nccl_version", "failed_before_first_size", "last_words", "refused_rows", "failures"}}


def test_every_sample_inspects_with_the_issue_keys(capsys):
    names = diagnostics.sample_names()
    reports = run_json(capsys, *names)
    assert [r["file"] for r in reports] == [f"sample:{n}" for n in names]
    for name, r in zip(names, reports):
        assert r["kind"] == diagnostics.sample_sources()[name]["kind"]
        assert KEYS[r["kind"]] <= set(r), name
        assert r["findings"], name
        assert isinstance(r["skipped_lines"], list), name
        if "nccl_version" in r:
            assert r["nccl_version"] is not None, name  # "not in the file", never None
        if r["kind"] == "ibstat":
            assert all(set(p) == {"ca", "port", "rate_gbps", "link_layer", "state"} for p in r["ports"])
        if r["kind"] == "topo":
            assert set(r["gpu_pairs"]) == {"NV", "PIX", "PXB", "PHB", "NODE", "SYS"}
            assert sum(r["gpu_pairs"].values()) == r["gpus"] * (r["gpus"] - 1) // 2


def test_findings_give_reasons(capsys):
    by = {r["file"].split(":", 1)[1]: r for r in run_json(
        capsys, "topo_5gpu_workstation_sys_node_phb.txt", "topo_dgx_a100_nic_legend.txt",
        "nccl_log_gcp_vm.log", "nvlink_v100_inactive.txt", "ibstat_mlx4_two_ports_down.txt",
        "nccl_ofi_aws_efa.log", "nccl_log_16_ranks_mlx5.log")}
    joined = {k: "\n".join(v["findings"]) for k, v in by.items()}
    assert ("GPU0-GPU1 is SYS (4 such pairs): P2P crosses the CPU socket link; keep TP groups within GPU0 and GPU1-4"
            in joined["topo_5gpu_workstation_sys_node_phb.txt"])
    assert "mlx5_8 shares no PCIe switch with any GPU (closest: SYS)" in joined["topo_dgx_a100_nic_legend.txt"]
    assert "mlx5_0 (GPU0-1, PXB)" in joined["topo_dgx_a100_nic_legend.txt"]
    assert "NCCL used NET/Socket: no IB transport loaded (the log says 'NET/IB : No device found')" in joined[
        "nccl_log_gcp_vm.log"]
    assert "expect at most the Ethernet line rate, about 12.5 GB/s per direction" in joined["nccl_log_gcp_vm.log"]
    assert "GPU3 has 4 of 6 NVLinks active (inactive: link 3, link 5)" in joined["nvlink_v100_inactive.txt"]
    assert "mlx4_0 port 1: Down, InfiniBand, 10 Gb/s = 1.25 GB/s per direction; NCCL cannot use" in joined[
        "ibstat_mlx4_two_ports_down.txt"]
    assert "provider tcp;ofi_rxm: that is TCP, not EFA RDMA" in joined["nccl_ofi_aws_efa.log"]
    assert "GPUDirect RDMA is disabled for mlx5_0, mlx5_1" in joined["nccl_log_16_ranks_mlx5.log"]


def test_predicted_busbw_is_the_cost_model_on_the_closest_system(capsys):
    (r,) = run_json(capsys, "topo_dgx_a100_nic_legend.txt")
    pred = r["predicted_all_reduce"]
    assert pred["system"] == "dgx-a100" and pred["gpus"] == 8
    expected = costmodel.predict("all_reduce", 2**30, "dgx-a100").busbw[0] / units.GB
    assert pred["busbw_gb_s"] == pytest.approx(expected, abs=0.05)


def test_closest_system_reads_nvlink_count_mesh_and_sockets():
    h800, _, why = dsystem.closest_system(topo.parse(diagnostics.sample_text("topo_h800_nv8_nic_legend_clipped.txt")))
    assert h800.gpu_link.per_direction == pytest.approx(8 * 25e9) and h800.in_network_reduction is False
    assert "NVSwitch with 8 NVLinks per GPU" in why
    mesh, g, why = dsystem.closest_system(topo.parse(diagnostics.sample_text("topo_4x_h100_nv6_nic_rows.txt")))
    assert g == 4 and mesh.gpu_link.per_direction == pytest.approx(18 * 25e9)
    assert mesh.nvswitch_generation is None and "full NVLink mesh with 18 NVLinks per GPU" in why
    one, _, _ = dsystem.closest_system(topo.parse(diagnostics.sample_text("topo_4gpu_workstation_phb.txt")))
    two, _, _ = dsystem.closest_system(topo.parse(diagnostics.sample_text("topo_5gpu_workstation_sys_node_phb.txt")))
    assert (one.cpu_sockets, two.cpu_sockets) == (1, 2) and one.gpu_link.family == "pcie"


def test_inactive_nvlinks_given_with_the_matrix_lower_the_prediction(capsys):
    alone, = run_json(capsys, "topo_dgx_a100_nic_legend.txt")
    both = run_json(capsys, "topo_dgx_a100_nic_legend.txt", "nvlink_v100_inactive.txt")
    pred = both[0]["predicted_all_reduce"]
    assert "GPU3 has 4 of 6 NVLinks active" in pred["reason"] and pred["system"] == "dgx-a100-degraded"
    assert pred["gpu_link_gb_s_per_direction"] == pytest.approx(alone["predicted_all_reduce"]
                                                                ["gpu_link_gb_s_per_direction"] * 4 / 6, abs=0.1)
    assert pred["busbw_gb_s"] < alone["predicted_all_reduce"]["busbw_gb_s"]
    full = run_json(capsys, "topo_dgx_a100_nic_legend.txt", "nvlink_a100_12_links.txt")
    assert full[0]["predicted_all_reduce"] == alone["predicted_all_reduce"]


def test_text_report_and_list(capsys):
    assert cli.main(["inspect", str(diagnostics.sample_path("topo_dgx_a100_nic_legend.txt"))]) == 0
    out = capsys.readouterr().out
    assert out.startswith(str(diagnostics.sample_path("topo_dgx_a100_nic_legend.txt")) + ": topo\n")
    assert "predicted all-reduce busbw for a 1 GiB message on 8 GPUs" in out
    assert cli.main(["inspect", "--list-samples"]) == 0
    assert "topo_dgx_a100_nic_legend.txt" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [
    ("Link 0: 25 GB/s\n", r"line 1: expected a 'GPU n: \.\.\.' line before its links"),
    ("hello\n", r"line 1: expected the output of nvidia-smi topo -m"),
    ("", r"the output is empty: nothing to read \(nvidia-smi nvlink -s prints nothing on a GPU without NVLink"),
    ("\n  \n", r"the output is empty"),
])
def test_bad_files_give_one_error_line(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.txt"
    bad.write_text(content)
    assert cli.main(["inspect", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {bad}: ")
    assert re.search(message, err), err


def test_missing_binary_and_no_files(tmp_path, capsys):
    assert cli.main(["inspect", str(tmp_path / "nope.txt")]) == 2
    assert capsys.readouterr().err == (f"error: file {str(tmp_path / 'nope.txt')!r} cannot be read (No such file or "
                                       "directory); pass one saved nvidia-smi, ibstat, lspci or NCCL_DEBUG output\n")
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\xff\xfe\x00GPU0")
    assert cli.main(["inspect", str(blob)]) == 2
    assert capsys.readouterr().err.startswith(f"error: file {str(blob)!r} is not a text file")
    nul = tmp_path / "nul.txt"  # valid UTF-8 with a zero byte: refused as binary, not parsed
    nul.write_bytes(b"GPU0\tX\0\n")
    assert cli.main(["inspect", str(nul)]) == 2
    assert capsys.readouterr().err.startswith(f"error: file {str(nul)!r} is not a text file (a zero byte at offset 6)")
    assert cli.main(["inspect"]) == 2
    assert capsys.readouterr().err.startswith("error: give at least one FILE")


def test_command_line_exit_status_and_single_line(tmp_path):
    damaged = tmp_path / "topo.txt"
    damaged.write_text(diagnostics.sample_text("topo_2x_rtx5090_phb.txt").replace("PHB\t X", "PH0\t X"))
    proc = subprocess.run([sys.executable, "-m", "course_lib", "inspect", str(damaged)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: {damaged}: line 3: expected a connection (X, NV#, PIX, PXB, PHB, NODE or SYS) "
                           f"in row GPU1, column GPU0, got 'PH0'\n")


def test_acs_redirect_is_found_and_mangled_lines_are_named(capsys, tmp_path):
    r = run_json(capsys, "lspci_acsctl_server.txt")[0]
    assert (r["kind"], r["bridges"], r["redirecting"]) == ("lspci_acs", 15, 4)
    assert "4 of 15 PCIe bridges redirect peer requests" in r["findings"][0] and "NCCL_P2P_DISABLE" in r["findings"][1]
    text = diagnostics.sample_text("lspci_acsctl_server.txt")
    bad = tmp_path / "acs.txt"
    bad.write_text(text.replace("ReqRedir+", "ReqRedir?", 1))
    assert cli.main(["inspect", str(bad)]) == 2
    assert "line 4: expected the flag ReqRedir+ or ReqRedir-, got 'ReqRedir?'" in capsys.readouterr().err
    bad.write_text("\n".join(text.splitlines()[:3]) + "\n\t\tACSCtl:\tSrcValid- TransBlk-\n")
    assert cli.main(["inspect", str(bad)]) == 2
    assert "line 4: expected 7 ACS flags" in capsys.readouterr().err


def test_local_outputs_never_fail_without_the_tools(capsys, monkeypatch):
    from course_lib.diagnostics import local
    monkeypatch.setattr(local.shutil, "which", lambda name: None)
    outputs, notes = local.collect()
    assert outputs == [] and len(notes) == 3 and "nvidia-smi is not installed here" in notes[0]
    assert cli.main(["inspect", "--local"]) == 0
    assert "none of nvidia-smi and ibstat answered here" in capsys.readouterr().out
    sample = diagnostics.sample_text("topo_4gpu_workstation_phb.txt")
    monkeypatch.setattr(local.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(local.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(
        cmd, 0 if cmd[1:] == ["topo", "-m"] else 1, sample if cmd[1:] == ["topo", "-m"] else "", "no NVLink"))
    outputs, notes = local.collect()
    assert [label for label, _ in outputs] == ["nvidia-smi topo -m"] and len(notes) == 2
    assert cli.main(["inspect", "--local", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["kind"] == "topo" and "nvidia-smi nvlink -s: no output" in captured.err


def test_a_system_file_that_disagrees_with_the_matrix_is_named(capsys):
    f = str(ROOT / "course_lib" / "data" / "systems" / "rtx4090x4_p2p.toml")
    assert cli.main(["inspect", "--json", "--system-file", f, "--sample", "topo_dgx_a100_nic_legend.txt",
                     "--sample", "topo_4gpu_workstation_phb.txt"]) == 0
    _, dgx, box = json.loads(capsys.readouterr().out)
    text = "\n".join(dgx["findings"])
    assert "the matrix shows 8 GPU(s) but rtx4090x4-p2p has 4 per node" in text
    assert "8 NIC(s) that share a PCIe switch with a GPU but rtx4090x4-p2p counts 1" in text
    assert "the matrix shows NVLink but rtx4090x4-p2p's GPU link is PCIe Gen4 x16" in text
    assert not any("rtx4090x4-p2p" in f and "matrix" in f for f in box["findings"])  # 4 PCIe GPUs: it fits


# ---------------------------------------------------------------- issue 25: pasted outputs and failures

FAILURE_LOGS = {  # sample -> words its FAILED line must hold (kind, ends, code, next command)
    "nccl_log_kp_ddp_worker.log": ("ib completion error", "kp-ddp-worker-0 (GPU 4) and peer 10.216.210.236",
                                   "NCCL error code 6", "ibv_rc_pingpong", "NCCL_IB_GID_INDEX", "MTU", "rdma link"),
    "nccl_log_hai_a100.log": ("ibv call failed", "hai-a100-3 (GPU 4)", "ibv_create_qp failed", "NCCL error code 2",
                              "ulimit -l"),
    "torch_log_four_ranks.log": ("watchdog timeout", "ALLREDUCE SeqNum 808", "rank 1, rank 0, rank 2",
                                 "600 s", "py-spy"),
    "nccl_log_shm_ubuntu.log": ("shm error", "ubuntu (GPU 0)", "/dev/shm", "NCCL error code 2", "--ipc=host"),
    "nccl_tests_4gpu_docker.txt": ("system error", "fastmoe", "NCCL error code 2", "NCCL_DEBUG=INFO"),
}


@pytest.mark.parametrize("name", sorted(FAILURE_LOGS))
def test_a_failure_log_names_what_failed_where_and_what_to_run(capsys, name):
    (r,) = run_json(capsys, name)
    failed = [f for f in r["findings"] if f.startswith("FAILED")]
    assert failed and r["findings"][0] == failed[0], name  # the failure comes first
    for word in FAILURE_LOGS[name]:
        assert word in failed[0], (name, word)
    assert "Usually:" in failed[0] and "Next:" in failed[0]


def test_a_pasted_file_with_prompt_and_colours_reads_like_the_sample(tmp_path, capsys):
    """A terminal copy: prompt, ANSI colour codes and CRLF, as `nvidia-smi topo -m` prints to a TTY."""
    name = "topo_4x_h100_nv6_nic_rows.txt"
    body = diagnostics.sample_text(name)
    f = tmp_path / "pasted.txt"
    f.write_bytes(("user@host:~$ nvidia-smi topo -m\r\n" + body.replace("GPU0", "\x1b[4mGPU0", 1)
                   .replace("\n", "\x1b[0m\r\n", 1).replace("\n", "\r\n")).encode())
    assert cli.main(["inspect", "--json", str(f)]) == 0
    (pasted,) = json.loads(capsys.readouterr().out)
    (bare,) = run_json(capsys, name)
    assert pasted["findings"] == bare["findings"]
    assert pasted["skipped_lines"] == [{"line": 1, "text": "user@host:~$ nvidia-smi topo -m",
                                        "why": "prompt or command line"}]
    assert cli.main(["inspect", str(f)]) == 0
    assert "(skipped 1 line(s) that are not the output: line 1 prompt or command line)" in capsys.readouterr().out


def test_header_only_and_headerless_runs_are_read_not_refused(capsys):
    p100, mi250 = run_json(capsys, "nccl_tests_8gpu_p100.txt", "rccl_tests_mi250x_no_header.txt")
    assert p100["failed_before_first_size"] and p100["last_words"].endswith("'unhandled cuda error'")
    assert p100["skipped_lines"][0]["text"].endswith("all_reduce_perf -b 8 -e 128M -f 2 -g 8")
    assert (mi250["collective"], mi250["collective_from"], mi250["ranks"]) == ("all_reduce", "launcher line", 16)
    assert mi250["nccl_version"] == "not in the file"


def test_the_readme_documents_every_kinds_json_keys(capsys):
    """Each kind's row of the README's inspect table names every top-level key its --json objects carry."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \|[^|]*\|(.*)\|$", readme, re.M)}
    assert set(diagnostics.KINDS) <= set(rows)
    for r in run_json(capsys, *diagnostics.sample_names()):
        keys = set(r) - {"file", "kind", "findings", "verdicts", "skipped_lines", "parts", "summary"}
        documented = set(re.findall(r"`(\w+)`", rows[r["kind"]]))
        assert keys <= documented, (r["kind"], keys - documented)


@pytest.mark.parametrize("content, message", [
    ("user@host:~$ nvidia-smi topo -m\n", r"not a recognised tool output: its 1 non-blank line\(s\) read as what came "
                                          r"before an output \(line 1, prompt"),
    ("hello world\n", r"not a recognised tool output: line 1: expected the output of nvidia-smi topo -m"),
])
def test_a_one_line_file_is_not_called_empty(tmp_path, capsys, content, message):
    one = tmp_path / "one.txt"
    one.write_text(content)
    assert cli.main(["inspect", str(one)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err) and "empty" not in err, err


def test_a_document_that_quotes_outputs_is_not_read_as_one(capsys):
    assert cli.main(["inspect", str(ROOT / "README.md")]) == 2  # it quotes '=== System : maxBw' in a table
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "README.md: not a recognised tool output: it is a document" in err, err


def test_a_paste_in_code_fences_is_read_not_refused_as_a_document(tmp_path):
    """An output pasted from an issue keeps its Markdown fences and a line of its own; it is still the output."""
    sample = (Path(diagnostics.__file__).parent.parent / "data" / "samples" / "nccl_tests_4gpu_docker.txt").read_text(
        encoding="utf-8")
    pasted = tmp_path / "fenced.txt"
    pasted.write_text("Here is my run:\n```\n" + sample + "```\n", encoding="utf-8")
    assert cli.main(["inspect", str(pasted)]) == 0
