"""Sample inputs for the registry-driven tests: the one place where an OpDef's ``sample``
specs are parsed and turned into arrays.

``OpDef.sample()`` returns a list of cases ``(specs, attrs)``; ``specs`` holds one spec per
input of the primitive. A spec is a domain name, or a tuple ``(domain, shape, *params)``
(shape defaults to ``DEFAULT_SHAPE``):

==================  ===========================================================  ===========
domain              values                                                       dtype
==================  ===========================================================  ===========
``"any"``           uniform in [-2, 2]                                           float
``"positive"``      uniform in [0.5, 2]                                          float
``"nonzero"``       +-uniform in [0.5, 2] (away from kinks at 0)                  float
``"small"``         uniform in [-0.5, 0.5] (e.g. tan, far from its poles)         float
``"probability"``   uniform in [0.05, 0.95] (ndtri's domain, away from its ends)   float
``"with_zeros"``    uniform in [-2, 2] with about a third exactly 0 (products      float
                    through zeros)
``"above_one"``     uniform in [1.25, 3] (acosh's domain)                         float
``"degree"``        whole numbers in [-1, 12] (the orthogonal polynomials'         float
                    degrees: negative, 0, 1, recurrences and closed forms)
``"well_conditioned"`` square matrices: 2 I + uniform in [-0.5, 0.5] (inverses,    float
                    determinants and solves far from singular)
``"separated"``     matrices with singular values at least 0.6 apart and 0.7 or   float
                    more; square ones symmetric, their eigenvalues (of both signs)
                    as far apart (eigh, svd and qr: their gradients divide by
                    differences of these values)
``"singular"``      square matrices of rank n - 1: ``"separated"``'s with the       float
                    smallest singular value 0 (determinants' derivatives there)
``"bool"``          random True/False                                            bool
``"index"``         ``("index", shape, high)``: integers in [0, high)            int64
``"unique_index"``  ``("unique_index", shape, high)``: distinct integers in       int64
                    [0, high) (scatters whose result must not depend on order)
``"seed"``          a 0-dim random seed                                          int64
``"signed_int"``    integers in [-50, 50] (integer division, its signs and zeros)  int64
``"nonzero_int"``   integers in +-[1, 9]                                         int64
``"pivots"``        ``("pivots", shape, m)``: LAPACK's row pivots of m-row        int32
                    matrices, 1-based (entry i in [i + 1, m] along the last dim)
``"ldl_pivots"``    LAPACK's Bunch-Kaufman pivots along the last dim (n rows):    int32
                    1 x 1 blocks (i + 1..n) and 2 x 2 ones (the same -(i + 2..n)
                    on both rows)
==================  ===========================================================  ===========

>>> from tracegrad.ops import samples
>>> samples.materialize(("index", (2,), 3), seed=0).dtype
dtype('int64')
>>> samples.materialize("any", seed=0).shape
(3, 4)
"""
from __future__ import annotations

import zlib

import numpy as np

from ..core.dtypes import from_numpy_dtype

DEFAULT_SHAPE = (3, 4)
FLOAT_DOMAINS = ("any", "positive", "nonzero", "small", "probability", "above_one", "well_conditioned",
                 "with_zeros", "separated", "singular", "degree")
INT_DOMAINS = ("index", "unique_index", "seed", "pivots", "ldl_pivots", "signed_int", "nonzero_int")
DOMAINS = FLOAT_DOMAINS + ("bool",) + INT_DOMAINS


def parse(spec):
    """``spec`` -> ``(domain, shape, params)``; raises ValueError naming a bad spec."""
    if isinstance(spec, str):
        domain, shape, params = spec, DEFAULT_SHAPE, ()
    elif isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        domain = spec[0]
        shape = tuple(spec[1]) if len(spec) > 1 else DEFAULT_SHAPE
        params = tuple(spec[2:])
    else:
        raise ValueError(f"bad sample spec {spec!r}: expected a domain or (domain, shape, ...)")
    if domain not in DOMAINS:
        raise ValueError(f"bad sample spec {spec!r}: unknown domain {domain!r}; known: {DOMAINS}")
    if domain == "seed":
        shape = ()
    if domain in ("index", "unique_index", "pivots") and len(params) != 1:
        raise ValueError(f"bad sample spec {spec!r}: {domain} needs (domain, shape, high)")
    return domain, shape, params


def is_float(spec):
    return parse(spec)[0] in FLOAT_DOMAINS


