# %% [markdown]
# # 01 · PCIe: the slot every GPU sits in
#
# **Time:** about 60 minutes. **Prerequisites:** chapter 00 (what moves between GPUs; bytes vs bits;
# per direction vs bidirectional).
#
# **After this chapter you can**
# - derive a PCIe link's bandwidth from its transfer rate, encoding and lane count, for every generation
#   from Gen1 (8b/10b) through Gen3-5 (128b/130b) to Gen6-7 (FLIT);
# - say whether a quoted figure is per direction or bidirectional, and correct it when it is mislabelled;
# - budget the lanes of a server: why 128 CPU lanes fit exactly 8 GPUs at x16, and why real 8-GPU servers
#   still use PCIe switches;
# - follow a copy through the root complex, a PCIe switch and the link between CPU sockets, and tell P2P
#   from staging through host memory;
# - estimate what CPU-GPU links (PCIe, POWER9 NVLink, Grace Hopper NVLink-C2C) mean for offloading;
# - compare the link's figure with what real copies reach, pinned and pageable.
#
# Conventions, as everywhere: **1 GB = 10⁹ bytes**, **1 Gb/s = 10⁹ bits/s**, and every bandwidth says
# *per direction* or *bidirectional*. Link rates come from `course_lib.hardware` (derived from the
# PCI-SIG transfer rates and encodings); published measurements, CPU lane counts and CPU-GPU NVLink figures
# come from `course_lib/data/published_pcie.json`, each with its source.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, costmodel, datafiles, hardware, prose, topology, units
from course_lib.chapters import pcie

glue = prose.Glue("01")  # numbers the text quotes from the cells

# %% [markdown]
# ## 1. From transfer rate to bytes per second
#
# A PCIe **link** is a bundle of **lanes**: x1, x2, x4, x8 or x16. Each lane is two pairs of wires, one
# for each direction, so a lane sends and receives *at the same time* (full duplex). The generation sets
# the **transfer rate** of a lane, in gigatransfers per second (GT/s): one bit per transfer on Gen1-5.
#
# Not every bit on the wire is data. The **encoding** adds bits so the receiver can recover the clock and
# find word boundaries:
#
# | generations | encoding | data bits / wire bits |
# |---|---|---|
# | Gen1, Gen2 | 8b/10b: every byte is sent as 10 bits | 8/10 = 80% |
# | Gen3, Gen4, Gen5 | 128b/130b: a 2-bit header per 128 bits | 98.5% |
# | Gen6, Gen7 | [FLIT](../docs/glossary.md#flit) mode: PAM4 signalling (2 bits per symbol), fixed 256-byte FLITs: 236 bytes of transaction-layer packets (TLPs), 6 of link-layer (DLP) messages, 8 of CRC, 6 of forward error correction | 236/256 = 92.2% |
#
# The course counts only the TLP bytes as data. Some texts count the 6 DLP bytes too and quote
# 242/256 = 94.5%, but those carry acknowledgements and flow-control credits, not your data
# ([PCI-SIG's FLIT-mode Q&A](https://pcisig.com/blog/pcie%C2%AE-60-specification-webinar-qa-deeper-dive-flit-mode-pam4-and-forward-error-correction-fec)).
#
# So, for one direction,
#
# $$B = \text{GT/s per lane} \times \text{lanes} \times \text{encoding efficiency} \;/\; 8 \text{ bits per byte}.$$
#
# For the x16 link of an A100 (PCIe Gen4):

# %%
print(pcie.describe_link(4, 16))

# %% [markdown]
# The same arithmetic for every generation, x16 (GB/s per direction, and both directions added):

# %%
pcie.print_table(pcie.generation_table(16))
x16 = {g: hardware.pcie_link(g, 16) for g in (3, 4, 5, 6)}
glue("gen6_gain", x16[6].per_direction / x16[5].per_direction, "{:.2f}x")
glue("gen3_x16", x16[3].per_direction / units.GB, "{:.1f}")
glue("gen4_x16", x16[4].per_direction / units.GB, "{:.1f} GB/s")
glue("gen5_x16", x16[5].per_direction / units.GB, "{:.0f}")
glue("gen6_x16", x16[6].per_direction / units.GB, "{:.0f} GB/s")
glue("gen4_x16_bidir", x16[4].bidirectional / units.GB, "{:.0f} GB/s")
glue("gen5_x16_bidir", x16[5].bidirectional / units.GB, "{:.0f} GB/s")
glue("gen6_x16_bidir", x16[6].bidirectional / units.GB, "{:.0f} GB/s")

