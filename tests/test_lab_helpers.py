"""Helpers for the lab tests: counting child processes (``course_lib.lab.launch.live_children``)."""
from course_lib.lab.launch import live_children  # noqa: F401  (re-exported for the lab tests)
