# %% [markdown]
# # 04 · The collectives lab
#
# **Time:** about 100 minutes. **Prerequisites:** chapter 00 (why gradients are all-reduced), chapters
# 02-03 (NVLink per direction vs bidirectional, NVSwitch). Basic PyTorch tensors; no GPU needed.
#
# **After this chapter you can**
# - say what broadcast, reduce, all-gather, reduce-scatter, all-reduce and all-to-all do, and where
#   training uses each;
# - describe the naive (parameter-server), ring, tree, recursive-doubling and halving-doubling
#   all-reduces, and follow a ring all-reduce chunk by chunk;
# - use the alpha-beta model, derive the bandwidth lower bound $2\frac{p-1}{p}\cdot\frac{n}{B}$ and turn it
#   into a time;
# - compute **algbw** and **busbw** exactly as nccl-tests does, and say what busbw is and is not;
# - run a real all-reduce on your CPU, **write a ring all-reduce yourself**, benchmark it, fit $\alpha$ and
#   $\beta$ for your machine, and say where the model stops being true.
#
# Conventions as always: **1 GB = 10⁹ bytes** (SI), **1 MiB = 2²⁰ bytes** where sizes are binary (the lab's
# `"4M"` means 4 MiB, as in nccl-tests), every bandwidth says *per direction* or *bidirectional*.
# Hardware numbers come from `course_lib.hardware`, published measurements from
# `course_lib/data/published_collectives.json`, each with its source.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import torch
import torch.distributed as dist

from course_lib import checks, costmodel, hardware, lab, prose, units
from course_lib.chapters import collectives as cl

glue = prose.Glue("04")  # numbers the text quotes from the cells

# %% [markdown]
# ## 1. Six collectives
#
# A distributed training job runs one process per GPU, called a **rank** (numbered 0 to $p-1$). A
# **collective** is an operation that every rank of a group calls together, each with its own buffer.
# Six of them cover nearly all the traffic of training. In the picture each rank's data has a letter
# (rank 0: A, rank 1: B, ...), chunk $c$ of it is `A0`, `A1`, ..., and `Σ1` is chunk 1 summed over all
# ranks:

# %%
cl.draw_collectives(ranks=4)
plt.show()

# %%
cl.show_collectives_table(ranks=8)

# %% [markdown]
# Three things to notice:
# - **all-reduce = reduce-scatter + all-gather.** Compare the pictures: after a reduce-scatter rank $r$
#   holds the summed chunk $r$; an all-gather of those chunks gives every rank the whole sum. The ring
#   algorithm below does exactly this, and so does [ZeRO](../docs/glossary.md#zero)/FSDP when it splits the all-reduce into its two
#   halves (chapter 06).
# - **all-to-all** reduces nothing: it is a transpose of pieces, which is why mixture-of-experts layers
#   are so sensitive to the network: every byte crosses it.
# - **Size convention.** nccl-tests' `size` column is the buffer of *each rank* for all-reduce,
#   broadcast and reduce, but the *total* buffer (the all-gather output, the reduce-scatter input) for
#   all-gather, reduce-scatter and all-to-all. The last column of the table is the *busbw factor* of
#   section 5.
#
# ## 2. Algorithms for all-reduce
#
# The same all-reduce can be carried out by very different message patterns. Let each of $p$ ranks hold
# $n$ bytes.
#
# - **Naive (parameter server).** Everybody sends its buffer to rank 0, rank 0 adds them up and sends the
#   sum back. Two "steps", but rank 0 receives $(p-1)\,n$ bytes and sends $(p-1)\,n$: its link is the
#   bottleneck, and it gets worse with every rank added.
# - **Ring.** Ranks form a ring; the buffer is cut into $p$ chunks. In $p-1$ steps of a
#   **reduce-scatter** each rank passes one chunk to its right neighbour and adds the chunk coming from
#   its left; then $p-1$ steps of an **all-gather** circulate the finished chunks. Every step moves only
#   $n/p$ bytes per rank, and every rank is busy at every step.
# - **Tree (binomial).** Reduce up a tree to rank 0 in $\lceil\log_2 p\rceil$ levels, then broadcast back
#   down: few steps, but the whole buffer travels at every level.
# - **Recursive doubling.** In step $k$ every rank swaps its *whole* current vector with the partner whose
#   number differs in bit $k$ (distance 1, 2, 4, ...), and both add. After $\log_2 p$ steps all ranks hold
#   the sum. The fewest steps of all, but $\log_2 p$ whole buffers per rank.
# - **Recursive halving-doubling** (Rabenseifner). Halving: swap *half* the vector with the partner at
#   distance $p/2$, keep and add the other half; then a quarter with the partner at $p/4$, and so on: a
#   reduce-scatter in $\log_2 p$ steps. Doubling undoes it as an all-gather. $2\log_2 p$ steps and the same
#   bytes as the ring.
#
# NCCL uses rings, and between nodes also a *double binary tree*: two trees, each carrying half the data,
# built so that a rank that is a leaf in one tree is an inner node in the other. As an inner node it sends
# its half up once and down to two children ($\frac{n}{2} + n$); as a leaf it sends its other half up
# ($\frac{n}{2}$). Over the whole all-reduce every rank sends about $2n$, the ring's volume (the course's
# model counts it so: `costmodel` gives the double binary tree a bandwidth term of $2n/B$; on exactly two
# nodes the trees have one edge between them and each byte crosses it once, $n/B$: chapter 05), but in
# $O(\log p)$ steps instead of $2(p-1)$. `course_lib/lab/algorithms.py` holds hand-written naive,
# ring, binomial-tree and halving-doubling all-reduces, short enough to read; the lab runs the ring, and
# `lab.bench.sweep(algorithms=...)` can race any of them by their ids in the course registry (`naive`, `ring`,
# `binomial_tree`, `halving_doubling`).

# %%
cl.draw_algorithms(ranks=8)
plt.show()

# %% [markdown]
# The alpha-beta model of section 4 gives each algorithm a number of latency **steps** and a number of
# **bytes** its busiest rank must move. Here they are for 8 ranks over NVLink 4 (the catalog's
# per-direction rate), with the course's per-step NVLink latency, once for a large and once for a small
# message (from `costmodel.collective_time`):

# %%
nvl4 = hardware.nvlink(4)
alpha_nvl = costmodel.hop_latency("nvlink")
print(f"{nvl4.name}: {units.format_bandwidth(nvl4.per_direction)} "
      f"({units.format_bandwidth(nvl4.bidirectional, direction='bidirectional')}); "
      f"alpha = {units.format_time(alpha_nvl)} per step")
