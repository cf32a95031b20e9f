"""Roofline model, arithmetic intensity of training operations, bottleneck diagnosis.

Chapter 002 §"Arithmetic intensity" (Table 5, Figure 2), Williams et al. 2009
(Roofline, CACM 52(4)); the profile-level diagnosis follows Table 7, Table 9 and
Self-Check 4. Base units: FLOPs, bytes, FLOP/s, bytes/s, FLOP/byte.

Conventions (stated to students):

* Bytes are HBM traffic: each input read once, each output written once (ideal
  caching). An element-wise op reads and writes every value.
* At exactly the ridge point an operation is called compute-bound.
* The ridge point uses the accelerator's own datasheet: A100-80GB bf16
  312e12 / 2.039e12 = 153 FLOP/byte (the chapter rounds to 156, which is the
  A100-40GB's 312 / 2.0; the 40 GB SXM part has 1.555 TB/s, ridge 201).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..hardware import Accelerator, get_accelerator
from ..units import check_choice, check_number, dtype_bytes

__all__ = [
    "Operation", "arithmetic_intensity", "ridge_point", "attainable_flops", "bound",
    "roofline_time", "gemm", "elementwise", "layernorm", "softmax",
    "attention_scores", "chapter_operations", "BOUNDS",
    "LABELS", "TECHNIQUES", "diagnose_bottleneck", "recommend_technique",
    "COUNTERS", "StepBreakdown", "step_breakdown", "binding_constraint",
]

BOUNDS = ("memory-bound", "compute-bound")


@dataclass(frozen=True)
class Operation:
    """One kernel: FLOPs and HBM bytes moved."""

    name: str
    flops: float
    bytes_moved: float

    @property
    def intensity(self) -> float:
        """FLOPs / bytes moved (FLOP/byte)."""
        return arithmetic_intensity(self.flops, self.bytes_moved)


def arithmetic_intensity(flops, bytes_moved) -> float:
    """I = FLOPs / bytes moved (chapter 002 §Arithmetic intensity). FLOP/byte."""
    f = check_number("flops", flops, minimum=0)
    b = check_number("bytes_moved", bytes_moved, minimum=0, strict=True)
    return f / b


def _accel(accelerator) -> Accelerator:
    if not isinstance(accelerator, (str, Accelerator)):
        raise TypeError(f"accelerator must be a name or an Accelerator, got {accelerator!r}")
    return get_accelerator(accelerator)


def ridge_point(accelerator, dtype="bf16") -> float:
    """Ridge point R_peak(dtype) / BW_HBM (Williams et al. 2009). FLOP/byte.

    A100-80GB bf16: 312e12 / 2.039e12 = 153.0 (the chapter rounds to 156).
    """
    a = _accel(accelerator)
    return a.peak(dtype) / a.hbm_bandwidth


def attainable_flops(intensity, accelerator, dtype="bf16"):
    """Roofline: min(R_peak, I * BW_HBM) (Williams et al. 2009). FLOP/s.

    ``intensity`` may be a number or a numpy array (vectorized for plots).
    """
    a = _accel(accelerator)
    if isinstance(intensity, np.ndarray):
        if intensity.dtype.kind not in "iuf" or np.any(~np.isfinite(intensity)) \
                or np.any(intensity < 0):
            raise ValueError("intensity must hold finite numbers >= 0")
        return np.minimum(a.peak(dtype), intensity * a.hbm_bandwidth)
    i = check_number("intensity", intensity, minimum=0)
    return min(a.peak(dtype), i * a.hbm_bandwidth)


def bound(intensity, accelerator, dtype="bf16") -> str:
    """``memory-bound`` if I < ridge point, else ``compute-bound`` (chapter 002 Table 5)."""
    i = check_number("intensity", intensity, minimum=0)
    return "memory-bound" if i < ridge_point(accelerator, dtype) else "compute-bound"


def roofline_time(op: Operation, accelerator, dtype="bf16") -> float:
    """Lower bound on kernel time max(FLOPs / R_peak, bytes / BW_HBM). Seconds."""
    if not isinstance(op, Operation):
        raise TypeError(f"op must be an Operation, got {type(op).__name__}")
    a = _accel(accelerator)
    return max(op.flops / a.peak(dtype), op.bytes_moved / a.hbm_bandwidth)


# -- operation classes of Table 5 -------------------------------------------------


def _count(name, value):
    return check_number(name, value, minimum=1, integer=True)


def gemm(m, k, n, dtype="bf16", name=None) -> Operation:
    """(m x k) @ (k x n): 2*m*k*n FLOPs; bytes = (m*k + k*n + m*n) * dtype size.

    Intensity grows like O(n) for square shapes (chapter 002 Table 5).
    """
    m, k, n = _count("m", m), _count("k", k), _count("n", n)
    size = dtype_bytes(dtype)
    return Operation(name or f"GEMM {m}x{k}x{n}", 2.0 * m * k * n,
                     float(m * k + k * n + m * n) * size)


def elementwise(n_elements, dtype="fp16", flops_per_element=1.0, reads=1, writes=1,
                name="element-wise") -> Operation:
    """Element-wise op (activation): FLOPs = f * n; bytes = (reads + writes) * n * size.

    Chapter 002 Table 5 gives 0.50 FLOP/byte for FP16 activations, which is 1 FLOP per
    2-byte value *read* (writes=0); counting the write as well gives 0.25.
    """
    n = _count("n_elements", n_elements)
    f = check_number("flops_per_element", flops_per_element, minimum=0)
    r = check_number("reads", reads, minimum=0, integer=True)
    w = check_number("writes", writes, minimum=0, integer=True)
    if r + w == 0:
        raise ValueError("reads + writes must be >= 1 (an op must move some bytes)")
    return Operation(name, f * n, float(r + w) * n * dtype_bytes(dtype))


def layernorm(n_rows, d, dtype="fp16", flops_per_element=8.0) -> Operation:
    """LayerNorm over rows of width d: ~8 FLOPs/element (mean 1, variance 3, normalize 2,
    scale+shift 2); bytes = read + write of n_rows*d values + 2*d parameters.

    About 2 FLOP/byte in FP16 (the chapter's Table 5 says ~10; both are far below any
    ridge point, so the classification, memory-bound, is the same).
    """
    rows, width = _count("n_rows", n_rows), _count("d", d)
    f = check_number("flops_per_element", flops_per_element, minimum=0)
    size = dtype_bytes(dtype)
    return Operation("LayerNorm", f * rows * width, (2.0 * rows * width + 2 * width) * size)


def softmax(n_rows, width, dtype="fp16", flops_per_element=5.0) -> Operation:
    """Row softmax: ~5 FLOPs/element (max, subtract, exp, sum, divide); read + write.

    About 1.25 FLOP/byte in FP16 (the chapter's Table 5 says ~5); memory-bound either way.
    """
    rows, w = _count("n_rows", n_rows), _count("width", width)
    f = check_number("flops_per_element", flops_per_element, minimum=0)
    return Operation("softmax", f * rows * w, 2.0 * rows * w * dtype_bytes(dtype))


def attention_scores(seq_len, d_head, dtype="fp16") -> Operation:
    """Materialized score path of one head: QK^T costs 2*S^2*d_head FLOPs; writing the
    S x S scores and reading them back for softmax moves 2*S^2*size bytes.

    Intensity d_head / 2 in FP16 (chapter 002 §Arithmetic intensity: 32 FLOP/byte for
    d_head = 64, below the A100 ridge, so memory-bound).
    """
    s, d = _count("seq_len", seq_len), _count("d_head", d_head)
    return Operation("attention scores (materialized)", 2.0 * s * s * d,
                     2.0 * s * s * dtype_bytes(dtype))


def chapter_operations(dtype="fp16", batch=32, seq_len=1024, d_model=1600,
                       n_heads=25) -> tuple:
    """The operations of Table 5 / Figure 2 for one GPT-2 XL layer (Napkin 1.1 sizes).

    Returns a tuple of :class:`Operation`: FFN GEMM, QKV GEMM, GELU, LayerNorm,
    softmax, materialized attention scores.
    """
    tokens = _count("batch", batch) * _count("seq_len", seq_len)
    d = _count("d_model", d_model)
    h = _count("n_heads", n_heads)
    return (
        gemm(tokens, d, 4 * d, dtype, name="FFN GEMM"),
        gemm(tokens, d, 3 * d, dtype, name="QKV GEMM"),
        elementwise(tokens * 4 * d, dtype, name="activation (GELU)"),
        layernorm(tokens, d, dtype),
        softmax(batch * h * seq_len, seq_len, dtype),
        attention_scores(seq_len, d // h, dtype),
    )


# -- profile-level diagnosis (Table 7, Table 9, Self-Check 4) ------------------------

LABELS = ("data-bound", "memory-bound", "compute-bound", "capacity-bound",
          "overhead-bound")
"""The course's fixed set of diagnosis labels."""

TECHNIQUES = {
    "data-bound": "prefetching & pipeline overlap",
    "memory-bound": "FlashAttention / operator fusion",
    "compute-bound": "mixed-precision training",
    "capacity-bound": "gradient accumulation & activation checkpointing",
    "overhead-bound": "larger batch / kernel fusion / CUDA graphs",
}
"""First technique per label: chapter 002 Table 9 (data, compute, memory bandwidth,
memory capacity); ``overhead-bound`` is the course's own catch-all (launch overhead,
synchronization, communication), which Table 9 does not list."""


def diagnose_bottleneck(gpu_util, hbm_util, cpu_util, idle_gaps=False, oom=False) -> str:
    """Course decision rule, first match wins (chapter 002 Table 7, Self-Check 4):

    1. ``oom`` (run does not fit)                      -> ``capacity-bound``
    2. ``idle_gaps`` (GPU drops to ~0) and cpu >= 0.8  -> ``data-bound``
    3. gpu_util >= 0.9                                 -> ``compute-bound``
    4. hbm_util >= 0.6                                 -> ``memory-bound``
    5. otherwise                                       -> ``overhead-bound``

    GPU utilization decides before HBM: Self-Check 4's Run A (92 %, HBM saturated) is
    compute-bound as the chapter's answer says, although Table 7 lists "low memory
    bandwidth" for that class. Returns one of :data:`LABELS`.
    """
    g = check_number("gpu_util", gpu_util, minimum=0, maximum=1)
    m = check_number("hbm_util", hbm_util, minimum=0, maximum=1)
    c = check_number("cpu_util", cpu_util, minimum=0, maximum=1)
    for name, flag in (("idle_gaps", idle_gaps), ("oom", oom)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    if oom:
        return "capacity-bound"
    if idle_gaps and c >= 0.8:
        return "data-bound"
    if g >= 0.9:
        return "compute-bound"
    if m >= 0.6:
        return "memory-bound"
    return "overhead-bound"


def recommend_technique(label) -> str:
    """The technique chapter 002 Table 9 prescribes first for ``label``."""
    check_choice("label", label, LABELS)
    return TECHNIQUES[label]



# -- diagnosis from per-step counters (roofline + Eq 11), no threshold table ---------

COUNTERS = ("step_time", "data_wait", "flops", "hbm_bytes")
"""The per-step counters :func:`step_breakdown` reads (seconds, seconds, FLOPs, bytes)."""


@dataclass(frozen=True)
class StepBreakdown:
    """One training step split three ways: waiting for input, the roofline minimum of the
    step's work, and the rest (overhead). Seconds."""

    step_time: float
    data_wait: float
    compute_time: float  # flops / peak
    memory_time: float   # hbm_bytes / HBM bandwidth

    @property
    def roofline_time(self) -> float:
        """Least time the step's kernels can take: max(F / R_peak, B / BW). Seconds."""
        return max(self.compute_time, self.memory_time)

    @property
    def roof(self) -> str:
        """``compute-bound`` if the FLOP roof sets the minimum (also at exactly the ridge),
        else ``memory-bound``."""
        return "compute-bound" if self.compute_time >= self.memory_time else "memory-bound"

    @property
    def overhead(self) -> float:
        """step - data_wait - roofline_time: time beyond the roofline minimum. Seconds."""
        return self.step_time - self.data_wait - self.roofline_time

    def shares(self) -> dict:
        """{label: fraction of the step} for the three parts (they add up to 1)."""
        return {"data-bound": self.data_wait / self.step_time,
                self.roof: self.roofline_time / self.step_time,
                "overhead-bound": self.overhead / self.step_time}


def step_breakdown(step_time, data_wait, flops, hbm_bytes, peak_flops,
                   hbm_bandwidth) -> StepBreakdown:
    """Split a measured step (seconds, seconds, FLOPs, HBM bytes) on an accelerator
    (FLOP/s, bytes/s) into data wait (chapter 002 Eq 11: the accelerator idles), the
    roofline minimum max(F / R_peak, B / BW) (Williams et al. 2009) and overhead.

    ValueError if step_time <= 0, a counter is negative, or the counters are impossible
    (data_wait + roofline minimum > step_time, e.g. FLOPs counted against a sparse peak).
    """
    step = check_number("step_time", step_time, minimum=0, strict=True)
    wait = check_number("data_wait", data_wait, minimum=0)
    f = check_number("flops", flops, minimum=0)
    b = check_number("hbm_bytes", hbm_bytes, minimum=0)
    peak = check_number("peak_flops", peak_flops, minimum=0, strict=True)
    bw = check_number("hbm_bandwidth", hbm_bandwidth, minimum=0, strict=True)
    out = StepBreakdown(step, wait, f / peak, b / bw)
    if wait + out.roofline_time > step * (1 + 1e-9):
        raise ValueError(
            f"impossible counters: data_wait {wait:g} s + roofline minimum "
            f"{out.roofline_time:g} s exceed step_time {step:g} s (check the FLOP and byte "
            "counts against the datasheet peak and bandwidth)")
    return out


def binding_constraint(run, peak_flops, hbm_bandwidth) -> tuple:
    """(label, share): the largest of the three parts of :func:`step_breakdown` and the
    fraction of the step it takes. ``run`` maps :data:`COUNTERS` to numbers (other keys,
    e.g. ``gpu_util`` or ``memory_used``, are ignored: they do not set the step time).
    Labels are ``data-bound``, ``compute-bound``, ``memory-bound``, ``overhead-bound``.
    """
    if not isinstance(run, Mapping):
        raise TypeError(f"run must be a mapping of counters, got {type(run).__name__}")
    missing = [k for k in COUNTERS if k not in run]
    if missing:
        raise ValueError(f"run is missing the counters {missing}; needs {list(COUNTERS)}")
    parts = step_breakdown(*(run[k] for k in COUNTERS), peak_flops, hbm_bandwidth).shares()
    label = max(parts, key=parts.get)
    return label, float(parts[label])
