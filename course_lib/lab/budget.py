"""The lab's rank budget on a shared server: how many ranks one user, and the whole server, may run at once.

On a hub, every learner's lab forks ranks on the same cores: 30 learners running chapter 04 at once
would oversubscribe the machine and every timing would be the scheduler's. The hub sets

* ``COURSE_LAB_BUDGET_DIR``: a folder every user can write (mode 1777), holding one lease file per
  launch (``lease-*.json``: user, pid and start time of the launcher, ranks, running or waiting) and
  ``budget.lock`` (``flock``: one launch decides at a time);
* ``COURSE_LAB_RANKS_PER_USER`` and ``COURSE_LAB_RANKS_PER_SERVER``: the ranks one user, and all users
  together, may run at once (defaults ``default_limits()``, sized from the cores);
* ``COURSE_LAB_BUDGET_WAIT_S``: how long a launch waits for room (default 300 s) before it is refused;
* ``COURSE_LAB_BUDGET_USER``: whose budget a launch counts against (default ``JUPYTERHUB_USER``, else
  the login name).

Without ``COURSE_LAB_BUDGET_DIR`` (a learner alone on a laptop) nothing is limited. A launch that
asks more ranks than a limit allows is refused at once, in one line naming the limit; one that fits
but finds no room waits in a queue (first come, first served; a later launch that fits starts only
when no earlier one can), printing its place whenever it changes, and is refused in one line when
the wait runs past its bound. A lease whose launcher is gone (a crashed or killed kernel: its pid
ended, or now has another start time) is reclaimed by the next launch that looks.
"""
from __future__ import annotations

import contextlib
import getpass
import json
import os
import sys
import time
import uuid

from .. import validate
from .limits import LabLimitError
from .processes import start_time, usable_cores

DIR_ENV = "COURSE_LAB_BUDGET_DIR"
USER_ENV = "COURSE_LAB_RANKS_PER_USER"
SERVER_ENV = "COURSE_LAB_RANKS_PER_SERVER"
WAIT_ENV = "COURSE_LAB_BUDGET_WAIT_S"
WHO_ENV = "COURSE_LAB_BUDGET_USER"
DEFAULT_WAIT_S = 300.0
MIN_RANKS_PER_USER = 4   # chapter 04 runs 2 and 4 ranks (its oversubscription experiment)
SERVER_RANKS_PER_CORE = 2
LOCK_NAME = "budget.lock"
_POLL_S = 0.2


class LabBudgetError(LabLimitError):
    """A launch refused by the server's rank budget (one line naming the limit)."""


def default_limits(cores: int | None = None) -> tuple[int, int]:
    """(ranks per user, ranks per server) for a machine of ``cores`` cores: a user gets
    ``max(MIN_RANKS_PER_USER, cores)``, the server ``SERVER_RANKS_PER_CORE`` ranks per core (no less
    than one user's share): beyond that the ranks mostly wait for the scheduler."""
    cores = usable_cores() if cores is None else validate.integer("cores", cores, low=1, high=1_000_000)
    per_user = max(MIN_RANKS_PER_USER, cores)
    return per_user, max(per_user, SERVER_RANKS_PER_CORE * cores)


def _env_int(name, default, low, high):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number in [{low}, {high}], got {raw!r}")
    return value


class Budget:
    """The limits a launch on this server runs under (``from_env``); ``directory`` None means no budget."""

    def __init__(self, directory, per_user: int, per_server: int, wait_s: float, user: str):
        self.directory, self.per_user, self.per_server = directory, per_user, per_server
        self.wait_s, self.user = wait_s, user

    @classmethod
    def from_env(cls) -> "Budget":
        user_default, server_default = default_limits()
        per_user = _env_int(USER_ENV, user_default, 1, 100_000)
        per_server = _env_int(SERVER_ENV, server_default, 1, 100_000)
        raw = os.environ.get(WAIT_ENV, "").strip()
        try:
            wait_s = float(raw) if raw else DEFAULT_WAIT_S
        except ValueError:
            wait_s = -1.0
        if not 0 <= wait_s <= 86400:
            raise ValueError(f"{WAIT_ENV} must be a number of seconds in [0, 86400], got {raw!r}")
        who = os.environ.get(WHO_ENV) or os.environ.get("JUPYTERHUB_USER") or _login()
        return cls(os.environ.get(DIR_ENV) or None, per_user, per_server, wait_s, who)


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid{os.getuid()}"


def _alive(lease) -> bool:
    """True while the launcher that wrote ``lease`` runs (same pid, same start time)."""
    known = start_time(lease["pid"])
    if known is not None:
        return known == lease["start_time"]
    try:
        os.kill(lease["pid"], 0)  # /proc unreadable (not Linux, hidepid): the pid alone decides
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _leases(directory, reclaim: bool = True) -> list[dict]:
    """The live leases in ``directory``, oldest ticket first; those of dead launchers are removed."""
    out = []
    for name in os.listdir(directory):
        if not (name.startswith("lease-") and name.endswith(".json")):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path) as handle:
                lease = json.load(handle)
            lease["path"] = path
            alive = _alive(lease)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written (never under the lock), or not ours to read
        if alive:
            out.append(lease)
        elif reclaim:
            with contextlib.suppress(OSError):  # another user's file in a sticky folder: skip it
                os.unlink(path)
    return sorted(out, key=lambda lease: (lease["ticket"], lease["path"]))


