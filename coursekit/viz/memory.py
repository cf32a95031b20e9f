"""Plots and an explorer for the training-memory notebook (02_memory_calculator)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from ..hardware import ACCELERATORS
from ..models import MODELS, get_model
from ..training import memory as mem
from ..units import GB
from . import watch

COMPONENT_COLORS = {"weights": "#4C72B0", "gradients": "#DD8452", "master": "#937860",
                    "optimizer": "#C44E52", "activations": "#55A868"}


def plot_memory_breakdown(breakdowns: dict, capacities: dict | None = None, ax=None,
                          title="Training memory per GPU"):
    """Stacked bars of memory components (bytes) with horizontal capacity lines.

    ``breakdowns`` maps a bar label to ``{component: bytes}``; ``capacities`` maps a
    GPU name to its memory in bytes. Returns the matplotlib Axes. Plotted in GB (1e9).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    labels = list(breakdowns)
    bottoms = [0.0] * len(labels)
    components = [c for c in COMPONENT_COLORS
                  if any(b.get(c, 0) for b in breakdowns.values())]
    for comp in components:
        heights = [breakdowns[lbl].get(comp, 0.0) / GB for lbl in labels]
        ax.bar(labels, heights, bottom=bottoms, label=comp, color=COMPONENT_COLORS[comp])
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for i, (name, cap) in enumerate((capacities or {}).items()):
        ax.axhline(cap / GB, linestyle="--", color=f"C{(i + 4) % 10}", linewidth=1.2)
        ax.annotate(f"{name}: {cap / GB:g} GB", xy=(1.0, cap / GB),
                    xycoords=("axes fraction", "data"), ha="right", va="bottom", fontsize=8)
    top = max(bottoms + [c / GB for c in (capacities or {}).values()] + [1.0])
    if top / max(min(b for b in bottoms if b > 0) if any(bottoms) else 1, 1e-9) > 200:
        ax.set_yscale("log")
    ax.set_ylabel("memory per GPU (GB, 1e9 bytes)")
    ax.set_xlabel("configuration")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left")
    ax.tick_params(axis="x", labelrotation=15)
    return ax