# %% [markdown]
# Two things to notice. Each generation doubles the transfer rate, so it doubles the bandwidth (Gen6's
# FLIT overhead trims its gain to {{gen6_gain}}); and Gen3 got its near-doubling over Gen2 from 5 → 8 GT/s
# *plus* the switch from 8b/10b to 128b/130b (5 GT/s × 0.8 = 4 Gb/s of data per lane before,
# 8 × 0.985 = 7.9 after). Halving the lanes halves the
# bandwidth, whatever the generation:

# %%
pcie.plot_lanes();

# %% [markdown]
# ## 2. Per direction or bidirectional?
#
# The number above, {{gen4_x16}} for Gen4 x16, is what one copy in **one direction** can use. A copy from
# host to GPU does not borrow the other direction's wires. "Both directions added" ({{gen4_x16_bidir}} for Gen4 x16)
# is only reached when data flows both ways at once, at full speed.
#
# > **Myth.** *"PCIe Gen4 x16 is ~32 GB/s bidirectional, Gen5 ~64 GB/s bidirectional, Gen6 ~128 GB/s
# > bidirectional."* (popular articles on GPU interconnects, and much other public writing)
#
# > **Fact.** Those are **per-direction** figures (Gen6's 128 is even the raw rate before FLIT overhead:
# > {{gen6_x16}} of data). Bidirectional totals are twice as large: {{gen4_x16_bidir}}, {{gen5_x16_bidir}} and
# > {{gen6_x16_bidir}}.
#
# > The evidence is the
# > arithmetic above (the PCI-SIG transfer rates are per lane per direction) and measurement: copies in one
# > direction on Gen5 x16 reach 56 GB/s, which no "64 GB/s bidirectional" link could give; with both
# > directions running, busGrind adds up to about 101 GB/s.

# %%
pcie.plot_generations();
print("Gen5 x16, one GPU, one way (busGrind):", pcie.measurement("busgrind-h2d")["reported"])
print("Gen5 x16, both directions at once, added:", pcie.measurement("busgrind-bidir")["reported"])
print("The mislabel in the wild:", datafiles.source("drkennetz-1")["title"])

# %% [markdown]
# The mistake costs a factor of two in every estimate built on it: a learner who believes "32 GB/s
# bidirectional" expects 16 GB/s for a host-to-GPU copy and is puzzled to see 26 GB/s in one direction.

# %% [markdown]
# ## 3. Lanes: why 8 GPUs, and why switches
#
# A training GPU wants x16, the widest link. A CPU has a fixed number of lanes. One AMD EPYC (Rome) socket
# has 128 PCIe Gen4 lanes; in a two-socket server, 64 lanes of each socket carry the link between the
# sockets, so the server still has 128:

# %%
epyc = pcie.cpu_lanes("epyc-rome-2p")
print(epyc["cpu"], "->", epyc["usable_lanes"], "usable lanes ->",
      pcie.gpus_on_cpu_lanes(epyc["usable_lanes"], 16), "GPUs at x16, and nothing else")

# %% [markdown]
# 128 / 16 = 8: the "16 lanes per GPU x 8 GPUs = 128 CPU lanes" of popular articles. But nothing is
# left for anything else. A training server also needs network cards (one per GPU on DGX A100/H100; count
# each at x16) and NVMe drives (x4 each):

# %%
print("8 GPUs + 8 NICs + 8 NVMe drives need", pcie.lane_budget(gpus=8, nics=8, nvme=8), "lanes")
dgx = hardware.system("dgx-h100")
print("DGX H100 from the catalog:", dgx.gpus_per_node, "GPUs,", dgx.nics_per_node, "NICs;", dgx.raw["pcie_switches_note"])

