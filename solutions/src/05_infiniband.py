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
#   and pick links.
#
# Conventions as always: **1 GB = 10⁹ bytes**, **1 Gb/s = 10⁹ bits/s**, every bandwidth says *per
# direction* or *bidirectional*. Hardware numbers come from `course_lib.hardware` (each with a source);
# published measurements from `course_lib/data/published_multinode.json` and
# `published_collectives.json`, each with its URL.

# %%
# %matplotlib inline
from course_lib import checks, costmodel, hardware, units
from course_lib.explorers import infiniband as ib

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

# %% [markdown]
# An NDR port uses 80% of a Gen5 x16 slot; an XDR port needs more than a Gen5 x16 slot can carry, which
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

# %% [markdown]
# On a DGX H100 the network gives each GPU **9 times less** bandwidth than NVLink (50 vs 450 GB/s per
# direction), and the node as a whole has 400 GB/s of network against 3.6 TB/s of NVLink. Hold on to
# that ratio: section 5 shows why an all-reduce loses much less than 9x when it leaves the node.
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
# reach another rail, NCCL (since 2.12, "PXN") first moves it over NVLink to the GPU that owns the right
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

# %% [markdown]
# > **Myth / fact: "Going past 8 GPUs onto InfiniBand is a performance cliff."**
# > Half true. Per GPU, bandwidth does drop 9x on a DGX H100 (section 3). But an all-reduce sends only
# > $1/g$ of the buffer per GPU across the network, so with **one NIC per GPU** the 10 GB all-reduce
# > above gets about 1.6x slower in the textbook model and about 1.2x with pipelined rings. The cliff is
# > steep, 6-10x above, when a node has **few NICs**; and it stays steep for traffic that does not shrink
# > by $g$: small, latency-bound messages, all-to-all (mixture-of-experts), point-to-point sends between
# > pipeline stages, and tensor parallelism, which is why chapter 07 keeps tensor parallelism inside
# > the NVLink domain.
#
# ### Explorer: nodes, GPUs per node, NIC speed, NVLink speed
# The green curve is one node; red and blue take the job across nodes (textbook two-level and pipelined
# rings); the black diamond is your job. Things to try:
# - from 1 node to 2 nodes at the defaults: the drop at the node boundary; then, node after node, busbw keeps
#   falling a little with every doubling (more ring steps, and the fabric's measured decline with node count,
#   which the readout names as a cap);
# - NICs per node from 8 to 1: the real cliff;
# - NIC speed from 400 (NDR) to 800 Gb/s (XDR): how much of the cliff does it remove? (The readout names the
#   cap that stops it: each GPU reaches its NIC through a PCIe Gen5 x16 link.)
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
#    reach nearly twice the NICs' rate (two A3 Mega VMs: 339 GB/s over NICs that carry 200). NCCL runs
#    that tree by default on some fabrics (EFA, Google's TCPXO: `two_node_tree` in the course's fabric
#    data) and not on others: the InfiniBand and RoCE pairs in the data sit at the NICs' rate, so NCCL
#    ran the ring there. Forced with `NCCL_ALGO=Tree` the tree halves the network bytes anywhere. Read a
#    two-node number as a property of the algorithm, not of the wire; NCCL's maintainers advise
#    `NCCL_ALGO=RING` to measure a network on two nodes.
# 4. **Configuration beats the model.** A RoCE cluster with PCIe ACS left enabled ran at a fraction of
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
# decline) or **test** (never used to set anything). The model is NCCL's: for each size it takes the
# fastest of ring, tree and NVLS that NCCL would run there, each with the LL, LL128 or Simple protocol,
# with NCCL's latency and bandwidth tables. Below, both panels as predicted / measured busbw (above 1: the
# model is optimistic): the test cases by size, coloured by node count, and every node-count sweep.

# %%
fig = ib.validation_failure_plot()
for g in costmodel.validation_goals():
    print(f"{g['name']}: {g['within']} of {g['cases']} test cases ({g['share']:.0%})")

