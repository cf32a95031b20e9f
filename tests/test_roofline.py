"""Tests for coursekit.training.roofline (chapter 002 = seeds/002_50d9d343ab1fbc28.txt)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.hardware import get_accelerator
from coursekit.training import roofline as R
from coursekit.units import TFLOP


def test_ridge_points():
    # A100 datasheet: 312 TFLOP/s / 2.039 TB/s = 153.0 FLOP/byte (chapter 002 Self-Check 2
    # Q5 rounds to "near 156", which is 312/2.0)
    assert R.ridge_point("A100-80GB", "bf16") == pytest.approx(153.016, abs=1e-3)
    # recomputed: V100 125 TFLOP/s / 900 GB/s = 138.9
    assert R.ridge_point("V100-32GB", "fp16") == pytest.approx(138.889, abs=1e-3)
    # recomputed: A100 fp32 19.5 TFLOP/s / 2.039 TB/s = 9.56 (precision moves the ridge,
    # chapter 002 footnote 19)
    assert R.ridge_point("A100-80GB", "fp32") == pytest.approx(9.5635, abs=1e-4)
    a = get_accelerator("A100-80GB")
    assert R.ridge_point(a, "bf16") == a.ridge_point("bf16")


def test_attainable_and_bound():
    # recomputed: I = 32 on A100-80GB: 32 * 2.039e12 = 65.2 TFLOP/s < 312
    assert R.attainable_flops(32, "A100-80GB") == pytest.approx(65.248e12, rel=1e-9)
    assert R.attainable_flops(1e4, "A100-80GB") == 312 * TFLOP
    assert R.bound(32, "A100-80GB") == "memory-bound"
    assert R.bound(200, "A100-80GB") == "compute-bound"
    # at exactly the ridge: compute-bound (course convention)
    assert R.bound(R.ridge_point("V100-32GB", "fp16"), "V100-32GB", "fp16") == "compute-bound"
    arr = R.attainable_flops(np.array([1.0, 1e3]), "V100-32GB", "fp16")
    assert arr.tolist() == pytest.approx([900e9, 125e12])


def test_table_5_operation_classes():
    # chapter 002 Table 5: activations 0.50 FLOP/byte (FP16) = 1 FLOP per 2-byte read
    assert R.elementwise(10**6, "fp16", writes=0).intensity == 0.5
    # counting the write too (course convention): 0.25
    assert R.elementwise(10**6, "fp16").intensity == 0.25
    # chapter 002 §Arithmetic intensity: materialized scores d_head/2 = 32 FLOP/byte
    assert R.attention_scores(1024, 64).intensity == 32.0
    assert R.attention_scores(4096, 128).intensity == 64.0
    # Table 5 says LayerNorm ~10, softmax ~5 FLOP/byte; first principles give ~2 and 1.25
    # (recomputed: 8 FLOPs/(2+2 bytes), 5 FLOPs/(2+2 bytes)); memory-bound either way
    assert R.layernorm(1024, 1600).intensity == pytest.approx(2.0, abs=0.01)
    assert R.softmax(1024, 1024).intensity == 1.25
    for op in (R.layernorm(1024, 1600), R.softmax(1024, 1024)):
        assert R.bound(op.intensity, "A100-80GB") == "memory-bound"


def test_gemm():
    g = R.gemm(4096, 4096, 4096, "bf16")
    assert g.flops == 2 * 4096**3
    # recomputed: 2n^3 / (3 n^2 * 2 bytes) = n/3
    assert g.intensity == pytest.approx(4096 / 3)
    # matrix-vector: intensity ~1 FLOP/byte (bf16), memory-bound
    mv = R.gemm(4096, 4096, 1, "bf16")
    assert mv.intensity == pytest.approx(2 * 4096**2 / ((4096**2 + 2 * 4096) * 2))
    assert R.bound(mv.intensity, "A100-80GB") == "memory-bound"
    assert R.gemm(2, 3, 4, name="x").name == "x"


def test_chapter_operations_split_at_ridge():
    ops = {o.name: o for o in R.chapter_operations()}
    assert R.bound(ops["FFN GEMM"].intensity, "A100-80GB") == "compute-bound"
    assert R.bound(ops["attention scores (materialized)"].intensity,
                   "A100-80GB") == "memory-bound"


def test_roofline_time():
    op = R.Operation("x", 312e12, 1.0)
    assert R.roofline_time(op, "A100-80GB") == pytest.approx(1.0)
    op = R.Operation("y", 1.0, 2.039e12)
    assert R.roofline_time(op, "A100-80GB") == pytest.approx(1.0)


# -- diagnosis (Table 7, Table 9, Self-Check 4) --------------------------------------

@pytest.mark.parametrize("signals, label", [
    # chapter 002 Self-Check 4 Q3 Run A: 92 %, HBM saturated, CPU idle -> compute-bound
    (dict(gpu_util=0.92, hbm_util=0.95, cpu_util=0.1), "compute-bound"),
    # Self-Check 4 Q3 Run B: 18 %, drops to zero, CPU pinned, HBM low -> data-bound
    (dict(gpu_util=0.18, hbm_util=0.1, cpu_util=1.0, idle_gaps=True), "data-bound"),
    # Self-Check 4 Q2: white gaps, CPU busy, HBM low -> data-bound
    (dict(gpu_util=0.4, hbm_util=0.15, cpu_util=0.9, idle_gaps=True), "data-bound"),
    # Table 7 memory-bound row: 50-80 % utilization, high bandwidth
    (dict(gpu_util=0.65, hbm_util=0.85, cpu_util=0.2), "memory-bound"),
    # Table 7 compute-bound row: >90 %, low bandwidth
    (dict(gpu_util=0.95, hbm_util=0.2, cpu_util=0.2), "compute-bound"),
    # Example 1.3 step 3: does not fit -> capacity (Table 9: accumulation, checkpointing)
    (dict(gpu_util=0.0, hbm_util=0.0, cpu_util=0.0, oom=True), "capacity-bound"),
    # course catch-all: low util, idle CPU, low HBM
    (dict(gpu_util=0.45, hbm_util=0.3, cpu_util=0.2), "overhead-bound"),
    # gaps but CPU idle: not the input pipeline
    (dict(gpu_util=0.45, hbm_util=0.3, cpu_util=0.2, idle_gaps=True), "overhead-bound"),
])
def test_diagnose(signals, label):
    assert R.diagnose_bottleneck(**signals) == label
    assert label in R.LABELS


def test_recommend_table_9():
    # chapter 002 Table 9
    assert R.recommend_technique("data-bound") == "prefetching & pipeline overlap"
    assert R.recommend_technique("compute-bound") == "mixed-precision training"
    assert "FlashAttention" in R.recommend_technique("memory-bound")
    assert "checkpointing" in R.recommend_technique("capacity-bound")
    assert set(R.TECHNIQUES) == set(R.LABELS)
    with pytest.raises(ValueError, match="label"):
        R.recommend_technique("io-bound")


@settings(max_examples=50, deadline=None)
@given(i=st.floats(0, 1e5), name=st.sampled_from(["V100-32GB", "A100-80GB", "H100-SXM"]))
def test_roofline_properties(i, name):
    dtype = "fp16"
    a = get_accelerator(name)
    p = R.attainable_flops(i, name, dtype)
    assert p <= a.peak(dtype) * (1 + 1e-12)
    assert p <= i * a.hbm_bandwidth * (1 + 1e-12) or i * a.hbm_bandwidth >= a.peak(dtype)
    assert (R.bound(i, name, dtype) == "compute-bound") == (p >= a.peak(dtype))


@settings(max_examples=50, deadline=None)
@given(g=st.floats(0, 1), m=st.floats(0, 1), c=st.floats(0, 1), gaps=st.booleans(),
       oom=st.booleans())
def test_diagnose_total(g, m, c, gaps, oom):
    assert R.diagnose_bottleneck(g, m, c, gaps, oom) in R.LABELS


def test_bad_input():
    with pytest.raises(ValueError, match="accelerator"):
        R.ridge_point("B200")
    with pytest.raises(ValueError, match="dtype"):
        R.ridge_point("V100-32GB", "bf16")
    with pytest.raises(ValueError, match="bytes_moved"):
        R.arithmetic_intensity(1.0, 0)
    with pytest.raises(ValueError, match="gpu_util"):
        R.diagnose_bottleneck(92, 0.5, 0.1)
    with pytest.raises(TypeError, match="idle_gaps"):
        R.diagnose_bottleneck(0.5, 0.5, 0.1, idle_gaps="yes")
    with pytest.raises(ValueError, match="m"):
        R.gemm(0, 1, 1)
    with pytest.raises(ValueError, match="intensity"):
        R.attainable_flops(np.array([-1.0]), "V100-32GB", "fp16")
    with pytest.raises(TypeError, match="op"):
        R.roofline_time(3.0, "V100-32GB")
    with pytest.raises(ValueError, match="reads"):
        R.elementwise(10, reads=0, writes=0)
