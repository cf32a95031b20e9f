"""Recomputation FLOPs, MFU and HFU against Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models" (arXiv:2205.05198, MLSys 2023).

Sources, all from the paper:
* Table 3 (model configurations): heads, hidden size, layers, GPUs, global batch size.
* §6: sequence length s = 2048 and vocabulary V = 51200 for every case; A100 80GB GPUs.
* Table 5 (end-to-end iteration time): "Present Work" (sequence parallelism + selective
  recomputation) iteration time, MFU and HFU per row; "Full Recompute" iteration time.
* Appendix A: model FLOPs per iteration, Eq. 7, 72BLsh^2(1 + s/(6h) + V/(12hL)); hardware
  FLOPs with selective recomputation, Eq. 8, 72BLsh^2(1 + s/(3h) + V/(12hL)).
* §5: selective recomputation costs 2.7% (GPT-3) and 1.6% (MT-NLG) extra FLOPs.
* Peak: A100 dense bf16/fp16 tensor-core rate, 312 TFLOP/s (the paper's footnote 5 uses
  the accelerator's theoretical peak; coursekit.hardware's A100 entry).
"""

import pytest

from coursekit.training import flops as F
from coursekit.units import TFLOP

S, V, PEAK = 2048, 51200, 312 * TFLOP

# (name, heads, hidden, layers, GPUs, global batch, present-work time s, MFU %, HFU %,
#  full-recompute time s): Table 3 and Table 5, one row each
TABLE5 = [
    ("22B", 64, 6144, 48, 8, 4, 1.10, 41.5, 43.7, 1.42),          # Table 3/5 row "22B"
    ("175B", 96, 12288, 96, 64, 64, 13.75, 51.4, 52.8, 18.13),     # row "175B (GPT-3)"
    ("530B", 128, 20480, 105, 280, 280, 37.83, 56.0, 57.0, 49.05),  # row "530B (MT-NLG)"
    ("1T", 160, 25600, 128, 512, 512, 71.49, 56.3, 57.0, 94.42),   # row "1T"
]


@pytest.mark.parametrize("row", TABLE5, ids=[r[0] for r in TABLE5])
def test_table5_mfu_and_hfu_within_half_a_point(row):
    name, _a, h, L, gpus, B, t, mfu_pct, hfu_pct, _ = row
    model = F.megatron_flops_per_iteration(B, S, L, h, V)
    hardware = F.megatron_flops_per_iteration(B, S, L, h, V, recompute="selective")
    mfu = F.mfu(model, t, PEAK, gpus)
    hfu = F.hfu(model, hardware - model, t, PEAK, gpus)
    print(f"{name}: MFU {100 * mfu:.2f}% (paper {mfu_pct}%), "
          f"HFU {100 * hfu:.2f}% (paper {hfu_pct}%)")
    assert 100 * mfu == pytest.approx(mfu_pct, abs=0.5)
    assert 100 * hfu == pytest.approx(hfu_pct, abs=0.5)


@pytest.mark.parametrize("row", TABLE5, ids=[r[0] for r in TABLE5])
def test_per_token_conventions_match_appendix_a(row):
    # with N = the GEMM weights (12Lh^2 + Vh), "6N+attention" per token x tokens is Eq. 7
    _, _a, h, L, _g, B, *_ = row
    n_gemm = 12 * L * h * h + V * h
    tokens = B * S
    eq7 = F.megatron_flops_per_iteration(B, S, L, h, V)
    eq8 = F.megatron_flops_per_iteration(B, S, L, h, V, recompute="selective")
    assert F.MFU_CONVENTIONS["6N+attention"](n_gemm, L, h, S) * tokens == pytest.approx(
        eq7, rel=1e-12)
    # App. A's text: selective recomputation adds one forward of the attention core,
    # 2Bs^2h + 2Bs^2h per layer. hardware_flops_per_token counts exactly that ...
    forward_core = 4 * B * S * S * h * L
    assert F.hardware_flops_per_token(n_gemm, "selective", L, h, S) * tokens == \
        pytest.approx(eq7 + forward_core, rel=1e-12)
    # ... while Eq. 8 as printed adds three times as much (s/(3h) instead of s/(6h))
    assert eq8 - eq7 == pytest.approx(3 * forward_core, rel=1e-12)
    # "6N" leaves the attention term out: smaller by s/(6h) relative to the GEMMs
    assert F.MFU_CONVENTIONS["6N"](n_gemm) < F.MFU_CONVENTIONS["6N+attention"](
        n_gemm, L, h, S)


