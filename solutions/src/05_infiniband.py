# %% [markdown]
# # 05 · InfiniBand and multi-node training
#
# **Time:** about 75 minutes. **Prerequisites:** chapters 00-04: per direction vs bidirectional,
# NVSwitch nodes (03), the ring all-reduce, the alpha-beta model, algbw and busbw (04).
#
# **After this chapter you can**
# - explain what RDMA and GPUDirect RDMA remove from the data path, and why each GPU of a DGX has
#   its own NIC on its own PCIe switch;
# - convert InfiniBand port rates (EDR, HDR, NDR, XDR, in **bits** per second) into bytes per second,
#   and spot the "NDR200 moves ~100 GB/s" error;
# - compute a node's injection bandwidth and compare it with its NVLink bandwidth;
# - draw a rail-optimised fat tree and say why it keeps collective traffic one switch hop away;
# - derive the two-level (hierarchical) all-reduce time and use it to size the cliff between 8 and
#   16 GPUs, and say where that model disagrees with published measurements;
# - compare RoCE and TCP with InfiniBand, and read how `torchrun`, Slurm and NCCL place ranks
#   and pick links;
# - say when reducing in the InfiniBand switches (SHARP, NCCL's CollNet) beats the ring across nodes,
#   what it needs, and why its busbw can exceed the NICs' rate.
#
# Conventions as always: **1 GB = 10⁹ bytes**, **1 Gb/s = 10⁹ bits/s**, every bandwidth says *per
# direction* or *bidirectional*. Hardware numbers come from `course_lib.hardware` (each with a source);
# published measurements from `course_lib/data/published_multinode.json` and
# `published_collectives.json`, each with its URL.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, costmodel, hardware, prose, units
from course_lib.chapters import infiniband as ib
glue = prose.Glue("05")  # numbers the text below quotes from these cells

# %% [markdown]
# ## 1. Leaving the box: RDMA and GPUDirect RDMA
#
# Inside a node, GPUs write into each other's memory over NVLink. Between nodes every byte goes
# through a **NIC** (network interface card; InfiniBand calls it an HCA, host channel adapter) and a
# network of switches. How the NIC gets at the data decides how much of the wire you can use.
#
# **Ordinary sockets (TCP).** The application hands a buffer to the kernel; the kernel copies it into
# socket buffers, runs the TCP/IP stack on a CPU core, and the NIC reads those buffers. The receiver
# does the same in reverse. Every message costs system calls, at least one copy on each side, and CPU
# time that grows with the bandwidth.
#
# **RDMA (remote direct memory access).** The application *registers* a memory region once: the pages
# are pinned and the NIC is given their physical addresses. From then on the application posts work
# requests ("send these bytes", "write them at that remote address") to queues that the NIC reads
# directly, and the NIC moves the data itself:
# - **kernel bypass**: no system call per message; the data path does not go through the OS;
# - **zero copy**: the NIC reads the source buffer and writes the destination buffer, nothing in between;
# - **no remote CPU**: a one-sided RDMA write lands in the peer's registered memory without waking it.
#
# **GPUDirect RDMA** extends "registered memory" to GPU memory: the NIC reads and writes the GPU's HBM
# directly over PCIe, peer to peer. Without it a GPU's bytes make a detour: GPU → host memory (one
# PCIe crossing), then host memory → NIC (a second crossing), with host memory bandwidth and a CPU
# thread in the loop.
#
# **Why the NIC sits on the same PCIe switch as its GPU.** A peer-to-peer transfer that stays below one
# PCIe switch goes GPU → switch → NIC and never touches the CPU. If the NIC hangs off the other CPU
# socket, the same transfer climbs through the root complex and crosses the CPU interconnect, which is
# slower and on many platforms not allowed for peer-to-peer at all. NCCL's `NCCL_NET_GDR_LEVEL` sets how
# far apart a GPU and a NIC may be for GPUDirect RDMA (`PIX`: same PCIe switch, `PXB`: across PCIe
# switches, `PHB`: through the CPU, `SYS`: across sockets). A DGX H100 pairs each GPU with its own
# ConnectX-7 port behind the same PCIe switch.
#
# One more constraint: the NIC's PCIe slot must carry the port's rate. Compare a PCIe Gen5 x16 slot with
# InfiniBand ports (both per direction):

# %%
gen5 = hardware.pcie_link(5, 16)
print(f"{gen5.name}: {units.format_bandwidth(gen5.per_direction)}")
for port in ("ib-ndr", "ib-xdr"):
    link = hardware.network(port)
    fits = "fits in" if link.per_direction <= gen5.per_direction else "does NOT fit in"
    print(f"{link.name}: {link.detail} = {units.format_bandwidth(link.per_direction)} -> {fits} a Gen5 x16 slot")
glue("pcie5_x16", gen5.per_direction / units.GB, "{:.0f} GB/s")
glue("ndr_share_of_gen5", hardware.network("ib-ndr").per_direction / gen5.per_direction, "{:.0%}")
glue("xdr_per_direction", hardware.network("ib-xdr").per_direction / units.GB, "{:.0f} GB/s")

# %% [markdown]
# An NDR port uses {{ndr_share_of_gen5}} of a Gen5 x16 slot; an XDR port needs more than a Gen5 x16 slot can carry, which
# is why NICs and PCIe generations advance together.
#
# ## 2. InfiniBand generations: bits, not bytes
#
# InfiniBand ports are named by generation and sold by their rate in **gigabits** per second, per
# direction, for a standard 4-lane ("4x") port. The catalog turns them into bytes:

# %%
ib.show_generations()

# %% [markdown]
# Two traps hide in these names:
# - **bits vs bytes.** 400 Gb/s is 50 GB/s. Dividing by 8 is the single most important step of this
#   chapter.
# - **"4x" is the cable width, not a count.** "4x EDR" is one 100 Gb/s port of four lanes, not four
#   adapters (an NVIDIA maintainer had to point this out in an nccl-tests issue: the EDR row's source in
#   section 7).
#   The *2-lane* variants run at half the rate of their generation: **HDR100** and **NDR200**.

# %%
for port in ("ib-hdr100", "ib-ndr200"):
    link = hardware.network(port)
    print(f"{link.name}: {link.detail} = {units.format_bandwidth(link.per_direction)}"
          f" = {units.format_bandwidth(link.bidirectional, direction='bidirectional')}")

# %% [markdown]
# > **Myth / fact: "NDR200 moves ~100 GB/s."**
# > This claim appears in published material and is wrong. NDR200 is a 2-lane NDR port of **200 Gb/s**:
# > **25 GB/s per direction**, 50 GB/s counting both directions (printed above from the catalog). The
# > claim is 4 times too high per direction; even a full 4-lane NDR port is 50 GB/s per direction.
# > 100 GB/s per direction is an **XDR** (800 Gb/s) port. The likely slip: reading "Gb" as "GB" and then
# > halving, or mixing up generations. Always ask: bits or bytes, and per direction or both?
#
# ## 3. One NIC per GPU
#
# A DGX H100 has 8 GPUs on NVSwitch and 8 ConnectX-7 ports of 400 Gb/s for the compute network: one
# NIC per GPU. Two totals describe such a node, both per direction:
# - its **injection bandwidth**: what all its NICs can push into the network at once;
# - its **NVLink bandwidth**: the sum of its GPUs' NVLink ports.

# %%
for sid in ("dgx-a100", "dgx-h100", "dgx-b200"):
    s = hardware.system(sid)
    print(f"{s.name}\n   {s.nics_per_node} x {s.nic.detail}: injection {units.format_bandwidth(ib.node_injection(s))};"
          f" NVLink {units.format_bandwidth(ib.node_nvlink(s))}; per GPU {units.format_bandwidth(s.gpu_link.per_direction)}"
          f" NVLink vs {units.format_bandwidth(s.nic_bandwidth_per_gpu)} network -> ratio {ib.intra_inter_ratio(s):.1f}")
