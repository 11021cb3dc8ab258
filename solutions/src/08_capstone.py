# %% [markdown]
# # 08 · Capstone: plan a training run
#
# **Time:** about 3 hours: 2 hours for the guided steps, 1 hour to write your argument.
# **Prerequisites:** chapters 00-07: per direction vs bidirectional, NVLink and NVSwitch (02-03), the ring
# all-reduce and the alpha-beta model (04), InfiniBand and the multi-node all-reduce (05), data parallelism
# and ZeRO (06), tensor and pipeline parallelism (07).
#
# **After this chapter you can**
# - turn a training brief (model, tokens, deadline, GPU-hour budget, GPUs on offer) into the numbers that
#   decide it: tokens per second, bytes per GPU, seconds per step;
# - say what must fit in GPU memory and what ZeRO, tensor parallelism (TP) and pipeline parallelism (PP)
#   each divide;
# - choose a system from the catalog and justify it with its link bandwidths, **per direction**;
# - use the course's planner to rank TP x PP x DP layouts, read why the winner wins, and predict
#   time-to-train and GPU-hours;
# - compare your prediction with published training runs and say where the model stops being true;
# - write the argument the way an infrastructure review would want it.
#
# **How this chapter is graded.** {{auto_count}} auto-graded exercises ({{auto_ids}}, **{{auto_points}} points**) are checked by
# `checks` as in every chapter. Two written answers (08.W1 and 08.W2, **10 points**) are graded by an
# instructor with the rubric in section 7; `checks` cannot score them.
#
# Conventions as always: **1 GB = 10⁹ bytes**, every bandwidth says *per direction* or *bidirectional*.
# Hardware numbers come from `course_lib.hardware` (each with a source); published runs from
# `course_lib/data/published_runs.json`, each with its URL; the model of memory, traffic and step time is
# `course_lib.parallel` (try `python -m course_lib plan --help` in a terminal).
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, hardware, parallel, prose, units
from course_lib.chapters import planner as pl

glue = prose.Glue("08")  # numbers the text quotes from the cells

brief = pl.BRIEF
auto_graded = {i: s for i, s in checks.exercises("08").items() if s["kind"] != "free_text"}
glue("auto_count", len(auto_graded), "{:d}")
glue("auto_ids", ", ".join(auto_graded), "{}")
glue("auto_points", sum(s["points"] for s in auto_graded.values()), "{:g}")

# %% [markdown]
# ## 0. The brief
#
# Your lab wants its own Llama-2-70B-class model, trained on as much data as Meta used, with the same batch
# size. A cloud provider rents out four kinds of 8-GPU nodes from the course catalog; Blackwell systems are on
# its roadmap but not for rent yet (section 3 shows what they would change).

# %%
pl.show_brief(brief)

# %% [markdown]
# **What you hand in:** the {{auto_count}} auto-graded answers below, and a written plan (section 7): which system, how
# many GPUs, which layout, how long it takes and how many GPU-hours it costs, how sure you are, and why.
#
# Start with the rate the deadline demands. Training is a stream of tokens: if the whole cluster processes
# $R$ tokens per second, $T$ tokens take $T/R$ seconds. The deadline fixes the rate the cluster must reach.
#
# **Exercise 08.1** (1 point). How many tokens per second must the **whole cluster** sustain to train the
# brief's 2.0 trillion tokens in 30 days? Store it in `tokens_per_s_needed`.

# %% exercise="08.1"
tokens_per_s_needed = brief.tokens / (brief.max_days * 24 * 3600)

# %% [markdown]
# Divide that rate by a GPU count and you have what each GPU must reach; section 4 holds the planner's
# prediction against it.
#
# ## 1. What must fit: memory
#
# ### 1.1 Model states
# Mixed-precision training with Adam keeps, for every parameter, 2 bytes of BF16 weights, 2 bytes of BF16
# gradients and 12 bytes of optimizer state (fp32 master weights, momentum and variance): **16 bytes per
# parameter** (ZeRO paper, K = 12). For Llama 2 70B:

# %%
m = parallel.model(brief.model)
states = parallel.model_state_bytes(m.params)
print(f"{m.name}: {m.params / 1e9:.2f} billion parameters")
print("model states:", {k: units.format_bytes(v) for k, v in states.items()})
glue("states_total", states["total"] / 1e12, "{:.1f} TB")
glue("states_weights_grads", (states["weights"] + states["gradients"]) / 1e9, "{:.0f} GB")
glue("states_weights", states["weights"] / 1e9, "{:.0f} GB")

# %% [markdown]
# {{states_total}} of state against 80 GB per GPU. Data parallelism copies everything to every GPU, so plain data
# parallelism (ZeRO-0) can never hold it, however many GPUs you add. ZeRO divides the states over the
# data-parallel GPUs in stages: stage 1 the optimizer, stage 2 also the gradients, stage 3 also the weights.
# What stays whole on every GPU decides whether data parallelism alone can work:

# %%
pl.show_states_table(m.params, memories_gb=(141, 180))
glue("h100_memory", hardware.system("dgx-h100").gpu.memory_bytes / 1e9, "{:.0f} GB")
glue("h200_memory", hardware.system("dgx-h200").gpu.memory_bytes / 1e9, "{:.0f} GB")
glue("b200_memory", hardware.system("dgx-b200").gpu.memory_bytes / 1e9, "{:.0f} GB")

# %% [markdown]
# Reading the table (GPU memory sizes from the catalog: 141 GB H200, 180 GB B200; the 80 GB A100 and H100
# are exercise 08.2 below):
# - **ZeRO-1 keeps 4 bytes per parameter whole** (weights and gradients): {{states_weights_grads}}, more than any GPU. Impossible.
# - **ZeRO-2 keeps the {{states_weights}} of weights whole**: impossible on {{h100_memory}}, barely possible on {{h200_memory}} (with
#   hundreds of GPUs sharing the rest), easy on {{b200_memory}}.
# - **ZeRO-3 divides everything**: a handful of GPUs hold the states. But it gathers every layer's weights
#   over the network twice per micro-batch, and the course's model is {{zero3_lo}}-{{zero3_hi}} too optimistic about that
#   traffic at scale (section 5), so the planner leaves ZeRO-3 out by default.
#
# Tensor parallelism (TP) and pipeline parallelism (PP) divide **all** states by $t \cdot p$ before ZeRO
# sees them: with TP 8, each GPU holds 1/8 of every matrix. `pl.min_gpus_for_states` does the arithmetic
# for any stage and any $t \cdot p$ (activations not counted):

