"""Transformer configurations with exact parameter counts, and a registry of real models.

Counts include every tensor of the released checkpoints: token and (learned)
position embeddings, attention and MLP weights and biases, norms, the MoE router and
the output head (unless tied to the token embedding). They match the published
checkpoints exactly, e.g. GPT-2 124M = 124,439,808 and Llama-2-7B = 6,738,415,616.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .units import check_choice, check_number

MLP_KINDS = ("gelu", "swiglu")
NORM_KINDS = ("layernorm", "rmsnorm")
POSITION_KINDS = ("learned", "rope")


@dataclass(frozen=True)
class TransformerConfig:
    """A decoder-only transformer. Sizes are counts (not bytes)."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab_size: int
    max_seq_len: int
    mlp: str = "gelu"
    tied_embeddings: bool = False
    n_experts: int = 1
    experts_per_token: int = 1
    bias: bool = False
    norm: str = "layernorm"
    position_embedding: str = "rope"
    source: str = "user-defined"

    def __post_init__(self):
        for field in ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_ff",
                      "vocab_size", "max_seq_len", "n_experts", "experts_per_token"):
            check_number(field, getattr(self, field), minimum=1, integer=True)
        check_choice("mlp", self.mlp, MLP_KINDS)
        check_choice("norm", self.norm, NORM_KINDS)
        check_choice("position_embedding", self.position_embedding, POSITION_KINDS)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.n_kv_heads}")
        if self.experts_per_token > self.n_experts:
            raise ValueError(
                f"experts_per_token={self.experts_per_token} must be <= "
                f"n_experts={self.n_experts}")

    # -- derived sizes ---------------------------------------------------------
    @property
    def head_dim(self) -> int:
        """d_model / n_heads."""
        return self.d_model // self.n_heads

    @property
    def kv_dim(self) -> int:
        """Width of K (or V): n_kv_heads * head_dim (grouped-query aware)."""
        return self.n_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    def attention_params(self) -> int:
        """Q, K, V, O weights (+ biases) of one layer."""
        d, kv = self.d_model, self.kv_dim
        weights = d * d + 2 * d * kv + d * d
        biases = (d + 2 * kv + d) if self.bias else 0
        return weights + biases

    def expert_params(self) -> int:
        """One MLP (one expert): 2 matrices for GELU, 3 for SwiGLU (+ biases)."""
        d, f = self.d_model, self.d_ff
        if self.mlp == "gelu":
            return 2 * d * f + ((f + d) if self.bias else 0)
        return 3 * d * f + ((2 * f + d) if self.bias else 0)

    def norm_params(self) -> int:
        """One norm: weight (+ bias for LayerNorm)."""
        return 2 * self.d_model if self.norm == "layernorm" else self.d_model

    def router_params(self) -> int:
        """MoE router of one layer: d_model x n_experts (0 for dense models)."""
        return self.d_model * self.n_experts if self.is_moe else 0

    def layer_params(self, active: bool = False) -> int:
        """Parameters of one block; ``active`` counts only experts_per_token experts."""
        experts = self.experts_per_token if active else self.n_experts
        return (self.attention_params() + experts * self.expert_params()
                + self.router_params() + 2 * self.norm_params())

    def embedding_params(self) -> int:
        """Token embedding, learned positions, and untied output head."""
        tok = self.vocab_size * self.d_model
        pos = self.max_seq_len * self.d_model if self.position_embedding == "learned" else 0
        head = 0 if self.tied_embeddings else self.vocab_size * self.d_model
        return tok + pos + head

    @property
    def n_params(self) -> int:
        """Total parameter count, exact."""
        return (self.n_layers * self.layer_params() + self.embedding_params()
                + self.norm_params())

    @property
    def n_active_params(self) -> int:
        """Parameters touched per token (MoE: experts_per_token experts + router)."""
        return (self.n_layers * self.layer_params(active=True) + self.embedding_params()
                + self.norm_params())

    def with_(self, **changes) -> "TransformerConfig":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


def _gpt2(name, n_layers, d_model, n_heads, label):
    return TransformerConfig(
        name=name, n_layers=n_layers, d_model=d_model, n_heads=n_heads,
        n_kv_heads=n_heads, d_ff=4 * d_model, vocab_size=50257, max_seq_len=1024,
        mlp="gelu", tied_embeddings=True, bias=True, norm="layernorm",
        position_embedding="learned",
        source=f"Radford et al. 2019 (GPT-2), Table 2; Hugging Face config of {label}",
    )


def _llama(name, n_layers, d_model, n_heads, n_kv_heads, d_ff, vocab, ctx, source,
           n_experts=1, experts_per_token=1):
    return TransformerConfig(
        name=name, n_layers=n_layers, d_model=d_model, n_heads=n_heads,
        n_kv_heads=n_kv_heads, d_ff=d_ff, vocab_size=vocab, max_seq_len=ctx,
        mlp="swiglu", tied_embeddings=False, bias=False, norm="rmsnorm",
        position_embedding="rope", n_experts=n_experts,
        experts_per_token=experts_per_token, source=source,
    )


MODELS = {
    m.name: m
    for m in (
        _gpt2("gpt2-124m", 12, 768, 12, "gpt2"),
        _gpt2("gpt2-355m", 24, 1024, 16, "gpt2-medium"),
        _gpt2("gpt2-774m", 36, 1280, 20, "gpt2-large"),
        _gpt2("gpt2-1.5b", 48, 1600, 25, "gpt2-xl"),
        _llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096,
               "Touvron et al. 2023 (Llama 2), Table 1; meta-llama/Llama-2-7b-hf config"),
        _llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096,
               "Touvron et al. 2023 (Llama 2), Table 1; meta-llama/Llama-2-13b-hf config"),
        _llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096,
               "Touvron et al. 2023 (Llama 2), Table 1 (GQA); meta-llama/Llama-2-70b-hf config"),
        _llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192,
               "Meta 2024 (Llama 3); meta-llama/Meta-Llama-3-8B config"),
        _llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192,
               "Meta 2024 (Llama 3); meta-llama/Meta-Llama-3-70B config"),
        _llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768,
               "Jiang et al. 2024 (Mixtral of Experts), Table 1; "
               "mistralai/Mixtral-8x7B-v0.1 config",
               n_experts=8, experts_per_token=2),
        TransformerConfig(
            name="gpt3-175b", n_layers=96, d_model=12288, n_heads=96, n_kv_heads=96,
            d_ff=4 * 12288, vocab_size=50257, max_seq_len=2048, mlp="gelu",
            tied_embeddings=True, bias=True, norm="layernorm", position_embedding="learned",
            source="Brown et al. 2020 (GPT-3), Table 2.1; count from the GPT-2 architecture "
                   "with these sizes (174.6e9; the paper rounds to 175B)",
        ),
    )
}


def get_model(name) -> TransformerConfig:
    """The registered :class:`TransformerConfig` called ``name`` (case-insensitive)."""
    if isinstance(name, TransformerConfig):
        return name
    lookup = {k.lower(): v for k, v in MODELS.items()}
    if not isinstance(name, str) or name.lower() not in lookup:
        check_choice("model", name, tuple(MODELS))
    return lookup[name.lower()]
