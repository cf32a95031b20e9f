"""Tensor (intra-layer) parallelism: Megatron-LM's column/row split of a transformer MLP.

Shoeybi et al. 2019, "Megatron-LM", §3: the MLP ``Y = GeLU(X A) B`` is split over ``t``
devices by cutting ``A`` into ``t`` blocks of columns and ``B`` into the matching ``t``
blocks of rows. Device ``i`` computes ``Z_i = GeLU(X A_i) B_i`` with no communication
(GeLU acts element by element on the columns it owns); one all-reduce sums the partial
outputs, ``Y = sum_i Z_i``. In the forward pass that is the layer's only communication;
the backward pass has one more all-reduce (for ``dL/dX``), so attention + MLP cost 4
all-reduces per layer and micro-batch (2 forward, 2 backward).

Splitting ``A`` by rows instead would need an all-reduce *before* the GeLU, because
``GeLU(X_1 A_1 + X_2 A_2) != GeLU(X_1 A_1) + GeLU(X_2 A_2)``.

Arrays are numpy arrays; bytes are per device, counted with the ring all-reduce
``2 (t-1)/t * S`` of :mod:`coursekit.parallel.collectives` (``S`` = bytes of one partial).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..units import check_number
from .collectives import allreduce_bytes

__all__ = ["gelu", "shard_columns", "shard_rows", "TPResult", "column_parallel_mlp",
           "tp_mlp_allreduce_bytes"]


def gelu(x):
    """GeLU, tanh approximation: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
    (Hendrycks & Gimpel 2016, §2; the form GPT-2 and Megatron-LM use). Element-wise."""
    x = np.asarray(x, dtype=float)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _matrix(name, value) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {arr.shape}")
    return arr


def _split(name, size, t) -> int:
    t = check_number("t", t, minimum=1, integer=True)
    if size % t:
        raise ValueError(f"t={t} must divide the {size} {name} evenly")
    return size // t


def shard_columns(A, t) -> tuple:
    """``t`` contiguous blocks of columns of ``A`` (device ``i`` gets columns
    ``i*k .. (i+1)*k - 1``, ``k = cols/t``); ValueError unless ``t`` divides the columns."""
    A = _matrix("A", A)
    k = _split("columns of A", A.shape[1], t)
    return tuple(A[:, i * k:(i + 1) * k] for i in range(A.shape[1] // k))


def shard_rows(B, t) -> tuple:
    """``t`` contiguous blocks of rows of ``B`` (the blocks that match
    :func:`shard_columns` of the layer before); ValueError unless ``t`` divides the rows."""
    B = _matrix("B", B)
    k = _split("rows of B", B.shape[0], t)
    return tuple(B[i * k:(i + 1) * k, :] for i in range(B.shape[0] // k))


@dataclass(frozen=True)
class TPResult:
    """One tensor-parallel MLP forward pass on ``t`` devices."""

    partials: tuple  # Z_i = GeLU(X A_i) B_i, one array per device, each of Y's shape
    output: np.ndarray  # Y = sum of the partials (what the all-reduce leaves on every device)
    bytes_sent: float  # bytes each device sends in the ring all-reduce of one partial

    @property
    def t(self) -> int:
        """Tensor-parallel degree (number of devices)."""
        return len(self.partials)


def column_parallel_mlp(X, A, B, t, bytes_per_value=2) -> TPResult:
    """Megatron-LM's MLP ``Y = GeLU(X A) B`` on ``t`` devices (Shoeybi et al. 2019, §3,
    Fig. 3a): ``A`` split by columns, ``B`` by rows, partial outputs summed by an
    all-reduce of ``Y.size * bytes_per_value`` bytes (ring: ``2(t-1)/t`` of that sent per
    device). ``X``: (tokens, d), ``A``: (d, f), ``B``: (f, d_out). Bytes per device.
    """
    X, A, B = _matrix("X", X), _matrix("A", A), _matrix("B", B)
    if X.shape[1] != A.shape[0] or A.shape[1] != B.shape[0]:
        raise ValueError(f"shapes do not chain: X {X.shape}, A {A.shape}, B {B.shape}")
    bpv = check_number("bytes_per_value", bytes_per_value, minimum=0, strict=True)
    parts = tuple(gelu(X @ a) @ b for a, b in zip(shard_columns(A, t), shard_rows(B, t)))
    out = np.sum(parts, axis=0)
    return TPResult(parts, out, allreduce_bytes(out.size * bpv, len(parts)))


def tp_mlp_allreduce_bytes(tokens, hidden, t, bytes_per_value=2, *, passes=2) -> float:
    """Bytes each device sends for one layer's tensor-parallel all-reduces of a
    ``tokens x hidden`` activation: ``passes * 2(t-1)/t * tokens * hidden * bytes``
    (``passes=2`` per direction of one transformer layer, attention + MLP; 4 for forward
    and backward; Shoeybi et al. 2019 §3). Bytes."""
    n_tok = check_number("tokens", tokens, minimum=0)
    h = check_number("hidden", hidden, minimum=1, integer=True)
    p = check_number("passes", passes, minimum=0, integer=True)
    bpv = check_number("bytes_per_value", bytes_per_value, minimum=0, strict=True)
    return p * allreduce_bytes(n_tok * h * bpv, t)
