"""Golden outputs: the CLI and every explorer print what tests/golden/*.txt recorded.

A refactor keeps these green. A deliberate change to a number re-records the files
(``python tests/golden/record.py``) in a commit that says what moved and why.
"""
import difflib
import importlib.util
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("golden_record", GOLDEN / "record.py")
record = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(record)


@pytest.fixture(scope="module")
def outputs():
    return record.outputs()


@pytest.mark.parametrize("name", ["catalog.txt", "predict.txt", "validation.txt", "plan.txt", "explorers.txt"])
def test_golden_output_unchanged(outputs, name):
    expected = (GOLDEN / name).read_text()
    actual = outputs[name]
    if actual != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                                 f"golden/{name}", "now", n=1))[:60])
        pytest.fail(f"{name} differs from the golden output (re-record only on purpose):\n{diff}")
