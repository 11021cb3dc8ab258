# %% [markdown]
# # 02 · NVLink: direct links between GPUs
#
# **Time:** about 50 minutes. **Prerequisites:** chapter 00 (per direction vs bidirectional, the ring
# all-reduce time $2\frac{p-1}{p}\frac{n}{B}$) and chapter 01 (PCIe lanes, the root complex, peer-to-peer).
#
# **After this chapter you can**
# - compute a GPU's NVLink bandwidth from its number of links and the rate of one link, for NVLink 1 to 5;
# - turn a vendor's bidirectional figure (A100 600 GB/s, H100 900 GB/s, GB200 1.8 TB/s) into the
#   per-direction number a collective can use;
# - split a GPU's links over its peers in a point-to-point mesh, and explain why "900 GB/s over 7 peers"
#   is about {{per_peer}} per direction to each;
# - explain why NCCL lays several rings on a DGX-1, and what a single ring's slowest link costs;
# - tell NVLink from PCIe, and a bridged consumer pair from a GPU without NVLink;
# - say how close real measurements come to the spec, with sources.
#
# As everywhere in the course: **1 GB = 10⁹ bytes**, and every bandwidth says *per direction* or
# *bidirectional*. Hardware numbers come from `course_lib.hardware` (each with a source);
# measurements from `course_lib/data/published_nvlink.json` (each with a source).
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
from course_lib import checks, costmodel, hardware, prose, units
from course_lib.chapters import nvlink as nv
from course_lib.views import graphs

glue = prose.Glue("02")  # numbers the text quotes from the cells

# %% [markdown]
# ## 1. A GPU's NVLink = links × the rate of one link
#
# An NVLink **link** is a pair of one-way connections between two chips, one in each direction. A GPU
# has a fixed number of them, and its NVLink bandwidth is simply
#
# $$B_\text{GPU} = \text{links} \times B_\text{link}\quad\text{(per direction).}$$
#
# The generations differ in both factors: more links per GPU (4, 6, 12, 18) and, with NVLink 5, twice
# the rate per link.

# %%
nv.show_generations()

# %% [markdown]
# The H100 row, derived rather than read off a datasheet:

# %%
h100 = hardware.nvlink(4)
print(h100.detail, "=", units.format_bandwidth(h100.per_direction))
print("both directions added:", units.format_bandwidth(h100.bidirectional, direction="bidirectional"))
glue("h100_per_direction", h100.per_direction / units.GB, "{:.0f} GB/s")
glue("h100_bidirectional", h100.bidirectional / units.GB, "{:.0f} GB/s")

# %% [markdown]
# > **Myth / fact: "An H100 can send 900 GB/s over NVLink."**
# > *Myth.* {{h100_bidirectional}} is the sum of what an H100 can send ({{h100_per_direction}}) and what it can receive at the
# > same time ({{h100_per_direction}}). A transfer in one direction, or a collective in which every GPU sends to one
# > neighbour while receiving from another, is limited by the **per-direction** {{h100_per_direction}}. Dividing by the
# > bidirectional figure makes every time estimate twice too optimistic.
#
# > *Evidence:* the vendor figures below are exactly twice the per-direction bandwidth derived from the
# > links. And the confusion is common in practice: DeepSeek's V3 report quoted "NVLink 160 GB/s" on H800
# > servers while the spec sheet says 400 GB/s; both are right, because 400 GB/s is the bidirectional
# > nominal value of 8 links and 160 GB/s is a measurement in one direction out of 200
# > ([DeepSeek-V3 issue 28](https://github.com/deepseek-ai/DeepSeek-V3/issues/28),
# > [DeepEP issue 16](https://github.com/deepseek-ai/DeepEP/issues/16)).

# %%
nv.show_vendor_quotes()

# %% [markdown]
# ## 2. Point to point: a link joins exactly two GPUs
#
# Without a switch (NVLink 1 and 2 systems, bridges, small boards), each link is a cable between two
# GPUs. A GPU with $L$ links and $p-1$ peers must **split its links between the peers**. In a full mesh,
# where every pair is linked, each peer gets on average
#
# $$B_\text{peer} = \frac{L \times B_\text{link}}{p-1}\quad\text{(per direction).}$$
#
# That is where the claim "900 GB/s over 7 peers is about {{per_peer_bidir}} each" comes from. It is right as
# arithmetic on the bidirectional figure, but the number to plan with is the per-direction half:

# %%
per_peer = nv.per_peer_bandwidth(gpus=8, links_per_gpu=18, link_bw=hardware.nvlink(4, 1).per_direction)
print("8 H100-class GPUs in a full mesh, per peer:", units.format_bandwidth(per_peer),
      "=", units.format_bandwidth(2 * per_peer, direction="bidirectional"))
glue("per_peer", per_peer / units.GB, "{:.0f} GB/s")
glue("per_peer_bidir", 2 * per_peer / units.GB, "{:.0f} GB/s")

# %% [markdown]
# Links are whole, so 18 links over 7 peers cannot be split evenly: 18 = 7 × 2 + 4, so some peers get
# three links ({{mesh_most}} per direction) and others two ({{mesh_fewest}}). `nv.mesh_link_counts` lays them out:

# %%
counts = nv.mesh_link_counts(8, 18)
print("links between GPU 0 and its peers:", [counts[(0, b)] for b in range(1, 8)])
glue("mesh_most", max(counts.values()) * hardware.nvlink(4, 1).per_direction / units.GB, "{:.0f} GB/s")
glue("mesh_fewest", min(counts.values()) * hardware.nvlink(4, 1).per_direction / units.GB, "{:.0f} GB/s")
mesh = nv.full_mesh(8, 18, hardware.nvlink(4, 1).per_direction, name="8 GPUs, 18 NVLink 4 links each, full mesh (hypothetical)")
graphs.draw(mesh)
plt.show()

# %% [markdown]
# What this costs a single copy: GPU 0 sending 1 GB to GPU 1 uses the links *between* them. (Relaying
# part of it through other GPUs is possible in principle, but it borrows their links, and a plain peer
# copy does not do it.) Compare with the same 18 links plugged into a switch, where any pair gets all 18
# (chapter 03):

# %%
fewest = min(counts.values())
print(f"1 GB over the direct links of the mesh ({fewest} links):", units.format_time(nv.point_to_point_time(1e9, fewest * hardware.nvlink(4, 1).per_direction)))
print("1 GB when all 18 links reach the peer (switch):   ", units.format_time(nv.point_to_point_time(1e9, hardware.nvlink(4).per_direction)))

# %% [markdown]
# A full mesh also needs at least $p-1$ links per GPU. A V100 has 6, so eight V100s *cannot* all be
# linked pairwise: that is why the DGX-1 (section 5) is not a full mesh, and why larger NVLink systems
# use switches.

# %% [markdown]
# ## 3. NVLink is not "a faster PCIe"
#
# > **Myth / fact: "NVLink is just a faster PCIe."**
# > *Myth.* NVLink is a separate point-to-point fabric between GPUs (and, on POWER9 and Grace, between
# > CPU and GPU) with its own links, packets and protocol. A GPU on NVLink reads, writes and performs
# > atomics directly on a peer's memory; nothing passes through a PCIe root complex or the CPU.
# > PCIe is still there, doing a different job: every SXM GPU is also a PCIe device, and host-to-GPU
# > copies, storage and the InfiniBand [NICs](../docs/glossary.md#nic) ([GPUDirect RDMA](../docs/glossary.md#gpudirect-rdma), [RDMA](../docs/glossary.md#rdma)) all use PCIe, not NVLink.
# >
# > *Evidence:* the catalog's DGX H100 lists both an NVLink port and a PCIe Gen5 x16 link per GPU
# > ([DGX H100 user guide](https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html)).
# > NVLink does nothing for a copy from host memory:

# %%
both = nv.nvlink_vs_pcie("dgx-h100", nbytes=1e9)
print(f"{both['system']}")
print(f"  GPU to GPU over {both['nvlink'].describe()}: 1 GB in {units.format_time(both['gpu_to_gpu_s'])}")
print(f"  host to GPU over {both['pcie'].describe()}: 1 GB in {units.format_time(both['host_to_gpu_s'])}")
print(f"  NVLink / PCIe, per direction: {both['ratio']:.1f}x")

# %% [markdown]
# ## 4. Bridges on consumer cards, and where they went
#
# GeForce and workstation cards used a short **NVLink bridge** on top of two boards. The RTX 3090's
# bridge carries 4 links at a lower rate than data-centre NVLink: 112.5 GB/s in total over both
# directions, 56.25 GB/s per direction. The RTX 4090 has **no NVLink at all**; two 4090s talk over PCIe,
# and without peer-to-peer support their copies are staged through host memory (crossing PCIe twice).

# %%
nv.show_bridge_vs_pcie(nbytes=1e9)

