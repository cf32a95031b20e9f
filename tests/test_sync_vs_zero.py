"""Tests for the lab plan's stakeholder challenge in coursekit.parallel.scaling: "wait-for-all
synchronization wastes $1M per month; does ZeRO save more than async updates?"."""

import pytest

from coursekit.parallel import scaling as S

# The notebook's story fleet (04 Part 9): 2,048 GPUs at $2.00/GPU-hour, 5 % stragglers at
# 1.5x, a 5B model (12 bytes/param) with 30 GB of activations on an 80 GB GPU.
FLEET = dict(n_gpus=2048, dollars_per_gpu_hour=2.0, straggler_prob=0.05, slowdown=1.5)


def test_todays_bill_and_the_million_dollars_of_waiting():
    c = S.straggler_fix_costs(**FLEET, async_penalty=0.0, zero_frees_recompute=True)
    # 2,048 GPUs x 730 h x $2 = $2,990,080 per month
    assert c.sync == pytest.approx(2_990_080.0)
    # 0.95^2048 ~ 1e-46: every step waits, E = 1.5; waiting = 1 - 1/1.5 = 1/3 of the bill
    e = S.expected_sync_step_time(2048, 1.0, 0.05, 1.5)
    assert c.sync * (1 - 1 / e) == pytest.approx(996_693.33, rel=1e-6)  # "$1M per month"


def test_zero_beats_async_at_a_25_percent_penalty():
    c = S.straggler_fix_costs(**FLEET, async_penalty=0.25, zero_frees_recompute=True)
    # ZeRO: no recomputation, 3/4 of the bill = $2,242,560 (saves $747,520)
    assert c.zero == pytest.approx(2_242_560.0)
    # async: 2,990,080 x 1.25 x 1.025 / 1.5 = $2,554,026.67
    assert c.async_ == pytest.approx(2_554_026.6667, rel=1e-9)
    assert c.choice == "zero" and c.savings == pytest.approx(747_520.0)


def test_async_wins_without_a_staleness_penalty():
    # p = 0: 2,990,080 x 1.025 / 1.5 = $2,043,221.33, below ZeRO's $2,242,560
    c = S.straggler_fix_costs(**FLEET, async_penalty=0.0, zero_frees_recompute=True)
    assert c.async_ == pytest.approx(2_043_221.3333, rel=1e-9)
    assert c.choice == "async" and c.savings == pytest.approx(946_858.6667, rel=1e-9)
    # breakeven: (1 + p) x 1.025 / 1.5 = 3/4 -> p = 0.0976
    lo = S.straggler_fix_costs(**FLEET, async_penalty=0.097, zero_frees_recompute=True)
    hi = S.straggler_fix_costs(**FLEET, async_penalty=0.098, zero_frees_recompute=True)
    assert (lo.choice, hi.choice) == ("async", "zero")


def test_zero_saves_nothing_when_the_activations_do_not_fit():
    c = S.straggler_fix_costs(**FLEET, async_penalty=1.0, zero_frees_recompute=False)
    assert c.zero == c.sync
    # async at p = 1 costs 2 x 1.025 / 1.5 = 1.3667 x today: both fixes lose; zero = no change
    assert c.choice == "zero" and c.savings == 0.0


def test_zero1_memory_check():
    # 5B x (2 + 2 + 8/2048) = 20.0195 GB + 30 GB = 50.02 GB <= 80 GB
    assert S.zero1_frees_recompute(5e9, 2048, 80e9, 30e9)
    # plain data parallelism (one GPU's worth of Adam): 60 GB + 30 GB = 90 GB > 80 GB
    assert not S.zero1_frees_recompute(5e9, 1, 80e9, 30e9)
    # 20.0195 GB + 60 GB = 80.02 GB > 80 GB
    assert not S.zero1_frees_recompute(5e9, 2048, 80e9, 60e9)
    # exactly full fits: 1e9 x (4 + 8/8) = 5 GB + 3 GB = 8 GB
    assert S.zero1_frees_recompute(1e9, 8, 8e9, 3e9)


def test_small_fleet_rarely_waits():
    # 16 GPUs, 1 % stragglers at 3x: E = 1 + 2(1 - 0.99^16) = 1.29701; async (p = 0.2)
    # = 1.2 x 1.02 / 1.29701 = 0.94371 of the bill; ZeRO 0.75 -> zero
    c = S.straggler_fix_costs(16, 3.0, 0.01, 3.0, 0.2, True)
    assert c.async_ / c.sync == pytest.approx(1.2 * 1.02 / (1 + 2 * (1 - 0.99 ** 16)))
    assert c.choice == "zero"


@pytest.mark.parametrize("kwargs", [
    dict(async_penalty=-0.1), dict(straggler_prob=1.5), dict(slowdown=0.5),
    dict(n_gpus=0), dict(dollars_per_gpu_hour=-1.0)])
def test_bad_input_raises(kwargs):
    args = dict(FLEET, async_penalty=0.2, zero_frees_recompute=True)
    args.update(kwargs)
    with pytest.raises(ValueError):
        S.straggler_fix_costs(**args)


def test_fix_cost_plot_draws_headless():
    import matplotlib
    matplotlib.use("Agg")
    from coursekit.viz import parallel as vizp
    pens = [0.0, 0.25, 0.5]
    costs = [S.straggler_fix_costs(**FLEET, async_penalty=p, zero_frees_recompute=True)
             for p in pens]
    fig = vizp.plot_fix_costs(pens, [c.async_ for c in costs], costs[0].zero, costs[0].sync)
    ax = fig.axes[0]
    assert "million $" in ax.get_ylabel() and "%" in ax.get_xlabel()
    assert len(ax.lines) == 3
