"""Special-function primitives: ``erfinv``, and the gamma family ``lgamma``, ``digamma`` and
``polygamma`` (attr ``n`` >= 1), each the derivative of the one before (``polygamma(n)``'s is
``polygamma(n + 1)``), so every order of derivative has a rule.

``erfinv`` (no C library function either): Giles' single-precision approximation, then Newton
steps on ``erf`` (on ``log erfc`` from 0.5 on, where ``erf`` has no digits left), in double, in
both backends; +-1 give +-inf, outside [-1, 1] NaN.

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

from .elementwise import _quiet, _special, unary
from .registry import defop

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


# ----------------------------------------------------------------------------- erfinv
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_NEWTON_STEPS = 4


def _erfinv(y):
    y64 = np.asarray(y, dtype=np.float64)
    a = np.abs(y64)
    w = -np.log((1 - a) * (1 + a))
    central, tail = np.zeros_like(a), np.zeros_like(a)
    wc, wt = w - 2.5, np.sqrt(w) - 3
    for c in _GILES_CENTRAL:
        central = central * wc + c
    for c in _GILES_TAIL:
        tail = tail * wt + c
    x = np.where(w < 5, central, tail) * a
    erf, erfc = _special("erf"), _special("erfc")
    log_tail = np.log(np.where(a < 1, 1 - a, 1.0))
    for _ in range(_NEWTON_STEPS):
        # Newton on erf(x) = a in the middle; from a = 0.5 on, on log(erfc(x)) = log(1 - a),
        # nearly quadratic in x, so the tail converges from Giles' guess (fitted for float)
        slope = _TWO_OVER_SQRT_PI * np.exp(-x * x)
        tail_x = erfc(x)
        step = np.where(a < 0.5, (erf(x) - a) / slope,
                        -(np.log(tail_x) - log_tail) * tail_x / slope)
        x = x - step
    x = np.where(a == 1, np.inf, np.where(a > 1, np.nan, x))
    return (np.sign(y64) * x).astype(y.dtype, copy=False)


ERFINV = unary("erfinv", _erfinv, save=("out",),
               vjp=lambda ctx, g: (g * (math.sqrt(math.pi) / 2) * (ctx.out * ctx.out).exp(),),
               jvp=lambda ctx, t: t * (math.sqrt(math.pi) / 2) * (ctx.out * ctx.out).exp(),
               c="tg_erfinv({0})")
