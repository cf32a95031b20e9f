"""Predict, then measure: a small live harness for GPT-2-class models, and the shipped H200
measurements it falls back to.

Where PyTorch and a CUDA GPU exist (a Colab GPU runtime), :func:`measure_training_memory`
and :func:`measure_decode_steps` measure live; everywhere else (CI, the autograder, a laptop)
:func:`training_memory_data` and :func:`decode_data` return the measurements shipped in
``coursekit/data`` (one NVIDIA H200, 2026-11-26, PyTorch 2.11) and say so in ``source``.
PyTorch is never a dependency of the course: it is imported inside the functions that need it.

Method (the same as the shipped data, ``../shared/data/h200-gpt2/README.md``):

* **Training memory.** A GPT-2 built from its config (random weights, dropout 0.1, tied
  embeddings, the Hugging Face module layout), AdamW, sequence length 1024. Memory is
  ``torch.cuda.max_memory_allocated`` minus the allocation before the model existed. Step 1
  (forward, backward, optimizer step, ``zero_grad(set_to_none=True)``) creates the optimizer
  state; the peak is read over step 2's forward and backward. ``activation = peak − static``,
  with ``static = weights + gradients + optimizer state`` (bytes of the tensors themselves).
* **Decode steps.** bf16 weights, a preallocated KV cache of ``past_len`` tokens per
  sequence (written in place: no ``torch.cat`` of the cache, unlike the shipped data's
  Hugging Face ``DynamicCache``), one new token per sequence, CUDA-event time of the GPU
  work, median of ``repeats`` steps after warm-up. Seconds.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from importlib import resources

from .models import get_model
from .units import check_choice, check_number

ATTENTIONS = ("eager", "sdpa")
MODES = ("fp32_adamw", "bf16_autocast_adamw", "bf16_pure_adamw")
SIZES = {"gpt2-124m": "124M", "gpt2-355m": "355M", "gpt2-1.5b": "1.5B"}
SHIPPED = "shipped measurements: one NVIDIA H200, PyTorch 2.11, 2026-11-26"


@dataclass(frozen=True)
class MemoryMeasurement:
    """One training-memory measurement. Bytes; ``source`` says live or shipped."""

    model: str
    mode: str
    attention: str
    batch: int
    seq_len: int
    static_bytes: int
    peak_bytes: int
    source: str

    @property
    def activation_bytes(self) -> int:
        """Peak of a steady-state forward + backward minus the static state (bytes)."""
        return self.peak_bytes - self.static_bytes


@dataclass(frozen=True)
class DecodeMeasurement:
    """Decode step time (seconds, GPU work) per batch size with ``past_len`` cached tokens."""

    model: str
    past_len: int
    batch: tuple
    step_s: tuple
    source: str


# -- availability -----------------------------------------------------------------------
def live_device() -> str | None:
    """``"<GPU name>, torch <version>"`` when PyTorch with CUDA is usable, else None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"


# -- shipped data -----------------------------------------------------------------------
def _shipped_rows() -> list:
    raw = json.loads(resources.files("coursekit.data")
                     .joinpath("h200_gpt2_training_memory.json").read_text())
    return raw["rows"]


def shipped_training_memory(model: str, mode: str, attention: str,
                            batch: int) -> MemoryMeasurement:
    """The shipped H200 measurement for one configuration (no checkpointing, S = 1024).

    ``mode``: one of MODES (``fp32_adamw`` is PyTorch's default multi-tensor AdamW).
    ValueError when the configuration was not measured (1.5B at batch 8 ran out of memory).
    """
    check_choice("model", model, tuple(SIZES))
    check_choice("mode", mode, MODES)
    check_choice("attention", attention, ATTENTIONS)
    data_mode = "fp32_adamw_default" if mode == "fp32_adamw" else mode
    for row in _shipped_rows():
        if (row["size"], row["mode"], row["attn"], row["ckpt"], row["B"]) == (
                SIZES[model], data_mode, attention, False, batch):
            static = row["param_bytes"] + row["grad_bytes"] + row["opt_state_bytes"]
            return MemoryMeasurement(model, mode, attention, batch, row["S"], static,
                                     row["peak_fwd_bwd2"], SHIPPED)
    measured = sorted({r["B"] for r in _shipped_rows() if r["size"] == SIZES[model]
                       and r["mode"] == data_mode and r["attn"] == attention
                       and not r["ckpt"]})
    raise ValueError(f"batch={batch}: not measured for {model}, {mode}, {attention}; "
                     f"measured batches: {measured}")


