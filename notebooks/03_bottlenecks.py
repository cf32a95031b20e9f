# %% [markdown]
# # 03 · Finding the bottleneck: roofline, data pipeline, overlap, diagnosis
#
# **Follows:** the "Model Training" chapter — §Arithmetic intensity (Table 5, Figure 2), the data
# pipeline (Eq 7–15, Example 1.1), wave quantization (Systems Perspective 1.6, Table 6),
# prefetching and overlap (Figures 10–11, Listing 4), FlashAttention's memory (§1.5.4),
# identifying bottlenecks (Table 7, Self-Check 4) and the technique roadmap (Table 9).
#
# **You will be able to:** compute arithmetic intensity and an accelerator's ridge point; say
# whether a kernel is memory- or compute-bound and how fast it can possibly run; find the slowest
# stage of a data pipeline and the utilization it leaves the accelerator; choose the fewest
# loader workers for a utilization target, and see when no number of workers can reach it;
# compare serial and overlapped iteration time; predict the warp-quantization tax; turn profiler
# signals into a diagnosis and the technique that addresses it; and name a run's binding
# constraint from its counters, with the number that proves it.
#
# **Time:** about 100 minutes. **Points:** 24, in 10 graded cells.
#
# ### Conventions used in this notebook (read them once)
# * **Bytes are HBM traffic**: each input read once, each output written once (ideal caching).
# * **Ridge point** = peak FLOP/s ÷ HBM bytes/s of the *same* accelerator and dtype. The A100
#   80 GB's own datasheet gives 312 × 10¹² / 2.039 × 10¹² = **153 FLOP/byte** (the chapter
#   rounds to 156). At exactly the ridge we call a kernel **compute-bound**.
# * **Rates** are items per second (batches, samples, bytes); compare stages in the same item.
#   Utilizations are fractions (0.2, not 20).
# * **Diagnosis labels** are exactly one of `"data-bound"`, `"memory-bound"`,
#   `"compute-bound"`, `"capacity-bound"`, `"overhead-bound"` (Part 6 gives a rule for
#   profiler summaries, then has you derive one from per-step counters).

# %% [setup]
# Setup: imports. In Colab this installs coursekit first if it is missing (no restart needed).
{{COURSEKIT_SETUP}}
import math
import numpy as np
import matplotlib.pyplot as plt
from coursekit.grading import checks as ck
from coursekit.grading import selfcheck as sc  # instant feedback on predictions
from coursekit.training import roofline as ref_roofline
from coursekit.training import input_pipeline as ref_pipeline
from coursekit.units import GB, MB, TFLOP, MS, dtype_bytes
from coursekit.hardware import get_accelerator
from coursekit.viz import training as viz

A100 = get_accelerator("A100-80GB")
V100 = get_accelerator("V100-32GB")
print(f"coursekit {coursekit.__version__}; A100-80GB: {A100.peak('bf16') / TFLOP:g} TFLOP/s bf16, "
      f"{A100.hbm_bandwidth / GB:,.0f} GB/s HBM")

# %% [markdown]
# ## Part 1 · The problem: a faster GPU that is not faster
#
# The chapter's element-wise activation moves 2 bytes per FP16 value and does about 1 FLOP on it.
# An A100 can do 312 × 10¹² FLOP/s but read only 2.039 × 10¹² bytes/s, so an activation over
# 10⁹ values needs at least 2 × 10⁹ / 2.039 × 10¹² ≈ 1 ms just to *read* its input, while the
# arithmetic would take 3 µs. Doubling peak FLOP/s changes nothing here.
#
# The quantity that decides is the **arithmetic intensity** $I$ = FLOPs / bytes moved, compared
# with the accelerator's **ridge point** $R_\text{peak} / BW$.
#
# **Predict before you run:** a square bf16 matrix product (n × n)·(n × n): at which n does it
# cross the A100's ridge of ~153 FLOP/byte: 64, 512 or 4096?
#
# Write `ridge_point(peak_flops, hbm_bandwidth)` (FLOP/byte) and
# `gemm_intensity(m, k, n, bytes_per_value)` for (m×k)·(k×n): $2mkn$ FLOPs over
# $(mk + kn + mn)\cdot$bytes. Both raise `ValueError` for non-positive inputs.

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_prediction = None  # your guess for n: 64, 512 or 4096?
sc.predict("nb03_p1_ridge_n", my_prediction)

# %% [answer id=ex_ridge partial]
def ridge_point(peak_flops, hbm_bandwidth):
    """FLOP/byte at which the roofline turns: peak / bandwidth."""
    ### BEGIN SOLUTION
    if peak_flops <= 0 or hbm_bandwidth <= 0:
        raise ValueError("peak_flops and hbm_bandwidth must be > 0")
    return peak_flops / hbm_bandwidth
    ### END SOLUTION

# %% [test id=test_ridge points=1]
ck.check_close(ck.call(ridge_point, 312e12, 2.039e12), 153.0162, rel=1e-6,
               name="A100 ridge", reveal=True, unit="FLOP/byte")
print("visible test passed: A100-80GB ridge = 153.0 FLOP/byte")
### BEGIN HIDDEN TESTS
ck.forbid(ref_roofline.ridge_point)
# recomputed from the V100 datasheet: 125e12 / 900e9 = 138.889 FLOP/byte
ck.case('V100_ridge', lambda: ridge_point(125e12, 900e9),
        expect=ck.approx(138.8889, rel=1e-6), name='V100 ridge')
# an A100 peak over a 1.6 TB/s memory (the 40 GB model's HBM2): 312 / 1.6 = 195 FLOP/byte
ck.case('A100_40GB', lambda: ridge_point(312e12, 1.6e12),
        expect=ck.approx(195.0), name='A100 40 GB')
# A100 fp32 (19.5 TFLOP/s) -> 9.5635: precision moves the ridge (chapter footnote 19)
ck.case('A100_fp32_ridge', lambda: ridge_point(19.5e12, 2.039e12),
        expect=ck.approx(9.563511, rel=1e-6), name='A100 fp32 ridge')
ck.case('ridge_point_bandwidth_0', lambda: ridge_point(312e12, 0),
        expect=ck.raises(ValueError), name='ridge_point(bandwidth=0)')
### END HIDDEN TESTS

# %% [answer id=ex_gemm_intensity]
def gemm_intensity(m, k, n, bytes_per_value):
    """Arithmetic intensity (FLOP/byte) of an (m x k) @ (k x n) product; ValueError if a
    size or bytes_per_value is not positive."""
    ### BEGIN SOLUTION
    if min(m, k, n) <= 0 or bytes_per_value <= 0:
        raise ValueError("m, k, n and bytes_per_value must be > 0")
    return 2 * m * k * n / ((m * k + k * n + m * n) * bytes_per_value)
    ### END SOLUTION

# %% [test id=test_gemm_intensity points=2]
ck.check_close(ck.call(gemm_intensity, 3, 3, 3, 2), 1.0, name="gemm_intensity(3,3,3,2)",
               reveal=True, unit="FLOP/byte")
print("visible test passed")
### BEGIN HIDDEN TESTS
ck.forbid(ref_roofline.gemm, ref_roofline.arithmetic_intensity)
# recomputed: square n = 4096, bf16: n/3 = 1365.33
ck.case('4096_3_bf16', lambda: gemm_intensity(4096, 4096, 4096, 2),
        expect=ck.approx(1365.3333, rel=1e-6), name='4096^3 bf16')
# matrix-vector 4096x4096 @ 4096x1, bf16: 2*4096^2 / ((4096^2 + 2*4096)*2) = 0.999512
ck.case('matrix-vector', lambda: gemm_intensity(4096, 4096, 1, 2),
        expect=ck.approx(0.99951195, rel=1e-6), name='matrix-vector')
# Llama-2-7B FFN up-projection, 8 x 2048 tokens x 4096 x 11008, fp16 (not the GPT-2 XL FFN,
# whose intensity the chapter's table below prints):
# 2*16384*4096*11008 / ((16384*4096 + 4096*11008 + 16384*11008) * 2) = 2525.1326 (recomputed)
ck.case('Llama-2-7B_FFN', lambda: gemm_intensity(16384, 4096, 11008, 2),
        expect=ck.approx(2525.1326, rel=1e-6), name='Llama-2-7B FFN')
