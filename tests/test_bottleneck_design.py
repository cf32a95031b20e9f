"""Tests for the design and diagnosis helpers of assignment 03: loader workers for a
utilization target (coursekit.training.input_pipeline) and the binding constraint of a
measured step (coursekit.training.roofline). Chapter 002 = seeds/002_50d9d343ab1fbc28.txt.

Hardware figures are the datasheets' (A100-80GB SXM: 312 TFLOP/s bf16 dense, 2,039 GB/s;
H100 SXM: 989.4 TFLOP/s bf16 dense, 3,350 GB/s); ResNet-50 at 2,470 images/s on one A100
is NVIDIA DeepLearningExamples (ResNet-50 v1.5 for PyTorch, mixed precision, 21.03).
"""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from coursekit.training import input_pipeline as P  # noqa: E402
from coursekit.training import roofline as R  # noqa: E402

A100 = (312e12, 2.039e12)
H100 = (989.4e12, 3.35e12)
# ResNet-50 on an A100: NVMe 7 GB/s x 0.1 (Eq 7) / 110 KB per JPEG; PCIe Gen4 32 GB/s per
# direction / 224 x 224 x 3 uint8
NVME = {"storage": 0.7e9 / 110e3, "pcie": 32e9 / 150_528}
NFS = {"storage": 1.25e9 * 0.1 / 110e3, "pcie": 32e9 / 150_528}


# -- workers for a utilization target ------------------------------------------------------

def test_utilization_cap():
    # 10 GbE NFS x 0.1 / 110 KB = 1,136.4 images/s against 2,470 -> 0.46007 (by hand)
    assert P.utilization_cap(2470, NFS) == pytest.approx(1.25e8 / 110e3 / 2470, rel=1e-12)
    assert P.utilization_cap(2470, NVME) == 1.0      # 6,364 images/s > 2,470
    assert P.utilization_cap(2470) == 1.0            # no other stage
    assert P.utilization_cap(200, [180, 1e6]) == pytest.approx(0.9)  # a sequence works


def test_utilization_with_workers_eq_8_9_11():
    # chapter Eq 11: 200 vs 1,000 images/s -> 0.2; here 4 workers x 50 = 200
    assert P.utilization_with_workers(4, 50, 1000) == pytest.approx(0.2)
    # vectorized; flat at the NFS cap from the fifth worker (5 x 250 = 1,250 > 1,136.4)
    u = P.utilization_with_workers(np.arange(1, 9), 250, 2470, NFS)
    assert u[:4] == pytest.approx(np.arange(1, 5) * 250 / 2470)
    assert np.all(u[4:] == u[4]) and u[4] == pytest.approx(P.utilization_cap(2470, NFS))
    assert P.utilization_with_workers(20, 250, 2470) == 1.0
    with pytest.raises(ValueError, match="n_workers"):
        P.utilization_with_workers(0, 250, 2470)


def test_min_workers_for_utilization():
    # 0.9 x 2470 / 250 = 8.892 -> 9; 0.95 -> 9.386 -> 10 (recomputed by hand)
    assert P.min_workers_for_utilization(250, 2470, NVME, 0.9) == 9
    assert P.min_workers_for_utilization(250, 2470, NVME, 0.95) == 10
    assert type(P.min_workers_for_utilization(250, 2470, NVME, 0.9)) is int
    # Example 1.1: one core (65.536 ms per batch) outruns the 84.4 ms step -> 1 (Eq 15)
    assert P.min_workers_for_utilization(1 / 0.065536, 1 / 0.0844,
                                         {"storage": 0.7e9 / 262_144}, 0.95) == 1
    # exactly at the target counts: 4 x 50 = 200; cap 180 / 200 = 0.9 = target
    assert P.min_workers_for_utilization(50, 200, {}, 1.0) == 4
    assert P.min_workers_for_utilization(50, 200, {"storage": 180}, 0.9) == 4
    # the no-cap, target-1 case agrees with Eq 15's workers_needed (times, not rates)
    assert P.min_workers_for_utilization(1 / 0.030, 1 / 0.010) == P.workers_needed(0.030, 0.010)


def test_min_workers_capped_and_bad_input():
    with pytest.raises(ValueError, match="'storage'.*caps"):
        P.min_workers_for_utilization(250, 2470, NFS, 0.9)   # cap 0.46
    with pytest.raises(ValueError, match="caps"):
        P.min_workers_for_utilization(250, 2470, {"s": 2400}, 0.98)  # cap 0.9717
    assert P.min_workers_for_utilization(250, 2470, {"s": 2400}, 0.95) == 10
    for bad in (0, -0.1, 1.5):
        with pytest.raises(ValueError, match="target"):
            P.min_workers_for_utilization(250, 2470, NVME, bad)
    with pytest.raises(ValueError, match="worker_rate"):
        P.min_workers_for_utilization(0, 2470, NVME, 0.9)
    with pytest.raises(ValueError, match="other_rates"):
        P.min_workers_for_utilization(250, 2470, {"s": 0}, 0.9)
    with pytest.raises(TypeError, match="other_rates"):
        P.min_workers_for_utilization(250, 2470, 6364.0, 0.9)


