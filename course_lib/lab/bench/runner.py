"""The sweep: checked sizes and algorithms, local ranks started per rank count, rows as they come, and the
notes and refusals said before or while it runs (slow sizes, oversubscribed cores, memory)."""
from __future__ import annotations

import time

from ... import units, validate
from ...progress import Progress
from .. import budget, metrics
from ..processes import usable_cores as _cores
from .table import SweepResult
from .timing import COLLECTIVES, DTYPES, MAX_BYTES, REP_BUDGET_S, _worker, batch_for


def _sizes(sizes, name="sizes"):
    if isinstance(sizes, (str, int, float)):
        sizes = [sizes]
    out = []
    for size in sizes:
        try:
            nbytes = units.parse_size(size)
            nbytes = validate.number(name, nbytes, low=1, high=MAX_BYTES)
        except ValueError as exc:
            raise ValueError(f"{name} must be a size from 1 byte to 2G (bytes, or like 64K, 16M, 1G); "
                             f"got {size!r}") from exc
        out.append(int(nbytes))
    if not out:
        raise ValueError("sizes must not be empty")
    return out


def size_range(minbytes, maxbytes, factor=2.0) -> list[int]:
    """Sizes from ``minbytes`` to ``maxbytes`` (bytes or '64K'-style), each ``factor`` (> 1) times the last."""
    return _size_range(minbytes, maxbytes, factor)


def _size_range(minbytes, maxbytes, factor, names=None) -> list[int]:
    """``size_range``; ``names`` maps a parameter to the name its errors carry (the command line's flag)."""
    name = (names or {}).get
    low, high = _sizes(minbytes, name("minbytes", "minbytes"))[0], _sizes(maxbytes, name("maxbytes", "maxbytes"))[0]
    factor = validate.number(name("factor", "factor"), factor, low=1.0, high=1024.0, low_inclusive=False)
    if high < low:
        raise ValueError(f"{name('maxbytes', 'maxbytes')} must be >= minbytes ({units.format_bytes(low, binary=True)}) "
                         f"and <= 2G; got {units.format_bytes(high, binary=True)}")
    out, size = [], float(low)
    while size <= high * (1 + 1e-9):
        out.append(int(round(size)))
        size *= factor
    return out


def _config(sizes, algorithms, dtype, warmup, iters, pipeline, collective="all_reduce", names=None) -> dict:
    """Checked keyword arguments of ``measure``; ``names`` maps a parameter to the name its errors carry."""
    name = (names or {}).get
    coll = COLLECTIVES[validate.choice(name("collective", "collective"), collective, tuple(COLLECTIVES))]
    if algorithms is None:
        algorithms = coll.default_algorithms
    if isinstance(algorithms, str):
        algorithms = [a.strip() for a in algorithms.split(",") if a.strip()]
    algorithms = tuple(validate.choice(name("algorithms", "algorithms"), metrics.registry_id(a), coll.algorithms)
                       for a in algorithms)
    if not algorithms:
        raise ValueError(f"{name('algorithms', 'algorithms')} must name at least one of {', '.join(coll.algorithms)}")
    return {"sizes": _sizes(sizes), "algorithms": algorithms, "collective": coll.name,
            "dtype": validate.choice(name("dtype", "dtype"), dtype, DTYPES),
            "warmup": validate.integer(name("warmup", "warmup"), warmup, low=0, high=1000),
            "iters": validate.integer(name("iters", "iters"), iters, low=1, high=10000),
            "pipeline": validate.integer(name("pipeline", "pipeline"), pipeline, low=1, high=64)}


class SweepIncomplete(RuntimeError):
    """A sweep that a failure or a timeout stopped: ``result`` holds the rows measured before it (a
    ``SweepResult``), ``error`` the launcher's error; the message is one line saying what happened."""

    def __init__(self, message: str, result: "SweepResult", error: BaseException):
        super().__init__(message)
        self.result, self.error = result, error


