# %% [markdown]
# # 10 · Mixture of experts: expert parallelism and the all-to-all
#
# **Time:** about 75 minutes. **Prerequisites:** chapter 04 (collectives, the alpha-beta model), chapter 05
# (one NIC per GPU, rails), chapter 06 (data parallelism, ZeRO/FSDP), chapter 07 (tensor and pipeline
# parallelism, Megatron's rank order).
#
# **After this chapter you can**
# - count a mixture-of-experts (MoE) model's parameters and its *active* parameters (what one token uses),
#   and say why the two differ by 5 to 20 times;
# - say what expert parallelism (EP) sends: a **dispatch** all-to-all and a **combine** all-to-all per MoE
#   layer forward, two more backward, and compute their bytes;
# - predict which link carries them (NVLink inside a node, a GPU's share of the NICs across nodes) and how
#   much of each buffer leaves the node;
# - explain why load imbalance and the capacity factor slow the busiest rank, and what hiding the
#   all-to-all behind another micro-batch (DeepSeek's DualPipe) buys;
# - write an all-to-all from point-to-point sends, check it against gloo's, and measure it;
# - choose an EP degree and a layout with the planner, and say where the model stops being true against
#   DeepSeek-V3's report and DeepEP's measurements.
#
# Conventions as always: **1 GB = 10⁹ bytes**, every bandwidth says *per direction* or *bidirectional*.
# Model configurations come from `course_lib/data/models.json` (each with a source), published
# measurements from `course_lib/data/published_parallel_modern.json`.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, costmodel, hardware, parallel, prose, units
from course_lib.chapters import moe
from course_lib.lab import bench

# %% [markdown]
# ## 1. What an MoE layer is
#
# In a dense transformer every token goes through the same MLP. In an MoE layer the MLP is replaced by
# $E$ **experts** (each an MLP of its own, usually smaller) and a **router**: a small $h \times E$ matrix that
# scores the experts for each token. Each token goes to its **top-k** experts, whose outputs are summed with
# the router's weights. Some models add **shared experts** that every token visits (DeepSeek-V3, Llama 4),
# and some keep the first layers dense (DeepSeek-V3's first three).
#
# The weights grow with $E$; the work per token grows only with $k$ (plus the shared experts). That is the
# point: many parameters, the compute of a much smaller model.

# %%
rows = []
for mid in ("mixtral-8x7b", "deepseek-v3", "llama4-scout", "llama3-70b"):
    m = parallel.model(mid)
    rows.append((m.name, m.experts or "-", m.top_k if m.experts else "-", m.shared_experts if m.experts else "-",
                 f"{m.params / 1e9:.1f}B", f"{m.active_params / 1e9:.1f}B", f"{m.params / m.active_params:.1f}x"))
print(f"{'model':<14} {'experts':>7} {'top-k':>5} {'shared':>6} {'params':>8} {'active':>7} {'ratio':>6}")
for r in rows:
    print(f"{r[0]:<14} {r[1]!s:>7} {r[2]!s:>5} {r[3]!s:>6} {r[4]:>8} {r[5]:>7} {r[6]:>6}")
glue = prose.Glue("10")  # numbers the text quotes from the cells
mixtral, dsv3 = parallel.model("mixtral-8x7b"), parallel.model("deepseek-v3")
glue("mixtral_params", mixtral.params / 1e9, "{:.0f}B")
glue("mixtral_active", mixtral.active_params / 1e9, "{:.0f}B")
glue("dsv3_params", dsv3.params / 1e9, "{:.0f}B")
glue("dsv3_active", dsv3.active_params / 1e9, "{:.0f}B")
glue("dsv3_adam_state", dsv3.params * 16 / 1e12, "{:.1f} TB")

# %% [markdown]
# The model reproduces the published totals (Mixtral 46.7B / 12.9B active, DeepSeek-V3 671B / 37B, Llama 4
# Scout 109B / 17B with its vision encoder) within a few percent; for DeepSeek-V3 it replaces multi-head
# latent attention with ordinary attention of the same width (see the note in `models.json`).
#
# Two consequences frame the chapter. **Memory** follows the total: DeepSeek-V3's {{dsv3_params}} parameters (the
# model's count) need 16 bytes each with mixed-precision Adam, {{dsv3_adam_state}}. **Compute** follows the active
# parameters: a training step costs about 6 × {{dsv3_active}} FLOP per token, like a {{dsv3_active}} dense model. So the experts must be spread over
# many GPUs (for memory), and each token must travel to the GPUs that hold its experts (for compute).

