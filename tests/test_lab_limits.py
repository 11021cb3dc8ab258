"""The machine's limits a launch runs into: each is one line naming the limit and what to do, and a
refused launch leaves no open file, process or run folder behind."""
import errno
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from course_lib import lab  # noqa: E402
from course_lib.lab import limits  # noqa: E402

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc and rlimits"),
              pytest.mark.timeout(120)]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_UNDER_ULIMIT_N = """
import json, os, resource, sys
import torch
from course_lib import lab
from course_lib.lab import limits

def quick(rank, world_size):
    return rank

limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
tmp = os.environ["TMPDIR"]
out = {"fds_before": limits.open_fds(), "lines": [], "types": []}
for _ in range(3):
    try:
        lab.run(quick, ranks=16, timeout=60, echo=False)
        out["lines"].append("ran")
    except Exception as exc:
        out["lines"].append(str(exc))
        out["types"].append(type(exc).__name__)
out["fds_after"] = limits.open_fds()
out["folders"] = [f for f in os.listdir(tmp) if f.startswith("course_lab_")]
out["small"] = lab.run(quick, ranks=2, timeout=60, echo=False)
print(json.dumps(out))
"""


def test_a_low_open_file_limit_is_one_line_and_leaks_nothing(tmp_path):
    """Under ``ulimit -n 40`` a 16-rank launch is refused three times in one line each; the process's
    open files and the run folders are the same before and after, and a 2-rank launch still runs."""
    proc = subprocess.run([sys.executable, "-c", _UNDER_ULIMIT_N, "40"], capture_output=True, text=True,
                          timeout=100, env=dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["types"] == ["LabLimitError"] * 3
    for line in out["lines"]:
        assert "\n" not in line and line.startswith("the limit on open files (ulimit -n 40) is too low for 16 ranks")
        assert "raise it, e.g. ulimit -n 4096" in line and "or use fewer ranks" in line
    assert out["fds_after"] == out["fds_before"]
    assert out["folders"] == []
    assert out["small"] == [0, 1]


def test_fds_needed_grows_with_ranks_and_what_is_open():
    assert limits.fds_needed(16, 5) == 5 + limits.RANK_FDS_PER_PEER * 16 + limits.RANK_FDS_BASE
    assert limits.fds_needed(2, 50) > limits.fds_needed(2, 5)


def test_a_full_temporary_folder_is_refused_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "_free_bytes", lambda folder: 4096)
    with pytest.raises(limits.LabLimitError) as info:
        limits.check(2, str(tmp_path))
    assert str(info.value) == (f"the temporary folder {str(tmp_path)!r} (TMPDIR) is full (4 KiB free; a run needs "
                               "1 MiB): free some space, or point TMPDIR at a folder with room before starting "
                               "Jupyter (or the shell that runs this)")


def test_a_missing_tmpdir_falls_back_to_tmp_and_says_so_once(tmp_path, monkeypatch, capsys):
    missing = str(tmp_path / "gone")
    monkeypatch.setenv("TMPDIR", missing)
    monkeypatch.setattr(limits, "_NOTED", set())
    assert limits.temp_root() == "/tmp" and limits.temp_root() == "/tmp"
    err = capsys.readouterr().err.splitlines()
    assert err == [f"note: the temporary folder {missing!r} (TMPDIR) does not exist; the lab's run folders go to "
                   "'/tmp' (point TMPDIR at a writable folder to choose)"]
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "file"))
    monkeypatch.setattr(limits, "_folder_problem", lambda folder: None if folder == str(tmp_path) else "is read-only")
    with pytest.raises(limits.LabLimitError, match=r"^the temporary folder '.*file' \(TMPDIR\) is read-only: point "
                                                   r"TMPDIR at a writable folder \(or unset it to use /tmp\)"):
        limits.temp_root()  # and no fallback is usable either


def test_a_process_limit_is_refused_up_front_for_a_user(monkeypatch):
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    monkeypatch.setattr(limits, "_soft_limit", lambda name: 60 if name == "RLIMIT_NPROC" else None)
    monkeypatch.setattr(limits, "_user_threads", lambda: 40)
    with pytest.raises(limits.LabLimitError, match=r"^the limit on processes \(ulimit -u 60\) leaves no room for 8 "
                                                   r"more ranks .* this user already runs 40 processes and threads\): "
                                                   r"raise it, e.g. ulimit -u 4096"):
        limits.check(8, "/tmp")
    limits.check(2, "/tmp")  # 40 + 2 x 4 + 2 fits
    with pytest.raises(limits.LabLimitError):
        limits.check(2, "/tmp", threads=8)  # 40 + 2 x 11 + 2 does not


@pytest.mark.parametrize("error, start", [
    (OSError(errno.EMFILE, "Too many open files"), "the limit on open files"),
    (BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"), "the limit on processes"),
    (OSError(errno.ENOSPC, "No space left on device"), "the temporary folder"),
    (OSError(errno.EROFS, "Read-only file system"), "the temporary folder"),
])
def test_what_a_limit_does_later_becomes_the_same_one_line(error, start, tmp_path):
    found = limits.explain(error, 4, str(tmp_path))
    assert isinstance(found, limits.LabLimitError) and str(found).startswith(start) and "\n" not in str(found)
    assert limits.explain(ValueError("no"), 4, str(tmp_path)) is None
    assert limits.explain(OSError(errno.EBADF, "bad"), 4, str(tmp_path)) is None


def test_a_rank_that_failed_for_a_limit_is_not_blamed(tmp_path):
    line = limits.explain_rank("OSError: [Errno 24] Too many open files: 'x'", 8, str(tmp_path))
    assert str(line).startswith("the limit on open files")
    line = limits.explain_rank("OSError: [Errno 28] No space left on device", 8, str(tmp_path))
    assert str(line).startswith(f"the temporary folder {str(tmp_path)!r} (TMPDIR) is full")
    assert limits.explain_rank("ZeroDivisionError: deliberate", 8, str(tmp_path)) is None


def test_launch_refuses_in_one_line_and_leaves_no_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(limits, "_free_bytes", lambda folder: 0)
    with pytest.raises(lab.LabLimitError, match="is full"):
        lab.run(lambda r, w: r, ranks=2, timeout=30, echo=False)
    assert list(tmp_path.iterdir()) == []
