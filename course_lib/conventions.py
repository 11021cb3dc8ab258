"""A chapter's conventions, checked in one place: ``python -m course_lib.authoring check`` and the tests read them.

Each problem is one line that names the file and the field, e.g.
``course_lib/exercises/99.json: 99.1.skill: missing; one of compute, predict, explain, design, diagnose``.
``CONVENTIONS`` lists what is checked, in the words docs/ARCHITECTURE.md's chapter recipe uses:
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from . import glossary, manifest
from .checks import SKILLS  # what an exercise asks of the learner: compute, predict, explain, ...

DEMANDS = ("transfer", "plug-in")   # docs/exercise_audit.md; a "look-up" (answer shown above it) is refused
UNKEYED = ("callable", "free_text")   # kinds with no answer to key: code that is run, text a person reads
AUDIT = Path("docs") / "exercise_audit.md"
ANSWER_KEY = Path("solutions") / "answers.json"
FEEDBACK = Path("solutions") / "feedback.json"  # hints, choice feedback, rubrics: never in the learner's package

CONVENTIONS = (
    "the source opens with `# # <number> · <title>` and `**Time:** about <minutes> minutes`, as course.toml says",
    f"the opening cell links the glossary (`]({glossary.LINK})`)",
    f"every exercise has a `skill` ({', '.join(SKILLS)}) and a `demand` ({', '.join(DEMANDS)}; never look-up)",
    f"every number exercise has two levels of hints in {FEEDBACK.as_posix()}, a `concept` and a different `formula`, "
    "neither giving the answer",
    f"every exercise has its row in {AUDIT.as_posix()} (`| <chapter> | <id> | <before> | <demand> | ... |`)",
    "every exercise's prompt, in the markdown above its `exercise=` cell, opens a line with `**Exercise <id>**` "
    "(a heading `### 7.2 Exercise <id>: ...` too; a written item may say `**Written answer <id>**`)",
    f"every exercise with an answer (not {' or '.join(UNKEYED)}) has an entry in the answer key, "
    f"{ANSWER_KEY.as_posix()}, and a sealed `key` (grading seal)",
)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _cells(source: Path) -> list:
    import jupytext  # a chapter source is jupytext's percent format
    return jupytext.read(source, fmt="py:percent").cells


def _audit_rows(root: Path) -> dict[str, str]:
    """{exercise id: its demand} from the audit table's rows (``| 00 | 00.1 | before | after | what |``)."""
    path = root / AUDIT
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return {m.group(1): m.group(2) for m in
            re.finditer(r"(?m)^\| *\d\d *\| *(\d\d\.\w+) *\| *[\w-]+ *\| *([\w-]+) *\|", text)}


def _opening(chapter: manifest.Chapter, cells: list, where: str) -> list[str]:
    first = cells[0].source if cells and cells[0].cell_type == "markdown" else ""
    out = []
    heading = f"# {chapter.number} · {chapter.title}"
    if not first.startswith(heading + "\n") and first != heading:
        out.append(f"{where}: opening cell: must start with {heading!r} (course.toml's number and title)")
    time = re.search(r"\*\*Time:\*\* about (\d+) (minutes|hours)", first)
    if not time or int(time.group(1)) * (60 if time.group(2) == "hours" else 1) != chapter.minutes:
        out.append(f"{where}: opening cell: must say '**Time:** about {chapter.minutes} minutes' (course.toml's "
                   "minutes; whole hours may say hours)")
    if f"]({glossary.LINK})" not in first:
        out.append(f"{where}: opening cell: must link the glossary, [glossary]({glossary.LINK})")
    return out


def _names(line: str, exercise_id: str, kind: str) -> bool:
    """Does a markdown line open with the exercise's name: ``**Exercise 00.1**``, ``### 7.2 Exercise 04.4: ...``,
    or, for a written item, ``**Written answer 08.W1**``?"""
    words = "Exercise|Written answer" if kind == "free_text" else "Exercise"
    return re.match(rf"^\s*(?:#+\s+(?:[\d.]+\s+)?)?[*_]*(?:{words}) {re.escape(exercise_id)}\b", line) is not None


