"""Accelerator and interconnect specifications, each with its source.

Conventions (stated to students):

* ``memory_bytes`` is the datasheet capacity in decimal units (an "80 GB" A100 is
  80e9 bytes here). The physical HBM is 80 GiB (85.9e9 bytes), and the CUDA context
  and allocator take a few GB of it, so the nominal decimal figure is the honest
  planning budget and is what the chapter and lesson compare against.
* Peak FLOP/s are dense Tensor-Core/vector peaks from the datasheet, without 2:4
  structured sparsity.
* Link bandwidth is per direction. NVLink 4 on H100 is 450 GB/s per direction; the
  900 GB/s headline adds both directions. Network links are line rate / 8.
* ``Link.efficiency`` is the share of that line rate NCCL collectives actually reach
  (protocol overhead), from published measurements where there are any
  (``efficiency_source`` says which); 1.0 (ideal) where none is recorded.
  ``Link.effective_bandwidth`` = bandwidth x efficiency.
"""

from __future__ import annotations

from dataclasses import dataclass

from .units import DTYPE_BYTES, GB, GBIT, TFLOP, US, check_choice, check_number


@dataclass(frozen=True)
class Accelerator:
    """One accelerator: capacity (bytes), dense peaks (FLOP/s per dtype), HBM bytes/s, TDP (W)."""

    name: str
    memory_bytes: float
    peak_flops: tuple  # ((dtype, FLOP/s), ...), dense
    hbm_bandwidth: float
    tdp_watts: float
    source: str

    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s for ``dtype``; ValueError if the chip has no such path."""
        table = dict(self.peak_flops)
        if dtype not in table:
            raise ValueError(
                f"dtype={dtype!r} has no peak on {self.name}; allowed: {', '.join(table)}"
            )
        return table[dtype]

    @property
    def dtypes(self) -> tuple:
        """Dtypes with a listed peak."""
        return tuple(d for d, _ in self.peak_flops)

    def ridge_point(self, dtype: str = "bf16") -> float:
        """Arithmetic intensity (FLOP/byte) where the roofline turns: peak / HBM bandwidth."""
        return self.peak(dtype) / self.hbm_bandwidth


@dataclass(frozen=True)
class Link:
    """An interconnect: per-direction bandwidth (bytes/s), one-hop latency (s), and the
    share of the bandwidth NCCL collectives reach (``efficiency``, with its source)."""

    name: str
    bandwidth: float
    latency: float
    source: str
    efficiency: float = 1.0
    efficiency_source: str = "none recorded: ideal link assumed"

    def __post_init__(self):
        check_number("efficiency", self.efficiency, minimum=0, strict=True, maximum=1)

    @property
    def effective_bandwidth(self) -> float:
        """Bandwidth collectives reach: ``bandwidth * efficiency``. Bytes/s per direction."""
        return self.bandwidth * self.efficiency


_NV_V100 = "NVIDIA Tesla V100 datasheet (SXM2 32 GB), 2020"
_NV_A100 = "NVIDIA A100 Tensor Core GPU datasheet, 2021 (SXM)"
_NV_H100 = "NVIDIA H100 Tensor Core GPU datasheet, 2023 (SXM5)"
_NV_H200 = "NVIDIA H200 Tensor Core GPU datasheet, 2024 (SXM)"

ACCELERATORS = {
    a.name: a
    for a in (
        Accelerator(
            "V100-32GB", 32 * GB,
            (("fp16", 125 * TFLOP), ("fp32", 15.7 * TFLOP), ("fp64", 7.8 * TFLOP)),
            900 * GB, 300.0, _NV_V100,
        ),
        Accelerator(
            "A100-40GB", 40 * GB,
            (("bf16", 312 * TFLOP), ("fp16", 312 * TFLOP), ("tf32", 156 * TFLOP),
             ("fp32", 19.5 * TFLOP), ("int8", 624 * TFLOP), ("fp64", 19.5 * TFLOP)),
            1555 * GB, 400.0, _NV_A100,
        ),
        Accelerator(
            "A100-80GB", 80 * GB,
            (("bf16", 312 * TFLOP), ("fp16", 312 * TFLOP), ("tf32", 156 * TFLOP),
             ("fp32", 19.5 * TFLOP), ("int8", 624 * TFLOP), ("fp64", 19.5 * TFLOP)),
            2039 * GB, 400.0, _NV_A100,
        ),
        Accelerator(
            "H100-SXM", 80 * GB,
            (("fp8", 1978.9 * TFLOP), ("bf16", 989.4 * TFLOP), ("fp16", 989.4 * TFLOP),
             ("tf32", 494.7 * TFLOP), ("fp32", 66.9 * TFLOP), ("int8", 1978.9 * TFLOP),
             ("fp64", 66.9 * TFLOP)),
            3350 * GB, 700.0, _NV_H100,
        ),
        Accelerator(
            "H200", 141 * GB,
            (("fp8", 1978.9 * TFLOP), ("bf16", 989.4 * TFLOP), ("fp16", 989.4 * TFLOP),
             ("tf32", 494.7 * TFLOP), ("fp32", 66.9 * TFLOP), ("int8", 1978.9 * TFLOP),
             ("fp64", 66.9 * TFLOP)),
            4800 * GB, 700.0, _NV_H200,
        ),
    )
}

# Measured link efficiencies (NCCL bus bandwidth of large messages / line rate). -------
NVLINK_A100_EFFICIENCY = 232.54 / 300
_NVLINK_A100_MEASURED = (
    "nccl-tests all_reduce_perf -b 8 -e 4G -f 2 -g 8 on one 8 x A100-SXM node: busbw "
    "232.54 GB/s of 300 GB/s per direction (NVIDIA/nccl-tests issue #175, 2023); NCCL's "
    "maintainer puts NVLink protocol overhead at about 20% (nccl-tests issue #212)")
NVLINK_H100_EFFICIENCY = 370 / 450
_NVLINK_H100_MEASURED = (
    "NCCL maintainer: '450GB/s is the line rate. With the protocol overhead (~20%) NCCL "
    "can get an effective NVLink bandwidth of 370GB/s' on 8 x H100 (NVIDIA/nccl-tests "
    "issue #212, 2024; ring algorithm, NVLink SHARP off)")
INFINIBAND_HDR_EFFICIENCY = 24 / 25
_IB_HDR_MEASURED = (
    "NCCL maintainer: all_reduce_perf at 8 GB should reach ~24 GB/s inter-node per HDR "
    "200 Gb/s NIC (NVIDIA/nccl issue #412, 2023); a DGX A100 with 8 x HDR measures 192 "
    "GB/s all-reduce bus bandwidth of 200 (NVIDIA/nccl issue #812, quoted in #1576)")

LINKS = {
    link.name: link
    for link in (
        Link("NVLink-V100", 150 * GB, 2 * US,
             "NVLink 2: 300 GB/s total per V100 = 150 GB/s per direction (V100 datasheet)"),
        Link("NVLink-A100", 300 * GB, 2 * US,
             "NVLink 3: 600 GB/s total per A100 = 300 GB/s per direction (A100 datasheet)",
             NVLINK_A100_EFFICIENCY, _NVLINK_A100_MEASURED),
        Link("NVLink-H100", 450 * GB, 2 * US,
             "NVLink 4: 900 GB/s total per H100 = 450 GB/s per direction (H100 datasheet)",
             NVLINK_H100_EFFICIENCY, _NVLINK_H100_MEASURED),
        Link("PCIe4-x16", 32 * GB, 5 * US,
             "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s per direction, rounded"),
        Link("PCIe5-x16", 64 * GB, 5 * US,
             "PCIe 5.0 x16: 32 GT/s x 16 lanes = 63 GB/s per direction, rounded"),
        Link("InfiniBand-HDR", 200 * GBIT, 2 * US,
             "InfiniBand HDR 200 Gb/s per port = 25 GB/s per direction (NVIDIA ConnectX-6)",
             INFINIBAND_HDR_EFFICIENCY, _IB_HDR_MEASURED),
        Link("InfiniBand-NDR", 400 * GBIT, 2 * US,
             "InfiniBand NDR 400 Gb/s per port = 50 GB/s per direction (NVIDIA ConnectX-7)"),
        Link("10GbE", 10 * GBIT, 50 * US,
             "10 Gigabit Ethernet line rate = 1.25 GB/s per direction; TCP latency order 50 us"),
        Link("100GbE", 100 * GBIT, 20 * US,
             "100 Gigabit Ethernet line rate = 12.5 GB/s per direction (the chapter's Napkin 1.10)"),
    )
}

# Keep every dtype used above in the units table (guards typos at import).
assert all(d in DTYPE_BYTES for a in ACCELERATORS.values() for d in a.dtypes)


def get_accelerator(name) -> Accelerator:
    """The registered :class:`Accelerator` called ``name`` (case-insensitive)."""
    if isinstance(name, Accelerator):
        return name
    lookup = {k.lower(): v for k, v in ACCELERATORS.items()}
    if not isinstance(name, str) or name.lower() not in lookup:
        check_choice("accelerator", name, tuple(ACCELERATORS))
    return lookup[name.lower()]


def get_link(name) -> Link:
    """The registered :class:`Link` called ``name`` (case-insensitive)."""
    if isinstance(name, Link):
        return name
    lookup = {k.lower(): v for k, v in LINKS.items()}
    if not isinstance(name, str) or name.lower() not in lookup:
        check_choice("link", name, tuple(LINKS))
    return lookup[name.lower()]


def custom_accelerator(name: str, memory_bytes: float, peak_flops: dict,
                       hbm_bandwidth: float, tdp_watts: float = 0.0,
                       source: str = "user-defined") -> Accelerator:
    """Build an :class:`Accelerator` with validated numbers (for what-if questions)."""
    check_number("memory_bytes", memory_bytes, minimum=0, strict=True)
    check_number("hbm_bandwidth", hbm_bandwidth, minimum=0, strict=True)
    check_number("tdp_watts", tdp_watts, minimum=0)
    for dtype, value in peak_flops.items():
        check_choice("dtype", dtype, tuple(DTYPE_BYTES))
        check_number(f"peak_flops[{dtype!r}]", value, minimum=0, strict=True)
    return Accelerator(name, memory_bytes, tuple(peak_flops.items()), hbm_bandwidth,
                       tdp_watts, source)
