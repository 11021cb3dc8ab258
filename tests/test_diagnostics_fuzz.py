"""Fuzzing every diagnostics reader (issue 25): damaged pastes give a clean result or one ValueError line.

Seeded and bounded: every shipped sample (and the nccl-tests runs) under truncations, byte flips, a prompt
line with colour codes and CRLF, a line of 40,000 spaces, numbers made negative or not finite; plus empty
and whitespace-only files, 5,000 '#Rank' entries on one line and 4 MiB files. Each input goes through
``inspect`` (detect + parse + findings), through compare's nccl-tests reader and through every reader
directly. Never a traceback, never a negative or non-finite time or bandwidth in a result, and at most 1 s
of CPU per file for inspect and for compare's reader (the backtracking regexes that took ~5 s are gone;
CPU time, so that a busy machine does not fail the test).
"""
from __future__ import annotations

import json
import math
import random
import time
from importlib import resources

import pytest

from course_lib import cli_inspect
from course_lib import diagnostics as d
from course_lib.diagnostics import nccl_tests

SEED = 2025
MUTANTS_PER_SAMPLE = 9
FOUR_MIB = 4 * 2**20
_MEASURES = ("time", "bw", "busbw", "algbw", "rate", "speed", "gbps", "gbit")


def _bases() -> dict[str, str]:
    out = {name: d.sample_text(name) for name in d.sample_names()}
    root = resources.files("course_lib").joinpath("data")
    out["nccl_tests/allreduce_2node_h100_gcp_a3mega.txt"] = root.joinpath(
        "samples/nccl_tests/allreduce_2node_h100_gcp_a3mega.txt").read_text(encoding="utf-8")
    out["systems/rtx4090x4_p2p_all_reduce_perf.txt"] = root.joinpath(
        "systems/rtx4090x4_p2p_all_reduce_perf.txt").read_text(encoding="utf-8")
    return out


def _numbers_damaged(text: str, rng: random.Random) -> str:
    tokens = text.split(" ")
    spots = [i for i, t in enumerate(tokens) if t.replace(".", "", 1).isdigit()]
    for i in rng.sample(spots, min(4, len(spots))):
        tokens[i] = rng.choice(("-1.0", "nan", "inf", "-inf", "-0.5", "1e400", "NaN"))
    return " ".join(tokens)


def _mutants(name: str, text: str, rng: random.Random) -> list[tuple[str, str]]:
    data = text.encode("utf-8")
    out = []
    for k in range(2):
        cut = rng.randrange(len(data) + 1)
        out.append((f"{name} cut at byte {cut}", data[:cut].decode("utf-8", "replace")))
    for k in range(3):
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(flipped))
            flipped[i] ^= 1 << rng.randrange(8)
        out.append((f"{name} byte flips {k}", flipped.decode("utf-8", "replace")))
    dressed = "\x1b[01;32muser@gpu01\x1b[00m:\x1b[01;34m~\x1b[00m$ tool\r\n" + "\r\n".join(
        f"\x1b[4m{line}\x1b[0m" for line in text.split("\n"))
    out.append((f"{name} prompt, colours, CRLF", "\ufeff" + dressed))
    lines = text.split("\n")
    at = rng.randrange(len(lines) + 1)
    out.append((f"{name} 40k spaces at line {at + 1}", "\n".join(lines[:at] + [" " * 40_000] + lines[at:])))
    out.append((f"{name} numbers negative or not finite", _numbers_damaged(text, rng)))
    out.append((f"{name} one long line", text.replace("\n", " ")))
    assert len(out) == MUTANTS_PER_SAMPLE
    return out