for size in (1e9, 64e3):
    print(f"\nAll-reduce of {units.format_bytes(size)} on 8 ranks:")
    cl.show_algorithm_table(size, 8, nvl4.per_direction, alpha_nvl)

# %% [markdown]
# For 1 GB, bytes decide: ring and halving-doubling reach the lower bound (ratio 1.00, section 4), while
# recursive doubling moves $\log_2 p$ times the buffer, the tree $2\log_2 p$ times and the naive algorithm's
# rank 0 $2(p-1)$ times. For 64 KB, latency decides and the ring's $2(p-1)$ steps hurt, and so do the naive
# algorithm's: rank 0 handles its $p-1$ incoming and $p-1$ outgoing messages one after another, and the model
# charges each its $\alpha$, as Thakur, Rabenseifner and Gropp do for such linear algorithms.
#
# Notice that in this model halving-doubling is never worse than the ring: same bytes, fewer steps. Real
# libraries still prefer rings for large messages because the model assumes every pair of ranks has its
# own full-speed link. A ring only ever talks to its neighbours, so it maps onto any topology that has a
# cycle of fast links (an NVLink mesh, a PCIe chain, one rail of a cluster), works for any $p$, and sends
# equal-sized messages that pipeline well. Halving-doubling's partners at distance $p/2$ may share links
# with other pairs, and it needs a power of two (the library folds extra ranks in first).
#
# ## 3. The ring, step by step
#
# Cut each rank's buffer into $p$ chunks, $c_0 \dots c_{p-1}$. In **reduce-scatter** step $s$ (counting
# from 0), rank $r$ sends chunk $(r-s-1) \bmod p$ to rank $r+1$ and adds the chunk $(r-s-2) \bmod p$ that
# arrives from rank $r-1$ into its own copy. In **all-gather** step $s$ it sends chunk $(r-s) \bmod p$, which
# is finished, and stores the chunk $(r-s-1) \bmod p$ that arrives, without adding. This is the chunk order
# of `lab.algorithms.ring_all_reduce`. Each cell below lists the ranks whose data it holds:

# %%
cl.draw_ring_steps(ranks=4)
plt.show()

# %% [markdown]
# Follow chunk `c0` of rank 1: it starts as rank 1's own data, travels one row down each step (from the
# last rank back to rank 0), gathers a contribution at
# every rank, and after $p-1=3$ steps lands, complete, on rank 0. The same happens to every chunk at once.
# The simulation behind the picture confirms it:

# %%
states = cl.ring_states(4)
print("after the reduce-scatter (step 3): rank -> fully reduced chunks", cl.owned_chunks(states[3]))
print("after the all-gather     (step 6): rank -> fully reduced chunks", cl.owned_chunks(states[6]))

# %% [markdown]
# After the reduce-scatter each rank owns exactly one fully reduced chunk, its own number; after the
# all-gather every rank has them all. Count the traffic: every step, each rank sends $n/p$ bytes and
# receives $n/p$ bytes, at the same time; $2(p-1)$ steps make $2\frac{p-1}{p}n$ bytes per rank, the same on
# every rank and every link.
#
# ### Explorer: step through the ring
# Move **step** to walk through the algorithm; change **ranks** to see that every ring has $2(p-1)$ steps
# and ends the reduce-scatter with one finished chunk per rank. From 5 ranks on, a cell shows how many
# ranks' data it holds instead of listing them.

# %%
ring_box = cl.ring_explorer(ranks=4)

# %% [markdown]
# ## 4. The alpha-beta model and the lower bound
#
# The simplest useful model of a link: sending a message of $m$ bytes takes
#
# $$t(m) = \alpha + \frac{m}{B} = \alpha + m\,\beta,$$
#
# where $\alpha$ (seconds) is the fixed cost of a message (software, launch, wire latency) and $B$ the
# bandwidth **per direction** ($\beta = 1/B$, seconds per byte). A collective is a number of steps; if all
# ranks send at once in each step, the time adds up step by step. The ring:
#
# $$t_{\text{ring}} = 2(p-1)\,\alpha \;+\; 2\frac{p-1}{p}\cdot\frac{n}{B} \;\;\big(+\; \tfrac{p-1}{p}\,n\,\gamma\big),$$
#
# the last term being the time to add the received bytes ($\gamma$ seconds per byte), which matters on CPUs
# and which section 8 measures.
#
# **The lower bound.** Can any algorithm move fewer bytes than the ring? Follow one element of the buffer
# and list, in the order they are sent, the messages that carry it (its value, or a partial sum of it).
# Messages sent at the same moment can be listed in any order: a message sent a little later never
# carries less. Some rank is the first to hold the complete sum. Before that can happen, each of the other
# $p-1$ ranks must have sent its contribution on: at least $p-1$ messages. At that moment none of those
# $p-1$ ranks holds the complete sum yet, so each must still *receive* at least one message: $p-1$ more,
# different from the first ones. So each element costs at least $2(p-1)$ element messages, the whole buffer
# at least $2(p-1)\,n$ bytes sent in total, and $p$ ranks can together send at most $p\,B$ bytes per second:
#
# $$t \;\ge\; \frac{2(p-1)\,n}{p\,B} \;=\; 2\frac{p-1}{p}\cdot\frac{n}{B}.$$
#
# The ring's bandwidth term *is* this bound (Patarasuk and Yuan showed that ring-based all-reduce is
# bandwidth-optimal): the ring loses only in latency, $2(p-1)\alpha$. The argument assumes the ranks do the
# adding; a switch that adds in the network (NVLink SHARP, chapter 03) breaks it.
#
# **A number.** An all-reduce of 1 GB on 8 H100s, NVLink 4, at best:

# %%
bound = costmodel.lower_bound_time(1e9, 8, nvl4.per_direction)
wrong = costmodel.lower_bound_time(1e9, 8, nvl4.bidirectional)
print(f"2 x 7/8 x 1 GB / {units.format_bandwidth(nvl4.per_direction)} = {units.format_time(bound)}")
print(f"with {units.format_bandwidth(nvl4.bidirectional, direction='bidirectional')} plugged in (wrong): "
      f"{units.format_time(wrong)}, {bound / wrong:.0f}x too optimistic")

# %% [markdown]
# Each GPU sends 1.75 GB and receives 1.75 GB at the same time, in opposite directions of its links, so
# the per-direction rate sets the pace. Plugging in the bidirectional total is the most common error in
# public material: it makes every all-reduce look twice as fast as it can be.
#
# **Exercise 04.1** (1 point). A 7-billion-parameter model has 14 GB of BF16 gradients (2 bytes per
# parameter). What is the lower bound, in **seconds**, on all-reducing them over the 8 A100s of a DGX A100
# (NVLink 3, figures from the catalog below)? Store it in `lower_bound_a100_s`.