# %%
nv.draw_consumer_pairs()
plt.show()

# %% [markdown]
# > **Myth / fact: "NVLink is on every multi-GPU machine."**
# > *Myth.* NVLink needs GPUs that have it (SXM modules, some PCIe cards with bridges) and a board or
# > bridge that wires it. GeForce cards since the RTX 40 series have none
# > ([Ada whitepaper](https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf)),
# > and many cloud instances with PCIe GPUs have none either. Check rather than assume:
# > `nvidia-smi topo -m` prints `NV#` (a bonded set of # links) between NVLinked GPUs and
# > `PIX` (through at most one PCIe switch), `PXB` (through several PCIe switches, without the CPU's host
# > bridge), `PHB` (through a CPU's host bridge), `NODE` (between host bridges of one NUMA node) or `SYS`
# > (across the link between CPU sockets) for PCIe paths. On a DGX H100 it prints `NV18` for *every* pair,
# > because each GPU's 18 links go into the NVSwitches and reach every peer
# > ([an example output](https://github.com/IBM/pytorch-communication-benchmarks/issues/1)).

# %% [markdown]
# ## 5. The DGX-1: a hybrid cube mesh, and why one ring is not enough
#
# Eight V100s with 6 links each cannot form a full mesh (7 peers). The DGX-1 wires them as two groups of
# four, fully linked inside each group, with some pairs doubled and each GPU joined to one GPU of the
# other group ([DGX-1 whitepaper](https://images.nvidia.com/content/pdf/dgx1-v100-system-architecture-whitepaper.pdf)).
# Drawn as a cube: GPUs 0-3 on the front face, 4-7 on the back face, the doubled links on the faces'
# diagonals and on some edges. Numbers on the links are GB/s per direction (25 = one link, 50 = two).

# %%
nv.draw_dgx1()
plt.show()
nv.show_dgx1_links()

# %% [markdown]
# Two notions of "bandwidth between two GPUs" disagree here. The *direct* links give 0, 25 or
# 50 GB/s per direction. The *maximum flow* (`topology.pair_bandwidth`) is 150 GB/s for every pair, but
# only if the data is relayed through other GPUs and nothing else is running: an upper bound, not what a
# plain peer copy gets.
#
# ### One ring
# A ring all-reduce sends each step to the next GPU in the ring. `topology.ring_bottleneck` lays a ring
# over direct links and finds its slowest hop:

# %%
rings = nv.dgx1_rings(nbytes=1e9)
print("ring", rings["default_ring"], "-> bottleneck", rings["default_ring_link"],
      units.format_bandwidth(rings["default_ring_bw"]))
glue("dgx1_gpu_bw", rings["gpu_bw"] / units.GB, "{:.0f} GB/s")
glue("dgx1_one_ring", rings["default_ring_bw"] / units.GB, "{:.0f} GB/s")
glue("dgx1_best_ring", rings["best_single_ring_bw"] / units.GB, "{:.0f} GB/s")
print("1 GB all-reduce at that rate:", units.format_time(rings["default_ring_s"]))
print("best single ring (over the doubled links):", units.format_bandwidth(rings["best_single_ring_bw"]),
      "->", units.format_time(rings["best_single_ring_s"]))

# %% [markdown]
# One ring uses 2 of each GPU's 6 links (one to send, one to receive), and one direction of each. The GPU
# has {{dgx1_gpu_bw}} per direction; the ring uses a sixth or a third of it ({{dgx1_one_ring}} for the default
# ring, {{dgx1_best_ring}} for the best single ring).
#
# ### Several rings
# NCCL runs several rings at once (its *channels*), each carrying part of the buffer. The DGX-1's links
# split into three rings that pass through every GPU without sharing a link (the doubled links carry two
# rings); run each ring in both directions and every link is busy both ways: six rings.

# %%
print(len(rings["packed_rings"]), "link-disjoint rings:", rings["packed_rings"])
print(rings["packed_directed_rings"], "rings (both directions) together:", units.format_bandwidth(rings["packed_bw"]),
      "-> 1 GB all-reduce in", units.format_time(rings["packed_s"]))
nv.draw_rings(rings["topology"], rings["packed_rings"], title="DGX-1: three rings over disjoint links")
glue("dgx1_packed_bw", rings["packed_bw"] / units.GB, "{:.0f} GB/s")
glue("dgx1_packed_gain", rings["packed_bw"] / rings["default_ring_bw"], "{:.0f} times")
plt.show()

