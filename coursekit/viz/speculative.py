"""Plots and an explorer for the speculative-decoding notebook (05_speculative_decoding)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..serving import speculative as sp
from ..units import MS
from . import watch


def _safe(fn, fallback):
    """``fn`` if calling it works (a student's stub may raise), else ``fallback``."""
    def wrapped(*args):
        if fn is not None:
            try:
                return float(fn(*args))
            except Exception:  # noqa: BLE001 - stubs and bugs fall back to the library
                pass
        return fallback(*args)
    return wrapped


def plot_speedup_vs_k(alphas=(0.6, 0.7, 0.8, 0.9), c=0.05, k_max=16, speedup_fn=None,
                      ax=None):
    """Walltime speedup against draft length k for several alpha (Leviathan Thm 3.8).

    ``speedup_fn(alpha, k, c)`` is the student's function when it works; a marker shows
    the best k of each curve. Returns the Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4))
    f = _safe(speedup_fn, sp.walltime_speedup)
    ks = np.arange(1, k_max + 1)
    for alpha in alphas:
        s = [f(alpha, int(k), c) for k in ks]
        line, = ax.plot(ks, s, marker=".", label=f"α = {alpha:g}")
        best = int(np.argmax(s))
        ax.plot(ks[best], s[best], "o", ms=9, mfc="none", color=line.get_color())
    ax.axhline(1.0, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("draft length k (tokens)")
    ax.set_ylabel("walltime speedup over plain decoding (×)")
    ax.set_title(f"Speedup vs draft length, draft/target cost c = {c:g}")
    ax.legend(fontsize=8)
    return ax


def plot_acceptance_vs_k(alphas=(0.6, 0.8, 0.9), ks=(1, 3, 5, 8), measured=None, ax=None):
    """Fraction of drafted tokens accepted vs k (formula lines); ``measured`` maps a label
    to (ks, rates) points, e.g. from the toy models. Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    grid = np.arange(1, max(ks) + 1)
    for alpha in alphas:
        ax.plot(grid, [sp.acceptance_rate(alpha, int(k)) for k in grid], label=f"formula, α = {alpha:g}")
    for label, (mk, rates) in (measured or {}).items():
        ax.plot(mk, rates, "s", ms=7, label=label)
    ax.set_xticks(list(ks))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("draft length K (tokens)")
    ax.set_ylabel("accepted / drafted tokens (fraction)")
    ax.set_title("Acceptance rate falls with K (003 Exercise 2)")
    ax.legend(fontsize=8)
    return ax


def plot_time_per_token(alpha, t_draft, t_target, k_max=16, t_verify=None, ax=None):
    """Expected ms per emitted token vs k, against plain decoding (t_target per token).

    ``t_verify(k)`` (seconds) models the target pass over k+1 positions; default flat.
    Returns the Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    ks = np.arange(1, k_max + 1)
    tv = (lambda k: t_target) if t_verify is None else t_verify
    tpt = [sp.time_per_token(alpha, int(k), t_draft, t_target, tv(int(k))) for k in ks]
    ax.plot(ks, np.array(tpt) / MS, marker=".", label=f"speculative, α = {alpha:g}")
    ax.axhline(t_target / MS, color="C3", ls="--", label="plain decoding")
    best = int(np.argmin(tpt))
    ax.plot(ks[best], tpt[best] / MS, "o", ms=9, mfc="none", color="C0")
    ax.set_xlabel("draft length k (tokens)")
    ax.set_ylabel("time per emitted token (ms)")
    ax.set_title("Time per accepted token")
    ax.legend(fontsize=8)
    return ax


def plot_monte_carlo(alpha, ks, n_steps=20_000, seed=0, ax=None):
    """Monte Carlo mean tokens per target pass (± 2 standard errors) against the formula."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    grid = np.arange(1, max(ks) + 1)
    ax.plot(grid, [sp.expected_tokens_per_step(alpha, int(k)) for k in grid], label="formula")
    sims = [sp.simulate(alpha, int(k), n_steps, seed=seed + i) for i, k in enumerate(ks)]
    ax.errorbar(list(ks), [s.mean_tokens_per_step for s in sims],
                yerr=[2 * s.stderr_tokens_per_step for s in sims], fmt="o",
                label=f"Monte Carlo, {n_steps:,} steps (±2 s.e.)")
    ax.set_xlabel("draft length k (tokens)")
    ax.set_ylabel("tokens per target pass")
    ax.set_title(f"Monte Carlo vs formula, α = {alpha:g}")
    ax.legend(fontsize=8)
    return ax


def plot_decode_cost_vs_k(measurements, roofline=None, ax=None):
    """Measured GPU time of one decode pass vs new tokens k (log-x), optional roofline.

    ``measurements``: DecodeMeasurement objects; ``roofline``: {label: (ks, seconds)}.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    for m in measurements:
        ax.plot(m.k, np.array(m.gpu_kernel) / MS, marker="o", label=f"GPT-2 {m.model}, GPU kernels")
    for label, (ks, secs) in (roofline or {}).items():
        ax.plot(ks, np.array(secs) / MS, ls="--", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("new tokens in one forward pass, k (tokens)")
    ax.set_ylabel("time per forward pass (ms)")
    ax.set_title("One pass over k tokens costs about the same as over 1 (H200, bf16)")
    ax.legend(fontsize=8)
    return ax


def plot_timeline(alpha, k, c, n_steps=6, seed=0, ax=None):
    """Gantt-style timeline: plain decoding vs draft (k·c each step) + verify (1) passes.

    Time is in units of one target pass; each step is labelled with its emitted tokens.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 2.6))
    acc = sp.simulate(alpha, k, n_steps, seed=seed).accepted
    t = 0.0
    emitted = 0
    for a in acc:
        ax.barh(1, k * c, left=t, color="#8fbbe0", edgecolor="k", lw=0.5)
        ax.barh(1, 1.0, left=t + k * c, color="#e08f8f", edgecolor="k", lw=0.5)
        ax.text(t + k * c + 0.5, 1, f"+{int(a) + 1}", ha="center", va="center", fontsize=8)
        t += k * c + 1.0
        emitted += int(a) + 1
    for i in range(emitted):
        ax.barh(0, 1.0, left=i, color="#e08f8f", edgecolor="k", lw=0.5)
    ax.set_yticks([0, 1], ["plain decoding", "speculative"])
    ax.set_xlabel("time (units of one target forward pass)")
    ax.set_title(f"{emitted} tokens: {emitted} target passes plain vs {n_steps} target + "
                 f"{n_steps * k} draft passes (blue = draft, red = target)", fontsize=9)
    ax.set_xlim(0, max(t, emitted) * 1.02)
    return ax


