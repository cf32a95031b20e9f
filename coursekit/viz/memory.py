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
        act = mem.activation_bytes(m, seq.value, micro.value, recompute=recompute.value)
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

    watch((model, recipe, micro, seq, recompute, stage, dp, gpu), redraw)
    redraw()
    return w.VBox([w.HBox([model, recipe, gpu]), w.HBox([micro, seq, recompute]),
                   w.HBox([stage, dp]), out])
