"""Tests for coursekit.parallel.advisor: the 3D-parallelism plan search.

Published configurations compared against (comments give the sources):
* GPT-3 175B on 1024 A100-80GB (DGX A100: 8 GPUs/node, NVLink 3, 8x HDR 200 Gb/s per
  node), batch 1536, seq 2048: Megatron-LM (Narayanan et al. 2021, Table 1 / §5.1) runs
  models of this size with tp = 8 and pp = 8-16 (145.6B: tp 8, pp 8; 310B: tp 8, pp 16).
* BLOOM 176B on 384 A100-80GB (48 nodes of 8, Omni-Path 4x100 Gb/s per node), batch
  2048, seq 2048: tp = 4, pp = 12, dp = 8, ZeRO-1 (BigScience 2022, BLOOM paper §3.4).
* Llama 2 70B: Meta did not publish its layout; the lesson plan (003 §7) says tp = 8
  inside a node plus ZeRO-style sharding with data parallelism outermost.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.hardware import Link, get_link
from coursekit.models import TransformerConfig, get_model
from coursekit.parallel import advisor as A
from coursekit.units import GB, GBIT, US


@pytest.fixture(scope="module")
def gpt3_job():
    return A.make_job("gpt3-175b", 1024, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                      1536, 2048)


@pytest.fixture(scope="module")
def gpt3_advice(gpt3_job):
    return A.advise(gpt3_job)


BLOOM = TransformerConfig(
    "bloom-176b", 70, 14336, 112, 112, 4 * 14336, 250880, 2048, bias=True,
    tied_embeddings=True, position_embedding="rope",
    source="BigScience 2022 (BLOOM), Table 3: 70 layers, 112 heads, hidden 14336")
JEAN_ZAY_OPA = Link("OmniPath-4x100-per-GPU", 4 * 100 * GBIT / 8, 2 * US,
                    "Jean Zay: 4 x 100 Gb/s Omni-Path per 8-GPU node = 6.25 GB/s per GPU")


def test_gpt3_175b_top_plan_is_megatron_like(gpt3_advice):
    best = gpt3_advice.best.plan
    assert best.tp == 8  # tensor parallel fills the NVLink node
    assert best.zero_stage <= 1
    # the three best layouts all keep tp = 8 inside the node and pipeline across nodes
    for r in gpt3_advice.plans[:3]:
        assert r.plan.tp == 8 and r.plan.tp * r.plan.pp > 8
    # Narayanan et al. 2021: pp 8-16 at this scale. pp = 4, 8 and 16 are within 1% of
    # each other here (pp = 4 leads at 79.7 of 80 GB since issue #17 added the stage
    # imbalance, memory-bound ops and measured link efficiencies); the best pp 8-16
    # plan must stay within 2% of the best.
    megatron = min(r.step_time for r in gpt3_advice.plans
                   if r.plan.tp == 8 and r.plan.pp in (8, 16))
    assert megatron / gpt3_advice.best.step_time < 1.02
    # model-FLOPs MFU close to the 44-47% of peak Narayanan et al. report (which count
    # the recomputation too, so their number is the upper end)
    assert 0.40 < gpt3_advice.best.mfu < 0.5


def test_placement_rules_and_fit(gpt3_job, gpt3_advice):
    cap = gpt3_job.accelerator.memory_bytes
    for r in gpt3_advice.plans:
        p = r.plan
        assert r.fits and r.memory_bytes <= cap  # nothing recommended that does not fit
        assert p.tp <= gpt3_job.gpus_per_node  # tp inside a node
        assert p.dp * p.tp * p.pp == 1024
        assert p.dp * p.micro_batch * p.n_micro == 1536
        assert 0 < r.mfu <= 1
        assert sum(r.breakdown().values()) == pytest.approx(r.step_time, rel=1e-12)
    for r in gpt3_advice.rejected:
        assert r.reason and not r.fits
    reasons = {r.reason for r in gpt3_advice.rejected}
    assert "tp=16 spans 2 nodes of 8 GPUs" in reasons
    assert any(x.startswith("needs ") and x.endswith("> 80 GB") for x in reasons)
    step = [r.step_time for r in gpt3_advice.plans]
    assert step == sorted(step)


def test_bloom_published_layout(tmp_path):
    # BLOOM paper §3.4: tp=4, pp=12, dp=8, ZeRO-1 on 384 GPUs (70 layers on 12 stages,
    # so stages are uneven).
    job = A.make_job(BLOOM, 384, "A100-80GB", 8, "NVLink-A100", JEAN_ZAY_OPA, 2048, 2048,
                     uneven_stages=True)
    adv = A.advise(job)
    assert adv.best.plan.pp == 12 and adv.best.plan.zero_stage == 1
    published = A.evaluate_plan(job, A.Plan(8, 4, 12, 1, 1, 256, "selective"))
    assert published.fits
    assert published.step_time / adv.best.step_time < 1.10  # within 10% of the best
    strict = A.make_job(BLOOM, 384, "A100-80GB", 8, "NVLink-A100", JEAN_ZAY_OPA, 2048, 2048)
    assert A.evaluate_plan(strict, A.Plan(8, 4, 12, 1, 1, 256)).reason == \
        "pp=12 does not divide the 70 layers"


def test_llama2_70b_uses_tp8_and_sharded_optimizer():
    job = A.make_job("llama2-70b", 2048, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                     1024, 4096)
    adv = A.advise(job)
    assert adv.best.plan.tp == 8 and adv.best.plan.zero_stage >= 1
    assert adv.best.plan.dp >= 64


def test_small_models_stay_simple():
    # chapter 002 Table 22: < 1B parameters -> a single GPU; GPT-2 124M fits with room
    job = A.make_job("gpt2-124m", 8, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR", 64, 1024)
    best = A.advise(job).best.plan
    assert (best.tp, best.pp, best.dp) == (1, 1, 8)


def test_evaluate_plan_matches_advise(gpt3_job, gpt3_advice):
    for r in gpt3_advice.plans[:5] + gpt3_advice.plans[-3:]:
        again = A.evaluate_plan(gpt3_job, r.plan)
        assert again.step_time == pytest.approx(r.step_time, rel=1e-12)
        assert again.memory_bytes == pytest.approx(r.memory_bytes, rel=1e-12)


def test_step_time_pieces_gpt3(gpt3_job):
    # no recompute: compute = 1536*2048*(6N + 12*L*h*s) / (1024 * 312e12 * efficiency)
    r = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "none"))
    m = get_model("gpt3-175b")
    eff = A.MEGATRON_A100_EFFICIENCY  # the default (was 0.5 before issue #17)
    flops = 1536 * 2048 * (6 * m.n_params + 12 * 96 * 12288 * 2048)
    assert r.compute == pytest.approx(flops / (1024 * 312e12 * eff), rel=1e-12)
    assert r.bubble_fraction == pytest.approx(7 / 103)
    # the last stage (12 layers + the output layer) sets the pace: compute + memory-bound
    # + imbalance = m x its micro-batch time; the bubble fills and drains the other 7
    # stages once (8 average stage times minus the slowest, plus their tp all-reduces)
    slowest = (r.compute + r.memory_bound + r.imbalance) / 96
    average = (r.compute + r.memory_bound) / 96  # compute is the average stage's
    assert r.bubble == pytest.approx(8 * average - slowest + 7 * r.tp_comm / 96, rel=1e-9)
    assert 0 < r.imbalance < 0.05 * r.compute
    # tp: 96/8 layers x 96 micro-batches x 4 all-reduces of 2048*12288*2 bytes over 8 GPUs
    # at NVLink-A100's measured 232.54 GB/s (nccl-tests issue #175), 2 us per hop
    ar = 1.75 * 2048 * 12288 * 2 / 232.54e9 + 14 * 2e-6
    assert r.tp_comm == pytest.approx(12 * 96 * 4 * ar, rel=1e-12)
    # with ideal links (link_efficiency=1.0) the old 300 GB/s number comes back
    ideal = A.make_job("gpt3-175b", 1024, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                       1536, 2048, link_efficiency=1.0)
    r1 = A.evaluate_plan(ideal, A.Plan(16, 8, 8, 1, 1, 96, "none"))
    ar1 = 1.75 * 2048 * 12288 * 2 / 300e9 + 14 * 2e-6
    assert r1.tp_comm == pytest.approx(12 * 96 * 4 * ar1, rel=1e-12)
    assert r1.step_time < r.step_time


def test_memory_uses_training_memory():
    # ZeRO-1 over dp=16 with tp*pp = 64: state = P/8 * (2 + 2 + 12/16) bytes, where P is
    # the busiest stage's parameters: 12 layers plus the token and position embedding of
    # the first stage (issue #17: no longer an even split of all N over the 8 stages)
    job = A.make_job("gpt3-175b", 1024, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                     1536, 2048)
    r = A.evaluate_plan(job, A.Plan(16, 8, 8, 1, 1, 96, "full"))
    m = get_model("gpt3-175b")
    first = 12 * m.layer_params() + 50257 * 12288 + 2048 * 12288
    assert r.memory.model_state == pytest.approx(first / 8 * 4.75, rel=1e-12)
    assert first > m.n_params / 8  # the embedding makes the first stage the heaviest
    # full recompute keeps 2*s*b*h per layer; 1F1B: 96 layers' worth of one micro-batch
    assert r.memory.activations == pytest.approx(2 * 2048 * 12288 * 96, rel=1e-12)
    # fewer micro-batches than stages -> fewer in flight
    job2 = A.make_job("gpt3-175b", 64, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                      4, 2048)
    r2 = A.evaluate_plan(job2, A.Plan(1, 8, 8, 0, 1, 4, "full"))
    assert r2.memory.activations == pytest.approx(2 * 2048 * 12288 * 96 * 4 / 8)
    # pp = 1: all parameters, as before
    r3 = A.evaluate_plan(job, A.Plan(128, 8, 1, 1, 1, 12, "full"))
    assert r3.memory.model_state == pytest.approx(m.n_params / 8 * (4 + 12 / 128))


@settings(max_examples=50, deadline=None)
@given(stage=st.integers(0, 2), dp=st.sampled_from([2, 4, 8, 16]),
       recompute=st.sampled_from(["none", "selective", "full"]))
def test_more_zero_sharding_never_increases_memory(stage, dp, recompute):
    job = A.make_job("llama2-7b", dp, "H100-SXM", 8, "NVLink-H100", "InfiniBand-NDR",
                     dp * 4, 4096)
    a = A.evaluate_plan(job, A.Plan(dp, 1, 1, stage, 1, 4, recompute))
    b = A.evaluate_plan(job, A.Plan(dp, 1, 1, stage + 1, 1, 4, recompute))
    assert b.memory_bytes <= a.memory_bytes


def test_zero_with_pipeline_rejected_in_words(gpt3_job):
    r = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 2, 1, 96))
    assert not r.fits and "ZeRO-2 with pp=8" in r.reason
    assert math.isnan(r.step_time)


def test_nothing_fits_gives_empty_advice():
    job = A.make_job("gpt3-175b", 1, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR", 8, 2048)
    adv = A.advise(job)
    assert adv.best is None and adv.plans == ()
    assert all("needs" in r.reason for r in adv.rejected)


def test_bad_input(gpt3_job):
    with pytest.raises(ValueError, match="n_gpus=1024"):
        A.evaluate_plan(gpt3_job, A.Plan(8, 8, 8))
    with pytest.raises(ValueError, match="global_batch"):
        A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 5))
    with pytest.raises(ValueError, match="link"):
        A.make_job("gpt3-175b", 8, "A100-80GB", 8, "NVLink-A100", "ethernet-cable", 8, 2048)
    with pytest.raises(ValueError, match="n_gpus"):
        A.make_job("gpt3-175b", 0, "A100-80GB", 8, "NVLink-A100", "10GbE", 8, 2048)
    with pytest.raises(ValueError, match="zero_stage"):
        A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 4, 1, 96))
    with pytest.raises(ValueError, match="recompute"):
        A.advise(gpt3_job, recompute=("sometimes",))
    with pytest.raises(TypeError):
        A.advise("gpt3-175b")


def test_table_and_divisors(gpt3_advice):
    rows = gpt3_advice.table(3)
    assert len(rows) == 3 and set(rows[0]) >= {"dp", "tp", "pp", "GB/GPU", "MFU %"}
    assert A.divisors(96) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96]
    assert np.all(np.diff(A.divisors(1024)) > 0)
    assert GB == 1e9


# -- issue #17: interleaving, ZeRO-3 gathers, stage imbalance, link efficiency, why ------

def test_interleaved_schedule_divides_the_bubble_and_multiplies_p2p(gpt3_job):
    # Narayanan et al. 2021 §2.2.2: v chunks per GPU divide the bubble by v and multiply
    # the pipeline's point-to-point traffic by v (96 layers, pp 8: 12 per GPU, 6 a chunk)
    one = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "full"))
    two = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "full", 2))
    assert two.fits and str(two.plan).startswith("dp=16 tp=8 pp=8 v=2 ")
    assert two.bubble_fraction == pytest.approx(7 / (2 * 96 + 7))
    assert two.bubble == pytest.approx(one.bubble / 2, rel=1e-12)
    assert two.compute == one.compute and two.tp_comm == one.tp_comm
    # one more send forward and backward per micro-batch: 2 x 96 x (b*s*h*2/tp bytes over
    # InfiniBand HDR at its measured 24 GB/s + 2 us); tp*pp = 64 GPUs span nodes
    p2p = 2 * 96 * (2048 * 12288 * 2 / 8 / 24e9 + 2e-6)
    assert two.pp_comm - one.pp_comm == pytest.approx(p2p, rel=1e-9)
    # Korthikanti et al. 2022 §4.2.3: activations x (1 + (p-1)/(p*v))
    assert two.memory.activations == pytest.approx(one.memory.activations * (1 + 7 / 16))


def test_interleave_rules_in_words(gpt3_job):
    why = A.evaluate_plan(gpt3_job, A.Plan(128, 8, 1, 1, 1, 12, "full", 2)).reason
    assert why == "interleave=2 needs pipeline parallelism (pp=1)"
    why = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "full", 5)).reason
    assert "do not split into pp x v = 8 x 5" in why
    why = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 32, 3, "full", 2)).reason
    assert "m=3 micro-batches is not a multiple of pp=8" in why
    with pytest.raises(ValueError, match="interleave"):
        A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "full", 0))
    with pytest.raises(ValueError, match="interleave"):
        A.advise(gpt3_job, interleave=(0,))


def test_interleaving_pays_at_small_batch():
    # Narayanan et al. 2021 Figure 12: GPT-3 175B on 96 GPUs (tp 8, pp 12, micro-batch
    # 1, examples/sc21/run_figure_12.sh: v = 4); the interleaved schedule is faster and
    # the gap closes as the batch grows
    gain = []
    for batch in (12, 60):
        job = A.make_job("gpt3-175b", 96, "A100-80GB", 8, "NVLink-A100",
                         "InfiniBand-HDR", batch, 2048)
        v1 = A.evaluate_plan(job, A.Plan(1, 8, 12, 0, 1, batch, "full"))
        v4 = A.evaluate_plan(job, A.Plan(1, 8, 12, 0, 1, batch, "full", 4))
        gain.append(v1.step_time / v4.step_time)
    assert gain[0] > gain[1] > 1.0
    adv = A.advise(A.make_job("gpt3-175b", 96, "A100-80GB", 8, "NVLink-A100",
                              "InfiniBand-HDR", 12, 2048),
                   zero_stages=(0, 1), recompute=("full",), interleave=(1, 2, 4))
    assert adv.best.plan.interleave > 1
    for r in adv.plans:
        p = r.plan
        if p.interleave > 1:
            assert p.pp > 1 and p.n_micro % p.pp == 0 and (96 // p.pp) % p.interleave == 0
    assert all(r.plan.interleave == 1 for r in A.advise(
        adv.job, zero_stages=(0,), recompute=("full",)).plans)  # default: 1F1B only


def test_zero3_gathers_the_weights_three_times_with_full_recompute():
    # forward, recompute-forward, backward (Rajbhandari et al. 2020 §7.2.2 + full
    # activation recomputation); with nothing hidden (dp_overlap=0) the gathers are
    # exactly 3/2 of the no-recompute case, the gradient reduce-scatter unchanged
    job = A.make_job("llama2-7b", 16, "H100-SXM", 8, "NVLink-H100", "InfiniBand-NDR", 64,
                     4096, dp_overlap=0.0)
    full, none, sel = (A.evaluate_plan(job, A.Plan(16, 1, 1, 3, 1, 4, r))
                       for r in ("full", "none", "selective"))
    assert full.zero_comm == pytest.approx(1.5 * none.zero_comm, rel=1e-12)
    assert sel.zero_comm == pytest.approx(none.zero_comm, rel=1e-12)
    assert full.dp_comm == pytest.approx(none.dp_comm, rel=1e-12)


def test_last_stage_sets_the_pace(gpt3_job):
    # the last of 8 stages also runs the output layer (6*h*V FLOPs per token) and the
    # loss (fp32 logits s*b*V/t, 4 passes); the first also the position embedding's
    # share of 6N. The step pays m x (slowest - average stage).
    r = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "none"))
    rate = 8 * 312e12 * A.MEGATRON_A100_EFFICIENCY
    head = 6 * 12288 * 50257 * 2048 / rate + 4 * 4 * 2048 * 50257 / 8 / 2039e9
    first = 6 * (2048 * 12288 + 2 * 12288) * 2048 / rate
    assert r.imbalance == pytest.approx(96 * (head * 7 / 8 - first / 8), rel=1e-9)
    flat = A.evaluate_plan(gpt3_job, A.Plan(128, 8, 1, 1, 1, 12, "none"))
    assert flat.imbalance == 0.0  # one stage: nothing to wait for


def test_links_run_at_measured_efficiency(gpt3_job):
    assert gpt3_job.bandwidth(get_link("NVLink-A100")) == pytest.approx(232.54e9)
    assert gpt3_job.bandwidth(get_link("InfiniBand-HDR")) == pytest.approx(24e9)
    assert gpt3_job.bandwidth(JEAN_ZAY_OPA) == pytest.approx(6.25e9)  # none recorded: ideal
    half = A.make_job("gpt3-175b", 1024, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                      1536, 2048, link_efficiency=0.5)
    assert half.bandwidth(get_link("InfiniBand-HDR")) == pytest.approx(12.5e9)
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="link_efficiency"):
            A.make_job("gpt3-175b", 8, "A100-80GB", 8, "NVLink-A100", "10GbE", 8, 2048,
                       link_efficiency=bad)
    with pytest.raises(ValueError, match="attention"):
        A.make_job("gpt3-175b", 8, "A100-80GB", 8, "NVLink-A100", "10GbE", 8, 2048,
                   attention="magic")


def test_fused_attention_cuts_memory_bound_time(gpt3_job):
    fused = A.make_job("gpt3-175b", 1024, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR",
                       1536, 2048, attention="flash")
    plan = A.Plan(16, 8, 8, 1, 1, 96, "full")
    eager, flash = A.evaluate_plan(gpt3_job, plan), A.evaluate_plan(fused, plan)
    assert flash.memory_bound < 0.6 * eager.memory_bound
    assert flash.compute == eager.compute


def test_hfu_counts_recomputation(gpt3_job):
    none = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "none"))
    assert none.hfu == pytest.approx(none.mfu, rel=1e-12)
    full = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 1, 1, 96, "full"))
    assert 1.25 < full.hfu / full.mfu < 4 / 3


def test_breakdown_explains_a_choice(gpt3_job, gpt3_advice):
    rows = gpt3_advice.breakdown_table(3)
    assert [r["plan"] for r in rows] == [str(r.plan) for r in gpt3_advice.plans[:3]]
    parts = ("compute s", "memory-bound ops s", "stage imbalance s",
             "tensor-parallel comm s", "pipeline comm s", "pipeline bubble s",
             "data-parallel comm s", "ZeRO extra comm s")
    for row in rows:
        assert sum(row[k] for k in parts) == pytest.approx(row["step s"], rel=1e-12)
        assert 100 < row["TFLOP/s per GPU"] < 312
    alt = gpt3_advice.best_with(pp=16)
    assert alt is not None and alt.plan.pp == 16
    assert gpt3_advice.best_with(tp=16) is None
    text = A.explain_difference(alt, gpt3_advice.best)
    assert text.startswith(f"{alt.plan} is ") and " slower per step than " in text
    assert "pipeline bubble" in text
    again = A.compare_plans(gpt3_job, [alt.plan, gpt3_advice.best])
    assert again[0]["step s"] == pytest.approx(alt.step_time, rel=1e-12)
    rejected = A.evaluate_plan(gpt3_job, A.Plan(16, 8, 8, 2, 1, 96))
    assert A.compare_plans(gpt3_job, [rejected])[0]["reason"] == rejected.reason
    with pytest.raises(ValueError, match="rejected"):
        A.explain_difference(rejected, alt)
    with pytest.raises(ValueError, match="Plan field"):
        gpt3_advice.best_with(layers=8)
    with pytest.raises(TypeError):
        A.compare_plans(gpt3_job, ["dp=16"])
    assert gpt3_advice.table(1)[0]["v"] == 1
