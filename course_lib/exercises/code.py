"""Judging a function the learner wrote: the item's ``checker`` (``"module:function"``) runs it."""
from __future__ import annotations

import importlib


def judge_callable(s, answer):
    """(ok, message) from the item's ``checker``; NotImplementedError when the function is a stub."""
    if not callable(answer):
        return False, "Expected a function."
    module_name, _, func_name = s["checker"].partition(":")
    checker = getattr(importlib.import_module(module_name), func_name)
    outcome = checker(answer)  # returns (ok, message) or raises NotImplementedError when unanswered
    return bool(outcome[0]), str(outcome[1])