# %%
for zero, mp in ((1, 1), (1, 8), (1, 16), (2, 8)):
    n = pl.min_gpus_for_states(m.params, 80 * units.GB, zero=zero, model_parallel=mp)
    print(f"ZeRO-{zero}, TP x PP = {mp:>2}: fewest 80 GB GPUs for the states: {n if n else 'impossible'}")

# %% [markdown]
# **Exercise 08.2** (1 point). With **ZeRO-3** and no tensor or pipeline parallelism, what is the fewest number
# of **80 GB** GPUs that can hold Llama 2 70B's model states (16 bytes per parameter, all 80 GB usable,
# activations ignored)? Use `m.params`. Store the whole number in `min_gpus_zero3`.

# %% exercise="08.2"
import math
min_gpus_zero3 = math.ceil(16 * m.params / 80e9)

# %% [markdown]
# ### 1.2 Activations
# The forward pass stores activations for the backward pass. For one sequence of 4,096 tokens through all 80
# layers (Korthikanti et al. 2022 count, 16-bit), GB per GPU, by recomputation and TP degree (TP with
# sequence parallelism divides them):

# %%
pl.show_activation_rows(brief.model, tps=(1, 4, 8))
act = {row["recompute"]: row for row in pl.activation_rows(brief.model, tps=(1, 4, 8))}
glue("act_none_tp1", act["none"][1], "{:.0f} GB")
glue("act_selective_cut", act["none"][1] / act["selective"][1], "{:.0f}x")

# %% [markdown]
# Without recomputation one sequence needs {{act_none_tp1}} on one GPU. *Selective* recomputation redoes only the
# attention-score products in the backward pass (a few % more compute) and cuts that by {{act_selective_cut}}; *full*
# recomputation keeps only each layer's input and redoes the whole forward pass (a third more compute).
# A pipeline stage holds $1/p$ of the layers, but its first stage keeps up to $p$ micro-batches in flight, so
# pipelining alone does not shrink activations much.
#
# ### 1.3 Whole layouts
# `parallel.estimate` adds it all up for a layout, with 4 GB per GPU kept back for the CUDA context, NCCL
# buffers and fragmentation (a stated assumption, not a measurement). Four layouts on 1,024 GPUs, then the
# third one again on the H200:

# %%
layouts = [dict(tp=1, pp=1), dict(tp=8, pp=1, micro_batch=2), dict(tp=4, pp=1, micro_batch=2),
           dict(tp=4, pp=4, interleave=4)]
pl.show_memory_rows(pl.memory_rows(brief.model, "dgx-h100", 1024, brief.global_batch, layouts))
h200_tp4 = pl.memory_rows(brief.model, "dgx-h200", 1024, brief.global_batch, layouts[2:3])
pl.show_memory_rows(h200_tp4)
glue("tp4_mb2_memory", h200_tp4[0]["total_gb"], "{:.0f} GB")

# %% [markdown]
# TP4 with two-sequence micro-batches needs about {{tp4_mb2_memory}} per GPU: too much for an {{h100_memory}} H100, comfortable
# on a {{h200_memory}} H200. On the H100 the same TP4 needs 4 pipeline stages (or TP8) to fit. Memory capacity, not
# only FLOP/s, shapes the layout, and the layout decides how much communication shows. Keep this in mind
# for section 3.
#
# ## 2. Choose a system: interconnect numbers, per direction
#
# Every system in the catalog, with its GPU, its GPU-to-GPU link inside the NVLink (or PCIe) domain, and its
# network share per GPU when every GPU sends at once. All bandwidths are GB/s **per direction**; the
# bidirectional total that datasheets quote is shown once, in brackets.

# %%
pl.show_system_rows()

# %% [markdown]
# > **Myth / fact: "An H200's NVLink moves 900 GB/s to its peers."**
# > {{h200_link_bidir}} is the **bidirectional** total of 18 NVLink 4 links. A reduce-scatter or an all-gather sends in
# > one direction at a time on each link, at most **{{h200_link}} per direction**: the number in the table,
# > printed here from the catalog. Mixing the two makes every communication estimate 2x optimistic.

# %%
h200 = hardware.system("dgx-h200")
print(h200.gpu_link.describe())
print(h200.nic.describe(), f"x {h200.nics_per_node} per node ->",
      units.format_bandwidth(h200.nic_bandwidth_per_gpu), "per GPU when all GPUs send")
glue("h200_link_bidir", h200.gpu_link.bidirectional / units.GB, "{:.0f} GB/s")
glue("h200_link", h200.gpu_link.per_direction / units.GB, "{:.0f} GB/s")
glue("h200_link_vs_nic", h200.gpu_link.per_direction / h200.nic_bandwidth_per_gpu, "{:.0f}x")

# %% [markdown]
# The offered DGX nodes all look alike from the outside: 8 GPUs on NVSwitch, one NIC per GPU, wired as a
# rail-optimised fat tree (chapter 05). The roadmap's GB200 NVL72 puts 72 GPUs in one NVLink domain, so
# tensor and pipeline groups up to 72 GPUs never touch the NICs:

# %%
pl.draw_systems();

# %% [markdown]
# ### What traffic goes where
# A layout sends three kinds of traffic, each on the link its group spans (Megatron's rank order: TP ranks
# adjacent, then DP, then PP):
# - **tensor parallel**: reduce-scatter and all-gather of activations in every layer, forward and backward:
#   many medium messages, on the critical path. Inside a node they ride NVLink.
# - **pipeline**: activations to the next stage and gradients back, point to point, usually between nodes.
# - **data parallel**: gradients reduced (and, with ZeRO-1, weights gathered) once per step, overlapped
#   with the backward pass bucket by bucket. They cross nodes on the NICs.
#
# Here is the planner's best layout for 1,024 GPUs of DGX H200, traffic by traffic:

