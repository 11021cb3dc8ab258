"""Shared pytest hooks, and the SIGINT handler every test process starts with.

Screenshots: a test that calls ``record_property("screenshot", path)`` gets its path listed at the
end of the run. user_properties travel from xdist workers to the controller with each report, so
the list appears under ``make test`` (-n 2) too, where a test's own print output is hidden.
"""
from __future__ import annotations

import signal

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
