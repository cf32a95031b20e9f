"""Training memory: model state, ZeRO sharding, activations, checkpointing, KV cache.

All results are bytes. Conventions (DESIGN.md, stated to students):

* Bytes per parameter come from components (weights, gradients, fp32 master copy,
  optimizer moments), never from one magic number. Presets: ``fp32+adam`` 4+4+0+8,
  ``mixed+adam`` 2+2+4+8 = 16 (ZeRO's K = 12 for master + moments),
  ``mixed+adam-no-master`` 2+2+0+8 = 12 (the lesson plan's and Def 1.1's convention),
  ``megatron`` 2+4+4+8 = 18 (fp32 gradient buffer).
* ZeRO stage s on N data-parallel GPUs shards optimizer state and master copy
  (s >= 1), gradients (s >= 2) and weights (s = 3) (Rajbhandari et al. 2020, §5).
* Activations per layer follow Korthikanti et al. 2022 (16-bit activations, 1-byte
  dropout masks): ``s*b*h*(34 + 5*a*s/h)`` bytes with eager attention (the default). A
  fused attention kernel (``attention="sdpa"`` or ``"flash"``: PyTorch's
  scaled_dot_product_attention, FlashAttention) keeps no s x s tensor: the ``5as/h`` term
  becomes the fp32 logsumexp, ``4*a*s*b`` bytes (Dao et al. 2022, §3.1).
* :func:`training_peak_memory` predicts what PyTorch's allocator reports as the peak of a
  training step (saved tensors by dtype, the fp32 logits/loss buffers, autocast's bf16
  weight copies, gradients allocated by then); checked against an H200 (course data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..hardware import Accelerator, get_accelerator
from ..models import TransformerConfig, get_model
from ..units import check_choice, check_number

RECOMPUTE_MODES = ("none", "selective", "full")
ATTENTION_KERNELS = ("eager", "sdpa", "flash")
"""``eager`` materializes the s x s scores (softmax output, dropout mask and output are
saved); ``sdpa`` and ``flash`` are fused kernels (PyTorch's
``torch.nn.functional.scaled_dot_product_attention`` flash / memory-efficient backends,
FlashAttention) that save only the output and the logsumexp."""


@dataclass(frozen=True)
class Recipe:
    """Bytes per parameter of each model-state component."""

    name: str
    weight_bytes: float
    grad_bytes: float
    master_bytes: float
    optimizer_bytes: float

    def __post_init__(self):
        for f in ("weight_bytes", "grad_bytes", "master_bytes", "optimizer_bytes"):
            check_number(f, getattr(self, f), minimum=0)

    @property
    def bytes_per_param(self) -> float:
        """Sum of the four components."""
        return self.weight_bytes + self.grad_bytes + self.master_bytes + self.optimizer_bytes


RECIPES = {
    r.name: r
    for r in (
        Recipe("fp32+sgd", 4, 4, 0, 0),
        Recipe("fp32+momentum", 4, 4, 0, 4),
        Recipe("fp32+adam", 4, 4, 0, 8),
        Recipe("mixed+adam", 2, 2, 4, 8),
        Recipe("mixed+adam-no-master", 2, 2, 0, 8),
        Recipe("megatron", 2, 4, 4, 8),
        Recipe("bf16-pure+adam", 2, 2, 0, 4),
    )
}
"""Named recipes. ``bf16-pure+adam`` keeps weights and both Adam moments in bf16."""


def get_recipe(recipe) -> Recipe:
    """A :class:`Recipe` by name, or the object itself."""
    if isinstance(recipe, Recipe):
        return recipe
    check_choice("recipe", recipe, tuple(RECIPES))
    return RECIPES[recipe]


@dataclass(frozen=True)
class ModelState:
    """Model-state bytes by component (per GPU where sharded)."""

    weights: float
    gradients: float
    master: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.master + self.optimizer

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["total"] = self.total
        return out


def _check_params(n_params):
    return check_number("n_params", n_params, minimum=0)


def model_state_bytes(n_params, recipe="mixed+adam") -> ModelState:
    """Weights, gradients, master copy and optimizer state of ``n_params`` parameters.

    bytes = n_params x (component bytes of the recipe). Chapter Napkin 1.2, Def 1.1;
    ZeRO paper §3.1. Bytes.
    """
    n = _check_params(n_params)
    r = get_recipe(recipe)
    return ModelState(n * r.weight_bytes, n * r.grad_bytes, n * r.master_bytes,
                      n * r.optimizer_bytes)


def _check_dp_stage(dp, stage):
    check_number("dp", dp, minimum=1, integer=True)
    if isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        raise ValueError(f"stage={stage!r} is not a ZeRO stage; allowed: 0, 1, 2, 3")


def zero_bytes_per_gpu(n_params, dp, stage, recipe="mixed+adam") -> ModelState:
    """Model-state bytes on one data-parallel GPU under ZeRO stage 0-3.

    Stage 1 shards optimizer state and the fp32 master copy over ``dp`` GPUs, stage 2
    also gradients, stage 3 also weights (Rajbhandari et al. 2020, ZeRO, §5, Fig. 1).
    Shards are exact fractions (no padding). Bytes.
    """
    _check_dp_stage(dp, stage)
    full = model_state_bytes(n_params, recipe)
    return ModelState(
        weights=full.weights / dp if stage >= 3 else full.weights,
        gradients=full.gradients / dp if stage >= 2 else full.gradients,
        master=full.master / dp if stage >= 1 else full.master,
        optimizer=full.optimizer / dp if stage >= 1 else full.optimizer,
    )


def _check_activation_args(seq_len, micro_batch, hidden, n_heads, tp, recompute,
                           attention="eager"):
    check_number("seq_len", seq_len, minimum=1, integer=True)
    check_number("micro_batch", micro_batch, minimum=1, integer=True)
    check_number("hidden", hidden, minimum=1, integer=True)
    check_number("n_heads", n_heads, minimum=1, integer=True)
    check_number("tp", tp, minimum=1, integer=True)
    check_choice("recompute", recompute, RECOMPUTE_MODES)
    check_choice("attention", attention, ATTENTION_KERNELS)


def activation_bytes_per_layer(seq_len, micro_batch, hidden, n_heads, *, tp=1,
                               sequence_parallel=False, recompute="none",
                               attention="eager") -> float:
    """Activation bytes one transformer layer keeps for the backward pass.

    Korthikanti et al. 2022, Table 2 (16-bit activations, s = seq_len, b = micro_batch,
    h = hidden, a = n_heads, t = tp):
    none: ``sbh(34 + 5as/h)``; with tensor parallel ``sbh(10 + 24/t + 5as/(ht))``;
    with sequence parallel ``sbh(34/t + 5as/(ht))``. Selective recompute drops the
    ``5as/h`` attention term; full recompute keeps only the layer input ``2sbh``
    (``2sbh/t`` with sequence parallel). Bytes.

    ``attention`` names the kernel. ``"eager"`` (the default, Korthikanti's accounting)
    keeps the ``5as/h`` term: softmax output ``2as^2b``, dropout mask ``as^2b`` and
    dropout output ``2as^2b``. ``"sdpa"``/``"flash"`` keep no s x s tensor; they save the
    output O (already counted, it is the output projection's input) and one fp32
    logsumexp per query and head, ``4asb/t`` bytes, and regenerate the dropout mask
    from the RNG seed (Dao et al. 2022, FlashAttention, §3.1; PyTorch's
    ``_scaled_dot_product_flash_attention`` returns ``(output, logsumexp, ...,
    philox_seed, philox_offset)`` and its backward reads exactly q, k, v, output,
    logsumexp). Selective recompute with a fused kernel stores neither.
    """
    _check_activation_args(seq_len, micro_batch, hidden, n_heads, tp, recompute, attention)
    s, b, h, a, t = seq_len, micro_batch, hidden, n_heads, tp
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / t if sequence_parallel else 2 * sbh
    linear = 34 / t if sequence_parallel else 10 + 24 / t
    if recompute == "selective":
        return sbh * linear
    if attention == "eager":
        return sbh * (linear + 5 * a * s / (h * t))
    return sbh * linear + 4 * a * s * b / t


def _resolve_model(model) -> TransformerConfig:
    if isinstance(model, TransformerConfig):
        return model
    return get_model(model)


def activation_bytes(model, seq_len, micro_batch, *, tp=1, pp=1, interleave=1,
                     sequence_parallel=False, recompute="none", attention="eager") -> float:
    """Peak activation bytes on the busiest GPU (the first pipeline stage).

    With 1F1B pipelining the first of ``pp`` stages holds ``pp`` micro-batches of
    ``L/pp`` layers, i.e. all ``L`` layers' worth of one micro-batch; an interleaved
    schedule with ``interleave`` = v > 1 chunks multiplies this by ``1 + (pp-1)/(pp*v)``
    (Korthikanti et al. 2022, §4.2.3). Transformer layers only (embedding and output
    layer excluded); ``attention`` as in :func:`activation_bytes_per_layer`. Bytes.
    """
    m = _resolve_model(model)
    check_number("pp", pp, minimum=1, integer=True)
    check_number("interleave", interleave, minimum=1, integer=True)
    per_layer = activation_bytes_per_layer(seq_len, micro_batch, m.d_model, m.n_heads,
                                           tp=tp, sequence_parallel=sequence_parallel,
                                           recompute=recompute, attention=attention)
    factor = 1.0 if interleave == 1 else 1 + (pp - 1) / (pp * interleave)
    return per_layer * m.n_layers * factor


def optimal_checkpoints(n_layers) -> float:
    """Checkpoint count minimizing ``k + n/k``: ``sqrt(n)`` (Chen et al. 2016; chapter Table 15)."""
    check_number("n_layers", n_layers, minimum=1, integer=True)
    return math.sqrt(n_layers)


def checkpoint_memory(n_layers, k) -> float:
    """Activation memory with ``k`` evenly spaced checkpoints, in units of one layer's
    activations: ``k`` stored checkpoints plus one segment of ``n/k`` layers recomputed
    at a time (Chen et al. 2016; chapter §1.5.5.2, Table 15). Dimensionless."""
    n = check_number("n_layers", n_layers, minimum=1, integer=True)
    k = check_number("k", k, minimum=0, strict=True)
    if k > n:
        raise ValueError(f"k={k} checkpoints must be <= n_layers={n}")
    return k + n / k


def checkpointed_activation_bytes(n_layers, k, layer_bytes, checkpoint_bytes) -> float:
    """Activation bytes with ``k`` evenly spaced checkpoints, each checkpoint the layer input
    only: ``k * checkpoint_bytes + (n/k) * layer_bytes``. ``checkpoint_bytes`` is 2sbh for a
    16-bit layer input (Korthikanti et al. 2022 §4: full recomputation keeps 2sbh per
    layer); ``layer_bytes`` one layer's full activations. The crude rule of the chapter
    (:func:`checkpoint_memory`) counts each checkpoint as a whole layer. Bytes."""
    n = check_number("n_layers", n_layers, minimum=1, integer=True)
    k = check_number("k", k, minimum=0, strict=True)
    if k > n:
        raise ValueError(f"k={k} checkpoints must be <= n_layers={n}")
    layer = check_number("layer_bytes", layer_bytes, minimum=0)
    ckpt = check_number("checkpoint_bytes", checkpoint_bytes, minimum=0)
    return k * ckpt + n / k * layer


def kv_cache_bytes(model, seq_len, batch=1, bytes_per_value=2) -> float:
    """KV-cache bytes: ``2 (K and V) x layers x kv_heads x head_dim x bytes x seq x batch``.

    Grouped-query aware (uses n_kv_heads). Pope et al. 2022; vLLM (Kwon et al. 2023). Bytes.
    """
    m = _resolve_model(model)
    check_number("seq_len", seq_len, minimum=0, integer=True)
    check_number("batch", batch, minimum=0, integer=True)
    check_number("bytes_per_value", bytes_per_value, minimum=0, strict=True)
    return 2 * m.n_layers * m.n_kv_heads * m.head_dim * bytes_per_value * seq_len * batch


def effective_batch(micro_batch, accumulation_steps=1, dp=1) -> int:
    """Samples per optimizer step: ``micro_batch x accumulation_steps x dp`` (chapter §1.5.5)."""
    mb = check_number("micro_batch", micro_batch, minimum=1, integer=True)
    acc = check_number("accumulation_steps", accumulation_steps, minimum=1, integer=True)
    d = check_number("dp", dp, minimum=1, integer=True)
    return mb * acc * d


@dataclass(frozen=True)
class TrainingMemory:
    """Per-GPU training memory in bytes, by component."""

    weights: float
    gradients: float
    master: float
    optimizer: float
    activations: float

    @property
    def model_state(self) -> float:
        return self.weights + self.gradients + self.master + self.optimizer

    @property
    def total(self) -> float:
        return self.model_state + self.activations

    def fits(self, accelerator) -> bool:
        """True when ``total`` <= the accelerator's memory (nominal decimal capacity)."""
        return self.total <= _accel(accelerator).memory_bytes

    def headroom(self, accelerator) -> float:
        """Accelerator memory minus ``total`` (negative when it does not fit). Bytes."""
        return _accel(accelerator).memory_bytes - self.total

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["total"] = self.total
        return out


def _accel(accelerator) -> Accelerator:
    return accelerator if isinstance(accelerator, Accelerator) else get_accelerator(accelerator)


def training_memory(model, *, micro_batch, seq_len, recipe="mixed+adam", dp=1,
                    zero_stage=0, tp=1, pp=1, recompute="none", sequence_parallel=False,
                    interleave=1, attention="eager") -> TrainingMemory:
    """Per-GPU training memory: model state split over ``tp x pp`` model-parallel GPUs
    (an even split of all parameters), then ZeRO-sharded over ``dp``, plus the first
    pipeline stage's activations (:func:`activation_bytes`, with the attention kernel
    ``attention``). A planning number: the logits/loss buffers, autocast copies and
    the allocator's view of the peak are in :func:`training_peak_memory`. Bytes.
    """
    m = _resolve_model(model)
    check_number("tp", tp, minimum=1, integer=True)
    check_number("pp", pp, minimum=1, integer=True)
    state = zero_bytes_per_gpu(m.n_params / (tp * pp), dp, zero_stage, recipe)
    act = activation_bytes(m, seq_len, micro_batch, tp=tp, pp=pp, interleave=interleave,
                           sequence_parallel=sequence_parallel, recompute=recompute,
                           attention=attention)
    return TrainingMemory(state.weights, state.gradients, state.master, state.optimizer, act)


# -- the allocator's peak of a real PyTorch training step -----------------------------

PRECISIONS = ("fp32", "bf16-autocast", "bf16")
"""``fp32``: fp32 weights and activations. ``bf16-autocast``: fp32 weights, gradients and
AdamW state, ``torch.autocast(dtype=torch.bfloat16)`` for compute (no separate master
copy). ``bf16``: bf16 weights, gradients, AdamW state and activations ("pure bf16")."""

GELU_KINDS = ("fused", "python-tanh")
"""``fused``: one GELU kernel that saves only its input (``F.gelu``, ``nn.GELU``,
Megatron's fused bias-GELU; Korthikanti's 8sbh). ``python-tanh``: the tanh approximation
written as separate tensor ops, ``0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3)))``,
as in Hugging Face's ``NewGELUActivation`` (GPT-2's ``activation_function="gelu_new"``):
autograd saves x**3's input, tanh's output, (1 + tanh) and 0.5*x."""

_PRECISION_RECIPE = {"fp32": "fp32+adam", "bf16-autocast": "fp32+adam",
                     "bf16": "bf16-pure+adam"}

# bytes per element: r = residual stream and LayerNorm input, m = GEMM operands (what the
# matmul saves), n = ops that torch.autocast runs in fp32 (softmax, layer_norm, pow:
# the "CUDA ops that can autocast to float32" list of PyTorch's AMP documentation)
_WIDTHS = {"fp32": (4, 4, 4), "bf16-autocast": (4, 2, 4), "bf16": (2, 2, 2)}


def logits_bytes(seq_len, micro_batch, vocab_size, bytes_per_value=4) -> float:
    """One ``s x b x V`` logits-sized tensor: ``s*b*V*bytes``. Hugging Face's causal-LM
    loss upcasts the logits to fp32 (``logits.float()``) before ``cross_entropy``, whose
    ``log_softmax`` saves its fp32 output for the backward; the backward then holds two
    more fp32 ones (the gradients of the log-probabilities and of the logits). Bytes."""
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    b = check_number("micro_batch", micro_batch, minimum=1, integer=True)
    v = check_number("vocab_size", vocab_size, minimum=1, integer=True)
    return s * b * v * check_number("bytes_per_value", bytes_per_value, minimum=0,
                                    strict=True)


def _gemm_weights_per_layer(m: TransformerConfig) -> int:
    h, kv, f = m.d_model, m.kv_dim, m.d_ff
    return h * (h + 2 * kv) + h * h + 2 * h * f


def autocast_weight_copy_bytes(model) -> float:
    """bf16 copies of the fp32 GEMM weights that ``torch.autocast`` makes and the matmuls
    save for the backward: 2 bytes x (every layer's Q, K, V, O and MLP weight matrices
    + the LM head's V x h). Biases, norms and embeddings are not GEMM operands. Present
    only in the ``bf16-autocast`` regime (fp32 weights, no separate master copy). Bytes."""
    m = _resolve_model(model)
    return 2.0 * (m.n_layers * _gemm_weights_per_layer(m) + m.vocab_size * m.d_model)


def _check_peak_model(m: TransformerConfig):
    if m.mlp != "gelu" or m.norm != "layernorm" or m.is_moe:
        raise ValueError(
            f"model={m.name!r} (mlp={m.mlp!r}, norm={m.norm!r}, experts={m.n_experts}) "
            "is not modelled; the saved-tensor inventory is derived for the GPT-2 block "
            "(LayerNorm, GELU MLP, dense)")


def saved_bytes_per_layer_terms(model, seq_len, micro_batch, *, precision="bf16",
                                attention="eager", dropout=True, gelu="fused",
                                recompute="none") -> dict:
    """The tensors one GPT-2-style layer saves for the backward, by name, in bytes.

    s = seq_len, b = micro_batch, h = d_model, f = d_ff, k = K/V width (h without GQA),
    a = heads, A = a*s^2*b. Byte widths by ``precision``: r (residual stream, LayerNorm
    input), m (GEMM operand), n (an op autocast runs in fp32) are 4/4/4 for ``fp32``,
    4/2/4 for ``bf16-autocast``, 2/2/2 for ``bf16``.

    ======================================  =========================  =================
    term                                    bytes per layer            source
    ======================================  =========================  =================
    ln1 input                               r*sbh                      [K] 2sbh
    qkv GEMM input (ln1 out; autocast copy) m*sbh                      [K] 2sbh; [AMP]
    q, k, v                                 m*sb(h+2k)                 [K] 4sbh + 2sbh
    eager: softmax output                   n*A                        [K] 2as^2b; [AMP]
    eager: dropout mask (bool)              1*A        (dropout)       [K] as^2b
    eager: dropout output = P for P@V       m*A   (dropout or n != m)  [K] 2as^2b
    sdpa/flash: logsumexp (fp32)            4*asb                      [FA] §3.1; [SDPA]
    attention output = out-proj input       m*sbh                      [K] 2sbh
    residual dropout mask                   1*sbh      (dropout)       [K] sbh
    ln2 input                               r*sbh                      [K] 2sbh
    fc1 input (ln2 out; autocast copy)      m*sbh                      [K] 2sbh
    GELU, fused: its input                  m*sbf                      [K] 8sbh
    GELU, python-tanh: x**3's input,        (3n + m)*sbf               [HF] gelu_new
      tanh out, 1 + tanh, 0.5*x
    fc2 input (GELU output)                 m*sbf                      [K] 8sbh
    residual dropout mask                   1*sbh      (dropout)       [K] sbh
    autocast: bf16 weight copies            2*(h(h+2k) + h^2 + 2hf)    [AMP]
    ======================================  =========================  =================

    With ``bf16``, eager, dropout, fused GELU and f = 4h this is Korthikanti's
    ``sbh(34 + 5as/h)`` exactly. ``recompute="selective"`` drops the attention-core rows
    (softmax, mask, dropout output, logsumexp); ``"full"`` keeps only the ln1 input
    (the checkpointed layer input, ``r*sbh``). LayerNorm mean/rstd (8 bytes per token)
    and the attention mask are O(sb) and left out.

    [K] Korthikanti et al. 2022, §4.1, Eq. 1. [FA] Dao et al. 2022, FlashAttention, §3.1:
    the backward needs only O and the softmax statistics (m, l), O(s) per head, not
    O(s^2). [SDPA] PyTorch, ``torch.nn.functional.scaled_dot_product_attention``: the
    flash backend's ``_scaled_dot_product_flash_attention`` returns the logsumexp and
    the Philox seed/offset; its backward reads q, k, v, output and logsumexp (no mask;
    dropout is regenerated). [AMP] PyTorch's ``torch.autocast``: matmuls run in bf16
    on cast copies (saved by the matmul); softmax, layer_norm and pow run in fp32.
    [HF] Hugging Face transformers, ``activations.NewGELUActivation``.
    """
    m = _resolve_model(model)
    _check_peak_model(m)
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    b = check_number("micro_batch", micro_batch, minimum=1, integer=True)
    check_choice("precision", precision, PRECISIONS)
    check_choice("attention", attention, ATTENTION_KERNELS)
    check_choice("gelu", gelu, GELU_KINDS)
    check_choice("recompute", recompute, RECOMPUTE_MODES)
    if not isinstance(dropout, bool):
        raise TypeError(f"dropout must be True or False, got {dropout!r}")
    r, mm, n = _WIDTHS[precision]
    h, f, kv, a = m.d_model, m.d_ff, m.kv_dim, m.n_heads
    sbh, sbf, A = s * b * h, s * b * f, a * s * s * b
    if recompute == "full":
        return {"ln1 input (checkpoint)": r * sbh}
    mask = 1 if dropout else 0
    terms = {"ln1 input": r * sbh, "qkv GEMM input": mm * sbh,
             "q, k, v": mm * s * b * (h + 2 * kv)}
    if recompute == "none" and attention == "eager":
        terms["softmax output"] = n * A
        terms["attention dropout mask"] = mask * A
        terms["attention probabilities for P@V"] = mm * A if (dropout or n != mm) else 0
    elif recompute == "none":
        terms["logsumexp"] = 4 * a * s * b
    terms["attention output"] = mm * sbh
    terms["residual dropout mask 1"] = mask * sbh
    terms["ln2 input"] = r * sbh
    terms["fc1 GEMM input"] = mm * sbh
    terms["GELU saved"] = (mm if gelu == "fused" else 3 * n + mm) * sbf
    terms["fc2 GEMM input"] = mm * sbf
    terms["residual dropout mask 2"] = mask * sbh
    terms["autocast weight copies"] = (2 * _gemm_weights_per_layer(m)
                                       if precision == "bf16-autocast" else 0)
    return terms


@dataclass(frozen=True)
class PeakMemory:
    """The allocator's peak of one training step, by component, in bytes.

    ``weights``, ``gradients``, ``master``, ``optimizer``: the static state (recipe).
    ``saved``: what autograd holds at the end of the forward (layers, embedding/head,
    the fp32 log-probabilities, autocast copies). ``live``: the non-static bytes at the
    peak, counting the gradients allocated by then. ``phase``: when the peak happens.
    """

    weights: float
    gradients: float
    master: float
    optimizer: float
    saved: float
    live: float
    phase: str

    @property
    def model_state(self) -> float:
        """Weights + gradients + master copy + optimizer state (the static bytes)."""
        return self.weights + self.gradients + self.master + self.optimizer

    @property
    def peak(self) -> float:
        """weights + master + optimizer + live (gradients are in ``live`` once they exist)."""
        return self.weights + self.master + self.optimizer + self.live

    @property
    def activation_peak(self) -> float:
        """``peak - model_state``: the H200 data's activation column ("act"). With
        ``set_to_none`` gradients it can be smaller than the activations themselves."""
        return self.peak - self.model_state


def training_peak_memory(model, *, micro_batch, seq_len, precision="bf16-autocast",
                         attention="sdpa", dropout=True, gelu="fused", recompute="none",
                         recipe=None, grads_set_to_none=True) -> PeakMemory:
    """Peak allocated bytes of one training step of a GPT-2-style model on one GPU, as
    PyTorch's ``torch.cuda.max_memory_allocated`` reports it.

    ``saved`` = L x :func:`saved_bytes_per_layer_terms` + the head: embedding dropout mask
    ``1*sbh``, final LayerNorm input ``r*sbh``, LM-head input ``m*sbh``, autocast's bf16
    LM-head weight ``2*V*h``, and the fp32 log-probabilities ``4*sbV``
    (:func:`logits_bytes`). The peak is the largest of three moments (G = gradient bytes,
    absent until the backward allocates them when ``grads_set_to_none``, PyTorch's
    default ``zero_grad``):

    * loss forward: ``saved`` + the logits (``m*sbV``) + their fp32 copy (when m != 4);
    * loss backward: ``saved + 8*sbV``, the two fp32 gradients (of the log-probabilities
      and of the logits) next to everything the forward saved;
    * end of backward: ``G`` + the embedding's dense ``V x h`` gradient, or one
      recomputed layer's activations with ``recompute="full"``.

    Static state from ``recipe`` (default by ``precision``: ``fp32+adam`` for fp32 and
    bf16-autocast, ``bf16-pure+adam`` for pure bf16). Not modelled: the backward's
    per-layer gradient temporaries and allocator effects, which decide the peak only
    when the activations are small next to the gradients (full recompute at small
    batch). Sources: :func:`saved_bytes_per_layer_terms`; Hugging Face
    ``ForCausalLMLoss``; checked against ``coursekit/data/h200_gpt2_training_memory.json``
    (tests/test_h200_memory.py). Bytes.
    """
    m = _resolve_model(model)
    terms = saved_bytes_per_layer_terms(m, seq_len, micro_batch, precision=precision,
                                        attention=attention, dropout=dropout, gelu=gelu,
                                        recompute=recompute)
    if not isinstance(grads_set_to_none, bool):
        raise TypeError(f"grads_set_to_none must be True or False, got "
                        f"{grads_set_to_none!r}")
    r, mm, _ = _WIDTHS[precision]
    s, b, h, v = seq_len, micro_batch, m.d_model, m.vocab_size
    sbh = s * b * h
    logp = logits_bytes(s, b, v)
    head = ((1 if dropout else 0) * sbh + r * sbh + mm * sbh + logp
            + (2 * v * h if precision == "bf16-autocast" else 0))
    saved = m.n_layers * sum(terms.values()) + head
    state = model_state_bytes(m.n_params, _PRECISION_RECIPE[precision]
                              if recipe is None else recipe)
    early_grads = 0.0 if grads_set_to_none else state.gradients
    recomputed = 0.0
    if recompute == "full":
        recomputed = sum(saved_bytes_per_layer_terms(
            m, s, b, precision=precision, attention=attention, dropout=dropout,
            gelu=gelu).values())
    grad_width = state.gradients / m.n_params if m.n_params else 0.0
    moments = {
        "loss forward": saved + logits_bytes(s, b, v, mm) + (logp if mm != 4 else 0)
        + early_grads,
        "loss backward": saved + 2 * logp + early_grads,
        "end of backward": state.gradients + max(recomputed, v * h * grad_width),
    }
    phase = max(moments, key=moments.get)
    return PeakMemory(state.weights, state.gradients, state.master, state.optimizer,
                      saved, moments[phase], phase)