# %% [markdown]
# Six rings reach the GPU's whole {{dgx1_packed_bw}} per direction, {{dgx1_packed_gain}} the single ring. This is the
# bandwidth `costmodel.predict` assumes for a DGX-1 (it treats each GPU's NVLink as one port), and it is
# right only because such rings exist. The whitepaper describes the same structure as "three interwoven
# rings".

# %% [markdown]
# ## 6. Explorer: a full mesh of GPUs
#
# Choose the number of GPUs, the links per GPU and the rate of one link. The plot shows the ring
# all-reduce time against the GPU count, for a single ring (which only uses the links to its neighbour:
# the per-peer bandwidth) and for enough rings to keep every link busy (at least $p-1$ of them, one per
# outgoing peer link; the same as plugging the links into a switch). Grey triangles: the two consumer
# pairs of section 4. The grey band marks GPU counts with more peers than links: no full mesh is possible.
# Times use spec bandwidth and NCCL's NVLink hop latency.

# %%
nv.mesh_explorer()

# %% [markdown]
# Things to try: keep 18 links and add GPUs; one ring gets slower roughly in proportion to $p-1$ while
# many rings stay flat. Set 6 links and 8 GPUs: the DGX-1 situation. Set 4 GPUs, 12 links: each pair gets
# 4 links.
#
# ## 7. Where the model stops being true
#
# The model divides bytes by spec bandwidth. Real NVLink transfers carry packet headers and flow control,
# GPU kernels move data in small packets, and the GPU has other internal limits. An NVIDIA maintainer puts
# the protocol overhead at about 20%: 25 GB/s per link per direction becomes about 20 GB/s with the
# 128-byte payloads that [SMs](../docs/glossary.md#sm) use ([nccl-tests issue 149](https://github.com/NVIDIA/nccl-tests/issues/149)).
# Published measurements, each next to its spec in the same direction convention:

# %%
nv.show_measurements()
nv.plot_measurements()
plt.show()

# %% [markdown]
# The course's cost model applies one sourced efficiency ({{nvlink_efficiency}}) to NVLink. For the DGX A100 measurement
# above it gives:

# %%
mv = nv.model_vs_measured("a100-allreduce-azure")
print(f"8 GiB all-reduce on {mv['system']}: spec busbw {mv['spec_busbw_gb_s']:.0f}, "
      f"model at {mv['efficiency']:.0%} {mv['achievable_busbw_gb_s']:.0f}, measured {mv['measured_gb_s']:.0f} GB/s per direction")
glue("nvlink_efficiency", costmodel.efficiency("nvlink"), "{:.0%}")
glue("dgx1_model_busbw", costmodel.efficiency("nvlink") * rings["packed_bw"] / units.GB, "{:.0f} GB/s")

# %% [markdown]
# What the model leaves out:
# - **Payload size and engine.** Copy engines use larger packets than SM kernels, so `p2pBandwidthLatencyTest`
#   (copy engines) reports more than NCCL (SM kernels) on the same link.
# - **Message size.** Everything above is for gigabyte buffers. Small messages are dominated by latency
#   (tens of microseconds per call) and reach a small fraction of the link; chapter 04 measures this.
# - **In-network reduction.** On NVSwitch systems with NVLink [SHARP](../docs/glossary.md#sharp), all-reduce [busbw](../docs/glossary.md#busbw) can exceed the link
#   rate (chapter 03); the 72-GPU GB200 result may include it, as its algorithm is not stated.
# - **The DGX-1.** We found no published nccl-tests output for a DGX-1 to cite. The model expects about
#   {{nvlink_efficiency}} of {{dgx1_packed_bw}}, {{dgx1_model_busbw}} busbw, and only if the rings of section 5 are used.
#
# ## Check your understanding
#
# 1. A forum post says: "A100 NVLink is 600 GB/s, so an all-reduce of 6 GB over 8 A100s takes 10 ms."
#    What is wrong?
#
# <details><summary>Answer</summary>
#
# Two things. 600 GB/s is bidirectional; per direction it is 300 GB/s. And a ring all-reduce moves
# $2\frac{p-1}{p} = 1.75$ times the buffer through each GPU's port. At spec: 1.75 × 6 GB / 300 GB/s = 35 ms,
# and about 44 ms at the 80% a real all-reduce reaches.
# </details>
#
# 2. Why does a single ring on a full mesh get slower as you add GPUs, although each GPU keeps all its links?
#
# <details><summary>Answer</summary>
#
# A ring only uses the links to its next neighbour. In a full mesh those are $L/(p-1)$ of the GPU's links,
# so the ring's bandwidth falls as $1/(p-1)$ while the bytes per GPU stay about $2n$. Using every link
# needs at least $p-1$ rings.
# </details>
#
# 3. Two RTX 3090s with a bridge and two RTX 4090s without one: which all-reduces 1 GB faster, and by about how much?
#
# <details><summary>Answer</summary>
#
# The 3090 pair: 56.25 GB/s per direction over the bridge against about 7.9 GB/s for the 4090s (PCIe Gen4 x8
# with every byte staged through host memory, which the course assumes halves the 15.8 GB/s slot rate: the
# two copies one after the other, `costmodel.no_p2p_staging_factor()`, not a measurement): roughly 7x faster
# at spec, despite the 4090 being the faster GPU.
# </details>
#
# 4. In a DGX-1, GPU 0 has no link to GPU 5. Can NCCL's ring all-reduce still reach 150 GB/s per direction?
#
# <details><summary>Answer</summary>
#
# Yes. A ring only needs links between consecutive GPUs of the ring, and the three rings of section 5 are
# laid so that they avoid missing pairs. Missing links hurt point-to-point copies and [all-to-all](../docs/glossary.md#all-to-all), not rings.
# </details>
#
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer. Numbers are compared with a
# relative tolerance, so you do not need to round. Use `hardware.nvlink(generation, links)` if you like.
#
# **Exercise 02.1** (1 point). `nvidia-smi nvlink --status` on an H100 shows **3 of its 18** NVLink 4 links
# inactive; each link carries 25 GB/s per direction. What NVLink bandwidth does that GPU have left, in
# **GB/s per direction**? Store it in `degraded_h100_gb_s`.