ck.case('gemm_intensity_m_0', lambda: gemm_intensity(0, 4, 4, 2),
        expect=ck.raises(ValueError), name='gemm_intensity(m=0)')
### END HIDDEN TESTS

# %% [markdown]
# A square bf16 GEMM has $I = n/3$: it crosses 153 FLOP/byte at $n \approx 460$. A batch-1
# matrix-vector product stays at ~1 FLOP/byte however large: this is why batching matters
# (chapter §Arithmetic intensity: "with batch = 1, many operations fall below the ridge").
#
# ## Part 2 · The roofline
#
# A kernel of intensity $I$ can run no faster than
#
# $$P(I) = \min(R_\text{peak},\; I \cdot BW)$$
#
# Left of the ridge it is **memory-bound** (the bandwidth slope limits it), right of it
# **compute-bound** (the flat roof limits it).
#
# **Predict:** materialized attention scores have $I = d_\text{head}/2$ = 32 FLOP/byte for
# GPT-2 (chapter §Arithmetic intensity). What fraction of the A100's bf16 peak can they reach?
#
# Write `attainable(intensity, peak_flops, hbm_bandwidth)` (FLOP/s) and
# `classify(intensity, peak_flops, hbm_bandwidth)` returning `"memory-bound"` or
# `"compute-bound"` (compute-bound at exactly the ridge). Negative intensity raises `ValueError`.

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_prediction = None  # your guess, as a fraction of peak (between 0 and 1)
sc.predict("nb03_p2_attn_peak_fraction", my_prediction)

# %% [answer id=ex_roofline partial]
def attainable(intensity, peak_flops, hbm_bandwidth):
    """Roofline: the most FLOP/s a kernel of this intensity can reach."""
    ### BEGIN SOLUTION
    if intensity < 0:
        raise ValueError(f"intensity must be >= 0, got {intensity}")
    return min(peak_flops, intensity * hbm_bandwidth)
    ### END SOLUTION


def classify(intensity, peak_flops, hbm_bandwidth):
    """'memory-bound' left of the ridge point, 'compute-bound' at or right of it."""
    ### BEGIN SOLUTION
    if intensity < 0:
        raise ValueError(f"intensity must be >= 0, got {intensity}")
    return "memory-bound" if intensity < peak_flops / hbm_bandwidth else "compute-bound"
    ### END SOLUTION

# %% [test id=test_roofline points=2]
ck.check_close(ck.call(attainable, 32, 312e12, 2.039e12), 65.248e12, name="attainable(32) on A100",
               reveal=True, unit="FLOP/s")
ck.check_exact(ck.call(classify, 32, 312e12, 2.039e12), "memory-bound", name="classify(32)",
               reveal=True)
print("visible test passed: materialized attention reaches 65.2 of 312 TFLOP/s")
### BEGIN HIDDEN TESTS
ck.forbid(ref_roofline.attainable_flops, ref_roofline.bound, ref_roofline.ridge_point)
# compute roof: an FFN-like 1,200 FLOP/byte on the A100 -> 312e12
ck.case('attainable_FFN', lambda: attainable(1200.0, 312e12, 2.039e12),
        expect=ck.approx(312e12), name='attainable(FFN)')
# chapter Table 5 activation 0.5 FLOP/byte on the V100: 0.5 * 900e9 = 450e9
ck.case('attainable_activation_on_V100', lambda: attainable(0.5, 125e12, 900e9),
        expect=ck.approx(450e9), name='attainable(activation) on V100')
ck.case('classify_FFN', lambda: classify(1200.0, 312e12, 2.039e12),
        expect=ck.exactly("compute-bound"), name='classify(FFN)')
# at exactly the ridge (156 = 312/2.0): compute-bound by convention
ck.case('classify_at_ridge', lambda: classify(156.0, 312e12, 2.0e12),
        expect=ck.exactly("compute-bound"), name='classify(at ridge)')
# 100 FLOP/byte: compute-bound on an fp32 A100 (ridge 9.56), memory-bound at bf16 (153)
ck.case('classify_100_fp32', lambda: classify(100, 19.5e12, 2.039e12),
        expect=ck.exactly("compute-bound"), name='classify(100) fp32')
ck.case('classify_100_bf16', lambda: classify(100, 312e12, 2.039e12),
        expect=ck.exactly("memory-bound"), name='classify(100) bf16')
ck.case('attainable_-1', lambda: attainable(-1, 312e12, 2.039e12),
        expect=ck.raises(ValueError), name='attainable(-1)')
### END HIDDEN TESTS

# %% [markdown]
# ### The roofline, with the chapter's operations on it
# The A100 and V100 roofs, and one GPT-2 XL layer's operations (Napkin 1.1 sizes) placed on the
# A100 roof. The roof is drawn with **your** `attainable` when it works. Now switch to fp32:
# watch where the ridge moves, and why every operation's intensity halves (4-byte values).

# %%
def _student_roof(intensity, accelerator, dtype):
    a = get_accelerator(accelerator)
    return attainable(intensity, a.peak(dtype), a.hbm_bandwidth)

fig, axes = plt.subplots(1, 2, figsize=(14, 5))
viz.plot_roofline(("A100-80GB", "V100-32GB"), "fp16", attainable_fn=_student_roof, ax=axes[0])
viz.plot_roofline(("A100-80GB", "V100-32GB"), "fp32", attainable_fn=_student_roof, ax=axes[1])
fig.tight_layout()
plt.show()

# %% [markdown]
# Table 5's classes land where the chapter says: the GEMMs (hundreds to a thousand FLOP/byte) on
# the flat roof; activation, LayerNorm and softmax (0.25–2 FLOP/byte) far down the slope; the
# materialized attention scores at 32 FLOP/byte, memory-bound. (Table 5 quotes ~10 FLOP/byte for
# LayerNorm and ~5 for softmax; counting ~8 and ~5 FLOPs per element over 4 bytes read+written
# gives 2 and 1.25. The verdict, memory-bound by two orders of magnitude, is the same.)
#
# ### Misconception: "a GPU with twice the TFLOP/s trains twice as fast"
# Only compute-bound kernels speed up. With the V100 → A100 upgrade (125 → 312 TFLOP/s, 2.5×;
# 900 → 2,039 GB/s, 2.27×), the memory-bound kernels gain 2.27×, not 2.5×; on a hypothetical A100
# with the V100's memory they would gain nothing:

# %%
for _op in ref_roofline.chapter_operations("fp16"):
    _v = ref_roofline.attainable_flops(_op.intensity, V100, "fp16")
    _a = ref_roofline.attainable_flops(_op.intensity, A100, "fp16")
    _same_mem = min(A100.peak("fp16"), _op.intensity * V100.hbm_bandwidth)
    print(f"{_op.name:<32} I = {_op.intensity:8.2f} FLOP/byte: V100 {_v / TFLOP:6.1f} -> A100 "
          f"{_a / TFLOP:6.1f} TFLOP/s ({_a / _v:.2f}x); A100 with V100 memory: {_same_mem / _v:.2f}x")

# %% [markdown]
# ### FlashAttention: the same FLOPs, a fraction of the bytes
# Standard attention writes an $S \times S$ score matrix per head to HBM: at $S$ = 4096 in FP32
# that is $4096^2 \times 4$ bytes = 67.1 MB per head. FlashAttention streams tiles through SRAM and
# keeps only Q, K and V, $3 \times S \times d_\text{head} \times 4$ bytes = 3.1 MB (chapter
# §1.5.4; with the output Y too, 4.2 MB).

# %%
for _s in (1024, 2048, 4096, 8192):
    _std = ref_pipeline.attention_memory_standard(_s)
    _fl = ref_pipeline.attention_memory_tiled(_s, 64)
    print(f"S = {_s:>5}: standard {_std / MB:8.1f} MB per head, tiled {_fl / MB:5.1f} MB "
          f"per head ({_std / _fl:5.1f}x less); x 16 heads standard = {16 * _std / GB:.2f} GB")

