"""The README: the two commands first, every chapter linked, every documented command real."""
import re
from pathlib import Path

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
