"""Checkers for the learner's ring all-reduce (chapter 04) and pairwise all-to-all (chapter 10).

The learner writes, in a notebook cell::

    def my_ring(tensor, rank, world_size):
        # sum ``tensor`` over all ranks, in place, with dist.send/recv/isend/irecv
        raise NotImplementedError

and calls ``lab.exercises.check_ring(my_ring)``. The function runs on 2 and 3 ranks (forked
children, so a notebook function works) over awkward sizes (1 element, primes, sizes not
divisible by the rank count) and dtypes (float32, float64, int32, int64). It checks how the result
was made, not only what it is: while the function runs, the bytes torch.distributed's point-to-point
sends carry are counted and its built-in collectives flagged, so
``dist.all_reduce`` itself, or a copy of the expected sum with no communication, scores nothing. Inputs are small
integers, so any correct summation order gives exact bits. All ranks agree after each case
(a built-in all-reduce of a flag) and stop together at the first failure, so a wrong answer
is reported, not hung. ``check_ring`` prints feedback and returns a ``RingCheck``; it never
raises for a wrong answer. ``grade_ring`` raises ``AssertionError`` unless correct (hidden tests).

``all_to_all_checker(fn)`` grades chapter 10's ``fn(output, input, rank, world_size)`` against
``all_to_all_single`` on 2 and 3 ranks, on the bench's all-to-all inputs (``bench.COLLECTIVES``).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import validate

NOT_ANSWERED = "not answered yet"
SIZES = (1, 2, 3, 5, 7, 13, 64, 1000, 4099, 65537)
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


P2P_SEND = ("send", "isend")
# Built-in collectives: calling one inside the learner's function scores nothing.
COLLECTIVES = ("all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
               "reduce_scatter_tensor", "broadcast", "all_to_all", "all_to_all_single", "scatter", "gather",
               "all_reduce_coalesced", "all_gather_object", "broadcast_object_list")


class _Traffic:
    """Counts the bytes this rank sends point to point, and any built-in collective called,
    by wrapping torch.distributed's functions (in the forked child only) while the learner's code runs."""

    def __init__(self):
        import torch.distributed as dist
        import torch.distributed.distributed_c10d as c10d

        self.modules = (dist, c10d)
        self.sent = 0
        self.collectives = []
        self.saved = []

    def _wrap(self, name, original):
        def counted(tensor, *args, **kwargs):
            self.sent += tensor.numel() * tensor.element_size()
            return original(tensor, *args, **kwargs)

        def refused(*args, **kwargs):
            self.collectives.append(name)
            return original(*args, **kwargs)

        return counted if name in P2P_SEND else refused

    def __enter__(self):
        for module in self.modules:
            for name in P2P_SEND + COLLECTIVES:
                original = getattr(module, name, None)
                if original is not None:
                    self.saved.append((module, name, original))
                    setattr(module, name, self._wrap(name, original))
        return self

    def __exit__(self, *exc):
        for module, name, original in reversed(self.saved):
            setattr(module, name, original)
        self.saved = []
        return False


def ring_bytes(size, itemsize, world_size) -> int:
    """Bytes all ranks together must send in a ring all-reduce: each chunk travels p-1 hops, twice."""
    return 2 * (world_size - 1) * size * itemsize


def _check_worker(rank, world_size, fn, cases):
    import torch
    import torch.distributed as dist

    for case in cases:
        size, dtype = case["size"], case["dtype"]
        tensor = _inputs(size, dtype, rank)
        original = tensor
        failure = None
        with _Traffic() as traffic:
            result = fn(tensor, rank, world_size)  # NotImplementedError ends the run: "not answered"
        if traffic.collectives:
            failure = (f"your function called dist.{traffic.collectives[0]}, a built-in collective; "
                       "the exercise is to move the data yourself with send/recv (or isend/irecv)")
        elif original.data_ptr() != tensor.data_ptr() or original.shape != (size,):
            failure = "the tensor was replaced or resized; all-reduce must work in place"
        elif result is not None and isinstance(result, torch.Tensor) and not torch.equal(result, tensor):
            failure = "you returned a tensor but left the input unchanged; sum into the input tensor in place"
        else:
            wrong = (tensor != _expected(size, dtype, world_size)).nonzero().view(-1)
            if wrong.numel():
                first = int(wrong[0])
                failure = (f"{wrong.numel()} of {size} elements are wrong on rank {rank} "
                           f"(first at index {first})")
        sent = torch.tensor([traffic.sent], dtype=torch.int64)
        dist.all_reduce(sent)
        needed = ring_bytes(size, tensor.element_size(), world_size)
        if failure is None and int(sent) < needed:
            failure = (f"all ranks together sent {int(sent)} bytes point to point, but a ring all-reduce "
                       f"of {size} element(s) on {world_size} ranks must send {needed}: the sum has to travel "
                       "between the ranks, with send/recv")
        flag = torch.tensor([0 if failure is None else 1 + rank], dtype=torch.int64)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            return {"status": "wrong", "case": case, "detail": failure, "reporter": int(flag.item()) - 1}
    return {"status": "correct"}


def _hint(case, world_size):
    size = case["size"]
    if size < world_size:
        return (f"Here the tensor has fewer elements ({size}) than ranks ({world_size}): some chunks "
                "are empty. Skip sending and receiving empty chunks (both sides know their sizes).")
    if size % world_size:
        return (f"{size} elements do not split evenly over {world_size} ranks: make the chunk "
                "boundaries the same on every rank, e.g. the first size % p chunks one element longer.")
    if case["dtype"].startswith("int"):
        return "Integer tensors: keep the dtype of the input for the receive buffer (torch.empty_like)."
    return ("Check the chunk index each rank sends and receives at every step: in step s of the "
            "reduce-scatter rank r sends one chunk to r+1 and adds the chunk from r-1 into its own copy.")


def _cases():
    return [{"size": s, "dtype": d} for s in SIZES for d in DTYPES]


def check_ring(fn, ranks=RANKS, timeout: float = 30, verbose: bool = True) -> RingCheck:
    """Run the learner's ``fn(tensor, rank, world_size) -> None`` on each rank count in ``ranks``.

    ``ranks``: rank counts in [2, 8]; ``timeout`` in (0, 600] s per rank count. Prints feedback
    when ``verbose`` and returns a ``RingCheck``. A function that raises ``NotImplementedError``
    is 'not answered'.
    """
    from .launch import RankError, RankTimeout, run

    if fn is None or fn is NotImplemented or fn is Ellipsis:
        return _say(RingCheck("not answered", f"Ring all-reduce: {NOT_ANSWERED}."), verbose)
    if not callable(fn):
        raise ValueError(f"fn must be a function (tensor, rank, world_size) -> None, got {fn!r}")
    if isinstance(ranks, int):
        ranks = (ranks,)
    ranks = [validate.integer("ranks", r, low=2, high=8) for r in ranks]
    timeout = validate.number("timeout", timeout, low=0.0, high=600.0, low_inclusive=False)
    for p in ranks:
        try:
            outcome = run(_check_worker, ranks=p, timeout=timeout, args=(fn, _cases()),
                          start_method="fork", echo=verbose)
        except RankTimeout:
            return _say(RingCheck("timeout", (
                f"Ring all-reduce on {p} ranks did not finish within {timeout:g} s. A deadlock? "
                "If every rank calls a blocking send before its receive, large messages wait "
                "forever: post the receive with irecv (or use isend) and wait on both.")), verbose)
        except RankError as err:
            if err.cause.startswith("NotImplementedError"):
                return _say(RingCheck("not answered", f"Ring all-reduce: {NOT_ANSWERED}."), verbose)
            return _say(RingCheck("error", f"Ring all-reduce on {p} ranks failed: rank {err.rank} "
                                           f"raised {err.cause}"), verbose)
        first = next((o for o in outcome if o["status"] != "correct"), None)
        if first is None:
            continue
        case = dict(first["case"], ranks=p)
        wrong = next(o for o in outcome if o["status"] == "wrong" and o.get("detail"))
        how = "built-in" in wrong["detail"] or "point to point" in wrong["detail"]  # how, not what: no size hint
        return _say(RingCheck("wrong", (
            f"Not yet: on {p} ranks with {case['size']} element(s) of {case['dtype']}, "
            f"{wrong['detail']}." + ("" if how else f" Hint: {_hint(case, p)}")), case), verbose)
    return _say(RingCheck("correct", f"Correct: your ring all-reduce matches dist.all_reduce on "
                                     f"{', '.join(map(str, ranks))} ranks for {len(_cases())} "
                                     "sizes x dtypes."), verbose)


def grade_ring(fn, ranks=RANKS, timeout: float = 30) -> None:
    """Raise ``AssertionError`` with the feedback unless ``check_ring`` says correct (for hidden tests)."""
    result = check_ring(fn, ranks=ranks, timeout=timeout, verbose=False)
    if not result.correct:
        raise AssertionError(result.message)


def _say(result: RingCheck, verbose: bool) -> RingCheck:
    if verbose:
        print(result.message)
    return result


def ring_checker(fn, ranks=RANKS, timeout: float = 30) -> tuple[bool, str]:
    """Checker for a ``callable`` exercise (``checks`` kind): ``(ok, message)`` from ``check_ring``.

    Raises ``NotImplementedError`` when the ring is not answered yet (a stub that raises it,
    or None), so ``checks.check`` reports *not answered yet*; ranks and timeout as in ``check_ring``.
    """
    result = check_ring(fn, ranks=ranks, timeout=timeout, verbose=False)
    if result.status == "not answered":
        raise NotImplementedError(result.message)
    return result.correct, result.message


# ---------------------------------------------------------------- the chapter-10 all-to-all

A2A_CASES = ((1, "int64"), (5, "float32"), (4096, "float32"))   # elements per chunk, dtype


def _a2a_check_worker(rank, world_size, fn):
    import torch
    import torch.distributed as dist

    from .bench import _all_to_all_inputs

    for count, dtype in A2A_CASES:
        inp, _ = _all_to_all_inputs(count * world_size, rank, world_size, getattr(torch, dtype))
        mine, ref = torch.zeros_like(inp), torch.empty_like(inp)
        fn(mine, inp.clone(), rank, world_size)
        dist.all_to_all_single(ref, inp)
        if not torch.equal(mine, ref):
            bad = int((mine != ref).view(world_size, count).any(dim=1).nonzero()[0])
            return {"ok": False, "detail": f"chunk {bad} of rank {rank}'s output differs from all_to_all_single "
                                           f"({count} element(s) per chunk, {dtype})"}
    return {"ok": True, "detail": ""}


def all_to_all_checker(fn, ranks=(2, 3), timeout: float = 60) -> tuple[bool, str]:
    """Grade ``fn(output, input, rank, world_size)``: on each rank count, output chunk j must equal rank j's
    input chunk r (what ``all_to_all_single`` gives). (ok, message); NotImplementedError when unanswered."""
    from .launch import RankError, RankTimeout, run

    for p in ranks:
        try:
            outcome = run(_a2a_check_worker, ranks=p, timeout=timeout, args=(fn,), start_method="fork", echo=False)
        except RankTimeout:
            return False, (f"Your all-to-all on {p} ranks did not finish within {timeout:g} s: a deadlock? Post "
                           "each step's receive (irecv) and send (isend) together and wait on both.")
        except RankError as err:
            if err.cause.startswith("NotImplementedError"):
                raise NotImplementedError from None
            return False, f"Your all-to-all on {p} ranks failed: rank {err.rank} raised {err.cause}"
        bad = next((o for o in outcome if not o["ok"]), None)
        if bad:
            return False, (f"Not yet on {p} ranks: {bad['detail']}. Hint: at step s, send chunk (rank+s) % p "
                           "to rank (rank+s) % p and receive into chunk (rank-s) % p from rank (rank-s) % p; "
                           "copy your own chunk first.")
    return True, f"Correct: your all-to-all matches all_to_all_single on {', '.join(map(str, ranks))} ranks."