h100 = hardware.system("dgx-h100")
glue("h100_ratio", ib.intra_inter_ratio(h100), "{:.0f} times")
glue("h100_ratio_x", ib.intra_inter_ratio(h100), "{:.0f}x")
glue("h100_nic_per_gpu", h100.nic_bandwidth_per_gpu / units.GB, "{:.0f} GB/s")
glue("h100_nvlink_per_gpu", h100.gpu_link.per_direction / units.GB, "{:.0f} GB/s")
glue("h100_injection", ib.node_injection(h100) / units.GB, "{:.0f} GB/s")
glue("h100_nvlink_node", ib.node_nvlink(h100) / 1e12, "{:.1f} TB/s")

# %% [markdown]
# On a DGX H100 the network gives each GPU **{{h100_ratio}} less** bandwidth than NVLink ({{h100_nic_per_gpu}} vs
# {{h100_nvlink_per_gpu}} per direction), and the node as a whole has {{h100_injection}} of network against
# {{h100_nvlink_node}} of NVLink. Hold on to that ratio: section 5 shows why an all-reduce loses much less than
# {{h100_ratio_x}} when it leaves the node.
#
# Why one NIC per GPU rather than a few fat ones? In the multi-node all-reduce below, every GPU sends
# *its own* share of the data across the network at the same time. With one NIC per GPU, on the GPU's
# own PCIe switch, the eight flows never share a PCIe link, and each uses GPUDirect RDMA over the
# shortest path.
#
# ## 4. Rail-optimised fat trees
#
# Nodes connect through a **fat tree** (leaf and spine switches; with enough spines every half of the
# cluster can talk to the other half at full rate, called *full bisection bandwidth*). GPU clusters wire
# it **rail-optimised**: NIC *k* of every node goes to leaf switch *k*. The set of GPU *k* of all nodes is
# "rail *k*".

# %%
ib.draw_rails("dgx-h100", nodes=2);

# %% [markdown]
# Count the switches a message crosses on the network (no NVLink) between two GPUs in different nodes:

# %%
rails = ib.rail_topology("dgx-h100", nodes=2)
print("node 0 GPU 0 -> node 1 GPU 0 (same rail):     ", ib.switch_hops(rails, "n0.gpu0", "n1.gpu0"), "switch")
print("node 0 GPU 0 -> node 1 GPU 3 (different rail):", ib.switch_hops(rails, "n0.gpu0", "n1.gpu3"), "switches")

# %% [markdown]
# Collectives are built so that every network hop joins **NIC k of one node to NIC k of another**. NCCL
# uses the same NIC index at both ends of each inter-node hop of a ring or tree (its documented default
# for rail-optimised fabrics, controlled by `NCCL_CROSS_NIC`), and in the two-level all-reduce below the
# network step is *by construction* among GPU *k* of every node. So inter-node traffic stays on its rail,
# with no competition from the other seven rails. Within one *scalable unit* that is one leaf switch and
# one hop; a leaf has only so many ports, so a large cluster repeats the rail leaves per unit (32 DGX H100s
# per unit in NVIDIA's SuperPOD design), and the same rail between two units climbs leaf → spine → leaf,
# three switches (`ib.published_multinode()["rail_scope"]`). The drawing above is one unit. When data must
# reach another rail, NCCL (since 2.12, **PXN**) first moves it over NVLink to the GPU that owns the right
# NIC, instead of crossing the spines.
#
# ## 5. The two-level (hierarchical) all-reduce and the cliff
#
# Take $N$ nodes of $g$ GPUs, each GPU holding an $n$-byte buffer. NVLink gives each GPU $B_{\text{nvl}}$
# per direction; the network gives each GPU $B_{\text{net}}$ per direction (one NIC each). Do it in three
# phases:
#
# 1. **reduce-scatter inside each node** over NVLink: each GPU ends with $1/g$ of the node's sum;
#    time $\frac{g-1}{g}\cdot\frac{n}{B_{\text{nvl}}}$;
# 2. **all-reduce across nodes** among GPU *k* of every node (one rail), on the $n/g$ shard, as a ring:
#    $2\frac{N-1}{N}\cdot\frac{n/g}{B_{\text{net}}}$. All $g$ rails run at once: *the node's NICs share the work*;
# 3. **all-gather inside each node** over NVLink: $\frac{g-1}{g}\cdot\frac{n}{B_{\text{nvl}}}$.
#
# $$t = 2\frac{g-1}{g}\cdot\frac{n}{B_{\text{nvl}}} \;+\; 2\frac{N-1}{N}\cdot\frac{n}{g\,B_{\text{net}}}$$
#
# The network term carries $n/g$, not $n$: that is what the 8 NICs buy. `ib.hierarchical_phases` takes
# the phases from `costmodel.collective_time` and the total from `costmodel.predict`:

# %%
phases = ib.hierarchical_phases(10e9, nodes=2, system="dgx-h100")
for key in ("reduce_scatter_s", "inter_node_s", "all_gather_s", "launch_s", "time_s"):
    print(f"{key:<17} {units.format_time(phases[key])}")
print("busbw:", units.format_bandwidth(phases["busbw"]))

# %% [markdown]
# Now the cliff: the same 10 GB all-reduce on one node (8 GPUs, NVLink only) and on two nodes
# (16 GPUs), for three machines. `hierarchical` is the three phases one after another; `ring` is how
# NCCL actually runs rings across nodes, with NVLink and NIC transfers pipelined so that the slower link
# sets the pace (spec bandwidths, no efficiency losses yet):

# %%
machines = {"DGX H100, 8 x NDR": "dgx-h100", "DGX H100 with only 1 NDR NIC": hardware.system("dgx-h100").variant(nics_per_node=1),
            "DGX A100, 8 x HDR": "dgx-a100"}
for name, system in machines.items():
    c = ib.cliff(10e9, system, nodes=2)
    print(f"{name:<30} 1 node {units.format_time(c['one_node_s'])}, 2 nodes: two-level {units.format_time(c['hierarchical_s'])}"
          f" ({c['hierarchical_slowdown']:.2f}x), rings {units.format_time(c['ring_s'])} ({c['ring_slowdown']:.2f}x)")
    if name == "DGX H100, 8 x NDR":
        glue("cliff10_hier", c["hierarchical_slowdown"], "{:.1f}x")
        glue("cliff10_ring", c["ring_slowdown"], "{:.1f}x")
    if name == "DGX H100 with only 1 NDR NIC":
        glue("cliff10_1nic_hier", c["hierarchical_slowdown"], "{:.0f}x")
        glue("cliff10_1nic_ring", c["ring_slowdown"], "{:.0f}x")
# the explorer below, at its defaults (1 GB per GPU, DGX H100), from 2 nodes to 64
curve = ib.scaling_curve(1e9, max_nodes=64)
near, far = ib.cliff(1e9, nodes=2), ib.cliff(1e9, nodes=64)
print(f"1 GB per GPU, rings: busbw {units.format_bandwidth(curve['ring_busbw'][0])} on {curve['gpus'][0]} GPUs, "
      f"{units.format_bandwidth(curve['ring_busbw'][-1])} on {curve['gpus'][-1]}; 64 nodes vs 1: two-level "
      f"{far['hierarchical_slowdown']:.2f}x, rings {far['ring_slowdown']:.2f}x the time")
glue("ring_busbw_16", curve["ring_busbw"][0] / units.GB, "{:.0f} GB/s")
glue("ring_busbw_512", curve["ring_busbw"][-1] / units.GB, "{:.0f} GB/s")
glue("cliff_hier_2", near["hierarchical_slowdown"], "{:.1f}x")
glue("cliff_ring_2", near["ring_slowdown"], "{:.1f}x")
glue("cliff_hier_64", far["hierarchical_slowdown"], "{:.1f}x")
glue("cliff_ring_64", far["ring_slowdown"], "{:.1f}x")

