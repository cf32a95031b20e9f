"""Data pipeline rates, overlap, prefetch buffers, wave quantization, attention memory.

Chapter 002 §"Data pipeline" (Eq 7-15, Example 1.1), §"Data prefetching and
overlapping" (Figures 10-11, Listing 4), Systems Perspective 1.6 (Table 6) and
§FlashAttention (67.1 MB vs 3.1 MB per head). Base units: bytes, seconds, bytes/s,
items/s; utilizations are fractions (0.2, not 20 %).

Conventions (stated to students):

* A rate is "items per second" in whatever item the caller picks (batches, samples,
  tokens, bytes); all stages compared by ``system_rate`` must use the same item.
* Accelerator utilization is capped at 1 (a pipeline faster than compute does not
  make the accelerator more than busy).
* Overlapped (prefetching) iteration time is the slowest stage (Eq 13); total time for
  n batches through k overlapped stages is sum(stages) + (n - 1) * max(stages).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..units import check_number

__all__ = [
    "storage_rate", "preprocessing_rate", "system_rate", "bottleneck_stage",
    "accelerator_utilization", "serial_iteration_time", "overlapped_iteration_time",
    "pipeline_total_time", "workers_needed", "utilization_cap", "utilization_with_workers",
    "min_workers_for_utilization", "stage_time", "tensor_bytes",
    "prefetch_batches", "prefetch_memory", "buffer_memory", "quantized_utilization",
    "warps_needed", "warp_utilization", "wave_utilization",
    "attention_memory_standard", "attention_memory_tiled",
]


def _pos(name, value):
    return check_number(name, value, minimum=0, strict=True)


def storage_rate(disk_bandwidth, network_bandwidth=None, access_factor=0.1) -> float:
    """R_storage,eff = min(BW_disk, BW_network) * F_access (chapter 002 Eq 7).

    F_access ~ 0.1 under random (shuffled) access; ``network_bandwidth=None`` means
    local storage. Example 1.1: 7 GB/s NVMe x 0.1 = 0.70 GB/s. Bytes/s.
    """
    bw = _pos("disk_bandwidth", disk_bandwidth)
    if network_bandwidth is not None:
        bw = min(bw, _pos("network_bandwidth", network_bandwidth))
    return bw * check_number("access_factor", access_factor, minimum=0, strict=True,
                             maximum=1)


def preprocessing_rate(n_workers, transform_time) -> float:
    """R_preprocessing = N_workers / T_transform (chapter 002 Eq 8). Items/s."""
    return (check_number("n_workers", n_workers, minimum=1, integer=True)
            / _pos("transform_time", transform_time))


def system_rate(*stage_rates) -> float:
    """R = min of the stage rates (chapter 002 Eq 9, 10, 12). Items/s."""
    if not stage_rates:
        raise ValueError("system_rate needs at least one stage rate")
    return min(_pos(f"stage_rates[{i}]", r) for i, r in enumerate(stage_rates))


def bottleneck_stage(**stage_rates) -> str:
    """Name of the slowest stage, e.g. ``bottleneck_stage(preprocess=4e9, transfer=32e9,
    compute=12e9) == "preprocess"`` (chapter 002 Eq 9; Self-Check 3 Q2). Ties: first."""
    if not stage_rates:
        raise ValueError("bottleneck_stage needs at least one named stage rate")
    rates = {k: _pos(k, v) for k, v in stage_rates.items()}
    return min(rates, key=rates.get)


def accelerator_utilization(pipeline_rate, compute_rate) -> float:
    """min(1, R_pipeline / R_compute) (chapter 002 Eq 11: 200 vs 1,000 img/s = 0.2).
    Fraction."""
    return min(1.0, check_number("pipeline_rate", pipeline_rate, minimum=0)
               / _pos("compute_rate", compute_rate))


def _times(stage_times):
    if isinstance(stage_times, (str, bytes)) or not hasattr(stage_times, "__len__"):
        raise TypeError(f"stage_times must be a sequence of seconds, got {stage_times!r}")
    if len(stage_times) == 0:
        raise ValueError("stage_times must contain at least one stage")
    return [check_number(f"stage_times[{i}]", t, minimum=0) for i, t in
            enumerate(stage_times)]


def serial_iteration_time(stage_times) -> float:
    """No overlap: T = sum of stage times (chapter 002 Figure 10). Seconds."""
    return float(sum(_times(stage_times)))


def overlapped_iteration_time(stage_times) -> float:
    """Prefetching overlap: T = max(T_fetch, T_process, T_transfer, ...) (chapter 002
    Eq 13, Figure 11). Seconds."""
    return float(max(_times(stage_times)))


def pipeline_total_time(stage_times, n_batches, overlapped=True) -> float:
    """Time for n batches: serial n * sum; overlapped sum + (n - 1) * max (a k-stage
    pipeline fills once, then one batch leaves per slowest-stage time). Seconds."""
    t = _times(stage_times)
    n = check_number("n_batches", n_batches, minimum=1, integer=True)
    if not overlapped:
        return float(n * sum(t))
    return float(sum(t) + (n - 1) * max(t))


def workers_needed(transform_time, compute_time) -> int:
    """Smallest N with T_transform / N <= T_compute (chapter 002 Eq 8 and 15). Count."""
    return max(1, math.ceil(_pos("transform_time", transform_time)
                            / _pos("compute_time", compute_time) - 1e-12))


def _other_rates(other_rates) -> dict:
    """The other stages' rates as ``{name: items/s}``; a mapping keeps its names, a
    sequence gets ``stage 0``, ``stage 1``, ...; ``None`` or empty means no other stage."""
    if other_rates is None:
        return {}
    if isinstance(other_rates, Mapping):
        items = list(other_rates.items())
    elif isinstance(other_rates, (str, bytes)) or not hasattr(other_rates, "__iter__"):
        raise TypeError("other_rates must be a mapping {stage name: items/s} or a sequence "
                        f"of items/s, got {other_rates!r}")
    else:
        items = [(f"stage {i}", r) for i, r in enumerate(other_rates)]
    return {str(k): _pos(f"other_rates[{k!r}]", v) for k, v in items}


def utilization_cap(compute_rate, other_rates=()) -> float:
    """Highest accelerator utilization that any number of loader workers can give:
    min(1, min(other stage rates) / R_compute) (chapter 002 Eq 9 and 11: the pipeline
    runs at its slowest stage, and workers speed up only their own). 1 when there is no
    other stage. ``other_rates``: ``{name: items/s}`` or a sequence. Fraction."""
    c = _pos("compute_rate", compute_rate)
    others = _other_rates(other_rates)
    return min(1.0, min(others.values(), default=math.inf) / c)


def utilization_with_workers(n_workers, worker_rate, compute_rate, other_rates=()):
    """U(N) = min(1, min(N * r_worker, other stage rates) / R_compute) (chapter 002 Eq 8,
    9 and 11, stages overlapped by prefetching). ``n_workers`` is an int >= 1 or an array
    of them (array in, array out). Fraction."""
    w = _pos("worker_rate", worker_rate)
    c = _pos("compute_rate", compute_rate)
    floor = min(_other_rates(other_rates).values(), default=math.inf)
    n = _counts("n_workers", n_workers)
    out = np.minimum(1.0, np.minimum(n * w, floor) / c)
    return float(out) if np.ndim(out) == 0 else out


def min_workers_for_utilization(worker_rate, compute_rate, other_rates=(), target=1.0) -> int:
    """Fewest loader workers N >= 1 with U(N) >= target (see ``utilization_with_workers``):
    N = max(1, ceil(target * R_compute / r_worker)), provided the other stages let the
    accelerator reach ``target`` at all (``utilization_cap``).

    Rates in items/s of one item (``other_rates``: ``{name: items/s}`` or a sequence);
    ``target`` in (0, 1]. ValueError when no number of workers reaches ``target``; the
    message names the stage that caps it. ResNet-50 on an A100 (2,470 images/s, NVIDIA
    DeepLearningExamples) with 250 images/s per worker: 9 workers for 90 %. Count.
    """
    w = _pos("worker_rate", worker_rate)
    c = _pos("compute_rate", compute_rate)
    t = check_number("target", target, minimum=0, strict=True, maximum=1)
    others = _other_rates(other_rates)
    cap = utilization_cap(c, others)
    if cap < t * (1 - 1e-12):
        stage = min(others, key=others.get)
        raise ValueError(f"no number of workers reaches utilization {t:g}: stage "
                         f"{stage!r} delivers {others[stage]:g} items/s, which caps the "
                         f"accelerator at {cap:.4g}")
    return max(1, math.ceil(t * c / w * (1 - 1e-12)))


def stage_time(work, rate_per_worker, n_workers=1) -> float:
    """Time of one stage: work / (rate per worker * N). Example 1.1: 32,768 tokens at
    500K tokens/s per core = 65.5 ms; 8 workers = 8.2 ms; 262,144 B over 15.75 GB/s =
    0.017 ms. Seconds."""
    return (check_number("work", work, minimum=0) / _pos("rate_per_worker", rate_per_worker)
            / check_number("n_workers", n_workers, minimum=1, integer=True))


def tensor_bytes(shape, bytes_per_value) -> float:
    """prod(shape) * bytes per value. Example 1.1: 32 x 1024 int64 = 262,144 bytes;
    Listing 4's image batch 256 x 1024 x 1024 x 3 fp32 = 3.22e9 bytes. Bytes."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"shape must be a sequence of sizes, got {shape!r}")
    dims = [check_number(f"shape[{i}]", s, minimum=1, integer=True)
            for i, s in enumerate(shape)]
    return float(math.prod(dims)) * _pos("bytes_per_value", bytes_per_value)


