"""Tests for coursekit.parallel.pipeline (bubbles and schedules)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.parallel import pipeline as P


def test_lesson_75_percent_idle():
    # lesson 003 §4d: 4 stages, 1 micro-batch -> 75% idle
    assert P.bubble_fraction(4, 1) == pytest.approx(0.75)


def test_lab_under_10_percent_needs_28_microbatches():
    # lab 004 Part 2 "< 10% bubble" at p=4: 3/(m+3) < 0.1 -> m > 27 -> m = 28
    assert P.min_microbatches(4, 0.10) == 28
    assert P.bubble_fraction(4, 28) < 0.10 <= P.bubble_fraction(4, 27)


def test_interleaving_divides_bubble():
    # Narayanan et al. 2021 §2.2.2: bubble time (p-1)/v per step of m micro-batches
    assert P.bubble_fraction(8, 16, v=4) == pytest.approx(7 / (64 + 7))
    assert P.bubble_ratio(8, 16, v=4) == pytest.approx(7 / 64)
    assert P.min_microbatches(4, 0.10, v=2) == 14  # recomputed: 3/(2m+3) < 0.1
    assert P.min_microbatches(1, 0.01) == 1


def test_step_time():
    # recomputed: (m + (p-1)/v)(tf + tb)
    assert P.pipeline_step_time(4, 8, 1.0, 2.0) == pytest.approx(33.0)
    assert P.pipeline_step_time(4, 8, 1.0, 2.0, v=2) == pytest.approx(28.5)


@pytest.mark.parametrize("kind, p, m, v", [
    ("gpipe", 4, 1, 1), ("gpipe", 4, 8, 1), ("1f1b", 4, 8, 1), ("1f1b", 4, 3, 1),
    ("1f1b", 8, 16, 1), ("interleaved", 4, 8, 2), ("interleaved", 8, 16, 4),
    ("interleaved", 4, 4, 3),
])
def test_schedules_match_bubble_formula(kind, p, m, v):
    tl = P.schedule(kind, p, m, v)
    assert tl.idle_fraction == pytest.approx(P.bubble_fraction(p, m, tl.v), rel=1e-9)
    assert tl.makespan == pytest.approx(P.pipeline_step_time(p, m, 1.0, 2.0, tl.v))
    assert len(tl.tasks) == 2 * p * m * tl.v


def test_schedule_respects_dependencies_and_no_overlap():
    tl = P.schedule("interleaved", 4, 8, 2, t_fwd=1.0, t_bwd=2.0)
    end = {(t.kind, t.chunk * tl.p + t.stage, t.microbatch): t.end for t in tl.tasks}
    for t in tl.tasks:
        vs = t.chunk * tl.p + t.stage
        if t.kind == "F" and vs > 0:
            assert t.start >= end[("F", vs - 1, t.microbatch)] - 1e-12
        if t.kind == "B":
            dep = ("B", vs + 1, t.microbatch) if vs < tl.p * tl.v - 1 else ("F", vs, t.microbatch)
            assert t.start >= end[dep] - 1e-12
    for s in range(tl.p):
        mine = [t for t in tl.tasks if t.stage == s]
        assert all(a.end <= b.start + 1e-12 for a, b in zip(mine, mine[1:]))
    arrays = tl.as_arrays()
    assert arrays["start"].shape == (2 * 4 * 8 * 2,)
    assert arrays["is_forward"].sum() == 4 * 8 * 2


def test_1f1b_keeps_at_most_p_in_flight():
    # Narayanan et al. 2021 §2.2.1: 1F1B bounds in-flight micro-batches by p (GPipe: m)
    for kind, bound in (("1f1b", 4), ("gpipe", 12)):
        tl = P.schedule(kind, 4, 12)
        first = sorted((t for t in tl.tasks if t.stage == 0), key=lambda t: t.start)
        live = peak = 0
        for t in first:
            live += 1 if t.kind == "F" else -1
            peak = max(peak, live)
        assert peak == bound


@settings(max_examples=50, deadline=None)
@given(p=st.integers(1, 64), m=st.integers(1, 512), v=st.integers(1, 8))
def test_more_microbatches_never_increase_bubble(p, m, v):
    assert P.bubble_fraction(p, m + 1, v) <= P.bubble_fraction(p, m, v)
    assert 0 <= P.bubble_fraction(p, m, v) < 1


@settings(max_examples=50, deadline=None)
@given(p=st.integers(1, 64), t=st.floats(0.001, 0.999), v=st.integers(1, 4))
def test_min_microbatches_is_minimal(p, t, v):
    m = P.min_microbatches(p, t, v)
    assert P.bubble_fraction(p, m, v) < t or p == 1
    if m > 1:
        assert P.bubble_fraction(p, m - 1, v) >= t


@pytest.mark.parametrize("args, word", [((0, 4), "p"), ((4, 0), "m"), ((4, 4, 0), "v"),
                                        ((4.5, 4), "p")])
def test_bad_input(args, word):
    with pytest.raises(ValueError, match=word):
        P.bubble_fraction(*args)


def test_bad_schedule_input():
    with pytest.raises(ValueError, match="kind"):
        P.schedule("zero-bubble", 4, 4)
    with pytest.raises(ValueError, match="multiple of p"):
        P.schedule("interleaved", 4, 6, 2)
    with pytest.raises(ValueError, match="max_bubble"):
        P.min_microbatches(4, 0.0)


@pytest.mark.parametrize("kind, p, m, v", [
    ("1f1b", 4, 8, 1), ("1f1b", 8, 32, 1), ("1f1b", 4, 2, 1), ("interleaved", 4, 8, 2),
    ("interleaved", 8, 32, 2), ("interleaved", 6, 12, 3)])
@pytest.mark.parametrize("slow", [1.0, 1.3, 2.0])
def test_one_slow_stage_sets_the_pace(kind, p, m, v, slow):
    # the advisor's case (issue #17): the last stage also runs the output layer and the
    # loss; the simulated schedule takes m slow micro-batch times plus the other stages'
    # times once, over v
    f = [1.0] * (p - 1) + [slow]
    b = [2.0] * (p - 1) + [2.0 * slow]
    t = [x + y for x, y in zip(f, b)]
    got = P.schedule(kind, p, m, v, f, b).makespan
    assert got == pytest.approx(P.unbalanced_step_time(t, m, v), rel=1e-12)
    assert got == pytest.approx(m * 3 * slow + (p - 1) * 3 / v, rel=1e-12)


def test_unbalanced_reduces_to_equal_stages():
    assert P.unbalanced_step_time([3.0] * 4, 8) == pytest.approx(
        P.pipeline_step_time(4, 8, 1.0, 2.0))
    assert P.unbalanced_step_time([3.0] * 4, 8, v=2) == pytest.approx(
        P.pipeline_step_time(4, 8, 1.0, 2.0, v=2))


@settings(max_examples=40, deadline=None)
@given(p=st.integers(2, 6), k=st.integers(1, 4), v=st.sampled_from([1, 2]),
       first=st.floats(1.0, 1.5), last=st.floats(1.0, 1.5))
def test_heavier_end_stages_never_beat_the_formula(p, k, v, first, last):
    # embedding on the first stage and output layer on the last: the formula is an upper
    # bound of the simulated step (exact when only one stage is heavier)
    t = [first] + [1.0] * (p - 2) + [last]
    kind = "interleaved" if v > 1 else "1f1b"
    sim = P.schedule(kind, p, p * k, v, [x / 3 for x in t], [2 * x / 3 for x in t])
    assert sim.makespan <= P.unbalanced_step_time(t, p * k, v) * (1 + 1e-12)


def test_bad_stage_times():
    with pytest.raises(ValueError, match="t_fwd has 3 stage times"):
        P.schedule("1f1b", 4, 8, 1, [1.0, 1.0, 1.0], 2.0)
    with pytest.raises(ValueError, match=r"t_bwd\[1\]"):
        P.schedule("1f1b", 2, 4, 1, 1.0, [2.0, 0.0])
    with pytest.raises(ValueError, match="stage_times"):
        P.unbalanced_step_time([], 4)
    with pytest.raises(ValueError, match="stage_times"):
        P.unbalanced_step_time([1.0, -1.0], 4)