def materialize(spec, dtype=np.float64, seed=0):
    """An ndarray for ``spec`` (floating domains use ``dtype``)."""
    domain, shape, params = parse(spec)
    rng = np.random.default_rng(seed)
    if domain == "any":
        return rng.uniform(-2, 2, shape).astype(dtype)
    if domain == "positive":
        return rng.uniform(0.5, 2, shape).astype(dtype)
    if domain == "nonzero":
        return (rng.uniform(0.5, 2, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)
    if domain == "with_zeros":
        return np.where(rng.random(shape) < 1 / 3, 0.0, rng.uniform(-2, 2, shape)).astype(dtype)
    if domain == "small":
        return rng.uniform(-0.5, 0.5, shape).astype(dtype)
    if domain == "probability":
        return rng.uniform(0.05, 0.95, shape).astype(dtype)
    if domain == "degree":
        return rng.integers(-1, 13, shape).astype(dtype)
    if domain == "above_one":
        return rng.uniform(1.25, 3, shape).astype(dtype)
    if domain == "well_conditioned":
        return (rng.uniform(-0.5, 0.5, shape) + 2 * np.eye(shape[-1])).astype(dtype)
    if domain in ("separated", "singular"):
        return _separated(rng, shape, rank_deficient=domain == "singular").astype(dtype)
    if domain == "bool":
        return rng.random(shape) > 0.5
    if domain == "pivots":
        low = np.arange(shape[-1]) + 1
        return rng.integers(low, params[0] + 1, shape).astype(np.int32)
    if domain == "signed_int":
        return rng.integers(-50, 51, shape).astype(np.int64)
    if domain == "nonzero_int":
        return (rng.integers(1, 10, shape) * rng.choice([-1, 1], shape)).astype(np.int64)
    if domain == "ldl_pivots":
        return np.array([_ldl_pivots(rng, shape[-1]) for _ in np.ndindex(*shape[:-1])],
                        np.int32).reshape(shape)
    if domain == "index":
        return rng.integers(0, params[0], shape).astype(np.int64)
    if domain == "unique_index":
        n = int(np.prod(shape, dtype=np.int64))
        if n > params[0]:
            raise ValueError(f"bad sample spec {spec!r}: {n} distinct values in [0, {params[0]})")
        return rng.permutation(params[0])[:n].reshape(shape).astype(np.int64)
    return np.array(rng.integers(0, 2**31), dtype=np.int64)  # seed


def _ldl_pivots(rng, n):
    out, k = [], 0
    while k < n:
        if k + 1 < n and rng.random() < 0.4:
            out += [-int(rng.integers(k + 2, n + 1))] * 2
            k += 2
        else:
            out.append(int(rng.integers(k + 1, n + 1)))
            k += 1
    return out


def _separated(rng, shape, rank_deficient=False):
    """``Q_m diag(s) Q_n^T`` per matrix, random orthogonal Q's, ``s`` 0.7 apart from 0.7 on
    (a jitter of up to 0.1 each); square: ``Q diag(+-s) Q^T``, symmetric, signs alternating.
    ``rank_deficient``: square, ``Q_n diag(s) Q_n'^T`` with the first of ``s`` 0 (not symmetric)."""
    *batch, m, n = shape
    k = min(m, n)
    out = np.empty((int(np.prod(batch, dtype=np.int64)), m, n))
    for b in range(out.shape[0]):
        s = 0.7 * (1 + np.arange(k)) + rng.uniform(0, 0.1, k)
        qm = np.linalg.qr(rng.standard_normal((m, m)))[0][:, :k]
        if rank_deficient:
            s[0] = 0.0
            out[b] = (qm * s) @ np.linalg.qr(rng.standard_normal((n, n)))[0][:, :k].T
        elif m == n:
            out[b] = (qm * (s * (-1.0) ** np.arange(k))) @ qm.T
        else:
            out[b] = (qm * s) @ np.linalg.qr(rng.standard_normal((n, n)))[0][:, :k].T
    return out.reshape(shape)


def cases(op, dtype=np.float64):
    """``[(arrays, attrs), ...]`` for every sample case of ``op`` (deterministic per op)."""
    if op.sample is None:
        return []
    out = []
    for k, (specs, attrs) in enumerate(op.sample()):
        base = zlib.crc32(f"{op.name}/{k}".encode())
        arrays = [materialize(s, dtype, seed=base + i) for i, s in enumerate(specs)]
        out.append((arrays, dict(attrs)))
    return out


def differentiable_positions(op, arrays):
    """Input positions a gradient flows to: floating inputs that are neither nondiff inputs nor
    inputs without a derivative."""
    return [i for i, a in enumerate(arrays)
            if from_numpy_dtype(a.dtype).is_floating_point and i not in op.nondiff_inputs
            and i not in op.no_derivative]
