"""Plots and the 3D-parallelism configurator for assignment 04 (parallelism advisor).

Every figure labels its axes with units. Functions return the matplotlib Figure (or an
ipywidgets widget) and never print. Widgets construct headless and never affect grades.
"""

from __future__ import annotations

import numpy as np

from ..hardware import LINKS, get_link
from ..parallel.advisor import Job, Plan, evaluate_plan
from ..parallel.pipeline import bubble_fraction as _bubble_fraction
from ..units import GB
from . import watch

__all__ = ["plot_scaling", "plot_pipeline_gantt", "plot_plan_memory", "plot_step_breakdown",
           "parallelism_configurator", "plot_fix_costs"]

_COLORS = {"F": "#4C72B0", "B": "#DD8452"}


def _plt():
    import matplotlib.pyplot as plt
    return plt


def plot_scaling(n, speedups: dict, *, title="Data-parallel scaling"):
    """Speedup (left) and scaling efficiency (right) vs node count, with the ideal line.

    ``speedups`` maps a label (e.g. "10GbE") to an array of speedups over ``n``.
    """
    plt = _plt()
    n = np.asarray(n, dtype=float)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    ax1.plot(n, n, "k--", label="ideal (linear)")
    for label, s in speedups.items():
        s = np.asarray(s, dtype=float)
        ax1.plot(n, s, marker="o", ms=3, label=label)
        ax2.plot(n, 100 * s / n, marker="o", ms=3, label=label)
    ax2.axhline(100, color="k", ls="--", lw=1)
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes N (count)")
        ax.grid(alpha=0.3)
    ax1.set_yscale("log", base=2)
    ax1.set_ylabel("speedup T1 / TN (x)")
    ax2.set_ylabel("scaling efficiency T1 / (N TN) (%)")
    ax2.set_ylim(0, 105)
    ax1.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_pipeline_gantt(timelines, *, title="Pipeline schedule: the assembly line"):
    """One Gantt panel per :class:`~coursekit.parallel.pipeline.Timeline` (rows = GPUs);
    forward passes blue, backward orange, gaps are the bubble."""
    plt = _plt()
    timelines = list(timelines)
    fig, axes = plt.subplots(len(timelines), 1, figsize=(10, 1.0 + 1.3 * len(timelines)),
                             squeeze=False)
    t_max = max(tl.makespan for tl in timelines)
    for ax, tl in zip(axes[:, 0], timelines):
        for t in tl.tasks:
            ax.broken_barh([(t.start, t.end - t.start)], (t.stage - 0.4, 0.8),
                           facecolors=_COLORS[t.kind], edgecolor="white", linewidth=0.3)
        ax.set_yticks(range(tl.p))
        ax.set_yticklabels([f"GPU {s}" for s in range(tl.p)])
        ax.invert_yaxis()
        ax.set_xlim(0, t_max)
        ax.set_ylabel("stage")
        label = f"{tl.name}, p={tl.p}, m={tl.m}" + (f", v={tl.v}" if tl.v > 1 else "")
        ax.set_title(f"{label}: bubble {100 * tl.idle_fraction:.0f}% of the step",
                     fontsize=9)
    axes[-1, 0].set_xlabel("time (units of one forward pass of one micro-batch)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in _COLORS.values()]
    axes[0, 0].legend(handles, ["forward", "backward"], loc="upper right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_plan_memory(reports, capacity_bytes, *, labels=None,
                     title="Per-GPU memory of candidate plans"):
    """Stacked bars of per-GPU memory (GB) by component for each plan report, with the
    GPU capacity as a line; plans rejected before memory was computed are skipped."""
    plt = _plt()
    reports = [r for r in reports if r.memory is not None]
    labels = labels or [f"dp{r.plan.dp} tp{r.plan.tp} pp{r.plan.pp}\nZ{r.plan.zero_stage} "
                        f"{r.plan.recompute[:3]}" for r in reports]
    parts = ("weights", "gradients", "master", "optimizer", "activations")
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(reports)), 4))
    x = np.arange(len(reports))
    bottom = np.zeros(len(reports))
    for part in parts:
        vals = np.array([getattr(r.memory, part) for r in reports]) / GB
        ax.bar(x, vals, bottom=bottom, label=part)
        bottom += vals
    ax.axhline(capacity_bytes / GB, color="red", ls="--",
               label=f"capacity {capacity_bytes / GB:.0f} GB")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("memory per GPU (GB)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot_step_breakdown(report, *, ax=None):
    """Horizontal bar of one plan's step-time components (s)."""
    plt = _plt()
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 2.8))
    else:
        fig = ax.figure
    parts = report.breakdown()
    ax.barh(list(parts), list(parts.values()), color="#55A868")
    ax.invert_yaxis()
    ax.set_xlabel("time per optimizer step (s)")
    ax.set_title(f"step {report.step_time:.2f} s, MFU {100 * report.mfu:.1f} %",
                 fontsize=9)
    fig.tight_layout()
    return fig


