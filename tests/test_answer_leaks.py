"""No graded answer is given away: not by its hints, its prompt, or anything the student notebook shows above it.

For every numeric exercise of every chapter, the expected value (``solutions/answers.json``; a model
answer's ``recorded`` value) is searched in three scopes, each with the forms that make sense there:

- **hints**: the exercise's ``hints``, ``concept``, ``formula`` and ``choice_hints`` (shown after a wrong answer);
- **prompt**: the exercise's question, from "Exercise NN.K" in the markdown above its answer cell to that cell;
- **above**: every markdown cell and every output of the executed student notebook above the answer cell.

Forms of a value v searched (:func:`leaks`):

- v **rounded to 2, 3 and 4 significant figures** (and any longer figure within 5e-5 of it), and v scaled by
  1e±3, 1e±6, 1e±9, 1e±12 (a unit prefix away: 67.1 MB for 67,108,864 bytes) and by 100 (a fraction as a
  percentage), each with its scaled unit after it: a number in the text is compared at its own precision, so
  "1.4", "1.44" and "1.444" all match 1.444091; thousands separators (1,536), units after the number
  (25 GB/s), exponents (1e9, 10⁹, 4 x 10^9) and fractions (\\frac{56}{64}) are read;
- a **product or quotient of two numbers** written in the text ("6 x 25", "450 / 50", "4 × 8") whose result is v
  at any of those scales (within 0.5%);
- an integer 3-20 (and 30 ... 100, 1000) **as a word** ("six").

Rules against false positives, each for a stated reason:

- A number with **one significant figure** ("6", "50", "0.5", "1e9") counts bare only in the hints, and only
  when it equals v exactly and v > 2: one-figure numbers are the inputs of every prompt ("6 links", "4 nodes"),
  and 0, 1 and 2 are everywhere ("2(p-1)/p", "2 bytes"); in a hint, a bare 6 for a 6 is still the answer.
  In the prompt and above it, a one-figure number counts with the answer's unit after it.
- A number with one or two figures, or a word, counts in the rest of the notebook only with the answer's unit
  after it ("9 times less" for a ratio of 9, "25 GB/s" for 25 GB/s): "25", "0.25", "three" or "eight" name
  other things all over a chapter (25 GB/s per link, three rings, eight GPUs).
- A percentage is a fraction's form only: x100 is searched only when the answer is a fraction.
- A scaled number counts only with its scaled unit ("268 us" is not 268,435,456 bytes; "268 MB" is): without the
  unit, three figures that match after a shift of the decimal point are a coincidence of the digits.
- Exercise ids ("exercise 05.3"), chapter and section numbers ("chapter 05", "section 5") are not numbers.
- Outputs and markdown *below* an answer cell, and choice exercises' letters, are out of scope: the learner has
  answered by then, and a letter is not a number.

Coverage (:func:`test_coverage`): every numeric exercise with a key (number kind and model answers) x the
three forms above x the three scopes; written answers get their own check (no rubric or model answer in the
student notebook). The ``slow`` test reads each student notebook as the run's one export of the course
executed it (``exported_course`` in tests/conftest.py, shared with test_export.py), so no chapter is
executed twice for these two files; cells after the chapter's last answer cell are dropped (nothing there
is above an answer).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from course_lib import manifest

ROOT = Path(__file__).resolve().parents[1]
KEY = json.loads((ROOT / "solutions" / "answers.json").read_text(encoding="utf-8"))
SCALES = (1.0, 1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 1e12, 1e-12, 100.0)
FIGURES = (2, 3, 4)
WORDS = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven",
         12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen", 16: "sixteen", 17: "seventeen",
         18: "eighteen", 19: "nineteen", 20: "twenty", 30: "thirty", 40: "forty", 50: "fifty", 60: "sixty",
         70: "seventy", 80: "eighty", 90: "ninety", 100: "hundred", 1000: "thousand"}
FORMS = ("number at 2/3/4 significant figures x 10 scales", "product or quotient of two numbers x 10 scales",
         "word for an integer")

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_NUM = r"(\d{1,3}(?:[,\u2009\u202f]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_EXP = r"(?:\s*[eE]([+-]?\d+)|\s*(?:x|×|\*|\\times|·)\s*10\^\{?(-?\d+)\}?)?"
NUMBER = re.compile(r"(?<![\w.^])" + _NUM + _EXP + r"(?![\d]|\s*\*\*)")
PRODUCT = re.compile(r"(?<![\w.^])" + _NUM + _EXP + r"\s*(x|×|\*|\\times|·|/)\s*" + _NUM + _EXP + r"(?![\d^]|\s*\*\*)")
NOT_NUMBERS = re.compile(r"(?i)(?:\b(?:exercises?|chapters?|sections?)|§)\s*\d+(?:\.\d+)?"
                         r"(?:\s*(?:[-–,]|and|or)\s*\d\d\.\d+)*")


def _clean(text: str) -> str:
    """Superscript exponents as ^n, 10^9 as 1e9, \\frac{a}{b} as a / b; exercise, chapter and section numbers removed."""
    text = re.sub(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]+", " ", text)  # embedded images are not text
    text = re.sub(r"10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", lambda m: "10^" + m.group(1).translate(_SUPERSCRIPT), text)
    text = text.translate(_SUPERSCRIPT).replace("\u2212", "-")
    text = re.sub(r"(\d(?:[\d.,]*\d)?)\s*(?:x|×|\*|\\times|·)\s*10\^\{?(-?\d+)\}?", r"\1e\2", text)
    text = re.sub(r"(?<![\d.])10\^\{?(-?\d+)\}?", r"1e\1", text)
    text = re.sub(r"\\[dt]?frac\{\s*([\d.,]+)\s*\}\{\s*([\d.,]+)\s*\}", r"\1 / \2", text)
    return NOT_NUMBERS.sub(" ", text)


def _value(mantissa: str, exp_e, exp_10) -> tuple[float, int]:
    """(value, significant figures) of one number as written; (nan, 0) for one far outside any answer's range."""
    digits = mantissa.replace(",", "").replace("\u2009", "").replace("\u202f", "")
    exponent = int(exp_e or exp_10 or 0)
    if abs(exponent) > 40 or len(digits) > 40:
        return math.nan, 0
    value = float(digits) * 10.0 ** exponent
    figures = digits.replace(".", "").lstrip("0")
    if "." not in digits:
        figures = figures.rstrip("0")
    return value, max(len(figures), 1)


