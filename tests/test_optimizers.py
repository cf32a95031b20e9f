"""training/optimizers.py: update rules checked by hand, memory and cost per the chapter."""

import numpy as np
import pytest

from coursekit.training import optimizers as opt


def _state(params, optimizer="adam"):
    return opt.init_state(np.array(params, dtype=float), optimizer)


def test_adam_first_step_is_lr_times_sign_of_gradient():
    # Kingma & Ba 2015 §2: at t = 1, m_hat = g and v_hat = g**2, so the step is
    # lr * g / |g| = lr * sign(g) for eps -> 0, whatever the gradient's size
    s = opt.adam_step(_state([1.0, -2.0, 0.5]), [0.3, -0.02, 4.0], lr=0.01, eps=0.0)
    assert np.allclose(s.params, [0.99, -1.99, 0.49], rtol=0, atol=1e-15)
    assert np.allclose(s.m, [0.03, -0.002, 0.4])           # (1 - 0.9) g
    assert np.allclose(s.v, [9e-5, 4e-7, 0.016])           # (1 - 0.999) g**2
    assert s.step == 1
    # eps = 1e-8 shrinks a small gradient's step: 0.02 / (0.02 + 1e-8) = 0.9999995
    s = opt.adam_step(_state([0.0]), [0.02], lr=0.01)
    assert s.params[0] == pytest.approx(-0.01 * 0.02 / (0.02 + 1e-8), rel=1e-12)


def test_adam_two_steps_by_hand():
    # g = +1 then -1, lr = 0.1, betas (0.9, 0.999), eps = 0:
    # t=1: m = 0.1, v = 0.001, m_hat = 1, v_hat = 1 -> theta = -0.1
    # t=2: m = 0.09 - 0.1 = -0.01, v = 0.000999 + 0.001 = 0.001999,
    #      m_hat = -0.01 / 0.19 = -0.0526316, v_hat = 0.001999 / 0.001999 = 1
    #      -> theta = -0.1 + 0.1 * 0.0526316 = -0.0947368
    s = opt.adam_step(_state([0.0]), [1.0], lr=0.1, eps=0.0)
    assert s.params[0] == pytest.approx(-0.1)
    s = opt.adam_step(s, [-1.0], lr=0.1, eps=0.0)
    assert (s.m[0], s.v[0], s.step) == (pytest.approx(-0.01), pytest.approx(0.001999), 2)
    assert s.params[0] == pytest.approx(-0.1 + 0.1 * 0.01 / 0.19, rel=1e-12)


def test_bias_correction_matters_early():
    # without bias correction the first step with betas (0.8, 0.99) would be
    # lr * 0.2 g / (0.1 |g|) = 2 lr; with it, lr
    s = opt.adam_step(_state([0.0]), [5.0], lr=0.1, beta1=0.8, beta2=0.99, eps=0.0)
    assert s.params[0] == pytest.approx(-0.1)


def test_adamw_decouples_weight_decay_from_the_adaptive_step():
    # theta = 1, g = 0.01, lr = 0.1, wd = 0.5, eps = 0, first step:
    # Adam + L2: g' = 0.01 + 0.5 * 1 = 0.51, step lr * sign(g') -> 0.9
    #   (the decay is normalized away: any wd > 0 gives the same 0.9)
    # AdamW: theta (1 - lr wd) - lr sign(g) = 0.95 - 0.1 = 0.85
    l2 = opt.adam_step(_state([1.0]), [0.01], lr=0.1, eps=0.0, weight_decay=0.5)
    dw = opt.adamw_step(_state([1.0]), [0.01], lr=0.1, eps=0.0, weight_decay=0.5)
    assert l2.params[0] == pytest.approx(0.9)
    assert dw.params[0] == pytest.approx(0.85)
    # the gradient opposes the decay: Adam + L2 still moves down (g' = 0.49): 0.9;
    # AdamW moves up by lr and decays by lr wd: 0.95 + 0.1 = 1.05
    l2 = opt.adam_step(_state([1.0]), [-0.01], lr=0.1, eps=0.0, weight_decay=0.5)
    dw = opt.adamw_step(_state([1.0]), [-0.01], lr=0.1, eps=0.0, weight_decay=0.5)
    assert (l2.params[0], dw.params[0]) == (pytest.approx(0.9), pytest.approx(1.05))
    # with no decay AdamW is Adam
    g = np.array([0.3, -2.0])
    a = opt.adam_step(_state([1.0, 2.0]), g, lr=0.05)
    w = opt.adamw_step(_state([1.0, 2.0]), g, lr=0.05, weight_decay=0.0)
    assert np.array_equal(a.params, w.params) and np.array_equal(a.v, w.v)


def test_sgd_and_momentum_by_hand():
    s = opt.sgd_step(_state([1.0, 2.0], "sgd"), [0.5, -1.0], lr=0.1)
    assert np.allclose(s.params, [0.95, 2.1]) and s.m is None and s.v is None
    # momentum 0.9, g = 1 twice, lr = 0.1: u = 1, theta = -0.1; u = 1.9, theta = -0.29
    s = opt.sgd_step(_state([0.0], "momentum"), [1.0], 0.1, momentum=0.9)
    s = opt.sgd_step(s, [1.0], 0.1, momentum=0.9)
    assert (s.params[0], s.m[0]) == (pytest.approx(-0.29), pytest.approx(1.9))
    # L2 weight decay: g + wd theta = 0 + 0.1 * 2 -> theta = 2 - 0.5 * 0.2 = 1.9
    s = opt.sgd_step(_state([2.0], "sgd"), [0.0], 0.5, weight_decay=0.1)
    assert s.params[0] == pytest.approx(1.9)