def prefetch_batches(num_workers, prefetch_factor=2) -> int:
    """Batches buffered by a PyTorch DataLoader: num_workers * prefetch_factor
    (chapter 002 Listing 4: 4 x 2 = 8). Count."""
    return (check_number("num_workers", num_workers, minimum=1, integer=True)
            * check_number("prefetch_factor", prefetch_factor, minimum=1, integer=True))


def prefetch_memory(num_workers, prefetch_factor, batch_bytes) -> float:
    """Host memory of the prefetch window: workers * factor * M_batch (chapter 002
    §Practical considerations: 8 x 3.2 GB = 25.8 GB). Bytes."""
    return prefetch_batches(num_workers, prefetch_factor) * _pos("batch_bytes",
                                                                 batch_bytes)


def buffer_memory(n_prefetch, n_processing, n_transfer, batch_bytes) -> float:
    """M = (N_prefetch + N_processing + N_transfer) * M_batch (chapter 002 Eq 14). Bytes."""
    n = sum(check_number(k, v, minimum=0, integer=True) for k, v in
            (("n_prefetch", n_prefetch), ("n_processing", n_processing),
             ("n_transfer", n_transfer)))
    return n * _pos("batch_bytes", batch_bytes)


def _counts(name, value):
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be a positive integer or an array of them, "
                        f"got {value!r}")
    if np.any(arr < 1) or np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be integers >= 1, got {value!r}")
    return arr


