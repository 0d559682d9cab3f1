"""The error function's relatives (no C library function for any): ``erfinv``, ``ndtri`` (the
inverse of the standard normal distribution function) and ``erfcx`` (``exp(x^2) erfc(x)``).
Both backends run the same algorithms in double (``tg_erfinv``, ``tg_ndtri``, ``tg_erfcx`` in
compiler/backends/c/templates/special_functions.h.j2 mirror the NumPy code here, step for step).

Inverses: one core solves ``erfc(x) = tail`` for x >= 0 given both ``a = 1 - tail`` and
``tail``, each to full precision (``erfinv(y)``: ``a = |y|``; ``ndtri(p)``: ``tail = 2 min(p,
1 - p)``, exact, so p = 1e-300 keeps its digits where ``erfinv(2p - 1)`` would give -inf). A
first guess (Giles' single-precision approximation; beyond its range, tails below 1e-7, the
asymptotic ``x^2 = L - log(pi L) / 2``, ``L = -log(tail)``), then Newton steps: on ``erf(x) = a``
in the middle, from ``a = 0.5`` on on ``log erfc(x) = log(tail)``, nearly linear there.
As PyTorch's: ``erfinv(+-1)``, ``ndtri(0)``, ``ndtri(1)`` are infinite, arguments outside the
domain NaN.

``erfcx``: ``exp(x^2) erfc(x)`` below 25, with ``x^2`` split exactly into two doubles (Dekker)
so that ``exp(x^2)`` keeps its digits; from 25 on (``erfc`` underflows soon after) the
asymptotic series ``(1 - 1/(2x^2) + 3/(2x^2)^2 - ...) / (x sqrt(pi))``; negative x by
``erfcx(x) = 2 exp(x^2) - erfcx(-x)`` (inf below about -26.6, as PyTorch's).

>>> import tracegrad as tg
>>> tg.special.ndtri(tg.tensor([0.025, 0.5, 0.975]))
tensor([-1.9600,  0.0000,  1.9600])
>>> tg.special.erfcx(tg.tensor([0.0, 30.0]))
tensor([1.0000, 0.0188])
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import _special, unary

_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_GILES_RANGE = 16.0  # (w = -log(tail (2 - tail)) up to which Giles' tail fit holds: tail ~ 1e-7)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_NEWTON_STEPS = 4


def _erfc_inverse(a, tail):
    """x >= 0 with erfc(x) = tail (= 1 - a), in float64, for 0 < tail <= 1."""
    w = -np.log(tail * (2 - tail))
    central, fit = np.zeros_like(a), np.zeros_like(a)
    wc, wt = w - 2.5, np.sqrt(w) - 3
    for c in _GILES_CENTRAL:
        central = central * wc + c
    for c in _GILES_TAIL:
        fit = fit * wt + c
    x = np.where(w < 5, central, fit) * a
    big = np.maximum(-np.log(tail), 1.0)
    x = np.where(w > _GILES_RANGE, np.sqrt(np.maximum(big - 0.5 * np.log(math.pi * big), 0.0)), x)
    erf, erfc = _special("erf"), _special("erfc")
    log_tail = np.log(tail)
    for _ in range(_NEWTON_STEPS):
        slope = _TWO_OVER_SQRT_PI * np.exp(-x * x)
        tail_x = erfc(x)
        x = x - np.where(a < 0.5, (erf(x) - a) / slope, -(np.log(tail_x) - log_tail) * tail_x / slope)
    return x


def _erfinv(y):
    y64 = np.asarray(y, dtype=np.float64)
    a = np.abs(y64)
    inside = a < 1
    x = _erfc_inverse(np.where(inside, a, 0.0), np.where(inside, 1 - a, 1.0))
    x = np.where(a == 1, np.inf, np.where(inside, x, np.nan))
    return (np.sign(y64) * x).astype(y.dtype, copy=False)


def _ndtri(p):
    p64 = np.asarray(p, dtype=np.float64)
    inside = (p64 > 0) & (p64 < 1)
    tail = np.where(inside, 2 * np.minimum(p64, 1 - p64), 1.0)  # (1 - p exact from 0.5 on)
    x = math.sqrt(2) * _erfc_inverse(1 - tail, tail)
    x = np.where(p64 < 0.5, -x, x)
    x = np.where(p64 == 0, -np.inf, np.where(p64 == 1, np.inf, np.where(inside, x, np.nan)))
    return x.astype(p.dtype, copy=False)


_DEKKER = 134217729.0  # 2^27 + 1
_ERFCX_ASYMPTOTIC = 25.0
_ERFCX_TERMS = 12


def _exp_square(x):
    """exp(x^2) for x >= 0 with x^2 = hi + lo exactly (x capped at 27: beyond, inf anyway)."""
    x = np.minimum(x, 27.0)
    hi = x * x
    split = _DEKKER * x
    xh = split - (split - x)
    xl = x - xh
    lo = ((xh * xh - hi) + 2 * xh * xl) + xl * xl
    return np.exp(hi) * (1 + lo)


def _erfcx(x):
    x64 = np.asarray(x, dtype=np.float64)
    ax = np.abs(x64)
    square = _exp_square(ax)
    near = square * _special("erfc")(np.minimum(ax, _ERFCX_ASYMPTOTIC))
    far_x = np.maximum(ax, _ERFCX_ASYMPTOTIC)
    inv, term, series = 1 / (2 * far_x * far_x), np.ones_like(ax), np.zeros_like(ax)
    for k in range(_ERFCX_TERMS):
        series = series + term
        term = -term * (2 * k + 1) * inv
    positive = np.where(ax < _ERFCX_ASYMPTOTIC, near, series / (far_x * math.sqrt(math.pi)))
    return np.where(x64 >= 0, positive, 2 * square - positive).astype(x.dtype, copy=False)


_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2
_SQRT_2PI = math.sqrt(2 * math.pi)

ERFINV = unary("erfinv", _erfinv, save=("out",),
               vjp=lambda ctx, g: (g * _SQRT_PI_OVER_2 * (ctx.out * ctx.out).exp(),),
               jvp=lambda ctx, t: t * _SQRT_PI_OVER_2 * (ctx.out * ctx.out).exp(),
               c="tg_erfinv({0})")
# (PyTorch's derivatives: sqrt(2 pi) exp(ndtri(p)^2 / 2) and 2 x erfcx(x) - 2 / sqrt(pi))
NDTRI = unary("ndtri", _ndtri, save=("out",),
              vjp=lambda ctx, g: (g * _SQRT_2PI * (ctx.out * ctx.out * 0.5).exp(),),
              jvp=lambda ctx, t: t * _SQRT_2PI * (ctx.out * ctx.out * 0.5).exp(),
              c="tg_ndtri({0})")
ERFCX = unary("erfcx", _erfcx, save=(0, "out"),
              vjp=lambda ctx, g: (g * (2 * ctx.input(0) * ctx.out - _TWO_OVER_SQRT_PI),),
              jvp=lambda ctx, t: t * (2 * ctx.input(0) * ctx.out - _TWO_OVER_SQRT_PI),
              c="tg_erfcx({0})")
