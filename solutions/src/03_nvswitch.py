# %% [markdown]
# # 03 · NVSwitch: every GPU at full speed to every other
#
# **Time:** about 60 minutes. **Prerequisites:** chapter 00 (the ring all-reduce time
# $2\frac{p-1}{p}\frac{n}{B}$) and chapter 02 (NVLink: links per GPU, per-link rate, per direction vs
# bidirectional).
#
# **After this chapter you can**
# - say what a *non-blocking* switch and *full bisection bandwidth* are, and compute the bisection of a
#   full mesh, an NVSwitch system and a PCIe tree with the same number of GPUs;
# - name the NVSwitch generations and the machines built on them (DGX-2, DGX A100, DGX H100 and the NVLink
#   Switch System, GB200 NVL72), and do the port arithmetic of how each GPU's links spread over switch chips;
# - explain in-switch reduction (NVLink SHARP, "NVLS") and compute its all-reduce time in the ideal model;
# - compute algbw and busbw from an nccl-tests line, and explain why busbw can exceed the line rate;
# - say where the simple model stops matching measurements, with the published numbers in hand.
#
# Conventions as always: **1 GB = 10⁹ bytes**, every bandwidth says *per direction* or *bidirectional*, and
# every hardware number comes from `course_lib.hardware` or from `course_lib/data/nvswitch.json`, which
# cite their sources.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, costmodel, hardware, prose, topology, units
from course_lib.chapters import nvswitch as nv

# %% [markdown]
# ## 1. What a switch buys you
#
# ### The mesh splits a GPU's links
# Chapter 02 wired GPUs directly to each other. An H100 has 18 NVLink 4 links of 25 GB/s per direction each:
# 450 GB/s per direction, 900 GB/s if you add both directions. In a full mesh of 8 GPUs each GPU must divide
# those links among its 7 peers, so the wire between any two GPUs carries at most a seventh of that.

# %%
h100 = hardware.nvlink(4)
print("H100 NVLink:", units.format_bandwidth(h100.per_direction), "=",
      units.format_bandwidth(h100.bidirectional, direction="bidirectional"))
print("one wire of an 8-GPU full mesh:", units.format_bandwidth(nv.mesh_pair_bandwidth(8, h100.per_direction)))
glue = prose.Glue("03")  # numbers the text quotes from the cells
glue("mesh_pair", nv.mesh_pair_bandwidth(8, h100.per_direction) / units.GB, "{:.0f} GB/s")
glue("gen5_x16", hardware.pcie_link(5, 16).per_direction / units.GB, "{:.0f} GB/s")

# %% [markdown]
# {{mesh_pair}} per direction between two H100s is barely more than a PCIe Gen5 x16 slot ({{gen5_x16}}). (And 18 links do not
# even divide by 7: a real mesh gives some pairs 3 links and others 2.) That is fine while all seven peers
# are busy at once, and poor whenever the traffic is uneven: a pipeline stage handing activations to the
# next one, or one GPU fetching a shard from one other GPU.
#
# ### A switch gives every pair the whole link
# An **NVSwitch** is a chip full of NVLink ports with a crossbar between them. Every GPU connects *all* its
# links to the switch, and the switch forwards from any input port to any output port. It is
# **non-blocking**: any set of transfers in which no two GPUs send to the same receiver (a *permutation*)
# runs with every GPU at its full rate at the same time. GPU 0 can send to GPU 5 at 450 GB/s per direction
# while GPU 1 sends to GPU 2 at 450 GB/s per direction, and so on for all eight.
#
# ### Bisection bandwidth
# Cut the GPUs into two equal halves, in the worst possible way. The **bisection bandwidth** is the most
# data per second that can cross the cut in one direction. A fabric has **full bisection bandwidth** when
# this equals half the GPUs sending at full rate, $\frac{p}{2}B$: nothing inside the fabric is narrower than
# the GPUs' own links.
#
# | fabric, 8 GPUs at $B$ per direction | bisection, per direction |
# |---|---|
# | non-blocking switch | $\frac{p}{2} B$ |
# | full mesh: $(\frac{p}{2})^2$ wires cross the cut, each $\frac{B}{p-1}$ | $\frac{p^2}{4(p-1)} B$ |
# | PCIe tree: everything between the sockets crosses the CPU link | the narrower of the CPU-to-CPU link and the PCIe links that feed it |

