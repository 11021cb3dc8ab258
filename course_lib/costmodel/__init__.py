"""Cost models for collectives: alpha-beta links, algorithms, hierarchy, algbw/busbw.

Units: sizes in bytes, times in seconds, bandwidths in bytes/s **per direction**.

Every collective, its size convention (nccl-tests' ``size`` column: the buffer on each rank
for all_reduce, broadcast, reduce; the **total** buffer for all_gather, reduce_scatter,
all_to_all), its busbw factor and its flat algorithms live in the registry,
:mod:`course_lib.collectives`; this module times them.

The alpha-beta model: a message of ``m`` bytes over a link costs
``alpha + m / B``. An algorithm is a number of latency steps and a number of
bytes each rank must push through its port (the registry's terms). The model is honest about where
it stops being true:

* in-network reduction (NVLink SHARP / NVLS): the switch reduces, so busbw can
  exceed the link rate; its efficiency is an empirical figure, not derived;
* NCCL's tree on exactly two nodes sends half the usual data across the
  network, and measured results vary widely with NIC placement; the model
  gives the textbook figure;
* PCIe boxes whose traffic crosses CPU sockets are limited by the CPUs and
  memory, not by the PCIe links; the model will be optimistic there;
* mid-size messages (about 1-100 MB) where NCCL switches protocols (LL, LL128,
  Simple) and channel counts: the model is optimistic by up to ~2x.

The package, one module per idea (lowest first): ``efficiencies`` (sourced efficiencies and
latencies), ``flat`` (alpha-beta on one link: ``collective_time``, algbw/busbw, the two-level
all-reduce and two-tier all-to-all), ``fabrics`` (``fabric``: what a system offers), ``nccl``
(NCCL's ring, tree and NVLS per protocol), ``prediction`` (``predict``), ``validation``
(against published measurements), ``ranges`` (how far published runs in a prediction's regime sat
from the model) and ``advice`` (why a measured run differs from the model, and what to try). Every public
name is importable from ``course_lib.costmodel``.
"""
from __future__ import annotations

from .efficiencies import (efficiency, efficiency_data, efficiency_table, fabric_kind, fabric_kind_ids,  # noqa: F401
                           fabrics_data, hop_latency, launch_latency, no_p2p_staging_factor, nvls_efficiency,
                           system_fabric_kind)
from .fabrics import Fabric, channels_for, fabric, gpu_generation  # noqa: F401
from .flat import (TwoLevelPhases, algbw, busbw, busbw_factor, collective_time, lower_bound_time,  # noqa: F401
                   two_level_all_reduce, two_tier_all_to_all)
from .nccl import (PROTOCOLS, collnet_constants, default_nccl_version, double_binary_tree_load,  # noqa: F401
                   nccl_prefers_tree, nccl_release, nccl_version_stated, nccl_versions, node_decline,
                   node_decline_constants, pipeline_fill_bytes, protocol_table, tree_correction, tree_net_rate,
                   two_node_tree_rule)
from .prediction import Prediction, predict, predict_algorithms  # noqa: F401
from .validation import (GOALS, ROLES, SCALE_REGIMES, SIZE_REGIMES, case_system, node_sweep_study,  # noqa: F401
                         published, rows_of_role, scale_regime, size_regime, validation_by_regime, validation_goals,
                         validation_summary, validation_table)
from .ranges import (Range, Regime, coverage_by_regime, coverage_summary, family_of, range_for, range_json,  # noqa: F401
                     range_phrase, ranges_for, regime, stack_of, step_phrase, step_range)
from .advice import NATIVE_FABRICS, PLUGIN_CHECKS, compare_advice, unusual  # noqa: F401