# %% [markdown]
# More lanes than the two sockets above have (128, or 160 with a narrower socket link). The answer is the **PCIe switch**: a chip with one upstream port to
# the CPU (the **uplink**) and several downstream ports (a separate chip in most servers; in a DGX H100 the
# switch built into each ConnectX-7 [NIC](../docs/glossary.md#nic) plays that part). Devices below it each get a full x16 link, and
# traffic *between* them turns around in the switch without touching the CPU. The price: everything that
# goes *up* to the CPU shares the uplink.
#
# ## 4. The PCIe tree: root complex, switches, sockets
#
# The CPU's PCIe controller is the **root complex**; its root ports are the top of a tree. Below them sit
# switches or devices. In a two-socket server each socket has its own tree, and the sockets are joined by
# a CPU link (Intel UPI, AMD Infinity Fabric). Here are both designs for 8 Gen4 GPUs, drawn by
# `course_lib.topology`:

# %%
pcie.draw_pcie_trees(generation=4);
trees = {"root": (t := pcie.tree_summary(4))[0], "switch": t[1]}
pcie.print_table(t)
glue("root_lanes", trees["root"]["CPU lanes used"], "{}")
glue("switch_lanes", trees["switch"]["CPU lanes used"], "{}")
glue("switch_pair", trees["switch"]["gpu0->gpu1"], "{:.1f} GB/s")
glue("switch_host_each", trees["switch"]["to host, all GPUs at once"], "{:.1f} GB/s")
glue("switch_bisection", trees["switch"]["bisection (4 GPUs -> 4 GPUs)"], "{:.0f} GB/s")

# %% [markdown]
# Read the table: with switches the tree takes {{switch_lanes}} CPU lanes instead of {{root_lanes}} (the rest is free for NICs
# and drives), and a GPU-to-GPU copy under one switch still runs at the full {{switch_pair}} per direction. But
# when all 8 GPUs copy to host memory at once, two GPUs share each uplink: {{switch_host_each}} per direction each.
# And traffic between the two halves crosses the socket link. The course pairs each PCIe generation with
# a two-socket CPU of its era; for Gen4 that is AMD EPYC Rome, whose socket link is four x16 xGMI links:

# %%
rome = topology.socket_link(4)
print(f"{rome['cpu']}: {rome['name']}, {rome['gb_s_per_direction']:g} GB/s per direction")
glue("socket_link", rome["gb_s_per_direction"], "{:g} GB/s")
glue("socket_link_each", rome["gb_s_per_direction"] / 4, "{:g} GB/s")

# %% [markdown]
# {{socket_link}} per direction, shared by the 4 GPUs of a socket: {{socket_link_each}} each, as much as one Gen4 slot. At
# Gen4 the cut between the halves runs through the PCIe links (the two switch uplinks, {{switch_bisection}}, in the
# table's [bisection](../docs/glossary.md#bisection)), not through the socket link. An older Cascade Lake server (PCIe Gen3, three UPI links,
# `topology.socket_link(3)`) has half that socket link for slots of half the speed.
#
# Where the host memory sits matters too. Binding a P100's copies to memory on the *other* socket
# (published measurement, same machine):

# %%
for mid in ("p100-local-h2d", "p100-local-d2h", "p100-remote-h2d", "p100-remote-d2h"):
    m = pcie.measurement(mid)
    print(f"{m['direction']}  {m['placement']:<13} {m['gb_s_mid']:5.2f} GB/s per direction")

# %% [markdown]
# ## 5. P2P, or staging through host memory
#
# When two GPUs on PCIe support **peer-to-peer (P2P)**, one GPU writes straight into the other's memory:
# the data crosses each link once, and under a common switch never reaches the CPU. Without P2P, a copy
# is **staged**: GPU → host memory, then host memory → GPU. The bytes cross PCIe twice and pass through
# host memory.
#
# > **Myth.** *"Two consumer GPUs on PCIe talk to each other like data-centre GPUs, just slower."*
# >
# > **Fact.** The GeForce RTX 4090 has no NVLink *and* no P2P with NVIDIA's driver: the mailbox hardware
# > the driver uses for P2P is absent or disabled on that chip, so every GPU-to-GPU copy is staged through
# > host memory. (A patched open-source driver shows the PCIe path itself could do 24.4 GB/s one way.)

