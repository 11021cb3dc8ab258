"""course_lib.diagnostics: every shipped sample parses to what it shows, and damaged copies are refused
with the line and what was expected."""
import json
from pathlib import Path

import pytest

from course_lib import diagnostics as d
from course_lib.diagnostics import ibstat, nccl_log, nvlink, smi_pcie, topo

ROOT = Path(__file__).resolve().parents[1]


def text(name):
    return d.sample_text(name)


def cut(name, keep_lines):
    """The first ``keep_lines`` lines of a sample (a truncated copy)."""
    return "\n".join(text(name).splitlines()[:keep_lines]) + "\n"


def swap(name, a, b):
    """A sample with its (1-based) lines a and b exchanged (a reordered copy)."""
    rows = text(name).splitlines()
    rows[a - 1], rows[b - 1] = rows[b - 1], rows[a - 1]
    return "\n".join(rows) + "\n"


def replace_line(name, line_no, new):
    rows = text(name).splitlines()
    rows[line_no - 1] = new
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------- samples and their sources

def test_every_sample_has_a_source_and_every_source_a_file():
    sources = d.sample_sources()
    assert len(sources) >= 15
    for name, row in sources.items():
        if "measured" in row:  # run by the course authors: the script that ran it exists
            assert (ROOT / row["measured"].split(",")[0]).is_file() and "url" not in row, name
        else:
            assert row["url"].startswith("https://github.com/"), name
        assert row["kind"] in d.KINDS and row["machine"] and row["trimmed"], name
        assert text(name).strip(), name


def test_sample_counts_meet_the_issue():
    assert len(d.sample_names("topo")) >= 6
    assert len(d.sample_names("nccl_debug")) >= 4
    assert len(d.sample_names("ibstat")) >= 2
    assert len(d.sample_names("nvlink_status")) >= 2
    assert len(d.sample_names("smi_pcie")) >= 1
    for kind in ("rdma_link", "iblinkinfo", "nccl_topo", "nccl_tests"):  # issue 25: two public samples at least
        assert len(d.sample_names(kind)) >= 2, kind
    assert sum(d.sample_sources()[n].get("url", "").find("rccl") > 0 for n in d.sample_names("nccl_tests")) >= 2


@pytest.mark.parametrize("name", d.sample_names())
def test_detect_names_each_sample_kind(name):
    assert d.detect(text(name)) == d.sample_sources()[name]["kind"]


def test_detect_refuses_other_text():
    with pytest.raises(ValueError, match=r"line 2: expected the output of nvidia-smi topo -m.*'hello'"):
        d.detect("\nhello\n")
    with pytest.raises(ValueError, match="kind must be one of"):
        d.parse("x", kind="lspci")
    with pytest.raises(ValueError, match="text must be the output as a string"):
        d.detect(b"GPU0")


# ---------------------------------------------------------------- nvidia-smi topo -m

def test_topo_dgx_a100_with_nic_legend():
    t = topo.parse(text("topo_dgx_a100_nic_legend.txt"))
    assert t.gpus == tuple(f"GPU{i}" for i in range(8))
    assert t.nics == tuple(f"mlx5_{i}" for i in range(10)) and t.nic_legend
    assert t.pair_counts() == {"NV": 28, "PIX": 0, "PXB": 0, "PHB": 0, "NODE": 0, "SYS": 0}
    assert t.nv_counts() == [12]
    assert t.cpu_affinity[0] == "48-63,176-191" and t.numa_affinity[2] == "1"
    assert t.nearest_nics(0) == ("PXB", ["mlx5_0", "mlx5_1"])
    assert t.nearest_nics(7) == ("PXB", ["mlx5_6", "mlx5_7"])
    assert [t.gpu_nic[g][8] for g in range(8)] == ["SYS"] * 8  # mlx5_8 is near no GPU


def test_topo_nic_rows_without_legend_keep_nic_names():
    t = topo.parse(text("topo_4x_h100_nv6_nic_rows.txt"))
    assert t.nics == ("NIC0", "NIC1", "NIC2", "NIC3") and not t.nic_legend
    assert t.nv_counts() == [6] and t.pair_counts()["NV"] == 6
    assert [t.nearest_nics(g) for g in range(4)] == [("PIX", [f"NIC{g}"]) for g in range(4)]
    assert t.cpu_affinity == ("6,14,22,30", "4,12,20,28", "7,15,23,31", "5,13,21,29")
    assert t.numa_affinity == ("3", "1", "7", "5")


def test_topo_pcie_workstations():
    five = topo.parse(text("topo_5gpu_workstation_sys_node_phb.txt"))
    assert five.pair_counts() == {"NV": 0, "PIX": 0, "PXB": 0, "PHB": 2, "NODE": 4, "SYS": 4}
    assert five.socket_groups() == [[0], [1, 2, 3, 4]]
    assert five.numa_affinity == ("1", "0", "0", "0", "0") and five.nics == ()
    assert topo.parse(text("topo_4gpu_workstation_phb.txt")).pair_counts()["PHB"] == 6
    two = topo.parse(text("topo_2x_rtx5090_phb.txt"))
    assert two.pair_counts()["PHB"] == 1 and two.cpu_affinity == ("0-63", "0-63")


