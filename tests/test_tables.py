"""Text tables: human headers with units, narrow enough for a notebook, numbers aligned."""
import pytest

from course_lib import tables
from course_lib.chapters import pcie


@pytest.mark.parametrize("key, expected", [
    ("x16_gb_s_bidirectional", "x16 GB/s bidirectional"),
    ("x1_gb_s_per_direction", "x1 GB/s per direction"),
    ("gt_s_per_lane", "GT/s per lane"),
    ("nic_gbit_s", "nic Gb/s"),
    ("memory_gib", "memory GiB"),
    ("latency_us", "latency µs"),
    ("pinned_fraction", "pinned fraction"),
    ("to host, all GPUs at once", "to host, all GPUs at once"),  # already written for people
    ("generation", "generation"),
    ("gbs_total", "gbs total"),  # only whole key parts are units
])
def test_header(key, expected):
    assert tables.header(key) == expected


def test_bad_input_is_refused():
    for bad in ("", None, 3):
        with pytest.raises(ValueError, match="key"):
            tables.header(bad)
    for rows in ([], {"a": 1}, [1, 2]):
        with pytest.raises(ValueError, match="rows"):
            tables.text_table(rows)
    with pytest.raises(ValueError, match="columns"):
        tables.text_table([{"a": 1}], columns=[])


def test_text_table_wraps_headers_onto_two_lines_and_aligns_numbers():
    rows = [{"name": "a", "x16_gb_s_bidirectional": 8.0}, {"name": "bb", "x16_gb_s_bidirectional": 126.03},
            {"name": "c", "x16_gb_s_bidirectional": None}]
    lines = tables.text_table(rows).splitlines()
    assert lines == ["           x16 GB/s",
                     "name  bidirectional",
                     "a               8.0",
                     "bb           126.03",
                     "c                 -"]


@pytest.mark.parametrize("rows, columns", [
    (pcie.generation_table(16), None), (pcie.tree_summary(4), None), (pcie.achievable_summary(), None),
    (pcie.cpu_gpu_links(), ["name", "gb_s_per_direction", "gb_s_bidirectional"]),
])
def test_chapter_01_tables_read_well(capsys, rows, columns):
    pcie.print_table(rows, columns)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100, "a notebook's output wraps lines this long"
    assert "_gb_s" not in out and "gt_s" not in out and "_per_" not in out
    assert len(lines) <= len(rows) + 2  # at most two header lines


def _systems_output(capsys, *argv):
    from course_lib.__main__ import main
    assert main(["systems", *argv]) == 0
    return capsys.readouterr().out


def test_systems_table_columns_line_up_for_every_row(capsys):
    """`python -m course_lib systems`: each column starts where its header does on every row, also for
    the long ids and network names (azure-nd-mi300x-v5, azure-nc-h100-nvl): widths come from the data."""
    import dataclasses

    from course_lib import __main__ as cli_main, hardware

    def check(lines, systems):
        header, rule, *rows = lines
        starts = [header.index(h) for h in ("id", "GPUs", "GPU fabric (per direction / bidirectional)", "network per node")]
        gpus_end = starts[1] + len("GPUs")
        assert len(rows) == len(systems)
        for row, s in zip(rows, systems):
            assert row.startswith(s.id + " ") and row[len(s.id):starts[1]].strip() == "", row
            assert row[:gpus_end].endswith(f" {s.gpus_per_node}") and row[gpus_end] == " ", row
            fabric, network = row[starts[2]:starts[3]], row[starts[3]:]
            assert fabric.startswith(s.gpu_link.name + ":") and fabric[-2:] == "  " and row[starts[2] - 1] == " ", row
            assert network.startswith(f"{s.nics_per_node} x {s.nic.name}") and row[starts[3] - 1] == " ", row
        assert set(rule) == {"-"} and len(rule) == max(len(line) for line in lines)  # a rule under every column

    systems = hardware.systems()
    assert {"azure-nd-mi300x-v5", "azure-nc-h100-nvl"} <= {s.id for s in systems}
    printed = _systems_output(capsys).split("\n\nSources:")[0].splitlines()
    check(printed, systems)
    longer = [*systems, dataclasses.replace(systems[0], id="an-id-longer-than-any-column-was-sized-for-x")]
    check(cli_main.systems_table(longer).splitlines(), longer)
