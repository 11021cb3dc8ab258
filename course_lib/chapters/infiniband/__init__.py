"""Chapter 05: InfiniBand generations, the two-level all-reduce and its cliff, rails and ranks, published multi-node runs.

One module per idea: ``links`` (IB generations, a node's injection and NVLink bandwidth), ``hierarchical``
(the two-level all-reduce across nodes, the cliff explorer), ``racks`` (rail-optimised fat trees, ranks
and the nodes a ring crosses), ``measured`` (published runs and transports against the model, CollNet).
The exercise's checker lives in :mod:`course_lib.exercises.ch05`. Drawing and tables live in
:mod:`course_lib.views.infiniband`; every public name is importable from here.
"""
from .links import (IB_GENERATIONS, ib_generations, intra_inter_ratio, node_injection, node_nvlink,  # noqa: F401
                    show_generations)
from .hierarchical import (CliffView, GPUS_PER_NODE, NICS_PER_NODE, NODE_COUNTS, applied_caps, cliff,  # noqa: F401
                           cliff_explorer, cliff_view, hierarchical_phases, scaling_curve, usable_injection)
from .racks import (draw_rails, global_rank, rail_topology, rank_table, ring_crossings, show_rank_table,  # noqa: F401
                    switch_hops)
from .measured import (COLLNET_NODES, collnet_view, comparison_lines, model_vs_measured, plot_collnet,  # noqa: F401
                       plot_model_vs_measured, plot_transports, published_multinode, show_collnet,
                       show_model_vs_measured, show_transports, transports_table, validation_failure_plot)