# %% [markdown]
# ## 2. Expert parallelism: dispatch and combine
#
# **Expert parallelism** puts $E/\text{EP}$ experts on each of EP GPUs. A token computed on GPU $r$ (its
# attention ran there) must reach the GPUs of its $k$ experts and come back:
#
# 1. **dispatch**: every GPU sends each of its tokens' hidden states ($h$ values) to the GPUs holding that
#    token's experts: one **all-to-all**, $k$ copies per token;
# 2. the experts run on the tokens they received;
# 3. **combine**: the results travel back to the tokens' home GPUs: a second all-to-all of the same size.
#
# The backward pass runs both in reverse (the gradient of a dispatch is a combine), so per MoE layer and
# micro-batch there are **2 all-to-alls forward and 2 backward**, 6 with full recomputation. One rank's send
# buffer holds
#
# $$\text{bytes} = \frac{s\,b}{t}\;k\;h \times 2 \qquad (\text{16-bit, } t = \text{TP degree}),$$
#
# and in an all-to-all each rank keeps $1/\text{EP}$ of it and sends the rest, $\frac{\text{EP}-1}{\text{EP}}$ of
# the buffer (nccl-tests' busbw factor, the same as an all-gather's).

# %%
mix = parallel.estimate("mixtral-8x7b", "dgx-h100", gpus=64, ep=8, global_batch=256, seq_len=4096,
                        recompute="selective", zero=1)
(a2a,) = [t for t in mix.traffic if t.kind == "expert parallel all-to-all"]
print(mix.layout, "|", a2a.calls_per_step, "all-to-alls per step of", units.format_bytes(a2a.bytes_per_call),
      "over", a2a.link)
print("= 4 per MoE layer x 32 layers x", mix.micro_batches, "micro-batches")

# %% [markdown]
# ## 3. Which link carries it
#
# Megatron-style rank order puts the EP group on consecutive ranks of the data-parallel dimension. With
# TP = 1 and EP ≤ 8 the group is one DGX node: the all-to-all runs on NVLink (NVSwitch lets every pair talk at
# full rate at once). With EP = 64 the group spans 8 nodes: of each rank's buffer, the $\frac{7}{64}$ for its
# node-mates goes over NVLink and the $\frac{56}{64}$ for the other nodes over the network, all at once. The
# network share bounds it:
#
# $$t \approx \max\!\Big(\frac{\text{EP}-g}{\text{EP}}\frac{n}{B_{\text{NIC per GPU}}},\;\frac{g-1}{\text{EP}}\frac{n}{B_{\text{NVLink}}}\Big)$$
#
# with $g$ members of the EP group in each node ($g$ = 8 GPUs per node for EP ≥ 8, as in chapter 05; $k$ stays the
# top-k of section 1). This assumes every GPU's traffic leaves through its own NIC evenly: a
# message for GPU 5 of another node is first moved over NVLink to the local GPU on rail 5 (NCCL's **PXN**,
# DeepEP's NVLink forwarding), so it crosses the network on one rail and one leaf switch.

# %%
a2a_s = {}
for ep in (8, 16, 32, 64):
    a2a_s[ep], link = parallel.all_to_all_time("dgx-h100", 470e6, ep, 1)
    print(f"EP {ep:>2}: {units.format_time(a2a_s[ep]):>9} for 470 MB per rank over {link.name}; "
          f"bottleneck {units.format_bandwidth(parallel.all_to_all_bottleneck_bandwidth('dgx-h100', 470e6, ep))}")
dgx = hardware.system("dgx-h100")
glue("a2a_ep8", a2a_s[8] * 1e3, "{:.2f} ms")
glue("a2a_ep16", a2a_s[16] * 1e3, "{:.2f} ms")
glue("a2a_ep16_vs_ep8", a2a_s[16] / a2a_s[8], "{:.1f} times")
glue("nvlink_per_gpu", dgx.gpu_link.per_direction / units.GB, "{:.0f} GB/s")
glue("nic_per_gpu", dgx.nic_bandwidth_per_gpu / units.GB, "{:.0f} GB/s")
glue("nvlink_vs_nic", dgx.gpu_link.per_direction / dgx.nic_bandwidth_per_gpu, "{:.0f} times")