def test_hfu_with_the_forward_only_count_is_lower_than_table5():
    # Counting only the recomputed forward (App. A's text) gives an HFU about 1 point
    # below Table 5 (175B: 51.8% vs 52.8%; 1T: 56.5% vs 57.0%); Table 5 uses Eq. 8.
    got = {}
    for name, _a, h, L, gpus, B, t, mfu_pct, hfu_pct, _ in TABLE5:
        n_gemm = 12 * L * h * h + V * h
        model = F.model_flops_per_token(n_gemm, L, h, S) * B * S
        hardware = F.hardware_flops_per_token(n_gemm, "selective", L, h, S) * B * S
        got[name] = round(100 * F.hfu(model, hardware - model, t, PEAK, gpus), 1)
        assert 100 * F.mfu(model, t, PEAK, gpus) == pytest.approx(mfu_pct, abs=0.5)
    assert got == {"22B": 42.4, "175B": 51.8, "530B": 56.4, "1T": 56.5}


def test_selective_overhead_2_7_and_1_6_percent():
    # §5: "only 2.7% and 1.6% FLOPs overhead" for GPT-3 (Table 3 row 175B) and MT-NLG
    # (row 530B); App. A Eq. 9: hardware/model ~ 1 + s/(6h). These follow Eq. 8; the
    # forward-only count (hardware_flops_per_token) gives a third: 0.9% and 0.5%.
    for (_, _a, h, L, _g, B, *_), want in ((TABLE5[1], 0.027), (TABLE5[2], 0.016)):
        ratio = (F.megatron_flops_per_iteration(B, S, L, h, V, "selective")
                 / F.megatron_flops_per_iteration(B, S, L, h, V))
        assert ratio - 1 == pytest.approx(want, abs=0.0005)
        assert ratio == pytest.approx(1 + S / (6 * h), rel=0.001)
    forward_only = [F.hardware_flops_per_token(12 * L * h * h + V * h, "selective", L, h, S)
                    / F.model_flops_per_token(12 * L * h * h + V * h, L, h, S) - 1
                    for _, _a, h, L, *_ in (TABLE5[1], TABLE5[2])]
    assert [round(100 * x, 1) for x in forward_only] == [0.9, 0.5]


def test_full_recompute_rows_and_throughput_increase():
    # Table 5, "Throughput Increase" column: full-recompute time / present-work time - 1
    for (name, *_mid, t, _m, _h, t_full), want in zip(TABLE5, (29.0, 31.8, 29.7, 32.1)):
        assert 100 * (t_full / t - 1) == pytest.approx(want, abs=0.1), name
    # full recomputation: Narayanan et al. 2021 Eq. 3 (96 instead of 72, V/(16hL)): the
    # extra over Eq. 7 is one forward of every layer, about a third
    _, _a, h, L, _g, B, *_ = TABLE5[1]
    full = F.megatron_flops_per_iteration(B, S, L, h, V, "full")
    model = F.megatron_flops_per_iteration(B, S, L, h, V)
    assert full / model == pytest.approx(4 / 3, abs=0.01)
    assert full == pytest.approx(96 * B * S * L * h * h * (1 + S / (6 * h) + V / (16 * h * L)))


def test_selective_needs_the_attention_shape():
    with pytest.raises(ValueError, match="selective.*n_layers must be >= 1"):
        F.hardware_flops_per_token(1e9, "selective")
    with pytest.raises(ValueError, match="recompute='half'"):
        F.megatron_flops_per_iteration(1, 2048, 1, 1024, 51200, "half")
    # hfu >= mfu with selective recomputation, and "none" is still the model count
    assert F.hardware_flops_per_token(1e9, "none", 24, 2048, 2048) == \
        F.model_flops_per_token(1e9, 24, 2048, 2048)
