"""Who sent what: the bytes a rank sends point to point, and any built-in collective it called, counted by
wrapping torch.distributed's functions while a learner's code runs (the exercise checkers of
:mod:`course_lib.exercises` use it: a ring or an all-to-all written by hand must move its bytes itself)."""
from __future__ import annotations

import re

P2P_SEND = ("send", "isend")
# The process group's own collective methods, which every built-in collective calls: a reference to
# dist.all_reduce saved before the check (where the module-level wrapper cannot reach it) still lands here.
_GROUP_COLLECTIVE = re.compile(r"reduce|gather|scatter|alltoall|all_to_all|broadcast")
# Built-in collectives: calling one inside the learner's function scores nothing.
COLLECTIVES = ("all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
               "reduce_scatter_tensor", "broadcast", "all_to_all", "all_to_all_single", "scatter", "gather",
               "all_reduce_coalesced", "all_gather_object", "broadcast_object_list")


P2P_RECV = ("recv", "irecv")


class Traffic:
    """Counts the bytes this rank sends point to point, and any built-in collective called,
    by wrapping torch.distributed's functions (in the forked child only) while the learner's code runs.
    With ``tensor`` (the input) it also logs each send, where in the input it came from and a copy of what
    it carried, and notes (to ``note``, a file that outlives a crash) a receive into a buffer of another
    dtype than the input's."""

    def __init__(self, tensor=None, note=None):
        import torch.distributed as dist
        import torch.distributed.distributed_c10d as c10d

        self.modules = (dist, c10d)
        self.classes = _group_classes()
        self.sent = 0
        self.collectives = []
        self.sends = []      # (first element in the input or None, numel, a copy of the data)
        self.saved = []
        self.tensor, self.note = tensor, note

    def _offset(self, tensor):
        base = self.tensor
        if base is None or tensor.untyped_storage().data_ptr() != base.untyped_storage().data_ptr():
            return None
        return (tensor.data_ptr() - base.data_ptr()) // max(1, base.element_size())

    def _wrap(self, name, original):
        def counted(tensor, *args, **kwargs):
            self.sent += tensor.numel() * tensor.element_size()
            if self.tensor is not None:
                self.sends.append((self._offset(tensor), tensor.numel(), tensor.detach().clone()))
            return original(tensor, *args, **kwargs)

        def received(tensor, *args, **kwargs):
            if self.tensor is not None and self.note and tensor.dtype != self.tensor.dtype:
                with open(self.note, "a") as note:
                    note.write(f"receives into a {str(tensor.dtype).removeprefix('torch.')} buffer while its tensor "
                               f"is {str(self.tensor.dtype).removeprefix('torch.')}\n")
            return original(tensor, *args, **kwargs)

        def refused(*args, **kwargs):
            self.collectives.append(name)
            return original(*args, **kwargs)

        return counted if name in P2P_SEND else received if name in P2P_RECV else refused

    def refusal(self, moving: str) -> str | None:
        """Why the learner's function scores nothing if it called a built-in collective (else None);
        ``moving`` names what the exercise moves by hand ("the data", "the chunks")."""
        if not self.collectives:
            return None
        return (f"your function called dist.{self.collectives[0]}, a built-in collective; "
                f"the exercise is to move {moving} yourself with send/recv (or isend/irecv)")

    def total_sent(self) -> int:
        """Bytes sent point to point by all ranks together (a collective: every rank must call it)."""
        import torch
        import torch.distributed as dist

        sent = torch.tensor([self.sent], dtype=torch.int64)
        dist.all_reduce(sent)
        return int(sent)

    def __enter__(self):
        for module in self.modules:
            for name in P2P_SEND + P2P_RECV + COLLECTIVES:
                original = getattr(module, name, None)
                if original is not None:
                    self.saved.append((module, name, original))
                    setattr(module, name, self._wrap(name, original))
        for cls in self.classes:
            for name in list(vars(cls)):
                if not name.startswith("__") and _GROUP_COLLECTIVE.search(name) and callable(getattr(cls, name)):
                    self.saved.append((cls, name, vars(cls)[name]))  # the descriptor itself, to put back
                    setattr(cls, name, self._wrap(f"{name} (the process group's own)", getattr(cls, name)))
        return self

    def __exit__(self, *exc):
        for module, name, original in reversed(self.saved):
            setattr(module, name, original)
        self.saved = []
        return False


def _group_classes() -> tuple:
    """torch's process-group classes whose methods run the collectives (ProcessGroup, Backend and the
    backends' own classes where torch has them)."""
    import torch._C._distributed_c10d as c10d

    names = ("ProcessGroup", "Backend", "ProcessGroupGloo", "ProcessGroupNCCL")
    return tuple(getattr(c10d, n) for n in names if isinstance(getattr(c10d, n, None), type))
