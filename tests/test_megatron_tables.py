"""The advisor's cost model against Megatron-LM's published throughputs (issue #17).

Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (SC '21, arXiv:2104.04473):

* Table 1 (§5.1): weak scaling, 1.7B to 1T parameters on 32 to 3072 A100-80GB GPUs
  (Selene: DGX A100 nodes of 8 GPUs, NVLink/NVSwitch inside, 8 x HDR 200 Gb/s
  InfiniBand per node), vocabulary 51,200, sequence 2048, "the interleaved pipeline
  schedule with the scatter/gather optimization", activation recomputation.
  Micro-batch sizes and interleaving are not in the paper; they are in the authors'
  script for the table, NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (MBS, and
  --num-layers-per-virtual-pipeline-stage: v = layers per stage / that number;
  "--recompute-method uniform", i.e. full recomputation, in every row).
* Table 2 (§5.2): ZeRO-3 without model parallelism (DeepSpeed) against PTD-P, 174.6B
  (GPT-3: 96 layers, hidden 12288, 96 heads) and 529.6B (105 layers, hidden 20480, 128
  heads), global batch 1536 and 2240 (2560 for the starred 640-GPU row). PTD-P's
  model-parallel sizes 96 and 280 are tp = 8 with pp = 12 and 35; its interleaving is not
  stated: for 174.6B we use the authors' 175B interleaved setting (examples/sc21/
  run_figure_12.sh: tp 8, pp 12, MBS 1, 2 layers per virtual stage, v = 4), for 529.6B
  Table 1's (1 layer per virtual stage, v = 3).

"Achieved teraFLOP/s per GPU" is Eq. 3's FLOP count (full recomputation included) over
(step time x GPUs); ours is the same count over the advisor's predicted step time
(:func:`coursekit.parallel.advisor.megatron_flops`). All rows use the job defaults: the
two global constants MEGATRON_A100_EFFICIENCY (0.60) and DP_OVERLAP (0.7) and the
measured link efficiencies of coursekit.hardware; no row has a factor of its own.

Predictions (TFLOP/s per GPU, paper -> before -> after) for reference. Before issue #17:
2 ZeRO-3 gathers, ideal links, no interleaving (v = 1), even stages, no memory-bound
term, efficiency 0.5, dp_overlap 0.5. After: this module's defaults.

    Table 1   1.7B 137 -> 153.1 -> 149.8    3.6B 138 -> 148.7 -> 147.9
              7.5B 142 -> 142.5 -> 145.3   18.4B 135 -> 136.0 -> 138.3
             39.1B 138 -> 129.1 -> 135.0   76.1B 140 -> 127.4 -> 143.9
            145.6B 148 -> 125.5 -> 143.2  310.1B 155 -> 132.3 -> 150.1
            529.6B 163 -> 132.0 -> 152.9      1T 163 -> 133.2 -> 145.0
    Table 2 ZeRO-3 174.6B  384: 144 -> 147.8 -> 151.2   768: 88 -> 96.8 -> 86.4
                          1536:  44 ->  57.2 ->  46.5
            ZeRO-3 529.6B  640: 138 -> 146.9 -> 150.7  1120: 98 -> 96.1 -> 85.9
                          2240:  48 ->  56.8 ->  46.2
            PTD-P  174.6B  384: 153 -> 139.9 -> 150.7   768: 149 -> 135.7 -> 149.2
                          1536: 141 -> 128.2 -> 146.3
            PTD-P  529.6B  560: 171 -> 144.0 -> 157.7  1120: 167 -> 139.8 -> 156.1
                          2240: 159 -> 132.0 -> 152.9
"""

import math

import pytest

from coursekit.models import TransformerConfig
from coursekit.parallel import advisor as A

SEQ = 2048
VOCAB = 51200  # §5.1: "a vocabulary size (V) of 51,200 (multiple of 1024)"


def megatron_gpt(layers, hidden, heads):
    """A GPT model as Megatron-LM builds it: learned positions, tied embeddings, biases,
    LayerNorm, GeLU MLP of 4h (Narayanan et al. 2021, Eq. 2 counts exactly these)."""
    return TransformerConfig(
        f"megatron-gpt-{layers}x{hidden}", layers, hidden, heads, heads, 4 * hidden, VOCAB,
        SEQ, mlp="gelu", tied_embeddings=True, bias=True, norm="layernorm",
        position_embedding="learned", source="Narayanan et al. 2021, Table 1")


# (params B, heads, hidden, layers, tp, pp, GPUs, batch, micro-batch, v, TFLOP/s per GPU)
# Narayanan et al. 2021, Table 1, one tuple per row (columns as in the table); micro-batch
# and v from examples/sc21/run_table_1.sh.
TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 16, 1, 137),  # Table 1 row 1 (44% of peak)
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 16, 1, 138),  # row 2
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 16, 1, 142),  # row 3
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 8, 1, 135),  # row 4
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 4, 1, 138),  # row 5
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 2, 3, 140),  # row 6: 5 layers/virtual stage
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 2, 2, 148),  # row 7: 5 layers/virtual stage
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 1, 2, 155),  # row 8: 3 layers/virtual
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 1, 3, 163),  # row 9: 1 layer/virtual
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 1, 1, 163),  # row 10 (52% of peak)
]