# %%
best_h200 = pl.plan_run(brief.model, "dgx-h200", 1024, brief.global_batch).best
pl.show_traffic(best_h200)
glue("h200_dp_bytes", max(t.bytes_per_call for t in best_h200.traffic if t.crosses_nodes) / 1e9, "{:.0f} GB")

# %% [markdown]
# The tensor-parallel traffic is exposed (nothing hides it), but it rides {{h200_link}} per direction. The
# data-parallel traffic is large ({{h200_dp_bytes}} per GPU per step) on a link {{h200_link_vs_nic}} slower, yet it hides behind the
# backward pass almost completely. That is the shape of a good layout: **the frequent, latency-critical
# traffic on the fastest link; the big, overlappable traffic on the network.**
#
# How much does the network matter, then? Two experiments: the same A100 chip in a PCIe server and in a
# DGX A100 (the catalog gives both the same BF16 peak), and a DGX H200 with slower NICs or a slower GPU link:

# %%
a100_pair = {r["system"]: r for r in pl.compare_systems(brief, gpus=1024, systems=("pcie-8gpu", "dgx-a100"))}
pl.show_comparison(list(a100_pair.values()), brief)
sensitivity = pl.link_sensitivity(brief, "dgx-h200", 1024, nic_gbit_s=(200, 100, 25), gpu_link_gb_s=(64,))
pl.show_link_sensitivity(sensitivity)
glue("pcie_more_gpu_hours", a100_pair["pcie-8gpu"]["gpu_hours"] / a100_pair["dgx-a100"]["gpu_hours"] - 1, "{:.0%}")
what_if = {r["case"]: r for r in sensitivity}
glue("h200_days", what_if["catalog"]["days"], "{:.1f}")
glue("nic100_days", what_if["NIC 100 Gb/s per direction"]["days"], "{:.1f}")
glue("nic25_days", what_if["NIC 25 Gb/s per direction"]["days"], "{:.1f}")
glue("nic25_verdict", "meets" if what_if["NIC 25 Gb/s per direction"]["meets"]["days"] else "misses", "{}")
glue("gpulink64_days", what_if["GPU link 64 GB/s per direction"]["days"], "{:.1f}")
glue("gpulink64_verdict", "meets" if what_if["GPU link 64 GB/s per direction"]["meets"]["days"] else "misses", "{}")

# %% [markdown]
# > **Myth / fact: "Buy the fastest GPU; the network does not matter."**
# > In the first table above, the same A100 chip costs about {{pcie_more_gpu_hours}} more GPU-hours in a PCIe server (PCIe Gen4
# > between GPUs, 4 NICs per 8 GPUs) than in a DGX A100 (NVLink 3, one NIC per GPU). On the H200 ({{h200_days}} days
# > as offered), cutting the NICs from 50 to 12.5 GB/s per direction (100 Gb/s ports) gives {{nic100_days}} days, and
# > 3.1 GB/s per direction (25 Gb/s Ethernet) {{nic25_days}} days, which {{nic25_verdict}} the 30-day deadline: the
# > data-parallel traffic still mostly hides behind the backward pass. A GPU link of 64 GB/s per
# > direction, about a PCIe Gen5 x16 slot, gives {{gpulink64_days}} days and {{gpulink64_verdict}} it. The planner copes by changing the layout (more
# > pipeline stages, which need less bandwidth), but the bubble and the lost overlap cost time. The network matters less than the GPU only
# > when the layout keeps the frequent traffic inside the NVLink domain and the network has enough
# > bandwidth to hide the rest.
#
# ## 3. The planner
#
# ### 3.1 One planner run
# `parallel.plan` searches TP x PP x DP (with micro-batch size, ZeRO-0/1, selective or full recomputation and
# interleaved pipeline stages), drops what does not fit in memory, and ranks the rest by predicted step
# time. Its explanation says why the winner beats the closest alternatives:

# %%
h200_plan = pl.plan_run(brief.model, "dgx-h200", 1024, brief.global_batch)
print(h200_plan.summary(6))
glue("winner_compute_share", h200_plan.best.compute_s / h200_plan.best.step_time_s, "{:.0%}")

# %% [markdown]
# Read the winner's line: compute is about {{winner_compute_share}} of the step, tensor-parallel communication the rest, no
# bubble (one pipeline stage), data-parallel traffic hidden. Then read the rivals: each loses to the
# winner in one identifiable term.
#
# ### 3.2 Every system in the catalog
# The best layout on 1,024 GPUs of each system, with the brief's limits ticked (days and GPU-hours for 2.0T
# tokens; section 4 explains the arithmetic):

# %%
comparison = pl.compare_systems(brief, gpus=1024, systems=pl.ALL_SYSTEMS)
pl.show_comparison(comparison, brief)

# %% [markdown]
# The A100 systems cannot meet the brief on 2,048 GPUs or fewer (see section 4 for how the GPU count
# changes things). The Blackwell systems would need less than half the GPU-hours of the Hopper ones, mostly
# because their GPUs have 2.3-2.5x the BF16 peak of an H100 in the catalog. Among the systems for rent, look
# at the two Hopper machines.
#
# **Exercise 08.3** (1 point). The catalog gives the DGX H100 and the DGX H200 the same BF16 peak, the same
# NVLink and the same NICs, yet the planner predicts fewer GPU-hours on the H200. Why? Store the letter in
# `why_h200_wins`.
#
# - **A.** The H200's NVLink is faster per direction.
# - **B.** Its 141 GB holds a layout without pipeline parallelism (TP4 x DP256, two-sequence micro-batches),
#   so the step has no pipeline bubble and less exposed communication.
# - **C.** A DGX H200 has more NICs per node.
# - **D.** The H200 has a higher dense BF16 peak.