def test_topo_indented_copy_with_wrapped_legend():
    t = topo.parse(text("topo_2gpu_node_indented.txt"))
    assert t.pair_counts()["NODE"] == 1 and t.numa_affinity == ("0", "0")


def test_topo_clipped_header_nic_rows_and_legend():
    t = topo.parse(text("topo_h800_nv8_nic_legend_clipped.txt"))
    assert t.nics == ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3") and t.nv_counts() == [8]
    assert t.nearest_nics(1) == ("PIX", ["mlx5_0"]) and t.nearest_nics(7) == ("PIX", ["mlx5_2", "mlx5_3"])
    assert t.nearest_nics(0) == ("NODE", ["mlx5_0", "mlx5_1"])


def test_topo_older_soc_and_the_command_line_before_the_header():
    old = "$ nvidia-smi topo -m\n" + text("topo_5gpu_workstation_sys_node_phb.txt").replace("SYS", "SOC")
    assert topo.parse(old).to_json() == topo.parse(text("topo_5gpu_workstation_sys_node_phb.txt")).to_json()


def test_topo_tabs_and_spaces_read_the_same():
    tabbed = text("topo_dgx_a100_nic_legend.txt")
    spaced = "\n".join("    ".join(c.strip() or "" for c in line.split("\t")) for line in tabbed.splitlines())
    assert topo.parse(spaced).to_json() == topo.parse(tabbed).to_json()


@pytest.mark.parametrize("damaged, message", [
    (lambda: swap("topo_4gpu_workstation_phb.txt", 3, 4), r"line 3: expected row GPU1 .*got 'GPU2'"),
    (lambda: replace_line("topo_4gpu_workstation_phb.txt", 1, "        GPU1    GPU0    GPU2    GPU3    CPU Affinity"),
     r"line 1: expected the header of nvidia-smi topo -m starting with GPU0"),
    (lambda: text("topo_dgx_a100_nic_legend.txt").replace("NV12\tNV12\t X ", "NV12\tNV1Z\t X ", 1),
     r"line 4: expected a connection \(X, NV#, PIX, PXB, PHB, NODE or SYS\) in row GPU2, column GPU1, got 'NV1Z'"),
    (lambda: replace_line("topo_5gpu_workstation_sys_node_phb.txt", 3,
                          "GPU1    PHB      X      PHB     NODE    NODE    0-7,16-23       0               N/A"),
     r"line 3: expected GPU1-GPU0 to match GPU0-GPU1 \(SYS\)"),
    (lambda: text("topo_dgx_a100_nic_legend.txt").replace("  NIC3: mlx5_3", "  NIC3 mlx5_3"),
     r"line 36: expected a NIC legend line such as 'NIC0: mlx5_0', got 'NIC3 mlx5_3'"),
    (lambda: text("topo_2x_rtx5090_phb.txt").replace("GPU1\tPHB\t X ", "GPU1\tPHB\tPHB"),
     r"line 3: expected X where row GPU1 meets column GPU1"),
    (lambda: "Legend:\n  X = Self\n", r"line 1: expected the header of nvidia-smi topo -m"),
    (lambda: text("topo_4x_h100_nv6_nic_rows.txt").replace("NIC3    SYS     SYS     SYS     PIX     SYS     SYS     SYS      X \n",
                                                          "NIC3    SYS     SYS     SYS     PIX     SYS     SYS     SYS      X \n"
                                                          "NIC2    SYS     SYS     PIX     SYS     SYS     SYS      X      SYS\n"),
     r"line 10: expected one row per device, but NIC2 has one already"),
    (lambda: swap("topo_4x_h100_nv6_nic_rows.txt", 6, 7), r"line 6: expected row NIC0 .*got 'NIC1'"),
    (lambda: "GPU0 GPU1\nhello\n", r"line 2: expected row GPU0 \(rows follow the header's order\), got 'hello'"),
])
def test_topo_damaged_copies_name_the_line(damaged, message):
    with pytest.raises(ValueError, match=message):
        topo.parse(damaged())