# %% [markdown]
# Where it holds: one node of 8 to 72 GPUs from 1 MiB up (A100, H200, B300, NVL72); InfiniBand
# fabrics from 128 MiB up, from two nodes to 128; forced ring, tree and NVLS tree on B200 clusters out
# to 64 nodes. Where it stops being true, and why:
# - **Small messages: the fixed cost of a call.** Below 64 KiB the time *is* the latency, and the
#   latency is the machine, not the link: the same 8-GPU all-reduce of 1 KiB takes 45 µs on one cloud
#   A100 node and 30 µs on an H200 node. The model uses one launch cost (15 µs, the median of three
#   machines), so it is off by up to ±50% there.
# - **Networks that are not InfiniBand: their own fabric kind.** Each kind (`python -m course_lib
#   validation` prints them; the numbers live in `fabrics.json`) has an efficiency and a cost per network
#   step set from *one* published run and tested on the others: Google's TCPXO costs about 25 InfiniBand
#   hops per step, HPE Slingshot's libfabric path 17 (set on two Alps nodes at 1 MiB), first-generation
#   EFA (p3dn, p4d) reaches 64% of its line rate and runs only NCCL's Simple protocol, because the
#   plugin must set `NCCL_PROTO=simple` there; EFA on P6 (B200) reaches 96%. P5 sits in between and
#   unmeasured: no published P5 run is bound by its NICs alone, so the course *assumes* 64% and says so.
# - **Mid sizes through software network stacks.** Where every message crosses a plugin (TCPXO,
#   Slingshot's CXI provider, EFA), the model is 1.5-5x optimistic between 1 and 128 MiB: ALCF Polaris
#   (A100, Slingshot) at 1 MiB on 8 nodes measures 1.0 GB/s against the model's 5; two A3 Mega VMs at
#   16 MiB 32 GB/s against 106. A per-message cost the course does not have (each chunk waits for the
#   plugin) sets those sizes.
# - **The tree at scale is bound by the GPU, not the network.** Forced onto B200 nodes with eight
#   400 Gb/s NICs, NCCL's tree moves about 200 GB/s per node from 4 to 64 nodes, half what the NICs can
#   carry: at its default 16 SMs the tree needs more SMs than NCCL gives it (NCCL's maintainers, in the
#   sources). The model caps the tree's network rate on Hopper and Blackwell at the value one published
#   sweep sets; the same cluster a day later and two sweeps on another B200 cluster test it (all within 8%).
# - **Many nodes, and racks of NVL72.** Between NVL72 racks NCCL runs neither NVLS nor NVLS tree, and
#   its default is the ring (a GB200 user measured it: the ring was chosen, the forced tree was
#   faster). The ring's 2 × 1,439 steps over 20 racks cost a few milliseconds per call, which is why
#   busbw there climbs from 151 GB/s at 512 MiB to 346 at 4 GiB; the model now lands within 1.0-1.34x.
# - **Blackwell at small and mid sizes** runs faster than the tables: a 4-GPU GB200 ring at 1-8 MiB
#   measures up to 1.6x the model's busbw (newer NCCL, a faster launch path on Grace).
#
# ### Node scaling: what falls, and why
#
# A ring moves the same bytes per node on 4 nodes as on 64, and NCCL's own tables change nothing with
# node count at large sizes except the ring's step latency. Measured, busbw still falls a little: a
# B200 cluster on InfiniBand, forced to the ring at 16 GiB, went from 335 GB/s on 4 nodes to 291 on 46.
# More nodes send the ring's hops through more spine switches, where they meet each other and other
# jobs' traffic. The course fits that fall on that one sweep, **×0.972 per doubling of the node count
# beyond 4 nodes** (`node_decline` in `efficiency.json`; fitting the slope only, because the cluster's
# own level is not the point), and tests it on every other published sweep: the cell below divides
# measured by predicted busbw for each of them and asks what is *left* per doubling beyond the model
# (1.00: nothing).

# %%
study = costmodel.node_sweep_study()
left = sorted(s["residual_per_doubling"] for s in study if not s["fit_cases"])
print(f"{len(left)} test sweeps: what falls beyond the model per doubling, median {left[len(left) // 2]:.2f}, "
      f"range {left[0]:.2f}-{left[-1]:.2f}")
for s in sorted(study, key=lambda s: s["residual_per_doubling"])[:5]:
    print(f"  {s['sweep'][:40]:<40} {s['fabric']:<10} nodes {s['nodes'][0]}-{s['nodes'][-1]}: "
          f"{s['residual_per_doubling']:.2f} per doubling beyond the model")

