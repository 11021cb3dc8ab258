"""The course glossary: one list of terms (``data/glossary.json``), rendered to ``docs/glossary.md``,
and the defined-before-use rule every chapter follows.

A chapter *defines* a term where it writes it in bold (``**RDMA**``), in a heading, or as a link to
its glossary entry (``[SM](../docs/glossary.md#sm)``). :func:`undefined_uses` lists every use of a term
in a chapter's markdown that comes before both a definition in that chapter and one in an earlier
chapter. The chapter's opening cell (title, learning objectives: a promise, not a use), further
reading (titles of others' work), maths, code and links are not read as uses.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from . import datafiles, manifest

ROOT = Path(__file__).resolve().parent.parent
MARKDOWN = ROOT / "docs" / "glossary.md"
LINK = "../docs/glossary.md"   # from notebooks/ and solutions/
_STRIP = [re.compile(p, re.DOTALL) for p in (r"\$\$.*?\$\$", r"\$[^$\n]*\$", r"`[^`\n]*`", r"\]\([^)]*\)",
                                             r"https?://\S+", r"<[^>\n]*>")]
_FURTHER = re.compile(r"^#+\s*Further reading.*", re.MULTILINE | re.DOTALL | re.IGNORECASE)


def data() -> dict:
    return datafiles.load("glossary.json")


def terms() -> dict:
    """{id: {term, patterns, definition, chapter}}."""
    return data()["terms"]


def render() -> str:
    """docs/glossary.md, generated from the data file."""
    d = data()
    out = ["# Glossary", "",
           "<!-- generated from course_lib/data/glossary.json by `python -m course_lib.glossary`; do not edit -->", "",
           "Every term a chapter uses before explaining it links here. The chapter named after each entry "
           "explains it at length.", ""]
    for tid, t in sorted(d["terms"].items(), key=lambda kv: kv[1]["term"].lower()):
        out += [f'<a id="{tid}"></a>', "", f"**{t['term']}**: {t['definition']} *(chapter {t['chapter']})*", ""]
    out += ["## Symbols", "", "One symbol per quantity, in every chapter:", "", "| symbol | means |", "|---|---|"]
    out += [f"| ${s}$ | {meaning} |" for s, meaning in d["symbols"].items()]
    return "\n".join(out) + "\n"


def _markdown_cells(notebook: Path) -> list[str]:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "markdown"]


def _readable(text: str) -> str:
    """The cell with what is not prose (maths, code, link targets, further reading) blanked out, so that
    offsets stay those of the raw cell."""
    blank = lambda m: " " * len(m.group(0))  # noqa: E731
    text = _FURTHER.sub(blank, text)
    for pattern in _STRIP:
        text = pattern.sub(blank, text)
    return text


def _definitions(text: str, tid: str, patterns) -> list[int]:
    """Offsets in ``text`` (a raw markdown cell) where it defines the term."""
    out = [m.start() for m in re.finditer(rf"\[[^\]\n]*\]\([^)\s]*glossary\.md#{re.escape(tid)}\)", text)]
    for m in re.finditer(r"\*\*[^*\n]+\*\*|^#+ .*$", text, re.MULTILINE):
        short = m.group(0).startswith("#") or len(m.group(0).split()) <= 6  # a bold sentence is emphasis
        if short and any(re.search(p, m.group(0)) for p in patterns):
            out.append(m.start())
    return out


def undefined_uses(chapter_cells: list[tuple[str, list[str]]]) -> list[str]:
    """``chapter_cells``: [(chapter number, [markdown cell, ...]), ...] in course order. Every first use of
    a term in a chapter that no definition in it or in an earlier chapter precedes."""
    problems, known = [], set()
    for number, cells in chapter_cells:
        for tid, t in terms().items():
            if tid in known:
                continue
            first_use = first_def = None
            for index, cell in enumerate(cells):
                defs = _definitions(cell, tid, t["patterns"])
                if defs and first_def is None:
                    first_def = (index, min(defs))
                if index == 0 or first_use is not None:
                    continue
                readable = _readable(cell)
                uses = [m for p in t["patterns"] for m in re.finditer(p, readable)]
                if uses:
                    m = min(uses, key=lambda m: m.start())
                    first_use = (index, m.start(), readable[max(0, m.start() - 40):m.end() + 40])
            if first_def is not None:
                known.add(tid)
            if first_use and (first_def is None or first_def[:2] > first_use[:2]):
                where = " ".join(first_use[2].split())
                problems.append(f"chapter {number}: {t['term']} used before it is defined or linked "
                                f"(markdown cell {first_use[0]}: ...{where}...); link it: [..]({LINK}#{tid})")
    return problems


def course_cells() -> list[tuple[str, list[str]]]:
    """Every chapter's markdown cells (from its solution notebook), in course order."""
    return [(c.number, _markdown_cells(c.solution_notebook)) for c in manifest.chapters()]


def main(argv=None) -> int:
    """``python -m course_lib.glossary``: write docs/glossary.md; ``check``: list undefined uses."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:
        problems = undefined_uses(course_cells())
        print("\n".join(problems) or "every listed term is defined or linked before its first use")
        return 1 if problems else 0
    MARKDOWN.write_text(render(), encoding="utf-8")
    print(f"wrote {MARKDOWN.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
