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
  n/p bytes; ``pipeline`` sub-chunks overlap receiving, sending and adding.
* ``halving_doubling_all_reduce``: recursive halving (reduce-scatter) then recursive
  doubling (all-gather), 2 log2(p) steps; ranks beyond a power of two fold in first.
* ``tree_all_reduce``: binomial-tree reduce to rank 0, then binomial-tree broadcast.
* ``ring_reduce_scatter`` / ``ring_all_gather``: the two halves of the ring on their own.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import validate

ALGORITHMS = ("naive", "ring", "halving_doubling", "tree")


def chunk_bounds(numel: int, parts: int) -> list[tuple[int, int]]:
    """Split ``numel`` elements (>= 0) into ``parts`` (>= 1) contiguous [start, stop) ranges.

    The first ``numel % parts`` ranges are one element longer; some may be empty.
    """
    numel = validate.integer("numel", numel, low=0)
    parts = validate.integer("parts", parts, low=1)
    base, extra = divmod(numel, parts)
    bounds, start = [], 0
    for index in range(parts):
        stop = start + base + (1 if index < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


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


def _exchange(send_buf, dst, recv_buf, src):
    """Send ``send_buf`` to ``dst`` while receiving ``recv_buf`` from ``src``; skips empty buffers."""
    works = []
    if recv_buf is not None and recv_buf.numel():
        works.append(dist.irecv(recv_buf, src))
    if send_buf is not None and send_buf.numel():
        works.append(dist.isend(send_buf, dst))
    for work in works:
        work.wait()


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

MIN_PIECE_BYTES = 256 * 1024


def _sub_bounds(start, stop, pieces, itemsize=4):
    """Cut [start, stop) into at most ``pieces`` parts of at least ``MIN_PIECE_BYTES`` each."""
    pieces = max(1, min(pieces, ((stop - start) * itemsize) // MIN_PIECE_BYTES))
    return [(start + a, start + b) for a, b in chunk_bounds(stop - start, pieces)]


_SCRATCH: dict = {}


def _scratch_for(flat, count):
    """A reusable receive buffer of ``count`` elements (kept between calls: no allocation, no page faults)."""
    key = (flat.dtype, flat.device)
    buf = _SCRATCH.get(key)
    if buf is None or buf.numel() < count:
        buf = torch.empty(count, dtype=flat.dtype, device=flat.device)
        _SCRATCH[key] = buf
    return buf[:count]


def release_buffers() -> None:
    """Free the receive buffers the ring keeps between calls."""
    _SCRATCH.clear()


def ring_reduce_scatter(tensor, *, pipeline: int = 1, _scratch=None) -> tuple[int, int]:
    """Ring reduce-scatter in place; returns this rank's [start, stop) chunk, which now holds the sum.

    Other chunks hold partial sums afterwards. ``pipeline`` in [1, 64] sub-chunks per step.
    """
    pipeline = validate.integer("pipeline", pipeline, low=1, high=64)
    flat = _flat(tensor)
    rank, p = _group()
    bounds = chunk_bounds(flat.numel(), p)
    if p == 1:
        return bounds[0]
    right, left = (rank + 1) % p, (rank - 1) % p
    largest = bounds[0][1] - bounds[0][0]
    scratch = _scratch if _scratch is not None else _scratch_for(flat, largest)
    # step s: send chunk (r - s - 1) to the right, receive chunk (r - s - 2) from the left
    # and add it in; after p - 1 steps the last chunk received is chunk r, fully summed.
    for step in range(p - 1):
        send_c = (rank - step - 1) % p
        recv_c = (rank - step - 2) % p
        _pipelined_step(flat, bounds[send_c], right, bounds[recv_c], left, scratch, pipeline, reduce=True)
    return bounds[rank]


def ring_all_gather(tensor, *, pipeline: int = 1) -> None:
    """Ring all-gather in place: on entry rank r's chunk r (``chunk_bounds``) is valid; on exit all are."""
    pipeline = validate.integer("pipeline", pipeline, low=1, high=64)
    flat = _flat(tensor)
    rank, p = _group()
    if p == 1:
        return
    bounds = chunk_bounds(flat.numel(), p)
    right, left = (rank + 1) % p, (rank - 1) % p
    for step in range(p - 1):
        send_c = (rank - step) % p
        recv_c = (rank - step - 1) % p
        _pipelined_step(flat, bounds[send_c], right, bounds[recv_c], left, None, pipeline, reduce=False)


def _pipelined_step(flat, send_b, dst, recv_b, src, scratch, pieces, reduce):
    """One ring step, cut into ``pieces`` sub-chunks so adding piece k overlaps receiving k+1.

    All receives and sends are posted at once (gloo moves them on its own threads);
    the reduction waits only for the piece it needs. Receives of the all-gather go
    straight into place; the reduce-scatter receives into ``scratch`` then adds in place.
    """
    size = flat.element_size()
    send_parts = _sub_bounds(*send_b, pieces, size)
    recv_parts = _sub_bounds(*recv_b, pieces, size)
    recvs, sends = [], []
    base = recv_b[0]
    for a, b in recv_parts:
        if b > a:
            target = scratch[a - base:b - base] if reduce else flat[a:b]
            recvs.append((dist.irecv(target, src), a, b))
    for a, b in send_parts:
        if b > a:
            sends.append(dist.isend(flat[a:b], dst))
    for work, a, b in recvs:
        work.wait()
        if reduce:
            flat[a:b].add_(scratch[a - base:b - base])
    for work in sends:
        work.wait()


def ring_all_reduce(tensor, *, pipeline: int = 8) -> None:
    """All-reduce (sum) in place: ring reduce-scatter then ring all-gather.

    ``pipeline`` in [1, 64]: at most that many sub-chunks per step, each >= 256 KiB (1: plain ring). Sends n/p bytes per step,
    2(p-1) steps: each rank moves 2(p-1)/p * n bytes, the bandwidth lower bound.
    """
    pipeline = validate.integer("pipeline", pipeline, low=1, high=64)
    flat = _flat(tensor)
    rank, p = _group()
    if p == 1 or flat.numel() == 0:
        return
    ring_reduce_scatter(flat, pipeline=pipeline)
    ring_all_gather(flat, pipeline=pipeline)


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

def tree_all_reduce(tensor) -> None:
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
            "halving_doubling": halving_doubling_all_reduce, "tree": tree_all_reduce}


def all_reduce(tensor, algorithm: str = "ring") -> None:
    """All-reduce (sum) in place with a hand-written ``algorithm`` (one of ``ALGORITHMS``) or ``"builtin"``."""
    algorithm = validate.choice("algorithm", algorithm, ALGORITHMS + ("builtin",))
    if algorithm == "builtin":
        _flat(tensor)
        dist.all_reduce(tensor)
        return
    _BY_NAME[algorithm](tensor)


# --------------------------------------------------------------------------- all-to-all (expert parallelism)
# Kept apart from the all-reduces above: the MoE chapter's exercise. ``input`` holds p equal chunks,
# chunk j for rank j; on exit ``output``'s chunk j holds what rank j sent to this rank (its chunk r).

ALL_TO_ALL_ALGORITHMS = ("pairwise",)


def _a2a_buffers(output, input):
    out, inp = _flat(output, "output"), _flat(input, "input")
    if out.numel() != inp.numel() or out.dtype != inp.dtype:
        raise ValueError(f"output must match input in size and dtype ({inp.numel()} {inp.dtype}), "
                         f"got {out.numel()} {out.dtype}")
    rank, p = _group()
    if inp.numel() % p:
        raise ValueError(f"input must hold a multiple of the rank count ({p}) elements, got {inp.numel()}")
    return out, inp, rank, p


def pairwise_all_to_all(output, input) -> None:
    """All-to-all by pairwise exchange in p-1 steps of n/p bytes: each rank sends (p-1)/p of its
    buffer, the registry's ``direct`` volume, spread over p-1 latencies instead of one.

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


def all_to_all(output, input, algorithm: str = "pairwise") -> None:
    """All-to-all with a hand-written ``algorithm`` (``ALL_TO_ALL_ALGORITHMS``) or ``"builtin"`` (all_to_all_single)."""
    algorithm = validate.choice("algorithm", algorithm, ALL_TO_ALL_ALGORITHMS + ("builtin",))
    if algorithm == "builtin":
        _a2a_buffers(output, input)
        dist.all_to_all_single(output, input)
        return
    pairwise_all_to_all(output, input)
