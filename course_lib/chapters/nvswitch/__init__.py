"""Chapter 03: NVSwitch generations and port budgets, switch against mesh against PCIe tree, in-switch reduction.

One module per idea: ``switches`` (generations, ports and chips, catalog layouts and domains), ``fabrics``
(bisection and all-reduce on a switch, a mesh and a PCIe tree, the fabric explorer) and ``measured``
(published NVLS measurements). Drawing and tables live in :mod:`course_lib.views.nvswitch`; every public
name is importable from here.
"""
from .switches import (chip_topology, domain_summary, draw_chips, draw_systems,  # noqa: F401
                       generations, layout, layout_ids, min_switch_chips, nvswitch_data, port_budget,
                       ports_needed, show_generations, show_port_budgets, show_real_systems, spread_links)
from .fabrics import (ALGORITHMS, FabricSeries, GPU_COUNTS, PCIE_GENERATIONS, PCIE_TREE_MAX_GPUS,  # noqa: F401
                      aggregate_bidirectional, all_reduce_times, busbw_over_wire, bytes_per_gpu,
                      fabric_comparison, fabric_explorer, fabric_series, mesh_bisection, mesh_pair_bandwidth,
                      pcie_tree_numbers, show_fabric_comparison, switch_bisection, switch_topology,
                      wire_factor)
from .measured import (nvls_by_gpu_count, nvls_measurements, plot_measurements, show_nvls_measurements,  # noqa: F401
                       size_sweep)