# %% exercise="08.3"
why_h200_wins = "B"

# %% [markdown]
# ### 3.3 Explorer: the full planner
# Pick a model and a system, then move the GPU count, the link speeds (**per direction**: one NIC port
# in Gb/s, bits, as in chapters 05, 07 and 09; one GPU's NVLink or PCIe in GB/s), the global batch and
# the token count. Each bar is one of the best six layouts, its step time split into compute, pipeline
# bubble and *exposed* communication; the readout gives days and GPU-hours and ticks the brief's limits.
# Changing the system resets both link sliders to its catalog values. To stay fast, the explorer searches
# a reduced space (micro-batch 1-2, ZeRO-1, interleave 1-2, TP up to 16); `parallel.plan` may find a
# layout a few % faster. Things to try:
# - DGX H200, GPUs from 1,024 to 2,048 and 4,096: days halve, GPU-hours creep up;
# - DGX H100 at 1,024 GPUs, then DGX H200: the pipeline disappears from the winner;
# - DGX H200, NIC speed down to 25 Gb/s per direction: the layout changes to live with it;
# - global batch 256 at 4,096 GPUs: TP has to leave the node, and the orange (tensor-parallel) and purple
#   (data-parallel) bars grow;
# - GB200 NVL72 with the GPU link at 50 GB/s per direction: what the 72-GPU NVLink domain was worth.

# %%
planner_box = pl.planner_explorer()

# %% [markdown]
# ### 3.4 The bubble of a layout
# On 1,024 DGX H100 GPUs the planner picks **TP4 x PP4 with 4 virtual stages per GPU (interleaved) x DP64**,
# micro-batch 1, for the brief's global batch of 1,024 sequences. In a 1F1B schedule the last of $p$ stages
# starts $p-1$ slots after the first; with $m$ micro-batches per step on each pipeline and $v$ virtual
# stages per GPU, the idle time is $(p-1)/(v\,m)$ of the ideal step time (Narayanan et al. 2021).
#
# **Exercise 08.4** (1 point). What is the bubble fraction $(p-1)/(v\,m)$ of that layout? Work out $m$ from
# the global batch, the micro-batch size and the data-parallel degree. Store the fraction (not a
# percentage) in `bubble_fraction`.

# %% exercise="08.4"
micro_batches_per_step = 1024 // (1 * 64)
bubble_fraction = (4 - 1) / (4 * micro_batches_per_step)

# %% [markdown]
# ## 4. Predict time-to-train and GPU-hours
#
# The planner predicts **tokens per second per GPU**, $r$. With $N$ GPUs and $T$ tokens:
#
# $$\text{days} = \frac{T}{r\,N\cdot 86{,}400}, \qquad \text{GPU-hours} = N \cdot \frac{T}{r\,N \cdot 3{,}600} = \frac{T}{r \cdot 3{,}600}.$$
#
# GPU-hours do not depend on $N$ except through $r$: doubling the GPUs halves the days and keeps the
# GPU-hours, as long as each GPU keeps its throughput. `pl.run_numbers` does this for a planner result:

# %%
for n_gpus in (1024, 2048):
    best = pl.plan_run(brief.model, "dgx-h200", n_gpus, brief.global_batch).best
    nums = pl.run_numbers(best, brief.tokens)
    print(f"{n_gpus:,} x DGX H200 GPUs, {best.layout}: {best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU "
          f"(needed: {pl.required_tokens_per_s(brief.tokens, brief.max_days) / n_gpus:,.0f}) -> "
          f"{nums['days']:.1f} days, {nums['gpu_hours'] / 1e6:.2f} M GPU-hours")

# %% [markdown]
# **Exercise 08.5** (2 points). Run `parallel.plan` for the brief's model on **2,048 GPUs of `dgx-h100`** with
# the brief's global batch (default search), and predict how many **days** its best layout takes to train
# 2.0 trillion tokens. Store it in `days_h100_2048`.

# %% exercise="08.5"
winner_h100 = parallel.plan(brief.model, "dgx-h100", gpus=2048, global_batch=brief.global_batch).best
days_h100_2048 = brief.tokens / (winner_h100.tokens_per_s_per_gpu * 2048) / 86400

# %% [markdown]
# **Exercise 08.8** (1 point). *Predict before the next section shows it.* Keep the brief's global batch
# of 1,024 sequences and go from **4,096 to 8,192 H100s**. What happens to the planner's best layout's days
# and GPU-hours? Store the letter in `more_gpus_prediction`.
#
# - **A.** Days halve and GPU-hours stay the same.
# - **B.** Days and GPU-hours both halve.
# - **C.** Days do not change: the batch is fixed.
# - **D.** Days drop by less than half and GPU-hours rise.

# %% exercise="08.8"
more_gpus_prediction = "D"

# %% [markdown]
# ### 4.1 More GPUs
# The global batch is fixed by the optimisation, not by the cluster: Llama 2 used 4M tokens per step, and
# larger batches stop buying proportionally fewer steps past a *critical batch size* (McCandlish et al.
# 2018). With the batch fixed, more GPUs means fewer sequences per GPU, so the layouts run out of room:
# fewer micro-batches to fill a pipeline, data parallelism capped by the batch, and eventually TP groups
# that leave the node. Days and GPU-hours against the GPU count (reduced search; dotted lines: the brief):

# %%
sweep = pl.gpu_sweep(brief, systems=("dgx-a100", "dgx-h100", "dgx-h200"))
pl.plot_gpu_sweep(sweep, brief);

# %%
for sid in ("dgx-h100", "dgx-h200"):
    a, b = (next(r for r in sweep if r["system"] == sid and r["gpus"] == n) for n in (4096, 8192))
    print(f"{sid}: 4,096 -> 8,192 GPUs: {a['days']:.1f} -> {b['days']:.1f} days, "
          f"{a['gpu_hours'] / 1e6:.2f} -> {b['gpu_hours'] / 1e6:.2f} M GPU-hours ({b['layout']})")