# %% [markdown]
# ## Part 3 · The data pipeline: the slowest stage sets the pace
#
# Three stages feed the accelerator (Eq 7–10): storage, CPU preprocessing with $N$ workers
# ($R_\text{pre} = N / T_\text{transform}$, Eq 8) and the host-to-device copy. The pipeline
# delivers $R_\text{pipeline} = \min(\ldots)$ of its stages, and the accelerator is busy
#
# $$U = \min\!\left(1, \frac{R_\text{pipeline}}{R_\text{compute}}\right) \quad\text{(Eq 11).}$$
#
# **Predict:** ResNet-50 computes 1,000 images/s; the pipeline delivers 200 images/s. You buy an
# accelerator that computes 2,000 images/s. What is its utilization?
#
# Write `preprocessing_rate(n_workers, transform_time)` (items/s) and
# `accelerator_utilization(pipeline_rate, compute_rate)` (fraction, at most 1).

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_prediction = None  # your guess, as a fraction (between 0 and 1, not a percent)
sc.predict("nb03_p3_utilization", my_prediction)

# %% [answer id=ex_pipeline]
def preprocessing_rate(n_workers, transform_time):
    """Items per second from n_workers, each taking transform_time seconds per item;
    ValueError if n_workers < 1 or transform_time <= 0."""
    ### BEGIN SOLUTION
    if n_workers < 1 or transform_time <= 0:
        raise ValueError("n_workers must be >= 1 and transform_time > 0")
    return n_workers / transform_time
    ### END SOLUTION


def accelerator_utilization(pipeline_rate, compute_rate):
    """Fraction of time the accelerator computes, given both rates in the same unit;
    ValueError if compute_rate <= 0 or pipeline_rate < 0."""
    ### BEGIN SOLUTION
    if compute_rate <= 0 or pipeline_rate < 0:
        raise ValueError("compute_rate must be > 0 and pipeline_rate >= 0")
    return min(1.0, pipeline_rate / compute_rate)
    ### END SOLUTION

# %% [test id=test_pipeline points=2]
ck.check_close(ck.call(accelerator_utilization, 200, 1000), 0.2, name="Eq 11: 200 vs 1,000",
               reveal=True)
print("visible test passed: 20% utilization")
### BEGIN HIDDEN TESTS
ck.forbid(ref_pipeline.accelerator_utilization, ref_pipeline.preprocessing_rate, ref_pipeline.system_rate)
# chapter Eq 11 text: a 2,000 img/s accelerator -> 10 %
ck.case('200_vs_2_000', lambda: accelerator_utilization(200, 2000),
        expect=ck.approx(0.1), name='200 vs 2,000')
# never above 1
ck.case('faster_pipeline', lambda: accelerator_utilization(2000, 1000),
        expect=ck.approx(1.0), name='faster pipeline')
# chapter §Data pipeline: one thread at 30 ms/batch -> 33.33 batches/s; 4 workers -> 133.33
ck.case('1_worker_30_ms', lambda: preprocessing_rate(1, 0.030),
        expect=ck.approx(33.333333, rel=1e-6), name='1 worker, 30 ms')
ck.case('4_workers_30_ms', lambda: preprocessing_rate(4, 0.030),
        expect=ck.approx(133.33333, rel=1e-6), name='4 workers, 30 ms')
# Example 1.1: one core tokenizes a batch in 65.536 ms vs an 84.4 ms step -> utilization 1
ck.case('Example_1.1_one_core', lambda: accelerator_utilization(preprocessing_rate(1, 0.065536), 1 / 0.0844),
        expect=ck.approx(1.0), name='Example 1.1, one core')
ck.case('compute_rate_0', lambda: accelerator_utilization(200, 0),
        expect=ck.raises(ValueError), name='compute_rate=0')
### END HIDDEN TESTS

# %% [markdown]
# The 2,000 images/s accelerator mostly waits: upgrading the most expensive component made the
# system no faster. Example 1.1 (GPT-2) traces every stage for a batch of 32 × 1,024 tokens:

# %%
_tokens = 32 * 1024
_batch_bytes = ref_pipeline.tensor_bytes((32, 1024), 8)  # int64 token ids
_rates = {  # batches per second, per stage
    "storage": ref_pipeline.storage_rate(7 * GB) / _batch_bytes,  # 7 GB/s NVMe x 0.1
    "tokenize": 500e3 / _tokens,                                  # 1 core, 500K tokens/s
    "pcie": 15.75 * GB / _batch_bytes,                            # Gen3 x16
    "compute": 1 / 0.0844,                                        # 84.4 ms step
}
print(f"batch: {_batch_bytes:,.0f} bytes of int64 token ids")
for _name, _rate in _rates.items():
    print(f"{_name:<9} {_rate:12,.1f} batches/s")
print("slowest stage:", ref_pipeline.bottleneck_stage(**_rates))
print(f"tokenize one batch: 1 core {ref_pipeline.stage_time(_tokens, 500e3) / MS:.1f} ms, "
      f"8 cores {ref_pipeline.stage_time(_tokens, 500e3, 8) / MS:.1f} ms; "
      f"accelerator step 84.4 ms -> {32 / 0.0844:.0f} samples/s")

# %% [markdown]
# ## Part 4 · Serial vs overlapped: sum versus max
#
# Without prefetching, each step waits for every stage in turn: $T = \sum_i T_i$ (Figure 10).
# With prefetching, stage $i$ works on batch $b+1$ while stage $i+1$ works on batch $b$, so
# in steady state $T = \max_i T_i$ (Eq 13, Figure 11).
#
# **Predict:** crop 10 ms, color jitter 15 ms and normalize 5 ms, **each its own pipeline
# stage** (its own CPU worker, handing batches on through a queue), then a 25 ms GPU step.
# Serial and overlapped step time?
#
# Write `iteration_times(stage_times)` returning the pair `(serial, overlapped)` in seconds.
# An empty list or a negative time raises `ValueError`.

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_serial_ms     = None  # your guess, in ms
my_overlapped_ms = None  # your guess, in ms
sc.predict("nb03_p4_serial_ms", my_serial_ms)
sc.predict("nb03_p4_overlapped_ms", my_overlapped_ms)

# %% [answer id=ex_overlap partial]
def iteration_times(stage_times):
    """(serial, overlapped) step time in seconds for the given per-stage times."""
    ### BEGIN SOLUTION
    if len(stage_times) == 0 or min(stage_times) < 0:
        raise ValueError("stage_times must be a non-empty list of times >= 0")
    return float(sum(stage_times)), float(max(stage_times))
    ### END SOLUTION

# %% [test id=test_overlap points=2]
_got = ck.call(iteration_times, [0.010, 0.015, 0.005, 0.025])
ck.check_close(_got[0], 0.055, name="serial", reveal=True, unit="s")
ck.check_close(_got[1], 0.025, name="overlapped", reveal=True, unit="s")
print("visible test passed: 55 ms serial, 25 ms overlapped")
### BEGIN HIDDEN TESTS
ck.forbid(ref_pipeline.serial_iteration_time, ref_pipeline.overlapped_iteration_time, ref_pipeline.pipeline_total_time)
# Example 1.1 after the fix: tokenize 8.192 ms, PCIe 0.01664 ms, step 84.4 ms
ck.case('Example_1.1_serial', lambda: iteration_times([0.008192, 0.00001664, 0.0844])[0],
        expect=ck.approx(0.09260864, rel=1e-6), name='Example 1.1 serial')
ck.case('Example_1.1_overlapped', lambda: iteration_times([0.008192, 0.00001664, 0.0844])[1],
        expect=ck.approx(0.0844, rel=1e-6), name='Example 1.1 overlapped')
# a single stage: both equal
ck.case('single_stage_serial', lambda: iteration_times([0.3])[0],
        expect=ck.approx(0.3), name='single stage serial')
ck.case('single_stage_overlapped', lambda: iteration_times([0.3])[1],
        expect=ck.approx(0.3), name='single stage overlapped')
ck.case('iteration_times', lambda: iteration_times([]),
        expect=ck.raises(ValueError), name='iteration_times([])')
ck.case('negative_stage_time', lambda: iteration_times([0.1, -0.2]),
        expect=ck.raises(ValueError), name='negative stage time')
### END HIDDEN TESTS

