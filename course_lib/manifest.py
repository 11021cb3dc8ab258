"""The course manifest, ``course.toml`` at the repository root: the one list of chapters.

Each ``[[chapter]]`` has ``number`` ("05"), ``slug`` ("infiniband"), ``title``, ``minutes`` and
``exercises`` (a path relative to the manifest, or ""). Authoring, the instructor tooling, checks,
export and the tests read :func:`chapters` instead of globbing folders; adding a chapter is one entry,
its source ``solutions/src/<number>_<slug>.py`` and its exercises file.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "course.toml"
FIELDS = ("number", "slug", "title", "minutes", "exercises")


@dataclass(frozen=True)
class Chapter:
    """One chapter of the course; paths are absolute, under the manifest's folder ``root``."""
    number: str
    slug: str
    title: str
    minutes: int
    exercises: str
    root: Path

    @property
    def stem(self) -> str:
        """``05_infiniband``: the name of the source and of both notebooks."""
        return f"{self.number}_{self.slug}"

    @property
    def source(self) -> Path:
        return self.root / "solutions" / "src" / f"{self.stem}.py"

    @property
    def solution_notebook(self) -> Path:
        return self.root / "solutions" / f"{self.stem}.ipynb"

    @property
    def student_notebook(self) -> Path:
        return self.root / "notebooks" / f"{self.stem}.ipynb"

    @property
    def exercises_path(self) -> Path | None:
        return self.root / self.exercises if self.exercises else None


def _entry(row: dict, index: int, root: Path) -> Chapter:
    where = f"course.toml chapter {index + 1}"
    if not isinstance(row, dict) or set(row) != set(FIELDS):
        got = sorted(row) if isinstance(row, dict) else type(row).__name__
        raise ValueError(f"{where} must have exactly the fields {', '.join(FIELDS)}; got {got}")
    number, slug, title, minutes, exercises = (row[f] for f in FIELDS)
    if not isinstance(number, str) or not re.fullmatch(r"\d\d", number):
        raise ValueError(f"{where}: number must be two digits in quotes, e.g. \"05\"; got {number!r}")
    if not isinstance(slug, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_]*", slug):
        raise ValueError(f"{where}: slug must be lowercase letters, digits and _; got {slug!r}")
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"{where}: title must be a non-empty string; got {title!r}")
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= 600:
        raise ValueError(f"{where}: minutes must be an integer in [1, 600]; got {minutes!r}")
    if not isinstance(exercises, str):
        raise ValueError(f"{where}: exercises must be a path string (or \"\"); got {exercises!r}")
    return Chapter(number, slug, title, minutes, exercises, root)


def load(path: str | Path | None = None) -> tuple[Chapter, ...]:
    """Parse and check a manifest (default: the repository's ``course.toml``); chapters in number order."""
    path = _path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"path {str(path)!r} is not valid TOML: {exc}") from None
    rows = data.get("chapter")
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"path {str(path)!r} must hold at least one [[chapter]] table")
    chapters = [_entry(row, i, path.resolve().parent) for i, row in enumerate(rows)]
    for key in ("number", "slug"):
        values = [getattr(c, key) for c in chapters]
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise ValueError(f"course.toml: each chapter {key} must be unique; repeated: {', '.join(dupes)}")
    return tuple(sorted(chapters, key=lambda c: c.number))


def _path(path: str | Path | None) -> Path:
    if path is None:
        if not MANIFEST.is_file():
            raise FileNotFoundError(f"{MANIFEST} is missing: course_lib runs from the course repository "
                                    "(pip install -e . there), whose course.toml lists the chapters")
        return MANIFEST
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise ValueError(f"path must be a course.toml file; got {path!r}")
    return Path(path)


@lru_cache(maxsize=1)
def _default() -> tuple[Chapter, ...]:
    return load()


def chapters(path: str | Path | None = None) -> tuple[Chapter, ...]:
    """Every chapter of the manifest, in number order (``path``: another manifest, e.g. in a test)."""
    return _default() if path is None else load(path)


def chapter(number: str, path: str | Path | None = None) -> Chapter:
    """One chapter by number ("05") or stem ("05_infiniband")."""
    every = chapters(path)
    found = {c.number: c for c in every} | {c.stem: c for c in every}
    if not isinstance(number, str) or number not in found:
        raise ValueError(f"number must be a chapter of course.toml, one of {', '.join(c.number for c in every)} "
                         f"(or a stem such as '05_infiniband'); got {number!r}")
    return found[number]
