# %% [markdown]
# # 07 · Model parallelism: tensor, pipeline and 3D
#
# **Time:** about 90 minutes. **Prerequisites:** chapters 00-06: per direction vs bidirectional, the ring
# all-reduce time $2\frac{p-1}{p}\frac{n}{B}$ (04), NVSwitch nodes (03), one NIC per GPU and rail-optimised
# fat trees (05), data parallelism and ZeRO (06).
#
# **After this chapter you can**
# - explain Megatron-style tensor parallelism (a column-parallel layer followed by a row-parallel one) and
#   count its all-reduces: 2 in the forward and 2 in the backward pass of every transformer layer;
# - compute the bytes of one tensor-parallel all-reduce for a real model, and the ratio of tensor-parallel
#   communication to compute, and use it to explain why tensor parallelism stays inside the NVLink domain;
# - say what sequence parallelism changes (memory) and what it does not (bytes);
# - draw GPipe, 1F1B and interleaved 1F1B schedules, derive the bubble $(p-1)/m$ and $(p-1)/(v\,m)$, and
#   size the point-to-point sends between stages;
# - lay out TP x PP x DP on a cluster in Megatron's rank order and say which traffic rides NVLink and
#   which rides the InfiniBand rails;
# - use `course_lib.parallel` to compare layouts, and say where its numbers stop matching published runs.
#
# Conventions as always: **1 GB = 10⁹ bytes**, **1 Gb/s = 10⁹ bits/s**, every bandwidth says *per
# direction* or *bidirectional*. Hardware numbers come from `course_lib.hardware` (each with a source);
# published training results from `course_lib/data/published_training.json` and the other published
# statements of this chapter from `course_lib/data/published_model_parallel.json`, each with its URL.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, costmodel, hardware, parallel, prose, topology, units
from course_lib.chapters import infiniband as ib
from course_lib.chapters import model_parallel as mp
from course_lib.views import graphs

glue = prose.Glue("07")  # numbers the text quotes from the cells

# %% [markdown]
# ## 1. Why split the model?
#
# Data parallelism (chapter 06) gives every GPU a full copy of the model. Training with mixed-precision
# Adam keeps **16 bytes per parameter**: 2 for BF16 weights, 2 for gradients, 12 for the optimizer
# (FP32 master weights, momentum, variance). For GPT-3:

# %%
gpt3 = parallel.model("gpt3-175b")
states = parallel.model_state_bytes(gpt3.params)
a100 = hardware.gpu("a100-sxm")
print(f"{gpt3.name}: {gpt3.params / 1e9:.1f} billion parameters, {gpt3.layers} layers, hidden size {gpt3.hidden}")
print(f"weights + gradients + Adam states: {units.format_bytes(states['total'])}")
print(f"one {a100.name}: {units.format_bytes(a100.memory_bytes)} -> at least "
      f"{states['total'] / a100.memory_bytes:.0f} GPUs just to hold them")

# %% [markdown]
# 2.8 TB of model state does not fit on one GPU, nor on one 8-GPU node. ZeRO-3 (chapter 06) shards the
# states but then has to gather every layer's weights for every micro-batch. **Model parallelism** instead
# splits the *work* of the model:
# - **tensor parallelism (TP)** splits every weight matrix of a layer over $t$ GPUs, which compute each
#   layer together;
# - **pipeline parallelism (PP)** gives each of $p$ GPUs (or groups of GPUs) a contiguous block of layers,
#   and streams micro-batches through them;
# - **data parallelism (DP)** replicates the result $d$ times. With all three, $t \times p \times d$ GPUs
#   train one model: **3D parallelism**.
#
# Each kind sends different bytes, at a different rate, to different partners. Which link carries
# which traffic decides whether the cluster computes or waits.
#
# ## 2. Tensor parallelism (Megatron-LM)
#
# ### 2.1 A column-parallel layer, then a row-parallel layer
# The MLP of a transformer layer computes $Z = \mathrm{GeLU}(XA)\,B$ with $X$ of shape
# $(b\,s) \times h$ (micro-batch $b$ sequences of $s$ tokens, hidden size $h$), $A$ of shape $h \times 4h$
# and $B$ of shape $4h \times h$. Split it over $t$ GPUs:
#
# 1. **Column-parallel $A$**: $A = [A_1, \dots, A_t]$, GPU $i$ holds the columns $A_i$ and computes
#    $Y_i = \mathrm{GeLU}(X A_i)$. GeLU acts element by element, so each GPU can apply it to its own columns:
#    **no communication**.
# 2. **Row-parallel $B$**: $B$ is split by rows $B_1, \dots, B_t$ to match. GPU $i$ computes $Y_i B_i$, a
#    *partial sum* of the full $(b\,s) \times h$ output: $Z = \sum_i Y_i B_i$. One **all-reduce** adds the
#    partial sums, and every GPU has $Z$.
#
# In the backward pass the mirror image happens: the gradient with respect to $X$ is a sum over the $t$
# column blocks, so it needs **one all-reduce** too. Megatron names the two operators $f$ (identity
# forward, all-reduce backward, at the block's input) and $g$ (all-reduce forward, identity backward, at
# its output).
#
# Self-attention splits the same way: the heads are divided among the GPUs (the Q, K, V projections are
# column-parallel, each GPU computes attention for its own heads) and the output projection is
# row-parallel. So **each of the two blocks of a layer needs one all-reduce forward and one backward**:

# %%
c = mp.claim("tp-allreduces-per-layer")
print(f"{c['value']} {c['unit']}\n  source: {c['title']}, {c['where']}: {c['url']}")

# %% [markdown]
# With **full activation recomputation** (the forward pass of each layer is run again during the
# backward pass to avoid storing activations), the two forward all-reduces are repeated: 6 per layer.
#
# ### 2.2 How many bytes?
# Every all-reduce carries the block's full output: $b \times s \times h$ values, 2 bytes each in BF16.
# It does **not** shrink as $t$ grows, because every GPU holds a full-size partial sum. For GPT-3 with one
# sequence per micro-batch:

# %%
ar_bytes = mp.tp_allreduce_bytes("gpt3-175b", micro_batch=1)
print(f"b x s x h x 2 bytes = 1 x {gpt3.seq_len} x {gpt3.hidden} x 2 = {ar_bytes:,.0f} bytes = {units.format_bytes(ar_bytes)}")
glue("ar_mb", ar_bytes / 1e6, "{:.0f} MB")

# %% [markdown]
# How many of those does a GPU see in one training step? Take the published GPT-3 run (section 6): 1,024
# A100 GPUs and a global batch of 1,536 sequences at 140 TFLOP/s per GPU. The paper gives that throughput
# but not the layout next to it, so the course **assumes** **TP 8 x PP 16 x DP 8** (its data file lists the
# layout under `assumed`), one sequence per micro-batch, full recomputation. Each GPU holds $96/16 = 6$ layers, and each pipeline processes
# $1536/8 = 192$ micro-batches per step. `parallel.estimate` counts the calls:

