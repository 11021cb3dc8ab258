"""docs/instructor.md's 3-hour plan: contiguous slots, each chapter's stated time, sections that exist."""
import re
from pathlib import Path

from course_lib import manifest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "docs" / "instructor.md").read_text(encoding="utf-8")


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def _chapter_source(number: str) -> str:
    return manifest.chapter(number).source.read_text(encoding="utf-8")


def _stated_minutes(number: str) -> int:
    """The chapter's time in course.toml (the contract test checks that its opening says the same)."""
    return manifest.chapter(number).minutes


def _plan_rows():
    section = GUIDE.split("## A 3-hour workshop", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in section.splitlines() if re.match(r"\|\s*\d:\d\d-\d:\d\d", line)]
    assert rows, "the 3-hour plan has no table"
    return rows


def test_slots_run_from_0_00_to_3_00_without_gaps():
    slots = [tuple(_minutes(t) for t in row[0].split("-")) for row in _plan_rows()]
    assert slots[0][0] == 0 and slots[-1][1] == 180
    assert all(end == nxt for (_, end), (nxt, _) in zip(slots, slots[1:]))


def test_each_chapter_row_states_the_chapters_own_time_and_fits_in_it():
    taught, stated_total = 0, 0
    for row in _plan_rows():
        match = re.match(r"(\d\d) .*\((\d+) min\)", row[1])
        if not match:
            continue
        number, minutes = match.groups()
        assert int(minutes) == _stated_minutes(number), f"chapter {number}: the plan says {minutes} min"
        start, end = (_minutes(t) for t in row[0].split("-"))
        assert end - start <= int(minutes)
        taught += end - start
        stated_total += int(minutes)
    totals = re.search(r"Chapters 00-07 state (\d+) minutes", GUIDE)
    assert totals and int(totals.group(1)) == sum(c.minutes for c in manifest.chapters() if c.number <= "07")
    assert re.search(rf"In class: {taught} of the {int(totals.group(1))} stated minutes", GUIDE)


def test_every_section_the_plan_names_exists_in_its_chapter():
    for row in _plan_rows():
        match = re.match(r"(\d\d) ", row[1])
        if not match:
            continue
        source = _chapter_source(match.group(1))
        headings = re.findall(r"^# #{2,3} (.+)$", source, re.MULTILINE)
        numbers = {h.split(" ", 1)[0].rstrip(".") for h in headings}
        for cell in row[2:4]:
            for ref in re.findall(r"§(\d+(?:\.\d+)?)", cell):
                assert ref in numbers, f"chapter {match.group(1)} has no section {ref}"
            for name in re.findall(r"\*([^*]+)\*", cell):
                assert any(h.startswith(name) for h in headings), f"chapter {match.group(1)} has no section {name!r}"
