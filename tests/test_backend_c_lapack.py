"""The C backend's factorizations through LAPACK (runtime themes lapack, lapack_decompositions):
the loader hands the OpenBLAS's LAPACK functions to a program at load; the hand-written kernels
run below the measured crossovers, without a LAPACK pointer (blas=False) and in exported
libraries, which must build without OpenBLAS."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.compiler.backends.c import toolchain

CC = os.environ.get("CC", "cc")
needs_lapack = pytest.mark.skipif(not (toolchain.blas() and all(toolchain.blas().lapack)),
                                  reason="no LP64 LAPACK in the BLAS found")


def _spd(n, batch=2, seed=0):
    m = np.random.default_rng(seed).standard_normal((batch, n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _compiled(fn, *arrays, **options):
    f = tg.compile(fn, backend="c", fullgraph=True, options=options)
    out = f(*[tg.tensor(a) for a in arrays])
    assert type(f.programs[0].executable).__name__ == "CExecutable"
    return out, f.programs[0].executable.source


@needs_lapack
@pytest.mark.parametrize("n", [4, 32])  # (below and above the crossovers: both paths)
@pytest.mark.parametrize("blas", [True, False])
def test_cholesky_and_eigh_call_lapack_and_equal_eager(n, blas):
    a = _spd(n)
    fn = lambda x: (tg.linalg.cholesky(x), *tg.linalg.eigh(x))
    got, source = _compiled(fn, a, blas=blas)
    want = fn(tg.tensor(a))
    # the program names the pointers it is handed, never a LAPACK symbol of its own
    for name in ("tg_set_lapack", "tg_la_cholesky_double(", "tg_la_eigh_double(", "TG_LAPACK_DPOTRF",
                 "TG_LAPACK_DSYEVD"):
        assert name in source
    assert "dpotrf_" not in source and "lapack.h" not in source.lower().replace("runtime/lapack", "")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-10)


@needs_lapack
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_inv_det_svd_equal_eager(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 40, 40)).astype(dtype)
    b = rng.standard_normal((2, 40, 3)).astype(dtype)
    r = rng.standard_normal((2, 40, 17)).astype(dtype)
    fn = lambda a, b, r: (tg.linalg.solve(a, b), tg.linalg.inv(a), tg.linalg.det(a),
                          *tg.linalg.svd(r, full_matrices=False), *tg.linalg.svd(r.mT, full_matrices=False))
    got, source = _compiled(fn, a, b, r)
    want = fn(*[tg.tensor(x) for x in (a, b, r)])
    assert "tg_la_solve_" in source and "tg_la_svd_" in source
    tol = 2e-4 if dtype == np.float32 else 1e-9
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)


@needs_lapack
def test_not_positive_definite_raises_and_cholesky_ex_is_nan_from_the_pivot_on():
    a = _spd(32)
    a[1, 20, 20] = -1e3  # (batch item 1 fails at pivot 21)
    with pytest.raises(Exception, match="positive-definite"):
        _compiled(lambda x: tg.linalg.cholesky(x), a)
    got, _ = _compiled(lambda x: tg.linalg.cholesky_ex(x)[0], a)
    want = tg.linalg.cholesky_ex(tg.tensor(a))[0]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)
    assert np.isnan(got.numpy()[1, 20:, 20]).all() and not np.isnan(got.numpy()[0]).any()


@pytest.mark.skipif(shutil.which(CC) is None or shutil.which("make") is None, reason="no cc or make")
def test_exported_factorizations_build_without_openblas(tmp_path):
    ep = tg.export(lambda x: (tg.linalg.cholesky(x), tg.linalg.eigh(x)[0], tg.linalg.inv(x)),
                   tg.tensor(_spd(32, batch=1)[0]), name="factors")
    ep.save(str(tmp_path))
    subprocess.run(["make", "-s", "-C", str(tmp_path), "libfactors.a"], check=True, capture_output=True, text=True)
    undefined = subprocess.run(["nm", "-u", str(tmp_path / "libfactors.a")], capture_output=True,
                               text=True).stdout
    for name in ("potrf", "syevd", "getrf", "gesdd", "openblas", "tg_set_lapack"):
        assert name not in undefined
