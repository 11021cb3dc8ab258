"""The mistakes an answer is told apart by: named slips (bits vs bytes, per direction vs bidirectional,
GB vs GiB, ...), an exercise's own factor hints, unit slips by a power of 1000, and the hint levels' text."""
from __future__ import annotations


# Named mistakes and the factor (answer / expected) that gives them away.
COMMON_MISTAKES = {
    "bits": [(8.0, "Your answer is 8x too large: did you count bits where bytes were asked? 1 byte = 8 bits."),
             (1 / 8, "Your answer is 8x too small: did you give bytes where bits were asked, or divide by 8 twice?")],
    "bidirectional": [(2.0, "Your answer is 2x too large: did you use the bidirectional total? "
                            "A transfer in one direction can use only the per-direction half."),
                      (0.5, "Your answer is half the expected value: did you halve a figure that was already per direction?")],
    "gib": [(2**30 / 1e9, "Close, but in binary units: 1 GB = 1e9 bytes, 1 GiB = 2**30 bytes. Use GB (SI)."),
            (1e9 / 2**30, "Close, but in binary units: 1 GiB = 2**30 bytes, not 1e9. Check which unit is asked for.")],
    "ms": [(1e3, "Your answer is 1000x too large: is it in milliseconds where seconds were asked?"),
           (1e-3, "Your answer is 1000x too small: is it in seconds where milliseconds were asked?")],
    "us": [(1e6, "Your answer is 1e6x too large: is it in microseconds where seconds were asked?"),
           (1e-6, "Your answer is 1e6x too small: is it in seconds where microseconds were asked?")],
    "percent": [(100.0, "Your answer is 100x too large: give a fraction (0.25), not a percentage (25)."),
                (0.01, "Your answer is 100x too small: give a percentage here, not a fraction.")],
}

# Generic unit slips, for any number exercise: a power of 1000 off (SI prefixes k, M, G, T).
PREFIXES = {3: "k (1e3)", 6: "M (1e6)", 9: "G (1e9)", 12: "T (1e12)"}
# What each named mistake is, in a few words: the third hint level's checklist.
SLIPS = {"bits": "bits vs bytes (1 byte = 8 bits)",
         "bidirectional": "a per-direction figure vs a bidirectional total (2x)",
         "gib": "GB (1e9 bytes) vs GiB (2**30 bytes)",
         "ms": "seconds vs milliseconds", "us": "seconds vs microseconds",
         "percent": "a fraction vs a percentage"}
def sentence(text: str) -> str:
    return text if text.rstrip().endswith((".", "?", "!")) else text.rstrip() + "."


def level_text(s, level: int) -> str:
    """The text of hint level 1 (idea), 2 (formula) or 3 (steps; else a checklist of this exercise's slips)."""
    concept, formula = s.get("concept"), s.get("formula")
    if level == 1:
        return concept or formula or "No written hint here: reread the section, then check an answer."
    if level == 2:
        return formula or concept or "No formula here: reread the section, then check an answer."
    if s.get("steps"):
        return s["steps"]
    slips = [SLIPS.get(name, "the spec bandwidth vs the achievable one (costmodel.efficiency)") for name in s.get("mistakes", [])]
    unit = s.get("unit")
    checklist = "; ".join(slips + ([f"the unit asked, {unit}, and each prefix on the way (k, M, G, T)"]
                                   if unit else []))
    return (f"write the formula with its symbols first, then each number with its unit, and compare term by "
            f"term. Check the usual slips: {checklist}." if checklist else
            "write each step with its unit and compare it with the section's worked example, term by term.")


def hints(s):
    """Exercise-specific hints first (they know what the quantity is), then the named mistakes, then
    the unit slips by a power of 1000 that neither already covers."""
    listed = [(float(item["factor"]), item["hint"]) for item in s.get("hints", [])]
    for name in s.get("mistakes", []):
        listed += achievable(name, s.get("unit", "")) if name.startswith("achievable:") else COMMON_MISTAKES[name]
    yield from listed
    for exponent in (9, -9, 6, -6, 3, -3, 12, -12):
        factor = 10.0 ** exponent
        if not any(abs(f / factor - 1) < 0.01 for f, _ in listed):
            yield factor, unit_slip(exponent, s.get("unit", "no unit"))


def unit_slip(exponent: int, unit: str) -> str:
    size = f"1e{abs(exponent)}"
    head = f"Your answer is {size} times too {'large' if exponent > 0 else 'small'}: a unit slip. The answer is in {unit}"
    if abs(exponent) == 9 and "GB" in unit:
        return head + (": did you leave it in bytes (or bytes/s)? 1 GB = 1e9 bytes." if exponent > 0 else
                       ": did you divide by 1e9 twice, or give GB where bytes were asked?")
    return head + ": check each prefix on the way (k = 1e3, M = 1e6, G = 1e9, T = 1e12; m = 1e-3, µ = 1e-6)."


def achievable(name: str, unit: str) -> list[tuple[float, str]]:
    """The named mistake ``achievable:<technology>``: a spec figure asked, the achievable one given (the spec
    times the course's measured efficiency, ``costmodel.efficiency``): a rate comes out x efficiency, a
    time / efficiency (``unit`` says which)."""
    from .. import costmodel

    technology = name.split(":", 1)[1]
    eff = costmodel.efficiency(technology)
    is_time = any(word in unit for word in ("second", "ms", "µs", "us"))
    factor = 1 / eff if is_time else eff
    return [(factor, f"Your answer is the {'time' if is_time else 'rate'} at the achievable bandwidth ({eff:.0%} "
                     f"of the spec on {technology}, costmodel.efficiency): this item asks for the spec bandwidth, "
                     "so leave the efficiency out.")]
