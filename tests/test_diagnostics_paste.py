"""Issue 32: one paste, many parts; the same facts however a sample is pasted; every reader in linear time.

The perturbations are built from each shipped sample the ways people paste outputs (a prompt and a command
line before, an env dump before, CRLF, colour codes, a BOM, Open MPI's tags, kubectl timestamps, tmux borders,
NCCL INFO lines interleaved, a rank list elided, the header dropped, the copy cut at a random row) and the facts
recovered must be the bare sample's, or, where a part is missing, fewer facts and never a different number.
"""
from __future__ import annotations

import random
import time

import pytest

from course_lib import cli_inspect
from course_lib import diagnostics as d
from course_lib.diagnostics import ibstat, nccl_tests, topo

SEED = 32
INFO = ("gpu-node-1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "gpu-node-1:4242:4242 [0] NCCL INFO NET/IB : No device found.",
        "gpu-node-1:4242:4242 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
        "gpu-node-1:4242:4242 [0] NCCL INFO Using network Socket")
ENV = "HOME=/root\nPATH=/usr/local/cuda/bin:/usr/bin\nCUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\nOMPI_COMM_WORLD_SIZE=2\n"


def _facts(text: str):
    """(kind, result as JSON without line numbers) of the paste's main part."""
    kind, result = d.parse(text)
    out = result.to_json()
    for f in out.get("failures", []):
        f.pop("line", None)
    return kind, out


def _lines(text):
    return text.split("\n")


def _interleave(text: str, rng: random.Random) -> str:
    rows = _lines(text)
    at = sorted(rng.sample(range(1, max(2, len(rows))), min(len(INFO), max(1, len(rows) - 1))))
    for k, i in enumerate(reversed(at)):
        rows.insert(i, INFO[k % len(INFO)])
    return "\n".join(rows)


def _perturbed(name: str, text: str, kind: str, rng: random.Random):
    """(perturbation, text) pairs whose facts must equal the bare sample's."""
    out = [("prompt and command", "user@gpu-node-1:~$ cat saved_output.txt\n" + text),
           ("env dump before", "$ env\n" + ENV + "\n" + text),
           ("CRLF", text.replace("\n", "\r\n")),
           ("colour codes", "\n".join(f"\x1b[1;32m{line}\x1b[0m" if line else line for line in _lines(text))),
           ("BOM", "\ufeff" + text),
           ("mpirun --tag-output", "\n".join(f"[1,0]<stdout>:{line}" for line in _lines(text))),
           ("kubectl --timestamps", "\n".join(f"2026-01-02T03:04:05.123456789Z {line}" for line in _lines(text))),
           ("tmux pane border", "\n".join(f"│{line}" for line in _lines(text)))]
    if kind == "nccl_tests":  # an nccl-tests run with NCCL_DEBUG=INFO: its log lines stand among the table's
        out.append(("NCCL INFO lines interleaved", _interleave(text, rng)))
    elif kind not in ("nccl_debug", "nccl_topo"):  # (NCCL's own topology lines and INFO lines are one log)
        out.append(("NCCL INFO lines before", "\n".join(INFO) + "\n" + text))
    return out


def _elided(text: str):
    """The rank lines of an nccl-tests output with all but the first and last replaced by '#  ...'."""
    rows = _lines(text)
    ranks = [i for i, line in enumerate(rows) if line.lstrip("# ").startswith("Rank") and " device " in line]
    if len(ranks) < 3 or ranks != list(range(ranks[0], ranks[-1] + 1)):
        return None
    return "\n".join(rows[:ranks[0] + 1] + ["#  ..."] + rows[ranks[-1]:])


def _fewer(whole, part, where: str) -> None:
    """``part`` says what ``whole`` says, or less: a missing value, a shorter list, never another number."""
    if part == whole or part in (None, "not in the file", [], {}, 0, False, "unknown", ibstat.UNKNOWN_STATE,
                                 topo.UNKNOWN, nccl_tests._UNKNOWN_TOOL):
        return
    if isinstance(part, str) and where.endswith(".nics") and part.startswith("NIC") and part[3:].isdigit():
        return  # nvidia-smi's own label for a NIC whose legend line the copy lost
    if isinstance(whole, dict) and isinstance(part, dict):
        for key in part:
            if key in ("notes", "missing_rows", "header", "failures", "refused_rows", "last_words",
                       "failed_before_first_size", "excerpt", "truncated", "gpu_indices", "ranks_from",
                       "collective_from", "cut_after", "last_row_partial"):
                continue  # what the copy lacks is reported there
            assert key in whole, (where, key)
            _fewer(whole[key], part[key], f"{where}.{key}")
        return
    if isinstance(whole, list) and isinstance(part, list) and len(part) <= len(whole):
        for w, p in zip(whole, part):
            _fewer(w, p, where)
        return
    if isinstance(whole, (int, float)) and isinstance(part, (int, float)) and where.endswith(
            ("gpus", "sizes", "nics", "ports", "active", "down", "rings", "trees", "cas", "switches", "bridges",
             "acs_enabled", "redirecting", "largest_size", "busbw_at_largest_gb_s", "links_per_gpu")) \
            or ".channel_transports." in where or ".gpu_pairs." in where:
        assert part <= whole, where  # a count of what was seen, or the largest size seen so far
        return
    raise AssertionError(f"{where}: {part!r} where the whole copy says {whole!r}")


