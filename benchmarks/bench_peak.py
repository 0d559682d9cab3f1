"""This machine's float32 multiply-add peak, and what it makes of the goals of tiny and medium:
the floor of a workload is its multiply-adds at that peak (docs/performance.md).

    python benchmarks/bench_peak.py

A C loop of 12 independent chains of vector fused multiply-adds (AVX-512 where the compiler
targets it, else AVX2/FMA, else scalar), built with the system compiler, runs on one core and
then as two processes at once (both cores).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

SOURCE = r"""
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 vec; enum { LANES = 16 };
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SET(x) _mm512_set1_ps(x)
#elif defined(__FMA__)
#include <immintrin.h>
typedef __m256 vec; enum { LANES = 8 };
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define SET(x) _mm256_set1_ps(x)
#else
typedef float vec; enum { LANES = 1 };
#define FMA(a, b, c) ((a) * (b) + (c))
#define SET(x) (x)
#endif
int main(void) {
  vec acc[12], m = SET(0.999f), c = SET(0.001f);
  for (int i = 0; i < 12; i++) acc[i] = SET((float)i);
  long n = 100000000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) acc[i] = FMA(acc[i], m, c);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  float keep = 0;
  for (int i = 0; i < 12; i++) {  /* (a copy's address, so that acc stays in registers) */
    vec v = acc[i];
    float lanes[LANES];
    memcpy(lanes, &v, sizeof v);
    keep += lanes[0];
  }
  double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  printf("%.2f %g\n", n * 12.0 * LANES * 2 / s / 1e9, keep);
  return 0;
}
"""

# multiply-adds of one training step (forward, input and weight gradients; no gradient for x)
WORKLOADS = {"tiny": (32, [64, 128, 128, 10]), "medium": (256, [784, 1024, 1024, 10])}


def step_macs(batch, sizes):
    layers = list(zip(sizes[:-1], sizes[1:]))
    forward = sum(batch * a * b for a, b in layers)
    return 2 * forward + forward - batch * sizes[0] * sizes[1]


def main():
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "peak.c"), os.path.join(d, "peak")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.run([cc, "-O2", "-march=native", src, "-o", exe], check=True)
        one = float(subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split()[0])
        procs = [subprocess.Popen([exe], stdout=subprocess.PIPE, text=True) for _ in range(2)]
        two = sum(float(p.communicate()[0].split()[0]) for p in procs)
    print(f"float32 FMA peak: one core {one:.1f} GFLOP/s, two cores {two:.1f} GFLOP/s")
    for name, (batch, sizes) in WORKLOADS.items():
        flop = 2 * step_macs(batch, sizes)
        print(f"{name}: {flop / 1e6:.1f} MFLOP of products a step: at least "
              f"{_time(flop / one)} on one core, {_time(flop / two)} on two")


def _time(ns):
    return f"{ns / 1e3:.1f} us" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