# %% [markdown]
# Per GPU the network gives {{nvlink_vs_nic}} less bandwidth than NVLink: NVLink 4 gives each H100 {{nvlink_per_gpu}} per
# direction (spec), a 400 Gb/s NIC {{nic_per_gpu}} (chapter 05's ratio). The all-to-all grows less than that from EP 8 to
# EP 16, {{a2a_ep16_vs_ep8}} ({{a2a_ep8}} → {{a2a_ep16}}), because at EP 16 only half of each rank's buffer crosses the
# network.
#
# DeepEP measured exactly this shape on H800s (NVLink cut to 200 GB/s per direction): about
# 155 GB/s through NVLink inside a node, 43-58 GB/s through the NIC across nodes. The course's model next to
# those numbers (section 7 has the whole table):

# %%
for r in parallel.modern_validation_table():
    if r["group"] == "a2a-bandwidth":
        print(f"{r['config']:<48} predicted {r['predicted']:6.1f} GB/s, DeepEP {r['measured']:6.1f} GB/s "
              f"({r['split']}, p/m {r['ratio']:.2f})")

# %% [markdown]
# ## 4. Imbalance and the capacity factor
#
# The router does not share tokens evenly. Every rank waits for the **busiest** one, in the all-to-all (it
# receives the most) and in the expert compute. With **dropless** routing the busiest rank gets
# `moe_imbalance` times the mean (auxiliary losses and DeepSeek's bias-based balancing keep it near 1). With
# a **capacity factor** $c$, each expert takes at most $c$ times its fair share, drops the rest and pads
# short buffers: the work is always $c$ times the mean, and tokens may be lost. The model multiplies both the
# all-to-all bytes and the routed experts' FLOPs by that factor. Each line ends with the step's
# [MFU](../docs/glossary.md#mfu) (model FLOPs utilisation).

# %%
for imb in (1.0, 1.25, 1.5, 2.0):
    e = parallel.estimate("mixtral-8x7b", "dgx-h100", gpus=64, ep=8, global_batch=256, seq_len=4096,
                          recompute="selective", zero=1, moe_imbalance=imb)
    print(f"imbalance {imb:4}: step {units.format_time(e.step_time_s)}, all-to-all exposed "
          f"{units.format_time(e.ep_exposed_s)}, MFU {100 * e.mfu:.1f}%")

# %% [markdown]
# ## 5. Explorer: experts, top-k, EP
#
# Per MoE layer and micro-batch (DeepSeek-V3's shapes on DGX H100 nodes). Top: the dispatch all-to-all
# (green inside a node, orange across nodes) beside the compute of the routed experts. Bottom: the routed
# experts' states (weights, gradients, Adam) that each GPU holds. **Top-k** sets both bars of the top panel:
# each token sends top-k copies and costs top-k experts' FLOPs. The **number of experts** changes neither;
# it sets the memory, since each GPU holds experts/EP of them. A larger **EP degree** divides that memory
# but, past the 8 GPUs of a node, moves most of the buffer onto the network. Try: experts from 8 to 256 at
# EP 8 (only the memory grows), top-k from 8 to 2 (the time bars shrink), EP from 8 to 16 (the memory
# halves, the all-to-all leaves the node).

# %%
moe.expert_parallel_explorer()

# %% [markdown]
# ## 6. Hiding the all-to-all, and the planner
#
# Exposed, DeepSeek-V3's all-to-alls across 8 nodes would cost as much as its compute. DeepSeek's
# **DualPipe** schedule runs one micro-batch's all-to-alls while another micro-batch computes (and DeepEP
# does the transfers on a few [SMs](../docs/glossary.md#sm) of their own). `ep_overlap=True` models that: per MoE layer only the part of
# the all-to-alls longer than one layer's compute shows.