# -- binding constraint from counters -------------------------------------------------------

def _run(step, wait, flops, hbm):
    return dict(step_time=step, data_wait=wait, flops=flops, hbm_bytes=hbm,
                gpu_util=0.99, memory_used=79e9)


def test_step_breakdown_parts_add_up():
    b = R.step_breakdown(0.18, 0.108, 1.2e13, 4e10, *A100)
    assert b.compute_time == pytest.approx(1.2e13 / 312e12)   # 38.46 ms
    assert b.memory_time == pytest.approx(4e10 / 2.039e12)    # 19.62 ms
    assert b.roof == "compute-bound"                          # I = 300 > ridge 153
    assert sum(b.shares().values()) == pytest.approx(1.0)
    assert b.shares()["data-bound"] == pytest.approx(0.6)


def test_binding_constraint_labels_and_shares():
    # recomputed by hand (notebook 03's table): wait 108 of 180 ms -> data, 0.6
    assert R.binding_constraint(_run(0.18, 0.108, 1.2e13, 4e10), *A100) == (
        "data-bound", pytest.approx(0.6))
    # I = 30 FLOP/byte < 153: memory roof 2e11 / 2.039e12 = 98.09 ms of 120 ms = 0.81739
    label, share = R.binding_constraint(_run(0.12, 0.001, 6e12, 2e11), *A100)
    assert label == "memory-bound" and share == pytest.approx(2e11 / 2.039e12 / 0.12)
    # H100, I = 443 > 295: 6.2e14 / 989.4e12 = 0.62664 of a 1 s step, memory 79 GB ignored
    label, share = R.binding_constraint(_run(1.0, 0.002, 6.2e14, 1.4e12), *H100)
    assert label == "compute-bound" and share == pytest.approx(6.2e14 / 989.4e12)
    # small kernels: memory roof 3.58 ms of 25 ms, the rest 20.9 ms -> overhead, 0.83672
    label, share = R.binding_constraint(_run(0.025, 0.0005, 2.5e12, 1.2e10), *H100)
    assert label == "overhead-bound"
    assert share == pytest.approx((0.025 - 0.0005 - 1.2e10 / 3.35e12) / 0.025)


def test_binding_constraint_at_the_ridge_is_compute_bound():
    # 300 TFLOP/s, 2 TB/s: ridge 150; 1.5e14 FLOPs over 1e12 bytes = 0.5 s on both roofs
    assert R.binding_constraint(_run(0.8, 0.05, 1.5e14, 1e12), 300e12, 2e12) == (
        "compute-bound", 0.625)
    # the A100's datasheet ridge is 153.0, not the chapter's 156: I = 153.8 is compute
    assert R.binding_constraint(_run(0.2, 0.004, 4e13, 2.6e11), *A100)[0] == "compute-bound"


def test_binding_constraint_rejects_impossible_counters():
    # 1e14 FLOPs in 0.25 s = 400 TFLOP/s on a 312 TFLOP/s A100
    with pytest.raises(ValueError, match="impossible"):
        R.binding_constraint(_run(0.25, 0.01, 1e14, 1e11), *A100)
    with pytest.raises(ValueError, match="impossible"):
        R.binding_constraint(_run(0.25, 0.3, 0, 0), *A100)     # waits longer than the step
    with pytest.raises(ValueError, match="hbm_bytes"):
        R.binding_constraint(_run(0.25, 0.01, 1e13, -1.0), *A100)
    with pytest.raises(ValueError, match="step_time"):
        R.binding_constraint(_run(0.0, 0.0, 0.0, 0.0), *A100)
    with pytest.raises(ValueError, match="missing"):
        R.binding_constraint({"step_time": 1.0}, *A100)
    with pytest.raises(TypeError):
        R.binding_constraint([1.0, 0.0, 0.0, 0.0], *A100)


def test_the_two_plots_draw_headless():
    import matplotlib.pyplot as plt

    from coursekit.viz import training as V

    ax = V.plot_utilization_vs_workers(250, 2470, NFS, target=0.9, max_workers=24, cores=16,
                                       util_fn=lambda p, c: 1 / 0)  # broken: falls back
    assert "coursekit" in ax.get_title()
    ys = ax.lines[1].get_ydata()
    assert max(ys) == pytest.approx(100 * P.utilization_cap(2470, NFS))
    ax = V.plot_step_breakdown({"a": (_run(0.18, 0.108, 1.2e13, 4e10), *A100),
                                "b": (_run(0.025, 0.0005, 2.5e12, 1.2e10), *H100)})
    widths = [p.get_width() for p in ax.patches]
    assert sum(widths) == pytest.approx(200.0)   # two bars of 100 % each
    plt.close("all")
    assert math.isclose(P.utilization_cap(1, [1]), 1.0)
