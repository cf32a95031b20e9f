"""Static vs continuous batching: the lesson's token-step model and a serving simulator.

Two models, both pure functions returning frozen dataclasses.

**Token-step model** (lesson plan 003, "Continuous Batching" and Exercise 3). All
requests wait in a FIFO queue at t = 0; in every step each occupied slot emits one
token; a request of length L occupies its slot for L steps.

* static: FIFO groups of ``batch_size`` run together for the longest request of the
  group and return together (so every request's latency is the group's end);
* continuous (Orca, Yu et al. OSDI 2022, iteration-level scheduling): a slot freed at
  the end of step s takes the next queued request in step s + 1; a request returns
  when its own last token is out.

Slot utilization = useful token-slots / (slots x steps) = ``sum(L) / (B x T)``.

**Serving simulator on a time axis** (:func:`simulate`). Requests have an arrival time,
a prompt and an output length. One *iteration* runs the model once for the batch:
requests admitted in it prefill their prompt and emit their first token (Orca's
selective batching mixes prefill and decode), every running request emits one token.
Iteration time comes from a :class:`StepTimeModel` (roofline: bytes over HBM bandwidth
vs FLOPs over peak, plus a fixed per-step overhead). Schedulers:

* ``static`` (request level): when the server is idle, take up to ``batch_size``
  waiting requests, run them until the longest is done (finished ones keep padding and
  keep reading their KV cache), return them together;
* ``continuous`` (iteration level, Orca): at every iteration boundary free slots take
  waiting requests FIFO;
* ``paged`` (vLLM, Kwon et al. SOSP 2023): continuous, plus a KV cache of
  ``kv_capacity_blocks`` blocks of ``block_size`` = 16 tokens. A request is admitted
  only when the blocks for its prompt plus first token fit (next to the blocks running
  requests need in this iteration); blocks grow on demand; when an iteration's demand
  does not fit, the most recently admitted request is preempted by *recompute* (its
  blocks are freed, it goes back to the head of the queue and later prefills prompt +
  tokens so far), as in vLLM §4.5.

The simulator is event-driven: between two events (an admission, a completion, a
preemption, an arrival that can be admitted) the batch is fixed, so many iterations
are advanced at once in closed form (the step time is linear in the growing context
on each side of the roofline's max). Cost: O(events x log batch), not O(tokens).
:func:`simulate_stepwise` is the straightforward per-iteration loop with the same
semantics, kept as the reference for tests and benchmarks.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..hardware import Accelerator, get_accelerator
from ..models import TransformerConfig, get_model
from ..training.memory import kv_cache_bytes
from ..units import check_choice, check_number, dtype_bytes
from .kv_cache import BLOCK_SIZE

TOKEN_STEP_POLICIES = ("static", "continuous")
SCHEDULERS = ("static", "continuous", "paged")

LESSON_LENGTHS = (20, 45, 200, 15, 80, 150, 30, 200)
"""The lesson plan's static-batching waste example (003, "Static batching waste"). Tokens."""

EXERCISE3_SEED = 0
"""Seed of Exercise 3's 50 request lengths (see :func:`lesson_lengths`)."""


# ---------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------
def _int_array(name, values, minimum):
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of integers, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one request, got an empty sequence")
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    bad = (arr < minimum) | (arr != np.floor(arr)) if arr.dtype.kind == "f" else arr < minimum
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr)
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] = {arr[i]!r}; allowed: integers >= {minimum}")
    out = arr.astype(np.int64)
    out.flags.writeable = False
    return out


def _frozen(arr, dtype=float):
    out = np.array(arr, dtype=dtype)
    out.flags.writeable = False
    return out


# ---------------------------------------------------------------------------------
# Token-step model (the lesson's)
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenStepResult:
    """Outcome of the token-step model. Times are in steps (one token per slot per step).

    ``start[i]``: steps before request i's first token (it emits in steps start+1 ..
    start+L); ``done[i] = start + L``; ``latency[i]``: step at which it returns (static:
    the group's end; continuous: ``done``); ``slot[i]``: its slot; ``timeline[s]``:
    fraction of slots emitting a useful token in step s + 1.
    """

    policy: str
    batch_size: int
    lengths: np.ndarray
    start: np.ndarray
    done: np.ndarray
    latency: np.ndarray
    slot: np.ndarray
    total_steps: int
    timeline: np.ndarray

    @property
    def useful_slot_steps(self) -> int:
        """Tokens produced: ``sum(lengths)``."""
        return int(self.lengths.sum())

    @property
    def wasted_slot_steps(self) -> int:
        """Idle token-slots: ``batch_size x total_steps - sum(lengths)``."""
        return self.batch_size * self.total_steps - self.useful_slot_steps

    @property
    def utilization(self) -> float:
        """Slot utilization ``sum(L) / (batch_size x total_steps)``. Dimensionless."""
        return self.useful_slot_steps / (self.batch_size * self.total_steps)

    @property
    def mean_latency(self) -> float:
        """Mean of ``latency``. Steps."""
        return float(self.latency.mean())


def _timeline(start, done, total_steps, batch_size):
    diff = np.zeros(total_steps + 1, dtype=np.int64)
    np.add.at(diff, start, 1)
    np.add.at(diff, done, -1)
    return _frozen(np.cumsum(diff[:-1]) / batch_size)


def simulate_static(lengths, batch_size) -> TokenStepResult:
    """Static batching in the lesson's token-step model.

    FIFO groups of ``batch_size`` start together when the previous group has returned,
    run ``max(L in group)`` steps and return together: the group ending at
    ``T_g = sum of group maxima so far`` gives latency ``T_g`` to all its members
    (lesson plan 003, static-batching waste example; misconception 5). Steps.
    """
    L = _int_array("lengths", lengths, 1)
    B = check_number("batch_size", batch_size, minimum=1, integer=True)
    n = L.size
    group = np.arange(n) // B
    starts_idx = np.arange(0, n, B)
    group_len = np.maximum.reduceat(L, starts_idx)
    group_end = np.cumsum(group_len)
    group_start = group_end - group_len
    start = group_start[group]
    done = start + L
    total = int(group_end[-1])
    return TokenStepResult("static", B, L, _frozen(start, np.int64), _frozen(done, np.int64),
                           _frozen(group_end[group], np.int64),
                           _frozen(np.arange(n) % B, np.int64), total,
                           _timeline(start, done, total, B))


