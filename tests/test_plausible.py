"""Physical inputs against the catalog's ranges: silent inside, one warning line beyond, refused past physics."""
import re

import pytest

from course_lib import __main__ as cli, plausible
from course_lib.diagnostics import nccl_tests
from course_lib import cli_predict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ROOT / "course_lib/data/systems"
MESH = (SYSTEMS / "amd_mi325x_8gpu.toml").read_text()   # kind = "infinity_fabric", a per-link rate


def _with_link_rate(tmp_path, rate):
    text, n = re.subn(r"(?m)^link_gb_s_per_direction = .*$", f"link_gb_s_per_direction = {rate}", MESH)
    assert n == 1
    path = tmp_path / "mine.toml"
    path.write_text(text)
    return path


def test_ranges_come_from_the_catalog_and_the_messages_state_them(tmp_path):
    low, high, unit = plausible.catalog_ranges()["link_gb_s_per_direction"]
    assert plausible.check("x", high, "link_gb_s_per_direction") == high
    with pytest.warns(plausible.PlausibilityWarning, match=f"the catalog's machines have {low:g}-{high:g} {unit}"):
        plausible.check("x", high * plausible.PLAUSIBLE_FACTOR * 1.5, "link_gb_s_per_direction")
    with pytest.raises(ValueError, match=r"^x must be within 100x of what real machines have"):
        plausible.check("x", high * plausible.PHYSICAL_FACTOR * 1.5, "link_gb_s_per_direction")


def test_a_per_link_rate_of_64000_is_refused_in_one_line(tmp_path, capsys):
    path = _with_link_rate(tmp_path, 64000)
    assert cli.main(["predict", "all_reduce", "--system-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field gpu_link.link_gb_s_per_direction (line" in err and "got 64000" in err, err


def test_an_implausible_rate_warns_once_and_still_predicts(tmp_path, capsys):
    path = _with_link_rate(tmp_path, 640)
    assert cli.main(["predict", "all_reduce", "--system-file", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("warning: ") and "a typo?" in err, err
    assert "busbw" in out


def test_flags_are_checked_too(capsys):
    sample = str(SYSTEMS / "rtx4090x4_p2p_all_reduce_perf.txt")
    assert cli.main(["compare", sample, "--system", "dgx-h100", "--nic-gbit", "400000"]) == 2
    assert "--nic-gbit must be within 100x" in capsys.readouterr().err
    assert cli.main(["compare", sample, "--system", "dgx-h100", "--nic-gbit", "8000"]) == 0
    assert capsys.readouterr().err.startswith("warning: --nic-gbit = 8000 Gb/s")


def test_compare_lists_every_row_it_drops(tmp_path, capsys):
    text = (SYSTEMS / "rtx4090x4_p2p_all_reduce_perf.txt").read_text().split("\n")
    rows = [i for i, line in enumerate(text) if line.split()[:1] and line.split()[0].isdigit()]
    text[rows[0]] = text[rows[0]].replace(text[rows[0]].split()[5], "-" + text[rows[0]].split()[5], 1)
    text[rows[1]] = " ".join(text[rows[1]].split()[:6])
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(text))
    run = nccl_tests.parse("\n".join(text))
    dropped = cli_predict.dropped_rows("\n".join(text), run)
    assert [d.split(":")[0] for d in dropped] == [f"line {rows[0] + 1}", f"line {rows[1] + 1}"]
    assert cli.main(["compare", str(bad), "--system-file", str(SYSTEMS / "rtx4090x4_p2p.toml")]) == 0
    err = capsys.readouterr().err
    assert err.count("# dropped: line ") == 2 and "negative or not a number" in err and "too few columns" in err