# %%
nvl3 = hardware.nvlink(3)
print(f"{nvl3.name}: vendors quote {units.format_bandwidth(nvl3.bidirectional, direction='bidirectional')}; "
      f"{nvl3.detail}")

# %% exercise="04.1"
lower_bound_a100_s = 2 * (8 - 1) / 8 * 14e9 / 300e9

# %% [markdown]
# ## 5. algbw and busbw, exactly as nccl-tests defines them
#
# NVIDIA's nccl-tests (`all_reduce_perf` and friends) prints two bandwidths for every size; its
# `PERFORMANCE.md` defines them:
# - **algbw** (algorithm bandwidth) $= S / t$: the `size` column $S$ (bytes, see the convention of section 1)
#   divided by the time $t$. Simple, but for all-reduce it falls as you add ranks even on perfect hardware,
#   because each rank must move $2\frac{p-1}{p}$ times its buffer.
# - **busbw** (bus bandwidth) $=$ algbw $\times$ a factor per collective, chosen so that the result can be
#   compared with the hardware's per-direction link rate whatever the number of ranks:
#
# | collective | busbw / algbw |
# |---|---|
# | all-reduce | $2\frac{p-1}{p}$ |
# | reduce-scatter, all-gather | $\frac{p-1}{p}$ |
# | broadcast, reduce | $1$ |
#
# The factor is exactly the bytes a bandwidth-optimal algorithm moves per rank per byte of $S$. So for an
# all-reduce that reaches the lower bound of section 4, busbw equals the link rate. The 1 GB all-reduce
# on 8 H100s at the bound:

# %%
algbw = costmodel.algbw(1e9, bound)
busbw = costmodel.busbw("all_reduce", 1e9, bound, 8)
print(f"algbw = 1 GB / {units.format_time(bound)} = {units.format_bandwidth(algbw)}")
print(f"busbw = algbw x 2 x 7/8 = {units.format_bandwidth(busbw)}  (= the NVLink 4 rate per direction)")

# %% [markdown]
# > **Myth / fact: "algbw is the link speed."**
# > No. algbw is the size divided by the time. For an all-reduce it is at most $\frac{p}{2(p-1)}$ of the
# > link rate (for the 8-GPU all-reduce above, 257 of 450 GB/s per direction), and it changes with the
# > number of ranks. busbw is the number to compare with the link's per-direction rate.
#
# > **Myth / fact: "busbw above the link rate means the link is faster than its spec."**
# > No. busbw is not measured on a wire; it is algbw times a factor that assumes the *ranks* do the adding
# > (the lower bound of section 4). On NVSwitch systems with NVLink SHARP (NVLS, chapter 03) the switch adds,
# > each GPU sends its buffer about once instead of $2\frac{p-1}{p}$ times, and busbw comes out **above**
# > the link rate. Section 9 shows published 8-GPU runs above it. Nothing is faster than spec; the
# > formula's assumption no longer holds.
#
# **Exercise 04.2** (1 point). A run of `all_reduce_perf -b 1G -e 1G -g 8` (one process, 8 GPUs) prints,
# with the bandwidth columns hidden:
#
# ```
# #       size         count      type   redop    root     time   algbw   busbw  #wrong
#   1073741824     268435456     float     sum      -1   5012.3     ???     ???       0
# ```
#
# The time is in microseconds. What busbw, in **GB/s**, does nccl-tests print? Store it in `busbw_gb_s`.

# %% exercise="04.2"
algbw_line_gb_s = 1073741824 / 5012.3e-6 / 1e9
busbw_gb_s = algbw_line_gb_s * 2 * (8 - 1) / 8

# %% [markdown]
# ## 6. Explorer: size, ranks, link speed and algorithm
#
# Every curve is `costmodel.collective_time` for one algorithm; the dashed line is the lower bound;
# the diamond is your choice. Things to try:
# - at the default (1 GB, 8 ranks), the bandwidth-optimal algorithms sit on the bound; slide the size down
#   to 0.01 MB and watch the order change;
# - raise **ranks** to 1024 with a 1 MB message: the ring's $2(p-1)$ steps become the whole cost;
# - set **alpha** to 100 us (the order of what section 8 measures for gloo on a laptop) and watch where the
#   ring starts to beat recursive doubling and the tree (the dotted line; the readout names the size), and
#   how that size moves with **ranks**;
# - halve **link GB/s per direction**: only the large-message end moves.

# %%
cost_box = cl.cost_explorer()

# %% [markdown]
# Where does the ring overtake recursive doubling: on 8 ranks over NVLink 4, and on 1024 ranks over
# InfiniBand NDR, each with the course's per-step latency of that link?

# %%
for ranks, link, tech in ((8, nvl4, "nvlink"), (1024, hardware.network("ib-ndr"), "infiniband")):
    size = cl.crossover_size(ranks, link.per_direction, costmodel.hop_latency(tech))
    print(f"{ranks:>5} ranks, {link.name} ({units.format_bandwidth(link.per_direction)}, alpha "
          f"{units.format_time(costmodel.hop_latency(tech))}): ring wins above "
          f"{units.format_bytes(size) if size else 'never in 1 KB-10 GB'}")

# %% [markdown]
# More ranks and a slower network push the crossover up: that is why NCCL picks its algorithm and
# protocol per message size, and why a model-based tuner needs both $\alpha$ and $B$.
#
# **Exercise 04.3** (1 point). In the alpha-beta model, which algorithm all-reduces **256 KB** fastest on
# **64 ranks** with $\alpha$ = 5 µs per step and 450 GB/s per direction? Store the letter in
# `fastest_small_allreduce`. (Reason it out, then check with the explorer or `cl.algorithm_table`.)
#
# - **A.** ring
# - **B.** binomial tree
# - **C.** recursive doubling
# - **D.** naive (parameter server)

# %% exercise="04.3"
fastest_small_allreduce = "C"

