"""coursekit.measure: the shipped H200 measurements and the fallback when no GPU exists.
(The live harness itself needs PyTorch and CUDA, which the course never depends on; it was
checked on CPU for its parameter count and its cached decode path, see the module doc.)"""

import pytest

from coursekit import measure

GIB = 2**30


def test_shipped_row_matches_the_data_summary():
    m = measure.shipped_training_memory("gpt2-124m", "bf16_autocast_adamw", "sdpa", 4)
    # ../shared/data/h200-gpt2/summary.txt, 124M bf16_autocast_adamw sdpa ck=0 B=4:
    # p 0.46 + g 0.46 + opt 0.93 GiB; act 5.13 GiB
    assert m.static_bytes == 124439808 * 16          # exact: 4 + 4 + 8 bytes per parameter
    assert m.activation_bytes / GIB == pytest.approx(5.13, abs=0.005)
    assert m.source.startswith("shipped measurements: one NVIDIA H200")


def test_pure_bf16_static_state_is_8_bytes_per_parameter():
    # summary.txt: bf16_pure_adamw keeps bf16 weights, gradients and both Adam moments
    m = measure.shipped_training_memory("gpt2-355m", "bf16_pure_adamw", "eager", 1)
    assert m.static_bytes == 354823168 * 8


def test_unmeasured_batch_names_the_measured_ones():
    # summary/errors: 1.5B eager autocast at batch 8 ran out of the H200's memory
    with pytest.raises(ValueError, match=r"batch=8: not measured .* measured batches: \[1, 4\]"):
        measure.shipped_training_memory("gpt2-1.5b", "bf16_autocast_adamw", "eager", 8)


def test_bad_choices_name_the_parameter():
    with pytest.raises(ValueError, match="attention"):
        measure.shipped_training_memory("gpt2-124m", "fp32_adamw", "flash3", 1)
    with pytest.raises(ValueError, match="model"):
        measure.training_memory_data("gpt2-7b", "fp32_adamw", "sdpa", 1)


def test_without_a_gpu_the_data_says_it_is_shipped(monkeypatch):
    monkeypatch.setattr(measure, "live_device", lambda: None)
    m = measure.training_memory_data("gpt2-124m", "fp32_adamw", "eager", 1, live=True)
    assert m.source.startswith("shipped")
    dec = measure.decode_data(live=True)
    assert dec.source.startswith("shipped")
    # summary.txt section C: GPU time 3.6 ms at batch 1 of which the cache copy is 0.7 ms
    assert dec.batch[0] == 1 and dec.step_s[0] == pytest.approx(2.85e-3, abs=0.1e-3)
    with pytest.raises(RuntimeError, match="needs PyTorch with a CUDA GPU"):
        measure.measure_training_memory()
    with pytest.raises(RuntimeError, match="live=False"):
        measure.measure_decode_steps()
