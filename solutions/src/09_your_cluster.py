# %% [markdown]
# # 09 · Your cluster: read it, diagnose it, predict it
#
# **Time:** about 60 minutes. **Prerequisites:** chapters 01-05: PCIe paths and sockets (01), NVLink (02),
# NVSwitch (03), busbw and the ring (04), InfiniBand, GPUDirect RDMA and rails (05).
#
# **After this chapter you can**
# - read `nvidia-smi topo -m` and choose tensor-parallel groups and GPU–NIC pairs from it;
# - read an `NCCL_DEBUG=INFO` log line by line: version, ranks, network, transports, GPUDirect RDMA;
# - diagnose four failures from real, published outputs, one of them a run that crashed, and say what to
#   run next;
# - describe a machine the catalog does not know in a small TOML file, predict its all-reduce, and
#   compare the prediction with the machine's own nccl-tests output.
#
# Everything here runs on outputs that ship with the course (`course_lib/data/samples`, each with the URL
# it was published at). At the end, the same tools run on **your** machine's `nvidia-smi` and `ibstat`
# when they exist; without them nothing fails.
#
# Conventions as always: **1 GB = 10⁹ bytes**, **1 Gb/s = 10⁹ bits/s**, every bandwidth says *per
# direction* or *bidirectional*.
#
# Terms: a word in **bold** is defined where it stands; every other term the course uses is in the
# [glossary](../docs/glossary.md).

# %%
# %matplotlib inline
from course_lib import checks, cli_predict, costmodel, diagnostics, hardware, prose, systemfile, units
from course_lib.cli_inspect import format_report, inspect_text, inspect_texts
from course_lib.diagnostics import acs, local, nccl_tests, topo

glue = prose.Glue("09")  # numbers the text quotes from the cells

# %% [markdown]
# ## 1. The topology matrix: who talks to whom, over what
#
# `nvidia-smi topo -m` prints one row and one column per GPU (and per NIC). Each cell names the **path**
# between two devices, from best to worst:
#
# | cell | path | what it means for GPU peer-to-peer |
# |---|---|---|
# | `NV#` | `#` bonded NVLinks | direct NVLink (chapter 02), or every pair NV# behind an NVSwitch (chapter 03) |
# | `PIX` | one PCIe switch | the fastest PCIe path: stays below one switch |
# | `PXB` | several PCIe switches | still below the CPU, crosses switches |
# | `PHB` | a CPU's PCIe host bridge | goes up into the CPU and back down |
# | `NODE` | between host bridges of one socket | crosses inside one CPU |
# | `SYS` | across CPU sockets (UPI, Infinity Fabric) | the slowest path; P2P is often refused here |
#
# The `CPU Affinity` and `NUMA Affinity` columns say which cores and memory node are close to each GPU.
# The parser reads a matrix into counts and groups. First a 5-GPU workstation (shipped sample, published in
# a GitHub issue; see `diagnostics.sample_sources()` for the URL):

# %%
work = diagnostics.sample_text("topo_5gpu_workstation_sys_node_phb.txt")
print(work)
t5 = topo.parse(work)
print("GPU pairs by path:", t5.pair_counts())

# %% [markdown]
# **Tensor parallelism** all-reduces activations in every layer (chapter 07): its group should be the GPUs
# with the best paths between them. A group with a `SYS` pair pays the socket link in every layer, so the
# first rule is to keep a TP group on one socket; inside it, the closest pairs (`PIX` before `PHB` before
# `NODE`) make the best 2-way groups. Exercise 09.1 asks you to apply this to the matrix above.
#
# Now a DGX A100 as published, with its NIC legend: eight GPUs on NVSwitch (every pair `NV12`) and ten
# Mellanox NICs. What matters for the network is which NIC each GPU reaches without crossing the CPU
# (chapter 05: GPUDirect RDMA wants the NIC under the GPU's PCIe switch).

# %%
dgx_text = diagnostics.sample_text("topo_dgx_a100_nic_legend.txt")
dgx = topo.parse(dgx_text)
print("NICs:", ", ".join(dgx.nics))
for gpu in range(len(dgx.gpus)):
    path, nics = dgx.nearest_nics(gpu)
    print(f"GPU{gpu}: nearest NICs {', '.join(nics)} ({path})")
print()
print(format_report(inspect_text(dgx_text, "DGX A100 topo -m")))

# %% [markdown]
# Each pair of GPUs shares a PCIe switch (`PXB`) with two NICs: those are its **rails**. NCCL finds them by
# itself, but a job launcher that pins `NCCL_IB_HCA` or binds ranks to the wrong NUMA node can undo it.
#
# ## 2. An NCCL log, line by line
#
# Set `NCCL_DEBUG=INFO` (and, for more, `NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH`) and NCCL prints how it set
# itself up. The sample below is rank 0 of an 8-GPU H100-class node with NVSwitch and eight InfiniBand
# ports, published in NVIDIA/nccl issue 1584 (the reporter removed the host:pid:tid prefixes). The loop
# labels the lines that answer the questions you ask of every log:

