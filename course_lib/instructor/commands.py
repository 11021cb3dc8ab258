"""Running nbgrader: one command in a course folder (its log kept on failure), the environment it runs in,
and the two errors an instructor sees."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .. import cli, grading, validate


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader runs alembic
    # hidden tests of code exercises grade in the kernel against the instructor's answer key; the sandbox
    # kernel (course_lib.sandbox) does not pass it on, and answers reported by the others are judged here
    env.setdefault(grading.KEY_ENV, str(grading.key_path()))
    return env




class NbgraderError(RuntimeError):
    """An nbgrader command failed: ``summary`` is one line (its last error), ``log`` all it printed."""

    def __init__(self, args, returncode: int, log: str):
        errors = [line for line in log.splitlines() if "ERROR" in line or line.startswith(("Error", "error"))]
        last = (errors or [line for line in log.splitlines() if line.strip()] or ["no output"])[-1]
        self.summary = f"nbgrader {' '.join(args)} failed (exit {returncode}): {cli.one_line(last)[:300]}"
        self.log = log
        super().__init__(f"{self.summary}\n{log}")


class SetupError(RuntimeError):
    """A fault on the instructor's side (the grading kernel, the course's set-up), not in any submission:
    said once, as such, and nothing is graded."""


def _course(course_dir) -> Path:
    """``course_dir`` as an absolute Path (resolved once, here: nbgrader runs inside it, so a relative path
    would mean another folder there) after checking it is an nbgrader course folder (ValueError otherwise)."""
    if not isinstance(course_dir, (str, Path)):
        raise ValueError(f"course_dir must be a folder path, got {validate.describe(course_dir)}")
    path = Path(course_dir).resolve()
    if not path.is_dir():
        raise ValueError(f"course_dir {str(path)!r} does not exist; create a course with "
                         "python -m course_lib nbgrader init DIR")
    if not (path / "nbgrader_config.py").is_file():
        raise ValueError(f"course_dir {str(path)!r} is not an nbgrader course (no nbgrader_config.py); create one "
                         "with python -m course_lib nbgrader init DIR")
    return path


def nbgrader(course_dir, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command inside ``course_dir``; raises NbgraderError (a RuntimeError) with its log on failure."""
    course_dir = Path(course_dir).resolve()
    if not course_dir.is_dir():
        raise ValueError(f"course_dir {str(course_dir)!r} does not exist")
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise NbgraderError(args, proc.returncode, proc.stdout + proc.stderr)
    return proc



def _streamed(course_dir: Path, args: list, env: dict, on_line) -> str:
    """Run nbgrader with its output read line by line as it comes (``on_line`` each); returns the log."""
    proc = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        on_line(line)
    log = "".join(lines)
    if proc.wait() != 0:
        raise NbgraderError(args, proc.returncode, log)
    return log