def simulate_continuous(lengths, batch_size) -> TokenStepResult:
    """Continuous (iteration-level) batching in the lesson's token-step model.

    Each queued request, in order, takes the slot that frees first (ties: lowest slot
    index): ``start = that slot's free step``, ``done = start + L``, latency ``done``
    (Orca, Yu et al. 2022, §3; lesson plan 003, Exercise 3). O(N log B). Steps.
    """
    L = _int_array("lengths", lengths, 1)
    B = check_number("batch_size", batch_size, minimum=1, integer=True)
    free = [(0, s) for s in range(B)]  # (step the slot frees, slot); already a heap
    start = np.empty(L.size, dtype=np.int64)
    slot = np.empty(L.size, dtype=np.int64)
    for i, length in enumerate(L.tolist()):
        t, s = heapq.heappop(free)
        start[i], slot[i] = t, s
        heapq.heappush(free, (t + length, s))
    done = start + L
    total = int(done.max())
    return TokenStepResult("continuous", B, L, _frozen(start, np.int64),
                           _frozen(done, np.int64), _frozen(done, np.int64),
                           _frozen(slot, np.int64), total, _timeline(start, done, total, B))


def simulate_token_steps(lengths, batch_size, policy="continuous") -> TokenStepResult:
    """:func:`simulate_static` or :func:`simulate_continuous` by ``policy`` name."""
    check_choice("policy", policy, TOKEN_STEP_POLICIES)
    fn = simulate_static if policy == "static" else simulate_continuous
    return fn(lengths, batch_size)


# ---------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------
def lesson_lengths(n=50, seed=EXERCISE3_SEED, mean=80.0, std=60.0, low=10, high=300):
    """Request lengths from the lesson's distribution (003, Exercise 3).

    ``np.clip(np.rint(np.random.default_rng(seed).normal(mean, std, n)), low, high)``
    as int64. Exercise 3 is ``lesson_lengths(50, seed=0)``. Tokens.
    """
    n = check_number("n", n, minimum=1, integer=True)
    seed = check_number("seed", seed, minimum=0, integer=True)
    check_number("std", std, minimum=0)
    low = check_number("low", low, minimum=1, integer=True)
    high = check_number("high", high, minimum=low, integer=True)
    check_number("mean", mean)
    x = np.random.default_rng(seed).normal(mean, std, n)
    return np.clip(np.rint(x), low, high).astype(np.int64)


def poisson_arrivals(n, rate, seed=0):
    """Arrival times of a Poisson process: ``cumsum(Exp(1)) / rate``, first one at the
    first gap (not 0). Dividing one unit-rate draw by ``rate`` keeps the same pattern
    across rates (common random numbers). Seconds; ``rate`` in requests/s."""
    n = check_number("n", n, minimum=1, integer=True)
    rate = check_number("rate", rate, minimum=0, strict=True)
    seed = check_number("seed", seed, minimum=0, integer=True)
    gaps = np.random.default_rng([seed, 1]).standard_exponential(n)
    return np.cumsum(gaps) / rate


@dataclass(frozen=True)
class Workload:
    """Requests: arrival time (s, non-decreasing), prompt tokens (>= 0), output tokens (>= 1)."""

    arrival: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = "user-defined"

    def __post_init__(self):
        out = _int_array("output_tokens", self.output_tokens, 1)
        p = np.asarray(self.prompt_tokens)
        prompt = _int_array("prompt_tokens", np.full(out.size, p) if p.ndim == 0 else p, 0)
        a = np.asarray(self.arrival, dtype=float)
        if a.ndim == 0:
            a = np.full(out.size, float(a))
        if a.shape != out.shape or prompt.shape != out.shape:
            raise ValueError(f"arrival, prompt_tokens and output_tokens must have the same "
                             f"length, got {a.size}, {prompt.size}, {out.size}")
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError("arrival must hold finite times >= 0 s")
        if np.any(np.diff(a) < 0):
            raise ValueError("arrival must be sorted (non-decreasing); sort the requests first")
        object.__setattr__(self, "arrival", _frozen(a))
        object.__setattr__(self, "prompt_tokens", prompt)
        object.__setattr__(self, "output_tokens", out)

    @property
    def n(self) -> int:
        return int(self.output_tokens.size)


def lesson_workload(n=50, rate=None, seed=EXERCISE3_SEED, prompt_tokens=0) -> Workload:
    """``n`` requests with :func:`lesson_lengths` outputs (same ``seed``), a fixed prompt
    length, arriving all at t = 0 (``rate=None``, the lesson's setting) or as a Poisson
    process of ``rate`` requests/s (:func:`poisson_arrivals`)."""
    out = lesson_lengths(n, seed)
    arrival = np.zeros(out.size) if rate is None else poisson_arrivals(n, rate, seed)
    src = f"lesson_workload(n={n}, rate={rate}, seed={seed}, prompt_tokens={prompt_tokens})"
    return Workload(arrival, prompt_tokens, out, src)