def training_memory_data(model: str, mode: str, attention: str, batch: int,
                         live: bool = False) -> MemoryMeasurement:
    """Live measurement when ``live`` and a GPU is usable, else the shipped one."""
    if live and live_device():
        return measure_training_memory(model, mode, attention, batch)
    return shipped_training_memory(model, mode, attention, batch)


def decode_data(batches=(1, 2, 4, 8, 16, 32, 64, 128), live: bool = False) -> DecodeMeasurement:
    """GPT-2 1.5B decode step time vs batch (512 cached tokens): live when ``live`` and a
    GPU is usable, else the shipped H200 GPU-kernel time minus the cache copy a
    preallocated cache does not make (``serving.batching.h200_decode_vs_batch``)."""
    if live and live_device():
        return measure_decode_steps("gpt2-1.5b", batches, past_len=512)
    from .serving.batching import h200_decode_vs_batch
    h200 = h200_decode_vs_batch()
    want = [b for b in batches if b in set(int(x) for x in h200.batch)]
    idx = [list(int(x) for x in h200.batch).index(b) for b in want]
    return DecodeMeasurement("gpt2-1.5b", h200.past_len, tuple(want),
                             tuple(float(h200.gpu_s[i] - h200.cache_copy_s[i]) for i in idx),
                             SHIPPED + " (GPU kernel time minus the cache copy)")


# -- the live harness (needs torch and CUDA) --------------------------------------------
def _require_gpu():
    device = live_device()
    if device is None:
        raise RuntimeError("live measurement needs PyTorch with a CUDA GPU (in Colab: "
                           "Runtime > Change runtime type > GPU); use the shipped data "
                           "instead (live=False)")
    import torch
    return torch


def _gpt2_module(torch, cfg, attention: str, dropout: float):
    """GPT-2 (Radford et al. 2019) in plain PyTorch, the Hugging Face layout: learned
    positions, pre-LayerNorm blocks, fused QKV, GELU(tanh) MLP, tied output head."""
    nn, F = torch.nn, torch.nn.functional
    d, h = cfg.d_model, cfg.n_heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.c_fc, self.mlp_proj = nn.Linear(d, cfg.d_ff), nn.Linear(cfg.d_ff, d)
            self.drop = nn.Dropout(dropout)

        def attend(self, x, cache=None, pos=None):
            b, s, _ = x.shape
            q, k, v = self.c_attn(x).split(d, dim=2)
            q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
            causal = True
            if cache is not None:                     # decode: write k, v in place
                cache[0][:, :, pos:pos + s] = k
                cache[1][:, :, pos:pos + s] = v
                k, v = cache[0][:, :, :pos + s], cache[1][:, :, :pos + s]
                if pos and s > 1:
                    raise ValueError("a cached forward takes one token, or a prompt at pos 0")
                causal = pos == 0                     # one new query sees every cached key
            if attention == "sdpa":
                y = F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, dropout_p=dropout if self.training else 0.0)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
                if causal:
                    mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
                    att = att.masked_fill(~mask, float("-inf"))
                y = self.drop(att.softmax(dim=-1)) @ v
            return self.drop(self.c_proj(y.transpose(1, 2).reshape(b, s, d)))

        def forward(self, x, cache=None, pos=None):
            x = x + self.attend(self.ln_1(x), cache, pos)
            return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)),
                                                      approximate="tanh")))

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(cfg.vocab_size, d)
            self.wpe = nn.Embedding(cfg.max_seq_len, d)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layers))
            self.ln_f, self.drop = nn.LayerNorm(d), nn.Dropout(dropout)
            for m in self.modules():                  # GPT-2's initialization: N(0, 0.02)
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)

        def forward(self, idx, caches=None, pos=0):
            positions = torch.arange(pos, pos + idx.shape[1], device=idx.device)
            x = self.drop(self.wte(idx) + self.wpe(positions))
            for i, block in enumerate(self.blocks):
                x = block(x, None if caches is None else caches[i], pos)
            return self.ln_f(x) @ self.wte.weight.T  # tied head: logits

    return GPT2()


