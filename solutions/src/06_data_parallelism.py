# %% [markdown]
# # 06 · Data parallelism: what DDP sends, when, and what it costs
#
# **Time:** about 90 minutes. **Prerequisites:** chapter 00 (gradient bytes per step), chapter 04 (the
# ring all-reduce, reduce-scatter and all-gather, the alpha-beta model), chapter 05 (one NIC per GPU,
# rail-optimised fat trees).
#
# **After this chapter you can**
# - say what PyTorch's `DistributedDataParallel` (DDP) sends, in which pieces (buckets) and at which
#   moment of the step, and compute the bytes and the time for a given model, GPU count and link;
# - explain how bucketing overlaps the gradient all-reduce with the backward pass, and compute the
#   **exposed** communication: the part that is not hidden;
# - compute a scaling efficiency, tell weak from strong scaling, and name the limits of "linear scaling";
# - compute the memory per GPU of ZeRO stages 1, 2 and 3 (16 bytes per parameter for mixed-precision
#   Adam) and the traffic each stage adds;
# - run DDP for real on your CPU, measure what its communication costs, and compare it with the
#   alpha-beta model and a loopback bandwidth you measure yourself;
# - say where these models stop being true, against published measurements.
#
# Conventions as always: **1 GB = 10⁹ bytes**, **1 GiB = 2³⁰ bytes**, every bandwidth says *per
# direction* or *bidirectional*. Hardware numbers come from `course_lib.hardware` (each with a source);
# published measurements from `course_lib/data/published_training.json` and `published_dp_scaling.json`.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
import math

from course_lib import checks, costmodel, hardware, parallel, prose, units
from course_lib.lab import ddp_run, ddp_trace
from course_lib.chapters import data_parallel as dp

glue = prose.Glue("06")  # numbers the text quotes from the cells

# %% [markdown]
# ## 1. What DDP sends, and when
#
# In data parallelism every GPU (every **rank**) holds a full copy of the model and runs forward and
# backward passes on its own slice of the global batch. After the backward pass each rank has a gradient
# for *every* parameter, computed from different data. Before the optimizer step all ranks must hold the
# same **average** gradient, so that the same update keeps the copies identical. That average is one
# **all-reduce** per step over one value per parameter: a sum across ranks, divided by the number of
# ranks (the *world size*).
#
# `torch.nn.parallel.DistributedDataParallel` does it like this:
# 1. **At construction** it broadcasts rank 0's parameters so that every copy starts identical, and packs
#    the parameters into **buckets** of about `bucket_cap_mb` each, in *reverse* order of
#    `model.parameters()`: roughly the order in which the backward pass produces their gradients (the last
#    layer first). After the first step it rebuilds the buckets in the order the gradients really arrived.
# 2. **During the backward pass** a hook on every parameter notes when its gradient is ready. When every
#    gradient of a bucket is ready, DDP copies them into one flat buffer, divides it by the world size and
#    starts an **asynchronous all-reduce** of that bucket, then lets the backward pass go on. Buckets are
#    reduced in order, one after another.
# 3. **At the end of the backward pass** DDP waits for the last bucket and copies the averaged values
#    back into every `.grad`. The optimizer step then does the same thing on every rank: weights are never
#    sent, they stay equal because the gradients are equal.
#
# Dividing first and summing after is the same arithmetic as summing and then dividing (it also keeps
# 16-bit sums from overflowing). `no_sync()` turns the all-reduce off for a step: used for gradient
# accumulation, where only the last micro-batch of a step needs to communicate.
#
# **Why buckets?** One all-reduce per parameter tensor would pay the per-call latency hundreds of times;
# one all-reduce of everything would wait for the whole backward pass. Buckets of a few tens of MB are the
# compromise: few calls, and the first buckets travel while later layers are still computing.
#
# **The unit trap.** `bucket_cap_mb=25` is the default, and DDP multiplies it by 2²⁰: the bucket holds
# 25 **MiB**, not 25 MB.

# %%
print("DDP's default bucket:", dp.DDP_BUCKET_BYTES, "bytes =", units.format_bytes(dp.DDP_BUCKET_BYTES),
      "=", units.format_bytes(dp.DDP_BUCKET_BYTES, binary=True))

# %% [markdown]
# Take the chapter's running example, the 7.5-billion-parameter GPT from Megatron-LM's paper (the [ZeRO](../docs/glossary.md#zero)
# paper uses the same size), with 16-bit (BF16) gradients on the 8 GPUs of one DGX H100:

# %%
m75 = parallel.model("megatron-7.5b")
t75 = dp.ddp_traffic(m75.params, gpus=8, bytes_per_value=2)
print(f"{m75.name}: {m75.params:,.0f} parameters -> {units.format_bytes(t75['gradient_bytes'])} of gradients per step")
print(f"in {t75['buckets']} buckets of 25 MiB; each GPU sends {units.format_bytes(t75['bytes_sent_per_gpu'])} in a ring")
ring75 = costmodel.predict("all_reduce", t75["gradient_bytes"], "dgx-h100", algorithm="ring")
print(f"ring all-reduce on {hardware.system('dgx-h100').gpu_link.describe()}: {units.format_time(ring75.time_s[0])}")

# %% [markdown]
# Each GPU sends $2\frac{p-1}{p}$ times the gradient buffer (a reduce-scatter, then an all-gather; chapter
# 04), here 1.75 times. The time uses the per-direction NVLink bandwidth, reduced by the measured NVLink
# efficiency that `costmodel.predict` applies (chapter 04). (On this NVSwitch system NCCL can also reduce
# *inside* the switch, NVLS, which `costmodel.predict` picks when you leave `algorithm="auto"`.)
#
# **Which dtype travels?** DDP reduces each gradient in its parameter's dtype. With automatic mixed
# precision (`torch.autocast`) the parameters stay FP32, so DDP sends **4 bytes per parameter**, twice the
# BF16 count above, unless you register a compression hook such as
# `torch.distributed.algorithms.ddp_comm_hooks.default_hooks.bf16_compress_hook`. The ZeRO accounting
# below and `course_lib.parallel` count 2 bytes per gradient, as for parameters kept in 16 bits. Check
# which your framework sends; it doubles or halves everything in this chapter.
#
# ## 2. Overlap: hiding the all-reduce behind the backward pass
#
# Because buckets are all-reduced as soon as they are full, communication runs *during* the backward
# pass. Only what is still running when the backward pass ends delays the step: the **exposed
# communication**. The drawing shows one step with 8 buckets, first without overlap (all-reduce after the
# backward pass), then with it:

