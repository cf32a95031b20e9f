"""Build the self-check keys (coursekit/data/selfcheck_keys.json) and the assignment
notebook source (notebooks/07_self_checks.py) from ONE specification, below.

    .venv/bin/python tools/build_selfcheck_keys.py            # write both
    .venv/bin/python tools/build_selfcheck_keys.py --check    # exit 1 if either is stale

This file holds the literal answers (like the instructor's source notebook does); the
package gets only salted hashes / obfuscated numbers, and the release notebook only the
prompts. Sources: 002 = the chapter (Self-Checks 1-8 and their answer section), 003 =
the lesson plan (Checks 1-2, misconceptions 1-5), 004 = the lab plan (prediction locks).
Every number is recomputed here; each item's ``source`` says how, and ``note`` says
where the source's own key or arithmetic is wrong and what is graded instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coursekit.grading.selfcheck import make_question  # noqa: E402

KEYS_PATH = ROOT / "coursekit" / "data" / "selfcheck_keys.json"
NOTEBOOK_PATH = ROOT / "notebooks" / "07_self_checks.py"
ABCD = ("A", "B", "C", "D")
CH = "002 (chapter)"


def C(qid, answer, text, options, *, hints, explanation, source, var=None, prompt=None):
    """A multiple-choice item (letter)."""
    return dict(qid=qid, kind="choice", answer=answer, text=text, options=options,
                hints=hints, explanation=explanation, source=source, var=var or qid,
                prompt=prompt or text)


def B(qid, answer, text, *, hints, explanation, source, var=None):
    return dict(qid=qid, kind="bool", answer=answer, text=text, hints=hints,
                explanation=explanation, source=source, var=var or qid, prompt=text)


def L(qid, answer, text, labels, *, hints, explanation, source, var=None):
    return dict(qid=qid, kind="label", answer=answer, text=text, labels=labels,
                hints=hints, explanation=explanation, source=source, var=var or qid,
                prompt=text)


def O(qid, answer, text, *, hints, explanation, source, var=None):
    return dict(qid=qid, kind="order", answer=answer, text=text, hints=hints,
                explanation=explanation, source=source, var=var or qid, prompt=text)


SIG3_REL = 5e-3
"""Relative tolerance of a non-integer graded number: 3 significant digits, rounded."""


def N(qid, answer, text, *, unit, rel, hints, explanation, source, var=None, integer=False,
      given=False):
    """A numeric item; ``integer`` items are graded exactly, others with ``rel``, at least
    the 0.5% that any answer written to the 3 significant digits the prompt asks for meets
    (issue #15: no precision is demanded that the prompt does not state)."""
    rel = rel if integer else max(rel, SIG3_REL)
    return dict(qid=qid, kind="number", answer=answer, text=text, unit=unit, rel=rel,
                hints=hints, explanation=explanation, source=source, var=var or qid,
                prompt=text, integer=integer, given=given)


def R(qid, text, model_answer):
    """An ungraded reflection; the model answer is revealed after an attempt."""
    return dict(qid=qid, kind="reflection", text=text, explanation=model_answer,
                prompt=text, graded=False)


# =============================================================================== SPEC
SECTIONS = [
    dict(
        id="sc1", title="Self-Check 1 — the iron law of training performance (002 §1.1)",
        partial=True,
        recap=(
            "Training time $T = O / (R_{peak}\\cdot\\eta_{hw})$ when data movement and "
            "communication are overlapped behind compute (the *simplified* iron law). "
            "$O$ is the work (≈ 6·N·D FLOPs), $R_{peak}$ the hardware ceiling, "
            "$\\eta_{hw}$ the fraction of that ceiling the software actually reaches "
            "(MFU). Each optimization moves one lever."),
        items=[
            C("sc1_q1", "A",
              "A 1024-GPU run already overlaps PCIe transfers and AllReduce with compute and "
              "measures 38% MFU. Which iron-law lever is the most actionable next target?",
              ["utilization η_hw (memory stalls, launch overhead, sync slack a profiler can "
               "localize)",
               "peak throughput R_peak (38% MFU means the chips are too slow: buy newer "
               "accelerators)",
               "total operations O (once transfers are overlapped, only the FLOP count is left "
               "to cut)",
               "dataset size (shrinking it raises η_hw, since each epoch then finishes sooner)"],
              hints=["Overlap has already been achieved; which term measures how close the "
                     "system gets to the ceiling it already has?"],
              explanation=("A. With data and communication overlapped, the remaining gap "
                           "between 38% MFU and the 55-65% practical ceiling is utilization: "
                           "memory stalls, kernel-launch overhead and synchronization slack. "
                           "New hardware raises the ceiling, not the fraction reached; "
                           "shrinking the dataset changes O, not η_hw."),
              source="002 Self-Check 1 Q1 key: A; consistent with §1.1"),
            C("sc1_q2", "B",
              "Switching from FP32 to mixed precision (Tensor Cores), nothing else changed, "
              "most directly targets which term?",
              ["η_hw, because its only effect is removing input-pipeline stalls on the host CPU",
               "R_peak, because reduced precision raises the achievable FLOP/s ceiling",
               "O, because 16-bit arithmetic halves the number of FLOPs each layer performs",
               "dataset size, because 16-bit gradients converge on fewer training examples"],
              hints=["Compare the datasheet's FP32 and BF16 peaks of the same chip."],
              explanation=("B. Tensor-Core BF16/FP16 peaks are far above the FP32 path "
                           "(A100: 312 vs 19.5 TFLOP/s dense), so the ceiling R_peak moves; "
                           "the chapter's iron-law mapping table puts mixed precision there. "
                           "It also halves bytes moved, which can help η_hw, but the direct "
                           "target is the peak."),
              source="002 Self-Check 1 Q2 key: B; A100 datasheet peaks"),
            N("sc1_q3", 1.25,
              "Free response turned numeric (small-batch debugging, Q3). A debug run at batch 4 "
              "with no prefetching spends 30 ms per step in compute and 45 ms in un-overlapped "
              "data loading, transfer and kernel launches. The team buys a GPU with 2× the "
              "peak (compute drops to 15 ms, the rest is unchanged). What step-time speedup "
              "do they actually get? (The simplified iron law predicts 2.)",
              unit="× (ratio)", rel=1e-3,
              hints=["Only the compute part of the 75 ms step gets faster.",
                     "Speedup = old step time / new step time."],
              explanation=("1.25×: (30+45)/(15+45) = 75/60. The simplified law assumes the "
                           "data term is hidden behind compute; at batch 4 without prefetching "
                           "it is not, so the un-overlapped 45 ms dominates and doubling "
                           "R_peak buys little. The fix is restoring overlap (prefetching, "
                           "larger batches), not a faster chip."),
              source="recomputed: (30+45)/(15+45) = 1.25 (scenario numbers stated in the item)"),
            B("sc1_q4", False,
              "True or False: buying an accelerator with 2× the advertised TFLOP/s roughly "
              "doubles realized utilization η_hw.",
              hints=["η_hw is a ratio: realized throughput divided by which quantity?"],
              explanation=("False. η_hw = realized / peak, a property of the software pipeline "
                           "(stalls, launches, synchronization). Doubling the peak raises the "
                           "denominator; if the software cannot feed the faster chip, η_hw "
                           "stays the same or drops."),
              source="002 Self-Check 1 Q4 key: False"),
            C("sc1_q5", "D",
              "Why did η_hw become a more critical engineering concern by the GPT-3 era?",
              ["datasets became smaller after aggressive filtering, so every token had to be "
               "processed at peak speed",
               "training stopped being dominated by matrix multiplication, so Tensor Cores sat "
               "idle unless η_hw was tuned",
               "peak throughput became irrelevant once Tensor Cores appeared, leaving η_hw as "
               "the only term in the iron law",
               "runs used thousands of accelerators, so each point of inefficiency cost "
               "millions of dollars and weeks"],
              hints=["Multiply a 1% inefficiency by the fleet size and the run length."],
              explanation=("D. At fleet scale each percentage point of utilization is "
                           "multiplied by thousands of accelerators and weeks of wall clock, "
                           "so it becomes a first-order budget item."),
              source="002 Self-Check 1 Q5 key: D"),
        ],
        reflections=[
            R("sc1_q3_reflect",
              "Q3 in words: why can the simplified iron law fail for a small-batch debugging "
              "session while it works for large-scale pretraining on the same code?",
              "The simplified law assumes data movement and communication are hidden behind "
              "compute. Large batches give each kernel enough work to hide transfer and "
              "launch latency; a batch-4 session without prefetching does not, so the data "
              "and launch terms resurface and dominate the step. Raising R_peak then buys "
              "little; restoring overlap is the fix."),
        ],
    ),
    dict(
        id="sc2", title="Self-Check 2 — mathematical foundations: matmuls, memory, roofline (002 §1.2)",
        partial=False,
        recap=(
            "Matrix-matrix products do O(n) FLOPs per byte and can saturate compute; "
            "matrix-vector products do O(1) and are memory bound. Training memory = weights "
            "+ gradients + optimizer state + activations; Adam keeps two FP32 moments "
            "(8 bytes per parameter), SGD without momentum none. The roofline's ridge point "
            "is peak FLOP/s ÷ memory bandwidth; a kernel left of it is memory bound."),
        items=[
            C("sc2_q1", "C",
              "Why do batched matrix-matrix operations dominate accelerator design more than "
              "matrix-vector operations?",
              ["they eliminate activation storage, because a batched product's output can be "
               "recomputed from the weights alone",
               "matrix-vector products need more total memory than matrix-matrix products of "
               "the same size, so they overflow caches",
               "they expose much more work per byte loaded (high arithmetic intensity), so "
               "thousands of compute units can approach peak",
               "matrix-vector products cannot run on GPU Tensor Cores at all, so each one must "
               "be shipped back to the host CPU to execute"],
              hints=["Count FLOPs per byte loaded for an n×n·n×n product and an n×n·n product."],
              explanation=("C. An n×n by n×n product does 2n³ FLOPs on ~3n² values (O(n) "
                           "FLOP/byte); a matrix-vector product does 2n² FLOPs on ~n² values "
                           "(O(1)), so it sits on the memory-bound side of the roofline."),
              source="002 Self-Check 2 Q1 key: C"),
            N("sc2_q2", 56e9,
              "Free response turned numeric (Q2). A 7-billion-parameter model on 80 GB "
              "accelerators already uses 64 GB for weights, gradients and activations. How "
              "many bytes of optimizer state does Adam add (two FP32 moments per parameter)?",
              unit="bytes", rel=1e-3,
              hints=["Adam stores a first and a second moment for every parameter.",
                     "FP32 is 4 bytes."],
              explanation=("56e9 bytes = 2 moments × 4 B × 7e9. 64 + 56 = 120 GB > 80 GB, so "
                           "Adam is infeasible at this batch size without sharding, "
                           "checkpointing or a smaller batch; SGD (no state) fits but needs "
                           "more steps. A mixed-precision run that also keeps an FP32 master "
                           "copy (4 B/param, 28 GB more) would need 148 GB: the chapter's key "
                           "counts only the moments."),
              source="recomputed: 2 x 4 B x 7e9 = 56e9 B (matches the 002 key's 56 GB)"),
            C("sc2_q3", "A",
              "Why do activations often dominate the training memory budget?",
              ["every layer's activations stay resident from forward to backward, so they scale "
               "with depth and batch while parameters are fixed",
               "activations are always stored in FP64 for backward-pass accuracy, so each value "
               "costs four times the bytes of a BF16 weight",
               "activations include a resident copy of the raw training dataset, which the "
               "framework keeps on the accelerator all epoch",
               "frameworks count Adam's optimizer moments as activations, so activation memory "
               "is really the two FP32 moments per parameter"],
              hints=["What does the backward pass need from the forward pass, and for how long?"],
              explanation=("A. Backpropagation needs each layer's saved activations, so they "
                           "persist across the whole forward-backward arc and grow with depth "
                           "× batch × sequence; parameter memory does not depend on batch."),
              source="002 Self-Check 2 Q3 key: A"),
            O("sc2_q4", [3, 1, 2],
              "Order the parts of one training step: (1) backward pass computes gradients, "
              "(2) optimizer updates parameters, (3) forward pass computes predictions and loss. "
              "Answer as a list of the item numbers, first step first.",
              hints=["Gradients are derivatives of something that must exist first."],
              explanation=("[3, 1, 2]: forward (loss), backward (gradients of that loss), then "
                           "the optimizer step that consumes those fresh gradients."),
              source="002 Self-Check 2 Q4 key: (3), (1), (2)"),
            C("sc2_q5", "B",
              "On an A100 (ridge point near 156 FLOP/byte) a fused LayerNorm+softmax kernel "
              "runs at about 5 FLOP/byte. Which optimization family moves it toward the roof?",
              ["a newer accelerator with 2× the peak FP16 TFLOP/s and the same HBM",
               "reduce data movement: fusion, tiling, lower-precision storage",
               "double the batch size with the kernels unchanged, to amortize each load",
               "switch the optimizer from Adam to SGD to free HBM bandwidth"],
              hints=["Is 5 FLOP/byte left or right of the ridge point? What limits a kernel "
                     "on that side?"],
              explanation=("B. At 5 FLOP/byte the kernel reaches at most 5/156 ≈ 3% of peak "
                           "(attainable = intensity × bandwidth); only fewer bytes per FLOP "
                           "helps. A faster peak leaves it starved, and for an elementwise "
                           "kernel the bytes grow with the batch too. Note the ridge: 312 "
                           "TFLOP/s ÷ 2.0 TB/s = 156; with the A100-80GB's 2.039 TB/s it is "
                           "153 FLOP/byte (1.555 TB/s on the 40 GB part gives 201)."),
              source="002 Self-Check 2 Q5 key: B; ridge recomputed 312e12/2.039e12 = 153"),
        ],
        reflections=[
            R("sc2_q2_reflect",
              "Q2 in words: explain the systems trade-off between SGD and Adam for this run.",
              "Adam usually converges in fewer steps but adds 2 FP32 moments = 8 B/param = "
              "56 GB here, pushing the footprint to 120 GB > 80 GB: it forces a smaller batch, "
              "checkpointing, sharding (ZeRO) or more devices. SGD keeps the 64 GB budget but "
              "needs more steps: a wall-clock cost, not a feasibility one. Near the memory "
              "ceiling the optimizer choice is a feasibility question."),
        ],
    ),
    dict(
        id="sc3", title="Self-Check 3 — the training pipeline architecture (002 §1.3)",
        partial=True,
        recap=(
            "A training system is a data pipeline, a training loop and an evaluation "
            "pipeline. A staged pipeline runs at the rate of its slowest stage (the "
            "min-of-three rule) once stages overlap; without overlap, stage times add up. "
            "GPU work is quantized into warps of 32 threads and waves of thread blocks, so "
            "sizes just past a boundary waste lanes. A larger batch means fewer updates per "
            "epoch."),
        items=[
            C("sc3_q1", "A",
              "Which subsystems describe the chapter's training-system architecture?",
              ["data pipeline, training loop, evaluation pipeline (distinct resource demands, "
               "so bottlenecks are diagnosed at their boundaries)",
               "storage controller, graph compiler pass, inference server (each pinned to its "
               "own hardware tier, so each is profiled in isolation)",
               "optimizer-state manager, cluster scheduler daemon, checkpoint restorer (the "
               "three services a framework runs beside the model)",
               "tokenizer, hyperparameter tuner, deployment gateway (the stages every model "
               "passes through on its way from raw text to production)"],
              hints=["Which grouping includes the forward/backward/update loop itself?"],
              explanation=("A. Ingest/preprocess (CPU, I/O), forward/backward/update "
                           "(accelerator) and periodic validation have different resource "
                           "profiles; their interfaces are where bottlenecks appear."),
              source="002 Self-Check 3 Q1 key: A"),
            C("sc3_q2", "D",
              "Preprocessing delivers 4 GB/s, host-to-device transfer 32 GB/s, the GPU "
              "consumes 12 GB/s. What sets end-to-end throughput?",
              ["the average of the three rates, since all stages run concurrently: 16 GB/s",
               "the transfer rate alone: 32 GB/s, since every byte must cross the PCIe link",
               "the GPU compute rate alone: 12 GB/s, since the accelerator does the real work",
               "the minimum of the three (preprocessing): parallelize preprocessing first"],
              hints=["A chain moves no faster than its slowest link."],
              explanation=("D. Throughput = min(4, 32, 12) GB/s: preprocessing caps the "
                           "system, so more preprocessing workers (and prefetching) come "
                           "before any compute optimization."),
              source="002 Self-Check 3 Q2 key: D; min-of-three rule (§1.3)"),
            N("sc3_q3", 0.56284,
              "Free response turned numeric (CPU tokenization, Q3), with the chapter's "
              "Example 1.1 numbers: 32 × 1024 tokens per step, one CPU core tokenizing "
              "500,000 tokens/s, a 262,144-byte batch over a 15.75 GB/s PCIe link, and an "
              "84.4 ms accelerator step. Without any overlap (tokenize, copy, compute, "
              "repeat), what fraction of wall-clock time is the GPU busy?",
              unit="fraction (0-1)", rel=2e-3,
              hints=["Without overlap the three stage times add up.",
                     "Tokenizing 32,768 tokens takes 32,768 / 500,000 s."],
              explanation=("0.563: tokenize 32,768/5e5 = 65.54 ms, copy 262,144/15.75e9 = "
                           "0.017 ms, compute 84.4 ms; busy = 84.4/149.95 = 0.563. The copy is "
                           "negligible; the CPU is the hidden bottleneck. With prefetching the "
                           "step becomes max(65.5, 84.4) = 84.4 ms (GPU ~100% busy), and 8 "
                           "workers cut tokenization to 8.2 ms. Note: the chapter's model "
                           "answer says a 60 ms tokenizer in front of 200 ms of compute "
                           "'feeds the GPU at the tokenizer's rate' - under its own "
                           "slowest-stage rule an overlapped pipeline then runs at the 200 ms "
                           "compute rate; the idle gaps appear only without overlap (60 ms of "
                           "every 260 ms, 23%)."),
              source="recomputed: 84.4 / (32768/5e5*1e3 + 262144/15.75e9*1e3 + 84.4) = 0.56284"),
            C("sc3_q4", "C",
              "Batch 32 gives 92% GPU utilization, batch 33 gives 71%, same hardware. Most "
              "likely cause?",
              ["batch 33 overflows the L2 cache, so every kernel suddenly spills its working "
               "tiles to HBM",
               "the framework silently switches to FP32 accumulation for odd batch sizes",
               "crossing a warp/wave boundary launches a partially filled extra unit with idle "
               "lanes",
               "the framework inserts extra synchronization barriers once the batch exceeds 32"],
              hints=["What is special about 32 on an NVIDIA GPU?"],
              explanation=("C. Wave quantization: at 33 the work needs a second warp/wave that "
                           "is mostly empty (the chapter's Table 6: 33 occupies the same two "
                           "warps as 64, i.e. 33/64 = 52% of the lanes), so step time barely "
                           "changes while useful work per lane drops. A cache spill would grow "
                           "with working-set size, not jump at one element."),
              source="002 Self-Check 3 Q4 key: C; Table 6 (33/64 lanes)"),
            C("sc3_q5", "B",
              "Batch 512 → 4096 with the same learning rate: GPU utilization 61% → 88%, but "
              "validation loss after 10,000 steps is worse at equal wall clock. Most likely?",
              ["the larger batch silently switched the gradients to FP16, so small updates "
               "underflowed to zero",
               "8× fewer updates per epoch with an unchanged learning rate: throughput-healthy "
               "but optimization-starved",
               "the framework skipped backpropagation on part of each large batch to keep the "
               "step time flat",
               "per-epoch communication grew 8× with the batch, starving the optimizer of the "
               "wall-clock time it needs for updates"],
              hints=["Count optimizer steps per epoch for each batch size."],
              explanation=("B. 4096/512 = 8× fewer updates per epoch; without rescaling the "
                           "learning rate the optimizer travels less per epoch. Per-step "
                           "communication grows, per-epoch communication does not."),
              source="002 Self-Check 3 Q5 key: B; 4096/512 = 8"),
        ],
        reflections=[
            R("sc3_q3_reflect",
              "Q3 in words: why can CPU tokenization be a hidden bottleneck even when the "
              "host-to-device copy takes well under a millisecond?",
              "The copy of an integer token tensor is tiny (0.017 ms here), but single-core "
              "tokenization of a batch takes tens of milliseconds (65.5 ms for 32K tokens at "
              "500K tokens/s), comparable to the 84 ms accelerator step. Without overlap the "
              "GPU waits for it every step (busy only 56% of the time). A faster GPU cannot "
              "help; multi-worker tokenization plus prefetching hides it (8 workers: 8.2 ms)."),
        ],
    ),
    dict(
        id="sc4", title="Self-Check 4 — identifying bottlenecks: MFU and D·A·M (002 §1.4)",
        partial=False,
        recap=(
            "Def 1.4: MFU = O_model / (R_peak · T_step), with O_model the useful model FLOPs "
            "of one step, forward **plus** backward (≈ 6·N per token), excluding "
            "recomputation. Table 7 (D·A·M): compute-bound (Algorithm) = utilization > 90% "
            "with *low* memory bandwidth; memory-bound (Machine) = 50-80% with *high* "
            "memory bandwidth; data-bound (Data) = periodic drops to near zero with the CPU "
            "busy."),
        items=[
            C("sc4_q1", "D",
              "Why is MFU more informative than the profiler's accelerator-busy percentage?",
              ["MFU equals peak throughput by definition, so it reads 100% on any healthy, "
               "correctly configured hardware",
               "MFU is measured from host CPU activity, so it also captures data-loader stalls "
               "the GPU profiler misses",
               "MFU ignores wall-clock time and counts only forward-pass FLOPs, so stalls and "
               "idle gaps cannot distort it",
               "MFU counts only useful model FLOPs; busy time also counts padding, "
               "recomputation and stalled kernels"],
              hints=["Which of the two numbers would rise if the checkpointer recomputed "
                     "every activation?"],
              explanation=("D. Correction to the chapter's key: its explanation says MFU "
                           "counts 'only the forward-pass FLOPs'. Def 1.4 (and PaLM, which "
                           "introduced MFU) counts forward plus backward, about 6·N FLOPs per "
                           "token; what MFU excludes is recomputation, padding and idle time. "
                           "A forward-only count would understate MFU by 3×."),
              source="002 Self-Check 4 Q1 key: D (its explanation contradicts Def 1.4)"),
            N("sc4_q1_mfu", 0.630154,
              "Predict, then verify (MFU by Def 1.4). A 1e9-parameter model trains on "
              "524,288 tokens per step on 8 A100s (312 TFLOP/s dense BF16 each) at 2.0 s per "
              "step. What is its MFU?",
              unit="fraction (0-1)", rel=1e-3,
              hints=["Use the useful FLOPs of forward and backward: 6 FLOPs per parameter "
                     "per token.", "The denominator is the whole cluster's peak times the "
                     "step time."],
              explanation=("0.630 = 6 × 1e9 × 524,288 / (8 × 312e12 × 2.0) = 3.146e15 / "
                           "4.992e15. Counting only the forward pass (2·N per token), as the "
                           "chapter's Self-Check 4 answer text suggests, would give 0.210."),
              source="recomputed: 6*1e9*524288/(8*312e12*2.0) = 0.6301538"),
            C("sc4_q2", "C",
              "GPU activity drops to near zero for tens of ms at a time while CPU data loading "
              "is busy and HBM bandwidth is low. Which D·A·M class?",
              ["compute-bound: the kernels saturate the Tensor Cores in between the idle gaps",
               "memory-bound: the drops are kernels stalled waiting on HBM reads and writes",
               "data-bound: the GPU drops to near zero rather than stalling on memory traffic",
               "communication-bound: the GPU idles while gradient AllReduce crosses the network"],
              hints=["A memory-bound kernel keeps HBM busy. Is HBM busy here?"],
              explanation=("C. Near-zero GPU activity with a busy CPU and idle HBM is the "
                           "data-bound signature of Table 7; a memory-bound kernel would show "
                           "high HBM bandwidth while the GPU stays active."),
              source="002 Self-Check 4 Q2 key: C; Table 7"),
            L("sc4_q3", "data-bound",
              "Free response turned label (Q3, run B). Run B shows 18% GPU utilization with "
              "periodic drops to zero, the CPU pinned and HBM bandwidth low. Which D·A·M "
              "class?",
              ["compute-bound", "memory-bound", "data-bound", "communication-bound"],
              hints=["Match the symptoms to the rows of Table 7."],
              explanation=("data-bound: periodic drops to near zero with the CPU pinned is the "
                           "Data row of Table 7; the fix is prefetching, pipeline overlap, "
                           "DataLoader workers and faster storage. (Run A is discussed in the "
                           "reflection below: the chapter's key calls it compute-bound, but "
                           "'HBM bandwidth saturated' is Table 7's memory-bound symptom; the "
                           "course's rule in 03 checks utilization first and keeps the "
                           "chapter's label.)"),
              source="002 Self-Check 4 Q3 key (run B: data-bound); Table 7"),
            O("sc4_q4", [2, 4, 1, 3],
              "Order the workflow: (1) apply a targeted fix to the dominant bottleneck, "
              "(2) profile the run, (3) re-profile and iterate, (4) identify the dominant "
              "bottleneck. Answer as a list of item numbers, first step first.",
              hints=["Evidence comes before diagnosis, diagnosis before treatment."],
              explanation=("[2, 4, 1, 3]: profile, identify, fix, re-profile. Re-profiling "
                           "matters because removing one bottleneck exposes the next."),
              source="002 Self-Check 4 Q4 key: (2), (4), (1), (3)"),
        ],
        reflections=[
            R("sc4_q3_reflect",
              "Q3, run A: 92% GPU utilization, HBM bandwidth saturated, CPU idle. The "
              "chapter's key calls it compute-bound. Is that consistent with Table 7? What "
              "would you measure to decide?",
              "Not cleanly. Table 7 defines compute-bound as utilization > 90% with LOW memory "
              "bandwidth and memory-bound as HIGH memory bandwidth; run A has the first "
              "symptom of one row and the second of the other. Measure the arithmetic "
              "intensity of the dominant kernels (FLOPs / HBM bytes) against the ridge point, "
              "or the achieved FLOP/s vs peak: tensor-core-saturated matmuls are compute-bound "
              "(FlashAttention, mixed precision, faster hardware); saturated HBM with modest "
              "FLOP/s is memory-bound (fusion, memory-efficient attention, lower precision). "
              "The course's rule (03, Part 6) checks GPU utilization before HBM and so keeps "
              "the chapter's label, compute-bound, for the profiler summary; only a kernel-level "
              "profile settles it. Run B is clearly data-bound (prefetching, DataLoader "
              "parallelism)."),
        ],
    ),
    dict(
        id="sc5", title="Self-Check 5 — pipeline optimizations (002 §1.5)",
        partial=True,
        recap=(
            "Optimize the dominant bottleneck first. Prefetching overlaps stages, turning "
            "iteration time from the *sum* of the stages into their *maximum*. Mixed "
            "precision keeps master weights and sensitive reductions in FP32. FlashAttention "
            "tiles attention so the S×S matrix never reaches HBM. Gradient accumulation "
            "emulates a large batch from micro-batches; activation checkpointing trades "
            "recomputation for activation memory."),
        items=[
            C("sc5_q1", "A",
              "Profile: 40% data loading, 35% compute, 25% memory operations. What first?",
              ["data prefetching and pipeline overlap",
               "gradient checkpointing to shrink activations",
               "mixed precision to halve compute time",
               "FlashAttention to cut memory traffic"],
              hints=["Which slice of the profile is largest?"],
              explanation=("A. Target the dominant bottleneck, here the data path (40%); a "
                           "compute or memory fix leaves the GPU starved."),
              source="002 Self-Check 5 Q1 key: A"),
            N("sc5_q2", 2.1,
              "Free response turned numeric (prefetching, Q2). Fetch takes 20 ms, "
              "preprocessing 30 ms, host-to-device transfer 5 ms and compute 50 ms per batch, "
              "each stage on its own hardware. What speedup does a deep enough prefetch "
              "buffer give over the serial loop?",
              unit="× (ratio)", rel=1e-3,
              hints=["Serial: the stages add up. Overlapped: each iteration pays for one "
                     "stage only. Which one?"],
              explanation=("2.1× = (20+30+5+50)/max(20,30,5,50) = 105/50. It holds only if "
                           "the producers run on hardware independent of the consumer and the "
                           "buffer is deep enough that the next batch is ready when the "
                           "current one finishes."),
              source="recomputed: 105/50 = 2.1 (scenario numbers stated in the item)"),
            C("sc5_q3", "D",
              "Why does mixed precision keep master weights and some reductions in FP32?",
              ["Tensor Cores can only read FP32 inputs, so every 16-bit activation needs an "
               "FP32 mirror beside it",
               "to lower HBM bandwidth pressure, since FP32 values compress better than 16-bit "
               "ones in transfer",
               "only data parallelism needs it: AllReduce requires FP32 gradients, while "
               "single-device mixed-precision runs do not",
               "sensitive accumulations and updates lose precision or underflow in 16 bits, "
               "while bulk matmuls tolerate it"],
              hints=["What happens to a tiny update added to a large weight in FP16?"],
              explanation=("D. Small updates vanish when added to large weights in 16-bit "
                           "(a 10-bit mantissa resolves about 1 part in 1000), and long "
                           "reductions accumulate rounding error; keeping those in FP32 "
                           "protects stability while matmuls run fast in FP16/BF16."),
              source="002 Self-Check 5 Q3 key: D"),
            C("sc5_q4", "A",
              "What makes FlashAttention faster and more memory-efficient than standard "
              "attention?",
              ["tiling keeps score/probability blocks in on-chip SRAM, never writing the S×S "
               "matrix to HBM",
               "it replaces the softmax with a cheaper ReLU, so the attention weights are only "
               "approximated",
               "it truncates training sequences to shorter windows, so the S×S matrix itself "
               "gets smaller",
               "the S×S matrix is computed once, stored in HBM and reused across all heads and "
               "layers"],
              hints=["Same math, different memory traffic."],
              explanation=("A. IO-aware tiling with an online softmax: HBM traffic for the "
                           "score matrix drops from O(S²) to O(S) in memory, moving attention "
                           "toward the compute-bound side of the roofline."),
              source="002 Self-Check 5 Q4 key: A"),
            C("sc5_q5", "C",
              "Effective batch 512 is wanted but only micro-batch 16 fits. Which combination "
              "emulates 512 and also reduces activation pressure?",
              ["FlashAttention + stronger weight decay (AdamW)",
               "deeper data prefetching + elementwise operator fusion",
               "gradient accumulation + activation checkpointing",
               "linear learning-rate scaling + cosine annealing"],
              hints=["One technique sums gradients, the other frees stored activations."],
              explanation=("C. Accumulate gradients over 512/16 = 32 micro-batches before "
                           "each optimizer step; checkpointing recomputes activations to "
                           "free their memory."),
              source="002 Self-Check 5 Q5 key: C; 512/16 = 32"),
            N("sc5_q6", 1.28784,
              "Free response turned numeric (iterate after a win, Q6). In the chapter's GPT-2 "
              "pipeline (Example 1.1) tokenization takes 65.536 ms per batch on one core and "
              "is already overlapped with an 84.4 ms accelerator step. Mixed precision cuts "
              "compute time by 38%. What end-to-end speedup does the team actually see?",
              unit="× (ratio)", rel=1e-3,
              hints=["With overlap, the step time is the slower of the two stages - before "
                     "and after the win.", "Compute after the win: 84.4 × (1 - 0.38) ms."],
              explanation=("1.288× = 84.4 / max(65.536, 84.4 × 0.62 = 52.33) = 84.4/65.536, "
                           "not 1/0.62 = 1.61×: the tokenizer is now the slowest stage, so the "
                           "run became data-bound. Re-profile; the next fix is more "
                           "tokenization workers, not more compute optimization."),
              source="recomputed: 84.4/max(65.536, 84.4*0.62) = 1.287842"),
            L("sc5_q6_label", "data-bound",
              "After that mixed-precision win, which D·A·M class now limits the run?",
              ["compute-bound", "memory-bound", "data-bound", "communication-bound"],
              hints=["Compare the two stage times after the win."],
              explanation=("data-bound: 65.5 ms of tokenization now exceeds 52.3 ms of "
                           "compute."),
              source="recomputed: 65.536 ms > 84.4*0.62 = 52.33 ms"),
        ],
        reflections=[
            R("sc5_q2_reflect",
              "Q2 in words: why does prefetching turn the sum of the stage times into "
              "their maximum, and what condition must hold?",
              "While the accelerator computes on batch i, the CPU already fetches and "
              "preprocesses batch i+1 (and the copy engine transfers it), so each iteration "
              "pays only for the slowest stage instead of all of them in series. It requires "
              "producers on hardware independent of the consumer (CPU workers, DMA) and a "
              "buffer deep enough that the next batch is ready when the current one ends; the "
              "slowest stage must still keep up on average."),
        ],
    ),
    dict(
        id="sc6", title="Self-Check 6 — scaling beyond one device (002 §1.6)",
        partial=False,
        recap=(
            "Data parallelism replicates the model and splits the batch (one gradient "
            "AllReduce per step); model/pipeline parallelism splits the layers and suffers "
            "bubbles unless micro-batches fill the pipeline: bubble fraction "
            "(p-1)/(m+p-1) for p stages and m micro-batches. Ring AllReduce moves "
            "2(N-1)/N · S bytes per GPU. Go multi-device only after single-machine "
            "optimizations, when a hard limit (memory, wall clock, dataset) remains."),
        items=[
            C("sc6_q1", "D",
              "A 1.5B model fits on one accelerator but an epoch takes 14 h; the team needs "
              "< 4 h and has 8 accelerators in one node. First step?",
              ["model parallelism: split the layers over the 8 accelerators so each holds one "
               "eighth of the model",
               "switch Adam to SGD on one accelerator: dropping the optimizer state makes each "
               "step several times faster",
               "naive pipeline parallelism: all 8 stages compute concurrently, so the epoch "
               "time drops about 8×",
               "data parallelism: the model fits, so one AllReduce per step costs less than "
               "pipeline bubbles"],
              hints=["Is the binding constraint memory or time?"],
              explanation=("D. The model fits, so the constraint is time: data parallelism "
                           "scales throughput with one gradient AllReduce per step. 14 h / 4 h "
                           "needs a speedup of 3.5 on 8 GPUs, i.e. only 44% scaling "
                           "efficiency. Model parallelism is for memory overflow."),
              source="002 Self-Check 6 Q1 key: D; 14/(8*4) = 0.4375"),
            C("sc6_q2", "B",
              "Why does naive model parallelism deliver only 25-50% utilization?",
              ["each GPU still stores the full optimizer state for every layer, so the update "
               "traffic saturates HBM and throttles the forward and backward kernels",
               "layer partitioning creates sequential dependencies: devices idle waiting for "
               "upstream activations (pipeline bubbles) until micro-batching fills them",
               "it removes batching: each device processes one example at a time, so its "
               "kernels are too small to fill the SMs and approach peak",
               "it stores the whole dataset on each node, so every device spends most of each "
               "step reading training data from local disk instead of computing"],
              hints=["With one batch in flight, how many stages work at any moment?"],
              explanation=("B. With p stages and one batch, one stage works at a time: "
                           "utilization 1/p, i.e. 50% for p=2 and 25% for p=4 (the quoted "
                           "range). Micro-batching (GPipe, 1F1B) overlaps them."),
              source="002 Self-Check 6 Q2 key: B; 1/p for p = 2..4"),
            N("sc6_q2_bubble", 16 / 19,
              "Predict, then verify: a 4-stage pipeline runs 16 micro-batches per step "
              "(GPipe/1F1B schedule). What fraction of the step is useful work (1 − bubble "
              "fraction)?",
              unit="fraction (0-1)", rel=1e-4,
              hints=["Bubble fraction = (p-1)/(m+p-1)."],
              explanation=("16/19 = 0.842: bubble = 3/(16+3) = 0.158. With one micro-batch it "
                           "would be 1/4 = 0.25 useful, the naive case above."),
              source="recomputed: 1 - 3/19 = 16/19 = 0.8421053"),
            N("sc6_q3", 0.0175,
              "Free response turned numeric (communication tax, Q3). The 1.5B model's BF16 "
              "gradients (3e9 bytes) are ring-AllReduced across 8 A100s over NVLink at "
              "300 GB/s per direction (latency ignored). How long does one AllReduce take?",
              unit="s", rel=1e-3,
              hints=["A ring AllReduce sends 2(N-1)/N × S bytes per GPU.",
                     "Divide by the per-direction bandwidth."],
              explanation=("0.0175 s = 2 × 7/8 × 3e9 B / 300e9 B/s. If the step's compute is, "
                           "say, 50 ms and this is not overlapped, the tax is 26% of the step; "
                           "across nodes on 50 GB/s InfiniBand it would be 105 ms, larger than "
                           "the compute. (The chapter's model answer says doubling devices "
                           "'doubles the data each device must exchange'; for a ring it is "
                           "2(N-1)/N·S, nearly constant per GPU - what grows is its share of a "
                           "shrinking per-GPU compute time.)"),
              source="recomputed: 2*(7/8)*3e9/300e9 = 0.0175 s (A100 NVLink 600 GB/s total)"),
            C("sc6_q4", "A",
              "70B parameters in FP16 need about 140 GB for weights alone; the largest "
              "accelerator has 80 GB. Which hard limit forces multi-device training?",
              ["memory exhaustion: the weights alone exceed one device",
               "wall-clock time only: one device would need years of training",
               "dataset scale: the corpus cannot fit in one node's storage",
               "numerical precision: a 70B model must train in FP32, not FP16"],
              hints=["Compare 70e9 × 2 bytes with 80 GB."],
              explanation=("A. 70e9 × 2 B = 140 GB > 80 GB before gradients, optimizer state "
                           "or activations: memory is the binding limit; weights must be "
                           "sharded (tensor/pipeline parallelism or ZeRO-3)."),
              source="002 Self-Check 6 Q4 key: A; 70e9*2 = 140e9 B"),
            C("sc6_q5", "D",
              "When should a team seriously consider multi-device training?",
              ["immediately, at project start: multi-device code is hard to retrofit later, so "
               "every run should begin distributed",
               "whenever the model uses Adam, since its two moments always exceed a single "
               "accelerator's memory",
               "as soon as single-GPU utilization exceeds 60%, because beyond that point one "
               "device has nothing left to optimize",
               "after mixed precision, accumulation, checkpointing and data-pipeline work, if a "
               "hard limit still remains"],
              hints=["The chapter orders single-machine optimizations before distribution."],
              explanation=("D. Exhaust the single-machine toolkit first; distribution adds "
                           "communication and debugging cost. (The key's 'Adam's 3× optimizer "
                           "state' is loose: Adam's two moments are 2× the FP32 weights, "
                           "8 B/param.)"),
              source="002 Self-Check 6 Q5 key: D"),
        ],
        reflections=[
            R("sc6_q3_reflect",
              "Q3 in words: what is the communication tax and when does it become binding?",
              "Every data-parallel step must exchange gradients (a ring AllReduce sends "
              "2(N-1)/N·S bytes per GPU). That volume per GPU stays nearly constant as GPUs "
              "are added while each GPU's compute per step shrinks (or stays fixed with weak "
              "scaling), so communication's share grows. It binds when AllReduce time "
              "exceeds what can be overlapped with backward compute: small models, slow "
              "links (Ethernet/InfiniBand between nodes), large N. GPT-3 on 1,024 V100s spent "
              "an estimated 30-40% of wall clock communicating (the chapter's footnote)."),
        ],
    ),
    dict(
        id="sc7", title="Self-Check 7 — fallacies and pitfalls (002 §1.7)",
        partial=True,
        recap=(
            "Scaling capacity without data overfits; distribution does not automatically "
            "speed up development; hyperparameters do not transfer across batch sizes "
            "(linear scaling rule: learning rate ∝ batch, up to the critical batch size); "
            "and the input pipeline is the most neglected bottleneck."),
        items=[
            C("sc7_q1", "B",
              "A 7B model does well on 100M examples; a 20B model on the same data is "
              "expected to do better. Most likely outcome?",
              ["linear improvement in validation loss with parameter count",
               "worse validation from overfitting, at ~3× the cost",
               "the same validation loss, at the same training cost",
               "better validation, but only once the optimizer is SGD"],
              hints=["Capacity grew, data did not."],
              explanation=("B. Capacity without matching data memorizes noise; the cost scales "
                           "with the model (20/7 = 2.9× the parameters)."),
              source="002 Self-Check 7 Q1 key: B"),
            C("sc7_q2", "C",
              "Which scenario shows that distributed training does not automatically speed "
              "up development?",
              ["faster per step always means faster experimentation, so 8 GPUs always cut "
               "iteration time about 8×",
               "BF16 training prevents data parallelism, because 16-bit gradients cannot be "
               "AllReduced across GPUs",
               "a communication-heavy model spends 30-50% of each step in AllReduce and gets "
               "only 4-6× on 8 GPUs",
               "activation checkpointing blocks gradient exchange, so a checkpointed model "
               "cannot use more than one GPU"],
              hints=["Which option describes overhead that grows with the device count?"],
              explanation=("C. If a fraction f of each 8-GPU step is un-overlapped AllReduce, "
                           "speedup = 8(1-f): f = 0.3 gives 5.6×, f = 0.5 gives 4×."),
              source="002 Self-Check 7 Q2 key: C; recomputed 8*(1-f)"),
            N("sc7_q3", 0.8,
              "Free response turned numeric (hyperparameter transfer, Q3). A run tuned at "
              "batch 512 with learning rate 0.1 moves to batch 4096. What learning rate does "
              "the linear scaling rule suggest (before warmup and critical-batch caveats)?",
              unit="(dimensionless)", rel=1e-6,
              hints=["Learning rate proportional to batch size."],
              explanation=("0.8 = 0.1 × 4096/512. Keeping 0.1 gives 8× fewer updates per "
                           "epoch with unchanged step size; such runs look healthy for days "
                           "and then fail to reach the baseline or diverge. Use warmup, and "
                           "stop scaling past the critical batch size."),
              source="recomputed: 0.1*4096/512 = 0.8"),
            C("sc7_q4", "D",
              "Which mistake is especially common when teams optimize only the accelerator "
              "side and skip end-to-end profiling?",
              ["keeping LayerNorm and softmax reductions in FP32 while matmuls run in BF16",
               "choosing AdamW with decoupled weight decay instead of plain SGD with Nesterov "
               "momentum",
               "using gradient accumulation to reach the target batch size on fewer GPUs",
               "assuming the input pipeline is fine and finding the GPU idle 30-50% of the time"],
              hints=["Which option is a pitfall rather than a recommended practice?"],
              explanation=("D. A neglected input pipeline can idle the accelerator 30-50% of "
                           "the time; FP32 LayerNorm, AdamW and accumulation are standard "
                           "practice."),
              source="002 Self-Check 7 Q4 key: D"),
        ],
        reflections=[
            R("sc7_q3_reflect",
              "Q3 in words: why can copying hyperparameters from batch 512 to batch 4096 "
              "waste days of compute?",
              "At 8× the batch there are 8× fewer updates per epoch; with the same learning "
              "rate the optimizer covers far less distance in weight space per epoch. The run "
              "looks healthy (loss falls, utilization high) and fails late - the chapter "
              "says 3-5 days in - by plateauing above the baseline or diverging. Re-tune: "
              "linear scaling (0.8 here) with warmup, up to the critical batch size."),
        ],
    ),
    dict(
        id="sc8", title="Self-Check 8 — summary (002 §1.8)",
        partial=False,
        recap=(
            "Find the binding lever with the iron law, confirm with a profile, fix that "
            "lever, re-profile. Exhaust single-machine optimizations before distributing. A "
            "utilization gain shortens the run, and with similar power draw it saves energy "
            "and money in proportion."),
        items=[
            C("sc8_q1", "B",
              "Which statement best captures the chapter's approach?",
              ["add GPUs until the run time is acceptable, then tune the data pipeline once it "
               "scales",
               "use the iron law to find the binding lever, profile, apply targeted fixes, "
               "re-profile",
               "prefer optimizer and hyperparameter changes over systems changes, which rarely "
               "pay off",
               "reduce model size first, since fewer parameters shrink every term of the iron "
               "law"],
              hints=["The chapter's method is a loop, not a single purchase."],
              explanation="B. Profile-driven, iron-law-guided, iterative optimization.",
              source="002 Self-Check 8 Q1 key: B"),
            N("sc8_q2", 1 / 3,
              "Free response turned numeric (single-machine techniques, Q2). Full activation "
              "checkpointing recomputes the forward pass once during backward. Counting "
              "forward = 2N and backward = 4N FLOPs per token, what fraction of extra compute "
              "does that add to a training step?",
              unit="fraction", rel=1e-3,
              hints=["Extra work = one more forward pass; baseline = forward + backward."],
              explanation=("1/3 = 2N / (2N + 4N): the chapter's 'roughly 33 percent "
                           "additional compute', bought for a large cut in activation memory. "
                           "MFU does not count this recomputation (HFU does)."),
              source="recomputed: 2/(2+4) = 0.3333"),
            C("sc8_q3", "C",
              "MFU rises from 30% to 60% on a 1024-GPU run, R_peak and dataset unchanged. "
              "How does this propagate?",
              ["time halves, but energy stays unchanged because power doubles",
               "nothing changes, since R_peak and the dataset are both fixed",
               "time roughly halves, and energy and cost drop in proportion",
               "time unchanged, but energy and cost double with the busier chips"],
              hints=["Energy = power × time at similar instantaneous power."],
              explanation=("C. T ∝ 1/η_hw: 30% → 60% halves T (ratio 0.30/0.60 = 0.5). At "
                           "similar power draw energy halves too, and per-GPU-hour cost with "
                           "it."),
              source="002 Self-Check 8 Q3 key: C; 0.3/0.6 = 0.5"),
        ],
        reflections=[
            R("sc8_q2_reflect",
              "Q2 in words: why exhaust single-machine optimizations before scaling out? "
              "Name two techniques and what they buy.",
              "Distribution adds communication overhead, debugging difficulty and "
              "infrastructure cost. Single-machine techniques often remove the binding "
              "constraint more cheaply: mixed precision raises R_peak (Tensor Cores) and "
              "halves bytes moved; activation checkpointing trades ~33% extra compute for a "
              "large activation-memory cut (about 70% in the chapter's GPT-2 example); "
              "gradient accumulation emulates large batches; prefetching and FlashAttention "
              "remove data and memory stalls. Scale out only when a hard limit remains."),
        ],
    ),
    dict(
        id="lesson", title="The lesson's checks (003 §5 Check 1, §8 Check 2)",
        partial=True,
        recap=(
            "Course convention for these items (the lesson's): mixed-precision Adam without "
            "an FP32 master copy = 2 + 2 + 8 = **12 bytes per parameter** of model state, "
            "activations ignored, A100 = 80 GB (decimal)."),
        items=[
            B("l1_fits", False,
              "Check 1. A 30B dense model, 4 A100-80GB. Can *any* combination of data, "
              "tensor and pipeline parallelism (or ZeRO-3) hold its model state (12 B/param) "
              "on these 4 GPUs?",
              hints=["Compare the total model state with the total memory of all 4 GPUs."],
              explanation=("False. 30e9 × 12 B = 360 GB of model state, but 4 × 80 GB = "
                           "320 GB in total: no split fits, before activations. The lesson's "
                           "reveal ('pipeline parallelism, possibly combined with tensor "
                           "parallelism') is wrong: with 4 stages each holds 90 GB > 80 GB, "
                           "and TP × PP = 4 gives the same 90 GB per GPU. Options: more GPUs, "
                           "CPU/NVMe offload (ZeRO-Offload), or fewer bytes per parameter "
                           "(8-bit Adam: 2+2+2 = 6 B/param → 45 GB per GPU)."),
              source="recomputed: 30e9*12 = 360e9 B > 4*80e9 = 320e9 B; lesson 003 §5"),
            N("l1_min_gpus", 5,
              "Check 1, continued. What is the smallest number of A100-80GB GPUs whose total "
              "memory holds the 30B model's state (perfect sharding, no activations)?",
              unit="GPUs", rel=0.0, integer=True,
              hints=["Divide and round up."],
              explanation=("5 = ceil(360 GB / 80 GB) = ceil(4.5); in practice more, because "
                           "activations, buffers and fragmentation also need room."),
              source="recomputed: ceil(360e9/80e9) = 5"),
            N("l2_weights", 94e9,
              "Check 2. Mixtral 8x7B (47B total parameters, 13B active per token) is served "
              "in BF16. How many bytes do its weights occupy?",
              unit="bytes", rel=1e-3,
              hints=["Every expert must be resident, not only the active ones."],
              explanation=("94e9 bytes = 47e9 × 2 B: more than one 80 GB A100, so even "
                           "inference needs at least 2 GPUs (11.75 GB per GPU on 8). Memory "
                           "follows total parameters, compute follows active ones: 47/13 = "
                           "3.6× more memory than the active count suggests."),
              source="recomputed: 47e9*2 = 94e9 B (lesson 003: 47B total, 13B active)"),
            N("l2_flops", 26e9,
              "Check 2, continued. About how many FLOPs does generating one token take "
              "(forward pass only, 2 FLOPs per active parameter)?",
              unit="FLOPs", rel=1e-3,
              hints=["Only the routed experts (the active parameters) do work for a token."],
              explanation=("26e9 FLOPs = 2 × 13e9, versus 94e9 for a dense 47B model: MoE "
                           "decouples compute (active) from memory (total). Decode is "
                           "memory-bandwidth bound anyway, so batching many requests "
                           "(continuous batching) is what raises throughput."),
              source="recomputed: 2*13e9 = 26e9 FLOPs"),
            L("l2_batching", "throughput",
              "Check 2, continued. A customer-service chatbot gets many concurrent short "
              "requests. Continuous batching mainly improves which metric?",
              ["latency", "throughput"],
              hints=["It keeps slots busy as short requests finish."],
              explanation=("throughput: refilling finished slots immediately keeps the GPU's "
                           "batch full; single-request latency is what speculative decoding "
                           "targets."),
              source="lesson 003 §8 Check 2 Q3"),
        ],
        reflections=[
            R("l2_reflect",
              "Check 2, Q2: would speculative decoding work well for the MoE chatbot? What "
              "could go wrong?",
              "It can: 13B active parameters per token are still costly, and a small dense "
              "draft model can propose tokens cheaply for one large verification pass. But "
              "the speedup depends on the acceptance rate, and a dense draft may approximate "
              "the specialized experts poorly; verifying k tokens also routes them to more "
              "experts, so the verification pass touches more weights than one decode step."),
        ],
    ),
    dict(
        id="mis", title="The lesson's five misconceptions, each disproved with numbers (003)",
        partial=False,
        recap="Predict each number first, then run the verification cell under it.",
        items=[
            N("m1_bytes", 840e9,
              "Misconception 1: 'parallelism is just data parallelism'. Model state of a 70B "
              "model at 12 B/param, which data parallelism must replicate on every GPU?",
              unit="bytes", rel=1e-3,
              hints=["12 bytes for each of the 70e9 parameters."],
              explanation=("840e9 bytes = 70e9 × 12 B, over 10× an 80 GB A100: data "
                           "parallelism cannot help; ZeRO-1 over 8 GPUs still needs "
                           "140 + 140 + 560/8 = 350 GB per GPU."),
              source="recomputed: 70e9*12 = 840e9 B (lesson 003 misconception 1)"),
            N("m2_allreduces", 96,
              "Misconception 2: 'tensor and pipeline parallelism are the same'. A 48-layer "
              "model with Megatron tensor parallelism does 2 all-reduces per layer in the "
              "forward pass. How many per forward pass? (A 4-stage pipeline does 3 "
              "point-to-point activation sends.)",
              unit="all-reduces", rel=0.0, integer=True,
              hints=["One after attention, one after the MLP, in every layer."],
              explanation=("96 = 2 × 48 collective operations inside the layers (TP), "
                           "against 3 sends between stages (PP): a fine-grained, "
                           "latency-critical pattern that needs NVLink versus a coarse one "
                           "that tolerates slower links."),
              source="recomputed: 2*48 = 96 (Megatron-LM, Shoeybi et al. 2019 §3)"),
            N("m3_speedup", 0.5,
              "Misconception 3: 'speculative decoding is fast because the small model is "
              "fast'. Draft length k = 5, the draft costs c = 0.2 of a target forward pass "
              "(the lesson's '~5× faster'), and the target accepts *no* draft token "
              "(α = 0). What is the walltime speedup over plain decoding?",
              unit="× (ratio)", rel=1e-3,
              hints=["Expected tokens per target pass: (1-α^(k+1))/(1-α). Speedup: that / "
                     "(k·c + 1)."],
              explanation=("0.5× (a slowdown): 1 token per round / (5 × 0.2 + 1) = 1/2. A fast "
                           "draft alone buys nothing; the gain comes from the target verifying "
                           "several accepted tokens in one pass: at α = 0.8, "
                           "(1-0.8^6)/0.2 = 3.69 tokens per pass → 1.84×."),
              source="recomputed: 1/(5*0.2+1) = 0.5 (Leviathan et al. 2023, Eq. for speedup)"),
            N("m4_flops", 1.04e12,
              "Misconception 4: 'GPUs in one machine communicate fast'. Moving 1 GB over "
              "A100 NVLink at 300 GB/s per direction (600 GB/s both directions), how many "
              "FLOPs could the A100 (312 TFLOP/s) have done meanwhile?",
              unit="FLOPs", rel=1e-3,
              hints=["Time = bytes / per-direction bandwidth; FLOPs = peak × time."],
              explanation=("1.04e12 FLOPs = 312e12 × (1e9 / 300e9 s = 3.33 ms). The lesson's "
                           "~1.7 ms and ~530 billion use the 600 GB/s bidirectional headline "
                           "(and round 1.67 ms up to 1.7): a one-way transfer gets half of "
                           "that, so the true cost is twice the lesson's figure."),
              source="recomputed: 312e12*1e9/300e9 = 1.04e12 (course convention: per direction)"),
            N("m5_util", 0.4625,
              "Misconception 5: 'continuous batching is just a bigger batch'. Static batch "
              "of 8 requests with output lengths [20, 45, 200, 15, 80, 150, 30, 200] tokens "
              "runs until the longest finishes. What fraction of slot-steps does useful work?",
              unit="fraction (0-1)", rel=1e-4,
              hints=["Useful slot-steps = sum of the lengths; total = 8 × the longest."],
              explanation=("0.4625 = 740 / (8 × 200): 53.75% of the slots are wasted. The "
                           "lesson's '22.5% wasted' counts only the two requests done by token "
                           "20 (2 × 180 / 1600); every request shorter than 200 wastes slots. "
                           "Continuous batching refills each slot at once, keeping the same "
                           "batch size near 100% useful."),
              source="recomputed: 740/1600 = 0.4625"),
        ],
        reflections=[],
    ),
    dict(
        id="locks", title="The lab's prediction locks (004 Parts 1-3)",
        partial=True,
        recap=("Lock in your prediction before you open the lab's sliders. These points are "
               "for answering: any True/False or label from the list earns them, because a "
               "prediction is a guess. The cell under the answers tells you at once whether "
               "each prediction was right."),
        items=[
            B("lock1", False,
              "Part 1 lock: moving from 8 to 64 GPUs cuts training time by exactly 8×.",
              hints=["What does not shrink when you add GPUs?"],
              explanation=("False. Communication (AllReduce time per GPU ~2(N-1)/N·S, nearly "
                           "constant, often over slower inter-node links), stragglers and "
                           "bubbles do not shrink with N, so scaling efficiency falls below 1."),
              source="lab plan 004 Part 1 lock"),
            L("lock2", "unchanged",
              "Part 2 lock: pipeline parallelism changes the *total* memory of the model "
              "weights summed over the whole cluster how?",
              ["increases", "decreases", "unchanged"],
              hints=["Does a pipeline stage hold a copy of the other stages' layers?"],
              explanation=("unchanged: p stages each hold 1/p of the layers, so the sum is one "
                           "model; per-GPU weight memory drops by p. Data parallelism, by "
                           "contrast, multiplies the total by the number of replicas."),
              source="lab plan 004 Part 2 lock"),
            N("lock2_microbatches", 28,
              "Part 2 bubble gauge: with 4 pipeline stages, what is the smallest number of "
              "micro-batches that keeps the bubble fraction (p-1)/(m+p-1) *below* 10%?",
              unit="micro-batches", rel=0.0, integer=True,
              hints=["Solve 3/(m+3) < 0.1 for an integer m."],
              explanation=("28: 3/(28+3) = 0.097 < 0.1, while m = 27 gives exactly 3/30 = "
                           "0.10. More micro-batches per step (or interleaved stages) reclaim "
                           "the idle cycles."),
              source="recomputed: 3/(m+3) < 0.1 <=> m > 27 -> 28"),
            B("lock3", True,
              "Part 3 lock: with 5% straggler nodes, asynchronous SGD achieves higher raw "
              "samples per second than synchronous SGD.",
              hints=["Who waits for whom in each scheme?"],
              explanation=("True for raw throughput: synchronous SGD waits for the slowest "
                           "worker every step, asynchronous SGD does not. But stale gradients "
                           "cost statistical efficiency, which is why the lab compares it with "
                           "ZeRO and keeps synchronous updates."),
              source="lab plan 004 Part 3 lock"),
        ],
        reflections=[],
    ),
]


# ============================================================================= outputs
def all_items(graded_only=True):
    for sec in SECTIONS:
        for item in sec["items"]:
            if not graded_only or item["qid"] not in UNGRADED:
                yield sec, item


def build_questions() -> dict:
    """Every question of 07 for the packaged keys. A graded item is packaged with its
    format only (no key, hints or explanation: its answer is in the hidden test alone);
    warm-ups and reflections keep their instant feedback."""
    out = {}
    for sec in SECTIONS:
        for item in list(sec["items"]) + list(sec["reflections"]):
            kind = item["kind"]
            graded = kind != "reflection" and item["qid"] not in UNGRADED | COMPLETION
            opts = {"choice": ABCD, "label": tuple(item.get("labels", ()))}.get(kind, ())
            texts = tuple(item["options"]) if kind == "choice" else ()
            q = make_question(
                item["qid"], kind, item.get("answer"), prompt=item["prompt"], options=opts,
                option_texts=texts, rel=item.get("rel", 1e-6) or 1e-9,
                abs_tol=0.5 if item.get("integer") else 0.0, unit=item.get("unit", ""),
                hints=item.get("hints", ()), explanation=item["explanation"],
                reveal_after=1 if kind == "reflection" else 2, section=sec["title"],
                source=item.get("source", "") if kind == "reflection" else "",
                variable=item.get("var", ""), graded=graded,
                integer=bool(item.get("integer")))
            out[q.qid] = q.to_dict()
    return out


def keys_json() -> str:
    data = {"source": ("Self-check keys for assignment 07 and instant feedback, built by "
                       "tools/build_selfcheck_keys.py from the chapter 002 (Self-Checks 1-8), "
                       "the lesson plan 003 (Checks 1-2, misconceptions) and the lab plan 004 "
                       "(prediction locks). Graded items carry their format only (kind, unit, "
                       "range); warm-ups and reflections carry salted hashes or obfuscated "
                       "numbers."),
            "format": 1, "questions": build_questions()}
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _md(text: str) -> list:
    return ["# " + ln if ln else "#" for ln in text.splitlines()]


def _literal(item) -> str:
    a = item["answer"]
    if item["kind"] == "number":
        if item.get("integer"):
            return str(int(a))
        return repr(float(a))
    return repr(a)


def _stub(item) -> str:
    kind = item["kind"]
    return {"choice": 'None  # a letter: "A", "B", "C" or "D"',
            "bool": "None  # True or False",
            "label": "None  # one of: " + ", ".join(repr(x) for x in item.get("labels", ())),
            "order": "None  # a list of item numbers, e.g. [2, 1, 3]",
            "number": "None  # a number in " + item.get("unit", "")}[kind]


def _hidden(item) -> str:
    """The hidden case of one item (coursekit/grading/cases.py): the answer and its source
    stay in notebooks/07_self_checks.py; the kernel only records the student's value."""
    var, src = item["var"], item["source"]
    if item["qid"] in COMPLETION:  # a prediction lock: any answer in the asked form counts
        allowed = {"bool": "isinstance(value, bool)",
                   "label": f"value in {tuple(item.get('labels', ()))!r}"}[item["kind"]]
        return (f"# {src}; graded on completion: a prediction is a guess (answer: "
                f"{_literal(item)})\n"
                f"ck.case({var!r}, lambda: {var}, expect=ck.satisfies(lambda value: "
                f"{allowed}), name={var!r})")
    if item["kind"] == "number" and not item.get("integer"):
        expect = f"ck.approx({_literal(item)}, rel={item['rel']!r})"
    else:
        expect = f"ck.exactly({_literal(item)})"
    return (f"# {src}\n"
            f"ck.case({var!r}, lambda: {var}, expect={expect}, name={var!r})")


VERIFY = {
    # Only cells that print ingredients, never a graded answer or the last step to it
    # (a graded item has no local oracle: DESIGN.md section 7).
    "l2_weights": [
        "# Verify with coursekit (ungraded): does Mixtral's BF16 weight set fit one A100?",
        "from coursekit.hardware import get_accelerator",
        "_cap = get_accelerator('A100-80GB').memory_bytes",
        "print(f'A100 capacity: {_cap / 1e9:.0f} GB; 8 GPUs: {8 * _cap / 1e9:.0f} GB')",
    ],
}


def notebook_py() -> str:
    total = sum(2 if it["qid"] in TWO_POINTS else 1 for _, it in all_items())
    out = [
        "# %% [markdown]",
        *_md(
            "# Assignment 07 — Self-checks: the chapter's quizzes and the lesson's checks\n"
            "\n"
            "**Follows:** chapter 002 Self-Checks 1–8 (§1.1–§1.8); lesson plan 003 Checks 1–2 "
            "and its five misconceptions; lab plan 004 prediction locks.\n"
            "\n"
            "**Objectives.** Review the whole chapter as a quiz sheet; turn the free-response "
            "questions into numbers you can compute; predict, then verify with `coursekit`; "
            "notice where a source's own answer key is wrong and why.\n"
            "\n"
            f"**Time:** about 90 minutes. **Points:** {total}.\n"
            "\n"
            "**How to answer.** Each part ends with one answer cell: replace each `None` with "
            "your answer (a letter string such as `\"B\"`, `True`/`False`, a label string from "
            "the list given, a list such as `[2, 1, 3]`, or a number in the unit given, in base "
            "SI units: bytes, seconds, FLOPs), then delete the `raise NotImplementedError()` "
            "line. The cell under it checks the *form* of each answer at once (a whole number "
            "where one is asked, a fraction and not a percent, bytes and not GB), never "
            "whether it is right: graded answers are marked only by the autograder, after "
            "you submit.\n"
            "\n"
            "**Grading.** Your grade comes only from the autograder's hidden tests. The "
            "ungraded warm-ups and reflections give instant feedback (a hint for a wrong "
            "answer, the explanation once it is right, or after two tries). Free-response "
            "questions appear twice: as a graded numeric or label variant, and as an "
            "ungraded reflection whose model answer appears after you write an attempt."),
        "",
        "# %% [setup]",
        "# Setup: imports. In Colab this installs coursekit first if it is missing "
        "(no restart needed).",
        "{{COURSEKIT_SETUP}}",
        "import numpy as np",
        "from coursekit.grading import checks as ck",
        "from coursekit.grading import selfcheck as sc",
        "",
    ]
    for sec in SECTIONS:
        items = [it for it in sec["items"] if it["qid"] not in UNGRADED]
        extra = [it for it in sec["items"] if it["qid"] in UNGRADED]
        # A chapter section's recap restates the formulas its items ask for: it follows the
        # answer cell (review), while a convention or an instruction comes first (issue #15).
        recap_after = sec["id"].startswith("sc")
        body = [f"## {sec['title']}", ""] + (
            [] if recap_after else [f"**Recap.** {sec['recap']}", ""])
        for n, it in enumerate(items, 1):
            body.append(f"**{it['var']}.** {it['text']}")
            if it["kind"] == "choice":
                body.append("")
                body += [f"- **{L_}** {t}" for L_, t in zip(ABCD, it["options"])]
            elif it["kind"] == "label":
                body.append(f"Answer with one of: {', '.join('`' + x + '`' for x in it['labels'])}.")
            elif it["kind"] == "number" and it.get("integer"):
                body.append(f"*Answer: a whole number (an int) of {it['unit']}.*")
            elif it["kind"] == "number":
                body.append(f"*Answer unit: {it['unit']}; 3 significant digits are enough.*")
            body.append("")
        out += ["# %% [markdown]", *_md("\n".join(body).rstrip()), ""]
        tag = f"[answer id=ans_{sec['id']}{' partial' if sec['partial'] else ''}]"
        out.append(f"# %% {tag}")
        for it in items:
            out.append(f"{it['var']} = {_stub(it)}")
        out.append("### BEGIN SOLUTION")
        for it in items:
            out.append(f"{it['var']} = {_literal(it)}")
        out.append("### END SOLUTION")
        out.append("")
        lead = ("# Your predictions: right or wrong at once (graded on completion only)."
                if all(it["qid"] in COMPLETION for it in items) else
                "# Format check: is each answer written the way the autograder reads it? "
                "(Not whether it is right.)")
        out += ["# %%", lead,
                "sc.show_all({" + ", ".join(f"{it['qid']!r}: {it['var']}" for it in items)
                + "});", ""]
        if recap_after:
            out += ["# %% [markdown]", *_md(f"**Recap (read after you answer).** "
                                            f"{sec['recap']}"), ""]
        for it in items:
            if it["qid"] in VERIFY:
                out += ["# %%", *VERIFY[it["qid"]], ""]
        for it in extra:
            out += ["# %% [markdown]", *_md(f"**Warm-up (ungraded, instant feedback).** "
                                            f"{it['text']}"), "",
                    "# %%", f"sc.widget({it['qid']!r})", ""]
        for it in items:
            pts = 2 if it["qid"] in TWO_POINTS else 1
            out += [f"# %% [test id=test_{it['qid']} points={pts}]",
                    f"# Visible test: checks the form of {it['var']}, not whether it is right.",
                    f"sc.require_format({it['qid']!r}, {it['var']})",
                    "### BEGIN HIDDEN TESTS", _hidden(it), "### END HIDDEN TESTS", ""]
        for r in sec["reflections"]:
            out += ["# %% [markdown]", *_md(f"**Reflection (ungraded).** {r['text']} Write "
                                            "your answer in the box and press *Check* to see "
                                            "the model answer."), "",
                    "# %%", f"sc.widget({r['qid']!r})", ""]
    out += [
        "# %% [markdown]",
        *_md("## Summary\n"
             "\n"
             "- The iron law splits training time into work, peak and utilization; every "
             "optimization moves one of them, and a profile tells you which one binds.\n"
             "- Staged pipelines run at their slowest stage once overlapped, at the sum of their "
             "stages otherwise; a win on one stage can hand the bottleneck to another.\n"
             "- MFU counts forward **and** backward model FLOPs (Def 1.4), never recomputation.\n"
             "- Several source answers were corrected here (MFU's numerator, the 30B-on-4-A100 "
             "check, NVLink's per-direction bandwidth, static-batching waste), and one is "
             "ambiguous (run A: saturated HBM at 92% utilization; the course's rule keeps the "
             "chapter's compute-bound): always recompute a number before you trust it.\n"
             "\n"
             "**Reflection (ungraded).** Which of your predictions was furthest off, and which "
             "mental model would have given you the right number?"),
        "",
    ]
    return "\n".join(out)


COMPLETION = {"lock1", "lock2", "lock3"}
"""The lab's prediction locks: graded on completion (any answer in the asked form earns the
point: grading a guess on correctness punishes honesty), with instant feedback on whether
the prediction was right (issue #15 item 4)."""

TWO_POINTS: set = set()
UNGRADED = {"sc5_q6_label", "sc6_q2_bubble", "l2_batching", "lock2_microbatches", "l2_flops"}
"""Items asked only through instant-feedback widgets (keeps the total near 50 points)."""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if an output is stale")
    args = p.parse_args(argv)
    outputs = {KEYS_PATH: keys_json(), NOTEBOOK_PATH: notebook_py()}
    stale = [path for path, text in outputs.items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            sys.stderr.write(f"stale: {path.relative_to(ROOT)}\n")
        return 1 if stale else 0
    for path, text in outputs.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
