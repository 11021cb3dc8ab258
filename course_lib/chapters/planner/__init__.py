"""Chapter 08 (capstone): the brief, memory, systems, planning a run, published runs, the planner explorer.

One module per idea: ``brief`` (the brief, model state and activation memory, the systems offered),
``runs`` (plan a run, time to train and GPU-hours, compare systems, link sensitivity, GPU sweeps),
``published`` (published training runs against the planner), ``interactive`` (the planner explorer); the exercises' answer models
live in :mod:`course_lib.exercises.answers_ch08`. Drawing and tables live in :mod:`course_lib.views.planner`; every public name is importable from here.
"""
from .brief import (ALL_SYSTEMS, BREAKDOWN_COLOURS, BRIEF, Brief, OFFERED_SYSTEMS, ROADMAP_SYSTEMS,  # noqa: F401
                    SECONDS_PER_DAY, SECONDS_PER_HOUR, activation_rows, draw_systems, memory_rows,
                    min_gpus_for_states, show_activation_rows, show_brief, show_memory_rows, show_states_table,
                    show_system_rows, states_table, system_rows)
from .runs import (FAST_SEARCH, SWEEP_GPUS, compare_systems, gpu_hours, gpu_sweep, link_sensitivity,  # noqa: F401
                   lowest_gpu_hours, plan_run, plot_gpu_sweep, required_tokens_per_s, run_numbers,
                   show_comparison, show_link_sensitivity, show_traffic, time_to_train_s, traffic_rows)
from .published import (plot_published_comparison, predict_run, published_comparison, published_runs,  # noqa: F401
                        show_published_comparison, show_validation_ranges, validation_ranges)
from .interactive import (EXPLORER_BATCHES, EXPLORER_GPUS, EXPLORER_MODELS, draw_breakdown, planner_explorer)  # noqa: F401