# %%
kw = dict(gpus=2048, tp=1, pp=16, ep=64, zero=1, global_batch=15360, recompute="full")
for overlap in (False, True):
    e = parallel.estimate("deepseek-v3", "dgx-h100", ep_overlap=overlap, **kw)
    print(f"ep_overlap={overlap!s:<5}: {e.layout}, step {units.format_time(e.step_time_s)}, "
          f"all-to-all exposed {units.format_time(e.ep_exposed_s)}, {e.tokens_per_s_per_gpu:,.0f} tokens/s/GPU, "
          f"MFU {100 * e.mfu:.1f}%")
glue("ds_s6_tokens", e.tokens_per_s_per_gpu, "{:,.0f} tokens/s/GPU")

# %% [markdown]
# The planner searches EP beside TP, PP and DP (and ZeRO). For Mixtral on 64 H100s it keeps EP inside the
# node; ask it yourself with `python -m course_lib plan --model mixtral-8x7b --system dgx-h100 --gpus 64
# --global-batch 256 --seq-len 4096`.

# %%
p = parallel.plan("mixtral-8x7b", "dgx-h100", gpus=64, global_batch=256, seq_len=4096)
print(p.summary(top=5))

# %% [markdown]
# ## 7. Where the model stops being true
#
# The cases below come with a **fit/test split**: in each group the *fit* cases set one scale (the geometric
# mean of predicted/measured), the *test* cases only get compared. DeepSeek-V3's throughput ({{ds_measured}}
# per GPU, from 180K H800 GPU-hours per trillion tokens) comes out at {{ds_predicted}} in its validation case
# (`dsv3-pretraining` below), {{ds_ratio}} of it, with the all-to-alls hidden. That case differs from section 6: it
# runs on H800 nodes with **selective** recomputation, where section 6 recomputes every layer
# (`recompute="full"`, {{ds_s6_tokens}} on DGX H100), and it does **not fit** the model's memory check:
# {{ds_memory}} per GPU against {{ds_usable}} usable (DeepSeek cached more activations in FP8 than the linear
# inputs the model saves in FP8). It is priced with the report's FP8 recipe (linear layers at the FP8 peak, the
# dispatch in FP8), but as Transformer Engine's per-tensor recipe rather than DeepSeek's fine-grained scaling; it
# sends $k$ copies of each token across the network where DeepEP sends one per destination node (at most 4 by
# DeepSeek's node-limited routing), ignores the SMs the communication kernels take from compute, and puts the
# output head and MTP module on the last stage where DualPipe pairs them with the embedding.

# %%
print(parallel.modern_validation_summary())
ds = next(r for r in parallel.modern_validation_table() if r["id"] == "dsv3-pretraining")
print(f"dsv3-pretraining: {ds['predicted']:,.0f} tokens/s/GPU predicted, {ds['measured']:,.0f} measured; memory "
      f"{ds['memory_bytes'] / units.GB:.0f} GB per GPU of {ds['usable_bytes'] / units.GB:.0f} GB usable (fits: {ds['fits']})")
glue("ds_measured", ds["measured"], "{:,.0f} tokens/s")
glue("ds_predicted", ds["predicted"], "{:,.0f} tokens/s")
glue("ds_ratio", ds["ratio"], "{:.2f}x")
glue("ds_memory", ds["memory_bytes"] / units.GB, "{:.0f} GB")
glue("ds_usable", ds["usable_bytes"] / units.GB, "{:.0f} GB")

# %% [markdown]
# ## 8. Lab: write an all-to-all
#
# gloo has `all_to_all_single`; write your own from point-to-point sends and compare. Pairwise exchange:
# copy your own chunk, then for $s = 1 \dots p-1$ send chunk $(r+s) \bmod p$ to rank $(r+s) \bmod p$ while
# receiving chunk $(r-s) \bmod p$ from rank $(r-s) \bmod p$. Post the receive and the send together
# (`dist.irecv`, `dist.isend`) and wait on both, or two ranks that both send first will wait forever on
# large messages.
#
# **Exercise 10.7** (3 points). Complete `my_all_to_all(output, input, rank, world_size)`: `input` and
# `output` are 1-D tensors of `world_size` equal chunks; on exit chunk $j$ of `output` must hold chunk `rank`
# of rank $j$'s `input`.

# %% exercise="10.7"
import torch.distributed as dist


