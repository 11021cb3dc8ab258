"""Transformer shapes and what they cost, independent of the hardware: parameters, FLOPs, memory.

Units: counts, FLOP, bytes (SI).

* parameters: per layer ``h(2h + 2h_kv) + k h f`` (k = 2 for a GELU MLP, 3 for SwiGLU),
  plus embeddings ``V h`` (twice when input and output embeddings are not tied);
* memory per GPU: 16 bytes per parameter for mixed-precision Adam (2 weights + 2 gradients
  + 12 optimizer: fp32 master, momentum, variance), divided as ZeRO divides it; activations
  from Korthikanti et al. 2022: ``s b h (34 + 5 a s / h)`` bytes per layer and micro-batch,
  ``s b h (10 + 24/t + 5 a s/(h t))`` with tensor parallelism, ``/t`` for everything with
  sequence parallelism; selective recomputation drops the ``5 a s / h`` term; full
  recomputation keeps only each layer's input (``2 s b h``);
* FLOPs per step (Narayanan et al. 2021, generalised): forward ``2 x weights`` FLOPs per token
  for every matrix, ``4 s h`` per token per layer for attention scores and values, ``2 h V``
  for the logits; backward is twice the forward; full recomputation repeats the layers'
  forward, selective recomputation repeats only the attention-score matmuls. For GPT shapes
  this is ``72 B s l h^2 (1 + s/6h + V/12lh)`` without recomputation and
  ``96 B s l h^2 (1 + s/6h + V/16lh)`` with full recomputation.

* mixture of experts (``experts`` > 0): the MLP of each of the ``layers - dense_layers`` MoE layers
  is a router (``h x E``), ``E`` routed experts and ``shared_experts`` experts of ``expert_ffn``;
  parameters count every expert, FLOPs and activations only the ``top_k + shared`` a token visits
  (``active_layer_params``, ``active_ffn``); ``routed_expert_flops`` is the routed experts' share.

``course_lib.parallel`` lays these out on a system (TP x CP x PP x DP x EP) and re-exports them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from . import datafiles, validate

RECOMPUTE = ("none", "selective", "full")
MOE_FIELDS = ("experts", "top_k", "expert_ffn_hidden", "shared_experts", "dense_layers", "capacity_factor")
# attention shapes beyond h/heads per head (Qwen3's head_dim) and DeepSeek's multi-head latent attention (MLA),
# and multi-token prediction modules: config.json's names, as models.json stores them
ATTENTION_FIELDS = ("head_dim", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "v_head_dim", "mtp_layers")
BYTES_PER_PARAM_ADAM = {"weights": 2, "gradients": 2, "optimizer": 12}


@lru_cache(maxsize=1)
def models_data() -> dict:
    """The parsed ``data/models.json``."""
    return datafiles.load("models.json")


@dataclass(frozen=True)
class Transformer:
    """A decoder-only transformer. Sizes are counts; seq_len in tokens."""

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    ffn_hidden: int | None = None
    kv_heads: int | None = None
    gated_mlp: bool = False
    tied_embeddings: bool = True
    source: str = ""
    # mixture of experts (experts = 0: a dense model; every field below is then ignored)
    experts: int = 0                      # routed experts per MoE layer
    top_k: int = 1                        # routed experts each token visits
    expert_ffn_hidden: int | None = None  # one expert's MLP inner size (default: ffn)
    shared_experts: int = 0               # experts every token visits (DeepSeek, Llama 4)
    dense_layers: int = 0                 # layers with a dense MLP (the first ones in DeepSeek-V3)
    capacity_factor: float | None = None  # expert capacity / fair share; None = dropless
    # attention (None: h / heads per head, K and V of kv_heads heads)
    head_dim: int | None = None           # query/key width per head (MLA: qk_nope_head_dim, without the RoPE part)
    q_lora_rank: int | None = None        # MLA: the compressed query's width (None with kv_lora_rank: no MLA)
    kv_lora_rank: int | None = None       # MLA: the compressed K/V latent's width (what inference caches)
    qk_rope_head_dim: int = 0             # MLA: the decoupled RoPE key/query width per head (one shared key)
    v_head_dim: int | None = None         # MLA: value width per head
    mtp_layers: int = 0                   # multi-token prediction modules (DeepSeek-V3: 1), on the last stage

    def __post_init__(self) -> None:
        validate.integer("layers", self.layers, low=1, high=100_000)
        validate.integer("hidden", self.hidden, low=1, high=10_000_000)
        validate.integer("heads", self.heads, low=1, high=self.hidden)
        if self.hidden % self.heads:
            raise ValueError(f"heads must divide hidden ({self.hidden}), got {self.heads}")
        validate.integer("vocab", self.vocab, low=1, high=100_000_000)
        validate.integer("seq_len", self.seq_len, low=1, high=100_000_000)
        if self.ffn_hidden is not None:
            validate.integer("ffn_hidden", self.ffn_hidden, low=1, high=100_000_000)
        if self.kv_heads is not None:
            validate.integer("kv_heads", self.kv_heads, low=1, high=self.heads)
        for name in ("head_dim", "q_lora_rank", "kv_lora_rank", "v_head_dim"):
            if getattr(self, name) is not None:
                validate.integer(name, getattr(self, name), low=1, high=1_000_000)
        validate.integer("qk_rope_head_dim", self.qk_rope_head_dim, low=0, high=1_000_000)
        validate.integer("mtp_layers", self.mtp_layers, low=0, high=100)
        validate.integer("experts", self.experts, low=0, high=1_000_000)
        if self.experts:
            validate.integer("top_k", self.top_k, low=1, high=self.experts)
            validate.integer("shared_experts", self.shared_experts, low=0, high=1_000)
            validate.integer("dense_layers", self.dense_layers, low=0, high=self.layers - 1)
            if self.expert_ffn_hidden is not None:
                validate.integer("expert_ffn_hidden", self.expert_ffn_hidden, low=1, high=100_000_000)
            if self.capacity_factor is not None:
                validate.number("capacity_factor", self.capacity_factor, low=1.0, high=float(self.experts))

    @property
    def ffn(self) -> int:
        return self.ffn_hidden if self.ffn_hidden is not None else 4 * self.hidden

    @property
    def kv(self) -> int:
        return self.kv_heads if self.kv_heads is not None else self.heads

    @property
    def layer_params(self) -> float:
        """Weights of one layer (matrices plus biases and norms); for an MoE, the mean over layers."""
        if self.experts:
            return self.dense_layer_params + self.moe_layers * (self.moe_layer_params - self.dense_layer_params) \
                / self.layers
        return self.dense_layer_params

    @property
    def dense_layer_params(self) -> float:
        """Weights of one layer with a dense MLP of ``ffn`` (matrices, biases and norms)."""
        h, f = self.hidden, self.ffn
        mlp = (3 if self.gated_mlp else 2) * h * f
        return self._attention_params + mlp + 13 * h  # 13h: biases and two layer norms (Narayanan et al.)

    @property
    def mla(self) -> bool:
        """Whether attention is DeepSeek's multi-head latent attention (a compressed K/V latent)."""
        return self.kv_lora_rank is not None

    @property
    def qk_head_dim(self) -> int:
        """Query/key width per head: h / heads, or ``head_dim`` (+ the RoPE part under MLA)."""
        return (self.head_dim or self.hidden // self.heads) + self.qk_rope_head_dim

    @property
    def v_dim(self) -> int:
        """Value width per head."""
        return self.v_head_dim or self.head_dim or self.hidden // self.heads

    @property
    def attention_widths(self) -> dict:
        """Per-token widths of one layer's attention: ``q`` and ``k`` (all query heads), ``v`` and ``out`` (values,
        all heads), ``kv_heads_kv`` (K + V of the KV heads as stored / passed between ranks) and ``latent`` (MLA's
        compressed query + K/V latent + shared RoPE key, the up-projections' inputs; 0 without MLA)."""
        q = self.heads * self.qk_head_dim
        if self.mla:
            kv = self.heads * (self.qk_head_dim + self.v_dim)      # K and V are up-projected per head
            latent = (self.q_lora_rank or 0) + self.kv_lora_rank + self.qk_rope_head_dim
        else:
            kv = self.kv * (self.qk_head_dim + self.v_dim)
            latent = 0
        return {"q": q, "k": q, "v": self.heads * self.v_dim, "out": self.heads * self.v_dim, "kv": kv,
                "latent": latent}

    @property
    def _attention_params(self) -> int:
        """Weights of one layer's attention. MHA/GQA: Q (h x heads d), K and V (h x kv d), O (heads d_v x h).
        MLA (DeepSeek-V2/V3): down-projections h x q_lora and h x (kv_lora + rope), up-projections
        q_lora x heads (d + rope) and kv_lora x heads (d + d_v), O, and the two latent norms."""
        h, w = self.hidden, self.attention_widths
        if not self.mla:
            if self.head_dim is None and self.v_head_dim is None:
                return h * (2 * h + 2 * (h * self.kv // self.heads))
            return h * w["q"] + h * self.kv * (self.qk_head_dim + self.v_dim) + w["out"] * h
        d = self.head_dim or h // self.heads
        q = h * w["q"] if self.q_lora_rank is None else h * self.q_lora_rank + self.q_lora_rank * w["q"]
        kv = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank * self.heads * (d + self.v_dim)
        return q + kv + w["out"] * h + (self.q_lora_rank or 0) + self.kv_lora_rank

    @property
    def mtp_params(self) -> float:
        """Weights of the multi-token prediction modules: each a layer (the mean layer), a 2h x h projection and
        two norms; the embedding and output head are the main model's (DeepSeek-V3, section 2.2)."""
        return self.mtp_layers * (self.layer_params + 2 * self.hidden * self.hidden + 2 * self.hidden)

    # ---- mixture of experts: the MLP of a MoE layer is a router and experts + shared experts

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (0 for a dense model)."""
        return self.layers - self.dense_layers if self.experts else 0

    @property
    def expert_ffn(self) -> int:
        return self.expert_ffn_hidden if self.expert_ffn_hidden is not None else self.ffn

    @property
    def expert_params(self) -> float:
        """Weights of one expert (a gated or plain MLP of ``expert_ffn``)."""
        return (3 if self.gated_mlp else 2) * self.hidden * self.expert_ffn

    @property
    def moe_layer_params(self) -> float:
        """Weights of one MoE layer: attention, router (h x E), routed and shared experts, norms."""
        h = self.hidden
        experts = (self.experts + self.shared_experts) * self.expert_params
        return self._attention_params + h * self.experts + experts + 13 * h

    @property
    def routed_layer_params(self) -> float:
        """Routed-expert weights per layer (mean over layers): the part expert parallelism splits."""
        return self.moe_layers * self.experts * self.expert_params / self.layers

    @property
    def active_layer_params(self) -> float:
        """Weights one token multiplies per layer (mean over layers): top-k + shared experts, not all."""
        if not self.experts:
            return self.layer_params
        idle = (self.experts - self.top_k) * self.expert_params
        return self.layer_params - self.moe_layers * idle / self.layers

    @property
    def active_ffn(self) -> float:
        """MLP inner width one token's activations span (mean over layers): (top-k + shared) x expert FFN."""
        if not self.experts:
            return self.ffn
        moe = (self.top_k + self.shared_experts) * self.expert_ffn
        return self.ffn + self.moe_layers * (moe - self.ffn) / self.layers

    @property
    def active_params(self) -> float:
        """Parameters one token uses (what MoE papers call activated parameters)."""
        return self.layers * self.active_layer_params + self.embedding_params

    @property
    def embedding_params(self) -> float:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def params(self) -> float:
        """Total parameter count."""
        return self.layers * self.layer_params + self.embedding_params


def model_ids() -> list[str]:
    return [m["id"] for m in models_data()["models"]]


def model(model_id: str) -> Transformer:
    """A transformer from ``data/models.json`` by id (``gpt3-175b``, ``llama3-70b`` ...)."""
    model_id = validate.choice("model_id", model_id, model_ids())
    row = next(m for m in models_data()["models"] if m["id"] == model_id)
    return Transformer(name=row["name"], layers=row["layers"], hidden=row["hidden"], heads=row["heads"],
                       vocab=row["vocab"], seq_len=row["seq_len"], ffn_hidden=row["ffn_hidden"],
                       kv_heads=row["kv_heads"], gated_mlp=row["gated_mlp"],
                       tied_embeddings=row["tied_embeddings"], source=row["source"],
                       **{k: row[k] for k in MOE_FIELDS + ATTENTION_FIELDS if k in row})


def resolve_model(value: str | Transformer, name: str = "model") -> Transformer:
    """``value`` as a ``Transformer``: one already, or a catalog id (``model_ids()``). The one model resolver."""
    if isinstance(value, Transformer):
        return value
    if isinstance(value, str):
        return model(validate.choice(name, value, model_ids()))
    raise ValueError(f"{name} must be a catalog id ({', '.join(model_ids())}) or a Transformer, got {value!r}")


def resolve_recompute(value: str | bool | None) -> str:
    """``none``, ``selective`` or ``full`` from a name or a bool (True = full, False/None = none)."""
    if value is True:
        return "full"
    if value is False or value is None:
        return "none"
    return validate.choice("recompute", value, RECOMPUTE)


# ---------------------------------------------------------------- formulas

def _layer_forward_flops(m: Transformer) -> tuple[float, float]:
    """(matmul, attention) forward FLOPs per token of one layer: the weights' matmuls (top-k experts), and
    QK^T and attention x V over the full sequence (not causal: the convention MFU is counted in):
    2 s (q + v widths), 4 s h for multi-head attention of h / heads per head."""
    w = m.attention_widths
    return 2 * (m.active_layer_params - 13 * m.hidden), 2 * m.seq_len * (w["q"] + w["v"])


def layer_forward_flops_per_token(model_: str | Transformer) -> float:
    """Forward FLOPs per token of one layer, as :func:`training_flops` counts them (a step is 3x this per layer,
    plus the output layer and any recomputation)."""
    return sum(_layer_forward_flops(resolve_model(model_)))


def training_flops_parts(model_: str | Transformer, global_batch: int, recompute: str | bool | None = "none") -> dict:
    """FLOPs of one training step split by where they run: ``linear`` (the layers' weight matmuls, which an FP8
    recipe runs in FP8), ``attention`` (score and value matmuls) and ``logits`` (the output layer); both stay BF16.

    Backward is twice the forward; full recomputation repeats the layers' forward, selective only attention's.
    """
    m = resolve_model(model_)
    B = validate.integer("global_batch", global_batch, low=1, high=10**9)
    rc = resolve_recompute(recompute)
    tokens = B * m.seq_len
    layer_mm, attn = _layer_forward_flops(m)   # per token per layer (forward)
    full = 1 if rc == "full" else 0
    layers = m.layers + m.mtp_layers           # each MTP module: one more layer and its 2h x h projection
    return {"linear": float(tokens * (layers * layer_mm + m.mtp_layers * 4 * m.hidden ** 2) * (3 + full)),
            "attention": float(tokens * layers * attn * (3 + (1 if rc != "none" else 0))),
            "logits": float(tokens * 2 * m.hidden * m.vocab * 3 * (1 + m.mtp_layers))}


def training_flops(model_: str | Transformer, global_batch: int, recompute: str | bool | None = "none") -> float:
    """FLOPs of one training step (forward + backward [+ recomputation]) for global_batch sequences."""
    return sum(training_flops_parts(model_, global_batch, recompute).values())


def model_state_bytes(params: float, dp: int = 1, zero: int = 0) -> dict:
    """Weights, gradients and optimizer bytes per GPU for ``params`` parameters on ``dp`` ranks.

    Mixed-precision Adam: 2 + 2 + 12 bytes per parameter (ZeRO paper, K = 12). ZeRO stage 1
    divides the optimizer states by dp, stage 2 also the gradients, stage 3 also the weights.
    """
    n = validate.positive("params", params)
    d = validate.integer("dp", dp, low=1, high=10**7)
    z = validate.integer("zero", zero, low=0, high=3)
    w = BYTES_PER_PARAM_ADAM["weights"] * n / (d if z >= 3 else 1)
    g = BYTES_PER_PARAM_ADAM["gradients"] * n / (d if z >= 2 else 1)
    o = BYTES_PER_PARAM_ADAM["optimizer"] * n / (d if z >= 1 else 1)
    return {"weights": w, "gradients": g, "optimizer": o, "total": w + g + o}


def activation_bytes_per_layer(model_: str | Transformer, micro_batch: int = 1, tp: int = 1, recompute: str | bool | None = "none", sequence_parallel: bool = False,
                               saved_linear_input_bytes: float = 2.0) -> float:
    """Activation bytes one layer stores for one micro-batch (Korthikanti et al. 2022, 16-bit).

    ``recompute="none"`` stores the s x s attention scores (eager attention); fused (flash) attention never
    stores them, and measured layers with it keep what ``"selective"`` gives (chapter 07, section 6).
    ``saved_linear_input_bytes``: bytes per value of what each linear layer saves for its backward pass, its
    input (2: BF16; an FP8 recipe saves the FP8-cast input, ``data/precision.json``): the QKV and MLP-up inputs
    (2 sbh each, replicated under TP) and the attention-output and MLP-down inputs (2 sbh and 2 s b f, split).
    """
    m = resolve_model(model_)
    b = validate.integer("micro_batch", micro_batch, low=1, high=10**6)
    t = validate.integer("tp", tp, low=1, high=m.heads)
    rc = resolve_recompute(recompute)
    s, h, a = m.seq_len, m.hidden, m.heads
    sbh = s * b * h
    if rc == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    # GELU MLP with f = 4h stores 19 sbh; scale the f-dependent part (16 sbh) for other shapes
    mlp = 3 + 4 * m.active_ffn / h * (1.5 if m.gated_mlp else 1.0)
    split = 24 - 19 + mlp                 # attention (without the s^2 part) + MLP parts split by TP
    replicated = 10                       # layer norms, dropout masks, inputs of attention and MLP
    w = m.attention_widths
    if m.mla or m.head_dim is not None:   # Q, K, V and the output projection's input at their own widths
        split += 2 * (w["q"] + w["k"] + w["v"] + w["out"] - 4 * h) / h
        replicated += 2 * w["latent"] / h  # MLA: the latents, inputs of the up-projections (not split by TP)
    scores = 0.0 if rc == "selective" else 5 * a * s / h
    cheaper = 1 - validate.number("saved_linear_input_bytes", saved_linear_input_bytes, low=0.5, high=2.0) / 2
    replicated -= 4 * cheaper                          # QKV and MLP-up inputs
    split -= (2 + 2 * m.active_ffn / h) * cheaper      # attention-output and MLP-down inputs
    if sequence_parallel:
        return sbh * (replicated + split + scores) / t
    return sbh * (replicated + split / t + scores / t)


def routed_expert_flops(model_: str | Transformer, global_batch: int, recompute: str | bool | None = "none") -> float:
    """FLOPs of one step spent in routed experts (top-k per token and MoE layer); 0 for a dense model."""
    m = resolve_model(model_)
    if not m.experts:
        return 0.0
    B = validate.integer("global_batch", global_batch, low=1, high=10**9)
    rc = resolve_recompute(recompute)
    fwd = 2 * m.top_k * m.expert_params * m.moe_layers
    return float(B * m.seq_len * fwd * (4 if rc == "full" else 3))