def test_topo_cut_off_copies_are_read_as_far_as_they_go():
    """Issue 32: a table cut after some rows keeps what it shows and says what is missing; the missing rows'
    paths to the rows that are there come from those rows' columns (the matrix is symmetric)."""
    whole = topo.parse(text("topo_dgx_a100_nic_legend.txt"))
    part = topo.parse(cut("topo_dgx_a100_nic_legend.txt", 5))
    assert len(part.gpus) == 8 and part.missing_rows[:4] == ("GPU4", "GPU5", "GPU6", "GPU7")
    assert part.gpu_links[4][0] == whole.gpu_links[4][0] and part.gpu_links[4][5] == topo.UNKNOWN
    assert any("cut off" in n for n in part.notes)
    assert all(part.gpu_links[i][j] == whole.gpu_links[i][j] for i in range(4) for j in range(8))
    two = topo.parse(cut("topo_2x_rtx5090_phb.txt", 2) + "GPU1\tPH")
    assert two.missing_rows == ("GPU1",) and two.gpu_links[1][0] == "PHB"
    assert any("row GPU1 (line 3) is cut off" in n for n in two.notes)


def test_topo_rows_without_their_header_line():
    whole = topo.parse(text("topo_4gpu_workstation_phb.txt"))
    rows = topo.parse("topo -m output:\n" + "\n".join(text("topo_4gpu_workstation_phb.txt").splitlines()[1:]))
    assert not rows.header and rows.pair_counts() == whole.pair_counts()
    assert rows.cpu_affinity == whole.cpu_affinity and rows.numa_affinity == whole.numa_affinity
    assert any("header line" in n for n in rows.notes)


def test_topo_a_gpu_that_lost_its_nvlinks_is_a_finding():
    from course_lib.diagnostics import findings
    src = text("topo_dgx_a100_nic_legend.txt").splitlines()
    lost = []
    for k, line in enumerate(src):
        cells = line.split("\t")
        if k in range(1, 9):
            cells = [("SYS" if c.strip().startswith("NV") and (k == 4 or j == 4) else c) for j, c in enumerate(cells)]
        lost.append("\t".join(cells))
    t = topo.parse("\n".join(lost))
    found = [f for f in findings.topo_findings(t) if f.startswith("GPU3 has no NVLink")]
    assert found and "nvidia-smi nvlink -s -i 3" in found[0]


# ---------------------------------------------------------------- NCCL_DEBUG=INFO

def test_nccl_socket_fallback():
    log = nccl_log.parse(text("nccl_log_gcp_vm.log"))
    assert log.nccl_version == "2.19.3+cuda12.3" and log.nranks == 1
    assert log.transports == ("NET/Socket",) and log.network == "Socket"
    assert log.socket_fallback and log.ib_missing and log.ib_devices == ()


def test_nccl_channels_p2p_ipc_and_socket():
    log = nccl_log.parse(text("nccl_socket_p2p_ipc_channels.log"))
    assert dict(log.channel_transports) == {"P2P/IPC": 14, "NET/Socket": 2}
    assert log.transports == ("NET/Socket", "P2P") and log.socket_fallback and log.nccl_version is None


def test_nccl_roce_ib_without_gdr():
    log = nccl_log.parse(text("nccl_log_16_ranks_mlx5.log"))
    assert log.nranks == 16 and log.network == "IB" and log.transports == ("NET/IB",)
    assert log.ib_devices == ("mlx5_0:1", "mlx5_1:1") and log.ib_link_layers == ("RoCE",)
    assert log.gdr is False and log.gdr_disabled_hcas == ("mlx5_0", "mlx5_1") and not log.socket_fallback


def test_nccl_nvls_sharp_without_prefixes():
    log = nccl_log.parse(text("nccl_nvls_ib_sharp.log"))
    assert log.nccl_version == "2.24.3+cuda12.2" and log.nranks == 8
    assert log.transports == ("CollNet", "NET/IB", "NVLS") and log.nvls_available and log.collnet_plugin
    assert len(log.ib_devices) == 8 and log.ib_link_layers == ("IB",) and log.network == "IBext_v8"


def test_nccl_p2p_cumem_ofi_rings_trees():
    assert dict(nccl_log.parse(text("nccl_p2p_cumem_channels.log")).channel_transports) == {"P2P/CUMEM": 11}
    ofi = nccl_log.parse(text("nccl_ofi_aws_efa.log"))
    assert ofi.transports == ("NET/OFI",) and ofi.ofi_provider == "tcp;ofi_rxm" and ofi.nccl_version == "2.4.6+cuda10.0"
    rt = nccl_log.parse(text("nccl_rings_trees_p2p_direct.log"))
    assert (rt.nranks, rt.nnodes, rt.rings, rt.trees) == (2, 1, 2, 2)
    assert dict(rt.channel_transports) == {"P2P/direct pointer": 1}


def test_nccl_gdr_and_pxn_channel_forms():
    lines = ("h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n"
             "h:1:2 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
             "h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 9[1] [send] via NET/IB/1(1)/GDRDMA\n"
             "h:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via SHM/direct/direct\n")
    log = nccl_log.parse(lines)
    assert log.gdr is True and log.pxn and log.transports == ("NET/IB", "SHM")
    assert dict(log.channel_transports) == {"NET/IB/GDRDMA": 2, "SHM/direct": 1}


