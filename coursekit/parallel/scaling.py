"""Scaling efficiency, data-parallel speedup over a link, and stragglers (sync vs async SGD).

Chapter 002 §1.6 (the communication tax, Figure 15; Napkin 1.10; the Fallacies' "4-6x
on 8 GPUs") and lab plan 004 (Part 1: efficiency curve, 10 GbE vs InfiniBand; Part 3:
synchronous vs asynchronous SGD with stragglers). Seconds, bytes, bytes/s throughout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..units import check_choice, check_number
from .collectives import (ALLREDUCE_ALGORITHMS, allreduce_time,
                          hierarchical_allreduce_time, link_bandwidth, link_latency)

__all__ = [
    "scaling_efficiency", "speedup", "dp_step_time", "dp_speedup", "marginal_speedup",
    "diminishing_returns_point", "StragglerResult", "simulate_stragglers",
    "expected_sync_step_time", "expected_async_throughput", "HOURS_PER_MONTH",
    "FixCosts", "zero1_frees_recompute", "straggler_fix_costs",
]


def _as_array(name, values, minimum=0.0, strict=True):
    arr = np.asarray(values, dtype=float)
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}={values!r} must be finite numbers")
    if (strict and np.any(arr <= minimum)) or (not strict and np.any(arr < minimum)):
        op = ">" if strict else ">="
        raise ValueError(f"{name}={values!r} must be {op} {minimum}")
    return arr


def _scalar_or_array(x):
    return float(x) if np.ndim(x) == 0 else x


def speedup(t1, tn):
    """Speedup ``T1 / TN`` (dimensionless); scalars or numpy arrays."""
    return _scalar_or_array(_as_array("t1", t1) / _as_array("tn", tn))


def scaling_efficiency(t1, tn, n):
    """Scaling efficiency ``T1 / (N * TN)`` = speedup / N (chapter 002 §1.6, Figure 15;
    lab 004 Part 1). 1.0 is ideal. Dimensionless; scalars or numpy arrays."""
    n_arr = _as_array("n", n)
    if np.any(n_arr != np.round(n_arr)):
        raise ValueError(f"n={n!r} must be whole GPU counts")
    return _scalar_or_array(_as_array("t1", t1) / (n_arr * _as_array("tn", tn)))


def dp_step_time(n, compute_time, grad_bytes, link, *, overlap=0.0, gpus_per_node=1,
                 intra_link=None, algorithm="ring"):
    """Strong-scaling data-parallel step time on ``n`` nodes (vectorized over ``n``).

    ``T(N) = T1/N + max(0, t_AR(N) - overlap * T1/N)``: the fixed global batch splits
    over ``N * gpus_per_node`` GPUs and the gradient all-reduce (ring over ``link``,
    hierarchical inside a node over ``intra_link``) hides behind at most ``overlap``
    of the compute (chapter 002 Napkin 1.10; Sergeev & Del Balso 2018). ``compute_time``
    is one GPU's step time alone (s); ``grad_bytes`` the gradient buffer (bytes). Seconds.
    """
    n_arr = np.atleast_1d(_as_array("n", n))
    if np.any(n_arr != np.round(n_arr)):
        raise ValueError(f"n={n!r} must be whole node counts")
    t1 = check_number("compute_time", compute_time, minimum=0, strict=True)
    s = check_number("grad_bytes", grad_bytes, minimum=0)
    ov = check_number("overlap", overlap, minimum=0, maximum=1)
    g = check_number("gpus_per_node", gpus_per_node, minimum=1, integer=True)
    check_choice("algorithm", algorithm, ALLREDUCE_ALGORITHMS)
    bw, lat = link_bandwidth(link), link_latency(link)
    if g > 1 and intra_link is None:
        raise ValueError("intra_link is required when gpus_per_node > 1")
    ibw = link_bandwidth(intra_link) if g > 1 else 1.0
    ilat = link_latency(intra_link) if g > 1 else 0.0
    comm = np.array([
        (hierarchical_allreduce_time(s, int(k), g, ibw, bw, ilat, lat) if g > 1
         else allreduce_time(s, int(k), bw, lat, algorithm))
        for k in n_arr])
    compute = t1 / (n_arr * g)
    out = compute + np.maximum(0.0, comm - ov * compute)
    return _scalar_or_array(out if np.ndim(n) else out[0])


def dp_speedup(n, compute_time, grad_bytes, link, **kwargs):
    """Speedup ``T(1 GPU) / T(N nodes)`` of :func:`dp_step_time`. Dimensionless."""
    t1 = check_number("compute_time", compute_time, minimum=0, strict=True)
    return _scalar_or_array(t1 / np.asarray(dp_step_time(n, t1, grad_bytes, link,
                                                         **kwargs)))


def marginal_speedup(n, compute_time, grad_bytes, link, **kwargs):
    """Speedup gained by one more node: ``S(N+1) - S(N)``. Dimensionless."""
    n_arr = _as_array("n", n)
    s_next = np.asarray(dp_speedup(n_arr + 1, compute_time, grad_bytes, link, **kwargs))
    s_now = np.asarray(dp_speedup(n_arr, compute_time, grad_bytes, link, **kwargs))
    return _scalar_or_array(s_next - s_now)


def diminishing_returns_point(compute_time, grad_bytes, link, *, threshold=0.5,
                              max_nodes=4096, **kwargs):
    """Smallest node count N whose next node adds less than ``threshold`` speedup,
    ``S(N+1) - S(N) < threshold`` (lab plan 004, Part 1 "Reflect"); None if none up to
    ``max_nodes``. Without latency and overlap, ``S = T1/(T1/N + C)`` and the answer is
    the first N above ``(T1/C) (1/sqrt(threshold) - 1)`` (C: all-reduce time). Count.
    """
    check_number("threshold", threshold, minimum=0, strict=True)
    mx = check_number("max_nodes", max_nodes, minimum=1, integer=True)
    n = np.arange(1, mx + 1)
    gains = np.asarray(marginal_speedup(n, compute_time, grad_bytes, link, **kwargs))
    hits = np.nonzero(gains < threshold)[0]
    return int(n[hits[0]]) if hits.size else None


@dataclass(frozen=True)
class StragglerResult:
    """Seeded simulation of ``n_workers`` over ``n_steps`` steps (times in seconds)."""

    sync_step_times: np.ndarray  # slowest worker per step
    sync_throughput: float  # worker-updates per second (samples/s per micro-batch)
    async_throughput: float  # updates per second, every worker at its own pace
    mean_staleness: float  # updates applied between a worker's read and its write
    max_staleness: int

    @property
    def async_over_sync(self) -> float:
        """Throughput ratio async / sync. Dimensionless."""
        return self.async_throughput / self.sync_throughput


def _check_straggler(n_workers, base_time, straggler_prob, slowdown):
    n = check_number("n_workers", n_workers, minimum=1, integer=True)
    t = check_number("base_time", base_time, minimum=0, strict=True)
    q = check_number("straggler_prob", straggler_prob, minimum=0, maximum=1)
    k = check_number("slowdown", slowdown, minimum=1)
    return n, t, q, k


def expected_sync_step_time(n_workers, base_time, straggler_prob, slowdown) -> float:
    """Expected synchronous step time: it waits for the slowest of N workers, each slow
    (``slowdown`` x) with probability q: ``t (1 + (k-1)(1 - (1-q)^N))``. Seconds."""
    n, t, q, k = _check_straggler(n_workers, base_time, straggler_prob, slowdown)
    return t * (1.0 + (k - 1.0) * (1.0 - (1.0 - q) ** n))


def expected_async_throughput(n_workers, base_time, straggler_prob, slowdown) -> float:
    """Asynchronous SGD throughput, every worker at its own mean pace:
    ``N / (t (1 + q(k-1)))`` (Dean et al. 2012, Downpour SGD). Updates per second."""
    n, t, q, k = _check_straggler(n_workers, base_time, straggler_prob, slowdown)
    return n / (t * (1.0 + q * (k - 1.0)))


def simulate_stragglers(n_workers, n_steps, base_time, straggler_prob, slowdown, *,
                        jitter=0.0, seed=0) -> StragglerResult:
    """Sync vs async SGD with stragglers, vectorized (O(N*steps*log) via sorting).

    Each worker-step takes ``base_time * (1 + jitter * |z|)``, times ``slowdown`` with
    probability ``straggler_prob`` (z standard normal, seeded). Sync: each step lasts
    as long as its slowest worker. Async: workers never wait; an update's staleness is
    the number of other updates applied while it was computed (about N-1 when times
    jitter; analytic checks: :func:`expected_sync_step_time`,
    :func:`expected_async_throughput`). Seconds, updates/s.
    """
    n, t, q, k = _check_straggler(n_workers, base_time, straggler_prob, slowdown)
    steps = check_number("n_steps", n_steps, minimum=1, integer=True)
    j = check_number("jitter", jitter, minimum=0)
    rng = np.random.default_rng(check_number("seed", seed, minimum=0, integer=True))
    times = t * (1.0 + j * np.abs(rng.standard_normal((steps, n))))
    times = times * np.where(rng.random((steps, n)) < q, k, 1.0)
    sync = times.max(axis=1)
    sync_tp = n * steps / sync.sum()
    ends = np.cumsum(times, axis=0)
    starts = np.vstack([np.zeros((1, n)), ends[:-1]])  # exact: a step starts at the last end
    horizon = ends[-1].min()  # count only while every worker is still running
    async_tp = float(np.sum(ends <= horizon)) / horizon
    # Updates are applied one at a time in completion order (ties broken at random);
    # staleness = own position in that order - updates finished before the read.
    flat = ends.ravel()
    order = np.lexsort((rng.random(flat.size), flat))
    rank = np.empty(flat.size, dtype=np.int64)
    rank[order] = np.arange(flat.size)
    stale = rank - np.searchsorted(flat[order], starts.ravel(), side="right")
    return StragglerResult(sync, float(sync_tp), float(async_tp), float(stale.mean()),
                           int(stale.max()))


HOURS_PER_MONTH = 730.0
"""8,760 hours per year / 12 (the lab plan's "$ per month" at a fleet busy all month)."""


def zero1_frees_recompute(n_params, n_gpus, gpu_memory_bytes, activation_bytes) -> bool:
    """Whether ZeRO-1 over ``n_gpus`` data-parallel GPUs frees enough memory to keep a
    micro-batch's activations instead of recomputing them: weights + gradients (2 + 2
    bytes/param, replicated) + Adam moments (8 bytes/param, sharded ``1/N``) +
    ``activation_bytes`` <= ``gpu_memory_bytes`` (lesson plan's 12 bytes/param;
    Rajbhandari et al. 2020 §5). Bytes in, bool out."""
    n = check_number("n_params", n_params, minimum=0, strict=True)
    g = check_number("n_gpus", n_gpus, minimum=1, integer=True)
    cap = check_number("gpu_memory_bytes", gpu_memory_bytes, minimum=0, strict=True)
    act = check_number("activation_bytes", activation_bytes, minimum=0)
    return n * (2 + 2 + 8 / g) + act <= cap


@dataclass(frozen=True)
class FixCosts:
    """Monthly dollars of a data-parallel fleet today (sync, waiting for stragglers) and
    after each of the lab's two fixes; ``choice`` is the cheaper fix."""

    sync: float
    async_: float
    zero: float

    @property
    def choice(self) -> str:
        """``"zero"`` or ``"async"``, whichever costs less (``"zero"`` on a tie: it leaves
        the update's mathematics unchanged)."""
        return "async" if self.async_ < self.zero else "zero"

    @property
    def savings(self) -> float:
        """Dollars per month the cheaper fix saves against today's bill."""
        return self.sync - min(self.async_, self.zero)


def straggler_fix_costs(n_gpus, dollars_per_gpu_hour, straggler_prob, slowdown,
                        async_penalty, zero_frees_recompute, *, recompute_factor=4 / 3,
                        hours_per_month=HOURS_PER_MONTH) -> FixCosts:
    """Lab plan 004 Part 3's stakeholder challenge, as monthly cost of the same training
    progress. Today (sync): the fleet is busy all month, ``N * hours * price``; its steps
    take ``E = 1 + (k-1)(1-(1-q)^N)`` base steps (:func:`expected_sync_step_time`).
    Async: no waiting, each worker at its mean pace ``1 + q(k-1)`` (Dean et al. 2012),
    but ``(1 + async_penalty)`` times the updates to converge (staleness; Dai et al.
    2019 show the penalty is problem-dependent): ``sync (1+p)(1+q(k-1))/E``. ZeRO-1:
    still synchronous; if the freed memory holds the activations, full recomputation
    (one extra forward, ``recompute_factor`` = 4/3 of the step; Korthikanti et al. 2022
    §5) stops: ``sync / recompute_factor``, else ``sync``. Dollars per month."""
    n = check_number("n_gpus", n_gpus, minimum=1, integer=True)
    price = check_number("dollars_per_gpu_hour", dollars_per_gpu_hour, minimum=0)
    pen = check_number("async_penalty", async_penalty, minimum=0)
    rf = check_number("recompute_factor", recompute_factor, minimum=1)
    hours = check_number("hours_per_month", hours_per_month, minimum=0, strict=True)
    if not isinstance(zero_frees_recompute, bool):
        raise TypeError(f"zero_frees_recompute must be a bool, got {zero_frees_recompute!r}")
    e_sync = expected_sync_step_time(n, 1.0, straggler_prob, slowdown)
    mean_worker = 1.0 + straggler_prob * (slowdown - 1.0)
    sync = n * hours * price
    return FixCosts(sync=sync, async_=sync * (1.0 + pen) * mean_worker / e_sync,
                    zero=sync / rf if zero_frees_recompute else sync)
