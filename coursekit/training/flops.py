"""Training compute, time, money, energy and carbon.

Chapter 002 ("Model Training"): the iron law (Def 1.2, Eq 1), GPT-2 layer FLOPs
(Napkin 1.1), 6ND (Napkin 1.5), MFU (Def 1.4), rent vs buy (Napkin 1.5), energy and
carbon (Napkin 1.11, Table 19). Base units: FLOPs, seconds, FLOP/s, watts, joules,
kilograms of CO2; money in US dollars.

Conventions (stated to students):

* One multiply-accumulate = 2 FLOPs. Backward = 2x forward, so a training step is
  3x the forward FLOPs and training costs 6 FLOPs per parameter per token (6ND).
* Layer FLOPs follow Napkin 1.1: dense (no causal-mask halving), biases, softmax,
  norms and activations ignored (they are O(B*S*d), not O(B*S*d^2)).
* MFU counts model FLOPs only; HFU also counts recomputation (PaLM, Chowdhery et
  al. 2022, Appendix B). Both are fractions (0.115, not 11.5).
* Two named model-FLOP conventions (:data:`MFU_CONVENTIONS`): ``"6N"`` and
  ``"6N+attention"`` (6N + 12*L*d*s). Say which one a number uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..units import HOUR, KWH, check_choice, check_number

__all__ = [
    "LayerFlops", "layer_forward_flops", "training_step_flops", "training_flops",
    "model_flops_per_token", "hardware_flops_per_token", "mfu", "hfu",
    "MFU_CONVENTIONS", "flops_per_token_6n", "flops_per_token_6n_attention",
    "RECOMPUTE_FLOP_MODES", "megatron_flops_per_iteration",
    "achieved_flops", "training_time", "device_seconds", "rental_cost",
    "purchase_cost", "break_even_runs", "training_energy", "electricity_cost",
    "carbon_emissions", "speedup_corrected_time",
]


def _pos(name, value):
    return check_number(name, value, minimum=0, strict=True)


def _nonneg(name, value):
    return check_number(name, value, minimum=0)


def _frac(name, value):
    return check_number(name, value, minimum=0, strict=True, maximum=1)


@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs of one transformer block, by component (FLOPs)."""

    qkv: float
    qk: float
    attn_v: float
    out_proj: float
    ffn: float

    @property
    def attention(self) -> float:
        """Q K^T plus attention x V (the S^2 terms)."""
        return self.qk + self.attn_v

    @property
    def total(self) -> float:
        """Sum of all components."""
        return self.qkv + self.qk + self.attn_v + self.out_proj + self.ffn

    def as_dict(self) -> dict:
        """Components by name, in the order of Napkin 1.1."""
        return {"qkv": self.qkv, "qk": self.qk, "attn_v": self.attn_v,
                "out_proj": self.out_proj, "ffn": self.ffn}


def layer_forward_flops(batch, seq_len, d_model, n_heads, d_ff=None) -> LayerFlops:
    """Forward FLOPs of one transformer block by component.

    QKV 2*3*B*S*d^2; QK^T and attn x V each 2*B*h*S^2*d_head; output projection
    2*B*S*d^2; FFN 2*2*B*S*d*d_ff (= 16*B*S*d^2 for d_ff = 4d). Chapter 002,
    Napkin 1.1 (B=32, S=1024, d=1600, h=25: total 2228.0 GFLOP). FLOPs.
    """
    b = check_number("batch", batch, minimum=1, integer=True)
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    d = check_number("d_model", d_model, minimum=1, integer=True)
    h = check_number("n_heads", n_heads, minimum=1, integer=True)
    if d % h:
        raise ValueError(f"d_model={d} must be divisible by n_heads={h}")
    f = 4 * d if d_ff is None else check_number("d_ff", d_ff, minimum=1, integer=True)
    d_head = d // h
    tokens = float(b) * s
    qk = 2.0 * b * h * s * s * d_head
    return LayerFlops(
        qkv=2.0 * 3 * tokens * d * d,
        qk=qk,
        attn_v=qk,
        out_proj=2.0 * tokens * d * d,
        ffn=2.0 * 2 * tokens * d * f,
    )