# %%
dp.draw_overlap_timeline(backward_s=0.16, comm_s=0.20, buckets=8, forward_s=0.08);

# %% [markdown]
# With $n$ equal buckets, the backward pass fills one every $b$ seconds and each all-reduce takes $c$
# seconds, one at a time. The last bucket can only start when the backward pass ends, so at least $c$ is
# always exposed; and when $c > b$ every bucket leaves a backlog of $c - b$ behind it:
#
# $$t_{\text{exposed}} = c + (n-1)\,\max(0,\; c - b).$$
#
# With many small buckets this tends to $\max(c,\; C - B)$ for a total all-reduce time $C = nc$ and
# backward time $B = nb$: *what does not fit behind the backward pass shows*. That is the rule
# `course_lib.parallel.estimate` uses (its `dp_overlap` switch). For the drawing above:

# %%
print("exposed with 8 buckets:     ", units.format_time(dp.exposed_time(0.16, 0.20, 8)))
print("many-bucket limit max(c, C-B):", units.format_time(max(0.20 / 8, 0.20 - 0.16)))
print("without overlap:            ", units.format_time(dp.overlap_schedule(0.16, 0.20, 8, overlap=False)["exposed_s"]))

# %% [markdown]
# Now the running example at scale: 64 GPUs (8 DGX H100 nodes, the catalog's 8 NDR NICs per node), one
# sequence per GPU per step, ZeRO-1 so that it fits in memory (section 6). `course_lib.parallel` gives the
# compute time, the data-parallel communication and how much of it shows, with and without overlap:

# %%
for overlap in (True, False):
    e = dp.dp_estimate("megatron-7.5b", gpus=64, zero=1, overlap=overlap)
    comm = sum(t.time_s for t in e.traffic)
    print(f"overlap={overlap!s:<5}: compute {units.format_time(e.compute_s)}, DP communication {units.format_time(comm)}, "
          f"exposed {units.format_time(e.dp_exposed_s)} -> step {units.format_time(e.step_time_s)}, "
          f"efficiency {e.compute_s / e.step_time_s:.1%}")

# %% [markdown]
# Without overlap the whole all-reduce lands on the step; with it, almost nothing shows here, because the
# all-reduce fits behind the backward pass. Two things shrink that hiding place:
# - **gradient accumulation.** With $m$ micro-batches per step the all-reduce runs once, after the last
#   one (`no_sync()` on the others), and can hide only behind the *last* micro-batch's backward pass,
#   $1/m$ of the step's backward time. (It also happens $m$ times less often, which is the point.)
# - **slow links.** When the all-reduce takes longer than the backward pass, the difference shows,
#   whatever the bucketing.
#
# ### A rule of thumb: when does the communication hide?
#
# The example above hid because its numbers happened to fit. A rule tells you beforehand, derived per layer
# the way Google's *How to Scale Your Model* (the "scaling book", further reading) derives it for TPUs. Take
# one transformer layer with $P_\ell$ parameters on a GPU that computes $C$ FLOP/s, in a data-parallel group
# of $d$ ranks whose link moves $W$ bytes/s per direction per rank (section 5), with $T$ tokens per GPU per
# micro-batch:
#
# - its backward pass costs about $4P_\ell T$ FLOPs, twice the forward's $2P_\ell T$:
#   $t_{\text{compute}} \approx 4P_\ell T / C$;
# - DDP all-reduces its $2P_\ell$ bytes of 16-bit gradients, and a ring sends $2\frac{d-1}{d}$ of them:
#   $t_{\text{comm}} \approx 4P_\ell \frac{d-1}{d} / W$.
#
# The layer's size cancels out:
#
# $$\frac{t_{\text{compute}}}{t_{\text{comm}}} \approx \frac{T\,W}{C}\cdot\frac{d}{d-1}
# \qquad\Longrightarrow\qquad \boxed{\;\text{the communication hides when } T > T^* \approx \frac{C}{W}\;}$$
#
# tokens per GPU per micro-batch: the GPU's FLOP rate over its data-parallel byte rate. FSDP (ZeRO-3, section
# 9) lands on the same bound: before a layer's forward pass it gathers $\frac{d-1}{d}\,2P_\ell$ bytes for
# $2P_\ell T$ FLOPs, and in the backward pass it gathers again and reduce-scatters, twice the bytes for twice
# the FLOPs. `dp.overlap_rule` computes the ratio from the course's own model instead of these round numbers:
# one layer's share of `parallel.compute_phase`'s micro-batch time against its collectives priced by
# `parallel.group_collective_time` (the price every phase pays), for the running example (7.5B on 64 GPUs,
# ZeRO-1, one sequence per GPU), then for the same GPUs with one 100 Gb/s port each (section 3's default),
# then with FSDP:

# %%
rule = dp.overlap_rule("megatron-7.5b", "dgx-h100", gpus=64, zero=1, recompute=dp.RECOMPUTE)
eth_system = hardware.system("dgx-h100").variant(nics_per_node=8, nic_gbit_s=100)
rule_eth = dp.overlap_rule("megatron-7.5b", eth_system, gpus=64, zero=1, recompute=dp.RECOMPUTE)
rule_fsdp = dp.overlap_rule("megatron-7.5b", "dgx-h100", gpus=64, fsdp=True, recompute=dp.RECOMPUTE)
for r in (rule, rule_eth, rule_fsdp):
    print(r.summary(), f"\n  C / W = {r.flops_per_byte:,.0f} FLOPs per byte\n")
glue("rule_tokens", rule.tokens_per_gpu, "{:,}")
glue("rule_ratio", rule.ratio, "{:.2f}")
glue("rule_tstar", rule.critical_tokens_per_gpu, "{:,.0f}")
glue("rule_c_over_w", rule.flops_per_byte, "{:,.0f}")
glue("rule_eth_ratio", rule_eth.ratio, "{:.2f}")
glue("rule_eth_tstar", rule_eth.critical_tokens_per_gpu, "{:,.0f}")
glue("rule_fsdp_tstar", rule_fsdp.critical_tokens_per_gpu, "{:,.0f}")

