# %% [markdown]
# # Assignment 07 — Self-checks: the chapter's quizzes and the lesson's checks
#
# **Follows:** chapter 002 Self-Checks 1–8 (§1.1–§1.8); lesson plan 003 Checks 1–2 and its five misconceptions; lab plan 004 prediction locks.
#
# **Objectives.** Review the whole chapter as a quiz sheet; turn the free-response questions into numbers you can compute; predict, then verify with `coursekit`; notice where a source's own answer key is wrong and why.
#
# **Time:** about 90 minutes. **Points:** 49.
#
# **How to answer.** Each part ends with one answer cell: replace each `None` with your answer (a letter string such as `"B"`, `True`/`False`, a label string from the list given, a list such as `[2, 1, 3]`, or a number in the unit given, in base SI units: bytes, seconds, FLOPs), then delete the `raise NotImplementedError()` line. The cell under it checks the *form* of each answer at once (a whole number where one is asked, a fraction and not a percent, bytes and not GB), never whether it is right: graded answers are marked only by the autograder, after you submit.
#
# **Grading.** Your grade comes only from the autograder's hidden tests. The ungraded warm-ups and reflections give instant feedback (a hint for a wrong answer, the explanation once it is right, or after two tries). Free-response questions appear twice: as a graded numeric or label variant, and as an ungraded reflection whose model answer appears after you write an attempt.

# %% [setup]
# Setup: imports. In Colab this installs coursekit first if it is missing (no restart needed).
{{COURSEKIT_SETUP}}
import numpy as np
from coursekit.grading import checks as ck
from coursekit.grading import selfcheck as sc

# %% [markdown]
# ## Self-Check 1 — the iron law of training performance (002 §1.1)
#
# **sc1_q1.** A 1024-GPU run already overlaps PCIe transfers and AllReduce with compute and measures 38% MFU. Which iron-law lever is the most actionable next target?
#
# - **A** utilization η_hw (memory stalls, launch overhead, sync slack a profiler can localize)
# - **B** peak throughput R_peak (38% MFU means the chips are too slow: buy newer accelerators)
# - **C** total operations O (once transfers are overlapped, only the FLOP count is left to cut)
# - **D** dataset size (shrinking it raises η_hw, since each epoch then finishes sooner)
#
# **sc1_q2.** Switching from FP32 to mixed precision (Tensor Cores), nothing else changed, most directly targets which term?
#
# - **A** η_hw, because its only effect is removing input-pipeline stalls on the host CPU
# - **B** R_peak, because reduced precision raises the achievable FLOP/s ceiling
# - **C** O, because 16-bit arithmetic halves the number of FLOPs each layer performs
# - **D** dataset size, because 16-bit gradients converge on fewer training examples
#
# **sc1_q3.** Free response turned numeric (small-batch debugging, Q3). A debug run at batch 4 with no prefetching spends 30 ms per step in compute and 45 ms in un-overlapped data loading, transfer and kernel launches. The team buys a GPU with 2× the peak (compute drops to 15 ms, the rest is unchanged). What step-time speedup do they actually get? (The simplified iron law predicts 2.)
# *Answer unit: × (ratio); 3 significant digits are enough.*
#
# **sc1_q4.** True or False: buying an accelerator with 2× the advertised TFLOP/s roughly doubles realized utilization η_hw.
#
# **sc1_q5.** Why did η_hw become a more critical engineering concern by the GPT-3 era?
#
# - **A** datasets became smaller after aggressive filtering, so every token had to be processed at peak speed
# - **B** training stopped being dominated by matrix multiplication, so Tensor Cores sat idle unless η_hw was tuned
# - **C** peak throughput became irrelevant once Tensor Cores appeared, leaving η_hw as the only term in the iron law
# - **D** runs used thousands of accelerators, so each point of inefficiency cost millions of dollars and weeks

# %% [answer id=ans_sc1 partial]
sc1_q1 = None  # a letter: "A", "B", "C" or "D"
sc1_q2 = None  # a letter: "A", "B", "C" or "D"
sc1_q3 = None  # a number in × (ratio)
sc1_q4 = None  # True or False
sc1_q5 = None  # a letter: "A", "B", "C" or "D"
### BEGIN SOLUTION
sc1_q1 = 'A'
sc1_q2 = 'B'
sc1_q3 = 1.25
sc1_q4 = False
sc1_q5 = 'D'
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc1_q1': sc1_q1, 'sc1_q2': sc1_q2, 'sc1_q3': sc1_q3, 'sc1_q4': sc1_q4, 'sc1_q5': sc1_q5});

# %% [markdown]
# **Recap (read after you answer).** Training time $T = O / (R_{peak}\cdot\eta_{hw})$ when data movement and communication are overlapped behind compute (the *simplified* iron law). $O$ is the work (≈ 6·N·D FLOPs), $R_{peak}$ the hardware ceiling, $\eta_{hw}$ the fraction of that ceiling the software actually reaches (MFU). Each optimization moves one lever.

