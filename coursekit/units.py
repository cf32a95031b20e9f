"""Units, dtype sizes and formatting.

Inside ``coursekit`` every quantity is in a base SI unit: bytes, FLOPs, seconds,
FLOP/s, bytes/s, watts, joules. Conversions happen only at the edge, with the
constants and formatters below. GB = 1e9 bytes and GiB = 2**30 bytes are never
mixed silently: every formatter prints its unit.
"""

from __future__ import annotations

import math
from numbers import Real

# Bytes (decimal, SI) ------------------------------------------------------
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15
# Bytes (binary, IEC) --------------------------------------------------------
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40
# FLOPs and FLOP/s -----------------------------------------------------------
GFLOP = 1e9
TFLOP = 1e12
PFLOP = 1e15
EFLOP = 1e18
# Time -----------------------------------------------------------------------
US = 1e-6
MS = 1e-3
MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
# Energy ---------------------------------------------------------------------
KWH = 3.6e6  # joules in one kilowatt-hour
# Network rates --------------------------------------------------------------
GBIT = 1e9 / 8  # bytes per second in one Gbit/s

DTYPE_BYTES = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,  # stored in 32 bits; only the math is reduced precision
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}
"""Storage size of one value, in bytes, by dtype name."""


def dtype_bytes(dtype: str) -> float:
    """Bytes per value of ``dtype`` (``fp32`` 4, ``bf16`` 2, ``int4`` 0.5, ...)."""
    if not isinstance(dtype, str) or dtype.lower() not in DTYPE_BYTES:
        raise ValueError(
            f"dtype={dtype!r} is not known; allowed: {', '.join(DTYPE_BYTES)}"
        )
    return DTYPE_BYTES[dtype.lower()]


def check_number(name: str, value, *, minimum=None, strict=False, integer=False,
                 maximum=None):
    """Validate one numeric argument and return it.

    Raises ``TypeError`` for a non-number (bools included) and ``ValueError``
    naming the parameter, its value and the allowed range otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        kind = "an integer" if integer else "a number"
        raise TypeError(f"{name} must be {kind}, got {value!r} ({type(value).__name__})")
    if integer and int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is not None:
        if strict and not value > minimum:
            raise ValueError(f"{name} must be > {minimum}, got {value!r}")
        if not strict and not value >= minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return int(value) if integer else value


def check_choice(name: str, value, allowed):
    """Return ``value`` if it is one of ``allowed``; else a ValueError listing them."""
    if value not in allowed:
        raise ValueError(
            f"{name}={value!r} is not allowed; choose one of: "
            + ", ".join(repr(a) for a in allowed)
        )
    return value


def _fmt(value: float, scale: float, unit: str, digits: int) -> str:
    return f"{value / scale:,.{digits}f} {unit}"


def fmt_bytes(n_bytes: float, unit: str = "GB", digits: int = 1) -> str:
    """Format a byte count in ``unit`` (``B``, ``KB``..``PB`` decimal or ``KiB``..``TiB``)."""
    scales = {"B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": TB, "PB": PB,
              "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB}
    check_choice("unit", unit, tuple(scales))
    return _fmt(n_bytes, scales[unit], unit, digits)


def fmt_flops(flops: float, unit: str = "TFLOP", digits: int = 1) -> str:
    """Format a FLOP count (``GFLOP``, ``TFLOP``, ``PFLOP``, ``EFLOP`` or ``FLOP``)."""
    scales = {"FLOP": 1, "GFLOP": GFLOP, "TFLOP": TFLOP, "PFLOP": PFLOP, "EFLOP": EFLOP}
    check_choice("unit", unit, tuple(scales))
    return _fmt(flops, scales[unit], unit, digits)


def fmt_rate(flops_per_s: float, unit: str = "TFLOP/s", digits: int = 1) -> str:
    """Format a compute rate (``GFLOP/s``, ``TFLOP/s``, ``PFLOP/s``)."""
    scales = {"FLOP/s": 1, "GFLOP/s": GFLOP, "TFLOP/s": TFLOP, "PFLOP/s": PFLOP}
    check_choice("unit", unit, tuple(scales))
    return _fmt(flops_per_s, scales[unit], unit, digits)


def fmt_bandwidth(bytes_per_s: float, unit: str = "GB/s", digits: int = 1) -> str:
    """Format a bandwidth in bytes/s (``MB/s``, ``GB/s``, ``TB/s``)."""
    scales = {"B/s": 1, "MB/s": MB, "GB/s": GB, "TB/s": TB}
    check_choice("unit", unit, tuple(scales))
    return _fmt(bytes_per_s, scales[unit], unit, digits)


def fmt_time(seconds: float, unit: str | None = None, digits: int = 2) -> str:
    """Format a duration; picks us/ms/s/min/h/days automatically unless ``unit`` is given."""
    scales = {"us": US, "ms": MS, "s": 1.0, "min": MINUTE, "h": HOUR, "days": DAY}
    if unit is None:
        a = abs(seconds)
        unit = ("us" if a < MS else "ms" if a < 1 else "s" if a < MINUTE
                else "min" if a < HOUR else "h" if a < 2 * DAY else "days")
    check_choice("unit", unit, tuple(scales))
    return _fmt(seconds, scales[unit], unit, digits)