# %% [markdown]
# ### 6.1 Ring, tree and NVLS, step by step
#
# Section 3 walked through the ring. NCCL has two more all-reduces worth walking through: its **double binary
# tree** (section 2; NCCL builds it over nodes, with a chain inside each node, and here each rank stands for a
# node) and **NVLS**, where the NVSwitch adds (chapter 03). The explorer below plays any of the three, step by
# step: which chunk crosses which link (red while partial sums travel, green once finished sums do), and the
# time of each step from the alpha-beta model of section 4, $\alpha + m/B$ for the largest number of bytes $m$
# any rank sends or receives in that step. Under the picture the steps add up one after another, and below them
# is the same all-reduce as NCCL runs it, cut into small pieces so that every step's links work at once: the
# pipelined time `costmodel.collective_time` gives (section 4's formulas). Press ▶ to play the steps, or drag
# **step**. Things to try:
# - **ring**, 4 ranks: every step moves one quarter of the buffer per rank in each direction, so pipelining
#   gains nothing: the two bars are equal;
# - **tree**, 8 ranks: in step 1 rank 2 receives the halves of two children at once, a whole buffer through
#   one port; step after step the tree is slow, pipelined its busiest rank moves two buffers, about the ring's
#   volume, in far fewer steps. Slide the size down to 0.01 MB and the tree wins: latency decides;
# - **NVLS**: two steps. Every GPU pushes its buffer into the switch once, the switch adds and hands each GPU
#   one summed chunk, which the GPU sends back once to be copied to all: the readout's busbw lands above the
#   link rate.
#
# The explorer's picture is the step you choose; for a printed or exported page, the cell after it draws every
# step of all three on one time axis.

# %%
steps_box = cl.allreduce_steps_explorer(ranks=4, step=1)

# %%
nvl4_link, nvl_alpha = nvl4.per_direction, costmodel.hop_latency("nvlink")
timed = {a: cl.step_times(cl.step_plan(a, 8), 1e9, nvl4_link, nvl_alpha) for a in cl.STEP_ALGORITHMS}
for a, t in timed.items():
    print(f"{cl.STEP_LABELS[a]:<36} {len(t.plan.steps):>2} steps: one after another {units.format_time(t.stepwise_s):>8}, "
          f"pipelined {units.format_time(t.pipelined_s):>8}, busbw {units.format_bandwidth(t.busbw)}")
small = {a: cl.step_times(cl.step_plan(a, 8), 64e3, nvl4_link, nvl_alpha).pipelined_s for a in ("ring", "double_binary_tree")}
print(f"64 KB: ring {units.format_time(small['ring'])}, tree {units.format_time(small['double_binary_tree'])}")
cl.draw_allreduce_timelines(ranks=8, nbytes=1e9, bandwidth=nvl4_link, latency=nvl_alpha)
plt.show()
glue("steps_ring_s", units.format_time(timed["ring"].pipelined_s), "{}")
glue("steps_tree_stepwise_s", units.format_time(timed["double_binary_tree"].stepwise_s), "{}")
glue("steps_tree_s", units.format_time(timed["double_binary_tree"].pipelined_s), "{}")
glue("steps_nvls_s", units.format_time(timed["in_network"].pipelined_s), "{}")
glue("steps_nvls_busbw", units.format_bandwidth(timed["in_network"].busbw), "{}")
glue("steps_small_ring", units.format_time(small["ring"]), "{}")
glue("steps_small_tree", units.format_time(small["double_binary_tree"]), "{}")
glue("steps_link", units.format_bandwidth(nvl4_link), "{}")
glue("steps_nvls_predict", units.format_bandwidth(costmodel.predict("all_reduce", 1e9, "dgx-h100", algorithm="nvls").busbw[0]), "{}")

# %% [markdown]
# For 1 GB on 8 GPUs at {{steps_link}}: the ring takes {{steps_ring_s}} either way; the tree {{steps_tree_stepwise_s}}
# one level at a time but {{steps_tree_s}} pipelined; NVLS {{steps_nvls_s}}, a busbw of {{steps_nvls_busbw}}.
# For 64 KB the order flips: the tree's few steps give {{steps_small_tree}} against the ring's
# {{steps_small_ring}}. This flat model leaves out what section 9 and chapter 03 measure: NCCL's
# protocols and channels, and the efficiency NVLS reaches: with it `costmodel.predict` gives a DGX H100
# {{steps_nvls_predict}} of NVLS busbw for 1 GB, about what published runs measure (chapter 03).

# %% [markdown]
# ## 7. The lab: real all-reduces on your CPU
#
# `lab.run(fn, ranks, timeout)` starts `ranks` processes on this machine, joins them into a
# `torch.distributed` process group over **gloo** (PyTorch's CPU backend, talking over 127.0.0.1), calls
# `fn(rank, world_size)` on each and returns their results as a list. The processes are *forked* from
# this kernel, so a function defined in a notebook cell works. The timeout matters: if a rank waits
# forever (a deadlock) or dies, every rank is stopped and you get an error that names it, instead of a
# hung notebook.
#
# ### 7.1 gloo's built-in all-reduce on 2 ranks

# %%
def hello_all_reduce(rank, world_size):
    x = torch.full((4,), float(rank + 1))   # rank 0 holds 1s, rank 1 holds 2s
    dist.all_reduce(x)                      # sum over all ranks, in place
    return x.tolist()


lab.run(hello_all_reduce, ranks=2, timeout=30)

# %% [markdown]
# Both ranks end with 1 + 2 = 3 everywhere. On GPUs the same line runs on NCCL: `dist.all_reduce` is the
# call [DDP](../docs/glossary.md#ddp) makes for every gradient bucket (chapter 06).
#
# ### 7.2 Exercise 04.4: write a ring all-reduce (3 points)
#
# Complete `my_ring_all_reduce(tensor, rank, world_size)`. It must leave in `tensor`, **in place**, the sum
# of all ranks' tensors, as `dist.all_reduce` does, using only point-to-point messages. You have:
# - `dist.isend(t, dst)` and `dist.irecv(t, src)`: start sending tensor `t` to rank `dst` / receiving into
#   `t` from rank `src`, and return at once with a handle; `handle.wait()` blocks until it is done. The
#   tensors must be contiguous (slices of a 1-D tensor are);
# - `lab.algorithms.chunk_bounds(numel, parts)`: the `[start, stop)` of each of `parts` chunks (the first
#   `numel % parts` chunks get one extra element);
# - the chunk order of section 3: reduce-scatter step $s$ sends chunk $(r-s-1) \bmod p$ to the right and adds
#   the received chunk $(r-s-2) \bmod p$; all-gather step $s$ sends chunk $(r-s) \bmod p$ and stores chunk
#   $(r-s-1) \bmod p$.
#
# Pitfalls the checker looks for:
# - **deadlock**: if every rank first makes a *blocking* `dist.send` and only then a `dist.recv`, large
#   messages wait for each other forever. Post the `irecv` and the `isend` of a step together, then wait on
#   both;
# - **uneven and tiny tensors**: 7 elements on 3 ranks, or 1 element on 2 ranks (some chunks are empty:
#   skip sending and receiving those, both sides know their sizes);
# - **dtypes**: the checker uses float32, float64, int32 and int64: receive into a buffer of the input's
#   dtype;
# - **in place**: work on `tensor.view(-1)` and write into it; returning a new tensor does not count.
#
# The checker runs your function on 2 and 3 ranks over 40 size and dtype cases and compares with
# `dist.all_reduce`. Every run has a timeout, so a deadlock is reported, not hung.