def training_step_flops(batch, seq_len, d_model, n_heads, n_layers, d_ff=None) -> float:
    """FLOPs of one training step: layer forward x n_layers x 3 (backward = 2x forward).

    Chapter 002, Napkin 1.1: GPT-2 XL, 48 layers, 320.8 TFLOP per step. FLOPs.
    """
    n = check_number("n_layers", n_layers, minimum=1, integer=True)
    return 3.0 * n * layer_forward_flops(batch, seq_len, d_model, n_heads, d_ff).total


def training_flops(n_params, n_tokens) -> float:
    """Total training FLOPs C = 6 * N * D (Kaplan et al. 2020 §2.1; chapter Napkin 1.5).

    Llama 2 70B on 2T tokens: 8.4e23 FLOPs. FLOPs.
    """
    return 6.0 * _pos("n_params", n_params) * _pos("n_tokens", n_tokens)


def model_flops_per_token(n_params, n_layers=0, d_model=0, seq_len=0) -> float:
    """Model FLOPs per token, forward + backward, with the attention term.

    6*N + 12*L*H*Q*T with H*Q = d_model (PaLM, Chowdhery et al. 2022, Appendix B).
    With n_layers = 0 it is the plain 6*N. FLOPs per token.
    """
    n = _pos("n_params", n_params)
    L = check_number("n_layers", n_layers, minimum=0, integer=True)
    d = check_number("d_model", d_model, minimum=0, integer=True)
    t = check_number("seq_len", seq_len, minimum=0, integer=True)
    return 6.0 * n + 12.0 * L * d * t


def flops_per_token_6n(n_params) -> float:
    """The ``"6N"`` convention: 6 FLOPs per parameter per token, forward + backward
    (Kaplan et al. 2020 §2.1; chapter Napkin 1.5). No attention term. FLOPs per token."""
    return 6.0 * _pos("n_params", n_params)


def flops_per_token_6n_attention(n_params, n_layers, d_model, seq_len) -> float:
    """The ``"6N+attention"`` convention: ``6*N + 12*L*d*s``, the dense (no causal
    halving) QK^T and attention-over-values matmuls, forward + backward (PaLM, Chowdhery
    et al. 2022, App. B; with N = 12*L*d^2 + V*d it equals Korthikanti et al. 2022 App. A
    Eq. 7 / Narayanan et al. 2021 Eq. 3 per token). All arguments required. FLOPs/token."""
    for name, value in (("n_layers", n_layers), ("d_model", d_model), ("seq_len", seq_len)):
        check_number(name, value, minimum=1, integer=True)
    return model_flops_per_token(n_params, n_layers, d_model, seq_len)


MFU_CONVENTIONS = {"6N": flops_per_token_6n, "6N+attention": flops_per_token_6n_attention}
"""Model-FLOP conventions by name: ``MFU_CONVENTIONS["6N"](n_params)`` and
``MFU_CONVENTIONS["6N+attention"](n_params, n_layers, d_model, seq_len)``."""

RECOMPUTE_FLOP_MODES = ("none", "selective", "full")


