"""training/memory.py against the chapter, the lesson plan and the papers."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.models import get_model
from coursekit.training import memory as mem


def test_recipes_from_components():
    # DESIGN conventions: 16 / 16 / 12 / 18 bytes per parameter
    assert mem.get_recipe("fp32+adam").bytes_per_param == 16
    assert mem.get_recipe("mixed+adam").bytes_per_param == 16
    assert mem.get_recipe("mixed+adam-no-master").bytes_per_param == 12
    assert mem.get_recipe("megatron").bytes_per_param == 18
    assert mem.get_recipe("fp32+sgd").bytes_per_param == 8
    assert mem.get_recipe("fp32+momentum").bytes_per_param == 12
    custom = mem.Recipe("8bit-adam", 2, 2, 4, 2)
    assert mem.model_state_bytes(1e9, custom).total == 10e9


def test_chapter_static_memory():
    # chapter Napkin 1.2: 1.5B fp32 + Adam: 6 + 6 + 12 = 24 GB
    s = mem.model_state_bytes(1.5e9, "fp32+adam")
    assert (s.weights, s.gradients, s.optimizer, s.total) == (6e9, 6e9, 12e9, 24e9)
    # chapter Def 1.1: 7B at 12 B/param = 84 GB; at 16 B/param = 112 GB
    assert mem.model_state_bytes(7e9, "mixed+adam-no-master").total == 84e9
    assert mem.model_state_bytes(7e9, "mixed+adam").total == 112e9
    # chapter: 20B at 16 bytes/param = 320 GB
    assert mem.model_state_bytes(20e9, "mixed+adam").total == 320e9
    # lesson plan: 70B x 12 bytes = 840 GB
    assert mem.model_state_bytes(70e9, "mixed+adam-no-master").total == 840e9


def test_zero_paper_figure1():
    # Rajbhandari et al. 2020, Fig. 1: 7.5B params, 64 GPUs, K=12: 120 / 31.4 / 16.6 / 1.9 GB
    got = [mem.zero_bytes_per_gpu(7.5e9, 64, s).total / 1e9 for s in range(4)]
    assert got == [120.0, 31.40625, 16.640625, 1.875]
    assert [round(g, 1) for g in got] == [120.0, 31.4, 16.6, 1.9]


def test_lesson_zero1_on_8_gpus():
    # lesson plan: 140 (weights) + 140 (grads) + 560/8 (optimizer) = 350 GB
    s = mem.zero_bytes_per_gpu(70e9, 8, 1, "mixed+adam-no-master")
    assert (s.weights, s.gradients, s.optimizer, s.total) == (140e9, 140e9, 70e9, 350e9)


def test_korthikanti_activations():
    # Korthikanti et al. 2022: sbh(34 + 5as/h); chapter Napkin 1.3's attention-score term
    # 5 * 25 * 1024^2 * 8 = 1048.6 MB is exactly the 5as/h part
    full = mem.activation_bytes_per_layer(1024, 8, 1600, 25)
    selective = mem.activation_bytes_per_layer(1024, 8, 1600, 25, recompute="selective")
    assert full == 1_494_220_800
    assert full - selective == 5 * 25 * 1024**2 * 8 == 1_048_576_000
    # x 48 layers = 71.7 GB, the chapter's Napkin 1.3 total
    assert round(48 * full / 1e9, 1) == 71.7
    # tensor parallel t=8: sbh(10 + 24/8 + 5as/(8h)); sequence parallel: sbh(34/8 + ...)
    tp = mem.activation_bytes_per_layer(1024, 8, 1600, 25, tp=8)
    assert tp == pytest.approx(1024 * 8 * 1600 * (10 + 3 + 5 * 25 * 1024 / (1600 * 8)))
    sp = mem.activation_bytes_per_layer(1024, 8, 1600, 25, tp=8, sequence_parallel=True)
    assert sp == pytest.approx(1024 * 8 * 1600 * (34 / 8 + 5 * 25 * 1024 / (1600 * 8)))
    assert mem.activation_bytes_per_layer(1024, 8, 1600, 25, recompute="full") == 2 * 1024 * 8 * 1600


def test_activation_bytes_pipeline_and_interleave():
    m = get_model("gpt2-1.5b")
    one = mem.activation_bytes_per_layer(1024, 4, 1600, 25)
    assert mem.activation_bytes(m, 1024, 4) == 48 * one
    assert mem.activation_bytes(m, 1024, 4, pp=4) == 48 * one  # first stage: L layers' worth
    # interleaved 1F1B with v=2: x (1 + (p-1)/(p v)) = 1 + 3/8
    assert mem.activation_bytes(m, 1024, 4, pp=4, interleave=2) == pytest.approx(48 * one * 1.375)


def test_napkin_1_6_recomputed():
    # chapter Napkin 1.6 (GPT-2 XL rounded to 1.5e9, batch 4): 95.7 -> 59.9 GB
    act16 = 48 * mem.activation_bytes_per_layer(1024, 4, 1600, 25)
    assert round(act16 / 1e9, 1) == 35.9
    fp32 = mem.model_state_bytes(1.5e9, "fp32+adam").total + 2 * act16
    mixed = mem.model_state_bytes(1.5e9, "mixed+adam").total + act16
    assert round(fp32 / 1e9, 1) == 95.7 and round(mixed / 1e9, 1) == 59.9


def test_checkpointing_table15():
    # chapter Table 15: sqrt(48) = 6.93 checkpoints -> 13.86 units, 71% saved
    k = mem.optimal_checkpoints(48)
    assert k == pytest.approx(6.928, abs=1e-3)
    units = mem.checkpoint_memory(48, k)
    assert units == pytest.approx(13.856, abs=1e-3)
    assert round(1 - units / 48, 2) == 0.71
    assert mem.checkpoint_memory(48, 7) == pytest.approx(7 + 48 / 7)


def test_kv_cache():
    # GPT-2 small: 2 * 12 layers * 12 heads * 64 * 2 bytes = 36,864 B/token
    assert mem.kv_cache_bytes("gpt2-124m", 1) == 36_864
    # Llama-2-70B GQA: 2 * 80 * 8 * 128 * 2 = 327,680 B/token
    assert mem.kv_cache_bytes(get_model("llama2-70b"), 1) == 327_680
    assert mem.kv_cache_bytes("llama2-7b", 4096, batch=2) == 2 * 2**31


def test_training_memory_and_fit():
    tm = mem.training_memory("llama2-7b", micro_batch=1, seq_len=2048, recipe="mixed+adam")
    assert tm.model_state == mem.model_state_bytes(6_738_415_616, "mixed+adam").total
    assert not tm.fits("A100-80GB") and tm.headroom("A100-80GB") < 0
    small = mem.training_memory("gpt2-124m", micro_batch=1, seq_len=1024)
    assert small.fits("A100-80GB")
    assert math.isclose(small.total, small.as_dict()["total"])
    assert mem.effective_batch(16, 4, 8) == 512  # chapter Napkin 1.8


@pytest.mark.parametrize("call,match", [
    (lambda: mem.model_state_bytes(-1), "n_params must be >= 0"),
    (lambda: mem.model_state_bytes(1e9, "adam"), "recipe='adam'.*mixed\\+adam"),
    (lambda: mem.zero_bytes_per_gpu(1e9, 8, 4), "stage=4.*0, 1, 2, 3"),
    (lambda: mem.zero_bytes_per_gpu(1e9, 0, 1), "dp must be >= 1"),
    (lambda: mem.activation_bytes_per_layer(0, 1, 768, 12), "seq_len must be >= 1"),
    (lambda: mem.activation_bytes_per_layer(1024, 1, 768, 12, recompute="some"),
     "recompute='some'"),
    (lambda: mem.checkpoint_memory(48, 0), "k must be > 0"),
    (lambda: mem.checkpoint_memory(48, 49), "k=49"),
    (lambda: mem.kv_cache_bytes("gpt2-124m", -5), "seq_len must be >= 0"),
])
def test_bad_input_names_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=60, deadline=None)
@given(n=st.floats(1e6, 1e12), dp=st.integers(1, 1024),
       recipe=st.sampled_from(sorted(mem.RECIPES)))
def test_more_sharding_or_gpus_never_increases_memory(n, dp, recipe):
    totals = [mem.zero_bytes_per_gpu(n, dp, s, recipe).total for s in range(4)]
    assert all(a >= b for a, b in zip(totals, totals[1:]))
    for s in range(4):
        assert mem.zero_bytes_per_gpu(n, dp + 1, s, recipe).total <= totals[s]


@settings(max_examples=60, deadline=None)
@given(s=st.integers(1, 8192), b=st.integers(1, 64), heads=st.sampled_from([8, 12, 16, 32]),
       hd=st.sampled_from([64, 128]), t=st.sampled_from([1, 2, 4, 8]), sp=st.booleans())
def test_recompute_never_increases_activations(s, b, heads, hd, t, sp):
    h = heads * hd
    kw = dict(tp=t, sequence_parallel=sp)
    none = mem.activation_bytes_per_layer(s, b, h, heads, **kw)
    sel = mem.activation_bytes_per_layer(s, b, h, heads, recompute="selective", **kw)
    full = mem.activation_bytes_per_layer(s, b, h, heads, recompute="full", **kw)
    assert none >= sel >= full > 0


def test_checkpointed_activation_bytes_precise_rule():
    # GPT-2 XL at batch 4 (s = 1024, h = 1600, a = 25): one layer 747,110,400 B (Korthikanti
    # Table 2: sbh(34 + 5as/h)), a checkpoint 2sbh = 13,107,200 B; 16 B/param x 1.5e9 = 24 GB
    layer = mem.activation_bytes_per_layer(1024, 4, 1600, 25)
    ckpt = mem.activation_bytes_per_layer(1024, 4, 1600, 25, recompute="full")
    assert (layer, ckpt) == (747_110_400, 13_107_200)
    state = mem.model_state_bytes(1.5e9, "mixed+adam").total
    k = mem.optimal_checkpoints(48)
    # issue #15: about 29 GB with the sqrt(N) schedule and 25 GB with every layer, both
    # under 32 GB; the chapter's crude rule gives 34.4 GB
    assert (state + mem.checkpointed_activation_bytes(48, k, layer, ckpt)) / 1e9 == \
        pytest.approx(29.267, abs=1e-3)
    assert (state + mem.checkpointed_activation_bytes(48, 48, layer, ckpt)) / 1e9 == \
        pytest.approx(25.376256)
    assert (state + 48 * layer * mem.checkpoint_memory(48, k) / 48) / 1e9 == \
        pytest.approx(34.352, abs=1e-3)
    with pytest.raises(ValueError, match="k=49"):
        mem.checkpointed_activation_bytes(48, 49, layer, ckpt)


# -- issue #17: the attention kernel, and the allocator's peak ------------------------

def test_attention_kernel_option():
    # eager stays the default: Korthikanti sbh(34 + 5as/h), every number above unchanged
    eager = mem.activation_bytes_per_layer(1024, 8, 1600, 25)
    assert mem.activation_bytes_per_layer(1024, 8, 1600, 25, attention="eager") == eager
    # a fused kernel saves O (already the output projection's input) and one fp32
    # logsumexp per query and head (Dao et al. 2022 §3.1): 34sbh + 4asb
    sdpa = mem.activation_bytes_per_layer(1024, 8, 1600, 25, attention="sdpa")
    assert sdpa == 34 * 1024 * 8 * 1600 + 4 * 25 * 1024 * 8 == 446_464_000
    assert mem.activation_bytes_per_layer(1024, 8, 1600, 25, attention="flash") == sdpa
    assert eager - sdpa == 5 * 25 * 1024**2 * 8 - 4 * 25 * 1024 * 8
    # tensor / sequence parallel split the heads: logsumexp / t
    assert mem.activation_bytes_per_layer(1024, 8, 1600, 25, tp=8, attention="sdpa") == \
        pytest.approx(1024 * 8 * 1600 * (10 + 3) + 4 * 25 * 1024 * 8 / 8)
    assert mem.activation_bytes_per_layer(1024, 8, 1600, 25, tp=8, sequence_parallel=True,
                                          attention="sdpa") == \
        pytest.approx(1024 * 8 * 1600 * 34 / 8 + 4 * 25 * 1024 * 8 / 8)
    # selective and full recomputation store no attention core with either kernel
    for rc in ("selective", "full"):
        assert mem.activation_bytes_per_layer(1024, 8, 1600, 25, recompute=rc,
                                              attention="sdpa") == \
            mem.activation_bytes_per_layer(1024, 8, 1600, 25, recompute=rc)
    m = get_model("gpt2-1.5b")
    assert mem.activation_bytes(m, 1024, 8, attention="sdpa") == 48 * sdpa
    tm = mem.training_memory(m, micro_batch=8, seq_len=1024, attention="sdpa")
    assert tm.activations == 48 * sdpa
    assert mem.training_memory(m, micro_batch=8, seq_len=1024).activations == 48 * eager
    with pytest.raises(ValueError, match="attention='xformers'.*'eager', 'sdpa', 'flash'"):
        mem.activation_bytes_per_layer(1024, 8, 1600, 25, attention="xformers")


@settings(max_examples=60, deadline=None)
@given(s=st.integers(1, 8192), b=st.integers(1, 64), heads=st.sampled_from([8, 12, 16, 32]),
       hd=st.sampled_from([64, 128]), t=st.sampled_from([1, 2, 4, 8]), sp=st.booleans())
def test_fused_attention_never_keeps_more(s, b, heads, hd, t, sp):
    # 4asb/t <= 5as^2b/t for every s >= 1
    kw = dict(tp=t, sequence_parallel=sp)
    h = heads * hd
    assert mem.activation_bytes_per_layer(s, b, h, heads, attention="sdpa", **kw) <= \
        mem.activation_bytes_per_layer(s, b, h, heads, **kw)


def test_inventory_is_korthikanti_in_its_own_regime():
    # pure bf16, eager, dropout, fused GELU, d_ff = 4h: the per-tensor inventory adds up to
    # sbh(34 + 5as/h) exactly (Korthikanti et al. 2022 Eq. 1), and with SDPA to 34sbh + 4asb
    for kernel in ("eager", "sdpa"):
        terms = mem.saved_bytes_per_layer_terms("gpt2-1.5b", 1024, 8, precision="bf16",
                                                attention=kernel)
        assert sum(terms.values()) == mem.activation_bytes_per_layer(1024, 8, 1600, 25,
                                                                     attention=kernel)
    sel = mem.saved_bytes_per_layer_terms("gpt2-1.5b", 1024, 8, precision="bf16",
                                          recompute="selective")
    assert sum(sel.values()) == mem.activation_bytes_per_layer(1024, 8, 1600, 25,
                                                               recompute="selective")
    # HF's gelu_new as tensor ops saves 3 more 4h-wide bf16 tensors: +24 sbh
    py = mem.saved_bytes_per_layer_terms("gpt2-1.5b", 1024, 8, precision="bf16",
                                         gelu="python-tanh")
    assert sum(py.values()) - sum(mem.saved_bytes_per_layer_terms(
        "gpt2-1.5b", 1024, 8, precision="bf16").values()) == 24 * 1024 * 8 * 1600


@pytest.mark.parametrize("size,precision,attn,b,saved", [
    # autograd's saved-tensor bytes (saved_tensor_bytes, all dtypes) measured on the H200:
    # ../shared/data/h200-gpt2/measurements.json, section A, no checkpointing
    ("gpt2-124m", "bf16-autocast", "eager", 1, 2_327_213_580),
    ("gpt2-124m", "bf16", "sdpa", 1, 757_960_908),
    ("gpt2-355m", "fp32", "eager", 8, 53_667_930_116),
    ("gpt2-355m", "bf16-autocast", "sdpa", 8, 19_742_468_484),
    ("gpt2-1.5b", "bf16", "eager", 8, 88_540_946_436),
    ("gpt2-1.5b", "bf16-autocast", "sdpa", 8, 59_000_854_404),
])
def test_saved_tensor_inventory_matches_autograd_on_the_h200(size, precision, attn, b, saved):
    # every term of the derivation table, summed: within 0.05% (what is left out is the
    # LayerNorm statistics, token ids and the attention mask, O(s*b))
    p = mem.training_peak_memory(size, micro_batch=b, seq_len=1024, precision=precision,
                                 attention=attn, gelu="python-tanh")
    assert p.saved == pytest.approx(saved, rel=5e-4)
    assert p.saved <= saved


def test_logits_and_autocast_copies():
    # one fp32 s x b x V tensor: GPT-2 at s = 1024, b = 1: 205,852,672 B (the H200 data's
    # logits_fp32_bytes)
    assert mem.logits_bytes(1024, 1, 50257) == 205_852_672
    assert mem.logits_bytes(1024, 1, 50257, bytes_per_value=2) == 102_926_336
    # bf16 copies of the GEMM weights: 2 x (12 x (768*2304 + 768^2 + 2*768*3072) + 50257*768)
    assert mem.autocast_weight_copy_bytes("gpt2-124m") == 247_064_064
    p = mem.training_peak_memory("gpt2-124m", micro_batch=4, seq_len=1024,
                                 precision="bf16-autocast", attention="sdpa")
    q = mem.training_peak_memory("gpt2-124m", micro_batch=4, seq_len=1024,
                                 precision="fp32", attention="sdpa")
    assert p.model_state == q.model_state == 16 * 124_439_808  # no master copy
    assert p.phase == "loss backward" and p.live == p.saved + 2 * mem.logits_bytes(1024, 4,
                                                                                  50257)
    assert p.activation_peak == p.peak - p.model_state
    kept = mem.training_peak_memory("gpt2-124m", micro_batch=4, seq_len=1024,
                                    grads_set_to_none=False)
    assert kept.live == p.live + p.gradients


@pytest.mark.parametrize("call,exc,match", [
    (lambda: mem.training_peak_memory("gpt2-124m", micro_batch=1, seq_len=1024,
                                      precision="fp16"), ValueError, "precision='fp16'"),
    (lambda: mem.training_peak_memory("llama2-7b", micro_batch=1, seq_len=1024),
     ValueError, "model='llama2-7b'.*GPT-2 block"),
    (lambda: mem.training_peak_memory("gpt2-124m", micro_batch=1, seq_len=1024,
                                      gelu="erf"), ValueError, "gelu='erf'"),
    (lambda: mem.training_peak_memory("gpt2-124m", micro_batch=0, seq_len=1024),
     ValueError, "micro_batch must be >= 1"),
    (lambda: mem.training_peak_memory("gpt2-124m", micro_batch=1, seq_len=1024,
                                      dropout=0.1), TypeError, "dropout must be True"),
    (lambda: mem.logits_bytes(1024, 1, 0), ValueError, "vocab_size must be >= 1"),
])
def test_peak_model_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