def _cases():
    rng = random.Random(SEED)
    out = []
    for name in d.sample_names():
        text = d.sample_text(name)
        kind = d.sample_sources()[name]["kind"]
        for label, pert in _perturbed(name, text, kind, rng):
            out.append((name, label, pert))
        if kind == "nccl_tests" and _elided(text):
            out.append((name, "rank list elided", _elided(text)))
    return out


CASES = _cases()


@pytest.mark.parametrize("index", range(0, len(CASES), 40))
def test_every_sample_pasted_every_way_gives_the_same_facts(index):
    for name, label, text in CASES[index:index + 40]:
        got, want = _facts(text), _facts(d.sample_text(name))
        if label == "rank list elided":  # the reader says where the count came from
            assert "elided" in got[1].pop("ranks_from") and want[1].pop("ranks_from")
        assert got == want, (name, label)


def test_perturbation_counts():
    samples = len(d.sample_names())
    kinds = {label for _, label, _ in CASES}
    print(f"{samples} samples x {len(kinds)} perturbations: {len(CASES)} pastes, facts equal in all")
    assert len(CASES) >= samples * 8


@pytest.mark.parametrize("name", [n for n in d.sample_names()
                                  if d.sample_sources()[n]["kind"] in ("topo", "nccl_tests", "ibstat", "nccl_debug")])
def test_a_copy_cut_at_a_random_row_or_without_its_header_says_less_never_otherwise(name):
    rng = random.Random(f"{SEED}{name}")
    text = d.sample_text(name)
    kind, whole = _facts(text)
    rows = _lines(text)
    for _ in range(4):
        cut = "\n".join(rows[:rng.randrange(2, max(3, len(rows)))])
        try:
            k, part = _facts(cut)
        except ValueError:
            continue  # cut before the output says anything: one line, no numbers
        if k == kind:
            _fewer(whole, part, f"{name} cut")
            if kind == "topo" and part != whole:
                assert part["missing_rows"] or part["notes"], name
    if kind in ("topo", "nccl_tests"):  # the header dropped
        head = next((i for i, line in enumerate(rows) if ("GPU0" in line and kind == "topo")
                     or (kind == "nccl_tests" and line.startswith("#") and "size" in line)), None)
        if head is None:
            return
        k, part = _facts("\n".join(rows[:head] + rows[head + (2 if kind == "nccl_tests" else 1):]))
        assert k == kind
        _fewer(whole, part, f"{name} header dropped")
        if kind == "topo":
            assert part["gpu_pairs"] == whole["gpu_pairs"] and not part["header"]


def test_a_mixed_paste_is_read_part_by_part():
    """An nccl-tests run with NCCL_DEBUG=INFO, after a prompt and an env dump: the table, the log inside it."""
    name = "nccl_tests_4gpu_docker.txt"
    bare = nccl_tests.parse(d.sample_text(name))
    paste = "user@node:~$ env | grep -v NCCL\n" + ENV + "user@node:~$ ./all_reduce_perf -b 8 -e 128M -g 4\n" \
        + _interleave(d.sample_text(name), random.Random(1))
    report = cli_inspect.inspect_text(paste, "mixed")
    kinds = [p["kind"] for p in report["parts"]]
    assert kinds[:2] == ["prompt", "env"] and "nccl_tests" in kinds and "nccl_debug" in kinds
    assert report["kind"] == "nccl_tests" and report["sizes"] == len(bare.rows)
    assert "and the NCCL log inside it: NET/Socket (no IB device found)" in report["summary"]
    log = next(p for p in report["parts"] if p["kind"] == "nccl_debug")
    assert any("NET/Socket" in f for f in log["findings"]) and len(log["ranges"]) == len(INFO)
    assert any(f.startswith("NCCL log part (lines") for f in report["findings"])


