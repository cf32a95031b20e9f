"""Speculative decoding: draft-and-verify, acceptance, speedup, speculative sampling.

A small draft model proposes ``k`` tokens one at a time; the target model scores all of
them (plus one more position) in ONE forward pass; the longest accepted prefix is kept,
followed by one token from the target (the correction at the first rejection, or a bonus
token when every draft is accepted). Sources: Leviathan, Kalman, Matias 2023, "Fast
Inference from Transformers via Speculative Decoding" (ICML; §3.1-3.5, Thm 3.8, 3.11,
Appendix A.1), Chen et al. 2023, "Accelerating LLM Decoding with Speculative Sampling"
(Algorithm 2, Theorem 1); lesson plan 003 §7a and Exercise 2.

Conventions (DESIGN.md): ``alpha`` = probability that one draft token is accepted
(i.i.d. across positions unless stated), ``k`` = draft length (Leviathan's gamma),
``c`` = time of one draft pass / time of one target pass. Times are seconds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from numbers import Integral

import numpy as np

from ..hardware import get_accelerator
from ..units import MS, check_choice, check_number, dtype_bytes

DRAFT_MODES = ("sample", "greedy")

# --------------------------------------------------------------------------- validation


def _check_alpha(alpha):
    return check_number("alpha", alpha, minimum=0, maximum=1)


def _check_k(k, name="k"):
    return check_number(name, k, minimum=1, integer=True)


def _check_c(c, name="c"):
    return check_number(name, c, minimum=0)


def _as_vector(name, values, what, upper=None):
    """``values`` as a non-empty 1-D float array of finite numbers in [0, ``upper``]."""
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be a sequence of {what}, got {values!r}")
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of {what}, got {values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of {what}, "
                         f"got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or (
            upper is not None and np.any(arr > upper)):
        allowed = ">= 0" if upper is None else f"in [0, {upper:g}]"
        raise ValueError(f"{name} must hold finite {what} {allowed}, got {arr.tolist()!r}")
    return arr


def _as_distribution(name, p, atol=1e-6):
    """``p`` as a 1-D float array of probabilities (non-negative, finite, sums to 1)."""
    arr = _as_vector(name, p, "probabilities")
    total = float(arr.sum())
    if abs(total - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1 (tolerance {atol:g}), it sums to {total!r}")
    return arr


def _pair(p, q):
    p = _as_distribution("p", p)
    q = _as_distribution("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length (one probability per vocabulary "
                         f"token), got len(p)={p.size} and len(q)={q.size}")
    return p, q


def _check_unit(name, u):
    u = check_number(name, u, minimum=0, maximum=1)
    if u >= 1:
        raise ValueError(f"{name} must be a uniform draw in [0, 1), got {u!r}")
    return u


# --------------------------------------------------------------------------- analytic model


def expected_tokens_per_step(alpha, k) -> float:
    """Expected tokens emitted per target pass: (1 - alpha^(k+1)) / (1 - alpha); k+1 at alpha=1.

    Leviathan et al. 2023, Eq. (1) / Thm 3.8 numerator (i.i.d. acceptance). Tokens.
    """
    alpha = _check_alpha(alpha)
    k = _check_k(k)
    if alpha == 1:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def expected_accepted_drafts(alpha, k) -> float:
    """Expected accepted draft tokens per step: sum_{i=1..k} alpha^i = alpha(1-alpha^k)/(1-alpha).

    Equals expected_tokens_per_step - 1 (the target's own token). Tokens.
    """
    return expected_tokens_per_step(alpha, k) - 1.0


def acceptance_rate(alpha, k) -> float:
    """Fraction of drafted tokens that are accepted: E[accepted] / k (dimensionless).

    Decreases with k because a draft token is kept only if all before it are (003 Exercise 2).
    """
    k = _check_k(k)
    return expected_accepted_drafts(alpha, k) / k


def walltime_speedup(alpha, k, c) -> float:
    """Walltime improvement factor: (1 - alpha^(k+1)) / ((1 - alpha)(k c + 1)).

    Leviathan et al. 2023, Thm 3.8; assumes verifying k tokens costs one target pass
    (memory-bound decode). Dimensionless; k=1 gives (1 + alpha)/(1 + c).
    """
    c = _check_c(c)
    k = _check_k(k)
    return expected_tokens_per_step(alpha, k) / (k * c + 1.0)


def max_speedup(alpha) -> float:
    """Upper bound on tokens per target pass as k -> infinity (c = 0): 1 / (1 - alpha).

    Leviathan et al. 2023, §3.3. Dimensionless; ``math.inf`` at alpha = 1.
    """
    alpha = _check_alpha(alpha)
    return math.inf if alpha == 1 else 1.0 / (1.0 - alpha)


def optimal_draft_length(alpha, c, k_max=32) -> int:
    """The k in 1..k_max that maximizes walltime_speedup(alpha, k, c) (smallest k on ties).

    Leviathan et al. 2023, §3.5 and Figure 3. If even the best speedup is below 1,
    speculation does not pay at this (alpha, c). Tokens (an integer).
    """
    _check_alpha(alpha)
    _check_c(c)
    k_max = _check_k(k_max, "k_max")
    speedups = [walltime_speedup(alpha, k, c) for k in range(1, k_max + 1)]
    best = max(speedups)
    return 1 + next(i for i, s in enumerate(speedups) if s >= best * (1 - 1e-12))


def relative_operations(alpha, k, c_ops=0.0) -> float:
    """Expected arithmetic operations relative to plain decoding: (1-alpha)(k c_ops + k + 1)/(1-alpha^(k+1)).

    Leviathan et al. 2023, Thm 3.11. With ``c_ops = 0`` this is target-model work only,
    (k + 1) / E[tokens]: the target scores k+1 positions per pass but keeps only
    E[tokens] of them. ``c_ops`` = draft/target operations per token. Dimensionless.
    """
    k = _check_k(k)
    c_ops = _check_c(c_ops, "c_ops")
    return (k * c_ops + k + 1) / expected_tokens_per_step(alpha, k)


def expected_tokens_positional(alphas) -> float:
    """Expected tokens per target pass with position-dependent acceptance alphas[0..k-1].

    E = 1 + sum_{i=1..k} prod_{j<=i} alpha_j (draft i is kept only if drafts 1..i are).
    Reduces to Leviathan Eq. (1) for equal alphas. Tokens.
    """
    a = _check_alphas(alphas)
    return float(1.0 + np.cumprod(a).sum())


def _check_alphas(alphas):
    """Per-position acceptance probabilities: a non-empty 1-D sequence in [0, 1]."""
    return _as_vector("alphas", alphas, "acceptance probabilities (one per draft position)",
                      upper=1)


# --------------------------------------------------------------------------- greedy verification


def verify_greedy(draft_tokens, target_tokens):
    """Greedy verification: keep the longest prefix where draft == target, then the target's token.

    ``target_tokens`` are the target's argmax tokens at the draft positions (length k) and
    optionally one more position (length k + 1, the bonus when all k match). Returns
    ``(n_accepted, emitted)`` with ``emitted = draft[:n] + [target[n]]`` (no bonus if the
    target list has only k entries and all match). Leviathan et al. 2023, §2 (greedy case);
    lesson 003 §7a worked example.
    """
    draft = list(draft_tokens)
    target = list(target_tokens)
    k = len(draft)
    if k < 1:
        raise ValueError("draft_tokens must hold at least 1 token, got 0")
    if len(target) not in (k, k + 1):
        raise ValueError(f"target_tokens must have len(draft_tokens) = {k} or {k + 1} entries, "
                         f"got {len(target)}")
    n = 0
    while n < k and draft[n] == target[n]:
        n += 1
    emitted = draft[:n] + (target[n:n + 1] if n < len(target) else [])
    return n, emitted


# --------------------------------------------------------------------------- speculative sampling


def acceptance_probability(p, q) -> float:
    """alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q): chance a draft x ~ q is accepted.

    Leviathan et al. 2023, Definition 3.1 and Corollary 3.6. Dimensionless.
    """
    p, q = _pair(p, q)
    return float(np.minimum(p, q).sum())


def residual_distribution(p, q) -> np.ndarray:
    """Resampling distribution after a rejection: norm(max(0, p - q)).

    Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Eq. (2). If p == q there is
    never a rejection; ``p`` itself is returned then. Probabilities (array of len(p)).
    """
    p, q = _pair(p, q)
    r = np.maximum(p - q, 0.0)
    s = r.sum()
    if s <= 1e-15:
        return p.copy()
    return r / s


def _accept_ratio(p_x, q_x):
    if q_x <= 0:
        return 1.0  # x cannot be drafted from q; accepting keeps the rule well defined
    return min(1.0, p_x / q_x)


def _cdf(probs):
    """Cumulative sums with the last token of non-zero mass (and after) pinned to 1.0,
    so round-off can never select a zero-probability token."""
    cdf = np.cumsum(probs)
    last = int(np.flatnonzero(probs > 0)[-1])
    cdf[last:] = 1.0
    return cdf


def _inverse_cdf(probs, u):
    """Token index i with cdf[i-1] <= u < cdf[i] (inverse-CDF sampling)."""
    return int(np.searchsorted(_cdf(probs), u, side="right"))


def speculative_token(p, q, draft_token, u_accept, u_resample) -> int:
    """One position of speculative sampling, driven by two uniforms in [0, 1).

    Accept the draft x if u_accept < min(1, p(x)/q(x)); otherwise return the token at
    u_resample of the inverse CDF of norm(max(0, p - q)). The result is distributed
    exactly as p when x ~ q (Leviathan et al. 2023, Thm 3.5; Chen et al. 2023, Thm 1).
    Returns a token index (int); it equals ``draft_token`` iff the draft was accepted.
    """
    p, q = _pair(p, q)
    if isinstance(draft_token, bool) or not isinstance(draft_token, Integral) \
            or not 0 <= draft_token < p.size:
        raise ValueError(f"draft_token must be a token index in 0..{p.size - 1}, "
                         f"got {draft_token!r}")
    _check_unit("u_accept", u_accept)
    _check_unit("u_resample", u_resample)
    x = int(draft_token)
    if u_accept < _accept_ratio(p[x], q[x]):
        return x
    return _inverse_cdf(residual_distribution(p, q), u_resample)


def _rng(seed):
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None:
        check_number("seed", seed, minimum=0, integer=True)
    return np.random.default_rng(seed)


@dataclass(frozen=True)
class StepResult:
    """Outcome of one draft-and-verify step: accepted drafts and all emitted token ids."""

    n_accepted: int
    tokens: tuple


def speculative_step(p_rows, q_rows, draft_tokens, seed=None) -> StepResult:
    """One speculative-sampling step over k drafted tokens (plus the bonus token).

    ``q_rows[i]`` is the draft distribution that produced ``draft_tokens[i]``, ``p_rows[i]``
    the target's at the same position; ``p_rows`` has k + 1 rows, the last one for the
    bonus token sampled when all k drafts are accepted. Accept draft i with probability
    min(1, p_i(x)/q_i(x)); at the first rejection emit a token from norm(max(0, p_i - q_i))
    and stop. Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2.
    """
    draft = list(draft_tokens)
    k = len(draft)
    if k < 1:
        raise ValueError("draft_tokens must hold at least 1 token, got 0")
    if len(p_rows) != k + 1 or len(q_rows) != k:
        raise ValueError(f"with k={k} drafts, p_rows needs k+1={k + 1} rows and q_rows k={k}; "
                         f"got {len(p_rows)} and {len(q_rows)}")
    rng = _rng(seed)
    out = []
    for i, x in enumerate(draft):
        tok = speculative_token(p_rows[i], q_rows[i], x, rng.random(), rng.random())
        out.append(tok)
        if tok != x:
            return StepResult(i, tuple(out))
    p_last = _as_distribution("p_rows[-1]", p_rows[k])
    out.append(_inverse_cdf(p_last, rng.random()))
    return StepResult(k, tuple(out))


def output_distribution(p, q, draft="sample") -> np.ndarray:
    """Exact distribution of the emitted token for one verified position.

    draft="sample": x ~ q, then the accept/resample rule; equals p (Leviathan Thm 3.5).
    draft="greedy": x = argmax q always, same rule; out = a e_x + (1 - a) r with
    a = min(1, p(x)/q(x)) and r = norm(max(0, p - q)), which is NOT p in general.
    Probabilities (array).
    """
    p, q = _pair(p, q)
    check_choice("draft", draft, DRAFT_MODES)
    r = residual_distribution(p, q)
    if draft == "sample":
        a = np.array([_accept_ratio(pi, qi) for pi, qi in zip(p, q)])
        return q * a + float(np.sum(q * (1 - a))) * r
    x = int(np.argmax(q))
    a = _accept_ratio(p[x], q[x])
    out = (1 - a) * r
    out[x] += a
    return out


def sample_verified_tokens(p, q, n, seed=None, draft="sample") -> np.ndarray:
    """n independent one-position draft-and-verify outcomes, vectorized (token ids).

    Draft x ~ q (or x = argmax q for ``draft="greedy"``), accept with probability
    min(1, p(x)/q(x)), else sample norm(max(0, p - q)). For the chi-square check that the
    output follows p (Leviathan et al. 2023, Thm 3.5).
    """
    p, q = _pair(p, q)
    check_choice("draft", draft, DRAFT_MODES)
    n = check_number("n", n, minimum=1, integer=True)
    rng = _rng(seed)
    if draft == "sample":
        x = np.searchsorted(_cdf(q), rng.random(n), side="right")
    else:
        x = np.full(n, int(np.argmax(q)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, np.minimum(1.0, p / np.where(q > 0, q, 1.0)), 1.0)
    accept = rng.random(n) < ratio[x]
    r = residual_distribution(p, q)
    resampled = np.searchsorted(_cdf(r), rng.random(n), side="right")
    return np.where(accept, x, resampled)


# --------------------------------------------------------------------------- chi-square


def _gammainc_upper_regularized(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a): series for x < a+1, Lentz continued fraction else.

    Numerical Recipes (Press et al. 2007, §6.2); relative accuracy ~1e-14.
    """
    if x <= 0:
        return 1.0
    log_pref = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(10_000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return max(0.0, 1.0 - total * math.exp(log_pref))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return math.exp(log_pref) * h


def chi2_sf(x, dof) -> float:
    """Survival function of the chi-square distribution: P(X >= x) = Q(dof/2, x/2).

    Regularized upper incomplete gamma (Press et al. 2007, §6.2, §14.3). Dimensionless.
    """
    x = check_number("x", x, minimum=0)
    dof = check_number("dof", dof, minimum=1, integer=True)
    return _gammainc_upper_regularized(dof / 2.0, x / 2.0)


@dataclass(frozen=True)
class ChiSquareResult:
    """Pearson chi-square goodness of fit: statistic, degrees of freedom, p-value, bins used."""

    statistic: float
    dof: int
    p_value: float
    n_bins: int


def chi_square_test(samples, probs, min_expected=5.0) -> ChiSquareResult:
    """Pearson's goodness-of-fit test of integer ``samples`` against ``probs``.

    stat = sum (O - E)^2 / E over bins; bins with E < min_expected are pooled into one
    (Cochran's rule), dof = bins - 1, p = chi2_sf(stat, dof). A token seen where probs is 0
    gives p = 0.
    """
    probs = _as_distribution("probs", probs)
    s = np.asarray(samples)
    if s.ndim != 1 or s.size == 0 or s.dtype.kind not in "iu":
        raise ValueError("samples must be a non-empty 1-D array of token ids")
    if s.min() < 0 or s.max() >= probs.size:
        raise ValueError(f"samples must be token ids in 0..{probs.size - 1}")
    n = s.size
    observed = np.bincount(s, minlength=probs.size).astype(float)
    expected = probs * n
    if np.any(observed[expected == 0] > 0):
        return ChiSquareResult(math.inf, max(1, probs.size - 1), 0.0, probs.size)
    big = expected >= min_expected
    obs = list(observed[big])
    exp = list(expected[big])
    small_e = float(expected[~big].sum())
    if small_e > 0:
        obs.append(float(observed[~big].sum()))
        exp.append(small_e)
    obs, exp = np.array(obs), np.array(exp)
    if obs.size < 2:
        raise ValueError("too few samples: fewer than 2 bins reach the minimum expected count "
                         f"{min_expected}; draw more samples")
    stat = float(np.sum((obs - exp) ** 2 / exp))
    dof = int(obs.size - 1)
    return ChiSquareResult(stat, dof, chi2_sf(stat, dof), int(obs.size))


# --------------------------------------------------------------------------- Monte Carlo


@dataclass(frozen=True)
class Simulation:
    """Monte Carlo of n_steps draft-and-verify steps: accepted drafts per step (array)."""

    k: int
    accepted: np.ndarray

    @property
    def n_steps(self) -> int:
        """Number of target passes simulated."""
        return int(self.accepted.size)

    @property
    def tokens(self) -> int:
        """Total tokens emitted: accepted drafts + one target token per step."""
        return int(self.accepted.sum(dtype=np.int64)) + self.n_steps

    @property
    def mean_tokens_per_step(self) -> float:
        """Sample mean of tokens per target pass (estimates expected_tokens_per_step)."""
        return self.tokens / self.n_steps

    @property
    def stderr_tokens_per_step(self) -> float:
        """Standard error of mean_tokens_per_step: sample std / sqrt(n_steps)."""
        if self.n_steps < 2:
            return math.inf
        return float(self.accepted.std(ddof=1, dtype=np.float64) / math.sqrt(self.n_steps))

    @property
    def acceptance_rate(self) -> float:
        """Accepted drafts / drafted tokens (estimates acceptance_rate(alpha, k))."""
        return float(self.accepted.sum(dtype=np.int64)) / (self.k * self.n_steps)

    def speedup(self, c) -> float:
        """Simulated walltime speedup: tokens / (n_steps (k c + 1)) target-pass times."""
        c = _check_c(c)
        return self.tokens / (self.n_steps * (self.k * c + 1.0))


_CHUNK = 1 << 16  # steps per block: keeps the working set in the CPU cache
_TABLE_BITS = 16


def _outcome_table(alpha, k, bits=_TABLE_BITS):
    """Accepted-draft count for each of the 2^bits equal slices of U in [0, 1), or -1 where
    a threshold alpha^j falls inside the slice (then more bits of U are needed)."""
    n = 1 << bits
    thresholds = np.sort(alpha ** np.arange(1, k + 1, dtype=float))
    lo = np.arange(n) / n
    hi = (np.arange(n) + 1) / n
    count_lo = k - np.searchsorted(thresholds, lo, side="right")   # #{j: alpha^j > lo}
    count_hi = k - np.searchsorted(thresholds, hi, side="left")    # #{j: alpha^j >= hi}
    return np.where(count_lo == count_hi, count_lo, -1).astype(np.int16)


def _accepted_from_uniform(u, inv_log_alpha, k):
    with np.errstate(divide="ignore"):  # U == 0 gives log 0 = -inf -> k accepted
        return np.minimum(np.floor(np.log(u) * inv_log_alpha), k)


def simulate(alpha, k, n_steps, seed=0) -> Simulation:
    """Vectorized Monte Carlo of i.i.d. acceptance: accepted = min(k, floor(ln U / ln alpha)).

    One uniform U per step: "at least j drafts accepted" is the event U < alpha^j, which has
    probability alpha^j as required (inverse-CDF sampling of the truncated geometric).
    Exact and fast: the top 16 bits of U pick the answer from a 65,536-entry table; only
    slices that contain a threshold alpha^j (at most k of them) draw the remaining bits.
    O(n_steps) work in cache-sized numpy blocks, no per-token loop.
    """
    alpha = _check_alpha(alpha)
    k = _check_k(k)
    n_steps = check_number("n_steps", n_steps, minimum=1, integer=True)
    rng = _rng(seed)
    dtype = np.int8 if k < 128 else np.int32
    if alpha == 0 or alpha == 1:
        return Simulation(k, np.full(n_steps, 0 if alpha == 0 else k, dtype=dtype))
    inv_log_alpha = 1.0 / math.log(alpha)
    if n_steps < _CHUNK:
        acc = _accepted_from_uniform(rng.random(n_steps), inv_log_alpha, k).astype(dtype)
        return Simulation(k, acc)
    table = _outcome_table(alpha, k).astype(dtype)
    scale = float(1 << _TABLE_BITS)
    acc = np.empty(n_steps, dtype=dtype)
    for start in range(0, n_steps, _CHUNK):
        out = acc[start:start + _CHUNK]
        high = rng.integers(0, 1 << _TABLE_BITS, size=out.size, dtype=np.uint16)
        np.take(table, high, out=out)
        open_ = np.flatnonzero(out < 0)
        if open_.size:
            u = (high[open_] + rng.random(open_.size)) / scale
            out[open_] = _accepted_from_uniform(u, inv_log_alpha, k)
    return Simulation(k, acc)


def simulate_positional(alphas, n_steps, seed=0) -> Simulation:
    """Monte Carlo with acceptance alphas[i] at draft position i (k = len(alphas)).

    Draws an (n_steps, k) Bernoulli matrix and counts leading successes per row
    (cumulative product); O(n_steps * k). Agrees with expected_tokens_positional.
    """
    a = _check_alphas(alphas)
    n_steps = check_number("n_steps", n_steps, minimum=1, integer=True)
    rng = _rng(seed)
    ok = rng.random((n_steps, a.size)) < a
    acc = np.cumprod(ok, axis=1).sum(axis=1)
    return Simulation(int(a.size), acc.astype(np.int64))


# --------------------------------------------------------------------------- latency model


def decode_pass_time(n_params, k, accelerator="H200", dtype="bf16", kv_bytes=0.0,
                     batch=1) -> float:
    """Roofline time of one decode pass over k new tokens: max(bytes / BW, 2 N k b / peak).

    bytes = N * dtype bytes + kv_bytes (weights and cache are read once per pass);
    FLOPs = 2 N per token (chapter 002 §1.2 arithmetic intensity; Williams et al. 2009).
    Flat in k while memory-bound. Seconds.
    """
    n_params = check_number("n_params", n_params, minimum=0, strict=True)
    k = _check_k(k)
    batch = check_number("batch", batch, minimum=1, integer=True)
    kv_bytes = check_number("kv_bytes", kv_bytes, minimum=0)
    acc = get_accelerator(accelerator)
    moved = n_params * dtype_bytes(dtype) + kv_bytes
    flops = 2.0 * n_params * k * batch
    return max(moved / acc.hbm_bandwidth, flops / acc.peak(dtype))


def compute_bound_tokens(accelerator="H200", dtype="bf16") -> float:
    """Tokens per pass (batch 1) at which a decode pass turns compute-bound.

    2 N k / peak = N b / BW  =>  k* = ridge_point * b / 2, with b = bytes per weight
    (KV-cache bytes ignored). Tokens.
    """
    acc = get_accelerator(accelerator)
    return acc.ridge_point(dtype) * dtype_bytes(dtype) / 2.0


def time_per_token(alpha, k, t_draft, t_target, t_verify=None) -> float:
    """Expected seconds per emitted token: (k t_draft + t_verify) / expected_tokens_per_step.

    ``t_verify`` = target time to score k+1 positions in one pass (defaults to ``t_target``,
    the memory-bound assumption of Leviathan Thm 3.8). Plain decoding costs ``t_target``
    per token, so t_target / time_per_token = walltime_speedup when t_verify = t_target.
    Seconds per token.
    """
    t_draft = check_number("t_draft", t_draft, minimum=0)
    t_target = check_number("t_target", t_target, minimum=0, strict=True)
    t_verify = t_target if t_verify is None else check_number("t_verify", t_verify, minimum=0,
                                                                strict=True)
    k = _check_k(k)
    return (k * t_draft + t_verify) / expected_tokens_per_step(alpha, k)


@dataclass(frozen=True)
class DecodeMeasurement:
    """Measured cost of one forward pass over k new tokens (seconds), one model."""

    model: str
    k: tuple
    wall_median: tuple
    wall_min: tuple
    gpu_kernel: tuple
    source: str

    def gpu_ratio_to_k1(self) -> tuple:
        """gpu_kernel(k) / gpu_kernel(1): the verification cost of k tokens vs one."""
        return tuple(t / self.gpu_kernel[0] for t in self.gpu_kernel)


def load_decode_measurements(model):
    """H200 measurements of decode cost vs k (GPT-2 124M and 1.5B, bf16, 512-token cache).

    From coursekit/data/h200_decode_vs_k.json (copied from the course's measured data,
    section B). Times converted from ms to seconds.
    """
    raw = json.loads(resources.files("coursekit.data").joinpath("h200_decode_vs_k.json")
                     .read_text(encoding="utf-8"))
    check_choice("model", model, tuple(raw["models"]))
    rows = sorted((r for r in raw["rows"] if r["model"] == model), key=lambda r: r["k"])
    return DecodeMeasurement(
        model, tuple(r["k"] for r in rows),
        tuple(r["ms_median"] * MS for r in rows), tuple(r["ms_min"] * MS for r in rows),
        tuple(r["gpu_kernel_ms"] * MS for r in rows), raw["source"])


# --------------------------------------------------------------------------- real models


@dataclass(frozen=True)
class SpeculativeGeneration:
    """Draft-and-verify generation: emitted ids, passes, accepted drafts per step, betas.

    ``betas`` are the per-position acceptance probabilities sum min(p, q) at every
    verified draft position (Leviathan's beta; their mean estimates alpha).
    """

    tokens: tuple
    k: int
    n_target_passes: int
    n_draft_passes: int
    accepted: tuple
    betas: tuple

    @property
    def tokens_per_target_pass(self) -> float:
        """Emitted tokens / target passes (compare with expected_tokens_per_step)."""
        return len(self.tokens) / self.n_target_passes

    @property
    def acceptance_rate(self) -> float:
        """Accepted drafts / drafted tokens."""
        return sum(self.accepted) / (self.k * len(self.accepted))

    @property
    def alpha_estimate(self) -> float:
        """Mean of betas: the empirical alpha (Leviathan et al. 2023, §3.3)."""
        return float(np.mean(self.betas))


def speculative_generate(target, draft, prompt, n_tokens, k, seed=0,
                         verify="sample") -> SpeculativeGeneration:
    """Generate n_tokens with draft-and-verify; each step is k draft passes + 1 target pass.

    ``target``/``draft`` have ``next_distribution(context) -> probabilities``.
    verify="sample": drafts x_i ~ q_i, speculative sampling (Leviathan Algorithm 1), the
    output follows the target exactly. verify="greedy": drafts and target use argmax and
    ``verify_greedy`` (output = the target's greedy text). The target pass scores the k+1
    positions; here that is k+1 calls of ``target.next_distribution`` counted as one pass.
    """
    check_choice("verify", verify, DRAFT_MODES)
    n_tokens = check_number("n_tokens", n_tokens, minimum=1, integer=True)
    k = _check_k(k)
    rng = _rng(seed)
    ctx = [int(i) for i in prompt]
    out, accepted, betas = [], [], []
    n_target = n_draft = 0
    while len(out) < n_tokens:
        drafts, q_rows = [], []
        for _ in range(k):
            q = draft.next_distribution(ctx + drafts)
            n_draft += 1
            x = int(np.argmax(q)) if verify == "greedy" else \
                int(np.searchsorted(_cdf(q), rng.random(), side="right"))
            drafts.append(x)
            q_rows.append(q)
        p_rows = [target.next_distribution(ctx + drafts[:i]) for i in range(k + 1)]
        n_target += 1
        if verify == "greedy":
            n_acc, emitted = verify_greedy(drafts, [int(np.argmax(p)) for p in p_rows])
        else:
            step = speculative_step(p_rows, q_rows, drafts, rng)
            n_acc, emitted = step.n_accepted, list(step.tokens)
        betas.extend(float(np.minimum(p_rows[i], q_rows[i]).sum())
                     for i in range(min(n_acc + 1, k)))
        accepted.append(n_acc)
        out.extend(emitted)
        ctx.extend(emitted)
    return SpeculativeGeneration(tuple(out[:n_tokens]), k, n_target, n_draft,
                                 tuple(accepted), tuple(betas))
