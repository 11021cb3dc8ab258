"""The checker of the learner's ring all-reduce (chapter 04; its exercise adapter is :mod:`course_lib.exercises.ch04`).

The learner writes, in a notebook cell::

    def my_ring(tensor, rank, world_size):
        # sum ``tensor`` over all ranks, in place, with dist.send/recv/isend/irecv
        raise NotImplementedError

and calls ``course_lib.exercises.ring.check_ring(my_ring)``. The function runs on 2 and 3 ranks (forked
children, so a notebook function works) over awkward sizes (1 element, primes, sizes not
divisible by the rank count) and dtypes (float32, float64, int32, int64). It checks how the result
was made, not only what it is: while the function runs, the bytes torch.distributed's point-to-point
sends carry are counted and its built-in collectives flagged, so
``dist.all_reduce`` itself, or a copy of the expected sum with no communication, scores nothing. Inputs are small
integers, so any correct summation order gives exact bits. All ranks agree after each case
(a built-in all-reduce of a flag) and stop together at the first failure, so a wrong answer
is reported, not hung. ``check_ring`` prints feedback and returns a ``RingCheck``; it never
raises for a wrong answer. ``grade_ring`` raises ``AssertionError`` unless correct (hidden tests).
"""
from __future__ import annotations

import io
import re
import sys
from dataclasses import dataclass

from .. import collectives, validate
from ..lab.traffic import Traffic
from . import own_work

NOT_ANSWERED = "not answered yet"
# Even sizes first (12 splits evenly over 2 and 3 ranks), then the awkward ones: which cases pass tells
# a size bug (passes 12, 64) from a chunk or dtype bug (fails at once), from the data, not a guess.
SIZES = (12, 64, 1000, 1, 3, 5, 7, 13, 4099, 65537)
DTYPES = ("float32", "float64", "int32", "int64")
RANKS = (2, 3)


@dataclass(frozen=True)
class RingCheck:
    """``status``: 'correct', 'wrong', 'error', 'timeout' or 'not answered'; ``case`` the failing case."""

    status: str
    message: str
    case: dict | None = None

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        return self.message

    def _repr_markdown_(self) -> str:  # a notebook shows the message, not the dataclass
        return self.message


def _inputs(size, dtype, rank):
    import torch

    g = torch.Generator().manual_seed(7919 * size + 31 * rank + len(dtype))
    return torch.randint(-1000, 1000, (size,), generator=g).to(getattr(torch, dtype))


def _expected(size, dtype, world_size):
    import torch

    total = sum(_inputs(size, dtype, r).to(torch.int64) for r in range(world_size))
    return total.to(getattr(torch, dtype))


def ring_bytes(size, itemsize, world_size) -> int:
    """Bytes all ranks together must send in a ring all-reduce: each chunk travels p-1 hops, twice. In each of
    the registry's ring steps (``collectives``, 2(p-1)) the p ranks send one 1/p chunk each: one whole buffer."""
    return int(collectives.get("all_reduce").algorithm("ring").steps(world_size)) * size * itemsize