def my_all_to_all(output, input, rank, world_size):
    c = input.numel() // world_size
    output[rank * c:(rank + 1) * c].copy_(input[rank * c:(rank + 1) * c])
    for step in range(1, world_size):
        dst, src = (rank + step) % world_size, (rank - step) % world_size
        works = [dist.irecv(output[src * c:(src + 1) * c], src), dist.isend(input[dst * c:(dst + 1) * c], dst)]
        for w in works:
            w.wait()

# %% [markdown]
# Now measure the course's exchange (`direct` in the table: the registry's all-to-all, done pairwise in
# $p-1$ steps) beside gloo's `all_to_all_single` on 2 local ranks (the same table as
# `python -m course_lib.lab.bench --collective all_to_all --algorithms builtin,direct`). On a
# laptop both move bytes through memory; what differs is how many messages and how many waits each makes.
# On the course's shared 2-core test machine, gloo's point-to-point `send`/`recv` paid about 4 ms per exchange
# (a plain ping-pong of 64 KiB too), against 0.2 ms for `all_to_all_single`: the hand-written version lost
# 10-20 times below 1 MiB, about 2 times at 4 MiB, and was even at 16 MiB, where bandwidth dominates. Latency,
# not bandwidth, is what a library's collective saves you.

# %%
result = bench.sweep(sizes=("64K", "1M", "16M"), ranks=(2,), iters=3, collective="all_to_all")
print(result)

# %% [markdown]
# ## Check your understanding
# 1. DeepSeek-V3 has 256 routed experts and 1 shared expert per MoE layer; each token uses 8 routed experts.
#    Why does its training cost resemble a 38B dense model's and not a 672B one's?
#
# <details><summary>Answer</summary>
#
# FLOPs per token follow the weights a token multiplies: attention, the shared expert and 8 of 256 routed
# experts, about 38B parameters. The other 248 experts per layer are stored (and take memory and optimizer
# states) but do no work for that token.
# </details>
#
# 2. Doubling top-k from 2 to 4 at fixed expert size: what happens to the all-to-all bytes and the expert
#    compute?
#
# <details><summary>Answer</summary>
#
# Both double: each token is sent to (and computed by) twice as many experts. The ratio of all-to-all time to
# expert compute stays the same; the attention's share of the step shrinks.
# </details>
#
# 3. Why is EP 16 across two DGX H100 nodes so much slower per byte than EP 8 inside one?
#
# <details><summary>Answer</summary>
#
# Half of every rank's buffer now crosses the network through that GPU's share of the NICs (50 GB/s per
# direction for a 400 Gb/s NIC) instead of NVLink ({{nvlink_per_gpu}} spec): the network half alone takes
# {{a2a_ep16_vs_ep8}} as long as the whole buffer did on NVLink ({{a2a_ep16}} against {{a2a_ep8}}, section 3).
# </details>
#
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer.
#
# **Exercise 10.1** (1 point). An MoE model with hidden size 6,144 and top-2 routing trains on sequences of
# 8,192 tokens, micro-batch 1, **TP 4**, BF16. How many **bytes** does one rank's **dispatch** all-to-all send
# buffer hold? Store it in `dispatch_bytes`.

# %% exercise="10.1"
dispatch_bytes = 8192 * 1 / 4 * 2 * 6144 * 2

# %% [markdown]
# **Exercise 10.2** (2 points). Predict before you compute: an MoE model with **24 MoE layers**, EP 8,
# **6 micro-batches** per step and **full** recomputation (every layer's forward pass runs again in the backward
# pass). How many all-to-alls does one GPU take part in per step? Store it in `a2a_per_step`.

# %% exercise="10.2"
a2a_per_step = 6 * 24 * 6

# %% [markdown]
# **Exercise 10.3** (1 point). EP 16 with **TP 2** on DGX H100 nodes (8 GPUs each). In Megatron's rank order TP
# is innermost, so the members of one EP group sit 2 ranks apart. What **fraction** of each rank's dispatch
# buffer crosses the network? Store it in `off_node_fraction`.

# %% exercise="10.3"
members_per_node = 8 // 2
off_node_fraction = (16 - members_per_node) / 16