# %%
MEANINGS = [  # (text in the line, what it tells you)
    ("NCCL version", "NCCL version and the CUDA it was built for"),
    ("Bootstrap timings", "how long the start-up exchange of addresses took"),
    ("Bootstrap", "the interface used only to exchange addresses at start-up, not for data"),
    ("collnet plugin", "in-network reduction over InfiniBand (SHARP) is available to NCCL"),
    ("net plugin", "a network plugin was loaded (here NVIDIA's RDMA plugin from HPC-X)"),
    ("NET/IB : Using", "the RDMA devices NCCL will use, with port, link layer (IB or RoCE) and SHARP"),
    ("Using network", "the network transport chosen for traffic between nodes"),
    ("nranks", "this communicator's size and this process's rank and GPU"),
    ("Setting affinity", "CPU cores this rank's threads were bound to (the GPU's NUMA node)"),
    ("NVLS multicast", "NVLink SHARP (in-switch reduction, chapter 03) is available"),
]
log_text = diagnostics.sample_text("nccl_nvls_ib_sharp.log")
for no, line in enumerate(log_text.splitlines(), start=1):
    meaning = next((m for key, m in MEANINGS if key in line), None)
    if meaning:
        print(f"{no:>2}  {line[:90]}\n    -> {meaning}")
print()
print(format_report(inspect_text(log_text, "NVLS + IB log")))

# %% [markdown]
# Later in a log come the **channels**: `Channel 03/0 : 1[1] -> 0[0] via P2P/IPC/read` says that on
# channel 3 rank 1 sends to rank 0 through CUDA IPC peer-to-peer. The transport names to know:
# `P2P/...` (GPU to GPU over NVLink or PCIe), `SHM` (through host shared memory: slower, used when P2P is
# not possible), `NET/IB` (RDMA NIC), `NET/Socket` (TCP), `NET/OFI` (libfabric, e.g. AWS EFA), `NVLS`,
# `CollNet`. `inspect` counts them for you:

# %%
for name in ("nccl_socket_p2p_ipc_channels.log", "nccl_p2p_cumem_channels.log", "nccl_ofi_aws_efa.log"):
    print(format_report(inspect_text(diagnostics.sample_text(name), name)), end="\n\n")

# %% [markdown]
# ## 3. Four failure drills
#
# Each drill is a real output from a real machine. Read it first and write your diagnosis in one line in
# the answer cell under it (not graded: it is for you); then run the `inspect` cell and compare.
#
# **Drill A.** A cloud VM with 8 GPUs (NVIDIA/nccl issue 1267) prints this at start-up:

# %%
fallback = diagnostics.sample_text("nccl_log_gcp_vm.log")
print(fallback)

# %% [markdown]
# **Your diagnosis:** which network will NCCL use between nodes, and why? What will that cost?
#
# <details><summary>A hint, if you are stuck</summary>
#
# Look for the lines that start with `NET/`: which transport found nothing, and which one was chosen?
# </details>

# %%
my_diagnosis_a = ""  # one line, in your words

# %% [markdown]
# Now `inspect`'s diagnosis. No RDMA device was found, so NCCL took `NET/Socket` over the VM's Ethernet interface. Every byte between
# nodes now goes through the kernel's TCP stack, copied through host memory by CPU threads. How bad is it?
# At best the port's line rate; compare the prediction for two DGX H100 nodes on eight NDR ports with the
# same nodes limited to one 100 Gb/s port (ring algorithm, as with `NCCL_ALGO=RING`, so that every byte
# crosses the network):

# %%
print(format_report(inspect_text(fallback, "socket fallback")))
h100 = hardware.system("dgx-h100")
rdma = costmodel.predict("all_reduce", 2**30, h100, nodes=2, algorithm="ring")
tcp = costmodel.predict("all_reduce", 2**30, h100.variant(nics_per_node=1, nic_gbit_s=100), nodes=2, algorithm="ring")
print(f"\n2 x DGX H100, 1 GiB all-reduce busbw: 8 x NDR {rdma.busbw[0] / units.GB:.0f} GB/s; "
      f"one 100 Gb/s port {tcp.busbw[0] / units.GB:.1f} GB/s (an upper bound: TCP rarely reaches line rate)")

# %% [markdown]
# The fix is on the system side: load the RDMA stack, or the cloud's NCCL network plugin (aws-ofi-nccl on
# AWS EFA, GPUDirect-TCPX(O) on Google Cloud A3), and check the next log says `Using network IB` (or the
# plugin's name) instead of `Socket`.
#
# **Drill B.** PCIe Access Control Services (ACS) let a bridge force traffic between two devices below it
# up to the root complex, where the IOMMU checks it. Good for isolating virtual machines; on a bare-metal
# GPU server it sends every GPU-to-GPU write through the CPU, and NCCL's P2P transport slows down, fails
# with errors such as illegal memory accesses, or hangs. The NCCL troubleshooting guide asks for ACS off.
# The reporter of NVIDIA/nccl issue 629, whose job died with an illegal memory access, posted the
# `ACSCtl` lines of `lspci -vvv`:

# %%
acs_text = diagnostics.sample_text("lspci_acsctl_server.txt")
print(acs_text)