# %% [markdown]
# The median test sweep has nothing left to explain; the ones that do are conditions, not laws:
# - **A shared fabric under load.** On 64 Azure ND H100 v5 VMs at 8 GiB busbw fell from 392 GB/s
#   (8 nodes) to 224; the author blames congestion from other jobs, and adaptive routing changed the
#   shape but not the trend. Measured there, the model is 1.4-1.5x optimistic from 16 nodes up.
# - **An untuned RoCE fabric.** An A100 cluster with eight 100 Gb/s RoCE NICs per node fell from 100 GB/s
#   on two nodes to 40 on six, 0.58x per doubling beyond the model: drops and hash collisions in a
#   lossy Ethernet fabric (section 7), which tuned RoCE does not show.
# - **A mid size on a cloud cluster.** The Ultra-Scale Playbook's 256 MB all-reduce on H100 + EFA falls
#   from 436 GB/s on one node to 33 on 64, a factor the model misses by 2-9x from 4 nodes up. Its
#   spread is as telling as its median: at 64 nodes the 5th-95th percentile runs from 12.5 to 177 GB/s,
#   so the median is set by the slowest node of each call, not by the wire.
# So: trust the model for bandwidth-bound sizes and the shape of the cliff; expect a shared or untuned
# fabric to fall further with node count, and measure your own node-count sweep
# (`python -m course_lib compare your_log.txt --system ...` says which of nodes, GPUs, NICs and fabric it
# had to guess, and what to try when a ratio is off by 1.5x).
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
# - **A.** An XDR InfiniBand port carries 100 GB/s in each direction.
# - **B.** An NDR200 InfiniBand port moves about 100 GB/s.
# - **C.** A DGX H100 has eight 400 Gb/s ports for compute traffic: 400 GB/s per direction per node.
# - **D.** HDR100 and NDR200 are two-lane versions of the HDR and NDR ports.

# %% nbgrader={"grade": false, "grade_id": "ex05-1-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
wrong_network_claim = "B"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-1-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
checks.check("05.1", wrong_network_claim)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.1", wrong_network_claim)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.2** (1 point). A design document needs 100 GB/s **in each direction** out of a node and
# plans "one NDR200 port, ~100 GB/s". How many NDR200 ports does it really need? Store the number in
# `ndr200_ports_needed`.

# %% nbgrader={"grade": false, "grade_id": "ex05-2-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
ndr200_ports_needed = 100 / (200 / 8)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-2-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
checks.check("05.2", ndr200_ports_needed)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.2", ndr200_ports_needed)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.3** (1 point). What is the **injection bandwidth** of one DGX H100 (all its compute NICs
# sending at once), in **GB/s per direction**? Store it in `dgx_h100_injection_gb_s`. You may use
# `hardware.system("dgx-h100")`.

# %% nbgrader={"grade": false, "grade_id": "ex05-3-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
dgx = hardware.system("dgx-h100")
dgx_h100_injection_gb_s = dgx.nics_per_node * dgx.nic.per_direction / units.GB
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
checks.check("05.3", dgx_h100_injection_gb_s)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.3", dgx_h100_injection_gb_s)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.4** (1 point). On a DGX H100, **per GPU**, how many times more bandwidth does NVLink give
# than the network, both per direction, when every GPU sends at once? Store the ratio in
# `nvlink_to_network_ratio`.

# %% nbgrader={"grade": false, "grade_id": "ex05-4-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
nvlink_to_network_ratio = hardware.nvlink(4).per_direction / (dgx.nics_per_node * dgx.nic.per_direction / dgx.gpus_per_node)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-4-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
checks.check("05.4", nvlink_to_network_ratio)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.4", nvlink_to_network_ratio)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.5** (2 points). In the ideal two-level model of section 5 (spec bandwidths per direction,
# no latency), how many **seconds** does an all-reduce of a **10 GB** buffer per GPU take on **4 DGX H100
# nodes** (32 GPUs)? Store it in `hier_time_4_nodes_s`.

# %% nbgrader={"grade": false, "grade_id": "ex05-5-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
n_buf, g_node, n_nodes = 10e9, 8, 4
hier_time_4_nodes_s = (2 * (g_node - 1) / g_node * n_buf / 450e9
                       + 2 * (n_nodes - 1) / n_nodes * (n_buf / g_node) / 50e9)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-5-check", "locked": true, "points": 2, "schema_version": 3, "solution": false}
checks.check("05.5", hier_time_4_nodes_s)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.5", hier_time_4_nodes_s)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.6** (2 points). Write the model as a function. `hierarchical_time` returns the seconds of a
# two-level all-reduce (bandwidth terms only): reduce-scatter inside each node, ring all-reduce of the
# shard across nodes, all-gather inside each node. `nvlink_bw` and `nic_bw_per_gpu` are bytes/s per
# direction for one GPU. It must work for any `gpus_per_node` and `nodes` (including 1).