def test_nccl_reordered_lines_read_the_same():
    # lines of many ranks interleave in any order in a real log, so order carries no meaning
    name = "nccl_socket_p2p_ipc_channels.log"
    rows = text(name).splitlines()
    assert nccl_log.parse("\n".join(reversed(rows))) == nccl_log.parse(text(name))


@pytest.mark.parametrize("damaged, message", [
    (lambda: text("nccl_log_gcp_vm.log").replace("NCCL version 2.19.3", "NCCL version two"),
     r"line 5: expected an NCCL version such as 2.19.3\+cuda12.3, got 'two\+cuda12.3'"),
    (lambda: text("nccl_socket_p2p_ipc_channels.log")[:text("nccl_socket_p2p_ipc_channels.log").index("NET/Socket/3") + 7],
     r"line 8: expected a channel .* with a known transport .*got 'NET/Soc'"),
    (lambda: cut("nccl_socket_p2p_ipc_channels.log", 15) + "<cluster_name>:924:1152 [5] NCCL INFO Channel 00/0 : 13[5] -> 12[4] vi",
     r"line 16: expected 'via TRANSPORT' after the channel's ranks"),
    (lambda: text("nccl_log_16_ranks_mlx5.log").replace("nranks 16", "nranks sixteen"),
     r"line 4: expected a whole number of ranks after 'nranks', got 'sixteen'"),
    (lambda: text("nccl_log_16_ranks_mlx5.log").replace("[0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE", "mlx5_0"),
     r"line 1: expected IB devices such as '\[0\]mlx5_0:1/IB'"),
    (lambda: text("nccl_nvls_ib_sharp.log").replace("Using network IBext_v8", "Using network Carrier pigeon"),
     r"line 16: expected a network name .*got 'Carrier pigeon'"),
    (lambda: "just some text\nwithout NCCL\n", r"line 1: expected an NCCL_DEBUG=INFO log"),
])
def test_nccl_damaged_copies_name_the_line(damaged, message):
    with pytest.raises(ValueError, match=message):
        nccl_log.parse(damaged())


# ---------------------------------------------------------------- ibstat / ibv_devinfo / ibstatus

def test_ibstat_ports():
    ndr = ibstat.parse(text("ibstat_cx7_ndr.txt"))
    assert ndr.tool == "ibstat" and [p.to_json() for p in ndr.ports] == [
        {"ca": "mlx5_5", "port": 1, "rate_gbps": 400.0, "link_layer": "InfiniBand", "state": "Active"}]
    two = ibstat.parse(text("ibstat_mlx4_two_ports_down.txt"))
    assert [(p.port, p.state, p.rate_gbps) for p in two.ports] == [(1, "Down", 10.0), (2, "Active", 56.0)]
    assert ibstat.parse(text("ibstat_mlx4_fdr.txt")).ports[0].rate_gbps == 56.0