def hardware_flops_per_token(n_params, recompute="none", n_layers=0, d_model=0,
                             seq_len=0) -> float:
    """FLOPs per token the hardware executes, recomputation included.

    ``none``: model FLOPs (:func:`model_flops_per_token`); ``full``: one extra forward
    pass (+2N, +4*L*d*S for the attention term), i.e. 8N (Korthikanti et al. 2022 §4;
    PaLM App. B); ``selective``: the attention core's forward again, QK^T and
    attention over values, ``+4*L*d*S`` (Korthikanti et al. 2022 §5 and App. A: "an
    additional forward pass attention matrix computation (2Bs^2h operations) and
    attention over values (2Bs^2h operations)" per layer); it needs n_layers, d_model
    and seq_len. FLOPs/token.

    Note: the paper's Eq. 8 (and Eq. 9, 1 + s/(6h); its "2.7%" for GPT-3 and Table 5's
    HFU) adds ``s/(3h) - s/(6h)``, i.e. +12*L*d*S per token, three times the forward
    FLOPs its text describes. :func:`megatron_flops_per_iteration` reproduces the
    paper's equations as printed; this function counts what the text describes.
    """
    check_choice("recompute", recompute, RECOMPUTE_FLOP_MODES)
    model = model_flops_per_token(n_params, n_layers, d_model, seq_len)
    if recompute == "none":
        return model
    if recompute == "full":
        return model + model / 3.0
    for name, value in (("n_layers", n_layers), ("d_model", d_model), ("seq_len", seq_len)):
        if value < 1:
            raise ValueError(f"recompute='selective' recomputes the attention core, "
                             f"4*L*d*S FLOPs per token: {name} must be >= 1, got {value!r}")
    return model + 4.0 * n_layers * d_model * seq_len


def megatron_flops_per_iteration(batch, seq_len, n_layers, hidden, vocab_size,
                                 recompute="none") -> float:
    """GEMM FLOPs of one training iteration of a GPT model (B = global batch, s, L, h, V):

    ``none``: ``72*B*s*L*h^2*(1 + s/(6h) + V/(12*h*L))`` (model FLOPs; Korthikanti et al.
    2022, App. A, Eq. 7; Narayanan et al. 2021, Eq. 3 without recomputation);
    ``selective``: ``72*B*s*L*h^2*(1 + s/(3h) + V/(12*h*L))`` (Eq. 8 as printed, which
    Table 5's HFU and the "2.7%" of §5 use; it adds ``12*B*s^2*h`` per layer, three times
    the recomputed forward ``4*B*s^2*h`` that App. A's text describes and
    :func:`hardware_flops_per_token` counts); ``full``:
    ``96*B*s*L*h^2*(1 + s/(6h) + V/(16*h*L))`` (Narayanan et al. 2021, Eq. 3: one more
    forward of every layer, not of the logits layer). FLOPs per iteration.
    """
    B = check_number("batch", batch, minimum=1, integer=True)
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    L = check_number("n_layers", n_layers, minimum=1, integer=True)
    h = check_number("hidden", hidden, minimum=1, integer=True)
    V = check_number("vocab_size", vocab_size, minimum=1, integer=True)
    check_choice("recompute", recompute, RECOMPUTE_FLOP_MODES)
    base = float(B) * s * L * h * h
    if recompute == "full":
        return 96.0 * base * (1 + s / (6 * h) + V / (16 * h * L))
    attention = s / (3 * h) if recompute == "selective" else s / (6 * h)
    return 72.0 * base * (1 + attention + V / (12 * h * L))


def achieved_flops(flops_per_step, step_time, n_devices=1) -> float:
    """Useful FLOP/s per device: O / (T_step * N). FLOP/s."""
    return (_nonneg("flops_per_step", flops_per_step) / _pos("step_time", step_time)
            / check_number("n_devices", n_devices, minimum=1, integer=True))


def mfu(model_flops_per_step, step_time, peak_flops, n_devices=1) -> float:
    """Model FLOPs utilization O_model / (R_peak * T_step * N), excluding recomputation.

    Chapter 002 Def 1.4 (7B, 1,024 tokens/step, 1.2 s, 312 TFLOP/s: 0.115);
    PaLM (Chowdhery et al. 2022) App. B. Fraction.
    """
    return achieved_flops(model_flops_per_step, step_time, n_devices) / _pos(
        "peak_flops", peak_flops)


def hfu(model_flops_per_step, recompute_flops_per_step, step_time, peak_flops,
        n_devices=1) -> float:
    """Hardware FLOPs utilization (O_model + O_recompute) / (R_peak * T_step * N).

    PaLM (Chowdhery et al. 2022) App. B: HFU counts rematerialization, MFU does not.
    Fraction.
    """
    total = (_nonneg("model_flops_per_step", model_flops_per_step)
             + _nonneg("recompute_flops_per_step", recompute_flops_per_step))
    return achieved_flops(total, step_time, n_devices) / _pos("peak_flops", peak_flops)


