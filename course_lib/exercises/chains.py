"""A chained exercise judged against the learner's own earlier answer (``"chain": {"from": id, "key": ...}``)."""
from __future__ import annotations

import math

from .keys import SealedKey
from .mistakes import hints
from .specs import raw_spec


def judge_chain(s, value: float, before: float | None, before_correct: bool, rtol: float) -> tuple[str | None, str]:
    """A chained exercise's answer judged against the learner's own earlier answer ``before``, when that
    one is wrong (``before_correct`` False).

    ``"chain": {"from": "00.1", "key": <sealed ratio later / earlier>}``: the later answer is
    proportional to the earlier one. Returns (message, "") when the answer follows from the earlier
    one (or does so up to a named mistake), else (None, a note that the earlier answer is wrong, or "").
    Neither value is revealed: the key holds only the ratio, sealed.
    """
    chain = s.get("chain")
    if not chain or before is None or "key" not in chain:
        return None, ""
    source = chain["from"]
    if not math.isfinite(before) or before == 0 or value == 0 or before_correct:
        return None, ""
    name = raw_spec(source)["variable"]
    ratio, own = SealedKey(chain["key"]), value / before
    if ratio.within(own / (1 + rtol), own / (1 - rtol)):
        return (f"Your answer follows from your answer to {source} ({name}), and that one is not right yet: "
                f"the method here is right. Fix {source}, then run this cell again."), ""
    for factor, hint in hints(s):
        if ratio.within(own / factor / (1 + rtol), own / factor / (1 - rtol)):
            return (f"{hint} (Judged against your own {source}, {name}, which is not right yet either: "
                    "fix both.)"), ""
    return None, f" (This answer builds on {source}, {name}, which is not right yet: fix that one first.)"
