"""Self-check feedback: tolerance, rounding told apart from mistakes, hints in levels, first choice counts."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from course_lib import checks, grading

NUMERIC = [i for c in checks.chapters() for i, s in checks.exercises(c).items() if s.get("kind", "number") == "number"]
ROUNDED = "Close, but rounded"


@pytest.fixture(autouse=True)
def fresh_session():
    checks.reset()
    checks.set_mode("self-study")
    yield
    checks.reset()
    checks.set_mode("self-study")


def _round(value, figures, how):
    exponent = math.floor(math.log10(abs(value))) - figures + 1
    scaled = value / 10.0 ** exponent
    digits = {"round": round, "floor": math.floor, "ceil": math.ceil}[how](scaled)
    return float(f"{digits}e{exponent}")


def _hint_texts(spec):
    return {h for _, h in checks._hints(spec)}


def test_correct_answer_within_relative_tolerance():
    assert checks.evaluate("00.1", 26e9).correct
    assert checks.evaluate("00.1", 26.1e9).correct          # 0.4% off: inside rtol 1%
    assert not checks.evaluate("00.1", 27e9).correct        # 4% off: outside


def test_unanswered_says_so_and_does_not_raise(capsys):
    assert checks.check("00.1", None) is None
    assert checks.NOT_ANSWERED in capsys.readouterr().out
    result = checks.evaluate("00.1", None)
    assert result.status == "not answered"
    assert checks.NOT_ANSWERED in result.message
    assert checks.evaluate("00.1", ...).status == "not answered"


@pytest.mark.parametrize("answer, words", [
    (26e9 * 8, "bits"),
    (26e9 * 2**30 / 1e9, "GiB"),
    (52e9, "2 bytes"),
])
def test_common_mistakes_get_specific_hints(answer, words):
    result = checks.evaluate("00.1", answer)
    assert result.status == "wrong"
    assert words in result.message


@pytest.mark.parametrize("exercise", NUMERIC)
@pytest.mark.parametrize("figures", [2, 3])
def test_rounding_the_answer_never_names_a_mistake(exercise, figures):
    """Every numeric exercise: its answer rounded to 2 or 3 significant figures is correct or told to
    keep more figures, never diagnosed as a unit or formula mistake."""
    spec = checks.spec(exercise)
    if spec.get("integer"):
        pytest.skip("a count is exact: 140 micro-batches for 144 is a mistake (not a multiple of 8), not rounding")
    answer = _round(float(grading.expected(exercise)), figures, "round")
    result = checks.evaluate(exercise, answer)
    assert result.message not in _hint_texts(spec)
    assert result.correct or result.message.startswith(ROUNDED), (exercise, answer, result.message)


@settings(max_examples=300, deadline=None)
@given(expected=st.floats(1e-6, 1e12), figures=st.sampled_from([2, 3]),
       rtol=st.sampled_from([0.005, 0.01, 0.02, 0.03]),
       factors=st.lists(st.floats(0.5, 2.0), min_size=1, max_size=6))
def test_rounding_property_for_any_value_and_any_mistake_factors(expected, figures, rtol, factors):
    """Property of the judge itself: whatever the true value and whichever mistake factors an
    exercise lists (near 1 included, like the 1.0156 of PCIe's encoding), the value rounded to 2 or
    3 figures never gets a named mistake."""
    spec = {"unit": "units", "rtol": rtol, "hints": [{"factor": f, "hint": f"mistake {i}"} for i, f in enumerate(factors)]}
    answer = _round(expected, figures, "round")
    ok, message = checks._judge_number("99.1", spec, answer, checks.PlainKey(expected), False)
    assert ok or message.startswith(ROUNDED), (expected, answer, message)


@pytest.mark.parametrize("exercise", NUMERIC)
def test_every_named_mistake_is_still_diagnosed_at_full_precision(exercise):
    spec = checks.spec(exercise)
    expected = float(grading.expected(exercise))
    rtol = spec.get("rtol", 0.02)
    for factor, hint in checks._hints(spec):
        if abs(factor - 1) <= 2 * rtol:
            continue  # inside the tolerance: indistinguishable from a correct answer
        result = checks.evaluate(exercise, expected * factor)
        same = {h for f, h in checks._hints(spec) if abs(f / factor - 1) <= 2 * rtol}
        assert result.status == "wrong" and result.message in same, (exercise, factor, result.message)


# The feedback the issue quotes for chapter 01, on the exercises it was measured on (before the
# rebalance replaced 01.3 and 01.5): their answers and the hints that misfired (encoding, binary units).
OLD_01 = {"01.3": (0.126953125, [{"factor": 1.015625, "hint": "Close: you left out the 128b/130b encoding."}], ["bits", "gib", "ms"]),
          "01.5": (1.6503906249999998, [{"factor": 1.015625, "hint": "Close: you left out the 128b/130b encoding."}], ["bits", "ms"])}


@pytest.mark.parametrize("exercise, answer", [("01.3", 0.13), ("01.3", 0.12), ("01.5", 1.7)])
def test_chapter_01_rounded_answers_are_told_to_keep_figures(exercise, answer):
    expected, hints, mistakes = OLD_01[exercise]
    spec = {"unit": "seconds", "rtol": 0.02, "hints": hints, "mistakes": mistakes}
    ok, message = checks._judge_number(exercise, spec, answer, checks.PlainKey(expected), False)
    assert not ok and message.startswith(ROUNDED), message
    assert "encoding" not in message and "binary" not in message


def test_chapter_01_exercise_6_rounded_is_told_to_keep_figures():
    result = checks.evaluate("01.6", 1.1)  # 1.1426 s; before: "you left out the 128b/130b encoding"
    assert result.status == "wrong" and result.message.startswith(ROUNDED), result.message


def test_a_mistake_beyond_rounding_is_still_named():
    expected = grading.expected("01.6")
    assert "encoding" in checks.evaluate("01.6", expected * 130 / 128 * 1.012).message  # 4 figures: not rounding
    assert "8x too" in checks.evaluate("01.6", round(expected * 8, 2)).message          # rounding cannot explain it
    assert "encoding" in checks.evaluate("01.1", 0.1875).message  # exactly the figures of the mistake: it wins


def test_hints_come_in_levels_and_never_with_numbers():
    first = checks.evaluate("02.3", 17.0, record=True).message
    second = checks.evaluate("02.3", 17.0, record=True).message
    spec = checks.spec("02.3")
    assert spec["concept"] in first and spec["formula"] not in first
    assert spec["formula"] in second
    for exercise in NUMERIC:
        s = checks.spec(exercise)
        assert s.get("concept") and s.get("formula") and s["concept"] != s["formula"], exercise
        expected = float(grading.expected(exercise))
        for level in ("concept", "formula"):
            for shown in (f"{expected:.3g}", f"{expected:.4g}", f"{expected:g}"):
                assert len(shown.strip("0.")) < 2 or shown not in s[level], f"{exercise} {level} gives {shown}"


def test_choice_exercise_and_first_answer_counts(capsys):
    assert checks.evaluate("00.3", "c").correct
    assert "18 links" in checks.evaluate("00.3", "A").message
    assert "one of" in checks.evaluate("00.3", "Q").message
    checks.check("00.3", "A")
    checks.check("00.3", "C")
    results = checks.check_all({"wrong_claim": "C"}, chapter="00")
    (choice,) = [r for r in results if r.exercise == "00.3"]
    assert choice.points == 0 and "first answer (A)" in choice.message


def test_graded_mode_records_a_choice_without_feedback():
    checks.set_mode("graded")
    result = checks.evaluate("00.3", "A", record=True)
    assert result.status == "recorded" and "first answer counts" in result.message


def test_grade_raises_only_when_wrong():
    checks.grade("00.4", 25)
    with pytest.raises(AssertionError, match="too large"):
        checks.grade("00.4", 200)
    with pytest.raises(AssertionError, match="not answered"):
        checks.grade("00.4", None)


def test_check_all_scores_a_namespace(capsys):
    results = checks.check_all({"grad_bytes_13b": 26e9, "wrong_claim": "B"}, chapter="00")
    out = capsys.readouterr().out
    assert len(results) == len([s for s in checks.exercises("00").values() if s.get("kind") != "free_text"])
    assert "Score: 1 / " in out


def test_callable_exercise_unanswered(monkeypatch):
    def stub(*args):
        raise NotImplementedError()
    spec = {"kind": "callable", "checker": "tests.helpers_checks:always_call", "points": 2, "variable": "f"}
    monkeypatch.setattr(checks, "spec", lambda _id: spec)
    assert checks.evaluate("99.1", stub).status == "not answered"
    assert checks.evaluate("99.1", lambda: 1).correct
    assert checks.evaluate("99.1", 5).status == "wrong"


def test_significant_figures():
    assert [checks.significant_figures(v) for v in (0.13, 1.7, 290, 288, 0.1269, 63.0, 2e9)] == [2, 2, 2, 3, 4, 2, 1]
    assert checks.last_figure(0.13) == pytest.approx(0.01) and checks.last_figure(0.1269) is None
    assert checks.last_figure(0.1) == pytest.approx(0.01)  # typed 0.10: a float keeps no trailing zero


@pytest.mark.parametrize("call, name", [
    (lambda: checks.spec("001"), "exercise_id"),
    (lambda: checks.spec("00.99"), "exercise_id"),
    (lambda: checks.spec("77.1"), "chapter"),
    (lambda: checks.exercises("zz"), "chapter"),
    (lambda: checks.check_all([1, 2]), "namespace"),
    (lambda: checks.set_mode("exam"), "mode"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_every_chapter_tests_more_than_computation():
    """Issue 17 item 1: every exercise names its skill; in every chapter at least 40% of the graded
    points test more than computation (scripts/exercise_skills.py prints the table)."""
    import runpy
    from pathlib import Path

    skills = runpy.run_path(str(Path(__file__).resolve().parent.parent / "scripts" / "exercise_skills.py"))
    rows = skills["table"]()
    assert {r["chapter"] for r in rows} == set(checks.chapters())
    low = {r["chapter"]: round(r["beyond"], 2) for r in rows if r["beyond"] < 0.4}
    assert low == {}, low


def test_written_answers_show_the_model_answer_only_after_an_attempt():
    spec = checks.spec("03.8")
    assert checks.evaluate("03.8", None).status == "not answered"
    short = checks.evaluate("03.8", "the switch")
    assert short.status == "not answered" and spec["model_answer"] not in short.message
    attempt = " ".join(["the switch gives each pair all its links"] * 3)
    shown = checks.evaluate("03.8", attempt)
    assert shown.status == "recorded" and spec["model_answer"] in shown.message and spec["rubric"][0] in shown.message
