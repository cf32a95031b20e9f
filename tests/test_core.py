"""units, hardware and models: constants, registries, exact parameter counts."""

import pytest

from coursekit import hardware, models, units


def test_unit_constants():
    assert units.GB == 1e9 and units.GiB == 2**30
    assert units.GBIT == 125_000_000  # 1 Gbit/s = 1e9 / 8 bytes/s
    assert units.KWH == 3.6e6


@pytest.mark.parametrize("dtype,size", [("fp32", 4), ("tf32", 4), ("bf16", 2), ("fp16", 2),
                                        ("fp8", 1), ("int8", 1), ("int4", 0.5)])
def test_dtype_sizes(dtype, size):
    assert units.dtype_bytes(dtype) == size


def test_unknown_dtype_lists_allowed():
    with pytest.raises(ValueError, match="allowed: fp64, fp32"):
        units.dtype_bytes("fp12")


def test_formatters_always_print_the_unit():
    assert units.fmt_bytes(84e9) == "84.0 GB"
    assert units.fmt_bytes(2**31, "GiB", 2) == "2.00 GiB"
    assert units.fmt_flops(320.8e12) == "320.8 TFLOP"
    assert units.fmt_rate(312e12, "TFLOP/s", 0) == "312 TFLOP/s"
    assert units.fmt_bandwidth(450e9) == "450.0 GB/s"
    assert units.fmt_time(0.0025) == "2.50 ms"
    assert units.fmt_time(19.2 * 86400) == "19.20 days"
    with pytest.raises(ValueError, match="unit='GBs'"):
        units.fmt_bytes(1, "GBs")


def test_check_number_messages():
    with pytest.raises(ValueError, match="dp must be >= 1, got 0"):
        units.check_number("dp", 0, minimum=1, integer=True)
    with pytest.raises(TypeError, match="n_params must be a number"):
        units.check_number("n_params", "7e9")
    with pytest.raises(TypeError):
        units.check_number("n", True)
    with pytest.raises(ValueError, match="finite"):
        units.check_number("x", float("nan"))


def test_accelerator_registry_and_sources():
    for name in ("V100-32GB", "A100-40GB", "A100-80GB", "H100-SXM", "H200"):
        acc = hardware.get_accelerator(name)
        assert acc.source and acc.memory_bytes > 0 and acc.hbm_bandwidth > 0
    a100 = hardware.get_accelerator("a100-80gb")
    assert a100.peak("bf16") == 312e12 and a100.memory_bytes == 80e9
    # A100 datasheet: 312 TFLOP/s / 2.039 TB/s = 153.0 FLOP/byte (the chapter rounds to 156)
    assert a100.ridge_point("bf16") == pytest.approx(153.02, abs=0.01)
    assert hardware.get_accelerator("H100-SXM").peak("bf16") == 989.4e12  # dense, no sparsity


def test_unknown_accelerator_lists_known():
    with pytest.raises(ValueError, match="A100-80GB"):
        hardware.get_accelerator("TPUv9")
    with pytest.raises(ValueError, match="has no peak"):
        hardware.get_accelerator("V100-32GB").peak("bf16")


def test_links_are_per_direction():
    assert hardware.get_link("NVLink-H100").bandwidth == 450e9  # 900 GB/s headline / 2
    assert hardware.get_link("NVLink-A100").bandwidth == 300e9
    assert hardware.get_link("InfiniBand-NDR").bandwidth == 50e9  # 400 Gb/s / 8
    assert hardware.get_link("InfiniBand-HDR").bandwidth == 25e9
    assert hardware.get_link("100GbE").bandwidth == 12.5e9  # chapter Napkin 1.10
    assert hardware.get_link("10GbE").bandwidth == 1.25e9
    for name in ("PCIe4-x16", "PCIe5-x16"):
        assert hardware.get_link(name).source
    with pytest.raises(ValueError, match="NVLink-H100"):
        hardware.get_link("carrier pigeon")


def test_custom_accelerator_validates():
    acc = hardware.custom_accelerator("toy", 16e9, {"bf16": 100e12}, 1e12)
    assert acc.ridge_point("bf16") == 100
    with pytest.raises(ValueError, match="hbm_bandwidth"):
        hardware.custom_accelerator("toy", 16e9, {"bf16": 100e12}, 0)


# Released checkpoints' parameter counts (Hugging Face model cards / state dicts).
@pytest.mark.parametrize("name,count", [
    ("gpt2-124m", 124_439_808),
    ("gpt2-355m", 354_823_168),
    ("gpt2-774m", 774_030_080),
    ("gpt2-1.5b", 1_557_611_200),
    ("llama2-7b", 6_738_415_616),
    ("llama2-13b", 13_015_864_320),
    ("llama2-70b", 68_976_648_192),
    ("llama3-8b", 8_030_261_248),
    ("llama3-70b", 70_553_706_496),
    ("mixtral-8x7b", 46_702_792_704),
])
def test_exact_parameter_counts(name, count):
    assert models.get_model(name).n_params == count


def test_gpt3_and_moe_active_params():
    # GPT-3 175B from the GPT-2 architecture at 96 x 12288: 174.6e9 (paper rounds to 175B)
    assert models.get_model("gpt3-175b").n_params == 174_604_259_328
    # Mixtral: 12.9B active of 46.7B (Jiang et al. 2024: "13B active parameters")
    assert models.get_model("mixtral-8x7b").n_active_params == 12_879_925_248
    assert models.get_model("llama2-7b").n_active_params == models.get_model("llama2-7b").n_params


def test_model_derived_sizes_and_validation():
    m = models.get_model("llama2-70b")
    assert m.head_dim == 128 and m.kv_dim == 1024
    with pytest.raises(ValueError, match="n_kv_heads"):
        m.with_(n_kv_heads=7)
    with pytest.raises(ValueError, match="mlp='relu'"):
        m.with_(mlp="relu")
    with pytest.raises(ValueError, match="gpt2-124m"):
        models.get_model("gpt-5")
    assert all(mm.source for mm in models.MODELS.values())