# %% [markdown]
# > **Myth / fact: "Going past 8 GPUs onto InfiniBand is a performance cliff."**
# > Half true. Per GPU, bandwidth does drop {{h100_ratio_x}} on a DGX H100 (section 3). But an all-reduce sends only
# > $1/g$ of the buffer per GPU across the network, so with **one NIC per GPU** the 10 GB all-reduce
# > above gets {{cliff10_hier}} slower in the textbook model and {{cliff10_ring}} with pipelined rings on two nodes
# > (on 64 nodes, {{cliff_hier_64}} and {{cliff_ring_64}} at 1 GB: the network phase also slows with node count,
# > section 6). The cliff is steep, {{cliff10_1nic_hier}} to {{cliff10_1nic_ring}} above, when a node has **few NICs**; and it stays steep for traffic that does not shrink
# > by $g$: small, latency-bound messages, all-to-all (mixture-of-experts), point-to-point sends between
# > pipeline stages, and tensor parallelism, which is why chapter 07 keeps tensor parallelism inside
# > the NVLink domain.
#
# ### Explorer: nodes, GPUs per node, NIC speed, NVLink speed
# The green curve is one node; red and blue take the job across nodes (textbook two-level and pipelined
# rings); the black diamond is your job. Things to try:
# - from 1 node to 2 nodes at the defaults: the drop at the node boundary; then, with more nodes, ring busbw
#   keeps falling, from {{ring_busbw_16}} on 16 GPUs to {{ring_busbw_512}} on 512 (the ring's step latency grows
#   with its length, and the node-count decline of section 6);
# - NICs per node from 8 to 1: the real cliff;
# - NIC speed from 400 (NDR) to 800 Gb/s (XDR): how much of the cliff does it remove? (Each NIC reaches its GPU
#   over PCIe Gen5 x16, {{pcie5_x16}} per direction, less than an XDR port's {{xdr_per_direction}}: the model caps it there, and the readout names the cap.)
# - size 0.001 GB (1 MB): latency takes over, and more nodes keep costing.

# %%
explorer_box = ib.cliff_explorer()

# %% [markdown]
# ## 6. Where the model stops being true
#
# Published nccl-tests results for multi-node all-reduce, next to three models of the same run:
# the **textbook two-level** model (phases one after another, spec bandwidth), **pipelined rings**
# (spec bandwidth), and the course's cost model with the algorithm the source states and measured
# efficiencies (printed first, with their sources). All numbers are busbw in GB/s per direction.

# %%
for row in costmodel.efficiency_table():
    if row["technology"] in ("nvlink", "infiniband"):
        print(f"{row['technology']}: {row['efficiency']:.0%} of spec ({row['derivation']}; {row['url']})")
rows = ib.model_vs_measured()
ib.show_model_vs_measured(rows)
ib.plot_model_vs_measured(rows=rows);

# %% [markdown]
# The headline comparisons, computed from the same rows:

# %%
print("\n".join(ib.comparison_lines(rows)))
releases = costmodel.nccl_versions()  # the NCCL releases whose tuning tables the course reads
glue("tree_rule_old_last", [k for k in releases if costmodel.two_node_tree_rule(k) == "intra"][-1], "{}")
glue("tree_rule_new_first", next(k for k in releases if costmodel.two_node_tree_rule(k) == "min"), "{}")

# %% [markdown]
# What the comparison shows:
# 1. **NCCL does not run the phases one after another.** Its rings keep NVLink and the NICs busy at the
#    same time, so the slower of the two sets the pace, not their sum. On DGX H100 nodes with 8 NICs the
#    measured ring busbw sits just under the 8-NIC network bound, as the pipelined-ring model says, while
#    the textbook two-level model predicts about a quarter less. The two-level model is the right way to
#    *think* (what crosses the network is $n/g$ per GPU), and a pessimistic way to *predict*.
# 2. **A NIC reaches nearly all of its line rate, NVLink about 80%** (the one-node ring row). So in
#    practice the gap between the two levels is smaller than on paper: a single node's ring and eight
#    NICs' ring land close together. In-switch reduction (NVLink SHARP, "nvls") lifts one node above
#    the NVLink line rate, because the switch does the adding.
# 3. **Two nodes are special.** On exactly two nodes NCCL's double binary tree has a single edge
#    between the nodes, so each byte crosses the network once instead of about twice, and busbw can
#    reach nearly twice the NICs' rate (two A3 Mega VMs: 339 GB/s over NICs that carry 200). Whether
#    NCCL runs it is its own estimate's call, size by size, and the rule changed between versions: every NCCL
#    release through {{tree_rule_old_last}}.x rates a tree on two nodes by its intra-node (NVLink) bandwidth, which its topology
#    search lets reach twice the network's, and so picks it for large messages too, as runs on fabrics
#    such as [EFA](../docs/glossary.md#efa) and Google's [TCPXO](../docs/glossary.md#tcpxo) show (that A3 Mega pair); the tuning refactor of NCCL
#    {{tree_rule_new_first}} rates it by the slower of network and NVLink and picks it only for small and middle sizes, the
#    ring for large ones. The course prices each published run with the rule of the release it ran
#    (`predict --nccl-version`; [RoCE](../docs/glossary.md#roce) and InfiniBand pairs that ran the ring sit at the NICs' rate). Forced with
#    `NCCL_ALGO=Tree` the tree halves the network bytes anywhere. Read a two-node number as a property of
#    the algorithm and the NCCL version, not of the wire; NCCL's maintainers advise `NCCL_ALGO=RING` to
#    measure a network on two nodes.
# 4. **Configuration beats the model.** A RoCE cluster with PCIe [ACS](../docs/glossary.md#acs) left enabled ran at a fraction of
#    its link rate (nccl-tests issue 112 in the sources); GPUDirect RDMA disabled, a NIC on the wrong
#    socket, or the TCP fallback all do the same. The model tells you what to expect; a large shortfall
#    means something is misconfigured.
#
# ### By size and node count: every published case
#
# The course checks its cost model against every published nccl-tests all-reduce it carries
# (`python -m course_lib validation`): about three hundred cases from more than forty sources, one node
# to 540, each marked **fit** (used to set one of the model's constants: the launch cost, the NVLink and
# NVLS efficiencies, each fabric kind's figures, the pipeline fill, the tree's cap, the node-count
# decline), **informed** (looked at while making one of the model's structural choices, such as
# running NCCL's tree by default on two EFA or TCPXO nodes: shown, but not independent of the model, so
# never counted) or **test** (never used to set or choose anything). Every number below counts test
# cases only. The model is NCCL's: for each size it takes the
# fastest of ring, tree and NVLS that NCCL would run there, each with the LL, LL128 or Simple [protocol](../docs/glossary.md#nccl-protocols),
# with NCCL's latency and bandwidth tables. Below, both panels as predicted / measured busbw (above 1: the
# model is optimistic): the test cases by size, coloured by node count, and every node-count sweep.

# %%
vrows = costmodel.validation_table()
tiny = [r for r in vrows if r["nodes"] == 1 and r["nbytes"] < 2**16]
glue("tiny_worst", max(max(r["ratio"], 1 / r["ratio"]) for r in tiny), "{:.2f}x")
by_case = {r["id"]: r for r in vrows}
plugin_mid = [r for r in vrows if r["role"] == "test" and 2**20 <= r["nbytes"] < 2**27 and r["nodes"] > 1
              and (r["sweep"] or "").startswith(("polaris-a100-slingshot", "a3mega-2node"))]
glue("plugin_mid_worst", max(r["ratio"] for r in plugin_mid), "{:.1f}x")
glue("polaris_1m_measured", by_case["polaris-a100-8node-1M"]["measured_busbw"] / 1e9, "{:.1f} GB/s")
glue("polaris_1m_model", by_case["polaris-a100-8node-1M"]["predicted_busbw"] / 1e9, "{:.0f}")
glue("a3mega_16m_measured", by_case["a3mega-2node-16777216"]["measured_busbw"] / 1e9, "{:.0f} GB/s")
glue("a3mega_16m_model", by_case["a3mega-2node-16777216"]["predicted_busbw"] / 1e9, "{:.0f}")
tree_tests = [r for r in vrows if r["role"] == "test" and r["system"] == "dgx-b200" and r["nodes"] >= 4
              and (r["sweep"] or "").endswith("-tree")]
