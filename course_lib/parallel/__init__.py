"""Data, tensor, pipeline, expert and context parallelism for transformers: memory, traffic, step time, planner.

Units: bytes, seconds, FLOP and FLOP/s, bandwidth in bytes/s per direction.

The model (each formula is stated where it is computed):

* parameters, FLOPs, model-state and activation memory: ``course_lib.transformer`` (re-exported
  here); pipeline stages get their layers as Megatron assigns them (``stage_layer_counts``: even,
  the embedding and loss counted as layers, or given first/last counts); stage i holds ``p - i``
  micro-batches in flight (x ``1 + (p-1)/(p v)`` when interleaved) and the worst stage's memory decides;
* step time: compute from each GEMM's shape (``efficiency``: FLOPs at a fitted fraction of the
  precision's peak plus the bytes it moves at HBM speed; ``gpu_efficiency`` given: FLOPs / (peak x it)),
  with a range from the fit's residuals and the published test runs of its regime
  (``training_range``); tensor-parallel
  all-reduces (4 per layer and micro-batch, 6 with full recomputation) are exposed; pipeline
  sends are exposed; the 1F1B pipeline takes m slots of the slowest stage (its layers, and the output
  layer on the last) plus a fill and drain through the others, (sum of stage times - slowest) / v:
  ``(p-1)/(v m)`` of the ideal time when the stages are even; the data-parallel gradient all-reduce runs after the
  flush and, with ``dp_overlap``, hides behind the last backward pass, bucket by bucket;
  ZeRO-3 gathers weights every micro-batch (forward and backward) and reduce-scatters
  gradients, overlapped with compute when ``dp_overlap``.

* FSDP is ZeRO-3 over all cp x dp ranks; HSDP (``hsdp=G``) shards within groups of G ranks and
  all-reduces each rank's 1/G gradient shard across the replicas once per step (``dp_phase``);
* expert parallelism (an MoE model, ``ep``): 2 all-to-alls forward and 2 backward per MoE layer
  and micro-batch (+2 with full recomputation), exposed unless ``ep_overlap``; MoE parallel folding lays
  ETP x EP x expert-DP over TP x CP x DP (expert ranks ETP fastest, so EP may span the attention's TP
  ranks); routed experts' states shard over ep x etp and their gradients reduce over the
  tp x cp x dp / (ep x etp) expert-DP ranks (``ep_phase``, ``etp_phase``);
* context parallelism (``cp``): ring attention passes K/V chunks, hidden while each step's
  attention compute is longer than its transfer (``ring_attention_condition``), or Ulysses
  all-to-alls of heads, exposed (``cp_phase``); activations divide by cp.

Collective times (``group_collective_time``): inside one node ``costmodel.collective_time``
(alpha-beta, ring) on the GPU fabric; across nodes the network model, ``costmodel.predict`` for the
nodes and GPUs per node the group occupies (``cross_node_time``: one price for tensor, data and
sharded data parallelism; NCCL's ring or tree, NVLS left out as in a node); all-to-alls across
nodes from ``costmodel.two_tier_all_to_all``. Ranks are laid out as Megatron-LM does:
tensor-parallel ranks adjacent, then context-parallel, then data-parallel (expert-parallel
groups are consecutive data-parallel ranks), then pipeline.

The package, one module per idea (lowest first; each imports only those above it):

* ``precision``: the training precision recipes (``data/precision.json``: BF16, FP8, MXFP8);
* ``layouts``: ``Layout``/``layout`` (arguments checked once), the stated assumptions, shared constants;
* ``links``: ``group_link`` (which link a group uses) and the collective prices on it;
* ``results``: ``Traffic`` and ``Estimate``;
* ``phases``: ``memory_phase``, ``compute_phase``, ``tp_phase``, ``pp_phase``;
* ``sharding``: ``dp_phase`` (DDP, ZeRO-1/2/3, FSDP, HSDP), ``bucket_count``; ``experts``: ``ep_phase``;
  ``context``: ``cp_phase``, ``ring_attention_condition`` and ``ulysses_kv_heads``;
* ``step``: ``estimate`` composes the phases on the 1F1B schedule;
* ``efficiency``: compute efficiency that follows the GEMM (``layer_gemms``, ``layer_seconds``);
* ``planner``: ``plan`` searches layouts; ``validation``: the model against published runs.

Every public name is importable from ``course_lib.parallel`` itself.
"""
from __future__ import annotations

from ..transformer import (BYTES_PER_PARAM_ADAM, RECOMPUTE, Transformer, activation_bytes_per_layer,  # noqa: F401
                           model, model_ids, model_state_bytes, models_data, resolve_model, resolve_recompute,
                           routed_expert_flops, training_flops, training_flops_parts)
from .context import cp_phase, ring_attention_condition, ulysses_kv_heads  # noqa: F401
from .experts import ep_phase, etp_phase  # noqa: F401
from .layouts import (ACT_BYTES, CP_KINDS, DDP_BUCKET_BYTES, PP_RULES, Layout, assumption, layout,  # noqa: F401
                      published, stage_layer_counts)
from .links import (CROSS_NODE_ALGORITHMS, GroupLink, Links, _coll, all_to_all_time,  # noqa: F401
                    cross_node_all_reduce_time, cross_node_time, group_collective_time, group_link,
                    pair_bandwidth)
from .phases import (Compute, compute_phase, memory_phase, pp_phase, stage_compute_s, stage_memory,  # noqa: F401
                     tp_phase)
from .planner import AUTO_RECOMPUTE, Plan, estimate_choosing, plan  # noqa: F401
from .precision import PRECISIONS, fp8_dispatch_bytes, precision_data, precision_summary, recipe  # noqa: F401
from .results import Estimate, Traffic  # noqa: F401
from .sharding import (ZERO3_GATHERS_PER_MICRO_BATCH, ZERO3_REDUCE_SCATTERS_PER_MICRO_BATCH,  # noqa: F401
                       bucket_count, dp_phase, zero3_step_bytes)
from .step import estimate, estimate_layout  # noqa: F401
from .efficiency import layer_gemms, layer_seconds  # noqa: F401
from .validation import (case_prediction, regime_spread, training_range, training_range_phrase,  # noqa: F401
                         training_validation_summary, training_validation_table)
from .validation import (all_to_all_bottleneck_bandwidth, layer_efficiency_measured,  # noqa: F401
                         modern_validation_summary,
                         modern_validation_table, published_modern, validation_summary, validation_table)