# %% [markdown]
# Figures 10–11 as Gantt charts, four batches, one stage per transform as in the exercise: the
# slowest stage (the 25 ms GPU step) sets the pace. Had the three transforms shared **one** CPU
# thread, they would form a single 30 ms stage, and overlap would give max(30, 25) = 30 ms: the
# CPU, not the GPU, would be the bottleneck. What counts as a stage is the first question to ask.

# %%
viz.plot_pipeline_gantt({"crop": 0.010, "color jitter": 0.015, "normalize": 0.005,
                         "GPU step": 0.025}, n_batches=4)
plt.show()
try:
    _s, _o = iteration_times([0.010, 0.015, 0.005, 0.025])
    print(f"your iteration_times: serial {_s * 1e3:.0f} ms, overlapped {_o * 1e3:.0f} ms "
          f"({1 - _o / _s:.0%} shorter)")
except Exception:  # stub
    print("implement iteration_times to see your numbers here")

# %% [markdown]
# ### The price of prefetching: host memory (Listing 4, Eq 14)
# `DataLoader(num_workers=4, prefetch_factor=2)` keeps 4 × 2 = 8 batches in flight. For 256
# images of 1024 × 1024 × 3 in FP32, each batch is 3.2 GB:

# %%
_batch = ref_pipeline.tensor_bytes((256, 1024, 1024, 3), 4)
for _w, _p in ((4, 2), (8, 2), (16, 4)):
    print(f"num_workers={_w:>2}, prefetch_factor={_p}: {ref_pipeline.prefetch_batches(_w, _p):>3} "
          f"batches = {ref_pipeline.prefetch_memory(_w, _p, _batch) / GB:6.1f} GB of host memory")

# %% [markdown]
# ### Explore the pipeline
# Workers, prefetch factor and stage times; the utilization comes from **your**
# `accelerator_utilization` when it works.

# %%
viz.pipeline_explorer(accelerator_utilization)

# %% [markdown]
# ### Design exercise: the fewest loader workers for a utilization target
#
# **The situation.** ResNet-50 trains at **2,470 images/s** on one A100-80GB in mixed precision
# (NVIDIA DeepLearningExamples, ResNet-50 v1.5 for PyTorch, 1 GPU, 21.03 container). With
# prefetching the stages overlap (Part 4), so the accelerator is busy
# $U = \min(1, R_\text{pipeline}/R_\text{compute})$ (Eq 11), where the pipeline runs at its
# slowest stage (Eq 9) and $N$ workers give $N$ times one worker's rate (Eq 8):
#
# * **decode + augment:** one DataLoader worker on one CPU core handles about **250
#   images/s** (an assumed figure, 4 ms per JPEG for decode, random-resized crop and flip;
#   measure your own);
# * **storage:** a local NVMe at 7 GB/s, × 0.1 for shuffled access (Eq 7) = 0.7 GB/s; an
#   ImageNet JPEG averages about 110 KB (the 138 GB ILSVRC-2012 training set holds 1.28 M
#   images), so 0.7 × 10⁹ / 110 × 10³ ≈ 6,364 images/s;
# * **host-to-device copy:** PCIe Gen4 x16 (A100 datasheet: 64 GB/s, i.e. 32 GB/s per
#   direction) carrying 224 × 224 × 3 uint8 = 150,528 bytes per image: ≈ 212,585 images/s.
#
# A DGX A100 has 128 CPU cores for its 8 GPUs (DGX A100 datasheet: 2 × AMD EPYC 7742), so
# 16 cores per GPU; a DGX H100 has 112 for 8 (2 × Xeon Platinum 8480C), 14 per GPU.
#
# **Predict before you code:** how many workers keep this A100 at least 90% busy? Now move
# the same dataset to an NFS share over 10 GbE (1.25 GB/s line rate, × 0.1 for shuffled
# access, Eq 7): how many workers then? (Compute the best utilization any number of workers
# can give before you count workers.)
#
# Write `min_loader_workers(worker_rate, compute_rate, other_rates, target)`: the **fewest**
# workers $N$ (an int, at least 1) for which the accelerator's utilization is at least
# `target`. `worker_rate` is what one worker delivers and `compute_rate` what the accelerator
# consumes, in items/s; `other_rates` is a dict `{stage name: items/s}` of the other stages
# (it may be empty); all rates count the same item. Raise `ValueError` if `target` is not in
# (0, 1], if a rate is not positive, or if **no** number of workers can reach `target`
# because another stage caps the pipeline (say which stage in the message).

# %% [answer id=ex_min_workers]
def min_loader_workers(worker_rate, compute_rate, other_rates, target):
    """Fewest workers (an int >= 1) with utilization >= target; ValueError if target is not
    in (0, 1], a rate is not positive, or another stage caps utilization below target."""
    ### BEGIN SOLUTION
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target}")
    rates = [worker_rate, compute_rate, *other_rates.values()]
    if min(rates) <= 0:
        raise ValueError("every rate must be > 0")
    if other_rates:
        stage = min(other_rates, key=other_rates.get)
        cap = min(1.0, other_rates[stage] / compute_rate)
        if cap < target:
            raise ValueError(f"{stage} caps utilization at {cap:.3f} < target {target}")
    n = 1
    while min(1.0, n * worker_rate / compute_rate) < target:
        n += 1
    return n
    ### END SOLUTION

# %% [test id=test_min_workers points=3]
_resnet_a100 = {"storage (NVMe)": 0.7e9 / 110e3, "PCIe Gen4": 32e9 / 150_528}
ck.check_exact(ck.call(min_loader_workers, 250, 2470, _resnet_a100, 0.9), 9,
               name="ResNet-50 on an A100, 90% busy", reveal=True)
print("visible test passed: 9 workers keep the A100 at least 90% busy")
### BEGIN HIDDEN TESTS
ck.forbid(ref_pipeline.min_workers_for_utilization, ref_pipeline.utilization_cap, ref_pipeline.utilization_with_workers, ref_pipeline.workers_needed)
_nvme = {"storage (NVMe)": 0.7e9 / 110e3, "PCIe Gen4": 32e9 / 150_528}
# same A100 at 95 %: 0.95 x 2470 / 250 = 9.386 -> 10 (NVMe cap 6,364/2,470 > 1)
ck.case('A100_95pct', lambda: min_loader_workers(250, 2470, _nvme, 0.95),
        expect=ck.exactly(10), name='ResNet-50 on an A100, 95% busy')
# GPT-2 124M on an H100 at 40 % MFU: 0.4 x 989.4e12 / (6 x 124e6) = 531,935.5 tokens/s;
# one core tokenizes 500K tokens/s (Example 1.1); text at 0.7 GB/s / 4 B per token,
# int64 ids over PCIe Gen5 (64 GB/s per direction): 0.95 x 531935.5 / 5e5 = 1.0107 -> 2
ck.case('H100_GPT-2_tokens', lambda: min_loader_workers(5e5, 531935.5, {"storage": 0.7e9 / 4, "PCIe Gen5": 64e9 / 8}, 0.95),
        expect=ck.exactly(2), name='GPT-2 124M on an H100, tokens/s')
# Example 1.1 in batches/s: one core 1/65.536 ms = 15.26 > step 1/84.4 ms = 11.85 -> 1
ck.case('Example_1.1', lambda: min_loader_workers(1 / 0.065536, 1 / 0.0844, {"storage": 0.7e9 / 262_144, "PCIe Gen3": 15.75e9 / 262_144}, 0.95),
        expect=ck.exactly(1), name='Example 1.1 (V100), batches/s')
# heavy augmentation, no other stage: 0.92 x 1900 / 45 = 38.84 -> 39 (more than a
# DGX H100's 14 cores per GPU: the design needs GPU decoding, but the count is 39)
ck.case('no_other_stage', lambda: min_loader_workers(45, 1900, {}, 0.92),
        expect=ck.exactly(39), name='heavy augmentation, no other stage')
# exactly 100 %: 4 x 50 = 200 = compute rate -> 4 (at least, not more than)
ck.case('target_1', lambda: min_loader_workers(50, 200, {"PCIe": 1e6}, 1.0),
        expect=ck.exactly(4), name='target = 1, reached exactly')