def quantized_utilization(work, quantum):
    """Useful fraction when work runs in whole quanta: work / (ceil(work / q) * q).

    Vectorized over ``work`` (numpy array in, array out). Fraction.
    """
    return _quantized(work, quantum, "work")


def _quantized(work, quantum, name):
    q = check_number("quantum", quantum, minimum=1, integer=True)
    w = _counts(name, work)
    out = w / (np.ceil(w / q) * q)
    return float(out) if np.ndim(out) == 0 else out


def warps_needed(batch, warp_size=32):
    """ceil(batch / warp_size) (chapter 002 Table 6: 33 -> 2 warps). Count."""
    q = check_number("warp_size", warp_size, minimum=1, integer=True)
    out = np.ceil(_counts("batch", batch) / q).astype(int)
    return int(out) if np.ndim(out) == 0 else out


def warp_utilization(batch, warp_size=32):
    """batch / (warps * warp_size) (chapter 002 Table 6: 33 -> 51.6 %, 65 -> 67.7 %).
    Fraction; vectorized."""
    check_number("warp_size", warp_size, minimum=1, integer=True)
    return _quantized(batch, warp_size, "batch")


def wave_utilization(n_blocks, n_sms=132, blocks_per_sm=1):
    """Tail effect: blocks / (waves * SMs * blocks per SM), one wave = n_sms *
    blocks_per_sm (Systems Perspective 1.6; H100 has 132 SMs). Fraction; vectorized."""
    per_wave = (check_number("n_sms", n_sms, minimum=1, integer=True)
                * check_number("blocks_per_sm", blocks_per_sm, minimum=1, integer=True))
    return _quantized(n_blocks, per_wave, "n_blocks")


def attention_memory_standard(seq_len, bytes_per_value=4) -> float:
    """Score matrix of one head: S^2 * bytes (chapter 002 §FlashAttention: S = 4096,
    FP32: 67,108,864 bytes = 67.1 MB). Bytes."""
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    return float(s) * s * _pos("bytes_per_value", bytes_per_value)


def attention_memory_tiled(seq_len, d_head, bytes_per_value=4, n_tensors=3) -> float:
    """FlashAttention keeps O(S) tensors: n_tensors * S * d_head * bytes (chapter 002:
    Q, K, V at S = 4096, d = 64, FP32 = 3,145,728 bytes = 3.1 MB; with the output Y
    too, n_tensors = 4). Bytes."""
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    d = check_number("d_head", d_head, minimum=1, integer=True)
    n = check_number("n_tensors", n_tensors, minimum=1, integer=True)
    return float(n) * s * d * _pos("bytes_per_value", bytes_per_value)
