"""Plots of 08_reality_check: predictions against measurements."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..units import GiB, MS


def plot_predicted_vs_measured(labels, predicted_bytes, measured_bytes, ax=None,
                               title="Activation memory: predicted vs measured"):
    """Log-log scatter of predicted against measured bytes (shown in GiB), with the y = x
    line and a ±25% band. One point per label."""
    pred = np.asarray(predicted_bytes, dtype=float) / GiB
    meas = np.asarray(measured_bytes, dtype=float) / GiB
    if pred.shape != meas.shape or pred.size != len(labels):
        raise ValueError("labels, predicted_bytes and measured_bytes must have one entry each")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 5))
    lo, hi = min(pred.min(), meas.min()) / 1.5, max(pred.max(), meas.max()) * 1.5
    line = np.array([lo, hi])
    ax.plot(line, line, color="black", lw=1, label="predicted = measured")
    ax.fill_between(line, line / 1.25, line * 1.25, color="0.85", label="±25%")
    ax.scatter(meas, pred, zorder=3)
    for x, y, text in zip(meas, pred, labels):
        ax.annotate(text, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="measured (GiB)", ylabel="predicted (GiB)", title=title)
    ax.legend(loc="upper left", fontsize=8)
    return ax


def plot_decode_vs_floor(batch, measured_s, floor_s, ax=None,
                         title="Decode step time: measured vs the memory-bound floor"):
    """Step time (ms) against batch size: the measurement and the HBM floor."""
    batch = np.asarray(batch, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    ax.plot(batch, np.asarray(measured_s) / MS, "o-", label="measured")
    ax.plot(batch, np.asarray(floor_s) / MS, "s--", label="floor: bytes read / HBM bandwidth")
    ax.set(xscale="log", xlabel="batch size (sequences)", ylabel="step time (ms)",
           title=title)
    ax.set_xticks(batch, [str(int(b)) for b in batch])
    ax.legend(fontsize=8)
    return ax
