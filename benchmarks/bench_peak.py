"""This machine's float32 multiply-add peak, and what it makes of the goals of tiny and medium:
the floor of a workload is its multiply-adds at that peak (docs/performance.md).

    python benchmarks/bench_peak.py

The measurement is the package's (tracegrad/compiler/profile/peak.py, which per-kernel profiles
compare against): 12 independent chains of vector fused multiply-adds and STREAM's triad,
built with the system compiler, on one core and then as one process per core at once. Run here
it is measured afresh (``machine_peak`` keeps it in the compile cache for profiles).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracegrad.compiler.profile.peak import measure

# multiply-adds of one training step (forward, input and weight gradients; no gradient for x)
WORKLOADS = {"tiny": (32, [64, 128, 128, 10]), "medium": (256, [784, 1024, 1024, 10])}


def step_macs(batch, sizes):
    layers = list(zip(sizes[:-1], sizes[1:]))
    forward = sum(batch * a * b for a, b in layers)
    return 2 * forward + forward - batch * sizes[0] * sizes[1]


def main():
    peak = measure()
    one, two = peak.fma_gflops_one_core, peak.fma_gflops
    print(f"float32 FMA peak: one core {one:.1f} GFLOP/s, {peak.cores} cores {two:.1f} GFLOP/s")
    print(f"memory bandwidth (triad): one core {peak.bandwidth_gbs_one_core:.1f} GB/s, "
          f"{peak.cores} cores {peak.bandwidth_gbs:.1f} GB/s")
    for name, (batch, sizes) in WORKLOADS.items():
        flop = 2 * step_macs(batch, sizes)
        print(f"{name}: {flop / 1e6:.1f} MFLOP of products a step: at least "
              f"{_time(flop / one)} on one core, {_time(flop / two)} on {peak.cores}")


def _time(ns):
    return f"{ns / 1e3:.1f} us" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