glue("tree_cap_worst", max(abs(r["ratio"] - 1) for r in tree_tests), "{:.0%}")
racks20 = [r for r in vrows if r["sweep"] == "coreweave-20racks-size"]
glue("racks20_first", min(racks20, key=lambda r: r["nbytes"])["measured_busbw"] / 1e9, "{:.0f} GB/s")
glue("racks20_last", max(racks20, key=lambda r: r["nbytes"])["measured_busbw"] / 1e9, "{:.0f}")
glue("racks20_lo", min(r["ratio"] for r in racks20), "{:.2f}")
glue("racks20_hi", max(r["ratio"] for r in racks20), "{:.2f}x")
gb200x4_mid = [r for r in vrows if r["sweep"] == "azure-nd-gb200-v6-size" and 2**20 <= r["nbytes"] <= 2**23]
glue("gb200x4_mid_fast", max(1 / r["ratio"] for r in gb200x4_mid), "{:.1f}x")
ib_hop_us = costmodel.fabric_kind("infiniband")["hop_latency_us"]
glue("tcpxo_hops", costmodel.fabric_kind("tcpxo")["hop_latency_us"] / ib_hop_us, "{:.0f}")
glue("slingshot_hops", costmodel.fabric_kind("slingshot")["hop_latency_us"] / ib_hop_us, "{:.0f}")
glue("efa_v1_efficiency", costmodel.fabric_kind("efa_v1")["efficiency"], "{:.0%}")
glue("efa_p6_efficiency", costmodel.fabric_kind("efa_p6")["efficiency"], "{:.0%}")
glue("efa_p5_efficiency", costmodel.fabric_kind("efa")["efficiency"], "{:.0%}")
fig = ib.validation_failure_plot(vrows)
for g in costmodel.validation_goals():
    print(f"{g['name']}: {g['within']} of {g['cases']} test cases ({g['share']:.0%})")

# %% [markdown]
# Where it holds: one node of 8 to 72 GPUs from 1 MiB up (A100, H200, B300, NVL72); InfiniBand
# fabrics from 128 MiB up, from two nodes to 128; forced ring, tree and [NVLS tree](../docs/glossary.md#nvls-tree) on B200 clusters out
# to 64 nodes. Where it stops being true, and why:
# - **Small messages: the fixed cost of a call.** Below 64 KiB the time *is* the latency, and the
#   latency is the machine, not the link: the same 8-GPU all-reduce of 1 KiB takes 45 µs on one cloud
#   A100 node and 30 µs on an H200 node. The model uses one launch cost (15 µs, the median of three
#   machines), so it is off by up to {{tiny_worst}} there (the worst one-node case below 64 KiB).
# - **Networks that are not InfiniBand: their own fabric kind.** Each kind (`python -m course_lib
#   validation` prints them; the numbers live in `fabrics.json`) has an efficiency and a cost per network
#   step set from *one* published run and tested on the others: Google's TCPXO costs about {{tcpxo_hops}} InfiniBand
#   hops per step, HPE [Slingshot](../docs/glossary.md#cxi)'s libfabric path {{slingshot_hops}} (set on two Alps nodes at 1 MiB), first-generation
#   EFA (p3dn, p4d) reaches {{efa_v1_efficiency}} of its line rate and runs only NCCL's Simple protocol, because the
#   plugin must set `NCCL_PROTO=simple` there; EFA on P6 (B200) reaches {{efa_p6_efficiency}}. P5 sits in between and
#   unmeasured: no published P5 run is bound by its NICs alone, so the course *assumes* {{efa_p5_efficiency}} and says so.
# - **Mid sizes through software network stacks.** Where every message crosses a plugin (TCPXO,
#   Slingshot's [CXI](../docs/glossary.md#cxi) provider, EFA), the model is optimistic between 1 and 128 MiB, by up to {{plugin_mid_worst}} on
#   the two such clusters in the data: ALCF Polaris (A100, Slingshot) at 1 MiB on 8 nodes measures
#   {{polaris_1m_measured}} against the model's {{polaris_1m_model}}; two A3 Mega VMs at 16 MiB {{a3mega_16m_measured}} against
#   {{a3mega_16m_model}}. A per-message cost the course does not have (each chunk waits for the
#   plugin) sets those sizes.
# - **The tree at scale is bound by the GPU, not the network.** Forced onto B200 nodes with eight
#   400 Gb/s NICs, NCCL's tree moves about 200 GB/s per node from 4 to 64 nodes, half what the NICs can
#   carry: at its default 16 [SMs](../docs/glossary.md#sm) the tree needs more SMs than NCCL gives it (NCCL's maintainers, in the
#   sources). The model caps the tree's network rate on Hopper and Blackwell at the value one published
#   sweep sets. The same cluster re-ran five of those node counts the next day (busbw within a few tenths of a
#   percent of them: re-runs of fit cases, role `also`, not tests); its new 64-node count and two sweeps on another B200
#   cluster test it (all within {{tree_cap_worst}} from 4 nodes up).
# - **Many nodes, and racks of NVL72.** Between NVL72 racks NCCL runs neither NVLS nor NVLS tree, and
#   its default is the ring (a GB200 user measured it: the ring was chosen, the forced tree was
#   faster). The ring's 2 × 1,439 steps over 20 racks cost a few milliseconds per call, which is why
#   busbw there climbs from {{racks20_first}} at 512 MiB to {{racks20_last}} at 4 GiB; the model now lands within
#   {{racks20_lo}}-{{racks20_hi}} (predicted / measured).
# - **Blackwell at small and mid sizes** runs faster than the tables: a 4-GPU GB200 ring at 1-8 MiB
#   measures up to {{gb200x4_mid_fast}} the model's busbw (newer NCCL, a faster launch path on Grace).
#
# ### Node scaling: what falls, and why
#
# A ring moves the same bytes per node on 4 nodes as on 64, and NCCL's own tables change nothing with
# node count at large sizes except the ring's step latency. Measured, busbw still falls a little: a
# B200 cluster on InfiniBand, forced to the ring at 16 GiB, went from 335 GB/s on 4 nodes to 291 on 46.
# More nodes send the ring's hops through more spine switches, where they meet each other and other
# jobs' traffic. The course fits that fall on that one sweep, **{{node_decline_per_doubling}} per doubling of the
# node count beyond 4 nodes** (`node_decline` in `efficiency.json`; fitting the slope only, because the cluster's
# own level is not the point), and tests it on every other published sweep: the cell below divides
# measured by predicted busbw for each of them and asks what is *left* per doubling beyond the model
# (1.00: nothing).

# %%
study = costmodel.node_sweep_study()
playbook = [r for r in vrows if r["sweep"] == "hf-playbook-allreduce-256MB-nodes" and r["nodes"] >= 4]
glue("playbook_lo", min(r["ratio"] for r in playbook), "{:.2f}x")
glue("playbook_hi", max(r["ratio"] for r in playbook), "{:.2f}x")
glue("node_decline_per_doubling", costmodel.node_decline_constants()["per_doubling"], "×{:.3f}")
azure = [r["ratio"] for r in vrows if r["sweep"] == "jz-azure-ndh100v5-8G-nodes-sl0" and r["nodes"] >= 16]
glue("azure_lo", min(azure), "{:.2f}x")
glue("azure_hi", max(azure), "{:.2f}x")
glue("roce_left_per_doubling", next(s for s in study if s["sweep"] == "a100-roce-100g-nodes-169")["residual_per_doubling"], "{:.2f}x")
left = sorted(s["residual_per_doubling"] for s in study if not s["fit_cases"] and not s["informed_cases"])
print(f"{len(left)} test sweeps: what falls beyond the model per doubling, median {left[len(left) // 2]:.2f}, "
      f"range {left[0]:.2f}-{left[-1]:.2f}")