# %% nbgrader={"grade": false, "grade_id": "ex05-6-answer", "locked": false, "schema_version": 3, "solution": true}
def hierarchical_time(nbytes, nodes, gpus_per_node, nvlink_bw, nic_bw_per_gpu):
    """Seconds for a two-level all-reduce of nbytes per GPU (bandwidth terms only)."""
    ### BEGIN SOLUTION
    shard = nbytes / gpus_per_node
    in_node = 2 * (gpus_per_node - 1) * shard / nvlink_bw
    across = 2 * (nodes - 1) / nodes * shard / nic_bw_per_gpu
    return in_node + across
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-6-check", "locked": true, "points": 2, "schema_version": 3, "solution": false}
checks.check("05.6", hierarchical_time)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.6", hierarchical_time)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.7** (1 point). A job runs `torchrun --nnodes=4 --nproc-per-node=8 ...`. The process that
# drives GPU 3 (`LOCAL_RANK=3`) on the node with node rank 2 (nodes counted from 0): what is its `RANK`?
# Store it in `rank_of_local3_on_node2`.

# %% nbgrader={"grade": false, "grade_id": "ex05-7-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
rank_of_local3_on_node2 = 2 * 8 + 3
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-7-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
checks.check("05.7", rank_of_local3_on_node2)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.7", rank_of_local3_on_node2)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.8** (1 point). *Predict.* The all-reduce of exercise 05.5 (10 GB per GPU, ideal two-level
# model) moves from **4 to 16 DGX H100 nodes**. What happens to its time? Store the letter in
# `more_nodes_prediction`.
#
# - **A.** It grows 4 times: four times the nodes to reach.
# - **B.** It grows a little, by roughly a tenth: the inter-node factor goes from 2·3/4 to 2·15/16.
# - **C.** It shrinks 4 times: four times the NICs share the work.
# - **D.** It doubles: the inter-node ring is twice as long.

# %% nbgrader={"grade": false, "grade_id": "ex05-8-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
more_nodes_prediction = "B"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-8-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
checks.check("05.8", more_nodes_prediction)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.8", more_nodes_prediction)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.9** (2 points, graded by hand). *Explain a measurement.* An nccl-tests user reports
# (nccl-tests issue 175) all-reduce busbw of **232 GB/s on one node** of 8 A100s, and **86 GB/s on two
# nodes**, each node with four 200 Gb/s InfiniBand ports. Using the two-level model, explain which link
# limits the two-node run, and which single upgrade would raise its busbw most. Answer in 3-5 sentences in
# `two_node_explanation` (a string).
#
# Rubric: (1) the inter-node step runs over the NICs: 4 x 25 GB/s = 100 GB/s per direction per node, 12.5 GB/s
# per GPU, far below NVLink's 300; (1) more or faster NICs (one per GPU, or NDR) raise it, a faster NVLink
# would not.

# %% nbgrader={"grade": true, "grade_id": "ex05-9-answer", "locked": false, "points": 2, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
two_node_explanation = checks.spec("05.9")["model_answer"]
### END SOLUTION

# %%
checks.check("05.9", two_node_explanation)

# %% [markdown]
# **Exercise 05.10** (2 points). *Predict.* On 4 Azure ND H100 v5 VMs (8 × 400 Gb/s InfiniBand each),
# an 8 GiB all-reduce measured **335.3 GB/s** busbw. Carry that measurement to **64 VMs** with the
# course's node-count decline (`costmodel.node_decline(nodes)`, or `costmodel.node_decline_constants()`:
# a factor `per_doubling` for every doubling beyond `from_nodes`). Store the busbw in GB/s in
# `busbw_64_nodes_gb_s`.

# %% nbgrader={"grade": false, "grade_id": "ex05-10-answer", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
busbw_64_nodes_gb_s = 335.3 * costmodel.node_decline(64) / costmodel.node_decline(4)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex05-10-check", "locked": true, "points": 2, "schema_version": 3, "solution": false}
checks.check("05.10", busbw_64_nodes_gb_s)
### BEGIN HIDDEN TESTS
import importlib, course_lib.grading
importlib.reload(course_lib.grading).grade("05.10", busbw_64_nodes_gb_s)
### END HIDDEN TESTS

