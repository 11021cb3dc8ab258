import json
import subprocess
import sys

import pytest

from course_lib import datafiles, hardware, units


def test_pcie_is_derived_from_rate_encoding_and_lanes():
    # Gen3: 8 GT/s x 128/130 / 8 bits = 0.985 GB/s per lane per direction.
    assert hardware.pcie_lane_bandwidth(3) == pytest.approx(8e9 * 128 / 130 / 8)
    assert hardware.pcie_link(4, 16).per_direction == pytest.approx(31.5e9, rel=1e-3)
    assert hardware.pcie_link(5, 16).per_direction == pytest.approx(63.0e9, rel=1e-3)
    assert hardware.pcie_link(5, 16).bidirectional == pytest.approx(126.0e9, rel=1e-3)
    # Gen1/2 lose 20% to 8b/10b.
    assert hardware.pcie_link(1, 16).per_direction == pytest.approx(4e9)
    # Gen6 doubles the rate; the FLIT overhead keeps it under 128 GB/s.
    assert 115e9 < hardware.pcie_link(6, 16).per_direction < 128e9
    assert hardware.pcie_link(6, 16).per_direction == pytest.approx(118e9)   # 64 GT/s x 16 x 236/256 / 8
    assert hardware.pcie_link(4, 8).per_direction == pytest.approx(hardware.pcie_link(4, 16).per_direction / 2)


def test_nvlink_generations_match_vendor_totals():
    # Vendor totals are bidirectional: 160, 300, 600, 900, 1800 GB/s.
    totals = {g: hardware.nvlink(g).bidirectional / units.GB for g in range(1, 6)}
    assert totals == {1: 160, 2: 300, 3: 600, 4: 900, 5: 1800}
    assert hardware.nvlink(4).per_direction == 450e9
    assert hardware.nvlink(3, 2).per_direction == 50e9


def _unknown(rows) -> int:
    """A generation the catalog lacks, made up from the data (one past the newest), so a new row breaks nothing."""
    return max(row["generation"] for row in rows) + 1


def test_an_nvswitch_generation_names_its_layout_and_an_unknown_one_is_one_line():
    layouts = datafiles.load("nvswitch.json")["layouts"]
    rows = hardware.nvswitch_generations()
    for row in rows:  # each generation shows the layout its row names, and that layout is drawn for it
        assert hardware.nvswitch_layout_id(row["generation"]) == row["layout"]
        assert layouts[row["layout"]]["nvswitch_generation"] == row["generation"]
    assert hardware.nvswitch_layout_id(3) == "dgx-h100"  # a row of history: the DGX H100 board
    unknown, known = _unknown(rows), ", ".join(str(row["generation"]) for row in rows)
    with pytest.raises(ValueError, match=rf"^NVSwitch generation {unknown} is not in data/hardware.json \"nvswitch\"; "
                                         rf"known generations: {known}$"):
        hardware.nvswitch_layout_id(unknown)


def test_an_nvlink_generation_the_catalog_lacks_is_refused_by_name():
    unknown = _unknown(hardware.nvlink_generations())
    with pytest.raises(ValueError, match=rf"generation must be .*{unknown}"):
        hardware.nvlink(unknown)


def test_networks_are_bits():
    assert hardware.network("ib-ndr").per_direction == 50e9
    assert hardware.network("ib-ndr200").per_direction == 25e9
    assert hardware.network("ib-xdr").per_direction == 100e9
    assert hardware.network("ib-edr").per_direction == 12.5e9
    assert hardware.network("eth-400g").per_direction == 50e9


def test_link_lookup_by_id():
    assert hardware.link("pcie-gen5-x16") == hardware.pcie_link(5, 16)
    assert hardware.link("nvlink-4") == hardware.nvlink(4)
    assert hardware.link("NVLINK-3-x2").per_direction == 50e9
    assert hardware.link("ib-hdr").per_direction == 25e9


REQUIRED_SYSTEMS = ["pcie-8gpu", "dgx-1-v100", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200",
                    "gb200-nvl72", "workstation-3090-bridge", "consumer-4090-pcie"]


@pytest.mark.parametrize("system_id", REQUIRED_SYSTEMS)
def test_required_systems_exist_with_sources(system_id):
    s = hardware.system(system_id)
    assert s.gpus_per_node >= 2
    assert s.gpu_link.per_direction > 0
    assert datafiles.source(s.source)["url"].startswith("https://")


def test_system_facts():
    assert hardware.system("dgx-h100").gpu_link.per_direction == 450e9
    assert hardware.system("dgx-a100").gpu_link.bidirectional == 600e9
    assert hardware.system("dgx-h100").nic_bandwidth_per_gpu == 50e9
    assert hardware.system("dgx-h100").in_network_reduction
    assert not hardware.system("dgx-a100").in_network_reduction
    assert hardware.system("workstation-3090-bridge").gpu_link.bidirectional == pytest.approx(112.5e9)
    assert not hardware.system("consumer-4090-pcie").p2p
    assert hardware.system("gb200-nvl72").gpus_per_node == 72
    assert hardware.gpu("h100-sxm").bf16_flops == 989e12