# %% [markdown]
# **Your diagnosis:** does ACS stand in the way of GPU peer-to-peer here? Which of the seven flags decide it?

# %%
my_diagnosis_b = ""  # one line, in your words

# %%
print(format_report(inspect_text(acs_text, "lspci -vvv | grep ACSCtl")))

# %% [markdown]
# `ReqRedir+` and `CmpltRedir+` are the flags that redirect peer requests. On bare metal: disable ACS in
# the BIOS, or clear it on the bridges with `setpci`, or boot with `iommu=pt`; confirm with the log
# (`via P2P/IPC` rather than `via SHM`). `NCCL_P2P_DISABLE=1` makes a hanging job run, slowly, over `SHM`.
#
# **Drill C.** Go back to the DGX A100 matrix of section 1. Which NICs would you keep off the GPUs'
# traffic, and why? Decide before you open the answer.
#
# <details><summary>Answer</summary>
#
# The two NICs that are `SYS` from every GPU (`inspect` named them above). Sending GPU data through them
# crosses the socket link, and GPUDirect RDMA between them and any GPU is slow or refused
# (`NCCL_NET_GDR_LEVEL`, chapter 05). They are the storage and management ports; compute traffic belongs on
# the eight NICs that share a PCIe switch with GPUs.
# </details>
#
# **Drill D: a run that failed.** A Kubernetes data-parallel job died a few minutes in; one worker's log,
# as posted to NVIDIA/nccl issue 1405:

# %%
failed = diagnostics.sample_text("nccl_log_kp_ddp_worker.log")
print(failed)

# %% [markdown]
# **Your diagnosis:** what failed, between which two ends, and what would you run first? (`status=12` is an
# InfiniBand work-completion status; the `-> 6` lines are NCCL's error code climbing its call stack.)

# %%
my_diagnosis_d = ""  # one line, in your words

# %%
print(format_report(inspect_text(failed, "worker log")))

# %% [markdown]
# Status 12 is `IBV_WC_RETRY_EXC_ERR`: the NIC resent and gave up, because the two NICs cannot reach each
# other or the path drops packets, and NCCL reports it as error 6 (a remote error). The GIDs are IPv6 GIDs
# (RoCE v2), so the first suspects are the GID index (`NCCL_IB_GID_INDEX`), the route between the two
# subnets and the MTU; `ibv_rc_pingpong` between the two hosts tells a broken path from a congested one.
# A run can also fail before it measures anything; nccl-tests then prints its header and stops, and
# `inspect` says so and names the last thing it printed:

# %%
print(format_report(inspect_text(diagnostics.sample_text("nccl_tests_4gpu_docker.txt"), "all_reduce_perf in Docker")))

# %% [markdown]
#
# ## 4. Describe a machine in a file, and predict it
#
# The catalog (`python -m course_lib systems`) knows DGX systems, cloud instances (AWS p4d and p5 on EFA,
# Azure ND H100 v5, Google A3 Mega), PCIe boxes (L40S, H100 NVL), GH200 on Slingshot, MI300X and B300.
# For anything else, write a small TOML file: GPU, GPU link, PCIe, NICs (their fabric, rate and count), the
# number of nodes. `systemfile.load_system(path)` reads it; errors name the field and its line. The course
# ships one: four GeForce RTX 4090 cards, each in its own PCIe Gen4 x16 slot, with peer-to-peer enabled by
# a patched driver, a machine that was benchmarked in public (tinygrad/open-gpu-kernel-modules issue 36).

# %%
from pathlib import Path

SYSTEMS = Path(hardware.__file__).parent / "data" / "systems"
box_file = SYSTEMS / "rtx4090x4_p2p.toml"
print(box_file.read_text())
box = systemfile.load_system(box_file)
print(hardware.system_summary(box))

# %% [markdown]
# Predict it the way nccl-tests would print it (`python -m course_lib predict all_reduce --system-file
# ...` prints the same):

# %%
print(cli_predict.format_table(costmodel.predict("all_reduce", cli_predict.sweep("256M", "1G"), box), system=box))

# %% [markdown]
# A mistake in the file is named by field and line, so you can fix it without guessing:

# %%
import tempfile

with tempfile.TemporaryDirectory() as folder:
    bad = Path(folder) / "bad_system.toml"
    bad.write_text(box_file.read_text().replace("switches = 0", "switches = -1"))
    try:
        systemfile.load_system(bad)
    except ValueError as exc:
        print("ValueError:", str(exc).replace(folder, "..."))

# %% [markdown]
# ## 5. Compare with the machine's own nccl-tests output
#
# The same post gives the `all_reduce_perf` rows measured on that box. `compare` lines them up with the
# prediction (`python -m course_lib compare FILE --system-file ...` prints this table):

# %%
measured_text = (SYSTEMS / "rtx4090x4_p2p_all_reduce_perf.txt").read_text()
measured = nccl_tests.parse_nccl_tests(measured_text)
sizes = [row["size"] for row in measured["rows"]]
predicted = costmodel.predict("all_reduce", sizes, box)
print(f"{'size (B)':>12} {'measured busbw':>15} {'predicted busbw':>16}")
for row, busbw in zip(measured["rows"], predicted.busbw):
    print(f"{row['size']:>12} {row['busbw']:>12.2f} GB/s {busbw / units.GB:>11.2f} GB/s")
