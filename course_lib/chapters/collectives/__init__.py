"""Chapter 04: the six collectives, the algorithms that move their data, the ring step by step, their cost.

One module per idea: ``patterns`` (what each collective leaves where, how each algorithm moves data),
``ring`` (the ring all-reduce step by step, its explorer), ``cost`` (alpha-beta cost curves and
crossovers, the cost explorer) and ``measured`` (the lab's measurements, oversubscription, published
sweeps against the model). Drawing and tables live in :mod:`course_lib.views.collectives`; every public
name is importable from here.
"""
from .patterns import (ALGORITHMS, ALGORITHM_LABELS, COLLECTIVES, MAX_SIZE, MIN_SIZE, PATTERN_ALGORITHMS,  # noqa: F401
                       algorithm_pattern, algorithm_table, collective_buffers, collectives_table,
                       draw_algorithms, draw_collectives, show_algorithm_table, show_collectives_table)
from .ring import (RING_RANKS, draw_ring_step, draw_ring_steps, owned_chunks, ring_explorer, ring_schedule,  # noqa: F401
                   ring_states, ring_step_info, ring_steps)
from .cost import (EXPLORER_RANKS, cost_curves, cost_explorer, cost_readout, crossover_size, draw_cost,  # noqa: F401
                   fastest, ring_verdict)
from .measured import (compare_prediction, model_failures, oversubscription_table, plot_published,  # noqa: F401
                       published_sweeps, format_oversubscription, oversubscription_lines)
from .steps import (STEP_ALGORITHMS, STEP_LABELS, STEP_RANKS, StepPlan, StepTimes, Transfer,  # noqa: F401
                    allreduce_steps_explorer, draw_allreduce_step, draw_allreduce_timelines, simulate, step_plan,
                    step_readout, step_times)
