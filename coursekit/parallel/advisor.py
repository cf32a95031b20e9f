"""The parallelism advisor: enumerate DP x TP x PP x ZeRO x micro-batch plans and rank them.

For a model, a cluster (GPU, GPUs per node, intra- and inter-node links), a global batch
and a sequence length, every plan ``dp * tp * pp = N`` is scored with a step-time
breakdown and checked against GPU memory (memory from :mod:`coursekit.training.memory`).
Placement follows Megatron-LM (Narayanan et al. 2021, §3; chapter 002 Table 20): rank
order is tp innermost (inside a node, NVLink), then pp, then dp outermost.

Step-time model (seconds; "micro-batch" = b sequences of length s; m micro-batches per
step on each of the dp replicas, m = B / (dp*b); v interleaved model chunks per GPU):

* compute: the matmul FLOPs at ``efficiency`` x peak. FLOPs per token are the model
  FLOPs ``6N + 12*L*h*s`` (PaLM App. B) plus recomputation of the transformer layers
  (full: one extra forward of each layer; selective: the attention scores, ``4*h*s``
  per layer; Korthikanti et al. 2022 §5); the output layer (``6*h*V`` per token,
  Narayanan et al. 2021 App.) is not recomputed;
* memory-bound ops: the element-wise work (LayerNorm, GeLU, softmax, dropout, residual
  adds) runs at HBM bandwidth, not at the matmul peak. Its traffic per layer is counted
  from the layer's saved activations ``A = sbh(10 + 24/t + 5as/(ht))`` (Korthikanti et
  al. 2022, Table 2; no ``5as/h`` scores with a fused attention kernel): the forward
  writes A, the backward reads A, writes A's gradient and reads it back (4A), and a full
  recompute writes A once more (5A; selective: the attention part once more); the loss
  moves the fp32 logits ``4*s*b*V/t`` bytes four times. This is why small models reach a
  lower share of the peak (Narayanan et al. 2021 §5.1: 44% at 1.7B, 52% at 1T);
* stage imbalance: the first stage also holds the embedding and the last one the output
  layer and the loss; the slowest stage sets the pace of every micro-batch (Narayanan
  et al. 2021 §2.2), so the step pays ``m * (t_slowest - t_average)`` on top of the
  average stage's work. Megatron-LM splits the layers evenly (the last stage is the
  slowest); with ``uneven_stages`` the layers are partitioned to balance the stage
  times, the embedding and output layer counted (as Megatron-DeepSpeed did for BLOOM);
* tensor parallel: 4 all-reduces of ``b*s*h*2`` bytes per layer and micro-batch (2 in
  the forward, 2 in the backward; 2 more with full recompute) over tp GPUs on the
  intra-node link (Shoeybi et al. 2019 §3), on the critical path;
* pipeline: the bubble, filling and draining the pipeline: the other ``p-1`` stages'
  micro-batch times divided by v (``(p-1)/v`` micro-batch times with equal stages;
  Narayanan et al. 2021 §2.2.2; v = 1 is 1F1B; ``pipeline.unbalanced_step_time``),
  plus one activation send forward and one gradient send backward per micro-batch and
  model chunk (``2*v*m`` sends, the interleaved schedule's v-fold communication),
  ``b*s*h*2/tp`` bytes each (scatter/gather, §4.1), on the
  intra-node link if the whole pipeline sits in one node, else the inter-node link;
  with tied embeddings the first and last stages also all-reduce the embedding
  gradient once per step;
* data parallel: ring all-reduce of the gradients (hierarchical when dp ranks share a
  node), hidden behind at most ``dp_overlap`` x the last micro-batch's backward pass;
  ZeRO-1 moves the same bytes once per step (Rajbhandari et al. 2020 §7.2.1); ZeRO-2
  reduce-scatters the gradients every micro-batch and all-gathers the updated weights
  once, hidden behind at most ``dp_overlap`` x all backward passes; ZeRO-3 also
  all-gathers the weights every micro-batch before each pass that uses them: forward
  and backward (§7.2.2), and the recompute forward with full recomputation (3
  gathers), hidden behind at most ``dp_overlap`` x the compute.

Every link runs at its measured efficiency (:attr:`coursekit.hardware.Link.efficiency`,
NCCL bus bandwidth over line rate) unless the job sets ``link_efficiency`` (1.0: ideal).
MFU = model FLOPs / (step time * N * peak) (chapter 002 Def 1.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..hardware import Accelerator, Link, get_accelerator, get_link
from ..models import TransformerConfig, get_model
from ..training.flops import model_flops_per_token
from ..training.memory import (ATTENTION_KERNELS, RECOMPUTE_MODES, TrainingMemory,
                               activation_bytes, activation_bytes_per_layer, get_recipe,
                               zero_bytes_per_gpu)
from ..units import DTYPE_BYTES, GB, TFLOP, check_choice, check_number
from .collectives import (allgather_time, allreduce_time, hierarchical_allreduce_time,
                          reduce_scatter_time)

__all__ = ["Job", "Plan", "PlanReport", "Advice", "make_job", "evaluate_plan", "advise",
           "divisors", "plan_reason", "megatron_flops", "compare_plans",
           "explain_difference", "MEGATRON_A100_EFFICIENCY", "DP_OVERLAP"]

ACT_BYTES = 2  # 16-bit activations on the wire (Korthikanti et al. 2022 convention)
LOGIT_BYTES = 4  # the loss works on fp32 logits
LOSS_PASSES = 4  # logits written, read by the softmax, gradient written, read back

MEGATRON_A100_EFFICIENCY = 0.60
"""Share of the A100's dense 16-bit peak (312 TFLOP/s) that Megatron-LM's matmuls reach
in end-to-end training, the memory-bound element-wise work excluded (it is priced at HBM
bandwidth). One global constant, calibrated once on Narayanan et al. 2021, Table 1 (the
ten weak-scaling rows, 1.7B to 1T on 32 to 3072 A100s, run as in Megatron-LM's
examples/sc21/run_table_1.sh): with 0.60 the geometric mean of predicted over published
TFLOP/s per GPU is 1.00 and every row is within 15%. Not a per-row factor; the size
trend (44% of peak at 1.7B, 52% at 1T) comes from the memory-bound term, the bubble and
the communication. Dimensionless."""

DP_OVERLAP = 0.7
"""Share of the compute window that data-parallel and ZeRO communication actually hides
(NCCL kernels share the SMs and HBM with the compute). One global constant, calibrated
once on the six ZeRO-3 rows of Narayanan et al. 2021, Table 2 (175B and 530B, 384-2240
A100s; DeepSpeed ZeRO-3 without model parallelism): with 0.7 their geometric mean of
predicted over published TFLOP/s per GPU is 1.00 and each is within 15%. Dimensionless."""


def divisors(n) -> list:
    """Positive divisors of ``n``, ascending."""
    n = check_number("n", n, minimum=1, integer=True)
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def megatron_flops(model, global_batch, seq_len) -> float:
    """FLOPs of one step as Narayanan et al. 2021 count them (Eq. 3, with full
    recomputation): ``96*B*s*l*h^2 * (1 + s/(6h) + V/(16*l*h))``. Their "achieved
    teraFLOP/s per GPU" (Tables 1 and 2) is this over (step time x GPUs). FLOPs."""
    m = model if isinstance(model, TransformerConfig) else get_model(model)
    B = check_number("global_batch", global_batch, minimum=1, integer=True)
    s = check_number("seq_len", seq_len, minimum=1, integer=True)
    L, h, V = m.n_layers, m.d_model, m.vocab_size
    return 96.0 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


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
    efficiency: float = MEGATRON_A100_EFFICIENCY
    dp_overlap: float = DP_OVERLAP
    sequence_parallel: bool = False
    uneven_stages: bool = False
    link_efficiency: float | None = None
    attention: str = "eager"

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

    def bandwidth(self, link: Link) -> float:
        """Bandwidth collectives reach on ``link``: line rate x the job's
        ``link_efficiency``, or the link's measured efficiency when that is None.
        Bytes/s per direction."""
        eff = link.efficiency if self.link_efficiency is None else self.link_efficiency
        return link.bandwidth * eff