glue("box_pcie_link", box.pcie.per_direction / units.GB, "{:.1f} GB/s")
glue("pcie_efficiency", costmodel.efficiency("pcie"), "{:.2f}")

# %% [markdown]
# Scale the box out: how many boxes, how many NIC ports per box (RoCE), how fast each port. The black
# diamonds are the published single-box run; the dashed curve is the model for the cluster you build.

# %%
from course_lib.chapters import your_cluster

your_cluster.scaling_explorer()

# %% [markdown]
# The model (PCIe Gen4 x16 at {{box_pcie_link}} per direction, times the course's PCIe efficiency {{pcie_efficiency}}, chapter 04's
# ring) lands close to the measurement at large sizes (exercise 09.7 asks how close). That is a *good*
# machine. When your own ratio is far above 1,
# the comparison points at what to check: a link trained down (`nvidia-smi -q`, PCIe section), peer-to-peer
# off (section 3, drill B), GPUs on two sockets (`SYS` pairs), or NICs in the wrong place.
#
# ## 6. Your machine
#
# If this machine has `nvidia-smi` or `ibstat`, the cell runs them and inspects the output; if not, it says
# so and the chapter stays on the samples. From a shell the same is `python -m course_lib inspect --local`.

# %%
outputs, notes = local.collect()
for note in notes:
    print("skipped:", note)
if outputs:
    try:
        for report in inspect_texts(outputs):
            print(format_report(report), end="\n\n")
    except ValueError as exc:  # an output format the readers do not know yet
        print("could not read this machine's output:", exc)
else:
    print("No nvidia-smi or ibstat answered here: sections 1-5 ran on the shipped samples.")

# %% [markdown]
# ## Graded exercises
# Write your answer in the answer cell and run the check cell under it. The check says *correct*, gives a
# specific hint, or says *not answered yet*; it never shows the answer.
#
# **Exercise 09.1** (1 point, *design*). On the 5-GPU workstation of section 1, what is the largest
# tensor-parallel group (number of GPUs) that contains no `SYS` pair? Store it in `largest_tp_without_sys`.
# You may use `t5.pairs()` or `t5.socket_groups()`.

# %% exercise="09.1"
largest_tp_without_sys = max(len(group) for group in t5.socket_groups())

# %% [markdown]
# **Exercise 09.2** (1 point, *diagnose*). Read another machine's matrix, one this chapter never showed:
# `diagnostics.sample_text("topo_h800_nv8_nic_legend_clipped.txt")` (8 x H800 with four NICs; the published
# copy is clipped, so the NIC paths are the rows at the bottom). Which GPU has a NIC behind its **own** PCIe
# switch, so that its GPUDirect RDMA traffic never crosses a host bridge? Store the letter in `gpu_with_own_nic`.
#
# - **A.** GPU0
# - **B.** GPU2
# - **C.** GPU3
# - **D.** GPU5

# %% exercise="09.2"
gpu_with_own_nic = "C"

# %% [markdown]
# **Exercise 09.3** (1 point, *diagnose*). Read a log this chapter never inspected,
# `diagnostics.sample_text("nccl_log_16_ranks_mlx5.log")` (16 ranks, NVIDIA/nccl issue 1537), line by line as
# in section 2. What costs this job bandwidth? Store the letter in `roce_log_problem`.
#
# - **A.** NCCL fell back to TCP sockets.
# - **B.** GPUDirect RDMA is disabled: NIC traffic is staged through host memory.
# - **C.** Some NVLinks are down.
# - **D.** The NICs run InfiniBand instead of RoCE.

# %% exercise="09.3"
roce_log_problem = "B"

# %% [markdown]
# **Exercise 09.4** (1 point, *diagnose*). In drill A's log, which line (its number, counting from 1)
# is the first to show that NCCL found no RDMA device? Store it in `fallback_line`.

# %% exercise="09.4"
fallback_line = next(no for no, line in enumerate(fallback.splitlines(), start=1) if "No device found" in line)

# %% [markdown]
# **Exercise 09.5** (1 point, *diagnose*). You fix drill B's server with `setpci`, one flag at a time. How
# many flags must you turn from `+` to `-`, over all bridges, so that no bridge blocks GPU peer-to-peer any
# more (and no flag that does not block it is touched)? Store the count in `redirecting_bridges`.
# `acs.parse(acs_text).bridges` gives each bridge's flags as `(name, on)` pairs.

# %% exercise="09.5"
redirecting_bridges = sum(on for bridge in acs.parse(acs_text).bridges for name, on in bridge.flags
                          if name in acs.REDIRECT)

