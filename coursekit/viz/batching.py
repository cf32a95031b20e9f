"""Plots and the timeline explorer for the continuous-batching notebook (06).

Every function draws on an Axes (created when ``ax`` is None) and returns it; functions
that accept a student's simulator fall back to ``coursekit`` when it raises.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..serving import batching as bt
from ..units import MS
from . import watch

_COLORS = {"static": "C3", "continuous": "C0", "paged": "C2"}


def _token_result(fn, lengths, batch_size, policy):
    """The student's ``fn(lengths, batch_size)`` result if it works and looks like a
    :class:`TokenStepResult`; otherwise the library's."""
    if fn is not None:
        try:
            r = fn(list(lengths), batch_size)
            if isinstance(r, bt.TokenStepResult):
                return r
        except Exception:  # noqa: BLE001 - stubs and bugs fall back to the library
            pass
    return bt.simulate_token_steps(lengths, batch_size, policy)


def plot_slot_gantt(result, ax=None, max_slots=32):
    """Slots (rows) against steps: one bar per request, idle slot-steps left blank.

    Static batching shows the hatched waiting-for-the-longest region of every group.
    Returns the Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    B = min(result.batch_size, max_slots)
    cmap = plt.get_cmap("tab20")
    for i, (s, a, d, lat) in enumerate(zip(result.slot, result.start, result.done,
                                           result.latency)):
        if s >= B:
            continue
        ax.broken_barh([(a, d - a)], (s - 0.4, 0.8), color=cmap(i % 20), lw=0.3, ec="k")
        if lat > d:  # static: the slot idles until the group returns
            ax.broken_barh([(d, lat - d)], (s - 0.4, 0.8), facecolor="none", hatch="///",
                           ec="0.6", lw=0.3)
    ax.set_ylim(-0.6, B - 0.4)
    ax.set_xlim(0, result.total_steps)
    ax.invert_yaxis()
    ax.set_xlabel("decode step (tokens per slot)")
    ax.set_ylabel("batch slot")
    ax.set_title(f"{result.policy} batching, {result.batch_size} slots: "
                 f"{result.total_steps} steps, utilization {result.utilization:.1%} "
                 "(hatched = idle slot)", fontsize=9)
    return ax


def plot_utilization_timeline(results, ax=None):
    """Fraction of slots producing a useful token at each step, one line per entry (the
    lesson's Exercise 3 plot). ``results``: {label: TokenStepResult or per-step array of
    utilization fractions}. Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.2))
    for i, (label, r) in enumerate(results.items()):
        tl = np.asarray(r.timeline if isinstance(r, bt.TokenStepResult) else r, dtype=float)
        steps = np.arange(1, tl.size + 1)
        color = _COLORS.get(getattr(r, "policy", label), f"C{i}")
        ax.step(steps, 100 * tl, where="post", color=color,
                label=f"{label}: {tl.size} steps, mean {100 * tl.mean():.1f}%")
    ax.set_ylim(0, 105)
    ax.set_xlabel("decode step")
    ax.set_ylabel("slot utilization (%)")
    ax.set_title("Useful slots per step")
    ax.legend(fontsize=8)
    return ax


def plot_latency_distribution(latencies, ax=None, unit="steps", scale=1.0):
    """Empirical CDF of per-request latency for each label in ``latencies``
    ({label: array}); ``scale`` divides the values (e.g. ``MS``). Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for i, (label, lat) in enumerate(latencies.items()):
        x = np.sort(np.asarray(lat, dtype=float)) / scale
        y = np.arange(1, x.size + 1) / x.size
        ax.step(x, 100 * y, where="post", color=_COLORS.get(label, f"C{i}"),
                label=f"{label}: mean {x.mean():.4g}, P90 {np.percentile(x, 90):.4g} {unit}")
    ax.set_xlabel(f"latency ({unit})")
    ax.set_ylabel("requests finished (%)")
    ax.set_title("Latency distribution (empirical CDF)")
    ax.legend(fontsize=8)
    return ax


def plot_throughput_latency(curves, slo_s=None, ax=None):
    """P90 end-to-end latency against achieved throughput as the arrival rate rises.

    ``curves``: {label: (throughput_requests_per_s, p90_latency_s)} arrays. Returns Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    for i, (label, (thr, p90)) in enumerate(curves.items()):
        ax.plot(thr, p90, marker="o", ms=4, color=_COLORS.get(label, f"C{i}"), label=label)
    if slo_s is not None:
        ax.axhline(slo_s, color="gray", ls="--", lw=1, label=f"SLO {slo_s:g} s")
    ax.set_yscale("log")
    ax.set_xlabel("throughput (requests/s)")
    ax.set_ylabel("P90 end-to-end latency (s)")
    ax.set_title("Throughput vs latency as load rises")
    ax.legend(fontsize=8)
    return ax