# the cap equals the target: 180 / 200 = 0.9 is reachable; 0.9 x 200 / 50 = 3.6 -> 4
ck.case('cap_equals_target', lambda: min_loader_workers(50, 200, {"storage": 180}, 0.9),
        expect=ck.exactly(4), name='cap = target')
# storage at 2,400 images/s caps the A100 at 2400/2470 = 0.9717: 95 % needs 10 workers ...
ck.case('cap_just_above', lambda: min_loader_workers(250, 2470, {"storage": 2400}, 0.95),
        expect=ck.exactly(10), name='cap just above the target')
# ... and 98 % is out of reach however many workers
ck.case('cap_just_below', lambda: min_loader_workers(250, 2470, {"storage": 2400}, 0.98),
        expect=ck.raises(ValueError), weight=2, name='cap just below the target')
# an old SATA SSD: 550 MB/s x 0.1 / 110 KB = 500 images/s -> cap 0.2024 < 0.5
ck.case('SATA_cap', lambda: min_loader_workers(250, 2470, {"storage (SATA)": 0.55e9 * 0.1 / 110e3, "PCIe Gen4": 32e9 / 150_528}, 0.5),
        expect=ck.raises(ValueError), weight=2, name='SATA SSD caps the pipeline')
ck.case('target_0', lambda: min_loader_workers(250, 2470, _nvme, 0.0),
        expect=ck.raises(ValueError), name='target = 0')
ck.case('target_above_1', lambda: min_loader_workers(250, 2470, _nvme, 1.5),
        expect=ck.raises(ValueError), name='target = 1.5')
### END HIDDEN TESTS

# %% [markdown]
# Utilization against the number of workers, for the local NVMe and for the NFS share. Each
# worker adds the same slope until a stage that workers do not touch takes over; past that
# point, workers only cost CPU cores and host memory (each buffers `prefetch_factor` batches,
# Eq 14). The curve uses **your** `accelerator_utilization` from Part 3 when it works.

# %%
_nfs = {"storage (NFS, 10 GbE)": 1.25e9 * 0.1 / 110e3, "PCIe Gen4": 32e9 / 150_528}
fig, axes = plt.subplots(1, 2, figsize=(14, 4))
viz.plot_utilization_vs_workers(250, 2470, _resnet_a100, target=0.9, max_workers=24,
                                cores=16, util_fn=accelerator_utilization, ax=axes[0],
                                title="ResNet-50 on an A100, data on a local NVMe")
viz.plot_utilization_vs_workers(250, 2470, _nfs, target=0.9, max_workers=24, cores=16,
                                util_fn=accelerator_utilization, ax=axes[1],
                                title="the same, data on NFS over 10 GbE")
fig.tight_layout()
plt.show()
for _where, _stages in (("local NVMe", _resnet_a100), ("NFS over 10 GbE", _nfs)):
    try:
        print(f"{_where}: your min_loader_workers -> "
              f"{min_loader_workers(250, 2470, _stages, 0.9)} workers for 90%")
    except NotImplementedError:
        print(f"{_where}: implement min_loader_workers to see your answer here")
    except Exception as _err:  # show what your function raised
        print(f"{_where}: your min_loader_workers raised {type(_err).__name__}: {_err}")

# %% [markdown]
# On NFS, nothing changes after the fifth worker: the storage link, not the CPU, sets the
# pace, and the fix is on that stage (a local copy or cache of the dataset, a faster link, or
# a sequential record format such as WebDataset or TFRecord, which lifts the 0.1
# random-access factor of Eq 7). And when the count you need exceeds the cores per GPU (16 on
# a DGX A100, 14 on a DGX H100), "more workers" is not on the menu either: move decoding to
# the GPU (NVIDIA DALI / nvJPEG) or preprocess offline.

# %% [markdown]
# ## Part 5 · Wave quantization: batch 33 costs as much as batch 64
#
# A GPU runs threads in warps of 32 (and blocks in waves over its SMs). A batch of 33 needs
# $\lceil 33/32 \rceil = 2$ warps; the second has one busy lane out of 32. Utilization is
#
# $$U = \frac{b}{\lceil b / w \rceil \cdot w}$$
#
# **Predict:** Table 6 lists 33 → 51.6% and 65 → 67.7%. What is batch 97? And 100?
#
# Write `warp_utilization(batch, warp_size=32)`; a batch < 1 raises `ValueError`.

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_batch97  = None  # your guess, as a fraction (between 0 and 1, not a percent)
my_batch100 = None  # your guess, as a fraction
sc.predict("nb03_p5_warp97", my_batch97)
sc.predict("nb03_p5_warp100", my_batch100)

