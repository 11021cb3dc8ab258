"""Self-check and grader agree on every real numeric type (issue 35, item 7 of Build): Decimal, Fraction,
np.longdouble and the other numpy scalars, 0-d arrays and tensors are reported as the self-check reads them."""
import contextlib
import decimal
import fractions
import io

import numpy as np
import pytest
import torch

from course_lib import checks, gradebook, grading

NUMBER_IDS = [i for i, s in checks.exercises("01").items() if s.get("kind", "number") == "number"][:2]
TYPES = {"Decimal": lambda x: decimal.Decimal(repr(x)),
         "Fraction": lambda x: fractions.Fraction(x), "longdouble": np.longdouble, "float32": np.float32,
         "0-d array": lambda x: np.array(x, dtype=np.float64), "tensor": lambda x: torch.tensor(x),
         "numeric str": repr}


def _reported(exercise_id, answer) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        grading.report(exercise_id, answer)
    return out.getvalue()


@pytest.mark.parametrize("exercise_id", NUMBER_IDS)
@pytest.mark.parametrize("kind", list(TYPES))
@pytest.mark.parametrize("scale", [1.0, 1.5])  # right, and 50% off: both sides must agree either way
def test_self_check_and_grader_agree(exercise_id, kind, scale):
    answer = TYPES[kind](float(grading.expected(exercise_id)) * scale)
    self_check = checks.evaluate(exercise_id, answer).status == "correct"
    points, max_points, _ = grading.judge_reported(exercise_id, _reported(exercise_id, answer))
    assert self_check == (points == max_points), (kind, answer, points)
    assert self_check == (scale == 1.0)


def test_complex_and_objects_still_score_nothing():
    exercise_id = NUMBER_IDS[0]
    for answer in (complex(float(grading.expected(exercise_id)), 1.0), object(), [1.0]):
        assert grading.judge_reported(exercise_id, _reported(exercise_id, answer))[0] == 0


def test_progress_detail_in_points():
    items = [{"status": gradebook.GRADED, "score": "0", "max_score": "8"},
             {"status": gradebook.MANUAL, "score": "", "max_score": "2"}]
    assert gradebook.progress_detail(items) == "8 of 10 points graded (score 0); 2 points await manual grading"