def _bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def measure_training_memory(model: str = "gpt2-124m", mode: str = "bf16_autocast_adamw",
                            attention: str = "sdpa", batch: int = 1,
                            seq_len: int = 1024) -> MemoryMeasurement:
    """Peak training memory of one steady-state step, measured live (see the module doc)."""
    check_choice("model", model, tuple(SIZES))
    check_choice("mode", mode, MODES)
    check_choice("attention", attention, ATTENTIONS)
    check_number("batch", batch, minimum=1, integer=True)
    check_number("seq_len", seq_len, minimum=2, integer=True)
    torch = _require_gpu()
    cfg = get_model(model)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    with dev:
        net = _gpt2_module(torch, cfg, attention, dropout=0.1)
    if mode == "bf16_pure_adamw":
        net = net.to(torch.bfloat16)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator(device=dev).manual_seed(0)
    idx = torch.randint(cfg.vocab_size, (batch, seq_len), device=dev, generator=gen)

    def fwd_bwd():
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled=mode == "bf16_autocast_adamw"):
            logits = net(idx)
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].float().reshape(-1, cfg.vocab_size), idx[:, 1:].reshape(-1))
        loss.backward()

    net.train()
    fwd_bwd()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    fwd_bwd()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    params = list(net.parameters())
    state = [t for s in opt.state.values() for t in s.values()
             if torch.is_tensor(t) and t.is_cuda]
    static = _bytes(params) + _bytes([p.grad for p in params if p.grad is not None]) \
        + _bytes(state)
    result = MemoryMeasurement(model, mode, attention, batch, seq_len, static, peak,
                               f"live: {live_device()}")
    del net, opt, params, state
    torch.cuda.empty_cache()
    return result


def measure_decode_steps(model: str = "gpt2-124m", batches=(1, 4, 16, 64),
                         past_len: int = 512, repeats: int = 20) -> DecodeMeasurement:
    """GPU time of one decode step (one new token per sequence, ``past_len`` cached) per
    batch size, bf16, SDPA attention, median over ``repeats`` steps. Seconds."""
    check_choice("model", model, tuple(SIZES))
    check_number("past_len", past_len, minimum=1, integer=True)
    check_number("repeats", repeats, minimum=1, integer=True)
    for b in batches:
        check_number("batches", b, minimum=1, integer=True)
    torch = _require_gpu()
    cfg = get_model(model)
    if past_len + 1 > cfg.max_seq_len:
        raise ValueError(f"past_len={past_len} must be < max_seq_len={cfg.max_seq_len}")
    dev = torch.device("cuda")
    with dev:
        net = _gpt2_module(torch, cfg, "sdpa", dropout=0.0).to(torch.bfloat16).eval()
    hd = cfg.d_model // cfg.n_heads
    times = []
    with torch.no_grad():
        for b in batches:
            caches = [torch.randn(2, b, cfg.n_heads, past_len + 1, hd, device=dev,
                                  dtype=torch.bfloat16) for _ in range(cfg.n_layers)]
            tok = torch.zeros(b, 1, dtype=torch.long, device=dev)
            samples = []
            for i in range(repeats + 3):
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                net(tok, caches, past_len)
                end.record()
                torch.cuda.synchronize()
                if i >= 3:                            # warm-up steps are not timed
                    samples.append(start.elapsed_time(end) * 1e-3)
            times.append(statistics.median(samples))
            del caches
    del net
    torch.cuda.empty_cache()
    return DecodeMeasurement(model, past_len, tuple(int(b) for b in batches), tuple(times),
                             f"live: {live_device()}")
