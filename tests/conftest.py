"""Shared pytest hooks, and the SIGINT handler every test process starts with.

Screenshots: a test that calls ``record_property("screenshot", path)`` gets its path listed at the
end of the run. user_properties travel from xdist workers to the controller with each report, so
the list appears under ``make test`` (-n 2) too, where a test's own print output is hidden.

``exported_course``: the course exported (every student notebook executed) once per run, for every
test that needs an executed chapter.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
from pathlib import Path

import pytest

# A Stop is SIGINT, and the lab's tests press it. A test run started as a background job of a
# non-interactive shell (a CI runner's `cmd &`) inherits SIGINT ignored, and Python then installs no
# handler, so no Stop would ever arrive. Give each test process the default handler a learner's kernel
# has (its children get SIG_DFL on exec, as under a terminal).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

_SCREENSHOTS: list[tuple[str, str, str]] = []


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return
    for name, value in getattr(report, "user_properties", ()):
        if name == "screenshot":
            _SCREENSHOTS.append((report.nodeid, report.outcome, str(value)))


def pytest_terminal_summary(terminalreporter):
    if not _SCREENSHOTS:
        return
    terminalreporter.section("browser screenshots")
    for nodeid, outcome, path in sorted(set(_SCREENSHOTS)):
        terminalreporter.write_line(f"{outcome:<7} {path}  ({nodeid})")


# ---------------------------------------------------------------- one executed course, shared
# The slow tests that need executed student notebooks (test_export: the pages; test_answer_leaks: what
# a learner sees above each answer cell) read one export of the course, made once per test run. Under
# pytest-xdist each worker is its own process, so "once" is kept with a lock file in the folder all
# workers share (the parent of each worker's basetemp): the first worker to ask exports, the others wait
# for it and read the result. Each chapter is executed once for both, not once per test file.
def _shared_tmp(tmp_path_factory) -> Path:
    """A folder every xdist worker of this run sees (the run's basetemp without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def exported_course(tmp_path_factory) -> dict:
    """``export.export_course`` of every chapter, once per run: {'out': the HTML folder, 'pages': the pages
    as export returns them, 'notebooks': {stem: path of the executed student notebook}}."""
    import nbformat

    from course_lib import export

    shared = _shared_tmp(tmp_path_factory)
    folder, done = shared / "exported-course", shared / "exported-course" / "pages.json"
    with open(shared / "exported-course.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the export raises
        if not done.exists():
            executed = folder / "executed"
            executed.mkdir(parents=True, exist_ok=True)
            pages = export.export_course(folder / "html")
            rows = []
            for page in pages:
                nb_path = executed / f"{page['html'].stem}.ipynb"
                nbformat.write(page["notebook"], nb_path)
                rows.append({"html": str(page["html"]), "title": page["title"], "images": page["images"],
                             "slides": str(page["slides"]) if page["slides"] else None, "notebook": str(nb_path)})
            done.write_text(json.dumps(rows), encoding="utf-8")
    rows = json.loads(done.read_text(encoding="utf-8"))
    pages = [dict(row, html=Path(row["html"]), slides=Path(row["slides"]) if row["slides"] else None)
             for row in rows]
    return {"out": folder / "html", "pages": pages, "notebooks": {p["html"].stem: Path(p["notebook"]) for p in pages}}