# %% [markdown]
# > **Myth / fact: "More GPUs always finish sooner."**
# > Sooner, but not in proportion, and at a price. Up to about 2,048 GPUs the curves above halve the days per
# > doubling at nearly constant GPU-hours. Past that, with 1,024 sequences per step, doubling from 4,096 to
# > 8,192 H100s saves days but costs about a quarter more GPU-hours (printed above): the planner has to
# > push TP to 16, across two nodes and onto the NICs. With a smaller batch the effect comes earlier
# > (worked question W3). And more GPUs fail more often: Meta's 16,384-GPU Llama 3 run was interrupted 466
# > times in 54 days (section 6), so the calendar gains less than the step time does.
#
# ### 4.2 How sure is a prediction?
# The planner's $r$ rests on two fitted things: the compute price of each matrix product from its shape
# (chapter 07, section 6: two constants fitted on Megatron-LM's A100 runs) and the link efficiencies
# measured with nccl-tests. A prediction without a range is not a plan; the next section gives the range.
#
# ## 5. Compare with published runs
#
# Three published runs next to the course's prediction for them. Where the source does not state a field
# (the GPU count of Llama 2 70B, the batch of Llama 3 70B) the data file says what was assumed; the predicted
# GPU-hours barely depend on the GPU count (section 4).

# %%
published = pl.published_comparison()
pl.show_published_comparison(published)
pl.plot_published_comparison(published);

# %% [markdown]
# And the planner's throughput model against every measured case in Megatron-LM's paper and the ZeRO
# paper (`parallel.validation_summary()` prints them one by one):

# %%
pl.show_validation_ranges()
zero3_at_scale = [r["ratio"] for r in parallel.validation_table()  # ids end with the GPU count
                  if r["id"].startswith("mlm21-t2-zero3-") and int(r["id"].rsplit("-", 1)[1]) >= 768]
glue("zero3_lo", min(zero3_at_scale), "{:.1f}")
glue("zero3_hi", max(zero3_at_scale), "{:.1f}x")

# %% [markdown]
# Meta published the GPU-hours of every Llama 2 size, all trained on 2.0T tokens with 4M-token batches on
# the same A100 clusters (model card; in the data file):

# %%
llama2_hours = pl.published_runs()["facts"]["llama2-gpu-hours"]
for size in ("llama2-7b", "llama2-13b", "llama2-70b"):
    print(f"{size}: {llama2_hours[size]:,} {llama2_hours['gpu']} GPU-hours for {llama2_hours['tokens'] / 1e12:g}T tokens")

# %% [markdown]
# **Exercise 08.6** (2 points). Test the planner on a run it has not seen. Run `parallel.plan` for **Llama 2
# 13B** (`"llama2-13b"`) on **1,024 GPUs of `dgx-a100`** with the brief's global batch of 1,024 sequences
# (default search), predict the **GPU-hours** of 2.0 trillion tokens from the best layout's tokens/s per GPU,
# and divide by Meta's published **368,640** GPU-hours for that model. Store predicted / published in
# `predicted_over_published`.

# %% exercise="08.6"
a100_winner = parallel.plan("llama2-13b", "dgx-a100", gpus=1024, global_batch=brief.global_batch).best
predicted_over_published = brief.tokens / a100_winner.tokens_per_s_per_gpu / 3600 / 368640

# %% [markdown]
# ## 6. Where the model stops being true
#
# %%
low_by = {r["id"]: 1 - r["ratio"] for r in published}
glue("cmp_llama2_low", low_by["llama2-70b-a100"], "{:.0%}")
glue("cmp_llama3_low", low_by["llama3-70b-h100"], "{:.0%}")
glue("cmp_gpt3_ratio", next(r["ratio"] for r in published if r["id"] == "gpt3-175b-megatron"), "{:.2f}")
llama3_405b = next(r for r in pl.validation_ranges() if r["group"] == "llama3-405b")
glue("val405_lo", llama3_405b["low"], "{:.2f}")
glue("val405_hi", llama3_405b["high"], "{:.2f}")

# %% [markdown]
# The GPT-3 estimate agrees ({{cmp_gpt3_ratio}} of the published days), but it is an *informed* case: its
# paper's Table 1 set the compute constants. On the two Llama runs the planner's GPU-hours are too few, by
# {{cmp_llama2_low}} on A100 (Llama 2 70B) and {{cmp_llama3_low}} on H100 (Llama 3 70B, against a lower bound). So the
# model is a good tool for *choosing* (it gets relative effects right: which layout, which system, what a
# link is worth) and a rough one for *promising a date*: a published run spent more time than the model can
# see. What it leaves out, with evidence from the sources:

# %%
facts = pl.published_runs()["facts"]
rel, thr = facts["llama3-405b-reliability"], facts["llama3-405b-throughput"]
print(f"Llama 3 405B: {rel['interruptions']} interruptions ({rel['unexpected']} unexpected) in a "
      f"{rel['snapshot_days']}-day snapshot; effective training time above {rel['effective_training_time_min']:.0%}")
print(f"Llama 3 405B: {thr['tflops_per_gpu']} TFLOP/s per GPU, BF16 MFU {thr['bf16_mfu']:.0%}, on {thr['gpus']:,} H100 "
      f"with TP{thr['tp']} x PP{thr['pp']} x DP{thr['dp']}")
caps = facts["llama2-power-caps"]
print("Llama 2: power caps", caps["rsc_watts"], "W (RSC) and", caps["production_watts"], "W (production cluster);",
      "per model:", ", ".join(f"{m.split('-')[1].upper()} {w} W" for m, w in caps["watts_by_model"].items()))