# %% [markdown]
# **Exercise 05.11** (2 points, graded by hand). *Diagnose.* The same blog measured **223.5 GB/s** on
# 64 VMs. Say in 3-5 sentences in `shared_fabric_diagnosis` (a string) why your prediction is higher,
# what condition the course's decline does not include, and one measurement that would tell that
# condition apart from a broken node or cable.
#
# Rubric: (1) the decline was measured on another, quieter cluster; this fabric is shared and its other
# jobs' traffic congests the spine; (1) a measurement that separates congestion from a fault: the same
# sweep on a quiet fabric or another routing/service level, or nccl-tests on subsets and ib_write_bw on pairs.

# %% nbgrader={"grade": true, "grade_id": "ex05-11-answer", "locked": false, "points": 2, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
shared_fabric_diagnosis = checks.spec("05.11")["model_answer"]
### END SOLUTION

# %%
checks.check("05.11", shared_fabric_diagnosis)

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
# - A DGX H100 injects **400 GB/s per direction** into the network against 3.6 TB/s of NVLink: per GPU,
#   **9x less**.
# - Rail-optimised fat trees put NIC *k* of every node on leaf *k*: collective traffic between GPU *k* of
#   different nodes crosses **one switch**.
# - The two-level all-reduce sends only **n/g per GPU** across the network; with one NIC per GPU leaving
#   the node costs a large all-reduce far less than the per-GPU bandwidth gap, on two nodes and still on
#   hundreds (section 5's cell and explorer give the factors), with one NIC per node several times more.
#   Small messages, all-to-all and point-to-point traffic feel the full gap.
# - Measured multi-node rings get within a few percent of the NICs' line rate; NCCL pipelines the two
#   levels, so the textbook sequential model is pessimistic; two-node results depend on the algorithm.
# - RoCE v2 matches InfiniBand when the Ethernet is configured lossless/congestion-controlled; TCP sockets
#   reach a fraction of the line rate.
# - `torchrun` gives every process `RANK`, `LOCAL_RANK`, `WORLD_SIZE`; NCCL picks NVLink inside a node and
#   the NICs between nodes; `NCCL_DEBUG=INFO` shows what it picked.
#
# ## Worked questions
# Try each before opening the answer; the code cell under them lets you check with the library.
#
# **W1.** Data parallelism of a 70B model, BF16 gradients (140 GB per step), on 64 DGX H100 nodes: how long
# does the gradient all-reduce take in the ideal two-level model, and which phase dominates?
#
# <details><summary>Answer</summary>
#
# `ib.hierarchical_phases(140e9, 64)`: about 1.23 s, of which 0.69 s is the network phase (56%) and
# 0.27 s each for the reduce-scatter and all-gather over NVLink. Real training splits this into buckets and
# overlaps it with the backward pass (chapter 06).
# </details>
#
# **W2.** The same cluster upgrades to XDR NICs (800 Gb/s). Does the all-reduce take half the time?
#
# <details><summary>Answer</summary>
#
# No. `ib.what_if_system("dgx-h100", nic_gbit_s=800)` halves only the network phase (0.69 → 0.34 s); the
# NVLink phases stay at 0.27 s each, so the total drops from 1.23 s to about 0.89 s, 28% less.
# </details>
#
# **W3.** A team wants to save money with one 400 Gb/s NIC per node instead of eight. What happens to W1?
#
# <details><summary>Answer</summary>
#
# `ib.what_if_system("dgx-h100", nics_per_node=1)`: the network phase grows 8x to about 5.5 s and the
# all-reduce to about 6.1 s, five times longer: the node now injects 50 GB/s per direction for 8 GPUs.
# </details>
#
# **W4.** Two nodes, each with 8 GPUs on NVLink and 2 HDR NICs, report all-reduce busbw of 55 GB/s. Is
# that more than the network can carry?
#
# <details><summary>Answer</summary>
#
# The NICs carry 2 x 25 = 50 GB/s per direction per node, and 55 GB/s is above it: NCCL's tree on two
# nodes moves less than the busbw formula assumes (section 6, point 3). Rerun with `NCCL_ALGO=RING` to
# measure the network itself.
# </details>

# %%
w1 = ib.hierarchical_phases(140e9, 64)
w2 = ib.hierarchical_phases(140e9, 64, hardware.system("dgx-h100").variant(nic_gbit_s=800))
w3 = ib.hierarchical_phases(140e9, 64, hardware.system("dgx-h100").variant(nics_per_node=1))
for name, r in (("W1 8 x NDR", w1), ("W2 8 x XDR", w2), ("W3 1 x NDR", w3)):
    print(f"{name}: {units.format_time(r['time_s'])} (network phase {units.format_time(r['inter_node_s'])})")

# %% [markdown]
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