# %% [markdown]
# On NDR the layer computes {{rule_ratio}} times as long as its gradients take to reduce: the communication hides
# from {{rule_tstar}} tokens per GPU, close to $C/W$ = {{rule_c_over_w}} (the model's compute also counts
# attention, its collectives their latency). One port of 100 Gb/s per GPU raises the bar to {{rule_eth_tstar}}
# tokens, and one sequence of {{rule_tokens}} tokens no longer covers it (ratio {{rule_eth_ratio}}). FSDP needs
# {{rule_fsdp_tstar}}, the same bound, as derived.
#
# **The buckets.** The rule assumes the bytes flow at the link's full rate. DDP sends them bucket by bucket, one
# all-reduce after another, and a bucket can start only once the backward pass has filled it: that is section
# 2's $c$ and $b$. So there is a second condition: **each bucket's all-reduce must be no longer than the
# backward time that fills it** ($c \le b$), or a backlog builds with every bucket. Small buckets fail it because
# every all-reduce pays its latency (a launch, and across 8 nodes the ring's or tree's steps) on few bytes.
# The same run, bucket by bucket:

# %%
big_bucket = 2 ** math.ceil(math.log2(rule.min_bucket_bytes))   # the next power of two from the smallest that keeps up
rule_big = dp.overlap_rule("megatron-7.5b", "dgx-h100", gpus=64, zero=1, recompute=dp.RECOMPUTE, bucket_bytes=big_bucket)
for r in (rule, rule_big):
    print(f"bucket {units.format_bytes(r.bucket_bytes, binary=True):>8}: all-reduce {units.format_time(r.bucket_comm_s)}, "
          f"filled in {units.format_time(r.bucket_fill_s)} of backward -> exposed {units.format_time(r.exposed_s)} "
          f"of the {units.format_time(r.backward_s)} backward pass")
print(f"first bucket {units.format_bytes(rule.first_bucket_bytes, binary=True)}: filled in "
      f"{units.format_time(rule.first_bucket_fill_s)}, all-reduce {units.format_time(rule.first_bucket_comm_s)}")
glue("bucket_comm", units.format_time(rule.bucket_comm_s), "{}")
glue("bucket_fill", units.format_time(rule.bucket_fill_s), "{}")
glue("bucket_exposed", units.format_time(rule.exposed_s), "{}")
glue("bucket_min", units.format_bytes(rule.min_bucket_bytes, binary=True), "{}")
glue("bucket_big_mib", big_bucket / 2**20, "{:.0f}")
glue("bucket_big_exposed", units.format_time(rule_big.exposed_s), "{}")
glue("first_fill", units.format_time(rule.first_bucket_fill_s), "{}")
glue("first_comm", units.format_time(rule.first_bucket_comm_s), "{}")

# %% [markdown]
# A default 25 MiB bucket takes {{bucket_comm}} to all-reduce across the 8 nodes but is filled in {{bucket_fill}}:
# it falls behind, and {{bucket_exposed}} of communication shows, where the per-layer rule and
# `parallel.estimate` (which prices the step's gradients as one large all-reduce) say it hides. Buckets keep up
# from {{bucket_min}}; with `bucket_cap_mb={{bucket_big_mib}}` the exposed time drops to {{bucket_big_exposed}},
# one bucket's all-reduce. That is the floor: the last bucket, the first layers' gradients, can start only when
# the backward pass ends. So buckets should be as large as keeping up requires and no larger.
#
# **The first bucket.** The gradients that are ready first (the last layers') go into a first bucket that DDP
# caps at 1 MiB when `bucket_cap_mb` is left at its default (PyTorch's `_DEFAULT_FIRST_BUCKET_BYTES`): it is full
# after {{first_fill}} of backward, so communication starts almost at once, at the price of one small,
# latency-bound all-reduce ({{first_comm}}).
#
# > **Rule of thumb.** Data-parallel and FSDP communication hides behind compute when every GPU processes more
# > than $T^* \approx C/W$ tokens per micro-batch ({{rule_tstar}} on DGX H100s over NDR, {{rule_eth_tstar}} with
# > one 100 Gb/s port per GPU) *and* every bucket's all-reduce is shorter than the backward time that fills it
# > (here from {{bucket_min}} on: DDP's default 25 MiB falls behind across 8 nodes). What always shows is the last
# > bucket; with gradient accumulation only the last micro-batch's backward pass can hide anything.
#
# Where the rule stops being true: it assumes the collectives run beside the compute at the model's
# bandwidth. On a GPU NCCL's kernels take [SMs](../docs/glossary.md#sm) and memory bandwidth from the
# computation they overlap, so keep a margin above a ratio of 1; and on your CPU (section 7) the two compete
# for the same cores.
#
# ## 3. Explorer: model size, GPUs, network speed, ZeRO stage
# Every GPU keeps the same work (sequences per GPU), so the ideal is a flat row of bars (weak scaling).
# Blue is compute, purple the exposed data-parallel communication (the colours of chapters 07 and 08),
# the black tick the whole DP communication if nothing were hidden, green the scaling efficiency; the
# lower panel is the memory per GPU of each ZeRO stage at your GPU count. Up to 8 GPUs the ring stays
# on NVLink; beyond, it crosses the network, where each GPU has its own NIC at the speed you choose.
# The default is a 100 Gb/s port per GPU:

# %%
eth100 = hardware.network("eth-100g")
print(f"{eth100.name}: {eth100.detail} = {units.format_bandwidth(eth100.per_direction)}")
explorer = dp.dp_scaling_explorer(model="megatron-7.5b", gpus=64, link_gb_s=eth100.per_direction / units.GB, zero=1)

# %% [markdown]
# Things to try:
# - network speed from 12.5 to 50 GB/s (one NDR port per GPU, as on a DGX H100): the purple vanishes;
# - back to 12.5 GB/s, sequences per GPU from 1 to 8: more compute per step hides the same all-reduce
#   better (weak scaling with a bigger per-GPU batch);
# - ZeRO stage 0: the memory bar goes past the GPU; ZeRO-3: memory drops, purple grows (section 6);
# - untick overlap: every millisecond of communication lands on the step.
#
# ## 4. Scaling efficiency and the limits of linear scaling
#
# **Scaling efficiency** compares $N$ GPUs with $N$ times one GPU. In **weak scaling** (the usual way to
# grow data parallelism) each GPU keeps its batch, the global batch grows with $N$, and
#
# $$E(N) = \frac{t_{\text{step}}(1)}{t_{\text{step}}(N)} = \frac{t_{\text{compute}}}{t_{\text{compute}} + t_{\text{exposed}}},
# \qquad \text{speedup} = N \cdot E(N).$$
#
# In **strong scaling** the global batch stays fixed: each GPU gets $1/N$ of it, its compute shrinks,
# while the all-reduce of the full gradients does not. Efficiency falls as $N$ grows, even on a perfect
# network, until $N$ equals the batch and one sequence per GPU is all that is left to give.