# %% [answer id=ex_warp]
def warp_utilization(batch, warp_size=32):
    """Fraction of launched lanes doing work: batch / (warps * warp_size)."""
    ### BEGIN SOLUTION
    if batch < 1 or warp_size < 1:
        raise ValueError(f"batch and warp_size must be >= 1, got {batch}, {warp_size}")
    warps = -(-batch // warp_size)
    return batch / (warps * warp_size)
    ### END SOLUTION

# %% [test id=test_warp points=2]
ck.check_close(ck.call(warp_utilization, 33), 0.515625, name="warp_utilization(33)",
               reveal=True)
print("visible test passed: 51.6%")
### BEGIN HIDDEN TESTS
ck.forbid(ref_pipeline.warp_utilization, ref_pipeline.quantized_utilization, ref_pipeline.wave_utilization, ref_pipeline.warps_needed)
# chapter Table 6: 65 -> 67.7 % (65/96)
ck.case('batch_65', lambda: warp_utilization(65),
        expect=ck.approx(0.67708333, rel=1e-6), name='batch 65')
ck.case('batch_64', lambda: warp_utilization(64),
        expect=ck.approx(1.0), name='batch 64')
ck.case('batch_32', lambda: warp_utilization(32),
        expect=ck.approx(1.0), name='batch 32')
# recomputed: 97 -> 97/128 = 0.7578125 ; 1 -> 1/32
ck.case('batch_97', lambda: warp_utilization(97),
        expect=ck.approx(0.7578125), name='batch 97')
ck.case('batch_1', lambda: warp_utilization(1),
        expect=ck.approx(0.03125), name='batch 1')
# H100 wave of 132 SMs (Systems Perspective 1.6): 133 blocks -> 133/264
ck.case('133_blocks_on_132_SMs', lambda: warp_utilization(133, 132),
        expect=ck.approx(0.50378788, rel=1e-6), name='133 blocks on 132 SMs')
ck.case('warp_utilization_0', lambda: warp_utilization(0),
        expect=ck.raises(ValueError), name='warp_utilization(0)')
### END HIDDEN TESTS

# %%
viz.plot_warp_sawtooth(200, 32, util_fn=warp_utilization)
plt.show()

# %% [markdown]
# After the first warp the sawtooth never falls below one half, but it drops to just over half
# right after each multiple of 32. Self-Check 3's team saw 92% at batch 32 and 71% at 33: the second
# warp is almost empty. Choose batch sizes and hidden dimensions that are multiples of 32 or 64.
#
# ## Part 6 · Diagnosis: from profiler signals to a label and a fix
#
# Table 7 sorts bottlenecks by their profiler signature; Table 9 names the first technique to
# try. The chapter's two sources disagree on one point: Table 7 lists "low memory bandwidth
# usage" for compute-bound runs, yet Self-Check 4's answer calls Run A (92% utilization, **HBM
# saturated**) compute-bound. This course uses one rule, checked **in this order** (first match
# wins):
#
# | # | signals | label |
# |---|---|---|
# | 1 | the run does not fit in memory (`oom=True`) | `"capacity-bound"` |
# | 2 | GPU activity drops to ~0 in periodic gaps (`idle_gaps=True`) **and** CPU ≥ 0.8 | `"data-bound"` |
# | 3 | GPU utilization ≥ 0.9 | `"compute-bound"` |
# | 4 | HBM bandwidth utilization ≥ 0.6 | `"memory-bound"` |
# | 5 | anything else (launch overhead, synchronization, communication) | `"overhead-bound"` |
#
# Utilization decides before HBM (row 3 before row 4), which reproduces the chapter's answer for
# Run A. Only a kernel-level profiler (Nsight Compute: achieved FLOP/s vs achieved bytes/s)
# settles such a case for real; the profiler summary cannot.
#
# **Predict:** Self-Check 4's Run B shows GPU utilization 18% with periodic drops to zero, CPU
# pinned and HBM low. Which label?
#
# Write `diagnose(gpu_util, hbm_util, cpu_util, idle_gaps=False, oom=False)` returning one of
# the five labels. Utilizations are fractions in [0, 1]; anything outside raises `ValueError`.

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_prediction = None  # one of the five labels, e.g. "memory-bound"
sc.predict("nb03_p6_label", my_prediction)

# %% [answer id=ex_diagnose partial]
def diagnose(gpu_util, hbm_util, cpu_util, idle_gaps=False, oom=False):
    """One of 'capacity-bound', 'data-bound', 'compute-bound', 'memory-bound',
    'overhead-bound', by the course's rule (first match wins)."""
    ### BEGIN SOLUTION
    for name, value in (("gpu_util", gpu_util), ("hbm_util", hbm_util),
                        ("cpu_util", cpu_util)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    if oom:
        return "capacity-bound"
    if idle_gaps and cpu_util >= 0.8:
        return "data-bound"
    if gpu_util >= 0.9:
        return "compute-bound"
    if hbm_util >= 0.6:
        return "memory-bound"
    return "overhead-bound"
    ### END SOLUTION

# %% [test id=test_diagnose points=4]
ck.check_exact(ck.call(diagnose, 0.18, 0.1, 1.0, idle_gaps=True), "data-bound",
               name="Self-Check 4 Run B", reveal=True)
print("visible test passed: Run B is data-bound")
### BEGIN HIDDEN TESTS
ck.forbid(ref_roofline.diagnose_bottleneck, ref_roofline.recommend_technique)
# chapter Self-Check 4 Q3 Run A (answer key): 92 %, HBM saturated, CPU idle -> compute-bound
ck.case('Run_A', lambda: diagnose(0.92, 0.95, 0.05),
        expect=ck.exactly("compute-bound"), name='Run A')
# Self-Check 4 Q2: white gaps, CPU sustained, HBM low -> data-bound
ck.case('Self-Check_4_Q2_trace', lambda: diagnose(0.35, 0.1, 0.9, True),
        expect=ck.exactly("data-bound"), name='Self-Check 4 Q2 trace')
# Table 7 memory-bound row: 50-80 % utilization, high bandwidth
ck.case('Table_7_memory_row', lambda: diagnose(0.65, 0.85, 0.2),
        expect=ck.exactly("memory-bound"), name='Table 7 memory row')
# Table 7 compute-bound row: >90 %, low bandwidth
ck.case('Table_7_compute_row', lambda: diagnose(0.95, 0.2, 0.1),
        expect=ck.exactly("compute-bound"), name='Table 7 compute row')
# Example 1.3 step 1: 95.7 GB on a 32 GB V100 -> capacity-bound
ck.case('Example_1.3_OOM', lambda: diagnose(0.0, 0.0, 0.0, oom=True),
        expect=ck.exactly("capacity-bound"), name='Example 1.3 OOM')
# gaps but idle CPU: not the input pipeline (rule 2 needs CPU >= 0.8)
ck.case('gaps_idle_CPU', lambda: diagnose(0.45, 0.3, 0.2, True),
        expect=ck.exactly("overhead-bound"), name='gaps, idle CPU')
# Example 1.3 after the data fix: 85 %, HBM moderate (0.5), CPU 0.3 -> overhead-bound
ck.case('85_moderate_HBM', lambda: diagnose(0.85, 0.5, 0.3),
        expect=ck.exactly("overhead-bound"), name='85 %, moderate HBM')
# boundaries: exactly 0.9 -> compute; exactly 0.6 HBM -> memory; CPU exactly 0.8 -> data
ck.case('gpu_util_0.9', lambda: diagnose(0.9, 0.7, 0.1),
        expect=ck.exactly("compute-bound"), name='gpu_util = 0.9')
ck.case('hbm_util_0.6', lambda: diagnose(0.7, 0.6, 0.1),
        expect=ck.exactly("memory-bound"), name='hbm_util = 0.6')
ck.case('cpu_util_0.8', lambda: diagnose(0.5, 0.2, 0.8, True),
        expect=ck.exactly("data-bound"), name='cpu_util = 0.8')
ck.case('gpu_util_92_percent_not_fraction', lambda: diagnose(92, 0.5, 0.1),
        expect=ck.raises(ValueError), name='gpu_util=92 (percent, not fraction)')
### END HIDDEN TESTS

# %% [markdown]
# ### The fix for each label (Table 9)
# Write `prescribe(label)`, returning for each of the five labels the option in `OPTIONS` that
# the chapter prescribes first (Table 9; for `"overhead-bound"`, which Table 9 does not list,
# the course's choice is the kernel-launch remedy). Not every option is used. Any other label
# raises `ValueError`.

# %%
OPTIONS = ("prefetching & pipeline overlap", "mixed-precision training",
           "FlashAttention / operator fusion", "gradient accumulation & activation checkpointing",
           "larger batch / kernel fusion / CUDA graphs", "buy a GPU with more TFLOP/s",
           "more data-parallel GPUs")

# %% [answer id=ex_prescription]
def prescribe(label):
    """The first technique (one of OPTIONS) for a diagnosis label."""
    ### BEGIN SOLUTION
    table = {
        "data-bound": "prefetching & pipeline overlap",
        "memory-bound": "FlashAttention / operator fusion",
        "compute-bound": "mixed-precision training",
        "capacity-bound": "gradient accumulation & activation checkpointing",
        "overhead-bound": "larger batch / kernel fusion / CUDA graphs",
    }
    if label not in table:
        raise ValueError(f"label must be one of {sorted(table)}, got {label!r}")
    return table[label]
    ### END SOLUTION

# %% [test id=test_prescription points=2]
for _label in ("data-bound", "memory-bound", "compute-bound", "capacity-bound",
               "overhead-bound"):
    _fix = ck.call(prescribe, _label)
    assert _fix in OPTIONS, f"prescribe({_label!r}) = {_fix!r} is not one of OPTIONS"
print("visible checks passed (every answer is one of OPTIONS)")
### BEGIN HIDDEN TESTS
ck.forbid(ref_roofline.recommend_technique, ref_roofline.diagnose_bottleneck)
# chapter Table 9 rows: data movement, compute throughput, memory bandwidth (attn.), capacity
ck.case('data-bound', lambda: prescribe("data-bound"),
        expect=ck.exactly("prefetching & pipeline overlap"), name='data-bound')
ck.case('compute-bound', lambda: prescribe("compute-bound"),
        expect=ck.exactly("mixed-precision training"), name='compute-bound')
ck.case('memory-bound', lambda: prescribe("memory-bound"),
        expect=ck.exactly("FlashAttention / operator fusion"), name='memory-bound')
ck.case('capacity-bound', lambda: prescribe("capacity-bound"),
        expect=ck.exactly("gradient accumulation & activation checkpointing"), name='capacity-bound')
# course convention (not in Table 9)
ck.case('overhead-bound', lambda: prescribe("overhead-bound"),
        expect=ck.exactly("larger batch / kernel fusion / CUDA graphs"), name='overhead-bound')
ck.case('prescribe_io-bound', lambda: prescribe("io-bound"),
        expect=ck.raises(ValueError), name="prescribe('io-bound')")
### END HIDDEN TESTS

# %% [markdown]
# ### Example 1.3 as a diagnosis loop
# The chapter's walkthrough is profile → diagnose → fix → re-profile. With your `diagnose` (or
# the library if it is not done yet):

# %%
_walk = [
    ("1. FP32 baseline, batch 4: 95.7 GB on a 32 GB V100", dict(gpu_util=0.0, hbm_util=0.0,
                                                                cpu_util=0.0, oom=True)),
    ("4. fits; 45% util, gaps, loader busy", dict(gpu_util=0.45, hbm_util=0.3, cpu_util=0.95,
                                                  idle_gaps=True)),
    ("5. 8 workers + prefetch: 85% util, HBM 40%", dict(gpu_util=0.85, hbm_util=0.4,
                                                       cpu_util=0.4)),
]
for _step_name, _sig in _walk:
    try:
        _label = diagnose(**_sig)
        _who = "you"
    except Exception:  # stub: library fallback
        _label = ref_roofline.diagnose_bottleneck(**_sig)
        _who = "coursekit"
    try:
        _fix = prescribe(_label)
    except Exception:  # stub: library fallback
        _fix = ref_roofline.recommend_technique(_label)
    print(f"{_step_name:<52} -> {_label:<15} ({_who}); fix: {_fix}")

# %% [markdown]
# Table 18 reports 85% after step 5 and calls the final run compute-bound. By this course's rule,
# 85% with moderate HBM traffic is `"overhead-bound"`, which matches the chapter's own account of
# what remains ("synchronization, loss scaling, memory transfers, and kernel launch latency") and
# the 8.6% MFU you computed in assignment 01: the arithmetic units are far from saturated. (The
# chapter gives no HBM figure for this step; 40% is our assumption.)

# %% [markdown]
# ### Diagnose from counters: derive the rule instead of looking it up
#
# The rule table above reads a profiler *summary*, and its utilization signal is weak:
# nvidia-smi's "GPU utilization" is the fraction of time *some* kernel was running, however
# slowly. A
# kernel-level profile (Nsight Systems for the timeline, Nsight Compute or DCGM for FLOP and
# DRAM counters) lets you reason from the roofline instead. Per training step it gives:
#
# | counter | what it measures | unit |
# |---|---|---|
# | `step_time` | wall time of one step | s |
# | `data_wait` | time the loop blocked on the DataLoader: the accelerator had no batch | s |
# | `flops` | FLOPs the kernels executed | FLOP |
# | `hbm_bytes` | bytes the kernels read from and wrote to HBM | bytes |
# | `gpu_util` | nvidia-smi's utilization: fraction of the step some kernel was running | fraction |
# | `memory_used` | peak memory allocated | bytes |
#
# Four runs, measured this way on an A100-80GB (312 TFLOP/s bf16 dense, 2,039 GB/s) and an
# H100 SXM (989.4 TFLOP/s bf16 dense, 3,350 GB/s; NVIDIA datasheets, as in
# `coursekit.hardware`):

# %%
H100 = get_accelerator("H100-SXM")
RUNS = {  # counters per training step
    "1. GPT-2 124M fine-tune, 1 loader worker (A100)":
        (dict(step_time=0.180, data_wait=0.108, flops=1.2e13, hbm_bytes=4.0e10,
              gpu_util=0.40, memory_used=21e9), A100),
    "2. long-context fine-tune, eager attention (A100)":
        (dict(step_time=0.120, data_wait=0.001, flops=6.0e12, hbm_bytes=2.0e11,
              gpu_util=0.98, memory_used=71e9), A100),
    "3. 7B pretraining, large GEMMs (H100)":
        (dict(step_time=1.0, data_wait=0.002, flops=6.2e14, hbm_bytes=1.4e12,
              gpu_util=0.99, memory_used=79e9), H100),
    "4. small model, batch 8 (H100)":
        (dict(step_time=0.025, data_wait=0.0005, flops=2.5e12, hbm_bytes=1.2e10,
              gpu_util=0.72, memory_used=6e9), H100),
}
print(f"{'run':<52}{'step':>9}{'wait':>9}{'FLOPs':>10}{'HBM bytes':>11}{'util':>6}{'mem':>7}")
for _name, (_c, _gpu) in RUNS.items():
    print(f"{_name:<52}{_c['step_time'] * 1e3:6.1f} ms{_c['data_wait'] * 1e3:6.1f} ms"
          f"{_c['flops']:10.2e}{_c['hbm_bytes']:11.2e}{_c['gpu_util']:6.0%}"
          f"{_c['memory_used'] / GB:4.0f} GB")

# %% [markdown]
# **Predict before you code:** run 2's GPU is busy 98% of the time, so Part 6's rule calls it
# compute-bound. Work out its arithmetic intensity (FLOPs per HBM byte) and compare it with
# the A100's ridge: which roof can it be pressed against? And run 3 uses 79 of 80 GB: does
# that make it slow?
#
# **Derive the rule.** Every second of a step goes one of three ways:
# 1. the accelerator waits for input: `data_wait` (the idle share of Eq 11);
# 2. the kernels do the step's work. By Part 2's roofline, `flops` FLOPs that move `hbm_bytes`
#    bytes cannot take less than some minimum time on this accelerator: derive that minimum
#    from $P(I) = \min(R_\text{peak}, I \cdot BW)$, and note which roof sets it;
# 3. the rest: the time the kernels took beyond that minimum (launch gaps, synchronization,
#    small or badly shaped kernels: overhead).
#
# The **binding constraint** is the largest of the three: the one to fix first.
#
# Write `binding_constraint(run, peak_flops, hbm_bandwidth)` returning a tuple
# `(label, share)`. The label is `"data-bound"` for part 1; `"compute-bound"` or
# `"memory-bound"` for part 2, whichever roof sets the minimum (at exactly the ridge,
# `"compute-bound"`, as in Part 2); `"overhead-bound"` for part 3. `share` is the fraction of
# `step_time` that part takes (a float between 0 and 1, checked to a relative 10⁻⁶): the
# number that proves the label. `run` is a dict of counters like those above and may hold
# other counters too: decide which ones matter. Raise `ValueError` if `step_time` is not
# positive, if a counter is negative, or if the counters are impossible (the wait plus the
# roofline minimum exceed the step: the profile claims more than the datasheet allows, as a
# double-counted FLOP total would). The hidden tests use runs you have not seen, on the A100,
# the H100 and a made-up accelerator.

# %% [answer id=ex_binding]
def binding_constraint(run, peak_flops, hbm_bandwidth):
    """(label, share of the step) of the largest part: data wait, the roofline minimum of
    the step's work, or the rest; ValueError for impossible or negative counters."""
    ### BEGIN SOLUTION
    step, wait = run["step_time"], run["data_wait"]
    flops, moved = run["flops"], run["hbm_bytes"]
    if step <= 0 or min(wait, flops, moved) < 0:
        raise ValueError("step_time must be > 0 and every counter >= 0")
    t_compute, t_memory = flops / peak_flops, moved / hbm_bandwidth
    roof = max(t_compute, t_memory)
    if wait + roof > step * (1 + 1e-9):
        raise ValueError(f"impossible counters: {wait} s wait + {roof} s roofline minimum "
                         f"> {step} s step")
    roof_label = "compute-bound" if t_compute >= t_memory else "memory-bound"
    parts = {"data-bound": wait, roof_label: roof, "overhead-bound": step - wait - roof}
    label = max(parts, key=parts.get)
    return label, parts[label] / step
    ### END SOLUTION

# %% [test id=test_binding points=4]
_got = ck.call(binding_constraint, RUNS["1. GPT-2 124M fine-tune, 1 loader worker (A100)"][0],
               312e12, 2.039e12)
assert isinstance(_got, (tuple, list)) and len(_got) == 2, \
    f"binding_constraint should return a tuple (label, share), got {_got!r}"
ck.check_exact(_got[0], "data-bound", name="run 1: label", reveal=True)
ck.check_close(_got[1], 0.6, name="run 1: share of the step", reveal=True)
print("visible test passed: run 1 waits for data 60% of every step")
### BEGIN HIDDEN TESTS
ck.forbid(ref_roofline.binding_constraint, ref_roofline.step_breakdown, ref_roofline.diagnose_bottleneck)
_A = (312e12, 2.039e12)       # A100-80GB datasheet: bf16 dense, HBM2e
_H = (989.4e12, 3.35e12)      # H100 SXM datasheet: bf16 dense, HBM3
# 97 % "busy" but I = 1.9e13 / 4.3e11 = 44 FLOP/byte < ridge 153: memory roof
# 4.3e11 / 2.039e12 = 0.210888 s of 0.25 s = 0.843551 (overhead 0.1484, wait 0.008)
_busy = dict(step_time=0.25, data_wait=0.002, flops=1.9e13, hbm_bytes=4.3e11, gpu_util=0.97,
             memory_used=61e9)
ck.case('busy_memory_label', lambda: binding_constraint(_busy, *_A)[0],
        expect=ck.exactly("memory-bound"), name='A100 97% busy: label')
ck.case('busy_memory_share', lambda: binding_constraint(_busy, *_A)[1],
        expect=ck.approx(0.8435507601765572), name='A100 97% busy: share')
# memory nearly full but I = 450 > ridge 295: 2.7e14 / 989.4e12 = 0.272893 s of 0.5 s
# = 0.545785 (overhead 0.4442, wait 0.01)
_full = dict(step_time=0.5, data_wait=0.005, flops=2.7e14, hbm_bytes=6.0e11, gpu_util=0.99,
             memory_used=79.1e9)
ck.case('full_compute_label', lambda: binding_constraint(_full, *_H)[0],
        expect=ck.exactly("compute-bound"), name='H100 79 GB used: label')
ck.case('full_compute_share', lambda: binding_constraint(_full, *_H)[1],
        expect=ck.approx(0.5457853244390539), name='H100 79 GB used: share')
# JPEG decoding starves an H100: 0.118 / 0.21 = 0.561905 (memory roof 0.1564, rest 0.2817)
_jpeg = dict(step_time=0.21, data_wait=0.118, flops=6.3e12, hbm_bytes=1.1e11, gpu_util=0.41,
             memory_used=30e9)
ck.case('starved_label', lambda: binding_constraint(_jpeg, *_H)[0],
        expect=ck.exactly("data-bound"), name='H100 starved by JPEG decoding: label')
ck.case('starved_share', lambda: binding_constraint(_jpeg, *_H)[1],
        expect=ck.approx(0.5619047619047619), name='H100 starved by JPEG decoding: share')
# small kernels, 95 % busy: memory roof 3e10 / 3.35e12 = 0.0089552 s; rest 0.04 - 0.001 -
# 0.0089552 = 0.0300448 s -> 0.751119
_tiny = dict(step_time=0.04, data_wait=0.001, flops=4.0e12, hbm_bytes=3.0e10, gpu_util=0.95,
             memory_used=9e9)
ck.case('tiny_kernels_label', lambda: binding_constraint(_tiny, *_H)[0],
        expect=ck.exactly("overhead-bound"), name='H100 small kernels: label')
ck.case('tiny_kernels_share', lambda: binding_constraint(_tiny, *_H)[1],
        expect=ck.approx(0.7511194029850745), name='H100 small kernels: share')
# the datasheet ridge, not the chapter's 156: I = 4e13 / 2.6e11 = 153.8 > 153.0 -> compute
# 4e13 / 312e12 = 0.128205 s of 0.2 s = 0.641026
_ridge = dict(step_time=0.2, data_wait=0.004, flops=4.0e13, hbm_bytes=2.6e11)
ck.case('A100_ridge_label', lambda: binding_constraint(_ridge, *_A)[0],
        expect=ck.exactly("compute-bound"), name='A100 just above the ridge: label')
ck.case('A100_ridge_share', lambda: binding_constraint(_ridge, *_A)[1],
        expect=ck.approx(0.641025641025641), name='A100 just above the ridge: share')
# exactly at the ridge of a made-up accelerator (300 TFLOP/s, 2 TB/s, ridge 150):
# 1.5e14 / 3e14 = 1e12 / 2e12 = 0.5 s of 0.8 s -> compute-bound, 0.625
ck.case('at_ridge_label', lambda: binding_constraint(dict(step_time=0.8, data_wait=0.05, flops=1.5e14, hbm_bytes=1e12), 300e12, 2e12)[0],
        expect=ck.exactly("compute-bound"), name='exactly at the ridge: label')
# the largest part need not be a majority: wait 0.123 / 0.3 = 0.41 > compute 0.3419
ck.case('plurality_label', lambda: binding_constraint(dict(step_time=0.3, data_wait=0.123, flops=3.2e13, hbm_bytes=1.5e11), *_A)[0],
        expect=ck.exactly("data-bound"), name='largest part below one half: label')
# 1e14 FLOPs in 0.25 s = 400 TFLOP/s on a 312 TFLOP/s A100: impossible
ck.case('impossible_counters', lambda: binding_constraint(dict(step_time=0.25, data_wait=0.01, flops=1.0e14, hbm_bytes=1e11), *_A),
        expect=ck.raises(ValueError), weight=2, name='more FLOP/s than the datasheet')
ck.case('negative_counter', lambda: binding_constraint(dict(step_time=0.25, data_wait=0.01, flops=1e13, hbm_bytes=-1.0), *_A),
        expect=ck.raises(ValueError), name='negative hbm_bytes')
### END HIDDEN TESTS

# %% [markdown]
# Each step split three ways, computed by `coursekit` for the four runs of the table:

# %%
viz.plot_step_breakdown({_name: (_c, _gpu.peak("bf16"), _gpu.hbm_bandwidth)
                         for _name, (_c, _gpu) in RUNS.items()})
plt.show()
for _name, (_c, _gpu) in RUNS.items():
    try:
        _label, _share = binding_constraint(_c, _gpu.peak("bf16"), _gpu.hbm_bandwidth)
        _mine = f"{_label}, {_share:.0%} of the step"
    except NotImplementedError:
        _mine = "(implement binding_constraint)"
    except Exception as _err:  # a bug: show it, keep the table
        _mine = f"raised {type(_err).__name__}"
    # Part 6's rule on the same run; the profiles hold no CPU figure, so we assume a busy
    # loader (idle gaps, CPU 0.9) when the wait exceeds a tenth of the step
    _starved = _c["data_wait"] > 0.1 * _c["step_time"]
    _rule = ref_roofline.diagnose_bottleneck(
        gpu_util=_c["gpu_util"], cpu_util=0.9 if _starved else 0.3, idle_gaps=_starved,
        hbm_util=min(1.0, _c["hbm_bytes"] / _gpu.hbm_bandwidth / _c["step_time"]))
    print(f"{_name:<52} yours: {_mine:<34} Part 6's rule: {_rule}")

# %% [markdown]
# The counters settle what the summary could not. Run 2 is "98% busy" and memory-bound: its
# kernels stream bytes at close to the HBM roof while doing few FLOPs each, so the fix is
# fewer bytes (FlashAttention, fusion), not more TFLOP/s. Run 4 is memory- and compute-light
# and still slow: most of its step is neither roof, the signature of launch overhead and
# small, badly shaped kernels (Part 5's waves), fixed with larger batches, fusion or CUDA
# graphs. Memory used tells you whether a run fits (assignment 02), not how fast it goes.
# Part 6's table stays useful when a summary is all you have; the three-way split is what a
# profile lets you prove.

# %% [markdown]
# ### Explore the roofline
# Pick an accelerator, a dtype and a GEMM shape: where does it sit? The roof comes from your
# `attainable` when it works. Try m = 1 (one token at a time, as in decoding).

# %%
viz.roofline_explorer(_student_roof)

# %% [markdown]
# ## Summary
# * Arithmetic intensity against the ridge point decides memory- vs compute-bound; precision
#   moves the ridge (an A100's fp32 ridge sits far left of its bf16 one).
# * Element-wise ops, norms, softmax and materialized attention are memory-bound; large GEMMs are
#   compute-bound; FlashAttention removes the $S^2$ bytes, not the FLOPs.
# * A pipeline runs at its slowest stage; an accelerator fed at 20% of its rate is 80% idle, and
#   a faster accelerator only lowers that percentage.
# * Prefetching turns sum into max, at the cost of host memory for the buffered batches.
# * Workers raise utilization only up to the cap the other stages set: find the cap first,
#   then count workers; past it, fix the stage that sets it.
# * Batch sizes just past a multiple of 32 waste up to half the lanes.
# * Diagnose before fixing: one rule, one label, one first technique; then re-profile.
# * With counters, split the step into data wait, roofline minimum and the rest: the largest
#   part binds, and its share of the step is the proof. "GPU utilization" and memory used
#   are not that proof.
#
# **Reflection (ungraded):** a colleague reports "GPU utilization 97%, MFU 12%, HBM at 90%".
# What does our rule say, what would you expect Nsight Compute to show for the top kernels, and
# which single experiment would you run first to tell compute-bound from memory-bound?
