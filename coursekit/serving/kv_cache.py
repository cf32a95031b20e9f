"""KV-cache sizing for serving: bytes per token, paged blocks, fragmentation, capacity.

Bytes per token come from :func:`coursekit.training.memory.kv_cache_bytes`
(``2 x layers x kv_heads x head_dim x bytes``, grouped-query aware); this module only
adds the paging arithmetic of vLLM (Kwon et al., SOSP 2023, §4.1-4.2: fixed-size KV
blocks, 16 tokens by default). Capacities use the accelerator's nominal decimal memory
(``hardware.py`` convention). All results are bytes, tokens, blocks or sequences.
"""

from __future__ import annotations

import math

import numpy as np

from ..hardware import Accelerator, get_accelerator
from ..models import TransformerConfig, get_model
from ..training.memory import kv_cache_bytes
from ..units import check_number, dtype_bytes

BLOCK_SIZE = 16
"""vLLM's default KV block size in tokens (Kwon et al. 2023, §7.2)."""


def _model(model) -> TransformerConfig:
    return model if isinstance(model, TransformerConfig) else get_model(model)


def _accel(accelerator) -> Accelerator:
    return accelerator if isinstance(accelerator, Accelerator) else get_accelerator(accelerator)


def kv_bytes_per_token(model, bytes_per_value=2) -> float:
    """KV bytes one token adds: ``2 x layers x kv_heads x head_dim x bytes_per_value``.

    Grouped-query aware (Ainslie et al. 2023); from ``memory.kv_cache_bytes``. Bytes.
    Llama-2-7B in 16-bit: 2 x 32 x 32 x 128 x 2 = 524,288 bytes (0.5 MiB).
    """
    return kv_cache_bytes(model, 1, 1, bytes_per_value)


def _tokens(name, n_tokens):
    arr = np.asarray(n_tokens)
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise TypeError(f"{name} must be a token count or an array of them, got {n_tokens!r}")
    if arr.size and (np.any(arr < 0) or np.any(arr != np.floor(arr))):
        bad = arr[(arr < 0) | (arr != np.floor(arr))].ravel()[0]
        raise ValueError(f"{name} must hold integers >= 0, got {bad!r}")
    return arr.astype(np.int64)


def _block_size(block_size):
    return check_number("block_size", block_size, minimum=1, integer=True)


def blocks_for_tokens(n_tokens, block_size=BLOCK_SIZE):
    """Blocks a sequence of ``n_tokens`` occupies: ``ceil(n_tokens / block_size)``.

    vLLM §4.2 (blocks are allocated on demand, the last one partly filled). Works on
    scalars (returns int) and arrays (returns an int array). Blocks.
    """
    bs = _block_size(block_size)
    arr = _tokens("n_tokens", n_tokens)
    out = -(-arr // bs)
    return int(out) if out.ndim == 0 else out


def fragmentation_tokens(n_tokens, block_size=BLOCK_SIZE):
    """Unused token slots in the last block: ``blocks x block_size - n_tokens`` (< block_size).

    vLLM §4.2 (internal fragmentation is bounded by one block per sequence). Tokens.
    """
    bs = _block_size(block_size)
    arr = _tokens("n_tokens", n_tokens)
    out = -(-arr // bs) * bs - arr
    return int(out) if out.ndim == 0 else out


def internal_fragmentation(n_tokens, block_size=BLOCK_SIZE) -> float:
    """Fraction of allocated KV slots left empty, over one or many sequences:
    ``sum(blocks x block_size - n) / sum(blocks x block_size)`` (vLLM §4.2). Dimensionless;
    0.0 when nothing is allocated."""
    bs = _block_size(block_size)
    arr = _tokens("n_tokens", n_tokens)
    allocated = float(np.sum(-(-arr // bs) * bs))
    return 0.0 if allocated == 0 else (allocated - float(np.sum(arr))) / allocated


def kv_capacity_bytes(model, accelerator, weight_dtype="bf16", memory_fraction=1.0) -> float:
    """Bytes left for the KV cache: ``memory_fraction x memory - n_params x weight bytes``.

    vLLM reserves ``gpu_memory_utilization`` (default 0.9) of the device, loads the weights
    and gives the rest to KV blocks (Kwon et al. 2023, §4.5/§6). Activations of one step
    are ignored (small at decode). Raises ValueError when the weights do not fit. Bytes.
    """
    m, acc = _model(model), _accel(accelerator)
    check_number("memory_fraction", memory_fraction, minimum=0, strict=True, maximum=1)
    budget = memory_fraction * acc.memory_bytes
    weights = m.n_params * dtype_bytes(weight_dtype)
    if weights > budget:
        raise ValueError(
            f"model={m.name!r} weights ({weights:.4g} bytes in {weight_dtype}) do not fit in "
            f"{budget:.4g} bytes of {acc.name} (memory_fraction={memory_fraction}); "
            "allowed: a model whose weights fit")
    return budget - weights


def kv_capacity_blocks(model, accelerator, block_size=BLOCK_SIZE, weight_dtype="bf16",
                       kv_bytes_per_value=2, memory_fraction=1.0) -> int:
    """Whole KV blocks that fit after the weights:
    ``floor(kv_capacity_bytes / (block_size x kv_bytes_per_token))`` (vLLM §4.2). Blocks."""
    bs = _block_size(block_size)
    per_block = bs * kv_bytes_per_token(model, kv_bytes_per_value)
    return int(kv_capacity_bytes(model, accelerator, weight_dtype, memory_fraction) // per_block)


def max_concurrent_sequences(model, accelerator, seq_len, block_size=BLOCK_SIZE,
                             weight_dtype="bf16", kv_bytes_per_value=2,
                             memory_fraction=1.0) -> int:
    """Sequences of ``seq_len`` tokens whose KV blocks fit at once after the weights:
    ``floor(capacity_blocks / ceil(seq_len / block_size))``. Sequences.

    Llama-2-7B in bf16 on an 80 GB GPU: (80e9 - 13.48e9) / 0.5 MiB = 126,880 tokens of KV,
    i.e. 30 sequences of 4,096 tokens (recomputed: formula above).
    """
    check_number("seq_len", seq_len, minimum=1, integer=True)
    blocks = kv_capacity_blocks(model, accelerator, block_size, weight_dtype,
                                kv_bytes_per_value, memory_fraction)
    return blocks // math.ceil(seq_len / _block_size(block_size))
