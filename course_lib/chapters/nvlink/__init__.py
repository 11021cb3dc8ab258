"""Chapter 02: NVLink generations, full meshes and their rings, bridges against PCIe, published measurements.

One module per idea: ``links`` (generations, vendor quotes, a GPU's NVLink bandwidth, bridges against
PCIe), ``mesh`` (links split between peers, the mesh explorer), ``rings`` (Hamiltonian rings packed on a
mesh, DGX-1's hybrid cube mesh) and ``measured`` (published measurements against the model). Drawing and
tables live in :mod:`course_lib.views.nvlink`; every public name is importable from here.
"""
from .links import (BRIDGE_SYSTEMS, VENDOR_QUOTES, bridge_vs_pcie, generations, gpu_bandwidth, nvlink_vs_pcie,  # noqa: F401
                    show_bridge_vs_pcie, show_generations, show_vendor_quotes, vendor_quotes)
from .mesh import (MESH_GPU_COUNTS, MeshSeries, full_mesh, is_full_mesh_possible, mesh_allreduce,  # noqa: F401
                   mesh_explorer, mesh_link_counts, mesh_series, per_peer_bandwidth, point_to_point_time)
from .rings import (MAX_RING_SEARCH_GPUS, dgx1_direct_links, dgx1_rings, dgx1_topology, direct_links,  # noqa: F401
                    draw_consumer_pairs, draw_dgx1, draw_rings, hamiltonian_cycles, pack_rings,
                    rings_bandwidth, show_dgx1_links)
from .measured import (measurements, model_vs_measured, plot_measurements, published_nvlink, show_measurements)  # noqa: F401