# %% [markdown]
# **Exercise 09.6** (2 points, *design*). Four of the RTX 4090 boxes of section 4 are to be joined by
# 25 Gb/s Ethernet ports (RoCE). According to the course model (`costmodel.predict`, 1 GiB all-reduce,
# the default algorithm choice), what is the **smallest** number of 25 Gb/s ports per node for which the
# busbw on **4 nodes** is at least **75%** of the single-box busbw? Store it in `ports_per_node`.
# `box.variant(nics_per_node=k, nic_gbit_s=25, fabric="roce")` builds each candidate (the box's own file
# names no RDMA fabric, so say that the new ports run RoCE).

# %% exercise="09.6"
one_box = costmodel.predict("all_reduce", 2**30, box).busbw[0]
ports_per_node = next(k for k in range(1, 65)
                      if costmodel.predict("all_reduce", 2**30,
                                           box.variant(nics_per_node=k, nic_gbit_s=25, fabric="roce"),
                                           nodes=4).busbw[0] >= 0.75 * one_box)

# %% [markdown]
# **Exercise 09.7** (1 point, *predict*). For the 1 GiB row of the published run (section 5), what is the
# ratio of predicted to measured busbw? Store it in `predicted_over_measured`.

# %% exercise="09.7"
row = next(r for r in measured["rows"] if r["size"] == 2**30)
predicted_over_measured = costmodel.predict("all_reduce", 2**30, box).busbw[0] / units.GB / row["busbw"]

# %% [markdown]
# **Exercise 09.8** (2 points, *design*). Describe this cluster in a system file and predict it: **2 nodes**,
# each with **8 L40S** (catalog GPU `l40s`) on **PCIe Gen4 x16**, **2 CPU sockets**, and **2 RoCE ports of
# 100 Gb/s** per node (in `[network]`: fabric `roce`, `gbit_s` and `count`). Write the TOML text into
# `my_cluster_toml`, and store the predicted all-reduce busbw of a **1 GiB** message on **both nodes**, in
# GB/s, in `my_cluster_busbw_gb_s` (`systemfile.load_system` reads a file; `costmodel.predict(...,
# nodes=2)`). The docstring of `course_lib.systemfile` shows every field.

# %% exercise="09.8"
my_cluster_toml = """
[system]
id = "l40s-2x8"
gpu = "l40s"
gpus_per_node = 8
nodes = 2
cpu_sockets = 2
source = "exercise 09.8"

[gpu_link]
kind = "pcie"

[pcie]
generation = 4
lanes_per_gpu = 16

[network]
fabric = "roce"
gbit_s = 100
count = 2
"""
with tempfile.TemporaryDirectory() as scratch:
    toml_path = Path(scratch) / "my_cluster.toml"
    toml_path.write_text(my_cluster_toml)
    my_cluster = systemfile.load_system(toml_path)
my_cluster_busbw_gb_s = costmodel.predict("all_reduce", 2**30, my_cluster, nodes=2).busbw[0] / units.GB

# %% [markdown]
# ## Worked questions
# Try each before opening the answer.
#
# **W1.** The 5-GPU workstation of section 1 runs a 4-way tensor-parallel job on GPU0-3. What does the
# matrix predict, and what would you change?
#
# <details><summary>Answer</summary>
#
# GPU0 is `SYS` from the three others: every TP all-reduce crosses the socket link, and the ring moves at
# the pace of that slowest hop. Use GPU1-4 (`CUDA_VISIBLE_DEVICES=1,2,3,4`) and bind the process to NUMA
# node 0.
# </details>
#
# **W2.** The same two-node job runs at 10 GB/s busbw on one cluster and 45 GB/s on another with the same
# GPUs. What do you read first?
#
# <details><summary>Answer</summary>
#
# The NCCL log of the slow one: `Using network Socket` (drill A), `GPU Direct RDMA Disabled` (exercise 09.3),
# or the `NET/IB : Using` line listing fewer ports than the node has. Then `ibstat` for ports that are down
# or trained to a lower rate.
# </details>
#
# **W3.** Your system file predicts 26 GB/s and nccl-tests measures 9 GB/s on one box. Name two causes
# you can check without new hardware.
#
# <details><summary>Answer</summary>
#
# Peer-to-peer off (the log shows `via SHM`; `lspci` shows ACS redirect on, drill B) and a link trained
# down (`nvidia-smi -q` PCIe section: current generation or width below the maximum under load).
# </details>

# %% [markdown]
# ## Score yourself
# `checks.check_all(globals(), chapter="09")` scores every exercise of the notebook without showing any
# answer.

# %%
_ = checks.check_all(globals(), chapter="09")

# %% [markdown]
# ## Takeaways
# - `nvidia-smi topo -m` names the path between every pair of devices: keep tensor-parallel groups off `SYS`
#   pairs, and pair each GPU with a NIC behind its own PCIe switch (`PIX`/`PXB`) for GPUDirect RDMA.
# - An `NCCL_DEBUG=INFO` log says which network NCCL chose (`Using network ...`), over which ports
#   (`NET/IB : Using ...`), whether GPUDirect RDMA is on, and how each channel moves data (`P2P`, `SHM`,
#   `NET/...`): read it before you read a bandwidth.
# - Falling back to `NET/Socket`, GPUDirect RDMA disabled, and ACS redirect on are silent: the job runs,
#   only slower. A failed run is loud: find the first `WARN`, its two ends and the NCCL error code, then
#   run `ibstat`/`rdma link` and `ibv_rc_pingpong` between those two hosts.
# - `inspect` reads pasted outputs as they are (prompts, colours, launcher lines) and `compare` sets a
#   measured nccl-tests run beside the model; a ratio far from 1 points at the outputs above.
# - A machine the catalog lacks fits in a small TOML file, and the same model then predicts it.