# (scheme, params B, layers, hidden, heads, tp, pp, GPUs, batch, micro-batch, v,
#  TFLOP/s per GPU): Narayanan et al. 2021, Table 2, one tuple per row.
TABLE_2 = [
    ("ZeRO-3", 174.6, 96, 12288, 96, 1, 1, 384, 1536, 4, 1, 144),  # Table 2 row 1
    ("ZeRO-3", 174.6, 96, 12288, 96, 1, 1, 768, 1536, 2, 1, 88),  # row 2
    ("ZeRO-3", 174.6, 96, 12288, 96, 1, 1, 1536, 1536, 1, 1, 44),  # row 3 (issue: 57)
    ("ZeRO-3", 529.6, 105, 20480, 128, 1, 1, 640, 2560, 4, 1, 138),  # row 4 (batch 2560*)
    ("ZeRO-3", 529.6, 105, 20480, 128, 1, 1, 1120, 2240, 2, 1, 98),  # row 5
    ("ZeRO-3", 529.6, 105, 20480, 128, 1, 1, 2240, 2240, 1, 1, 48),  # row 6
    ("PTD-P", 174.6, 96, 12288, 96, 8, 12, 384, 1536, 1, 4, 153),  # row 7 (size 96)
    ("PTD-P", 174.6, 96, 12288, 96, 8, 12, 768, 1536, 1, 4, 149),  # row 8
    ("PTD-P", 174.6, 96, 12288, 96, 8, 12, 1536, 1536, 1, 4, 141),  # row 9
    ("PTD-P", 529.6, 105, 20480, 128, 8, 35, 560, 2240, 1, 3, 171),  # row 10 (size 280)
    ("PTD-P", 529.6, 105, 20480, 128, 8, 35, 1120, 2240, 1, 3, 167),  # row 11
    ("PTD-P", 529.6, 105, 20480, 128, 8, 35, 2240, 2240, 1, 3, 159),  # row 12
]

TOLERANCE = 0.15  # issue #17: every row within +-15% of the paper


def predicted_tflops(model, tp, pp, n_gpus, batch, micro, v, zero):
    """Eq. 3 FLOPs over the advisor's step time, per GPU, in TFLOP/s; and the report."""
    job = A.make_job(model, n_gpus, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                     batch, SEQ)
    dp = n_gpus // (tp * pp)
    report = A.evaluate_plan(job, A.Plan(dp, tp, pp, zero, micro, batch // (dp * micro),
                                         "full", v))
    assert report.reason == "", report.reason
    return A.megatron_flops(model, batch, SEQ) / (report.step_time * n_gpus) / 1e12, report


@pytest.mark.parametrize("row", TABLE_1, ids=[f"{r[0]}B" for r in TABLE_1])
def test_table_1_weak_scaling(row):
    size, heads, hidden, layers, tp, pp, n, batch, micro, v, paper = row
    model = megatron_gpt(layers, hidden, heads)
    # the model is the paper's: Table 1's parameter count (Eq. 2) to its rounding
    assert model.n_params / 1e9 == pytest.approx(size, abs=0.051 * max(1, size / 100))
    # Megatron-LM 2021 shards no optimizer state: ZeRO-0 (ZeRO-1 moves the same bytes)
    ours, report = predicted_tflops(model, tp, pp, n, batch, micro, v, zero=0)
    assert report.fits  # the published layout fits in 80 GB
    assert ours / paper == pytest.approx(1.0, abs=TOLERANCE), (
        f"{size}B: predicted {ours:.1f} TFLOP/s per GPU, paper {paper}")


@pytest.mark.parametrize("row", TABLE_2, ids=[f"{r[0]}-{r[1]}B-{r[7]}" for r in TABLE_2])
def test_table_2_zero3_vs_ptdp(row):
    scheme, size, layers, hidden, heads, tp, pp, n, batch, micro, v, paper = row
    model = megatron_gpt(layers, hidden, heads)
    assert model.n_params / 1e9 == pytest.approx(size, abs=0.1)
    zero = 3 if scheme == "ZeRO-3" else 0
    ours, report = predicted_tflops(model, tp, pp, n, batch, micro, v, zero)
    assert report.fits
    assert ours / paper == pytest.approx(1.0, abs=TOLERANCE), (
        f"{scheme} {size}B on {n}: predicted {ours:.1f} TFLOP/s per GPU, paper {paper}")


