"""What every diagnostics reader shares: numbered lines, the one error shape, the shipped samples."""
from __future__ import annotations

import json
from importlib import resources

from .. import validate


def lines(text) -> list[tuple[int, str]]:
    """``text`` as (1-based line number, line without its newline) pairs; ValueError if not a string."""
    if not isinstance(text, str):
        raise ValueError(f"text must be the output as a string, got {type(text).__name__}")
    return list(enumerate(text.splitlines(), start=1))


def fail(line_no: int, expected: str, got) -> ValueError:
    """The error every reader raises: ``line N: expected ..., got ...``."""
    shown = "end of input" if got is None else repr(got if len(str(got)) <= 80 else str(got)[:77] + "...")
    return ValueError(f"line {line_no}: expected {expected}, got {shown}")


def is_elision(line: str) -> bool:
    """A line of dots that a person put in a pasted output to stand for lines left out ('...', '......')."""
    stripped = line.strip()
    return len(stripped) >= 3 and set(stripped) == {"."}


def _samples_dir():
    return resources.files("course_lib").joinpath("data/samples")


def sample_sources() -> dict:
    """``data/samples/SOURCES.json``: for each shipped sample its url, title, machine and what was trimmed."""
    data = json.loads(_samples_dir().joinpath("SOURCES.json").read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def sample_names(kind: str | None = None) -> list[str]:
    """File names of the shipped samples, optionally only those of one kind (``topo``, ``nccl_debug`` ...)."""
    return sorted(name for name, row in sample_sources().items() if kind is None or row["kind"] == kind)


def sample_path(name: str):
    """The path of one shipped sample (an importlib.resources Traversable that ``open()`` accepts)."""
    name = validate.choice("name", name, sample_names())  # a typo gets the closest sample names
    return _samples_dir().joinpath(name)


def sample_text(name: str) -> str:
    """The text of one shipped sample."""
    return sample_path(name).read_text(encoding="utf-8")