def _check_worker(rank, world_size, fn, cases, progress):
    import torch
    import torch.distributed as dist

    library = own_work.ring_library()
    for index, case in enumerate(cases):
        with open(f"{progress}.{rank}", "w") as mark:   # the case a crash happened in, for the report
            mark.write(str(index))
        size, dtype = case["size"], case["dtype"]
        tensor = _inputs(size, dtype, rank)
        original = tensor
        with Traffic(tensor, f"{progress}.{rank}.note") as traffic, own_work.forbidding(library) as used:
            result = fn(tensor, rank, world_size)  # NotImplementedError ends the run: "not answered"
        failure = traffic.refusal("the data") or own_work.refusal(used, "all-reduce")
        if failure is None and (original.data_ptr() != tensor.data_ptr() or original.shape != (size,)):
            failure = "the tensor was replaced or resized; all-reduce must work in place"
        if failure is None and isinstance(result, torch.Tensor) and not torch.equal(result, tensor):
            failure = "you returned a tensor but left the input unchanged; sum into the input tensor in place"
        sent = traffic.total_sent()
        wrong = failure is None and bool((tensor != _expected(size, dtype, world_size)).any())
        needed = ring_bytes(size, tensor.element_size(), world_size)
        if failure is None and not wrong and sent < needed:
            failure = (f"all ranks together sent {sent} bytes point to point, but a ring all-reduce "
                       f"of {size} element(s) on {world_size} ranks must send {needed}: the sum has to travel "
                       "between the ranks, with send/recv")
        flag = torch.tensor([0 if failure is None and not wrong else 1], dtype=torch.int64)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            holds = _holdings(tensor, size, dtype, rank, world_size)
            holds["sends"] = [_sent(offset, numel, data, size, dtype, world_size) for offset, numel, data in traffic.sends]
            return {"status": "wrong", "index": index, "case": case, "detail": failure, "holds": holds}
    return {"status": "correct"}


def _weights(data, start, stop, inputs):
    """The multiple of each rank's input elements [start, stop) that ``data`` equals (weights 0, 1, 2), or None."""
    import itertools

    import torch

    if stop > len(inputs[0]) or len(data) != stop - start:
        return None
    data = data.to(torch.float64)
    for weights in sorted(itertools.product((0, 1, 2), repeat=len(inputs)), key=sum):
        if torch.equal(sum(w * x[start:stop] for w, x in zip(weights, inputs)), data):
            return list(weights)
    return None


def _rank_inputs(size, dtype, world_size):
    import torch
    return [_inputs(size, dtype, r).to(torch.float64) for r in range(world_size)]


def _holdings(tensor, size, dtype, rank, world_size) -> dict:
    """What one rank's tensor holds after the learner's function, from the data: per chunk (the
    chapter's ``chunk_bounds``) the multiple of each rank's input it equals, and the first wrong element."""
    import torch

    from ..lab.algorithms import chunk_bounds

    got = tensor.to(torch.float64)
    inputs = _rank_inputs(size, dtype, world_size)
    expected = sum(inputs)
    chunks = [_weights(got[a:b], a, b, inputs) if b > a else "empty" for a, b in chunk_bounds(size, world_size)]
    bad = (got != expected).nonzero().view(-1)
    first = None
    if bad.numel():
        i = int(bad[0])
        first = {"index": i, "expected": _show(expected[i]), "got": _show(tensor[i])}
    return {"rank": rank, "chunks": chunks, "first": first, "wrong": int(bad.numel())}


def _sent(offset, numel, data, size, dtype, world_size) -> dict:
    """One logged send: the chunk of the input it was (by position), and what it carried (by content)."""
    from ..lab.algorithms import chunk_bounds

    bounds = chunk_bounds(size, world_size)
    chunk = next((k for k, (a, b) in enumerate(bounds) if offset is not None and (a, b) == (offset, offset + numel)),
                 None)
    inputs = _rank_inputs(size, dtype, world_size)
    if chunk is not None:
        weights = _weights(data, *bounds[chunk], inputs)
    else:  # a separate buffer: which chunk's elements does it carry?
        weights = next((w for a, b in bounds if b - a == numel and (w := _weights(data, a, b, inputs))), None)
    return {"chunk": chunk, "weights": weights}


def _show(value) -> str:
    number = value.item()
    return f"{number:g}" if isinstance(number, float) else str(number)


def _cases():
    return [{"size": s, "dtype": d} for s in SIZES for d in DTYPES]


def _inputs_of(ranks) -> str:
    return f"rank {ranks[0]}'s input" if len(ranks) == 1 else "the inputs of ranks " + " and ".join(map(str, ranks))


def _short(weights) -> str:
    if weights == "empty":
        return "-"
    if weights is None:
        return "?"
    terms = [("2*" if w == 2 else "") + f"r{r}" for r, w in enumerate(weights) if w]
    return "+".join(terms) or "0"