# %% exercise="04.4"
def my_ring_all_reduce(tensor, rank, world_size):
    """Sum `tensor` over all ranks, in place: ring reduce-scatter, then ring all-gather."""
    p = world_size
    flat = tensor.view(-1)
    bounds = lab.algorithms.chunk_bounds(flat.numel(), p)
    right, left = (rank + 1) % p, (rank - 1) % p

    def ring_step(send_chunk, recv_chunk, add):
        (s0, s1), (r0, r1) = bounds[send_chunk], bounds[recv_chunk]
        incoming = torch.empty(r1 - r0, dtype=flat.dtype) if add else flat[r0:r1]
        pending = []
        if r1 > r0:
            pending.append(dist.irecv(incoming, left))
        if s1 > s0:
            pending.append(dist.isend(flat[s0:s1], right))
        for request in pending:
            request.wait()
        if add and r1 > r0:
            flat[r0:r1] += incoming

    for s in range(p - 1):   # reduce-scatter: rank r ends with chunk r summed
        ring_step((rank - s - 1) % p, (rank - s - 2) % p, add=True)
    for s in range(p - 1):   # all-gather: pass the finished chunks around
        ring_step((rank - s) % p, (rank - s - 1) % p, add=False)


# %% [markdown]
# ### 7.3 Race: your ring, the library's ring, gloo's built-in
#
# `lab.bench.race` first grades your function with the checker above (`course_lib.exercises.ring.check_ring`), then
# times it with the benchmark of section 7.5 (`lab.bench`), beside gloo's built-in all-reduce
# (`builtin`) and the library's `ring_all_reduce`, once with its transfers done as gloo collectives
# (`ring`) and once with `isend`/`irecv` waited on from Python, as yours are (`ring, p2p`; section 7.4
# says why the two differ), interleaved so that a noisy neighbour slows all of them alike. Each time is the median operation of the slowest rank, and
# `#wrong` counts the elements that differ from the exact sum, as in nccl-tests. If your ring is not
# written yet, or wrong, it is left out with a note, and the rest of the race still runs.

# %%
race = lab.bench.race(my_ring_all_reduce, sizes=("1M", "16M", "64M"), ranks=2, iters=5)
print(race)
for name in ("yours", "ring", "ring, p2p"):
    ratios = race.ratio(name)
    if ratios:
        print(f"{name:>17}: throughput / gloo's = "
              + ", ".join(f"{units.format_bytes(size, binary=True)} {r:.2f}" for size, r in sorted(ratios.items())))

# %% [markdown]
# How to read it: the lines under the table divide each algorithm's throughput (busbw) by gloo's at the
# same size; 1.00 means as fast, 0.50 half as fast. On a laptop two ranks share the cores with the
# operating system, so two runs of the same code can differ by tens of percent, and by more at the
# smaller sizes: run the cell twice before you believe a ranking.
#
# ### 7.4 What makes the library's ring fast
#
# Open `course_lib/lab/algorithms.py` (`ring_all_reduce` and `ring_exchange`). Three things separate it
# from a straightforward ring like the one you wrote:
#
# 1. **The waiting happens inside gloo, not in Python.** Your ring waits on each `irecv` from Python:
#    the Python thread goes to sleep, and gloo's network thread must wake it when the bytes land. On a
#    busy virtual machine a sleeping thread can take milliseconds to get a core back, and a ring pays
#    that at every step. The library does each ring step as one gloo collective instead: an
#    all-to-all in which only the neighbour's counts are non-zero (`ring_exchange`), so gloo's own
#    threads move the bytes and wait for them (`ring` against `ring, p2p` in the race above). Measured
#    with `benchmarks/lab_ring_vs_gloo.py` on the
#    2-core virtual machine this course was written on (2 ranks, shared with other jobs, load average
#    10-14): with `isend`/`irecv` the library's ring reached 0.04x gloo's throughput at 64 KiB, 0.12x at
#    1 MiB and 0.84-0.87x at 16-64 MiB; as collectives, in three runs, 0.59-0.63x at 64 KiB, 0.46-0.79x
#    at 1 MiB and 0.86-1.21x at 16-64 MiB.
# 2. **Pipelined sub-chunks.** Each step's chunk is cut into up to `pipeline` pieces (never smaller than the
#    size printed below), and the rank adds piece $k$ as soon as it arrives, while piece $k+1$ is still on
#    its way; the adding ($\gamma$ in the model) hides behind the transfer instead of adding to it. A
#    piece of the rank's own chunk starts its all-gather as soon as it is summed, without waiting for the
#    rest of the reduce-scatter. Pieces are not made smaller than 1 MiB because every collective call
#    has a fixed cost: with 256 KiB pieces a 4 MiB all-reduce made 16 calls and reached 0.70x gloo; with
#    1 MiB pieces, 4 calls and 0.94-1.57x (three runs).
# 3. **A preallocated receive buffer.** The reduce-scatter receives into a scratch buffer that is kept
#    between calls. Allocating a fresh buffer at every step (the simplest ring calls `torch.empty` in every
#    step) can hand back new pages from the operating system, and touching a fresh page the first time
#    costs a page fault, which for large chunks can cost as much as copying the data.
#
# **Why it still trails gloo below about 1 MiB.** On 2 ranks both all-reduces are the same two ring
# steps. gloo runs both inside one call, on its own thread; the library makes two calls from Python with
# the add in between, and each call hands the work to gloo's thread and waits for it to come back. That
# hand-off costs about 50-70 µs even on one idle rank (an all-to-all of 16 floats, `dist.all_reduce`
# likewise) and more on a busy machine, while a 64 KiB step moves its 32 KiB in a few tens of µs. So below
# about 1 MiB the library pays one extra hand-off per all-reduce that gloo does not: the goal of 0.8x at
# 64 KiB-1 MiB was not reached on that machine (0.59-0.63x, 0.60-0.68x and 0.46-0.79x at 64 KiB, 256 KiB
# and 1 MiB in three runs). From 4 MiB up, where the bytes dominate, the ring matched or beat gloo in most
# runs (0.86-1.57x); single runs moved by a third either way, because the two ranks shared two cores with
# other jobs. Run the benchmark twice before you trust one ratio.
#
# On GPUs, NCCL does the same three things in its own way: one kernel runs the whole ring and polls for
# data instead of sleeping, keeps several chunks in flight per channel, runs many channels (rings) in
# parallel, and uses fixed, preregistered buffers.