def training_time(total_flops, peak_flops, efficiency=1.0, n_devices=1) -> float:
    """Iron law T = O / (R_peak * eta * N), chapter 002 Def 1.2 Eq 1, on N devices.

    Napkin 1.5: 8.4e23 FLOPs at 989 TFLOP/s x 0.5 on 1,024 H100s = 19.2 days. Seconds.
    """
    return (_nonneg("total_flops", total_flops)
            / (_pos("peak_flops", peak_flops) * _frac("efficiency", efficiency)
               * check_number("n_devices", n_devices, minimum=1, integer=True)))


def device_seconds(n_devices, seconds) -> float:
    """Device-time billed: N * T. Device-seconds (divide by units.HOUR for GPU-hours)."""
    return (check_number("n_devices", n_devices, minimum=1, integer=True)
            * _nonneg("seconds", seconds))


def rental_cost(n_devices, seconds, usd_per_device_hour) -> float:
    """Rental bill N * (T / 3600 s) * price per device-hour (chapter 002 Napkin 1.5). USD."""
    return device_seconds(n_devices, seconds) / HOUR * _nonneg(
        "usd_per_device_hour", usd_per_device_hour)


def purchase_cost(n_devices, usd_per_device) -> float:
    """Up-front purchase N * price (chapter 002 Napkin 1.5: 1,024 x $30,000). USD."""
    return (check_number("n_devices", n_devices, minimum=1, integer=True)
            * _nonneg("usd_per_device", usd_per_device))


def break_even_runs(purchase_usd, rental_usd_per_run) -> float:
    """Runs after which buying beats renting: purchase / rental per run.

    Ignores power, staff and resale (as Napkin 1.5 does: 21.7 runs). Count (float).
    """
    return _nonneg("purchase_usd", purchase_usd) / _pos("rental_usd_per_run",
                                                        rental_usd_per_run)


def training_energy(n_devices, device_watts, seconds, n_hosts=0, host_watts=0.0,
                    pue=1.0) -> float:
    """Energy (N_dev * P_dev + N_host * P_host) * T * PUE (chapter 002 Napkin 1.11).

    1,024 A100s x 400 W + 128 hosts x 200 W for 73.0 h = 31,784 kWh. Joules
    (divide by units.KWH for kWh).
    """
    n = check_number("n_devices", n_devices, minimum=1, integer=True)
    hosts = check_number("n_hosts", n_hosts, minimum=0, integer=True)
    power = n * _nonneg("device_watts", device_watts) + hosts * _nonneg("host_watts",
                                                                        host_watts)
    return power * _nonneg("seconds", seconds) * check_number("pue", pue, minimum=1)


def electricity_cost(energy_joules, usd_per_kwh) -> float:
    """Energy / 3.6e6 J/kWh * price (chapter 002 Table 19: 3,914 kWh x $0.10). USD."""
    return _nonneg("energy_joules", energy_joules) / KWH * _nonneg("usd_per_kwh",
                                                                   usd_per_kwh)


def carbon_emissions(energy_joules, kg_co2_per_kwh) -> float:
    """Energy / 3.6e6 J/kWh * grid intensity (chapter 002 Table 19: 0.43 kg/kWh). kg CO2."""
    return _nonneg("energy_joules", energy_joules) / KWH * _nonneg("kg_co2_per_kwh",
                                                                   kg_co2_per_kwh)


def speedup_corrected_time(baseline_time, speedup) -> float:
    """Run time after a throughput speedup: T_new = T_old / speedup (same work, same
    devices). Napkin 1.7 (2.44x) implies 14 days -> 5.73 days, not 1.2 weeks. Seconds
    (or whatever unit ``baseline_time`` is in).
    """
    return _nonneg("baseline_time", baseline_time) / _pos("speedup", speedup)
