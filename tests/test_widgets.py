"""Shared view helpers in course_lib.widgets."""
import pytest

from course_lib import widgets


def test_html_table_takes_a_dict_or_pairs_and_escapes():
    rows = [{"a": 1, "b": "<x>"}]
    by_dict = widgets.html_table(rows, {"A": lambda r: r["a"], "B": lambda r: r["b"]})
    by_pairs = widgets.html_table(rows, [("A", lambda r: r["a"]), ("B", lambda r: r["b"])])
    assert by_dict == by_pairs
    assert "<th>A</th>" in by_dict and "<td>1</td>" in by_dict and "&lt;x&gt;" in by_dict


@pytest.mark.parametrize("columns", [{}, [], None, {"A": 1}, [("A",)]])
def test_html_table_names_the_bad_parameter(columns):
    with pytest.raises(ValueError, match="columns"):
        widgets.html_table([], columns)
