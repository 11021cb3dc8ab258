"""Progress lines for long work (issue 37.5): a terminal line redrawn in place, a log's few plain lines,
a notebook line updated in place."""
import io

import pytest

from course_lib import progress


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    return now


def test_the_line_says_items_done_share_elapsed_and_time_left(clock):
    bar = progress.Progress(12, "bench", "sizes", stream=io.StringIO(), notebook=False)
    clock[0] += 4
    bar.update(3, note="2 ranks, 4 MiB")
    assert bar.line() == f"bench  3/12 sizes |{'#' * 5}{' ' * 15}|  25% [00:04<00:12]  2 ranks, 4 MiB"
    assert progress.clock(3725) == "1:02:05" and progress.clock(59.6) == "01:00"


def test_a_terminal_gets_one_line_redrawn_and_cleared_for_other_output(clock):
    tty = _Tty()
    with progress.Progress(4, "export", "chapters", stream=tty, notebook=False) as bar:
        for _ in range(4):
            clock[0] += 1
            bar.update()
            bar.clear()
    text = tty.getvalue()
    assert text.count("\n") == 1 and text.endswith("done in 00:04\n")   # one line, left at the end
    assert "\r\033[K" in text and "4/4 chapters" in text


def test_a_log_gets_a_few_plain_lines_not_a_flood(clock):
    log = io.StringIO()
    with progress.Progress(1000, "bench", "sizes", stream=log, notebook=False) as bar:
        for _ in range(1000):
            clock[0] += 0.1   # 100 s of work
            bar.update()
    lines = log.getvalue().splitlines()
    assert 2 <= len(lines) <= 8 and "\r" not in log.getvalue(), lines
    assert lines[-1].startswith("bench  1000/1000 sizes") and "done in 01:40" in lines[-1]
    quick = io.StringIO()
    with progress.Progress(3, "bench", "sizes", stream=quick, notebook=False) as bar:
        bar.update(3)
    assert quick.getvalue() == ""   # work that ends at once says nothing in a log


def test_a_notebook_gets_one_display_updated_in_place(clock, monkeypatch):
    import IPython.display
    shown = []

    class Handle:
        def update(self, obj, **kw):
            shown.append(("update", obj["text/plain"]))
    monkeypatch.setattr(IPython.display, "display",
                        lambda obj, **kw: shown.append(("display", obj["text/plain"])) or Handle())
    with progress.Progress(2, "bench", "sizes", notebook=True) as bar:
        clock[0] += 1
        bar.update()
        clock[0] += 1
        bar.update()
    assert [kind for kind, _ in shown].count("display") == 1 and len(shown) >= 3
    assert shown[-1][1].startswith("bench  2/2 sizes") and "done in 00:02" in shown[-1][1]


@pytest.mark.parametrize("total, n", [(-1, 1), (2, -1)])
def test_bad_counts_name_the_parameter(total, n):
    with pytest.raises(ValueError, match="total|n"):
        progress.Progress(total, "x", stream=io.StringIO(), notebook=False).update(n)
