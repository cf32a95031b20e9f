"""Tests for coursekit.training.input_pipeline (chapter 002 = seeds/002_50d9d343ab1fbc28.txt)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.training import input_pipeline as P
from coursekit.units import GB, MS


def test_example_1_1_pipeline():
    # chapter 002 Example 1.1: 7 GB/s NVMe, access factor 0.1 -> 0.70 GB/s
    assert P.storage_rate(7 * GB) == pytest.approx(0.70 * GB)
    assert P.storage_rate(7 * GB, network_bandwidth=1.25 * GB) == pytest.approx(0.125 * GB)
    # 32 x 1024 = 32,768 tokens at 500K tokens/s/core -> 65.5 ms
    assert P.stage_time(32 * 1024, 500e3) / MS == pytest.approx(65.536, rel=1e-12)
    # 8 workers -> 8.2 ms
    assert P.stage_time(32 * 1024, 500e3, 8) / MS == pytest.approx(8.192, rel=1e-12)
    # int64 batch 32 x 1024 -> 262.1 KB
    b = P.tensor_bytes((32, 1024), 8)
    assert b == 262_144
    # Gen3 x16 at 15.75 GB/s -> 0.017 ms
    assert P.stage_time(b, 15.75 * GB) / MS == pytest.approx(0.01664, abs=1e-5)
    # overlapped with the 84.4 ms step: iteration = 84.4 ms, 32 samples -> 379 samples/s
    t = P.overlapped_iteration_time([8.192 * MS, 0.01664 * MS, 84.4 * MS])
    assert 32 / t == pytest.approx(379.15, abs=0.01)
    # one core already nearly keeps up (65.5 < 84.4 ms): Eq 15 holds with 1 worker
    assert P.workers_needed(65.536 * MS, 84.4 * MS) == 1


def test_eq_8_to_11():
    # Eq 8: 4 workers at 30 ms each -> 133.3 batches/s
    assert P.preprocessing_rate(4, 0.030) == pytest.approx(133.333, abs=1e-3)
    # Eq 11: 200 vs 1,000 img/s -> 20 %; 2,000 img/s accelerator -> 10 %
    assert P.accelerator_utilization(200, 1000) == pytest.approx(0.2)
    assert P.accelerator_utilization(200, 2000) == pytest.approx(0.1)
    assert P.accelerator_utilization(2000, 1000) == 1.0
    # Self-Check 3 Q2: 4, 32, 12 GB/s -> min = 4 GB/s, preprocessing
    assert P.system_rate(4 * GB, 32 * GB, 12 * GB) == 4 * GB
    assert P.bottleneck_stage(preprocess=4 * GB, transfer=32 * GB,
                              compute=12 * GB) == "preprocess"


def test_eq_13_serial_vs_overlap():
    stages = [0.010, 0.030, 0.005]
    assert P.serial_iteration_time(stages) == pytest.approx(0.045)
    assert P.overlapped_iteration_time(stages) == 0.030
    # recomputed: fill once, then one batch per slowest stage
    assert P.pipeline_total_time(stages, 10) == pytest.approx(0.045 + 9 * 0.030)
    assert P.pipeline_total_time(stages, 10, overlapped=False) == pytest.approx(0.45)
    # §Practical considerations: 30 ms of crop+jitter+normalize vs a 10 ms step needs
    # 3 workers (Eq 15); 20-40 ms vs 10-15 ms -> 2 to 4 workers (chapter says 4-8)
    assert P.workers_needed(0.030, 0.010) == 3
    assert P.workers_needed(0.040, 0.010) == 4
    assert P.workers_needed(0.020, 0.015) == 2


def test_listing_4_prefetch_memory():
    # chapter 002 Listing 4: num_workers=4, prefetch_factor=2 -> 8 batches
    assert P.prefetch_batches(4, 2) == 8
    # 256 x 1024 x 1024 x 3 fp32 = 3.2 GB; 8 batches -> 25.8 GB
    batch = P.tensor_bytes((256, 1024, 1024, 3), 4)
    assert batch / GB == pytest.approx(3.22, abs=0.005)
    assert P.prefetch_memory(4, 2, batch) / GB == pytest.approx(25.8, abs=0.05)
    # Eq 14
    assert P.buffer_memory(8, 2, 1, batch) == 11 * batch


def test_table_6_warps():
    # chapter 002 Table 6
    assert P.warps_needed(32) == 1 and P.warps_needed(33) == 2 and P.warps_needed(65) == 3
    assert P.warp_utilization(32) == 1.0
    assert P.warp_utilization(33) == pytest.approx(0.516, abs=5e-4)  # 51.6 %
    assert P.warp_utilization(64) == 1.0
    assert P.warp_utilization(65) == pytest.approx(0.677, abs=5e-4)  # 67.7 %
    arr = P.warp_utilization(np.arange(1, 129))
    assert arr.shape == (128,) and arr[31] == 1.0 and arr[32] == pytest.approx(33 / 64)
    # H100 132 SMs: 133 blocks -> 2 waves -> 50.4 % (recomputed 133/264)
    assert P.wave_utilization(133) == pytest.approx(133 / 264)
    assert P.wave_utilization(264, n_sms=132, blocks_per_sm=2) == 1.0


def test_flashattention_memory():
    # chapter 002 §FlashAttention: S = 4096, d_head = 64, FP32
    assert P.attention_memory_standard(4096) == 67_108_864  # 67.1 MB per head
    assert P.attention_memory_tiled(4096, 64) == 3_145_728  # 3.1 MB per head
    # chapter: 21.3x reduction
    assert P.attention_memory_standard(4096) / P.attention_memory_tiled(4096, 64) == \
        pytest.approx(21.33, abs=0.005)
    # chapter: "with 16 heads ... 1.1 GB"
    assert 16 * P.attention_memory_standard(4096) / GB == pytest.approx(1.07, abs=0.005)


@settings(max_examples=50, deadline=None)
@given(stages=st.lists(st.floats(0, 10), min_size=1, max_size=6), n=st.integers(1, 50))
def test_overlap_never_slower(stages, n):
    assert P.overlapped_iteration_time(stages) <= P.serial_iteration_time(stages) + 1e-12
    assert P.pipeline_total_time(stages, n) <= P.pipeline_total_time(
        stages, n, overlapped=False) + 1e-9


@settings(max_examples=50, deadline=None)
@given(b=st.integers(1, 10_000), w=st.sampled_from([8, 32, 64]))
def test_warp_util_bounds(b, w):
    u = P.warp_utilization(b, w)
    assert 0 < u <= 1
    assert (u == 1.0) == (b % w == 0)
    assert u > 0.5 or b <= w  # past the first warp, never below half (recomputed)


@settings(max_examples=50, deadline=None)
@given(p=st.floats(0, 1e4), c=st.floats(1e-3, 1e4))
def test_utilization_in_unit_interval(p, c):
    assert 0 <= P.accelerator_utilization(p, c) <= 1


def test_bad_input():
    with pytest.raises(ValueError, match="access_factor"):
        P.storage_rate(7 * GB, access_factor=1.5)
    with pytest.raises(ValueError, match="n_workers"):
        P.preprocessing_rate(0, 0.03)
    with pytest.raises(ValueError, match="compute_rate"):
        P.accelerator_utilization(200, 0)
    with pytest.raises(ValueError, match="stage_times"):
        P.serial_iteration_time([])
    with pytest.raises(ValueError, match=r"stage_times\[1\]"):
        P.overlapped_iteration_time([1.0, -2.0])
    with pytest.raises(TypeError, match="stage_times"):
        P.serial_iteration_time(3.0)
    with pytest.raises(ValueError, match="batch"):
        P.warp_utilization(0)
    with pytest.raises(ValueError, match="batch"):
        P.warp_utilization(32.5)
    with pytest.raises(ValueError, match="seq_len"):
        P.attention_memory_standard(0)
    with pytest.raises(ValueError):
        P.system_rate()
