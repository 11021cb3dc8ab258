"""Chapter 10 (mixture of experts): the checker of exercise 10.7, the learner's pairwise all-to-all
``fn(output, input, rank, world_size)``, graded against ``all_to_all_single`` on 2 and 3 forked ranks on the
bench's all-to-all inputs (``lab.bench``)."""
from __future__ import annotations

A2A_CASES = ((1, "int64"), (5, "float32"), (4096, "float32"))   # elements per chunk, dtype


def _a2a_check_worker(rank, world_size, fn):
    import torch
    import torch.distributed as dist

    from ..lab.bench import _all_to_all_inputs
    from ..lab.traffic import Traffic
    from . import own_work

    for count, dtype in A2A_CASES:
        inp, _ = _all_to_all_inputs(count * world_size, rank, world_size, getattr(torch, dtype))
        mine, ref = torch.zeros_like(inp), torch.empty_like(inp)
        with Traffic() as traffic, own_work.forbidding(own_work.all_to_all_library()) as used:
            fn(mine, inp.clone(), rank, world_size)   # built-in collectives are noted, sends counted
        sent = traffic.total_sent()  # every rank takes part before any returns, so none waits on a rank that left
        refused = traffic.refusal("the chunks") or own_work.refusal(used, "all-to-all")
        if refused:
            return {"ok": False, "detail": refused}
        needed = world_size * (world_size - 1) * count * inp.element_size()  # every chunk but one's own, per rank
        dist.all_to_all_single(ref, inp)
        if torch.equal(mine, ref) and sent < needed:
            return {"ok": False, "detail": f"all ranks together sent {sent} bytes point to point, but an "
                                           f"all-to-all of {count} element(s) per chunk on {world_size} ranks must "
                                           f"send {needed}: each chunk has to travel to its rank"}
        if not torch.equal(mine, ref):
            bad = int((mine != ref).view(world_size, count).any(dim=1).nonzero()[0])
            return {"ok": False, "detail": f"chunk {bad} of rank {rank}'s output differs from all_to_all_single "
                                           f"({count} element(s) per chunk, {dtype})"}
    return {"ok": True, "detail": ""}


def all_to_all_checker(fn, ranks=(2, 3), timeout: float = 60) -> tuple[bool, str]:
    """Grade ``fn(output, input, rank, world_size)``: on each rank count, output chunk j must equal rank j's
    input chunk r (what ``all_to_all_single`` gives). (ok, message); NotImplementedError when unanswered."""
    from ..lab.launch import RankError, RankTimeout, run

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