# %%
weak = dp.scaling_curve("megatron-7.5b", nic_gbit_s=100, zero=1)  # 100 Gb/s = 12.5 GB/s per GPU
strong = dp.strong_scaling("megatron-7.5b", global_batch=512, nic_gbit_s=100, zero=1)
for name, c in (("weak (1 sequence per GPU)", weak), ("strong (512 sequences in all)", strong)):
    print(f"{name:<30}", "  ".join(f"{g}: {e:.0%}" for g, e in zip(c["gpus"], c["efficiency"]) if g >= 8))
weak_at, strong_at = dict(zip(weak["gpus"], weak["efficiency"])), dict(zip(strong["gpus"], strong["efficiency"]))
glue("weak_in_node", weak_at[8], "{:.0%}")
glue("weak_16", weak_at[16], "{:.0%}")
glue("weak_1024", weak_at[1024], "{:.0%}")
glue("strong_16", strong_at[16], "{:.0%}")
glue("strong_512", strong_at[512], "{:.0%}")

# %% [markdown]
# At 12.5 GB/s per GPU the weak-scaling efficiency falls at the node boundary ({{weak_in_node}} on 8 GPUs,
# {{weak_16}} on 16) and then falls only slowly ({{weak_1024}} on 1,024): the ring's time hardly depends on $N$
# (chapter 00). Strong scaling keeps falling, from {{strong_16}} on 16 GPUs to {{strong_512}} on 512, because every
# doubling halves the compute that hides the same all-reduce.
#
# There is a second, non-network limit: **the batch**. Data parallelism needs at least one sequence per
# GPU, and a model converges well only up to some global batch. Megatron-LM's paper trains GPT-3 175B with
# the global batch of its published runs (below) and points out that data parallelism alone could then use
# at most that many GPUs:

# %%
gpt3_batch = next(c["global_batch"] for c in parallel.published()["cases"] if c["model"] == "gpt3-175b")
print(f"GPT-3 175B global batch: {gpt3_batch} sequences -> at most {gpt3_batch} data-parallel GPUs")

# %% [markdown]
# > **Myth / fact: "Data parallelism scales linearly."**
# > Only while the communication hides behind compute, and only in weak scaling. Published whole-job
# > measurements (table below, from `published_dp_scaling.json`) land at roughly 90% for convolutional
# > networks on hundreds of GPUs, and lower for a model with many parameters per unit of compute (VGG-16):
# > what decides is gradient bytes per FLOP against link speed, not the GPU count.
#
# > **Myth / fact: "8 GPUs are 8x faster."**
# > The speedup is $N \cdot E(N)$ with $E \le 1$, and it holds only if the global batch grows 8x, which
# > the optimizer must tolerate (the learning rate has to be adapted to the larger batch; Goyal et al. in
# > the sources). At a fixed batch (strong scaling above) each GPU gets less work and the all-reduce shows
# > more. Section 7 measures it on your own CPU.

# %%
dp.show_published_scaling()

# %% [markdown]
# ## 5. The data-parallel ring on real hardware
#
# Across nodes a ring over 16 GPUs of two DGX H100s looks like this on the rail-optimised fat tree of
# chapter 05. Inside a node the hops go through the NVSwitch (green); two hops leave the nodes, each on one
# rail, through that rail's leaf switch (orange), the colours of inside and across nodes in chapters 07 and 10:

# %%
dp.draw_dp_ring("dgx-h100", nodes=2, ring=0);
ring_info = dp.dp_ring_bandwidth("dgx-h100", nodes=2)
print(f"one ring's slowest link: {units.format_bandwidth(ring_info['one_ring'])} (one NIC)")
print(f"{ring_info['rings']} rings, one starting on each rail: up to {units.format_bandwidth(ring_info['all_rings'])} per GPU "
      f"before NVLink limits")
print(f"what course_lib.parallel gives each rank of the DP group (with measured efficiencies): "
      f"{units.format_bandwidth(ring_info['model_per_rank'])} over {ring_info['model_link']}")

# %% [markdown]
# One ring is limited by a single NIC. NCCL runs several rings at once, each shifted so that it leaves
# the node on a different rail; with one ring per rail every NIC carries traffic in both directions and
# a rank's share of the all-reduce moves at up to 8 NICs' worth, as long as NVLink keeps up. This is why
# `parallel.estimate` gives a data-parallel group spanning nodes the node's whole network bandwidth, and why
# the explorer's "network GB/s per GPU" slider matters 8 times less than you might fear. Section 8 shows a
# case where real runs did not get this.
#
# ## 6. ZeRO: sharding what every GPU repeats
#
# Plain DDP keeps a full copy of everything on every GPU. With mixed-precision Adam that is **16 bytes per
# parameter**: 2 for the 16-bit weights, 2 for the 16-bit gradients and 12 for the optimizer states kept in
# FP32 (a master copy of the weights, Adam's momentum and its variance, 4 bytes each). ZeRO (Rajbhandari
# et al.) shards these across the $N$ data-parallel ranks, each rank owning $1/N$ of them:
#
# | stage | shards | memory per GPU (bytes) | communication per step |
# |---|---|---|---|
# | ZeRO-0 (DDP) | nothing | $16\Psi$ | all-reduce gradients |
# | ZeRO-1 | optimizer states | $4\Psi + 12\Psi/N$ | reduce-scatter gradients, all-gather updated weights |
# | ZeRO-2 | + gradients | $2\Psi + 14\Psi/N$ | the same |
# | ZeRO-3 | + weights | $16\Psi/N$ | all-gather weights for forward **and** backward, reduce-scatter gradients |
#
# ($\Psi$ = parameters.) Stages 1 and 2 send no more than DDP: a ring all-reduce *is* a reduce-scatter
# followed by an all-gather, and ZeRO simply does the update in between, each rank on its own shard.
# Stage 3 must gather the weights before it can use them, in the forward pass and again in the backward
# pass: three collectives of the model's size instead of two, **1.5 times the traffic of DDP**.
#
# For the 7.5B model on 64 GPUs, next to the figures the ZeRO paper published for the same case:

# %%
dp.show_zero_table(params=7.5e9, gpus=64)
dp.draw_zero_memory(params=7.5e9, gpus=64, capacity_bytes=hardware.system("dgx-h100").gpu.memory_bytes);

# %% [markdown]
# Only model states are counted here; activations come on top (they depend on sequence length and
# micro-batch, and ZeRO does not shard them). The explorer's memory panel adds them.
#
# > **Myth / fact: "ZeRO-3 is free."**
# > ZeRO-3 cuts model-state memory by the data-parallel degree, and pays with 1.5x the bytes of DDP and
# > with collectives on the critical path: a layer cannot run its forward pass before its weights are
# > gathered, so ZeRO-3 must prefetch the next layer's weights while computing this one. Its gathers also
# > repeat for every micro-batch, where DDP's all-reduce runs once per step. When compute per GPU is
# > large it hides; at a small batch per GPU it does not (section 8 shows a published case where it
# > collapsed).
#
# ## 7. A real DDP run on your CPU
#
# `ddp_run.run()` starts 2 ranks with the course's launcher (`course_lib.lab.run`, gloo over
# 127.0.0.1), wraps a small MLP in `DistributedDataParallel(..., bucket_cap_mb=1)` and, in the same run:
# times the training step with DDP's all-reduce and with `no_sync()` (no communication at all); times the
# all-reduce alone, bucket by bucket; checks that DDP's gradient equals the ranks' gradients summed and
# divided by 2; measures the loopback link (both ranks sending and receiving at once, fitted to
# $\alpha + n/B$) and predicts the bucket all-reduces with the same alpha-beta ring as chapter 04; and
# times the step on 1 rank alone. It takes a few seconds (the first DDP of a session also imports part
# of PyTorch's compiler stack, which DDP's constructor needs).

# %%
cpu_run = ddp_run.run()
print(cpu_run)
cpu_run.plot();

# %% [markdown]
# How to read it:
# - **exposed**: the step with DDP's all-reduce minus the step without it. Compare it with the all-reduce
#   alone: "hidden" says how much of it overlapped with the backward pass. Exposed can even exceed the
#   all-reduce alone: DDP also copies gradients into bucket buffers and back, and its hooks and gloo's
#   thread take turns with the backward pass on the same cores.
# - **alpha-beta prediction**: built from *your* measured loopback $\alpha$ and $B$, with the same ring
#   formula as chapter 04. Within a factor of about 2 either way is what to expect on a CPU: the model leaves
#   out the additions gloo does on the CPU (the "+ additions" bar adds that cost, measured too), buffer
#   copies and thread hand-offs, and a busy machine makes the small-message fit (the $\alpha$) noisy.
# - **1 rank alone**: 2 ranks process twice the samples per step; the speedup says how close to 2x that
#   gets.
#
# **Where the CPU stops being a model of GPUs.** Your two ranks share the same cores, caches and memory
# bandwidth, and "the link" is a memory copy through the operating system. On GPUs, compute runs on the
# GPU while the NIC or NVLink moves data, so a bucket's all-reduce really runs *beside* the backward pass.
# Here gloo's communication thread competes with the backward pass for the same cores, so expect little
# or no hiding; the single rank runs with a core to itself, so expect less than 2x, and with other
# programs busy on the machine the numbers move from run to run. Rerun the cell to see the spread. The
# structure is the real one (buckets, hooks, averaging, `no_sync`); the proportions are not those of a GPU
# cluster.
#
# ### See the overlap: a profiler trace of one step
#
# Numbers say how much hid; a **profiler trace** shows when each thing ran. `ddp_trace.trace()` runs the same
# kind of DDP job on 2 ranks (6 layers, `bucket_cap_mb=0.5`, so each layer's gradients are a bucket of their
# own), lets DDP settle its buckets over a few steps, then records one step with `torch.profiler` on every rank:
# the forward pass, each backward op of autograd, the moment DDP launches a bucket's all-reduce (`c10d::allreduce_`,
# from the gradient hook), gloo's all-reduce of that bucket on its worker threads (`gloo:all_reduce`), the copy of
# the averaged buckets back into `.grad` and the optimizer step. Both ranks share one clock. It takes a few
# seconds:

# %%
step_trace = ddp_trace.trace()
print(step_trace)
dp.draw_ddp_trace(step_trace);

# %% [markdown]
# Read it from the left. Each rank's training thread runs its forward pass (blue), then the backward ops (orange,
# under the grey band). The first bucket (`b0`, the last layer's gradients) is launched (black tick) long before
# the backward pass is over, and its all-reduce (purple) runs on a gloo thread *while* backward ops of earlier
# layers still compute: that is the overlap of section 2, recorded rather than modelled. An all-reduce needs both
# ranks, so a bucket's purple bar on the faster rank starts early and waits for the slower one, and the two bars
# end together. Whatever purple sticks out to the right of a rank's grey band is exposed: the copy back and the
# optimizer step wait for it. The printed lines measure it from the spans. Here the two ranks and gloo's threads
# share the machine's cores, so the backward ops stretch while an all-reduce runs; on GPUs the same picture has
# NCCL kernels on the GPU and bytes on NVLink or the NICs.
#
# To record your own job, wrap a few steps in `with torch.profiler.profile(activities=[ProfilerActivity.CPU,
# ProfilerActivity.CUDA]) as prof:` and call `prof.export_chrome_trace("trace.json")`; open the file in
# https://ui.perfetto.dev and look for the NCCL kernels (`ncclDevKernel_AllReduce...`) on their own CUDA stream
# beside the backward kernels.
#
# ## 8. Where the model stops being true
#
# **Data-parallel scaling, measured.** Megatron-LM's paper trained GPT-3 175B on 384 to 1536 A100 GPUs
# at a fixed global batch, once with its 3D layout (PTD-P: tensor 8 x pipeline 12 x data 4 to 16) and once
# with ZeRO-3 alone (data parallelism over every GPU). Measured and predicted throughput per GPU, and each
# scheme's efficiency relative to its 384-GPU run:

# %%
dp.show_megatron_dp()