def _words(weights) -> str:
    """A sum of inputs in words: 'the full sum', "rank 1's input alone", 'the sum of ranks 0 and 2'."""
    if weights is None:
        return "no sum of the ranks' inputs (memory never written, e.g. from torch.empty, or another chunk's data)"
    if weights == "empty":
        return "nothing (empty)"
    present = [r for r, w in enumerate(weights) if w]
    twice = [r for r, w in enumerate(weights) if w == 2]
    if twice:
        return f"a sum that counts {_inputs_of(twice)} twice"
    if len(present) == len(weights):
        return "the full sum"
    if len(present) == 1:
        return f"{_inputs_of(present)} alone"
    return "the sum of ranks " + " and ".join(map(str, present)) + " only" if present else "zeros"


def _chapter_sends(rank, p, size) -> list[tuple]:
    """The sends of the chapter's ring on ``rank``: (phase, step, chunk, the ranks its content sums),
    empty chunks skipped."""
    from ..lab.algorithms import chunk_bounds

    bounds = chunk_bounds(size, p)
    plan = [("reduce-scatter", s, (rank - s - 1) % p, {(rank - j) % p for j in range(s + 1)}) for s in range(p - 1)]
    plan += [("all-gather", s, (rank - s) % p, set(range(p))) for s in range(p - 1)]
    return [step for step in plan if bounds[step[2]][1] > bounds[step[2]][0]]


def _diagnosis(case, p, rows, passed) -> str:
    """The hint, chosen from the data: which cases passed, and each send's chunk and content against
    the chapter's ring (reduce-scatter step s sends chunk (r-s-1) mod p, all-gather step s chunk (r-s) mod p)."""
    size, dtype = case["size"], case["dtype"]
    same_size = sorted({c["dtype"] for c in passed if c["size"] == size})
    if same_size:
        return (f"The same size passed in {', '.join(same_size)} and fails in {dtype}: the dtype is the "
                "difference. Receive into a buffer of the input's dtype (torch.empty_like(chunk), or "
                "dtype=tensor.dtype).")
    sizes = sorted({c["size"] for c in passed})
    if sizes and (size < p or size % p):
        why = "leave some chunks empty" if size < p else "do not split evenly"
        return (f"It passed every case before this one (sizes {', '.join(map(str, sizes))}), and {size} "
                f"element(s) on {p} ranks {why}: take the chunk boundaries from lab.algorithms.chunk_bounds "
                "on every rank, and skip sending and receiving empty chunks.")
    plans = {row["rank"]: _chapter_sends(row["rank"], p, size) for row in rows}
    for k in range(max(len(plan) for plan in plans.values())):
        for row in rows:
            plan, sends = plans[row["rank"]], row["sends"]
            if k >= len(plan) or k >= len(sends):
                continue
            phase, step, chunk, who = plan[k]
            sent, r = sends[k], row["rank"]
            where = f"Rank {r}'s send {k + 1} ({phase} step {step})"
            if sent["chunk"] is not None and sent["chunk"] != chunk:
                formula = "(r-s-1)" if phase == "reduce-scatter" else "(r-s)"
                off = (sent["chunk"] - chunk) % p
                return (f"{where} carried chunk {sent['chunk']}; in the chapter's order it is chunk {chunk} = "
                        f"{formula} mod p" + (": a chunk index one off." if off in (1, p - 1) else "."))
            wanted = [1 if j in who else 0 for j in range(p)]
            if sent["weights"] != wanted:
                stored = (sent["weights"] is not None and sum(1 for w in sent["weights"] if w) < len(who)
                          and all(w < 2 for w in sent["weights"]))
                return (f"{where}, chunk {chunk}, carried {_words(sent['weights'])}; by then it should carry "
                        f"{_words(wanted)}" + (": a received chunk was stored where the reduce-scatter must add "
                                               "it (+=)." if stored else "."))
    for row in rows:
        if len(row["sends"]) != len(plans[row["rank"]]):
            return (f"Rank {row['rank']} made {len(row['sends'])} send(s); the ring makes "
                    f"{len(plans[row['rank']])} here (2(p-1), empty chunks skipped).")
    return ("Every send carried the right chunk with the right sum; the receives go to the wrong place: at step "
            "s rank r adds into chunk (r-s-2) mod p in the reduce-scatter and stores chunk (r-s-1) mod p in the "
            "all-gather.")