for s in sorted(study, key=lambda s: s["residual_per_doubling"])[:5]:
    print(f"  {s['sweep'][:40]:<40} {s['fabric']:<10} nodes {s['nodes'][0]}-{s['nodes'][-1]}: "
          f"{s['residual_per_doubling']:.2f} per doubling beyond the model")

# %% [markdown]
# The median test sweep has nothing left to explain; the ones that do are conditions, not laws:
# - **A shared fabric under load.** On 64 Azure ND H100 v5 VMs at 8 GiB busbw fell from 392 GB/s
#   (8 nodes) to 224; the author blames congestion from other jobs, and [adaptive routing](../docs/glossary.md#adaptive-routing) changed the
#   shape but not the trend. Measured there, the model is {{azure_lo}} to {{azure_hi}}
#   optimistic from 16 nodes up.
# - **An untuned RoCE fabric.** An A100 cluster with eight 100 Gb/s RoCE NICs per node fell from 100 GB/s
#   on two nodes to 40 on six, {{roce_left_per_doubling}} per doubling beyond the model: drops and hash collisions in a
#   lossy Ethernet fabric (section 7), which tuned RoCE does not show.
# - **A mid size on a cloud cluster.** The Ultra-Scale Playbook's 256 MB all-reduce on H100 + EFA falls
#   from 436 GB/s on one node to 33 on 64; from 4 nodes up the model predicts {{playbook_lo}} to {{playbook_hi}}
#   what was measured. Its
#   spread is as telling as its median: at 64 nodes the 5th-95th percentile runs from 12.5 to 177 GB/s,
#   so the median is set by the slowest node of each call, not by the wire. (These runs decided that P5's
#   EFA figure stays an assumption, so they are **informed** cases: plotted in `validation`, not counted.)
# So: trust the model for bandwidth-bound sizes and the shape of the cliff; expect a shared or untuned
# fabric to fall further with node count, and measure your own node-count sweep
# (`python -m course_lib compare your_log.txt --system ...` says which of nodes, GPUs, NICs and fabric it
# had to guess, and what to try when a ratio is far from 1).
#
# ### A range, not a point
#
# One number hides how sure the model is. So every prediction the course shows (`predict`, `compare`,
# the explorers' readouts, the planner's step time) carries a **range**: where published runs *like
# this one* measured, as a multiple of the model. "Like this one" is the **regime**: the size band
# (below 1 MiB, 1-128 MiB, 128 MiB and up), the scale (one node, two, 3-16, more) and the software
# stack that carries the bytes (NVLink, xGMI or PCIe inside a node; between nodes InfiniBand, RoCE, or
# a network plugin: EFA, TCPX/TCPXO, gIB, Slingshot; or TCP sockets). Unlike stacks are never pooled: a
# plugin's per-message software cost is its own. The range aims to hold 80% of new runs (its **nominal
# coverage**). Its bounds come from the regime's **test** cases with each source weighing the same, and
# with few sources they are the extremes: a range has to hold a cluster the course has not seen, and one
# cluster's long sweep is still one cluster. A regime with fewer than 8 test cases, 3 sources or 2
# families (vendor x GPU generation x stack) **borrows**: the same stack's neighbouring sizes and scales,
# or, where the stack has too few runs, every stack at that size ("wide"), widened in both cases by the
# across-family spread. Every prediction prints a range, and says how it was made.

# %%
examples = {"one H100 node": ("dgx-h100", 1), "two P5 nodes (EFA)": ("aws-p5", 2),
            "64 H100 nodes (InfiniBand)": ("dgx-h100", 64)}
for label, (system, nodes) in examples.items():
    for nbytes in (2**20, 2**33):
        busbw = costmodel.predict("all_reduce", nbytes, system, nodes=nodes).busbw[0] / 1e9
        print(f"{label}, {nbytes / 2**20:g} MiB: busbw {busbw:.3g} GB/s; "
              f"{costmodel.range_phrase(busbw, costmodel.range_for(nbytes, nodes, system))}")

# %% [markdown]
# Read a range as "where most runs like this one land", not "your run will land here".
# Is it honest? The cell below checks each range on cases it did not see, two ways: leave out every case
# of that case's source (one cluster's sweep is not independent of itself) and ask whether the range
# rebuilt from the *other* sources holds it, and, stricter for a new kind of machine, leave out its whole
# family (every cluster of that vendor, GPU generation and stack).

# %%
coverage = costmodel.coverage_by_regime()
def share(c):
    return "not checkable" if c["coverage"] is None else f"{c['covered']} of {c['checked']} ({c['coverage']:.0%})"
for r in coverage:
    print(f"{r['regime']:<36} {r['low']:.2f}-{r['high']:.2f}x ({r['made']}, {r['cases']} cases, {r['sources']} "
          f"sources); held when left out: source {share(r['by_source'])}, family {share(r['by_family'])}")
held = costmodel.coverage_summary(coverage)
print(f"all regimes: source {share(held['by_source'])}, family {share(held['by_family'])}; nominal {held['nominal']:.0%}")
glue("range_loso", held["by_source"]["coverage"], "{:.0%}")
glue("range_lofo", held["by_family"]["coverage"], "{:.0%}")
glue("range_nominal", held["nominal"], "{:.0%}")

# %% [markdown]
# Over every regime, {{range_loso}} of the cases land inside the range rebuilt without their source and
# {{range_lofo}} inside the range rebuilt without their whole family, against the nominal {{range_nominal}}. Regimes
# differ: where a stack has few runs the range is wide, and says so; that is the honest answer, not a
# failure. `compare` marks a size of your own log as **unusual** when it falls outside its regime's range
# and is not within a few percent of the model.
#
# **Why a cluster sits where it does.** Inside one regime, clusters differ by more than the model's
# error. Four test cases from the same regime (128 MiB and up, more than 16 nodes, InfiniBand):

# %%
by_id = {r["id"]: r for r in costmodel.validation_table()}
cases = {c["id"]: c for c in costmodel.published()["cases"]}
for cid, why in (("together-slinky-b200-32node-32G-ring", "B200, a fabric that stays flat with node count"),
                 ("mn5-h100-128node-4GB-2024-05-22", "H100 supercomputer, dedicated fat tree"),
                 ("together-use3a-b200-32node-16G-nvls", "B200, the cluster the node decline was fit on"),
                 ("jz-azure-ndh100v5-8G-64node-sl0", "H100 cloud VMs, shared fabric")):
    r = by_id[cid]
    rng = costmodel.range_for(r["nbytes"], r["nodes"], costmodel.case_system(cases[cid]), cases[cid].get("fabric"))
    where = "inside" if rng.holds(1 / r["ratio"]) else "OUTSIDE"
    print(f"{cid:<38} {r['nodes']:>3} nodes: measured {1 / r['ratio']:.2f}x the model, {where} "
          f"{rng.low:.2f}-{rng.high:.2f} ({why})")