# %%
print("NVSwitch, 8 x H100:", units.format_bandwidth(nv.switch_bisection(8, h100.per_direction)))
glue("switch_bisection", nv.switch_bisection(8, h100.per_direction) / units.GB, "{:,.0f} GB/s")
print("full mesh, 8 x H100 links:", units.format_bandwidth(nv.mesh_bisection(8, h100.per_direction)))
print("PCIe Gen4 tree, 8 GPUs:", units.format_bandwidth(nv.pcie_tree_numbers(8, 4)["bisection"]))

# %% [markdown]
# The switch's {{switch_bisection}} per direction is not a formula typed in: `course_lib.topology` builds the DGX H100
# as a graph and finds the narrowest cut by computing maximum flows over every split into halves.

# %%
print(units.format_bandwidth(topology.nvswitch_system("dgx-h100").bisection_bandwidth()))

# %% [markdown]
# ### Three real 8-GPU machines
# The same computation on real machines: a two-socket PCIe server, the DGX-1 (V100, whose 6 NVLinks per GPU
# are wired as a *hybrid cube mesh*, not a full mesh) and the two NVSwitch DGX systems. The table gives, per
# direction, what GPU 0 can send to one other GPU (using every path, as NCCL does by forwarding through
# other GPUs), the bisection, and the slowest link of one ring laid over the GPUs.

# %%
nv.show_real_systems()
_ = nv.draw_systems(["pcie-tree-switches", "dgx-1-hybrid-cube-mesh", "dgx-h100"])

# %% [markdown]
# The DGX-1 mesh has a bisection of 150 GB/s per direction, one twelfth of the DGX H100's, and one ring on
# its direct links is stuck at a single link of 25 GB/s per direction; NCCL runs several rings over different links to do
# better. The PCIe tree is limited by its PCIe links: one x16 slot for a pair and a ring, two switch uplinks for
# the bisection (its Gen4-era socket link, EPYC Rome's 128 GB/s xGMI, is wider). The NVSwitch machines are the only
# ones where every number equals the GPU's own NVLink rate.
#
# ### Does a mesh lose at all-reduce?
# Not necessarily, and it is worth seeing why. One ring over a mesh uses one wire out of each GPU, $\frac{B}{p-1}$.
# But a mesh has $p-1$ wires per GPU; run $p-1$ rings on disjoint wires, each carrying $\frac{1}{p-1}$ of
# the buffer, and every wire is busy: the time is exactly that of one ring at the full $B$.

# %%
t = nv.all_reduce_times(1e9, 8, h100.per_direction)
for name, seconds in t.items():
    print(f"{name:<15} {units.format_time(seconds)}")

# %% [markdown]
# So a perfect mesh with perfect software matches a switch for all-reduce (`mesh_all_wires` equals
# `switch_ring`). The switch wins elsewhere:
# 1. **Uneven traffic.** One pair alone gets $B$ through a switch and $\frac{B}{p-1}$ on a mesh wire.
# 2. **Bisection.** $\frac{p}{2}B$ against about half of that for a mesh.
# 3. **Scale.** A mesh needs $p-1$ links per GPU: with 18 links, 19 GPUs at most, and 8 A100s with 12 links
#    cannot even split them evenly. A switch fabric grows to 72 GPUs (NVL72) or 256 (the NVLink Switch
#    System, announced with DGX H100 and shipped as DGX GH200).
# 4. **The switch can compute.** From NVSwitch 3 on it can add the data as it passes (section 3), which no
#    mesh can do.
#
# ## 2. NVSwitch generations
# Each generation matched an NVLink generation. The table is built from the catalog: ports per chip, what a
# chip switches per direction (ports x per-link rate) and in both directions, the system it went into, and
# how that system spreads each GPU's links over its chips.

# %%
nv.show_generations()

# %% [markdown]
# ### Switch chips aggregate many links
# A GPU does not plug into "the switch" through one cable: its links are spread over several switch chips,
# and every chip connects to every GPU. Because each chip is non-blocking and every GPU reaches every chip,
# the chips together behave as one big switch (which is how `course_lib.topology` draws them).
#
# The port arithmetic has to close. A DGX A100 has 8 GPUs x 12 links = 96 GPU links; its six 36-port
# NVSwitch 2 chips take 2 links from each GPU, 16 ports each. A DGX H100 has 8 x 18 = 144 links on four
# 64-port chips; 18 does not divide by 4, so two chips take 5 links from every GPU and two take 4, and the
# chips keep 72 more ports for cables that leave the box.

# %%
nv.show_port_budgets()
print("18 links spread evenly over 4 chips:", nv.spread_links(18, 4))
print("NVL72 GPU links:", nv.ports_needed(72, 18), "= switch ports:", 18 * hardware.nvswitch_generations()[3]["ports"])

