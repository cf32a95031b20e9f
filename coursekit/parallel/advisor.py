"""The parallelism advisor: enumerate DP x TP x PP x ZeRO x micro-batch plans and rank them.

For a model, a cluster (GPU, GPUs per node, intra- and inter-node links), a global batch
and a sequence length, every plan ``dp * tp * pp = N`` is scored with a step-time
breakdown and checked against GPU memory (memory from :mod:`coursekit.training.memory`).
Placement follows Megatron-LM (Narayanan et al. 2021, §3; chapter 002 Table 20): rank
order is tp innermost (inside a node, NVLink), then pp, then dp outermost.

Step-time model (seconds; "micro-batch" = b sequences of length s; m micro-batches per
step on each of the dp replicas, m = B / (dp*b)):

* compute = hardware FLOPs of the step / (N * peak * efficiency); hardware FLOPs are the
  model FLOPs ``6N + 12*L*h*s`` per token (PaLM App. B) plus recomputation (full: one
  extra forward; selective: the attention scores, ``4*L*h*s`` per token; Korthikanti
  et al. 2022 §5);
* tensor parallel: 4 all-reduces of ``b*s*h*2`` bytes per layer and micro-batch (2 in
  the forward, 2 in the backward; 2 more with full recompute) over tp GPUs on the
  intra-node link (Shoeybi et al. 2019 §3), on the critical path;
* pipeline: the bubble ``(p-1)/m`` of (compute + tp) (1F1B), plus one activation send
  forward and one gradient send backward per micro-batch, ``b*s*h*2/tp`` bytes each
  (scatter/gather, Narayanan et al. 2021 §4.1), on the intra-node link if the whole
  pipeline sits in one node, else the inter-node link;
* data parallel: ring all-reduce of the gradients (hierarchical when dp ranks share a
  node), hidden behind at most ``dp_overlap`` x the last micro-batch's backward pass;
  ZeRO-1 moves the same bytes once per step (Rajbhandari et al. 2020 §7.2.1); ZeRO-2
  reduce-scatters the gradients every micro-batch and all-gathers the updated weights
  once, hidden behind at most ``dp_overlap`` x all backward passes; ZeRO-3 also
  all-gathers the weights twice every micro-batch (§7.2.2), hidden behind at most
  ``dp_overlap`` x the compute.

MFU = model FLOPs / (step time * N * peak) (chapter 002 Def 1.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..hardware import Accelerator, Link, get_accelerator, get_link
from ..models import TransformerConfig, get_model
from ..training.flops import hardware_flops_per_token, model_flops_per_token
from ..training.memory import (RECOMPUTE_MODES, TrainingMemory, get_recipe,
                               training_memory)
from ..units import DTYPE_BYTES, GB, check_choice, check_number
from .collectives import (allgather_time, allreduce_time, hierarchical_allreduce_time,
                          reduce_scatter_time)

__all__ = ["Job", "Plan", "PlanReport", "Advice", "make_job", "evaluate_plan", "advise",
           "divisors", "plan_reason"]

ACT_BYTES = 2  # 16-bit activations on the wire (Korthikanti et al. 2022 convention)


def divisors(n) -> list:
    """Positive divisors of ``n``, ascending."""
    n = check_number("n", n, minimum=1, integer=True)
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


@dataclass(frozen=True)
class Job:
    """What to train and on what: model, cluster, batch (sequences), and cost knobs."""

    model: TransformerConfig
    n_gpus: int
    accelerator: Accelerator
    gpus_per_node: int
    intra_link: Link
    inter_link: Link
    global_batch: int
    seq_len: int
    recipe: str = "mixed+adam"
    dtype: str = "bf16"
    efficiency: float = 0.5
    dp_overlap: float = 0.5
    sequence_parallel: bool = False
    uneven_stages: bool = False

    @property
    def node_size(self) -> int:
        """GPUs per node actually used (a job smaller than a node uses n_gpus)."""
        return min(self.gpus_per_node, self.n_gpus)

    @property
    def model_flops_per_step(self) -> float:
        """Model FLOPs of one optimizer step, ``B*s*(6N + 12*L*h*s)``. FLOPs."""
        m = self.model
        return self.global_batch * self.seq_len * model_flops_per_token(
            m.n_params, m.n_layers, m.d_model, self.seq_len)


def make_job(model, n_gpus, accelerator, gpus_per_node, intra_link, inter_link,
             global_batch, seq_len, *, recipe="mixed+adam", dtype="bf16", efficiency=0.5,
             dp_overlap=0.5, sequence_parallel=False, uneven_stages=False) -> Job:
    """A validated :class:`Job`; model, accelerator and links may be given by name.

    ``uneven_stages=True`` lets pp leave a remainder of layers (as Megatron-DeepSpeed
    did for BLOOM: 70 layers on 12 stages); the busiest stage then holds
    ``ceil(L/pp)`` layers and sets the pace.
    """
    m = model if isinstance(model, TransformerConfig) else get_model(model)
    acc = get_accelerator(accelerator)
    n = check_number("n_gpus", n_gpus, minimum=1, integer=True)
    g = check_number("gpus_per_node", gpus_per_node, minimum=1, integer=True)
    b = check_number("global_batch", global_batch, minimum=1, integer=True)
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    get_recipe(recipe)
    check_choice("dtype", dtype, tuple(DTYPE_BYTES))
    acc.peak(dtype)
    check_number("efficiency", efficiency, minimum=0, strict=True, maximum=1)
    check_number("dp_overlap", dp_overlap, minimum=0, maximum=1)
    for name, flag in (("sequence_parallel", sequence_parallel),
                       ("uneven_stages", uneven_stages)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    return Job(m, n, acc, g, get_link(intra_link), get_link(inter_link), b, s, recipe,
               dtype, efficiency, dp_overlap, sequence_parallel, uneven_stages)


@dataclass(frozen=True)
class Plan:
    """One parallel layout: degrees, ZeRO stage, micro-batch size and count, recompute."""

    dp: int
    tp: int
    pp: int
    zero_stage: int = 0
    micro_batch: int = 1
    n_micro: int = 1
    recompute: str = "none"

    def __str__(self) -> str:
        return (f"dp={self.dp} tp={self.tp} pp={self.pp} ZeRO-{self.zero_stage} "
                f"b={self.micro_batch} m={self.n_micro} recompute={self.recompute}")


@dataclass(frozen=True)
class PlanReport:
    """A scored plan: per-GPU memory (bytes), step-time breakdown (s), throughput, MFU."""

    plan: Plan
    memory: TrainingMemory | None
    fits: bool
    reason: str  # "" when the plan fits
    compute: float = math.nan
    tp_comm: float = math.nan
    pp_comm: float = math.nan
    dp_comm: float = math.nan
    zero_comm: float = math.nan
    bubble: float = math.nan
    step_time: float = math.nan
    tokens_per_s: float = math.nan
    mfu: float = math.nan

    @property
    def memory_bytes(self) -> float:
        """Per-GPU bytes (NaN for a plan rejected before memory was computed)."""
        return self.memory.total if self.memory is not None else math.nan

    @property
    def bubble_fraction(self) -> float:
        """Pipeline idle fraction of the step ``(p-1)/(m+p-1)``. Dimensionless."""
        p, m = self.plan.pp, self.plan.n_micro
        return (p - 1) / (m + p - 1)

    def breakdown(self) -> dict:
        """Step-time components in seconds (they add up to ``step_time``)."""
        return {"compute": self.compute, "tensor-parallel comm": self.tp_comm,
                "pipeline comm": self.pp_comm, "pipeline bubble": self.bubble,
                "data-parallel comm": self.dp_comm, "ZeRO extra comm": self.zero_comm}


@dataclass(frozen=True)
class Advice:
    """Plans that fit, best throughput first, and the rejected ones with reasons."""

    job: Job
    plans: tuple
    rejected: tuple

    @property
    def best(self) -> PlanReport | None:
        """The highest-throughput plan that fits (None if nothing fits)."""
        return self.plans[0] if self.plans else None

    def table(self, k=10) -> list:
        """The top ``k`` plans as rows of plain values (GB, s, %), for display."""
        rows = []
        for r in self.plans[:k]:
            p = r.plan
            rows.append({"dp": p.dp, "tp": p.tp, "pp": p.pp, "ZeRO": p.zero_stage,
                         "b": p.micro_batch, "m": p.n_micro, "recompute": p.recompute,
                         "GB/GPU": round(r.memory_bytes / GB, 1),
                         "step s": round(r.step_time, 3),
                         "bubble %": round(100 * r.bubble_fraction, 1),
                         "MFU %": round(100 * r.mfu, 1)})
        return rows


def plan_reason(job: Job, dp, tp, pp, zero_stage=0, micro_batch=1) -> str:
    """Why a layout is impossible regardless of memory, in words ("" if it is possible)."""
    m, g = job.model, job.node_size
    if tp > g:
        return f"tp={tp} spans {math.ceil(tp / g)} nodes of {g} GPUs"
    if g % tp:
        return f"tp={tp} does not divide the {g} GPUs of a node"
    if m.n_heads % tp:
        return f"tp={tp} does not divide the {m.n_heads} attention heads"
    if pp > m.n_layers:
        return f"pp={pp} exceeds the {m.n_layers} layers"
    if m.n_layers % pp and not job.uneven_stages:
        return f"pp={pp} does not divide the {m.n_layers} layers"
    if job.global_batch % (dp * micro_batch):
        return (f"global batch {job.global_batch} is not a multiple of "
                f"dp x micro-batch = {dp} x {micro_batch}")
    if zero_stage >= 2 and pp > 1:
        return (f"ZeRO-{zero_stage} with pp={pp}: sharded gradients clash with pipeline "
                "gradient accumulation (DeepSpeed pipelines support ZeRO-1 at most)")
    return ""


def _dp_allreduce(job: Job, size, tp, pp, dp):
    """Gradient all-reduce over the dp group, placed by rank order (tp, pp, dp). s."""
    g, intra, inter = job.node_size, job.intra_link, job.inter_link
    inner = tp * pp
    if inner < g and g % inner == 0:
        per_node = g // inner
        if dp <= per_node:
            return allreduce_time(size, dp, intra.bandwidth, intra.latency)
        return hierarchical_allreduce_time(size, dp // per_node, per_node, intra.bandwidth,
                                           inter.bandwidth, intra.latency, inter.latency)
    return allreduce_time(size, dp, inter.bandwidth, inter.latency)


def _dp_link(job: Job, tp, pp, dp) -> Link:
    g = job.node_size
    return job.intra_link if tp * pp * dp <= g else job.inter_link


def _score(job: Job, tp, pp, dp, zero, recompute, b):
    """Memory and step time of plans sharing (tp, pp, dp, zero, recompute); ``b`` may be
    a numpy array of micro-batch sizes. Returns (state TrainingMemory, activations, dict
    of arrays)."""
    model, s = job.model, job.seq_len
    b = np.asarray(b, dtype=float)
    m = job.global_batch / (dp * b)
    base = training_memory(model, micro_batch=1, seq_len=s, recipe=job.recipe, dp=dp,
                           zero_stage=zero, tp=tp, pp=pp, recompute=recompute,
                           sequence_parallel=job.sequence_parallel)
    # The busiest stage holds ceil(L/pp) layers; training_memory splits evenly (L/pp).
    imbalance = pp * math.ceil(model.n_layers / pp) / model.n_layers
    if imbalance != 1.0:
        base = TrainingMemory(*(imbalance * getattr(base, f) for f in (
            "weights", "gradients", "master", "optimizer", "activations")))
    # Activations are linear in b; 1F1B keeps min(m, p) micro-batches in flight on the
    # first stage, training_memory assumes p of them.
    act = base.activations * b * np.minimum(m, pp) / pp
    mem_total = base.model_state + act

    n, L, h = job.n_gpus, model.n_layers, model.d_model
    tokens = job.global_batch * s
    mflops = tokens * model_flops_per_token(model.n_params, L, h, s)
    if recompute == "selective":
        hflops = mflops + tokens * 4.0 * L * h * s
    else:
        hflops = tokens * hardware_flops_per_token(model.n_params, recompute, L, h, s)
    peak = job.accelerator.peak(job.dtype)
    compute = imbalance * hflops / (n * peak * job.efficiency)

    intra, inter = job.intra_link, job.inter_link
    msg = b * s * h * ACT_BYTES
    n_ar = 6 if recompute == "full" else 4
    ar = np.array([allreduce_time(float(x), tp, intra.bandwidth, intra.latency)
                   for x in np.atleast_1d(msg)]).reshape(np.shape(msg))
    tp_comm = math.ceil(L / pp) * m * n_ar * ar
    if pp > 1:
        link = intra if tp * pp <= job.node_size else inter
        pp_comm = 2.0 * m * (msg / tp / link.bandwidth + link.latency)
    else:
        pp_comm = np.zeros_like(b)
    bubble = (pp - 1) / m * (compute + tp_comm)

    recipe = get_recipe(job.recipe)
    shard = imbalance * model.n_params / (tp * pp)
    grad_bytes = shard * recipe.grad_bytes
    dlink = _dp_link(job, tp, pp, dp)
    if zero < 2:
        grad = _dp_allreduce(job, grad_bytes, tp, pp, dp) * np.ones_like(b)
        extra = np.zeros_like(b)
        window = job.dp_overlap * (2.0 / 3.0) * compute / m  # last micro-batch backward
    elif zero == 2:  # reduce-scatter every micro-batch, all-gather the updated weights
        grad = m * reduce_scatter_time(grad_bytes, dp, dlink.bandwidth, dlink.latency)
        extra = allgather_time(shard * recipe.weight_bytes, dp, dlink.bandwidth,
                               dlink.latency) * np.ones_like(b)
        window = job.dp_overlap * (2.0 / 3.0) * compute * np.ones_like(b)
    else:
        grad = m * reduce_scatter_time(grad_bytes, dp, dlink.bandwidth, dlink.latency)
        extra = m * 2.0 * allgather_time(shard * recipe.weight_bytes, dp, dlink.bandwidth,
                                         dlink.latency)
        window = job.dp_overlap * compute * np.ones_like(b)
    total = grad + extra
    exposed = np.maximum(0.0, total - np.minimum(total, window))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, grad / np.where(total > 0, total, 1.0), 0.0)
    dp_comm = exposed * share
    zero_comm = exposed - dp_comm

    step = compute + tp_comm + pp_comm + bubble + dp_comm + zero_comm
    return base, act, {
        "memory": mem_total, "n_micro": m, "compute": compute * np.ones_like(b),
        "tp_comm": tp_comm, "pp_comm": pp_comm, "bubble": bubble, "dp_comm": dp_comm,
        "zero_comm": zero_comm, "step_time": step, "tokens_per_s": tokens / step,
        "mfu": mflops / (step * n * peak),
    }


def _report(job, plan, base, act, cols, i) -> PlanReport:
    mem = TrainingMemory(base.weights, base.gradients, base.master, base.optimizer,
                         float(act[i]))
    cap = job.accelerator.memory_bytes
    fits = mem.total <= cap
    reason = "" if fits else f"needs {mem.total / GB:.1f} GB > {cap / GB:.0f} GB"
    return PlanReport(plan, mem, fits, reason, *(float(cols[k][i]) for k in (
        "compute", "tp_comm", "pp_comm", "dp_comm", "zero_comm", "bubble", "step_time",
        "tokens_per_s", "mfu")))


def _check_plan(job: Job, plan: Plan):
    for name in ("dp", "tp", "pp", "micro_batch", "n_micro"):
        check_number(name, getattr(plan, name), minimum=1, integer=True)
    if isinstance(plan.zero_stage, bool) or plan.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage={plan.zero_stage!r} is not a ZeRO stage; "
                         "allowed: 0, 1, 2, 3")
    check_choice("recompute", plan.recompute, RECOMPUTE_MODES)
    if plan.dp * plan.tp * plan.pp != job.n_gpus:
        raise ValueError(f"dp*tp*pp = {plan.dp}*{plan.tp}*{plan.pp} = "
                         f"{plan.dp * plan.tp * plan.pp} must equal n_gpus={job.n_gpus}")
    if plan.dp * plan.micro_batch * plan.n_micro != job.global_batch:
        raise ValueError(f"dp*micro_batch*n_micro = {plan.dp}*{plan.micro_batch}*"
                         f"{plan.n_micro} must equal global_batch={job.global_batch}")


def evaluate_plan(job: Job, plan: Plan) -> PlanReport:
    """Score one plan: per-GPU memory, step-time breakdown, MFU, and whether it fits (with
    the reason in words when not). ValueError if the degrees do not multiply to the GPU
    count or the micro-batches do not make the global batch. Bytes, seconds."""
    if not isinstance(job, Job):
        raise TypeError(f"job must be a Job (see make_job), got {type(job).__name__}")
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a Plan, got {type(plan).__name__}")
    _check_plan(job, plan)
    why = plan_reason(job, plan.dp, plan.tp, plan.pp, plan.zero_stage, plan.micro_batch)
    if why:
        return PlanReport(plan, None, False, why)
    base, act, cols = _score(job, plan.tp, plan.pp, plan.dp, plan.zero_stage,
                             plan.recompute, np.array([plan.micro_batch]))
    return _report(job, plan, base, act, cols, 0)


def advise(job: Job, *, zero_stages=(0, 1, 2, 3), recompute=RECOMPUTE_MODES,
           max_micro_batch=None) -> Advice:
    """Exhaustive search over dp*tp*pp = N (all factorizations), ZeRO stages, recompute
    modes and micro-batch sizes b dividing B/dp (m = B/(dp*b)); plans that fit ranked by
    step time (ties: less memory first). Impossible layouts are rejected once per
    (dp, tp, pp) with the reason in words; plans that do not fit carry "needs X GB > Y GB".
    """
    if not isinstance(job, Job):
        raise TypeError(f"job must be a Job (see make_job), got {type(job).__name__}")
    stages = tuple(zero_stages)
    for z in stages:
        if isinstance(z, bool) or z not in (0, 1, 2, 3):
            raise ValueError(f"zero_stages contains {z!r}; allowed: 0, 1, 2, 3")
    modes = tuple(recompute)
    for r in modes:
        check_choice("recompute", r, RECOMPUTE_MODES)
    if max_micro_batch is not None:
        check_number("max_micro_batch", max_micro_batch, minimum=1, integer=True)
    fitting, rejected = [], []
    n, B = job.n_gpus, job.global_batch
    for tp in divisors(n):
        for pp in divisors(n // tp):
            dp = n // (tp * pp)
            why = plan_reason(job, dp, tp, pp)
            if why:
                rejected.append(PlanReport(Plan(dp, tp, pp), None, False, why))
                continue
            bs = [b for b in divisors(B // dp)
                  if max_micro_batch is None or b <= max_micro_batch]
            barr = np.array(bs, dtype=float)
            for z in stages:
                zwhy = plan_reason(job, dp, tp, pp, z)
                if zwhy:
                    rejected.append(PlanReport(Plan(dp, tp, pp, z), None, False, zwhy))
                    continue
                for r in modes:
                    base, act, cols = _score(job, tp, pp, dp, z, r, barr)
                    for i, b in enumerate(bs):
                        plan = Plan(dp, tp, pp, z, b, B // (dp * b), r)
                        rep = _report(job, plan, base, act, cols, i)
                        (fitting if rep.fits else rejected).append(rep)
    order = sorted(range(len(fitting)),
                   key=lambda i: (fitting[i].step_time, fitting[i].memory_bytes))
    return Advice(job, tuple(fitting[i] for i in order), tuple(rejected))