def plot_serving_timeline(result, ax=None):
    """Busy slots and KV-cache use over time for one :class:`ServingResult`. Returns Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    t = result.timeline_t
    ax.step(t, result.timeline_useful, where="post", color="C0", label="slots producing")
    ax.set_ylim(0, result.batch_size * 1.05 + 0.5)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("slots (requests)")
    ax2 = ax.twinx()
    if np.isfinite(result.kv_capacity_blocks):
        ax2.step(t, 100 * result.kv_utilization, where="post", color="C2", alpha=0.7,
                 label="KV blocks used")
        ax2.set_ylabel("KV cache used (% of blocks)")
        ax2.set_ylim(0, 105)
    else:
        ax2.step(t, result.timeline_kv_tokens / 1e3, where="post", color="C2", alpha=0.7,
                 label="KV tokens held")
        ax2.set_ylabel("KV cache (thousand tokens)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right")
    ax.set_title(f"{result.scheduler}: {result.workload.n} requests, "
                 f"{result.throughput_tokens:,.0f} tokens/s, "
                 f"{int(result.preemptions.sum())} preemptions", fontsize=9)
    return ax


def plot_step_time_vs_batch(measured, step_model, ax=None):
    """Measured H200 decode step (:class:`DecodeVsBatch`) against the roofline model at
    the same context: wall, GPU kernels, GPU kernels minus the cache copy. Returns Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4))
    b = measured.batch
    ax.plot(b, measured.wall_s / MS, "o-", color="C7", label="measured wall time")
    ax.plot(b, measured.gpu_s / MS, "s-", color="C1", label="measured GPU kernels")
    ax.plot(b, (measured.gpu_s - measured.cache_copy_s) / MS, "^-", color="C3",
            label="GPU kernels minus HF cache copy")
    grid = np.geomspace(b.min(), b.max(), 60)
    ax.plot(grid, step_model.decode_step_time(grid, measured.past_len) / MS, "k--",
            label=f"model: {step_model.name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch (sequences decoding together)")
    ax.set_ylabel("time per decode step (ms)")
    ax.set_title(f"{measured.model} on {measured.accelerator}, {measured.past_len}-token "
                 "cache", fontsize=9)
    ax.legend(fontsize=7)
    return ax