# %% [markdown]
# The model prices the hardware and one measured node-count decline; the range shows what it leaves
# out, and each cluster's place has a cause you can name. The slinky cluster sits above the model: its
# busbw stays flat from 4 nodes to 64, while the model carries the decline measured on another cluster.
# That other cluster, use3a, sits a little below at every node count (its forced ring runs below the
# model by about the same factor from 4 nodes to 46): a level set by its tuning, firmware or NCCL
# build, not by scale. MareNostrum 5's dedicated fat tree sits at the model out to 128 nodes. Azure's
# 64 VMs sit far below: a shared fabric, where the blog's author blames congestion from other jobs. Two
# runs in the same regime can sit at opposite ends of the range for reasons the hardware does not show,
# which is why the course gives a range and asks you to measure your own.
#
# ## 7. RoCE and TCP as alternatives
#
# - **RoCE v2** (RDMA over Converged Ethernet) carries the same RDMA verbs over UDP/IP on Ethernet
#   switches, so NCCL's InfiniBand transport runs on it unchanged, GPUDirect RDMA included. InfiniBand is
#   lossless by design (a sender transmits only when the receiver has granted buffer credits); Ethernet
#   drops packets when queues overflow, and RDMA transports recover badly from drops. RoCE therefore
#   needs a **lossless or congestion-controlled configuration**: priority flow control (PFC) on the RDMA
#   traffic class, ECN marking with a congestion-control algorithm, and load balancing for a few very
#   large flows. Tuned, it matches InfiniBand: Meta trained on a 24k-GPU RoCE cluster and a 24k-GPU
#   InfiniBand cluster side by side.
# - **TCP sockets** (NCCL's `NET/Socket` transport) need no special network, but add the copies and
#   CPU work of section 1, and reach a much smaller share of the line rate, especially at 100 Gb/s and
#   above.

# %%
ib.show_transports()
ib.plot_transports();

# %% [markdown]
# ## 8. Placing ranks across nodes: torchrun, Slurm, Kubernetes, NCCL
#
# A multi-node job runs one process per GPU. The launcher on each node starts `--nproc-per-node`
# processes and gives each its coordinates as environment variables: `LOCAL_RANK` (the GPU index on that
# node), `RANK` (unique across the job), `WORLD_SIZE` (all processes), plus `MASTER_ADDR`/`MASTER_PORT`
# for the first contact. The examples are for reading, not for running here.
#
# **torchrun, by hand** (run the same command on every node; the c10d rendezvous at the endpoint assigns
# node ranks):
# ```bash
# torchrun --nnodes=4 --nproc-per-node=8 \
#          --rdzv-backend=c10d --rdzv-endpoint=node0.example:29500 --rdzv-id=job42 \
#          train.py
# ```
# **Slurm** (one task per node that runs torchrun; the first node of the allocation is the endpoint):
# ```bash
# #SBATCH --nodes=4
# #SBATCH --ntasks-per-node=1
# #SBATCH --gpus-per-node=8
# head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
# srun torchrun --nnodes="$SLURM_NNODES" --nproc-per-node=8 \
#      --rdzv-backend=c10d --rdzv-endpoint="$head:29500" --rdzv-id="$SLURM_JOB_ID" train.py
# ```
# Alternatively `srun --ntasks-per-node=8` starts one task per GPU itself and the script maps
# `SLURM_PROCID` to `RANK` and `SLURM_LOCALID` to `LOCAL_RANK`.
#
# **Kubernetes**: a training operator (for example Kubeflow's PyTorchJob) creates one pod per node with
# 8 GPUs and the RDMA NICs attached, and runs the same torchrun command with the node count and the
# rendezvous endpoint filled in.
#
# **Inside `train.py`**, NCCL reads the environment and chooses the links itself:
# ```python
# import os, torch, torch.distributed as dist
# torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
# dist.init_process_group("nccl")        # RANK, WORLD_SIZE, MASTER_ADDR/PORT from torchrun
# ```
# Run once with `NCCL_DEBUG=INFO` (add `NCCL_DEBUG_SUBSYS=INIT,NET` to cut the noise) and read what it
# picked: connections `via P2P/...` stay inside a node on NVLink; `via NET/IB/.../GDRDMA` cross the
# network with GPUDirect RDMA (InfiniBand or RoCE); `via NET/Socket` means NCCL fell back to TCP, usually
# a sign of a missing RDMA driver or device. `NCCL_IB_HCA` and `NCCL_SOCKET_IFNAME` choose the devices.
#
# The rank arithmetic of the launcher, for 2 nodes of 4 GPUs:

# %%
ib.show_rank_table(nnodes=2, nproc_per_node=4)
print("A ring in RANK order over 4 nodes x 8 GPUs:", ib.ring_crossings(4, 8))

# %% [markdown]
# Consecutive ranks share a node, so a ring in rank order stays on NVLink for all but one hop per node:
# the placement that keeps `RANK` and `LOCAL_RANK` aligned with nodes and GPUs is what lets NCCL keep
# traffic where the bandwidth is.
#
# ## 9. Reducing in the network: SHARP and CollNet
#
# A ring or a tree sends every byte through a node's NICs about twice: once while the partial sums go
# round (reduce-scatter), once while the results come back (all-gather). The busbw of nccl-tests counts
# exactly those bytes, so a ring's busbw can reach the NICs' line rate and no more. **SHARP** (Scalable
# Hierarchical Aggregation and Reduction Protocol) moves the addition into the InfiniBand switches: each
# node sends its data once up a reduction tree of switches, the switches add, and each node receives the
# finished sum once. Per node the NICs now carry each byte once each way, so algbw can approach the NIC
# rate and **busbw, which still multiplies algbw by 2(p-1)/p, can approach twice the NICs' rate**. It is
# the network-wide version of chapter 03's NVLS, and NCCL combines the two: reduce inside the node (on
# the NVSwitch where it can, NVLS), SHARP between nodes. NCCL calls the family **CollNet**
# (`NCCL_ALGO=CollnetDirect` or `CollnetChain`); the course prices it as `predict --algo collnet`.
#
# **What it needs**, and why many clusters with InfiniBand do not have it:
# - SHARP-capable switches (Quantum and later) on every path of the job;
# - the aggregation manager (`sharp_am`, beside the subnet manager), which hands each job its reduction
#   trees; if it does not answer, jobs fail to create SHARP groups and NCCL silently uses the ring;
# - NCCL's SHARP plugin (`Loaded collnet plugin SHARP` in `NCCL_DEBUG=INFO`) and `NCCL_COLLNET_ENABLE=1`.
#   NCCL never chooses CollNet on its own without them, and the model does not either: it prices
#   CollNet only when asked.
#
# **When it wins.** Large all-reduces across nodes, where the ring is bound by its NICs. It does not help
# all-gather (there is nothing to add), it does not help inside one node (NVLS already reduces there), and
# on two nodes the NVLS tree, which also sends each byte across only once, is as good or better. The
# switches' aggregation has its own limit: the model moves algbw at a measured share of the NICs'
# achievable rate (`efficiency.json` `collnet`), set on one cluster's published CollNet column and
# tested on another cluster's CollnetChain and CollnetDirect runs.

# %%
collnet = ib.collnet_view()
print(f"SHARP moves {collnet['sharp_efficiency']:.0%} of the NICs' achievable rate "
      f"(fit on the {sum(p['role'] == 'fit' for p in collnet['published'])} fit cases below)")
for algo, values in collnet["busbw"].items():
    print(f"{algo:8s} busbw at {collnet['nodes'][0]} / {collnet['nodes'][-1]} nodes: "
          f"{values[0] / 1e9:5.0f} / {values[-1] / 1e9:5.0f} GB/s")
print(f"NIC line rate per node: {collnet['nic_line_rate'] / 1e9:.0f} GB/s per direction")
ib.show_collnet(collnet)
ib.plot_collnet(view=collnet);

