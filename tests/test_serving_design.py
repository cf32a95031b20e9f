"""Tests for choosing the number of slots (notebook 06, Part 7): the linear step-time rule,
coursekit.serving.batching.slot_tradeoff / best_slot_count, and viz.plot_slot_tradeoff.

Reference numbers were recomputed by hand or with a throwaway heap simulator written
independently of coursekit (the token-step model of notebook 06; P90 = np.percentile,
linear interpolation)."""

import math

import matplotlib
import numpy as np
import pytest

from coursekit.serving import batching as bt

matplotlib.use("Agg")

EX3 = bt.lesson_lengths(50, seed=0).tolist()  # Exercise 3's 50 lengths (lesson 003)
CANDIDATES = [8, 16, 24, 32, 40, 48, 56, 64]
KV_H100_7B = 66_523_168_768  # 80e9 - 2 x 6,738,415,616 bytes (Llama-2-7B, bf16)
MIB_HALF = 524_288  # Llama-2-7B KV bytes per token: 2 x 32 x 32 x 128 x 2


def nightly(prompt=1000):
    """The notebook's nightly job: Exercise 3 on Llama-2-7B / H100, 6.0 + 0.16 B ms."""
    return bt.slot_tradeoff(EX3, CANDIDATES, 6.0e-3, 0.16e-3, KV_H100_7B, MIB_HALF, prompt)


# ----------------------------------------------------------------------------------
# memory_bound_step_line
# ----------------------------------------------------------------------------------
def test_step_line_llama2_7b_h100():
    sm = bt.StepTimeModel.from_roofline("llama2-7b", "H100-SXM", overhead_s=2e-3)
    base, per = bt.memory_bound_step_line(sm, 1024)
    # 2 ms + 13,476,831,232 B / 3.35e12 B/s = 6.022935 ms; 1,024 x 524,288 / 3.35e12
    assert base == pytest.approx(6.022935e-3, rel=1e-6)
    assert per == pytest.approx(1.6025997e-4, rel=1e-6)
    for b in (1, 8, 64):  # memory-bound at these batches: the line is the roofline
        assert sm.decode_step_time(b, 1024) == pytest.approx(base + per * b, rel=1e-12)


def test_step_line_rejects_bad_input():
    sm = bt.StepTimeModel.constant(1.0)
    with pytest.raises(TypeError, match="step_model"):
        bt.memory_bound_step_line("llama2-7b", 1024)
    with pytest.raises(ValueError, match="context_tokens"):
        bt.memory_bound_step_line(sm, -1)
    assert bt.memory_bound_step_line(sm, 100) == (1.0, 0.0)  # no weights, no KV: constant


# ----------------------------------------------------------------------------------
# slot_tradeoff: known answers
# ----------------------------------------------------------------------------------
def test_hand_case():
    # 3 slots, [5, 1, 1, 1, 2, 2]: latencies 5, 1, 1, 2, 3, 4 steps (notebook 06 Part 4);
    # sorted 1, 1, 2, 3, 4, 5 -> P90 at index 0.9 x 5 = 4.5: 4.5 steps; mean 16/6.
    # 1 slot: done at 5, 6, 7, 8, 10, 12 -> P90 between 10 and 12: 11.
    # 6 slots: latency = length, sorted 1, 1, 1, 2, 2, 5 -> P90 between 2 and 5: 3.5.
    # 1 s per step, no per-slot cost.
    t = bt.slot_tradeoff([5, 1, 1, 1, 2, 2], [3, 1, 6], 1.0, 0.0, 1e12, 1.0)
    assert t.total_steps.tolist() == [5, 12, 5]
    assert t.p90_latency_s.tolist() == pytest.approx([4.5, 11.0, 3.5])
    assert t.mean_latency_s[0] == pytest.approx(16 / 6)
    assert t.useful_tokens == 12
    assert t.throughput_tokens.tolist() == pytest.approx([12 / 5, 1.0, 12 / 5])
    # 3 and 6 slots tie on throughput: the smaller wins; a 4 s SLO leaves only 6 slots
    assert bt.best_slot_count(t, 100.0) == 3
    assert bt.best_slot_count(t, 4.0) == 6


def test_nightly_job_numbers():
    t = nightly()
    i = CANDIDATES.index(48)
    # 48 slots: 198 steps (the longest request; all 50 start within the first wave),
    # 6.0 + 0.16 x 48 = 13.68 ms per step, makespan 2,708.64 ms, 4,472 tokens
    assert t.total_steps[i] == 198
    assert t.step_time_s[i] == pytest.approx(13.68e-3)
    assert t.makespan_s[i] == pytest.approx(2.70864)
    assert t.throughput_tokens[i] == pytest.approx(4472 / 2.70864)
    assert t.p90_latency_s[i] == pytest.approx(2.287296, rel=1e-9)
    assert t.p90_latency_s[CANDIDATES.index(40)] == pytest.approx(2.1328, rel=1e-9)
    # KV: 66,523,168,768 // (16 x 524,288) = 7,930 blocks; 1,000 + 198 = 1,198 tokens ->
    # 75 blocks -> 105 sequences
    assert (t.kv_seq_tokens, t.max_slots_kv) == (1198, 105)
    assert t.kv_fits.all()


