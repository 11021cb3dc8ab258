"""Numbers in prose that come from the chapter's own computation (a small ``glue``).

A code cell of a chapter stores a value under a name::

    glue = prose.Glue("05")                 # once, in the chapter's import cell
    glue("w1_total_s", w1["time_s"], "{:.2f} s")

and a markdown cell of the same chapter writes ``{{w1_total_s}}`` where the number belongs.
``python -m course_lib.authoring glue 05`` executes the chapter, keeps every glued text in
``solutions/src/05_infiniband.values.json`` and rebuilds both notebooks with the placeholders filled,
so the stored notebooks (without outputs) read "1.32 s" in JupyterLab, on GitHub and in nbviewer
before anything runs. When the notebooks are executed under pytest (the nbval run of every chapter;
the repository's ``conftest.py`` sets ``COURSE_PROSE_CHECK``), each ``glue`` call compares the text it
computes with the stored one and raises :class:`ProseMismatch` when they differ: the prose cannot
drift from the computation by more than the precision it prints.

:func:`contradictions` is the second half of the check, on the source without executing it: a number
*typed* into a markdown cell that describes computed results (it has placeholders, or it sits right
above a cell that glues) must not be a near miss of a glued value of the same unit ("1.23 s" where
the computation says 1.32 s), and the cell must not call a glued series "flat" when it moves.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK_ENV = "COURSE_PROSE_CHECK"    # "1": every glue() compares with the stored text
RECORD_ENV = "COURSE_PROSE_RECORD"  # a folder: every glue() writes <folder>/<chapter>.json

PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
GLUE_CALL_RE = re.compile(r"\bglue\(\s*[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']")


class ProseMismatch(AssertionError):
    """A glued value no longer prints as the text its chapter's prose shows."""


def values_path(chapter: str, root: Path | None = None) -> Path:
    """The stored glued texts of a chapter (``solutions/src/<stem>.values.json``)."""
    from . import manifest
    root = root or ROOT
    for c in manifest.chapters(root / "course.toml"):
        if c.number == chapter:
            return c.source.with_suffix(".values.json")
    raise ValueError(f"chapter must be a chapter number of course.toml, e.g. \"05\"; got {chapter!r}")


