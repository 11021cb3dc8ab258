# %% [markdown]
# # 00 · Why communication matters
#
# **Time:** about 30 minutes. **Prerequisites:** Python, and knowing that a neural network is trained
# by computing gradients and updating parameters.
#
# **After this chapter you can**
# - say what must move between GPUs in every training step, and compute how many bytes that is;
# - estimate how long moving it takes over PCIe, NVLink and InfiniBand, and why the answer changes
#   by two orders of magnitude;
# - tell a per-direction bandwidth from a bidirectional total, and bits from bytes;
# - find your way around the rest of the course.
#
# Conventions used everywhere: **1 GB = 10⁹ bytes**, **1 Gb/s = 10⁹ bits/s**, and every bandwidth says
# *per direction* or *bidirectional*. Every hardware number comes from `course_lib.hardware`, whose data
# file cites a source for each entry.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, costmodel, environment, hardware, parallel, prose, units
from course_lib.chapters import gradients

# %% [markdown]
# ## Your environment
# The labs run real collectives on your CPU with `torch.distributed` and the gloo backend; a GPU is
# not needed. This cell shows what you have.

# %%
info = environment.show()

# %% [markdown]
# ## What moves between GPUs, and how much
#
# In **data parallelism** every GPU holds a full copy of the model, processes a different slice of the
# batch, and computes gradients for *every* parameter. Before the optimizer step the GPUs must agree on
# the average gradient: an **all-reduce** over one gradient value per parameter.
#
# For a 70-billion-parameter model with gradients in BF16 (2 bytes each):
#
# $$70 \times 10^9 \text{ parameters} \times 2 \text{ bytes} = 140 \times 10^9 \text{ bytes} = 140\ \text{GB per step.}$$

# %%
grad_bytes_70b = gradients.gradient_bytes(70e9, bytes_per_value=2)
print("gradients per step:", units.format_bytes(grad_bytes_70b), "=", units.format_bytes(grad_bytes_70b, binary=True))
glue = prose.Glue("00")  # numbers the text quotes from the cells
glue("grad_gb", grad_bytes_70b / units.GB, "{:.0f} GB")
glue("grad_gib", grad_bytes_70b / 2**30, "{:.0f} GiB")
glue("gib_vs_gb", 2**30 / 1e9 - 1, "{:.0%}")
glue("ring_sends_gb", 2 * 7 / 8 * grad_bytes_70b / units.GB, "{:.0f} GB")

# %% [markdown]
# Note the second number: {{grad_gb}} is {{grad_gib}}. Tools such as `nvidia-smi` print binary units; vendors'
# bandwidths are SI. Mixing them costs {{gib_vs_gb}} at the giga scale.
#
# **A hypothetical scenario.** Plain data parallelism keeps the whole model state on every GPU: weights,
# gradients and optimizer state, 16 bytes per parameter with mixed-precision Adam. For 70B parameters that
# is far more than one GPU holds, so nobody trains a 70B model on 8 GPUs this way; real runs shard the
# model (chapters 06 and 07). The scenario is kept because the gradient volume per step is the right size
# to think about.

# %%
state_70b = parallel.model_state_bytes(70e9)["total"]
print("model state per GPU, plain data parallelism:", units.format_bytes(state_70b),
      "| one H100 holds", units.format_bytes(hardware.gpu("h100-sxm").memory_bytes))

# %% [markdown]
#
# ### How long does it take?
# The best-known way to all-reduce (the **ring**, chapter 04) makes each of $p$ GPUs send, and receive,
# $2\frac{p-1}{p}\,n$ bytes for an $n$-byte buffer. With each GPU sending at $B$ bytes/s in one direction,
# the time is at least
#
# $$t = 2\frac{p-1}{p}\cdot\frac{n}{B}.$$
#
# For $p = 8$ and $n$ = {{grad_gb}} each GPU sends {{ring_sends_gb}}. Over four real links:

# %%
links = {
    "PCIe Gen4 x16 (A100's slot)": hardware.pcie_link(4, 16),
    "PCIe Gen5 x16 (H100's slot)": hardware.pcie_link(5, 16),
    "InfiniBand NDR, one NIC per GPU": hardware.network("ib-ndr"),
    "NVLink 4 (H100, 18 links)": hardware.nvlink(4),
}
exchange_s = {}
for name, link in links.items():
    exchange_s[name] = t = gradients.exchange_time(70e9, 8, link.per_direction)
    print(f"{name:<34} {units.format_bandwidth(link.per_direction):>24}  ->  {units.format_time(t)} per step")