def plot_checkpoint_tradeoff(n_layers: int, ax=None):
    """Activation memory k + n/k (units of one layer) against the checkpoint count k."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    ks = list(range(1, n_layers + 1))
    ax.plot(ks, [mem.checkpoint_memory(n_layers, k) for k in ks], marker=".")
    k_opt = mem.optimal_checkpoints(n_layers)
    ax.axvline(k_opt, linestyle="--", color="gray")
    ax.annotate(f"k = sqrt({n_layers}) = {k_opt:.2f}", xy=(k_opt, n_layers / 2), fontsize=8)
    ax.axhline(n_layers, linestyle=":", color="C3")
    ax.annotate("no checkpointing", xy=(n_layers * 0.6, n_layers * 1.02), fontsize=8)
    ax.set_xlabel("number of checkpoints k")
    ax.set_ylabel("activation memory (units of one layer)")
    ax.set_title(f"Checkpointing a {n_layers}-layer network")
    return ax


def memory_explorer(student_fn=None):
    """An ipywidgets explorer of per-GPU training memory.

    Activations follow Korthikanti et al. 2022 with the chosen attention kernel (eager
    keeps the 5as/h score term; SDPA / FlashAttention keeps only a logsumexp).
    ``student_fn(n_params, dp, stage, recipe_components) -> bytes`` is the student's
    ZeRO function; it is used for the model state when it works (a stub raising
    NotImplementedError falls back to ``coursekit``). Returns the widget.
    """
    import ipywidgets as w

    model = w.Dropdown(options=list(MODELS), value="llama2-7b", description="model")
    recipe = w.Dropdown(options=list(mem.RECIPES), value="mixed+adam", description="recipe")
    micro = w.IntSlider(value=1, min=1, max=32, description="micro-batch")
    seq = w.Dropdown(options=[512, 1024, 2048, 4096, 8192], value=2048, description="seq len")
    recompute = w.Dropdown(options=list(mem.RECOMPUTE_MODES), value="none",
                           description="recompute")
    attention = w.Dropdown(options=[("eager (s x s scores)", "eager"),
                                    ("SDPA / FlashAttention", "sdpa")],
                           value="eager", description="attention")
    stage = w.IntSlider(value=0, min=0, max=3, description="ZeRO stage")
    dp = w.Dropdown(options=[1, 2, 4, 8, 16, 32, 64, 128], value=1, description="DP GPUs")
    gpu = w.Dropdown(options=list(ACCELERATORS), value="A100-80GB", description="GPU")
    out = w.Output()

    def redraw(*_):
        m = get_model(model.value)
        r = mem.get_recipe(recipe.value)
        source = "coursekit"
        state = mem.zero_bytes_per_gpu(m.n_params, dp.value, stage.value, r)
        if student_fn is not None:
            try:
                total = float(student_fn(m.n_params, dp.value, stage.value,
                                         dict(weights=r.weight_bytes, gradients=r.grad_bytes,
                                              master=r.master_bytes,
                                              optimizer=r.optimizer_bytes)))
                if math.isclose(total, state.total, rel_tol=1e-9):
                    source = "your function"
            except Exception:  # noqa: BLE001 - a stub or a bug falls back to the library
                pass
        act = mem.activation_bytes(m, seq.value, micro.value, recompute=recompute.value,
                                   attention=attention.value)
        parts = state.as_dict()
        parts.pop("total")
        parts["activations"] = act
        cap = ACCELERATORS[gpu.value].memory_bytes
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(6, 4))
            plot_memory_breakdown({m.name: parts}, {gpu.value: cap}, ax=ax,
                                  title=f"model state from {source}")
            plt.show()
            total = sum(parts.values())
            verdict = "fits" if total <= cap else "does NOT fit"
            print(f"total {total / GB:,.1f} GB per GPU vs {cap / GB:g} GB: {verdict}")

    watch((model, recipe, micro, seq, recompute, attention, stage, dp, gpu), redraw)
    redraw()
    return w.VBox([w.HBox([model, recipe, gpu]), w.HBox([micro, seq, recompute]),
                   w.HBox([attention, stage, dp]), out])


def plot_optimizer_curves(curves: dict, min_loss: float = 0.0, ax=None,
                          title="Training loss by optimizer"):
    """Loss above ``min_loss`` (log scale) against the optimizer step, one line per entry of
    ``curves`` (label -> sequence of losses, the first before any step). The losses are
    dimensionless (the least-squares problem of ``coursekit.training.optimizers``)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for i, (label, losses) in enumerate(curves.items()):
        excess = [max(float(x) - min_loss, 1e-16) for x in losses]
        ax.plot(range(len(excess)), excess, label=label, color=f"C{i}", linewidth=1.6)
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss above the minimum (dimensionless)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_gradient_accumulation(accumulation_steps: int = 4, axes=None):
    """The standard step against gradient accumulation (reviewer feedback 000, suggestion 1;
    chapter §1.5.5, Figure 13): one batch of ``k`` samples then one ``optimizer.step()``,
    against ``k`` micro-batches of 1 whose gradients are added to a buffer, then one
    ``optimizer.step()``; below, the activation memory each holds over time (units of one
    sample's activations; time in units of one micro-batch's forward + backward). Returns
    the two Axes (timeline, memory)."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    k = int(accumulation_steps)
    if k < 1:
        raise ValueError(f"accumulation_steps must be >= 1, got {accumulation_steps!r}")
    if axes is None:
        _, axes = plt.subplots(2, 1, figsize=(9, 6.2), sharex=True,
                               gridspec_kw={"height_ratios": [3, 2]})
    top, mem_ax = axes
    step_w, end = 0.35, k + 0.45
    fwd, bwd, opt_c, buf_c = "#4C72B0", "#8FAADC", "#C44E52", "#DD8452"

    def block(ax, x, y, w, h, fill, text, **kw):
        ax.add_patch(Rectangle((x, y), w, h, facecolor=fill, edgecolor="black", lw=0.8))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=8, **kw)

    # standard step: one batch of k, forward then backward, then the optimizer step
    y_std, y_acc, y_buf = 3.1, 1.5, 0.2
    block(top, 0, y_std, k / 3, 0.8, fwd, f"forward\nbatch of {k}", color="white")
    block(top, k / 3, y_std, 2 * k / 3, 0.8, bwd, f"backward, batch of {k}")
    block(top, k + 0.05, y_std, step_w, 0.8, opt_c, "step()", color="white", rotation=90)
    # accumulation: k micro-batches of 1; each adds g_j / k into the buffer
    for j in range(k):
        x0 = j + 0.04
        block(top, x0, y_acc, 0.92 / 3, 0.8, fwd, "fwd", color="white")
        block(top, x0 + 0.92 / 3, y_acc, 2 * 0.92 / 3, 0.8, bwd, f"bwd\nmicro {j + 1}")
        top.add_patch(FancyArrowPatch((x0 + 0.75, y_acc), (x0 + 0.75, y_buf + 0.8),
                                      arrowstyle="-|>", mutation_scale=10, color="black"))
        block(top, x0, y_buf, 0.92, 0.8, buf_c, f"buffer += g{j + 1}/{k}")
    top.add_patch(FancyArrowPatch((k - 0.05, y_buf + 0.4), (k + 0.05, y_acc + 0.4),
                                  arrowstyle="-|>", mutation_scale=10, color=opt_c))
    block(top, k + 0.05, y_acc, step_w, 0.8, opt_c, "step()", color="white", rotation=90)
    top.set_yticks([y_std + 0.4, y_acc + 0.4, y_buf + 0.4])
    top.set_yticklabels(["standard step", f"accumulation\n({k} micro-batches of 1)",
                         "gradient buffer\n(no optimizer step)"], fontsize=8)
    top.set_ylim(-0.1, 4.6)
    top.set_xlim(-0.1, end + 0.1)
    top.set_title(f"Effective batch size = {k}, but GPU memory is only used for a batch "
                  "of 1 at a time", fontsize=10)
    for side in ("top", "right"):
        top.spines[side].set_visible(False)

    # activation memory held: rises in the forward third, falls in the backward two thirds
    xs_std = [0, k / 3, k, k + step_w + 0.05]
    ys_std = [0, k, 0, 0]
    xs_acc, ys_acc = [0.0], [0.0]
    for j in range(k):
        xs_acc += [j + 0.04, j + 0.04 + 0.92 / 3, j + 0.96]
        ys_acc += [0, 1, 0]
    xs_acc.append(k + step_w + 0.05)
    ys_acc.append(0)
    mem_ax.plot(xs_std, ys_std, color=fwd, lw=2, label=f"standard: batch of {k}")
    mem_ax.plot(xs_acc, ys_acc, color=buf_c, lw=2,
                label=f"accumulation: {k} micro-batches of 1")
    mem_ax.axhline(1, color=buf_c, ls=":", lw=1)
    mem_ax.set_ylim(0, k * 1.15)
    mem_ax.set_xlabel("time (units of one micro-batch's forward + backward)")
    mem_ax.set_ylabel("activations held\n(units of one sample)")
    mem_ax.legend(fontsize=8, loc="upper right")
    mem_ax.grid(True, alpha=0.3)
    return top, mem_ax
