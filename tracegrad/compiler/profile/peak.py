"""This machine's measured peak: float32 fused multiply-adds and memory bandwidth, the two
ceilings a kernel's time is judged against (a product against the first, elementwise work
against the second).

Both come from one small C program built with the system compiler (``-O3 -march=native``):

- ``fma``: 12 independent chains of vector fused multiply-adds (AVX-512 where the compiler
  targets it, else AVX2/FMA, else scalar): enough chains to hide the FMA latency, so the loop
  runs at the issue rate;
- ``triad``: STREAM's triad ``a[i] = b[i] + s * c[i]`` over three 32 MiB float arrays (larger
  than the caches of the machines this project runs on), the best of 10 passes, counting the
  12 bytes an element reads and writes (as STREAM does: no write-allocate traffic).

Each runs once on one core, then as one process per core tracegrad uses
(``tg.get_num_threads()``) at the same time; the sum is the machine's figure (at least the one
core's: on a busy shared machine the sum can come out lower). The measurement
takes about two seconds and is kept in the compile cache directory (``peak-<hash>.json``),
keyed by the CPU model and features, the compiler and the core count, so that it runs once.

>>> p = MachinePeak(fma_gflops=234.0, bandwidth_gbs=40.0, fma_gflops_one_core=117.0,
...                 bandwidth_gbs_one_core=25.0, cores=2, cpu="test")
>>> p.fma_gflops, p.bandwidth_gbs
(234.0, 40.0)
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
from dataclasses import dataclass

from .. import cache
from ..backends.c.threads import get_num_threads
from ..backends.c.toolchain import NoCompiler, compiler, compiler_version, cpu_features

PEAK_VERSION = 1  # bumped when the measurement changes (the cached figures are then remeasured)

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
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

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* GFLOP/s of 12 independent FMA chains (2 flops per lane per FMA): the best of 8 passes */
static double fma_peak(void) {
  vec acc[12], m = SET(0.999f), c = SET(0.001f);
  for (int i = 0; i < 12; i++) acc[i] = SET((float)i);
  long n = 10000000;
  double s = 1e30;
  for (int r = 0; r < 8; r++) {
    double t0 = now();
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
      for (int i = 0; i < 12; i++) acc[i] = FMA(acc[i], m, c);
    }
    double t = now() - t0;
    if (t < s) s = t;
  }
  float keep = 0;
  for (int i = 0; i < 12; i++) {  /* (a copy's address, so that acc stays in registers) */
    vec v = acc[i];
    float lanes[LANES];
    memcpy(lanes, &v, sizeof v);
    keep += lanes[0];
  }
  if (keep == 12345.0f) puts("");  /* (uses the result) */
  return n * 12.0 * LANES * 2 / s / 1e9;
}

/* GB/s of STREAM's triad over arrays larger than the caches: the best of 10 passes */
enum { N = 1 << 23 };
static float a[N], b[N], c[N];
static double triad(void) {
  for (long i = 0; i < N; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
  double best = 1e30;
  for (int r = 0; r < 10; r++) {
    double t0 = now();
    for (long i = 0; i < N; i++) a[i] = b[i] + 0.5f * c[i];
    double s = now() - t0;
    __asm__ volatile("" ::: "memory");  /* (each pass is a pass) */
    if (s < best) best = s;
  }
  if (a[N / 2] == 12345.0f) puts("");
  return 3.0 * sizeof(float) * N / best / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  printf("%.3f\n", strcmp(argv[1], "fma") == 0 ? fma_peak() : triad());
  return 0;
}
"""


@dataclass(frozen=True)
class MachinePeak:
    """The measured ceilings: float32 FMA throughput (GFLOP/s, a multiply-add counted as 2)
    and memory bandwidth (GB/s), of all ``cores`` at once and of one core."""

    fma_gflops: float
    bandwidth_gbs: float
    fma_gflops_one_core: float
    bandwidth_gbs_one_core: float
    cores: int
    cpu: str = ""

    def describe(self) -> str:
        """One line: the figures and where they come from."""
        return (f"machine peak ({self.cores} core{'s' if self.cores != 1 else ''}"
                f"{', ' + self.cpu if self.cpu else ''}): FMA {self.fma_gflops:.1f} GFLOP/s "
                f"({self.fma_gflops_one_core:.1f} one core), bandwidth {self.bandwidth_gbs:.1f} GB/s "
                f"({self.bandwidth_gbs_one_core:.1f} one core)")