# %% [markdown]
# ## Further reading
# - NVIDIA, *NCCL troubleshooting* (ACS, IOMMU, GPUDirect RDMA, NCCL_DEBUG): https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
# - NVIDIA, *NCCL environment variables* (`NCCL_DEBUG`, `NCCL_IB_HCA`, `NCCL_NET_GDR_LEVEL`, `NCCL_P2P_DISABLE`): https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
# - NVIDIA nccl-tests, *Performance* (algbw and busbw): https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
# - Every sample of this chapter with the URL it was published at: `diagnostics.sample_sources()`; the
#   system file's run: `course_lib/data/systems/SOURCES.json`.
# - The catalog's cloud and PCIe systems with their sources: `python -m course_lib systems --json`.

# %% [markdown]
# ## Questions people keep asking
#
# *(About 15 minutes; read it when one of them is yours.)* The same nine questions come back in the NVIDIA/nccl
# and nccl-tests issue trackers. Each gets one short answer here, with numbers the course's model computes for
# one system, `faq_system`: a DGX H100 unless you set it to a catalog id (`python -m course_lib systems`) or to
# the machine you described in section 4, and rerun the cells. Each cell first says where the course teaches
# the topic and lists the threads where it was asked (`course_lib/data/nccl_questions.json`).

# %%
from course_lib.chapters import nccl_questions as faq

faq_system = hardware.system("dgx-h100")
print(f"{faq_system.name}: {faq_system.gpus_per_node} x {faq_system.gpu.name}, {faq_system.gpu_link.describe()}; "
      f"{faq_system.nics_per_node} x {faq_system.nic.name} per node")

# %% [markdown]
# ### Why is my busbw above the link's line rate?

# %%
print(faq.threads("busbw-above-line-rate"))
fb = units.format_bandwidth
rate = faq.line_rate_answer(faq_system)
if rate["nvls_busbw"] is not None:
    print(f"one node: ring busbw {fb(rate['ring_busbw'])}; NVLS busbw {fb(rate['nvls_busbw'])} (algbw "
          f"{fb(rate['nvls_algbw'])}); the GPU link {fb(rate['link'])}")
print(f"two nodes, one {faq_system.nic.name} each ({fb(rate['nic'])}): tree busbw {fb(rate['two_node_tree_busbw'])}, "
      f"ring {fb(rate['two_node_ring_busbw'])}")
glue("faq_ring", fb(rate["ring_busbw"]), "{}")
glue("faq_nvls", fb(rate["nvls_busbw"]), "{}")
glue("faq_nvls_algbw", fb(rate["nvls_algbw"]), "{}")
glue("faq_link", fb(rate["link"]), "{}")
glue("faq_nic", fb(rate["nic"]), "{}")
glue("faq_tree2", fb(rate["two_node_tree_busbw"]), "{}")
glue("faq_ring2", fb(rate["two_node_ring_busbw"]), "{}")

# %% [markdown]
# busbw is not measured on a wire: it is algbw times $2\frac{p-1}{p}$, the bytes a rank must move *if the ranks
# do the adding*. When a switch adds, that assumption breaks. With NVLS the model gives {{faq_nvls}} of busbw
# (algbw {{faq_nvls_algbw}}) against the NVLink rate of {{faq_link}} and the ring's {{faq_ring}}: read it as the
# link a ring would need for the same time, not as the link's speed (InfiniBand SHARP does the same across
# nodes, chapter 05). The second case is two nodes: NCCL's tree then sends each byte across the network once,
# where the factor assumes almost twice, so with one NIC of {{faq_nic}} per node the tree reports
# {{faq_tree2}} and the ring {{faq_ring2}}. To compare a two-node run with the wire, force `NCCL_ALGO=Ring`.
#
# ### Is 900 GB/s per direction? Is my NIC's 400 in GB/s?

# %%
print(faq.threads("units"))
u = faq.units_answer(faq_system)
print(f"{u['gpu_link']}: {fb(u['gpu_link_bidirectional'], direction='bidirectional')} = {fb(u['gpu_link_per_direction'])}")
print(f"{u['nic']}: {u['nic_gbit_s']:.0f} Gb/s = {fb(u['nic_per_direction'])}; the model's achievable rate {fb(u['nic_achievable'])}")
glue("faq_bidir", fb(u["gpu_link_bidirectional"], direction="bidirectional"), "{}")
glue("faq_per_dir", fb(u["gpu_link_per_direction"]), "{}")
glue("faq_nic_gbit", u["nic_gbit_s"], "{:.0f} Gb/s")
glue("faq_nic_gb", fb(u["nic_per_direction"]), "{}")
glue("faq_nic_achievable", fb(u["nic_achievable"]), "{}")