def _prompts(cells: list, where: str, specs: dict) -> list[str]:
    """Each ``exercise="<id>"`` cell has, in the markdown since the previous one, a line naming it (``_names``)."""
    out, since = [], []
    for cell in cells:
        exercise_id = cell.metadata.get("exercise")
        if exercise_id is None:
            if cell.cell_type == "markdown":
                since.append(cell.source)
            continue
        kind = specs.get(exercise_id, {}).get("kind", "")
        lines = "\n".join(since + ([cell.source] if cell.cell_type == "markdown" else [])).splitlines()
        if not any(_names(line, exercise_id, kind) for line in lines):
            out.append(f"{where}: exercise {exercise_id}: its prompt (the markdown above it) must open a line with "
                       f"'**Exercise {exercise_id}**'")
        since = []
    return out


def _exercise_fields(chapter: manifest.Chapter, root: Path) -> list[str]:
    path = chapter.exercises_path
    where = _rel(path, root)
    if not path.is_file():
        return [f"{where}: missing (course.toml names it as chapter {chapter.number}'s exercises)"]
    specs = json.loads(path.read_text(encoding="utf-8"))
    key_path = root / ANSWER_KEY
    answers = json.loads(key_path.read_text(encoding="utf-8")) if key_path.is_file() else {}
    feedback_path = root / FEEDBACK
    feedback = json.loads(feedback_path.read_text(encoding="utf-8")) if feedback_path.is_file() else {}
    audit = _audit_rows(root)
    out = []
    for exercise_id, spec in specs.items():
        if not exercise_id.startswith(f"{chapter.number}."):
            out.append(f"{where}: {exercise_id}: an exercise of chapter {chapter.number} is numbered "
                       f"{chapter.number}.K")
        if spec.get("skill") not in SKILLS:
            out.append(f"{where}: {exercise_id}.skill: {'missing' if 'skill' not in spec else repr(spec['skill'])}; "
                       f"one of {', '.join(SKILLS)}")
        demand = spec.get("demand")
        if demand not in DEMANDS:
            out.append(f"{where}: {exercise_id}.demand: {'missing' if demand is None else repr(demand)}; "
                       f"one of {', '.join(DEMANDS)} (a look-up shows its answer above it)")
        elif audit.get(exercise_id) != demand:
            out.append(f"{AUDIT.as_posix()}: {exercise_id}: "
                       + ("no row" if exercise_id not in audit else f"demand {audit[exercise_id]!r}")
                       + f"; add `| {chapter.number} | {exercise_id} | <before> | {demand} | <what changed> |`")
        concept, formula = (feedback.get(exercise_id, {}).get(field) for field in ("concept", "formula"))
        if spec.get("kind", "number") == "number" and not (concept and formula and concept != formula):
            out.append(f"{FEEDBACK.as_posix()}: {exercise_id}.{'concept' if not concept else 'formula'}: a number's "
                       "hints come in "
                       "two levels, `concept` then a different `formula` (neither giving the answer)")
        if spec.get("kind") in UNKEYED:  # judged by running the learner's code, or read by a person
            continue
        if exercise_id not in answers:
            out.append(f"{ANSWER_KEY.as_posix()}: {exercise_id}: no entry in the answer key (grading refuses it)")
        if "key" not in spec:
            out.append(f"{where}: {exercise_id}.key: not sealed; run python -m course_lib.grading seal")
    return out


def chapter_problems(chapter: manifest.Chapter) -> list[str]:
    """Every convention ``chapter`` breaks, one line each naming the file and the field."""
    root = chapter.root
    where = _rel(chapter.source, root)
    if not chapter.source.is_file():
        return [f"{where}: missing (course.toml lists chapter {chapter.number})"]
    cells = _cells(chapter.source)
    out = _opening(chapter, cells, where)
    if chapter.exercises:
        path = chapter.exercises_path
        specs = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        out += _prompts(cells, where, specs) + _exercise_fields(chapter, root)
    return out


def problems(manifest_path=None) -> list[str]:
    """Every convention any chapter of the manifest (``manifest_path``: another course.toml) breaks."""
    return [line for chapter in manifest.chapters(manifest_path) for line in chapter_problems(chapter)]