# %% [markdown]
# For PTD-P the model's *level* is off (its GPU efficiency is an assumption taken from a single-GPU
# measurement, see `parallel.assumption("gpu_efficiency")`), but its *scaling* is right: growing data
# parallelism from 4 to 16 costs about 8% in both measurement and model.
#
# **ZeRO-3 at scale: the model is 1.7 to 3.4 times optimistic.** Measured ZeRO-3 throughput halves with
# each doubling of GPUs; the model barely moves. Why? At a fixed global batch each doubling halves the
# compute per GPU (4, then 2, then 1 sequence per GPU), while every GPU still gathers the full weights
# twice and reduce-scatters the gradients once per step: the communication per GPU stays the same. The
# model agrees with that arithmetic, but it assumes each ring runs at the node's full network bandwidth
# (8 NICs pipelined with NVLink, section 5) and that prefetching hides all of it behind compute. Two
# pessimistic what-ifs, computed with the same model, bracket the measurements: each GPU limited to **its
# own NIC**, with and without overlap.

# %%
ladder = dp.zero3_ladder()
dp.show_zero3_ladder(ladder)
dp.plot_zero3_ladder(rows=ladder);

# %% [markdown]
# The measured points sit between "own NIC" with and without overlap, and at 1536 GPUs on the
# no-overlap, own-NIC line: communication that neither got the node's aggregate bandwidth nor hid behind
# the little compute left. The paper attributes the gap to ZeRO-3's cross-node communication (PTD-P keeps
# its tensor-parallel traffic inside NVLink); the exact mechanism inside DeepSpeed (how it splits and
# schedules the gathers of 175B parameters over 1536 ranks) is not in the paper, so read the what-ifs as
# bounds, not as a diagnosis. The lesson for planning: `parallel.plan` leaves ZeRO-2/3 out by default and
# says why; for ZeRO-3 at small per-GPU batches, trust measurements over the model.
#
# **Model-dependence.** The Horovod rows above ran the same cluster and software: two networks at 90%,
# VGG-16 at 68%. The model would say the same: what counts is gradient bytes per unit of compute.
#
# **Your CPU.** Section 7: ranks share cores, so overlap, the speedup and the gap to the alpha-beta line
# are all worse than on GPUs, for reasons that have nothing to do with the network.
#
# ## 9. FSDP and HSDP: ZeRO-3 as PyTorch does it, and sharding within a node
#
# *(An extension of section 6, about 15 minutes.)* PyTorch's **FSDP** (`torch.distributed.fsdp.fully_shard`,
# "FSDP2") is ZeRO-3: each wrapped module (a **unit**, usually one transformer block) keeps only its $1/N$
# shard of weights, gradients and optimizer states. Per micro-batch, for every unit:
#
# 1. **all-gather** its weights just before its forward pass, then free them (`reshard_after_forward`);
# 2. **all-gather** them again just before its backward pass;
# 3. **reduce-scatter** its gradients right after, so each rank keeps the sum of its shard.
#
# While unit $i$ computes, FSDP already gathers unit $i+1$'s weights (**prefetch**), so only the first
# gather and whatever compute cannot cover show. The model (`parallel.dp_phase`) counts exactly these
# collectives: `parallel.zero3_step_bytes` gives the whole-buffer bytes of one step.
#
# **HSDP** (hybrid sharding) shards within a group of $G$ ranks, usually one node, and **replicates** across
# the $N/G$ groups. The gathers and reduce-scatters stay on NVLink; once per step each rank all-reduces its
# $1/G$ shard of the gradients with the ranks holding the same shard in the other groups, over the network,
# hidden behind the last backward pass as DDP's is. The price: model states take $16\Psi/G$ per GPU instead
# of $16\Psi/N$.

# %%
kw70 = dict(gpus=256, global_batch=256, recompute="full")
for label, how in (("FSDP", dict(fsdp=True)), ("HSDP, 8 GPUs", dict(hsdp=8)), ("HSDP, 32 GPUs", dict(hsdp=32))):
    e = parallel.estimate("llama3-70b", "dgx-h100", **how, **kw70)
    print(f"{label}: {e.sharding}: memory {e.memory['total'] / units.GB:.1f} GB per GPU "
          f"({'fits' if e.fits else 'DOES NOT FIT'}), step {units.format_time(e.step_time_s)}")
    for t in e.traffic:
        print(f"   {t.kind:<26} {t.calls_per_step:>4} x {units.format_bytes(t.bytes_per_call):>9} over {t.link:<28} "
              f"{units.format_time(t.time_s):>9} ({units.format_time(t.exposed_s)} exposed)")

# %% [markdown]
# Llama 3 70B on 256 H100s. Sharding within one node (HSDP over 8 GPUs) would keep the gathers on NVLink,
# but 70B x 16 bytes / 8 = 140 GB of model states does not fit in 80 GB: the shard group must span 4 nodes
# (32 GPUs). Then only a 1/32 shard of the gradients crosses between the 8 replicas, once per step. In this
# model FSDP over all 256 GPUs costs about the same time, because it gives every ring the node's 8 NICs at
# once (section 8 showed that this is optimistic for ZeRO-3 at scale): HSDP's real advantage is fewer ranks
# per collective and less traffic crossing the spine, which the model does not price. At a batch of one
# sequence per GPU both hide behind 11 s of compute.
#
# **A real FSDP2 step, bytes counted.** `course_lib.lab.fsdp_step` runs `fully_shard` on 2 CPU ranks over
# gloo (a few Linear blocks, each its own unit), counts the bytes of every all-gather and reduce-scatter
# FSDP2 issues, and sets them beside the model's:

# %%
from course_lib.lab import fsdp_step  # noqa: E402

fsdp_real = fsdp_step.run_step(ranks=2, layers=3, width=256, micro_batches=2)
print(fsdp_step.summary(fsdp_real))

# %% [markdown]
# The reduce-scatters match the model to the byte. The gathers match once you know one thing FSDP2 does on
# purpose: the **root** unit (the whole model, here holding only the head) keeps its weights gathered from
# forward to backward, since they would be gathered again at once.
#
# **Published FSDP throughput.** torchtitan (PyTorch's reference trainer) reports FSDP2 runs of Llama 3 on
# H100 and A100 clusters; the fit/test split is that of chapter 10 (`parallel.modern_validation_table`):

# %%
for r in parallel.modern_validation_table():
    if r["group"].startswith("fsdp"):
        print(f"{r['id']:<28} {r['split']:<4} {r['config']:<48} predicted {r['predicted']:6.0f}, measured "
              f"{r['measured']:6.0f} tokens/s/GPU (p/m {r['ratio']:.2f}, after fit {r['fitted']:.2f})")