def test_a_part_that_cannot_be_read_is_reported_and_the_rest_read():
    paste = d.sample_text("topo_4gpu_workstation_phb.txt") + "\nCA 'mlx5_0'\n\tPort 1:\n\t\tState: Sleepy\n"
    report = cli_inspect.inspect_text(paste)
    assert report["kind"] == "topo"
    bad = next(p for p in report["parts"] if p["kind"] == "ibstat")
    assert "expected a port state" in bad["error"]


def test_nccl_tests_versions_ranks_and_statistics_columns_as_printed():
    """nccl-tests >= 2.14 prints the library as NCCL_VERSION_CODE (nccl-headers=22602 nccl-library=22703);
    rccl-tests 'RCCL version : X.Y.Z'; per-iteration statistics add columns after #wrong."""
    assert nccl_tests.version_of_code(22703) == "2.27.3" and nccl_tests.version_of_code(2804) == "2.8.4"
    head = ("# nccl-tests version 2.17.1 nccl-headers=22602 nccl-library=22703\n"
            "# Collective test starting: all_reduce_perf\n"
            "#  Rank  0 Group  0 Pid 1 on n0 device  0 [0x1b] NVIDIA H100 80GB HBM3\n#  ...\n"
            "#  Rank 127 Group  0 Pid 1 on n15 device  7 [0xdb] NVIDIA H100 80GB HBM3\n")
    row = "  8589934592  2147483648  float  sum  -1  44000.0  195.22  387.39  0  43000  45000  44900  0.5" \
          "  44000.0  195.22  387.39  0  43000  45000  44900  0.5\n"
    run = nccl_tests.parse(head + row)
    assert (run.nccl_version, run.ranks, run.rows[0]["busbw"]) == ("2.27.3", 128, 387.39)
    assert "highest rank index (127)" in run.ranks_from and "elided" in run.ranks_from
    assert nccl_tests.parse("RCCL version : 2.18.3\n" + row).nccl_version == "2.18.3"
    bad = nccl_tests.parse(head + row.replace("387.39  0  43000", "387.39  12  43000", 1))
    assert [f.kind for f in bad.failures] == ["wrong_results"]


@pytest.mark.parametrize("line, kind", [
    ("gpu1: Test NCCL failure common.cu:1005 'unhandled CUDA error / cudaMalloc failed'", "cuda_error"),
    ("NCCL failure all_reduce.cu:95 'unhandled cuda error'", "cuda_error"),
    ("gpu1: Test NCCL failure common.cu:1 'remote process exited or there was a network error / x'", "remote_error"),
    ("RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)", "system_error"),
    ("h:1:1 [0] NCCL WARN Unhandled CUDA error", "cuda_error"),
    ("# Out of bounds values : 12 FAILED", "wrong_results"),
    ("rank=3 #wrong=40", "wrong_results"),
])
def test_failure_strings_as_nccl_and_nccl_tests_print_them(line, kind):
    from course_lib.diagnostics import failures
    assert [f.kind for f in failures.find([(1, line)])] == [kind]


def test_decorations_are_stripped():
    from course_lib.diagnostics import pasted
    assert pasted.undecorate("Mon Feb 12 10:00:00 2024[1,3]<stdout>:#  Rank  3") == "#  Rank  3"
    assert pasted.undecorate("2026-01-02T03:04:05.123Z GPU0 X") == "GPU0 X"
    assert pasted.undecorate("│GPU0  X  NV18 │") == "GPU0  X  NV18"


FOUR_MIB, ONE_MIB = 4 * 2**20, 2**20
READERS = dict(d.READERS, split=lambda t: d.pasted.split(t), inspect=lambda t: cli_inspect.inspect_text(t))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_is_linear_on_4_mib_and_on_one_1_mib_line(reader):
    """CPU time under 2 s for a 4 MiB paste of the reader's own kind and for one 1 MiB line (the sample on one
    line, and a key-value shaped line of spaces): the patterns have no nested or overlapping quantifiers."""
    kind = reader if reader in d.READERS else "nccl_debug"
    sample = d.sample_text(d.sample_names(kind)[0])
    inputs = {"4 MiB": (sample * (FOUR_MIB // len(sample) + 1))[:FOUR_MIB],
              "1 MiB line": (sample.replace("\n", " ") * (ONE_MIB // len(sample) + 1))[:ONE_MIB],
              "1 MiB key-value line": "Rate" + " " * ONE_MIB + "x",
              "1 MiB NV line": "GPU0 " + "NV18 " * (ONE_MIB // 5)}
    for label, text in inputs.items():
        start = time.process_time()
        try:
            READERS[reader](text)
        except ValueError as exc:
            assert "\n" not in str(exc)
        spent = time.process_time() - start
        print(f"{reader:<14} {label:<22} {spent:.3f} s CPU")
        assert spent < 2.0, (reader, label, spent)
