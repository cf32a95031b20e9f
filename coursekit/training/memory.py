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
  dropout masks): ``s*b*h*(34 + 5*a*s/h)`` bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..hardware import Accelerator, get_accelerator
from ..models import TransformerConfig, get_model
from ..units import check_choice, check_number

RECOMPUTE_MODES = ("none", "selective", "full")


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


def _check_activation_args(seq_len, micro_batch, hidden, n_heads, tp, recompute):
    check_number("seq_len", seq_len, minimum=1, integer=True)
    check_number("micro_batch", micro_batch, minimum=1, integer=True)
    check_number("hidden", hidden, minimum=1, integer=True)
    check_number("n_heads", n_heads, minimum=1, integer=True)
    check_number("tp", tp, minimum=1, integer=True)
    check_choice("recompute", recompute, RECOMPUTE_MODES)


def activation_bytes_per_layer(seq_len, micro_batch, hidden, n_heads, *, tp=1,
                               sequence_parallel=False, recompute="none") -> float:
    """Activation bytes one transformer layer keeps for the backward pass.

    Korthikanti et al. 2022, Table 2 (16-bit activations, s = seq_len, b = micro_batch,
    h = hidden, a = n_heads, t = tp):
    none: ``sbh(34 + 5as/h)``; with tensor parallel ``sbh(10 + 24/t + 5as/(ht))``;
    with sequence parallel ``sbh(34/t + 5as/(ht))``. Selective recompute drops the
    ``5as/h`` attention term; full recompute keeps only the layer input ``2sbh``
    (``2sbh/t`` with sequence parallel). Bytes.
    """
    _check_activation_args(seq_len, micro_batch, hidden, n_heads, tp, recompute)
    s, b, h, a, t = seq_len, micro_batch, hidden, n_heads, tp
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / t if sequence_parallel else 2 * sbh
    attention = 0.0 if recompute == "selective" else 5 * a * s / (h * t)
    linear = 34 / t if sequence_parallel else 10 + 24 / t
    return sbh * (linear + attention)


def _resolve_model(model) -> TransformerConfig:
    if isinstance(model, TransformerConfig):
        return model
    return get_model(model)


def activation_bytes(model, seq_len, micro_batch, *, tp=1, pp=1, interleave=1,
                     sequence_parallel=False, recompute="none") -> float:
    """Peak activation bytes on the busiest GPU (the first pipeline stage).

    With 1F1B pipelining the first of ``pp`` stages holds ``pp`` micro-batches of
    ``L/pp`` layers, i.e. all ``L`` layers' worth of one micro-batch; an interleaved
    schedule with ``interleave`` = v > 1 chunks multiplies this by ``1 + (pp-1)/(pp*v)``
    (Korthikanti et al. 2022, §4.2.3). Transformer layers only (embedding and output
    layer excluded). Bytes.
    """
    m = _resolve_model(model)
    check_number("pp", pp, minimum=1, integer=True)
    check_number("interleave", interleave, minimum=1, integer=True)
    per_layer = activation_bytes_per_layer(seq_len, micro_batch, m.d_model, m.n_heads,
                                           tp=tp, sequence_parallel=sequence_parallel,
                                           recompute=recompute)
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
                    interleave=1) -> TrainingMemory:
    """Per-GPU training memory: model state split over ``tp x pp`` model-parallel GPUs
    (an even split of all parameters), then ZeRO-sharded over ``dp``, plus the first
    pipeline stage's activations (:func:`activation_bytes`). Bytes.
    """
    m = _resolve_model(model)
    check_number("tp", tp, minimum=1, integer=True)
    check_number("pp", pp, minimum=1, integer=True)
    state = zero_bytes_per_gpu(m.n_params / (tp * pp), dp, zero_stage, recipe)
    act = activation_bytes(m, seq_len, micro_batch, tp=tp, pp=pp, interleave=interleave,
                           sequence_parallel=sequence_parallel, recompute=recompute)
    return TrainingMemory(state.weights, state.gradients, state.master, state.optimizer, act)