def test_the_calibration_is_global_and_centred():
    # the two global constants are calibrated, not per row: the geometric mean of
    # predicted/paper is 1 within 2% over Table 1 (efficiency) and over the six ZeRO-3
    # rows of Table 2 (dp_overlap)
    def ratios(rows, table):
        out = []
        for row in rows:
            if table == 1:
                _, heads, hidden, layers, tp, pp, n, batch, micro, v, paper = row
                zero = 0
            else:
                scheme, _, layers, hidden, heads, tp, pp, n, batch, micro, v, paper = row
                zero = 3
            ours, _ = predicted_tflops(megatron_gpt(layers, hidden, heads), tp, pp, n,
                                       batch, micro, v, zero)
            out.append(ours / paper)
        return out

    for r in (ratios(TABLE_1, 1), ratios(TABLE_2[:6], 2)):
        geo = math.exp(sum(math.log(x) for x in r) / len(r))
        assert geo == pytest.approx(1.0, abs=0.02)


def test_the_shape_of_table_2():
    # ZeRO-3 (no model parallelism) loses throughput per GPU as GPUs double at a fixed
    # batch, PTD-P barely does; at 1536 GPUs PTD-P is > 2.5x ZeRO-3 for 174.6B
    # (paper: 141 vs 44)
    def tf(row):
        scheme, _, layers, hidden, heads, tp, pp, n, batch, micro, v, _ = row
        return predicted_tflops(megatron_gpt(layers, hidden, heads), tp, pp, n, batch,
                                micro, v, 3 if scheme == "ZeRO-3" else 0)[0]

    zero3 = [tf(r) for r in TABLE_2[:3]]
    ptdp = [tf(r) for r in TABLE_2[6:9]]
    assert zero3[0] > 1.5 * zero3[1] > 2.25 * zero3[2]
    assert min(ptdp) > 0.9 * max(ptdp)
    assert ptdp[2] > 2.5 * zero3[2]


def test_zero3_communication_dominates_at_scale():
    # 174.6B, ZeRO-3 on 1536 GPUs, micro-batch 1: 3 weight all-gathers per micro-batch
    # (forward, recompute, backward) plus the gradient reduce-scatter, 4 x 349 GB per GPU
    # over 24 GB/s of InfiniBand HDR, far more than the 17 s of compute
    _, _, layers, hidden, heads, tp, pp, n, batch, micro, v, _ = TABLE_2[2]
    _, r = predicted_tflops(megatron_gpt(layers, hidden, heads), tp, pp, n, batch, micro,
                            v, 3)
    assert r.dp_comm + r.zero_comm > 2.5 * r.compute
    assert r.zero_comm == pytest.approx(3 * r.dp_comm, rel=0.01)  # 3 gathers : 1 scatter


def test_equation_4_training_time():
    # §5.1: the 1T model on 450B tokens with 3072 GPUs at 163 TFLOP/s per GPU takes
    # "84 days"; Eq. 4 approximates Eq. 3 by 8*T*P/(n*X)
    _, heads, hidden, layers, *_ = TABLE_1[-1]
    model = megatron_gpt(layers, hidden, heads)
    per_token = A.megatron_flops(model, 3072, SEQ) / (3072 * SEQ)
    assert per_token == pytest.approx(8 * model.n_params, rel=0.02)
    days = per_token * 450e9 / (3072 * 163e12) / 86400
    assert days == pytest.approx(84, abs=2)


def test_18b_on_256_gpus_tp_choice_explained():
    # Table 1 row 4 runs 18.4B with tp = 8, pp = 1, dp = 32. Under the paper's own
    # constraints (Megatron-LM 2021: fp32 gradients, no ZeRO, full recomputation) the
    # advisor's best is within 1% of that layout; allowed ZeRO and selective
    # recomputation (neither in that Megatron-LM), it picks a smaller tp, and the
    # breakdown says why: less tensor-parallel all-reduce and no recomputed forward.
    _, heads, hidden, layers, tp, pp, n, batch, micro, v, _ = TABLE_1[3]
    model = megatron_gpt(layers, hidden, heads)
    dp = n // (tp * pp)
    paper_plan = A.Plan(dp, tp, pp, 0, micro, batch // (dp * micro), "full")
    job = A.make_job(model, n, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR", batch, SEQ,
                     recipe="megatron")
    megatron = A.advise(job, zero_stages=(0,), recompute=("full",))
    paper = A.evaluate_plan(job, paper_plan)
    assert paper.fits
    assert paper.step_time / megatron.best.step_time < 1.01
    assert megatron.best_with(tp=8).step_time / megatron.best.step_time < 1.001
    # tp = 4 alone does not fit without ZeRO: 18.4B x 18 bytes / 4 > 80 GB
    assert megatron.best_with(tp=4, pp=1) is None

    free = A.advise(A.make_job(model, n, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                               batch, SEQ))
    best = free.best
    assert best.plan.tp < 8 and best.plan.zero_stage >= 1
    tp8 = A.evaluate_plan(free.job, A.Plan(32, 8, 1, 1, micro, 4, "full"))
    assert tp8.tp_comm - best.tp_comm > 0.1 * best.step_time
    assert tp8.compute - best.compute > 0.1 * best.step_time
    text = A.explain_difference(tp8, best)
    assert "tensor-parallel comm" in text and "compute" in text