def speculative_explorer(speedup_fn=None):
    """ipywidgets explorer: sliders for alpha, k and c redraw the speedup curve and a timeline.

    ``speedup_fn(alpha, k, c)`` is the student's walltime speedup; a stub falls back to
    ``coursekit``. Returns the widget (constructs headless without error).
    """
    import ipywidgets as w

    alpha = w.FloatSlider(value=0.8, min=0.0, max=0.99, step=0.01, description="α")
    k = w.IntSlider(value=4, min=1, max=16, description="k")
    c = w.FloatSlider(value=0.1, min=0.0, max=1.0, step=0.01, description="c")
    out = w.Output()

    def redraw(*_):
        f = _safe(speedup_fn, sp.walltime_speedup)
        with out:
            out.clear_output(wait=True)
            fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6),
                                           gridspec_kw={"height_ratios": [2, 1]})
            plot_speedup_vs_k((alpha.value,), c.value, 16, speedup_fn, ax=ax1)
            ax1.axvline(k.value, color="gray", ls="--")
            plot_timeline(alpha.value, k.value, c.value, ax=ax2)
            fig.tight_layout()
            plt.show()
            print(f"α = {alpha.value:.2f}, k = {k.value}, c = {c.value:.2f}: speedup "
                  f"{f(alpha.value, k.value, c.value):.2f}× ; best k = "
                  f"{sp.optimal_draft_length(alpha.value, c.value, 16)}")

    watch((alpha, k, c), redraw)
    redraw()
    return w.VBox([w.HBox([alpha, k, c]), out])