# %%
print("smallest pipelined piece:", units.format_bytes(lab.algorithms.MIN_PIECE_BYTES, binary=True))

# %% [markdown]
# ### 7.5 A benchmark table in nccl-tests form
#
# `lab.bench.sweep` measures sizes and algorithms and prints the table nccl-tests prints, with the same
# definitions of algbw and busbw (GB/s, per direction). With 2 ranks the all-reduce factor $2\frac{p-1}{p}$
# is 1, so busbw equals algbw. `#wrong` counts elements that differ from the exact sum (inputs are small
# integers, so every algorithm's result is exact).
#
# Two times per row: `time(us)` is the **median** operation (bandwidths use it) and `mean(us)` the mean,
# which is what nccl-tests prints. Small operations run back to back in batches and each one is timed;
# on a shared or virtual machine one operation in twenty may stall for milliseconds while the operating
# system runs something else, which pulls the mean up and leaves the median alone. When the two columns
# differ by 2x, you are looking at the machine's scheduler, not at the link. On a cluster the same
# stalls come from stragglers, and a synchronous training step waits for the slowest rank every time.

# %%
sweep = lab.bench.sweep(sizes=("64K", "1M", "16M"), ranks=(2,), algorithms=("builtin", "ring"), iters=5,
                        timeout=120)
print(sweep)
print({units.format_bytes(size, binary=True): round(ratio, 2) for size, ratio in sweep.ratio("ring").items()},
      "<- library ring busbw / gloo busbw")

# %% [markdown]
# The same benchmark runs from a shell, and under `torchrun` on real GPUs with NCCL, so you can put your
# cluster's numbers next to these:
#
# ```
# python -m course_lib.lab.bench --ranks 2,4 -b 64K -e 64M -f 4
# torchrun --standalone --nproc_per_node=8 -m course_lib.lab.bench --backend nccl -b 1M -e 1G -f 2
# ```
#
# ## 8. Calibrate the model on this machine
#
# `lab.calibrate.calibrate()` measures two ranks in two ways, for sizes from 1 KiB to 16 MiB:
# - **ping-pong**: one message at a time, half the round trip;
# - **exchange**: both ranks send and receive at once, which is what every ring step does;
#
# and fits $t = \alpha + n\beta$ to each (minimising the *relative* error, so small and large sizes count
# alike). It also times adding a received buffer into another: $\gamma$, seconds per byte. The ring model
# uses the exchange fit.

# %%
cal = lab.calibrate.calibrate()
print("exchange fit: ", cal.exchange)
print("ping-pong fit:", cal.pingpong)
print(f"gamma (adding) = {cal.gamma * 1e9:.3g} ns/byte; cores = {cal.cores}")
print(f"adding is {cal.gamma / (cal.exchange.beta + cal.gamma):.0%} of a reduce-scatter step's per-byte cost "
      "(the most that pipelining can hide)")

# %% [markdown]
# Here "the link" is the operating system copying bytes between two processes through memory, done by the
# same CPU cores that run the ranks. If the exchange bandwidth comes out below the ping-pong bandwidth,
# that is why: two directions at once share the cores and memory bandwidth, unlike the two directions of
# an NVLink or InfiniBand port.
#
# **Exercise 04.5** (2 points). *Predict, then measure.* With the pure alpha-beta ring model of section 4
# (no $\gamma$, no contention), predict the time, in **seconds**, of an all-reduce of **4 MiB**
# (4,194,304 bytes) on **4 ranks**, with $\alpha$ = 200 µs and $\beta$ = 1 ns/byte (1 GB/s per direction):
# round numbers of the order a laptop's calibration finds. Store it in `predicted_ring_s`. The next section
# measures that all-reduce on this machine.

# %% exercise="04.5"
alpha_given, beta_given, n_given, p_given = 200e-6, 1e-9, 4 * 2**20, 4
predicted_ring_s = 2 * (p_given - 1) * alpha_given + 2 * (p_given - 1) / p_given * n_given * beta_given

# %% [markdown]
# ## 9. Where the model stops being true
#
# ### 9.1 More ranks than cores
#
# Now measure gloo's all-reduce on 2 ranks **and on 4 ranks**, in the same run. On a 2-core machine 4 ranks
# must take turns on the cores. The calibration's model accounts for that with a *stretch factor*
# $\max(1, \text{ranks}/\text{cores})$ that multiplies every term: the crudest possible correction.

# %%
rows = lab.bench.sweep(sizes=("64K", "1M", "4M", "16M"), ranks=(2, 4), algorithms=("builtin",), iters=7,
                       timeout=120).rows
print(lab.bench.format_rows(rows))
print()
print("\n".join(cl.compare_prediction(predicted_ring_s, rows, 4 * 2**20, 4, cal)))

# %% [markdown]
# Your prediction used round values of $\alpha$ and $\beta$ and assumed every rank has a core of its own.
# "The model with this machine's fit" uses the calibrated $\alpha$, $\beta$ and $\gamma$ and multiplies by
# the stretch. The two ratios on the last line say how far the pure alpha-beta prediction is from the
# measurement, without and with the contention correction. (Not answered yet? Solve exercise 04.5 and rerun
# the cell.)
#
# Measured points over the calibrated model's curves (one colour per rank count; the legend gives each
# curve's stretch):

# %%
fig, ax = plt.subplots(figsize=(7.5, 4.5))
cal.plot(ax, rows, algorithms=("builtin",))
ax.set_title(f"gloo all-reduce on this machine ({cal.cores} cores): measured vs the calibrated model", fontsize=10)
plt.show()

# %% [markdown]
# The fit above was measured a minute before the all-reduces, and on a shared machine the same exchange
# can take 30% longer a minute later. `lab.calibrate.measure_same_run` removes that source of error: in
# every repetition it times the all-reduce **and**, at the same size, the pieces of its ring: one ring
# step (every rank sends $n/p$ bytes to the next), the fixed cost of calling a collective (an all-reduce of
# an empty tensor, about 50-150 µs here) and the add. Two predictions follow, per size:
# - **fit**: the call cost, plus the straight line $\alpha + n\beta$ through this run's steps, plus $\gamma$;
# - **steps**: the call cost, plus $2(p-1)$ measured steps, plus $(p-1)$ measured adds, with no line
#   fitted. This tests only the claim that a ring all-reduce *is* $2(p-1)$ steps of $n/p$ bytes.
#
# The steps are timed through gloo's own collective path, as an all-to-all that sends to one neighbour
# only, not with the `isend`/`irecv` of section 7.2 (exercise 04.4). On a virtual machine a third or more of those Python-level
# waits stall for milliseconds (a sleeping thread is slow to wake), while gloo's all-reduce waits inside
# C++ and rarely does; measured the Python way, the step is a poor stand-in for what the all-reduce does.