gen4, gen5, nvlink4 = hardware.pcie_link(4, 16), hardware.pcie_link(5, 16), hardware.nvlink(4)
print(f"NVLink 4 / PCIe Gen4 x16: {nvlink4.per_direction / gen4.per_direction:.1f}x;  "
      f"NVLink 4 / PCIe Gen5 x16, the same generation: {nvlink4.per_direction / gen5.per_direction:.1f}x")
glue("nvlink_vs_gen4", nvlink4.per_direction / gen4.per_direction, "{:.0f}x")
glue("nvlink_vs_gen5", nvlink4.per_direction / gen5.per_direction, "{:.0f}x")
glue("exchange_gen4", exchange_s["PCIe Gen4 x16 (A100's slot)"], "{:.0f} s")
glue("exchange_gen5", exchange_s["PCIe Gen5 x16 (H100's slot)"], "{:.0f} s")
glue("exchange_ndr", exchange_s["InfiniBand NDR, one NIC per GPU"], "{:.0f} s")
glue("exchange_nvlink", exchange_s["NVLink 4 (H100, 18 links)"], "{:.1f} s")

# %% [markdown]
# A step of a 70B model computes for a few seconds on 8 H100s; over PCIe the gradient exchange alone
# would take longer than that. How much faster NVLink is depends on what you compare it with: about
# {{nvlink_vs_gen4}} a Gen4 slot, but about {{nvlink_vs_gen5}} the Gen5 slot an H100 actually sits in. Compare links of the same generation;
# even then the gap is why GPU servers for training are built around NVLink, and why the rest of this
# course exists. (Real training overlaps this exchange with computation and shards it across more GPUs;
# chapters 06 and 07 show how.)
#
# ### Per direction or bidirectional?
# NVIDIA quotes H100 NVLink as **900 GB/s**: the *sum of both directions* over 18 links. The ring sends one
# way on each link while receiving the other way, so the number to divide by is the **per-direction**
# 450 GB/s. Using 900 makes every estimate twice too optimistic: the most common error in public material.

# %%
h100 = hardware.nvlink(4)
print("H100 NVLink:", units.format_bandwidth(h100.bidirectional, direction="bidirectional"),
      "=", units.format_bandwidth(h100.per_direction))
print("NDR InfiniBand port:", hardware.network("ib-ndr").detail, "=", units.format_bandwidth(hardware.network("ib-ndr").per_direction))

# %% [markdown]
# ## Explorer: link speed, GPU count, model size
# Move the sliders. The grey dots are real links from the catalog (per GPU, per direction); the red
# diamond is your choice. Notice that beyond a handful of GPUs the time hardly depends on the GPU count,
# $2(p-1)/p \to 2$, but it is inversely proportional to the link speed.

# %%
gradients.gradient_exchange_explorer()

# %% [markdown]
# **Where this model stops being true.** It counts only bandwidth. Real all-reduces also pay a latency per
# step (which dominates small messages), reach 70-90% of the link's spec bandwidth, and, across nodes, are
# limited by the network rather than NVLink. Chapters 04 and 05 add each of these and compare with
# measurements.
#
# ## Check your understanding
# 1. Why does the ring all-reduce time barely change between 64 and 1,024 GPUs?
#
# <details><summary>Answer</summary>
#
# Each GPU sends $2\frac{p-1}{p}n$ bytes: 1.97n for p = 64 and 1.998n for p = 1024. The bandwidth term is
# almost constant; what grows with $p$ is the number of steps, $2(p-1)$, each paying a latency, which matters
# for small messages (chapter 04).
# </details>
#
# 2. A vendor sheet says "PCIe Gen5 x16: 128 GB/s". What will one GPU's copy to the host reach at best?
#
# <details><summary>Answer</summary>
#
# 128 GB/s is the bidirectional total of the raw rate. One direction carries 32 GT/s x 16 lanes x 128/130 / 8
# = 63 GB/s, and real copies reach a bit less (chapter 01).
# </details>
#
# 3. A 7B model trains in FP32 on 4 GPUs. How many bytes does one GPU send per step in a ring all-reduce?
#
# <details><summary>Answer</summary>
#
# n = 7e9 x 4 = 28 GB; each GPU sends 2 x 3/4 x 28 GB = 42 GB.
# </details>
#
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer. Numbers are compared with a
# relative tolerance, so you do not need to round.
#
# **Exercise 00.1** (1 point). How many **bytes** of gradients does one training step of a 13-billion-
# parameter model produce with gradients in BF16? Store the number in `grad_bytes_13b`.

# %% exercise="00.1"
grad_bytes_13b = 13e9 * 2