def load_values(path: Path) -> dict:
    """{name: {"text": ..., "value": ...}} from a values file; {} when there is none."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def write_values(path: Path, values: dict) -> None:
    path.write_text(json.dumps(values, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


class Glue:
    """Store computed values for the markdown of one chapter (see the module docstring)."""

    def __init__(self, chapter: str):
        if not isinstance(chapter, str) or not re.fullmatch(r"\d\d", chapter):
            raise ValueError(f"chapter must be two digits, e.g. \"05\"; got {chapter!r}")
        self.chapter = chapter
        self.values: dict[str, dict] = {}

    def __call__(self, name: str, value, fmt: str = "{:,.3g}") -> None:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"name must be a Python identifier; got {name!r}")
        if not isinstance(value, (int, float, str)) or isinstance(value, bool):
            value = float(value)  # numpy scalars; anything else fails here, naming its type
        text = fmt.format(value)
        self.values[name] = {"text": text, "value": value}
        folder = os.environ.get(RECORD_ENV)
        if folder:
            write_values(Path(folder) / f"{self.chapter}.json", self.values)
        if os.environ.get(CHECK_ENV) == "1":
            stored = load_values(values_path(self.chapter)).get(name)
            if stored is None or stored["text"] != text:
                raise ProseMismatch(
                    f"chapter {self.chapter}: {name} computes {text!r} but the prose shows "
                    f"{stored['text'] if stored else 'no value'!r}; run `python -m course_lib.authoring glue "
                    f"{self.chapter}` and reread the sentences that use {{{{{name}}}}}")


def placeholders(text: str) -> list[str]:
    """The names of the ``{{name}}`` placeholders in a markdown text, in order."""
    return PLACEHOLDER_RE.findall(text)


def glued_names(code: str) -> list[str]:
    """The names a code cell glues (``glue("name", ...)``), in order."""
    return GLUE_CALL_RE.findall(code)


def fill(text: str, values: dict, where: str = "") -> str:
    """The markdown with every placeholder replaced by its stored text."""
    def one(m):
        name = m.group(1)
        if name not in values:
            raise ValueError(f"{where}: {{{{{name}}}}} has no stored value; glue it in a code cell and run "
                             f"`python -m course_lib.authoring glue`")
        return values[name]["text"]
    return PLACEHOLDER_RE.sub(one, text)


# ---- typed numbers and their units -------------------------------------------------------------
# unit text -> (family, scale to the family's base unit)
UNITS = {
    "ns": ("time", 1e-9), "µs": ("time", 1e-6), "us": ("time", 1e-6), "ms": ("time", 1e-3),
    "s": ("time", 1.0), "seconds": ("time", 1.0),
    "MB/s": ("bytes/s", 1e6), "GB/s": ("bytes/s", 1e9), "TB/s": ("bytes/s", 1e12),
    "Gb/s": ("bits/s", 1e9), "Tb/s": ("bits/s", 1e12),
    "MB": ("bytes", 1e6), "GB": ("bytes", 1e9), "TB": ("bytes", 1e12),
    "×": ("ratio", 1.0), "x": ("ratio", 1.0), "times": ("ratio", 1.0),
    "%": ("percent", 1.0), "tokens/s": ("tokens/s", 1.0), "tokens/s/GPU": ("tokens/s", 1.0),
}
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# "1.2-1.6x", "0.69 → 0.34 s", "388 -> 240 GB/s", "±50%", "1.23 s"
NUMBER_RE = re.compile(
    rf"(?<![\w.,/$^])(?P<pm>±\s?)?(?P<a>{_NUM})(?:\s?(?:-|–|→|->|to)\s?(?P<b>{_NUM}))?"
    rf"\s?(?P<unit>{_UNIT_ALT})(?![\w/])")
_STRIP = [re.compile(p, re.DOTALL) for p in (
    r"\$\$.*?\$\$", r"\$[^$\n]*\$",        # maths
    r"`[^`\n]*`",                          # code
    r"https?://\S+",                       # links
    r"<[^>\n]*>",                          # html tags
)]
UP_TO_RE = re.compile(r"\bup to (?:about |roughly |~)?", re.IGNORECASE)
FEW_PERCENT_RE = re.compile(r"within (?:a few|(\d+(?:\.\d+)?)) ?(?:percent|%)", re.IGNORECASE)
FLAT_RE = re.compile(r"\b(almost|nearly|roughly|stays?|then|is|are)?\s*flat\b|\bbarely (?:changes?|moves?|falls?)\b",
                     re.IGNORECASE)


def _decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def typed_numbers(markdown: str) -> list[dict]:
    """Every number with a unit typed in a markdown text (placeholders, maths, code and links left out):
    ``{"text", "value", "family", "scale", "decimals"}``; a range or an arrow gives both ends, "±N%"
    is read as the ratio 1 + N/100."""
    text = PLACEHOLDER_RE.sub(" ", markdown)
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    out = []
    for m in NUMBER_RE.finditer(text):
        unit = m.group("unit")
        if unit in ("x", "×") and (m.group(0)[-2].isspace() or re.match(r"\s*[A-Z0-9(]", text[m.end():])):
            continue  # "8 x NDR", "2 × 25", "4x EDR": a multiplication or a count, not a ratio
        family, scale = UNITS[unit]
        for key in ("a", "b"):
            number = m.group(key)
            if number is None:
                continue
            value = float(number.replace(",", ""))
            entry = {"text": m.group(0).strip(), "value": value, "family": family, "scale": scale,
                     "decimals": _decimals(number)}
            if m.group("pm") and family == "percent":  # "off by ±50%": a factor of 1.5
                entry.update(value=1 + value / 100, family="ratio", decimals=_decimals(number) + 2)
            out.append(entry)
    return out


def quantities(names, values: dict) -> list[dict]:
    """The glued values named, each read back from its text as a typed number (text without a unit:
    nothing to compare, left out)."""
    out = []
    for name in dict.fromkeys(names):
        if name in values:
            for q in typed_numbers(values[name]["text"]):
                out.append({**q, "name": name})
    return out


def _matches(typed: dict, q: dict) -> bool:
    """The typed number equals the glued one at the precision the typed number prints."""
    in_typed_unit = q["value"] * q["scale"] / typed["scale"]
    return abs(typed["value"] - in_typed_unit) <= 0.5 * 10 ** -typed["decimals"] * (1 + 1e-9) + 1e-12


def _series(glued) -> list[list[dict]]:
    """Glued values of one quantity at several points: same unit, names that differ only in a last number
    (``ring_busbw_16``, ``ring_busbw_512``)."""
    series: dict[tuple, list[dict]] = {}
    for q in glued:
        series.setdefault((q["family"], re.sub(r"_?\d+$", "", q["name"])), []).append(q)
    return list(series.values())


def _within_range(q: dict, lo: dict, hi: dict) -> bool:
    value = q["value"] * q["scale"] / lo["scale"]
    slack = 0.5 * 10 ** -max(lo["decimals"], hi["decimals"]) * (1 + 1e-9)
    return lo["value"] - slack <= value <= hi["value"] + slack


def contradictions(markdown: str, glued: list[dict], near: float = 3.0) -> list[str]:
    """What a markdown cell says against the glued quantities it describes (:func:`quantities`):

    * a typed number that is within a factor ``near`` of a glued value of the same family (time,
      bytes/s, ratio, ...) but equals none of them at its printed precision: a number copied by hand
      that the computation no longer gives;
    * a typed range "A-B" while a glued series it is about (some points inside) has points outside;
    * "up to N" while a glued value of N's unit is larger;
    * "within a few percent" (10%) or "within N%" of a typed number while a glued value of its unit is not;
    * "flat" (or "barely changes") while one glued series (``busbw_16``, ``busbw_512``: names that differ only
      in a last number) moves by more than 15%.
    """
    problems = []
    for typed in typed_numbers(markdown):
        same = [q for q in glued if q["family"] == typed["family"]]
        if not same or any(_matches(typed, q) for q in same):
            continue
        close = [q for q in same if q["value"] > 0 and typed["value"] > 0
                 and 1 / near <= (typed["value"] * typed["scale"]) / (q["value"] * q["scale"]) <= near]
        if close:
            nearest = min(close, key=lambda q: abs(math.log(typed["value"] * typed["scale"] / (q["value"] * q["scale"]))))
            problems.append(f"typed {typed['text']!r}, but {nearest['name']} computes {nearest['text']!r}")
    clean = PLACEHOLDER_RE.sub(" ", markdown)
    series = _series(glued)
    for m in NUMBER_RE.finditer(clean):  # a typed range "1.2-1.6x" bounds a glued series it is about
        if not m.group("b"):
            continue
        ends = typed_numbers(m.group(0))
        if len(ends) != 2:
            continue
        lo, hi = ends
        for qs in series:
            if qs[0]["family"] != lo["family"] or len(qs) < 2:
                continue
            inside = [q for q in qs if _within_range(q, lo, hi)]
            outside = [q for q in qs if not _within_range(q, lo, hi)]
            if inside and outside:
                problems.append(f"says {m.group(0).strip()!r}, but {outside[0]['name']} computes {outside[0]['text']!r}")
    for bound in UP_TO_RE.finditer(clean):  # "off by up to 2x": no glued value of that unit may exceed it
        following = typed_numbers(clean[bound.end():bound.end() + 40])
        if following and clean[bound.end():].lstrip().startswith(following[0]["text"].split()[0][:1]):
            limit = following[0]
            for q in glued:
                if q["family"] == limit["family"] and not _matches(limit, q) and \
                        q["value"] * q["scale"] > limit["value"] * limit["scale"]:
                    problems.append(f"says 'up to {limit['text']}', but {q['name']} computes {q['text']!r}")
    for few in FEW_PERCENT_RE.finditer(clean):  # "X comes out within a few percent": of its own sentence's X
        bound = float(few.group(1)) / 100 if few.group(1) else 0.1
        start = max(clean.rfind(". ", 0, few.start()), clean.rfind("\n\n", 0, few.start()), 0)
        end = min([i for i in (clean.find(". ", few.end()), clean.find("\n\n", few.end())) if i >= 0] or [len(clean)])
        for typed in typed_numbers(clean[start:end]):
            for q in glued:
                if q["family"] == typed["family"] and q["value"] > 0 and \
                        abs(q["value"] * q["scale"] / (typed["value"] * typed["scale"]) - 1) > bound:
                    problems.append(f"says {few.group(0)!r} of {typed['text']!r}, but {q['name']} computes {q['text']!r}")
    flat = FLAT_RE.search(PLACEHOLDER_RE.sub(lambda m: " " * len(m.group(0)), markdown))  # offsets of markdown
    if flat:
        # the series the sentence names with its own placeholders, else every series the text describes
        start = max(markdown.rfind(". ", 0, flat.start()), markdown.rfind("\n\n", 0, flat.start()), 0)
        ends = [i for i in (markdown.find(". ", flat.end()), markdown.find("\n\n", flat.end())) if i >= 0]
        named = set(placeholders(markdown[start:min(ends or [len(markdown)])]))
        for qs in (_series([q for q in glued if q["name"] in named]) if named else series):
            lo, hi = min(qs, key=lambda q: q["value"] * q["scale"]), max(qs, key=lambda q: q["value"] * q["scale"])
            if lo["value"] > 0 and hi["value"] * hi["scale"] / (lo["value"] * lo["scale"]) > 1.15:
                problems.append(f"says {flat.group(0).strip()!r}, but {hi['name']} = {hi['text']!r} and "
                                f"{lo['name']} = {lo['text']!r} differ by more than 15%")
    return problems


POINTS_BELOW_RE = re.compile(r"\b(?:code )?cell (?:under|below) (?:it|them|this)\b|\bthe code cell under\b",
                             re.IGNORECASE)
BLOCK_RE = re.compile(r"\n\s*\n|\n(?=\s*(?:>\s*)?(?:[-*]|\d+\.) )")


def blocks(markdown: str) -> list[str]:
    """A markdown cell cut into paragraphs and list items: the unit whose numbers are compared."""
    return [b for b in BLOCK_RE.split(markdown) if b.strip()]


def cell_scopes(cells) -> list[tuple[int, list[str]]]:
    """For each markdown cell (index) the glued names it describes: its own placeholders and, where it
    says so ("the code cell under them"), what the code cell right below it glues."""
    out = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        out.append((i, placeholders(cell.source) + _below(cells, i)))
    return out


def _below(cells, i) -> list[str]:
    if POINTS_BELOW_RE.search(cells[i].source) and i + 1 < len(cells) and cells[i + 1].cell_type == "code":
        return glued_names(cells[i + 1].source)
    return []


def chapter_problems(cells, values: dict) -> list[str]:
    """Every contradiction between a chapter's markdown and its stored glued values, paragraph by
    paragraph: a paragraph or list item describes the values of its own placeholders, and every paragraph
    of a cell that points at the code cell below it also describes what that cell glues."""
    problems = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        below = _below(cells, i)
        for block in blocks(cell.source):
            names = placeholders(block) + below
            for p in contradictions(block, quantities(names, values)):
                problems.append(f"cell {i}: {p}")
    return problems


def main(argv=None) -> int:
    """``python -m course_lib.prose``: every glued number per chapter, as the prose shows it."""
    from . import manifest
    for c in manifest.chapters():
        values = load_values(c.source.with_suffix(".values.json"))
        if values:
            print(f"{c.number} {c.slug}: {len(values)} numbers")
            for name, v in values.items():
                print(f"   {name:<28} {v['text']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