# %% [markdown]
# Chip-level drawings of the two DGX systems (line width grows with the number of links):

# %%
_ = nv.draw_chips(["dgx-a100", "dgx-h100"])

# %% [markdown]
# ### Beyond one box: the NVLink Switch System and NVL72
# Those 72 extra ports of a DGX H100 (18 cages of 4 NVLinks) were meant for external NVLink switches. NVIDIA
# announced an NVLink Switch System joining 32 such nodes, 256 H100s, into one NVLink domain with "57.6 TB/s
# of [all-to-all](../docs/glossary.md#all-to-all) bandwidth". DGX H100 systems shipped with InfiniBand between nodes instead; the 256-GPU
# NVLink Switch System shipped in 2023 as the DGX GH200, 256 Grace Hopper superchips
# ([NVIDIA's announcement](https://developer.nvidia.com/blog/announcing-nvidia-dgx-gh200-first-100-terabyte-gpu-memory-system/)).
# The announced DGX H100 design is still a good exercise in port arithmetic: where does that number come
# from, and is it full bisection?

# %%
ss = nv.nvswitch_data()["switch_system"]
leaving = ss["external_links_per_node"] * hardware.nvlink(4, 1).per_direction
print("leaving one node:", units.format_bandwidth(leaving), "for 8 GPUs injecting",
      units.format_bandwidth(8 * h100.per_direction))
print("all 32 nodes:", units.format_bandwidth(ss["nodes"] * leaving), "(NVIDIA's figure:", ss["all_to_all_tb_s"], "TB/s)")

# %% [markdown]
# 57.6 TB/s is what leaves all 32 nodes together, per direction. Each node can push out 1.8 TB/s per
# direction while its 8 GPUs can inject 3.6 TB/s per direction: across nodes every GPU gets half its NVLink rate, a 2:1 taper. Inside a node
# it is still full speed.
#
# The **GB200 NVL72** takes the switch out of the server: 72 Blackwell GPUs in a rack, 18 NVLink 5 links each
# at 50 GB/s per direction (900 GB/s per direction per GPU), all on 18 NVSwitch chips of 72 ports, one link
# from every GPU to every chip. The whole rack is one non-blocking domain.

# %%
nvl72 = nv.domain_summary("gb200-nvl72")
print("per GPU:", units.format_bandwidth(nvl72["per_gpu"]), "=",
      units.format_bandwidth(nvl72["per_gpu_bidirectional"], direction="bidirectional"))
print("72 GPUs added up:", units.format_bandwidth(nvl72["aggregate_bidirectional"], direction="bidirectional"))
print("bisection:", units.format_bandwidth(nvl72["bisection"]))

# %% [markdown]
# > **Myth / fact: "the NVL72 has 130 TB/s of bisection bandwidth".** Some write-ups call NVIDIA's 130 TB/s
# > figure the bisection. It is the sum over 72 GPUs of each GPU's bandwidth in *both* directions
# > (72 x 1.8 TB/s). The bisection is what one half can send to the other: 36 GPUs x 900 GB/s per direction = **32.4 TB/s
# > per direction**, a quarter of the headline. Both are impressive; they are different quantities.
#
# > **Myth / fact: "900 GB/s is per direction".** H100 NVLink's 900 GB/s (and A100's 600, GB200's 1.8 TB/s)
# > adds both directions: 18 links x 25 GB/s x 2. A GPU can send 450 GB/s *while* receiving 450 GB/s; it
# > cannot send 900. Evidence: an NCCL maintainer answering a user who expected 900 GB/s from an 8x H100
# > server: 900 GB/s "is the sum of both directions", and about 370 GB/s per direction is what applications
# > reach ([nccl issue 1442](https://github.com/NVIDIA/nccl/issues/1442)). Measured ring all-reduces reach
# > 365-370 GB/s [busbw](../docs/glossary.md#busbw), per direction: 82% of 450 (plausible protocol overhead), an absurd 41% of 900.
#
# ## 3. In-switch reduction: NVLink SHARP (NVLS)
# A ring all-reduce makes every GPU send, and receive, $2\frac{p-1}{p}n$ bytes for an $n$-byte buffer:
# the data goes round once to be added up (reduce-scatter) and once more to hand out the sums (all-gather).
# The adding happens on the GPUs, so the partial sums must travel.
#
# From the third generation on, NVSwitch chips contain arithmetic units and multicast. The switch can read
# the same slice from every GPU, **add it inside the switch**, and send the sum to every GPU. In the ideal
# model each GPU sends its buffer into the switch once and receives the result once: $n$ bytes per
# direction instead of $2\frac{p-1}{p}n$, and a time of $\frac{n}{B}$ instead of $2\frac{p-1}{p}\frac{n}{B}$.
# NCCL calls this algorithm **NVLS**.