# %%
desktop = hardware.system("consumer-4090-pcie")
print(desktop.name, "| P2P:", desktop.p2p, "|", desktop.pcie.describe())
print("Evidence:", datafiles.source("tinygrad-p2p")["url"])
pcie.draw_system("consumer-4090-pcie");

# %% [markdown]
# A desktop CPU gives its 16 graphics lanes to the first slot, or splits them x8/x8 for two cards. Staging
# 1 GB from one 4090 to the other as two copies, one after the other:

# %%
t_staged = pcie.staged_copy_time(1e9, desktop.pcie.per_direction)
t_pipelined = pcie.staged_copy_time(1e9, desktop.pcie.per_direction, pipelined=True)
print(f"two copies: {units.format_time(t_staged)};  best case if the driver pipelines the halves: {units.format_time(t_pipelined)}")

# %% [markdown]
# ## 6. Explorer: generation, lanes, GPUs behind a switch, uplink speed
#
# Pick a generation and lane count for each GPU, how many GPUs sit behind one switch, and the speed of the
# switch's uplink (GB/s per direction). Every GPU moves the payload at the same time. Compare the three
# kinds of traffic: to host memory, GPU-to-GPU staged through host (no P2P), and P2P under the switch.
# Notice that P2P does not depend on the GPU count at all (the uplink is not used), while staging pays
# twice: two copies, both through the shared uplink.

# %%
pcie.pcie_explorer(generation=4, lanes=16, gpus=4, payload_gb=1.0, mode="staged")

# %% [markdown]
# ## 7. Achievable vs spec: pinned and pageable memory
#
# The spec is a ceiling. Every PCIe packet carries header bytes besides its payload, the copy engine needs
# time to start, and memory on the host side has to keep up. The host buffer's kind matters most:
#
# - **pinned** (page-locked) memory cannot be moved by the operating system, so the GPU's copy engine reads
#   or writes it directly (DMA);
# - **pageable** memory (what `malloc`, NumPy and a plain `torch.empty` give) must first be copied by the
#   CPU into a pinned staging buffer, chunk by chunk: a copy through host memory before the copy over PCIe.
#
# If this machine has a CUDA GPU, the next cell measures host → device and device → host copies, pinned and
# pageable (256 MB, median of 5), with `pcie.measure_host_device_bandwidth`; otherwise it says so and the
# plot shows only published measurements.

# %%
measured = pcie.measure_host_device_bandwidth(nbytes=256_000_000, repeats=5)
_ = pcie.report_measurement(measured)
pcie.plot_published(measured=measured);

# %% [markdown]
# Best published single-GPU copies against the x16 spec (GB/s per direction):

# %%
achievable = pcie.achievable_summary()
pcie.print_table(achievable)
pinned = [r["pinned_fraction"] for r in achievable if r["pinned_fraction"] is not None]
glue("pinned_lo", min(pinned), "{:.0%}")
glue("pinned_hi", max(pinned), "{:.0%}")
vm = {d: pcie.measurement(f"course-h200-vm-{d}-1GB") for d in ("h2d-pinned", "h2d-pageable", "d2h-pageable")}
glue("vm_h2d_pinned", vm["h2d-pinned"]["gb_s_mid"], "{:.0f} GB/s")
glue("vm_h2d_pageable", vm["h2d-pageable"]["gb_s_mid"], "{:.1f} GB/s")
glue("vm_d2h_pageable", vm["d2h-pageable"]["gb_s_mid"], "{:.0f} GB/s")
glue("vm_pageable_share", vm["h2d-pageable"]["gb_s_mid"] / vm["h2d-pinned"]["gb_s_mid"], "{:.0%}")

# %% [markdown]
# About {{pinned_lo}}-{{pinned_hi}} of spec with pinned memory; about a third with pageable memory on Gen3 and Gen4. On
# Gen4 the same DGX A100 goes from 25.7 GB/s per direction pinned to 10.0 GB/s pageable.

