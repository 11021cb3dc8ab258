"""A typo gets the closest names ("did you mean dgx-h100?"), from validate.choice and from argparse alike."""
import pytest

from course_lib import __main__ as cli, collectives, hardware, validate
from course_lib.diagnostics import common


@pytest.mark.parametrize("argv, wanted", [
    (["predict", "all_reduce", "--system", "dgx-h10"], "did you mean dgx-h100?"),
    (["predict", "all_reduce", "--system", "dgxh100"], "did you mean dgx-h100?"),
    (["predict", "all_reduce", "--system", "h100"], "did you mean dgx-h100?"),
    (["predict", "all_reduce", "--system", "dgx-h100", "--fabric", "infiniban"], "did you mean infiniband?"),
    (["predict", "all_reduce", "--system", "dgx-h100", "--proto", "ll"], "did you mean LL?"),
    (["predcit", "all_reduce"], "did you mean predict?"),
    (["inspect", "--sample", "topo_dgx_a10"], "did you mean topo_dgx_a100"),
])
def test_typos_get_one_error_line_with_the_closest_name(capsys, argv, wanted):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and wanted in err, err


def test_closest_reads_the_names_it_is_given():
    ids = hardware.system_ids()
    for name in ids:  # any catalog id with one character dropped or its hyphens removed is suggested back
        assert name in validate.closest(name[:-1], ids), name
        assert name in validate.closest(name.replace("-", ""), ids), name
    assert validate.closest("zzzz", ids) == [] and validate.did_you_mean("zzzz", ids) == ""


def test_a_short_list_keeps_its_message_and_gains_the_suggestion():
    with pytest.raises(ValueError, match=r"^direction must be one of .*; got 'per_directon'; did you mean per_direction\?$"):
        validate.choice("direction", "per_directon", ["per_direction", "bidirectional"])


@pytest.mark.parametrize("spelling", ["all_reduce", "all-reduce", "allreduce", "All-Reduce", "AllReduce"])
def test_collective_spellings_are_accepted(capsys, spelling):
    assert collectives.get(spelling).id == "all_reduce"
    assert cli.main(["predict", spelling, "--system", "dgx-h100", "--json"]) == 0
    assert '"collective": "all_reduce"' in capsys.readouterr().out


def test_a_sample_typo_suggests_the_sample():
    name = common.sample_names()[0]
    with pytest.raises(ValueError, match=f"did you mean {name}"):
        common.sample_path(name[:-6])
