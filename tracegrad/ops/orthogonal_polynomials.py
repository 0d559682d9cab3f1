"""PyTorch's orthogonal polynomials of integer degree ``n`` (a tensor of the same dtype, as
PyTorch's kernels take it): Chebyshev T, U, V, W (also shifted to [0, 1]), Hermite H and He,
Laguerre L, Legendre P. PyTorch's algorithms (aten/src/ATen/native/Math.h) in its order of
checks, so that the edges match: ``n`` truncates toward 0 and a NaN, infinite or out-of-int64
``n`` counts as negative (the x86 conversion gives INT64_MIN); a negative degree gives 0; the
special values at x = +-1 (shifted: 0 and 1) and, inside (-1, 1) for larger n, the closed forms
``cos(n acos x)`` and its U/V/W kin; else the three-term recurrence, stopped once it is NaN.
Hermite degrees above 128 (float32) or 512 (float64) give NaN, as PyTorch's. Both backends
compute in the input's dtype, as PyTorch's kernels do (float32: float arithmetic, with the fused
multiply-add of PyTorch's compiled loop, so that the recurrence rounds, and overflows to inf and
then NaN, as PyTorch's; the C twin:
``tg_orthogonal_polynomial_{f,d}`` in compiler/backends/c/templates/special_polynomials.h.j2). At a NaN x,
where PyTorch returns an uninitialised value for some (U, V, W, L, P), these give NaN. No
derivative, as PyTorch's (no gradient flows). As PyTorch's, the recurrence takes n - 1 steps:
huge degrees outside the closed forms (Legendre, Laguerre inside their range; Chebyshev just
outside [-1, 1]) take that long, eagerly here in a NumPy loop over the elements still running.

>>> import tracegrad as tg
>>> tg.special.chebyshev_polynomial_t(tg.tensor([0.5, 2.0]), 3)
tensor([-1., 26.])
"""
from __future__ import annotations

import numpy as np

from .elementwise import _infer_binary, _quiet
from .registry import defop

KINDS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p")
_INT64_LIMIT = 2.0 ** 63
# the degree from which PyTorch uses the closed form inside (-1, 1): T, U, V, W; shifted T, U, V, W
_CLOSED_FORM_ABOVE = (6, 8, 8, 8, 6, 6, 6, 4)
_HERMITE_LIMIT = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}


def _degree(n):
    """PyTorch's ``static_cast<int64_t>(n)``, as float64: truncation; -1 where x86 gives INT64_MIN."""
    n = np.asarray(n, dtype=np.float64)
    return np.where(np.isfinite(n) & (np.abs(n) < _INT64_LIMIT), np.trunc(n), -1.0)


def _signed_by_parity(n, value):
    return np.where(np.fmod(n, 2) == 0, value, -value)


def _chebyshev_ends(letter, x, n):
    """(the value at the upper end, at the lower end) of Chebyshev T, U, V or W (letter 0..3)."""
    high = (np.ones_like(x), n + 1, np.ones_like(x), n + n + 1)[letter]
    low = _signed_by_parity(n, (np.ones_like(x), n + 1, n + n + 1, np.ones_like(x))[letter])
    return high, low


def _edges(kind, x, n):
    """PyTorch's special values: [(where, value)], checked in order (after n < 0)."""
    if kind < 4:  # Chebyshev: at x = 1 and x = -1
        high, low = _chebyshev_ends(kind % 4, x, n)
        return [(np.abs(x) == 1, np.where(x > 0, high, low))]
    if kind < 8:  # shifted: at x = 1 and x = 0
        high, low = _chebyshev_ends(kind % 4, x, n)
        return [(x == 1, high), (x == 0, low)]
    if kind == 10:  # Laguerre: 1 at 0
        return [(x == 0, np.ones_like(x))]
    if kind == 11:  # Legendre: at x = +-1
        return [(np.abs(x) == 1, np.where(x > 0, 1.0, _signed_by_parity(n, np.ones_like(x))))]
    return []


def _rounded(fn):
    """``fn`` in double, rounded to the operand's dtype: float32's acos, cos and sin correctly
    rounded, as C's acosf, cosf, sinf nearly always are (NumPy's own float32 ones are not;
    the C twin does the same)."""
    return lambda v: fn(np.asarray(v, np.float64)).astype(v.dtype)


_ACOS, _COS, _SIN = _rounded(np.arccos), _rounded(np.cos), _rounded(np.sin)


def _closed_form(kind, y, n):
    """Chebyshev inside (-1, 1) (y: x, or 2x - 1 shifted), PyTorch's formulas and fallbacks."""
    a = _ACOS(np.where(np.abs(y) < 1, y, 0))
    letter = kind % 4
    if letter == 0:
        return _COS(n * a)
    if letter == 1:
        s = _SIN(a)
        return np.where(s != 0, _SIN((n + 1) * a) / np.where(s != 0, s, 1.0), (n + 1) * _COS((n + 1) * a) / y)
    if letter == 2:
        return np.where(_SIN(a / 2) != 1, _COS((n + 0.5) * a) / _COS(a / 2), _signed_by_parity(n, n + n + 1))
    fallback = _signed_by_parity(n, np.ones_like(y))  # (cos(a/2) == 1: y ~ 1)
    if kind == 3:
        fallback = np.where(y > 0, n + n + 1, fallback)  # (shifted W keeps the parity's +-1)
    return np.where(_COS(a / 2) != 1, _SIN((n + 0.5) * a) / _SIN(a / 2), fallback)