def steps_per_op(collective: str, algorithms, ranks: int) -> int:
    """The most latency steps (alpha-beta ``steps(p)``) an operation of ``algorithms`` takes on ``ranks``
    ranks: each waits for a peer, so on an oversubscribed machine each waits for the scheduler too.
    gloo's built-in all-reduce is counted as a ring; a learner's own algorithm as the collective's ring."""
    from ... import collectives

    known = collectives.get(collective).algorithms  # the bench's ids are the registry's; builtin is not
    fallback = "ring" if collective == "all_reduce" else "direct"
    return int(max(collectives.terms(collective, a if a in known else fallback, ranks)[0] for a in algorithms))


def _incomplete_line(err, ranks, config, probe, measured, sizes_total) -> str:
    """The one line a stopped sweep ends with: slow (with the figures), a deadlock, or the rank error."""
    from ..launch import RankTimeout

    done = f"{measured} of {sizes_total} sizes of {ranks} ranks measured"
    if not isinstance(err, RankTimeout):
        return f"{ranks} ranks: {str(err).splitlines()[0]} ({done})"
    steps = steps_per_op(config["collective"], config["algorithms"], ranks)
    if err.kind == "deadlock":
        return f"{ranks} ranks did not finish within {err.timeout:g} s ({str(err).split(' s (', 1)[1]}; {done}"
    if err.kind in ("slow", "unknown", "stalled", "busy") or probe:
        per_op = ""
        if probe:
            name, seconds = max(probe["seconds_per_op"].items(), key=lambda kv: kv[1])
            per_op = (f", {seconds:.3g} s per operation measured so far ({name}, "
                      f"{units.format_bytes(probe['size'], binary=True)})")
        slow = "slow, not a deadlock" if err.kind == "slow" else f"timed out ({err.kind})"
        return (f"{ranks} ranks did not finish within {err.timeout:g} s: {slow} ({ranks} ranks on {_cores()} "
                f"cores, {steps} steps per operation{per_op}); {done}; give it more time (--timeout) "
                "or use fewer ranks (--ranks)")
    return f"{ranks} ranks: {str(err).splitlines()[0]} ({done})"


def sweep(sizes=("64K", "1M", "16M"), ranks=(2,), algorithms=None, dtype="float32",
          warmup: int = 2, iters: int = 5, pipeline: int = 8, timeout: float = 120,
          backend: str = "gloo", echo: bool = False, collective: str = "all_reduce",
          on_row=None, on_note=None) -> SweepResult:
    """Benchmark ``collective``'s ``algorithms`` over ``sizes`` (bytes or '16M'; <= 2 GiB) and ``ranks`` counts.

    ``collective``: a name in ``COLLECTIVES`` (``all_reduce``, ``all_to_all``); ``algorithms``: some of
    its ``algorithms`` (default: built-in and ring for all_reduce, built-in and pairwise for all_to_all).
    ``warmup`` in [0, 1000] and ``iters`` in [1, 10000] repetitions; ``pipeline`` in [1, 64]
    sub-chunks for the ring; ``timeout`` (s) per rank count. ``on_row(row)`` hears each row as soon
    as its size is measured; ``on_note(line)`` a line when a size's first operations show that it
    will take more than ``SLOW_SIZE_S`` seconds (with the estimate, and whether the timeout leaves
    room). Returns a ``SweepResult``; a rank failure or a timeout raises ``SweepIncomplete``, whose
    ``result`` keeps the rows measured before it.
    """
    config = _config(sizes, algorithms, dtype, warmup, iters, pipeline, collective)
    if isinstance(ranks, int):
        ranks = (ranks,)
    ranks = [validate.integer("ranks", r, low=1, high=64) for r in ranks]
    check_memory(max(config["sizes"]), max(ranks), backend)
    if on_row is not None and not callable(on_row):
        raise ValueError(f"on_row must be a callable taking one row (a dict) or None, got {on_row!r}")
    from ..launch import RankError, run

    result = SweepResult()
    sizes_done = Progress(len(ranks) * len(config["sizes"]), "bench", "sizes")
    for p in ranks:
        seen = {"probe": None, "sizes": 0, "start": time.monotonic()}
        sizes_done.note = f"{p} ranks, {units.format_bytes(config['sizes'][0], binary=True)}"

        def progress(rank, value):
            if value.get("kind") == "probe":
                seen["probe"] = value
                line = _slow_size_note(value, config, timeout - (time.monotonic() - seen["start"]))
                if line and on_note is not None:
                    sizes_done.clear()
                    on_note(line)
            elif value.get("kind") == "rows":
                seen["sizes"] += 1
                shared = budget.oversubscribed_note()  # other learners' ranks on this server, now
                sizes_done.clear()  # rows printed to the same terminal start on a clean line
                for row in value["rows"]:
                    if shared:
                        row["oversubscribed"] = shared
                    result.rows.append(row)
                    if on_row is not None:
                        on_row(row)
                following = config["sizes"][seen["sizes"]:seen["sizes"] + 1]
                sizes_done.update(1, note=f"{p} ranks, {units.format_bytes(following[0], binary=True)}"
                                  if following else f"{p} ranks done")

        try:
            run(_worker, ranks=p, timeout=timeout, args=(config,), backend=backend, echo=echo, progress=progress)
        except RankError as err:
            sizes_done.close()
            line = _incomplete_line(err, p, config, seen["probe"], seen["sizes"], len(config["sizes"]))
            raise SweepIncomplete(line, result, err) from None
    sizes_done.close()
    return result


