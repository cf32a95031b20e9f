"""Benchmark: event-driven serving simulator vs a straightforward per-iteration loop.

Both simulate the same workload with the same semantics (the tests check they agree);
this prints requests simulated per second for each, measured in the same run (median
of several repeats), and the ratio. Then the event-driven simulator alone on 100,000
requests (the issue's target: under 2 s).

    .venv/bin/python bench/batching.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

from coursekit.serving import batching as bt
from coursekit.serving.kv_cache import kv_capacity_blocks


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(quick=False):
    sm = bt.StepTimeModel.from_roofline("llama2-7b", "H100-SXM", overhead_s=2e-3)
    cap = kv_capacity_blocks("llama2-7b", "H100-SXM")
    n = 1_000 if quick else 5_000
    repeats = 3 if quick else 5
    cases = [
        ("static", 8, None, None),
        ("continuous", 8, None, None),
        ("continuous", 64, 20.0, None),
        ("paged", 64, None, cap),
        ("paged", 256, None, 2_000),
    ]
    print(f"workload: lesson_workload(n={n}, seed=0, prompt_tokens=128); model llama2-7b "
          f"on H100-SXM roofline + 2 ms/step; median of {repeats} runs")
    print(f"{'scheduler':<11}{'batch':>6}{'rate req/s':>11}{'KV blocks':>10}"
          f"{'event req/s':>14}{'per-step req/s':>16}{'ratio':>9}")
    for scheduler, batch, rate, kv in cases:
        w = bt.lesson_workload(n, rate=rate, seed=0, prompt_tokens=128)
        ev = _median_time(lambda: bt.simulate(w, scheduler, batch, sm, kv), repeats)
        st = _median_time(lambda: bt.simulate_stepwise(w, scheduler, batch, sm, kv),
                          max(1, repeats // 2))
        print(f"{scheduler:<11}{batch:>6}{str(rate or 'all at 0'):>11}{str(kv or '-'):>10}"
              f"{n / ev:>14,.0f}{n / st:>16,.0f}{st / ev:>8.1f}x")
    big = 100_000
    for scheduler, batch, rate, kv in cases:
        w = bt.lesson_workload(big, rate=rate, seed=0, prompt_tokens=128)
        ev = _median_time(lambda: bt.simulate(w, scheduler, batch, sm, kv), 1 if quick else 3)
        print(f"event-driven, {big:,} requests, {scheduler} batch {batch}: {ev:.2f} s "
              f"({big / ev:,.0f} req/s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workload, fewer repeats")
    main(parser.parse_args().quick)