# %% [markdown]
# Read the figure from the dashed line. The ring sits below it at every node count; CollNet sits well
# above it from 4 nodes on, because the bytes each NIC carries per byte of all-reduce were halved, not
# because the wire got faster. The NVLS tree is above it only on 2 nodes, where it too crosses the
# network once per byte. The test runs (open circles, 32 GiB, another cluster) land on the model's line
# for CollnetChain; CollnetDirect runs a little faster than the model on 2-16 nodes.
#
# ## Check your understanding
# 1. Why does a DGX H100 give each GPU its own NIC on its own PCIe switch, instead of eight NICs on the CPUs?
#
# <details><summary>Answer</summary>
#
# With GPUDirect RDMA the NIC reads the GPU's memory peer to peer. Below one PCIe switch that path is
# GPU → switch → NIC and never touches the CPU, host memory or the other socket; and each of the eight
# GPU-NIC flows has its own PCIe links, so they do not share bandwidth.
# </details>
#
# 2. A cluster has 8-GPU nodes with a single 400 Gb/s NIC per node. How much network bandwidth does each
#    GPU get during the inter-node phase, and how does that phase compare with a DGX H100's?
#
# <details><summary>Answer</summary>
#
# 50 GB/s per direction shared by 8 GPUs: 6.25 GB/s each, 8 times less than on a DGX H100 (one NIC per
# GPU), so the inter-node phase takes 8 times longer. That is the steep cliff in the explorer with NICs
# per node set to 1.
# </details>
#
# 3. Why does the network term of the two-level all-reduce barely grow from 16 to 1,024 nodes?
#
# <details><summary>Answer</summary>
#
# It is $2\frac{N-1}{N}\cdot\frac{n}{g B_{\text{net}}}$, and $2\frac{N-1}{N}$ goes from 1.875 (16 nodes) to
# 1.998 (1,024 nodes). What grows is the number of ring steps, $2(N-1)$, each paying a network latency:
# it matters for small messages.
# </details>
#
# 4. An nccl-tests run on two nodes reports a busbw above the line rate of the nodes' NICs. Broken benchmark?
#
# <details><summary>Answer</summary>
#
# No: on two nodes NCCL defaults to a tree that moves less data across the network than the busbw formula
# assumes, so busbw is not a physical bandwidth there. Force `NCCL_ALGO=RING` to measure the network.
# </details>
#
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer. Numbers are compared with a
# relative tolerance, so you do not need to round.
#
# **Exercise 05.1** (1 point). *Spot the error.* One of these claims is wrong. Which one? Store its letter
# in `wrong_network_claim`.
#
# - **A.** An NDR200 InfiniBand port moves about 100 GB/s.
# - **B.** An XDR InfiniBand port carries 100 GB/s in each direction.
# - **C.** A DGX H100 has eight 400 Gb/s ports for compute traffic: 400 GB/s per direction per node.
# - **D.** HDR100 and NDR200 are two-lane versions of the HDR and NDR ports.

# %% exercise="05.1"
wrong_network_claim = "A"

# %% [markdown]
# **Exercise 05.2** (1 point). A design document needs 100 GB/s **in each direction** out of a node and
# plans "one NDR200 port, ~100 GB/s". How many NDR200 ports does it really need? Store the number in
# `ndr200_ports_needed`.

# %% exercise="05.2"
ndr200_ports_needed = 100 / (200 / 8)

# %% [markdown]
# **Exercise 05.3** (1 point). A cloud VM: Azure's **NC H100 v5** (`hardware.system("azure-nc-h100-nvl")`: its
# GPUs, NICs and links). When all its GPUs send across the network at once, how much network bandwidth does
# **each GPU** get, in **GB/s per direction**? Store it in `vm_network_per_gpu_gb_s`.

# %% exercise="05.3"
vm = hardware.system("azure-nc-h100-nvl")
vm_network_per_gpu_gb_s = vm.nics_per_node * vm.nic.per_direction / vm.gpus_per_node / units.GB

# %% [markdown]
# **Exercise 05.4** (1 point). On that VM, **per GPU**, how many times more bandwidth does NVLink give than the
# network, both per direction, when every GPU sends at once? Store the ratio in `nvlink_to_network_ratio`.

# %% exercise="05.4"
nvlink_to_network_ratio = vm.gpu_link.per_direction / units.GB / vm_network_per_gpu_gb_s

# %% [markdown]
# **Exercise 05.5** (2 points). In the ideal two-level model of section 5 (spec bandwidths per direction,
# no latency), how many **seconds** does an all-reduce of a **10 GB** buffer per GPU take on **4 DGX H100
# nodes** (32 GPUs)? Store it in `hier_time_4_nodes_s`.

# %% exercise="05.5"
n_buf, g_node, n_nodes = 10e9, 8, 4
hier_time_4_nodes_s = (2 * (g_node - 1) / g_node * n_buf / 450e9
                       + 2 * (n_nodes - 1) / n_nodes * (n_buf / g_node) / 50e9)

# %% [markdown]
# **Exercise 05.6** (2 points). Write the model as a function. `hierarchical_time` returns the seconds of a
# two-level all-reduce (bandwidth terms only): reduce-scatter inside each node, ring all-reduce of the
# shard across nodes, all-gather inside each node. `nvlink_bw` and `nic_bw_per_gpu` are bytes/s per
# direction for one GPU. It must work for any `gpus_per_node` and `nodes` (including 1).

# %% exercise="05.6"
def hierarchical_time(nbytes, nodes, gpus_per_node, nvlink_bw, nic_bw_per_gpu):
    """Seconds for a two-level all-reduce of nbytes per GPU (bandwidth terms only)."""
    shard = nbytes / gpus_per_node
    in_node = 2 * (gpus_per_node - 1) * shard / nvlink_bw
    across = 2 * (nodes - 1) / nodes * shard / nic_bw_per_gpu
    return in_node + across

# %% [markdown]
# **Exercise 05.7** (1 point). A job runs `torchrun --nnodes=4 --nproc-per-node=8 ...`. The process that
# drives GPU 3 (`LOCAL_RANK=3`) on the node with node rank 2 (nodes counted from 0): what is its `RANK`?
# Store it in `rank_of_local3_on_node2`.

# %% exercise="05.7"
rank_of_local3_on_node2 = 2 * 8 + 3

# %% [markdown]
# **Exercise 05.8** (1 point). *Predict.* The all-reduce of exercise 05.5 (10 GB per GPU, ideal two-level
# model) moves from **4 to 16 DGX H100 nodes**. What happens to its time? Store the letter in
# `more_nodes_prediction`.
#
# - **A.** It grows 4 times: four times the nodes to reach.
# - **B.** It grows a little, by roughly a tenth: the inter-node factor goes from 2·3/4 to 2·15/16.
# - **C.** It shrinks 4 times: four times the NICs share the work.
# - **D.** It doubles: the inter-node ring is twice as long.

# %% exercise="05.8"
more_nodes_prediction = "B"

# %% [markdown]
# **Exercise 05.9** (2 points, graded by hand). *Explain a measurement.* An nccl-tests user reports
# (nccl-tests issue 175) all-reduce busbw of **232 GB/s on one node** of 8 A100s, and **86 GB/s on two
# nodes**, each node with four 200 Gb/s InfiniBand ports. Using the two-level model, explain which link
# limits the two-node run, and which single upgrade would raise its busbw most. Answer in 3-5 sentences in
# `two_node_explanation` (a string).
#
# The rubric and a model answer appear under the check cell once you have written your answer.

# %% exercise="05.9"

# %% [markdown]
# **Exercise 05.10** (2 points). *Predict.* On 4 Azure ND H100 v5 VMs (8 × 400 Gb/s InfiniBand each),
# an 8 GiB all-reduce measured **335.3 GB/s** busbw. Carry that measurement to **64 VMs** with the
# course's node-count decline (`costmodel.node_decline(nodes)`, or `costmodel.node_decline_constants()`:
# a factor `per_doubling` for every doubling beyond `from_nodes`). Store the busbw in GB/s in
# `busbw_64_nodes_gb_s`.

# %% exercise="05.10"
busbw_64_nodes_gb_s = 335.3 * costmodel.node_decline(64) / costmodel.node_decline(4)

# %% [markdown]
# **Exercise 05.11** (2 points, graded by hand). *Diagnose.* The same blog measured **223.5 GB/s** on
# 64 VMs. Say in 3-5 sentences in `shared_fabric_diagnosis` (a string) why your prediction is higher,
# what condition the course's decline does not include, and one measurement that would tell that
# condition apart from a broken node or cable.
#
# The rubric and a model answer appear under the check cell once you have written your answer.