# %% exercise="02.1"
degraded_h100_gb_s = (18 - 3) * 25

# %% [markdown]
# **Exercise 02.2** (1 point). Imagine 8 A100s (12 NVLink 3 links each, 25 GB/s per link per direction)
# wired as a full mesh, each GPU's links split evenly over its peers. What bandwidth does one pair of GPUs
# get, in **GB/s per direction**? Store it in `a100_mesh_peer_gb_s`.

# %% exercise="02.2"
a100_mesh_peer_gb_s = 12 * 25 / (8 - 1)

# %% [markdown]
# **Exercise 02.3** (2 points). In a **DGX A100** every GPU's 12 NVLink 3 links (25 GB/s per direction each) go
# into the NVSwitches, so a ring gets each GPU's whole NVLink. Ignoring latency and using spec bandwidth, how
# many **milliseconds** does a ring all-reduce of a **1 GB** buffer (10⁹ bytes) take over the **8** GPUs? Store it
# in `a100_allreduce_ms`.

# %% exercise="02.3"
a100_allreduce_ms = 2 * (8 - 1) / 8 * 1e9 / (12 * 25e9) * 1e3

# %% [markdown]
# **Exercise 02.4** (1 point). *Spot the error.* A blog post says: "H100 NVLink runs at 900 GB/s, so
# copying 900 GB from one H100 to another takes one second." What is wrong? Store the letter in
# `nvlink_claim_error`.
#
# - **A.** Nothing: 900 GB at 900 GB/s takes one second.
# - **B.** All 8 GPUs of the server share the 900 GB/s, so the copy takes eight seconds.
# - **C.** 900 GB/s is in gigabits per second, so the copy takes eight seconds.
# - **D.** 900 GB/s adds both directions; a one-way copy gets at most 450 GB/s, so at least two seconds.

# %% exercise="02.4"
nvlink_claim_error = "D"

# %% [markdown]
# **Exercise 02.5** (1 point). *Predict.* That 900 GB copy runs once between two GPUs of a DGX H100 (all 18
# links through the NVSwitches) and once between two GPUs of an imagined 8-GPU **full mesh** with the same 18
# links per GPU split evenly over the 7 peers. Which is true? Store the letter in `mesh_vs_switch`.
#
# - **A.** The mesh is about 7 times slower: a pair has only its direct links, 18/7 of them.
# - **B.** Same time: the GPUs have the same links.
# - **C.** The mesh is faster: no switch hop on the way.
# - **D.** The switch is 2 times faster: it uses both directions of the links.

# %% exercise="02.5"
mesh_vs_switch = "A"

