"""Every command the README shows, given a bad argument, answers with one line ``error: ...`` and status 2.

The line names the parameter (the flag, or the library's name for it) and the allowed range, and no
traceback follows. The commands are read from README.md; ``CASES`` holds, for each, the same command
with one argument made bad and the parameter the error line must name. A test checks that the
README shows no command ``CASES`` lacks. Most cases call ``main(argv)`` in this process; a few run
the real command (``python -m ...``) to check the exit status and the closed-pipe case end to end.

``PYTHONPATH=$PWD .venv/bin/python tests/test_bad_input.py`` prints the table: command, line, status.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CHAPTER = "00_why_communication"

# README command (as written, comment dropped) -> [(argv with one bad argument, parameter the line names)]
CASES = {
    "python -m course_lib systems": [(["systems", "--json=yes"], "--json"),
                                     (["systems", "--format", "csv"], "--format")],
    "python -m course_lib links": [(["links", "--json=yes"], "--json")],
    "python -m course_lib predict all_reduce --system dgx-h100 -g 8 -b 32K -e 16G -f 2": [
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "0", "-b", "32K", "-e", "16G", "-f", "2"], "--ngpus"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "9", "-b", "32K", "-e", "16G", "-f", "2"], "--ngpus"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "32K", "-e", "16X", "-f", "2"], "--maxbytes"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "32K", "-e", "1e400", "-f", "2"],
         "--maxbytes"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "32K", "-e", "16G", "-f", "1"],
         "--stepfactor"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "8", "-e", "1T", "-i", "1"], "--stepbytes"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "8", "-e", "64M", "-i", "1"], "--stepbytes"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "32K", "-e", "16G", "-f", "1.0000001"],
         "--stepfactor"),
        (["predict", "all_reduce", "--system", "dgx-h100", "-g", "8", "-b", "32K", "-e", "16G", "-f", "2",
          "--datatype", "float128"], "--datatype"),
    ],
    "python -m course_lib predict all_reduce --system dgx-h100 --nodes 4 -b 1M -e 8G": [
        (["predict", "all_reduce", "--system", "dgx-h100", "--nodes", "0", "-b", "1M", "-e", "8G"], "--nodes"),
        (["predict", "all_reduce", "--system", "dgx-h100", "--nodes", "9" * 30, "-b", "1M", "-e", "8G"], "--nodes"),
        (["predict", "all_reduce", "--system", "dgx-h999", "--nodes", "4", "-b", "1M", "-e", "8G"], "--system"),
        (["predict", "allreduce_sum", "--system", "dgx-h100", "--nodes", "4", "-b", "1M", "-e", "8G"], "collective"),
        (["predict", "all_reduce", "--system", "dgx-h100", "--nodes", "4", "-b", "1M", "-e", "1K"], "--maxbytes"),
        (["predict", "all_reduce", "--system", "dgx-h100", "--nodes", "4", "-b", "1Mb", "-e", "8G"], "--minbytes"),
    ],
    "python -m course_lib compare course_lib/data/systems/rtx4090x4_p2p_all_reduce_perf.txt --system-file course_lib/data/systems/rtx4090x4_p2p.toml": [
        (["compare", "{missing}", "--system", "dgx-h100"], "file"),
        (["compare", "{binary}", "--system", "dgx-h100"], "file"),
        (["compare", "{big}", "--system", "dgx-h100"], "file"),
        (["compare", "{text}", "--system", "dgx-h100"], "file"),
        (["compare", "{log}", "--system", "dgx-h100", "--nodes", "-3"], "--nodes"),
        (["compare", "{fifo}", "--system", "dgx-h100"], "not a regular file"),
        (["compare", "{tmp}", "--system", "dgx-h100"], "not a regular file"),
        (["compare", "/dev/zero", "--system", "dgx-h100"], "not a regular file"),
    ],
    "python -m course_lib predict all_reduce --system-file course_lib/data/systems/rtx4090x4_p2p.toml -b 1M -e 1G": [
        (["predict", "all_reduce", "--system-file", "{missing}", "-b", "1M", "-e", "1G"], "system"),
        (["predict", "all_reduce", "--system-file", "{binary}", "-b", "1M", "-e", "1G"], "system"),
        (["predict", "all_reduce", "--system-file", "{text}", "-b", "1M", "-e", "1G"], "system"),
        (["predict", "all_reduce", "--system-file", "{fifo}", "-b", "1M", "-e", "1G"], "not a regular file"),
        (["predict", "all_reduce", "--system-file", "/dev/zero", "-b", "1M", "-e", "1G"], "not a regular file"),
        (["predict", "all_reduce", "--system-file", "{deep}", "-b", "1M", "-e", "1G"], "nest 500 deep"),
    ],
    "python -m course_lib inspect --local": [(["inspect", "--local", "--json=1"], "--json")],
    "python -m course_lib inspect course_lib/data/samples/topo_dgx_a100_nic_legend.txt course_lib/data/samples/nccl_log_hai_a100.log": [
        (["inspect", "{missing}"], "no_such_thing"),
        (["inspect", "{binary}"], "binary.bin"),
        (["inspect", "{fifo}"], "not a regular file"),
        (["inspect", "{tmp}"], "not a regular file"),
        (["inspect", "/dev/zero"], "not a regular file"),
    ],
    "python -m course_lib inspect --json course_lib/data/samples/iblinkinfo_edr_sb7700.txt": [
        (["inspect", "--json", "{missing}"], "no_such_thing"),
        (["inspect", "--json", "{fifo}"], "not a regular file"),
        (["inspect", "--json=1", "{text}"], "--json"),
    ],
    "python -m course_lib predict all_reduce --system gcp-a3-mega --nodes 2 --fabric roce -b 1M -e 1G": [
        (["predict", "all_reduce", "--system", "gcp-a3-mega", "--nodes", "2", "--fabric", "ib", "-b", "1M", "-e", "1G"],
         "--fabric"),
        (["predict", "all_reduce", "--system", "gcp-a3-mega", "--nodes", "2", "--fabric", "roce", "--proto", "LL64",
          "-b", "1M", "-e", "1G"], "--proto"),
    ],
    "python -m course_lib plan --model mixtral-8x7b --system dgx-h100 --gpus 64 --tp 8 --ep 8 --recompute selective --sequence-parallel": [
        (["plan", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--gpus", "64", "--ep", "7"], "--ep"),
        (["plan", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--gpus", "64", "--ep", "0"], "--ep"),
        (["plan", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "256", "--hsdp", "7"], "--hsdp"),
    ],
    "python -m course_lib plan --validate-modern": [(["plan", "--validate-modern", "--json=1"], "--json")],
    "python -m course_lib plan --validate-tp": [(["plan", "--validate-tp", "--json=1"], "--json")],
    "python -m course_lib.lab.bench --collective all_to_all --algorithms builtin,direct -b 64K -e 16M": [
        (["--collective", "all_to_all", "--algorithms", "builtin,foo", "-b", "64K", "-e", "16M"], "algorithms"),
        (["--collective", "all_gather", "--algorithms", "builtin,direct", "-b", "64K", "-e", "16M"], "--collective"),
    ],
    "python -m course_lib.lab.fsdp_step": [(["--micro-batches", "0"], "micro_batches"),
                                           (["--ranks", "two"], "--ranks")],
    "python -m course_lib validation": [(["validation", "--json=1"], "--json")],
    "python -m course_lib plan --model gpt3-175b --system dgx-a100 --gpus 1024 --tp 8 --pp 16": [
        (["plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--tp", "3", "--pp", "16"], "tp"),
        (["plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--tp", "0", "--pp", "16"], "--tp"),
        (["plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "zero", "--tp", "8", "--pp", "16"], "--gpus"),
        (["plan", "--model", "gpt9", "--system", "dgx-a100", "--gpus", "1024", "--tp", "8", "--pp", "16"], "--model"),
    ],
    "python -m course_lib plan --model gpt3-175b --system dgx-a100 --gpus 1024 --search": [
        (["plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--search", "--top", "0"], "--top"),
        (["plan", "--model", "gpt3-175b", "--system", "dgx-z", "--gpus", "1024", "--search"], "system"),
    ],
    "python -m course_lib plan --validate": [(["plan", "--validate", "--gpu-efficiency", "2"], "--gpu-efficiency")],
    "python -m course_lib.lab.bench --ranks 2,4 -b 64K -e 64M -f 4 --algorithms builtin,ring": [
        (["--ranks", "2,4", "-b", "64X", "-e", "64M", "-f", "4", "--algorithms", "builtin,ring"], "-b"),
    ],
    "-m course_lib.lab.bench -b 1M -e 1G -f 2": [(["-b", "1M", "-e", "1G", "-f", "two"], "--stepfactor")],
    "python -m course_lib.sandbox --check --course course/": [(["--check"], "--course"),
                                                               (["--check", "--course", "{missing}"], "--course")],
    "python -m course_lib nbgrader init course/": [
        (["nbgrader", "init", "{course}", "--assignments", "99_nothing"], "assignments"),
        (["nbgrader", "init", "{binary}/course"], "course_dir"),
        (["nbgrader", "autograde", "{missing}", CHAPTER], "course_dir"),
        (["nbgrader", "autograde", "{tmp}", CHAPTER], "course_dir"),
        (["nbgrader", "autograde", "{missing}", "99_nothing"], "assignment"),
        (["nbgrader", "autograde", "{missing}", CHAPTER, "--timeout", "0"], "--timeout"),
        (["nbgrader", "export", "{missing}"], "course_dir"),
        (["nbgrader", "grade", "{missing}"], "action"),
    ],
    "python -m course_lib export site/": [
        (["export", "{course}", "--jobs", "0"], "--jobs"),
        (["export", "{course}", "--timeout", "5"], "--timeout"),
        (["export", "{binary}"], "out_dir"),
    ],
    "python -m course_lib.export site/": [(["{course}", "--timeout", "abc"], "--timeout")],
}


def readme_commands(text: str = README) -> set[str]:
    """Every ``python -m course_lib...`` command the README shows (code blocks and inline code), comment dropped.

    A ``torchrun ... -m course_lib...`` line is kept from ``-m`` on.
    """
    found = set()
    for match in re.finditer(r"(python -m course_lib[\w.]*|(?<=\s)-m course_lib[\w.]*)([^`#\n]*)", text):
        command = " ".join((match.group(1) + match.group(2)).split())
        if not command.endswith("..."):  # "python -m course_lib ..." stands for any command
            found.add(command)
    return found


def module_of(command: str) -> str:
    return re.search(r"-m (course_lib[\w.]*)", command).group(1)


def _fill(argv, paths):
    return [a.format(**paths) for a in argv]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad_input")
    (tmp / "binary.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    with open(tmp / "big.log", "wb") as fh:  # a sparse file over the 4 MiB compare reads
        fh.truncate(5 * 2**20)
    (tmp / "notes.txt").write_text("my notes: the cluster was fast\n")
    (tmp / "run.log").write_text("#       size         count      type   redop    root     time   algbw   busbw #wrong"
                                 "     time   algbw   busbw #wrong\n"
                                 "     1048576        262144     float     sum      -1    60.00   17.48   30.58      0"
                                 "    60.00   17.48   30.58      0\n")
    os.mkfifo(tmp / "pipe")  # no writer ever comes: opening it to read would wait forever
    (tmp / "deep.toml").write_text("[system]\nid = 'x'\nnote = " + "[" * 500 + "]" * 500 + "\n")
    return {"fifo": str(tmp / "pipe"), "deep": str(tmp / "deep.toml"), "missing": str(tmp / "no_such_thing"), "binary": str(tmp / "binary.bin"), "big": str(tmp / "big.log"),
            "text": str(tmp / "notes.txt"), "log": str(tmp / "run.log"), "course": str(tmp / "course"),
            "tmp": str(tmp)}


def call(module: str, argv: list[str]) -> tuple[int, str, str]:
    """``module.main(argv)`` in this process: (status, stdout, stderr)."""
    import importlib

    main = importlib.import_module("course_lib.__main__" if module == "course_lib" else module).main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:  # a main that lets argparse exit
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def _case_ids():
    for command, cases in CASES.items():
        for argv, param in cases:
            yield pytest.param(command, argv, param, id=f"{command.split()[2]} {' '.join(argv)}"[:90])


def test_every_readme_command_has_a_bad_input_case():
    shown = readme_commands()
    assert shown, "README shows no python -m course_lib command"
    assert shown <= set(CASES), f"README commands without a bad-input case: {sorted(shown - set(CASES))}"


@pytest.mark.parametrize("command, argv, param", list(_case_ids()))
def test_bad_argument_gives_one_error_line_and_status_2(command, argv, param, paths):
    status, out, err = call(module_of(command), _fill(argv, paths))
    lines = err.splitlines()
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert param in lines[0], f"the line does not name {param}: {lines[0]}"
    assert "Traceback" not in err + out


@pytest.mark.parametrize("argv, expect", [
    (["predict", "all_reduce", "--system", "dgx-h100", "-b", "8", "-e", "1T", "-i", "1"], "10000"),
    (["compare", "{binary}", "--system", "dgx-h100"], "not a text file"),
    (["compare", "{big}", "--system", "dgx-h100"], "larger than 4 MiB"),
])
def test_limits_are_named_in_the_line(argv, expect, paths):
    status, _, err = call("course_lib", _fill(argv, paths))
    assert status == 2 and expect in err, err
    assert "codec" not in err


def _run(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, **kw)


@pytest.mark.parametrize("args, param", [
    (["-m", "course_lib", "predict", "all_reduce", "--system", "dgx-h100", "-b", "8", "-e", "1T", "-i", "1"],
     "--stepbytes"),
    (["-m", "course_lib", "plan", "--gpus", "many"], "--gpus"),
    (["-m", "course_lib.export", "site", "--jobs", "0"], "--jobs"),
])
def test_real_process_exits_2_with_one_line(args, param):
    proc = _run(args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: ") and param in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("command", [["systems", "--json"], ["validation", "--json"]])
def test_closed_pipe_is_quiet(command):
    """``systems --json | head -c 100``: no BrokenPipeError, status 0 (validation's JSON, over 64 KB, outgrows
    the pipe's buffer, so the write after the reader left always fails: the case is met every run)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    writer = subprocess.Popen([sys.executable, "-m", "course_lib", *command], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = writer.stdout.read(100)
    writer.stdout.close()  # the reader goes away, as head does
    err = writer.stderr.read().decode()
    assert writer.wait(timeout=60) == 0, err
    assert head[:1] in (b"[", b"{") and err == ""


def test_compare_writes_null_not_nan(paths, tmp_path):
    log = tmp_path / "na.log"
    log.write_text("     1048576        262144     float     sum      -1    60.00   17.48   N/A      0"
                   "    60.00   17.48   N/A      0\n")
    status, out, err = call("course_lib", ["compare", str(log), "--system", "dgx-h100", "--collective",
                                           "all_reduce", "--json"])
    assert status == 0, err
    # busbw N/A in the log: null in the JSON; the ratio comes from the times, which are there
    assert "NaN" not in out and '"measured_busbw": null' in out and '"ratio": null' not in out


def table() -> list[tuple[str, str, int]]:
    """(command, its one line, status) for every case: what the closing note shows."""
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "binary.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
        with open(tmp_path / "big.log", "wb") as fh:
            fh.truncate(5 * 2**20)
        (tmp_path / "notes.txt").write_text("my notes\n")
        (tmp_path / "run.log").write_text("     1048576   262144   float   sum   -1   60.00   17.48   30.58   0\n")
        filled = {"missing": "/nonexistent", "binary": str(tmp_path / "binary.bin"), "big": str(tmp_path / "big.log"),
                  "text": str(tmp_path / "notes.txt"), "log": str(tmp_path / "run.log"), "course": "course",
                  "tmp": "/tmp"}
        for command, cases in CASES.items():
            module = module_of(command)
            for argv, _ in cases:
                argv = _fill(argv, filled)
                try:
                    status, _, err = call(module, argv)
                    line = err.strip().splitlines()
                    text = line[-1] if len(line) == 1 else f"{len(line)} lines, last: {line[-1] if line else ''}"
                except Exception as exc:  # noqa: BLE001 - the table shows what a learner would see
                    status, text = "traceback", f"{type(exc).__name__}: {exc}"
                rows.append((f"python -m {module} {' '.join(argv)}".replace(tmp, "TMP"), text.replace(tmp, "TMP"),
                             status))
    return rows


if __name__ == "__main__":
    for command, line, status in table():
        print(f"{command}\n    -> [{status}] {line}")


def test_interrupt_and_library_errors_through_the_shared_path(capsys):
    from course_lib import cli

    parser = cli.ArgumentParser(prog="demo")
    parser.add_argument("--width", type=cli.integer(low=1, high=9), default=1)

    def interrupted(args):
        raise KeyboardInterrupt

    def refused(args):
        raise ValueError("width must be in [1, 9]\n  got 12")

    parser.set_defaults(func=interrupted)
    assert cli.run(parser, []) == 130 and capsys.readouterr().err == "error: interrupted\n"
    parser.set_defaults(func=refused)
    assert cli.run(parser, []) == 2 and capsys.readouterr().err == "error: --width: width must be in [1, 9] got 12\n"
    assert cli.run(parser, ["--width", "x"]) == 2
    assert capsys.readouterr().err == "error: argument --width: must be an integer in [1, 9]; got 'x' (see demo --help)\n"
    assert cli.run(parser, ["--help"]) == 0 and "usage: demo" in capsys.readouterr().out


def test_instructor_seal_command_has_the_same_error_path():
    # docs/instructor.md shows `python -m course_lib.grading seal`; a mistyped command is one line, status 2
    status, out, err = call("course_lib.grading", ["sael"])
    assert status == 2 and len(err.splitlines()) == 1 and err.startswith("error: ") and "command" in err, err