def _write(path, lease) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        json.dump({k: v for k, v in lease.items() if k != "path"}, handle)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(directory):
    import fcntl

    path = os.path.join(directory, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o666)  # every user's launch takes this lock
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def make_dir(directory) -> str:
    """Create the budget folder (mode 1777: every user adds leases, none removes another's live one)."""
    os.makedirs(directory, exist_ok=True)
    with contextlib.suppress(PermissionError):
        os.chmod(directory, 0o1777)
    return directory


def _fits(lease, running, budget) -> bool:
    mine = sum(r["ranks"] for r in running if r["user"] == lease["user"])
    total = sum(r["ranks"] for r in running)
    return mine + lease["ranks"] <= budget.per_user and total + lease["ranks"] <= budget.per_server


class Lease:
    """Ranks held on the server's budget until ``release``; ``waited_s`` is how long the launch queued."""

    def __init__(self, path, ranks, waited_s, places):
        self.path, self.ranks, self.waited_s, self.places = path, ranks, waited_s, places

    def release(self) -> None:
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self.path = None


def acquire(ranks: int, budget: Budget | None = None, say=None) -> Lease:
    """Hold ``ranks`` ranks on the server's budget, waiting in the queue for room; a ``Lease`` to release.

    ``say(line)`` hears each message (default: printed); raises ``LabBudgetError`` (one line) when
    ``ranks`` exceeds a limit or the wait runs past ``budget.wait_s``. No budget folder: returns at once.
    """
    budget = Budget.from_env() if budget is None else budget
    if budget.directory is None:
        return Lease(None, ranks, 0.0, [])
    say = say or (lambda line: print(line, file=sys.stdout, flush=True))
    for limit, name, who in ((budget.per_user, USER_ENV, "each user may run"),
                             (budget.per_server, SERVER_ENV, "this server runs")):
        if ranks > limit:
            raise LabBudgetError(f"lab budget: {ranks} ranks asked, but {who} at most {limit} at once "
                                 f"({name}={limit}): use at most {limit} ranks")
    directory = make_dir(budget.directory)
    me = {"user": budget.user, "pid": os.getpid(), "start_time": start_time(os.getpid()) or 0,
          "ranks": ranks, "state": "waiting", "ticket": time.time_ns()}
    path = os.path.join(directory, f"lease-{budget.user}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json")
    start, places, last = time.monotonic(), [], None
    try:
        while True:
            with _locked(directory):
                leases = [lease for lease in _leases(directory) if lease["path"] != path]
                running = [lease for lease in leases if lease["state"] == "running"]
                ahead = [lease for lease in leases if lease["state"] == "waiting" and lease["ticket"] < me["ticket"]]
                if _fits(me, running, budget) and not any(_fits(lease, running, budget) for lease in ahead):
                    me["state"] = "running"
                    _write(path, me)
                    return Lease(path, ranks, time.monotonic() - start, places)
                waited = time.monotonic() - start
                if waited >= budget.wait_s:
                    raise LabBudgetError(_refusal(ranks, running, budget, waited))
                if last is None:
                    _write(path, me)
            place = len(ahead) + 1
            if place != last:
                places.append(place)
                say(_queued(ranks, place, running, budget))
                last = place
            time.sleep(_POLL_S)
    except BaseException:  # refused, or a Stop while waiting: leave no lease behind
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise


def _usage(running, budget) -> str:
    total = sum(r["ranks"] for r in running)
    mine = sum(r["ranks"] for r in running if r["user"] == budget.user)
    return (f"{total} of the server's {budget.per_server} ranks in use ({SERVER_ENV}), "
            f"{mine} of your {budget.per_user} ({USER_ENV})")


def _queued(ranks, place, running, budget) -> str:
    return (f"[course lab] waiting for room for {ranks} ranks: place {place} in the queue; "
            f"{_usage(running, budget)}; waiting at most {budget.wait_s:g} s")


def _refusal(ranks, running, budget, waited) -> str:
    return (f"lab budget: no room for {ranks} ranks after waiting {waited:.0f} s ({WAIT_ENV}={budget.wait_s:g}): "
            f"{_usage(running, budget)}; try again later or use fewer ranks")


def ranks_running(budget: Budget | None = None) -> int | None:
    """Ranks the launches on this server hold now (all users), or None without a budget folder."""
    directory = (Budget.from_env() if budget is None else budget).directory
    if directory is None or not os.path.isdir(directory):
        return None
    return sum(lease["ranks"] for lease in _leases(directory, reclaim=False) if lease["state"] == "running")


def oversubscribed_note(cores: int | None = None) -> str | None:
    """A few words to print beside a timing taken while the server's launches hold more ranks than it
    has cores (their ranks then wait for the scheduler), else None."""
    running = ranks_running()
    cores = usable_cores() if cores is None else cores
    if running is None or running <= cores:
        return None
    return f"oversubscribed: {running} ranks on this server's {cores} cores"