# %% [markdown]
# The 900 is both directions added: {{faq_bidir}} is {{faq_per_dir}}, and busbw is per direction, so compare with
# the second (chapters 00 and 02). NICs are quoted in bits per second of one direction: {{faq_nic_gbit}} is
# {{faq_nic_gb}} (divide by 8), and NCCL's own people expect a little less from one port; the model uses
# {{faq_nic_achievable}}. nccl-tests prints GB/s, 10⁹ bytes per second.
#
# ### Why is my busbw low?

# %%
print(faq.threads("low-busbw"))
low = faq.low_busbw_answer(faq_system, nodes=2)
fbytes = units.format_bytes
print(f"2 nodes: {fbytes(low['small'], binary=True)} -> {fb(low['small_busbw'])}, "
      f"{fbytes(low['large'], binary=True)} -> {fb(low['large_busbw'])}")
print(f"same nodes over TCP sockets: {fb(low['tcp_busbw'])}; with one NIC per node: {fb(low['one_nic_busbw'])}")
glue("faq_small", fb(low["small_busbw"]), "{}")
glue("faq_large", fb(low["large_busbw"]), "{}")
glue("faq_tcp", fb(low["tcp_busbw"]), "{}")
glue("faq_one_nic", fb(low["one_nic_busbw"]), "{}")

# %% [markdown]
# Check, in this order. **The size**: busbw climbs with the message; on two nodes the model gives {{faq_small}}
# at 8 MiB and {{faq_large}} at 8 GiB, so sweep up to several GiB (`-b 8 -e 8G -f 2`) and read the plateau.
# **The transport**: `Using network Socket` instead of `IB` (drill A) costs the RDMA path; here the model's TCP
# efficiency alone brings it to {{faq_tcp}}, an upper bound. **The NICs**: the `NET/IB : Using` line lists fewer
# ports than the node has, and with one port per node the model gives {{faq_one_nic}}. **GPUDirect RDMA and ACS**:
# two questions down. Then set your run beside the model with `compare` (section 5).
#
# ### How does NCCL choose ring or tree?

# %%
print(faq.threads("ring-or-tree"))
picks = faq.algorithm_answer(faq_system, nodes=4)
for row in picks:
    print(f"{fbytes(row['size'], binary=True):>8}: {row['algorithm']:<4} {row['protocol']:<6} busbw {fb(row['busbw'])}")
first_ring = next(row["size"] for row in picks if row["algorithm"] == "ring")
glue("faq_first_ring", fbytes(first_ring, binary=True), "{}")

# %% [markdown]
# It does not guess and it does not switch at a fixed size. For every call NCCL estimates the time of each
# algorithm with each protocol from its tuning model (a latency per step and a bandwidth per link, from the
# topology it detected) and takes the fastest. The course's model does the same, so on four of these nodes
# the tree, with its few steps, wins small messages and the ring, with its bandwidth, takes over from
# {{faq_first_ring}}. `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING` prints NCCL's table; `NCCL_ALGO` forces a choice,
# for experiments.
#
# ### What is PXN, and why does a rail-optimised network want it?

# %%
print(faq.threads("pxn-rails"))
pxn = faq.pxn_answer(faq_system, nodes=2)
print(f"an all-to-all between two nodes: {pxn['flows_per_node_pair']} GPU-to-GPU flows per node pair, "
      f"{pxn['cross_rail_without_pxn']} of them between different rails; network messages per NIC "
      f"{pxn['messages_per_nic_without_pxn']} without PXN, {pxn['messages_per_nic_with_pxn']} with it")
glue("faq_flows", pxn["flows_per_node_pair"], "{}")
glue("faq_cross_rail", pxn["cross_rail_without_pxn"], "{}")
glue("faq_msgs", pxn["messages_per_nic_without_pxn"], "{}")

# %% [markdown]
# On a rail-optimised fat tree (chapter 05) NIC $k$ of every node sits on leaf switch $k$: GPU $k$ reaches GPU
# $k$ of another node through one leaf, but GPU $i$ reaching GPU $j \ne i$ must cross rails through the spine.
# In an all-to-all between two nodes {{faq_cross_rail}} of the {{faq_flows}} flows are such. **PXN** (PCIe ×
# NVLink) first moves the data over NVLink to the local GPU on the destination's rail, which sends it on its own
# NIC: no flow changes rails, and the messages of all local GPUs for one remote GPU travel together, one
# network message per NIC instead of {{faq_msgs}}. It costs one NVLink hop. The course's all-to-all model
# (chapter 10) assumes PXN.
#
# ### Which RoCE GID index and traffic class should NCCL use?

# %%
print(faq.threads("roce-gid-tc"))
gids = [(0, "fe80::a00:27ff:fe4e:66a1", "v1"), (1, "fe80::a00:27ff:fe4e:66a1", "v2"),
        (2, "::ffff:10.1.0.7", "v1"), (3, "::ffff:10.1.0.7", "v2")]   # a port's GID table, as show_gids lists it