def _wrong_message(p, outcome, cases) -> tuple[str, dict]:
    rows = sorted((o["holds"] for o in outcome), key=lambda h: h["rank"])
    first = outcome[0]
    case = dict(first["case"], ranks=p)
    head = f"Not yet: on {p} ranks with {case['size']} element(s) of {case['dtype']}, "
    detail = next((o["detail"] for o in outcome if o["detail"]), None)
    if detail:  # how the result was made, not what it is: no hint about sizes
        return head + detail + ".", case
    bad = next(row for row in rows if row["first"])
    from ..lab.algorithms import chunk_bounds

    bounds = chunk_bounds(case["size"], p)
    i = bad["first"]["index"]
    k = next(c for c, (a, b) in enumerate(bounds) if a <= i < b)
    a, b = bounds[k]
    span = f"element {a}" if b - a == 1 else f"elements {a}-{b - 1}"
    text = (head + f"rank {bad['rank']} has {bad['wrong']} wrong element(s); the first is element {i} "
            f"(chunk {k}, {span}): expected {bad['first']['expected']}, got {bad['first']['got']}. "
            f"That chunk holds {_words(bad['chunks'][k])}.\n"
            "What each rank holds, chunk by chunk (rN = rank N's input): "
            + "; ".join(f"rank {row['rank']}: [{', '.join(_short(w) for w in row['chunks'])}]" for row in rows)
            + ".\nHint: " + _diagnosis(case, p, rows, cases[:first["index"]]))
    return text, case


def _own_error(err, output: str) -> str:
    """The failed rank's own words: its Python exception, or what the C++ library printed before the
    process died (gloo's enforce messages end in ``what(): ...``)."""
    if "died from" not in err.cause:
        return err.cause
    prefix = f"[rank {err.rank}] "
    lines = [line[len(prefix):].strip() for line in output.splitlines() if line.startswith(prefix)]
    said = [line for line in lines if "what():" in line or "terminate called" in line
            or "Error" in line or "error" in line]
    if not said:
        return err.cause
    text = said[-1].split("what():", 1)[-1].strip()
    text = re.sub(r"^\[enforce fail at [^\]]*\]\s*", "", text).rstrip(".")
    return f"{err.cause}; before it died it printed: \"{text}\""