# %% [markdown]
# **Exercise 00.2** (2 points). Those 13B-model gradients are all-reduced with a ring over **8 GPUs** that
# talk over **PCIe Gen4 x16** (16 GT/s per lane, 128b/130b encoding). Ignoring latency, how many
# **seconds** does one exchange take? Store it in `pcie_exchange_s`. You may use `hardware.pcie_link`.

# %% exercise="00.2"
pcie_per_direction = 16e9 * 128 / 130 / 8 * 16
pcie_exchange_s = 2 * (8 - 1) / 8 * grad_bytes_13b / pcie_per_direction

# %% [markdown]
# **Exercise 00.3** (1 point). *Spot the error.* One of these claims from published material is wrong.
# Which one? Store its letter in `wrong_claim`.
#
# - **A.** An H100 SXM has 18 NVLink 4 links, 900 GB/s in total over both directions.
# - **B.** A PCIe Gen5 x16 link carries about 63 GB/s in each direction.
# - **C.** An NDR200 InfiniBand port moves about 100 GB/s.
# - **D.** The gradients of a 70B-parameter model in BF16 take 140 GB.

# %% exercise="00.3"
wrong_claim = "C"

# %% [markdown]
# **Exercise 00.4** (1 point). Then what *does* an NDR200 port carry, in **GB/s per direction**? Store it in
# `ndr200_gb_s`.

# %% exercise="00.4"
ndr200_gb_s = 200 / 8

# %% [markdown]
# **Exercise 00.5** (1 point). *Predict before you compute.* The exchange of exercise 00.2 (13B BF16
# gradients, ring, PCIe Gen4 x16) now runs on **16 GPUs** over the same kind of links. What happens to the
# time? Store the letter in `predict_16_gpus`.
#
# - **A.** It halves: twice the GPUs share the work.
# - **B.** It stays exactly the same.
# - **C.** It doubles: twice the GPUs send.
# - **D.** It rises a little, by about 7%.

# %% exercise="00.5"
predict_16_gpus = "D"

# %% [markdown]
# **Exercise 00.6** (1 point). *Find the mistake.* A colleague estimates the same 13B gradient exchange
# on the **8 H100s of a DGX H100** (NVLink 4 through NVSwitch) at **0.051 s**. Which mistake did they make?
# Store the letter in `colleague_mistake`.
#
# - **A.** They divided by the bidirectional 900 GB/s instead of 450 GB/s per direction.
# - **B.** They left out the factor 2(p-1)/p.
# - **C.** They counted the gradients in FP32, 4 bytes each.
# - **D.** They read Gb/s as GB/s.

# %% exercise="00.6"
colleague_mistake = "A"

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals())` scores every exercise of the notebook without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="00")

# %% [markdown]
# ## Takeaways
# - Data parallelism all-reduces one gradient per parameter every step: 2 bytes per parameter in BF16,
#   **140 GB for a 70B model**.
# - A ring all-reduce sends about **2n bytes per GPU**; time ≈ 2n / B for a bandwidth B per direction.
# - Over 8 GPUs the same exchange takes about {{exchange_gen4}} on PCIe Gen4, {{exchange_gen5}} on Gen5, {{exchange_ndr}} over one NDR
#   [NIC](../docs/glossary.md#nic) per GPU, {{exchange_nvlink}} on H100 NVLink: the interconnect decides whether training is compute-bound or
#   communication-bound. (A hypothetical: 70B with plain data parallelism does not fit on 8 GPUs.)
# - Always ask: **bits or bytes? per direction or both directions? GB or GiB?**
#
# ## The road ahead
# | # | chapter | question |
# |---|---|---|
# | 01 | PCIe | how fast is the slot a GPU sits in, and what crosses the CPU? |
# | 02 | NVLink | what do direct GPU-to-GPU links give, and how are they split between peers? |
# | 03 | NVSwitch | how do 8 (or 72) GPUs all talk at full speed? |
# | 04 | collectives lab | how do all-reduce algorithms work; run and write one on your CPU |
# | 05 | InfiniBand | what happens when training leaves the box? |
# | 06 | data parallelism | what [DDP](../docs/glossary.md#ddp) sends, and how overlap hides it |
# | 07 | model parallelism | tensor and pipeline parallelism, and which link each needs |
# | 08 | capstone | plan a real training run |
#
# ## Further reading
# - NVIDIA, *NVLink and NVLink Switch* (generations and bandwidths): https://www.nvidia.com/en-us/data-center/nvlink/
# - PCI-SIG, *Specifications* (transfer rates and encodings): https://pcisig.com/specifications
# - NVIDIA nccl-tests, *Performance* notes (algbw and busbw): https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
# - `python -m course_lib systems` lists every system in the course's catalog with its source.
