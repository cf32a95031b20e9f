"""Tests for coursekit.parallel.scaling (efficiency, DP speedup, stragglers)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.parallel import scaling as S


def test_scaling_efficiency_fallacy_4_to_6x_on_8():
    # chapter 002 Fallacies: "4-6x speedup instead of the ideal 8x" = 50-75% efficiency
    assert S.scaling_efficiency(24.0, 6.0, 8) == pytest.approx(0.5)
    assert S.scaling_efficiency(24.0, 4.0, 8) == pytest.approx(0.75)
    # chapter 002 Fallacies: 1 GPU in 24 h vs 8 GPUs in 36 h -> speedup 0.667, eff. 8.3%
    assert S.speedup(24.0, 36.0) == pytest.approx(2 / 3)
    assert S.scaling_efficiency(24.0, 36.0, 8) == pytest.approx(1 / 12)
    arr = S.scaling_efficiency(10.0, np.array([10.0, 5.0, 2.0]), np.array([1, 2, 8]))
    np.testing.assert_allclose(arr, [1.0, 1.0, 0.625])


def test_napkin_1_10_as_a_speedup():
    # chapter 002 Napkin 1.10: compute 1 s per step on 8 GPUs, all-reduce 1.96 s -> step
    # 2.96 s with no overlap; the 8-GPU speedup over one GPU (8 s of compute) is 2.70x.
    # (a bare 12.5 GB/s has no latency; the registered 100GbE adds 14 x 20 us)
    t = S.dp_step_time(8, 8.0, 14e9, 12.5e9)
    assert t == pytest.approx(1.0 + 1.96)
    assert S.dp_speedup(8, 8.0, 14e9, 12.5e9) == pytest.approx(8 / 2.96)
    assert S.dp_step_time(8, 8.0, 14e9, "100GbE") == pytest.approx(2.96 + 14 * 20e-6)


def test_dp_one_node_is_the_baseline_and_vectorized():
    n = np.array([1, 2, 4, 8])
    s = S.dp_speedup(n, 10.0, 3e9, "InfiniBand-NDR")
    assert s[0] == pytest.approx(1.0)
    assert np.all(np.diff(s) > 0)


def test_10gbe_vs_infiniband_diminishing_returns():
    # lab 004 Part 1. recomputed: without latency/overlap S = T1/(T1/N + C) and the gain
    # of one more node is < 0.5 once N > (T1/C)(sqrt 2 - 1). T1 = 10 s, 3 GB gradients:
    # 10GbE: C(N) -> 2*3/1.25 = 4.8 s, so already N = 1 gains < 0.5 (1.04 -> ...).
    # 400G IB: C -> 0.12 s, N* ~ 0.414*10/0.12 ~ 34.5 -> 35 (latency shifts it slightly).
    n_eth = S.diminishing_returns_point(10.0, 3e9, "10GbE")
    n_ib = S.diminishing_returns_point(10.0, 3e9, "InfiniBand-NDR")
    assert n_eth == 1
    assert n_ib == 35
    # analytic check with a latency-free link of the same bandwidth
    c = 2 * 3e9 / 50e9
    assert S.diminishing_returns_point(10.0, 3e9, 50e9) in (
        math.floor((10 / c) * (math.sqrt(2) - 1)), math.ceil((10 / c) * (math.sqrt(2) - 1)))


def test_overlap_hides_communication():
    slow = S.dp_step_time(8, 8.0, 1e9, "InfiniBand-HDR", overlap=0.0)
    fast = S.dp_step_time(8, 8.0, 1e9, "InfiniBand-HDR", overlap=1.0)
    assert fast == pytest.approx(1.0)  # 70 ms all-reduce fully hidden behind 1 s
    assert slow > fast


def test_hierarchical_dp():
    t = S.dp_step_time(4, 32.0, 1e9, "InfiniBand-NDR", gpus_per_node=8,
                       intra_link="NVLink-H100")
    assert t > 1.0
    with pytest.raises(ValueError, match="intra_link"):
        S.dp_step_time(4, 32.0, 1e9, "InfiniBand-NDR", gpus_per_node=8)


def test_straggler_analytic_formulas():
    # recomputed: 5% stragglers at 3x, 64 workers: E[step] = 1 + 2(1 - 0.95^64) = 2.925 s
    assert S.expected_sync_step_time(64, 1.0, 0.05, 3.0) == pytest.approx(
        1 + 2 * (1 - 0.95 ** 64))
    assert S.expected_async_throughput(64, 1.0, 0.05, 3.0) == pytest.approx(64 / 1.1)


def test_straggler_simulation_matches_analytic():
    r = S.simulate_stragglers(64, 4000, 1.0, 0.05, 3.0, seed=1)
    assert 64 / r.sync_step_times.mean() == pytest.approx(
        64 / S.expected_sync_step_time(64, 1.0, 0.05, 3.0), rel=0.02)
    assert r.async_throughput == pytest.approx(
        S.expected_async_throughput(64, 1.0, 0.05, 3.0), rel=0.02)
    assert r.async_over_sync > 2.5  # lab 004 Part 3: async wins raw throughput ...
    r2 = S.simulate_stragglers(16, 2000, 1.0, 0.05, 3.0, jitter=0.1, seed=1)
    assert r2.mean_staleness == pytest.approx(15, rel=0.05)  # ... at ~N-1 staleness


def test_simulation_is_seeded_and_one_worker_is_never_stale():
    a = S.simulate_stragglers(8, 100, 1.0, 0.1, 2.0, jitter=0.2, seed=3)
    b = S.simulate_stragglers(8, 100, 1.0, 0.1, 2.0, jitter=0.2, seed=3)
    np.testing.assert_array_equal(a.sync_step_times, b.sync_step_times)
    one = S.simulate_stragglers(1, 200, 1.0, 0.1, 2.0, jitter=0.2, seed=0)
    assert one.mean_staleness == 0 and one.async_over_sync == pytest.approx(1.0)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 256), q=st.floats(0, 1), k=st.floats(1, 10))
def test_sync_never_faster_than_async(n, q, k):
    sync_tp = n / S.expected_sync_step_time(n, 1.0, q, k)
    assert sync_tp <= S.expected_async_throughput(n, 1.0, q, k) * (1 + 1e-12)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 64))
def test_efficiency_at_most_one_for_dp(n):
    s = S.dp_speedup(n, 5.0, 1e9, "InfiniBand-HDR")
    assert s <= n + 1e-9


def test_bad_input():
    with pytest.raises(ValueError, match="n"):
        S.scaling_efficiency(1.0, 1.0, 0)
    with pytest.raises(ValueError, match="n"):
        S.scaling_efficiency(1.0, 1.0, 2.5)
    with pytest.raises(ValueError, match="link"):
        S.dp_speedup(4, 1.0, 1e9, "token-ring")
    with pytest.raises(ValueError, match="straggler_prob"):
        S.simulate_stragglers(4, 10, 1.0, 1.5, 2.0)
    with pytest.raises(ValueError, match="slowdown"):
        S.expected_sync_step_time(4, 1.0, 0.1, 0.5)
    with pytest.raises(ValueError, match="overlap"):
        S.dp_step_time(2, 1.0, 1e9, "10GbE", overlap=2)