def _render(job, tp, pp, m, zero, recompute, bubble_fn):
    """Figure for the configurator (memory vs capacity, bubble gauge, breakdown)."""
    plt = _plt()
    n = job.n_gpus
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2),
                             gridspec_kw={"width_ratios": [1, 1, 2.2]})
    dp = n // (tp * pp)
    if n % (tp * pp) or job.global_batch % (dp * m):
        for ax in axes:
            ax.axis("off")
        axes[1].text(0.5, 0.5, f"tp x pp = {tp * pp} does not divide N = {n}, or the "
                     f"batch {job.global_batch} does not split into dp={dp} x m={m}",
                     ha="center", va="center", wrap=True)
        return fig
    b = job.global_batch // (dp * m)
    rep = evaluate_plan(job, Plan(dp, tp, pp, zero, b, m, recompute))
    cap = job.accelerator.memory_bytes / GB
    ax = axes[0]
    if rep.memory is not None:
        used = rep.memory_bytes / GB
        ax.bar([0], [used], color="#55A868" if rep.fits else "#C44E52")
    ax.axhline(cap, color="red", ls="--")
    ax.set_xticks([])
    ax.set_ylabel("memory per GPU (GB)")
    ax.set_title(rep.reason or f"fits: {rep.memory_bytes / GB:.1f} of {cap:.0f} GB",
                 fontsize=8)
    try:
        bub = float(bubble_fn(pp, m)) if bubble_fn is not None else _bubble_fraction(pp, m)
    except Exception:  # noqa: BLE001 - a student stub falls back to the library
        bub = _bubble_fraction(pp, m)
    axes[1].bar([0], [100 * bub], color="#C44E52" if bub >= 0.1 else "#55A868")
    axes[1].axhline(10, color="k", ls=":", lw=1)
    axes[1].set_ylim(0, 100)
    axes[1].set_xticks([])
    axes[1].set_ylabel("pipeline bubble (% of step)")
    axes[1].set_title(f"dp={dp} tp={tp} pp={pp} b={b} m={m}", fontsize=8)
    if rep.memory is not None:
        plot_step_breakdown(rep, ax=axes[2])
    else:
        axes[2].axis("off")
    fig.tight_layout()
    return fig


def parallelism_configurator(job: Job, *, bubble_fn=None):
    """An ipywidgets 3D-parallelism configurator: TP/PP sliders (dp = N/(tp*pp)), micro-
    batch count, ZeRO stage, recompute and inter-node link; shows per-GPU memory against
    capacity, a bubble gauge and the step-time breakdown. ``bubble_fn(p, m)`` (e.g. the
    student's) drives the gauge, falling back to the library on error."""
    import ipywidgets as w
    from dataclasses import replace

    plt = _plt()
    n, g = job.n_gpus, job.node_size
    tps = [t for t in (1, 2, 4, 8, 16) if t <= n]
    pps = [p for p in range(1, min(n, job.model.n_layers) + 1) if n % p == 0]
    ms = [m for m in range(1, job.global_batch + 1) if job.global_batch % m == 0]
    tp = w.SelectionSlider(options=tps, value=min(g, tps[-1]), description="TP")
    pp = w.SelectionSlider(options=pps, value=pps[0], description="PP")
    m = w.SelectionSlider(options=ms, value=ms[0], description="micro-batches")
    zero = w.IntSlider(value=1, min=0, max=3, description="ZeRO stage")
    rec = w.Dropdown(options=["none", "selective", "full"], value="selective",
                     description="recompute")
    link = w.Dropdown(options=list(LINKS), value=job.inter_link.name,
                      description="inter-node")
    out = w.Output()

    def update(*_):
        j = replace(job, inter_link=get_link(link.value))
        with out:
            out.clear_output(wait=True)
            fig = _render(j, tp.value, pp.value, m.value, zero.value, rec.value, bubble_fn)
            plt.show()
            plt.close(fig)

    watch((tp, pp, m, zero, rec, link), update)
    update()
    return w.VBox([w.HBox([tp, pp, m]), w.HBox([zero, rec, link]), out])


def plot_fix_costs(penalties, async_costs, zero_cost, sync_cost, *,
                   title="Monthly cost of the two fixes"):
    """Monthly dollars against the async staleness penalty (extra updates to converge, as
    a fraction): async as a line over ``penalties``, ZeRO and today's bill as flat lines;
    the crossing is where async stops paying."""
    plt = _plt()
    pen = 100 * np.asarray(penalties, dtype=float)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.plot(pen, np.asarray(async_costs, dtype=float) / 1e6, marker="o", ms=3,
            label="switch to async SGD")
    ax.axhline(zero_cost / 1e6, color="#55A868", label="switch to ZeRO (still synchronous)")
    ax.axhline(sync_cost / 1e6, color="k", ls="--", label="today: wait for all")
    ax.set_xlabel("async staleness penalty (extra updates to converge, %)")
    ax.set_ylabel("cost per month (million $)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
