"""Chapter 06, the overlap rule of thumb: per layer, does the data-parallel (or FSDP) communication hide
behind the compute that produces or needs it, and what do the bucket size and DDP's small first bucket add.

Every term comes from the course model, none is written again here: the compute of a layer is its share
(``transformer.layer_forward_flops_per_token`` over the step's forward FLOPs per token) of
``parallel.compute_phase``'s micro-batch time, split into forward and backward by its ``backward_share``;
each collective is ``parallel.group_collective_time`` for the data-parallel group (the one price every
phase pays); the bucket-by-bucket exposed time is :func:`traffic.exposed_time`.

Where it stops being true: the per-layer ratio assumes the collectives run beside the compute on their
own engines (copy engines, NICs) at the model's bandwidth, and that compute grows in proportion to the
tokens per GPU; a real GPU loses some compute to the communication kernels (SMs, memory bandwidth), so
keep a margin above a ratio of 1.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import parallel, units, validate
from ...transformer import BYTES_PER_PARAM_ADAM, layer_forward_flops_per_token, training_flops
from .traffic import exposed_time

# PyTorch DDP's first bucket: with bucket_cap_mb left at its default, the reducer caps the first bucket
# (the last layers' gradients, ready first) at torch.distributed._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB, so
# the first all-reduce starts early (torch/nn/parallel/distributed.py, _BucketCapacityConfig.create;
# datafiles.source("pytorch-ddp-buckets")).
FIRST_BUCKET_BYTES = 2**20


@dataclass(frozen=True)
class OverlapRule:
    """One layer's compute against its data-parallel communication, and the buckets, for one layout.

    Seconds, bytes, tokens; ``ratio`` is compute / communication of one layer (the smaller of the forward
    and backward passes for FSDP), so the communication hides when it is above 1.
    """

    model: str
    system: str
    gpus: int
    sharding: str                 # "DDP" (ZeRO-0/1: one gradient reduction per step) or "FSDP" (ZeRO-3)
    tokens_per_gpu: int           # per micro-batch: micro_batch x sequence length
    layer_params: float
    layer_grad_bytes: float
    layer_forward_s: float
    layer_backward_s: float
    layer_forward_comm_s: float   # FSDP: the layer's weight gather before its forward pass; DDP: 0
    layer_backward_comm_s: float  # DDP: its gradient reduction; FSDP: the second gather + the reduce-scatter
    link: str
    link_bandwidth: float         # bytes/s per direction per rank of the data-parallel group
    peak_flops: float             # the GPU's BF16 peak x the model's gpu_efficiency, FLOP/s
    backward_s: float             # the whole backward pass of the micro-batch
    bucket_bytes: float
    bucket_comm_s: float          # one bucket's all-reduce (DDP)
    bucket_fill_s: float          # backward time that produces one bucket of gradients
    first_bucket_bytes: float
    first_bucket_comm_s: float
    first_bucket_fill_s: float
    buckets: int
    exposed_s: float              # DDP: bucket by bucket, c + (n-1) max(0, c - b); FSDP: one layer's gather
    min_bucket_bytes: float | None  # DDP: the smallest bucket whose all-reduce keeps up with the backward
                                    # pass that fills it (c <= b); None where no bucket size does

    @property
    def forward_ratio(self) -> float:
        """Forward compute / the gather it waits for (FSDP); inf for DDP, which sends nothing then."""
        return self.layer_forward_s / self.layer_forward_comm_s if self.layer_forward_comm_s > 0 else float("inf")

    @property
    def backward_ratio(self) -> float:
        """Backward compute of a layer / the communication that must run beside it."""
        return self.layer_backward_s / self.layer_backward_comm_s if self.layer_backward_comm_s > 0 else float("inf")

    @property
    def ratio(self) -> float:
        """Compute / communication per layer, the pass that hides worst: above 1 the communication hides."""
        return min(self.forward_ratio, self.backward_ratio)

    @property
    def critical_tokens_per_gpu(self) -> float:
        """Tokens per GPU per micro-batch at which the ratio is 1: compute grows with the tokens, the
        bytes do not, so it is tokens / ratio. Fewer tokens per GPU than this and communication shows."""
        return self.tokens_per_gpu / self.ratio

    @property
    def flops_per_byte(self) -> float:
        """The hardware ratio the rule reduces to: FLOP/s the GPU computes / bytes/s its link moves per rank."""
        return self.peak_flops / self.link_bandwidth

    @property
    def hides(self) -> bool:
        """Whether every layer's communication fits behind its compute (ratio >= 1)."""
        return self.ratio >= 1.0

    def summary(self) -> str:
        """A few lines: the per-layer times, the ratio, the critical tokens and the buckets."""
        ft = units.format_time
        lines = [f"{self.model}, {self.sharding} on {self.gpus} GPUs of {self.system} ({self.link}, "
                 f"{units.format_bandwidth(self.link_bandwidth)} per rank), {self.tokens_per_gpu:,} tokens per GPU:",
                 f"  one layer: forward {ft(self.layer_forward_s)}, backward {ft(self.layer_backward_s)}; "
                 f"its communication: forward {ft(self.layer_forward_comm_s)}, backward {ft(self.layer_backward_comm_s)}",
                 f"  compute / communication per layer = {self.ratio:.2f} -> hides from "
                 f"{self.critical_tokens_per_gpu:,.0f} tokens per GPU"]
        if self.sharding == "DDP":
            keeps = "keeps up" if self.bucket_comm_s <= self.bucket_fill_s else "falls behind"
            smallest = "no bucket size keeps up" if self.min_bucket_bytes is None else \
                f"buckets keep up from {units.format_bytes(self.min_bucket_bytes, binary=True)}"
            lines.append(f"  {self.buckets} buckets of {units.format_bytes(self.bucket_bytes, binary=True)}: each "
                         f"all-reduce {ft(self.bucket_comm_s)}, filled in {ft(self.bucket_fill_s)} of backward "
                         f"({keeps}); exposed {ft(self.exposed_s)}; {smallest}")
        return "\n".join(lines)


