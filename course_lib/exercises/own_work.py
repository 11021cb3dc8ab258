"""A code exercise is the learner's own work: the library's implementation of the same thing may not run
inside the learner's function (chapter 04's ring calling ``lab.algorithms.ring_all_reduce``, 05.6 calling
``costmodel.two_level_all_reduce``, 10.7 calling ``lab.algorithms.direct_all_to_all``).

Watched by code object through ``sys.setprofile``, so a renamed import or a saved reference is seen too.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager


@contextmanager
def forbidding(functions):
    """While the block runs, note each of ``functions`` that is called (yields the list of their names)."""
    codes = {f.__code__: f"{f.__module__.removeprefix('course_lib.')}.{f.__qualname__}" for f in functions}
    used: list[str] = []
    previous = sys.getprofile()

    def watch(frame, event, arg):
        if event == "call" and frame.f_code in codes and codes[frame.f_code] not in used:
            used.append(codes[frame.f_code])
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(watch)
    try:
        yield used
    finally:
        sys.setprofile(previous)


def refusal(used: list[str], what: str) -> str | None:
    """Why the answer scores nothing when it called the library's own ``what`` (else None)."""
    if not used:
        return None
    return (f"your function calls {used[0]}, the library's own {what}: the exercise is to write it yourself "
            "(helpers such as lab.algorithms.chunk_bounds are fine)")


def ring_library() -> tuple:
    """The library's all-reduce implementations and their halves (chapter 04's ring may use none of them)."""
    from ..lab import algorithms as a

    return (a.naive_all_reduce, a.ring_reduce_scatter, a.ring_all_gather, a.ring_all_reduce, a._reduce_scatter,
            a._all_gather, a.halving_doubling_all_reduce, a.binomial_tree_all_reduce, a.all_reduce)


def all_to_all_library() -> tuple:
    """The library's all-to-all implementations (10.7's may use neither)."""
    from ..lab import algorithms as a

    return (a.direct_all_to_all, a.all_to_all)