SLOW_SIZE_S = 10.0  # a size expected to take longer than this is announced with its estimate


def size_seconds(seconds_per_op: dict, size: int, warmup: int, iters: int) -> float:
    """How long measuring one size takes once its first operations took ``seconds_per_op`` (by name):
    the repetitions ``measure_with_probes`` then runs, each a batch cut to ``REP_BUDGET_S``."""
    reps = (0 if max(seconds_per_op.values()) > REP_BUDGET_S else warmup) + iters
    return sum(t * reps * max(1, min(batch_for(size), int(REP_BUDGET_S / max(t, 1e-9))))
               for t in seconds_per_op.values())


def _slow_size_note(probe, config, seconds_left) -> str | None:
    est = size_seconds(probe["seconds_per_op"], probe["size"], config["warmup"], config["iters"])
    if est <= SLOW_SIZE_S:
        return None
    name, slowest = max(probe["seconds_per_op"].items(), key=lambda kv: kv[1])
    room = ("within the time left" if est < seconds_left else
            f"more than the {max(seconds_left, 0):.0f} s the timeout leaves: raise --timeout, or use fewer ranks")
    return (f"note: {probe['ranks']} ranks, {units.format_bytes(probe['size'], binary=True)}: {slowest:.3g} s per "
            f"operation ({name}, {steps_per_op(config['collective'], config['algorithms'], probe['ranks'])} steps); "
            f"this size takes about {est:.0f} s, {room}")


def oversubscription_note(ranks: int, collective: str, algorithms) -> str | None:
    """One line when ``ranks`` local ranks outnumber this machine's cores (their steps then wait for
    the scheduler: a small operation may take seconds), else None."""
    cores = _cores()
    if ranks <= cores:
        return None
    steps = steps_per_op(collective, algorithms, ranks)
    return (f"note: {ranks} ranks share {cores} cores: an operation takes up to {steps} steps, each waiting for a "
            "rank the scheduler has parked, so expect small sizes to take far longer than the cost model says; "
            "fewer operations are timed per repetition when they are slow")