# %%
same = lab.calibrate.measure_same_run(sizes=("64K", "1M", "16M"), ranks=2, algorithms=("builtin", "ring"),
                                      iters=5, timeout=120)
print(same.report("builtin"))
print()
print(same.at(0.25).report("builtin"))

# %% [markdown]
# The second table is the same run summarised by the 25th percentile of each operation (see below).
# Read the two columns side by side (your numbers move from run to run). The **steps** column is usually
# the closer one, within 25% at every size from 64 KiB to 64 MiB on the 2-core machine this course was
# written on (`benchmarks/lab_calibration.py` runs that sweep at 2 and 4 ranks). Where the straight line
# misses, usually near 1 MiB and by 30-40%, it is because a step's time is not a straight line in $n$:
# a 512 KiB step still runs in the CPU caches, while the slope $\beta$ is set by the large steps, whose
# copies go out to main memory. gloo also cuts each step into segments of at most 1 MiB and keeps two in
# flight. The size where **fit** misses most marks the bend in your machine's step curve.
#
# Two things about *measuring* on a shared or virtual machine, both visible in `same`:
# - **Stalls.** Every operation's time is kept (`same.rows[0]["times_s"]`). On a virtual machine some of
#   them take milliseconds longer, when a waiting thread is slow to be woken. The model describes the
#   operation without that wait. `same.at(0.25)` summarises the run by the 25th percentile of every
#   operation instead of the median: the typical *undisturbed* operation. If the two reports differ much,
#   your machine stalls often.
# - **Idle cores are slow to wake.** On the 2-core virtual machine this course was written on, gloo's
#   1 MiB all-reduce took a median of 0.85-1.1 ms when the hand-written ring ran in the same repetitions,
#   and 1.1-2.5 ms when the built-in ran alone: with nothing else to do between operations the cores go idle,
#   and the host is slow to give them back. Latency-bound operations that wait often suffer most. This is
#   one reason NCCL and MPI *poll* for a message instead of sleeping until it arrives. The cell above
#   runs both algorithms for that reason, and compares the model with the built-in one.
#
# And the comparison that matters, 4 ranks against 2, per size: how much slower it measured, how much slower
# the model says it should be without contention, and with the stretch:

# %%
over = cl.oversubscription_table(cal, rows, ranks=4, base=2)
print(cl.format_oversubscription(over, ranks=4, base=2, cores=cal.cores))
print()
print("\n".join(cl.oversubscription_lines(over, ranks=4, base=2)))

# %% [markdown]
# What to look for in your numbers (they change from run to run; read them, not this text):
# - **Large messages.** With enough data per step the stretch usually gets the order of magnitude right:
#   two ranks per core means each gets about half the CPU time for its copies and adds. The lines under
#   the table say where your measurement falls.
# - **Small messages.** Here 4 ranks on 2 cores are typically much slower than even the stretched model.
#   Each rank is several threads (Python, gloo's I/O thread, the process group's workers). A ring step
#   cannot finish until the neighbour's message arrives, and the neighbour may not be running: the
#   operating system runs it when its turn comes, which can take longer than sending the whole message.
#   Each of the $2(p-1)$ steps can pay that wait. "Time = stretch × model" assumes the work can be shared
#   out smoothly; waiting for a process that is not running cannot be.
# - **Noise.** Small sizes vary most between runs; the model's $\alpha$, fitted on two ranks, inherits it.
# - **A better contention term.** Stretching *everything* by ranks/cores is too much for large messages:
#   4 ranks' copies share the machine's memory bandwidth better than that. With `ranks=4`,
#   `measure_same_run` also times the ring step with every rank at once, and its **fit** stretches only
#   the latency $\alpha$ by ranks/cores and takes $\beta$ from the slope of those contended steps. On the
#   course's 2-core virtual machine that put 16 MiB and 64 MiB within 0.98-1.12 of the measurement in
#   three runs, where stretching everything gave 1.2-1.6; at 4 MiB it gave 1.16-1.41, and at 64-256 KiB
#   0.44-0.82, where the measured all-reduce itself moved by 30% from run to run. Timing the steps with
#   every rank at once and adding them up (the **steps** column) is worse below 4 MiB (1.4-3.7): a step
#   timed on its own pays a full round of waiting for the scheduler, while inside gloo's all-reduce two
#   segments are always in flight and the waits overlap. Run `benchmarks/lab_calibration.py` to see both.
#
# On GPUs none of this happens (each rank has its own GPU), which is why the model fits published GPU
# measurements better than it fits an oversubscribed laptop (next section). With 4 cores or more the
# stretch is 1: rerun this section there and see how close the two rank counts come to the model.
#
# ### 9.2 Where the model misses published GPU measurements
#
# The course's cost model (`costmodel`, chapters 02-05) is this same alpha-beta ring with NCCL's per-step
# latencies, a fixed launch cost and measured link efficiencies. Against published nccl-tests sweeps on
# 8-GPU nodes (dots), the simple ring model at spec bandwidth (dashed) and the course model (dotted):

# %%
cl.plot_published()
plt.show()
print("\n\n".join(cl.model_failures()))
vrows = [r for r in costmodel.validation_table() if r["collective"] == "all_reduce"]
mid = [r for r in vrows if r["nodes"] == 1 and 2**20 <= r["nbytes"] < 2**27]
multi = [r for r in vrows if r["nodes"] > 1]
glue("mid_worst", max(max(r["ratio"], 1 / r["ratio"]) for r in mid), "{:.1f}x")
glue("mid_cases", len(mid), "{}")
glue("multi_lo", min(r["ratio"] for r in multi), "{:.2f}x")
glue("multi_hi", max(r["ratio"] for r in multi), "{:.2f}x")
glue("multi_cases", len(multi), "{}")
glue("multi_within_2x", sum(1 for r in multi if 0.5 <= r["ratio"] <= 2) / len(multi), "{:.0%}")

