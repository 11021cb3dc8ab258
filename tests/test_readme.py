"""The README: the two commands first, every chapter linked, every documented command real."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import __main__ as cli, manifest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_two_commands_come_first():
    first_block = re.search(r"```bash\n(.*?)```", README, re.DOTALL).group(1)
    assert [line.split()[:2] for line in first_block.strip().splitlines()] == [["make", "lab"], ["make", "test"]]


def test_every_chapter_of_the_manifest_is_linked_in_the_syllabus():
    linked = set(re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", README))
    chapters = {f"notebooks/{c.stem}.ipynb" for c in manifest.chapters()}
    assert linked == chapters
    for c in manifest.chapters():   # one syllabus row per chapter, in the manifest's order
        assert re.search(rf"^\| {c.number} \| \[[^]]+\]\(notebooks/{c.stem}\.ipynb\)", README, re.MULTILINE), c.stem


def test_documented_course_lib_commands_exist():
    cli._load_extra_commands()
    parser = cli.build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)
    documented = set(re.findall(r"python -m course_lib (\w+)", README))
    assert documented and documented <= commands, documented - commands


# ---------------------------------------------------------------- every example runs as printed

def _example_lines() -> list[str]:
    """Every command line of the README's ```bash blocks, comments removed, in order."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.DOTALL):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
            if command:
                lines.append(command)
    return lines


# A line that is not `python -m course_lib ...` needs what a test cannot give it: said here, per first word.
NOT_RUN_HERE = {
    "make": "starts the lab (a server) or the whole suite; tests/test_lab_command.py runs the lab targets",
    "conda": "needs conda and the network", "pip": "installs into the running environment",
    "jupyter": "starts a server", "torchrun": "8 ranks of up to 1 GiB each, for a GPU node",
}
COURSE_COMMANDS = [c for c in _example_lines() if c.startswith("python -m course_lib ")]
LAB_COMMANDS = [c for c in _example_lines() if c.startswith("python -m course_lib.")]


def test_every_example_line_is_run_or_says_why_not():
    for command in _example_lines():
        assert command in COURSE_COMMANDS or command in LAB_COMMANDS or command.split()[0] in NOT_RUN_HERE, command
    assert COURSE_COMMANDS and LAB_COMMANDS


def _files_named(command: str) -> list[str]:
    return [w for w in shlex.split(command) if "/" in w or re.search(r"\.(txt|log|toml|xml|json)$", w)]


def _run(command: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, *shlex.split(command)[1:]]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _tracked() -> set[str] | None:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return set(out.stdout.splitlines()) if out.returncode == 0 else None


@pytest.mark.parametrize("command", COURSE_COMMANDS)
def test_readme_example_runs_as_printed(command):
    tracked = _tracked()
    for name in _files_named(command):  # a fresh clone has it: in the repository, not made by an earlier run
        assert (ROOT / name).is_file(), f"{command}: {name} is not in the repository"
        assert tracked is None or name in tracked, f"{command}: {name} is not tracked by git"
    proc = _run(command)
    print(f"exit {proc.returncode}: {command}")
    assert proc.returncode == 0, f"{command}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip(), command
    assert "DOES NOT FIT" not in proc.stdout, command  # a README plan fits
    assert not re.search(r"mem GB\nWhy the winner wins:", proc.stdout), command  # a winner when it says so


@pytest.mark.slow
@pytest.mark.parametrize("command", LAB_COMMANDS)
def test_readme_lab_example_runs_as_printed(command):
    proc = _run(command)
    print(f"exit {proc.returncode}: {command}")
    assert proc.returncode == 0, f"{command}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