# %% [test id=test_sc1_q1 points=1]
# Visible test: checks the form of sc1_q1, not whether it is right.
sc.require_format('sc1_q1', sc1_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 1 Q1 key: A; consistent with §1.1
ck.case('sc1_q1', lambda: sc1_q1, expect=ck.exactly('A'), name='sc1_q1')
### END HIDDEN TESTS

# %% [test id=test_sc1_q2 points=1]
# Visible test: checks the form of sc1_q2, not whether it is right.
sc.require_format('sc1_q2', sc1_q2)
### BEGIN HIDDEN TESTS
# 002 Self-Check 1 Q2 key: B; A100 datasheet peaks
ck.case('sc1_q2', lambda: sc1_q2, expect=ck.exactly('B'), name='sc1_q2')
### END HIDDEN TESTS

# %% [test id=test_sc1_q3 points=1]
# Visible test: checks the form of sc1_q3, not whether it is right.
sc.require_format('sc1_q3', sc1_q3)
### BEGIN HIDDEN TESTS
# recomputed: (30+45)/(15+45) = 1.25 (scenario numbers stated in the item)
ck.case('sc1_q3', lambda: sc1_q3, expect=ck.approx(1.25, rel=0.005), name='sc1_q3')
### END HIDDEN TESTS

# %% [test id=test_sc1_q4 points=1]
# Visible test: checks the form of sc1_q4, not whether it is right.
sc.require_format('sc1_q4', sc1_q4)
### BEGIN HIDDEN TESTS
# 002 Self-Check 1 Q4 key: False
ck.case('sc1_q4', lambda: sc1_q4, expect=ck.exactly(False), name='sc1_q4')
### END HIDDEN TESTS

# %% [test id=test_sc1_q5 points=1]
# Visible test: checks the form of sc1_q5, not whether it is right.
sc.require_format('sc1_q5', sc1_q5)
### BEGIN HIDDEN TESTS
# 002 Self-Check 1 Q5 key: D
ck.case('sc1_q5', lambda: sc1_q5, expect=ck.exactly('D'), name='sc1_q5')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q3 in words: why can the simplified iron law fail for a small-batch debugging session while it works for large-scale pretraining on the same code? Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc1_q3_reflect')

# %% [markdown]
# ## Self-Check 2 — mathematical foundations: matmuls, memory, roofline (002 §1.2)
#
# **sc2_q1.** Why do batched matrix-matrix operations dominate accelerator design more than matrix-vector operations?
#
# - **A** they eliminate activation storage, because a batched product's output can be recomputed from the weights alone
# - **B** matrix-vector products need more total memory than matrix-matrix products of the same size, so they overflow caches
# - **C** they expose much more work per byte loaded (high arithmetic intensity), so thousands of compute units can approach peak
# - **D** matrix-vector products cannot run on GPU Tensor Cores at all, so each one must be shipped back to the host CPU to execute
#
# **sc2_q2.** Free response turned numeric (Q2). A 7-billion-parameter model on 80 GB accelerators already uses 64 GB for weights, gradients and activations. How many bytes of optimizer state does Adam add (two FP32 moments per parameter)?
# *Answer unit: bytes; 3 significant digits are enough.*
#
# **sc2_q3.** Why do activations often dominate the training memory budget?
#
# - **A** every layer's activations stay resident from forward to backward, so they scale with depth and batch while parameters are fixed
# - **B** activations are always stored in FP64 for backward-pass accuracy, so each value costs four times the bytes of a BF16 weight
# - **C** activations include a resident copy of the raw training dataset, which the framework keeps on the accelerator all epoch
# - **D** frameworks count Adam's optimizer moments as activations, so activation memory is really the two FP32 moments per parameter
#
# **sc2_q4.** Order the parts of one training step: (1) backward pass computes gradients, (2) optimizer updates parameters, (3) forward pass computes predictions and loss. Answer as a list of the item numbers, first step first.
#
# **sc2_q5.** On an A100 (ridge point near 156 FLOP/byte) a fused LayerNorm+softmax kernel runs at about 5 FLOP/byte. Which optimization family moves it toward the roof?
#
# - **A** a newer accelerator with 2× the peak FP16 TFLOP/s and the same HBM
# - **B** reduce data movement: fusion, tiling, lower-precision storage
# - **C** double the batch size with the kernels unchanged, to amortize each load
# - **D** switch the optimizer from Adam to SGD to free HBM bandwidth

# %% [answer id=ans_sc2]
sc2_q1 = None  # a letter: "A", "B", "C" or "D"
sc2_q2 = None  # a number in bytes
sc2_q3 = None  # a letter: "A", "B", "C" or "D"
sc2_q4 = None  # a list of item numbers, e.g. [2, 1, 3]
sc2_q5 = None  # a letter: "A", "B", "C" or "D"
### BEGIN SOLUTION
sc2_q1 = 'C'
sc2_q2 = 56000000000.0
sc2_q3 = 'A'
sc2_q4 = [3, 1, 2]
sc2_q5 = 'B'
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc2_q1': sc2_q1, 'sc2_q2': sc2_q2, 'sc2_q3': sc2_q3, 'sc2_q4': sc2_q4, 'sc2_q5': sc2_q5});

# %% [markdown]
# **Recap (read after you answer).** Matrix-matrix products do O(n) FLOPs per byte and can saturate compute; matrix-vector products do O(1) and are memory bound. Training memory = weights + gradients + optimizer state + activations; Adam keeps two FP32 moments (8 bytes per parameter), SGD without momentum none. The roofline's ridge point is peak FLOP/s ÷ memory bandwidth; a kernel left of it is memory bound.

# %% [test id=test_sc2_q1 points=1]
# Visible test: checks the form of sc2_q1, not whether it is right.
sc.require_format('sc2_q1', sc2_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 2 Q1 key: C
ck.case('sc2_q1', lambda: sc2_q1, expect=ck.exactly('C'), name='sc2_q1')
### END HIDDEN TESTS

# %% [test id=test_sc2_q2 points=1]
# Visible test: checks the form of sc2_q2, not whether it is right.
sc.require_format('sc2_q2', sc2_q2)
### BEGIN HIDDEN TESTS
# recomputed: 2 x 4 B x 7e9 = 56e9 B (matches the 002 key's 56 GB)
ck.case('sc2_q2', lambda: sc2_q2, expect=ck.approx(56000000000.0, rel=0.005), name='sc2_q2')
### END HIDDEN TESTS

# %% [test id=test_sc2_q3 points=1]
# Visible test: checks the form of sc2_q3, not whether it is right.
sc.require_format('sc2_q3', sc2_q3)
### BEGIN HIDDEN TESTS
# 002 Self-Check 2 Q3 key: A
ck.case('sc2_q3', lambda: sc2_q3, expect=ck.exactly('A'), name='sc2_q3')
### END HIDDEN TESTS

# %% [test id=test_sc2_q4 points=1]
# Visible test: checks the form of sc2_q4, not whether it is right.
sc.require_format('sc2_q4', sc2_q4)
### BEGIN HIDDEN TESTS
# 002 Self-Check 2 Q4 key: (3), (1), (2)
ck.case('sc2_q4', lambda: sc2_q4, expect=ck.exactly([3, 1, 2]), name='sc2_q4')
### END HIDDEN TESTS

# %% [test id=test_sc2_q5 points=1]
# Visible test: checks the form of sc2_q5, not whether it is right.
sc.require_format('sc2_q5', sc2_q5)
### BEGIN HIDDEN TESTS
# 002 Self-Check 2 Q5 key: B; ridge recomputed 312e12/2.039e12 = 153
ck.case('sc2_q5', lambda: sc2_q5, expect=ck.exactly('B'), name='sc2_q5')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q2 in words: explain the systems trade-off between SGD and Adam for this run. Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc2_q2_reflect')

# %% [markdown]
# ## Self-Check 3 — the training pipeline architecture (002 §1.3)
#
# **sc3_q1.** Which subsystems describe the chapter's training-system architecture?
#
# - **A** data pipeline, training loop, evaluation pipeline (distinct resource demands, so bottlenecks are diagnosed at their boundaries)
# - **B** storage controller, graph compiler pass, inference server (each pinned to its own hardware tier, so each is profiled in isolation)
# - **C** optimizer-state manager, cluster scheduler daemon, checkpoint restorer (the three services a framework runs beside the model)
# - **D** tokenizer, hyperparameter tuner, deployment gateway (the stages every model passes through on its way from raw text to production)
#
# **sc3_q2.** Preprocessing delivers 4 GB/s, host-to-device transfer 32 GB/s, the GPU consumes 12 GB/s. What sets end-to-end throughput?
#
# - **A** the average of the three rates, since all stages run concurrently: 16 GB/s
# - **B** the transfer rate alone: 32 GB/s, since every byte must cross the PCIe link
# - **C** the GPU compute rate alone: 12 GB/s, since the accelerator does the real work
# - **D** the minimum of the three (preprocessing): parallelize preprocessing first
#
# **sc3_q3.** Free response turned numeric (CPU tokenization, Q3), with the chapter's Example 1.1 numbers: 32 × 1024 tokens per step, one CPU core tokenizing 500,000 tokens/s, a 262,144-byte batch over a 15.75 GB/s PCIe link, and an 84.4 ms accelerator step. Without any overlap (tokenize, copy, compute, repeat), what fraction of wall-clock time is the GPU busy?
# *Answer unit: fraction (0-1); 3 significant digits are enough.*
#
# **sc3_q4.** Batch 32 gives 92% GPU utilization, batch 33 gives 71%, same hardware. Most likely cause?
#
# - **A** batch 33 overflows the L2 cache, so every kernel suddenly spills its working tiles to HBM
# - **B** the framework silently switches to FP32 accumulation for odd batch sizes
# - **C** crossing a warp/wave boundary launches a partially filled extra unit with idle lanes
# - **D** the framework inserts extra synchronization barriers once the batch exceeds 32
#
# **sc3_q5.** Batch 512 → 4096 with the same learning rate: GPU utilization 61% → 88%, but validation loss after 10,000 steps is worse at equal wall clock. Most likely?
#
# - **A** the larger batch silently switched the gradients to FP16, so small updates underflowed to zero
# - **B** 8× fewer updates per epoch with an unchanged learning rate: throughput-healthy but optimization-starved
# - **C** the framework skipped backpropagation on part of each large batch to keep the step time flat
# - **D** per-epoch communication grew 8× with the batch, starving the optimizer of the wall-clock time it needs for updates

# %% [answer id=ans_sc3 partial]
sc3_q1 = None  # a letter: "A", "B", "C" or "D"
sc3_q2 = None  # a letter: "A", "B", "C" or "D"
sc3_q3 = None  # a number in fraction (0-1)
sc3_q4 = None  # a letter: "A", "B", "C" or "D"
sc3_q5 = None  # a letter: "A", "B", "C" or "D"
### BEGIN SOLUTION
sc3_q1 = 'A'
sc3_q2 = 'D'
sc3_q3 = 0.56284
sc3_q4 = 'C'
sc3_q5 = 'B'
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc3_q1': sc3_q1, 'sc3_q2': sc3_q2, 'sc3_q3': sc3_q3, 'sc3_q4': sc3_q4, 'sc3_q5': sc3_q5});

# %% [markdown]
# **Recap (read after you answer).** A training system is a data pipeline, a training loop and an evaluation pipeline. A staged pipeline runs at the rate of its slowest stage (the min-of-three rule) once stages overlap; without overlap, stage times add up. GPU work is quantized into warps of 32 threads and waves of thread blocks, so sizes just past a boundary waste lanes. A larger batch means fewer updates per epoch.

# %% [test id=test_sc3_q1 points=1]
# Visible test: checks the form of sc3_q1, not whether it is right.
sc.require_format('sc3_q1', sc3_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 3 Q1 key: A
ck.case('sc3_q1', lambda: sc3_q1, expect=ck.exactly('A'), name='sc3_q1')
### END HIDDEN TESTS

# %% [test id=test_sc3_q2 points=1]
# Visible test: checks the form of sc3_q2, not whether it is right.
sc.require_format('sc3_q2', sc3_q2)
### BEGIN HIDDEN TESTS
# 002 Self-Check 3 Q2 key: D; min-of-three rule (§1.3)
ck.case('sc3_q2', lambda: sc3_q2, expect=ck.exactly('D'), name='sc3_q2')
### END HIDDEN TESTS

# %% [test id=test_sc3_q3 points=1]
# Visible test: checks the form of sc3_q3, not whether it is right.
sc.require_format('sc3_q3', sc3_q3)
### BEGIN HIDDEN TESTS
# recomputed: 84.4 / (32768/5e5*1e3 + 262144/15.75e9*1e3 + 84.4) = 0.56284
ck.case('sc3_q3', lambda: sc3_q3, expect=ck.approx(0.56284, rel=0.005), name='sc3_q3')
### END HIDDEN TESTS

# %% [test id=test_sc3_q4 points=1]
# Visible test: checks the form of sc3_q4, not whether it is right.
sc.require_format('sc3_q4', sc3_q4)
### BEGIN HIDDEN TESTS
# 002 Self-Check 3 Q4 key: C; Table 6 (33/64 lanes)
ck.case('sc3_q4', lambda: sc3_q4, expect=ck.exactly('C'), name='sc3_q4')
### END HIDDEN TESTS

# %% [test id=test_sc3_q5 points=1]
# Visible test: checks the form of sc3_q5, not whether it is right.
sc.require_format('sc3_q5', sc3_q5)
### BEGIN HIDDEN TESTS
# 002 Self-Check 3 Q5 key: B; 4096/512 = 8
ck.case('sc3_q5', lambda: sc3_q5, expect=ck.exactly('B'), name='sc3_q5')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q3 in words: why can CPU tokenization be a hidden bottleneck even when the host-to-device copy takes well under a millisecond? Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc3_q3_reflect')

# %% [markdown]
# ## Self-Check 4 — identifying bottlenecks: MFU and D·A·M (002 §1.4)
#
# **sc4_q1.** Why is MFU more informative than the profiler's accelerator-busy percentage?
#
# - **A** MFU equals peak throughput by definition, so it reads 100% on any healthy, correctly configured hardware
# - **B** MFU is measured from host CPU activity, so it also captures data-loader stalls the GPU profiler misses
# - **C** MFU ignores wall-clock time and counts only forward-pass FLOPs, so stalls and idle gaps cannot distort it
# - **D** MFU counts only useful model FLOPs; busy time also counts padding, recomputation and stalled kernels
#
# **sc4_q1_mfu.** Predict, then verify (MFU by Def 1.4). A 1e9-parameter model trains on 524,288 tokens per step on 8 A100s (312 TFLOP/s dense BF16 each) at 2.0 s per step. What is its MFU?
# *Answer unit: fraction (0-1); 3 significant digits are enough.*
#
# **sc4_q2.** GPU activity drops to near zero for tens of ms at a time while CPU data loading is busy and HBM bandwidth is low. Which D·A·M class?
#
# - **A** compute-bound: the kernels saturate the Tensor Cores in between the idle gaps
# - **B** memory-bound: the drops are kernels stalled waiting on HBM reads and writes
# - **C** data-bound: the GPU drops to near zero rather than stalling on memory traffic
# - **D** communication-bound: the GPU idles while gradient AllReduce crosses the network
#
# **sc4_q3.** Free response turned label (Q3, run B). Run B shows 18% GPU utilization with periodic drops to zero, the CPU pinned and HBM bandwidth low. Which D·A·M class?
# Answer with one of: `compute-bound`, `memory-bound`, `data-bound`, `communication-bound`.
#
# **sc4_q4.** Order the workflow: (1) apply a targeted fix to the dominant bottleneck, (2) profile the run, (3) re-profile and iterate, (4) identify the dominant bottleneck. Answer as a list of item numbers, first step first.

# %% [answer id=ans_sc4]
sc4_q1 = None  # a letter: "A", "B", "C" or "D"
sc4_q1_mfu = None  # a number in fraction (0-1)
sc4_q2 = None  # a letter: "A", "B", "C" or "D"
sc4_q3 = None  # one of: 'compute-bound', 'memory-bound', 'data-bound', 'communication-bound'
sc4_q4 = None  # a list of item numbers, e.g. [2, 1, 3]
### BEGIN SOLUTION
sc4_q1 = 'D'
sc4_q1_mfu = 0.630154
sc4_q2 = 'C'
sc4_q3 = 'data-bound'
sc4_q4 = [2, 4, 1, 3]
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc4_q1': sc4_q1, 'sc4_q1_mfu': sc4_q1_mfu, 'sc4_q2': sc4_q2, 'sc4_q3': sc4_q3, 'sc4_q4': sc4_q4});

# %% [markdown]
# **Recap (read after you answer).** Def 1.4: MFU = O_model / (R_peak · T_step), with O_model the useful model FLOPs of one step, forward **plus** backward (≈ 6·N per token), excluding recomputation. Table 7 (D·A·M): compute-bound (Algorithm) = utilization > 90% with *low* memory bandwidth; memory-bound (Machine) = 50-80% with *high* memory bandwidth; data-bound (Data) = periodic drops to near zero with the CPU busy.

# %% [test id=test_sc4_q1 points=1]
# Visible test: checks the form of sc4_q1, not whether it is right.
sc.require_format('sc4_q1', sc4_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 4 Q1 key: D (its explanation contradicts Def 1.4)
ck.case('sc4_q1', lambda: sc4_q1, expect=ck.exactly('D'), name='sc4_q1')
### END HIDDEN TESTS

# %% [test id=test_sc4_q1_mfu points=1]
# Visible test: checks the form of sc4_q1_mfu, not whether it is right.
sc.require_format('sc4_q1_mfu', sc4_q1_mfu)
### BEGIN HIDDEN TESTS
# recomputed: 6*1e9*524288/(8*312e12*2.0) = 0.6301538
ck.case('sc4_q1_mfu', lambda: sc4_q1_mfu, expect=ck.approx(0.630154, rel=0.005), name='sc4_q1_mfu')
### END HIDDEN TESTS

# %% [test id=test_sc4_q2 points=1]
# Visible test: checks the form of sc4_q2, not whether it is right.
sc.require_format('sc4_q2', sc4_q2)
### BEGIN HIDDEN TESTS
# 002 Self-Check 4 Q2 key: C; Table 7
ck.case('sc4_q2', lambda: sc4_q2, expect=ck.exactly('C'), name='sc4_q2')
### END HIDDEN TESTS

# %% [test id=test_sc4_q3 points=1]
# Visible test: checks the form of sc4_q3, not whether it is right.
sc.require_format('sc4_q3', sc4_q3)
### BEGIN HIDDEN TESTS
# 002 Self-Check 4 Q3 key (run B: data-bound); Table 7
ck.case('sc4_q3', lambda: sc4_q3, expect=ck.exactly('data-bound'), name='sc4_q3')
### END HIDDEN TESTS

# %% [test id=test_sc4_q4 points=1]
# Visible test: checks the form of sc4_q4, not whether it is right.
sc.require_format('sc4_q4', sc4_q4)
### BEGIN HIDDEN TESTS
# 002 Self-Check 4 Q4 key: (2), (4), (1), (3)
ck.case('sc4_q4', lambda: sc4_q4, expect=ck.exactly([2, 4, 1, 3]), name='sc4_q4')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q3, run A: 92% GPU utilization, HBM bandwidth saturated, CPU idle. The chapter's key calls it compute-bound. Is that consistent with Table 7? What would you measure to decide? Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc4_q3_reflect')

# %% [markdown]
# ## Self-Check 5 — pipeline optimizations (002 §1.5)
#
# **sc5_q1.** Profile: 40% data loading, 35% compute, 25% memory operations. What first?
#
# - **A** data prefetching and pipeline overlap
# - **B** gradient checkpointing to shrink activations
# - **C** mixed precision to halve compute time
# - **D** FlashAttention to cut memory traffic
#
# **sc5_q2.** Free response turned numeric (prefetching, Q2). Fetch takes 20 ms, preprocessing 30 ms, host-to-device transfer 5 ms and compute 50 ms per batch, each stage on its own hardware. What speedup does a deep enough prefetch buffer give over the serial loop?
# *Answer unit: × (ratio); 3 significant digits are enough.*
#
# **sc5_q3.** Why does mixed precision keep master weights and some reductions in FP32?
#
# - **A** Tensor Cores can only read FP32 inputs, so every 16-bit activation needs an FP32 mirror beside it
# - **B** to lower HBM bandwidth pressure, since FP32 values compress better than 16-bit ones in transfer
# - **C** only data parallelism needs it: AllReduce requires FP32 gradients, while single-device mixed-precision runs do not
# - **D** sensitive accumulations and updates lose precision or underflow in 16 bits, while bulk matmuls tolerate it
#
# **sc5_q4.** What makes FlashAttention faster and more memory-efficient than standard attention?
#
# - **A** tiling keeps score/probability blocks in on-chip SRAM, never writing the S×S matrix to HBM
# - **B** it replaces the softmax with a cheaper ReLU, so the attention weights are only approximated
# - **C** it truncates training sequences to shorter windows, so the S×S matrix itself gets smaller
# - **D** the S×S matrix is computed once, stored in HBM and reused across all heads and layers
#
# **sc5_q5.** Effective batch 512 is wanted but only micro-batch 16 fits. Which combination emulates 512 and also reduces activation pressure?
#
# - **A** FlashAttention + stronger weight decay (AdamW)
# - **B** deeper data prefetching + elementwise operator fusion
# - **C** gradient accumulation + activation checkpointing
# - **D** linear learning-rate scaling + cosine annealing
#
# **sc5_q6.** Free response turned numeric (iterate after a win, Q6). In the chapter's GPT-2 pipeline (Example 1.1) tokenization takes 65.536 ms per batch on one core and is already overlapped with an 84.4 ms accelerator step. Mixed precision cuts compute time by 38%. What end-to-end speedup does the team actually see?
# *Answer unit: × (ratio); 3 significant digits are enough.*

# %% [answer id=ans_sc5 partial]
sc5_q1 = None  # a letter: "A", "B", "C" or "D"
sc5_q2 = None  # a number in × (ratio)
sc5_q3 = None  # a letter: "A", "B", "C" or "D"
sc5_q4 = None  # a letter: "A", "B", "C" or "D"
sc5_q5 = None  # a letter: "A", "B", "C" or "D"
sc5_q6 = None  # a number in × (ratio)
### BEGIN SOLUTION
sc5_q1 = 'A'
sc5_q2 = 2.1
sc5_q3 = 'D'
sc5_q4 = 'A'
sc5_q5 = 'C'
sc5_q6 = 1.28784
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc5_q1': sc5_q1, 'sc5_q2': sc5_q2, 'sc5_q3': sc5_q3, 'sc5_q4': sc5_q4, 'sc5_q5': sc5_q5, 'sc5_q6': sc5_q6});

# %% [markdown]
# **Recap (read after you answer).** Optimize the dominant bottleneck first. Prefetching overlaps stages, turning iteration time from the *sum* of the stages into their *maximum*. Mixed precision keeps master weights and sensitive reductions in FP32. FlashAttention tiles attention so the S×S matrix never reaches HBM. Gradient accumulation emulates a large batch from micro-batches; activation checkpointing trades recomputation for activation memory.

# %% [markdown]
# **Warm-up (ungraded, instant feedback).** After that mixed-precision win, which D·A·M class now limits the run?

# %%
sc.widget('sc5_q6_label')

# %% [test id=test_sc5_q1 points=1]
# Visible test: checks the form of sc5_q1, not whether it is right.
sc.require_format('sc5_q1', sc5_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 5 Q1 key: A
ck.case('sc5_q1', lambda: sc5_q1, expect=ck.exactly('A'), name='sc5_q1')
### END HIDDEN TESTS

# %% [test id=test_sc5_q2 points=1]
# Visible test: checks the form of sc5_q2, not whether it is right.
sc.require_format('sc5_q2', sc5_q2)
### BEGIN HIDDEN TESTS
# recomputed: 105/50 = 2.1 (scenario numbers stated in the item)
ck.case('sc5_q2', lambda: sc5_q2, expect=ck.approx(2.1, rel=0.005), name='sc5_q2')
### END HIDDEN TESTS

# %% [test id=test_sc5_q3 points=1]
# Visible test: checks the form of sc5_q3, not whether it is right.
sc.require_format('sc5_q3', sc5_q3)
### BEGIN HIDDEN TESTS
# 002 Self-Check 5 Q3 key: D
ck.case('sc5_q3', lambda: sc5_q3, expect=ck.exactly('D'), name='sc5_q3')
### END HIDDEN TESTS

# %% [test id=test_sc5_q4 points=1]
# Visible test: checks the form of sc5_q4, not whether it is right.
sc.require_format('sc5_q4', sc5_q4)
### BEGIN HIDDEN TESTS
# 002 Self-Check 5 Q4 key: A
ck.case('sc5_q4', lambda: sc5_q4, expect=ck.exactly('A'), name='sc5_q4')
### END HIDDEN TESTS

# %% [test id=test_sc5_q5 points=1]
# Visible test: checks the form of sc5_q5, not whether it is right.
sc.require_format('sc5_q5', sc5_q5)
### BEGIN HIDDEN TESTS
# 002 Self-Check 5 Q5 key: C; 512/16 = 32
ck.case('sc5_q5', lambda: sc5_q5, expect=ck.exactly('C'), name='sc5_q5')
### END HIDDEN TESTS

# %% [test id=test_sc5_q6 points=1]
# Visible test: checks the form of sc5_q6, not whether it is right.
sc.require_format('sc5_q6', sc5_q6)
### BEGIN HIDDEN TESTS
# recomputed: 84.4/max(65.536, 84.4*0.62) = 1.287842
ck.case('sc5_q6', lambda: sc5_q6, expect=ck.approx(1.28784, rel=0.005), name='sc5_q6')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q2 in words: why does prefetching turn the sum of the stage times into their maximum, and what condition must hold? Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc5_q2_reflect')

# %% [markdown]
# ## Self-Check 6 — scaling beyond one device (002 §1.6)
#
# **sc6_q1.** A 1.5B model fits on one accelerator but an epoch takes 14 h; the team needs < 4 h and has 8 accelerators in one node. First step?
#
# - **A** model parallelism: split the layers over the 8 accelerators so each holds one eighth of the model
# - **B** switch Adam to SGD on one accelerator: dropping the optimizer state makes each step several times faster
# - **C** naive pipeline parallelism: all 8 stages compute concurrently, so the epoch time drops about 8×
# - **D** data parallelism: the model fits, so one AllReduce per step costs less than pipeline bubbles
#
# **sc6_q2.** Why does naive model parallelism deliver only 25-50% utilization?
#
# - **A** each GPU still stores the full optimizer state for every layer, so the update traffic saturates HBM and throttles the forward and backward kernels
# - **B** layer partitioning creates sequential dependencies: devices idle waiting for upstream activations (pipeline bubbles) until micro-batching fills them
# - **C** it removes batching: each device processes one example at a time, so its kernels are too small to fill the SMs and approach peak
# - **D** it stores the whole dataset on each node, so every device spends most of each step reading training data from local disk instead of computing
#
# **sc6_q3.** Free response turned numeric (communication tax, Q3). The 1.5B model's BF16 gradients (3e9 bytes) are ring-AllReduced across 8 A100s over NVLink at 300 GB/s per direction (latency ignored). How long does one AllReduce take?
# *Answer unit: s; 3 significant digits are enough.*
#
# **sc6_q4.** 70B parameters in FP16 need about 140 GB for weights alone; the largest accelerator has 80 GB. Which hard limit forces multi-device training?
#
# - **A** memory exhaustion: the weights alone exceed one device
# - **B** wall-clock time only: one device would need years of training
# - **C** dataset scale: the corpus cannot fit in one node's storage
# - **D** numerical precision: a 70B model must train in FP32, not FP16
#
# **sc6_q5.** When should a team seriously consider multi-device training?
#
# - **A** immediately, at project start: multi-device code is hard to retrofit later, so every run should begin distributed
# - **B** whenever the model uses Adam, since its two moments always exceed a single accelerator's memory
# - **C** as soon as single-GPU utilization exceeds 60%, because beyond that point one device has nothing left to optimize
# - **D** after mixed precision, accumulation, checkpointing and data-pipeline work, if a hard limit still remains

# %% [answer id=ans_sc6]
sc6_q1 = None  # a letter: "A", "B", "C" or "D"
sc6_q2 = None  # a letter: "A", "B", "C" or "D"
sc6_q3 = None  # a number in s
sc6_q4 = None  # a letter: "A", "B", "C" or "D"
sc6_q5 = None  # a letter: "A", "B", "C" or "D"
### BEGIN SOLUTION
sc6_q1 = 'D'
sc6_q2 = 'B'
sc6_q3 = 0.0175
sc6_q4 = 'A'
sc6_q5 = 'D'
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc6_q1': sc6_q1, 'sc6_q2': sc6_q2, 'sc6_q3': sc6_q3, 'sc6_q4': sc6_q4, 'sc6_q5': sc6_q5});

# %% [markdown]
# **Recap (read after you answer).** Data parallelism replicates the model and splits the batch (one gradient AllReduce per step); model/pipeline parallelism splits the layers and suffers bubbles unless micro-batches fill the pipeline: bubble fraction (p-1)/(m+p-1) for p stages and m micro-batches. Ring AllReduce moves 2(N-1)/N · S bytes per GPU. Go multi-device only after single-machine optimizations, when a hard limit (memory, wall clock, dataset) remains.

# %% [markdown]
# **Warm-up (ungraded, instant feedback).** Predict, then verify: a 4-stage pipeline runs 16 micro-batches per step (GPipe/1F1B schedule). What fraction of the step is useful work (1 − bubble fraction)?

# %%
sc.widget('sc6_q2_bubble')

# %% [test id=test_sc6_q1 points=1]
# Visible test: checks the form of sc6_q1, not whether it is right.
sc.require_format('sc6_q1', sc6_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 6 Q1 key: D; 14/(8*4) = 0.4375
ck.case('sc6_q1', lambda: sc6_q1, expect=ck.exactly('D'), name='sc6_q1')
### END HIDDEN TESTS

# %% [test id=test_sc6_q2 points=1]
# Visible test: checks the form of sc6_q2, not whether it is right.
sc.require_format('sc6_q2', sc6_q2)
### BEGIN HIDDEN TESTS
# 002 Self-Check 6 Q2 key: B; 1/p for p = 2..4
ck.case('sc6_q2', lambda: sc6_q2, expect=ck.exactly('B'), name='sc6_q2')
### END HIDDEN TESTS

# %% [test id=test_sc6_q3 points=1]
# Visible test: checks the form of sc6_q3, not whether it is right.
sc.require_format('sc6_q3', sc6_q3)
### BEGIN HIDDEN TESTS
# recomputed: 2*(7/8)*3e9/300e9 = 0.0175 s (A100 NVLink 600 GB/s total)
ck.case('sc6_q3', lambda: sc6_q3, expect=ck.approx(0.0175, rel=0.005), name='sc6_q3')
### END HIDDEN TESTS

# %% [test id=test_sc6_q4 points=1]
# Visible test: checks the form of sc6_q4, not whether it is right.
sc.require_format('sc6_q4', sc6_q4)
### BEGIN HIDDEN TESTS
# 002 Self-Check 6 Q4 key: A; 70e9*2 = 140e9 B
ck.case('sc6_q4', lambda: sc6_q4, expect=ck.exactly('A'), name='sc6_q4')
### END HIDDEN TESTS

# %% [test id=test_sc6_q5 points=1]
# Visible test: checks the form of sc6_q5, not whether it is right.
sc.require_format('sc6_q5', sc6_q5)
### BEGIN HIDDEN TESTS
# 002 Self-Check 6 Q5 key: D
ck.case('sc6_q5', lambda: sc6_q5, expect=ck.exactly('D'), name='sc6_q5')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q3 in words: what is the communication tax and when does it become binding? Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc6_q3_reflect')

# %% [markdown]
# ## Self-Check 7 — fallacies and pitfalls (002 §1.7)
#
# **sc7_q1.** A 7B model does well on 100M examples; a 20B model on the same data is expected to do better. Most likely outcome?
#
# - **A** linear improvement in validation loss with parameter count
# - **B** worse validation from overfitting, at ~3× the cost
# - **C** the same validation loss, at the same training cost
# - **D** better validation, but only once the optimizer is SGD
#
# **sc7_q2.** Which scenario shows that distributed training does not automatically speed up development?
#
# - **A** faster per step always means faster experimentation, so 8 GPUs always cut iteration time about 8×
# - **B** BF16 training prevents data parallelism, because 16-bit gradients cannot be AllReduced across GPUs
# - **C** a communication-heavy model spends 30-50% of each step in AllReduce and gets only 4-6× on 8 GPUs
# - **D** activation checkpointing blocks gradient exchange, so a checkpointed model cannot use more than one GPU
#
# **sc7_q3.** Free response turned numeric (hyperparameter transfer, Q3). A run tuned at batch 512 with learning rate 0.1 moves to batch 4096. What learning rate does the linear scaling rule suggest (before warmup and critical-batch caveats)?
# *Answer unit: (dimensionless); 3 significant digits are enough.*
#
# **sc7_q4.** Which mistake is especially common when teams optimize only the accelerator side and skip end-to-end profiling?
#
# - **A** keeping LayerNorm and softmax reductions in FP32 while matmuls run in BF16
# - **B** choosing AdamW with decoupled weight decay instead of plain SGD with Nesterov momentum
# - **C** using gradient accumulation to reach the target batch size on fewer GPUs
# - **D** assuming the input pipeline is fine and finding the GPU idle 30-50% of the time

# %% [answer id=ans_sc7 partial]
sc7_q1 = None  # a letter: "A", "B", "C" or "D"
sc7_q2 = None  # a letter: "A", "B", "C" or "D"
sc7_q3 = None  # a number in (dimensionless)
sc7_q4 = None  # a letter: "A", "B", "C" or "D"
### BEGIN SOLUTION
sc7_q1 = 'B'
sc7_q2 = 'C'
sc7_q3 = 0.8
sc7_q4 = 'D'
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc7_q1': sc7_q1, 'sc7_q2': sc7_q2, 'sc7_q3': sc7_q3, 'sc7_q4': sc7_q4});

# %% [markdown]
# **Recap (read after you answer).** Scaling capacity without data overfits; distribution does not automatically speed up development; hyperparameters do not transfer across batch sizes (linear scaling rule: learning rate ∝ batch, up to the critical batch size); and the input pipeline is the most neglected bottleneck.

# %% [test id=test_sc7_q1 points=1]
# Visible test: checks the form of sc7_q1, not whether it is right.
sc.require_format('sc7_q1', sc7_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 7 Q1 key: B
ck.case('sc7_q1', lambda: sc7_q1, expect=ck.exactly('B'), name='sc7_q1')
### END HIDDEN TESTS

# %% [test id=test_sc7_q2 points=1]
# Visible test: checks the form of sc7_q2, not whether it is right.
sc.require_format('sc7_q2', sc7_q2)
### BEGIN HIDDEN TESTS
# 002 Self-Check 7 Q2 key: C; recomputed 8*(1-f)
ck.case('sc7_q2', lambda: sc7_q2, expect=ck.exactly('C'), name='sc7_q2')
### END HIDDEN TESTS

# %% [test id=test_sc7_q3 points=1]
# Visible test: checks the form of sc7_q3, not whether it is right.
sc.require_format('sc7_q3', sc7_q3)
### BEGIN HIDDEN TESTS
# recomputed: 0.1*4096/512 = 0.8
ck.case('sc7_q3', lambda: sc7_q3, expect=ck.approx(0.8, rel=0.005), name='sc7_q3')
### END HIDDEN TESTS

# %% [test id=test_sc7_q4 points=1]
# Visible test: checks the form of sc7_q4, not whether it is right.
sc.require_format('sc7_q4', sc7_q4)
### BEGIN HIDDEN TESTS
# 002 Self-Check 7 Q4 key: D
ck.case('sc7_q4', lambda: sc7_q4, expect=ck.exactly('D'), name='sc7_q4')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q3 in words: why can copying hyperparameters from batch 512 to batch 4096 waste days of compute? Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc7_q3_reflect')

# %% [markdown]
# ## Self-Check 8 — summary (002 §1.8)
#
# **sc8_q1.** Which statement best captures the chapter's approach?
#
# - **A** add GPUs until the run time is acceptable, then tune the data pipeline once it scales
# - **B** use the iron law to find the binding lever, profile, apply targeted fixes, re-profile
# - **C** prefer optimizer and hyperparameter changes over systems changes, which rarely pay off
# - **D** reduce model size first, since fewer parameters shrink every term of the iron law
#
# **sc8_q2.** Free response turned numeric (single-machine techniques, Q2). Full activation checkpointing recomputes the forward pass once during backward. Counting forward = 2N and backward = 4N FLOPs per token, what fraction of extra compute does that add to a training step?
# *Answer unit: fraction; 3 significant digits are enough.*
#
# **sc8_q3.** MFU rises from 30% to 60% on a 1024-GPU run, R_peak and dataset unchanged. How does this propagate?
#
# - **A** time halves, but energy stays unchanged because power doubles
# - **B** nothing changes, since R_peak and the dataset are both fixed
# - **C** time roughly halves, and energy and cost drop in proportion
# - **D** time unchanged, but energy and cost double with the busier chips

# %% [answer id=ans_sc8]
sc8_q1 = None  # a letter: "A", "B", "C" or "D"
sc8_q2 = None  # a number in fraction
sc8_q3 = None  # a letter: "A", "B", "C" or "D"
### BEGIN SOLUTION
sc8_q1 = 'B'
sc8_q2 = 0.3333333333333333
sc8_q3 = 'C'
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'sc8_q1': sc8_q1, 'sc8_q2': sc8_q2, 'sc8_q3': sc8_q3});

# %% [markdown]
# **Recap (read after you answer).** Find the binding lever with the iron law, confirm with a profile, fix that lever, re-profile. Exhaust single-machine optimizations before distributing. A utilization gain shortens the run, and with similar power draw it saves energy and money in proportion.

# %% [test id=test_sc8_q1 points=1]
# Visible test: checks the form of sc8_q1, not whether it is right.
sc.require_format('sc8_q1', sc8_q1)
### BEGIN HIDDEN TESTS
# 002 Self-Check 8 Q1 key: B
ck.case('sc8_q1', lambda: sc8_q1, expect=ck.exactly('B'), name='sc8_q1')
### END HIDDEN TESTS

# %% [test id=test_sc8_q2 points=1]
# Visible test: checks the form of sc8_q2, not whether it is right.
sc.require_format('sc8_q2', sc8_q2)
### BEGIN HIDDEN TESTS
# recomputed: 2/(2+4) = 0.3333
ck.case('sc8_q2', lambda: sc8_q2, expect=ck.approx(0.3333333333333333, rel=0.005), name='sc8_q2')
### END HIDDEN TESTS

# %% [test id=test_sc8_q3 points=1]
# Visible test: checks the form of sc8_q3, not whether it is right.
sc.require_format('sc8_q3', sc8_q3)
### BEGIN HIDDEN TESTS
# 002 Self-Check 8 Q3 key: C; 0.3/0.6 = 0.5
ck.case('sc8_q3', lambda: sc8_q3, expect=ck.exactly('C'), name='sc8_q3')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Q2 in words: why exhaust single-machine optimizations before scaling out? Name two techniques and what they buy. Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('sc8_q2_reflect')

# %% [markdown]
# ## The lesson's checks (003 §5 Check 1, §8 Check 2)
#
# **Recap.** Course convention for these items (the lesson's): mixed-precision Adam without an FP32 master copy = 2 + 2 + 8 = **12 bytes per parameter** of model state, activations ignored, A100 = 80 GB (decimal).
#
# **l1_fits.** Check 1. A 30B dense model, 4 A100-80GB. Can *any* combination of data, tensor and pipeline parallelism (or ZeRO-3) hold its model state (12 B/param) on these 4 GPUs?
#
# **l1_min_gpus.** Check 1, continued. What is the smallest number of A100-80GB GPUs whose total memory holds the 30B model's state (perfect sharding, no activations)?
# *Answer: a whole number (an int) of GPUs.*
#
# **l2_weights.** Check 2. Mixtral 8x7B (47B total parameters, 13B active per token) is served in BF16. How many bytes do its weights occupy?
# *Answer unit: bytes; 3 significant digits are enough.*

# %% [answer id=ans_lesson partial]
l1_fits = None  # True or False
l1_min_gpus = None  # a number in GPUs
l2_weights = None  # a number in bytes
### BEGIN SOLUTION
l1_fits = False
l1_min_gpus = 5
l2_weights = 94000000000.0
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'l1_fits': l1_fits, 'l1_min_gpus': l1_min_gpus, 'l2_weights': l2_weights});

# %%
# Verify with coursekit (ungraded): does Mixtral's BF16 weight set fit one A100?
from coursekit.hardware import get_accelerator
_cap = get_accelerator('A100-80GB').memory_bytes
print(f'A100 capacity: {_cap / 1e9:.0f} GB; 8 GPUs: {8 * _cap / 1e9:.0f} GB')

# %% [markdown]
# **Warm-up (ungraded, instant feedback).** Check 2, continued. About how many FLOPs does generating one token take (forward pass only, 2 FLOPs per active parameter)?

# %%
sc.widget('l2_flops')

# %% [markdown]
# **Warm-up (ungraded, instant feedback).** Check 2, continued. A customer-service chatbot gets many concurrent short requests. Continuous batching mainly improves which metric?

# %%
sc.widget('l2_batching')

# %% [test id=test_l1_fits points=1]
# Visible test: checks the form of l1_fits, not whether it is right.
sc.require_format('l1_fits', l1_fits)
### BEGIN HIDDEN TESTS
# recomputed: 30e9*12 = 360e9 B > 4*80e9 = 320e9 B; lesson 003 §5
ck.case('l1_fits', lambda: l1_fits, expect=ck.exactly(False), name='l1_fits')
### END HIDDEN TESTS

# %% [test id=test_l1_min_gpus points=1]
# Visible test: checks the form of l1_min_gpus, not whether it is right.
sc.require_format('l1_min_gpus', l1_min_gpus)
### BEGIN HIDDEN TESTS
# recomputed: ceil(360e9/80e9) = 5
ck.case('l1_min_gpus', lambda: l1_min_gpus, expect=ck.exactly(5), name='l1_min_gpus')
### END HIDDEN TESTS

# %% [test id=test_l2_weights points=1]
# Visible test: checks the form of l2_weights, not whether it is right.
sc.require_format('l2_weights', l2_weights)
### BEGIN HIDDEN TESTS
# recomputed: 47e9*2 = 94e9 B (lesson 003: 47B total, 13B active)
ck.case('l2_weights', lambda: l2_weights, expect=ck.approx(94000000000.0, rel=0.005), name='l2_weights')
### END HIDDEN TESTS

# %% [markdown]
# **Reflection (ungraded).** Check 2, Q2: would speculative decoding work well for the MoE chatbot? What could go wrong? Write your answer in the box and press *Check* to see the model answer.

# %%
sc.widget('l2_reflect')

# %% [markdown]
# ## The lesson's five misconceptions, each disproved with numbers (003)
#
# **Recap.** Predict each number first, then run the verification cell under it.
#
# **m1_bytes.** Misconception 1: 'parallelism is just data parallelism'. Model state of a 70B model at 12 B/param, which data parallelism must replicate on every GPU?
# *Answer unit: bytes; 3 significant digits are enough.*
#
# **m2_allreduces.** Misconception 2: 'tensor and pipeline parallelism are the same'. A 48-layer model with Megatron tensor parallelism does 2 all-reduces per layer in the forward pass. How many per forward pass? (A 4-stage pipeline does 3 point-to-point activation sends.)
# *Answer: a whole number (an int) of all-reduces.*
#
# **m3_speedup.** Misconception 3: 'speculative decoding is fast because the small model is fast'. Draft length k = 5, the draft costs c = 0.2 of a target forward pass (the lesson's '~5× faster'), and the target accepts *no* draft token (α = 0). What is the walltime speedup over plain decoding?
# *Answer unit: × (ratio); 3 significant digits are enough.*
#
# **m4_flops.** Misconception 4: 'GPUs in one machine communicate fast'. Moving 1 GB over A100 NVLink at 300 GB/s per direction (600 GB/s both directions), how many FLOPs could the A100 (312 TFLOP/s) have done meanwhile?
# *Answer unit: FLOPs; 3 significant digits are enough.*
#
# **m5_util.** Misconception 5: 'continuous batching is just a bigger batch'. Static batch of 8 requests with output lengths [20, 45, 200, 15, 80, 150, 30, 200] tokens runs until the longest finishes. What fraction of slot-steps does useful work?
# *Answer unit: fraction (0-1); 3 significant digits are enough.*

# %% [answer id=ans_mis]
m1_bytes = None  # a number in bytes
m2_allreduces = None  # a number in all-reduces
m3_speedup = None  # a number in × (ratio)
m4_flops = None  # a number in FLOPs
m5_util = None  # a number in fraction (0-1)
### BEGIN SOLUTION
m1_bytes = 840000000000.0
m2_allreduces = 96
m3_speedup = 0.5
m4_flops = 1040000000000.0
m5_util = 0.4625
### END SOLUTION

# %%
# Format check: is each answer written the way the autograder reads it? (Not whether it is right.)
sc.show_all({'m1_bytes': m1_bytes, 'm2_allreduces': m2_allreduces, 'm3_speedup': m3_speedup, 'm4_flops': m4_flops, 'm5_util': m5_util});

# %% [test id=test_m1_bytes points=1]
# Visible test: checks the form of m1_bytes, not whether it is right.
sc.require_format('m1_bytes', m1_bytes)
### BEGIN HIDDEN TESTS
# recomputed: 70e9*12 = 840e9 B (lesson 003 misconception 1)
ck.case('m1_bytes', lambda: m1_bytes, expect=ck.approx(840000000000.0, rel=0.005), name='m1_bytes')
### END HIDDEN TESTS

# %% [test id=test_m2_allreduces points=1]
# Visible test: checks the form of m2_allreduces, not whether it is right.
sc.require_format('m2_allreduces', m2_allreduces)
### BEGIN HIDDEN TESTS
# recomputed: 2*48 = 96 (Megatron-LM, Shoeybi et al. 2019 §3)
ck.case('m2_allreduces', lambda: m2_allreduces, expect=ck.exactly(96), name='m2_allreduces')
### END HIDDEN TESTS

# %% [test id=test_m3_speedup points=1]
# Visible test: checks the form of m3_speedup, not whether it is right.
sc.require_format('m3_speedup', m3_speedup)
### BEGIN HIDDEN TESTS
# recomputed: 1/(5*0.2+1) = 0.5 (Leviathan et al. 2023, Eq. for speedup)
ck.case('m3_speedup', lambda: m3_speedup, expect=ck.approx(0.5, rel=0.005), name='m3_speedup')
### END HIDDEN TESTS

# %% [test id=test_m4_flops points=1]
# Visible test: checks the form of m4_flops, not whether it is right.
sc.require_format('m4_flops', m4_flops)
### BEGIN HIDDEN TESTS
# recomputed: 312e12*1e9/300e9 = 1.04e12 (course convention: per direction)
ck.case('m4_flops', lambda: m4_flops, expect=ck.approx(1040000000000.0, rel=0.005), name='m4_flops')
### END HIDDEN TESTS

# %% [test id=test_m5_util points=1]
# Visible test: checks the form of m5_util, not whether it is right.
sc.require_format('m5_util', m5_util)
### BEGIN HIDDEN TESTS
# recomputed: 740/1600 = 0.4625
ck.case('m5_util', lambda: m5_util, expect=ck.approx(0.4625, rel=0.005), name='m5_util')
### END HIDDEN TESTS

# %% [markdown]
# ## The lab's prediction locks (004 Parts 1-3)
#
# **Recap.** Lock in your prediction before you open the lab's sliders. These points are for answering: any True/False or label from the list earns them, because a prediction is a guess. The cell under the answers tells you at once whether each prediction was right.
#
# **lock1.** Part 1 lock: moving from 8 to 64 GPUs cuts training time by exactly 8×.
#
# **lock2.** Part 2 lock: pipeline parallelism changes the *total* memory of the model weights summed over the whole cluster how?
# Answer with one of: `increases`, `decreases`, `unchanged`.
#
# **lock3.** Part 3 lock: with 5% straggler nodes, asynchronous SGD achieves higher raw samples per second than synchronous SGD.

# %% [answer id=ans_locks partial]
lock1 = None  # True or False
lock2 = None  # one of: 'increases', 'decreases', 'unchanged'
lock3 = None  # True or False
### BEGIN SOLUTION
lock1 = False
lock2 = 'unchanged'
lock3 = True
### END SOLUTION

# %%
# Your predictions: right or wrong at once (graded on completion only).
sc.show_all({'lock1': lock1, 'lock2': lock2, 'lock3': lock3});

# %% [markdown]
# **Warm-up (ungraded, instant feedback).** Part 2 bubble gauge: with 4 pipeline stages, what is the smallest number of micro-batches that keeps the bubble fraction (p-1)/(m+p-1) *below* 10%?

# %%
sc.widget('lock2_microbatches')

# %% [test id=test_lock1 points=1]
# Visible test: checks the form of lock1, not whether it is right.
sc.require_format('lock1', lock1)
### BEGIN HIDDEN TESTS
# lab plan 004 Part 1 lock; graded on completion: a prediction is a guess (answer: False)
ck.case('lock1', lambda: lock1, expect=ck.satisfies(lambda value: isinstance(value, bool)), name='lock1')
### END HIDDEN TESTS

# %% [test id=test_lock2 points=1]
# Visible test: checks the form of lock2, not whether it is right.
sc.require_format('lock2', lock2)
### BEGIN HIDDEN TESTS
# lab plan 004 Part 2 lock; graded on completion: a prediction is a guess (answer: 'unchanged')
ck.case('lock2', lambda: lock2, expect=ck.satisfies(lambda value: value in ('increases', 'decreases', 'unchanged')), name='lock2')
### END HIDDEN TESTS

# %% [test id=test_lock3 points=1]
# Visible test: checks the form of lock3, not whether it is right.
sc.require_format('lock3', lock3)
### BEGIN HIDDEN TESTS
# lab plan 004 Part 3 lock; graded on completion: a prediction is a guess (answer: True)
ck.case('lock3', lambda: lock3, expect=ck.satisfies(lambda value: isinstance(value, bool)), name='lock3')
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - The iron law splits training time into work, peak and utilization; every optimization moves one of them, and a profile tells you which one binds.
# - Staged pipelines run at their slowest stage once overlapped, at the sum of their stages otherwise; a win on one stage can hand the bottleneck to another.
# - MFU counts forward **and** backward model FLOPs (Def 1.4), never recomputation.
# - Several source answers were corrected here (MFU's numerator, the 30B-on-4-A100 check, NVLink's per-direction bandwidth, static-batching waste), and one is ambiguous (run A: saturated HBM at 92% utilization; the course's rule keeps the chapter's compute-bound): always recompute a number before you trust it.
#
# **Reflection (ungraded).** Which of your predictions was furthest off, and which mental model would have given you the right number?