# %% [markdown]
# We found no published Gen5 pageable figure, so the table's Gen5 pageable entry is our own: one H200 in a virtual
# machine, measured with this chapter's function by the course's `benchmarks/device_check.py`: {{vm_h2d_pinned}} pinned
# host to device, but {{vm_h2d_pageable}} pageable ({{vm_pageable_share}} of pinned) and {{vm_d2h_pageable}} back.
# Pageable copies are paced by the CPU copying into the staging buffer, not by the link, so doubling the link does
# little for them. One machine, and a virtual one (host memory goes through the hypervisor): measure yours with the
# cell above.
# In PyTorch, `DataLoader(pin_memory=True)` and `tensor.pin_memory()` give pinned buffers, and
# `.to("cuda", non_blocking=True)` from pinned memory lets the copy overlap computation.

# %% [markdown]
# ## 8. CPU-GPU NVLink, and offloading over the link
#
# PCIe is not the only way from CPU to GPU. IBM's POWER9 spoke NVLink 2.0 to V100 GPUs (Summit: two links
# of 25 GB/s per direction from each CPU to each of its GPUs), and NVIDIA's Grace CPU is joined to its
# Hopper GPU by **NVLink-C2C**, quoted at 900 GB/s: both directions added.

# %%
pcie.print_table(pcie.cpu_gpu_links(), ["name", "gb_s_per_direction", "gb_s_bidirectional"])
c2c = pcie.cpu_gpu_link("grace-hopper-c2c")
print(f"NVLink-C2C / PCIe Gen5 x16, per direction: {c2c.per_direction / hardware.pcie_link(5, 16).per_direction:.1f}x")
glue("c2c_vs_gen5", c2c.per_direction / hardware.pcie_link(5, 16).per_direction, "{:.0f}x")
glue("c2c_per_direction", c2c.per_direction / units.GB, "{:.0f} GB/s")

# %% [markdown]
# Why would training care about the CPU-GPU link? **Offloading.** [ZeRO](../docs/glossary.md#zero)-Offload keeps the optimizer state
# (FP32 master weights, Adam's two moments: 12 bytes per parameter) in host memory and runs the optimizer
# step on the CPU. Every step, the FP16 gradients go down to the host and the updated FP16 parameters come
# back: 2 bytes per parameter each way. For a 13-billion-parameter model on one A100 (PCIe Gen4 x16):

# %%
params = 13e9
print("each way:", units.format_bytes(pcie.offload_bytes(params)))
for name, link in [("PCIe Gen4 x16", hardware.pcie_link(4, 16)), ("PCIe Gen5 x16", hardware.pcie_link(5, 16)),
                   ("NVLink-C2C", c2c)]:
    print(f"{name:<14} {units.format_time(pcie.offload_time(params, link.per_direction))} per step (one direction after the other)")
glue("offload_gen4_s", pcie.offload_time(params, hardware.pcie_link(4, 16).per_direction), "{:.2f} s")

# %% [markdown]
# More than a second of transfers per step over PCIe Gen4 ({{offload_gen4_s}}). That is why ZeRO-Offload overlaps these
# transfers with the backward pass, and why it uses pinned buffers (DeepSpeed measured 6x faster
# host-to-device copies on one GPU after switching from pageable to pinned). With data parallelism the
# optimizer state is partitioned, so each of N GPUs moves 1/N of it over its own link.

# %%
pcie.offload_explorer(parameters_b=13, gpus=1)

# %% [markdown]
# ## 9. Where the model stops being true
#
# The model says: time = bytes / (GT/s × lanes × encoding / 8). Published measurements show where that
# breaks down (every figure in GB/s per direction):
#
# - **Efficiency.** The best pinned copies reach {{pinned_lo}}-{{pinned_hi}} of spec (packet headers, copy-engine start-up);
#   the course's cost model uses an achievable fraction, `costmodel.efficiency("pcie")`, not the spec.
# - **Small transfers.** Each copy pays a fixed cost of microseconds: on a Della A100 (Gen4) 1 MB copies
#   ran at 18.0 GB/s and 1 GB copies at 25.8; on our H200 (Gen5), 29 and 55.
# - **Pageable memory.** A third of the link or less, and it varies by machine: on a Dell A100 PCIe server
#   pageable host-to-device copies ran at 3.3 GB/s.
# - **Sharing.** All 8 GPUs of one server copying to host at once got 25-45 GB/s each on a Gen5 box that
#   gives 56 GB/s to one GPU alone (278 GB/s in total): uplinks, root ports and host memory are shared.
# - **Both directions at once.** On 8 A100s, host-to-device fell to ~11 GB/s while device-to-host kept
#   ~25 GB/s: full duplex on the wire does not guarantee full duplex through the CPU.
# - **Sockets.** Host memory on the other socket cut a P100's copies to about a third.
# - **Copy method.** Copies done by GPU kernels instead of copy engines reached 35 GB/s host-to-device on
#   H100, against 51-57 GB/s with copy engines. Even NVLink-C2C reaches 346 of its {{c2c_per_direction}} per direction.

