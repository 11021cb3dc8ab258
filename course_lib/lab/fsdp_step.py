"""A real FSDP2 training step (``torch.distributed.fsdp.fully_shard``) on CPU ranks over gloo, with
the bytes its collectives moved counted and set beside the model's ZeRO-3 bytes.

    python -m course_lib.lab.fsdp_step --ranks 2 --layers 4 --width 512 --micro-batches 2

Each of ``layers`` Linear(width, width) blocks is its own FSDP unit, the whole model the root.
The counter wraps ``torch.distributed.all_gather_single`` and ``reduce_scatter_single`` (what
FSDP2 calls) and records each call's whole buffer (nccl-tests' ``total`` size). The model
(``parallel.zero3_step_bytes``): per micro-batch every unit's weights are gathered before its
forward and again before its backward, and its gradients reduce-scattered once. One exception
FSDP2 makes on purpose: the root unit keeps its weights gathered between forward and backward
(they would be needed at once), so its backward gather is skipped; ``root_params`` shows it.
"""
from __future__ import annotations


from .. import collectives, parallel, validate

COUNTED = ("all_gather_single", "reduce_scatter_single")


def _step(rank, world_size, layers, width, micro_batches, batch):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    root_extra = torch.nn.Linear(width, 8 * world_size)  # the head, owned by the root unit (rows divide by the ranks: no padding)
    blocks = [torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU()) for _ in range(layers)]
    model = torch.nn.Sequential(*blocks, root_extra)
    mesh = init_device_mesh("cpu", (world_size,))
    for block in blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    counts = {name: [0, 0] for name in COUNTED}       # calls, bytes of the whole buffer
    originals = {name: getattr(dist, name) for name in COUNTED}

    def counting(name):
        def wrapper(output, input, *args, **kwargs):
            big = output if name == "all_gather_single" else input
            counts[name][0] += 1
            counts[name][1] += big.numel() * big.element_size()
            return originals[name](output, input, *args, **kwargs)
        return wrapper

    for name in COUNTED:
        setattr(dist, name, counting(name))
    try:
        x = torch.randn(batch, width, generator=torch.Generator().manual_seed(rank))
        for mb in range(micro_batches):
            loss = model(x).square().mean()
            loss.backward()
        opt.step()
        opt.zero_grad()
    finally:
        for name in COUNTED:
            setattr(dist, name, originals[name])
    unit = sum(p.numel() for p in blocks[0].parameters()) * 4   # full (unsharded) fp32 bytes of one block
    root = sum(p.numel() for p in root_extra.parameters()) * 4
    return {"counts": counts, "unit_bytes": unit, "root_bytes": root}


def run_step(ranks=2, layers=4, width=512, micro_batches=1, batch=8, timeout=120) -> dict:
    """Run the step on ``ranks`` local gloo ranks; the counted bytes, the model's and their ratio."""
    from .launch import run

    ranks = validate.integer("ranks", ranks, low=2, high=16)
    layers = validate.integer("layers", layers, low=1, high=64)
    width = validate.integer("width", width, low=8, high=8192)
    micro_batches = validate.integer("micro_batches", micro_batches, low=1, high=64)
    batch = validate.integer("batch", batch, low=1, high=4096)
    out = run(_step, ranks=ranks, timeout=timeout, args=(layers, width, micro_batches, batch), echo=False)[0]
    counted = {"all_gather": out["counts"]["all_gather_single"][1],
               "reduce_scatter": out["counts"]["reduce_scatter_single"][1]}
    calls = {"all_gather": out["counts"]["all_gather_single"][0],
             "reduce_scatter": out["counts"]["reduce_scatter_single"][0]}
    # the model: every unit (the blocks and the root's own head) as ZeRO-3 prescribes
    params_bytes = layers * out["unit_bytes"] + out["root_bytes"]
    model = parallel.zero3_step_bytes(params_bytes, micro_batches)
    # FSDP2 keeps the root unit gathered from forward to backward: one gather fewer per micro-batch
    model_root = dict(model, all_gather=model["all_gather"] - micro_batches * out["root_bytes"])
    return {"ranks": ranks, "layers": layers, "width": width, "micro_batches": micro_batches,
            "calls": calls, "counted_bytes": counted, "model_bytes": model,
            "model_bytes_root_kept": model_root,
            "ratio": {k: counted[k] / model[k] for k in counted},
            "ratio_root_kept": {k: counted[k] / model_root[k] for k in counted},
            "sent_per_rank_bytes": {k: v * collectives.get(k).algorithm("ring").volume(ranks)   # (p-1)/p
                                    for k, v in counted.items()}}


def summary(result) -> str:
    lines = [f"FSDP2 step: {result['ranks']} ranks, {result['layers']} blocks of {result['width']}x{result['width']} "
             f"+ head, {result['micro_batches']} micro-batch(es), fp32 on gloo"]
    for k in ("all_gather", "reduce_scatter"):
        lines.append(f"  {k:<15} {result['calls'][k]:>4} calls, counted {result['counted_bytes'][k]:>12,} B, "
                     f"model {result['model_bytes'][k]:>12,.0f} B (ratio {result['ratio'][k]:.3f}); "
                     f"with the root kept gathered {result['model_bytes_root_kept'][k]:>12,.0f} B "
                     f"(ratio {result['ratio_root_kept'][k]:.3f})")
    lines.append("  sizes are whole buffers (nccl-tests 'total'); each rank sends (p-1)/p of them")
    return "\n".join(lines)


def _run(args) -> int:
    print(summary(run_step(args.ranks, args.layers, args.width, args.micro_batches)))
    return 0


def main(argv=None) -> int:
    """Command line; bad input is one line ``error: ...`` with status 2 (the course's one error path)."""
    from .. import cli

    p = cli.ArgumentParser(prog="python -m course_lib.lab.fsdp_step", description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--micro-batches", type=int, default=1)
    p.set_defaults(func=_run)
    return cli.run(p, argv)


if __name__ == "__main__":
    from ..cli import exit_with

    exit_with(main)
