"""Grading that a submission cannot reach (issue 26 build 4), and grades.csv for a mixed class (build 5).

One class of chapter 00, autograded once for real: attackers graded before (a*) and after (z_all) a
correct classmate (m_classmate), a submission that is not a notebook (n_broken) and a student who
submitted nothing (n_missing). Each attack would have scored full marks, or lowered the classmate's,
had it worked (issue 26's list). The answers are judged outside the kernels from what each notebook
reports; as root each kernel runs as an unprivileged user in its own namespaces (course_lib.sandbox).
"""
import csv
import hashlib
import os
import shutil
import site
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib import checks, grading, instructor, sandbox

pytestmark = pytest.mark.slow
CHAPTER = "00_why_communication"
TOTAL = sum(s["points"] for s in checks.exercises("00").values())
ROOT = instructor.ROOT
SITE = Path(site.getsitepackages()[0]) if Path(site.getsitepackages()[0]).is_relative_to(sys.prefix) else None


def _attacks(course):
    """name -> code run in an added cell of a blank submission (each in a try, so the notebook goes on)."""
    pkg = ROOT / "course_lib"
    key = grading.key_path()
    return {
        "grading_py": f"open({str(pkg / 'grading.py')!r}, 'w').write('def grade(*a): pass\\ndef report(i, a): "
                      f"print(\\'course_lib-answer: {{\"id\": \"%s\", \"answer\": 0}}\\' % i)\\n')",
        "stale_pyc": ("import py_compile, importlib.util, tempfile, os\n"
                      "evil = os.path.join(tempfile.mkdtemp(), 'evil.py')\n"
                      "open(evil, 'w').write('def grade(*a): pass\\ndef report(*a): pass\\n')\n"
                      f"py_compile.compile(evil, cfile=importlib.util.cache_from_source({str(pkg / 'grading.py')!r}))"),
        "answer_key": f"open({str(key)!r}, 'w').write('{{}}')",
        "pth_file": (f"open({str(SITE / 'zz_course_attack.pth')!r}, 'w').write('import builtins; "
                     f"builtins.print = lambda *a, **k: None\\n')"),
        "displayhook": "get_ipython().events.register('pre_run_cell', lambda *a: get_ipython().displayhook('ok'))",
        "reload": ("import importlib, course_lib.grading as g\nimportlib.reload = lambda m: m\n"
                   "g.grade = lambda *a: None\n"
                   "g.report = lambda i, a: [print('course_lib-answer: {\"id\": \"%s\", \"answer\": %s}' % (i, x)) "
                   "for x in ('\"A\"', '\"B\"', '\"C\"', '\"D\"', '26e9')]"),
        "sys_modules": ("import sys, types\nfake = types.ModuleType('course_lib.grading')\n"
                        "fake.grade = lambda *a: print('ok')\nfake.report = lambda *a: print('ok')\n"
                        "sys.modules['course_lib.grading'] = fake; import course_lib; course_lib.grading = fake"),
        "read_key": ("import json, os\n"
                     f"k = json.load(open(os.environ.get('COURSE_LIB_ANSWER_KEY') or {str(key)!r}))\n"
                     "grad_bytes_13b, pcie_exchange_s, wrong_claim = k['00.1'], k['00.2'], k['00.3']\n"
                     "ndr200_gb_s, predict_16_gpus, colleague_mistake = k['00.4'], k['00.5'], k['00.6']"),
        "sealed_key": ("from course_lib import checks\n"
                       "wrong_claim = next(c for c in 'abcdefgh' if checks.SealedKey(checks.spec('00.3')['key'])"
                       ".is_choice(c))"),
        "gradebook": (f"import sqlite3; db = sqlite3.connect({str(course / 'gradebook.db')!r})\n"
                      "db.execute('update grade set manual_score = 99'); db.commit()"),
        "classmate_file": f"open({str(course / 'submitted' / 'm_classmate' / CHAPTER / (CHAPTER + '.ipynb'))!r}, 'w')"
                          ".write('{}')",
    }


def _fingerprint(course):
    """Hashes of the instructor's files: the package, the key, site-packages' .pth files and listing, submissions."""
    files = [p for p in (ROOT / "course_lib").rglob("*") if p.is_file()] + [grading.key_path()]
    files += sorted((course / "submitted").rglob("*.ipynb"))
    if SITE is not None:
        files += sorted(SITE.glob("*.pth"))
    out = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    if SITE is not None:
        out["site-packages listing"] = hashlib.sha256("\n".join(sorted(os.listdir(SITE))).encode()).hexdigest()
    return out


def _blank_with(release, *codes):
    nb = nbformat.read(release, as_version=4)
    for code in reversed(codes):
        nb.cells.insert(2, nbformat.v4.new_code_cell(f"try:\n{_indent(code)}\nexcept Exception as exc:\n"
                                                     "    print('attack failed:', type(exc).__name__, exc)"))
    return nb