# %%
print("bytes per GPU for 1 GB on 8 GPUs: ring", units.format_bytes(nv.bytes_per_gpu(1e9, 8, "ring")),
      "| NVLS, ideal", units.format_bytes(nv.bytes_per_gpu(1e9, 8, "nvls")))
glue("nvls_gain_8", nv.bytes_per_gpu(1e9, 8, "ring") / nv.bytes_per_gpu(1e9, 8, "nvls"), "{:.2f}x")
for sid in ("dgx-a100", "dgx-h100", "gb200-nvl72"):
    print(f"{sid:<12} in-switch reduction: {hardware.system(sid).in_network_reduction}")

# %% [markdown]
# At 8 GPUs the ideal gain is {{nvls_gain_8}}, and it approaches 2x as $p$ grows. A100 systems cannot use it
# (NVSwitch 2 has no reduction units); H100, H200, B200 and GB200 systems can, within one NVLink domain.
#
# How NCCL actually does it is slightly different: each GPU takes a $\frac{1}{p}$ share, asks the switch for
# the *sum* of that share across all GPUs (the switch pulls it from every GPU), then multicasts the summed
# share back to everyone. Per direction each GPU moves $\frac{p+1}{p}n$, not $n$; an NCCL maintainer gives
# this factor in [nccl-tests PR 239](https://github.com/NVIDIA/nccl-tests/pull/239).

# %%
for p in (2, 4, 8, 72):
    print(f"p={p:>2}: ring {nv.wire_factor('ring', p):.3f} n, NVLS ideal {nv.wire_factor('nvls', p):.3f} n, "
          f"NVLS as NCCL does it {nv.wire_factor('nvls_refined', p):.3f} n")

# %% [markdown]
# With 2 GPUs NVLS moves *more* than a ring ($\frac{3}{2}n$ against $n$); from 4 GPUs on it moves less. Keep
# that in mind for section 5.
#
# ### busbw, and why it can exceed the line rate
# nccl-tests prints two bandwidths for every size:
# - **algbw** = size / time;
# - **busbw** = algbw x $2\frac{p-1}{p}$ for all-reduce.
#
# The factor was chosen for rings: a ring moves $2\frac{p-1}{p}n$ per GPU, so busbw *is* the rate on each
# GPU's wire, comparable across GPU counts and with the hardware's line rate. With NVLS the wire carries only
# algbw x $\frac{p+1}{p}$, so busbw overstates the wire traffic by $\frac{2(p-1)}{p+1}$: 1.56x at 8 GPUs.
# Take the figures an NCCL maintainer quotes for 8 H100s with NVLS, algbw ~275 GB/s per direction
# ([nccl-tests issue 212](https://github.com/NVIDIA/nccl-tests/issues/212)):

# %%
algbw_nvls = 275e9
print("busbw:", units.format_bandwidth(algbw_nvls * costmodel.busbw_factor("all_reduce", 8)))
print("what each GPU's links carry:", units.format_bandwidth(algbw_nvls * nv.wire_factor("nvls_refined", 8)))
print("busbw / wire traffic at 8 GPUs:", round(nv.busbw_over_wire(8, "nvls_refined"), 3))

# %% [markdown]
# busbw 481 GB/s, above the 450 GB/s line rate, while the links actually carry 309 GB/s per direction. The
# maintainer's reading: with NVLS, busbw is the NVLink bandwidth a send/receive algorithm would *need* to
# finish in the same time. Published measurements, next to each system's per-direction line rate:

# %%
nv.show_nvls_measurements()