def _gpu_free_bytes():
    """The least free memory of this machine's GPUs in bytes, from nvidia-smi; None when it cannot tell.

    Not torch.cuda.mem_get_info: that starts CUDA in this process, and ranks forked from a process with
    CUDA started cannot use it ("Cannot re-initialize CUDA in forked subprocess"); under torchrun it
    would open a context on every GPU from every rank.
    """
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        return min(int(line) for line in out.split()) * 2**20  # MiB
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def check_memory(max_bytes, ranks, backend="gloo") -> None:
    """Refuse (``ValueError``) a run whose ``ranks`` local ranks cannot hold ``max_bytes`` messages:
    each needs about ``memory.BENCH_FACTOR`` (6) times the message, measured. For ``backend``
    "nccl" the check is per GPU, against its free memory."""
    from .. import memory

    if backend == "nccl":
        import torch

        if not torch.cuda.is_available():
            return
        free = _gpu_free_bytes()
        if free is None:
            return
        memory.check(memory.bench_bytes(max_bytes, 1), f"a {units.format_bytes(max_bytes, binary=True)} message "
                     "on one GPU", "lower maxbytes (-e)", available=free)
        return
    memory.check(memory.bench_bytes(max_bytes, ranks),
                 f"a {units.format_bytes(max_bytes, binary=True)} message on {ranks} ranks "
                 f"({memory.BENCH_FACTOR:g} x the message per rank, measured)",
                 "lower maxbytes (-e) or ranks (--ranks)")


def _ring_p2p(tensor, rank, world_size):
    from .. import algorithms

    algorithms.ring_all_reduce(tensor, transport="p2p")


def race(fn=None, sizes=("1M", "16M", "64M"), ranks=2, iters=5, warmup=1, pipeline=8, timeout=120.0,
         verbose=True) -> SweepResult:
    """Race a learner's ring ``fn(tensor, rank, world_size)`` against gloo's built-in all-reduce and the
    library's ring (``pipeline`` in [1, 64] sub-chunks; its transfers as gloo collectives, and as
    ``isend``/``irecv`` like the learner's: ``ring, p2p``), float32, one ``sweep`` run.

    ``fn`` is first graded by ``course_lib.exercises.ring.check_ring`` on ``ranks`` (2-8) ranks; one that is not
    answered, wrong, raises or deadlocks is left out with a printed note (``verbose``), so the race
    never fails because of it. ``fn=None`` races the library only. ``sizes``, ``iters``, ``warmup``
    and ``timeout`` as in ``sweep``. Rows are named ``builtin``, ``ring``, ``ring, p2p`` and
    ``yours``; ``result.ratio("yours")`` is your throughput over gloo's.
    """
    from ...exercises import ring as ring_check
    from ..launch import RankError, RankTimeout, run

    config = _config(sizes, ("builtin", "ring"), "float32", warmup, iters, pipeline)
    ranks = validate.integer("ranks", ranks, low=2, high=8)
    timeout = validate.number("timeout", timeout, low=0.0, high=3600.0, low_inclusive=False)
    if fn is not None and not callable(fn):
        raise ValueError(f"fn must be a function (tensor, rank, world_size) -> None, or None; got {fn!r}")
    check_memory(max(config["sizes"]), ranks)
    say = print if verbose else (lambda *a, **k: None)
    custom = {"ring, p2p": _ring_p2p}
    if fn is not None:
        verdict = ring_check.check_ring(fn, ranks=(ranks,), timeout=min(timeout, 30.0), verbose=False)
        if verdict.correct:
            custom["yours"] = fn
        else:
            say(f"Note: your ring is left out of the race ({verdict.message})")
    def race_once():
        return run(_worker, ranks=ranks, timeout=timeout, args=(dict(config, custom=custom),),
                   start_method="fork", echo=False)[0]

    result = SweepResult()
    try:
        result.rows = race_once()
    except (RankError, RankTimeout) as err:
        if "yours" not in custom:
            raise
        say(f"Note: your ring failed during the race ({str(err).splitlines()[0]}); racing the library only.")
        custom.pop("yours")
        result.rows = race_once()
    return result