# %%
for mid in ("della-a100-1MB", "della-a100-1GB", "course-h200-vm-h2d-pinned-1MB", "course-h200-vm-h2d-pinned-1GB",
            "dell-a100-pageable-h2d", "busgrind-all8-h2d",
            "a100-bidir-h2d", "h100-sm-h2d"):
    m = pcie.measurement(mid)
    print(f"{mid:<31} {m['reported']:<42} {m['fraction_of_spec']:4.0%} of spec  {m['url']}")
print("costmodel's achievable fraction for PCIe:", costmodel.efficiency("pcie"))

# %% [markdown]
# ## Check your understanding
#
# 1. A GPU sits in a PCIe Gen5 slot but `nvidia-smi` reports the link as Gen5 x8. What bandwidth per
#    direction should you expect from its host copies at best?
#
# <details><summary>Answer</summary>
#
# Half of x16: 32 GT/s × 8 × 128/130 / 8 = 31.5 GB/s per direction, the same as Gen4 x16; about 86-91% of
# that in practice (27-29 GB/s). Check the slot's wiring and the riser: x16-sized slots are often wired x8.
# </details>
#
# 2. Why does the bandwidth of a copy from GPU 0 to GPU 1 under the same PCIe switch not change when six
#    other GPUs behind other switches copy to host memory at the same time?
#
# <details><summary>Answer</summary>
#
# With P2P the copy turns around in the switch: it uses GPU 0's link up to the switch and GPU 1's link down,
# and never the uplink or the CPU. The other GPUs' host copies load their own uplinks and the root complex.
# (Without P2P, the copy would go through the uplink and host memory, and would compete with them.)
# </details>
#
# 3. Gen2 ran at 5 GT/s and Gen3 at 8 GT/s, yet Gen3 x16 has almost twice Gen2 x16's bandwidth. Why?
#
# <details><summary>Answer</summary>
#
# The encoding changed from 8b/10b (80% data) to 128b/130b (98.5%): 5 × 0.8 = 4 Gb/s per lane against
# 8 × 0.985 = 7.88 Gb/s, a factor of 1.97.
# </details>
#
# 4. A blog says "NVLink-C2C is 900 GB/s, so a Grace Hopper offloads 1.8 GB of gradients in 2 ms". What is
#    wrong?
#
# <details><summary>Answer</summary>
#
# 900 GB/s adds both directions. Gradients go one way: 450 GB/s per direction, so at least 4 ms, and in
# practice more (nvbandwidth measured 346 GB/s host-to-device on a GH200).
# </details>
#
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer. Numbers are compared with a
# relative tolerance, so you do not need to round. You may use `hardware` and `pcie` functions, but the
# point is to be able to do each one by hand.
#
# **Exercise 01.1** (1 point). From first principles: an NVMe drive sits on a PCIe **Gen5 x4** link (32 GT/s
# per lane, 128b/130b encoding). At the link's spec rate, how many **seconds** does reading a **3 GB** file
# (3 × 10⁹ bytes) take, if the drive itself were never the limit? Store it in `nvme_read_s`.

# %% exercise="01.1"
gen5_x4_bytes_s = 32e9 * 4 * 128 / 130 / 8
nvme_read_s = 3e9 / gen5_x4_bytes_s

# %% [markdown]
# **Exercise 01.2** (1 point). *Design.* A 4-GPU server has **160 usable PCIe lanes** (two sockets with a
# narrower link between them) and no PCIe switch. It holds 4 GPUs at x16 and 4 NVMe drives at x4, each on its
# own full-width link. How many **x16 network cards** can you add at most, each on its own full-width link?
# Store the whole number in `max_nics`.