# %%
pub = parallel.estimate("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536, recompute="full")
tp_traffic = mp.traffic_rows(pub)[0]
print(f"{tp_traffic['calls']:,} all-reduces of {units.format_bytes(tp_traffic['bytes_per_call'])} per step "
      f"(6 per layer x 6 layers x 192 micro-batches)")
print(f"each GPU sends 2(t-1)/t of each: {units.format_bytes(tp_traffic['sent_per_gpu'])} per step, "
      f"over {tp_traffic['link']}, taking {units.format_time(tp_traffic['time_s'])}")
traffic = {row["kind"]: row for row in mp.traffic_rows(pub)}
glue("tp_sent", tp_traffic["sent_per_gpu"] / 1e9, "{:.0f} GB")
glue("tp_vs_dp", tp_traffic["sent_per_gpu"] / traffic["data parallel grads"]["sent_per_gpu"], "{:.0f} times")

# %% [markdown]
# Each GPU sends about **{{tp_sent}} per step** for tensor parallelism alone, {{tp_vs_dp}} what it sends
# for data parallelism (section 4). This is affordable only because it rides NVLink.
#
# ### 2.3 Why tensor parallelism stays inside the NVLink domain
# Compare the communication of one layer with its compute. Per layer and micro-batch, four ring all-reduces
# of $2bsh$ bytes take $4 \cdot 2\frac{t-1}{t}\cdot\frac{2bsh}{B}$ on a link of $B$ bytes/s per direction.
# The layer's forward and backward take about $3 \cdot \frac{b s (24h^2 + 4sh)}{t\,F}$ on GPUs that reach
# $F$ FLOP/s each. Their ratio is
#
# $$\frac{\text{TP communication}}{\text{compute}} = \frac{4\,(t-1)\,F}{3\,B\,(6h + s)}.$$
#
# Three things to notice: the batch cancels (bigger micro-batches do not help); it grows with $t - 1$
# (every doubling of $t$ halves the compute per GPU but not the bytes); and it grows with $F/B$, so **faster
# GPUs need faster links**. `mp.tp_link_comparison` evaluates it with achievable bandwidths (spec x the
# measured efficiency of chapter 04) and $F$ = peak x the course's GPU efficiency assumption:

# %%
tp_links = {}
for sid in ("dgx-a100", "dgx-h100"):
    r = tp_links[sid] = mp.tp_link_comparison("gpt3-175b", sid, tp=8)
    print(f"{sid}: F = {r['flops'] / 1e12:.0f} TFLOP/s; TP 8 on NVLink ({units.format_bandwidth(r['nvlink_bw'])}): "
          f"comm/compute = {r['ratio_nvlink']:.2f}; on one NIC share ({units.format_bandwidth(r['nic_bw'])}): "
          f"{r['ratio_nic']:.2f}")
a, h = tp_links["dgx-a100"], tp_links["dgx-h100"]
glue("tp_nvlink_a100", a["ratio_nvlink"], "{:.0%}")
glue("tp_nvlink_h100", h["ratio_nvlink"], "{:.0%}")
glue("tp_nic_a100", a["ratio_nic"], "{:.0%}")
glue("tp_nic_h100", h["ratio_nic"], "{:.0%}")
glue("tp_ratio_nvlink_a100", a["ratio_nvlink"], "{:.2f}")
glue("tp_ratio_nic_a100", a["ratio_nic"], "{:.2f}")
glue("a100_nvlink_vs_nic", a["nvlink_bw"] / a["nic_bw"], "{:.0f} times")
glue("h100_vs_a100_flops", h["flops"] / a["flops"], "{:.1f} times")
glue("h100_vs_a100_nvlink", h["nvlink_bw"] / a["nvlink_bw"], "{:.1f} times")

# %% [markdown]
# On NVLink the all-reduces cost {{tp_nvlink_a100}} (A100) to {{tp_nvlink_h100}} (H100) of the compute. If each GPU had to send them
# through its own NIC, they would cost {{tp_nic_a100}} to {{tp_nic_h100}} of the compute: the GPUs would spend as long waiting
# as computing, every layer. And this traffic cannot be hidden easily: each all-reduce sits between two
# matrix multiplications that need its result.
#
# The top panel below draws the ratio against $t$. Inside a node the ratio grows as $t-1$; beyond the
# node (grey) two bounds: the dotted line gives each GPU only its own share of the NICs; the dashed line
# lets **every NIC of the node carry the TP ring at once**, which is what `course_lib.parallel` assumes. The
# bottom panel is the model's throughput with PP and DP fixed (so the GPU count grows with $t$).

# %%
mp.plot_tp_crossing("gpt3-175b", ("dgx-a100", "dgx-h100"), pp=16, dp=8, micro_batches=192);

# %% [markdown]
# Even with the model's generous assumption, throughput per GPU falls once TP leaves the node, and it
# falls faster on H100: {{h100_vs_a100_flops}} the FLOP/s against {{h100_vs_a100_nvlink}} the NVLink bandwidth. (Hollow points
# at small $t$ do not fit in 80 GB.)
#
# > **Myth / fact: "Tensor parallelism can span nodes just as well."**
# > *Myth.* A TP group runs 4 to 6 all-reduces of a full activation tensor per layer and micro-batch, on the
# > critical path, and the bytes do not shrink as the group grows. Per GPU, a DGX A100's network gives
# > {{a100_nvlink_vs_nic}} less bandwidth than NVLink (chapter 05), so the ratio above goes from {{tp_ratio_nvlink_a100}} to {{tp_ratio_nic_a100}}. Narayanan
# > et al. measured the best throughput per GPU at a TP degree equal to the GPUs of one node, and a drop
# > beyond it (printed below). Section 6 compares the model's drop with a published TP scan.

# %%
c = mp.claim("tp-best-at-node-size")
print(f"{c['claim']}\n  best TP degree: {c['value']} ({c['where']}); {c['title']}: {c['url']}")

# %% [markdown]
# ### 2.4 Sequence parallelism, briefly
# Between the TP regions of a layer sit layer norms and dropouts, which tensor parallelism leaves
# *replicated*: every GPU of the group computes and stores them on the full $b \times s \times h$ tensor.
# **Sequence parallelism** (Korthikanti et al. 2022) splits those parts along the sequence instead: each
# GPU keeps $s/t$ of the tokens. Where a TP region begins, an **all-gather** rebuilds the full sequence;
# where it ends, a **reduce-scatter** replaces the all-reduce, adding the partial sums and handing each
# GPU its slice of tokens.
#
# A ring all-reduce *is* a reduce-scatter followed by an all-gather (chapter 04), so the bytes are the
# same. What changes is memory:

# %%
sp = mp.sequence_parallel_comparison("gpt3-175b", "dgx-a100", tp=8, micro_batch=1, recompute="selective")
print(f"one {units.format_bytes(sp['bytes'])} all-reduce over {sp['link']}: {units.format_time(sp['all_reduce_s'])}; "
      f"reduce-scatter + all-gather: {units.format_time(sp['rs_ag_s'])}")
print(f"activations per layer (TP 8, selective recomputation): {units.format_bytes(sp['activations_without_sp'])} "
      f"without, {units.format_bytes(sp['activations_with_sp'])} with sequence parallelism")
glue("sp_act_with", sp["activations_with_sp"] / 1e6, "{:.0f} MB")
glue("sp_act_without", sp["activations_without_sp"] / 1e6, "{:.0f} MB")

# %% [markdown]
# Same time, a third of the activation memory ({{sp_act_with}} instead of {{sp_act_without}} per layer): sequence parallelism is free memory, not less traffic.

# %%
c = mp.claim("sp-same-volume")
print(f"{c['claim']}\n  {c['title']}, {c['where']}: {c['url']}")

# %% [markdown]
# ## 3. Pipeline parallelism
#
# ### 3.1 Stages, micro-batches and the bubble
# Cut the 96 layers into $p$ **stages** of consecutive layers, one stage per GPU (or per TP group). Stage
# $i$ needs the activations of stage $i-1$ before it can start: one stage alone would leave the other
# $p-1$ idle. So the batch is cut into $m$ **micro-batches**, which follow each other through the pipeline,
# and the gradients of all of them are added before one optimizer step (a "flush" at the end of each step).
#
# **GPipe** runs all $m$ forward passes, then all $m$ backward passes. Let a forward pass of one
# micro-batch on one stage take $t_f$ and a backward pass $t_b$. The last stage starts its first forward pass
# after $(p-1)\,t_f$ and the first stage finishes its last backward pass $(p-1)\,t_b$ after the last stage
# did. The step takes $(m + p - 1)(t_f + t_b)$ instead of the ideal $m(t_f + t_b)$; each GPU is idle for
# $(p-1)(t_f+t_b)$, the **bubble**:
#
# $$\text{bubble fraction} = \frac{(p-1)(t_f+t_b)}{m\,(t_f+t_b)} = \frac{p-1}{m}$$
#
# (as a fraction of the ideal time; as a share of the whole step it is $\frac{p-1}{m+p-1}$).
#
# ### 3.2 1F1B and interleaving
# **1F1B** (PipeDream-Flush): after a warm-up of $p - i - 1$ forward passes, stage $i$ alternates one
# forward and one backward pass, then drains. The bubble is the **same** $(p-1)/m$, but a stage holds the
# activations of at most $p$ micro-batches instead of $m$: that is why everyone uses it.
#
# **Interleaved 1F1B** (Megatron-LM): each GPU holds $v$ smaller chunks of layers (GPU 0 has layers 1-3 and
# 49-51 of a 96-layer model with $p = 16$, $v=2$), so a micro-batch visits every GPU $v$ times, each visit $v$
# times shorter. The fill and drain shrink by $v$: bubble $\frac{p-1}{v\,m}$. The price: about $v$ times
# more sends between stages, and $m$ must be a multiple of $p$.
#
# `mp.pipeline_schedule` simulates each schedule op by op (each GPU runs its ops in order; an op starts
# when its GPU is free and its input has arrived) and *measures* the bubble. Here $p = 4$, $m = 8$,
# $t_b = 2\,t_f$; the number in a box is the micro-batch, white is idle time:

# %%
mp.compare_schedules(stages=4, micro_batches=8, interleave=2);

# %% [markdown]
# The measured bubbles equal the formulas: 3/8 for GPipe and 1F1B, 3/16 interleaved (lighter boxes there
# are each GPU's second chunk of layers). Note the memory in each title: GPU 0 of GPipe holds all 8
# micro-batches of activations, 1F1B only 4 ($= p$), interleaved $p + (p-1)/v$. For a real run the bubble
# is small only when $m \gg p$:

# %%
for p, m, v in ((8, 8, 1), (8, 32, 1), (8, 32, 2), (16, 192, 1)):
    s = mp.pipeline_schedule(p, m, "1f1b", interleave=v)
    print(f"p={p:>2}, m={m:>3}, v={v}: bubble {s.bubble_fraction:.3f} (formula {s.formula:.3f}); step "
          f"{s.makespan / s.ideal:.2f} x the ideal time")
c = mp.claim("interleaved-gain")
print(f"measured by Megatron-LM: {c['claim']}\n  {c['title']}, {c['where']}: {c['url']}")

# %% [markdown]
# ### 3.3 Point-to-point sends between stages
# At each stage boundary the forward pass sends one micro-batch's activations, $b \times s \times h$ values,
# to the next stage, and the backward pass sends the same amount of gradient back: **{{ar_mb}} per micro-batch
# per boundary and direction** for GPT-3 (the same tensor as one TP all-reduce). In Megatron's rank order
# (section 4) the next stage is on another node, so the send crosses InfiniBand. Two things keep it cheap:
# - it is **point to point** (one partner, once per micro-batch per boundary), not a collective that grows
#   with the group;
# - the $t$ GPUs of a TP group hold identical copies of the activations, so each sends only its $1/t$ slice
#   over **its own NIC** (its own rail), and the next stage rebuilds the tensor with an all-gather over
#   NVLink (the "scatter/gather optimisation" of Narayanan et al.).

# %%
st = mp.stage_timing("gpt3-175b", "dgx-a100", stages=16, tp=8)
send_s = st["send_bytes"] / st["link_bandwidth"]
print(f"per GPU per send: {units.format_bytes(st['send_bytes'])} over {st['link']} at "
      f"{units.format_bandwidth(st['link_bandwidth'])} -> {units.format_time(send_s)}")
print(f"one micro-batch on one stage: forward {units.format_time(st['forward_s'])}, backward "
      f"{units.format_time(st['backward_s'])} -> a send costs {send_s / st['forward_s']:.1%} of a forward pass")
c = mp.claim("scatter-gather")
print(f"scatter/gather: {c['claim']} ({c['where']}; {c['url']})")
glue("pp_send_ms", send_s * 1e3, "{:.2f} ms")
glue("pp_forward_ms", st["forward_s"] * 1e3, "{:.0f} ms")
sends_v1, sends_v2 = (mp.pipeline_schedule(4, 8, "1f1b", interleave=v).sends for v in (1, 2))
glue("pp_sends_v1", sends_v1, "{:d}")
glue("pp_sends_v2", sends_v2, "{:d}")
glue("pp_sends_ratio", sends_v2 / sends_v1, "×{:.2f}")

# %% [markdown]
# A quarter of a millisecond ({{pp_send_ms}} per send) against tens of milliseconds of compute ({{pp_forward_ms}} for one
# forward pass): pipeline traffic is small enough for
# the slower network. It still adds to the critical path during warm-up and drain (the first micro-batch crosses
# $p-1$ boundaries before the last stage can start), and interleaving multiplies the number of sends by
# $(vp-1)/(p-1)$, a little more than $v$: each micro-batch crosses $vp-1$ chunk boundaries instead of $p-1$
# (at $p = 4$, $m = 8$, $v = 2$: {{pp_sends_v1}} sends become {{pp_sends_v2}}, {{pp_sends_ratio}}).
#
# ### Explorer: pipeline schedules
# Stages are DGX A100 nodes running GPT-3 with TP 8; times come from `parallel.estimate`, and each send
# carries one micro-batch's activations (per GPU, after scatter/gather) over a link of the speed you
# choose. Things to try:
# - $m$ from 4 to 32 at $p = 4$: the bubble shrinks as $(p-1)/m$;
# - the schedule from 1F1B to GPipe: same step time, but GPU 0's activation memory grows from $p$ to $m$;
# - interleaving 2 at $p=4$, $m=8$: half the bubble, {{pp_sends_ratio}} the sends;
# - the link from 25 down to 0.1 GB/s: only at a few hundred MB/s do the sends start to show (the measured
#   bubble then exceeds the formula, which counts no communication).

# %%
schedule_box = mp.schedule_explorer(stages=4, micro_batches=8, interleave=1, schedule="1f1b", link_gb_s=25.0)

# %% [markdown]
# > **Myth / fact: "More pipeline stages are free."**
# > *Myth.* With $m$ fixed, each extra stage adds $1/m$ of idle time: at $m = 8$ going from 4 to 8 stages
# > takes the bubble from {{bubble_m8_p4}} to {{bubble_m8_p8}} (computed below). Keeping it small needs $m \gg p$, so a deeper
# > pipeline needs a larger global batch, which convergence limits. Each stage also adds a boundary to
# > cross (warm-up and drain), and the first stage holds activations for $p$ micro-batches. (On a fixed
# > cluster and batch, trading DP for PP raises $m$ with $p$, and the bubble stays near $N b/(B\,t)$ for $N$
# > GPUs and a global batch of $B$ sequences: the price of depth shows when the model grows and the batch
# > cannot.) Stages are not free; they are a cheap way, in bandwidth, to spread a model across nodes.

# %%
for p in (4, 8, 16):
    print(f"m = 8, p = {p:>2}: bubble {mp.pipeline_schedule(p, 8).bubble_fraction:.3f} of the ideal time")
glue("bubble_m8_p4", mp.pipeline_schedule(4, 8).bubble_fraction, "{:.3f}")
glue("bubble_m8_p8", mp.pipeline_schedule(8, 8).bubble_fraction, "{:.3f}")

# %% [markdown]
# ## 4. 3D parallelism: which traffic rides which link
#
# ### 4.1 Megatron's rank order
# Megatron-LM numbers the GPUs so that **TP ranks are adjacent, then DP, then PP**:
#
# $$\text{rank} = \text{pp\_rank}\cdot(t\,d) + \text{dp\_rank}\cdot t + \text{tp\_rank}.$$
#
# Launchers place consecutive ranks on the same node (chapter 05), so with $t$ at most the GPUs of a node a
# TP group never leaves its node. A DP group takes every $t$-th rank and a PP group every $(t\,d)$-th, so
# they span nodes as soon as those strides reach the node size. When $t$ equals the GPUs of a node, both link
# GPUs with the **same local index**: GPU $k$ of one node talks to GPU $k$ of another, over NIC $k$, on rail
# $k$, one switch hop apart in a rail-optimised fat tree (chapter 05). The order follows the bytes: the group
# that sends most gets the fastest link.
#
# A small example, 32 GPUs on 4 DGX A100 nodes as TP 4 x PP 2 x DP 4 (colour: pipeline stage; thick
# boxes: TP groups):

# %%
mp.draw_rank_map(tp=4, pp=2, dp=4, system="dgx-a100");

# %% [markdown]
# The real system underneath: each DGX A100 is eight GPUs on NVSwitch, and GPU $k$ of every node reaches
# leaf switch $k$ through its own NIC. The links come from the catalog (GB/s per direction):

# %%
graphs.draw(topology.nvswitch_system("dgx-a100"));
ib.draw_rails("dgx-a100", nodes=2);

# %% [markdown]
# ### 4.2 The traffic of one step
# Back to the GPT-3 run and its assumed layout, TP 8 x PP 16 x DP 8 on 128 DGX A100 nodes. First the groups and their
# links, then everything one GPU sends in one step:

# %%
for kind, g in mp.group_links("dgx-a100", tp=8, pp=16, dp=8).items():
    print(f"{kind:<16} groups of {g['size']:>2}, rank stride {g['stride']:>3}: {g['link']} "
          f"({units.format_bandwidth(g['bandwidth'])} per rank){' - crosses nodes' if g['crosses_nodes'] else ''}")
mp.show_traffic(pub)
glue("tp_calls", tp_traffic["calls"], "{:,}")
glue("pp_calls", traffic["pipeline send/recv"]["calls"], "{:,}")
glue("pp_send_mb", traffic["pipeline send/recv"]["bytes_per_call"] / 1e6, "{:.1f} MB")
glue("pp_sent", traffic["pipeline send/recv"]["sent_per_gpu"] / 1e9, "{:.1f} GB")
glue("dp_grads", traffic["data parallel grads"]["bytes_per_call"] / 1e9, "{:.1f} GB")

# %% [markdown]
# Read the table row by row:
# - **tensor parallel**: {{tp_calls}} all-reduces of {{ar_mb}}, about {{tp_sent}} per GPU per step, all on NVLink;
# - **pipeline**: {{pp_calls}} sends of {{pp_send_mb}} (scatter/gather), {{pp_sent}}, on the rails;
# - **data parallel**: one all-reduce per step of the GPU's own gradients (its 6 layers split 8 ways, plus the
#   embedding: {{dp_grads}} in BF16), mostly hidden behind the last backward pass, on the rails.

# %%
split = mp.sent_by_link(pub)
print(f"sent per GPU per step: {units.format_bytes(split['inside'])} inside the node (NVLink), "
      f"{units.format_bytes(split['across'])} across nodes ({split['across'] / split['total']:.1%} of the bytes)")
dp_only = 2 * (1024 - 1) / 1024 * 2 * gpt3.params
print(f"pure data parallelism (if it fitted): {units.format_bytes(dp_only)} per GPU per step, all across nodes")
glue("sent_3d", split["total"] / 1e9, "{:.0f} GB")
glue("sent_dp_only", dp_only / 1e9, "{:.0f} GB")
glue("share_inside", split["inside"] / split["total"], "{:.0%}")
glue("share_across", split["across"] / split["total"], "{:.0%}")

# %% [markdown]
# > **Myth / fact: "Model parallelism reduces communication."**
# > *Myth.* It reduces **memory**. In bytes, a GPU of the 3D layout sends about as much per step as pure data
# > parallelism would ({{sent_3d}} against {{sent_dp_only}}, above), and it sends it far more often: thousands of
# > latency-sensitive collectives on the critical path instead of one overlappable gradient all-reduce.
# > What 3D parallelism changes is **where** the bytes go: about {{share_inside}} of them stay on NVLink, and the slower
# > network carries about {{share_across}}. It works because the rank order matches the traffic to the links.
#
# ### 4.3 Let the planner choose
# `parallel.plan` searches TP x PP x DP (and micro-batch size, ZeRO-1, recomputation, interleaving), drops
# what does not fit in memory and ranks the rest by step time. The same search from a terminal:
# `python -m course_lib plan --model gpt3-175b --system dgx-a100 --gpus 1024 --global-batch 1536 --search`.

# %%
plan = parallel.plan("gpt3-175b", "dgx-a100", gpus=1024, global_batch=1536)
mp.show_plan(plan, top=6)
print("\n".join(plan.explanation))
tp_across = next(e for e in plan.ranked if e.tp > hardware.system("dgx-a100").gpus_per_node)
glue("tp_across_slower", tp_across.step_time_s / plan.best.step_time_s - 1, "{:.0%}")

# %% [markdown]
# The winner keeps TP inside the node, recomputes only the attention scores (selective), uses interleaving
# to shrink the bubble, and shards the optimizer over DP (ZeRO-1) to make room. The best layout with TP
# across nodes is about {{tp_across_slower}} slower *in this model*, which leaves out contention for the NICs (section 6).
#
# ## 5. Explorer: the TP x PP x DP grid of a cluster
# Every cell is one layout of your cluster: TP down, PP across, DP the rest. Each pipeline runs $m$
# micro-batches of one sequence per step (so the global batch is $m \times$ DP, and the bubble of every
# cell is $(p-1)/m$). A cell shows the model FLOP/s utilisation (**MFU**, see the [glossary](../docs/glossary.md#mfu)) and the memory per GPU; grey cells do
# not fit, hatched ones are impossible (TP must divide the heads, PP the layers, TP x PP the GPUs). Below
# the map: the selected layout's step time split into compute, bubble and exposed communication (left),
# and its memory (right). Everything comes from `parallel.estimate`. Things to try:
# - TP from 8 to 16 and 32: the tensor-parallel share of the step (orange) jumps as soon as TP leaves the node;
# - the NIC speed from 200 down to 25 Gb/s: TP 8 x PP 16 loses a few percent (only pipeline and data-parallel
#   traffic use the NICs); select TP 16 x PP 8 and do it again: it loses more than half;
# - the NVLink speed down to 50 GB/s per direction: every layout with TP > 1 slows down;
# - $m$ from 192 down to 32: the bubble (grey) of PP 16 grows from {{bubble_pp16_m192}} to {{bubble_pp16_m32}}; try PP 32;
# - GPUs from 1024 to 128: which layouts still fit?
# - the system from DGX A100 to DGX H100: the same layout becomes more communication-bound.

# %%
grid_box = mp.layout_explorer(model_id="gpt3-175b", system="dgx-a100", gpus=1024, tp=8, pp=16, micro_batches=192)
glue("bubble_pp16_m192", (16 - 1) / 192, "{:.2f}")
glue("bubble_pp16_m32", (16 - 1) / 32, "{:.2f}")

# %% [markdown]
# ## 6. Where the model stops being true
#
# `parallel.validation_table` puts the model next to published throughputs: Narayanan et al. 2021 (DGX A100
# nodes with 8 HDR NICs each, full recomputation) and Meta's Llama 3 405B runs on H100 (Dubey et al. 2024,
# Table 4). Fields a paper does not state next to a number are filled with stated defaults and listed in the
# data file as assumptions, not fitted. Each row carries its **role**. The compute time of every matrix product
# is priced from its shape (`course_lib/parallel/efficiency.py`): a large product reaches a fraction `e_max`
# of the tensor peak, and a small or thin one is held back by memory bandwidth. Two constants set that
# function, and they were fitted on Table 1's weak-scaling rows (role *fit*), so those rows cannot test it.
# Section 5.1's GPT-3 row and Table 2's rows come from the same paper and shaped the planner's defaults
# (*informed*). Only the Llama 3 rows set nothing (*test*): they say what to expect on a run the model has
# never seen.

# %%
rows = mp.validation_rows()
mp.show_validation(rows)
mp.plot_validation(rows);
by_role = {role: [r["ratio"] for r in rows if r["role"] == role] for role in ("fit", "informed", "test")}
glue("val_fit_lo", min(by_role["fit"]), "{:.2f}")
glue("val_fit_hi", max(by_role["fit"]), "{:.2f}")
glue("val_informed_lo", min(by_role["informed"]), "{:.2f}")
glue("val_informed_hi", max(by_role["informed"]), "{:.2f}")
glue("val_test_n", len(by_role["test"]), "{}")
glue("val_test_lo", min(by_role["test"]), "{:.2f}")
glue("val_test_hi", max(by_role["test"]), "{:.2f}")
glue("val_test_low_most", 1 - min(by_role["test"]), "{:.0%}")

# %% [markdown]
# On the rows that set its constants the model lands at {{val_fit_lo}}-{{val_fit_hi}} times the measurement, and on
# the informed rows at {{val_informed_lo}}-{{val_informed_hi}}: that is agreement by construction, not evidence.
# The evidence is the {{val_test_n}} test rows, at {{val_test_lo}}-{{val_test_hi}}: the model is low on every one, by
# up to {{val_test_low_most}}. This is where it stops being true: its constants come from A100 runs of one recipe
# (Megatron-LM with full recomputation), and on H100s running another recipe (selective recomputation, Meta's own
# kernels and overlap) the model does not know what that recipe gains. On a new cluster, read a prediction as
# likely to be low by up to that much, not as a point.
#
# **Why not one constant?** The simplest model prices all compute as FLOPs / (peak x `gpu_efficiency`) with one
# fraction. The chapters' quick estimates use it, with a value set from a single-GPU V100 run (independent of
# these cases). The fraction that would reproduce each run exactly is different for every model size:

# %%
print(f"one constant: {parallel.assumption('gpu_efficiency'):.2f}; GPT-3 on 1024 GPUs needs "
      f"{mp.efficiency_to_match('mlm21-gpt3-1024'):.3f}; the 1T model on 3072 GPUs "
      f"{mp.efficiency_to_match('mlm21-t1-1008b'):.3f}")

# %% [markdown]
# Both are above the constant, and the larger model needs more. That is the signature of GEMM efficiency
# growing with matrix size, which one constant cannot follow and the shape-priced model above does.
#
# We checked the compute price on a real GPU. `benchmarks/device_compute_check.py` builds one layer of each
# model below in PyTorch, with exactly the weights the course's FLOP formula counts, and times its forward and
# backward pass on one H200 (bf16, micro-batch 1). That is the best a step's compute can do: no optimizer,
# embeddings, loss, communication or pipeline bubble.

# %%
from course_lib.views import compute_check

layer_rows = parallel.layer_efficiency_measured()
for r in layer_rows:
    print(f"{r['model']:<14} hidden {r['hidden']:>6}  {r['ms'][0]:7.2f} ms  {r['fraction_low']:.0%}-{r['fraction_high']:.0%} "
          f"of peak, {r['over_assumed']:.2f}x the one constant or more")
compute_check.plot_layer_efficiency(layer_rows);
small = layer_rows[0]
glue("layer_small_model", small["model"], "{}")
glue("layer_small", f"{small['fraction_low']:.0%}-{small['fraction_high']:.0%}", "{}")
glue("layer_large", max(r["fraction_high"] for r in layer_rows[1:]), "{:.0%}")
glue("layer_large_min", min(r["fraction_low"] for r in layer_rows[1:]), "{:.0%}")
glue("layer_matmul", small["matmul_fraction"], "{:.0%}")

# %% [markdown]
# The smallest model's layer ({{layer_small_model}}) reaches {{layer_small}} of peak, close to the one constant; from
# 7B up every layer reaches {{layer_large_min}}-{{layer_large}}, not far below a plain large matrix product
# ({{layer_matmul}}). So on Hopper the single constant is too low for large models' layers and about right for small
# ones: a whole step loses part of that to the work this measurement leaves out, and how much is exactly what one
# constant cannot say. Where the planner's compute time matters, measure one layer of your own model this way.
#
# The same run weighed what each layer's forward pass keeps for its backward pass, against the activation formula
# the planner uses for memory (Korthikanti et al.'s accounting, `transformer.activation_bytes_per_layer`):

# %%
for r in layer_rows:
    print(f"{r['model']:<14} kept {units.format_bytes(r['activation_bytes'])}: {r['activation_over_selective']:.2f}x "
          f"the formula with selective recomputation, {r['activation_over_none']:.2f}x the formula without")
glue("act_sel_lo", min(r["activation_over_selective"] for r in layer_rows), "{:.2f}")
glue("act_sel_hi", max(r["activation_over_selective"] for r in layer_rows), "{:.2f}")
glue("act_none_lo", min(r["activation_over_none"] for r in layer_rows), "{:.2f}")
glue("act_none_hi", max(r["activation_over_none"] for r in layer_rows), "{:.2f}")

# %% [markdown]
# Without any recomputation the layers kept {{act_sel_lo}}-{{act_sel_hi}} times what the formula gives *with*
# selective recomputation, and only {{act_none_lo}}-{{act_none_hi}} times its no-recomputation figure. PyTorch's
# `scaled_dot_product_attention` runs as fused (flash) attention, which never stores the $s \times s$ scores: the
# term that selective recomputation exists to drop is never there. So `recompute="none"` in the course's model
# means attention that stores its scores (the eager kind); for a framework with fused attention (Megatron-Core with
# Transformer Engine, PyTorch SDPA, FlashAttention) price activations with `recompute="selective"`: it costs no
# extra compute there.
#
# **2. Tensor-parallel communication is assumed fully exposed.** The model adds every TP all-reduce to the
# step time, as the 2021 runs did; newer Megatron-LM versions can overlap much of it with the neighbouring
# matrix multiplications (`--tp-comm-overlap`, with sequence parallelism and Transformer Engine). How much is at stake: make the TP all-reduces
# almost free (a what-if NVLink of 5,000 GB/s per direction) and compare. Overlap can win at most this much;
# before comparing with a published run, check whether its framework overlapped TP communication.

# %%
fast = hardware.system("dgx-a100").variant(gpu_link_gb_s=5000)
as_validated = dict(gpus=1024, tp=8, pp=16, global_batch=1536, recompute="full", dp_overlap=False)  # the table's case
exposed = parallel.estimate("gpt3-175b", "dgx-a100", **as_validated)
hidden = parallel.estimate("gpt3-175b", fast, **as_validated)
print(f"TP all-reduces exposed: {exposed.tflops_per_gpu:.0f} TFLOP/s per GPU ({exposed.tp_exposed_s / exposed.step_time_s:.1%} "
      f"of the step, the validation table's case); nearly free: {hidden.tflops_per_gpu:.0f} TFLOP/s per GPU")

# %% [markdown]
# **3. Tensor parallelism across nodes.** When a TP group spans nodes, the model prices each of its
# all-reduces ($2bsh$ bytes, 4 to 6 per layer and micro-batch, all exposed) with chapter 05's network model
# for the nodes and GPUs per node the group occupies (`parallel.cross_node_all_reduce_time`): NCCL's ring or
# tree, the protocol that wins at that size, a network latency on every step that crosses nodes. Every NIC
# of a node carries the group's traffic at once (each of the node's GPUs is in the group); on a DGX H100
# that is as fast as NVLink in the model (TP 16 across two nodes gets the same effective bandwidth as TP 8
# inside one), far more than one NIC share per GPU; on a DGX A100 it is slower than NVLink:

# %%
for sid in ("dgx-a100", "dgx-h100"):
    inside, across = parallel.group_link(sid, 8, 1), parallel.group_link(sid, 16, 1)
    own = hardware.system(sid).nic_bandwidth_per_gpu * costmodel.efficiency("infiniband")
    print(f"{sid}: TP 8 {units.format_bandwidth(inside.bandwidth)}; TP 16, all NICs of a node "
          f"{units.format_bandwidth(across.bandwidth)}; one NIC share per GPU {units.format_bandwidth(own)}")

# %% [markdown]
# Is that right? The Ultra-Scale Playbook (Hugging Face, 2025) scanned TP from 2 to 32 for a 3B model on
# H100 nodes joined by [EFA](../docs/glossary.md#efa), with and without sequence parallelism; `tp_scans` runs the planner on the same
# points (AWS p5 assumed, one TP group, the micro-batch the book shows) and divides both by their value at
# TP 8, so the GPU-efficiency constant cancels. `python -m course_lib plan --validate-tp` prints the table.

# %%
import matplotlib.pyplot as plt
from course_lib import tp_scans

scan_rows = tp_scans.scan_table()
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
for ax, sid in zip(axes, tp_scans.scan_ids()):
    rs = [r for r in scan_rows if r["scan"] == sid]
    ax.plot([r["tp"] for r in rs], [r["measured_rel"] for r in rs], "o-", label="published")
    ax.plot([r["tp"] for r in rs], [r["predicted_rel"] for r in rs], "s--", label="model (parallel.estimate)")
    ax.axvspan(8, 32, color="0.9", zorder=0)
    ax.set(xscale="log", xticks=[r["tp"] for r in rs], xticklabels=[r["tp"] for r in rs], xlabel="TP degree",
           title=f"{rs[0]['label']} ({rs[0]['split']})")
    ax.set_xticks([], minor=True)
axes[0].set_ylabel("tokens/s per GPU / value at TP 8")
axes[0].legend()
plt.show()
for sid in tp_scans.scan_ids():
    for to in (16, 32):
        f = tp_scans.fall(scan_rows, sid, 8, to)
        print(f"{sid}: TP 8 -> {to}: published fall {f['measured']:.0%}, model {f['predicted']:.0%}")
falls = [tp_scans.fall(scan_rows, sid, 8, 16) for sid in tp_scans.scan_ids()]
glue("tp_falls_model", " and ".join(f"{f['predicted']:.0%}" for f in falls), "{}")
glue("tp_falls_published", " and ".join(f"{f['measured']:.0%}" for f in falls), "{}")
share = {r["tp"]: r["tp_share"] for r in scan_rows if r["scan"] == tp_scans.scan_ids()[0]}
glue("tp_share_8", share[8], "{:.0%}")
glue("tp_share_16", share[16], "{:.0%}")
tp32 = next(r for r in scan_rows if r["scan"] == tp_scans.scan_ids()[0] and r["tp"] == 32)
glue("tp32_model", tp32["predicted_rel"], "{:.2f}")
glue("tp32_published", tp32["measured_rel"], "{:.2f}")

# %% [markdown]
# From TP 8 to 16 the model falls {{tp_falls_model}} against {{tp_falls_published}} published, and the TP share of the
# step jumps from {{tp_share_8}} to {{tp_share_16}}. On two nodes the model runs what NCCL 2.31 picks at these message
# sizes (chapter 05): the ring, although the tree, which sends each byte across the network once, would be faster
# here. The course prices EFA on P5 at first-generation EFA's measured 0.64 of the line rate, about 256 GB/s per
# node: an *assumed* figure, because no published P5 run is bound by its NICs alone (P6's EFA measures 0.96, and
# priced that way these scans would fall less). The fall depends on the fabric and on NCCL's choice: price TP
# across nodes on your own cluster's system (chapter 09). Inside the node the model falls somewhat faster than
# measured (its in-node all-reduce is a plain ring on NVLink, without NVLS). Where it still fails: TP 32 without
# sequence parallelism, on four nodes, keeps {{tp32_model}} of TP 8 in the model against {{tp32_published}} measured. The model's busbw
# barely declines from two nodes to four (×0.972 per doubling beyond four), and it keeps one GPU efficiency
# while each GPU's matrices shrink to 96
# columns. In a real step the TP ring also shares the NICs with pipeline sends and the data-parallel
# all-reduce, which the model leaves out; the scans above had none. Narayanan et al. measured the best
# layouts at TP = 8, and every run of their weak-scaling table keeps TP at 8 or below. Trust the model's
# price of TP across two nodes on a quiet network; beyond that, read it as an upper bound on throughput.
#
# **Also left out:** imbalance between stages (the first and last stages also hold the embeddings and the
# loss), the time to launch thousands of small kernels, stragglers and congestion in the fabric, and the
# optimizer step itself.
#
# ## 7. Context parallelism: splitting the sequence
#
# *(An extension, about 15 minutes.)* At 128K tokens a layer's activations grow with $s$ and attention's
# FLOPs with $s^2$; TP and PP do not shrink the sequence each GPU holds. **Context parallelism** (CP) splits
# every sequence into $c$ chunks, one per GPU: each GPU runs the MLPs and projections on its $s/c$ tokens
# alone. Attention needs every key and value, so they must travel. Two ways:
#
# **Ring attention.** Each GPU computes attention of its queries against the K/V chunk it holds, while it
# passes that chunk to the next GPU in a ring and receives the previous one; after $c-1$ steps every query
# has seen every key. One step computes $4 (s/c)^2 b\, h / t$ FLOP and moves K and V, $4 (s/c)\, b\, h_{kv} / t$
# bytes ($h_{kv} = h \cdot$ kv_heads / heads, 16-bit). The transfer hides behind the compute when
#
# $$\frac{4 (s/c)^2 b h}{t F} \ge \frac{4 (s/c) b h_{kv}}{t B} \iff \frac{s}{c} \ge \frac{F}{B}\cdot\frac{h_{kv}}{h} = \frac{F}{B \cdot \text{GQA group}}$$
#
# with $F$ the achieved FLOP/s and $B$ the link's bandwidth per direction: **each GPU's chunk must be longer
# than the GPU's FLOP/byte ratio divided by the GQA group size**. The backward pass moves twice the bytes
# (K, V and their gradients) for twice the compute: the same condition.
#
# **Ulysses** (DeepSpeed) instead re-shards by heads: an all-to-all turns "all heads, $s/c$ tokens" into
# "$a/c$ heads, all tokens", attention runs locally, and a second all-to-all turns it back. Its bytes do not
# shrink with $s/c$ against compute, and $c$ may not exceed the number of (KV) heads.

# %%
from course_lib.chapters import moe  # noqa: E402  (the CP explorer lives with chapter 10's)

for c, seq, where in ((4, 8192, "inside a node"), (8, 8192, "inside a node"), (64, 8192, "across 8 nodes"),
                      (64, 131072, "across 8 nodes")):
    r = parallel.ring_attention_condition("llama3-8b", "dgx-h100", c, seq_len=seq)
    print(f"{seq:>7,} tokens, CP {c:>2} ({where}): chunk {r['chunk_tokens']:>7,.0f} tokens, threshold "
          f"{r['threshold_tokens']:>6,.0f} "
          f"over {r['link']}: {'hidden' if r['hidden'] else 'EXPOSED'}")

# %% [markdown]
# With Llama 3 8B's 8K training sequence, CP 64 would give each GPU 128 tokens, far below the ~2,500 the
# network needs; at 128K tokens the chunks are 2,048 tokens, still short. Inside a node (NVLink) a few
# hundred tokens per chunk are enough. The whole step, Llama 3 8B at 128K tokens on 64 H100s:

# %%
for c in (1, 4):
    e = parallel.estimate("llama3-8b", "dgx-h100", gpus=64, cp=c, seq_len=131072, global_batch=64 // c * 1,
                          fsdp=True, recompute="full")
    print(f"{e.layout}, {e.sharding}: activations {e.memory['activations'] / units.GB:.1f} GB "
          f"({'fits' if e.fits else 'DOES NOT FIT'}), step {units.format_time(e.step_time_s)}, "
          f"exposed {[(k, units.format_time(v)) for k, v in e.exposed_by_kind().items()]}")

# %% [markdown]
# Without CP nothing fits: the model keeps the fp32 logits of 131,072 tokens (67 GB) and, for the layer being
# recomputed, the $s \times s$ attention scores that Korthikanti et al.'s accounting assumes (flash-style
# attention, which ring attention uses, never stores them). CP 4 divides every activation by 4, and its
# K/V passing hides on NVLink.
#
# ### Explorer: sequence length and CP degree
# Per ring step and layer: the K/V transfer (green on NVLink, orange across nodes) against the attention
# compute. Where the blue bar is taller the transfer hides.

# %%
moe.context_parallel_explorer()

# %% [markdown]
# **Against measurements.** torchtitan trained Llama 3 8B on 8 H100s at 32K to 256K tokens, doubling CP with
# the sequence. The model's throughput falls by 4.8 times from 32K to 256K, the measurement by 7.1: the runs
# used Float8 matmuls, which speed up the MLPs and projections but not the attention kernels, and attention
# dominates at long sequences. One fitted scale cannot absorb a speed-up that applies to only part of the step:

# %%
for r in parallel.modern_validation_table():
    if r["group"] == "cp-scaling":
        print(f"{r['id']:<24} {r['split']:<4} predicted {r['predicted']:6.0f}, measured {r['measured']:6.0f} "
              f"tokens/s/GPU, after fit {r['fitted']:.2f}")

# %% [markdown]
# ## Check your understanding
# 1. Raising the TP degree from 8 to 16 halves the work of each GPU in a layer. What happens to the bytes of
#    each TP all-reduce, and to the ratio of communication to compute?
#
# <details><summary>Answer</summary>
#
# The bytes stay $2bsh$: each GPU holds a full-size partial sum. Each GPU sends $2\frac{t-1}{t}$ of it, a bit
# more (1.75 to 1.875 times the buffer). Compute per GPU halves, so the ratio
# $\frac{4(t-1)F}{3B(6h+s)}$ roughly doubles (from $7$ to $15$ in the numerator), and more if the bandwidth
# $B$ drops because the group leaves the node.
# </details>
#
# 2. 1F1B has exactly the same bubble as GPipe. Why does every framework use it?
#
# <details><summary>Answer</summary>
#
# Memory. GPipe runs all $m$ forward passes before any backward pass, so a stage stores the activations of
# $m$ micro-batches; 1F1B starts backward passes as soon as the pipeline is full, so a stage holds at most $p$.
# A small bubble needs $m \gg p$, which GPipe cannot afford.
# </details>
#
# 3. TP 8 x PP 16 x DP 8 on DGX A100 nodes, Megatron's rank order. Over which NIC does GPU 3 of a node
#    all-reduce its gradients, and with whom?
#
# <details><summary>Answer</summary>
#
# Its DP group holds ranks $r, r+8, r+16, \dots$: GPU 3 of 8 different nodes (the 8 nodes of one pipeline
# stage). Each uses its own NIC 3, so the whole group is on rail 3: one leaf switch between any two members.
# </details>
#
# 4. Sequence parallelism replaces each all-reduce with a reduce-scatter and an all-gather. Does it cut the
#    tensor-parallel traffic?
#
# <details><summary>Answer</summary>
#
# No: a ring all-reduce is a reduce-scatter followed by an all-gather, so the bytes are the same. It splits
# the layer norms and dropouts along the sequence, which cuts the activation memory (by about 3x for GPT-3
# at TP 8 above).
# </details>
#
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer. Numbers are compared with a
# relative tolerance, so you do not need to round.
#
# **Exercise 07.1** (1 point). *Design.* A 1F1B pipeline of $p = 8$ stages must keep its bubble at **5% or
# less** of the ideal (bubble-free) time, and $m$ must be a **multiple of $p$** (so that the interleaved
# schedule of the next exercise can run it). What is the **smallest number of micro-batches** $m$ per step
# that does both? Store the whole number in `min_micro_batches`.

# %% exercise="07.1"
import math
min_micro_batches = math.ceil(math.ceil((8 - 1) / 0.05) / 8) * 8

# %% [markdown]
# **Exercise 07.2** (1 point). *Predict.* You switch that pipeline to the **interleaved** schedule with
# $v = 2$ model chunks per GPU and keep $m$. What happens? Store the letter in `interleave_prediction`.
#
# - **A.** The bubble halves, and the point-to-point traffic between stages more than doubles.
# - **B.** The bubble halves at no cost.
# - **C.** The bubble does not change: the same stages do the same work.
# - **D.** The bubble doubles: each GPU now waits for two chunks.

# %% exercise="07.2"
interleave_prediction = "A"

# %% [markdown]
# **Exercise 07.3** (1 point). Llama 3 405B (hidden size 16,384) trains on sequences of 8,192 tokens. With
# micro-batch 1 and BF16 activations, how many **bytes** does one tensor-parallel all-reduce carry (the buffer
# on each GPU)? Store it in `tp_allreduce_nbytes`. Compute it yourself; you may check it with
# `mp.tp_allreduce_bytes` (the model id is `"llama3-405b"`).

# %% exercise="07.3"
tp_allreduce_nbytes = 1 * 8192 * 16384 * 2

# %% [markdown]
# **Exercise 07.4** (2 points). GPT-3 175B (96 layers) on 1,024 GPUs as TP 8 x PP 16 x DP 8, global batch
# 1,536 sequences, micro-batch 1, **without** activation recomputation. How many tensor-parallel all-reduces
# does **one GPU** take part in during one training step? Store it in `tp_allreduces_per_step`.

# %% exercise="07.4"
layers_per_gpu = 96 // 16
micro_batches_per_pipeline = 1536 // (1 * 8)
tp_allreduces_per_step = 4 * layers_per_gpu * micro_batches_per_pipeline

# %% [markdown]
# **Exercise 07.5** (1 point). On a DGX H100 (NVLink 4: 450 GB/s per direction per GPU, spec), how long does
# one such all-reduce (exercise 07.3) take as a ring over the 8 GPUs of the node, counting bandwidth only (no
# latency)? Answer in **microseconds**, stored in `tp_allreduce_h100_us`.

# %% exercise="07.5"
tp_allreduce_h100_us = 2 * (8 - 1) / 8 * tp_allreduce_nbytes / 450e9 * 1e6

# %% [markdown]
# **Exercise 07.6** (1 point). GPT-3 175B on 512 A100 80 GB GPUs (64 DGX A100 nodes), mixed-precision Adam
# (16 bytes per parameter), no ZeRO, full recomputation, micro-batch 1. Only one of these layouts fits in
# memory. Which one? Store its letter in `fitting_layout`. Reason it out first; then you may check with
# `parallel.estimate(...).fits`.
#
# - **A.** TP 8 x PP 2 x DP 32
# - **B.** TP 4 x PP 8 x DP 16
# - **C.** TP 8 x PP 8 x DP 8
# - **D.** TP 1 x PP 8 x DP 64

# %% exercise="07.6"
fitting_layout = "C"

# %% [markdown]
# **Exercise 07.7** (2 points, graded by hand). *Design.* You lay out a 400B-parameter dense model on
# **2,048 H100s in DGX H100 nodes** (8 GPUs per node on NVSwitch, one 400 Gb/s NIC per GPU) as TP x PP x DP.
# Say which parallelism goes **inside** a node and which **across** nodes, and why, from the traffic each one
# makes per step (what is sent, how often, and whether it can overlap). Answer in 3-6 sentences in
# `layout_plan` (a string).
#
# The rubric and a model answer appear under the check cell once you have written your answer.

# %% exercise="07.7"

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals(), chapter="07")` scores every exercise of the notebook without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="07")

# %% [markdown]
# ## Takeaways
# - Megatron tensor parallelism pairs a **column-parallel** and a **row-parallel** layer, so each attention or
#   MLP block needs **one all-reduce forward and one backward**: 4 per layer and micro-batch (6 with full
#   recomputation), each of $b \cdot s \cdot h$ values, **50 MB for GPT-3** at micro-batch 1.
# - TP communication / compute $= \frac{4(t-1)F}{3B(6h+s)}$: it grows with $t$ and with GPU speed over link
#   speed, and the batch does not help. On NVLink it is about 0.08 (A100) to 0.16 (H100) at $t = 8$; over a
#   GPU's share of the NICs it would be about 10 times more. **TP stays inside the NVLink domain.**
# - Sequence parallelism turns each all-reduce into a reduce-scatter + all-gather: **same bytes, less
#   activation memory**.
# - The pipeline bubble is $(p-1)/m$ of the ideal time for GPipe and 1F1B, $(p-1)/(v\,m)$ interleaved. 1F1B
#   keeps at most $p$ micro-batches of activations instead of $m$; interleaving costs $(vp-1)/(p-1)$ times the sends, a little more than $v$.
# - Pipeline sends are point to point, once per micro-batch and boundary, and cut by $t$ with scatter/gather:
#   small enough for InfiniBand.
# - Megatron's rank order (TP adjacent, then DP, then PP) puts TP on NVLink and DP and PP on the rails, GPU $k$
#   to GPU $k$: about 99% of a GPU's bytes stay in the node.
# - The model is within 25% of published Megatron-LM runs (10% low for GPT-3 on 1,024 A100s); it misses the
#   gain of larger GEMMs, assumes TP communication fully exposed, and is optimistic about TP across nodes.
#
# ## Worked questions
# Try each before opening the answer; the code cell under them lets you check with the library.
#
# **W1.** Llama 3 70B trains with sequences of 8,192 tokens (hidden size 8,192) at micro-batch 1 and TP 8 on
# DGX H100 nodes. How big is one TP all-reduce, and what is the TP communication / compute ratio on NVLink?
#
# <details><summary>Answer</summary>
#
# $1 \times 8192 \times 8192 \times 2$ bytes = 134 MB, 2.7 times GPT-3's. The ratio is
# $\frac{4 \cdot 7\,F}{3B(6h+s)}$ with $h = s = 8192$: about 0.20, higher than GPT-3's 0.16 on the same
# machine because $h$ is smaller (less compute per byte sent). The long sequences help a little ($s$ in the
# denominator: attention compute grows with $s^2$, the all-reduce only with $s$).
# </details>
#
# **W2.** The assumed GPT-3 layout (TP 8 x PP 16 x DP 8) runs $m = 192$ micro-batches through 16 stages. What is the bubble, and
# what does interleaving with $v = 2$ buy in the model?
#
# <details><summary>Answer</summary>
#
# $15/192 = 0.078$ of the ideal time. With $v = 2$ (6 layers per stage divide by 2, and 192 is a multiple of
# 16) it halves to 0.039, and the model's step time falls by about 3%: the bubble saved, minus the
# pipeline sends, which more than double ($31/15$ as many at $p = 16$).
# </details>
#
# **W3.** The GPT-3 cluster could move from HDR (200 Gb/s) to NDR (400 Gb/s) NICs, or lose half of its NVLink
# bandwidth. Which change matters more for TP 8 x PP 16 x DP 8?
#
# <details><summary>Answer</summary>
#
# Halving NVLink: the TP all-reduces, 8% of the step, nearly double. Doubling the NICs only speeds up the
# pipeline sends and the exposed part of the DP all-reduce, together well under 1% of the step. With TP inside
# the node, the network is not the bottleneck of this layout.
# </details>
#
# **W4.** A colleague plans TP 16 across two DGX H100 nodes because "the model says it is only 20% slower".
# What do you answer?
#
# <details><summary>Answer</summary>
#
# That 20% is a lower bound: the model gives the TP ring all eight NICs of each node at once, as fast as NVLink
# on a DGX H100, with no contention from the pipeline and data-parallel traffic.
# Per GPU the network has 9 times less bandwidth than NVLink. Published runs kept TP within a node.
# Use PP (or a larger NVLink domain such as an NVL72 rack) to spread the model further.
# </details>

# %%
llama = mp.tp_link_comparison("llama3-70b", "dgx-h100", tp=8)
print(f"W1: {units.format_bytes(mp.tp_allreduce_bytes('llama3-70b'))}, ratio {llama['ratio_nvlink']:.2f}")
v2 = parallel.estimate("gpt3-175b", "dgx-a100", gpus=1024, tp=8, pp=16, global_batch=1536, interleave=2)
print(f"W2: bubble {pub.bubble_fraction:.3f} -> {v2.bubble_fraction:.3f}; step {units.format_time(pub.step_time_s)}"
      f" -> {units.format_time(v2.step_time_s)} ({1 - v2.step_time_s / pub.step_time_s:.1%} less)")
for name, s in (("NDR NICs", hardware.system("dgx-a100").variant(nic_gbit_s=400)),
                ("half NVLink", hardware.system("dgx-a100").variant(gpu_link_gb_s=150))):
    e = parallel.estimate("gpt3-175b", s, gpus=1024, tp=8, pp=16, global_batch=1536)
    print(f"W3: {name}: step {units.format_time(e.step_time_s)} ({e.step_time_s / pub.step_time_s - 1:+.1%})")

# %% [markdown]
# ## Further reading
# - Shoeybi et al. 2019, *Megatron-LM: Training Multi-Billion Parameter Language Models Using Model
#   Parallelism* (column- and row-parallel layers, the f and g operators): https://arxiv.org/abs/1909.08053
# - Narayanan et al. 2021, *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*
#   (PTD-P, interleaved schedule, scatter/gather, rank order, the GPT-3 and 1T runs): https://arxiv.org/abs/2104.04473
# - Korthikanti et al. 2022, *Reducing Activation Recomputation in Large Transformer Models* (sequence
#   parallelism, selective recomputation): https://arxiv.org/abs/2205.05198
# - Huang et al. 2019, *GPipe*: https://arxiv.org/abs/1811.06965
# - Narayanan et al. 2021, *Memory-Efficient Pipeline-Parallel DNN Training* (PipeDream-Flush, 1F1B):
#   https://arxiv.org/abs/2006.09503
# - Megatron Core developer guide, *tensor_parallel* and *pipeline_parallel* packages:
#   https://docs.nvidia.com/megatron-core/developer-guide/latest/api-guide/tensor_parallel.html
# - The course's model: `help(parallel.estimate)`, `python -m course_lib plan --help`, and every published
#   case in `parallel.published()["cases"]`, whose source ids resolve with `datafiles.source(id)`
#   (the course bibliography, `course_lib/data/sources.json`).