tc = faq.traffic_class(106)
print("NCCL_IB_GID_INDEX =", faq.routable_roce_v2_gid(gids))
print(f"NCCL_IB_TC = {tc['tc']}: DSCP {tc['dscp']}, ECN bits {tc['ecn']} (ECN-capable: {tc['ecn_capable']})")
glue("faq_gid", faq.routable_roce_v2_gid(gids), "{}")
glue("faq_tc", tc["tc"], "{}")
glue("faq_dscp", tc["dscp"], "{}")

# %% [markdown]
# A RoCE port has two GIDs for each IP address, one for RoCE v1 and one for RoCE v2, plus a link-local `fe80::`
# pair that no router forwards. NCCL needs the RoCE v2 GID of the address the nodes route between: in the table
# above, index {{faq_gid}}. The wrong one fails at once, as `ibv_modify_qp` timing out or the completion
# error 12 of drill D. The **traffic class** is the byte NCCL writes into every packet's IP header:
# `NCCL_IB_TC={{faq_tc}}` carries DSCP {{faq_dscp}} in its top six bits and ECN in the bottom two. The switches
# must map that DSCP to their lossless (PFC) or ECN-marked queue; a mismatch shows as drops and retransmissions,
# a slow run rather than a failed one. Test both ends with the same values first: `ib_write_bw -x <GID index>
# --tclass <TC>`.
#
# ### Why is GPUDirect RDMA off, or why does it hang?

# %%
print(faq.threads("gdr-acs"))
close = {gpu: dgx.nearest_nics(gpu) for gpu in range(len(dgx.gpus))}
gdr_pairs = sum(len(nics) for path, nics in close.values() if path in ("PIX", "PXB"))
print(f"DGX A100 of section 1: {gdr_pairs} GPU-NIC pairs share a PCIe switch (PIX/PXB), "
      f"{len(dgx.gpus)} GPUs")
glue("faq_gdr_pairs", gdr_pairs, "{}")

# %% [markdown]
# With GPUDirect RDMA the NIC reads and writes GPU memory across the PCIe switch they share; without it NCCL
# copies every byte through host memory, and the log says `GPU Direct RDMA Disabled for HCA`. Three things must
# hold. The kernel must let the NIC register GPU memory: the `nvidia-peermem` module loaded (or DMA-BUF with a
# recent driver and kernel), on *every* node. The NIC must be close: the DGX A100 of section 1 has
# {{faq_gdr_pairs}} GPU-NIC pairs under a shared switch, and `NCCL_NET_GDR_LEVEL` says how far NCCL may go.
# And nothing on the path may redirect peer traffic: ACS off and the IOMMU in pass-through (`iommu=pt`), or
# transfers crawl or hang (drill B).
#
# ### What busbw should an all-to-all reach?

# %%
print(faq.threads("all-to-all"))
a2a = faq.all_to_all_answer(faq_system, nodes=(1, 2, 4, 16))
for row in a2a:
    if row["nodes"] == 1:
        print(f"one node: busbw {fb(row['busbw'])}, all of it over NVLink")
        continue
    print(f"{row['nodes']:>2} nodes: busbw {fb(row['busbw'])} = {row['ratio']:.2f} x the NIC share per GPU "
          f"({fb(row['nic_per_gpu'])}); {row['leaves_node']:.0%} of each GPU's data leaves the node")
by_nodes = {row["nodes"]: row for row in a2a}
glue("faq_a2a_2", fb(by_nodes[2]["busbw"]), "{}")
glue("faq_a2a_16", fb(by_nodes[16]["busbw"]), "{}")
glue("faq_a2a_nic", fb(by_nodes[2]["nic_per_gpu"]), "{}")
glue("faq_a2a_ratio2", by_nodes[2]["ratio"], "{:.2f}")

# %% [markdown]
# For an all-to-all nccl-tests multiplies algbw by $\frac{p-1}{p}$; across $N$ nodes each GPU's share of the
# NICs carries the $\frac{N-1}{N}$ of its data that leaves the node, so busbw should reach about $\frac{N}{N-1}$
# times that share: {{faq_a2a_2}} on two nodes ({{faq_a2a_ratio2}} times the {{faq_a2a_nic}} per GPU), falling to
# {{faq_a2a_16}} on sixteen. An all-to-all cannot pool the node's NICs the way rings do: every GPU's bytes go
# out through its own, so a single NIC's rate is the target, not the node's.
#
# ### My job hangs: which rank is it?

# %%
print(faq.threads("hanging-rank"))
print(faq.hang_demo(timeout=4.0))

# %% [markdown]
# A collective waits for every member, so all ranks but one wait *inside* it; the rank to find is the one that is
# not. The lab's launcher does exactly that on your CPU: past the timeout it dumps every rank's Python stack and
# names the rank outside any collective, with the line it was on. On a GPU job the same evidence is spread out:
# PyTorch's watchdog prints, per rank, the sequence number of the last collective it enqueued and of the last one
# it completed, and the rank with the lowest completed number is the one behind; `py-spy dump --pid` on it shows
# where it is. Recent NCCL releases also run a RAS service whose client, `ncclras`, lists the ranks that stopped
# answering.