# %% [markdown]
# > **Myth / fact: "busbw above line rate means the benchmark is wrong".** A user reported as a problem that
# > 8 H200s measured 475 GB/s busbw (per direction), more than the NVLink 4 line rate
# > ([nccl-tests issue 272](https://github.com/NVIDIA/nccl-tests/issues/272)). Nothing was wrong: busbw is a
# > formula defined for ring traffic, not a reading of the wires, and NVLS sends less than a ring. Two
# > checks keep you honest: within one node, busbw above the NVLink line rate is *only* possible where the
# > switch reduces (A100's 230 GB/s stays below its 300 GB/s per direction), and it is not guaranteed even
# > there (8 B300s reach 845 GB/s with NVLS, under their 900 GB/s per-direction line rate). Across nodes the
# > network's line rate is another matter: part of the traffic stays on NVLink inside each node.
#
# ## Check your understanding
# 1. In a DGX H100, GPUs 0-3 each send 9 GB to GPUs 4-7 (0 to 4, 1 to 5, ...) while GPUs 4-7 send 9 GB back
#    the other way. How long does it take? What about an 8-GPU full mesh built from the same 18 links per GPU?
#
# <details><summary>Answer</summary>
#
# The switch is non-blocking and each direction of a link is independent, so every GPU sends at 450 GB/s
# per direction while receiving at 450 GB/s: 9 GB / 450 GB/s = **20 ms**. On the mesh each pair has one wire of 450/7 =
# 64.3 GB/s per direction: **140 ms** on the direct wires. Even relaying perfectly through the other GPUs
# cannot beat the mesh's bisection: 1,029 GB/s per direction shared by 4 senders is 257 GB/s each, 35 ms.
# </details>
#
# 2. Three 36-port NVSwitch 2 chips have 108 ports, enough for the 96 GPU links of a DGX A100. Why six?
#
# <details><summary>Answer</summary>
#
# The same baseboard (HGX A100) can be joined back to back with a second one to make 16 GPUs. Joined the
# DGX-2 way, each chip linked to its twin on the other board, every chip needs its GPU ports *and* as many
# again towards the other board. With 6 chips that is 16 + 16 = 32 of 36 ports; with 3 chips it would be
# 32 + 32 = 64, more than a chip has. Six chips also give every
# GPU an even 2 links per chip.
# </details>
#
# 3. Does in-switch reduction speed up an all-gather?
#
# <details><summary>Answer</summary>
#
# Not its bandwidth bound: in an all-gather each GPU must *receive* $\frac{p-1}{p}$ of the data whatever the
# switch does, and there is nothing to add. Multicast can save a sender from sending copies, but the
# receiving side already limits the time. Reduction helps where data is summed: all-reduce, reduce-scatter.
# </details>
#
# 4. On 2 GPUs, which is faster in the ideal model: a ring or NVLS?
#
# <details><summary>Answer</summary>
#
# Neither: $2\frac{p-1}{p} = 1$ at $p = 2$, the same single pass as NVLS. As NCCL implements it NVLS moves
# $\frac{3}{2}n$, so the ring wins; measured NVLS on 2-4 H100s is no faster than the ring.
# </details>
#
# ## 4. Explorer: mesh vs NVSwitch vs PCIe tree
# Same GPU count, same per-GPU link speed, three fabrics. Left: all-reduce time for the buffer size you
# choose; right: bisection bandwidth, both per direction. The full mesh is drawn dotted where no GPU has the
# links to build it; the PCIe tree stops at 16 GPUs, the most one two-socket server holds. The readout lists
# one pair's bandwidth, the bisection and the all-reduce times at your GPU count.
#
# Things to try: move the GPU count from 8 to 256 and watch the switch's all-reduce time hardly change while
# its bisection grows in proportion; make the buffer tiny (0.001 GB) and see latency flatten the curves;
# switch the PCIe tree from Gen4 to Gen5 and Gen6 and watch its all-reduce time halve and nearly halve again.
# Each generation is paired with a two-socket CPU of its era (`topology.socket_link`): EPYC Rome's xGMI for
# Gen4, Sapphire Rapids' four 16 GT/s UPI links for Gen5. A ring crosses the socket link once in each
# direction, so it is limited by one x16 slot as long as that slot is slower than the socket link. No
# two-socket CPU with PCIe Gen6 is in the course's data; Gen6 and Gen7 borrow Sapphire Rapids' link
# (marked assumed), and only at Gen7 would the socket link, not the slot, set the ring's pace:

# %%
for g in (3, 4, 5, 6, 7):
    link, tree = topology.socket_link(g), nv.pcie_tree_numbers(8, g)
    print(f"Gen{g}: slot {tree['link'] / 1e9:5.1f}, socket link {link['gb_s_per_direction']:5.1f} "
          f"({link['cpu']}{', assumed' if link['assumed'] else ''}) -> ring {tree['ring_bw'] / 1e9:5.1f} GB/s per direction")

# %%
nv.fabric_explorer()

# %% [markdown]
# The same comparison as a table for 8 GPUs and 1 GB:

# %%
nv.show_fabric_comparison(gpus=8, per_gpu_bw=h100.per_direction, nbytes=1e9)

# %% [markdown]
# ## 5. Where the model stops being true
# The ideal model uses spec bandwidth, treats the switch as a wire with no delay, and gives NVLS a clean
# $\frac{n}{B}$. The course's cost model (`costmodel.predict`) already corrects the first two with sourced
# efficiencies; here it is against published measurements.