def test_a_port_without_a_link_layer_line_is_unknown_not_none_nor_infiniband(capsys):
    """ibstat_mlx4_two_ports_down is cut after port 2's Rate: its link layer is not in the output. ibstat
    prints 'Link layer' for every port when built with link-layer support, so the missing line says nothing
    about the port: 'unknown' (not None, not a guessed InfiniBand), in the data, the JSON and the findings."""
    from course_lib.__main__ import main
    from course_lib.diagnostics import findings

    two = ibstat.parse(text("ibstat_mlx4_two_ports_down.txt"))
    assert [(p.port, p.link_layer) for p in two.ports] == [(1, "InfiniBand"), (2, "unknown")]
    assert ibstat.UNKNOWN_LINK_LAYER == "unknown" and two.ports[1].to_json()["link_layer"] == "unknown"
    lines = findings.ibstat_findings(two)
    assert lines[1].startswith("mlx4_0 port 2: Active, link layer unknown (not in the output), 56 Gb/s")
    assert "None" not in "\n".join(lines) and "Infini" not in lines[1]
    assert main(["inspect", "--json", "--sample", "ibstat_mlx4_two_ports_down.txt"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert [p["link_layer"] for p in report["ports"]] == ["InfiniBand", "unknown"]
    # the same port with its link-layer line, as the full ibstat output prints it, is InfiniBand
    whole = text("ibstat_mlx4_two_ports_down.txt").rstrip("\n") + "\n\t\tLink layer: InfiniBand\n"
    assert ibstat.parse(whole).ports[1].link_layer == "InfiniBand"


def test_ibv_devinfo_and_ibstatus_ports():
    dev = ibstat.parse(text("ibv_devinfo_roce_down.txt"))
    assert dev.tool == "ibv_devinfo" and dev.ports[0].to_json() == {
        "ca": "mlx5_12", "port": 1, "rate_gbps": None, "link_layer": "Ethernet", "state": "Down"}
    st = ibstat.parse(text("ibstatus_roce_bond.txt"))
    assert st.tool == "ibstatus" and [p.ca for p in st.ports] == ["mlx5_bond_0", "mlx5_bond_1", "mlx5_bond_2"]
    assert {(p.rate_gbps, p.link_layer, p.state) for p in st.ports} == {(200.0, "Ethernet", "Active")}


def test_ibv_devinfo_verbose_rate_is_width_times_speed():
    verbose = text("ibv_devinfo_roce_down.txt").replace(
        "                        link_layer:             Ethernet",
        "                        active_width:           4X (2)\n"
        "                        active_speed:           25.0 Gbps (32)\n"
        "                        link_layer:             Ethernet")
    assert ibstat.parse(verbose).ports[0].rate_gbps == 100.0


@pytest.mark.parametrize("damaged, message", [
    (lambda: text("ibstat_cx7_ndr.txt").replace("Rate: 400", "Rate: fast"), r"line 11: expected a rate in Gb/s"),
    (lambda: text("ibstat_mlx4_fdr.txt").replace("Link layer: InfiniBand", "Link layer: Infini"),
     r"line 17: expected a link layer \(InfiniBand or Ethernet\), got 'Infini'"),
    (lambda: text("ibstat_cx7_ndr.txt").replace("State: Active", "State: Actve"), r"line 9: expected a port state"),
    (lambda: "hello\nworld: 1\n", r"line 1: expected ibstat's \"CA 'mlx5_0'\""),
    (lambda: text("ibstatus_roce_bond.txt").replace("state:           4: ACTIVE", "state           4: ACTIVE", 1),
     r"line 5: expected a 'key: value' line"),
])
def test_ibstat_damaged_copies_name_the_line(damaged, message):
    with pytest.raises(ValueError, match=message):
        ibstat.parse(damaged())


def test_ibstat_label_cut_and_headless_copies_are_read():
    """Issue 32: a label before the output is skipped; a copy cut before a port's State line keeps the port with
    its state 'not in the copy'; a copy without its CA line keeps the ports, the CA unnamed."""
    whole = ibstat.parse(text("ibstat_cx7_ndr.txt"))
    for label in ("# ibstat mlx5_0", "ibstat output:", "$ ibstat"):
        assert ibstat.parse(label + "\n" + text("ibstat_cx7_ndr.txt")).to_json() == whole.to_json()
    cut_copy = ibstat.parse(cut("ibstat_mlx4_two_ports_down.txt", 18))
    assert cut_copy.ports[-1].state == ibstat.UNKNOWN_STATE and cut_copy.ports[0].state != ibstat.UNKNOWN_STATE
    headless = ibstat.parse("\n".join(text("ibstat_cx7_ndr.txt").splitlines()[1:]))
    assert headless.ports[0].ca == ibstat.NO_CA and headless.ports[0].rate_gbps == whole.ports[0].rate_gbps


# ---------------------------------------------------------------- nvidia-smi nvlink -s

def test_nvlink_inactive_links():
    s = nvlink.parse(text("nvlink_v100_inactive.txt"))
    (g,) = s.gpus
    assert (g.index, g.name, g.active, g.inactive) == (3, "Tesla V100-SXM2-32GB", 4, [3, 5])
    assert s.links_per_gpu == 6 and s.gb_s_per_link == 25.781


def test_nvlink_all_active_and_elided_gpus():
    a100 = nvlink.parse(text("nvlink_a100_12_links.txt"))
    assert a100.to_json()["gpus"] == 2 and a100.links_per_gpu == 12 and a100.gb_s_per_link == 25.0
    h800 = nvlink.parse(text("nvlink_h800_8_links.txt"))
    assert [g.index for g in h800.gpus] == [0, 1, 7] and h800.gb_s_per_link == 26.562
    assert all(g.active == 8 for g in h800.gpus)


@pytest.mark.parametrize("damaged, message", [
    (lambda: swap("nvlink_v100_inactive.txt", 3, 4), r"line 3: expected Link 1 of GPU 3 \(links are listed in order\)"),
    (lambda: text("nvlink_v100_inactive.txt").replace("Link 5: <inactive>", "Link 5: <inact"),
     r"line 7: expected a link rate such as '26.562 GB/s' or '<inactive>', got '<inact'"),
    (lambda: cut("nvlink_a100_12_links.txt", 14), r"line 15: expected 'Link 0: ...' under GPU 1, got end of input"),
    (lambda: "\n".join(text("nvlink_a100_12_links.txt").splitlines()[13:] + text("nvlink_a100_12_links.txt").splitlines()[:13]),
     r"line 14: expected a GPU after GPU 1"),
    (lambda: "\n".join(text("nvlink_v100_inactive.txt").splitlines()[1:]), r"line 1: expected a 'GPU n: ...' line before its links"),
])
def test_nvlink_damaged_copies_name_the_line(damaged, message):
    with pytest.raises(ValueError, match=message):
        nvlink.parse(damaged())


# ---------------------------------------------------------------- nvidia-smi -q, PCIe part

def test_smi_pcie():
    (g,) = smi_pcie.parse(text("smi_q_pcie_h800.txt")).gpus
    assert (g.bus_id, g.name, g.gen_current, g.gen_max, g.width_current, g.width_max) == (
        "00000000:18:00.0", "NVIDIA H800", 5, 5, 16, 16)
    assert not g.trained_down
    idle = text("smi_q_pcie_h800.txt").replace("Current                   : 5", "Current                   : 1")
    assert smi_pcie.parse(idle).gpus[0].trained_down


@pytest.mark.parametrize("damaged, message", [
    (lambda: text("smi_q_pcie_h800.txt").replace("Current                   : 16x", "Current                   : five"),
     r"line 28: expected a link width such as '16x', got 'five'"),
    (lambda: cut("smi_q_pcie_h800.txt", 26), r"line 27: expected the GPU Link Info .* \(missing width_current, width_max\)"),
])
def test_smi_pcie_damaged_copies_name_the_line(damaged, message):
    with pytest.raises(ValueError, match=message):
        smi_pcie.parse(damaged())


def test_results_are_json_ready():
    for name in d.sample_names():
        _, result = d.parse(text(name))
        json.dumps(result.to_json())


# ---------------------------------------------------------------- pasted text (issue 25)

from course_lib.diagnostics import failures as dfail  # noqa: E402
from course_lib.diagnostics import pasted  # noqa: E402
from course_lib.diagnostics import findings  # noqa: E402

PROMPTS = ("user@host:~$ {cmd}", "> {cmd}", "root@pod:/opt# {cmd}", "[root@n01 HPL]# {cmd}", "$ {cmd}")
NOISE = ("Warning: Permanently added 'node2' (ED25519) to the list of known hosts.", "Hello from rank 0",
         "node01 slots=8", "+ ulimit -l unlimited")
OMPI_BOX = ("-" * 74 + "\nWARNING: There was an error initializing an OpenFabrics device.\n\n  Local host:   node01\n"
            + "-" * 74)


def _facts(obj):
    """A result's JSON without line numbers (the dressed copy has more lines before the output)."""
    if isinstance(obj, dict):
        return {k: _facts(v) for k, v in obj.items() if k not in ("line", "refused_rows")}
    if isinstance(obj, list):
        return [_facts(v) for v in obj]
    return obj


def _dressed(name, prompt):
    """A sample as a terminal paste: a prompt and command, launcher noise, colour codes, CRLF and a BOM."""
    body = text(name)
    coloured = "\n".join(f"\x1b[1m{line}\x1b[0m" if i % 3 == 0 and line else line
                         for i, line in enumerate(body.split("\n")))
    head = "\n".join(NOISE) + "\n" + OMPI_BOX + "\n" + prompt.format(cmd="some-tool --flag") + "\n"
    return "\ufeff" + (head + coloured).replace("\n", "\r\n")


@pytest.mark.parametrize("name", d.sample_names())
@pytest.mark.parametrize("prompt", PROMPTS[:3])
def test_a_dressed_paste_reads_as_the_bare_sample(name, prompt):
    """Prompt, launcher noise, an Open MPI box, colour codes, CRLF and a BOM change nothing in what is read."""
    kind, bare = d.parse(text(name))
    dressed = _dressed(name, prompt)
    assert d.detect(dressed) == kind
    kind2, result = d.parse(dressed)
    assert kind2 == kind and _facts(result.to_json()) == _facts(bare.to_json()), name
    skipped = d.read(dressed).skipped_json()
    assert [s["why"] for s in skipped][:4] == ["ssh warning", "launcher greeting", "hostfile line",
                                                "prompt or command line"]
    assert any(s["why"] == "Open MPI message" for s in skipped)


def test_pasted_keeps_what_the_command_line_says():
    p = pasted.read("\x1b[32muser@login:~$\x1b[0m mpirun -np 16 -npernode 8 -H a:8,b:8 -x NCCL_ALGO=Ring "
                    "./build/all_gather_perf -b 1K -e 8G -f 2 -g 1 -n 50\r\n# nThread 1 nGpus 1\r\n")
    assert p.command == {"processes": "16", "processes_per_node": "8", "hosts": ["a", "b"], "test": "all_gather",
                         "min_bytes": "1K", "max_bytes": "8G", "factor": "2", "gpus_per_process": "1",
                         "env": {"NCCL_ALGO": "Ring"}}
    assert p.text.split("\n")[1] == "# nThread 1 nGpus 1" and p.skipped[0][0] == 1
    assert pasted.read("./run.sh -t all_gather\n  8  2  float none -1 1.0 0.0 0.0 0").command["test"] == "all_gather"
    assert pasted.read("./build/all_reduce_perf -t 2 -g 4\n").command["test"] == "all_reduce"  # -t 2: threads


def test_a_header_line_starting_with_hash_is_output_not_a_prompt():
    assert pasted.read("# nThread 1 nGpus 8 minBytes 8\n#  Rank  0 Group 0").skipped == ()


# ---------------------------------------------------------------- new readers

def test_rdma_link_roce_and_soft_roce():
    two = d.parse(text("rdma_link_mlx5_two_ports.txt"))[1].to_json()["ports"]
    assert [(p["device"], p["port"], p["state"], p["netdev"], p["link_layer"]) for p in two] == [
        ("mlx5_0", 1, "ACTIVE", "p1p1", "Ethernet"), ("mlx5_1", 1, "ACTIVE", "p1p2", "Ethernet")]
    (rxe,) = d.parse(text("rdma_link_rxe0.txt"))[1].to_json()["ports"]
    assert rxe["soft_roce"] and rxe["device"] == "rxe_0"
    with pytest.raises(ValueError, match=r"line 1: expected DEVICE/PORT"):
        d.rdma_link.parse("link mlx5_0/x state ACTIVE")


def test_iblinkinfo_rates_down_ports_and_switches():
    edr = d.parse(text("iblinkinfo_edr_sb7700.txt"))[1].to_json()
    assert (edr["cas"], edr["switches"], edr["active"], edr["down"]) == (2, 1, 4, 16)
    assert edr["rates"] == ["4X EDR"]
    assert {l["remote"] for l in edr["links"] if l["type"] == "Switch" and l["state"] == "Active"} == {
        "n01 HCA-1", "n02 HCA-1"}
    qdr = d.parse(text("iblinkinfo_is5035_excerpt.txt"))[1].to_json()
    assert (qdr["cas"], qdr["active"], qdr["rates"]) == (3, 3, ["4X QDR"])
    line = "0x0002c903000e0b72 \"  node HCA-1\"  5  1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x0002c9 4 17[  ] \"sw\""
    (l,) = d.iblinkinfo.parse(line).links
    assert (l.node, l.port, l.rate_gbps, l.remote) == ("node HCA-1", 1, 103.125, "sw")


def test_nccl_topology_xml_and_log():
    a100 = d.parse(text("nccl_topo_a100_4gpu.xml"))[1].to_json()
    assert (a100["form"], a100["gpus"], a100["nvlinks_per_gpu"], a100["nvswitch"], a100["truncated"]) == (
        "xml", 1, [8], True, True)
    h200 = d.parse(text("nccl_topo_log_h200_vm.log"))[1].to_json()
    assert (h200["form"], h200["gpus"], h200["max_bw_gb_s"], h200["total_bw_gb_s"], h200["nvswitch"]) == (
        "log", 3, 48.0, 370.8, True)
    assert [n["speed_gbit_s"] for n in h200["nets"]] == [400.0] * 3
    with pytest.raises(ValueError, match="maxBw"):
        d.nccl_topo.parse("x NCCL INFO + PCI[12.0] - GPU/3000 (0)")


def test_nccl_tests_without_header_header_only_and_rccl():
    mi250 = d.parse(text("rccl_tests_mi250x_no_header.txt"))[1]
    assert (mi250.collective, mi250.collective_from, mi250.ranks, len(mi250.rows)) == (
        "all_reduce", "launcher line", 16, 8)
    tail = d.parse(text("rccl_tests_broadcast_tail.txt"))[1]
    assert (tail.collective, tail.collective_from) == ("broadcast", "trailer")
    mi300 = d.parse(text("rccl_tests_mi300x_8gpu.txt"))[1]
    assert mi300.tool == "rccl-tests" and mi300.collective == "all_reduce" and "inferred" in mi300.collective_from
    p100 = d.parse(text("nccl_tests_8gpu_p100.txt"))[1]
    assert p100.failed_before_first_size and p100.ranks == 8 and p100.collective == "all_reduce"
    assert p100.last_words == "NCCL failure all_reduce.cu:95 'unhandled cuda error'"
    assert [f.kind for f in p100.failures] == ["cuda_error"] and p100.failures[0].code == 1


def test_damaged_rows_are_refused_never_passed_on():
    rows = ("         8             2     float     sum      -1    -1.00    0.00    0.00      0\n"
            "        16             4     float     sum      -1      nan    0.00    0.00      0\n"
            "        32             8     float     sum      -1    10.00     inf    0.00      0\n"
            "        64            16     float     sum      -1    10.00    0.01    0.01      0\n")
    run = d.nccl_tests.parse(rows)
    assert [r["size"] for r in run.rows] == [64] and run.refused_rows == (1, 2, 3)


# ---------------------------------------------------------------- failures

def test_failures_name_the_ends_the_code_and_the_next_command():
    (ib,) = d.parse(text("nccl_log_kp_ddp_worker.log"))[1].failures
    assert (ib.kind, ib.host, ib.gpu, ib.peer, ib.code, ib.count) == (
        "ib_completion_error", "kp-ddp-worker-0", "4", "10.216.210.236", 6, 3)
    assert "IBV_WC_RETRY_EXC_ERR" in ib.detail and "vendor err 129" in ib.detail
    line = dfail.finding(ib, ("RoCE",))
    for word in ("ibstat", "rdma link", "ibv_rc_pingpong", "NCCL_IB_GID_INDEX", "MTU", "NCCL error code 6"):
        assert word in line
    (qp,) = d.parse(text("nccl_log_hai_a100.log"))[1].failures
    assert (qp.kind, qp.code, qp.count, qp.detail) == ("ibv_call_failed", 2, 3, "ibv_create_qp failed")
    (wd,) = d.parse(text("torch_log_four_ranks.log"))[1].failures
    assert wd.kind == "watchdog_timeout" and "rank 1, rank 0, rank 2" in wd.detail and "600 s" in wd.detail
    kinds = [f.kind for f in d.parse(text("nccl_log_shm_ubuntu.log"))[1].failures]
    assert kinds == ["shm_error", "system_error"]


def test_failure_device_and_port_come_from_the_hosts_net_ib_line():
    log = ("h1:10:20 [0] NCCL INFO NET/IB : Using [0]mlx5_3:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
           "h1:10:20 [0] NCCL INFO comm 0x5 rank 3 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n"
           "h1:10:30 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with "
           "error 12, opcode 0, len 0, vendor err 129\n")
    (f,) = d.parse(log)[1].failures
    assert (f.device, f.port, f.peer) == ("mlx5_3", "1", "10.0.0.2")
    assert "device mlx5_3, port 1" in dfail.finding(f)


def test_nccl_version_from_any_rank_or_not_in_the_file():
    log = "h2:1:2 [3] NCCL INFO comm 0x5 rank 3 nranks 4 cudaDev 3 - Init COMPLETE\nNCCL version 2.21.5+cuda12.4\n"
    assert d.parse(log)[1].nccl_version == "2.21.5+cuda12.4"
    assert d.parse("h2:1:2 [3] NCCL INFO Using network IB\n")[1].to_json()["nccl_version"] == "not in the file"


def test_nvlink_excerpts_that_show_only_some_gpus_say_so():
    for name, shown in (("nvlink_v100_inactive.txt", [3]), ("nvlink_h800_8_links.txt", [0, 1, 7])):
        r = d.parse(text(name))[1]
        assert r.to_json()["gpu_indices"] == shown and r.excerpt, name
        assert any("the output shows only" in f for f in findings.nvlink_findings(r)), name
    # the shipped A100 copy lost the reporter's '......' line: GPUs 0-1 alone cannot be told from a 2-GPU node
    assert not d.parse(text("nvlink_a100_12_links.txt"))[1].excerpt
    assert d.parse(text("nvlink_a100_12_links.txt") + "\t......\n")[1].excerpt


def test_a_one_gpu_virtual_machine_as_the_course_measured_it():
    """Outputs the course ran on a real one-GPU H200 VM (benchmarks/device_check.py): what each reader makes of them."""
    from course_lib import cli_inspect

    topo = cli_inspect.inspect_text(text("topo_1gpu_h200_vm_ansi_header.txt"))
    assert topo["gpus"] == 1 and topo["predicted_all_reduce"] is None  # no pair, nothing to predict
    assert topo["findings"] == [next(f for f in topo["findings"] if f.startswith("1 GPU, 0 NIC(s): no GPU pairs"))]

    log = cli_inspect.inspect_text(text("nccl_log_h200_vm_one_rank_bench.log"))
    assert log["kind"] == "nccl_debug"  # a whole INFO log that also printed its topology is read as the log
    assert log["nccl_version"] == "2.28.9+cuda13.0" and log["socket_fallback"] and log["nranks"] == 1
    found = "\n".join(log["findings"])
    assert "this run is one node" in found  # 'NET/IB : Using [RO]; OOB eth0' (no device) is read, not refused
    assert "topology: link bandwidths NCCL assumes (GB/s per direction): NET 1.2, PCI 48" in found
    assert "1 link(s) at 5000 GB/s (PCI to NIC/0-0): not a rate but NCCL's placeholder" in found
    assert "NET/0-0 at 10 Gb/s" in found  # from '(0/0/0/1.250000)', not the rounded [1.2]

    xml = cli_inspect.inspect_text(text("nccl_topo_h200_vm_one_gpu.xml"))
    assert xml["gpus"] == 1 and xml["gpu_sm"] == [90]
    assert any(f.startswith("no NVLink") for f in xml["findings"])
    assert any("eth0: an IP interface, not an RDMA device" in f for f in xml["findings"])
    assert not any("GPUDirect RDMA off" in f for f in xml["findings"])  # no nvidia_peermem advice for TCP

    smi = cli_inspect.inspect_text(text("smi_q_h200_vm.txt"))
    assert "PCIe Gen5 x16 now, at most Gen5 x16 = 63 GB/s per direction" in smi["findings"][0]