def make_job(model, n_gpus, accelerator, gpus_per_node, intra_link, inter_link,
             global_batch, seq_len, *, recipe="mixed+adam", dtype="bf16",
             efficiency=MEGATRON_A100_EFFICIENCY, dp_overlap=DP_OVERLAP,
             sequence_parallel=False,
             uneven_stages=False, link_efficiency=None, attention="eager") -> Job:
    """A validated :class:`Job`; model, accelerator and links may be given by name.

    ``uneven_stages=True`` lets stages hold unequal layer counts (as Megatron-DeepSpeed
    did for BLOOM: 70 layers on 12 stages, the two embeddings counted as layers): the
    layers are partitioned to balance the stage times, embedding and output layer
    included; otherwise pp must divide the layers and every stage holds L/pp (Megatron-
    LM). The slowest stage sets the pace. ``efficiency``: share of the dense peak
    the matmuls reach (default :data:`MEGATRON_A100_EFFICIENCY`); ``dp_overlap``: share
    of the compute window that data-parallel communication hides (default
    :data:`DP_OVERLAP`). ``link_efficiency``:
    None uses each link's measured efficiency, a number in (0, 1] overrides it for all
    links (1.0 = ideal links). ``attention``: the attention kernel (``eager``
    materializes the s x s scores; ``sdpa``/``flash`` are fused), as in
    :mod:`coursekit.training.memory`.
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
    if link_efficiency is not None:
        check_number("link_efficiency", link_efficiency, minimum=0, strict=True, maximum=1)
    check_choice("attention", attention, ATTENTION_KERNELS)
    for name, flag in (("sequence_parallel", sequence_parallel),
                       ("uneven_stages", uneven_stages)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    return Job(m, n, acc, g, get_link(intra_link), get_link(inter_link), b, s, recipe,
               dtype, efficiency, dp_overlap, sequence_parallel, uneven_stages,
               link_efficiency, attention)


@dataclass(frozen=True)
class Plan:
    """One parallel layout: degrees, ZeRO stage, micro-batch size and count, recompute,
    and ``interleave`` = v model chunks per GPU (v = 1: 1F1B; v > 1: Megatron-LM's
    interleaved 1F1B, Narayanan et al. 2021 §2.2.2)."""

    dp: int
    tp: int
    pp: int
    zero_stage: int = 0
    micro_batch: int = 1
    n_micro: int = 1
    recompute: str = "none"
    interleave: int = 1

    def __str__(self) -> str:
        v = f" v={self.interleave}" if self.interleave > 1 else ""
        return (f"dp={self.dp} tp={self.tp} pp={self.pp}{v} ZeRO-{self.zero_stage} "
                f"b={self.micro_batch} m={self.n_micro} recompute={self.recompute}")


_PARTS = (("compute", "compute"), ("memory_bound", "memory-bound ops"),
          ("imbalance", "stage imbalance"), ("tp_comm", "tensor-parallel comm"),
          ("pp_comm", "pipeline comm"), ("bubble", "pipeline bubble"),
          ("dp_comm", "data-parallel comm"), ("zero_comm", "ZeRO extra comm"))


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
    memory_bound: float = math.nan
    imbalance: float = math.nan
    hfu: float = math.nan

    @property
    def memory_bytes(self) -> float:
        """Per-GPU bytes (NaN for a plan rejected before memory was computed)."""
        return self.memory.total if self.memory is not None else math.nan

    @property
    def bubble_fraction(self) -> float:
        """Pipeline idle fraction of the step ``(p-1)/(v*m+p-1)``. Dimensionless."""
        p, m, v = self.plan.pp, self.plan.n_micro, self.plan.interleave
        return (p - 1) / (v * m + p - 1)

    def breakdown(self) -> dict:
        """Step-time components in seconds (they add up to ``step_time``)."""
        return {label: getattr(self, attr) for attr, label in _PARTS}


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
            rows.append({"dp": p.dp, "tp": p.tp, "pp": p.pp, "v": p.interleave,
                         "ZeRO": p.zero_stage, "b": p.micro_batch, "m": p.n_micro,
                         "recompute": p.recompute,
                         "GB/GPU": round(r.memory_bytes / GB, 1),
                         "step s": round(r.step_time, 3),
                         "bubble %": round(100 * r.bubble_fraction, 1),
                         "MFU %": round(100 * r.mfu, 1)})
        return rows

    def best_with(self, **degrees) -> PlanReport | None:
        """The best fitting plan whose Plan fields equal ``degrees`` (e.g. ``tp=8``);
        None if none fits. For "why not the layout I expected?" questions."""
        for name in degrees:
            if name not in Plan.__dataclass_fields__:
                raise ValueError(f"{name!r} is not a Plan field; allowed: "
                                 f"{', '.join(Plan.__dataclass_fields__)}")
        for r in self.plans:
            if all(getattr(r.plan, k) == v for k, v in degrees.items()):
                return r
        return None

    def breakdown_table(self, k=10) -> list:
        """The top ``k`` plans with their step-time breakdown: :func:`compare_plans`."""
        return _rows(self.job, self.plans[:k])


def plan_reason(job: Job, dp, tp, pp, zero_stage=0, micro_batch=1, interleave=1) -> str:
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
    return _interleave_reason(job, pp, interleave, job.global_batch // (dp * micro_batch))


def _interleave_reason(job: Job, pp, v, m) -> str:
    """Megatron-LM's conditions for v > 1 chunks (Narayanan et al. 2021 §2.2.2)."""
    if v == 1:
        return ""
    L = job.model.n_layers
    if pp == 1:
        return f"interleave={v} needs pipeline parallelism (pp=1)"
    if L % pp or (L // pp) % v:
        return (f"interleave={v}: the {L} layers do not split into pp x v = {pp} x {v} "
                "equal chunks")
    if m % pp:
        return (f"interleave={v}: m={m} micro-batches is not a multiple of pp={pp} "
                "(interleaved 1F1B)")
    return ""


def _dp_allreduce(job: Job, size, tp, pp, dp):
    """Gradient all-reduce over the dp group, placed by rank order (tp, pp, dp). s."""
    g, intra, inter = job.node_size, job.intra_link, job.inter_link
    inner = tp * pp
    if inner < g and g % inner == 0:
        per_node = g // inner
        if dp <= per_node:
            return allreduce_time(size, dp, job.bandwidth(intra), intra.latency)
        return hierarchical_allreduce_time(size, dp // per_node, per_node,
                                           job.bandwidth(intra), job.bandwidth(inter),
                                           intra.latency, inter.latency)
    return allreduce_time(size, dp, job.bandwidth(inter), inter.latency)


def _dp_link(job: Job, tp, pp, dp) -> Link:
    g = job.node_size
    return job.intra_link if tp * pp * dp <= g else job.inter_link


def _partition(L, pp, first, last, balance):
    """Transformer layers on the (first, busiest middle, last) pipeline stage and the
    slowest stage's time, in units of one layer's time. ``first``/``last``: the extra
    work of the first stage (embedding) and the last (output layer and loss), in layers.

    Even split (Megatron-LM, ``balance=False``): ``L/pp`` layers everywhere, so the last
    stage is slowest by ``last``. ``balance=True`` (``uneven_stages``): the fewest layers
    per middle stage ``k`` such that the first and last stages, given ``k`` minus their
    extra work, hold the rest, as Megatron-DeepSpeed partitioned BLOOM (70 layers and
    the 2 embeddings on 12 stages, 6 each).
    """
    if pp == 1:
        return L, L, L, L + first + last
    if not balance:
        k = math.ceil(L / pp)
        return k, k, k, k + max(first, last)
    best = None
    for r in ([L] if pp == 2 else range(L + 1)):  # r layers on the first + last stage
        k = 0 if pp == 2 else math.ceil((L - r) / (pp - 2))
        centre = (r + last - first) / 2
        for kf in {min(r, max(0, math.floor(centre))), min(r, max(0, math.ceil(centre)))}:
            t = max(k, kf + first, r - kf + last)
            if best is None or t < best[3] - 1e-12:
                best = (kf, k, r - kf, t)
    return best


def _stage_params(model: TransformerConfig, pp, kf, k, kl) -> float:
    """Parameters on the busiest pipeline stage: its layers plus, on the first stage,
    the token (and learned position) embedding, on the last the output layer (a copy of
    the embedding when tied, as Megatron-LM keeps one) and the final norm. With pp = 1,
    all of them. Count."""
    if pp == 1:
        return float(model.n_params)
    h, V, p_layer = model.d_model, model.vocab_size, model.layer_params()
    pos = model.max_seq_len * h if model.position_embedding == "learned" else 0
    first = kf * p_layer + V * h + pos
    last = kl * p_layer + V * h + model.norm_params()
    return float(max(first, last, k * p_layer if pp > 2 else 0))


def _score(job: Job, tp, pp, dp, zero, recompute, b, v=1):
    """Memory and step time of plans sharing (tp, pp, dp, zero, recompute, v); ``b`` may
    be a numpy array of micro-batch sizes. Returns (state TrainingMemory, activations,
    dict of arrays)."""
    model, s = job.model, job.seq_len
    b = np.asarray(b, dtype=float)
    m = job.global_batch / (dp * b)
    L, h, a, V = model.n_layers, model.d_model, model.n_heads, model.vocab_size
    recipe = get_recipe(job.recipe)

    # Per sequence (b = 1) and GPU: matmul and memory-bound seconds; all linear in b.
    n = job.n_gpus
    peak = job.accelerator.peak(job.dtype)
    rate = tp * peak * job.efficiency
    hbm = job.accelerator.hbm_bandwidth
    p_layer = model.layer_params()
    f_layer = model_flops_per_token(p_layer, 1, h, s)  # 6P + 12hs, forward + backward
    if recompute == "full":
        f_layer = f_layer * 4.0 / 3.0
    elif recompute == "selective":
        f_layer = f_layer + 4.0 * h * s
    f_head = 6.0 * h * V  # output layer: 2hV forward + 4hV backward, not recomputed
    f_first = 6.0 * (model.n_params - L * p_layer) - f_head  # rest of 6N (embedding)
    c_layer, c_head, c_first = (f * s / rate for f in (f_layer, f_head, f_first))
    saved = dict(tp=tp, sequence_parallel=job.sequence_parallel, attention=job.attention)
    a_none = activation_bytes_per_layer(s, 1, h, a, recompute="none", **saved)
    passes = {"none": 4.0, "full": 5.0}.get(recompute)
    traffic = (passes * a_none if passes is not None else 4.0 * a_none + a_none
               - activation_bytes_per_layer(s, 1, h, a, recompute="selective", **saved))
    e_layer = traffic / hbm
    e_head = LOSS_PASSES * LOGIT_BYTES * s * V / tp / hbm
    t_layer = c_layer + e_layer
    t_head = c_head + e_head
    kf, k, kl, slow = _partition(L, pp, c_first / t_layer, t_head / t_layer,
                                 job.uneven_stages)
    lmax = max(kf, k if pp > 2 else 0, kl)
    t_avg = (L * t_layer + c_first + t_head) * b / pp
    t_max = slow * t_layer * b if pp > 1 else t_avg  # the slowest stage, one micro-batch
    compute = m * b * (L * c_layer + c_first + c_head) / pp
    memory_bound = m * b * (L * e_layer + e_head) / pp
    imbalance = m * (t_max - t_avg)

    # Memory: the busiest stage's state, then activations (linear in b). 1F1B keeps
    # min(m, p) micro-batches in flight on the first stage; activation_bytes assumes p
    # micro-batches of L/p layers, here of the busiest stage's layers.
    params = _stage_params(model, pp, kf, k, kl) / tp
    state = zero_bytes_per_gpu(params, dp, zero, job.recipe)
    base = TrainingMemory(state.weights, state.gradients, state.master, state.optimizer,
                          0.0)
    act1 = activation_bytes(model, s, 1, tp=tp, pp=pp, interleave=v,
                            sequence_parallel=job.sequence_parallel, recompute=recompute,
                            attention=job.attention) * pp * lmax / L
    act = act1 * b * np.minimum(m, pp) / pp
    mem_total = base.model_state + act

    intra, inter = job.intra_link, job.inter_link
    msg = b * s * h * ACT_BYTES
    n_ar = 6 if recompute == "full" else 4
    ar = np.array([allreduce_time(float(x), tp, job.bandwidth(intra), intra.latency)
                   for x in np.atleast_1d(msg)]).reshape(np.shape(msg))
    tp_mb = lmax * n_ar * ar
    tp_comm = m * tp_mb
    if pp > 1:
        link = intra if tp * pp <= job.node_size else inter
        bw = job.bandwidth(link)
        pp_comm = 2.0 * v * m * (msg / tp / bw + link.latency)
        if model.tied_embeddings:  # first and last stage sum the embedding gradient
            pp_comm = pp_comm + allreduce_time(V * h / tp * recipe.grad_bytes, 2, bw,
                                               link.latency)
    else:
        pp_comm = np.zeros_like(b)
    # Fill and drain: the other stages' micro-batch times, over v (exact for one slow
    # stage; pipeline.unbalanced_step_time, checked against the simulated schedule).
    bubble = (pp * t_avg - t_max + (pp - 1) * tp_mb) / v

    grad_bytes = params * recipe.grad_bytes
    dlink = _dp_link(job, tp, pp, dp)
    dbw = job.bandwidth(dlink)
    busy = m * t_max  # the slowest stage's work
    if zero < 2:
        grad = _dp_allreduce(job, grad_bytes, tp, pp, dp) * np.ones_like(b)
        extra = np.zeros_like(b)
        window = job.dp_overlap * (2.0 / 3.0) * t_max  # last micro-batch's backward
    elif zero == 2:  # reduce-scatter every micro-batch, all-gather the updated weights
        grad = m * reduce_scatter_time(grad_bytes, dp, dbw, dlink.latency)
        extra = allgather_time(params * recipe.weight_bytes, dp, dbw,
                               dlink.latency) * np.ones_like(b)
        window = job.dp_overlap * (2.0 / 3.0) * busy
    else:  # weights gathered before every pass that uses them
        gathers = 3.0 if recompute == "full" else 2.0
        grad = m * reduce_scatter_time(grad_bytes, dp, dbw, dlink.latency)
        extra = m * gathers * allgather_time(params * recipe.weight_bytes, dp, dbw,
                                             dlink.latency)
        window = job.dp_overlap * busy
    total = grad + extra
    exposed = np.maximum(0.0, total - np.minimum(total, window))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, grad / np.where(total > 0, total, 1.0), 0.0)
    dp_comm = exposed * share
    zero_comm = exposed - dp_comm

    step = (compute + memory_bound + imbalance + tp_comm + pp_comm + bubble + dp_comm
            + zero_comm)
    tokens = job.global_batch * s
    mflops = job.model_flops_per_step
    hflops = tokens * (L * f_layer + f_first + f_head)
    return base, act, {
        "memory": mem_total, "n_micro": m, "compute": compute * np.ones_like(b),
        "memory_bound": memory_bound * np.ones_like(b), "imbalance": imbalance,
        "tp_comm": tp_comm, "pp_comm": pp_comm, "bubble": bubble, "dp_comm": dp_comm,
        "zero_comm": zero_comm, "step_time": step, "tokens_per_s": tokens / step,
        "mfu": mflops / (step * n * peak), "hfu": hflops / (step * n * peak),
    }


