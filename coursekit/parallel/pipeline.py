"""Pipeline parallelism: bubble fractions and per-stage schedules (GPipe, 1F1B, interleaved).

Convention (DESIGN.md, stated to students): the bubble is a fraction of the whole step,
``(p-1) / (v*m + p-1)`` for ``p`` stages, ``m`` micro-batches and ``v`` interleaved model
chunks per GPU. Papers often quote bubble time over ideal time, ``(p-1)/(v*m)``
(Narayanan et al. 2021, §2.2); the two agree when m >> p.

Schedules are plain data: one :class:`Task` per (stage, micro-batch, chunk, pass) with
its start and end time, ready for a Gantt chart. Forward of one micro-batch on one
stage takes ``t_fwd`` and backward ``t_bwd`` (for the whole stage; an interleaved chunk
takes 1/v of it), the same on every stage or one value per stage (a pipeline whose last
stage also runs the output layer is slower there: :func:`unbalanced_step_time`). Each
task starts when its stage is free and its input has arrived (communication time is
ignored).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..units import check_choice, check_number

__all__ = [
    "SCHEDULES", "bubble_fraction", "bubble_ratio", "min_microbatches", "pipeline_step_time",
    "Task", "Timeline", "schedule", "unbalanced_step_time",
]

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def _check_pmv(p, m, v):
    p = check_number("p", p, minimum=1, integer=True)
    m = check_number("m", m, minimum=1, integer=True)
    v = check_number("v", v, minimum=1, integer=True)
    return p, m, v


def bubble_fraction(p, m, v=1) -> float:
    """Idle fraction of a pipeline step: ``(p-1) / (v*m + p-1)``.

    GPipe and 1F1B (v = 1): Huang et al. 2019 §2.3; interleaved 1F1B with v chunks per
    GPU: Narayanan et al. 2021 §2.2.2. p = 4, m = 1 gives 0.75 (lesson plan 003, "75%
    idle"). Dimensionless (0..1).
    """
    p, m, v = _check_pmv(p, m, v)
    return (p - 1) / (v * m + p - 1)


def bubble_ratio(p, m, v=1) -> float:
    """Bubble time over ideal compute time, ``(p-1) / (v*m)`` (Narayanan et al. 2021,
    §2.2.1). Dimensionless; not a fraction of the step (it can exceed 1)."""
    p, m, v = _check_pmv(p, m, v)
    return (p - 1) / (v * m)


def min_microbatches(p, max_bubble, v=1) -> int:
    """Smallest micro-batch count ``m`` with ``bubble_fraction(p, m, v) < max_bubble``.

    From ``(p-1)/(v*m + p-1) < t``: ``m > (p-1)(1-t) / (t*v)``. p = 4 and a bubble
    under 10% need m = 28 (lab plan 004, Part 2). Count.
    """
    p = check_number("p", p, minimum=1, integer=True)
    v = check_number("v", v, minimum=1, integer=True)
    t = check_number("max_bubble", max_bubble, minimum=0, strict=True, maximum=1)
    if p == 1:
        return 1
    m = max(1, math.floor((p - 1) * (1 - t) / (t * v)) + 1)
    # Guard the floating-point boundary with the exact inequality.
    while m > 1 and (p - 1) < t * (v * (m - 1) + p - 1):
        m -= 1
    while not (p - 1) < t * (v * m + p - 1):
        m += 1
    return m


def pipeline_step_time(p, m, t_fwd, t_bwd, v=1) -> float:
    """Step time of a synchronous pipeline: ``(m + (p-1)/v) * (t_fwd + t_bwd)``.

    ``t_fwd``/``t_bwd``: one micro-batch through one whole stage (s). Narayanan et al.
    2021, §2.2. Seconds.
    """
    p, m, v = _check_pmv(p, m, v)
    f = check_number("t_fwd", t_fwd, minimum=0)
    b = check_number("t_bwd", t_bwd, minimum=0)
    return (m + (p - 1) / v) * (f + b)


@dataclass(frozen=True)
class Task:
    """One forward (``kind='F'``) or backward (``'B'``) pass of one micro-batch on one
    stage (GPU), for model chunk ``chunk``; times in seconds."""

    stage: int
    microbatch: int
    chunk: int
    kind: str
    start: float
    end: float


@dataclass(frozen=True)
class Timeline:
    """A pipeline schedule as plain data: ``tasks`` sorted by (stage, start)."""

    name: str
    p: int
    m: int
    v: int
    tasks: tuple

    @property
    def makespan(self) -> float:
        """End of the last task. Seconds."""
        return max(t.end for t in self.tasks)

    @property
    def busy_time(self) -> float:
        """Sum of task durations over all stages. Seconds."""
        return sum(t.end - t.start for t in self.tasks)

    @property
    def idle_fraction(self) -> float:
        """``1 - busy / (p * makespan)``: the measured bubble. Dimensionless."""
        return 1.0 - self.busy_time / (self.p * self.makespan)

    def as_arrays(self) -> dict:
        """Columns as numpy arrays: stage, microbatch, chunk, is_forward, start, end."""
        return {
            "stage": np.array([t.stage for t in self.tasks], dtype=int),
            "microbatch": np.array([t.microbatch for t in self.tasks], dtype=int),
            "chunk": np.array([t.chunk for t in self.tasks], dtype=int),
            "is_forward": np.array([t.kind == "F" for t in self.tasks], dtype=bool),
            "start": np.array([t.start for t in self.tasks], dtype=float),
            "end": np.array([t.end for t in self.tasks], dtype=float),
        }


def _orders(kind, p, m, v):
    """Per-stage op order: list of (pass, microbatch, chunk)."""
    orders = []
    for s in range(p):
        if kind == "gpipe":
            ops = [("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)]
        elif kind == "1f1b":
            warm = min(p - s - 1, m)
            ops = [("F", i, 0) for i in range(warm)]
            f, b = warm, 0
            while b < m:
                if f < m:
                    ops.append(("F", f, 0))
                    f += 1
                ops.append(("B", b, 0))
                b += 1
        else:  # interleaved (Megatron-LM schedule, Narayanan et al. 2021 §2.2.2)
            total = m * v

            def fwd(k):
                return ("F", (k // (p * v)) * p + k % p, (k // p) % v)

            def bwd(k):
                return ("B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v)

            warm = min((p - s - 1) * 2 + (v - 1) * p, total)
            ops = [fwd(k) for k in range(warm)]
            f, b = warm, 0
            while b < total:
                if f < total:
                    ops.append(fwd(f))
                    f += 1
                ops.append(bwd(b))
                b += 1
        orders.append(ops)
    return orders


def _simulate(orders, p, v, t_fwd, t_bwd):
    """Earliest-start list schedule; each task is visited once (worklist, O(tasks)).
    ``t_fwd``/``t_bwd``: per-stage sequences of length p."""
    n_virtual = p * v
    done = {}  # (pass, virtual stage, microbatch) -> end time
    waiting = {}  # dependency key -> stages blocked on it
    pos = [0] * p
    free = [0.0] * p
    tasks = []
    work = deque(range(p))
    while work:
        s = work.popleft()
        while pos[s] < len(orders[s]):
            kind, i, c = orders[s][pos[s]]
            vs = c * p + s
            if kind == "F":
                dep = ("F", vs - 1, i) if vs > 0 else None
                dur = t_fwd[s] / v
            else:
                dep = ("B", vs + 1, i) if vs < n_virtual - 1 else ("F", vs, i)
                dur = t_bwd[s] / v
            if dep is not None and dep not in done:
                waiting.setdefault(dep, []).append(s)
                break
            start = max(free[s], done[dep] if dep is not None else 0.0)
            end = start + dur
            free[s] = end
            key = (kind, vs, i)
            done[key] = end
            tasks.append(Task(s, i, c, kind, start, end))
            pos[s] += 1
            for other in waiting.pop(key, ()):
                work.append(other)
    if any(pos[s] < len(orders[s]) for s in range(p)):  # pragma: no cover - guards bugs
        raise RuntimeError("pipeline schedule deadlocked")
    tasks.sort(key=lambda t: (t.stage, t.start))
    return tuple(tasks)


def _stage_times(name, value, p):
    """A positive time per stage: one number for all, or a sequence of p numbers."""
    if np.ndim(value) == 0:
        return [check_number(name, value, minimum=0, strict=True)] * p
    vals = list(value)
    if len(vals) != p:
        raise ValueError(f"{name} has {len(vals)} stage times; p={p} needs one per stage")
    return [check_number(f"{name}[{i}]", x, minimum=0, strict=True)
            for i, x in enumerate(vals)]


def schedule(kind, p, m, v=1, t_fwd=1.0, t_bwd=2.0) -> Timeline:
    """Per-stage timeline of a GPipe, 1F1B or interleaved-1F1B pipeline step.

    ``gpipe``: all forwards, then all backwards (Huang et al. 2019); ``1f1b``: p-s-1
    warm-up forwards, then one forward one backward (PipeDream-Flush, Narayanan et al.
    2021 §2.2.1); ``interleaved``: v model chunks per GPU, m a multiple of p (§2.2.2).
    ``t_fwd``/``t_bwd`` are one number (every stage alike) or one per stage (an
    unbalanced pipeline, e.g. a last stage that also runs the output layer: the slowest
    stage then sets the pace, :func:`unbalanced_step_time`). With equal stages the
    measured idle fraction equals :func:`bubble_fraction`. Times in seconds.
    """
    check_choice("kind", kind, SCHEDULES)
    p, m, v = _check_pmv(p, m, v)
    f = _stage_times("t_fwd", t_fwd, p)
    b = _stage_times("t_bwd", t_bwd, p)
    if kind != "interleaved":
        v = 1
    elif m % p:
        raise ValueError(f"m={m} must be a multiple of p={p} for the interleaved schedule")
    return Timeline(kind, p, m, v, _simulate(_orders(kind, p, m, v), p, v, f, b))


def unbalanced_step_time(stage_times, m, v=1) -> float:
    """Step time of a 1F1B pipeline whose stages differ:
    ``m * max(t_i) + (sum(t_i) - max(t_i)) / v``.

    ``stage_times``: forward + backward time of one micro-batch on each stage (s). In
    the steady state every stage waits for the slowest one, so the m micro-batches run
    at its pace, and filling and draining the pipeline costs the other stages' times
    once, divided by the v chunks (Narayanan et al. 2021 §2.2). It equals the simulated
    :func:`schedule` when one stage is slower than the rest (the last one, holding the
    output layer and the loss, in the advisor) with the same forward:backward split;
    with several uneven stages the simulation can finish up to ~20% sooner. With equal
    stages it is :func:`pipeline_step_time`. Seconds.
    """
    times = np.asarray(stage_times, dtype=float)
    if times.ndim != 1 or times.size == 0 or not np.all(np.isfinite(times)) \
            or np.any(times <= 0):
        raise ValueError(f"stage_times={stage_times!r} must be positive stage times")
    p, m, v = _check_pmv(times.size, m, v)
    slow = float(times.max())
    return m * slow + (float(times.sum()) - slow) / v
