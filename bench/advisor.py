"""Benchmark: the advisor's exhaustive 3D-parallelism search for 1,024 GPUs.

Prints the median time of ``advise`` (vectorized over micro-batch sizes, one memory call
per (tp, pp, dp, ZeRO, recompute)) against a naive baseline measured in the same run:
every (tp, pp) pair in 1..N x 1..N, every micro-batch size 1..B/dp, each plan scored on
its own with ``evaluate_plan``. Run: ``.venv/bin/python bench/advisor.py``.
"""

from __future__ import annotations

import statistics
import time

from coursekit.parallel.advisor import Plan, advise, evaluate_plan, make_job

ZERO = (0, 1, 2, 3)
RECOMPUTE = ("none", "selective", "full")


def naive(job):
    """Unpruned enumeration; returns fitting plans sorted by step time."""
    n, B = job.n_gpus, job.global_batch
    fits = []
    for tp in range(1, n + 1):
        for pp in range(1, n + 1):
            if n % (tp * pp):
                continue
            dp = n // (tp * pp)
            for b in range(1, B // dp + 1):
                if B % (dp * b):
                    continue
                for z in ZERO:
                    for r in RECOMPUTE:
                        rep = evaluate_plan(job, Plan(dp, tp, pp, z, b, B // (dp * b), r))
                        if rep.fits:
                            fits.append(rep)
    fits.sort(key=lambda r: (r.step_time, r.memory_bytes))
    return fits


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main():
    job = make_job("gpt3-175b", 1024, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                   1536, 2048)
    t_fast, adv = median_time(lambda: advise(job), 7)
    t_naive, ref = median_time(lambda: naive(job), 3)
    assert [r.plan for r in adv.plans[:10]] == [r.plan for r in ref[:10]]
    print("GPT-3 175B on 1024 x A100-80GB, batch 1536 x 2048 tokens")
    print(f"plans that fit: {len(adv.plans)}, rejected: {len(adv.rejected)}")
    print(f"best: {adv.best.plan}  ({adv.best.step_time:.2f} s/step, "
          f"MFU {100 * adv.best.mfu:.1f} %)")
    print(f"advise (median of 7):          {t_fast * 1e3:8.1f} ms")
    print(f"naive enumeration (median of 3): {t_naive * 1e3:8.1f} ms")
    print(f"speedup ratio naive / advise:   {t_naive / t_fast:8.1f}x")


if __name__ == "__main__":
    main()
