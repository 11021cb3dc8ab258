"""Chapter 07: tensor and pipeline parallelism, ranks on links, one step's traffic, the TP x PP grid, validation.

One module per idea: ``tensor`` (TP all-reduce bytes, comm/compute, published TP scans), ``pipeline``
(schedules and their explorer), ``layout`` (Megatron rank order, links per group, one step's traffic, the
TP x PP grid and its explorer) and ``validation`` (published runs against the model). Drawing and tables live
in :mod:`course_lib.views.model_parallel`; every public name is importable from here.
"""
from .tensor import (BREAKDOWN_COLOURS, MEMORY_COLOURS, POWERS_OF_TWO, claim, plot_tp_crossing,  # noqa: F401
                     published_claims, sequence_parallel_comparison, tp_allreduce_bytes, tp_comm_to_compute,
                     tp_crossing_series, tp_link_comparison, tp_scan)
from .pipeline import (ScheduleChoice, compare_schedules, draw_schedule, schedule_choice, schedule_explorer,  # noqa: F401
                       SCHEDULES, Op, Schedule, pipeline_schedule, stage_timing)
from .layout import (GRID_GPU_COUNTS, GRID_MODELS, GRID_SYSTEMS, LayoutChoice, MICRO_BATCH_COUNTS,  # noqa: F401
                     RECOMPUTE_CHOICES, best_fitting, draw_rank_map, group_links, layout_choice,
                     layout_explorer, layout_grid, megatron_coordinates, rank_map, sent_by_link, show_plan,
                     show_traffic, traffic_rows)
from .validation import (efficiency_to_match, plot_validation, show_validation, validation_rows)  # noqa: F401
