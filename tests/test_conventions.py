"""The chapter conventions (course_lib.conventions): the course keeps them, and each broken one is one line
naming the file and the field, the line ``python -m course_lib.authoring check`` prints."""
from __future__ import annotations

import json

import pytest

from course_lib import authoring, conventions, glossary, manifest


def test_every_chapter_keeps_every_convention():
    assert conventions.problems() == []


def test_the_chapter_recipe_lists_every_convention():
    recipe = (manifest.ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8").split("### Add a chapter")[1]
    for line in conventions.CONVENTIONS:
        assert line in recipe, f"docs/ARCHITECTURE.md's chapter recipe does not list: {line}"


GOOD_SOURCE = (f"# %% [markdown]\n# # 42 · A small chapter\n#\n# **Time:** about 15 minutes. Terms: "
               f"[glossary]({glossary.LINK}).\n\n# %% [markdown]\n# **Exercise 42.1** (1 point). Per direction?\n\n"
               '# %% exercise="42.1"\nlink_gb_s = 900 / 2\n')
GOOD_SPEC = {"variable": "link_gb_s", "kind": "number", "points": 1, "skill": "compute", "demand": "plug-in",
             "key": "sealed"}
GOOD_FEEDBACK = {"concept": "vendors quote both directions", "formula": "per direction = total / 2"}


def _course(tmp_path, source=GOOD_SOURCE, spec=None, answers=None, audit="| 42 | 42.1 | plug-in | plug-in | none |\n",
            feedback=None):
    """A one-chapter course in ``tmp_path`` (its course.toml, source, exercises, answer key and audit table)."""
    (tmp_path / "course.toml").write_text('[[chapter]]\nnumber = "42"\nslug = "small"\ntitle = "A small chapter"\n'
                                          'minutes = 15\nexercises = "course_lib/exercises/42.json"\n')
    for folder in ("solutions/src", "course_lib/exercises", "docs"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "solutions/src/42_small.py").write_text(source, encoding="utf-8")
    (tmp_path / "course_lib/exercises/42.json").write_text(json.dumps({"42.1": GOOD_SPEC if spec is None else spec}))
    (tmp_path / "solutions/answers.json").write_text(json.dumps({"42.1": 450} if answers is None else answers))
    (tmp_path / "solutions/feedback.json").write_text(json.dumps({"42.1": GOOD_FEEDBACK if feedback is None
                                                                   else feedback}))
    (tmp_path / "docs/exercise_audit.md").write_text("| chapter | id | before | after | what |\n|---|---|---|---|---|\n"
                                                      + audit)
    return conventions.problems(tmp_path / "course.toml")


def test_a_chapter_that_keeps_them_has_no_problem(tmp_path):
    assert _course(tmp_path) == []


@pytest.mark.parametrize("change, expected", [
    ({"source": GOOD_SOURCE.replace("42 · A small", "42 · Another")},
     "solutions/src/42_small.py: opening cell: must start with '# 42 · A small chapter'"),
    ({"source": GOOD_SOURCE.replace("about 15 minutes", "about 20 minutes")},
     "solutions/src/42_small.py: opening cell: must say '**Time:** about 15 minutes'"),
    ({"source": GOOD_SOURCE.replace(f"[glossary]({glossary.LINK})", "the glossary")},
     f"solutions/src/42_small.py: opening cell: must link the glossary, [glossary]({glossary.LINK})"),
    ({"source": GOOD_SOURCE.replace("**Exercise 42.1**", "**Question 1**")},
     "solutions/src/42_small.py: exercise 42.1: its prompt (the markdown above it) must open a line with "
     "'**Exercise 42.1**'"),
    ({"spec": {k: v for k, v in GOOD_SPEC.items() if k != "skill"}},
     "course_lib/exercises/42.json: 42.1.skill: missing; one of compute, predict"),
    ({"spec": dict(GOOD_SPEC, demand="look-up")},
     "course_lib/exercises/42.json: 42.1.demand: 'look-up'; one of transfer, plug-in"),
    ({"feedback": {k: v for k, v in GOOD_FEEDBACK.items() if k != "formula"}},
     "solutions/feedback.json: 42.1.formula: a number's hints come in two levels"),
    ({"audit": ""}, "docs/exercise_audit.md: 42.1: no row; add `| 42 | 42.1 | <before> | plug-in |"),
    ({"answers": {}}, "solutions/answers.json: 42.1: no entry in the answer key"),
    ({"spec": {k: v for k, v in GOOD_SPEC.items() if k != "key"}},
     "course_lib/exercises/42.json: 42.1.key: not sealed; run python -m course_lib.grading seal"),
])
def test_each_broken_convention_is_one_line_naming_file_and_field(tmp_path, change, expected):
    found = _course(tmp_path, **change)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_authoring_check_prints_each_problem(monkeypatch, capsys):
    monkeypatch.setattr(authoring, "stale", lambda: [])
    monkeypatch.setattr(conventions, "problems", lambda: ["solutions/src/42_small.py: opening cell: must link"])
    assert authoring.main(["check"]) == 1
    assert capsys.readouterr().out == "convention: solutions/src/42_small.py: opening cell: must link\n"