def overlap_rule(model="megatron-7.5b", system="dgx-h100", gpus=64, micro_batch=1, fsdp=False, zero=0,
                 recompute="none", bucket_bytes=None, first_bucket_bytes=FIRST_BUCKET_BYTES,
                 gpu_efficiency=None) -> OverlapRule:
    """Per layer, compute against data-parallel communication for pure data parallelism (TP = PP = 1).

    model, system: ids (or objects) as ``parallel.estimate`` takes them; gpus >= 2, the data-parallel
    group; micro_batch: sequences per GPU per micro-batch (>= 1); fsdp: ZeRO-3 over all GPUs (else
    ``zero`` 0 or 1, one gradient reduction per step as DDP); recompute: none/selective/full;
    bucket_bytes: DDP's bucket (bytes > 0, default 25 MiB); first_bucket_bytes: its first (default 1 MiB).
    """
    gpus = validate.integer("gpus", gpus, low=2, high=10**6)
    b = validate.integer("micro_batch", micro_batch, low=1, high=10**5)
    if not isinstance(fsdp, bool):
        raise ValueError(f"fsdp must be True or False, got {fsdp!r}")
    zero = validate.integer("zero", zero, low=0, high=1) if not fsdp else 3
    first = validate.positive("first_bucket_bytes", first_bucket_bytes)
    L = parallel.layout(model, system, gpus=gpus, tp=1, pp=1, global_batch=gpus * b, micro_batch=b, zero=zero,
                        recompute=recompute, bucket_bytes=bucket_bytes, gpu_efficiency=gpu_efficiency)
    m, sys_, d = L.model, L.system, L.replicas
    c = parallel.compute_phase(L)
    # the layer's share of the forward FLOPs (the output layer takes the rest), of the micro-batch's time
    share = 3 * m.seq_len * layer_forward_flops_per_token(m) / training_flops(m, 1, "none")
    fwd, bwd = (c.micro_batch_s * (1 - c.backward_share) * share, c.micro_batch_s * c.backward_share * share)
    grad = BYTES_PER_PARAM_ADAM["gradients"] * m.layer_params   # = its 16-bit weights, for the gathers
    price = lambda coll, nbytes: parallel.group_collective_time(sys_, coll, nbytes, d)  # noqa: E731
    if fsdp:
        fwd_comm = price("all_gather", grad)
        bwd_comm = price("all_gather", grad) + price("reduce_scatter", grad)
    else:
        fwd_comm = 0.0
        bwd_comm = sum(price(coll, grad) for coll in (("all_reduce",) if zero == 0 else ("reduce_scatter", "all_gather")))
    backward_s = c.micro_batch_s * c.backward_share
    total_grad = BYTES_PER_PARAM_ADAM["gradients"] * L.stage_params
    buckets = parallel.bucket_count(total_grad, L.bucket_bytes)
    bucket_comm = price("all_reduce", L.bucket_bytes)
    if fsdp:  # prefetching hides all but the first layer's gather (parallel.dp_phase counts the same)
        exposed, smallest = fwd_comm, None
    else:
        exposed = exposed_time(backward_s, buckets * bucket_comm, buckets)
        smallest = _smallest_keeping_up(lambda nbytes: price("all_reduce", nbytes), bwd / grad, total_grad)
    link = parallel.group_link(sys_, d, 1)
    return OverlapRule(model=m.name, system=sys_.id, gpus=gpus, sharding="FSDP" if fsdp else "DDP",
                       tokens_per_gpu=b * m.seq_len, layer_params=m.layer_params, layer_grad_bytes=grad,
                       layer_forward_s=fwd, layer_backward_s=bwd, layer_forward_comm_s=fwd_comm,
                       layer_backward_comm_s=bwd_comm, link=link.name, link_bandwidth=link.bandwidth,
                       peak_flops=sys_.gpu.bf16_flops * c.efficiency, backward_s=backward_s,
                       bucket_bytes=L.bucket_bytes, bucket_comm_s=bucket_comm,
                       bucket_fill_s=bwd * L.bucket_bytes / grad, first_bucket_bytes=first,
                       first_bucket_comm_s=price("all_reduce", first), first_bucket_fill_s=bwd * first / grad,
                       buckets=buckets, exposed_s=exposed, min_bucket_bytes=smallest)


def _smallest_keeping_up(comm_s, fill_s_per_byte, largest) -> float | None:
    """The smallest bucket (bytes, 1 KiB to ``largest``) whose all-reduce ``comm_s(bytes)`` takes no longer
    than the backward time that fills it (bytes x ``fill_s_per_byte``): bisection on a log scale, since
    latency makes small buckets fall behind and bandwidth lets large ones keep up. None if none does."""
    keeps = lambda nbytes: comm_s(nbytes) <= nbytes * fill_s_per_byte  # noqa: E731
    low, high = 1024.0, float(largest)
    if not keeps(high):
        return None
    if keeps(low):
        return low
    while high / low > 1.01:
        mid = (low * high) ** 0.5
        low, high = (low, mid) if keeps(mid) else (mid, high)
    return high

