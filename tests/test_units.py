import math

import pytest

from course_lib import units


def test_si_and_binary_prefixes():
    assert units.GB == 1e9 and units.GiB == 2**30
    assert units.parse_size("1.5 GB") == 1.5e9
    assert units.parse_size("2GiB") == 2 * 2**30
    assert units.parse_size("16G") == 16 * 2**30  # nccl-tests reads -e 16G as binary
    assert units.parse_size("16G", bare_prefix="si") == 16e9
    assert units.parse_size("8") == 8
    assert units.parse_size(1024) == 1024


def test_bits_and_bytes():
    assert units.gbit_to_gbyte(400) == 50
    assert units.bits_to_bytes(8) == 1
    assert units.bytes_to_bits(50) == 400
    assert units.parse_bandwidth("400 Gb/s") == 50e9
    assert units.parse_bandwidth("450 GB/s") == 450e9
    assert units.parse_bandwidth("200Gbps") == 25e9


def test_a_nic_rate_in_bits():
    assert units.gbit_per_s(50e9) == 400.0 and units.gbit_per_s(units.gbit_to_gbyte(400) * 1e9) == 400.0


def test_directions():
    assert units.per_direction(900e9) == 450e9
    assert units.bidirectional(450e9) == 900e9


def test_formatting():
    assert units.format_bytes(140e9) == "140 GB"
    assert units.format_bytes(140e9, binary=True) == "130 GiB"
    assert units.format_bandwidth(450e9) == "450 GB/s per direction"
    assert units.format_bandwidth(900e9, direction="bidirectional") == "900 GB/s bidirectional"
    assert units.format_bandwidth(50e9, bits=True) == "400 Gb/s per direction"
    assert units.format_time(0.00123) == "1.23 ms"
    assert units.format_time(90) == "1.5 min"
    assert units.format_time(2.5e-6) == "2.5 us"


BAD_CALLS = [
    (units.bits_to_bytes, (-1,), {}, "bits"),
    (units.bits_to_bytes, ("8",), {}, "bits"),
    (units.bytes_to_bits, (-1,), {}, "nbytes"),
    (units.bytes_to_bits, (math.nan,), {}, "nbytes"),
    (units.gbit_to_gbyte, (-400,), {}, "gbit_per_s"),
    (units.gbit_to_gbyte, (None,), {}, "gbit_per_s"),
    (units.per_direction, (-1,), {}, "bidirectional_bw"),
    (units.per_direction, (math.inf,), {}, "bidirectional_bw"),
    (units.bidirectional, (-1,), {}, "per_direction_bw"),
    (units.bidirectional, (True,), {}, "per_direction_bw"),
    (units.parse_size, ("16Gb",), {}, "bits"),
    (units.parse_size, ("sixteen",), {}, "size"),
    (units.parse_size, ("",), {}, "size"),
    (units.parse_size, (None,), {}, "size"),
    (units.parse_size, (-5,), {}, "size"),
    (units.parse_size, ("16G",), {"bare_prefix": "decimal"}, "bare_prefix"),
    (units.parse_bandwidth, ("fast",), {}, "bandwidth"),
    (units.parse_bandwidth, (400,), {}, "bandwidth"),
    (units.parse_bandwidth, ("400 Gb",), {}, "bandwidth"),
    (units.format_bytes, (-1,), {}, "nbytes"),
    (units.format_bytes, (1,), {"digits": 0}, "digits"),
    (units.format_bandwidth, (-1,), {}, "bytes_per_s"),
    (units.format_bandwidth, (1e9,), {"direction": "both"}, "direction"),
    (units.format_bandwidth, (1e9,), {"digits": 99}, "digits"),
    (units.format_time, (-1,), {}, "seconds"),
    (units.format_time, ("1s",), {}, "seconds"),
    (units.format_time, (1,), {"digits": 1.5}, "digits"),
]


@pytest.mark.parametrize("func, args, kwargs, name", BAD_CALLS,
                         ids=[f"{f.__name__}-{i}" for i, (f, *_rest) in enumerate(BAD_CALLS)])
def test_bad_input_names_the_parameter(func, args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        func(*args, **kwargs)