# %% [markdown]
# 1. **Failures, restarts and checkpoints.** The model predicts a step time, not a calendar. Meta kept more
#    than 90% of wall-clock time training on 16K GPUs with heavy automation; budget at least 10% on top.
# 2. **Compute fitted on one recipe.** Each matrix product is priced from its shape, with constants fitted on
#    Megatron-LM's A100 runs. On Llama 3 405B's H100 runs (test cases, chapter 07) the model's TFLOP/s per GPU
#    is {{val405_lo}}-{{val405_hi}} of the measurement: low there, while the GPU-hours above are too few. Both
#    say that a recipe the fit never saw moves the answer by tens of percent, in a direction the model cannot
#    tell in advance.
# 3. **Power and clocks.** Meta ran its two A100 clusters at different power caps, 400 W and 350 W; the
#    paper's Table 2 lists Llama 2 7B, 13B and 70B at 400 W and only the unreleased 34B at 350 W. A capped
#    GPU may not hold the full clocks the catalog's peak assumes.
# 4. **Recipes priced by rule, not measured.** Uneven pipelines (Llama 3 405B put one layer fewer on the
#    first and last of its 16 stages: `estimate(..., pp_layers=(first, last))`) and FP8 or MXFP8 linear layers
#    (`precision="fp8"`) are priced from their rules: the stage with the most layers sets the pace, and FP8
#    runs the products at FP8's peak and pays for the casts. Context parallelism, FSDP/HSDP and
#    mixture-of-experts all-to-alls are modelled too (chapters 06, 07 and 10; `plan --cp`, `--hsdp`, `--ep`),
#    each with its own published checks. None of these rules has more than a few published runs behind it.
# 5. **ZeRO-3 at scale.** Against Megatron's measurements the model is {{zero3_lo}}-{{zero3_hi}} optimistic for ZeRO-3 on
#    768-1,536 GPUs (the table above): its weight gathers do not overlap as well as the model assumes.
# 6. **The network is assumed healthy.** Links run at their measured nccl-tests efficiency with no
#    congestion, no misconfiguration (chapter 05), and InfiniBand and well-tuned RoCE treated alike (Llama 2
#    reported RoCE scaling almost as well as InfiniBand up to 2,000 GPUs).
# 7. **The published side is uncertain too.** "Over 15T tokens" is a lower bound; GPU-hours in a model card
#    may include ablations, long-context stages or restarts.
#
# ## 7. Write the argument (graded by hand)
#
# Write your plan in the two cells below, as you would for an infrastructure review. Use numbers from this
# notebook (run the cells, change what you need with the explorer or `pl.plan_run`), say per direction or
# bidirectional for every bandwidth, and give ranges where you are unsure. There is no single right plan:
# a plan on H100s, or on 1,024 GPUs, can earn full marks if the argument holds.
#
# **Rubric (10 points).**
#
# | criterion | points | full marks | half marks |
# |---|---|---|---|
# | Memory reasoning (08.W1) | 2 | the 16 bytes per parameter and what they total; what ZeRO, TP and PP each divide; the chosen layout's memory per GPU with activations, against usable memory | states right but the layout's fit not shown, or activations ignored |
# | Interconnect justification (08.W1) | 2 | per-direction bandwidths of the GPU link and of the network per GPU, from the catalog; which traffic rides which link; why TP stays inside the NVLink domain | numbers without direction, or links not tied to traffic |
# | Layout justification (08.W1) | 2 | why this TP x PP x DP (and micro-batch, recomputation), with planner evidence: the step-time breakdown and what the runners-up lose | a layout named without evidence, or evidence without a choice |
# | Prediction with uncertainty (08.W2) | 2 | tokens/s per GPU to days and GPU-hours; a range with its reasons (model error, failures); the brief still met at the pessimistic end, or a stated fallback | a point estimate only |
# | Published result and the model's limits (08.W2) | 2 | a comparison with a published run (ratio and what explains it); at least two places where the model stops being true, with evidence | a comparison without explanation, or limits without evidence |
#
# Zero points for a criterion with nothing relevant or with bidirectional figures used as per-direction ones.

# %% [markdown] exercise="08.W1"
# **Written answer 08.W1** (6 points): your plan (system, GPU count, layout) and why: memory, interconnect,
# layout.
#
# ### BEGIN SOLUTION
# *Model answer (numbers from the planner at this commit; rerun it when the model changes).*
#
# **Plan:** 2,048 GPUs (256 nodes) of DGX H200, layout TP4 x PP1 x DP512 with 2-sequence micro-batches,
# ZeRO-1, selective recomputation and sequence parallelism.
#
# **Memory.** Llama 2 70B has 69.0 billion parameters; at 16 bytes each (BF16 weights and gradients, fp32 Adam
# states) that is 1.10 TB. Data parallelism alone fails with ZeRO-0/1/2 on 80 GB (276 GB or 138 GB stays whole
# on every GPU), and ZeRO-3 would need only 14 GPUs but its weight gathers are where the model is 2.4-4.6x
# optimistic. TP4 divides weights and gradients by four (34.4 GB each per GPU); ZeRO-1 spreads the optimizer
# states over 512 data-parallel ranks (0.8 GB); selective recomputation keeps activations to 52.6 GB for two
# sequences. Total about 122 GB of the H200's 137 GB usable (141 GB less 4 GB reserve). On an 80 GB H100 the
# same layout does not fit, which is why its best layout adds four pipeline stages.
#
# **Interconnect.** The tensor-parallel reduce-scatters and all-gathers (134 MB each, 320 per step) stay in
# the node on NVLink 4 through NVSwitch: 450 GB/s per direction per GPU (the 900 GB/s on datasheets is both
# directions together). They are exposed, 0.19 s of a 1.68 s step. The data-parallel traffic, a
# reduce-scatter and an all-gather of 34 GB per GPU per step, crosses nodes on one 400 Gb/s NDR NIC per
# GPU, 50 GB/s per direction, nine times less than NVLink; it takes about 0.67 s but overlaps the backward
# pass, under 1 ms exposed. Even with 12.5 GB/s per direction NICs the 1,024-GPU run stays at 18.5 days: the
# data-parallel traffic still hides behind the backward pass. TP of 16 would put every per-layer collective on
# the NICs, which is why the planner's best TP16 layout reaches only 803 tokens/s per GPU.
#
# **Layout.** No pipeline: no bubble and no stage-to-stage sends, possible only because 141 GB holds a
# quarter of the model per GPU. TP4 rather than TP8: TP8 also fits, but every GPU then spends a larger
# share of its step in exposed TP collectives. DP512 uses the whole batch (1,024 sequences = 512 ranks x 2).
# The planner ranks this first at 1,221 tokens/s per GPU (MFU 55%); the step is 89% compute, 11% TP
# communication. I chose the H200 over the H100 (best: TP4 x PP4 interleaved, 1,034 tokens/s per GPU at 1,024
# GPUs) because the same budget buys about 18% more work per GPU-hour.
# ### END SOLUTION

