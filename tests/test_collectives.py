"""Tests for coursekit.parallel.collectives (alpha-beta collective times)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.hardware import LINKS, Link, get_link
from coursekit.parallel import collectives as C
from coursekit.units import GB, MS


def test_ring_factor_at_8_is_1_75():
    # chapter 002 Napkin 1.10: 2(N-1)/N = 1.75 for 8 GPUs
    assert C.ring_factor(8) == pytest.approx(1.75, rel=1e-12)
    assert C.allreduce_bytes(14e9, 8) == pytest.approx(24.5e9, rel=1e-12)


def test_napkin_1_10_network_wall():
    # chapter 002 Napkin 1.10: 14 GB fp16 gradients, 8 workers, 12.5 GB/s -> 1.96 s
    t = C.allreduce_time(14 * GB, 8, 12.5 * GB)
    assert t == pytest.approx(1.96, rel=1e-9)
    # the registered 100GbE link is that fabric (12.5 GB/s per direction)
    assert C.allreduce_time(14 * GB, 8, get_link("100GbE").bandwidth) == pytest.approx(1.96)


def test_napkin_1_10_over_nvlink_per_direction():
    # recomputed: 24.5 GB / 450 GB/s (NVLink 4 per direction) = 54.4 ms. The chapter's
    # "900 GB/s" adds both directions and would give 27.2 ms, 2x too optimistic.
    t = C.allreduce_time(14 * GB, 8, get_link("NVLink-H100").bandwidth)
    assert t == pytest.approx(24.5 / 450, rel=1e-9)
    assert t / MS == pytest.approx(54.44, abs=0.01)


def test_lesson_misconception_4_one_gigabyte():
    # lesson 003 misconception 4: 1 GB over NVLink "~600 GB/s" takes ~1.7 ms; 312 TFLOP/s
    # x 1.667 ms = 520 GFLOP (the lesson rounds to "~530 billion"). Per direction the
    # A100 link is 300 GB/s: 3.33 ms, ~1.04 TFLOP lost.
    t = 1 * GB / (600 * GB)
    assert t * 312e12 == pytest.approx(520e9, rel=1e-9)
    t_dir = 1 * GB / get_link("NVLink-A100").bandwidth
    assert t_dir == pytest.approx(1 / 300, rel=1e-9)


def test_reduce_scatter_plus_allgather_equals_ring_allreduce():
    # Rajbhandari et al. 2020 §7.2.1: all-reduce = reduce-scatter + all-gather
    s, n, b, a = 3e9, 16, 50e9, 5e-6
    assert (C.reduce_scatter_time(s, n, b, a) + C.allgather_time(s, n, b, a)
            == pytest.approx(C.allreduce_time(s, n, b, a)))


def test_latency_terms():
    # recomputed: ring 2(N-1) alpha; tree 2 ceil(log2 N)(alpha + S/B); halving-doubling
    # 2(N-1)/N S/B + 2 log2(N) alpha
    assert C.allreduce_time(0, 8, 1e9, 1e-6) == pytest.approx(14e-6)
    assert C.allreduce_time(1e6, 8, 1e9, 1e-6, algorithm="tree") == pytest.approx(
        6 * (1e-6 + 1e-3))
    assert C.allreduce_time(1e6, 8, 1e9, 1e-6, algorithm="halving-doubling") == \
        pytest.approx(1.75e-3 + 6e-6)
    assert C.alltoall_time(8e6, 8, 1e9, 1e-6) == pytest.approx(7e-3 + 7e-6)
    assert C.allgather_time(8e6, 8, 1e9, 1e-6, algorithm="recursive") == pytest.approx(
        7e-3 + 3e-6)


def test_tree_beats_ring_for_tiny_messages_only():
    bw, lat = 25e9, 5e-6
    assert C.allreduce_time(1e3, 256, bw, lat, "tree") < C.allreduce_time(1e3, 256, bw, lat)
    assert C.allreduce_time(1e9, 256, bw, lat, "tree") > C.allreduce_time(1e9, 256, bw, lat)


def test_hierarchical_allreduce():
    # recomputed: RS(S,8) + AR(S/8, 16 nodes) + AG(S,8) over 300 / 25 GB/s
    s = 8e9
    expect = 2 * (7 / 8) * s / 300e9 + 2 * (15 / 16) * (s / 8) / 25e9
    got = C.hierarchical_allreduce_time(s, 16, 8, 300e9, 25e9)
    assert got == pytest.approx(expect, rel=1e-12)
    # far faster than one flat ring over all 128 GPUs at the inter-node rate
    assert got < C.allreduce_time(s, 128, 25e9)
    # one node: just the intra-node part
    assert C.hierarchical_allreduce_time(s, 1, 8, 300e9, 25e9) == pytest.approx(
        C.allreduce_time(s, 8, 300e9))


@settings(max_examples=50, deadline=None)
@given(size=st.floats(0, 1e12), bw=st.floats(1e6, 1e13), lat=st.floats(0, 1e-3),
       alg=st.sampled_from(C.ALLREDUCE_ALGORITHMS))
def test_one_gpu_is_free(size, bw, lat, alg):
    assert C.allreduce_time(size, 1, bw, lat, alg) == 0.0
    assert C.reduce_scatter_time(size, 1, bw, lat) == 0.0
    assert C.allgather_time(size, 1, bw, lat) == 0.0
    assert C.alltoall_time(size, 1, bw, lat) == 0.0


@settings(max_examples=50, deadline=None)
@given(n=st.integers(2, 4096), size=st.floats(1.0, 1e11), bw=st.floats(1e6, 1e13))
def test_ring_bytes_bounded_by_two_copies(n, size, bw):
    t = C.allreduce_time(size, n, bw)
    assert size / bw <= t < 2 * size / bw
    assert C.allreduce_time(size, n + 1, bw) >= t  # more GPUs never cheaper


@pytest.mark.parametrize("kwargs, word", [
    (dict(size_bytes=-1, n=2, bandwidth=1e9), "size_bytes"),
    (dict(size_bytes=1, n=0, bandwidth=1e9), "n"),
    (dict(size_bytes=1, n=2.5, bandwidth=1e9), "n"),
    (dict(size_bytes=1, n=2, bandwidth=0), "bandwidth"),
    (dict(size_bytes=1, n=2, bandwidth=1e9, latency=-1), "latency"),
    (dict(size_bytes=1, n=2, bandwidth=1e9, algorithm="butterfly"), "algorithm"),
])
def test_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        C.allreduce_time(**kwargs)


def test_unknown_link_lists_known_ones():
    with pytest.raises(ValueError, match="InfiniBand-NDR"):
        C.link_bandwidth("carrier-pigeon")
    with pytest.raises(TypeError):
        C.allreduce_time("1GB", 2, 1e9)


def test_link_helpers():
    assert C.link_bandwidth("10GbE") == pytest.approx(1.25e9)
    assert C.link_latency(get_link("10GbE")) == pytest.approx(50e-6)
    assert C.link_latency(5e9) == 0.0
    assert math.isclose(C.link_bandwidth(5e9), 5e9)


def test_measured_link_efficiency():
    # NCCL bus bandwidth of large messages over line rate (sources in coursekit.hardware):
    # 232.54 of 300 GB/s on 8 x A100 NVLink (nccl-tests #175), 370 of 450 on H100
    # (nccl-tests #212), 24 of 25 GB/s per InfiniBand HDR NIC (nccl #412)
    assert C.link_bandwidth("NVLink-A100") == pytest.approx(300e9)
    assert C.link_bandwidth("NVLink-A100", effective=True) == pytest.approx(232.54e9)
    assert C.link_bandwidth("NVLink-H100", effective=True) == pytest.approx(370e9)
    assert C.link_bandwidth("InfiniBand-HDR", effective=True) == pytest.approx(24e9)
    assert C.link_bandwidth(5e9, effective=True) == 5e9
    assert "issue #175" in get_link("NVLink-A100").efficiency_source
    assert get_link("10GbE").efficiency == 1.0  # none recorded: ideal
    for link in LINKS.values():
        assert 0 < link.efficiency <= 1 and link.efficiency_source
    custom = Link("lab-ethernet", 1e9, 0.0, "a lab switch", 0.8, "measured in the lab")
    assert custom.effective_bandwidth == pytest.approx(0.8e9)
    with pytest.raises(ValueError, match="efficiency"):
        Link("bad", 1e9, 0.0, "x", 1.5)