# %% [markdown]
# Going from 8 to 128 H100s the measured throughput per GPU drops 3%, the model's by almost nothing: the
# scaling is right, the level is set by the fitted scale (torchtitan ran its H100s at 500 W). On A100 the
# 70B case with full recomputation comes out 15% low after the 8B fit: larger GEMMs reach a higher fraction
# of peak, which a single `gpu_efficiency` cannot express.
#
# ## Check your understanding
# 1. Why does DDP all-reduce gradients but never send weights, and how do the copies stay identical?
#
# <details><summary>Answer</summary>
#
# After the all-reduce every rank holds the same averaged gradient; the optimizer step is deterministic, so
# the same update applied to the same weights gives the same new weights. Rank 0's weights are broadcast
# once at construction so that they start equal.
# </details>
#
# 2. A 1.3B-parameter model with FP32 parameters trains with DDP and AMP. How many bytes does one step
#    all-reduce, and how many buckets does it use at the default size?
#
# <details><summary>Answer</summary>
#
# DDP reduces in the parameters' dtype: 1.3e9 x 4 = 5.2 GB. Buckets: 5.2e9 / (25 x 2**20) = 198.4, so
# 199 buckets (plus the small first one that recent PyTorch versions use by default).
# </details>
#
# 3. The all-reduce takes 80 ms and the backward pass 200 ms. With gradient accumulation over 4 micro-batches,
#    how much of the all-reduce can hide?
#
# <details><summary>Answer</summary>
#
# Only the last micro-batch's backward pass runs while the all-reduce can proceed: if the 200 ms is the
# whole step's backward, that is 50 ms, so about 30 ms (plus the last bucket) shows. If the 200 ms is one
# micro-batch's backward, everything but the last bucket hides.
# </details>
#
# 4. Why do ZeRO-1 and ZeRO-2 cost no extra communication, while ZeRO-3 costs 1.5x?
#
# <details><summary>Answer</summary>
#
# A ring all-reduce is a reduce-scatter plus an all-gather. ZeRO-1/2 keep the reduce-scatter (gradients),
# update their shard, and all-gather the updated weights: the same bytes. ZeRO-3 does not keep full weights,
# so it all-gathers them before the forward pass and again before the backward pass, and reduce-scatters the
# gradients: three collectives of the model's size instead of two.
# </details>
#
# 5. Your CPU run shows the step with DDP longer than the step with `no_sync()` by about the whole all-reduce
#    time. Does that mean DDP's overlap is broken?
#
# <details><summary>Answer</summary>
#
# No: overlap needs the communication to run on something other than the cores computing the backward pass.
# On 2 CPU ranks sharing the cores, gloo's thread and the backward pass take turns. On GPUs the copy engines,
# NVLink and NICs move the data while the GPU computes.
# </details>
#
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer. Numbers are compared with a
# relative tolerance, so you do not need to round.
#
# **Exercise 06.1** (1 point). A **13-billion-parameter** model trains with DDP on **8 GPUs**; its gradients are
# all-reduced in BF16 with a ring. How many **bytes** does each GPU send per step? Store the number in
# `ddp_bytes_sent`.

# %% exercise="06.1"
ddp_bytes_sent = 2 * (8 - 1) / 8 * (13e9 * 2)

# %% [markdown]
# **Exercise 06.2** (1 point). The same 8 GPUs are the A100s of a DGX A100, on NVLink 3 through NVSwitch.
# Ignoring latency and efficiency losses, how many **seconds** does the ring all-reduce of exercise 06.1
# take? Store it in `ddp_ring_s`. Take the link from the catalog: `hardware.system("dgx-a100").gpu_link`.

# %% exercise="06.2"
a100_per_direction = hardware.system("dgx-a100").gpu_link.per_direction
ddp_ring_s = ddp_bytes_sent / a100_per_direction

# %% [markdown]
# **Exercise 06.3** (2 points). A step's backward pass takes **120 ms** and fills **6 equal buckets**, one
# after another. All-reducing all of them takes **162 ms** in total, 27 ms per bucket, one bucket at a time;
# a bucket's all-reduce starts as soon as its gradients are ready and the previous all-reduce has finished.
# How many **seconds** of communication are exposed (the step goes on after the backward pass ends)? Store
# it in `exposed_comm_s`.

# %% exercise="06.3"
per_bucket_comm, per_bucket_fill = 0.162 / 6, 0.120 / 6
exposed_comm_s = per_bucket_comm + (6 - 1) * max(0.0, per_bucket_comm - per_bucket_fill)

# %% [markdown]
# **Exercise 06.4** (1 point). The same step's forward pass takes **60 ms**. Every GPU keeps its batch as
# GPUs are added (weak scaling), and one GPU alone would not communicate at all. What is the **scaling
# efficiency**, as a fraction between 0 and 1? Store it in `step_efficiency`.

# %% exercise="06.4"
compute_only_s = 0.060 + 0.120
step_efficiency = compute_only_s / (compute_only_s + exposed_comm_s)

# %% [markdown]
# **Exercise 06.5** (1 point). A 350-million-parameter model with FP32 parameters is wrapped in
# `DistributedDataParallel(model, bucket_cap_mb=25)`. Assume every gradient tensor is much smaller than a
# bucket and ignore any smaller first bucket. How many buckets does DDP all-reduce per step? Store the
# whole number in `n_buckets`.

# %% exercise="06.5"
import math
n_buckets = math.ceil(350e6 * 4 / (25 * 2**20))

# %% [markdown]
# **Exercise 06.6** (1 point). A **13B** model trains with mixed-precision Adam on **16 GPUs** with
# **ZeRO-2**. How many **GB** (10⁹ bytes) of model states (weights, gradients, optimizer states; no
# activations) does each GPU hold? Store it in `zero2_gb`.

# %% exercise="06.6"
psi = 13e9
zero2_gb = (2 * psi + (2 + 12) * psi / 16) / 1e9

# %% [markdown]
# **Exercise 06.7** (1 point). *Spot the error.* One of these claims is wrong. Which one? Store its letter in
# `wrong_dp_claim`.
#
# - **A.** DDP averages gradients: it sums them with an all-reduce and divides by the world size.
# - **B.** DDP's default bucket, `bucket_cap_mb=25`, holds about 26.2 MB.
# - **C.** ZeRO-1 and ZeRO-2 send as many bytes per step as DDP.
# - **D.** ZeRO-3 divides the model-state memory per GPU by the data-parallel degree at no extra
#   communication cost.

