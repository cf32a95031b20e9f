"""Tests for coursekit.parallel.tensor (Megatron-LM column/row-split MLP)."""

import numpy as np
import pytest

from coursekit.parallel import tensor as T


def test_gelu_tanh_approximation_values():
    # Hendrycks & Gimpel 2016 tanh form, recomputed by hand:
    # 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.841192 (exact erf GeLU(1) = 0.841345)
    assert T.gelu(1.0) == pytest.approx(0.8411919906, rel=1e-9)
    # x = -2: 0.5 * -2 * (1 + tanh(sqrt(2/pi) * (-2.35772))) = -0.0454023
    assert T.gelu(-2.0) == pytest.approx(-0.0454023059, rel=1e-9)
    assert T.gelu(0.0) == 0.0
    np.testing.assert_allclose(T.gelu(np.array([3.0, 10.0])), [2.9963627, 10.0], rtol=1e-6)


def test_shards_are_contiguous_blocks_in_order():
    A = np.arange(24.0).reshape(3, 8)
    cols = T.shard_columns(A, 4)
    assert len(cols) == 4 and all(c.shape == (3, 2) for c in cols)
    np.testing.assert_array_equal(cols[1], A[:, 2:4])
    np.testing.assert_array_equal(np.hstack(cols), A)
    rows = T.shard_rows(A.T, 4)
    np.testing.assert_array_equal(rows[3], A.T[6:8, :])
    np.testing.assert_array_equal(np.vstack(rows), A.T)


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_column_split_reproduces_the_unsharded_mlp(t):
    # Shoeybi et al. 2019 §3: sum_i GeLU(X A_i) B_i == GeLU(X A) B exactly (up to rounding)
    rng = np.random.default_rng(0)
    X, A, B = rng.normal(size=(5, 6)), rng.normal(size=(6, 16)), rng.normal(size=(16, 3))
    res = T.column_parallel_mlp(X, A, B, t)
    assert res.t == t and all(z.shape == (5, 3) for z in res.partials)
    np.testing.assert_allclose(res.output, T.gelu(X @ A) @ B, rtol=1e-12, atol=1e-12)
    # each partial is that device's own GeLU(X A_i) B_i
    k = 16 // t
    np.testing.assert_allclose(res.partials[-1],
                               T.gelu(X @ A[:, -k:]) @ B[-k:, :], rtol=1e-12)


def test_row_split_of_A_would_be_wrong():
    # the reason Megatron splits A by columns: GeLU is not additive
    rng = np.random.default_rng(1)
    X, A, B = rng.normal(size=(4, 6)), rng.normal(size=(6, 8)), rng.normal(size=(8, 2))
    wrong = sum(T.gelu(X[:, i * 3:(i + 1) * 3] @ A[i * 3:(i + 1) * 3, :]) @ B
                for i in range(2))
    assert not np.allclose(wrong, T.gelu(X @ A) @ B)


def test_allreduce_bytes_per_device():
    # ring all-reduce 2(t-1)/t * S: Y is 16 x 64 values of 2 bytes = 2,048 bytes; t = 8
    # -> 1.75 * 2048 = 3,584 bytes sent by each device
    X, A, B = np.zeros((16, 8)), np.zeros((8, 32)), np.zeros((32, 64))
    assert T.column_parallel_mlp(X, A, B, 8).bytes_sent == pytest.approx(3584.0)
    # fp32 values, t = 2: 2 * 1/2 * 16*64*4 = 4,096 bytes
    assert T.column_parallel_mlp(X, A, B, 2, 4).bytes_sent == pytest.approx(4096.0)
    # one device: nothing to send
    assert T.column_parallel_mlp(X, A, B, 1).bytes_sent == 0.0


def test_layer_allreduce_bytes_llama2_70b():
    # Llama-2-70B, one 4,096-token sequence, hidden 8,192, 16-bit, t = 8: one layer's
    # forward (2 all-reduces) = 2 * 1.75 * 4096*8192*2 = 234,881,024 bytes per device
    assert T.tp_mlp_allreduce_bytes(4096, 8192, 8) == pytest.approx(234_881_024)
    assert T.tp_mlp_allreduce_bytes(4096, 8192, 8, passes=4) == pytest.approx(469_762_048)
    assert T.tp_mlp_allreduce_bytes(4096, 8192, 1) == 0.0


@pytest.mark.parametrize("args", [
    (np.zeros((2, 3)), np.zeros((3, 8)), np.zeros((8, 2)), 3),   # 3 does not divide 8
    (np.zeros((2, 3)), np.zeros((3, 8)), np.zeros((8, 2)), 0),   # t < 1
    (np.zeros((2, 4)), np.zeros((3, 8)), np.zeros((8, 2)), 2),   # X and A do not chain
    (np.zeros((2, 3)), np.zeros((3, 8)), np.zeros((6, 2)), 2),   # A and B do not chain
    (np.zeros(3), np.zeros((3, 8)), np.zeros((8, 2)), 2),        # X not 2-D
])
def test_bad_input_raises_value_error(args):
    with pytest.raises(ValueError):
        T.column_parallel_mlp(*args)


def test_shard_error_names_the_parameter():
    with pytest.raises(ValueError, match="t=3"):
        T.shard_columns(np.zeros((2, 8)), 3)
