"""Chapter 05 (InfiniBand): the answer model of 05.10 (instructor's side: not in a learner's copy)."""
from __future__ import annotations

from .. import costmodel


def busbw_64_nodes_from_4() -> float:
    """05.10: Azure ND H100 v5's 335.3 GB/s ring busbw on 4 nodes, carried to 64 by the model's node decline."""
    return 335.3 * costmodel.node_decline(64) / costmodel.node_decline(4)


MODELS = {"05.10": lambda entry: busbw_64_nodes_from_4()}