# %% [markdown]
# Where the simple model stops being true on GPUs, from the sweeps above and the cost model's own notes:
# 1. **Efficiency.** Measured busbw of an A100 ring levels off well below NVLink's spec; the course model
#    applies a sourced efficiency (`costmodel.efficiency_table()`), the simple model does not.
# 2. **Small messages** are a fixed launch cost plus per-step latencies that differ between machines by
#    a factor of about 3; the model gets the shape, not the exact number.
# 3. **Mid-size messages** (about 1-100 MB): NCCL switches [protocols](../docs/glossary.md#nccl-protocols)
#    (LL, LL128, Simple) and the number of channels with the size. The simple ring model knows neither; the course
#    model picks both as NCCL's own tables do (chapter 05), and its {{mid_cases}} published one-node cases from 1 to
#    128 MiB lie within {{mid_worst}} of the measurements.
# 4. **In-network reduction** (NVLS) lifts busbw *above* the per-direction line rate: the lower bound of
#    section 4 assumes the ranks add, and here the switch does.
# 5. **Across nodes**, NCCL's choice of algorithm (its tree on two nodes sends half the data over the
#    network) and [NIC](../docs/glossary.md#nic) placement decide: over the {{multi_cases}} published multi-node all-reduces the course model
#    predicts from {{multi_lo}} to {{multi_hi}} the measured busbw, {{multi_within_2x}} of them within a factor of two
#    (chapter 05 says where and why).
#
# ## Check your understanding
# 1. Why does the naive (parameter-server) all-reduce get slower with every rank you add, while the ring
#    does not (for large messages)?
#
# <details><summary>Answer</summary>
#
# Rank 0 must receive $(p-1)$ buffers and send $(p-1)$ back: its link carries $2(p-1)\,n$ bytes, growing
# with $p$. In the ring every rank sends $2\frac{p-1}{p}n < 2n$ bytes whatever $p$, and all links work at once;
# only its latency term, $2(p-1)\alpha$, grows with $p$.
# </details>
#
# 2. After the reduce-scatter half of a ring all-reduce on 8 ranks, what does rank 5 hold?
#
# <details><summary>Answer</summary>
#
# One chunk, 1/8 of the buffer, summed over all 8 ranks (in the library's order, chunk 5); its other
# chunks hold partial sums that the all-gather will overwrite. That is exactly a reduce-scatter.
# </details>
#
# 3. An nccl-tests all-reduce on 8 GPUs reports algbw 200 GB/s. What busbw does it print, and why does
#    NVIDIA recommend comparing busbw, not algbw, with the link rate?
#
# <details><summary>Answer</summary>
#
# busbw = 200 × 2 × 7/8 = 350 GB/s. algbw depends on the rank count (each rank moves $2\frac{p-1}{p}$
# buffers), busbw does not: for a bandwidth-optimal algorithm it equals the rate each link carries per
# direction, so it compares directly with the link's per-direction spec.
# </details>
#
# 4. A vendor sheet says "1.8 TB/s NVLink" for a GPU. What is the fastest an 8-GPU all-reduce of 10 GB can
#    be, without in-network reduction?
#
# <details><summary>Answer</summary>
#
# 1.8 TB/s is bidirectional: 900 GB/s per direction. $2 \cdot \frac{7}{8} \cdot 10\text{ GB} / 900\text{ GB/s}
# \approx 19.4$ ms. With 1.8 TB/s plugged in you would get 9.7 ms, which no send/receive algorithm can reach.
# </details>
#
# 5. On a 2-core laptop you benchmark 8 ranks, and small all-reduces come out far slower than the model
#    with its stretch of $8/2 = 4$. Does that tell you how 8 GPUs would behave?
#
# <details><summary>Answer</summary>
#
# No. The measurement is dominated by processes waiting for the operating system to run them, which does
# not happen when every rank has its own GPU. Calibrate $\alpha$ and $\beta$ where each rank has its own
# core (or GPU), or compare with published measurements.
# </details>
#
# ## Score yourself
# `checks.check_all(globals(), chapter="04")` scores every exercise of the notebook without showing any
# answer.

# %%
_ = checks.check_all(globals(), chapter="04")

# %% [markdown]
# ## Takeaways
# - Six collectives carry training's traffic; **all-reduce = reduce-scatter + all-gather**, and all-to-all
#   reduces nothing.
# - **Naive** all-reduces funnel everything through one rank; **trees** and **recursive doubling** save
#   latency steps and pay in bytes; **ring** and **halving-doubling** move the minimum number of bytes.
# - The **lower bound** is $2\frac{p-1}{p}\cdot\frac{n}{B}$ with $B$ **per direction**: 1 GB on 8 H100s takes
#   at least 3.89 ms, not half of it. The ring meets it and pays $2(p-1)\alpha$ in latency.
# - **algbw** = size / time; **busbw** = algbw × $2\frac{p-1}{p}$ for all-reduce, comparable with the
#   per-direction link rate. busbw above it means in-network reduction, not a faster link.
# - A ring all-reduce is a short loop of `isend`/`irecv`; a fast one waits inside the library, pipelines
#   sub-chunks and reuses its buffers.
# - On a CPU the alpha-beta model fits two ranks roughly, best for large messages; with more ranks than
#   cores it breaks, most for small messages, because ranks wait for the scheduler. On GPUs it misses for
#   small and mid-size messages, in-network reduction and multi-node algorithm choices.
#
# ## Further reading
# - NVIDIA nccl-tests, *Performance* (the definitions of algbw and busbw): https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
# - R. Thakur, R. Rabenseifner, W. Gropp, *Optimization of Collective Communication Operations in MPICH*,
#   International Journal of High Performance Computing Applications 19(1), 2005 (ring, recursive doubling,
#   halving-doubling, their alpha-beta-gamma costs): https://doi.org/10.1177/1094342005051521
# - P. Patarasuk, X. Yuan, *Bandwidth optimal all-reduce algorithms for clusters of workstations*, Journal of
#   Parallel and Distributed Computing 69(2), 2009 (the lower bound; a ring-based algorithm meets it, and
#   butterfly-like algorithms suffer contention on real clusters):
#   https://doi.org/10.1016/j.jpdc.2008.09.002
# - NVIDIA, *NCCL user guide: collective operations*: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/collectives.html
# - PyTorch, *Writing distributed applications with PyTorch* (point-to-point and collectives with gloo):
#   https://docs.pytorch.org/tutorials/intermediate/dist_tuto.html
# - Every measurement in this chapter cites a source id of the course bibliography, `course_lib/data/sources.json`: `datafiles.source(id)` (in `course_lib.datafiles`) gives its title, URL, publisher and year.
