"""The course's data files, ``course_lib/data/*.json``: one reader for every module that needs one."""
from __future__ import annotations

import json
from importlib import resources


def load(name: str) -> dict:
    """The parsed JSON file ``course_lib/data/<name>``, e.g. ``load("hardware.json")``."""
    return json.loads(resources.files("course_lib").joinpath(f"data/{name}").read_text(encoding="utf-8"))