def test_pcie_switch_counts_are_sourced_or_left_unknown():
    cat = hardware.catalog()
    assert hardware.system("dgx-a100").pcie_switches == 4
    for sid in ("dgx-h100", "dgx-h200"):   # the GPUs sit behind the ConnectX-7s' built-in switches
        assert hardware.system(sid).pcie_switches == 0
        row = hardware.system(sid).raw
        assert "ConnectX-7" in row["pcie_switches_note"]
        assert all(src in datafiles.bibliography() for src in row["pcie_switches_source"])
    assert hardware.system("dgx-b200").pcie_switches is None   # not published; not guessed
    gen3 = cat["nvswitch"][2]
    assert "DGX GH200" in gen3["system"] and all(src in datafiles.bibliography() for src in gen3["also"])


def test_every_catalog_entry_cites_a_known_source():
    cat = hardware.catalog()
    for section in ("pcie", "nvlink", "nvswitch", "networks", "gpus", "systems"):
        for row in cat[section]:
            assert row["source"] in datafiles.bibliography(), f"{section}: {row} cites an unknown source"


def test_cli_lists_systems_as_text_and_json():
    text = subprocess.run([sys.executable, "-m", "course_lib", "systems"], capture_output=True, text=True, check=True)
    assert "dgx-h100" in text.stdout and "per direction" in text.stdout
    data = json.loads(subprocess.run([sys.executable, "-m", "course_lib", "systems", "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    assert {row["id"] for row in data} >= set(REQUIRED_SYSTEMS)
    assert all(row["source"]["url"] for row in data)


BAD_CALLS = [
    (hardware.pcie_lane_bandwidth, (0,), "generation"),
    (hardware.pcie_lane_bandwidth, (8,), "generation"),
    (hardware.pcie_link, (5, 3), "lanes"),
    (hardware.pcie_link, (5, 32), "lanes"),
    (hardware.pcie_link, (5.5, 16), "generation"),
    (hardware.pcie_link, ("5", 16), "generation"),
    (hardware.nvlink, (_unknown(hardware.nvlink_generations()),), "generation"),
    (hardware.nvlink, (4, 19), "links"),
    (hardware.nvlink, (4, 0), "links"),
    (hardware.network, ("ib-qdr-typo",), "network_id"),
    (hardware.network, (400,), "network_id"),
    (hardware.link, ("pcie-gen9-x16",), "generation"),
    (hardware.link, ("warp-drive",), "link_id"),
    (hardware.link, (None,), "link_id"),
    (hardware.link, ("pcie-genX-x16",), "link_id"),
    (hardware.gpu, ("h1000",), "gpu_id"),
    (hardware.system, ("dgx-z9000",), "system_id"),
    (hardware.system, (8,), "system_id"),
    (datafiles.source, ("wikipedia",), "source_id"),
]


@pytest.mark.parametrize("func, args, name", BAD_CALLS,
                         ids=[f"{f.__name__}-{i}" for i, (f, *_rest) in enumerate(BAD_CALLS)])
def test_bad_input_names_the_parameter(func, args, name):
    with pytest.raises(ValueError, match=name):
        func(*args)


def test_as_system_takes_an_id_or_a_system():
    dgx = hardware.system("dgx-h100")
    assert hardware.resolve_system(dgx) is dgx
    assert hardware.resolve_system("dgx-a100").id == "dgx-a100"
    with pytest.raises(ValueError, match="system"):
        hardware.resolve_system("dgx-9000")
    with pytest.raises(ValueError, match="base must be a catalog id"):
        hardware.resolve_system(42, name="base")


def test_system_variant_overrides_only_what_is_asked_nic_in_gbit_s():
    base = hardware.system("dgx-h100")
    assert base.variant() is base
    s = base.variant(gpus_per_node=4, nics_per_node=1, nic_gbit_s=800, gpu_link_gb_s=100)
    assert (s.gpus_per_node, s.nics_per_node) == (4, 1)
    assert s.nic.per_direction == pytest.approx(100e9)      # 800 Gb/s = 100 GB/s per direction
    assert s.gpu_link.per_direction == pytest.approx(100e9)
    assert s.id.endswith("-what-if") and s.gpu == base.gpu
    only_nic = base.variant(nic_gbit_s=200)
    assert only_nic.nic.per_direction == pytest.approx(25e9) and only_nic.gpu_link == base.gpu_link
    assert only_nic.nics_per_node == base.nics_per_node
    for kwargs, name in (({"nic_gbit_s": 0}, "nic_gbit_s"), ({"gpu_link_gb_s": -1}, "gpu_link_gb_s"),
                         ({"gpus_per_node": 0}, "gpus_per_node"), ({"nics_per_node": 2.5}, "nics_per_node")):
        with pytest.raises(ValueError, match=name):
            base.variant(**kwargs)


# ---------------------------------------------------------------- systems added for issue 15 (cloud, PCIe, GH200, MI300X, B300)

NEW_SYSTEMS = {  # id: (GPUs per node, GPU link GB/s per direction, NICs, NIC Gb/s per direction, fabric)
    "aws-p4d": (8, 300, 4, 100, "efa_v1"),
    "aws-p5": (8, 450, 32, 100, "efa"),
    "azure-nd-h100-v5": (8, 450, 8, 400, "infiniband"),
    "gcp-a3-mega": (8, 450, 8, 200, "tcpxo"),
    "azure-nc-h100-nvl": (2, 300, 4, 20, "ethernet_tcp"),
    "aws-g6e-l40s": (8, 4 * 7.876923076923077, 4, 100, "efa"),  # 400 Gb/s over 4 cards
    "alps-gh200": (4, 450, 4, 200, "slingshot"),
    "azure-nd-mi300x-v5": (8, 448, 8, 400, "infiniband"),
    "dgx-b300": (8, 900, 8, 800, "infiniband"),
}


@pytest.mark.parametrize("system_id", sorted(NEW_SYSTEMS))
def test_new_systems_match_their_sources(system_id):
    g, link_gb_s, nics, nic_gbit, fabric = NEW_SYSTEMS[system_id]
    s = hardware.system(system_id)
    assert (s.gpus_per_node, s.nics_per_node, s.nic_fabric) == (g, nics, fabric)
    assert s.gpu_link.per_direction == pytest.approx(link_gb_s * 1e9)
    assert s.nic.per_direction == pytest.approx(nic_gbit * 1e9 / 8)
    assert fabric in hardware.FABRICS and datafiles.source(s.source)["url"].startswith("https://")
    assert all(src in datafiles.bibliography() for src in s.raw.get("also", []))
    assert s.note, "each new system says what is per direction, bidirectional or assumed"


@pytest.mark.parametrize("system_id", sorted(NEW_SYSTEMS))
def test_new_system_notes_say_direction_and_what_is_assumed(system_id):
    # issue 15.4 source check: each row says which figures are per direction, and where its socket count
    # comes from ("assumed" when the provider does not publish it)
    note = hardware.system(system_id).note
    assert "per direction" in note and "cpu_sockets" in note


def test_new_system_facts_from_the_sources():
    # p5: 3,200 Gb/s EFA per instance; ND H100 v5: 3.2 Tb/s per VM; p4d, g6e: 400 Gb/s; A3 Mega: 1,600
    for sid, tbit in (("aws-p5", 3.2), ("azure-nd-h100-v5", 3.2), ("aws-p4d", 0.4), ("gcp-a3-mega", 1.6),
                      ("aws-g6e-l40s", 0.4)):
        s = hardware.system(sid)
        assert s.nic.per_direction * s.nics_per_node * 8 == pytest.approx(tbit * 1e12)
    assert hardware.system("aws-g6e-l40s").gpu_link == hardware.pcie_link(4, 16)      # no NVLink on L40S
    assert hardware.system("azure-nc-h100-nvl").gpu_link.bidirectional == pytest.approx(600e9)  # NVLink bridge
    assert hardware.system("azure-nd-mi300x-v5").gpu_link.bidirectional == pytest.approx(896e9)  # 7 x 128 GB/s
    assert hardware.system("azure-nd-mi300x-v5").gpu_link.family == "infinity-fabric"
    assert hardware.system("alps-gh200").raw["cpu_gpu_link"]["gb_s_bidirectional"] == 900      # NVLink-C2C
    assert hardware.system("dgx-b300").gpu.memory_bytes * 8 == pytest.approx(2.304e12)         # 2.3 TB HBM3e
    assert all(hardware.system(sid).fabric == "" for sid in REQUIRED_SYSTEMS)  # old rows keep their default


def test_bibliography_entries_follow_the_shared_schema():
    bib = datafiles.bibliography()
    for sid in {hardware.system(i).source for i in NEW_SYSTEMS} | {"aws-efa-multicard", "gke-tcpxo", "hpe-slingshot"}:
        row = bib[sid]
        assert {"title", "url", "publisher", "year"} <= set(row) and isinstance(row["year"], int)


def test_variant_names_a_fabric():
    p4d = hardware.system("aws-p4d")
    assert p4d.variant(fabric="roce").nic_fabric == "roce" and p4d.variant(fabric="roce").raw["fabric"] == "roce"
    assert p4d.variant(nics_per_node=4) is p4d and p4d.variant().fabric == "efa_v1"
    with pytest.raises(ValueError, match="fabric"):
        p4d.variant(fabric="omnipath")
    with pytest.raises(ValueError, match="fabric"):
        hardware.system("dgx-h100").variant(fabric="efa")  # EFA does not run on InfiniBand ports
