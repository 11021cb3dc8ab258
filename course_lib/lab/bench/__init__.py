"""Collective benchmark in the form of nccl-tests: built-in and hand-written algorithms side by side.

From a notebook::

    result = lab.bench.sweep(sizes=["64K", "1M", "16M"], ranks=(2,), algorithms=("builtin", "ring"))
    print(result)              # the table; result.rows holds one dict per (ranks, size, algorithm)

From a shell (local ranks, gloo on 127.0.0.1)::

    python -m course_lib.lab.bench --ranks 2,4 -b 64K -e 64M -f 4
    python -m course_lib.lab.bench --collective all_to_all --algorithms builtin,direct -b 64K -e 16M

Under torchrun, on one node or many (NCCL when GPUs are present, gloo otherwise)::

    torchrun --standalone --nproc_per_node=8 -m course_lib.lab.bench -b 1M -e 1G -f 2

The bench in three parts: ``timing`` (one rank's side: each collective's inputs and operations, how
one size is timed), ``runner`` (the sweep: checked sizes, local ranks started per rank count, the
notes said while it runs), ``table`` (nccl-tests' columns) and ``cli`` (the command line). Every name
is importable from here, as before the split (``lab.bench.sweep``, ``lab.bench.format_rows``, ...).
"""
from .cli import CLI_NAMES, ONE_RANK_NOTE, _checked, _parse, _process_name, _rank_counts, _torchrun, main
from .runner import (SLOW_SIZE_S, SweepIncomplete, _config, _gpu_free_bytes, _incomplete_line, _ring_p2p, _size_range,
                     _sizes, _slow_size_note, check_memory, oversubscription_note, race, size_range, size_seconds,
                     steps_per_op, sweep)
from .table import HEADER, SweepResult, format_row, format_rows
from .timing import (BATCH_BYTES, COLLECTIVES, DTYPES, MAX_BATCH, MAX_BYTES, REP_BUDGET_S, Collective, _all_reduce_inputs,
                     _all_reduce_op, _all_to_all_inputs, _all_to_all_op, _first_ops, _worker, batch_for, measure,
                     measure_with_probes, time_ops)

__all__ = ["BATCH_BYTES", "CLI_NAMES", "COLLECTIVES", "Collective", "DTYPES", "HEADER", "MAX_BATCH", "MAX_BYTES",
           "ONE_RANK_NOTE", "REP_BUDGET_S", "SLOW_SIZE_S", "SweepIncomplete", "SweepResult", "batch_for",
           "check_memory", "format_row", "format_rows", "main", "measure", "measure_with_probes",
           "oversubscription_note", "race", "size_range", "size_seconds", "steps_per_op", "sweep", "time_ops"]
_PRIVATE = (_all_reduce_inputs, _all_reduce_op, _all_to_all_inputs, _all_to_all_op, _checked, _config, _first_ops,
            _gpu_free_bytes, _incomplete_line, _parse, _process_name, _rank_counts, _ring_p2p, _size_range, _sizes,
            _slow_size_note, _torchrun, _worker)  # still importable from here: calibrate, exercises and tests use some