_COLUMNS = ("compute", "tp_comm", "pp_comm", "dp_comm", "zero_comm", "bubble", "step_time",
            "tokens_per_s", "mfu", "memory_bound", "imbalance", "hfu")


def _report(job, plan, base, act, cols, i) -> PlanReport:
    mem = TrainingMemory(base.weights, base.gradients, base.master, base.optimizer,
                         float(act[i]))
    cap = job.accelerator.memory_bytes
    fits = mem.total <= cap
    reason = "" if fits else f"needs {mem.total / GB:.1f} GB > {cap / GB:.0f} GB"
    return PlanReport(plan, mem, fits, reason, *(float(cols[k][i]) for k in _COLUMNS))


def _check_plan(job: Job, plan: Plan):
    for name in ("dp", "tp", "pp", "micro_batch", "n_micro", "interleave"):
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
    why = plan_reason(job, plan.dp, plan.tp, plan.pp, plan.zero_stage, plan.micro_batch,
                      plan.interleave)
    if why:
        return PlanReport(plan, None, False, why)
    base, act, cols = _score(job, plan.tp, plan.pp, plan.dp, plan.zero_stage,
                             plan.recompute, np.array([plan.micro_batch]), plan.interleave)
    return _report(job, plan, base, act, cols, 0)


def advise(job: Job, *, zero_stages=(0, 1, 2, 3), recompute=RECOMPUTE_MODES,
           max_micro_batch=None, interleave=(1,)) -> Advice:
    """Exhaustive search over dp*tp*pp = N (all factorizations), ZeRO stages, recompute
    modes, micro-batch sizes b dividing B/dp (m = B/(dp*b)) and the interleave degrees
    in ``interleave`` (v > 1 only where Megatron-LM allows it: pp > 1, L/pp layers
    split into v equal chunks, m a multiple of pp); plans that fit ranked by step time
    (ties: less memory first). Impossible layouts are rejected once per (dp, tp, pp)
    with the reason in words; plans that do not fit carry "needs X GB > Y GB".
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
    chunks = tuple(interleave)
    for v in chunks:
        check_number("interleave", v, minimum=1, integer=True)
    if max_micro_batch is not None:
        check_number("max_micro_batch", max_micro_batch, minimum=1, integer=True)
    fitting, rejected = [], []
    n, B, L = job.n_gpus, job.global_batch, job.model.n_layers
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
            vs = [v for v in chunks
                  if v == 1 or (pp > 1 and L % pp == 0 and (L // pp) % v == 0)]
            for z in stages:
                zwhy = plan_reason(job, dp, tp, pp, z)
                if zwhy:
                    rejected.append(PlanReport(Plan(dp, tp, pp, z), None, False, zwhy))
                    continue
                for r in modes:
                    for v in vs:
                        base, act, cols = _score(job, tp, pp, dp, z, r, barr, v)
                        for i, b in enumerate(bs):
                            plan = Plan(dp, tp, pp, z, b, B // (dp * b), r, v)
                            vwhy = _interleave_reason(job, pp, v, plan.n_micro)
                            if vwhy:
                                rejected.append(PlanReport(plan, None, False, vwhy))
                                continue
                            rep = _report(job, plan, base, act, cols, i)
                            (fitting if rep.fits else rejected).append(rep)
    order = sorted(range(len(fitting)),
                   key=lambda i: (fitting[i].step_time, fitting[i].memory_bytes))
    return Advice(job, tuple(fitting[i] for i in order), tuple(rejected))


def _rows(job: Job, reports) -> list:
    rows = []
    peak = job.accelerator.peak(job.dtype)
    for r in reports:
        row = {"plan": str(r.plan), "fits": r.fits, "reason": r.reason,
               "GB/GPU": round(r.memory_bytes / GB, 1) if r.memory is not None
               else math.nan}
        for attr, label in _PARTS:
            row[label + " s"] = getattr(r, attr)
        row["step s"] = r.step_time
        row["TFLOP/s per GPU"] = r.hfu * peak / TFLOP
        row["MFU %"] = 100 * r.mfu
        rows.append(row)
    return rows


def compare_plans(job: Job, plans) -> list:
    """Score ``plans`` (Plan objects or PlanReports) side by side: one row per plan with
    every step-time component (s), the step, hardware TFLOP/s per GPU (recomputation
    included, Megatron-LM's convention) and MFU; rows keep the given order. For reading
    off why the advisor prefers one layout to another."""
    if not isinstance(job, Job):
        raise TypeError(f"job must be a Job (see make_job), got {type(job).__name__}")
    reports = []
    for p in plans:
        if isinstance(p, PlanReport):
            reports.append(p)
        elif isinstance(p, Plan):
            reports.append(evaluate_plan(job, p))
        else:
            raise TypeError(f"plans must hold Plan or PlanReport objects, got "
                            f"{type(p).__name__}")
    return _rows(job, reports)


def explain_difference(a: PlanReport, b: PlanReport) -> str:
    """Why plan ``a`` is faster or slower than plan ``b``, in words: the step-time
    difference and the components that make it, largest first. Seconds."""
    for name, r in (("a", a), ("b", b)):
        if not isinstance(r, PlanReport):
            raise TypeError(f"{name} must be a PlanReport, got {type(r).__name__}")
        if math.isnan(r.step_time):
            raise ValueError(f"{name} was rejected before it was timed: {r.reason}")
    diff = a.step_time - b.step_time
    word = "faster" if diff < 0 else "slower"
    lines = [f"{a.plan} is {abs(diff):.3f} s {word} per step than {b.plan} "
             f"({a.step_time:.3f} s vs {b.step_time:.3f} s):"]
    parts = sorted(((getattr(a, k) - getattr(b, k), label) for k, label in _PARTS),
                   key=lambda x: -abs(x[0]))
    for delta, label in parts:
        if abs(delta) >= 5e-4 * max(a.step_time, b.step_time):
            lines.append(f"  {label:<22} {delta:+.3f} s")
    return "\n".join(lines)
