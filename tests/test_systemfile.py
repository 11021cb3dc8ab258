"""course_lib.systemfile: a machine described in TOML becomes a hardware.System the cost model predicts."""
import json
import re
import textwrap
from pathlib import Path

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
    one = costmodel.predict("all_reduce", 2**30, s, nodes=1)
    two = costmodel.predict("all_reduce", 2**30, s, nodes=2)
    assert two.busbw[0] < one.busbw[0]  # the 2 x 25 Gb/s network is the bottleneck across nodes
    assert costmodel.predict("all_reduce", 2**30, s, nodes=2, nics_per_node=4).busbw[0] > two.busbw[0]
    assert costmodel.fabric(s).net_bw_node == pytest.approx(2 * 25e9 / 8 * costmodel.efficiency("ethernet"))


def test_nvlink_switch_file_matches_catalog_rates(tmp_path):
    s = systemfile.load_system(write(tmp_path, H800_LIKE))
    assert s.gpu_link == hardware.nvlink(4, 8) and s.interconnect == "nvswitch" and s.in_network_reduction
    assert s.nic == hardware.network("ib-ndr") and s.pcie == hardware.pcie_link(5, 16)
    assert costmodel.fabric(s).intra_bw == pytest.approx(costmodel.fabric("dgx-h100").intra_bw * 8 / 18)


def test_nvls_efficiency_follows_the_files_gpu(tmp_path):
    # a file has no raw nvlink_generation: the GPU's own generation picks NVLS's efficiency, as in the catalog
    text = """[system]
id = "b200-file"
gpu = "b200"
gpus_per_node = 8
source = "course test fixture"

[gpu_link]
kind = "nvlink"
generation = 5
links = 18
topology = "nvswitch"
nvswitch_generation = 4

[pcie]
generation = 5

[network]
fabric = "infiniband"
gbit_s = 400
count = 8
"""
    s = systemfile.load_system(write(tmp_path, text))
    assert s.in_network_reduction
    assert costmodel.fabric(s).nvls_bw == pytest.approx(costmodel.fabric("dgx-b200").nvls_bw)


def test_bridge_override_rate(tmp_path):
    text = H800_LIKE.replace("nvswitch_generation = 3", 'topology = "bridge"\nlink_gb_s_per_direction = 14.0625')
    text = text.replace("generation = 4\nlinks = 8", "generation = 3\nlinks = 4")
    s = systemfile.load_system(write(tmp_path, text))
    assert s.interconnect == "nvlink-bridge" and s.gpu_link.per_direction == pytest.approx(4 * 14.0625e9)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("gpus_per_node = 4", "gpus_per_node = 0"),
     r"field system.gpus_per_node \(line 5\): must be in \[1, 100000\], got 0"),
    (lambda t: t.replace('gpu = "a100-pcie"', 'gpu = "l99x"'), r"field system.gpu \(line 4\): must be one of .*'l99x'"),
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
    with pytest.raises(ValueError, match=r"^system file '.*missing.toml' cannot be read \(No such file.*; "
                                         r"pass the path of a TOML"):
        systemfile.load_system(tmp_path / "missing.toml")


def test_a_binary_or_oversized_file_is_refused_by_the_one_reader(tmp_path):
    # a zero byte used to reach tomllib, which called it "not valid TOML"
    blob = tmp_path / "blob.toml"
    blob.write_bytes(L40S_LIKE.encode() + b"\0")
    with pytest.raises(ValueError, match=r"^system file '.*blob.toml' is not a text file \(a zero byte at offset"):
        systemfile.load_system(blob)
    big = tmp_path / "big.toml"
    big.write_text(L40S_LIKE + "#" * systemfile.MAX_FILE_BYTES)
    with pytest.raises(ValueError, match=r"is larger than 1 MiB, the most read; pass the path of a TOML system"):
        systemfile.load_system(big)


def test_the_docstring_example_loads(tmp_path):
    doc = systemfile.__doc__
    block = doc[doc.index("::\n") + 3:doc.index("Errors name")]
    s = systemfile.load_system(write(tmp_path, textwrap.dedent(block)))
    assert s.id == "lab-l40s" and s.gpus_per_node == 4 and s.raw["nic_gpus"] == [{"name": "mlx5_0", "gpus": [0, 1]}]


# ---------------------------------------------------------------- fabrics, [gpu], the shipped example, the CLI

SYSTEMS = Path(systemfile.__file__).resolve().parent / "data" / "systems"
EXAMPLE = SYSTEMS / "rtx4090x4_p2p.toml"