# %% [markdown] exercise="08.W2"
# **Written answer 08.W2** (4 points): your prediction with its uncertainty, the comparison with a published
# result, and where the model stops being true for your plan.
#
# ### BEGIN SOLUTION
# *Model answer.*
#
# **Prediction.** 1,221 tokens/s per GPU x 2,048 GPUs = 2.50 M tokens/s, so 2.0e12 tokens take 9.3 days and
# 0.46 M GPU-hours (GPU-hours = tokens / (tokens/s per GPU x 3,600), the same on 1,024 or 2,048 GPUs).
#
# **Uncertainty.** Against three published runs the planner's GPU-hours are 0.70-1.00 of the published ones
# (Llama 3 70B, Llama 2 70B, Megatron's GPT-3 estimate; Llama 2 13B in exercise 08.6 gives 0.71): it is
# optimistic, never pessimistic, on these. So I take the prediction as the low end, up to 1/0.70 = 1.43x
# longer, and add 10% for failures and restarts (Llama 3 kept above 90% effective training time). Range: about
# 9.3 to 14.6 days and 0.46 to 0.72 M GPU-hours. Both ends meet 30 days and 1.0 M GPU-hours. On 1,024 GPUs the
# pessimistic end would be about 29 days, too close to the deadline: that is why I ask for 2,048.
#
# **Comparison.** Meta trained the same model on the same 2.0T tokens in 1,720,320 A100-80GB GPU-hours. The
# planner predicts 1.43 M on DGX A100 (predicted / published = 0.83), so it is optimistic on A100: Meta's run
# spent time the model does not see (data loading, checkpoints, restarts, kernels below the fitted efficiency).
# My H200 plan needs about 3.2x fewer GPU-hours than that prediction, almost exactly the ratio of dense BF16
# peaks (989 vs 312 TFLOP/s): the Hopper nodes' faster links keep the same share of the step for communication.
#
# **Where the model stops being true for this plan.** (1) Compute: the efficiency constants were fitted on
# A100 runs of one recipe; on Llama 3 70B on H100 the planner's GPU-hours are 30% too few, and my plan runs on
# the same Hopper compute, so the true time is more likely above 9.3 days than below. (2) No failures,
# checkpoints or data loading in the model: the 10% above is Meta's number with excellent automation; ours
# may be worse. (3) The H200's faster memory may speed up the memory-bound products, which the model prices
# at the catalog's HBM bandwidth. (4) The network is assumed uncongested and well configured; a misconfigured
# RoCE fabric or a NIC without GPUDirect RDMA would expose the 34 GB of data-parallel traffic per step,
# 0.67 s, about 40% of the step.
# ### END SOLUTION

# %% [markdown]
# ## Check your understanding
# 1. Doubling the GPUs halves the days but leaves the GPU-hours about the same. Why, and when does that stop?
#
# <details><summary>Answer</summary>
#
# GPU-hours = tokens / (tokens/s per GPU) / 3,600: they change only if each GPU's throughput changes. As long
# as the layout keeps the same TP and PP and only DP grows, each GPU does the same work per token and its
# throughput holds. It stops when the fixed global batch runs out: DP cannot exceed batch / micro-batch, so
# more GPUs force more TP or PP (more exposed traffic, bigger bubbles), and per-GPU throughput falls.
# </details>
#
# 2. Why can data parallelism with ZeRO-1 never hold Llama 2 70B on 80 GB GPUs, however many you add?
#
# <details><summary>Answer</summary>
#
# ZeRO-1 divides only the optimizer state. The BF16 weights and gradients, 4 bytes per parameter, stay whole
# on every GPU: 276 GB, more than 80 GB before a single activation.
# </details>
#
# 3. Your tensor-parallel group of 8 sits inside one DGX H100. What changes if you make it 16?
#
# <details><summary>Answer</summary>
#
# The group spans two nodes, so every per-layer reduce-scatter and all-gather, on the critical path, runs at
# the network's 50 GB/s per direction per GPU instead of NVLink's 450 GB/s: nine times slower link for the
# most frequent traffic. The planner's TP16 rivals lose mostly to tensor-parallel communication.
# </details>
#
# 4. The planner says 23.7 days on 1,024 H200 GPUs, and the deadline is 30 days. Safe to book?
#
# <details><summary>Answer</summary>
#
# Not comfortably. The planner has been 0.8-1.1x of published runs, and failures cost another 10% or more.
# 23.7 x 1.25 / 0.9 is about 33 days. Book more GPUs (2,048 halves the days at nearly the same GPU-hours) or
# agree on a fallback before you start.
# </details>
#
# ## Score yourself
# `checks.check_all(globals(), chapter="08")` scores the six auto-graded exercises (8 points) without showing
# any answer. It does **not** score the written answers 08.W1 and 08.W2 (10 points): an instructor grades
# those with the rubric in section 7.

# %%
_ = checks.check_all(globals(), chapter="08")