# %% exercise="01.2"
max_nics = (160 - 4 * 16 - 4 * 4) // 16

# %% [markdown]
# **Exercise 01.3** (1 point). *Predict without recomputing.* Section 5 staged a copy between two RTX 4090s
# on Gen4 x8 links. On a workstation whose two GPUs each get **Gen5 x16**, still without P2P, how many times
# **faster** is the same staged copy? Store the ratio (old time / new time) in `staged_speedup`.

# %% exercise="01.3"
staged_speedup = (32 / 16) * (16 / 8)

# %% [markdown]
# **Exercise 01.4** (1 point). *Spot the error.* One of these claims is wrong. Which one? Store its letter
# in `wrong_claim`.
#
# - **A.** PCIe Gen3 moved from 8b/10b to 128b/130b encoding, cutting the encoding overhead from 20% to
#   about 1.5%.
# - **B.** Grace Hopper's NVLink-C2C, quoted at 900 GB/s, carries 450 GB/s in each direction, about 7x a
#   PCIe Gen5 x16 link.
# - **C.** A x16 GPU in a slot wired for 8 lanes gets half the bandwidth of a full x16 link.
# - **D.** PCIe Gen4 x16 gives about 32 GB/s bidirectional, so a GPU can copy to host memory at about
#   16 GB/s while copying back at 16 GB/s.

# %% exercise="01.4"
wrong_claim = "D"

# %% [markdown]
# **Exercise 01.5** (2 points). *Find the mistake.* A blog post says that ZeRO-Offload of a **7-billion-
# parameter** model over **PCIe Gen5 x16** costs **0.22 s** of transfers per step (FP16 gradients down, FP16
# parameters back, one after the other). Work out the right figure at the link's spec. What did the post
# get wrong? Store the letter in `offload_blog_error`.
#
# - **A.** It divided by the bidirectional total, or counted only one of the two transfers.
# - **B.** It moved the FP32 optimizer state over the link as well.
# - **C.** It left out the 128b/130b encoding.
# - **D.** Nothing: 0.22 s is right.

# %% exercise="01.5"
offload_blog_error = "A"

# %% [markdown]
# **Exercise 01.6** (1 point). **Six** Gen4 x16 GPUs sit behind one PCIe switch whose uplink to the CPU is
# also Gen4 x16. All six copy **6 GB** (6 × 10⁹ bytes) each to host memory at the same time. Ignoring latency
# and efficiency, how many **seconds** until all six copies are done? Store it in `shared_s`.

