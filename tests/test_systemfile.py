"""course_lib.systemfile: a machine described in TOML becomes a hardware.System the cost model predicts."""
import textwrap

import pytest

from course_lib import costmodel, hardware, systemfile, units

L40S_LIKE = """\
[system]
id = "lab-pcie-4gpu"
name = "4 GPUs on PCIe Gen4, two sockets"
gpu = "a100-pcie"
gpus_per_node = 4
nodes = 2
cpu_sockets = 2
source = "course test fixture"

[gpu_link]
kind = "pcie"

[pcie]
generation = 4
lanes_per_gpu = 16
switches = 2

[network]
fabric = "ethernet"
gbit_s = 25
count = 2

[[network.nic]]
name = "mlx5_0"
gpus = [0, 1]

[[network.nic]]
name = "mlx5_1"
gpus = [2, 3]
"""

H800_LIKE = """\
[system]
id = "h800-node"
gpu = "h100-sxm"
gpus_per_node = 8
source = "NVLink cut to 8 links per GPU"

[gpu_link]
kind = "nvlink"
generation = 4
links = 8
nvswitch_generation = 3

[pcie]
generation = 5

[network]
kind = "ib-ndr"
count = 8
"""


def write(tmp_path, text, name="sys.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pcie_file_loads_and_predicts(tmp_path):
    s = systemfile.load_system(write(tmp_path, L40S_LIKE))
    assert isinstance(s, hardware.System) and s.id == "lab-pcie-4gpu" and s.gpus_per_node == 4
    assert s.gpu_link == hardware.pcie_link(4, 16) and s.interconnect == "pcie" and s.cpu_sockets == 2
    assert s.nic.family == "ethernet" and s.nic.per_direction == pytest.approx(25e9 / 8) and s.nics_per_node == 2
    assert s.raw["nodes"] == 2 and s.raw["nic_gpus"] == [{"name": "mlx5_0", "gpus": [0, 1]},
                                                         {"name": "mlx5_1", "gpus": [2, 3]}]
    one = costmodel.predict("all_reduce", 2**30, s)
    two = costmodel.predict("all_reduce", 2**30, s, nodes=2)
    assert two.busbw[0] < one.busbw[0]  # the 2 x 25 Gb/s network is the bottleneck across nodes
    assert costmodel.predict("all_reduce", 2**30, s, nodes=2, nics_per_node=4).busbw[0] > two.busbw[0]
    assert costmodel.fabric(s).net_bw_node == pytest.approx(2 * 25e9 / 8 * costmodel.efficiency("ethernet"))


def test_nvlink_switch_file_matches_catalog_rates(tmp_path):
    s = systemfile.load_system(write(tmp_path, H800_LIKE))
    assert s.gpu_link == hardware.nvlink(4, 8) and s.interconnect == "nvswitch" and s.in_network_reduction
    assert s.nic == hardware.network("ib-ndr") and s.pcie == hardware.pcie_link(5, 16)
    assert costmodel.fabric(s).intra_bw == pytest.approx(costmodel.fabric("dgx-h100").intra_bw * 8 / 18)


def test_bridge_override_rate(tmp_path):
    text = H800_LIKE.replace("nvswitch_generation = 3", 'topology = "bridge"\nlink_gb_s_per_direction = 14.0625')
    text = text.replace("generation = 4\nlinks = 8", "generation = 3\nlinks = 4")
    s = systemfile.load_system(write(tmp_path, text))
    assert s.interconnect == "nvlink-bridge" and s.gpu_link.per_direction == pytest.approx(4 * 14.0625e9)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("gpus_per_node = 4", "gpus_per_node = 0"),
     r"field system.gpus_per_node \(line 5\): must be in \[1, 100000\], got 0"),
    (lambda t: t.replace('gpu = "a100-pcie"', 'gpu = "l40s"'), r"field system.gpu \(line 4\): must be one of .*'l40s'"),
    (lambda t: t.replace("generation = 4\nlanes", "generation = 9\nlanes"), r"field pcie.generation \(line 14\): must be in \[1, 7\], got 9"),
    (lambda t: t.replace("lanes_per_gpu = 16", "lanes_per_gpu = 12"),
     r"field pcie.lanes_per_gpu \(line 15\): must be one of \(1, 2, 4, 8, 16\), got 12"),
    (lambda t: t.replace("gpus = [2, 3]", "gpus = [2, 4]"), r"field network.nic\[1\].gpus \(line 29\): must be in \[0, 3\], got 4"),
    (lambda t: t.replace("count = 2", "count = 1"), r"field network.nic \(line 23\): lists 2 NICs but network.count is 1"),
    (lambda t: t.replace("gbit_s = 25", "gbit_s = -25"), r"field network.gbit_s \(line 20\): must be in \(0, inf\], got -25"),
    (lambda t: t.replace("switches = 2", "switches = 2\nspeed = 3"), r"field pcie.speed \(line 17\): unknown field"),
    (lambda t: t.replace('source = "course test fixture"\n', ""), r"field system \(line 1\): missing required field system.source"),
    (lambda t: t.replace('kind = "pcie"', 'kind = "pcie"\nlinks = 4'), r"field gpu_link.links \(line 12\): only applies to kind = \"nvlink\""),
    (lambda t: t.replace("[pcie]", "[pcie"), r"not valid TOML: .*line 13"),
    (lambda t: t.replace("cpu_sockets = 2", "cpu_sockets = \"two\""), r"field system.cpu_sockets \(line 7\): must be a whole number"),
])
def test_errors_name_the_field_and_line(tmp_path, edit, message):
    with pytest.raises(ValueError, match=message):
        systemfile.load_system(write(tmp_path, edit(L40S_LIKE)))


def test_nvlink_errors(tmp_path):
    with pytest.raises(ValueError, match=r"field gpu_link.links \(line 10\): must be in \[1, 18\], got 20"):
        systemfile.load_system(write(tmp_path, H800_LIKE.replace("links = 8", "links = 20")))
    with pytest.raises(ValueError, match=r"field gpu_link.topology \(line 11\): topology = \"nvswitch\" needs"):
        systemfile.load_system(write(tmp_path, H800_LIKE.replace("nvswitch_generation = 3", 'topology = "nvswitch"')))
    with pytest.raises(ValueError, match=r"path must be an existing system file"):
        systemfile.load_system(tmp_path / "missing.toml")


def test_the_docstring_example_loads(tmp_path):
    doc = systemfile.__doc__
    block = doc[doc.index("::\n") + 3:doc.index("Errors name")]
    s = systemfile.load_system(write(tmp_path, textwrap.dedent(block)))
    assert s.id == "lab-l40s" and s.gpus_per_node == 4 and s.raw["nic_gpus"] == [{"name": "mlx5_0", "gpus": [0, 1]}]