# %% [markdown]
# ## Takeaways
# - Start from the rate: **tokens / deadline** gives the tokens per second the cluster must reach;
#   **tokens / (tokens/s per GPU)** gives GPU-hours, which the GPU count changes only through per-GPU throughput.
# - Mixed-precision Adam costs **16 bytes per parameter**: 1.1 TB for a 70B model. ZeRO-1/2 leave 4 or 2 bytes
#   per parameter on every GPU; TP and PP divide everything; activations need recomputation to fit.
# - Put the **frequent, exposed traffic** (tensor parallel) on NVLink, **450 GB/s per direction** on Hopper,
#   and the **large, overlappable traffic** (data parallel) on the network, 50 GB/s per direction per GPU
#   with one 400 Gb/s NIC each.
# - Memory capacity shapes the layout: the H200's 141 GB removes the pipeline that the H100 needs, for about
#   10% fewer GPU-hours with the same FLOP/s and links.
# - The network matters, but less than the layout: the same A100 chip costs about {{pcie_more_gpu_hours}} more GPU-hours
#   in a PCIe server; slow NICs cost a DGX H200 days ({{nic25_days}} at 25 Gb/s, which {{nic25_verdict}} the 30-day
#   deadline), and a GPU link as slow as a PCIe slot ({{gpulink64_days}} days) {{gpulink64_verdict}} it.
# - With a fixed global batch, more GPUs finish sooner only up to a point, and GPU-hours rise past it.
# - The planner lands within about 20% of published runs (Llama 2 70B: 1.08x), good for choosing, rough for
#   promising; add failures (10% or more), power caps and kernel efficiency to every date you give.
#
# ## Worked questions
# Try each before opening the answer; the code cell under them checks with the library.
#
# **W1.** Llama 3 405B on 141 GB H200s with ZeRO-3 and no model parallelism: the fewest GPUs for the model states?
#
# <details><summary>Answer</summary>
#
# 405.9 billion parameters x 16 bytes = 6.5 TB; / 141 GB = 46.06, so **47 GPUs** (82 on 80 GB GPUs). Activations
# and the 4 GB reserve come on top.
# </details>
#
# **W2.** If the provider offered DGX B200s, how few GPUs (a power of two) would meet the brief's 30 days?
#
# <details><summary>Answer</summary>
#
# **512**: the planner predicts about 21 days on 512 B200 GPUs (TP4 x PP1 x DP128, 0.26 M GPU-hours) and
# about 42 days on 256.
# </details>
#
# **W3.** The same brief with a global batch of 256 sequences (1M tokens) instead of 1,024, on 4,096 H100s.
# What happens to days and GPU-hours?
#
# <details><summary>Answer</summary>
#
# With DP capped at 256 / micro-batch, the planner needs TP16 and a pipeline: about {{w3_days}} days and
# {{w3_gpu_hours}} M GPU-hours, against {{w3_base_days}} days and {{w3_base_gpu_hours}} M GPU-hours with 1,024 sequences. The brief's budget is blown by the
# batch, not by the hardware.
# </details>
#
# **W4.** On 1,024 H200s, is upgrading the NICs to XDR (800 Gb/s, 100 GB/s per direction) worth it?
#
# <details><summary>Answer</summary>
#
# Not for this layout: the data-parallel traffic already hides behind the backward pass, and the planner's
# days do not change (23.7). Faster NICs pay off when traffic is exposed: more nodes per TP group, pipeline
# sends, ZeRO-3, or a smaller batch.
# </details>

# %%
print("W1:", pl.min_gpus_for_states(parallel.model("llama3-405b").params, 141 * units.GB, zero=3), "GPUs")
for n in (256, 512):
    row = pl.compare_systems(brief, gpus=n, systems=("dgx-b200",))[0]
    print(f"W2: {n} B200: {row['layout']}, {row['days']:.1f} days")
w3 = pl.compare_systems(pl.Brief(global_batch=256), gpus=4096, systems=("dgx-h100",))[0]
print(f"W3: batch 256 on 4,096 H100: {w3['layout']}, {w3['days']:.1f} days, {w3['gpu_hours'] / 1e6:.2f} M GPU-hours")
w3_base = pl.compare_systems(brief, gpus=4096, systems=("dgx-h100",))[0]
print(f"W3: batch 1,024 on 4,096 H100: {w3_base['layout']}, {w3_base['days']:.1f} days, "
      f"{w3_base['gpu_hours'] / 1e6:.2f} M GPU-hours")
glue("w3_days", w3["days"], "{:.0f}")
glue("w3_gpu_hours", w3["gpu_hours"] / 1e6, "{:.2f}")
glue("w3_base_days", w3_base["days"], "{:.0f}")
glue("w3_base_gpu_hours", w3_base["gpu_hours"] / 1e6, "{:.2f}")
w4 = pl.link_sensitivity(brief, "dgx-h200", 1024, nic_gbit_s=(800,))
print("W4:", [(r["case"], round(r["days"], 1)) for r in w4])

# %% [markdown]
# ## Further reading
# - Touvron et al. 2023, *Llama 2: Open Foundation and Fine-Tuned Chat Models* (section 2.2.1: hardware,
#   RoCE vs InfiniBand, GPU-hours): https://arxiv.org/abs/2307.09288 ; Llama 2 model card:
#   https://github.com/meta-llama/llama/blob/main/MODEL_CARD.md
# - Llama Team 2024, *The Llama 3 Herd of Models* (section 3.3: 4D parallelism, Table 4, reliability):
#   https://arxiv.org/abs/2407.21783 ; Llama 3 model card: https://github.com/meta-llama/llama3/blob/main/MODEL_CARD.md
# - Narayanan et al. 2021, *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*
#   (PTD-P, interleaved schedule, the 34-day GPT-3 estimate): https://arxiv.org/abs/2104.04473
# - Korthikanti et al. 2022, *Reducing Activation Recomputation in Large Transformer Models* (activation
#   memory, selective recomputation, sequence parallelism): https://arxiv.org/abs/2205.05198
# - Rajbhandari et al. 2020, *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models*:
#   https://arxiv.org/abs/1910.02054
# - Chowdhery et al. 2022, *PaLM* (appendix B defines model FLOPs utilisation, MFU): https://arxiv.org/abs/2204.02311
# - McCandlish et al. 2018, *An Empirical Model of Large-Batch Training* (the critical batch size):
#   https://arxiv.org/abs/1812.06162
# - NVIDIA, *DGX H100/H200 user guide, hardware overview*: https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html
# - Every published number in this chapter cites a source id of the course bibliography,
#   `course_lib/data/sources.json` (`datafiles.source(id)`); the planner from a terminal: `python -m course_lib plan --help`.