def timeline_explorer(n_requests=40, seed=0, static_fn=None, continuous_fn=None):
    """ipywidgets explorer: policy, batch size, arrival rate and KV capacity redraw a
    serving timeline (slots and KV over time) and the slot Gantt chart of the lesson's
    token-step model. Never affects grades; constructs headless. Returns the widget."""
    import ipywidgets as w

    policy = w.Dropdown(options=list(bt.SCHEDULERS), value="continuous", description="policy")
    batch = w.IntSlider(value=8, min=1, max=32, description="slots")
    rate = w.FloatLogSlider(value=0.05, base=10, min=-3, max=0, step=0.1,
                            description="req/step")
    kv = w.IntSlider(value=200, min=20, max=1000, step=10, description="KV blocks")
    out = w.Output()
    lengths = bt.lesson_lengths(n_requests, seed)

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            try:
                need = int(np.max(-(-lengths // bt.BLOCK_SIZE)))
                cap = max(kv.value, need) if policy.value == "paged" else None
                wl = bt.Workload(bt.poisson_arrivals(n_requests, rate.value, seed), 0, lengths)
                res = bt.simulate(wl, policy.value, batch.value, None, cap)
                fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6))
                plot_serving_timeline(res, ax=ax1)
                ax1.set_xlabel("time (steps; 1 step = 1 model iteration)")
                tok_policy = "static" if policy.value == "static" else "continuous"
                fn = static_fn if tok_policy == "static" else continuous_fn
                plot_slot_gantt(_token_result(fn, lengths, batch.value, tok_policy), ax=ax2)
                ax2.set_title(ax2.get_title() + " - all requests queued at step 0",
                              fontsize=9)
                fig.tight_layout()
                plt.show()
                p = res.percentiles()
                print(f"{policy.value}, {batch.value} slots, {rate.value:.3g} requests/step"
                      f"{'' if cap is None else f', {cap} KV blocks'}: "
                      f"P50 {p[50]:.0f} / P90 {p[90]:.0f} / P99 {p[99]:.0f} steps end-to-end, "
                      f"slot utilization {res.slot_utilization:.1%}, "
                      f"{int(res.preemptions.sum())} preemptions")
            except Exception as exc:  # noqa: BLE001 - an explorer must never break a cell
                print(f"explorer could not draw: {exc}")

    watch((policy, batch, rate, kv), redraw)
    redraw()
    return w.VBox([w.HBox([policy, batch]), w.HBox([rate, kv]), out])


def plot_slot_tradeoff(tradeoff, p90_slo_s=None, chosen=None, axes=None):
    """Throughput (tokens/s) and P90 latency (s) against the number of slots B for one
    :class:`~coursekit.serving.batching.SlotTradeoff`: the candidates that fit in the KV
    cache and meet the SLO shaded green, those the KV cache cannot hold hatched, the SLO
    as a dashed line and ``chosen`` (a slot count or None) starred. Returns the two Axes."""
    if axes is None:
        _, axes = plt.subplots(2, 1, figsize=(7.5, 5.5), sharex=True)
    ax_thr, ax_lat = axes
    B = np.asarray(tradeoff.candidates, dtype=float)
    order = np.argsort(B)
    B = B[order]
    thr = np.asarray(tradeoff.throughput_tokens)[order]
    p90 = np.asarray(tradeoff.p90_latency_s)[order]
    fits = np.asarray(tradeoff.kv_fits)[order]
    ok = fits & (p90 <= p90_slo_s) if p90_slo_s is not None else fits
    mids = (B[1:] + B[:-1]) / 2
    half = (B[-1] - B[0]) / max(2 * (B.size - 1), 1) if B.size > 1 else 1.0
    edges = np.concatenate([[B[0] - half], mids, [B[-1] + half]])
    for ax in (ax_thr, ax_lat):
        for i in range(B.size):
            if ok[i]:
                ax.axvspan(edges[i], edges[i + 1], color="C2", alpha=0.15, lw=0,
                           label="feasible" if i == int(np.argmax(ok)) else None)
            elif not fits[i]:
                ax.axvspan(edges[i], edges[i + 1], facecolor="none", hatch="///", ec="0.6",
                           lw=0, label="KV cache full" if i == int(np.argmin(fits)) else None)
    ax_thr.plot(B, thr, "o-", color="C0", label="throughput")
    ax_lat.plot(B, p90, "s-", color="C3", label="P90 latency")
    if p90_slo_s is not None:
        ax_lat.axhline(p90_slo_s, color="gray", ls="--", lw=1, label=f"SLO {p90_slo_s:g} s")
    if chosen is not None and chosen in B:
        i = int(np.flatnonzero(B == chosen)[0])
        ax_thr.plot(B[i], thr[i], "*", ms=16, color="k", label=f"chosen: {chosen} slots")
        ax_lat.plot(B[i], p90[i], "*", ms=16, color="k")
    ax_thr.set_ylabel("throughput (tokens/s)")
    ax_lat.set_ylabel("P90 latency (s)")
    ax_lat.set_xlabel("slots B (sequences per decode step)")
    ax_thr.set_title(f"Slots vs throughput and latency (KV cache holds {tradeoff.max_slots_kv} "
                     f"sequences of {tradeoff.kv_seq_tokens:,} tokens)", fontsize=9)
    ax_thr.legend(fontsize=8, loc="lower right")
    ax_lat.legend(fontsize=8, loc="upper center")
    return axes
