"""Collective-communication times under the alpha-beta model.

A message of ``S`` bytes over one hop costs ``alpha + S / B`` seconds, where ``B`` is
the link's per-direction bandwidth (bytes/s) and ``alpha`` its latency (s) (Hockney's
model; Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective Communication
Operations in MPICH", §2). Every GPU sends and receives at the same time, so only the
per-direction bandwidth counts (NVLink 4: 450 GB/s, not the 900 GB/s headline).

``size_bytes`` is always the size of the *full* buffer: the input of an all-reduce or
reduce-scatter and the output of an all-gather. Costs (DESIGN.md):

========================  =========================  ==========================
collective                bytes each GPU sends        latency terms
========================  =========================  ==========================
ring all-reduce           2 (N-1)/N * S               2 (N-1)
ring reduce-scatter       (N-1)/N * S                 N-1
ring all-gather           (N-1)/N * S                 N-1
all-to-all (pairwise)     (N-1)/N * S                 N-1
========================  =========================  ==========================

With one GPU every collective is free (0 s).
"""

from __future__ import annotations

import math

from ..hardware import Link, get_link
from ..units import check_choice, check_number

__all__ = [
    "ALLREDUCE_ALGORITHMS", "GATHER_ALGORITHMS", "ring_factor", "allreduce_bytes",
    "allreduce_time", "reduce_scatter_time", "allgather_time", "alltoall_time",
    "hierarchical_allreduce_time", "link_bandwidth", "link_latency",
]

ALLREDUCE_ALGORITHMS = ("ring", "tree", "halving-doubling")
"""``ring``: bandwidth-optimal; ``tree``: binomial-tree reduce then broadcast;
``halving-doubling``: Rabenseifner's recursive halving + doubling."""

GATHER_ALGORITHMS = ("ring", "recursive")
"""``ring`` or recursive halving/doubling (reduce-scatter/all-gather)."""


def _check(size_bytes, n, bandwidth, latency):
    s = check_number("size_bytes", size_bytes, minimum=0)
    n = check_number("n", n, minimum=1, integer=True)
    b = check_number("bandwidth", bandwidth, minimum=0, strict=True)
    a = check_number("latency", latency, minimum=0)
    return s, n, b, a


def link_bandwidth(link, effective=False) -> float:
    """Per-direction bandwidth (bytes/s) of a :class:`Link`, a link name, or a number.

    ``effective=True`` gives what NCCL collectives reach on a registered link, line rate
    x ``Link.efficiency`` (measured; see :mod:`coursekit.hardware`); a bare number is
    returned as given.
    """
    if isinstance(link, (Link, str)):
        got = get_link(link)
        return got.effective_bandwidth if effective else got.bandwidth
    return check_number("link", link, minimum=0, strict=True)


def link_latency(link) -> float:
    """One-hop latency (s) of a :class:`Link` or link name; 0 for a bare number."""
    if isinstance(link, (Link, str)):
        return get_link(link).latency
    check_number("link", link, minimum=0, strict=True)
    return 0.0


def ring_factor(n) -> float:
    """Bytes each GPU sends in a ring all-reduce, per byte of buffer: ``2(N-1)/N``.

    1.75 at N = 8 (chapter 002, Napkin 1.10). Dimensionless.
    """
    n = check_number("n", n, minimum=1, integer=True)
    return 2.0 * (n - 1) / n


def allreduce_bytes(size_bytes, n) -> float:
    """Bytes each GPU sends (and receives) in a ring all-reduce: ``2(N-1)/N * S``. Bytes."""
    s = check_number("size_bytes", size_bytes, minimum=0)
    return ring_factor(n) * s