# %%
_ = nv.plot_measurements()

# %% [markdown]
# What the figure and the sources show:
# - **Achievable is not spec.** Rings reach about 80% of the per-direction line rate: 365-370 of 450 GB/s on
#   H100, about 230 of 300 on A100, from NVLink packet and protocol overhead (maintainers in nccl-tests issues
#   212 and 149). The model applies this as a measured efficiency:

# %%
for row in costmodel.efficiency_table():
    if row["technology"] in ("nvlink", "nvls"):
        print(f"{row['technology']:<7} {row['efficiency']:.2f}  {row['derivation']}")

# %% [markdown]
# - **NVLS's efficiency is empirical.** Its algbw (~275 GB/s on 8 H100) is 61% of 450 GB/s per direction, lower than a ring's
#   80%: the switch pulls data from every GPU and multicasts it back, and the model does not derive that.
#   Calibrated at 8 GPUs, it is within 5% at 5-8 GPUs but expects a gain at 4 GPUs that the measurements
#   ([nccl issue 1455](https://github.com/NVIDIA/nccl/issues/1455), 2-4 GB) do not show: there NVLS is no
#   faster than the ring.

# %%
for r in nv.nvls_by_gpu_count():
    print(f"{r['gpus']} GPUs: measured ring {r['measured_ring'] / 1e9:3.0f}, NVLS {r['measured_nvls'] / 1e9:3.0f} | "
          f"model ring {r['model_ring'] / 1e9:3.0f}, NVLS {r['model_nvls'] / 1e9:3.0f}  (busbw, GB/s per direction)")

# %% [markdown]
# - **NVLS needs big buffers.** On 8 H200s busbw is 432 GB/s at 256 MB and 480 GB/s at 8 GB (per direction). NVLS also
#   costs more fixed latency than a ring (NCCL's own tuning table charges NVLS 23-25 us, depending on the
#   version, as its NVLink hardware latency, where a ring with the [LL](../docs/glossary.md#nccl-protocols) protocol pays a 6.6 us base latency
#   and 0.6 us per step; the course model uses NCCL's table, `costmodel.protocol_table()`), so NCCL
#   uses rings for small messages and NVLS from a few MB (one report: ring up to 1 MB, NVLS from 2 MB,
#   [nccl-tests issue 309](https://github.com/NVIDIA/nccl-tests/issues/309)).
# - **NVLS needs NVSwitch 3 or later, inside one NVLink domain.** No A100 system has it; across nodes the
#   counterpart is SHARP in InfiniBand switches ([nccl issue 1031](https://github.com/NVIDIA/nccl/issues/1031)).
#   NCCL turns it on by default and `NCCL_NVLS_ENABLE=0` turns it off.
# - **The model ignores the switch's own latency and the GPU's SMs.** Collectives run on the GPU's
#   streaming multiprocessors, which then do not compute; NVLS reaches peak with fewer SMs than other
#   algorithms (16, or 4 with registered buffers, against 32 for a tree,
#   [nccl issue 1649](https://github.com/NVIDIA/nccl/issues/1649)). That contention with computation appears
#   nowhere in a bandwidth model.
# - **Bigger domains taper.** The 256-GPU NVLink Switch System as announced for DGX H100 gives each GPU half its NVLink rate across
#   nodes; treating it as one flat 256-port switch would be 2x optimistic.
#
# Predicted against measured for the 8-GPU nodes of the validation set (busbw in GB/s per direction):

# %%
for row in costmodel.validation_table():
    if row["nodes"] == 1 and row["nbytes"] >= 2**30:
        print(f"{row['id']:<16} {row['system']:<9} {units.format_bytes(row['nbytes'], binary=True):>8}: measured "
              f"{row['measured_busbw'] / 1e9:5.0f}, model {row['predicted_busbw'] / 1e9:5.0f} ({row['algorithm']})")

# %% [markdown]
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer. Numbers are compared with a relative
# tolerance, so you do not need to round. Use the ideal model (spec bandwidth, no latency) unless told
# otherwise.
#
# **Exercise 03.1** (1 point). What is the bisection bandwidth of a **DGX A100**'s NVSwitch domain (8 A100,
# 12 NVLink 3 links each of 25 GB/s per direction), in **GB/s per direction**? Store it in
# `dgx_a100_bisection_gb_s`.

# %% exercise="03.1"
dgx_a100_bisection_gb_s = 8 / 2 * 12 * 25

