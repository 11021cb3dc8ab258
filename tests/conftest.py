"""Shared pytest hooks.

Screenshots: a test that calls ``record_property("screenshot", path)`` gets its path listed at the
end of the run. user_properties travel from xdist workers to the controller with each report, so
the list appears under ``make test`` (-n 2) too, where a test's own print output is hidden.
"""
from __future__ import annotations

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
