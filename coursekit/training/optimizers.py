"""Optimizers: SGD (with optional momentum), Adam and AdamW as pure numpy step functions,
their state memory and per-step cost, and a tiny deterministic problem to run them on.

Conventions (stated to students in 02_memory_calculator):

* Update rules follow PyTorch's ``torch.optim`` (which follow the papers):
  SGD with momentum ``u <- mu*u + g; theta <- theta - lr*u`` (Sutskever et al. 2013 in
  PyTorch's form); Adam with bias correction (Kingma & Ba 2015, Algorithm 1):
  ``m <- b1*m + (1-b1)*g``, ``v <- b2*v + (1-b2)*g**2``, ``m_hat = m/(1-b1**t)``,
  ``v_hat = v/(1-b2**t)``, ``theta <- theta - lr*m_hat/(sqrt(v_hat) + eps)``.
  ``weight_decay`` in SGD and Adam is L2 (added to the gradient, ``g + wd*theta``); AdamW
  decouples it (Loshchilov & Hutter 2019, Algorithm 2): ``theta <- theta - lr*wd*theta``
  from the parameters before the step, outside the adaptive scaling (PyTorch's ``AdamW``
  ties the paper's schedule multiplier to ``lr``).
* State memory: SGD keeps no state, momentum one buffer, Adam/AdamW two moments, each one
  value per parameter (fp32: 0, 4 and 8 bytes per parameter; chapter Table 4).
* FLOPs per parameter per step count each elementwise +, -, x, / and sqrt as one FLOP;
  scalars computed once per step (``1 - b1**t``, ``lr*wd``) are not counted; the gradient
  itself is not part of the step. Bytes moved assume one fused kernel per step that reads
  parameters, gradient and state once and writes parameters and state once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..units import check_choice, check_number

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
STATE_TENSORS = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}
"""Tensors of optimizer state per parameter tensor (chapter Table 4)."""

# Elementwise FLOPs per parameter per step (convention in the module docstring):
#   sgd      theta - lr*g                                            2
#   momentum u = mu*u + g (2); theta - lr*u (2)                      4
#   adam     m: b1*m + (1-b1)*g (3); v: b2*v + (1-b2)*g*g (4);
#            m/bc1, v/bc2 (2); sqrt, +eps (2); /, x lr, - (3)        14
#   adamw    adam + theta*(1 - lr*wd) (1)                            15
#   L2 weight decay (sgd, momentum, adam): g + wd*theta              +2
_FLOPS = {"sgd": 2, "momentum": 4, "adam": 14, "adamw": 14}
_DECAY_FLOPS = {"sgd": 2, "momentum": 2, "adam": 2, "adamw": 1}


@dataclass(frozen=True, eq=False)
class OptimizerState:
    """Parameters and optimizer state after ``step`` updates (arrays are read-only).

    ``m``: momentum buffer (SGD with momentum) or Adam's first moment; ``v``: Adam's
    second moment; ``None`` where the optimizer keeps no such tensor.
    """

    params: np.ndarray
    m: np.ndarray | None = None
    v: np.ndarray | None = None
    step: int = 0

    def __post_init__(self):
        for name in ("params", "m", "v"):
            value = getattr(self, name)
            if value is None:
                continue
            arr = np.array(value, dtype=float)
            if name != "params" and arr.shape != np.shape(self.params):
                raise ValueError(f"{name} has shape {arr.shape}, params has shape "
                                 f"{np.shape(self.params)}; they must match")
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        check_number("step", self.step, minimum=0, integer=True)

    @property
    def state_tensors(self) -> int:
        """How many state tensors this state holds (0, 1 or 2)."""
        return (self.m is not None) + (self.v is not None)


def init_state(params, optimizer) -> OptimizerState:
    """Step-0 state for ``optimizer`` (one of OPTIMIZERS): zero buffers for the state
    tensors it keeps (none for ``sgd``, ``m`` for ``momentum``, ``m`` and ``v`` for Adam)."""
    check_choice("optimizer", optimizer, OPTIMIZERS)
    p = np.array(params, dtype=float)
    n = STATE_TENSORS[optimizer]
    return OptimizerState(p, np.zeros_like(p) if n >= 1 else None,
                          np.zeros_like(p) if n >= 2 else None, 0)


def _grad(state, grad):
    g = np.array(grad, dtype=float)
    if g.shape != state.params.shape:
        raise ValueError(f"grad has shape {g.shape}, params has shape "
                         f"{state.params.shape}; they must match")
    return g


def sgd_step(state: OptimizerState, grad, lr, momentum=0.0, weight_decay=0.0) -> OptimizerState:
    """One SGD step, with momentum if ``momentum > 0`` (PyTorch's ``torch.optim.SGD``):
    ``g = grad + weight_decay*theta`` (L2), ``u = momentum*u + g``, ``theta - lr*u``.

    Momentum needs a state with a buffer (``init_state(params, "momentum")``). Units: those
    of the parameters; ``lr`` in parameter units per gradient unit.
    """
    check_number("lr", lr, minimum=0, strict=True)
    check_number("momentum", momentum, minimum=0)
    if momentum >= 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    check_number("weight_decay", weight_decay, minimum=0)
    g = _grad(state, grad) + weight_decay * state.params
    if momentum == 0:
        return OptimizerState(state.params - lr * g, state.m, state.v, state.step + 1)
    if state.m is None:
        raise ValueError("momentum > 0 needs a momentum buffer: start from "
                         "init_state(params, 'momentum')")
    u = momentum * state.m + g
    return OptimizerState(state.params - lr * u, u, state.v, state.step + 1)


def _adam(state, g, lr, beta1, beta2, eps, decoupled_decay):
    check_number("lr", lr, minimum=0, strict=True)
    for name, beta in (("beta1", beta1), ("beta2", beta2)):
        check_number(name, beta, minimum=0)
        if beta >= 1:
            raise ValueError(f"{name} must be in [0, 1), got {beta!r}")
    check_number("eps", eps, minimum=0)
    if state.m is None or state.v is None:
        raise ValueError("Adam needs both moments: start from init_state(params, 'adam')")
    t = state.step + 1
    m = beta1 * state.m + (1 - beta1) * g
    v = beta2 * state.v + (1 - beta2) * g * g
    m_hat = m / (1 - beta1 ** t)
    v_hat = v / (1 - beta2 ** t)
    params = state.params - lr * decoupled_decay * state.params
    params = params - lr * m_hat / (np.sqrt(v_hat) + eps)
    return OptimizerState(params, m, v, t)


def adam_step(state: OptimizerState, grad, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
              weight_decay=0.0) -> OptimizerState:
    """One Adam step with bias correction (Kingma & Ba 2015, Algorithm 1; chapter §1.2
    "Adam optimization"); ``weight_decay`` is L2, added to the gradient before the moments.

    ``m = b1*m + (1-b1)*g``, ``v = b2*v + (1-b2)*g**2``, ``theta - lr*m_hat/(sqrt(v_hat)+eps)``
    with ``m_hat = m/(1-b1**t)``, ``v_hat = v/(1-b2**t)``, ``t = state.step + 1``.
    """
    check_number("weight_decay", weight_decay, minimum=0)
    g = _grad(state, grad) + weight_decay * state.params
    return _adam(state, g, lr, beta1, beta2, eps, 0.0)


def adamw_step(state: OptimizerState, grad, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
               weight_decay=0.01) -> OptimizerState:
    """One AdamW step (Loshchilov & Hutter 2019, Algorithm 2, in PyTorch's form): the Adam
    step on the raw gradient, plus a decoupled decay ``-lr*weight_decay*theta`` from the
    parameters before the step. No extra state: the same 2 moments as Adam."""
    check_number("weight_decay", weight_decay, minimum=0)
    return _adam(state, _grad(state, grad), lr, beta1, beta2, eps, weight_decay)


def optimizer_state_bytes(n_params, optimizer, bytes_per_value=4) -> float:
    """Bytes of optimizer state for ``n_params`` parameters: ``n_params x tensors x
    bytes_per_value`` with 0 tensors for SGD, 1 for momentum, 2 for Adam and AdamW (chapter
    Table 4; fp32 by default: 0, 4, 8 bytes per parameter). Bytes."""
    check_number("n_params", n_params, minimum=0)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_number("bytes_per_value", bytes_per_value, minimum=0, strict=True)
    return n_params * STATE_TENSORS[optimizer] * bytes_per_value


def step_flops_per_param(optimizer, weight_decay=False) -> int:
    """Elementwise FLOPs per parameter of one optimizer step (count in the module
    docstring): SGD 2, momentum 4, Adam 14, AdamW 14; weight decay adds 2 as L2 (SGD,
    momentum, Adam) or 1 decoupled (AdamW). FLOPs."""
    check_choice("optimizer", optimizer, OPTIMIZERS)
    return _FLOPS[optimizer] + (_DECAY_FLOPS[optimizer] if weight_decay else 0)


def step_bytes_per_param(optimizer, bytes_per_value=4) -> float:
    """Memory traffic of one fused optimizer step per parameter: read params, gradient and
    each state tensor, write params and each state tensor, ``(3 + 2 x tensors) x
    bytes_per_value`` (fp32: SGD 12, momentum 20, Adam/AdamW 28). Bytes."""
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_number("bytes_per_value", bytes_per_value, minimum=0, strict=True)
    return (3 + 2 * STATE_TENSORS[optimizer]) * bytes_per_value


# ------------------------------------------------------------------ a problem to run them on
@dataclass(frozen=True, eq=False)
class LeastSquares:
    """Linear least squares: loss ``0.5 * mean((X theta - y)**2)`` over the rows used,
    gradient ``X.T (X theta - y) / rows`` (the mean, as a framework's mean loss gives).
    ``theta0`` is the starting point. Dimensionless."""

    X: np.ndarray
    y: np.ndarray
    theta0: np.ndarray

    def __post_init__(self):
        for name in ("X", "y", "theta0"):
            arr = np.array(getattr(self, name), dtype=float)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        if self.X.ndim != 2 or self.y.shape != (self.X.shape[0],) \
                or self.theta0.shape != (self.X.shape[1],):
            raise ValueError(f"X must be (n, d), y (n,), theta0 (d,); got {self.X.shape}, "
                             f"{self.y.shape}, {self.theta0.shape}")

    @property
    def n_samples(self) -> int:
        """Rows of X."""
        return self.X.shape[0]

    @property
    def max_curvature(self) -> float:
        """Largest eigenvalue of the Hessian ``X.T X / n``: plain gradient descent is
        stable only for ``lr < 2 / max_curvature``."""
        return float(np.linalg.eigvalsh(self.X.T @ self.X / self.n_samples)[-1])

    @property
    def condition(self) -> float:
        """Condition number of the Hessian (largest over smallest eigenvalue)."""
        eig = np.linalg.eigvalsh(self.X.T @ self.X / self.n_samples)
        return float(eig[-1] / eig[0])

    @property
    def min_loss(self) -> float:
        """The smallest loss over all rows (the least-squares solution's)."""
        return self.loss(np.linalg.lstsq(self.X, self.y, rcond=None)[0])

    def _rows(self, rows):
        X, y = (self.X, self.y) if rows is None else (self.X[rows], self.y[rows])
        if X.shape[0] == 0:
            raise ValueError("rows selects no sample")
        return X, y

    def loss(self, theta, rows=None) -> float:
        """Mean loss over ``rows`` (all rows if None; a slice, index array or mask)."""
        X, y = self._rows(rows)
        r = X @ np.asarray(theta, dtype=float) - y
        return float(0.5 * np.mean(r * r))

    def grad(self, theta, rows=None) -> np.ndarray:
        """Gradient of :meth:`loss` over ``rows`` (the mean over those rows)."""
        X, y = self._rows(rows)
        return X.T @ (X @ np.asarray(theta, dtype=float) - y) / X.shape[0]


def least_squares_problem(n_samples=64, n_features=8, condition=1e4, noise=0.1,
                          seed=0) -> LeastSquares:
    """A deterministic, ill-conditioned least-squares problem: Gaussian features whose
    column scales fall geometrically from 1 to ``1/sqrt(condition)`` (so the Hessian's
    condition number is about ``condition``), true weights N(0, 1), Gaussian label noise
    of std ``noise``, start at ``theta0 = 0``; ``numpy.random.default_rng(seed)``."""
    n = check_number("n_samples", n_samples, minimum=1, integer=True)
    d = check_number("n_features", n_features, minimum=1, integer=True)
    check_number("condition", condition, minimum=1)
    check_number("noise", noise, minimum=0)
    rng = np.random.default_rng(seed)
    scales = condition ** (-0.5 * np.linspace(0.0, 1.0, d))
    X = rng.standard_normal((n, d)) * scales
    theta_true = rng.standard_normal(d)
    y = X @ theta_true + noise * rng.standard_normal(n)
    return LeastSquares(X, y, np.zeros(d))


def run_optimizer(problem: LeastSquares, optimizer, steps, lr, *, momentum=0.9, beta1=0.9,
                  beta2=0.999, eps=1e-8, weight_decay=0.0) -> np.ndarray:
    """Full-batch training of ``problem`` for ``steps`` steps from ``problem.theta0``;
    returns the ``steps + 1`` losses (before the first step, then after each).

    ``optimizer``: ``sgd`` (``momentum`` ignored), ``momentum`` (SGD with ``momentum``),
    ``adam`` (``weight_decay`` as L2) or ``adamw`` (decoupled ``weight_decay``).
    """
    check_choice("optimizer", optimizer, OPTIMIZERS)
    n = check_number("steps", steps, minimum=0, integer=True)
    state = init_state(problem.theta0, optimizer)
    losses = [problem.loss(state.params)]
    for _ in range(n):
        g = problem.grad(state.params)
        if optimizer == "sgd":
            state = sgd_step(state, g, lr, 0.0, weight_decay)
        elif optimizer == "momentum":
            state = sgd_step(state, g, lr, momentum, weight_decay)
        elif optimizer == "adam":
            state = adam_step(state, g, lr, beta1, beta2, eps, weight_decay)
        else:
            state = adamw_step(state, g, lr, beta1, beta2, eps, weight_decay)
        losses.append(problem.loss(state.params))
    return np.array(losses)


def steps_to_reach(losses, target) -> int | None:
    """First step index whose loss is <= ``target``, or None if none is."""
    hit = np.flatnonzero(np.asarray(losses, dtype=float) <= target)
    return int(hit[0]) if hit.size else None