def _round(value: float, figures: int) -> float:
    if value == 0:
        return 0.0
    return round(value, figures - 1 - math.floor(math.log10(abs(value))))


def _same(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _scales(unit: str) -> tuple[float, ...]:
    """A unit prefix away (x1e±3 ... 1e±12); x100 only for a fraction, which a percentage restates."""
    return SCALES + ((100.0,) if "fraction" in unit.lower() else ())


def unit_after(unit: str) -> list[tuple[float, str]]:
    """(scale, regex) pairs: how a number scaled by ``scale`` is followed by the answer's ``unit``."""
    u = unit.lower()
    if "tb/s" in u:
        return [(1.0, r"TB/s"), (1e3, r"GB/s")]
    if "gb/s" in u:
        return [(1.0, r"GB/s"), (1e3, r"MB/s"), (1e-3, r"TB/s")]
    if u.startswith("micro"):
        return [(1.0, r"(?:µs|us|microseconds?)\b"), (1e-3, r"(?:ms|milliseconds?)\b")]
    if u.startswith("milli"):
        return [(1.0, r"(?:ms|milliseconds?)\b"), (1e-3, r"(?:s|seconds?)\b"), (1e3, r"(?:µs|us)\b")]
    if u.startswith("second"):
        return [(1.0, r"(?:s|seconds?)\b"), (1e3, r"(?:ms|milliseconds?)\b"), (1e6, r"(?:µs|us)\b")]
    if u.startswith("byte"):
        return [(1.0, r"(?:bytes|B)\b"), (1e-3, r"[kK]B\b"), (1e-6, r"MB\b"), (1e-9, r"GB\b"), (1e-12, r"TB\b")]
    if u.startswith("gb"):
        return [(1.0, r"GB\b"), (1e-3, r"TB\b"), (1e3, r"MB\b")]
    if "fraction" in u:
        return [(100.0, r"%")]
    if "ratio" in u or u.startswith("times"):  # "9x less", "9 times"; not a count such as "4x xGMI", "8x A100"
        return [(1.0, r"(?:times\b|(?:x|×)(?=\s*(?:[^\w\s]|$|faster|slower|less|more|larger|smaller|higher|lower|the\b|as\b)))")]
    word = re.match(r"[a-z-]+", u)
    return [(1.0, re.escape(word.group(0).rstrip("s")) + r"s?\b")] if word else []


def _matches(value: float, figures: int, expected: float, scope: str, unit: str, after: str) -> bool:
    """Does a number (its value, its significant figures, the text after it) give ``expected`` away?

    Scaled by a unit prefix (or x100): only with that scaled unit after it ("67.1 MB" for 67,108,864 bytes), which
    is what makes it the same quantity. Unscaled, 3 or more figures: anywhere. 2 figures: in the hints and the
    prompt; elsewhere with the answer's unit after it. 1 figure: in the hints when it is the answer itself (and
    > 2); elsewhere with the answer's unit after it.
    """
    for scale in _scales(unit):
        target = expected * scale
        if figures >= 5:
            hit = _same(value, target, 5e-5)
        elif figures == 1:  # rounding to one figure is not a form: "20 ms" is not 15.6 ms
            hit = _same(value, target)
        else:
            hit = _same(value, _round(target, figures))
        if not hit:
            continue
        with_unit = any(s == scale and re.match(r"\s*(?:" + rx + ")", after) for s, rx in unit_after(unit))
        if with_unit:
            return True
        if scale == 1.0 and (figures >= 3 or (figures == 2 and scope != "above")
                             or (figures == 1 and scope == "hints" and abs(expected) > 2)):
            return True
    return False


def leaks(text: str, expected: float, scope: str, unit: str = "") -> list[str]:
    """The places in ``text`` that give ``expected`` (in ``unit``) away in ``scope``: 'hints', 'prompt' or 'above'."""
    found = []
    clean = _clean(text)
    for m in NUMBER.finditer(clean):
        value, figures = _value(*m.groups())
        if figures and _matches(value, figures, expected, scope, unit, clean[m.end():m.end() + 16]):
            found.append(m.group(0).strip())
    for m in PRODUCT.finditer(clean):
        a, _ = _value(*m.group(1, 2, 3))
        b, _ = _value(*m.group(5, 6, 7))
        if b == 0 or math.isnan(a) or math.isnan(b):
            continue
        result = a / b if m.group(4) == "/" else a * b
        if _trivial(a, b, expected):
            continue
        figures = next((d for d in range(1, 5) if _same(result, _round(result, d))), 5)
        if figures >= 3:  # a product of measured figures: within 0.5%
            hit = any(_same(result, expected * s, 5e-3) for s in _scales(unit))
        else:             # a short result ("5 x 0.8 = 4"): the rules of a short number
            hit = _matches(result, figures, expected, scope, unit, clean[m.end():m.end() + 16])
        if hit:
            found.append(m.group(0).strip())
    if float(expected).is_integer() and int(expected) in WORDS:
        units = [rx for s, rx in unit_after(unit) if s == 1.0]
        for m in re.finditer(rf"(?i)\b{WORDS[int(expected)]}\b", text):
            after = text[m.end():m.end() + 16]
            if scope != "above" or any(re.match(r"\s*(?:" + rx + ")", after) for rx in units):
                found.append(m.group(0))
    return sorted(set(found))


def _trivial(a: float, b: float, expected: float) -> bool:
    """A product with a factor 1 (or 1000, a unit change) only restates a number: it is judged as that number."""
    return any(_same(f, s) for f in (a, b) for s in (1.0, 1e3, 1e-3, 1e6, 1e9))


# ---------------------------------------------------------------- what is searched

def _numeric(exercise_id: str):
    entry = KEY.get(exercise_id)
    value = entry.get("recorded") if isinstance(entry, dict) else entry
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _hint_texts(spec: dict) -> list[str]:
    texts = [h["hint"] for h in spec.get("hints", [])] + list(spec.get("choice_hints", {}).values())
    return texts + [spec[k] for k in ("concept", "formula") if spec.get(k)]


def _chapters():
    return [c for c in manifest.chapters() if c.exercises]


FEEDBACK = json.loads((ROOT / "solutions" / "feedback.json").read_text(encoding="utf-8"))


def _exercises(chapter) -> dict:
    """Each item's spec with its feedback (hints, choice feedback, rubric, model answer: solutions/feedback.json)."""
    specs = json.loads(chapter.exercises_path.read_text(encoding="utf-8"))
    return {i: {**s, **FEEDBACK.get(i, {})} for i, s in specs.items()}


DEMANDS = ("transfer", "plug-in", "look-up")


def _grade_id(cell) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def _answer_cell(exercise_id: str) -> str:
    chapter, _, number = exercise_id.partition(".")
    return f"ex{chapter}-{number}-answer"


def _outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        for mime in ("text/plain", "text/markdown", "text/html", "text/latex"):
            data = out.get("data", {}).get(mime)
            if data:
                parts.append(data if isinstance(data, str) else "".join(data))
    return "\n".join(parts)


def _executed(chapter, exported_course) -> nbformat.NotebookNode:
    """The student notebook as executed by the run's one export of the course (tests/conftest.py), up to its
    last answer cell (nothing below it is above an answer)."""
    nb = nbformat.read(exported_course["notebooks"][chapter.stem], as_version=4)
    last = max(i for i, c in enumerate(nb.cells) if _grade_id(c).endswith("-answer"))
    nb.cells = nb.cells[:last + 1]
    return nb


def _scopes(nb, exercise_id: str) -> dict[str, str] | None:
    """{'prompt': markdown since the previous exercise, 'above': all markdown and outputs above the answer cell}."""
    ids = [_grade_id(c) for c in nb.cells]
    if _answer_cell(exercise_id) not in ids:
        return None
    at = ids.index(_answer_cell(exercise_id))
    prompt = _prompt_of(nb, exercise_id)
    above = "\n".join(c.source if c.cell_type == "markdown" else _outputs_text(c) for c in nb.cells[:at])
    return {"prompt": prompt, "above": above}


# ---------------------------------------------------------------- tests

# The hints this test was written to catch, as they were (issue 23): they must stay caught.
OLD_LEAKS = [  # (exercise, its answer then, its unit, where, the text)
    ("00.4", 25.0, "GB/s per direction", "hints",
     "Twice too large: NDR200 is 200 Gb/s, so 25 GB/s per direction; 50 would be both directions or a full NDR port."),
    ("02.7", 6.0, "times (a ratio)", "hints",
     "Half the answer: three link-disjoint rings, but each can run in both directions (links are full duplex), "
     "giving six."),
    ("02.7", 6.0, "times (a ratio)", "hints",
     "Twice too large: all the rings together deliver the GPU's 6 x 25 = 150 GB/s per direction, against 25 GB/s "
     "for one ring."),
    ("02.7", 6.0, "times (a ratio)", "above", "Six rings reach the GPU's whole 150 GB/s per direction, six times the "
     "single ring."),
    ("01.1", 63.01538461538462, "GB/s per direction", "above", "PCIe Gen5 x16   31.51 GB/s per direction (63.02 GB/s "
     "bidirectional)"),
    ("03.1", 1800.0, "GB/s per direction", "above", "NVSwitch, 8 x H100: 1.8 TB/s per direction"),
    ("03.7", 32.4, "TB/s per direction", "above", "36 GPUs x 900 GB/s per direction = **32.4 TB/s"),
    ("05.3", 400.0, "GB/s per direction", "above", "8 x 400 Gb/s NDR: injection 400 GB/s per direction; NVLink 3.6 TB/s"),
    ("05.4", 9.0, "ratio (no unit)", "above", "On a DGX H100 the network gives each GPU **9 times less** bandwidth than NVLink"),
    ("05.4", 9.0, "ratio (no unit)", "hints", "Per GPU the network gives one NIC: 50 GB/s per direction, 450 / 50 for NVLink."),
    ("08.2", 14.0, "GPUs (a whole number)", "hints", "Round up: you need 14 GPUs."),
    ("10.1", 67108864.0, "bytes", "above", "TP1 x PP1 x EP8 x DP8 | 512 all-to-alls per step of 67.1 MB over NVLink 4"),
    ("10.2", 512.0, "all-to-alls", "above", "TP1 x PP1 x EP8 x DP8 | 512 all-to-alls per step of 67.1 MB over NVLink 4"),
    ("10.3", 0.875, "fraction", "above", "the $\\frac{56}{64}$ for the other nodes over the network"),
]


@pytest.mark.parametrize("exercise_id, expected, unit, scope, text", OLD_LEAKS)
def test_the_old_give_aways_are_caught(exercise_id, expected, unit, scope, text):
    assert leaks(text, expected, scope, unit), (exercise_id, text)


@pytest.mark.parametrize("text, expected, unit, scope, caught", [
    ("63.02 GB/s per direction", 63.01538, "GB/s", "above", True),
    ("about 63 GB/s", 63.01538, "GB/s", "above", True),
    ("about 63 lanes", 63.01538, "GB/s", "above", False),      # two figures, elsewhere: only with the unit
    ("about 63 lanes", 63.01538, "GB/s", "prompt", True),      # ... in the prompt, with or without
    ("26,000,000,000 bytes", 26e9, "bytes", "above", True),
    ("26 GB", 26e9, "bytes", "above", True),
    ("2.6 x 10^10 bytes", 26e9, "bytes", "above", True),
    ("2.6 × 10¹⁰", 26e9, "bytes", "prompt", True),
    ("2.6e10", 26e9, "bytes", "prompt", True),
    ("87.5% of it", 0.875, "fraction", "above", True),
    ("1.44 s", 1.444091796875, "seconds", "prompt", True),
    ("1444 ms", 1.444091796875, "seconds", "above", True),
    ("1.4 GHz", 1.444091796875, "seconds", "above", False),
    ("450 / 50", 9.0, "ratio", "hints", True),
    ("450 / 50 = 9x", 9.0, "ratio", "above", True),
    ("5 × 0.8 = 4 Gb/s per lane", 4.0, "ratio", "above", False),  # a short product, another unit
    ("4 × 8", 32.0, "GB/s", "prompt", True),
    ("six of them", 6.0, "times", "prompt", True),
    ("six of them", 6.0, "times", "above", False),     # words only near the question
    ("all 6 links", 6.0, "times", "prompt", False),    # a one-figure input of the prompt
    ("all 6 links", 6.0, "times", "hints", True),      # ... but in a hint it is the answer
    ("6x faster", 6.0, "times", "above", True),        # ... and anywhere with the answer's unit
    ("4x xGMI x16 links", 4.0, "times", "above", False),  # a count, not a ratio
    ("2(p-1)/p", 2.0, "times", "hints", False),        # integers <= 2 are exempt as bare digits
    ("exercise 05.3 and chapter 05", 5.3, "GB/s", "prompt", False),
    ("1.45 s", 1.444091796875, "seconds", "prompt", False),
    ("9 GB / 450 GB/s = 20 ms", 0.015555, "seconds", "above", False),  # one figure: only the value itself
    ("with 3 chips it would be", 3.0, "chips", "above", True),
    ("that is 50 ms, so about", 0.05, "seconds", "above", True),
    ("64 GB/s", 63.01538, "GB/s", "above", False),
    ("H100 x16 Gen5", 100.0, "GB/s", "hints", False),
])
def test_forms_are_found_and_names_are_not(text, expected, unit, scope, caught):
    assert bool(leaks(text, expected, scope, unit)) is caught, leaks(text, expected, scope, unit)


@pytest.mark.parametrize("chapter", _chapters(), ids=lambda c: c.number)
def test_no_hint_gives_its_answer_away(chapter):
    found = []
    for exercise_id, spec in _exercises(chapter).items():
        expected = _numeric(exercise_id)
        if expected is None:
            continue
        for text in _hint_texts(spec):
            found += [(exercise_id, hit, text) for hit in leaks(text, expected, "hints", spec.get("unit", ""))]
    assert found == []


@pytest.mark.slow
@pytest.mark.parametrize("chapter", _chapters(), ids=lambda c: c.number)
def test_no_prompt_or_anything_above_the_answer_gives_it_away(chapter, exported_course):
    nb = _executed(chapter, exported_course)
    found, searched = [], 0
    for exercise_id, spec in _exercises(chapter).items():
        expected = _numeric(exercise_id)
        scopes = _scopes(nb, exercise_id)
        if expected is None or scopes is None:
            continue
        searched += 1
        for scope, text in scopes.items():
            found += [(exercise_id, scope, hit) for hit in leaks(text, expected, scope, spec.get("unit", ""))]
    assert searched > 0 or not any(_numeric(e) is not None for e in _exercises(chapter))
    assert found == []


@pytest.mark.parametrize("chapter", _chapters(), ids=lambda c: c.number)
def test_no_rubric_or_model_answer_is_shown_before_an_attempt(chapter):
    """A written exercise's rubric and model answer reach the learner only after an attempt (checks.check)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{chapter.stem}.ipynb", as_version=4)
    student = "\n".join(c.source for c in nb.cells)
    found = []
    for exercise_id, spec in _exercises(chapter).items():
        if spec.get("kind") != "free_text":
            continue
        pieces = list(spec.get("rubric", [])) + [spec.get("model_answer", "")]
        for piece in filter(None, pieces):
            words = re.sub(r"^\d+ points?:\s*", "", piece).split()
            for i in range(0, max(len(words) - 7, 1)):
                shingle = " ".join(words[i:i + 8])
                if len(words) >= 8 and shingle in student:
                    found.append((exercise_id, shingle))
                    break
        if re.search(r"(?im)^#*\s*rubric\b|\brubric:", _prompt_of(nb, exercise_id)):
            found.append((exercise_id, "a rubric printed with the question"))
    assert found == []


def _prompt_of(nb, exercise_id: str) -> str:
    """The exercise's question: from "Exercise NN.K" in the markdown above its answer cell to that cell."""
    ids = [_grade_id(c) for c in nb.cells]
    if _answer_cell(exercise_id) not in ids:
        return ""
    at = ids.index(_answer_cell(exercise_id))
    cells = [i for i in range(at) if nb.cells[i].cell_type == "markdown"]
    named = [i for i in cells if f"Exercise {exercise_id}" in nb.cells[i].source]
    start = named[-1] if named else (cells[-1] if cells else at)
    text = "\n".join(c.source for c in nb.cells[start:at] if c.cell_type == "markdown")
    return text[text.find(f"Exercise {exercise_id}"):] if f"Exercise {exercise_id}" in text else text


def test_coverage():
    """Every numeric exercise with a key is searched: its answer cell is in its student notebook (so the
    prompt and everything above it are found), in every chapter that has exercises; 49 items when written."""
    items = []
    for chapter in _chapters():
        nb = nbformat.read(ROOT / "notebooks" / f"{chapter.stem}.ipynb", as_version=4)
        for exercise_id in _exercises(chapter):
            if _numeric(exercise_id) is not None:
                assert _scopes(nb, exercise_id) is not None, f"{exercise_id}: no answer cell {_answer_cell(exercise_id)}"
                assert _prompt_of(nb, exercise_id).startswith(f"Exercise {exercise_id}"), exercise_id
                items.append(exercise_id)
    assert len(items) >= 45 and len(FORMS) == 3 and len(SCALES) == 10 and FIGURES == (2, 3, 4)


@pytest.mark.parametrize("chapter", _chapters(), ids=lambda c: c.number)
def test_every_graded_item_is_audited_and_none_is_a_look_up(chapter):
    """Issue 23: every exercise says what it demands (docs/exercise_audit.md); no graded item is a look-up."""
    exercises = _exercises(chapter)
    assert {e: s.get("demand") for e, s in exercises.items() if s.get("demand") not in DEMANDS} == {}
    assert [e for e, s in exercises.items() if s["demand"] == "look-up"] == []
    audit = (ROOT / "docs" / "exercise_audit.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"(?m)^\| *\d\d *\| *(\d\d\.\w+) *\| *[\w-]+ *\| *([\w-]+) *\|", audit)}
    assert {e: s["demand"] for e, s in exercises.items()} == {e: rows.get(e) for e in exercises}