# %% exercise="01.6"
uplink = 16e9 * 16 * 128 / 130 / 8
shared_s = 6 * 6e9 / uplink

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals(), chapter="01")` scores every exercise of this chapter without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="01")

# %% [markdown]
# ## Takeaways
# - Bandwidth per direction = GT/s × lanes × encoding efficiency / 8: **Gen3 x16 {{gen3_x16}}, Gen4 {{gen4_x16}}, Gen5 {{gen5_x16}},
#   Gen6 {{gen6_x16}} per direction** (FLIT: 236 of 256 bytes carry TLPs). Bidirectional totals are twice that.
# - "Gen4 ~32, Gen5 ~64, Gen6 ~128 GB/s" are per-direction figures, not bidirectional ones.
# - 128 CPU lanes fit 8 GPUs at x16 and nothing else; real 8-GPU servers add NICs and drives behind PCIe
#   switches, whose uplinks are shared when GPUs talk to the CPU.
# - P2P under a switch never touches the CPU; without P2P (GeForce RTX 4090) a GPU-to-GPU copy crosses PCIe
#   twice and goes through host memory. Crossing CPU sockets shares one socket link ({{socket_link}} per direction
#   on a Gen4 EPYC Rome or Gen5 Sapphire Rapids server).
# - Real copies reach ~{{pinned_lo}}-{{pinned_hi}} of spec with pinned memory and about a third with pageable memory.
# - Offloading turns the CPU-GPU link into a training bottleneck: 4 bytes per parameter per step over PCIe,
#   or {{c2c_vs_gen5}} faster than PCIe Gen5 x16 over Grace Hopper's NVLink-C2C.
#
# ## Worked questions
# Try each before opening the answer.
#
# **Q1.** An 8-GPU Gen5 server has 4 PCIe switches, 2 GPUs and 2 NICs below each, and an x16 uplink per
# switch. During a checkpoint every GPU writes 80 GB to host memory at once. How long, at spec?
#
# <details><summary>Answer</summary>
#
# Two GPUs share one Gen5 x16 uplink: {{q1_uplink}} / 2 = {{q1_each}} per direction each (the NICs are idle). 80 GB / {{q1_each}} =
# {{q1_time_s}}.
#
# Published concurrent copies (25-45 GB/s per GPU on a Gen5 box) say to expect a bit more.
# </details>
#
# **Q2.** Why might a PCIe 8-GPU server without NVLink prefer to keep tensor-parallel groups to GPU pairs
# under the same switch?
#
# <details><summary>Answer</summary>
#
# A pair under one switch exchanges data P2P at the full link rate (31.5 GB/s per direction on Gen4) without
# using the uplink; pairs in different halves of the machine go up through a shared switch uplink and
# cross the socket link (on a Gen4 EPYC Rome server 128 GB/s per direction, shared by every crossing flow:
# 32 GB/s each when four GPUs cross at once, and the uplinks, 15.8 GB/s each for two GPUs, bind first).
# </details>
#
# **Q3.** A data loader copies 600 MB of images per step to each of 8 GPUs from pageable NumPy arrays on a
# Gen4 server, at the 10 GB/s per direction measured on a DGX A100. How much would pinning the buffers save per step?
#
# <details><summary>Answer</summary>
#
# 600 MB / {{q3_pageable}} = {{q3_pageable_ms}} pageable; 600 MB / {{q3_pinned}} = {{q3_pinned_ms}} pinned: {{q3_saved_ms}} saved per step, and with
# `non_blocking=True` the pinned copy can also hide behind computation.
# </details>

# %%
# the numbers in the answers above, computed
gen5_uplink = hardware.pcie_link(5, 16).per_direction
glue("q1_uplink", gen5_uplink / units.GB, "{:.1f}")
glue("q1_each", gen5_uplink / 2 / units.GB, "{:.1f} GB/s")
glue("q1_time_s", 80e9 / (gen5_uplink / 2), "{:.1f} s")
pageable_gb_s = pcie.measurement("dgx-a100-pageable-h2d")["gb_s_mid"]
pinned_gb_s = pcie.measurement("dgx-a100-pinned-h2d")["gb_s_mid"]
glue("q3_pageable", pageable_gb_s, "{:.1f} GB/s")
glue("q3_pinned", pinned_gb_s, "{:.1f} GB/s")
glue("q3_pageable_ms", 600e6 / (pageable_gb_s * units.GB) * 1e3, "{:.0f} ms")
glue("q3_pinned_ms", 600e6 / (pinned_gb_s * units.GB) * 1e3, "{:.0f} ms")
glue("q3_saved_ms", 600e6 / units.GB * (1 / pageable_gb_s - 1 / pinned_gb_s) * 1e3, "{:.0f} ms")

# %% [markdown]
# ## Further reading
# - PCI-SIG, *Specifications* (transfer rates and encodings per generation): https://pcisig.com/specifications
# - PCI-SIG, *PCIe 6.0 webinar Q&A: FLIT mode, PAM4 and FEC*: https://pcisig.com/blog/pcie%C2%AE-60-specification-webinar-qa-deeper-dive-flit-mode-pam4-and-forward-error-correction-fec
# - NVIDIA, *nvbandwidth* (host-device and device-device copy benchmarks): https://github.com/NVIDIA/nvbandwidth
# - Ren et al., *ZeRO-Offload: Democratizing Billion-Scale Model Training* (USENIX ATC 2021): https://arxiv.org/abs/2101.06840
# - PyTorch tutorial, *A guide on good usage of non_blocking and pin_memory()*: https://docs.pytorch.org/tutorials/intermediate/pinmem_nonblock.html
# - OLCF, *Summit user guide* (POWER9-V100 NVLink nodes): https://docs.olcf.ornl.gov/systems/summit_user_guide.html
# - Every measurement used here, cites a source id of the course bibliography, `course_lib/data/sources.json`: `datafiles.source(id)` gives its title and link.
