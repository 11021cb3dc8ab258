"""Chapter 06's overlap rule of thumb: per layer compute against data-parallel communication, and the buckets."""
import pytest

from course_lib import hardware, parallel
from course_lib.chapters import data_parallel as dp

def test_overlap_rule_takes_its_terms_from_the_model():
    r = dp.overlap_rule("megatron-7.5b", "dgx-h100", 64, zero=1, recompute=dp.RECOMPUTE)
    e = dp.dp_estimate("megatron-7.5b", gpus=64, zero=1)
    m = parallel.model("megatron-7.5b")
    # the layers' compute is the micro-batch's, less the output layer; forward and backward in the phase's ratio
    c = parallel.compute_phase(parallel.layout(m, "dgx-h100", gpus=64, global_batch=64, zero=1,
                                               recompute=dp.RECOMPUTE))
    assert m.layers * (r.layer_forward_s + r.layer_backward_s) < e.compute_s
    assert m.layers * (r.layer_forward_s + r.layer_backward_s) == pytest.approx(e.compute_s, rel=0.1)
    assert r.layer_backward_s / r.layer_forward_s == pytest.approx(c.backward_share / (1 - c.backward_share))
    # the layer's gradients (16-bit), reduce-scattered and gathered over the DP group: the one group price
    assert r.layer_grad_bytes == 2 * m.layer_params
    assert r.layer_backward_comm_s == pytest.approx(sum(
        parallel.group_collective_time("dgx-h100", coll, r.layer_grad_bytes, 64) for coll in ("reduce_scatter", "all_gather")))
    assert r.layer_forward_comm_s == 0.0 and r.ratio == r.backward_ratio
    assert r.exposed_s == pytest.approx(dp.exposed_time(r.backward_s, r.buckets * r.bucket_comm_s, r.buckets))
    assert r.buckets == parallel.bucket_count(2 * m.params, dp.DDP_BUCKET_BYTES)
    assert r.link_bandwidth == parallel.group_link("dgx-h100", 64, 1).bandwidth


def test_overlap_ratio_grows_with_the_tokens_and_the_critical_count_does_not_move():
    one, four = (dp.overlap_rule("megatron-7.5b", "dgx-h100", 64, micro_batch=b) for b in (1, 4))
    assert four.tokens_per_gpu == 4 * one.tokens_per_gpu
    assert four.ratio == pytest.approx(4 * one.ratio, rel=0.1)   # GEMMs of 4x the tokens reach a little more peak
    assert four.critical_tokens_per_gpu == pytest.approx(one.critical_tokens_per_gpu, rel=0.1)
    assert one.critical_tokens_per_gpu < one.tokens_per_gpu < 4 * one.tokens_per_gpu and one.hides
    # the rule of thumb it reduces to: tokens per GPU ~ the GPU's FLOP/s over its bytes/s per rank
    assert one.critical_tokens_per_gpu == pytest.approx(one.flops_per_byte, rel=0.3)


def test_a_slower_network_raises_the_critical_tokens_in_proportion():
    fast = dp.overlap_rule("megatron-7.5b", "dgx-h100", 64)
    slow = dp.overlap_rule("megatron-7.5b", hardware.system("dgx-h100").variant(nics_per_node=8, nic_gbit_s=100), 64)
    assert not slow.hides and fast.hides
    assert slow.critical_tokens_per_gpu / fast.critical_tokens_per_gpu == pytest.approx(
        fast.link_bandwidth / slow.link_bandwidth, rel=0.25)


def test_fsdp_pays_a_gather_in_the_forward_pass_and_the_same_critical_tokens():
    ddp = dp.overlap_rule("megatron-7.5b", "dgx-h100", 64)
    fsdp = dp.overlap_rule("megatron-7.5b", "dgx-h100", 64, fsdp=True)
    g = fsdp.layer_grad_bytes
    assert fsdp.layer_forward_comm_s == pytest.approx(parallel.group_collective_time("dgx-h100", "all_gather", g, 64))
    assert fsdp.layer_backward_comm_s == pytest.approx(
        fsdp.layer_forward_comm_s + parallel.group_collective_time("dgx-h100", "reduce_scatter", g, 64))
    assert fsdp.ratio == min(fsdp.forward_ratio, fsdp.backward_ratio)
    assert fsdp.critical_tokens_per_gpu == pytest.approx(ddp.critical_tokens_per_gpu, rel=0.1)
    assert fsdp.exposed_s == fsdp.layer_forward_comm_s and fsdp.min_bucket_bytes is None


def test_buckets_keep_up_from_the_smallest_size_the_rule_finds():
    r = dp.overlap_rule("megatron-7.5b", "dgx-h100", 64)
    price = lambda n: parallel.group_collective_time("dgx-h100", "all_reduce", n, 64)  # noqa: E731
    per_byte = r.layer_backward_s / r.layer_grad_bytes
    s = r.min_bucket_bytes
    assert price(s) <= s * per_byte and price(s / 1.05) > s / 1.05 * per_byte
    # DDP's 25 MiB buckets fall behind across 8 nodes at one sequence per GPU, and the step waits for the backlog
    assert r.bucket_bytes < s and r.bucket_comm_s > r.bucket_fill_s
    big = dp.overlap_rule("megatron-7.5b", "dgx-h100", 64, bucket_bytes=2 * s)
    assert big.bucket_comm_s <= big.bucket_fill_s and big.exposed_s == pytest.approx(big.bucket_comm_s)
    assert big.exposed_s < r.exposed_s / 10
    # inside one node the default buckets keep up; where no bucket size can, the rule says so
    assert dp.overlap_rule("megatron-7.5b", "dgx-h100", 8).min_bucket_bytes < dp.DDP_BUCKET_BYTES
    slow = dp.overlap_rule("megatron-7.5b", hardware.system("dgx-h100").variant(nics_per_node=8, nic_gbit_s=100), 64)
    assert slow.min_bucket_bytes is None and "no bucket size keeps up" in slow.summary()
    # the first bucket (1 MiB, DDP's default) is ready after a sliver of the backward pass
    assert r.first_bucket_bytes == dp.FIRST_BUCKET_BYTES == 2**20
    assert r.first_bucket_fill_s == pytest.approx(r.bucket_fill_s * 2**20 / dp.DDP_BUCKET_BYTES)


@pytest.mark.parametrize("kwargs, name", [({"gpus": 1}, "gpus"), ({"micro_batch": 0}, "micro_batch"),
                                          ({"fsdp": "yes"}, "fsdp"), ({"zero": 2}, "zero"),
                                          ({"first_bucket_bytes": 0}, "first_bucket_bytes"),
                                          ({"bucket_bytes": -1}, "bucket_bytes"), ({"recompute": "some"}, "recompute")])
def test_overlap_rule_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        dp.overlap_rule(**kwargs)
