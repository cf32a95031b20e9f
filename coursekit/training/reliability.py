"""Failures and checkpoints on a large fleet: how often to save, and what it costs.

A synchronous training job stops when any one of its devices fails, rolls back to its last
checkpoint and restarts. Model (stated to students in notebook 01, Part 8):

* Failures are independent and exponential (memoryless). A job on N devices, each with mean
  time between failures m, fails at rate N/m: job MTBF M = m / N.
* Every tau seconds of training the job writes a checkpoint; the devices stall for delta
  seconds while it is written. After a failure the job restarts (R seconds: reschedule,
  reload) and redoes the work since the last checkpoint, tau/2 on average.
* First order (delta, tau, R much shorter than M): the share of wall-clock time that does no
  new work is  W(tau) = delta/tau + (tau/2 + R)/M  (Young 1974). Its minimum is Young's
  interval sqrt(2 delta M); Daly (2006) gives a higher-order estimate from the complete
  model, in which failures may also strike during checkpoints and restarts.

References: J. W. Young, "A first order approximation to the optimum checkpoint interval",
Communications of the ACM 17(9):530-531, 1974. J. T. Daly, "A higher order estimate of the
optimum checkpoint interval for restart dumps", Future Generation Computer Systems
22(3):303-312, 2006 (doi:10.1016/j.future.2004.11.016). Fleet scale: Llama 3 (Dubey et al.
2024, "The Llama 3 Herd of Models", section 3.3.4) saw 419 unexpected interruptions in 54
days on 16,384 H100s, one every 3.1 h, i.e. about 50,700 h per GPU.

Base units: seconds. Intervals count training (compute) time between checkpoints.
"""

from __future__ import annotations

import math

from ..units import check_number

__all__ = [
    "job_mtbf_s", "expected_waste_fraction", "young_interval_s", "async_interval_s",
    "daly_interval_s", "daly_wall_time_s",
]


def _pos(name, value):
    return check_number(name, value, minimum=0, strict=True)


def _nonneg(name, value):
    return check_number(name, value, minimum=0)


def job_mtbf_s(per_device_mtbf_s, n_devices) -> float:
    """Mean time between failures of a job that stops at any device's failure: M = m / N.

    Independent exponential failures of rate 1/m per device add up to rate N/m. Llama 3:
    ~50,700 h per GPU on 16,384 GPUs gives 3.09 h (Dubey et al. 2024, section 3.3.4). Seconds.
    """
    return _pos("per_device_mtbf_s", per_device_mtbf_s) / check_number(
        "n_devices", n_devices, minimum=1, integer=True)


def expected_waste_fraction(interval_s, checkpoint_s, mtbf_s, restart_s=0.0,
                            persist_s=0.0) -> float:
    """First-order share of wall-clock time that does no new work:

    W = delta/tau + (tau/2 + p + R)/M, with tau = interval_s, delta = checkpoint_s (the time
    the devices stall per checkpoint), R = restart_s, M = mtbf_s. With asynchronous
    checkpoints the write finishes persist_s = p seconds after the stall, so a failure also
    loses the work of a checkpoint that was not yet durable: tau/2 + p on average; a new
    checkpoint cannot start before the previous one is durable, so tau >= p is required
    (ValueError otherwise). Young (1974) for p = 0. Valid when delta, tau, p, R << M.
    Fraction (0.03 for 3%).
    """
    tau = _pos("interval_s", interval_s)
    p = _nonneg("persist_s", persist_s)
    if tau < p:
        raise ValueError(f"interval_s={interval_s!r} must be >= persist_s={persist_s!r}: a "
                         "checkpoint cannot start before the previous one is durable")
    return (_nonneg("checkpoint_s", checkpoint_s) / tau
            + (tau / 2 + p + _nonneg("restart_s", restart_s)) / _pos("mtbf_s", mtbf_s))


def young_interval_s(checkpoint_s, mtbf_s) -> float:
    """Young's (1974) first-order optimum interval tau = sqrt(2 delta M).

    Minimizes delta/tau + (tau/2 + R)/M; R does not move it. Seconds of training between
    checkpoints.
    """
    return math.sqrt(2.0 * _pos("checkpoint_s", checkpoint_s) * _pos("mtbf_s", mtbf_s))


def async_interval_s(stall_s, persist_s, mtbf_s) -> float:
    """Optimum interval with asynchronous checkpoints: max(sqrt(2 s M), p).

    Minimizes s/tau + (tau/2 + p + R)/M over tau >= p (expected_waste_fraction with
    checkpoint_s = stall s, persist_s = p): only the stall costs compute, and the next
    checkpoint waits until the last one is durable. Seconds.
    """
    s = _pos("stall_s", stall_s)
    m = _pos("mtbf_s", mtbf_s)
    return max((2.0 * s * m) ** 0.5, _nonneg("persist_s", persist_s))


def daly_interval_s(checkpoint_s, mtbf_s) -> float:
    """Daly's (2006) higher-order optimum interval.

    tau = sqrt(2 delta M) * (1 + sqrt(x)/3 + x/9) - delta with x = delta/(2M), for
    delta < 2M; tau = M for delta >= 2M. Daly's Figs. 3-5 (delta = 5 min, R = 10 min):
    M = 24 h -> 117 min, 6 h -> 57 min, 15 min -> 9.1 min. Seconds.
    """
    d = _pos("checkpoint_s", checkpoint_s)
    m = _pos("mtbf_s", mtbf_s)
    if d >= 2.0 * m:
        return m
    x = d / (2.0 * m)
    return (2.0 * d * m) ** 0.5 * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - d


def daly_wall_time_s(work_s, interval_s, checkpoint_s, mtbf_s, restart_s=0.0) -> float:
    """Expected wall-clock time of work_s seconds of training, Daly's (2006) complete model:

    T = M e^(R/M) (e^((tau + delta)/M) - 1) * work / tau, exponential failures that may also
    strike during checkpoints and restarts (work a multiple of tau). Seconds.
    """
    tau = _pos("interval_s", interval_s)
    m = _pos("mtbf_s", mtbf_s)
    return (m * math.exp(_nonneg("restart_s", restart_s) / m)
            * math.expm1((tau + _nonneg("checkpoint_s", checkpoint_s)) / m)
            * _nonneg("work_s", work_s) / tau)
