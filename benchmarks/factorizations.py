"""The C backend's hand-written factorizations against LAPACK's from the OpenBLAS that
tracegrad already loads (scipy-openblas32), per float64 matrix, for a few sizes.

Both sides run in compiled C over the same batch of matrices: tracegrad's side is a compiled
program (one call: its kernel loops over the batch), LAPACK's a small C loop calling
``scipy_dpotrf_`` / ``scipy_dgetrf_`` + ``scipy_dgetrs_`` / ``scipy_dsyevd_`` through the same
library (built here with the toolchain tracegrad uses). Run: ``python benchmarks/factorizations.py``.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
import time

import numpy as np

import tracegrad as tg
from tracegrad.compiler.backends.c import toolchain

HARNESS = r"""
#include <stdint.h>
#include <string.h>
#include <time.h>
typedef void (*potrf_t)(const char *, const int *, double *, const int *, int *);
typedef void (*getrf_t)(const int *, const int *, double *, const int *, int *, int *);
typedef void (*getrs_t)(const char *, const int *, const int *, const double *, const int *, const int *,
                        double *, const int *, int *);
typedef void (*syevd_t)(const char *, const char *, const int *, double *, const int *, double *, double *,
                        const int *, int *, const int *, int *);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
/* seconds per matrix: kind 0 potrf, 1 getrf + getrs (a solve, n right-hand sides), 2 syevd */
double run(int kind, void *f, void *g, int n, int batch, const double *a, double *work, int reps,
           double *scratch, int lwork, int *iwork, int liwork) {
  int info, ipiv[1024];
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (int b = 0; b < batch; b++) {
      memcpy(work, a + (int64_t)b * n * n, sizeof(double) * n * n);
      if (kind == 0) ((potrf_t)f)("U", &n, work, &n, &info);
      else if (kind == 1) {
        ((getrf_t)f)(&n, &n, work, &n, ipiv, &info);
        memcpy(scratch, a + (int64_t)b * n * n, sizeof(double) * n * n);
        ((getrs_t)g)("N", &n, &n, work, &n, ipiv, scratch, &n, &info);
      } else ((syevd_t)f)("V", "U", &n, work, &n, scratch, scratch + n, &lwork, iwork, &liwork, &info);
    }
    double t = (now() - t0) / batch;
    best = t < best ? t : best;
  }
  return best;
}
"""


def _lapack():
    path = next(p for p, prefix, ilp64, own in toolchain._blas_candidates() if own)
    lib = ctypes.CDLL(path)
    d = tempfile.mkdtemp()
    src = os.path.join(d, "h.c")
    with open(src, "w") as f:
        f.write(HARNESS)
    so = os.path.join(d, "h.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", src, "-o", so], check=True)
    h = ctypes.CDLL(so)
    h.run.restype = ctypes.c_double
    # one thread, as the generated kernels run per matrix (a fair comparison)
    ctypes.CDLL(path).scipy_openblas_set_num_threads(1)
    addr = lambda name: ctypes.cast(getattr(lib, name), ctypes.c_void_p)
    return h, addr


def _best(fn, x, reps):
    fn(x)
    best = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(x)
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    h, addr = _lapack()
    rng = np.random.default_rng(0)
    print(f"{'op':10} {'n':>4} {'tracegrad C us':>15} {'LAPACK us':>10}  ratio (C / LAPACK)")
    for n in (8, 64, 256):
        batch = {8: 4096, 64: 64, 256: 4}[n]
        reps = 5
        m = rng.standard_normal((batch, n, n))
        spd = m @ np.swapaxes(m, -1, -2) + n * np.eye(n)
        cases = [("cholesky", 0, "scipy_dpotrf_", None, spd, lambda a: tg.linalg.cholesky(a)),
                 ("solve", 1, "scipy_dgetrf_", "scipy_dgetrs_", m, lambda a: tg.linalg.solve(a, a)),
                 ("eigh", 2, "scipy_dsyevd_", None, spd, lambda a: tg.linalg.eigh(a)[0])]
        for name, kind, f, g, data, fn in cases:
            compiled = tg.compile(fn, backend="c")
            ours = _best(compiled, tg.tensor(data), reps) / batch
            flat = np.ascontiguousarray(data)
            work, scratch = np.empty((n, n)), np.empty(2 * n * n + 1 + 6 * n + 2 * n * n)
            lwork, liwork = 1 + 6 * n + 2 * n * n, 3 + 5 * n
            iwork = np.empty(liwork, np.int32)
            p = lambda a: a.ctypes.data_as(ctypes.c_void_p)
            theirs = h.run(kind, addr(f), addr(g) if g else None, n, batch, p(flat), p(work), reps, p(scratch),
                           lwork, p(iwork), liwork)
            print(f"{name:10} {n:4d} {ours * 1e6:15.2f} {theirs * 1e6:10.2f}  {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