# %% exercise="06.7"
wrong_dp_claim = "D"

# %% [markdown]
# **Exercise 06.8** (1 point). *Predict.* In the step of exercise 06.3 you halve `bucket_cap_mb`, so the
# backward pass fills **12 equal buckets** instead of 6; the all-reduces still take 162 ms in total, one at a
# time. What happens to the exposed communication? Store the letter in `more_buckets_prediction`.
#
# - **A.** It halves: each bucket waits half as long.
# - **B.** It drops a little, and no bucket size can take it below 42 ms.
# - **C.** It does not change: the same bytes are sent.
# - **D.** It grows: more buckets mean more all-reduces.

# %% exercise="06.8"
more_buckets_prediction = "B"

# %% [markdown]
# **Exercise 06.9** (1 point). *Diagnose.* A DDP job scales at 0.9 efficiency from 1 to 8 GPUs in one
# node, and at 0.6 on 16 GPUs in two such nodes joined by a single 100 Gb/s NIC each (not the eight NICs of
# section 5's DGX H100), with the same model, buckets and batch per GPU. What is the most likely cause? Store
# the letter in `scaling_cliff_cause`.
#
# - **A.** The gradients are twice as large on 16 GPUs.
# - **B.** The all-reduce now crosses that one NIC per node, which all of a node's rings share, far slower than
#   NVLink, so it takes longer than the backward pass can hide.
# - **C.** 2(p-1)/p doubled from 8 to 16 GPUs.
# - **D.** DDP makes twice as many buckets on 16 GPUs.

# %% exercise="06.9"
scaling_cliff_cause = "B"

# %% [markdown]
# **Exercise 06.10** (2 points, graded by hand). *Design.* A 7B-parameter DDP job exposes part of its
# communication per step, as in exercise 06.3. Propose **two** different changes that would cut the exposed
# time, and for each say what it costs or where it stops helping. Answer in 3-6 sentences in
# `exposed_time_plan` (a string).
#
# The rubric and a model answer appear under the check cell once you have written your answer.

# %% exercise="06.10"

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals())` scores every exercise of the notebook without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="06")

# %% [markdown]
# ## Takeaways
# - DDP sends **one gradient per parameter per step**, in buckets (25 MiB by default), each all-reduced as
#   soon as the backward pass has filled it; the average is the sum divided by the world size. Weights are
#   never sent.
# - A ring all-reduce sends $2\frac{p-1}{p}$ times the gradients per GPU; what matters for the step is the
#   **exposed** part, roughly $\max(\text{last bucket},\ \text{all-reduce} - \text{backward})$.
# - Scaling efficiency $= t_{\text{compute}} / (t_{\text{compute}} + t_{\text{exposed}})$ in weak scaling.
#   It drops at the node boundary on slow networks, it drops steadily in strong scaling, and the global
#   batch caps the GPU count. Published jobs reach about 90%, not 100%.
# - Mixed-precision Adam needs **16 bytes per parameter**. ZeRO-1 shards the 12 optimizer bytes, ZeRO-2 also
#   the 2 gradient bytes, ZeRO-3 also the 2 weight bytes; stages 1-2 send what DDP sends, stage 3 **1.5x**,
#   on the critical path, every micro-batch.
# - Models are optimistic where collectives are large, many-ranked and meant to hide: ZeRO-3 at 1536 GPUs
#   ran 3.4 times slower than the model. Measure.
#
# ## Worked questions
# 1. A 13B model (BF16 gradients) trains with DDP on 32 GPUs, 4 DGX H100 nodes. How many bytes does each GPU
#    send per step, and how long does the ring take at the per-rank bandwidth printed in section 5?
#
# <details><summary>Answer</summary>
#
# Gradients: 13e9 x 2 = 26 GB. Each GPU sends 2 x 31/32 x 26 GB = 50.4 GB; at the ~360 GB/s per direction
# printed in section 5 that is about 0.14 s, to be hidden behind the backward pass.
# `dp.dp_estimate("llama2-13b", 32, zero=1)` gives the whole step.
# </details>
#
# 2. The same job on nodes with a single 100 Gb/s NIC shared by 8 GPUs?
#
# <details><summary>Answer</summary>
#
# 100 Gb/s is 12.5 GB/s per direction for the whole node: all its rings share that one port, so each rank's
# share of the all-reduce moves at about 12.5 GB/s instead of ~360 GB/s: 50.4 GB / 12.5 GB/s = 4 s per step,
# which no backward pass hides.
# </details>
#
# 3. With ZeRO-3 on those 32 GPUs, how much memory do the model states of the 13B model take per GPU, and how
#    many bytes does each GPU send per step?
#
# <details><summary>Answer</summary>
#
# 16 x 13e9 / 32 = 6.5 GB. Traffic 3 x 31/32 x 26 GB = 75.6 GB per GPU per step, 1.5 times DDP's 50.4 GB.
# </details>
#
# ## Further reading
# - PyTorch, *DistributedDataParallel* (API, `bucket_cap_mb`, `no_sync`): https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html
# - PyTorch, *Distributed Data Parallel* design notes (buckets, hooks, overlap): https://docs.pytorch.org/docs/stable/notes/ddp.html
# - Li et al. 2020, *PyTorch Distributed: Experiences on Accelerating Data Parallel Training*: https://arxiv.org/abs/2006.15704
# - Rajbhandari et al. 2020, *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models*: https://arxiv.org/abs/1910.02054
# - Narayanan et al. 2021, *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM* (Table 2: PTD-P vs ZeRO-3): https://arxiv.org/abs/2104.04473
# - Goyal et al. 2017, *Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour*: https://arxiv.org/abs/1706.02677
# - Horovod, *Benchmarks*: https://github.com/horovod/horovod/blob/master/docs/benchmarks.rst
# - PyTorch, *FSDP* (ZeRO-3-style sharding in PyTorch): https://docs.pytorch.org/docs/stable/fsdp.html
# - Austin et al., *How to Scale Your Model*, part 5, *Training* (data parallelism and FSDP stay compute-bound above a per-device batch of C/W tokens): https://jax-ml.github.io/scaling-book/training/
# - PyTorch, *Profiling your PyTorch module* (`torch.profiler`, Chrome/Perfetto traces): https://docs.pytorch.org/tutorials/beginner/profiler.html
