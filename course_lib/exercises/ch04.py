"""Chapter 04 (collectives lab): the checker of exercise 04.4, the learner's ring all-reduce.

The grading itself is the lab's (:func:`course_lib.exercises.ring.check_ring`, which ``lab.bench.race`` uses
too); this adapts it to the ``callable`` exercise kind.
"""
from __future__ import annotations

from .ring import RANKS, check_ring


def ring_checker(fn, ranks=RANKS, timeout: float = 30) -> tuple[bool, str]:
    """Checker for a ``callable`` exercise (``checks`` kind): ``(ok, message)`` from ``check_ring``.

    Raises ``NotImplementedError`` when the ring is not answered yet (a stub that raises it,
    or None), so ``checks.check`` reports *not answered yet*; ranks and timeout as in ``check_ring``.
    """
    result = check_ring(fn, ranks=ranks, timeout=timeout, verbose=False)
    if result.status == "not answered":
        raise NotImplementedError(result.message)
    return result.correct, result.message