# %% [markdown]
# **Exercise 10.4** (1 point). For that all-to-all (EP 16, TP 2), which link sets its time? Store the letter in
# `a2a_bottleneck`.
#
# - **A.** Each GPU's share of the node's InfiniBand NICs.
# - **B.** NVLink: every message starts and ends on a GPU's NVLink port.
# - **C.** PCIe between the GPU and the CPU.
# - **D.** The spine switches of the fat tree.

# %% exercise="10.4"
a2a_bottleneck = "A"

# %% [markdown]
# **Exercise 10.5** (2 points). Design: Mixtral 8x7B on 64 **A100 40 GB** GPUs of AWS p4d instances
# (`"aws-p4d"`: 8 GPUs per node on NVSwitch, 4 x 100 Gb/s EFA per node), sequences of 4,096 tokens, batch 256,
# ZeRO-1, full recomputation. Which layout trains fastest? Reason it out, then you may check with
# `parallel.estimate` or the planner. Store the letter in `mixtral_layout`.
#
# - **A.** EP 8 on the 8 GPUs of each node (TP 1, PP 1).
# - **B.** EP 8 with one GPU per node (TP 8, so the EP group is strided across nodes).
# - **C.** EP 8 on the 8 GPUs of each node (TP 1) with 2 pipeline stages (PP 2).
# - **D.** EP 2 with TP 4.

# %% exercise="10.5"
mixtral_layout = "C"

# %% [markdown]
# **Exercise 10.6** (2 points). Diagnose: a DeepSeek-style run measures its all-to-alls **and** its expert
# GEMMs both about 1.5 times longer than the model predicts, while attention and the data-parallel
# reduce-scatter match the model. What is the most likely cause? Store the letter in `moe_diagnosis`.
#
# - **A.** The router sends the busiest GPU about 1.5 times the mean number of tokens (load imbalance).
# - **B.** One InfiniBand NIC per node is down.
# - **C.** NVLink runs at half speed.
# - **D.** The learning rate is too high.

# %% exercise="10.6"
moe_diagnosis = "A"

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals(), chapter="10")` scores every exercise of the notebook without showing any answer.

# %%
_ = checks.check_all(globals(), chapter="10")

# %% [markdown]
# ## Takeaways
# - An MoE layer stores $E$ experts but each token uses $k$ (plus shared experts): parameters follow $E$,
#   FLOPs follow $k$. Mixtral: {{mixtral_params}} stored, {{mixtral_active}} active; DeepSeek-V3: {{dsv3_params}} and
#   {{dsv3_active}} (the model's counts).
# - Expert parallelism costs **2 all-to-alls forward and 2 backward** per MoE layer and micro-batch, each of
#   $\frac{s b}{t} k h \times 2$ bytes per rank, of which $\frac{\text{EP}-1}{\text{EP}}$ leaves the GPU.
# - Inside an NVLink domain the all-to-all is cheap; across nodes $\frac{\text{EP}-g}{\text{EP}}$ of it rides
#   each GPU's NIC share: {{nvlink_vs_nic}} less bandwidth per GPU on DGX H100, {{a2a_ep16_vs_ep8}} the time from EP 8
#   to EP 16. PXN-style forwarding keeps it on the rails.
# - The busiest rank sets the pace: imbalance (or the capacity factor) multiplies both all-to-all and
#   expert compute.
# - At DeepSeek-V3's scale the all-to-alls are as long as the compute; only overlap (DualPipe) makes EP 64
#   across nodes pay.
#
# ## Further reading
# - Jiang et al. 2024, *Mixtral of Experts*: https://arxiv.org/abs/2401.04088
# - DeepSeek-AI 2024, *DeepSeek-V3 Technical Report* (DualPipe, node-limited routing, EP 64):
#   https://arxiv.org/abs/2412.19437
# - DeepEP (dispatch and combine kernels, measured bandwidths): https://github.com/deepseek-ai/DeepEP
# - Lepikhin et al. 2020, *GShard* (top-2 routing, capacity factor): https://arxiv.org/abs/2006.16668
# - Fedus et al. 2021, *Switch Transformers* (top-1, capacity factor): https://arxiv.org/abs/2101.03961
# - The course's model: `help(parallel.estimate)` (`ep`, `moe_imbalance`, `ep_overlap`),
#   `python -m course_lib plan --validate-modern`.
