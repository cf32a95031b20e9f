"""Tests for coursekit.training.flops (chapter 002 = seeds/002_50d9d343ab1fbc28.txt)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.training import flops as F
from coursekit.units import DAY, GFLOP, HOUR, KWH, TFLOP, PFLOP


# -- Napkin 1.1: GPT-2 XL layer, B=32, S=1024, d=1600, 25 heads ----------------------

def napkin11():
    return F.layer_forward_flops(32, 1024, 1600, 25)


def test_napkin_1_1_components():
    lf = napkin11()
    # chapter 002 Napkin 1.1: QKV ~503 GFLOP; recomputed 2*3*32*1024*1600^2 = 503.31648e9
    assert lf.qkv == pytest.approx(503.31648e9, rel=1e-12)
    # Napkin 1.1: QK^T = 107 GFLOP; recomputed 2*32*25*1024^2*64 = 107.3741824e9
    assert lf.qk == pytest.approx(107.3741824e9, rel=1e-12)
    assert lf.attn_v == lf.qk
    # Napkin 1.1: pair total ~215 GFLOP
    assert lf.attention / GFLOP == pytest.approx(215, abs=0.5)
    # Napkin 1.1: output projection ~168 GFLOP; recomputed 2*32*1024*1600^2
    assert lf.out_proj == pytest.approx(167.77216e9, rel=1e-12)
    # Napkin 1.1: FFN 16*B*S*d^2 = 1342.18 GFLOP (recomputed)
    assert lf.ffn == pytest.approx(16 * 32 * 1024 * 1600**2, rel=1e-12)
    # Napkin 1.1: per-layer forward total ~2228.01 GFLOP
    assert lf.total / GFLOP == pytest.approx(2228.01, abs=0.01)
    assert set(lf.as_dict()) == {"qkv", "qk", "attn_v", "out_proj", "ffn"}


def test_napkin_1_1_step_and_v100_time():
    step = F.training_step_flops(32, 1024, 1600, 25, 48)
    # Napkin 1.1: ~320.8 TFLOP per training step (48 layers x 3)
    assert step / TFLOP == pytest.approx(320.8, abs=0.05)
    # Napkin 1.1: 50,000 steps ~16041.7 PFLOP
    assert 50_000 * step / PFLOP == pytest.approx(16041.7, abs=0.05)
    # Napkin 1.1 says 2.6 s on a 125 TFLOP/s V100; recomputed 320.834/125 = 2.567 s
    assert F.training_time(step, 125 * TFLOP) == pytest.approx(2.5667, abs=1e-4)


def test_layer_flops_d_ff_override():
    # recomputed: FFN = 4*B*S*d*d_ff
    lf = F.layer_forward_flops(1, 10, 8, 2, d_ff=16)
    assert lf.ffn == 4 * 10 * 8 * 16


# -- 6ND, PaLM model FLOPs, MFU / HFU ------------------------------------------------

def test_six_nd_llama2_70b():
    # chapter 002 Napkin 1.5: 6 x 70e9 x 2e12 = 8.4e23 FLOPs
    assert F.training_flops(70e9, 2e12) == pytest.approx(8.4e23, rel=1e-12)


def test_model_flops_per_token_palm():
    # PaLM App. B: 6N + 12*L*H*Q*T; recomputed for GPT-2 XL-like L=48, d=1600, T=1024
    assert F.model_flops_per_token(1.5e9) == 9e9
    assert F.model_flops_per_token(1.5e9, 48, 1600, 1024) == pytest.approx(
        9e9 + 12 * 48 * 1600 * 1024, rel=1e-12)
    # full recompute adds one forward: 8N (PaLM App. B / Korthikanti et al. 2022)
    assert F.hardware_flops_per_token(1.5e9, "full") == pytest.approx(12e9, rel=1e-12)
    assert F.hardware_flops_per_token(1.5e9) == 9e9


def test_def_1_4_mfu():
    # chapter 002 Def 1.4: 7B, 1,024 tokens/step, 1.2 s, 312 TFLOP/s -> ~11.5 %
    # recomputed: 6*7e9*1024 / (312e12*1.2) = 0.114872
    assert F.mfu(6 * 7e9 * 1024, 1.2, 312 * TFLOP) == pytest.approx(0.114872, abs=1e-6)


def test_example_1_3_mfu_vs_utilization():
    # chapter 002 Example 1.3 / Table 18: 1,200 tokens/s, GPT-2 1.5B, V100 125 TFLOP/s.
    # "85 % utilization" but MFU recomputed = 6*1.5e9*1200/125e12 = 0.0864
    assert F.mfu(6 * 1.5e9 * 1200, 1.0, 125 * TFLOP) == pytest.approx(0.0864, rel=1e-9)
    # with checkpointing (one extra forward, 2N/token) HFU = 8*1.5e9*1200/125e12 = 0.1152
    assert F.hfu(6 * 1.5e9 * 1200, 2 * 1.5e9 * 1200, 1.0, 125 * TFLOP) == pytest.approx(
        0.1152, rel=1e-9)


def test_palm_mfu_cluster():
    # recomputed: 4 FLOPs in 1 s on 4 devices = 1 FLOP/s each of a 4 FLOP/s peak
    assert F.mfu(4, 1.0, 4.0, n_devices=4) == pytest.approx(0.25)


# -- Napkin 1.5: rent vs buy ---------------------------------------------------------

def test_napkin_1_5_time_cost_break_even():
    c = F.training_flops(70e9, 2e12)
    one = F.training_time(c, 989 * TFLOP, 0.5)
    # Napkin 1.5: ~1.70e9 s = 53.8 years on one GPU
    assert one == pytest.approx(1.70e9, rel=0.005)
    assert one / (365.25 * DAY) == pytest.approx(53.8, abs=0.05)
    t = F.training_time(c, 989 * TFLOP, 0.5, n_devices=1024)
    # Napkin 1.5: 19.2 days on 1,024 GPUs
    assert t / DAY == pytest.approx(19.2, abs=0.05)
    rent = F.rental_cost(1024, t, 3.0)
    # Napkin 1.5: ~$1.42M rental
    assert rent == pytest.approx(1.42e6, rel=0.005)
    buy = F.purchase_cost(1024, 30_000)
    assert buy == 30_720_000  # Napkin 1.5: $30.7M
    # Napkin 1.5: 21.7 runs before buying is cheaper
    assert F.break_even_runs(buy, rent) == pytest.approx(21.7, abs=0.05)
    assert F.device_seconds(1024, t) / HOUR == pytest.approx(471_857, rel=1e-4)


# -- Napkin 1.11 and Table 19: energy, cost, carbon ----------------------------------

def test_napkin_1_11_energy():
    t = F.training_time(4.2e22, 156 * TFLOP, n_devices=1024)
    # Napkin 1.11: ~3.04 days = ~73 h
    assert t / HOUR == pytest.approx(73.03, abs=0.01)
    e = F.training_energy(1024, 400, t, n_hosts=128, host_watts=200)
    # Napkin 1.11: ~31,784.2 kWh
    assert e / KWH == pytest.approx(31_784.2, abs=0.1)
    # Napkin 1.11: household 35.3 months -> implies ~900 kWh/month (recomputed)
    assert e / KWH / 35.3 == pytest.approx(900, rel=0.001)
    # Napkin 1.11: doubling utilization halves energy; saves ~15,892.1 kWh and
    # "over 6.8 t" at an average grid intensity (0.43 kg/kWh, Table 19) -> 6.83 t
    assert F.carbon_emissions(e / 2, 0.43) == pytest.approx(6833.6, abs=0.1)


def test_table_19_cost_and_carbon():
    e = 3914 * KWH
    # chapter 002 Table 19: 3,914 kWh at $0.10/kWh = $391.4; 0.43 kg/kWh -> 1.7 t
    assert F.electricity_cost(e, 0.10) == pytest.approx(391.4, rel=1e-9)
    assert F.carbon_emissions(e, 0.43) == pytest.approx(1683.02, rel=1e-9)
    # Table 19 optimized: 2,348 kWh -> $234.8 and 1.01 t
    assert F.electricity_cost(2348 * KWH, 0.10) == pytest.approx(234.8, rel=1e-9)
    assert F.carbon_emissions(2348 * KWH, 0.43) / 1000 == pytest.approx(1.01, abs=0.005)


def test_pue_scales_energy():
    assert F.training_energy(1, 100, 10, pue=1.5) == pytest.approx(1500)


# -- Napkin 1.7: the slip ------------------------------------------------------------

def test_napkin_1_7_corrected():
    speedup = 220 / 90  # chapter 002 Napkin 1.7: "2.4x faster" (2.444x)
    # the chapter then reports 2 weeks -> 1.2 weeks, only 1.67x (slip).
    assert 2 / 1.2 == pytest.approx(1.667, abs=1e-3)
    # recomputed: 14 days / 2.444 = 5.727 days, cost $50,000 / 2.444 = $20,454.5
    assert F.speedup_corrected_time(14 * DAY, speedup) / DAY == pytest.approx(
        5.7273, abs=1e-4)
    assert F.speedup_corrected_time(50_000, speedup) == pytest.approx(20_454.55, abs=0.01)


# -- properties ----------------------------------------------------------------------

pos = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)


@settings(max_examples=50, deadline=None)
@given(n=pos, d=pos, k=st.integers(1, 64))
def test_six_nd_linear(n, d, k):
    assert F.training_flops(n * k, d) == pytest.approx(k * F.training_flops(n, d))


@settings(max_examples=50, deadline=None)
@given(o=pos, r=pos, eta=st.floats(0.01, 1.0), n=st.integers(1, 4096))
def test_iron_law_inverse(o, r, eta, n):
    t = F.training_time(o, r, eta, n)
    # MFU of a run that took exactly the iron-law time is eta
    assert F.mfu(o, t, r, n) == pytest.approx(eta, rel=1e-9)


@settings(max_examples=50, deadline=None)
@given(b=st.integers(1, 8), s=st.integers(1, 256), h=st.integers(1, 8),
       dh=st.integers(1, 32))
def test_layer_flops_total_and_hfu_ge_mfu(b, s, h, dh):
    lf = F.layer_forward_flops(b, s, h * dh, h)
    assert lf.total == pytest.approx(sum(lf.as_dict().values()))
    # recomputed: dense part 24*B*S*d^2 for d_ff = 4d
    assert lf.qkv + lf.out_proj + lf.ffn == pytest.approx(24 * b * s * (h * dh) ** 2)
    assert F.hfu(10.0, 1.0, 1.0, 100.0) >= F.mfu(10.0, 1.0, 100.0)


# -- bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("call, needle", [
    (lambda: F.training_flops(-1, 1e9), "n_params"),
    (lambda: F.training_flops(1e9, 0), "n_tokens"),
    (lambda: F.layer_forward_flops(32, 1024, 1600, 24), "divisible"),
    (lambda: F.layer_forward_flops(0, 1024, 1600, 25), "batch"),
    (lambda: F.training_time(1e20, 1e15, 1.5), "efficiency"),
    (lambda: F.training_time(1e20, 1e15, 0.5, n_devices=1.5), "n_devices"),
    (lambda: F.mfu(1e12, 0, 1e15), "step_time"),
    (lambda: F.hardware_flops_per_token(1e9, "half"), "recompute"),
    (lambda: F.training_energy(8, 400, 10, pue=0.9), "pue"),
    (lambda: F.break_even_runs(1e6, 0), "rental_usd_per_run"),
])
def test_bad_input_raises_value_error(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()


def test_bad_type_raises_type_error():
    with pytest.raises(TypeError, match="n_params"):
        F.training_flops("7e9", 1e12)
    with pytest.raises(TypeError):
        F.mfu(True, 1.0, 1.0)


def test_no_nan():
    assert math.isfinite(F.training_time(0, 1.0))


def test_mfu_conventions_by_name():
    # issue #17: both conventions by name; the defaults of model_flops_per_token unchanged
    assert set(F.MFU_CONVENTIONS) == {"6N", "6N+attention"}
    assert F.MFU_CONVENTIONS["6N"](1.5e9) == F.flops_per_token_6n(1.5e9) == 9e9
    assert F.MFU_CONVENTIONS["6N+attention"](1.5e9, 48, 1600, 1024) == \
        F.model_flops_per_token(1.5e9, 48, 1600, 1024) == 9e9 + 12 * 48 * 1600 * 1024
    with pytest.raises(ValueError, match="seq_len must be >= 1"):
        F.flops_per_token_6n_attention(1.5e9, 48, 1600, 0)


def test_selective_recompute_flops():
    # Korthikanti et al. 2022 §5 / App. A: one more forward of QK^T and attention x V,
    # 2Bs^2h + 2Bs^2h per layer = 4*L*d*S per token (GPT-2 XL: +1.3% of model FLOPs)
    model = F.model_flops_per_token(1.5e9, 48, 1600, 1024)
    sel = F.hardware_flops_per_token(1.5e9, "selective", 48, 1600, 1024)
    assert sel - model == 4 * 48 * 1600 * 1024
    assert F.model_flops_per_token(1.5e9, 48, 1600, 1024) < sel < \
        F.hardware_flops_per_token(1.5e9, "full", 48, 1600, 1024)
    assert F.hfu(model, sel - model, 1.0, 1e15) >= F.mfu(model, 1.0, 1e15)
    with pytest.raises(ValueError, match="selective.*d_model must be >= 1"):
        F.hardware_flops_per_token(1.5e9, "selective", 48, 0, 1024)
