"""Chapter 01: PCIe lanes and generations, the PCIe tree, staging through host memory, offloading.

Every bandwidth is bytes/s **per direction** unless a name says ``bidirectional``. One module per idea:
``links`` (a generation's and a link's rate, lanes, CPU lane budgets), ``trees`` (GPUs on CPU root ports or
behind PCIe switches, staged copies, the switch explorer), ``offload`` (CPU-GPU links and ZeRO-Offload
traffic, its explorer) and ``measured`` (published host<->device copies, a measurement of your own).
Drawing and tables live in :mod:`course_lib.views.pcie`; every public name is importable from here.
"""
from .links import (LANES, cpu_lanes, describe_link, encoding_efficiency, generation_table, generations,  # noqa: F401
                    gpus_on_cpu_lanes, lane_budget, link_lanes, link_steps, plot_generations, plot_lanes,
                    print_table, published, source_material_claims)
from .trees import (EXPLORER_GPU_COUNTS, MODES, MODE_LABELS, cpu_lanes_used, draw_pcie_trees, draw_system,  # noqa: F401
                    host_bandwidth_per_gpu, pcie_explorer, shared_bandwidth, staged_copy_time,
                    switch_copy_time, switch_curves, transfer_time, tree_summary)
from .offload import (cpu_gpu_link, cpu_gpu_links, offload_bytes, offload_curve, offload_explorer,  # noqa: F401
                      offload_time)
from .measured import (achievable_summary, measurement, measurements, plot_published, report_measurement,  # noqa: F401
                       DIRECTIONS, MEMORIES, HostDeviceMeasurement, measure_host_device_bandwidth)