def _first(kind, x):
    """The degree-1 value, the recurrence's start."""
    y = x + x - 1.0
    return (x, x + x, x + x - 1.0, x + x + 1.0, y, y + y, y + y - 1.0, y + y + 1.0, x + x, x, 1.0 - x, x)[kind]


def _fms(a, b, c):
    """``a * b - c``, in float32 with one rounding as the fused multiply-add PyTorch's compiled
    loop uses (the float product is exact in double): where ``a * b`` alone overflows but the
    difference does not, or ``c`` is already inf, the results (finite, +-inf, NaN) are its."""
    if a.dtype == np.float32 or getattr(b, "dtype", None) == np.float32:
        return (np.asarray(a, np.float64) * np.asarray(b, np.float64) - np.asarray(c, np.float64)).astype(np.float32)
    return a * b - c


def _step(kind, m, x, p, q):
    """The recurrence's step m (1, 2, ...): the degree-(m + 1) value from degrees m - 1 and m."""
    if kind < 4:
        return _fms(x + x, q, p)
    if kind < 8:
        y = x + x - 1.0
        return _fms(y + y, q, p)
    if kind == 8:
        return _fms(x + x, q, (2 * m) * p)
    if kind == 9:
        return _fms(x, q, m * p)
    if kind == 10:
        return _fms((m + m) + (1.0 - x), q, m * p) / (m + 1)
    return _fms((m + m + 1) * x, q, m * p) / (m + 1)


def _recurrence(kind, x, n, run):
    """The degree-n value where ``run``, from the recurrence's n - 1 steps; each element stops
    at its degree or once NaN, as PyTorch's loop (working on the elements still running)."""
    value = np.asarray(_first(kind, x) * np.ones_like(x))  # (x's dtype: the arithmetic's)
    index = np.flatnonzero(run & (n >= 2) & ~np.isnan(value))
    xs, ns = x.ravel()[index], n.ravel()[index]
    p, q = np.ones_like(xs), value.ravel()[index]
    out = value.ravel().copy()
    m = 1
    while index.size:
        p, q = q, _step(kind, m, xs, p, q)
        m += 1
        done = (ns <= m) | np.isnan(q)
        if done.any():
            out[index[done]] = q[done]
            keep = ~done
            index, xs, ns, p, q = index[keep], xs[keep], ns[keep], p[keep], q[keep]
    return out.reshape(x.shape)


def _polynomial(kind):
    def impl(x, n):
        dtype = np.float64 if np.result_type(x) == np.float64 else np.float32  # (PyTorch's T)
        xt, degree = np.broadcast_arrays(np.asarray(x, dtype=dtype), _degree(n))
        xt, degree = np.array(xt), np.array(degree)
        nt = degree.astype(dtype)  # (PyTorch's int64 n where it meets T: converted to T)
        cases = [(degree < 0, np.zeros_like(xt)), *_edges(kind, xt, nt)]
        if kind < 8:
            y = xt if kind < 4 else xt + xt - 1.0
            cases.append(((degree > _CLOSED_FORM_ABOVE[kind]) & (np.abs(y) < 1), _closed_form(kind, y, nt)))
        if kind in (8, 9):
            limit = _HERMITE_LIMIT[np.dtype(dtype)]
            cases += [(degree == 0, np.ones_like(xt)), (degree == 1, _first(kind, xt) * np.ones_like(xt)),
                      (degree > limit, np.full_like(xt, np.nan))]
        else:
            cases.append((degree == 0, np.ones_like(xt)))
        taken = np.zeros(xt.shape, bool)
        for where, _ in cases:
            taken |= where
        value = _recurrence(kind, xt, degree, ~taken)
        for where, result in reversed(cases):
            value = np.where(where, result, value)
        return value.astype(np.result_type(x), copy=False)

    impl.__name__ = KINDS[kind]
    return impl


def _samples():
    # (no derivative: values, broadcasting and C vs the interpreter)
    return [(("any", "degree"), {}), ((("any", (3, 1)), ("degree", (4,))), {})]


def _op(kind):
    # (C: the float or the double function, as the operand's type; both compile, one runs)
    c = (f"(sizeof({{0}}) == sizeof(double) ? tg_orthogonal_polynomial_d({{0}}, {{1}}, {kind}, 512)"
         f" : tg_orthogonal_polynomial_f({{0}}, {{1}}, {kind}, 128))")
    return defop(KINDS[kind], infer=_infer_binary, impl=_quiet(_polynomial(kind)), kind="elementwise",
                 differentiable=False, c=c,
                 sample=_samples)


OPS = {name: _op(kind) for kind, name in enumerate(KINDS)}