def test_fabric_names_and_gpu_table(tmp_path):
    text = L40S_LIKE.replace('fabric = "ethernet"', 'fabric = "efa"')
    s = systemfile.load_system(write(tmp_path, text))
    assert s.fabric == s.nic_fabric == "efa" and s.nic.family == "ethernet"
    legacy = systemfile.load_system(write(tmp_path, L40S_LIKE, "legacy.toml"))
    assert legacy.fabric == "" and legacy.nic_fabric == "roce"  # an Ethernet port with no named fabric
    own_gpu = L40S_LIKE.replace('gpu = "a100-pcie"', 'gpu = "my-gpu"') + (
        '\n[gpu]\nname = "My GPU"\nmemory_gb = 48\nbf16_dense_tflops = 362\n')
    g = systemfile.load_system(write(tmp_path, own_gpu, "gpu.toml")).gpu
    assert (g.id, g.name, g.memory_bytes, g.bf16_flops) == ("my-gpu", "My GPU", 48e9, 362e12)
    with pytest.raises(ValueError, match=r"field network.fabric \(line 19\): must be one of infiniband, roce, efa"):
        systemfile.load_system(write(tmp_path, L40S_LIKE.replace('fabric = "ethernet"', 'fabric = "omnipath"')))
    with pytest.raises(ValueError, match=r"field network.fabric \(line 18\): fabric 'efa' does not run on InfiniBand"):
        systemfile.load_system(write(tmp_path, H800_LIKE.replace('kind = "ib-ndr"', 'kind = "ib-ndr"\nfabric = "efa"')))
    with pytest.raises(ValueError, match=r"field gpu.memory_gb \(line 3\d\): must be in \(0, inf\]"):
        systemfile.load_system(write(tmp_path, own_gpu.replace("memory_gb = 48", "memory_gb = 0")))


def test_load_system_reads_the_shipped_example():
    s = systemfile.load_system(EXAMPLE)
    assert s.id == "rtx4090x4-p2p" and s.gpu == hardware.gpu("rtx-4090")
    assert s.id not in hardware.system_ids() and s.p2p and s.gpu_link == hardware.pcie_link(4, 16)


def test_example_predicts_its_published_run():
    """The shipped machine file against its published all_reduce_perf rows: within 10% at every size."""
    from course_lib.diagnostics import nccl_tests
    rows = nccl_tests.parse_nccl_tests((SYSTEMS / "rtx4090x4_p2p_all_reduce_perf.txt").read_text())["rows"]
    s = systemfile.load_system(EXAMPLE)
    pred = costmodel.predict("all_reduce", [r["size"] for r in rows], s)
    for r, busbw in zip(rows, pred.busbw):
        assert busbw / units.GB == pytest.approx(r["busbw"], rel=0.10)


@pytest.fixture
def cli():
    from course_lib import __main__ as main
    main._EXTRA_COMMANDS.clear()
    yield main.main
    main._EXTRA_COMMANDS.clear()


