"""Plots and explorers for the training-cost (01) and bottleneck (03) notebooks.

Every function that can use a student's function takes it as an optional argument and
falls back to ``coursekit`` when it is missing, raises (a ``NotImplementedError`` stub)
or returns something unusable, so a plot never breaks a notebook cell.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from ..hardware import ACCELERATORS, get_accelerator
from ..training import flops as F
from ..training import input_pipeline as P
from ..training import roofline as R
from ..units import DAY, DTYPE_BYTES, TFLOP
from . import watch

STAGE_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860")


def _try(fn, fallback, *args):
    """fn(*args) as a finite float, else fallback(*args); returns (value, used_student)."""
    if fn is not None:
        try:
            value = float(fn(*args))
            if math.isfinite(value):
                return value, True
        except Exception:  # noqa: BLE001 - stubs and bugs fall back to the library
            pass
    return float(fallback(*args)), False


# -- 01: iron law, cost vs scale, Table 19 -----------------------------------------------

def plot_iron_law(segments: dict, ax=None, title="Iron law: where the step time goes"):
    """One horizontal stacked bar per row. ``segments`` maps a row label to
    ``{segment name: seconds}``. Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 1.2 + 0.6 * len(segments)))
    names = []
    for parts in segments.values():
        names += [n for n in parts if n not in names]
    rows = list(segments)
    left = np.zeros(len(rows))
    for i, name in enumerate(names):
        widths = np.array([segments[r].get(name, 0.0) for r in rows], dtype=float)
        ax.barh(rows, widths, left=left, color=STAGE_COLORS[i % len(STAGE_COLORS)],
                label=name)
        left += widths
    for y, total in enumerate(left):
        ax.annotate(f"{total:.3g} s", xy=(total, y), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.set_xlabel("time (s)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_xlim(0, max(left.max(), 1e-12) * 1.2)
    return ax


def plot_cost_vs_scale(n_params=None, tokens_per_param=20.0, peak_flops=989 * TFLOP,
                       efficiencies=(0.25, 0.5), n_devices=1024, usd_per_device_hour=3.0,
                       flops_fn=None, marks=None, ax=None):
    """Rental cost (USD) against model size, with D = tokens_per_param * N tokens
    (Hoffmann et al. 2022 use ~20) and C = 6ND, one line per efficiency (MFU).
    ``flops_fn(n_params, n_tokens)`` is the student's 6ND (fallback: coursekit).
    ``marks`` maps a label to (n_params, n_tokens) to place real runs (at the last
    efficiency), annotated with cost and days on ``n_devices``. Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    ns = np.logspace(8, 12, 25) if n_params is None else np.asarray(n_params, dtype=float)
    used = flops_fn is not None
    for i, eta in enumerate(efficiencies):
        costs = []
        for n in ns:
            c, ok = _try(flops_fn, F.training_flops, float(n), float(n) * tokens_per_param)
            used &= ok
            t = F.training_time(c, peak_flops, eta, n_devices)
            costs.append(F.rental_cost(n_devices, t, usd_per_device_hour))
        ax.loglog(ns, costs, color=f"C{i}", label=f"MFU {eta:.0%}")
    for label, (n, d) in (marks or {}).items():
        c, _ = _try(flops_fn, F.training_flops, float(n), float(d))
        t = F.training_time(c, peak_flops, efficiencies[-1], n_devices)
        cost = F.rental_cost(n_devices, t, usd_per_device_hour)
        ax.scatter([n], [cost], color="C3", zorder=3)
        ax.annotate(f"{label}: ${cost:,.0f}, {t / DAY:.1f} days", xy=(n, cost),
                    xytext=(5, -12), textcoords="offset points", fontsize=8)
    ax.set_xlabel("parameters N")
    ax.set_ylabel("rental cost (USD)")
    ax.legend(fontsize=8, loc="upper left")
    src = "your training_flops" if used else "coursekit"
    ax.set_title(f"Cost grows as N² when D = {tokens_per_param:g}·N (6ND from {src}; "
                 f"{n_devices} GPUs at {peak_flops / TFLOP:g} TFLOP/s, "
                 f"${usd_per_device_hour:g}/GPU-h)", fontsize=9)
    return ax


def plot_table19(rows: dict, labels=("FP32 baseline", "optimized")):
    """Small multiples of chapter 002 Table 19. ``rows`` maps "metric (unit)" to a pair
    (baseline, optimized). Returns the Figure."""
    n = len(rows)
    fig, axes = plt.subplots(1, n, figsize=(2.6 * n, 3))
    axes = np.atleast_1d(axes)
    for ax, (metric, (base, opt)) in zip(axes, rows.items()):
        bars = ax.bar(labels, [base, opt], color=["#999999", "#55A868"])
        for b, v in zip(bars, (base, opt)):
            ax.annotate(f"{v:,.3g}", xy=(b.get_x() + b.get_width() / 2, v), ha="center",
                        va="bottom", fontsize=8)
        ax.set_ylabel(metric)
        ax.set_xlabel("configuration")
        ax.set_title(f"{opt / base:.0%} of baseline" if base else metric, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle("GPT-2 on 32 V100s: chapter Table 19", fontsize=10)
    fig.tight_layout()
    return fig


def plot_utilization_vs_mfu(values: dict, ax=None):
    """Bars of percentages, e.g. {"profiler 'GPU utilization'": 0.85, "MFU": 0.086}
    (fractions in, percent on the axis). Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    names = list(values)
    vals = [100 * float(values[k]) for k in names]
    bars = ax.bar(names, vals, color=["#999999", "#C44E52", "#DD8452", "#4C72B0"][:len(vals)])
    for b, v in zip(bars, vals):
        ax.annotate(f"{v:.1f} %", xy=(b.get_x() + b.get_width() / 2, v), ha="center",
                    va="bottom", fontsize=9)
    ax.set_ylim(0, 105)
    ax.set_ylabel("percent of peak / of time (%)")
    ax.set_xlabel("metric")
    ax.set_title("Busy is not useful: utilization vs MFU")
    return ax


def plot_checkpoint_waste(scenarios: dict, ax=None, minutes=(1.0, 1440.0)):
    """First-order wasted share of wall-clock time against the checkpoint interval.

    ``scenarios`` maps a label to ``(checkpoint_s, mtbf_s, restart_s)``; each curve is
    W(tau) = delta/tau + (tau/2 + R)/M (``reliability.expected_waste_fraction``) on a log
    axis of intervals between ``minutes``; with one scenario its two parts are drawn too.
    The lowest point of each curve on the plotted grid is marked. Returns the Axes."""
    from ..training import reliability as REL

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    taus = np.logspace(math.log10(minutes[0] * 60), math.log10(minutes[1] * 60), 241)
    lows = []
    for i, (label, (delta, mtbf, restart)) in enumerate(scenarios.items()):
        waste = np.array([REL.expected_waste_fraction(t, delta, mtbf, restart) for t in taus])
        ax.semilogx(taus / 60, 100 * waste, color=f"C{i}", label=label)
        j = int(np.argmin(waste))
        lows.append(waste[j])
        ax.scatter([taus[j] / 60], [100 * waste[j]], color=f"C{i}", zorder=3)
        if len(scenarios) == 1:
            ax.semilogx(taus / 60, 100 * delta / taus, "--", color="0.5",
                        label="checkpoint writes δ/τ")
            ax.semilogx(taus / 60, 100 * (taus / 2 + restart) / mtbf, ":", color="0.3",
                        label="lost work + restarts (τ/2 + R)/M")
    ax.set_ylim(0, min(100.0, 100 * 4 * max(lows)))
    ax.set_xlabel("checkpoint interval τ (minutes of training)")
    ax.set_ylabel("wasted share of wall-clock time (%)")
    ax.set_title("Checkpoint too often and the writes waste time; too rarely and failures do",
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper center")
    return ax


# -- 03: roofline, Gantt, sawtooth -----------------------------------------------------

def _ops_for_dtype(dtype):
    size_dtype = dtype if dtype in DTYPE_BYTES else "fp16"
    return R.chapter_operations(size_dtype)


def plot_roofline(accelerators=("A100-80GB", "V100-32GB"), dtype="fp16", operations=None,
                  attainable_fn=None, ax=None):
    """Log-log roofline: attainable FLOP/s = min(peak, I * BW) for each accelerator at
    ``dtype``, with ``operations`` (default: the chapter's GPT-2 XL layer operations in
    ``dtype``) placed on the first roof. ``attainable_fn(intensity, accelerator, dtype)``
    is the student's roofline (fallback: coursekit). Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.8))
    ops = _ops_for_dtype(dtype) if operations is None else operations
    xs = np.logspace(-2, 4, 200)
    used_student = attainable_fn is not None
    for i, name in enumerate(accelerators):
        acc = get_accelerator(name)
        d = dtype if dtype in acc.dtypes else acc.dtypes[0]
        ys = []
        for x in xs:
            y, ok = _try(attainable_fn, R.attainable_flops, float(x), acc.name, d)
            used_student &= ok
            ys.append(y)
        ax.loglog(xs, np.array(ys) / TFLOP, color=f"C{i}", label=f"{acc.name} {d}")
        ridge = R.ridge_point(acc, d)
        ax.axvline(ridge, color=f"C{i}", linestyle=":", linewidth=1)
        ax.annotate(f"ridge {ridge:.0f}", xy=(ridge, acc.peak(d) / TFLOP), xytext=(4, -12),
                    textcoords="offset points", fontsize=7, color=f"C{i}")
    first = get_accelerator(accelerators[0])
    d0 = dtype if dtype in first.dtypes else first.dtypes[0]
    for j, op in enumerate(ops):
        y = R.attainable_flops(op.intensity, first, d0) / TFLOP
        marker = "o" if R.bound(op.intensity, first, d0) == "compute-bound" else "s"
        ax.scatter([op.intensity], [y], marker=marker, color=f"C{(j + 3) % 10}", zorder=3,
                   label=f"{op.name} ({op.intensity:.3g} FLOP/B)")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable performance (TFLOP/s)")
    src = "your attainable function" if used_student else "coursekit"
    ax.set_title(f"Roofline at {dtype} (roof from {src}); ■ memory-bound, ● compute-bound",
                 fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def plot_pipeline_gantt(stage_times: dict, n_batches=4, axes=None):
    """Two Gantt charts, serial (Figure 10) and overlapped (Figure 11), for stages given
    as ``{name: seconds per batch}`` in pipeline order. Returns the Figure."""
    names = list(stage_times)
    times = [float(stage_times[n]) for n in names]
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=(8, 1.2 + 0.45 * len(names) * 2), sharex=True)
    else:
        fig = axes[0].figure
    # serial: batch b, stage s starts after everything before it
    t = 0.0
    for b in range(n_batches):
        for s, dur in enumerate(times):
            axes[0].barh(s, dur, left=t, color=STAGE_COLORS[s % 6], edgecolor="white")
            axes[0].annotate(str(b + 1), xy=(t + dur / 2, s), ha="center", va="center",
                             fontsize=7, color="white")
            t += dur
    serial_total = t
    # overlapped: stage s of batch b starts when stage s-1 of b and stage s of b-1 are done
    finish = np.zeros((n_batches, len(times)))
    for b in range(n_batches):
        for s, dur in enumerate(times):
            start = max(finish[b, s - 1] if s else 0.0, finish[b - 1, s] if b else 0.0)
            finish[b, s] = start + dur
            axes[1].barh(s, dur, left=start, color=STAGE_COLORS[s % 6], edgecolor="white")
            axes[1].annotate(str(b + 1), xy=(start + dur / 2, s), ha="center", va="center",
                             fontsize=7, color="white")
    overlap_total = finish[-1, -1]
    for ax, label, total in ((axes[0], "serial (sum of stages)", serial_total),
                             (axes[1], "overlapped (slowest stage)", overlap_total)):
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names)
        ax.invert_yaxis()
        ax.set_ylabel("stage")
        ax.set_title(f"{label}: {n_batches} batches in {total:.3g} s", fontsize=9)
    axes[1].set_xlabel("time (s)")
    fig.tight_layout()
    return fig


def plot_warp_sawtooth(max_batch=200, warp_size=32, util_fn=None, ax=None):
    """Warp utilization batch / (ceil(batch / w) * w) for batch = 1..max_batch (chapter
    002 Table 6). ``util_fn(batch, warp_size)`` is the student's (fallback: coursekit).
    Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    batches = np.arange(1, max_batch + 1)
    used = util_fn is not None
    ys = []
    for b in batches:
        y, ok = _try(util_fn, P.warp_utilization, int(b), warp_size)
        used &= ok
        ys.append(100 * y)
    ax.plot(batches, ys, marker=".", markersize=3)
    for b in (33, 65):
        if b <= max_batch:
            ax.annotate(f"{b}: {ys[b - 1]:.1f} %", xy=(b, ys[b - 1]), xytext=(4, -14),
                        textcoords="offset points", fontsize=8)
    ax.set_xlabel("batch size")
    ax.set_ylabel("warp utilization (%)")
    src = "your function" if used else "coursekit"
    ax.set_title(f"Warp quantization, warp = {warp_size} threads (from {src})", fontsize=9)
    ax.set_ylim(0, 105)
    return ax


def plot_utilization_vs_workers(worker_rate, compute_rate, other_rates=None, target=None,
                                max_workers=32, cores=None, util_fn=None, ax=None,
                                title=None):
    """Accelerator utilization (%) against the number of loader workers N = 1..max_workers:
    U(N) = min(1, min(N * worker_rate, other stage rates) / compute_rate) (chapter 002
    Eq 8, 9, 11). ``util_fn(pipeline_rate, compute_rate)`` is the student's Eq 11
    (fallback: coursekit). Draws the workers-only line (what N workers would give with no
    other stage), the cap the other stages set, ``target`` and a ``cores`` line (CPU cores
    per GPU). ``other_rates``: ``{stage name: items/s}``. Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    others = dict(other_rates or {})
    floor = min(others.values(), default=math.inf)
    ns = np.arange(1, int(max_workers) + 1)
    used = util_fn is not None
    ys = []
    for n in ns:
        y, ok = _try(util_fn, P.accelerator_utilization, min(n * worker_rate, floor),
                     compute_rate)
        used &= ok
        ys.append(100 * y)
    ax.plot(ns, 100 * np.minimum(1.0, ns * worker_rate / compute_rate), color="#999999",
            linestyle=":", label="workers alone (Eq 8 / Eq 11)")
    ax.plot(ns, ys, marker="o", markersize=3, color="C0", label="utilization U(N)")
    if others and P.utilization_cap(compute_rate, others) < 1:
        stage = min(others, key=others.get)
        cap = 100 * P.utilization_cap(compute_rate, others)
        ax.axhline(cap, color="C3", linestyle="--", linewidth=1)
        ax.annotate(f"cap set by {stage}: {cap:.0f} %", xy=(ns[0], cap), xytext=(0, 4),
                    textcoords="offset points", ha="left", fontsize=8, color="C3")
    if target is not None:
        ax.axhline(100 * target, color="C2", linestyle="-.", linewidth=1,
                   label=f"target {100 * target:.0f} %")
    if cores is not None and cores <= ns[-1]:
        ax.axvline(cores, color="#555555", linestyle=":", linewidth=1)
        ax.annotate(f"{cores} CPU cores per GPU", xy=(cores, 52), xytext=(-3, 0),
                    textcoords="offset points", fontsize=8, color="#555555",
                    rotation=90, ha="right", va="center")
    ax.set_ylim(0, 105)
    ax.set_xlabel("data-loader workers N")
    ax.set_ylabel("accelerator utilization (%)")
    src = "your accelerator_utilization" if used else "coursekit"
    ax.set_title(title or f"Utilization vs workers (Eq 11 from {src})", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def plot_step_breakdown(runs: dict, ax=None):
    """One horizontal bar per run, split into data wait, the roofline minimum of the
    step's work (compute or memory roof) and the rest (overhead), in percent of the step
    (``roofline.step_breakdown``). ``runs`` maps a label to ``(counters, peak_flops,
    hbm_bandwidth)``, counters as in ``roofline.COUNTERS``. Returns the Axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 1.0 + 0.55 * len(runs)))
    names = list(runs)
    colors = {"data wait": "#C44E52", "compute roof": "#4C72B0", "memory roof": "#DD8452",
              "overhead": "#999999"}
    seen = set()
    for y, name in enumerate(names):
        counters, peak, bw = runs[name]
        b = R.step_breakdown(*(counters[k] for k in R.COUNTERS), peak, bw)
        roof = "compute roof" if b.roof == "compute-bound" else "memory roof"
        left = 0.0
        for part, seconds in (("data wait", b.data_wait), (roof, b.roofline_time),
                              ("overhead", b.overhead)):
            width = 100 * seconds / b.step_time
            ax.barh(y, width, left=left, color=colors[part],
                    label=None if part in seen else part, edgecolor="white")
            if width >= 6:
                ax.annotate(f"{width:.0f} %", xy=(left + width / 2, y), ha="center",
                            va="center", fontsize=8, color="white")
            seen.add(part)
            left += width
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the step time (%)")
    ax.set_ylabel("run")
    ax.set_title("Where each step goes: data wait, roofline minimum, the rest", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4)
    ax.figure.tight_layout()
    return ax


# -- widgets ---------------------------------------------------------------------------

def roofline_explorer(attainable_fn=None):
    """ipywidgets explorer: accelerator, dtype and a GEMM shape (m, k, n) -> where the
    GEMM sits on the roofline and whether it is memory- or compute-bound. Returns the
    widget (constructs headless)."""
    import ipywidgets as w

    acc = w.Dropdown(options=list(ACCELERATORS), value="A100-80GB", description="GPU")
    dtype = w.Dropdown(options=["fp32", "tf32", "bf16", "fp16", "fp8"], value="bf16",
                       description="dtype")
    m = w.IntText(value=4096, description="m (tokens)")
    k = w.IntText(value=1600, description="k")
    n = w.IntText(value=6400, description="n")
    out = w.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            a = get_accelerator(acc.value)
            if dtype.value not in a.dtypes:
                print(f"{a.name} has no {dtype.value} peak; choose one of {a.dtypes}")
                return
            try:
                op = R.gemm(m.value, k.value, n.value, dtype.value)
            except (TypeError, ValueError) as exc:
                print(f"bad shape: {exc}")
                return
            fig, ax = plt.subplots(figsize=(6.5, 4))
            plot_roofline((a.name,), dtype.value, operations=(op,),
                          attainable_fn=attainable_fn, ax=ax)
            plt.show()
            print(f"GEMM {m.value}x{k.value}x{n.value}: intensity {op.intensity:,.1f} FLOP/byte,"
                  f" ridge {R.ridge_point(a, dtype.value):,.1f} FLOP/byte -> "
                  f"{R.bound(op.intensity, a, dtype.value)}, attainable "
                  f"{R.attainable_flops(op.intensity, a, dtype.value) / TFLOP:,.1f} TFLOP/s")

    watch((acc, dtype, m, k, n), redraw)
    redraw()
    return w.VBox([w.HBox([acc, dtype]), w.HBox([m, k, n]), out])


def pipeline_explorer(util_fn=None):
    """ipywidgets explorer: workers, prefetch factor and stage times -> preprocessing
    rate, accelerator utilization (``util_fn(pipeline_rate, compute_rate)``, the
    student's, fallback coursekit), serial vs overlapped step time and buffer count.
    Returns the widget (constructs headless)."""
    import ipywidgets as w

    workers = w.IntSlider(value=1, min=1, max=16, description="workers")
    prefetch = w.IntSlider(value=2, min=1, max=8, description="prefetch")
    transform = w.FloatSlider(value=30.0, min=1.0, max=200.0, step=1.0,
                              description="transform ms")
    transfer = w.FloatSlider(value=1.0, min=0.0, max=50.0, step=0.5,
                             description="transfer ms")
    compute = w.FloatSlider(value=10.0, min=1.0, max=200.0, step=1.0,
                            description="compute ms")
    out = w.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            pre_t = transform.value / 1e3 / workers.value
            stages = {"preprocess": pre_t, "transfer": transfer.value / 1e3,
                      "compute": compute.value / 1e3}
            rate = P.system_rate(1 / pre_t, 1 / max(stages["transfer"], 1e-9))
            util, ok = _try(util_fn, P.accelerator_utilization, rate, 1 / stages["compute"])
            fig = plot_pipeline_gantt(stages, n_batches=4)
            plt.show()
            print(f"preprocessing {1 / pre_t:,.1f} batches/s with {workers.value} workers; "
                  f"accelerator utilization {util:.0%} (from "
                  f"{'your function' if ok else 'coursekit'}); serial step "
                  f"{P.serial_iteration_time(list(stages.values())) * 1e3:.1f} ms, overlapped "
                  f"{P.overlapped_iteration_time(list(stages.values())) * 1e3:.1f} ms; "
                  f"{P.prefetch_batches(workers.value, prefetch.value)} batches buffered")
            plt.close(fig)

    watch((workers, prefetch, transform, transfer, compute), redraw)
    redraw()
    return w.VBox([w.HBox([workers, prefetch]), w.HBox([transform, transfer, compute]), out])