def check_ring(fn, ranks=RANKS, timeout: float = 30, verbose: bool = True) -> RingCheck:
    """Run the learner's ``fn(tensor, rank, world_size) -> None`` on each rank count in ``ranks``.

    ``ranks``: rank counts in [2, 8]; ``timeout`` in (0, 600] s per rank count. Prints feedback
    when ``verbose`` and returns a ``RingCheck``. A function that raises ``NotImplementedError``
    is 'not answered'. A wrong result names the case (ranks, size, dtype), the rank, the chunk and the
    first wrong element (expected vs got) and what each rank's chunks hold; a crash shows the rank's
    own error text.
    """
    import contextlib
    import shutil
    import tempfile

    from ..lab.launch import RankError, RankTimeout, run

    if fn is None or fn is NotImplemented or fn is Ellipsis:
        return _say(RingCheck("not answered", f"Ring all-reduce: {NOT_ANSWERED}."), verbose)
    if not callable(fn):
        raise ValueError(f"fn must be a function (tensor, rank, world_size) -> None, got {fn!r}")
    if isinstance(ranks, int):
        ranks = (ranks,)
    ranks = [validate.integer("ranks", r, low=2, high=8) for r in ranks]
    timeout = validate.number("timeout", timeout, low=0.0, high=600.0, low_inclusive=False)
    cases = _cases()
    for p in ranks:
        scratch = tempfile.mkdtemp(prefix="course_ring_")
        output = _Tee(verbose)
        try:
            with contextlib.redirect_stdout(output):
                outcome = run(_check_worker, ranks=p, timeout=timeout, args=(fn, cases, f"{scratch}/case"),
                              start_method="fork", echo=True)
        except RankTimeout:
            return _say(RingCheck("timeout", (
                f"Ring all-reduce on {p} ranks did not finish within {timeout:g} s. A deadlock? "
                "If every rank calls a blocking send before its receive, large messages wait "
                "forever: post the receive with irecv (or use isend) and wait on both.")), verbose)
        except RankError as err:
            if err.cause.startswith("NotImplementedError"):
                return _say(RingCheck("not answered", f"Ring all-reduce: {NOT_ANSWERED}."), verbose)
            index = _case_index(scratch, err.rank)
            if index is None:
                return _say(RingCheck("error", f"Ring all-reduce on {p} ranks failed: rank {err.rank} "
                                               f"raised {_own_error(err, output.text())}"), verbose)
            case = dict(cases[index], ranks=p)
            same_size = sorted({c["dtype"] for c in cases[:index] if c["size"] == case["size"]})
            hint = (f" Hint: the same size passed in {', '.join(same_size)}: the dtype is the difference. "
                    "Receive into a buffer of the input's dtype (torch.empty_like(chunk), or dtype=tensor.dtype)."
                    if same_size else "")
            return _say(RingCheck("error", (
                f"Ring all-reduce on {p} ranks failed with {case['size']} element(s) of {case['dtype']}: "
                f"rank {err.rank} {'raised' if 'died from' not in err.cause else 'failed:'} "
                f"{_own_error(err, output.text())}.{_note(scratch, err.rank)}{hint}"), case), verbose)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        wrong = [o for o in outcome if o["status"] != "correct"]
        if not wrong:
            continue
        message, case = _wrong_message(p, wrong, cases)
        return _say(RingCheck("wrong", message, case), verbose)
    return _say(RingCheck("correct", f"Correct: your ring all-reduce matches dist.all_reduce on "
                                     f"{', '.join(map(str, ranks))} ranks for {len(cases)} "
                                     "sizes x dtypes."), verbose)


def _note(scratch, rank) -> str:
    """What the rank's own logging saw before it failed (a receive into a buffer of another dtype)."""
    try:
        with open(f"{scratch}/case.{rank}.note") as note:
            lines = note.read().splitlines()
    except OSError:
        return ""
    return f" Rank {rank} {lines[0]}." if lines else ""


def _case_index(scratch, rank) -> int | None:
    try:
        with open(f"{scratch}/case.{rank}") as mark:
            return int(mark.read())
    except (OSError, ValueError):
        return None


class _Tee(io.TextIOBase):
    """Keeps what the launcher prints of the ranks' output (their own error text), passing it on when
    ``verbose``."""

    def __init__(self, verbose):
        self.parts, self.target = [], sys.stdout if verbose else None

    def write(self, text):
        self.parts.append(text)
        if self.target is not None:
            self.target.write(text)
        return len(text)

    def flush(self):
        if self.target is not None:
            self.target.flush()

    def text(self) -> str:
        return "".join(self.parts)


def grade_ring(fn, ranks=RANKS, timeout: float = 30) -> None:
    """Raise ``AssertionError`` with the feedback unless ``check_ring`` says correct (for hidden tests)."""
    result = check_ring(fn, ranks=ranks, timeout=timeout, verbose=False)
    if not result.correct:
        raise AssertionError(result.message)


def _say(result: RingCheck, verbose: bool) -> RingCheck:
    if verbose:
        print(result.message)
    return result