def test_system_file_wherever_system_is_accepted(cli, capsys):
    f = str(EXAMPLE)
    assert cli(["predict", "all_reduce", "--system-file", f, "-b", "1G", "-e", "1G", "--json"]) == 0
    pred = json.loads(capsys.readouterr().out)
    assert pred["system"] == "rtx4090x4-p2p" and pred["ranks"] == 4
    assert cli(["compare", str(SYSTEMS / "rtx4090x4_p2p_all_reduce_perf.txt"), "--system-file", f, "--json"]) == 0
    cmp_ = json.loads(capsys.readouterr().out)
    assert cmp_["system"] == "rtx4090x4-p2p" and [r["size"] for r in cmp_["rows"]] == [2**28, 2**29, 2**30]
    assert cli(["plan", "--system-file", f, "--model", "gpt3-175b", "--gpus", "64", "--tp", "4", "--pp", "16",
                "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["estimate"]
    assert cli(["inspect", "--system-file", f, "--sample", "topo_4gpu_workstation_phb.txt", "--json"]) == 0
    system_report, topo_report = json.loads(capsys.readouterr().out)
    assert system_report["kind"] == "system" and system_report["system"]["id"] == "rtx4090x4-p2p"
    assert topo_report["predicted_all_reduce"]["system"] == "rtx4090x4-p2p"


def test_system_file_errors_on_the_cli(cli, capsys, tmp_path):
    bad = write(tmp_path, L40S_LIKE.replace("generation = 4\nlanes", "generation = 9\nlanes"))
    assert cli(["predict", "all_reduce", "--system-file", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(r"error: --system-file: .*sys.toml: field pcie.generation "
                                      r"\(line 14\): must be in \[1, 7\]", err[0])
    assert cli(["predict", "all_reduce", "--system-file", str(tmp_path / "none.toml")]) == 2
    err = capsys.readouterr().err  # the flag given, not --system (which "system file ..." used to be taken for)
    assert err.startswith("error: --system-file: system file ") and err.count("\n") == 1
    assert cli(["predict", "all_reduce", "--system", "dgx-h100", "--system-file", str(bad)]) == 2
    assert "argument --system-file: not allowed with argument --system" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["[" * 500 + "]" * 500, "{a = " * 500 + "1" + "}" * 500])
def test_a_system_file_nested_500_deep_is_one_line_not_a_recursion_error(tmp_path, value):
    path = tmp_path / "deep.toml"
    path.write_text(f"[system]\nid = 'x'\nnote = {value}\n")
    with pytest.raises(ValueError) as info:
        systemfile.load_system(path)
    assert "\n" not in str(info.value) and "nest 500 deep" in str(info.value)


def test_nesting_is_counted_outside_strings_and_comments():
    text = ("a = [[1, 2], [3]]  # [[[[[[\n[t]\nb = \"[[[[\\\"[[\"\nc = '[[[['\n"
            "d = \"\"\"\n[[[[\n\"\"\"\ne = '''[[[[\n'''\nf = {x = [1]}\n")
    assert systemfile._toml_nesting(text) == 2
    assert systemfile._toml_nesting("[[tables]]\nx = 1\n") == 2


CATALOG_EXAMPLES = ("dgx-b300", "hgx-h100-4gpu", "gb300-nvl72", "amd-mi325x-8gpu", "amd-mi355x-8gpu", "gcp-a4",
                    "gcp-a3-ultra", "oci-b300", "consumer-5090-pcie")


@pytest.mark.parametrize("sid", CATALOG_EXAMPLES)
def test_each_new_catalog_system_has_a_system_file_that_prices_like_it(sid):
    """Issue 24: every system added (and dgx-b300, corrected) ships a system-file example a learner can start
    from; it loads and prices one node and four nodes exactly as the catalog entry does, and is listed in SOURCES.json."""
    path = SYSTEMS / (sid.replace("-", "_") + ".toml")
    mine = systemfile.load_system(path)
    sources = json.loads((SYSTEMS / "SOURCES.json").read_text(encoding="utf-8"))
    assert path.name in sources and sources[path.name]["kind"] == "system_file"
    for nodes in (1, 4):
        a = costmodel.predict("all_reduce", [2**20, 2**30], mine, nodes=nodes)
        b = costmodel.predict("all_reduce", [2**20, 2**30], sid, nodes=nodes)
        assert a.busbw == pytest.approx(b.busbw, rel=1e-9) and list(a.algorithms) == list(b.algorithms)


def test_an_own_gpu_states_its_nccl_generation_to_be_priced(tmp_path):
    """A [gpu] table's GPU gets NCCL's tables only for the generation it states (no silent Ampere)."""
    own_gpu = L40S_LIKE.replace('gpu = "a100-pcie"', 'gpu = "my-gpu"') + (
        '\n[gpu]\nname = "My GPU"\nmemory_gb = 48\nbf16_dense_tflops = 362\n')
    unstated = systemfile.load_system(write(tmp_path, own_gpu, "unstated.toml"))
    with pytest.raises(ValueError, match=r"^gpu my-gpu states no nccl_arch .*\[gpu\] nccl_arch\); known generations: volta"):
        costmodel.predict("all_reduce", 2**20, unstated)
    stated = systemfile.load_system(write(tmp_path, own_gpu + 'nccl_arch = "hopper"\n', "stated.toml"))
    assert stated.gpu.nccl_arch == "hopper" and costmodel.fabric(stated).arch == "hopper"
    assert costmodel.predict("all_reduce", 2**20, stated).busbw[0] > 0


def test_predict_takes_a_system_files_nodes_as_the_cli_does(tmp_path):
    """A file's ``nodes = 2`` is predict's default, as ``predict --system-file`` takes it (issue 36 item 7)."""
    system = systemfile.load_system(write(tmp_path, L40S_LIKE))
    assert systemfile.nodes_default(system) == 2
    default = costmodel.predict("all_reduce", 2**30, system).busbw[0]
    assert default == costmodel.predict("all_reduce", 2**30, system, nodes=2).busbw[0]
    assert default != costmodel.predict("all_reduce", 2**30, system, nodes=1).busbw[0]


def test_the_docstring_marks_every_required_field():
    """Each field the loader requires is marked required on its line of the module's example."""
    lines = systemfile.__doc__.splitlines()
    for table, fields in systemfile._REQUIRED.items():
        for field in fields:
            marked = [line for line in lines if re.match(rf"\s*(# \[{table}\] )?.*\b{field}\s*=", line)
                      and "required" in line]
            assert marked or (table == "gpu" and any("those three" in line for line in lines)), (table, field)
