"""The compute half of the step-time model on a real GPU: one transformer layer's forward + backward.

The planner prices a training step's compute as ``transformer.training_flops / (peak x gpu_efficiency)``,
with ``gpu_efficiency`` an assumption taken from one published single-GPU run on an older GPU
(``data/published_training.json``). This script builds one layer of each named catalog model in plain
torch (bf16, the model's hidden size, heads, KV heads, MLP and sequence length; causal SDPA attention),
checks that its weight count is the course's ``dense_layer_params`` minus the 13h of biases and norms the
formula counts, times forward + backward (CUDA events, median of ``--repeats``), and reports:

- ``model_tflops``: the course's FLOPs for that layer (3 x ``transformer.layer_forward_flops_per_token``, the
  formula ``transformer.training_flops`` uses, which counts full, not causal, attention) over the time;
- ``efficiency``: that over the GPU's dense bf16 peak from the catalog, beside the assumed value;
- a plain bf16 matrix product (8192^3) as the machine's own ceiling;
- the bytes one layer's forward pass keeps for its backward (``torch.cuda.memory_allocated`` before and
  after the forward; its output stands for its input, which the formula counts) beside
  ``transformer.activation_bytes_per_layer`` with recompute none and selective.

Run on a CUDA machine (``PYTHONPATH=. python3 benchmarks/device_compute_check.py --out DIR``); without one it
says so in one line and exits 2. None of these numbers sets a constant: they are a test of the assumption.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

MODELS = ("megatron-1.7b", "llama2-7b", "llama3-8b", "llama2-70b", "gpt3-175b", "llama3-405b")


def build_layer(m, torch):
    """One pre-norm block with the model's shapes (no biases: the formula's 13h covers norms and biases)."""
    nn = torch.nn
    h, kv_dim, ffn = m.hidden, m.hidden * m.kv // m.heads, m.ffn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(h, bias=False), nn.LayerNorm(h, bias=False)
            self.qkv = nn.Linear(h, h + 2 * kv_dim, bias=False)
            self.out = nn.Linear(h, h, bias=False)
            self.up = nn.Linear(h, (2 if m.gated_mlp else 1) * ffn, bias=False)
            self.down = nn.Linear(ffn, h, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split([h, kv_dim, kv_dim], dim=-1)
            hd = h // m.heads
            q = q.view(b, s, m.heads, hd).transpose(1, 2)
            k = k.view(b, s, m.kv, hd).transpose(1, 2)
            v = v.view(b, s, m.kv, hd).transpose(1, 2)
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=m.kv != m.heads)
            x = x + self.out(a.transpose(1, 2).reshape(b, s, h))
            u = self.up(self.norm2(x))
            if m.gated_mlp:
                g, u = u.chunk(2, dim=-1)
                u = torch.nn.functional.silu(g) * u
            else:
                u = torch.nn.functional.gelu(u)
            return x + self.down(u)

    return Block()


def timed(fn, torch, repeats):
    """Median seconds of ``fn()`` by CUDA events, after three warm-up calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="folder for compute.json (optional)")
    parser.add_argument("--system", default="dgx-h200", help="catalog system whose GPU peak is used")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    import torch

    from course_lib import hardware, transformer
    from course_lib.parallel.layouts import assumption

    if not torch.cuda.is_available():
        print("error: no CUDA GPU is visible to torch; this check needs one", file=sys.stderr)
        return 2
    peak = hardware.system(args.system).gpu.bf16_flops
    dev = torch.device("cuda")
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "system": args.system,
              "peak_bf16_tflops": peak / 1e12, "assumed_gpu_efficiency": assumption("gpu_efficiency"), "layers": []}
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    mm = timed(lambda: a @ b, torch, args.repeats)
    result["matmul_8192_tflops"] = 2 * 8192 ** 3 / mm / 1e12
    a = b = None  # frees the GPU memory; the timed lambda above is done with them
    for model_id in MODELS:
        m = transformer.model(model_id)
        layer = build_layer(m, torch).to(dev, torch.bfloat16)
        weights = sum(p.numel() for p in layer.parameters() if p.dim() == 2)
        x = torch.randn(1, m.seq_len, m.hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)

        def step():
            layer(x).sum().backward()

        seconds = timed(step, torch, args.repeats)
        layer.zero_grad(set_to_none=True)
        x.grad = None
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        out = layer(x)  # what the forward pass keeps for the backward pass, and its output (the next input)
        torch.cuda.synchronize()
        saved = torch.cuda.memory_allocated() - before
        del out
        formula = {rc: transformer.activation_bytes_per_layer(m, micro_batch=1, tp=1, recompute=rc)
                   for rc in ("none", "selective")}
        flops = 3 * transformer.layer_forward_flops_per_token(m) * m.seq_len
        row = {"model": model_id, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv, "ffn": m.ffn,
               "gated_mlp": m.gated_mlp, "seq_len": m.seq_len, "micro_batch": 1,
               "weights_built": weights, "weights_in_formula": m.dense_layer_params - 13 * m.hidden,
               "seconds": seconds, "model_tflops": flops / seconds / 1e12,
               "efficiency": flops / seconds / peak, "activation_bytes_measured": saved,
               "activation_bytes_formula_none": formula["none"],
               "activation_bytes_formula_selective": formula["selective"]}
        result["layers"].append(row)
        print(f"{model_id:<12} h={m.hidden:<6} s={m.seq_len:<5} {seconds * 1e3:8.2f} ms  "
              f"{row['model_tflops']:6.0f} TFLOP/s = {row['efficiency']:.0%} of peak "
              f"(weights built {weights / 1e6:.1f} M, formula {row['weights_in_formula'] / 1e6:.1f} M); "
              f"activations {saved / 1e9:.3f} GB vs formula {formula['none'] / 1e9:.3f} (none) "
              f"{formula['selective'] / 1e9:.3f} (selective)", flush=True)
        layer = x = None  # frees the GPU memory before the next model (step() above is done with them)
        torch.cuda.empty_cache()
    print(f"matmul 8192^3 bf16: {result['matmul_8192_tflops']:.0f} TFLOP/s = "
          f"{result['matmul_8192_tflops'] * 1e12 / peak:.0%} of the catalog's peak {peak / 1e12:.0f}; "
          f"assumed gpu_efficiency {result['assumed_gpu_efficiency']}")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "compute.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