# ---------------------------------------------------------------------------------
# Step-time model
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepTimeModel:
    """Time of one model iteration, from the roofline (chapter §1.3; Pope et al. 2022).

    ``time = overhead_s + max(bytes / hbm_bandwidth, flops / peak_flops)`` with
    ``bytes = weight_bytes + kv_bytes_per_token x (context read + prompt tokens written)``
    and ``flops = flops_per_token x (decode seqs + prompt tokens)
    + attn_flops_per_pair x (context tokens + causal prompt pairs)``. Seconds.
    """

    overhead_s: float = 0.0
    weight_bytes: float = 0.0
    kv_bytes_per_token: float = 0.0
    flops_per_token: float = 0.0
    attn_flops_per_pair: float = 0.0
    hbm_bandwidth: float = 1.0
    peak_flops: float = 1.0
    name: str = "user-defined"

    def __post_init__(self):
        for f in ("overhead_s", "weight_bytes", "kv_bytes_per_token", "flops_per_token",
                  "attn_flops_per_pair"):
            check_number(f, getattr(self, f), minimum=0)
        check_number("hbm_bandwidth", self.hbm_bandwidth, minimum=0, strict=True)
        check_number("peak_flops", self.peak_flops, minimum=0, strict=True)
        if self.overhead_s == 0 and self.weight_bytes == 0:
            raise ValueError("overhead_s and weight_bytes are both 0: an iteration would take "
                             "no time; allowed: overhead_s > 0 or weight_bytes > 0")

    @classmethod
    def constant(cls, step_s=1.0) -> "StepTimeModel":
        """Every iteration takes ``step_s`` seconds (the token-step model on a clock)."""
        check_number("step_s", step_s, minimum=0, strict=True)
        return cls(overhead_s=float(step_s), name=f"constant {step_s} s/step")

    @classmethod
    def from_roofline(cls, model, accelerator, dtype="bf16", overhead_s=0.0,
                      kv_dtype=None) -> "StepTimeModel":
        """Roofline iteration time of ``model`` on ``accelerator``.

        Weights: ``n_params x bytes(dtype)`` read once per iteration; KV: ``2 x layers x
        kv_heads x head_dim x bytes`` per token (``memory.kv_cache_bytes``); FLOPs:
        ``2 x active params`` per token plus ``4 x layers x d_model`` per (query, context)
        pair for QK^T and AV (Kaplan et al. 2020, Table 1). Peak for ``dtype``.
        """
        m = model if isinstance(model, TransformerConfig) else get_model(model)
        acc = accelerator if isinstance(accelerator, Accelerator) else get_accelerator(accelerator)
        check_number("overhead_s", overhead_s, minimum=0)
        b = dtype_bytes(dtype)
        kvb = dtype_bytes(kv_dtype) if kv_dtype is not None else b
        return cls(overhead_s=float(overhead_s), weight_bytes=m.n_params * b,
                   kv_bytes_per_token=kv_cache_bytes(m, 1, 1, kvb),
                   flops_per_token=2.0 * m.n_active_params,
                   attn_flops_per_pair=4.0 * m.n_layers * m.d_model,
                   hbm_bandwidth=acc.hbm_bandwidth, peak_flops=acc.peak(dtype),
                   name=f"{m.name} on {acc.name} ({dtype}), overhead {overhead_s} s")

    def iteration_time(self, n_decode, context_tokens, prefill_tokens=0, prefill_pairs=0):
        """Seconds for one iteration: ``n_decode`` sequences reading ``context_tokens`` of
        KV in total, plus prefill of ``prefill_tokens`` with ``prefill_pairs`` causal
        attention pairs (``sum p(p+1)/2``). Numpy arrays broadcast."""
        mem = (self.weight_bytes + self.kv_bytes_per_token
               * (np.asarray(context_tokens) + prefill_tokens)) / self.hbm_bandwidth
        comp = (self.flops_per_token * (np.asarray(n_decode) + prefill_tokens)
                + self.attn_flops_per_pair * (np.asarray(context_tokens) + prefill_pairs)
                ) / self.peak_flops
        out = self.overhead_s + np.maximum(mem, comp)
        return float(out) if np.ndim(out) == 0 else out

    def decode_step_time(self, batch, context_per_seq):
        """Seconds for one decode step of ``batch`` sequences of ``context_per_seq`` tokens."""
        return self.iteration_time(batch, np.asarray(batch) * context_per_seq)

    def prefill_time(self, prompt_tokens):
        """Seconds to prefill one prompt of ``prompt_tokens`` tokens (batch 1)."""
        p = np.asarray(prompt_tokens)
        return self.iteration_time(0, 0, p, p * (p + 1) / 2)

    # -- closed-form sums over a segment of decode iterations ----------------------
    def _pieces(self, n, s0):
        """Decode iteration j (j >= 0) of n seqs starting at context s0 costs
        ``base + slope x j`` on pieces [start, end); returns [(start, end, base, slope)]."""
        o = self.overhead_s
        mb = (self.weight_bytes + self.kv_bytes_per_token * s0) / self.hbm_bandwidth
        ms = self.kv_bytes_per_token * n / self.hbm_bandwidth
        cb = (self.flops_per_token * n + self.attn_flops_per_pair * s0) / self.peak_flops
        cs = self.attn_flops_per_pair * n / self.peak_flops
        ds = ms - cs
        if ds == 0:
            return [(0, math.inf, o + max(mb, cb), ms)]
        r = (cb - mb) / ds  # d(j) = (mb - cb) + ds j changes sign at j = r
        if ds > 0:  # compute side first, memory after
            lines = [(o + cb, cs), (o + mb, ms)]
        else:
            lines = [(o + mb, ms), (o + cb, cs)]
        if not r < 1e15:  # crossover out of reach (or overflow): first line throughout
            return [(0, math.inf) + lines[0]]
        jx = 0 if r < 0 else (math.ceil(r) if ds > 0 else math.floor(r) + 1)
        if jx == 0:
            return [(0, math.inf) + lines[1]]
        return [(0, jx) + lines[0], (jx, math.inf) + lines[1]]

    def _time1(self, n_decode, context_tokens, prefill_tokens=0, prefill_pairs=0.0):
        """:meth:`iteration_time` on plain floats (the simulator's hot path)."""
        mem = (self.weight_bytes + self.kv_bytes_per_token * (context_tokens + prefill_tokens)
               ) / self.hbm_bandwidth
        comp = (self.flops_per_token * (n_decode + prefill_tokens)
                + self.attn_flops_per_pair * (context_tokens + prefill_pairs)) / self.peak_flops
        return self.overhead_s + (mem if mem > comp else comp)

    def segment_time(self, n, s0, m):
        """Seconds for ``m`` decode iterations of ``n`` sequences whose total context
        starts at ``s0`` tokens and grows by ``n`` per iteration (closed form)."""
        return _pieces_time(self._pieces(n, s0), m)

    def segment_steps_until(self, n, s0, delta):
        """Smallest ``m >= 1`` with ``segment_time(n, s0, m) >= delta`` (inverse, closed form)."""
        return _pieces_steps_until(self._pieces(n, s0), delta)


