"""Chapter 06: data parallelism: what DDP and ZeRO send, overlap, step time and scaling, the ring on the fabric, published runs.

One module per idea: ``traffic`` (bytes DDP and each ZeRO stage send, overlap with backward, ZeRO memory),
``scaling`` (step time and scaling curves, the DP ring on the fabric, the scaling explorer), ``measured``
(published scaling and ZeRO-3 runs against the model), ``overlap`` (the per-layer rule of thumb: when DP and
FSDP communication hides behind compute, and what the buckets add) and ``trace`` (a real profiler trace of one
DDP step, ``lab.ddp_trace``, as a timeline). Drawing and tables live in
:mod:`course_lib.views.data_parallel`; every public name is importable from here.
"""
from .traffic import (DDP_BUCKET_BYTES, ZERO_PARTS, bucket_count, bytes_sent_per_gpu, ddp_traffic,  # noqa: F401
                      draw_overlap_timeline, draw_zero_memory, exposed_time, overlap_schedule,
                      scaling_efficiency, show_zero_table, zero_table, zero_traffic)
from .scaling import (BASE_SYSTEM, RECOMPUTE, SCALING_GPUS, ScalingView, dp_estimate, dp_ring_bandwidth,  # noqa: F401
                      dp_scaling_explorer, draw_dp_ring, model_options, ring_leaves, ring_order, scaling_curve,
                      scaling_view, strong_scaling)
from .measured import (megatron_dp_rows, plot_zero3_ladder, published_dp_scaling, published_scaling_rows,  # noqa: F401
                       show_megatron_dp, show_published_scaling, show_zero3_ladder, zero3_ladder)
from .overlap import FIRST_BUCKET_BYTES, OverlapRule, overlap_rule  # noqa: F401
from .trace import draw_ddp_trace, trace_lanes  # noqa: F401