def _compile(directory: str) -> str:
    """The measuring program, built in ``directory``; its path."""
    cc = compiler()
    src, exe = os.path.join(directory, "peak.c"), os.path.join(directory, "peak")
    with open(src, "w") as f:
        f.write(SOURCE)
    for flags in (["-O3", "-march=native"], ["-O3"]):
        try:
            r = subprocess.run([cc, "-std=gnu11", *flags, src, "-o", exe], capture_output=True,
                               text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            raise NoCompiler(f"C compiler {cc!r} cannot run: {e}") from None
        if r.returncode == 0 and os.path.isfile(exe):
            return exe
    raise NoCompiler(f"C compiler {cc!r} cannot build the peak measurement: {r.stderr.strip()[:300]}")


def _run(exe: str, mode: str, copies: int) -> tuple[float, ...]:
    """The figure of ``copies`` processes of ``exe mode`` run at the same time, each."""
    procs = [subprocess.Popen([exe, mode], stdout=subprocess.PIPE, text=True) for _ in range(copies)]
    out = []
    for p in procs:
        text, _ = p.communicate(timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"peak measurement {mode!r} failed (exit status {p.returncode})")
        out.append(float(text.split()[0]))
    return tuple(out)


def measure(cores: int | None = None) -> MachinePeak:
    """Measure the peak now (about two seconds), on one core and on ``cores`` at once (default:
    the threads tracegrad uses, ``tg.get_num_threads()``). Not cached: see ``machine_peak``."""
    cores = max(1, int(cores or get_num_threads()))
    with tempfile.TemporaryDirectory(prefix="tracegrad-peak-") as d:
        exe = _compile(d)
        fma_one = _run(exe, "fma", 1)[0]
        fma_all = sum(_run(exe, "fma", cores)) if cores > 1 else fma_one
        bw_one = _run(exe, "triad", 1)[0]
        bw_all = sum(_run(exe, "triad", cores)) if cores > 1 else bw_one
    model = cpu_features().split("|")[1] if cpu_features().count("|") >= 2 else ""
    # (all cores measuring less than one, as a busy shared machine can: the machine does at
    # least what one core did)
    return MachinePeak(max(fma_all, fma_one), max(bw_all, bw_one), fma_one, bw_one, cores, model)


def cache_name(cores: int) -> str:
    """The file name of the figures for ``cores`` cores in the compile cache directory: one per
    CPU model and features, compiler and core count."""
    ident = {"cpu": cpu_features(), "cc": compiler_version(compiler()), "cores": cores,
             "version": PEAK_VERSION}
    return f"peak-{cache.make_key(ident)[:16]}.json"


def machine_peak(refresh: bool = False) -> MachinePeak:
    """This machine's peak for the threads tracegrad uses: read from the compile cache
    directory, else measured (``measure``) and written there; ``refresh=True`` measures again.

    >>> machine_peak().fma_gflops > 0  # doctest: +SKIP
    True
    """
    cores = max(1, get_num_threads())
    if not refresh:
        try:
            got = cache.read_json(cache.cache_dir() / cache_name(cores))
            return MachinePeak(**{f.name: got[f.name] for f in dataclasses.fields(MachinePeak)})
        except (OSError, ValueError, KeyError, TypeError):
            pass  # not measured yet (or a damaged file): measure
    peak = measure(cores)
    try:
        remember_peak(peak)
    except OSError:
        pass  # an unwritable directory: measured again next time
    return peak


def remember_peak(peak: MachinePeak) -> None:
    """Store ``peak`` as this machine's for the present thread count (what ``machine_peak``
    then returns, until refreshed): figures measured elsewhere, or fixed ones for tests."""
    cache.write_json(cache.cache_dir(), cache_name(max(1, get_num_threads())), dataclasses.asdict(peak))