def _pieces_time(pieces, m):
    total = 0.0
    for a, e, base, slope in pieces:
        hi = e if e < m else m
        if hi > a:
            k = hi - a
            total += k * base + slope * k * (a + hi - 1) / 2
    return total


def _pieces_steps_until(pieces, delta):
    done = 0.0
    for a, e, base, slope in pieces:
        if e != math.inf:
            k = e - a
            span = k * base + slope * k * (a + e - 1) / 2
            if done + span < delta:
                done += span
                continue
        rest = delta - done  # need k steps from a: k base + slope k (2a + k - 1)/2 >= rest
        if rest < 0.0:
            rest = 0.0
        qa, qb = slope / 2, base + slope * (a - 0.5)
        k = (-qb + math.sqrt(qb * qb + 4 * qa * rest)) / (2 * qa) if qa > 0 else rest / qb
        m = max(1, a + math.ceil(k))
        while m > 1 and _pieces_time(pieces, m - 1) >= delta:
            m -= 1
        while _pieces_time(pieces, m) < delta:
            m += 1
        return m
    return 1  # pragma: no cover - the last piece is unbounded


# ---------------------------------------------------------------------------------
# Serving simulator
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ServingResult:
    """Per-request times (s) and a timeline of the run.

    ``admit_time``: first admission; ``first_token_time``: end of the iteration that
    produced token 1; ``finish_time``: when the response returns (static: the group's
    end). Timeline: from ``timeline_t[i]`` until the next entry, ``timeline_running[i]``
    slots are busy, ``timeline_useful[i]`` of them produce useful tokens, and the KV cache
    holds ``timeline_kv_tokens[i]`` tokens in ``timeline_kv_blocks[i]`` blocks.
    """

    scheduler: str
    batch_size: int
    block_size: int
    kv_capacity_blocks: float
    workload: Workload
    admit_time: np.ndarray
    first_token_time: np.ndarray
    finish_time: np.ndarray
    preemptions: np.ndarray
    recomputed_tokens: int
    iterations: int
    timeline_t: np.ndarray
    timeline_running: np.ndarray
    timeline_useful: np.ndarray
    timeline_kv_tokens: np.ndarray
    timeline_kv_blocks: np.ndarray
    step_model: StepTimeModel = field(repr=False, default=None)

    # per-request metrics ------------------------------------------------------
    @property
    def queueing_delay(self) -> np.ndarray:
        """``admit_time - arrival``. Seconds."""
        return self.admit_time - self.workload.arrival

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token: ``first_token_time - arrival``. Seconds."""
        return self.first_token_time - self.workload.arrival

    @property
    def e2e_latency(self) -> np.ndarray:
        """End-to-end latency: ``finish_time - arrival``. Seconds."""
        return self.finish_time - self.workload.arrival

    @property
    def tpot(self) -> np.ndarray:
        """Time per output token after the first: ``(finish - first token) / max(out - 1, 1)``.
        Seconds/token."""
        o = self.workload.output_tokens
        return (self.finish_time - self.first_token_time) / np.maximum(o - 1, 1)

    # overall ----------------------------------------------------------------
    @property
    def makespan(self) -> float:
        """Last finish minus first arrival. Seconds."""
        return float(self.finish_time.max() - self.workload.arrival.min())

    @property
    def throughput_tokens(self) -> float:
        """Output tokens per second over the makespan. tokens/s."""
        return float(self.workload.output_tokens.sum()) / self.makespan

    @property
    def throughput_requests(self) -> float:
        """Requests per second over the makespan. requests/s."""
        return self.workload.n / self.makespan

    @property
    def slot_utilization(self) -> float:
        """Useful token-slots over slot-iterations: ``sum(output) / (batch x iterations)``."""
        return float(self.workload.output_tokens.sum()) / (self.batch_size * self.iterations)

    @property
    def kv_utilization(self) -> np.ndarray:
        """Timeline of KV blocks in use / capacity (NaN without a capacity)."""
        if not math.isfinite(self.kv_capacity_blocks):
            return np.full(self.timeline_kv_blocks.shape, np.nan)
        return self.timeline_kv_blocks / self.kv_capacity_blocks

    def percentiles(self, metric="e2e", q=(50, 90, 99)) -> dict:
        """``{q: percentile}`` of ``metric`` in ('e2e', 'ttft', 'tpot', 'queueing'). Seconds."""
        return latency_percentiles(self, metric, q)


_METRICS = ("e2e", "ttft", "tpot", "queueing")


def _metric(result, metric):
    check_choice("metric", metric, _METRICS)
    return {"e2e": result.e2e_latency, "ttft": result.ttft, "tpot": result.tpot,
            "queueing": result.queueing_delay}[metric]


def latency_percentiles(result, metric="e2e", q=(50, 90, 99)) -> dict:
    """Percentiles (numpy 'linear' method) of a per-request metric. Seconds."""
    values = _metric(result, metric)
    qs = [check_number("q", x, minimum=0, maximum=100) for x in np.atleast_1d(q).tolist()]
    return {x: float(v) for x, v in zip(qs, np.percentile(values, qs))}


def slo_attainment(result, e2e_slo=None, ttft_slo=None, tpot_slo=None) -> float:
    """Fraction of requests meeting every given SLO (seconds; None = not checked)."""
    ok = np.ones(result.workload.n, dtype=bool)
    for name, slo, values in (("e2e_slo", e2e_slo, result.e2e_latency),
                              ("ttft_slo", ttft_slo, result.ttft),
                              ("tpot_slo", tpot_slo, result.tpot)):
        if slo is not None:
            check_number(name, slo, minimum=0, strict=True)
            ok &= values <= slo
    return float(ok.mean())


def goodput(result, e2e_slo=None, ttft_slo=None, tpot_slo=None) -> float:
    """Requests per second that meet every given SLO: ``attainment x n / makespan``
    (DistServe, Zhong et al. OSDI 2024, §2). requests/s."""
    return slo_attainment(result, e2e_slo, ttft_slo, tpot_slo) * result.throughput_requests


def _check_sim_args(workload, scheduler, batch_size, step_model, kv_capacity_blocks,
                    block_size):
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
    check_choice("scheduler", scheduler, SCHEDULERS)
    B = check_number("batch_size", batch_size, minimum=1, integer=True)
    bs = check_number("block_size", block_size, minimum=1, integer=True)
    if step_model is None:
        step_model = StepTimeModel.constant(1.0)
    if not isinstance(step_model, StepTimeModel):
        raise TypeError(f"step_model must be a StepTimeModel, got {type(step_model).__name__}")
    if scheduler == "paged":
        if kv_capacity_blocks is None:
            raise ValueError("scheduler='paged' needs kv_capacity_blocks (an integer >= 1)")
        cap = check_number("kv_capacity_blocks", kv_capacity_blocks, minimum=1, integer=True)
        need = -(-(workload.prompt_tokens + workload.output_tokens) // bs)
        if need.max() > cap:
            i = int(np.argmax(need))
            raise ValueError(
                f"kv_capacity_blocks={cap} is smaller than request {i}'s {int(need[i])} blocks "
                f"({int(workload.prompt_tokens[i])} prompt + {int(workload.output_tokens[i])} "
                f"output tokens, {bs} per block); allowed: >= {int(need.max())}")
    else:
        if kv_capacity_blocks is not None:
            raise ValueError(f"kv_capacity_blocks={kv_capacity_blocks!r} only applies to "
                             f"scheduler='paged', not {scheduler!r}; allowed: None")
        cap = math.inf
    return B, bs, step_model, cap


def simulate(workload, scheduler="continuous", batch_size=8, step_model=None,
             kv_capacity_blocks=None, block_size=BLOCK_SIZE) -> ServingResult:
    """Event-driven serving simulation (module docstring gives the exact semantics).

    Default ``step_model``: 1 s per iteration, so times read as steps and, with all
    arrivals at 0 and no prompts, ``static``/``continuous`` reproduce the token-step
    model exactly. O(events log batch_size) for N requests: events <= ~3N + preemptions.
    """
    B, bs, sm, cap = _check_sim_args(workload, scheduler, batch_size, step_model,
                                     kv_capacity_blocks, block_size)
    if scheduler == "static":
        return _simulate_static_events(workload, B, bs, sm)
    return _simulate_continuous_events(workload, scheduler, B, bs, sm, cap)


def _result(workload, scheduler, B, bs, cap, sm, admit, first, finish, preempt, recomputed,
            iterations, tl):
    arr = np.array(tl, dtype=float).reshape(-1, 5)
    t, running, useful, kv_tok, kv_blk = arr.T
    return ServingResult(scheduler, B, bs, float(cap), workload, _frozen(admit),
                         _frozen(first), _frozen(finish), _frozen(preempt, np.int64),
                         int(recomputed), int(iterations), _frozen(t), _frozen(running),
                         _frozen(useful), _frozen(kv_tok), _frozen(kv_blk), sm)


def _simulate_static_events(w, B, bs, sm):
    arrival = w.arrival
    prompt = w.prompt_tokens.tolist()
    out = w.output_tokens.tolist()
    n = w.n
    admit = np.empty(n)
    first = np.empty(n)
    finish = np.empty(n)
    tl = []
    t, head, iterations = 0.0, 0, 0
    while head < n:
        t = max(t, float(arrival[head]))
        hi = min(head + B, int(np.searchsorted(arrival, t, side="right")))
        idx = range(head, hi)
        b = hi - head
        P = sum(prompt[i] for i in idx)
        Q = sum(prompt[i] * (prompt[i] + 1) / 2 for i in idx)
        lens = sorted(out[i] for i in idx)
        omax = lens[-1]
        dt0 = sm._time1(0, 0, P, Q)
        s0 = P + b  # each sequence holds prompt + first token after the prefill iteration
        pieces = sm._pieces(b, s0)
        end = t + dt0 + _pieces_time(pieces, omax - 1)
        admit[head:hi] = t
        first[head:hi] = t + dt0
        finish[head:hi] = end
        # timeline: all b slots run; useful ones drop as members finish
        tl.append((t, b, b, P, sum(-(-prompt[i] // bs) for i in idx)))
        marks = []  # (offset o, members still producing after iteration o)
        k = 0
        while k < b:
            o = lens[k]
            while k < b and lens[k] == o:
                k += 1
            if k < b:
                marks.append((o, b - k))
        if marks:
            offs = np.array([o for o, _ in marks])
            ps = np.array(prompt[head:hi])
            blocks = (-(-(ps[None, :] + offs[:, None]) // bs)).sum(axis=1).tolist()
            for (o, useful), blk in zip(marks, blocks):
                tl.append((t + dt0 + _pieces_time(pieces, o - 1), b, useful, P + b * o, blk))
        iterations += omax
        t = end
        head = hi
        tl.append((t, 0, 0, 0, 0))
    return _result(w, "static", B, bs, math.inf, sm, admit, first, finish, np.zeros(n),
                   0, iterations, tl)


def _alloc_count(bucket, bs, a, b):
    """Blocks requested in iterations a..b (inclusive) by the running requests, whose
    phases are counted in ``bucket``: a request with phase ph needs one block in every
    iteration j with j % bs == ph."""
    if b < a:
        return 0
    total = 0
    for ph, c in enumerate(bucket):
        if c:
            total += c * ((b - ph) // bs - (a - 1 - ph) // bs)
    return total


def _first_overflow(bucket, bs, n, it, free):
    """Smallest j > it with blocks requested in it+1..j exceeding ``free``."""
    q = free // n
    j, acc = it + bs * q, n * q
    while True:
        j += 1
        acc += bucket[j % bs]
        if acc > free:
            return j


def _simulate_continuous_events(w, scheduler, B, bs, sm, cap):
    arrival = w.arrival.tolist()
    p0 = w.prompt_tokens.tolist()
    out = w.output_tokens.tolist()
    n_req = w.n
    paged = scheduler == "paged"
    nan = math.nan
    admit = [nan] * n_req
    first = [nan] * n_req
    finish = [nan] * n_req
    preempt = [0] * n_req
    gen = [0] * n_req  # tokens emitted before the current admission
    eff_p = list(p0)  # tokens to prefill at (re)admission: prompt + tokens so far
    adm_it = [0] * n_req
    phase = [0] * n_req
    ver = [0] * n_req
    bucket = [0] * bs
    running = {}  # insertion order = admission order (LIFO preemption)
    heap = []  # (finish iteration, request, version)
    queue = deque()
    tl = []
    t, it, nxt, done_count = 0.0, 0, 0, 0
    S = 0  # KV tokens held by running requests at the current boundary
    U = 0  # KV blocks held
    F = cap  # free blocks (inf without a capacity)
    recomputed = 0
    time1 = sm._time1

    while done_count < n_req:
        while nxt < n_req and arrival[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        if not running and not queue:
            t = arrival[nxt]
            continue
        dem = bucket[it % bs] if running else 0
        if paged:
            while dem > F:  # preempt by recompute, newest first (vLLM §4.5)
                r = next(reversed(running))
                c = eff_p[r] + (it - adm_it[r])
                blocks = -(-c // bs)
                U -= blocks
                F += blocks
                S -= c
                bucket[phase[r]] -= 1
                if phase[r] == it % bs:
                    dem -= 1
                gen[r] += it - adm_it[r]
                eff_p[r] = p0[r] + gen[r]
                ver[r] += 1
                preempt[r] += 1
                del running[r]
                queue.appendleft(r)
        admitted = []
        while queue and len(running) + len(admitted) < B:
            r = queue[0]
            need = -(-(eff_p[r] + 1) // bs)
            if need + dem > F:
                break
            queue.popleft()
            F -= need
            U += need
            admitted.append(r)
        F -= dem
        U += dem
        if admitted:
            n_old = len(running)
            P = sum(eff_p[r] for r in admitted)
            Q = sum(eff_p[r] * (eff_p[r] + 1) / 2 for r in admitted)
            dt = time1(n_old, S, P, Q)
            for r in admitted:
                if gen[r]:
                    recomputed += gen[r]
                adm_it[r] = it
                running[r] = None
                phase[r] = (it - eff_p[r]) % bs
                bucket[phase[r]] += 1
                heapq.heappush(heap, (it + out[r] - gen[r] - 1, r, ver[r]))
                if admit[r] != admit[r]:
                    admit[r] = t
                if first[r] != first[r]:
                    first[r] = t + dt
            S += n_old + P + len(admitted)
            tl.append((t, len(running), len(running), S, U))
            t += dt
            it += 1
        else:
            n = len(running)
            while heap[0][2] != ver[heap[0][1]]:
                heapq.heappop(heap)
            m = heap[0][0] - it + 1
            if paged:
                m = min(m, _first_overflow(bucket, bs, n, it, F) - it)
            pieces = sm._pieces(n, S)
            if n < B and not queue and nxt < n_req:
                m = min(m, _pieces_steps_until(pieces, arrival[nxt] - t))
            tl.append((t, n, n, S, U))
            if m > 1:
                grow = _alloc_count(bucket, bs, it + 1, it + m - 1)
                F -= grow
                U += grow
            t += _pieces_time(pieces, m)
            S += n * m
            it += m
        while heap and heap[0][0] < it:
            f_it, r, v = heapq.heappop(heap)
            if v != ver[r]:
                continue
            c = eff_p[r] + (it - adm_it[r])
            blocks = -(-c // bs)
            U -= blocks
            F += blocks
            S -= c
            bucket[phase[r]] -= 1
            del running[r]
            finish[r] = t
            done_count += 1
        if not running:
            tl.append((t, 0, 0, 0, 0))
    return _result(w, scheduler, B, bs, cap, sm, admit, first, finish, preempt, recomputed,
                   it, tl)


def simulate_stepwise(workload, scheduler="continuous", batch_size=8, step_model=None,
                      kv_capacity_blocks=None, block_size=BLOCK_SIZE) -> ServingResult:
    """The same semantics as :func:`simulate`, one Python iteration at a time over every
    running request: O(iterations x batch). The reference for tests and the baseline in
    ``bench/batching.py``; the timeline has one entry per iteration."""
    B, bs, sm, cap = _check_sim_args(workload, scheduler, batch_size, step_model,
                                     kv_capacity_blocks, block_size)
    w = workload
    arrival = w.arrival.tolist()
    p0 = w.prompt_tokens.tolist()
    out = w.output_tokens.tolist()
    n_req = w.n
    nan = math.nan
    admit, first, finish = [nan] * n_req, [nan] * n_req, [nan] * n_req
    preempt = [0] * n_req
    emitted = [0] * n_req  # tokens emitted so far
    ctx = [0] * n_req  # KV tokens held
    running = []  # admission order
    queue = deque()
    tl = []
    t, it, nxt, done_count, recomputed = 0.0, 0, 0, 0, 0
    U, F = 0, cap
    static = scheduler == "static"
    group_left = 0  # static: requests of the current group not yet returned
    while done_count < n_req:
        while nxt < n_req and arrival[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        if not running and not queue:
            t = arrival[nxt]
            continue
        # growth demand of running requests in this iteration
        grow = [r for r in running if ctx[r] % bs == 0]
        if scheduler == "paged":
            while len(grow) > F:
                r = running.pop()
                blocks = -(-ctx[r] // bs)
                U -= blocks
                F += blocks
                if r in grow:
                    grow.remove(r)
                ctx[r] = 0
                preempt[r] += 1
                queue.appendleft(r)
        admitted = []
        if static:
            if not running:
                while queue and len(admitted) < B:
                    admitted.append(queue.popleft())
        else:
            while queue and len(running) + len(admitted) < B:
                r = queue[0]
                need = -(-(p0[r] + emitted[r] + 1) // bs)
                if need + len(grow) > F:
                    break
                queue.popleft()
                F -= need
                U += need
                admitted.append(r)
        F -= len(grow)
        U += len(grow)
        S = sum(ctx[r] for r in running)
        P = sum(p0[r] + emitted[r] for r in admitted)
        Q = sum((p0[r] + emitted[r]) * (p0[r] + emitted[r] + 1) / 2 for r in admitted)
        useful = sum(1 for r in running if emitted[r] < out[r]) + len(admitted)
        tl.append((t, len(running) + len(admitted), useful, S + P, U))
        dt = sm.iteration_time(len(running), S, P, Q)
        for r in running:
            ctx[r] += 1
            if emitted[r] < out[r]:
                emitted[r] += 1
        for r in admitted:
            recomputed += emitted[r]
            ctx[r] = p0[r] + emitted[r] + 1
            emitted[r] += 1
            if admit[r] != admit[r]:
                admit[r] = t
            if first[r] != first[r]:
                first[r] = t + dt
            running.append(r)
        if static and admitted:
            group_left = len(admitted)
            U = sum(-(-ctx[r] // bs) for r in running)
        elif static:
            U = sum(-(-ctx[r] // bs) for r in running)
        t += dt
        it += 1
        if static:
            if all(emitted[r] >= out[r] for r in running):
                for r in running:
                    finish[r] = t
                done_count += group_left
                running = []
                U = 0
        else:
            keep = []
            for r in running:
                if emitted[r] >= out[r]:
                    U -= -(-ctx[r] // bs)
                    F += -(-ctx[r] // bs)
                    finish[r] = t
                    done_count += 1
                else:
                    keep.append(r)
            running = keep
        if not running:
            tl.append((t, 0, 0, 0, 0))
    return _result(w, scheduler, B, bs, cap, sm, admit, first, finish, preempt, recomputed,
                   it, tl)


def max_sustainable_rate(slo_s, scheduler="continuous", batch_size=8, step_model=None,
                         kv_capacity_blocks=None, metric="e2e", percentile=90.0,
                         n_requests=2000, seed=0, prompt_tokens=0, rtol=0.01) -> float:
    """Largest Poisson arrival rate (requests/s) whose ``percentile`` of ``metric`` stays
    within ``slo_s`` seconds, on :func:`lesson_workload` (``n_requests``, ``seed``),
    found by bisection to relative precision ``rtol``. Arrivals use common random
    numbers, so latency grows with rate. 0.0 when even a near-idle server misses the SLO;
    ``inf`` when all ``n_requests`` arriving at once still meet it.
    """
    check_number("slo_s", slo_s, minimum=0, strict=True)
    check_number("percentile", percentile, minimum=0, maximum=100)
    check_number("rtol", rtol, minimum=0, strict=True)
    check_choice("metric", metric, _METRICS)
    sm = step_model if step_model is not None else StepTimeModel.constant(1.0)
    base = lesson_workload(n_requests, rate=1.0, seed=seed, prompt_tokens=prompt_tokens)

    def ok(rate):
        arrival = base.arrival / rate if rate != math.inf else 0.0
        w = Workload(arrival, base.prompt_tokens, base.output_tokens, base.source)
        res = simulate(w, scheduler, batch_size, sm, kv_capacity_blocks)
        return latency_percentiles(res, metric, [percentile])[percentile] <= slo_s

    if ok(math.inf):  # even all requests at once meet the SLO: no finite limit
        return math.inf
    # capacity bound: batch_size tokens per (cheapest) iteration
    step_min = sm.iteration_time(1, 0)
    hi = 2.0 * batch_size / (step_min * float(base.output_tokens.mean()))
    lo = hi * 1e-3
    if not ok(lo):
        return 0.0
    while ok(hi):
        lo, hi = hi, hi * 2
    while hi > (1 + rtol) * lo:  # geometric bisection
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


# ---------------------------------------------------------------------------------
# Measured decode step time vs batch (H200)
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeVsBatch:
    """Measured decode steps of GPT-2 1.5B (bf16) on one H200 with a ``past_len`` cache.

    Arrays over ``batch``: ``wall_s`` (median wall time per step), ``gpu_s`` (GPU kernel
    time), ``cache_copy_s`` (GPU time of HF DynamicCache's ``torch.cat``, a copy a paged
    cache does not make), ``kv_bytes``. Prefill (batch 1): ``prefill_tokens``,
    ``prefill_wall_s``, ``prefill_gpu_s``. Seconds and bytes.
    """

    model: str
    accelerator: str
    past_len: int
    batch: np.ndarray
    wall_s: np.ndarray
    gpu_s: np.ndarray
    cache_copy_s: np.ndarray
    kv_bytes: np.ndarray
    prefill_tokens: np.ndarray
    prefill_wall_s: np.ndarray
    prefill_gpu_s: np.ndarray
    source: str


def h200_decode_vs_batch() -> DecodeVsBatch:
    """The measurements in ``coursekit/data/h200_decode_vs_batch.json`` (copied from the
    course's measured data, section C), in seconds and bytes."""
    import json
    from importlib import resources

    raw = json.loads(resources.files("coursekit.data").joinpath("h200_decode_vs_batch.json")
                     .read_text())
    dec = [d for d in raw["decode"] if d["status"] == "ok"]
    pre = [d for d in raw["prefill"] if d["status"] == "ok"]

    def col(rows, key, scale=1.0):
        return _frozen([r[key] * scale for r in rows])

    return DecodeVsBatch(raw["model"]["name"], raw["accelerator"], int(dec[0]["past_len"]),
                         col(dec, "batch"), col(dec, "ms_median", 1e-3),
                         col(dec, "gpu_kernel_ms", 1e-3), col(dec, "gpu_cat_ms", 1e-3),
                         col(dec, "kv_bytes"), col(pre, "prompt_len"),
                         col(pre, "ms_median", 1e-3), col(pre, "gpu_kernel_ms", 1e-3),
                         raw["source"])


# ---------------------------------------------------------------------------------
# Choosing the number of slots: the token-step model on a clock
# ---------------------------------------------------------------------------------
def memory_bound_step_line(step_model, context_tokens) -> tuple:
    """``(base_s, per_slot_s)`` of a memory-bound decode step of B sequences with
    ``context_tokens`` of KV each: ``step(B) = base_s + per_slot_s x B`` with
    ``base_s = overhead_s + weight_bytes / hbm_bandwidth`` and ``per_slot_s =
    kv_bytes_per_token x context_tokens / hbm_bandwidth`` (the memory side of
    :class:`StepTimeModel`; chapter §1.3). Equals ``decode_step_time(B, context_tokens)``
    while the step is memory-bound. Seconds.

    Llama-2-7B on an H100 (3.35 TB/s), 2 ms overhead, 1,024 tokens: 2 ms + 13.48 GB /
    3.35 TB/s = 6.02 ms, and 1,024 x 0.5 MiB / 3.35 TB/s = 0.160 ms per slot.
    """
    if not isinstance(step_model, StepTimeModel):
        raise TypeError(f"step_model must be a StepTimeModel, got {type(step_model).__name__}")
    check_number("context_tokens", context_tokens, minimum=0)
    bw = step_model.hbm_bandwidth
    return (step_model.overhead_s + step_model.weight_bytes / bw,
            step_model.kv_bytes_per_token * context_tokens / bw)


@dataclass(frozen=True)
class SlotTradeoff:
    """Continuous batching of one queued workload (the token-step model, all requests at
    step 0) at each candidate slot count B, on a clock where every step costs
    ``step_time_s = base_step_s + per_slot_s x B``.

    Arrays over ``candidates``: ``total_steps``, ``step_time_s``, ``p90_latency_s``
    (``np.percentile`` of latency in steps x step time, linear interpolation),
    ``mean_latency_s``. ``max_slots_kv``: sequences of ``kv_seq_tokens`` (prompt + the
    longest output) whose 16-token KV blocks fit at once (vLLM §4.2). Seconds, tokens.
    """

    candidates: np.ndarray
    total_steps: np.ndarray
    step_time_s: np.ndarray
    p90_latency_s: np.ndarray
    mean_latency_s: np.ndarray
    useful_tokens: int
    kv_seq_tokens: int
    max_slots_kv: int

    @property
    def makespan_s(self) -> np.ndarray:
        """Time until the last request returns: ``total_steps x step_time_s``. Seconds."""
        return self.total_steps * self.step_time_s

    @property
    def throughput_tokens(self) -> np.ndarray:
        """Output tokens per second: ``useful_tokens / makespan_s``. Tokens/s."""
        return self.useful_tokens / self.makespan_s

    @property
    def kv_fits(self) -> np.ndarray:
        """Whether ``B`` worst-case sequences fit in the KV cache: ``B <= max_slots_kv``."""
        return self.candidates <= self.max_slots_kv

    def feasible(self, p90_slo_s) -> np.ndarray:
        """Candidates that fit in the KV cache and meet ``p90_latency_s <= p90_slo_s``."""
        check_number("p90_slo_s", p90_slo_s, minimum=0, strict=True)
        return self.kv_fits & (self.p90_latency_s <= p90_slo_s)


def slot_tradeoff(lengths, candidates, base_step_s, per_slot_s, kv_capacity_bytes,
                  kv_bytes_per_token, prompt_tokens=0, block_size=BLOCK_SIZE) -> SlotTradeoff:
    """Throughput, P90/mean latency and KV fit of continuous batching at each slot count.

    For each B in ``candidates``: :func:`simulate_continuous` gives ``total_steps`` and the
    latencies in steps; every step costs ``base_step_s + per_slot_s x B`` (a decode step
    run at a fixed batch shape B, e.g. a captured CUDA graph; see
    :func:`memory_bound_step_line`). KV: every slot reserves blocks for the longest request,
    ``ceil((prompt_tokens + max(lengths)) / block_size)`` blocks, out of
    ``floor(kv_capacity_bytes / (block_size x kv_bytes_per_token))`` (vLLM §4.2).
    Seconds, tokens, bytes.
    """
    from .kv_cache import blocks_for_tokens

    L = _int_array("lengths", lengths, 1)
    C = _int_array("candidates", candidates, 1)
    check_number("base_step_s", base_step_s, minimum=0, strict=True)
    check_number("per_slot_s", per_slot_s, minimum=0)
    check_number("kv_capacity_bytes", kv_capacity_bytes, minimum=0)
    check_number("kv_bytes_per_token", kv_bytes_per_token, minimum=0, strict=True)
    prompt = check_number("prompt_tokens", prompt_tokens, minimum=0, integer=True)
    bs = check_number("block_size", block_size, minimum=1, integer=True)
    seq = prompt + int(L.max())
    cap_blocks = int(kv_capacity_bytes // (bs * kv_bytes_per_token))
    max_slots = cap_blocks // blocks_for_tokens(seq, bs)
    steps = base_step_s + per_slot_s * C.astype(float)
    total, p90, mean = [], [], []
    for B, dt in zip(C.tolist(), steps.tolist()):
        r = simulate_continuous(L, B)
        lat = r.latency * dt
        total.append(r.total_steps)
        p90.append(float(np.percentile(lat, 90)))
        mean.append(float(lat.mean()))
    return SlotTradeoff(C, _frozen(total, np.int64), _frozen(steps), _frozen(p90),
                        _frozen(mean), int(L.sum()), seq, int(max_slots))


def best_slot_count(tradeoff, p90_slo_s):
    """The candidate B with the highest throughput among those that fit in the KV cache
    and meet the P90 SLO (``p90_latency_s <= p90_slo_s``), the smallest B on a tie; None
    when no candidate is feasible. An int (slots) or None."""
    if not isinstance(tradeoff, SlotTradeoff):
        raise TypeError(f"tradeoff must be a SlotTradeoff, got {type(tradeoff).__name__}")
    ok = tradeoff.feasible(p90_slo_s)
    if not ok.any():
        return None
    thr = np.where(ok, tradeoff.throughput_tokens, -np.inf)
    best = thr.max()
    return int(tradeoff.candidates[ok & (thr == best)].min())