# %% [markdown]
# **Exercise 03.2** (1 point). A 4 GB buffer (4 x 10⁹ bytes) is all-reduced with a **ring** over the 8 H100s
# of a DGX H100. In the ideal model, how many **seconds** does it take? Store it in `ring_4gb_s`.

# %% exercise="03.2"
ring_4gb_s = 2 * (8 - 1) / 8 * 4e9 / 450e9

# %% [markdown]
# **Exercise 03.3** (1 point). *Predict.* The same 4 GB all-reduce with **NVLS**, in the ideal in-switch model
# (each GPU sends its buffer into the switch once and receives the sum once). Compared with the ring of
# exercise 03.2, what happens? Store the letter in `nvls_prediction`.
#
# - **A.** 8 times faster: the switch does the work of all 8 GPUs.
# - **B.** 2 times faster: the switch uses both directions.
# - **C.** No change: the links are the same.
# - **D.** 1.75 times faster: each GPU sends n bytes instead of 2(p-1)/p x n.

# %% exercise="03.3"
nvls_prediction = "D"

# %% [markdown]
# **Exercise 03.4** (2 points). An 8-GPU `all_reduce_perf` run prints this line (the bandwidth columns are
# hidden; the time is in microseconds, as nccl-tests prints it):
#
# ```
# #       size         count      type   redop    root     time   algbw   busbw
#   8589934592    2147483648     float     sum      -1    31357     ...     ...
# ```
#
# What **algbw**, in **GB/s**, does nccl-tests report (the bandwidth the application sees)? Store it in
# `measured_algbw_gb_s`. Its busbw column, algbw x 2(n-1)/n, reads **479 GB/s**.

# %% exercise="03.4"
measured_algbw_gb_s = costmodel.algbw(8589934592, 31357e-6) / 1e9

# %% [markdown]
# **Exercise 03.5** (1 point). That run was on H100s, whose NVLink runs at 450 GB/s per direction. Which
# statement is right? Store its letter in `busbw_verdict`.
#
# - **A.** The benchmark is wrong: no bandwidth can exceed the line rate.
# - **B.** The real limit is 900 GB/s, because the GPUs use both directions; the run reached 53% of it.
# - **C.** NCCL reduced inside the switch (NVLS): each GPU moved less data than a ring would, and busbw,
#   defined by the ring's formula, overstates what the links carried.
# - **D.** busbw includes the NVSwitch's internal bandwidth, which is larger than the GPUs' links.

# %% exercise="03.5"
busbw_verdict = "C"

# %% [markdown]
# **Exercise 03.6** (1 point). An imagined board joins **16 H100s** (18 NVLink 4 links each) through
# **64-port NVSwitch 3 chips**; every GPU link must end on a switch port, and no ports are kept for cables that
# leave the board. What is the **smallest number of chips** that has enough ports? Store it in
# `min_nvswitch3_chips`.

# %% exercise="03.6"
min_nvswitch3_chips = nv.min_switch_chips(16, 18, 64)

# %% [markdown]
# **Exercise 03.7** (1 point). The announced NVLink Switch System of section 2 joins 32 DGX H100 nodes
# (256 GPUs). Cut it between two groups of 16 nodes, with the external switches non-blocking. What is its
# bisection bandwidth in **TB/s per direction** (1 TB = 10¹² bytes)? Store it in `switch_system_bisection_tb_s`.

# %% exercise="03.7"
external_per_node_gb_s = 72 * 25  # the node's external NVLink ports, per direction
switch_system_bisection_tb_s = 32 / 2 * external_per_node_gb_s / 1000

# %% [markdown]
# **Exercise 03.8** (2 points, graded by hand). *Design.* You choose between two 8-GPU servers with the
# same GPUs and 18 NVLink links per GPU: one wires the GPUs as a **full mesh** (links split over the 7 peers),
# the other through **NVSwitch** chips. The workload mixes large ring all-reduces with one-to-one transfers
# between pairs of GPUs (pipeline stages). Which server do you choose, and why? Answer in 3-5 sentences in
# `server_choice` (a string), with the bandwidth a pair of GPUs and a ring each get in both designs.
#
# The rubric and a model answer appear under the check cell once you have written your answer.