# %% [markdown]
# **Exercise 02.7** (1 point). An imagined 8-GPU board gives every GPU **8 NVLink links** of 25 GB/s per
# direction each, wired so that the links split into **4 link-disjoint rings** through all 8 GPUs (each ring
# uses 2 links of every GPU). NCCL runs every ring in both directions at once, each carrying its share of the
# buffer. Counting bandwidth only, how many **milliseconds** does a ring all-reduce of **1 GB** (10⁹ bytes)
# take on this board? Store it in `board_all_rings_ms`.

# %% exercise="02.7"
board_per_direction = 4 * 2 * 25e9  # rings x directions x one link
board_all_rings_ms = 2 * (8 - 1) / 8 * 1e9 / board_per_direction * 1e3

# %% [markdown]
# **Exercise 02.8** (1 point). *Design.* You wire **4 GPUs with 6 NVLink links each**, no switch, for a
# workload dominated by large ring all-reduces. NCCL runs as many rings at once as the links can carry (each
# link in one ring, as `nv.pack_rings` packs them in section 5). Which is true? Store the letter in
# `four_gpu_wiring`.
#
# - **A.** All 6 links of each GPU to a single partner (two pairs) is fastest: the most links per pair.
# - **B.** A full mesh (2 links to each of the 3 peers) is fastest: every pair has a direct link.
# - **C.** A ring (3 links to each of the two ring neighbours) is fastest: a ring uses only neighbours' links.
# - **D.** The full mesh and the ring wiring tie: each packs as many rings through all 4 GPUs.

# %% exercise="02.8"
four_gpu_wiring = "D"

# %% [markdown]
# **Exercise 02.9** (1 point). *Judge a measurement.* A benchmark reports **280 GB/s** for a one-way copy
# between two GPUs of a **DGX A100** (12 NVLink 3 links per GPU, through NVSwitch). What do you conclude?
# Store the letter in `a100_copy_verdict`.
#
# - **A.** Impossible: it is above half of the 600 GB/s NVLink figure.
# - **B.** Plausible: about 93% of the 300 GB/s available per direction.
# - **C.** It must be a bidirectional figure: one way can carry only 140 GB/s.
# - **D.** It must have gone over PCIe.

# %% exercise="02.9"
a100_copy_verdict = "B"

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals())` scores every exercise of the notebook without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="02")

# %% [markdown]
# ## Takeaways
# - A GPU's NVLink is **links × per-link rate**: V100 6 × 25, A100 12 × 25, H100 18 × 25, B200 18 × 50 GB/s
#   **per direction** (150, 300, 450, 900 GB/s).
# - Vendor figures (600, 900, 1,800 GB/s) **add both directions**. Plan with the per-direction half.
# - NVLink links are **point to point**. Without a switch, a GPU splits its links over its peers: 18 links
#   over 7 peers is about **64 GB/s per direction** per peer (128 bidirectional), and fewer links than peers
#   means no full mesh at all.
# - **One ring uses only the links to its neighbour.** On a DGX-1 that is 25 GB/s; six rings over disjoint
#   links reach the GPU's whole 150 GB/s. NCCL's multiple rings (channels) exist for this.
# - NVLink is **not a faster PCIe**: a separate GPU-to-GPU fabric with load/store access to peer memory.
#   PCIe still carries host copies and NIC traffic, and consumer cards since the RTX 40 series have no NVLink.
# - Real transfers reach about **77-93% of spec** for large messages; the course model uses 80%.
#
# ## Further reading
# - NVIDIA, *NVLink and NVLink Switch* (generations, links, bandwidths): https://www.nvidia.com/en-us/data-center/nvlink/
# - NVIDIA, *Tesla P100 (Pascal) whitepaper* (NVLink 1, load/store and atomics over NVLink):
#   https://images.nvidia.com/content/pdf/tesla/whitepaper/pascal-architecture-whitepaper.pdf
# - NVIDIA, *DGX-1 with Tesla V100 system architecture* (hybrid cube mesh, rings):
#   https://images.nvidia.com/content/pdf/dgx1-v100-system-architecture-whitepaper.pdf
# - NVIDIA, *Hopper (H100) architecture whitepaper* (NVLink 4, 18 links): https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper
# - NVIDIA, *GA102 whitepaper* (RTX 3090 NVLink bridge):
#   https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf
# - A. Li et al., *Evaluating Modern GPU Interconnect: PCIe, NVLink, NV-SLI, NVSwitch and GPUDirect* (2019),
#   measured NVLink bandwidth and the topology effects on DGX-1: https://arxiv.org/abs/1903.04611
# - NVIDIA nccl-tests, *Performance* notes (algbw, busbw): https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
