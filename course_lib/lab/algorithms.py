"""Hand-written collectives over point-to-point send/recv (sum only), for the collectives lab.

Every all-reduce here works in place on a 1-D-viewable contiguous tensor, on the default
process group, and leaves on every rank exactly what ``dist.all_reduce`` (SUM) leaves, for
any size (1 element, primes, sizes not divisible by the rank count) and any dtype torch
can add. Floating-point sums may differ from gloo's in the last bit only because the
order of additions differs; every rank of one algorithm ends with identical bits.

Chunks follow ``chunk_bounds``: the first ``numel % p`` chunks hold one extra element.
Empty chunks are never sent (both sides know the sizes), so tiny tensors work too.

* ``naive_all_reduce``: every rank sends to rank 0, which sums and sends back.
  2(p-1) messages of n bytes through one rank: root bandwidth is the bottleneck.
* ``ring_all_reduce``: reduce-scatter then all-gather around the ring, 2(p-1) steps of
  n/p bytes; ``pipeline`` sub-chunks overlap receiving, sending and adding. Each ring transfer
  is one gloo collective (``ring_exchange``: an all-to-all with only the neighbours' counts
  non-zero), so the ranks wait inside gloo's C++ threads rather than in Python.
* ``halving_doubling_all_reduce``: recursive halving (reduce-scatter) then recursive
  doubling (all-gather), 2 log2(p) steps; ranks beyond a power of two fold in first.
* ``binomial_tree_all_reduce``: binomial-tree reduce to rank 0, then binomial-tree broadcast.
* ``ring_reduce_scatter`` / ``ring_all_gather``: the two halves of the ring on their own.

Algorithm ids are the course registry's (``course_lib.collectives``): ``naive``, ``ring``,
``halving_doubling``, ``binomial_tree`` for the all-reduce, ``direct`` for the all-to-all;
``metrics.ALGORITHM_ALIASES`` keeps the lab's older names (``tree``, ``pairwise``) working.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import validate
from .metrics import registry_id

ALGORITHMS = ("naive", "ring", "halving_doubling", "binomial_tree")  # the registry's all_reduce ids


def chunk_bounds(numel: int, parts: int) -> list[tuple[int, int]]:
    """Split ``numel`` elements (>= 0) into ``parts`` (>= 1) contiguous [start, stop) ranges.

    The first ``numel % parts`` ranges are one element longer; some may be empty.
    """
    numel = validate.integer("numel", numel, low=0)
    parts = validate.integer("parts", parts, low=1)
    return _split(0, numel, parts)


def _split(start, stop, pieces):
    """``chunk_bounds`` of [start, stop), unchecked (the ring's hot path): ``pieces`` contiguous parts,
    the first ones one longer; some may be empty."""
    base, extra = divmod(stop - start, pieces)
    out = []
    for index in range(pieces):
        end = start + base + (1 if index < extra else 0)
        out.append((start, end))
        start = end
    return out


def _flat(tensor, name="tensor"):
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.is_contiguous():
        raise ValueError(f"{name} must be contiguous (call .contiguous() first)")
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise ValueError(f"{name} must have a real numeric dtype, got {tensor.dtype}")
    if not dist.is_initialized():
        raise ValueError("no process group: call these inside lab.run(...) or after init_process_group")
    return tensor.view(-1)


def _group():
    return dist.get_rank(), dist.get_world_size()


class _Pair:
    """The receive and the send of one point-to-point transfer, waited on together."""

    def __init__(self, works):
        self.works = works

    def wait(self):
        for work in self.works:
            work.wait()


def _exchange(send_buf, dst, recv_buf, src, async_op=False):
    """Send ``send_buf`` to ``dst`` while receiving ``recv_buf`` from ``src`` (``irecv`` and ``isend``
    posted together); skips empty buffers. Waits, or returns a ``_Pair`` to wait on when ``async_op``."""
    works = []
    if recv_buf is not None and recv_buf.numel():
        works.append(dist.irecv(recv_buf, src))
    if send_buf is not None and send_buf.numel():
        works.append(dist.isend(send_buf, dst))
    pair = _Pair(works)
    if async_op:
        return pair
    pair.wait()
    return None


# --------------------------------------------------------------------------- naive

def naive_all_reduce(tensor) -> None:
    """All-reduce (sum) in place by gathering to rank 0 and sending the sum back."""
    flat = _flat(tensor)
    rank, p = _group()
    if p == 1 or flat.numel() == 0:
        return
    if rank == 0:
        scratch = torch.empty_like(flat)
        for src in range(1, p):
            dist.recv(scratch, src)
            flat.add_(scratch)
        works = [dist.isend(flat, dst) for dst in range(1, p)]
        for work in works:
            work.wait()
    else:
        dist.send(flat, 0)
        dist.recv(flat, 0)


# --------------------------------------------------------------------------- ring

MIN_PIECE_BYTES = 1024 * 1024

_SCRATCH: dict = {}


def _scratch_for(flat, count):
    """A reusable receive buffer of ``count`` elements (kept between calls: no allocation, no page faults)."""
    key = (flat.dtype, flat.device)
    buf = _SCRATCH.get(key)
    if buf is None or buf.numel() < count:
        buf = torch.empty(count, dtype=flat.dtype, device=flat.device)
        _SCRATCH[key] = buf
    return buf[:count]


def _pieces(flat, p, pipeline):
    """Sub-chunks per ring step, the same on every rank: at most ``pipeline``, each >= ``MIN_PIECE_BYTES``."""
    largest = -(-flat.numel() // p)
    return max(1, min(pipeline, largest * flat.element_size() // MIN_PIECE_BYTES))


TRANSPORTS = ("collective", "p2p")


def ring_exchange(send, dst, recv, src, async_op=False, transport="collective"):
    """One ring transfer: send ``send`` to rank ``dst`` while receiving ``recv`` from rank ``src``.

    ``transport="collective"`` (default): a gloo collective, an all-to-all in which only those two
    counts are non-zero, so every rank of the group must call it, in the same order (empty tensors
    are fine). The waiting then happens inside gloo's C++ threads. ``"p2p"``: ``irecv`` and
    ``isend`` posted together and waited on from Python, as a learner's ring does; each wait
    sleeps and wakes once more per message, and on a busy 2-core virtual machine that wake-up
    made a 64 KiB ring all-reduce about 10x slower than gloo's own (chapter 04, section 7.4).
    Returns something with ``wait()`` when ``async_op``.
    """
    if transport == "p2p":
        return _exchange(send, dst, recv, src, async_op)
    p = dist.get_world_size()
    recv_counts, send_counts = [0] * p, [0] * p
    recv_counts[src] = recv.numel()
    send_counts[dst] = send.numel()
    return dist.all_to_all_single(recv, send, recv_counts, send_counts, async_op=async_op)


def _post_step(flat, send_b, dst, recv_b, src, pieces, scratch=None, transport="collective"):
    """Start one ring step, cut into ``pieces``; returns [(work, start, stop, scratch offset)] per piece."""
    posted = []
    base = recv_b[0]
    for (s0, s1), (r0, r1) in zip(_split(*send_b, pieces), _split(*recv_b, pieces)):
        target = flat[r0:r1] if scratch is None else scratch[r0 - base:r1 - base]
        posted.append((ring_exchange(flat[s0:s1], dst, target, src, True, transport), r0, r1, base))
    return posted


def _reduce_step(flat, send_b, dst, recv_b, src, pieces, scratch, then=None, transport="collective"):
    """One reduce-scatter step: receive pieces into ``scratch`` and add each as soon as it lands
    (while the next is on its way); ``then(k)`` runs after piece k is added."""
    for k, (work, r0, r1, base) in enumerate(_post_step(flat, send_b, dst, recv_b, src, pieces, scratch,
                                                        transport)):
        work.wait()
        flat[r0:r1].add_(scratch[r0 - base:r1 - base])
        if then is not None:
            then(k)


def ring_reduce_scatter(tensor, *, pipeline: int = 1, transport: str = "collective", _scratch=None) -> tuple[int, int]:
    """Ring reduce-scatter in place; returns this rank's [start, stop) chunk, which now holds the sum.

    Other chunks hold partial sums afterwards. ``pipeline`` in [1, 64] sub-chunks per step;
    ``transport`` one of ``TRANSPORTS`` (see ``ring_exchange``).
    """
    pipeline = validate.integer("pipeline", pipeline, low=1, high=64)
    transport = validate.choice("transport", transport, TRANSPORTS)
    flat = _flat(tensor)
    rank, p = _group()
    bounds = chunk_bounds(flat.numel(), p)
    if p == 1:
        return bounds[0]
    _reduce_scatter(flat, rank, p, bounds, _pieces(flat, p, pipeline), _scratch, transport=transport)
    return bounds[rank]


def _reduce_scatter(flat, rank, p, bounds, pieces, scratch=None, then=None, transport="collective"):
    right, left = (rank + 1) % p, (rank - 1) % p
    if scratch is None:
        scratch = _scratch_for(flat, bounds[0][1] - bounds[0][0])
    # step s: send chunk (r - s - 1) to the right, receive chunk (r - s - 2) from the left
    # and add it in; after p - 1 steps the last chunk received is chunk r, fully summed.
    for step in range(p - 1):
        last = step == p - 2
        _reduce_step(flat, bounds[(rank - step - 1) % p], right, bounds[(rank - step - 2) % p], left,
                     pieces, scratch, then if last else None, transport)


def ring_all_gather(tensor, *, pipeline: int = 1, transport: str = "collective") -> None:
    """Ring all-gather in place: on entry rank r's chunk r (``chunk_bounds``) is valid; on exit all are."""
    pipeline = validate.integer("pipeline", pipeline, low=1, high=64)
    transport = validate.choice("transport", transport, TRANSPORTS)
    flat = _flat(tensor)
    rank, p = _group()
    if p == 1:
        return
    _all_gather(flat, rank, p, chunk_bounds(flat.numel(), p), _pieces(flat, p, pipeline), transport=transport)


def _all_gather(flat, rank, p, bounds, pieces, first=None, transport="collective"):
    """All-gather steps; ``first``, if given, holds step 0's pieces already posted."""
    right, left = (rank + 1) % p, (rank - 1) % p
    for step in range(p - 1):
        if step == 0 and first is not None:
            posted = first
        else:
            posted = _post_step(flat, bounds[(rank - step) % p], right, bounds[(rank - step - 1) % p], left,
                                pieces, transport=transport)
        for work, *_ in posted:
            work.wait()


def ring_all_reduce(tensor, *, pipeline: int = 8, transport: str = "collective") -> None:
    """All-reduce (sum) in place: ring reduce-scatter then ring all-gather.

    ``pipeline`` in [1, 64]: at most that many sub-chunks per step, each >= 1 MiB (1: plain ring).
    ``transport``: ``"collective"`` (each transfer a gloo all-to-all) or ``"p2p"`` (``isend``/``irecv``
    waited on from Python, as the learner's ring); see ``ring_exchange``.
    Sends n/p bytes per step, 2(p-1) steps: each rank moves 2(p-1)/p * n bytes, the bandwidth lower
    bound. Piece k of this rank's summed chunk starts its all-gather as soon as it is added, while
    the later pieces are still being reduced.
    """
    pipeline = validate.integer("pipeline", pipeline, low=1, high=64)
    transport = validate.choice("transport", transport, TRANSPORTS)
    flat = _flat(tensor)
    rank, p = _group()
    if p == 1 or flat.numel() == 0:
        return
    bounds = chunk_bounds(flat.numel(), p)
    pieces = _pieces(flat, p, pipeline)
    right, left = (rank + 1) % p, (rank - 1) % p
    mine = _split(*bounds[rank], pieces)
    theirs = _split(*bounds[(rank - 1) % p], pieces)
    first = []

    def start_gather(k):  # piece k of my chunk is summed: pass it on at once
        (s0, s1), (r0, r1) = mine[k], theirs[k]
        first.append((ring_exchange(flat[s0:s1], right, flat[r0:r1], left, True, transport), r0, r1, r0))

    _reduce_scatter(flat, rank, p, bounds, pieces, then=start_gather, transport=transport)
    _all_gather(flat, rank, p, bounds, pieces, first=first, transport=transport)


# --------------------------------------------------------------------------- halving-doubling

def halving_doubling_all_reduce(tensor) -> None:
    """All-reduce (sum) in place by recursive halving then recursive doubling (Rabenseifner).

    With p not a power of two, ranks >= 2**floor(log2 p) first add their vector into a
    partner below and receive the result at the end.
    """
    flat = _flat(tensor)
    rank, p = _group()
    n = flat.numel()
    if p == 1 or n == 0:
        return
    p2 = 1 << (p.bit_length() - 1)
    if rank >= p2:
        dist.send(flat, rank - p2)
        dist.recv(flat, rank - p2)
        return
    scratch = torch.empty(n - n // 2, dtype=flat.dtype, device=flat.device)
    if rank + p2 < p:
        extra = torch.empty_like(flat)
        dist.recv(extra, rank + p2)
        flat.add_(extra)
        del extra
    # recursive halving: keep the half that matches our bit, send the other half.
    lo, hi = 0, n
    history = []
    mask = p2 >> 1
    while mask:
        partner = rank ^ mask
        mid = lo + (hi - lo) // 2
        if rank & mask:
            keep, give = (mid, hi), (lo, mid)
        else:
            keep, give = (lo, mid), (mid, hi)
        size = keep[1] - keep[0]
        _exchange(flat[give[0]:give[1]], partner, scratch[:size], partner)
        if size:
            flat[keep[0]:keep[1]].add_(scratch[:size])
        history.append((partner, keep, give))
        lo, hi = keep
        mask >>= 1
    # recursive doubling: undo the halving, exchanging what each side owns.
    for partner, keep, give in reversed(history):
        _exchange(flat[keep[0]:keep[1]], partner, flat[give[0]:give[1]], partner)
    if rank + p2 < p:
        dist.send(flat, rank + p2)


# --------------------------------------------------------------------------- tree

def binomial_tree_all_reduce(tensor) -> None:
    """All-reduce (sum) in place: binomial-tree reduce to rank 0, then binomial-tree broadcast.

    2 ceil(log2 p) steps of the full n bytes: good for latency, poor for bandwidth.
    """
    flat = _flat(tensor)
    rank, p = _group()
    if p == 1 or flat.numel() == 0:
        return
    scratch = torch.empty_like(flat)
    mask = 1
    while mask < p:  # reduce: at level mask, ranks with that bit set send to rank - mask
        if rank & mask:
            dist.send(flat, rank - mask)
            break
        if rank + mask < p:
            dist.recv(scratch, rank + mask)
            flat.add_(scratch)
        mask <<= 1
    # broadcast: walk the same tree back down
    if rank == 0:
        mask = 1
        while mask < p:
            mask <<= 1
    else:
        dist.recv(flat, rank - (rank & -rank))
        mask = rank & -rank
    mask >>= 1
    while mask:
        if rank + mask < p:
            dist.send(flat, rank + mask)
        mask >>= 1


_BY_NAME = {"naive": naive_all_reduce, "ring": ring_all_reduce,
            "halving_doubling": halving_doubling_all_reduce, "binomial_tree": binomial_tree_all_reduce}


def all_reduce(tensor, algorithm: str = "ring") -> None:
    """All-reduce (sum) in place with a hand-written ``algorithm`` (one of ``ALGORITHMS``, or an alias) or ``"builtin"``."""
    algorithm = validate.choice("algorithm", registry_id(algorithm), ALGORITHMS + ("builtin",))
    if algorithm == "builtin":
        _flat(tensor)
        dist.all_reduce(tensor)
        return
    _BY_NAME[algorithm](tensor)


# --------------------------------------------------------------------------- all-to-all (expert parallelism)
# Kept apart from the all-reduces above: the MoE chapter's exercise. ``input`` holds p equal chunks,
# chunk j for rank j; on exit ``output``'s chunk j holds what rank j sent to this rank (its chunk r).

ALL_TO_ALL_ALGORITHMS = ("direct",)  # the registry's all_to_all id


def _a2a_buffers(output, input):
    out, inp = _flat(output, "output"), _flat(input, "input")
    if out.numel() != inp.numel() or out.dtype != inp.dtype:
        raise ValueError(f"output must match input in size and dtype ({inp.numel()} {inp.dtype}), "
                         f"got {out.numel()} {out.dtype}")
    rank, p = _group()
    if inp.numel() % p:
        raise ValueError(f"input must hold a multiple of the rank count ({p}) elements, got {inp.numel()}")
    return out, inp, rank, p


def direct_all_to_all(output, input) -> None:
    """All-to-all (the registry's ``direct``, once called ``pairwise``) by pairwise exchange in p-1 steps
    of n/p bytes: each rank sends (p-1)/p of its buffer, the registry's ``direct`` volume, spread over
    p-1 latencies instead of the one the registry counts (its ranks post every send at once).

    p a power of two: at step s rank r swaps chunks with rank r XOR s, the lower rank sending first
    with blocking send/recv (no asynchronous hand-off to gloo's threads). Otherwise: at step s send
    chunk (r+s) to rank r+s while receiving chunk (r-s) from rank r-s (isend/irecv, both posted).
    """
    out, inp, rank, p = _a2a_buffers(output, input)
    c = inp.numel() // p
    out[rank * c:(rank + 1) * c].copy_(inp[rank * c:(rank + 1) * c])
    if c == 0:
        return
    if p & (p - 1) == 0:
        for step in range(1, p):
            peer = rank ^ step
            mine, theirs = inp[peer * c:(peer + 1) * c], out[peer * c:(peer + 1) * c]
            if rank < peer:
                dist.send(mine, peer)
                dist.recv(theirs, peer)
            else:
                dist.recv(theirs, peer)
                dist.send(mine, peer)
        return
    for step in range(1, p):
        dst, src = (rank + step) % p, (rank - step) % p
        _exchange(inp[dst * c:(dst + 1) * c], dst, out[src * c:(src + 1) * c], src)


def all_to_all(output, input, algorithm: str = "direct") -> None:
    """All-to-all with a hand-written ``algorithm`` (``ALL_TO_ALL_ALGORITHMS``, or an alias) or ``"builtin"``
    (all_to_all_single)."""
    algorithm = validate.choice("algorithm", registry_id(algorithm), ALL_TO_ALL_ALGORITHMS + ("builtin",))
    if algorithm == "builtin":
        _a2a_buffers(output, input)
        dist.all_to_all_single(output, input)
        return
    direct_all_to_all(output, input)