def allreduce_time(size_bytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    """Time of an all-reduce of ``size_bytes`` over ``n`` GPUs. Seconds.

    * ``ring``: ``2(N-1)/N * S/B + 2(N-1) * alpha`` (Patarasuk & Yuan 2009; DESIGN.md).
    * ``tree``: binomial tree reduce + broadcast, ``2 ceil(log2 N) (alpha + S/B)``.
    * ``halving-doubling``: Rabenseifner, ``2(N-1)/N * S/B + 2 ceil(log2 N) alpha``
      (Thakur et al. 2005, §4.4).

    ``bandwidth`` is per direction (bytes/s), ``latency`` per hop (s).
    """
    s, n, b, a = _check(size_bytes, n, bandwidth, latency)
    check_choice("algorithm", algorithm, ALLREDUCE_ALGORITHMS)
    if n == 1:
        return 0.0
    steps = math.ceil(math.log2(n))
    if algorithm == "ring":
        return 2.0 * (n - 1) / n * s / b + 2.0 * (n - 1) * a
    if algorithm == "tree":
        return 2.0 * steps * (a + s / b)
    return 2.0 * (n - 1) / n * s / b + 2.0 * steps * a


def _gather_like(size_bytes, n, bandwidth, latency, algorithm):
    s, n, b, a = _check(size_bytes, n, bandwidth, latency)
    check_choice("algorithm", algorithm, GATHER_ALGORITHMS)
    if n == 1:
        return 0.0
    hops = (n - 1) if algorithm == "ring" else math.ceil(math.log2(n))
    return (n - 1) / n * s / b + hops * a


def reduce_scatter_time(size_bytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    """Reduce-scatter of a ``size_bytes`` buffer (each GPU keeps S/N reduced bytes).

    ``(N-1)/N * S/B + (N-1) alpha`` for a ring, ``ceil(log2 N) alpha`` latency for
    recursive halving (Thakur et al. 2005, §4.3). Seconds.
    """
    return _gather_like(size_bytes, n, bandwidth, latency, algorithm)


def allgather_time(size_bytes, n, bandwidth, latency=0.0, algorithm="ring") -> float:
    """All-gather producing a ``size_bytes`` buffer from S/N bytes per GPU.

    ``(N-1)/N * S/B + (N-1) alpha`` for a ring, ``ceil(log2 N) alpha`` latency for
    recursive doubling (Thakur et al. 2005, §4.1). Seconds.
    """
    return _gather_like(size_bytes, n, bandwidth, latency, algorithm)


def alltoall_time(size_bytes, n, bandwidth, latency=0.0) -> float:
    """All-to-all where each GPU holds ``size_bytes`` and sends S/N to every other GPU.

    Pairwise exchange: ``(N-1)/N * S/B + (N-1) alpha`` (Thakur et al. 2005, §4.5;
    the expert-parallel dispatch of MoE layers). Seconds.
    """
    s, n, b, a = _check(size_bytes, n, bandwidth, latency)
    if n == 1:
        return 0.0
    return (n - 1) / n * s / b + (n - 1) * a


def hierarchical_allreduce_time(size_bytes, n_nodes, gpus_per_node, intra_bandwidth,
                                inter_bandwidth, intra_latency=0.0,
                                inter_latency=0.0) -> float:
    """Two-level all-reduce: intra-node reduce-scatter, inter-node all-reduce, intra-node
    all-gather (Goyal et al. 2017 §4; NCCL/Horovod hierarchical mode).

    ``RS(S, g, intra) + AR(S/g, n_nodes, inter) + AG(S, g, intra)``, all rings; the g
    inter-node rings run at once, one per GPU, so ``inter_bandwidth`` is per GPU
    (one NIC per GPU, as in a DGX). Seconds.
    """
    s = check_number("size_bytes", size_bytes, minimum=0)
    nn = check_number("n_nodes", n_nodes, minimum=1, integer=True)
    g = check_number("gpus_per_node", gpus_per_node, minimum=1, integer=True)
    return (reduce_scatter_time(s, g, intra_bandwidth, intra_latency)
            + allreduce_time(s / g, nn, inter_bandwidth, inter_latency)
            + allgather_time(s, g, intra_bandwidth, intra_latency))