def test_steps_are_pure():
    s0 = _state([1.0, 2.0])
    before = (s0.params.copy(), s0.m.copy(), s0.v.copy())
    s1 = opt.adamw_step(s0, [0.1, 0.2], lr=0.1)
    assert all(np.array_equal(a, b) for a, b in zip(before, (s0.params, s0.m, s0.v)))
    assert s0.step == 0 and s1.step == 1
    with pytest.raises(ValueError):
        s1.params[0] = 3.0  # read-only
    with pytest.raises(AttributeError):
        s1.step = 5  # frozen


def test_state_memory_matches_the_chapter():
    # chapter Table 4 / DESIGN: SGD 0, momentum 4, Adam/AdamW 8 bytes per parameter (fp32)
    assert [opt.optimizer_state_bytes(1, o) for o in opt.OPTIMIZERS] == [0, 4, 8, 8]
    # Napkin 1.2: GPT-2 XL 1.5B, Adam state 12 GB
    assert opt.optimizer_state_bytes(1.5e9, "adam") == 12e9
    # footnote 16: 7B, Adam's fp32 moments = 56 GB; §1.2: 100M -> 800 MB
    assert opt.optimizer_state_bytes(7e9, "adamw") == 56e9
    assert opt.optimizer_state_bytes(100e6, "adam") == 800e6
    # bf16 moments: half
    assert opt.optimizer_state_bytes(7e9, "adam", bytes_per_value=2) == 28e9
    assert _state([1.0, 2.0], "momentum").state_tensors == 1


def test_step_cost_convention():
    assert [opt.step_flops_per_param(o) for o in opt.OPTIMIZERS] == [2, 4, 14, 14]
    assert opt.step_flops_per_param("adamw", weight_decay=True) == 15
    assert opt.step_flops_per_param("adam", weight_decay=True) == 16
    # read p, g, state; write p, state: (3 + 2 x tensors) x 4 bytes
    assert [opt.step_bytes_per_param(o) for o in opt.OPTIMIZERS] == [12, 20, 28, 28]


def test_problem_is_deterministic_and_its_gradient_is_right():
    a, b = opt.least_squares_problem(), opt.least_squares_problem()
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.X, opt.least_squares_problem(seed=1).X)
    theta = np.linspace(-1, 1, a.X.shape[1])
    h, g = 1e-6, a.grad(theta)
    for i in range(len(theta)):
        e = np.zeros_like(theta)
        e[i] = h
        fd = (a.loss(theta + e) - a.loss(theta - e)) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-9)
    # ill-conditioned on purpose (column scales 1 .. 1/sqrt(1e4)): condition in the thousands
    assert 1e3 < a.condition < 1e5
    assert a.min_loss < a.loss(a.theta0)


def test_accumulated_micro_batch_means_equal_the_full_batch_gradient():
    # chapter eq. 17: the mean of k equal micro-batch means is the full-batch mean
    p = opt.least_squares_problem()
    theta = np.ones(p.X.shape[1])
    k, b = 4, p.n_samples // 4
    micro = [p.grad(theta, slice(j * b, (j + 1) * b)) for j in range(k)]
    assert np.allclose(sum(micro) / k, p.grad(theta), rtol=1e-12, atol=1e-15)
    assert np.allclose(sum(micro), k * p.grad(theta))  # summed, not averaged: k times too big


def test_run_optimizer_orders_the_optimizers_on_the_ill_conditioned_problem():
    p = opt.least_squares_problem()
    lr = 1 / p.max_curvature
    sgd = opt.run_optimizer(p, "sgd", 300, lr)
    mom = opt.run_optimizer(p, "momentum", 300, lr)
    adam = opt.run_optimizer(p, "adam", 300, 0.05)
    assert len(sgd) == 301 and sgd[0] == p.loss(p.theta0)
    excess = [x[-1] - p.min_loss for x in (sgd, mom, adam)]
    assert excess[0] > excess[1] > excess[2] >= 0
    # AdamW without decay is Adam; with decay it differs from Adam + L2
    assert np.array_equal(opt.run_optimizer(p, "adamw", 50, 0.05), adam[:51])
    l2 = opt.run_optimizer(p, "adam", 100, 0.05, weight_decay=0.01)
    dw = opt.run_optimizer(p, "adamw", 100, 0.05, weight_decay=0.01)
    assert abs(l2[-1] - dw[-1]) > 1e-4
    assert opt.steps_to_reach(adam, adam[10]) == 10 and opt.steps_to_reach(adam, -1) is None


@pytest.mark.parametrize("call", [
    lambda: opt.adam_step(_state([1.0]), [1.0], beta2=1.0),
    lambda: opt.adam_step(_state([1.0]), [1.0], beta1=-0.1),
    lambda: opt.adam_step(_state([1.0]), [1.0], lr=0),
    lambda: opt.adamw_step(_state([1.0, 2.0]), [1.0]),
    lambda: opt.adam_step(_state([1.0], "sgd"), [1.0]),
    lambda: opt.sgd_step(_state([1.0], "sgd"), [1.0], 0.1, momentum=0.9),
    lambda: opt.sgd_step(_state([1.0], "momentum"), [1.0], 0.1, momentum=1.0),
    lambda: opt.init_state([1.0], "lion"),
    lambda: opt.optimizer_state_bytes(-1, "adam"),
    lambda: opt.run_optimizer(opt.least_squares_problem(), "rmsprop", 10, 0.1),
    lambda: opt.OptimizerState(np.zeros(2), m=np.zeros(3)),
])
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()