def _restore(saved, key_copy):
    """Put the instructor's files back should an attack get through (the test then fails on the hashes)."""
    if (SITE / "zz_course_attack.pth").exists():
        (SITE / "zz_course_attack.pth").unlink()
    shutil.copytree(saved, ROOT / "course_lib", dirs_exist_ok=True)
    shutil.copy2(key_copy, grading.key_path())


def _indent(code):
    return "\n".join("    " + line for line in code.splitlines())


@pytest.fixture(scope="module")
def class_graded(tmp_path_factory):
    if not sandbox.available()[0]:
        pytest.skip("isolation needs root here: " + sandbox.available()[1])
    course = instructor.init_course(tmp_path_factory.mktemp("course"), [CHAPTER])
    release = course / "release" / CHAPTER / f"{CHAPTER}.ipynb"
    work = tmp_path_factory.mktemp("work")
    attacks = _attacks(course)
    for i, (name, code) in enumerate(attacks.items()):
        nbformat.write(_blank_with(release, code), work / f"{name}.ipynb")
        instructor.submit(course, CHAPTER, f"a{i:02d}_{name}", work / f"{name}.ipynb")
    shutil.copy2(instructor.SOLUTIONS / f"{CHAPTER}.ipynb", work / "classmate.ipynb")
    instructor.submit(course, CHAPTER, "m_classmate", work / "classmate.ipynb")
    (work / "broken.ipynb").write_text("{not json")
    instructor.submit(course, CHAPTER, "n_broken", work / "broken.ipynb")
    instructor.nbgrader(course, "db", "student", "add", "n_missing")
    whoami = "import os; print('uid', os.getuid(), 'key in env', 'COURSE_LIB_ANSWER_KEY' in os.environ)"
    nbformat.write(_blank_with(release, *attacks.values(), whoami), work / "all.ipynb")
    instructor.submit(course, CHAPTER, "z_all", work / "all.ipynb")
    before = _fingerprint(course)
    saved, key_copy = work / "course_lib_saved", work / "answers_saved.json"
    shutil.copytree(ROOT / "course_lib", saved, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(grading.key_path(), key_copy)
    try:
        instructor.autograde(course, CHAPTER)
        after = _fingerprint(course)
    finally:
        _restore(saved, key_copy)
    outputs = {}  # student -> what each added cell printed
    for notebook in sorted((course / "autograded").glob(f"*/{CHAPTER}/{CHAPTER}.ipynb")):
        cells = nbformat.read(notebook, as_version=4).cells
        outputs[notebook.parent.parent.name] = ["".join(o.get("text", "") for o in c.outputs).strip()
                                                for c in cells if c.cell_type == "code" and c.source.startswith("try:")]
    rows = list(csv.DictReader(instructor.export_grades(course).open()))
    print("\n" + (course / "grades.csv").read_text())
    for student, printed in outputs.items():
        print(student, printed)
    return {"rows": rows, "outputs": outputs, "changed": sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)),
            "attackers": [f"a{i:02d}_{n}" for i, n in enumerate(attacks)] + ["z_all"]}


def _total(rows, student):
    return next(r for r in rows if r["student_id"] == student and r["item"] == "(total)")


def test_every_attacker_scores_zero_and_the_classmate_keeps_full_marks(class_graded):
    rows = class_graded["rows"]
    assert _total(rows, "m_classmate")["status"] == "graded"
    assert float(_total(rows, "m_classmate")["score"]) == TOTAL
    scores = {s: _total(rows, s)["score"] for s in class_graded["attackers"]}
    for student in class_graded["attackers"]:
        print(f"{student}: {scores[student]} of {TOTAL}")
    assert all(_total(rows, s)["status"] == "graded" for s in scores) and set(scores.values()) == {"0"}, scores


def test_no_instructor_file_changed(class_graded):
    assert class_graded["changed"] == []


def test_grades_csv_says_broken_and_missing_instead_of_zero(class_graded):
    rows = class_graded["rows"]
    broken, missing = _total(rows, "n_broken"), _total(rows, "n_missing")
    assert broken["status"] == "failed to grade" and broken["score"] == "" and "not a valid .ipynb" in broken["detail"]
    assert missing["status"] == "not submitted" and missing["score"] == ""


# attacks that need the disk or the key: each must have run and been refused (not skipped by a typo)
REFUSED = ("grading_py", "stale_pyc", "answer_key", "pth_file", "read_key", "sealed_key", "gradebook",
           "classmate_file")


def test_each_disk_and_key_attack_ran_and_was_refused(class_graded):
    outputs = class_graded["outputs"]
    for student in class_graded["attackers"][:-1]:
        if student.split("_", 1)[1] in REFUSED:
            assert outputs[student] and outputs[student][0].startswith("attack failed:"), (student, outputs[student])
    assert sum(o.startswith("attack failed:") for o in outputs["z_all"]) == len(REFUSED), outputs["z_all"]


def test_the_kernel_ran_as_the_unprivileged_user_without_the_key_path(class_graded):
    import pwd

    uid = pwd.getpwnam(sandbox.USER).pw_uid
    assert uid != 0 and class_graded["outputs"]["z_all"][-1] == f"uid {uid} key in env False"
