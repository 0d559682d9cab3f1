"""Special-function primitives: the gamma family ``lgamma``, ``digamma`` and ``polygamma``
(attr ``n`` >= 1), each the derivative of the one before (``polygamma(n)``'s is
``polygamma(n + 1)``), so every order of derivative has a rule. (The error function's
relatives: ops/error_functions.py; Bessel functions: ops/bessel.py.)

``lgamma`` is the C library's, eagerly and compiled. ``digamma`` and ``polygamma`` have no C
library function: both backends run the same algorithm (``tg_digamma``/``tg_polygamma`` in
codegen_templates/runtime.h.j2 mirror the NumPy code here), in double: shift the argument up
by the recurrence ``psi(x) = psi(x + 1) - 1/x`` (``psi_n(x) = psi_n(x + 1) - (-1)^n n! /
x^(n+1)``) until it is large, then the asymptotic series with Bernoulli numbers; ``digamma``
reflects negative arguments (``psi(x) = psi(1 - x) - pi / tan(pi x)``). As PyTorch's:
``digamma(0)`` is ``-inf`` (``+inf`` at ``-0``), negative integers give NaN; ``polygamma`` at
its poles (0 and the negative integers) gives its limit from the right, ``+inf`` or ``-inf``.
``polygamma(1, x)`` is accurate to a few ulp where PyTorch's trigamma is to about 1e-10.

>>> import tracegrad as tg
>>> tg.digamma(tg.tensor([1.0, 0.5]))
tensor([-0.5772, -1.9635])
>>> tg.lgamma(tg.tensor([4.0]))
tensor([1.7918])
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import _quiet, binary, unary
from .registry import defop, raise_no_derivative

# B_2k / (2k) for k = 1..7: the series psi(x) ~ ln x - 1/(2x) - sum B_2k / (2k x^2k)
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)  # B_2 .. B_14
_SHIFT = 10.0  # (the series is used from here on: its error is below 1e-16 relative)


def _lgamma1(v):
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):  # (poles 0, -1, ... and huge arguments: C gives +inf)
        return math.inf


def _lgamma(x):
    return np.vectorize(_lgamma1, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype, copy=False)


def _digamma64(x):
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    reflect = x < 0
    if reflect.any():  # psi(x) = psi(1 - x) - pi / tan(pi x)
        out[reflect] = -np.pi / np.tan(np.pi * x[reflect])
        x = np.where(reflect, 1 - x, x)
    for _ in range(int(_SHIFT)):
        small = x < _SHIFT
        out = np.where(small, out - 1 / x, out)
        x = np.where(small, x + 1, x)
    inv2 = 1 / (x * x)
    series = np.zeros_like(x)
    for c in reversed(_DIGAMMA_SERIES):
        series = (series + c) * inv2
    return out + np.log(x) - 0.5 / x - series


def _digamma(x):
    x64 = np.asarray(x, dtype=np.float64)
    out = _digamma64(x64)
    out = np.where(x64 == 0, np.copysign(np.inf, -x64), out)
    out = np.where((x64 < 0) & (x64 == np.floor(x64)), np.nan, out)
    return out.astype(x.dtype, copy=False)


def _polygamma64(n, x):
    x = np.array(x, dtype=np.float64)
    sign = 1.0 if n % 2 else -1.0  # (-1)^(n+1)
    factorial = math.factorial(n)
    out = np.zeros_like(x)
    for _ in range(int(2 * _SHIFT)):
        small = x < 2 * _SHIFT
        out = np.where(small, out + sign * factorial / x ** (n + 1), out)
        x = np.where(small, x + 1, x)
    # (-1)^(n+1) [(n-1)!/x^n + n!/(2 x^(n+1)) + sum B_2k (2k+n-1)! / ((2k)! x^(2k+n))]
    tail = math.factorial(n - 1) / x ** n + factorial / (2 * x ** (n + 1))
    for k, b in enumerate(_BERNOULLI, start=1):
        tail = tail + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / x ** (2 * k + n)
    return out + sign * tail


def _polygamma(x, n):
    x64 = np.asarray(x, dtype=np.float64)
    out = _polygamma64(n, x64)
    pole = (x64 <= 0) & (x64 == np.floor(x64))  # (the limit from the right, PyTorch's at 0)
    out = np.where(pole, np.inf if n % 2 else -np.inf, out)
    return out.astype(x.dtype, copy=False)


LGAMMA = unary("lgamma", _lgamma, vjp=lambda ctx, g: (g * DIGAMMA(ctx.input(0)),),
               jvp=lambda ctx, t: t * DIGAMMA(ctx.input(0)), c="lgamma({0})")
DIGAMMA = unary("digamma", _digamma, vjp=lambda ctx, g: (g * POLYGAMMA(ctx.input(0), n=1),),
                jvp=lambda ctx, t: t * POLYGAMMA(ctx.input(0), n=1), c="tg_digamma({0})")


def _infer_polygamma(x, n):
    if not isinstance(n, int) or n < 1:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n = {n}"
                           if isinstance(n, int) else f"polygamma: n must be an int, got {n!r}")
    return tuple(x.shape), x.dtype if x.dtype.is_floating_point else _float()


def _float():
    from .. import dtypes

    return dtypes.get_default_dtype()


POLYGAMMA = defop(
    "polygamma", infer=_infer_polygamma, impl=_quiet(_polygamma), save=(0,), kind="elementwise",
    vjp=lambda ctx, g: (g * POLYGAMMA(ctx.input(0), n=ctx.n + 1),),
    jvp=lambda ctx, t: t * POLYGAMMA(ctx.input(0), n=ctx.n + 1),
    c="tg_polygamma({n}, {0})",
    sample=lambda: [(("positive",), {"n": 1}), (("positive",), {"n": 2}), (("above_one",), {"n": 3})])


# ----------------------------------------------------------------------------- zeta
# The Hurwitz zeta function sum_k (k + q)^-x by Euler-Maclaurin: the first terms, at least 9 and
# up to q + k >= 10 (as Cephes, PyTorch's: its corrections then fall fast enough for large x
# too), then the integral of the rest and its Bernoulli corrections (B_2..B_24). As PyTorch's: x = 1 gives inf,
# x < 1 NaN; q a pole (0, -1, ...) inf; q < 0 with x not an integer NaN; q = +-inf NaN.
# Derivative in q only (PyTorch defines none in x: its rules raise there).
_ZETA_SHIFT, _ZETA_TERMS = 10.0, 9
_BERNOULLI_2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
                 -174611 / 330, 854513 / 138, -236364091 / 2730)
_ZETA_TAIL = tuple(b / math.factorial(2 * (k + 1)) for k, b in enumerate(_BERNOULLI_2K))


def _zeta64(x, q):
    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    out, w = np.zeros(x.shape), q.copy()
    shifts = np.where(np.isfinite(q), np.maximum(np.ceil(_ZETA_SHIFT - q), _ZETA_TERMS), 0)
    for k in range(int(shifts.max()) if shifts.size else 0):
        more = (k < _ZETA_TERMS) | (w < _ZETA_SHIFT)
        out = np.where(more, out + w ** -x, out)
        w = np.where(more, w + 1, w)
    tail = w ** (1 - x) / (x - 1) + 0.5 * w ** -x
    factor = x * w ** (-x - 1)  # x (x+1) ... (x+2j-2) w^(-x-2j+1)
    for j, c in enumerate(_ZETA_TAIL):
        tail = tail + c * factor
        factor = factor * (x + 2 * j + 1) * (x + 2 * j + 2) / (w * w)
    out = out + tail
    pole = (q <= 0) & (q == np.floor(q))
    out = np.where(x == 1, np.inf, np.where(pole, np.inf, out))
    undefined = (x < 1) | np.isinf(q) | ((q < 0) & (x != np.floor(x)) & ~pole)
    return np.where(undefined, np.nan, out)


def _zeta(x, q):
    return _zeta64(x, q).astype(x.dtype, copy=False)


def _zeta_vjp(ctx, g):
    raise_no_derivative("zeta", ctx.input_grad_used(0))
    x, q = ctx.input(0), ctx.input(1)
    return None, g * -x * ZETA(x + 1, q)


def _zeta_jvp(ctx, tx, tq):
    raise_no_derivative("zeta", tx is not None)
    x, q = ctx.input(0), ctx.input(1)
    return tq * -x * ZETA(x + 1, q)


ZETA = binary("zeta", _zeta, vjp=_zeta_vjp, jvp=_zeta_jvp, c="tg_zeta({0}, {1})", no_derivative=(0,),
              sample=lambda: [(("above_one", "positive"), {}), ((("above_one", (3, 1)), ("positive", (4,))), {})])