def _specials(bases: dict[str, str]) -> list[tuple[str, str]]:
    rank = "#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3 "
    run = bases["nccl_tests/allreduce_2node_h100_gcp_a3mega.txt"]
    log = bases["nccl_log_16_ranks_mlx5.log"]
    return [
        ("empty", ""), ("newlines only", "\n\n\n"), ("spaces only", " " * 1000), ("one NUL", "\x00"),
        ("40k spaces alone", " " * 40_000),
        ("5,000 #Rank entries on one line", rank * 5000 + "\n" + run),
        ("4 MiB of spaces on one line", " " * FOUR_MIB),
        ("4 MiB NCCL log", (log * (FOUR_MIB // len(log) + 1))[:FOUR_MIB]),
        ("4 MiB nccl-tests run", (run * (FOUR_MIB // len(run) + 1))[:FOUR_MIB]),
        ("4 MiB of 'a a a'", ("a " * (FOUR_MIB // 2))),
        ("4 MiB of digits", "7" * FOUR_MIB),
        ("4 MiB of carriage returns", "\r" * FOUR_MIB),
        ("4 MiB of escape-code starts", "\x1b[" * (FOUR_MIB // 2)),
        ("4 MiB of prompts", "user@host:~$ " * (FOUR_MIB // 13)),
    ]


def _inputs() -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    bases = _bases()
    out = []
    for name, text in bases.items():
        out += _mutants(name, text, rng)
    return out + _specials(bases)


INPUTS = _inputs()


def _check_numbers(obj, where: str, key: str = "") -> None:
    """No NaN or infinity anywhere; no negative value under a key that names a time, bandwidth or rate."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            _check_numbers(v, where, str(k).lower())
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _check_numbers(v, where, key)
    elif isinstance(obj, float):
        assert math.isfinite(obj), f"{where}: {key} = {obj}"
        if any(m in key for m in _MEASURES):
            assert obj >= 0, f"{where}: {key} = {obj}"


def _inspect(label: str, text: str) -> None:
    """What ``python -m course_lib inspect FILE`` does: a clean report or one error line."""
    try:
        reports = cli_inspect.inspect_texts([(label, text)])
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc), label
        return
    for r in reports:
        _check_numbers(r, label)
        json.dumps(r, allow_nan=False)
        assert all(isinstance(f, str) and "\n" not in f for f in r["findings"]), label


def _compare_reader(label: str, text: str) -> None:
    """What ``compare`` reads: rows with finite, non-negative times and bandwidths, or one error line."""
    try:
        run = nccl_tests.parse_nccl_tests(text)
    except ValueError as exc:
        assert "\n" not in str(exc), label
    else:
        _check_numbers(run["rows"], f"{label} rows")


def _every_reader(label: str, text: str) -> None:
    """Each reader on its own, whatever the text's kind."""
    for kind, reader in d.READERS.items():
        try:
            result = reader(text)
        except ValueError as exc:
            assert "\n" not in str(exc), (label, kind)
            continue
        _check_numbers(result.to_json(), f"{label} as {kind}")


def test_the_fuzz_inputs_are_many_and_seeded():
    assert len(INPUTS) >= 300
    print(f"{len(INPUTS)} fuzz inputs (seed {SEED})")
    assert [n for n, _ in INPUTS] == [n for n, _ in _inputs()]  # seeded: the same inputs every run


@pytest.mark.parametrize("index", range(0, len(INPUTS), 32))
def test_fuzzed_pastes_read_cleanly_within_two_seconds(index):
    """32 inputs per case. inspect and compare's reader each take under 2 s of CPU per file (issue 32's budget for a 4 MiB paste) (printed with -s);
    every reader on its own gives a clean result or one error line."""
    slowest = (0.0, "")
    for label, text in INPUTS[index:index + 32]:
        assert len(text.encode("utf-8", "replace")) <= FOUR_MIB + 64
        for step in (_inspect, _compare_reader):
            start = time.process_time()
            step(label, text)
            spent = time.process_time() - start
            slowest = max(slowest, (spent, f"{step.__name__[1:]}: {label}"))
            assert spent < 2.0, f"{step.__name__[1:]} on {label}: {spent:.2f} s"
        if len(text) < 2**20:  # every reader on its own; the 4 MiB inputs go through inspect and compare only
            _every_reader(label, text)
    print(f"slowest of inputs {index}-{index + 31}: {slowest[1]} {slowest[0]:.3f} s")