# %% exercise="03.8"

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals(), chapter="03")` scores every exercise of this notebook without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="03")

# %% [markdown]
# ## Worked questions
# Try each before opening the answer.
#
# 1. An 8x A100 server reports all-reduce busbw 228 GB/s at 1 GiB. What fraction of the per-direction line
#    rate is that, and would enabling NVLS help?
#
# <details><summary>Answer</summary>
#
# A100: 12 links x 25 GB/s = 300 GB/s per direction, so 228/300 = **76%**, in line with the ~80% rings reach.
# NVLS would not help: the DGX/HGX A100's NVSwitch 2 has no reduction units.
# </details>
#
# 2. How long does a 16 GB all-reduce take on a GB200 NVL72 (all 72 GPUs) with a ring, and with ideal NVLS?
#
# <details><summary>Answer</summary>
#
# Per GPU 900 GB/s per direction. Ring: 2 x 71/72 x 16 GB / 900 GB/s = **35.1 ms**. NVLS: 16 GB / 900 GB/s =
# **17.8 ms**. With many GPUs the ideal gain approaches 2x.
# </details>
#
# 3. In pipeline parallelism GPU 3 hands 2 GB of activations to GPU 4 while the others wait. How long on a
#    DGX H100, and on a hypothetical 8-GPU full mesh made from the same links (sending on the direct wire)?
#
# <details><summary>Answer</summary>
#
# DGX H100: the pair gets the full 450 GB/s per direction: 2 GB / 450 GB/s = **4.4 ms**. Mesh: one wire of
# 450/7 = 64.3 GB/s per direction: **31 ms**, 7x slower. Relaying through the idle GPUs could recover much of it, but
# costs their links and SMs. This uneven traffic is exactly where a switch earns its keep.
# </details>
#
# 4. A colleague divides 130 TB/s by 72 GPUs and gets 1.8 TB/s "per direction per GPU". What went wrong?
#
# <details><summary>Answer</summary>
#
# 130 TB/s adds both directions, so 1.8 TB/s per GPU is bidirectional: **900 GB/s per direction**.
# </details>
#
# ## Takeaways
# - A **non-blocking switch** lets every GPU send at its full link rate to any other at the same time;
#   **full bisection** means half the GPUs can send to the other half at full rate: $\frac{p}{2}B$, 1.8 TB/s
#   per direction for a DGX H100, 32.4 TB/s for an NVL72.
# - A full mesh splits each GPU's links over $p-1$ peers: fine for evenly spread all-reduce traffic, poor
#   for uneven traffic, about half the bisection, and impossible beyond links + 1 GPUs.
# - NVSwitch chips aggregate links: every GPU reaches every chip (DGX A100: 2 links to each of 6; DGX H100:
#   5+4+4+5 over 4; NVL72: 1 to each of 18), and the port counts must close.
# - **NVLS** (NVSwitch 3 and later) adds in the switch: about $n$ bytes per GPU instead of $2\frac{p-1}{p}n$,
#   up to ~1.75x faster at 8 GPUs in the ideal model, ~1.3x measured (370 to 480 GB/s busbw, per direction, on H100).
# - **busbw** is algbw x $2\frac{p-1}{p}$, a ring's wire rate. With NVLS it exceeds the line rate without any
#   error; always ask which algorithm ran.
# - Vendor totals add both directions (900 GB/s, 130 TB/s); collectives use one direction's half.
#
# ## Further reading
# - NVIDIA, *NVLink and NVSwitch* (generations and per-GPU bandwidth): https://www.nvidia.com/en-us/data-center/nvlink/
# - NVIDIA Developer Blog, *NVSwitch Accelerates NVIDIA DGX-2*: https://developer.nvidia.com/blog/nvswitch-accelerates-nvidia-dgx2/
# - NVIDIA Developer Blog, *Upgrading Multi-GPU Interconnectivity with the Third-Generation NVSwitch* (SHARP, the NVLink Switch System): https://developer.nvidia.com/blog/upgrading-multi-gpu-interconnectivity-with-the-third-generation-nvidia-nvswitch/
# - NVIDIA Developer Blog, *Introducing NVIDIA HGX H100*: https://developer.nvidia.com/blog/introducing-nvidia-hgx-h100-an-accelerated-server-platform-for-ai-and-high-performance-computing/
# - Li et al., *Evaluating Modern GPU Interconnect: PCIe, NVLink, NV-SLI, NVSwitch and GPUDirect* (measurements on DGX-1 and DGX-2): https://arxiv.org/abs/1903.04611
# - nccl-tests, *Performance* notes (algbw and busbw): https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
# - nccl-tests issue 212 (NVLS busbw explained by a maintainer): https://github.com/NVIDIA/nccl-tests/issues/212
# - NCCL environment variables (`NCCL_NVLS_ENABLE`, `NCCL_ALGO`): https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
# - NVIDIA, *GB200 NVL72*: https://www.nvidia.com/en-us/data-center/gb200-nvl72/
