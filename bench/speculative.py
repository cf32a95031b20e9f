"""Benchmark: vectorized speculative-decoding Monte Carlo vs a plain Python loop.

Both simulate the same workload (i.i.d. acceptance alpha, draft length k) and produce the
same output, the number of accepted drafts of every step: the loop accepts drafts one by
one until the first rejection; simulate() draws one uniform per step and inverts the
truncated-geometric CDF in numpy blocks. Tokens = accepted drafts + one target token/step.
Prints simulated tokens per second of each (median of several repeats, same run) and
the ratio. Targets (issue 5): ratio >= 50x and >= 1e6 simulated tokens/s.

Run:  .venv/bin/python bench/speculative.py
"""

from __future__ import annotations

import random
import statistics
import time

from coursekit.serving.speculative import expected_tokens_per_step, simulate

ALPHA, K = 0.8, 5
N_FAST = 2_000_000     # steps per vectorized run
N_LOOP = 200_000       # steps per loop run (fewer: the loop is slow)
REPEATS = 5


def loop_simulate(alpha, k, n_steps, seed=0):
    """Plain Python baseline: one uniform draw per drafted token, accepted drafts recorded
    per step (the same output as simulate()). Returns tokens emitted."""
    rnd = random.Random(seed)
    accepted_per_step = []
    for _ in range(n_steps):
        accepted = 0
        while accepted < k and rnd.random() < alpha:
            accepted += 1
        accepted_per_step.append(accepted)
    return sum(accepted_per_step) + n_steps


def _median_rate(fn, repeats):
    rates, tokens = [], 0
    for r in range(repeats):
        t0 = time.perf_counter()
        tokens = fn(r)
        rates.append(tokens / (time.perf_counter() - t0))
    return statistics.median(rates), tokens


def main():
    fast_rate, fast_tokens = _median_rate(lambda r: simulate(ALPHA, K, N_FAST, seed=r).tokens,
                                          REPEATS)
    loop_rate, loop_tokens = _median_rate(lambda r: loop_simulate(ALPHA, K, N_LOOP, seed=r),
                                          REPEATS)
    e = expected_tokens_per_step(ALPHA, K)
    print(f"workload: alpha={ALPHA}, k={K}; formula {e:.4f} tokens/step")
    print(f"vectorized simulate(): {N_FAST:,} steps, {fast_tokens / N_FAST:.4f} tokens/step, "
          f"{fast_rate:,.0f} simulated tokens/s (median of {REPEATS})")
    print(f"plain Python loop:     {N_LOOP:,} steps, {loop_tokens / N_LOOP:.4f} tokens/step, "
          f"{loop_rate:,.0f} simulated tokens/s (median of {REPEATS})")
    ratio = fast_rate / loop_rate
    print(f"speedup vectorized / loop: {ratio:.1f}x "
          f"(target >= 50x: {'ok' if ratio >= 50 else 'MISSED'}; "
          f">= 1e6 tokens/s: {'ok' if fast_rate >= 1e6 else 'MISSED'})")


if __name__ == "__main__":
    main()
