"""Tests for coursekit.serving.speculative (Leviathan et al. 2023; Chen et al. 2023)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.serving import speculative as sp
from coursekit.serving import toy_lm

# --------------------------------------------------------------------------- analytic model

# Table-1-style values (c = 0), recomputed: E = (1 - a^(k+1)) / (1 - a)
EXPECTED_TOKENS = [
    (0.6, 5, 2.38336),       # (1 - 0.6^6)/0.4 = (1 - 0.046656)/0.4
    (0.8, 3, 2.952),         # (1 - 0.8^4)/0.2 = (1 - 0.4096)/0.2
    (0.8, 1, 1.8),           # 1 + a
    (0.9, 7, 5.6953279),     # (1 - 0.9^8)/0.1 = (1 - 0.43046721)/0.1
    (0.5, 2, 1.75),          # 1 + 0.5 + 0.25
]


@pytest.mark.parametrize("alpha,k,expected", EXPECTED_TOKENS)
def test_expected_tokens_table(alpha, k, expected):
    assert sp.expected_tokens_per_step(alpha, k) == pytest.approx(expected, rel=1e-12)


def test_special_cases():
    # alpha = 0: one token (the target's own) per pass; alpha = 1: k + 1 (Leviathan §3.3)
    assert sp.expected_tokens_per_step(0, 5) == 1.0
    assert sp.expected_tokens_per_step(1, 5) == 6.0
    assert sp.expected_tokens_per_step(1.0, 1) == 2.0
    assert sp.max_speedup(1) == math.inf
    assert sp.max_speedup(0.8) == pytest.approx(5.0)  # 1/(1-0.8)


@settings(max_examples=50, deadline=None)
@given(alpha=st.floats(0, 1), c=st.floats(0, 10))
def test_k1_speedup(alpha, c):
    # k = 1: (1 + alpha) / (1 + c) (recomputed from Thm 3.8)
    assert sp.walltime_speedup(alpha, 1, c) == pytest.approx((1 + alpha) / (1 + c), rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(alpha=st.floats(0, 0.999), k=st.integers(1, 40))
def test_expected_tokens_is_geometric_sum(alpha, k):
    direct = sum(alpha ** i for i in range(k + 1))
    e = sp.expected_tokens_per_step(alpha, k)
    assert e == pytest.approx(direct, rel=1e-9)
    assert 1 <= e <= min(k + 1, sp.max_speedup(alpha)) + 1e-9
    assert sp.expected_accepted_drafts(alpha, k) == pytest.approx(direct - 1, rel=1e-9, abs=1e-12)
    assert sp.expected_tokens_positional([alpha] * k) == pytest.approx(e, rel=1e-9)


@settings(max_examples=50, deadline=None)
@given(alpha=st.floats(0.01, 0.99), k=st.integers(1, 30))
def test_acceptance_rate_decreases_with_k(alpha, k):
    # 003 Exercise 2: the fraction of drafts accepted falls as k grows
    assert sp.acceptance_rate(alpha, k + 1) < sp.acceptance_rate(alpha, k)
    assert sp.acceptance_rate(alpha, 1) == pytest.approx(alpha)


def test_walltime_speedup_values():
    # recomputed: 2.952 / (3*0.1 + 1) = 2.952/1.3
    assert sp.walltime_speedup(0.8, 3, 0.1) == pytest.approx(2.952 / 1.3, rel=1e-12)
    # recomputed: (1-0.8^7)/0.2 / 1.6 = 3.951424/1.6
    assert sp.walltime_speedup(0.8, 6, 0.1) == pytest.approx(2.46964, rel=1e-12)


@pytest.mark.parametrize("alpha,c,k_best", [
    # recomputed by hand: speedups at a=0.8, c=0.1 for k=5,6,7: 2.4595, 2.4696, 2.4477
    (0.8, 0.1, 6),
    (0.6, 0.05, 4),   # recomputed: argmax_k (1-0.6^(k+1))/(0.4(0.05k+1)) -> 1.9213 at k=4
    (0.9, 0.05, 13),  # recomputed: argmax_k (1-0.9^(k+1))/(0.1(0.05k+1)) -> 4.6741 at k=13
    (0.5, 0.18, 2),   # H200 GPU-kernel c for GPT-2 124M/1.5B: 1.75/1.36 = 1.2868 at k=2
    (0.0, 0.5, 1),    # nothing is accepted: shortest draft loses least
])
def test_optimal_draft_length(alpha, c, k_best):
    assert sp.optimal_draft_length(alpha, c) == k_best


def test_optimal_draft_length_is_argmax():
    for alpha in (0.3, 0.7, 0.95):
        for c in (0.0, 0.02, 0.2, 1.0):
            k = sp.optimal_draft_length(alpha, c, k_max=20)
            best = max(sp.walltime_speedup(alpha, j, c) for j in range(1, 21))
            assert sp.walltime_speedup(alpha, k, c) == pytest.approx(best, rel=1e-12)
    # c = 0: longer drafts never hurt; the maximum is at k_max
    assert sp.optimal_draft_length(0.7, 0.0, k_max=10) == 10


def test_relative_operations():
    # Leviathan Thm 3.11, recomputed: (1-a)(k c + k + 1)/(1-a^(k+1))
    assert sp.relative_operations(0.8, 3) == pytest.approx(4 / 2.952, rel=1e-12)
    assert sp.relative_operations(0.8, 3, 0.05) == pytest.approx(4.15 / 2.952, rel=1e-12)
    assert sp.relative_operations(1.0, 4) == pytest.approx(1.0)  # all k+1 scored tokens kept
    assert sp.relative_operations(0.0, 4) == pytest.approx(5.0)  # 5 scored, 1 kept


def test_positional_expected_tokens():
    # recomputed: 1 + 0.9 + 0.9*0.8 + 0.9*0.8*0.5 = 2.98
    assert sp.expected_tokens_positional([0.9, 0.8, 0.5]) == pytest.approx(2.98, rel=1e-12)


# --------------------------------------------------------------------------- greedy verification


def test_verify_greedy_worked_example():
    # lesson 003 §7a: drafts [Paris , and the city], target prefers "it" at position 4.
    # The lesson counts 3 accepted tokens; the same target pass also yields "it", so 4 tokens
    # come out of one target pass (Leviathan §2).
    draft = ["Paris", ",", "and", "the", "city"]
    target = ["Paris", ",", "and", "it", "is", "the"]
    n, emitted = sp.verify_greedy(draft, target)
    assert n == 3
    assert emitted == ["Paris", ",", "and", "it"]


def test_verify_greedy_edges():
    assert sp.verify_greedy([1, 2, 3], [1, 2, 3, 4]) == (3, [1, 2, 3, 4])   # bonus token
    assert sp.verify_greedy([1, 2, 3], [1, 2, 3]) == (3, [1, 2, 3])         # no bonus row
    assert sp.verify_greedy([5, 2], [1, 2, 3]) == (0, [1])
    with pytest.raises(ValueError, match="target_tokens"):
        sp.verify_greedy([1, 2], [1])
    with pytest.raises(ValueError, match="draft_tokens"):
        sp.verify_greedy([], [1])


# --------------------------------------------------------------------------- distributions


def test_acceptance_and_residual():
    p = [0.5, 0.3, 0.2]
    q = [0.2, 0.3, 0.5]
    assert sp.acceptance_probability(p, q) == pytest.approx(0.2 + 0.3 + 0.2)
    np.testing.assert_allclose(sp.residual_distribution(p, q), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(sp.residual_distribution(p, p), p)  # never used when p == q


def _rational_dist(draw, v, denom):
    """A random distribution over v tokens with entries in multiples of 1/denom."""
    cuts = sorted(draw(st.lists(st.integers(0, denom), min_size=v - 1, max_size=v - 1)))
    edges = [0] + cuts + [denom]
    return [edges[i + 1] - edges[i] for i in range(v)]


@st.composite
def rational_pairs(draw, denom):
    v = draw(st.integers(2, 4))
    return _rational_dist(draw, v, denom), _rational_dist(draw, v, denom)


@settings(max_examples=50, deadline=None)
@given(pq=rational_pairs(4))
def test_speculative_token_exact_full_enumeration(pq):
    """Enumerate every outcome: x ~ q, both uniforms on a midpoint grid of N = 12 points.

    Entries are multiples of 1/4, so min(1, p/q) and the residual CDF are multiples of
    1/lcm(1..4) = 1/12; midpoints (j + 1/2)/12 reproduce them exactly. The emitted token
    then has probability exactly p (Leviathan Thm 3.5), checked in rational arithmetic.
    """
    num_p, num_q = pq
    p = [a / 4 for a in num_p]
    q = [b / 4 for b in num_q]
    n_grid = 12
    grid = [(j + 0.5) / n_grid for j in range(n_grid)]
    out = [Fraction(0)] * len(p)
    for x, qx in enumerate(num_q):
        if qx == 0:
            continue
        for u in grid:
            for v in grid:
                tok = sp.speculative_token(p, q, x, u, v)
                out[tok] += Fraction(qx, 4) / (n_grid * n_grid)
    assert out == [Fraction(a, 4) for a in num_p]


@settings(max_examples=50, deadline=None)
@given(pq=rational_pairs(6))
def test_speculative_token_exact_by_branch(pq):
    """Same exact check with 1/6 steps (grid N = lcm(1..6) = 60), enumerating the accept
    branch over u_accept and the resample branch over u_resample separately."""
    num_p, num_q = pq
    p = [a / 6 for a in num_p]
    q = [b / 6 for b in num_q]
    n = 60
    grid = [(j + 0.5) / n for j in range(n)]
    out = [Fraction(0)] * len(p)
    for x, qx in enumerate(num_q):
        if qx == 0:
            continue
        n_acc = sum(sp.speculative_token(p, q, x, u, 0.5) == x for u in grid)
        # an accepted token is x; the accept region depends on u_accept only
        out[x] += Fraction(qx, 6) * Fraction(n_acc, n)
        if n_acc < n:
            for v in grid:
                tok = sp.speculative_token(p, q, x, 1 - 1 / (2 * n), v)  # a rejecting u
                out[tok] += Fraction(qx, 6) * Fraction(n - n_acc, n) / n
    assert out == [Fraction(a, 6) for a in num_p]


@st.composite
def float_pairs(draw):
    v = draw(st.integers(2, 8))
    w = st.floats(0.0, 1.0)
    a = np.array(draw(st.lists(w, min_size=v, max_size=v))) + 1e-3
    b = np.array(draw(st.lists(w, min_size=v, max_size=v))) + 1e-3
    return a / a.sum(), b / b.sum()


@settings(max_examples=50, deadline=None)
@given(pq=float_pairs())
def test_output_distribution_is_target(pq):
    p, q = pq
    np.testing.assert_allclose(sp.output_distribution(p, q, "sample"), p, atol=1e-12)
    alpha = sp.acceptance_probability(p, q)
    assert 0 < alpha <= 1 + 1e-12
    assert alpha == pytest.approx(1 - 0.5 * np.abs(p - q).sum(), abs=1e-12)  # 1 - TV


def test_greedy_drafting_breaks_the_distribution():
    p = [0.5, 0.3, 0.2]
    q = [0.2, 0.5, 0.3]
    # recomputed: x = argmax q = 1, a = 0.3/0.5 = 0.6, residual = [1, 0, 0]
    np.testing.assert_allclose(sp.output_distribution(p, q, "greedy"), [0.4, 0.6, 0.0])


# --------------------------------------------------------------------------- chi-square


def test_chi2_sf_reference_values():
    # standard table critical values (e.g. NIST/SEMATECH e-Handbook, Table 1.3.6.7.4)
    assert sp.chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert sp.chi2_sf(6.634896601021214, 1) == pytest.approx(0.01, rel=1e-9)
    assert sp.chi2_sf(18.307038053275146, 10) == pytest.approx(0.05, rel=1e-9)
    assert sp.chi2_sf(124.34211340400407, 100) == pytest.approx(0.05, rel=1e-8)
    assert sp.chi2_sf(0, 3) == 1.0


@settings(max_examples=50, deadline=None)
@given(x=st.floats(0, 400), m=st.integers(1, 30))
def test_chi2_sf_closed_forms(x, m):
    # even dof 2m: exp(-x/2) sum_{j<m} (x/2)^j / j!;  dof 1: erfc(sqrt(x/2))
    even = math.exp(-x / 2) * sum((x / 2) ** j / math.factorial(j) for j in range(m))
    assert sp.chi2_sf(x, 2 * m) == pytest.approx(even, rel=1e-9, abs=1e-300)
    assert sp.chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9, abs=1e-300)


# Significance level of the statistical tests below. With a fixed seed each test is
# deterministic (it either always passes or always fails), so it cannot be flaky; the
# level only decides how strong a discrepancy must be to fail. 1e-3 is the alpha level;
# the greedy counter-example must fall far below it.
SIGNIFICANCE = 1e-3


def test_speculative_sampling_chi_square_on_toy_models():
    draft, target = toy_lm.build_models()
    for text in ("the baker opens the", "the river", "in the"):
        ctx = target.encode(text)
        p, q = target.next_distribution(ctx), draft.next_distribution(ctx)
        ok = sp.chi_square_test(sp.sample_verified_tokens(p, q, 20_000, seed=7), p)
        assert ok.p_value > SIGNIFICANCE, (text, ok)
        bad = sp.chi_square_test(sp.sample_verified_tokens(p, q, 20_000, seed=7,
                                                           draft="greedy"), p)
        assert bad.p_value < 1e-12, (text, bad)


def test_speculative_step_chi_square():
    p_rows = [[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]]
    q_rows = [[0.2, 0.5, 0.3], [0.4, 0.4, 0.2]]
    rng = np.random.default_rng(3)
    first, n_acc = [], []
    for _ in range(3000):
        drafts = [int(rng.choice(3, p=q)) for q in q_rows]
        res = sp.speculative_step(p_rows, q_rows, drafts, rng)
        assert len(res.tokens) == res.n_accepted + 1
        assert list(res.tokens[:res.n_accepted]) == drafts[:res.n_accepted]
        first.append(res.tokens[0])
        n_acc.append(res.n_accepted)
    assert sp.chi_square_test(np.array(first), p_rows[0]).p_value > SIGNIFICANCE
    # P(first draft accepted) = sum min(p0, q0) = 0.2 + 0.3 + 0.2 = 0.7
    frac = np.mean(np.array(n_acc) >= 1)
    assert abs(frac - 0.7) < 4 * math.sqrt(0.7 * 0.3 / 3000)


def test_chi_square_test_detects_impossible_token():
    res = sp.chi_square_test(np.array([0, 1, 2, 2]), [0.5, 0.5, 0.0])
    assert res.p_value == 0.0


# --------------------------------------------------------------------------- Monte Carlo


@pytest.mark.parametrize("alpha,k", [(0.0, 4), (0.5, 3), (0.8, 5), (0.95, 8), (1.0, 3)])
def test_monte_carlo_matches_formula(alpha, k):
    sim = sp.simulate(alpha, k, 200_000, seed=1)
    expected = sp.expected_tokens_per_step(alpha, k)
    # within 5 standard errors (deterministic with the fixed seed)
    assert abs(sim.mean_tokens_per_step - expected) <= 5 * sim.stderr_tokens_per_step + 1e-12
    assert sim.speedup(0.1) == pytest.approx(sim.mean_tokens_per_step / (k * 0.1 + 1))
    assert sim.accepted.min() >= 0 and sim.accepted.max() <= k


def test_monte_carlo_acceptance_rate():
    sim = sp.simulate(0.7, 5, 200_000, seed=2)
    assert sim.acceptance_rate == pytest.approx(sp.acceptance_rate(0.7, 5), rel=0.01)


def test_positional_monte_carlo():
    alphas = [0.9, 0.8, 0.5, 0.3]
    sim = sp.simulate_positional(alphas, 200_000, seed=4)
    expected = sp.expected_tokens_positional(alphas)
    assert abs(sim.mean_tokens_per_step - expected) <= 5 * sim.stderr_tokens_per_step


def test_simulation_is_seeded():
    a = sp.simulate(0.6, 4, 1000, seed=9).accepted
    b = sp.simulate(0.6, 4, 1000, seed=9).accepted
    assert np.array_equal(a, b)


# --------------------------------------------------------------------------- latency model


def test_roofline_decode_pass():
    # GPT-2 1.5B in bf16 on H200: 1,557,611,200 * 2 bytes / 4.8e12 B/s = 0.64900 ms
    t1 = sp.decode_pass_time(1_557_611_200, 1, "H200", "bf16")
    assert t1 == pytest.approx(3_115_222_400 / 4.8e12, rel=1e-12)
    # memory-bound: 8 tokens cost the same as 1
    assert sp.decode_pass_time(1_557_611_200, 8, "H200") == t1
    # recomputed: ridge 989.4e12/4.8e12 = 206.125 FLOP/B; k* = 206.125 * 2 bytes / 2 FLOP
    assert sp.compute_bound_tokens("H200", "bf16") == pytest.approx(206.125)
    # past k*: compute-bound, 2 N k / peak
    assert sp.decode_pass_time(1e9, 1000, "H200") == pytest.approx(2e12 / 989.4e12)


@settings(max_examples=50, deadline=None)
@given(alpha=st.floats(0, 1), k=st.integers(1, 16), c=st.floats(0, 2))
def test_time_per_token_consistent_with_speedup(alpha, k, c):
    t_target = 0.02
    tpt = sp.time_per_token(alpha, k, c * t_target, t_target)
    assert t_target / tpt == pytest.approx(sp.walltime_speedup(alpha, k, c), rel=1e-9)


def test_measured_decode_data():
    m = sp.load_decode_measurements("1.5B")
    assert m.k == (1, 2, 4, 8, 16, 32, 64)
    # shared/data/h200-gpt2 summary: 1.5B GPU-kernel 3.599 ms at k=1, 4.301 ms at k=8 (1.19x)
    assert m.gpu_kernel[0] == pytest.approx(3.5992e-3)
    assert m.gpu_ratio_to_k1()[3] == pytest.approx(1.19, abs=0.005)
    d = sp.load_decode_measurements("124M")
    # c = 0.181 on GPU kernels (summary line 192): 0.6514 / 3.5992
    assert d.gpu_kernel[0] / m.gpu_kernel[0] == pytest.approx(0.181, abs=5e-4)
    with pytest.raises(ValueError, match="model"):
        sp.load_decode_measurements("7B")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call", [
    lambda: sp.expected_tokens_per_step(1.5, 3),
    lambda: sp.expected_tokens_per_step(-0.1, 3),
    lambda: sp.expected_tokens_per_step(0.5, 0),
    lambda: sp.expected_tokens_per_step(0.5, 2.5),
    lambda: sp.walltime_speedup(0.5, 3, -0.1),
    lambda: sp.optimal_draft_length(0.5, 0.1, k_max=0),
    lambda: sp.acceptance_probability([0.5, 0.6], [0.5, 0.5]),
    lambda: sp.acceptance_probability([0.5, 0.5], [0.2, 0.3, 0.5]),
    lambda: sp.residual_distribution([1.2, -0.2], [0.5, 0.5]),
    lambda: sp.speculative_token([0.5, 0.5], [0.5, 0.5], 2, 0.1, 0.1),
    lambda: sp.speculative_token([0.5, 0.5], [0.5, 0.5], 0, 1.0, 0.1),
    lambda: sp.speculative_step([[1.0]], [[1.0]], [0]),
    lambda: sp.simulate(0.5, 3, 0),
    lambda: sp.simulate_positional([0.5, 1.2], 10),
    lambda: sp.output_distribution([1.0], [1.0], draft="beam"),
    lambda: sp.decode_pass_time(1e9, 1, "H999"),
])
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_bad_input_messages_name_parameter():
    with pytest.raises(ValueError, match="alpha"):
        sp.walltime_speedup(2, 3, 0.1)
    with pytest.raises(ValueError, match="k must be >= 1"):
        sp.walltime_speedup(0.5, 0, 0.1)
    with pytest.raises(ValueError, match="c must be >= 0"):
        sp.walltime_speedup(0.5, 2, -1)
    with pytest.raises(ValueError, match="sum to 1"):
        sp.acceptance_probability([0.2, 0.2], [0.5, 0.5])
    with pytest.raises(ValueError, match="same length"):
        sp.residual_distribution([1.0], [0.5, 0.5])
    with pytest.raises(TypeError):
        sp.expected_tokens_per_step("0.5", 3)


@pytest.mark.parametrize("alpha,k", [(0.8, 5), (0.3, 2), (0.99, 150)])
def test_outcome_table_matches_direct_inversion(alpha, k):
    # every decided slice [h/2^16, (h+1)/2^16) gives the same count at both of its ends
    table = sp._outcome_table(alpha, k)
    n = table.size
    edges_lo = np.arange(n) / n
    edges_hi = (np.arange(n) + 1) / n - 1e-12
    direct = lambda u: (u[:, None] < alpha ** np.arange(1, k + 1)).sum(axis=1)
    decided = table >= 0
    assert np.array_equal(table[decided], direct(edges_lo[decided]))
    assert np.array_equal(table[decided], direct(edges_hi[decided]))
    assert (~decided).sum() <= k


def test_small_and_large_paths_agree():
    # n < 65,536 uses ln U directly; larger n uses the table (both exact)
    small = sp.simulate(0.85, 6, 60_000, seed=5)
    large = sp.simulate(0.85, 6, 300_000, seed=5)
    e = sp.expected_tokens_per_step(0.85, 6)
    for sim in (small, large):
        assert abs(sim.mean_tokens_per_step - e) <= 5 * sim.stderr_tokens_per_step
    big_k = sp.simulate(0.99, 150, 100_000, seed=6)
    assert big_k.accepted.max() == 150
    assert abs(big_k.mean_tokens_per_step - sp.expected_tokens_per_step(0.99, 150)) \
        <= 5 * big_k.stderr_tokens_per_step