# %% exercise="05.11"

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals(), chapter="05")` scores every exercise of the notebook without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="05")

# %% [markdown]
# ## Takeaways
# - RDMA lets the NIC move registered memory itself (kernel bypass, zero copy); **GPUDirect RDMA** lets it
#   read GPU memory directly, which is why each GPU gets its own NIC on its own PCIe switch.
# - InfiniBand ports are quoted in **bits**: EDR/HDR/NDR/XDR = 100/200/400/800 Gb/s = **12.5/25/50/100 GB/s
#   per direction**. NDR200 is 25 GB/s per direction, not ~100 GB/s.
# - A DGX H100 injects **{{h100_injection}} per direction** into the network against {{h100_nvlink_node}} of NVLink:
#   per GPU, **{{h100_ratio_x}} less**.
# - Rail-optimised fat trees put NIC *k* of every node on leaf *k*: collective traffic between GPU *k* of
#   different nodes crosses **one switch**.
# - The two-level all-reduce sends only **n/g per GPU** across the network; with one NIC per GPU leaving
#   the node costs {{cliff_ring_2}} to {{cliff_hier_2}} for a 1 GB all-reduce on two nodes and {{cliff_ring_64}} to
#   {{cliff_hier_64}} on 64 (the explorer's defaults), with one NIC per node {{cliff10_1nic_hier}} to
#   {{cliff10_1nic_ring}}.
#   Small messages, all-to-all and point-to-point traffic feel the full gap.
# - Measured multi-node rings get within a few percent of the NICs' line rate; NCCL pipelines the two
#   levels, so the textbook sequential model is pessimistic; two-node results depend on the algorithm.
# - RoCE v2 matches InfiniBand when the Ethernet is configured lossless/congestion-controlled; TCP sockets
#   reach a fraction of the line rate.
# - `torchrun` gives every process `RANK`, `LOCAL_RANK`, `WORLD_SIZE`; NCCL picks NVLink inside a node and
#   the NICs between nodes; `NCCL_DEBUG=INFO` shows what it picked.

# %% [markdown]
# ## Worked questions
# Try each before opening the answer; the code cell under them lets you check with the library.
#
# **W1.** Data parallelism of a 70B model, BF16 gradients (140 GB per step), on 64 DGX H100 nodes: how long
# does the gradient all-reduce take in the ideal two-level model, and which phase dominates?
#
# <details><summary>Answer</summary>
#
# `ib.hierarchical_phases(140e9, 64)`: about {{w1_total}}, of which {{w1_network}} is the network phase
# ({{w1_network_share}}) and {{w1_nvlink_phase}} each for the reduce-scatter and all-gather over NVLink. The network
# phase is longer than section 5's formula gives at the NICs' spec rate: at 64 nodes the model applies the
# node-count decline of section 6, {{w1_decline}} of the rate ({{node_decline_per_doubling}} per doubling beyond 4 nodes).
# Real training splits this into buckets and overlaps it with the backward pass (chapter 06).
# </details>
#
# **W2.** The same cluster upgrades to XDR NICs (800 Gb/s). Does the all-reduce take half the time?
#
# <details><summary>Answer</summary>
#
# No, and the network phase does not halve either: {{w1_network}} → {{w2_network}}. An XDR port carries
# {{xdr_per_direction}} per direction, but each NIC reaches its GPU over PCIe Gen5 x16, {{pcie5_x16}}, and the model caps it
# there (section 1). The NVLink phases stay at {{w1_nvlink_phase}} each, so the total drops from {{w1_total}} to
# {{w2_total}}, {{w2_saving}} less.
# </details>
#
# **W3.** A team wants to save money with one 400 Gb/s NIC per node instead of eight. What happens to W1?
#
# <details><summary>Answer</summary>
#
# With one NIC per node the network phase grows {{w3_network_growth}} to {{w3_network}} and the all-reduce to
# {{w3_total}}, {{w3_growth}} longer: the node now injects {{w3_injection}} per direction for 8 GPUs.
# </details>

# %%
w1 = ib.hierarchical_phases(140e9, 64)
w2 = ib.hierarchical_phases(140e9, 64, hardware.system("dgx-h100").variant(nic_gbit_s=800))
w3 = ib.hierarchical_phases(140e9, 64, hardware.system("dgx-h100").variant(nics_per_node=1))
for name, r in (("W1 8 x NDR", w1), ("W2 8 x XDR", w2), ("W3 1 x NDR", w3)):
    print(f"{name}: {units.format_time(r['time_s'])} (network phase {units.format_time(r['inter_node_s'])})")
print(f"node-count decline at 64 nodes: {costmodel.node_decline(64):.3f} of the network rate")
glue("w1_total", w1["time_s"], "{:.2f} s")
glue("w1_network", w1["inter_node_s"], "{:.2f} s")
glue("w1_network_share", w1["inter_share"], "{:.0%}")
glue("w1_nvlink_phase", w1["reduce_scatter_s"], "{:.2f} s")
glue("w1_decline", costmodel.node_decline(64), "{:.3f}")
glue("w2_network", w2["inter_node_s"], "{:.2f} s")
glue("w2_total", w2["time_s"], "{:.2f} s")
glue("w2_saving", 1 - w2["time_s"] / w1["time_s"], "{:.0%}")
glue("w3_network", w3["inter_node_s"], "{:.1f} s")
glue("w3_network_growth", w3["inter_node_s"] / w1["inter_node_s"], "{:.0f}x")
glue("w3_total", w3["time_s"], "{:.2f} s")
glue("w3_growth", w3["time_s"] / w1["time_s"], "{:.1f}x")
glue("w3_injection", ib.node_injection(hardware.system("dgx-h100").variant(nics_per_node=1)) / units.GB, "{:.0f} GB/s")

# %% [markdown]
# **W4.** Two nodes, each with 8 GPUs on NVLink and 2 HDR NICs, report all-reduce busbw of 55 GB/s. Is
# that more than the network can carry?
#
# <details><summary>Answer</summary>
#
# The NICs carry 2 x 25 = 50 GB/s per direction per node, and 55 GB/s is above it: NCCL's tree on two
# nodes moves less than the busbw formula assumes (section 6, point 3). Rerun with `NCCL_ALGO=RING` to
# measure the network itself.
# </details>
#
# ## Further reading
# - InfiniBand Trade Association, *InfiniBand roadmap* (port rates per generation): https://www.infinibandta.org/infiniband-roadmap/
# - NVIDIA, *GPUDirect RDMA* (how the NIC reads GPU memory; PCIe topology requirements): https://docs.nvidia.com/cuda/gpudirect-rdma/
# - NVIDIA, *DGX H100 user guide, hardware overview* (8 ConnectX-7 for compute): https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html
# - NVIDIA, *InfiniBand cluster bring-up: setting the cluster topology* (rail-optimised fat trees): https://docs.nvidia.com/networking/display/ibclusterbringupprocedure/setting+the+infiniband+cluster+topology
# - NVIDIA developer blog, *Doubling all2all performance with NCCL 2.12* (PXN, rails): https://developer.nvidia.com/blog/doubling-all2all-performance-with-nvidia-collective-communication-library-2-12/
# - NVIDIA, *NCCL environment variables* (`NCCL_DEBUG`, `NCCL_NET_GDR_LEVEL`, `NCCL_IB_HCA`, `NCCL_ALGO`): https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
# - NVIDIA nccl-tests, *Performance* (algbw and busbw): https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
# - PyTorch, *torchrun (elastic launch)*: https://docs.pytorch.org/docs/stable/elastic/run.html
# - Meta Engineering, *Building Meta's GenAI infrastructure* and *A RoCE network for distributed AI training at scale*:
#   https://engineering.fb.com/2024/03/12/data-center-engineering/building-metas-genai-infrastructure/ ,
#   https://engineering.fb.com/2024/08/05/data-center-engineering/roce-network-distributed-ai-training-at-scale/
# - Every measurement in this chapter cites a source id of the course bibliography, `course_lib/data/sources.json`: `datafiles.source(id)` (in `course_lib.datafiles`) gives its title, URL, publisher and year.
