"""Tests for coursekit.serving.kv_cache (paged KV sizing)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.models import get_model
from coursekit.serving import kv_cache as kv
from coursekit.training.memory import kv_cache_bytes


def test_bytes_per_token_llama2_7b():
    # recomputed: 2 x 32 layers x 32 kv heads x 128 head_dim x 2 bytes = 524,288 (0.5 MiB)
    assert kv.kv_bytes_per_token("llama2-7b") == 524_288


def test_bytes_per_token_is_gqa_aware():
    # recomputed: Llama-2-70B has 8 KV heads: 2 x 80 x 8 x 128 x 2 = 327,680 bytes
    assert kv.kv_bytes_per_token("llama2-70b") == 327_680
    # same as the training-memory formula (not re-derived)
    m = get_model("llama3-8b")
    assert kv.kv_bytes_per_token(m, 1) == kv_cache_bytes(m, 1, 1, 1)


def test_blocks_and_fragmentation_small_cases():
    # vLLM block size 16: 0 -> 0, 1 -> 1, 16 -> 1, 17 -> 2 blocks
    assert kv.blocks_for_tokens(0) == 0
    assert kv.blocks_for_tokens(1) == 1
    assert kv.blocks_for_tokens(16) == 1
    assert kv.blocks_for_tokens(17) == 2
    np.testing.assert_array_equal(kv.blocks_for_tokens([0, 1, 16, 17, 33]), [0, 1, 1, 2, 3])
    assert kv.fragmentation_tokens(17) == 15  # 2 x 16 - 17
    # recomputed: (17, 16) tokens -> 48 slots allocated, 15 empty: 15/48 = 0.3125
    assert kv.internal_fragmentation([17, 16]) == pytest.approx(0.3125, rel=1e-12)
    assert kv.internal_fragmentation([]) == 0.0
    assert kv.blocks_for_tokens(100, block_size=1) == 100


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 100_000), bs=st.integers(1, 64))
def test_fragmentation_below_one_block(n, bs):
    blocks = kv.blocks_for_tokens(n, bs)
    assert blocks * bs >= n
    assert 0 <= kv.fragmentation_tokens(n, bs) < bs
    assert (blocks - 1) * bs < n or n == 0


def test_capacity_7b_on_80gb():
    # recomputed: 80e9 - 6,738,415,616 x 2 bytes = 66,523,168,768 bytes for KV
    cap = kv.kv_capacity_bytes("llama2-7b", "A100-80GB")
    assert cap == pytest.approx(66_523_168_768, rel=1e-12)
    # recomputed: floor(66,523,168,768 / (16 x 524,288)) = 7,930 blocks = 126,880 tokens
    assert kv.kv_capacity_blocks("llama2-7b", "A100-80GB") == 7930
    # 4,096-token sequences need 256 blocks: floor(7930 / 256) = 30
    assert kv.max_concurrent_sequences("llama2-7b", "A100-80GB", 4096) == 30
    # 1,024 tokens -> 64 blocks: floor(7930 / 64) = 123
    assert kv.max_concurrent_sequences("llama2-7b", "H100-SXM", 1024) == 123
    # vLLM's default gpu_memory_utilization 0.9: (72e9 - 13.48e9)/8 MiB = 6976 blocks
    assert kv.kv_capacity_blocks("llama2-7b", "H100-SXM", memory_fraction=0.9) == 6976


def test_gqa_raises_concurrency():
    # Llama-3-8B (8 KV heads) holds 4x more tokens per byte than Llama-2-7B (32 heads)
    assert kv.kv_bytes_per_token("llama2-7b") == 4 * kv.kv_bytes_per_token("llama3-8b")
    assert kv.max_concurrent_sequences("llama3-8b", "H100-SXM", 4096) > \
        3 * kv.max_concurrent_sequences("llama2-7b", "H100-SXM", 4096)


def test_bad_input():
    with pytest.raises(ValueError, match="n_tokens"):
        kv.blocks_for_tokens(-1)
    with pytest.raises(ValueError, match="block_size"):
        kv.blocks_for_tokens(10, 0)
    with pytest.raises(ValueError, match="weights"):
        kv.kv_capacity_bytes("llama2-70b", "A100-80GB")  # 138 GB of weights
    with pytest.raises(ValueError, match="memory_fraction"):
        kv.kv_capacity_bytes("llama2-7b", "A100-80GB", memory_fraction=1.5)
    with pytest.raises(ValueError, match="seq_len"):
        kv.max_concurrent_sequences("llama2-7b", "A100-80GB", 0)
    with pytest.raises(ValueError, match="accelerator"):
        kv.kv_capacity_blocks("llama2-7b", "TPU-v9")
    with pytest.raises(TypeError):
        kv.blocks_for_tokens("ten")