def test_best_slot_count_nightly_job():
    t = nightly()
    assert bt.best_slot_count(t, 2.5) == 48        # the notebook's visible answer
    # 2.25 s: 48 (P90 2.287 s) misses; 40 (2.133 s) meets, 32 (2.320 s) misses -> 40
    assert bt.best_slot_count(t, 2.25) == 40
    assert bt.best_slot_count(t, 2.0) is None      # lowest P90 is 2.133 s (40 slots)
    assert isinstance(bt.best_slot_count(t, 2.5), int)


def test_kv_cache_caps_the_choice():
    # 2,500-token prompts: 2,698 tokens -> 169 blocks -> 7,930 // 169 = 46 sequences,
    # so 48 no longer fits and 40 (the next best throughput under 2.5 s) wins
    t = nightly(prompt=2500)
    assert t.max_slots_kv == 46
    assert t.kv_fits.tolist() == [True] * 5 + [False] * 3
    assert bt.best_slot_count(t, 2.5) == 40
    t0 = bt.slot_tradeoff(EX3, CANDIDATES, 6.0e-3, 0.16e-3, 1e9, MIB_HALF, 1000)
    assert t0.max_slots_kv == 1 and bt.best_slot_count(t0, 100.0) is None  # 119 blocks


def test_tie_goes_to_the_smallest():
    # [4, 4] with 2 or 3 slots: 4 steps each, same step time -> same throughput
    t = bt.slot_tradeoff([4, 4], [3, 2], 1.0, 0.0, 1e12, 1.0)
    assert bt.best_slot_count(t, 10.0) == 2


def test_more_slots_than_requests_only_cost_time():
    # with B >= n every request starts at once: the makespan is max(L) steps, and with a
    # positive per-slot cost the throughput falls as B grows
    t = bt.slot_tradeoff([3, 7, 5], [3, 4, 8], 1.0, 0.1, 1e12, 1.0)
    assert t.total_steps.tolist() == [7, 7, 7]
    assert np.all(np.diff(t.throughput_tokens) < 0)
    assert bt.best_slot_count(t, 100.0) == 3


@pytest.mark.parametrize("candidates", [[], [0, 8], [-1], [2.5]])
def test_bad_candidates(candidates):
    with pytest.raises(ValueError, match="candidates"):
        bt.slot_tradeoff(EX3, candidates, 1.0, 0.0, 1e12, 1.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="base_step_s"):
        bt.slot_tradeoff(EX3, [8], 0.0, 0.0, 1e12, 1.0)
    with pytest.raises(ValueError, match="per_slot_s"):
        bt.slot_tradeoff(EX3, [8], 1.0, -1.0, 1e12, 1.0)
    with pytest.raises(ValueError, match="kv_bytes_per_token"):
        bt.slot_tradeoff(EX3, [8], 1.0, 0.0, 1e12, 0.0)
    with pytest.raises(ValueError, match="prompt_tokens"):
        bt.slot_tradeoff(EX3, [8], 1.0, 0.0, 1e12, 1.0, prompt_tokens=-5)
    with pytest.raises(ValueError, match="lengths"):
        bt.slot_tradeoff([3, 0], [8], 1.0, 0.0, 1e12, 1.0)
    t = nightly()
    with pytest.raises(ValueError, match="p90_slo_s"):
        bt.best_slot_count(t, 0.0)
    with pytest.raises(TypeError, match="tradeoff"):
        bt.best_slot_count({"candidates": [8]}, 1.0)


def test_tradeoff_is_frozen():
    t = nightly()
    with pytest.raises(Exception):
        t.max_slots_kv = 1
    with pytest.raises(ValueError):
        t.p90_latency_s[0] = 0.0


# ----------------------------------------------------------------------------------
# the plot
# ----------------------------------------------------------------------------------
def test_plot_slot_tradeoff_headless():
    import matplotlib.pyplot as plt

    from coursekit.viz import batching as viz

    t = nightly(prompt=2500)
    ax_thr, ax_lat = viz.plot_slot_tradeoff(t, 2.5, 40)
    assert "tokens/s" in ax_thr.get_ylabel()
    assert "(s)" in ax_lat.get_ylabel()
    assert "slots" in ax_lat.get_xlabel()
    labels = ax_thr.get_legend_handles_labels()[1]
    assert "feasible" in labels and "KV cache full" in labels
    assert any("chosen: 40" in lab for lab in labels)
    plt.close("all")
    viz.plot_slot_tradeoff(nightly(), None, None)  # no SLO, nothing chosen: still draws
    plt.close("all")
    assert math.isfinite(float(t.throughput_tokens.max()))
