"""Bessel functions: the modified ``i0``, ``i0e``, ``i1``, ``i1e`` (differentiable, with
PyTorch's rules) and ``bessel_j0``, ``bessel_j1``, ``bessel_y0``, ``bessel_y1`` (without a
derivative in PyTorch: no gradient flows, as there). Both backends run the same algorithms in
double (compiler/backends/c/templates/special_functions.h.j2: ``tg_bessel_i``, ``tg_bessel_jy``).

Modified: below 20 the power series (positive terms: no cancellation), from 20 on the
asymptotic series ``e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! (8x)^k)``
(its smallest term there is below 1e-17). ``i0`` and ``i1`` are NaN at +-inf, as PyTorch's.

Ordinary: below 2 the power series (A&S 9.1.10-11); below 25 Miller's backward recurrence
``J_{n-1} = (2n/x) J_n - J_{n+1}``, normalized by ``J_0 + 2 sum J_2k = 1``, with Neumann's
series for Y from the same J's: ``Y0 = (2/pi) ((ln(x/2) + gamma) J0 - 2 sum (-1)^k J_2k / k)``,
and its derivative ``Y1 = (2/pi) ((ln(x/2) + gamma - 1) J1 - J0 / x - sum (-1)^k (2k+1) /
(k(k+1)) J_2k+1)``; from 25 on Hankel's asymptotic expansions. Accurate to about 1e-15 absolute
(SciPy's Cephes agrees); PyTorch's own differ from both by up to ~1e-6 between 5 and 25 and ~1e-11
below. As PyTorch's: NaN at +-inf, Y0 and Y1 NaN below 0 and -inf at 0.

>>> import tracegrad as tg
>>> tg.special.i0(tg.tensor([0.0, 1.0]))
tensor([1.0000, 1.2661])
>>> tg.special.bessel_j0(tg.tensor([0.0, 1.0, 10.0]))
tensor([ 1.0000,  0.7652, -0.2459])
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dtypes import finfo
from . import elementwise as E
from . import helpers as H
from .elementwise import unary

_SERIES_TERMS = 60  # (the power series of I below 20: terms fall below 1e-30 of the sum)
_ASYMPTOTIC_FROM = 20.0
_ASYMPTOTIC_TERMS = 30


def _modified_scaled(ax):
    """(e^-x I0(x), e^-x I1(x)) for x >= 0, float64; and the unscaled series values below 20."""
    small = ax < _ASYMPTOTIC_FROM
    xs = np.where(small, ax, 0.0)
    quarter_square, term = xs * xs / 4, np.ones_like(ax)
    s0, s1 = np.zeros_like(ax), np.zeros_like(ax)
    for k in range(_SERIES_TERMS):
        s0 = s0 + term
        s1 = s1 + term / (k + 1)
        term = term * quarter_square / ((k + 1) * (k + 1))
    i0, i1 = s0, s1 * xs / 2
    xl = np.where(small, _ASYMPTOTIC_FROM, ax)
    a0, a1 = np.ones_like(ax), np.ones_like(ax)
    p0, p1 = np.zeros_like(ax), np.zeros_like(ax)
    for k in range(_ASYMPTOTIC_TERMS):
        p0, p1 = p0 + a0, p1 + a1
        a0 = a0 * (2 * k + 1) ** 2 / ((k + 1) * 8 * xl)
        a1 = -a1 * (4 - (2 * k + 1) ** 2) / ((k + 1) * 8 * xl)
    amplitude = 1 / np.sqrt(2 * math.pi * xl)
    decay = np.exp(-xs)
    return small, (np.where(small, i0 * decay, amplitude * p0), np.where(small, i1 * decay, amplitude * p1)), (i0, i1)


def _modified(order, scaled):
    def impl(x):
        x64 = np.asarray(x, dtype=np.float64)
        ax = np.abs(x64)
        small, (e0, e1), (i0, i1) = _modified_scaled(ax)
        value = e0 if order == 0 else e1
        if not scaled:  # (e^x in two halves: I0 is finite up to ~713, e^x only to ~709)
            half = np.exp(ax / 2)
            value = np.where(small, i0 if order == 0 else i1, value * half * half)
        if order == 1:
            value = np.sign(x64) * value
        return value.astype(x.dtype, copy=False)

    impl.__name__ = f"i{order}{'e' if scaled else ''}"
    return impl


def _near_zero(ctx):
    """(where |x| is below half the dtype's eps, x with 1 there): PyTorch's i1/i1e rules use
    their limit 1/2 there, and the 1 keeps the other branch finite."""
    x = ctx.input(0)
    tiny = E.ABS(x) < float(finfo(ctx.dtypes[0]).eps) * 0.5
    return tiny, H.where(tiny, 1.0, x)


def _i1_derivative(ctx):
    tiny, safe = _near_zero(ctx)
    return H.where(tiny, 0.5, (safe * I0(safe) - ctx.out) / safe)


def _i1e_derivative(ctx):
    tiny, safe = _near_zero(ctx)
    return H.where(tiny, 0.5, I0E(safe) - ctx.out * (E.SIGN(safe) + 1 / safe))


def _i0e_derivative(ctx):
    x = ctx.input(0)
    return I1E(x) - E.SIGN(x) * ctx.out


def _rule(derivative, **kw):
    return dict(vjp=lambda ctx, g: (g * derivative(ctx),), jvp=lambda ctx, t: t * derivative(ctx), **kw)


I0 = unary("i0", _modified(0, False), c="tg_bessel_i({0}, 0, 0)",
           **_rule(lambda ctx: I1(ctx.input(0))))
I0E = unary("i0e", _modified(0, True), c="tg_bessel_i({0}, 0, 1)", save=(0, "out"), **_rule(_i0e_derivative))
I1 = unary("i1", _modified(1, False), c="tg_bessel_i({0}, 1, 0)", save=(0, "out"), **_rule(_i1_derivative))
I1E = unary("i1e", _modified(1, True), c="tg_bessel_i({0}, 1, 1)", save=(0, "out"), **_rule(_i1e_derivative))


# ----------------------------------------------------------------------------- J0, J1, Y0, Y1
_EULER = 0.5772156649015329
_SERIES_BELOW = 2.0
_HANKEL_FROM = 25.0
_HANKEL_TERMS = 20


def _series(x):
    """(J0, J1, Y0, Y1) by their power series (A&S 9.1.10, 9.1.11), for 0 < x <= 2."""
    quarter_square = x * x / 4
    term = np.ones_like(x)  # (-x^2/4)^k / (k!)^2
    j0, j1, h_sum, psi_sum = (np.zeros_like(x) for _ in range(4))
    harmonic, psi = 0.0, -_EULER  # H_k, psi(k + 1)
    for k in range(30):
        j0 = j0 + term
        j1 = j1 + term / (k + 1)
        h_sum = h_sum + harmonic * term
        psi_next = psi + 1 / (k + 1)
        psi_sum = psi_sum + (psi + psi_next) * term / (k + 1)
        harmonic, psi = harmonic + 1 / (k + 1), psi_next
        term = -term * quarter_square / ((k + 1) * (k + 1))
    log_half = np.log(x / 2)
    j1 = j1 * x / 2
    y0 = (2 / math.pi) * ((log_half + _EULER) * j0 - h_sum)
    y1 = -2 / (math.pi * x) + (2 / math.pi) * log_half * j1 - (x / (2 * math.pi)) * psi_sum
    return j0, j1, y0, y1


def _miller_start(x):
    """The (even) order Miller's recurrence starts from: far enough above x for full precision."""
    return 2 * np.ceil((x + 12 * np.cbrt(x) + 20) / 2)


def _miller(x):
    """(J0, J1, Y0, Y1) by Miller's backward recurrence and Neumann's series, for 2 <= x < 25."""
    start = _miller_start(x)
    current, above = np.zeros_like(x), np.zeros_like(x)  # J_n, J_n+1 (unnormalized)
    norm, y0_sum, y1_sum = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for n in range(int(start.max()), 0, -1):
        begins, active = start == n, start >= n
        current, above = np.where(begins, 1e-30, current), np.where(begins, 0.0, above)
        if n % 2 == 0:
            k = n // 2
            norm = norm + np.where(active, 2 * current, 0.0)
            y0_sum = y0_sum + np.where(active, (-1) ** k * current / k, 0.0)
        elif n > 1:
            k = n // 2
            y1_sum = y1_sum + np.where(active, (-1) ** k * (2 * k + 1) / (k * (k + 1)) * current, 0.0)
        below = 2 * n / x * current - above
        current, above = np.where(active, below, current), np.where(active, current, above)
    norm = norm + current
    j0, j1 = current / norm, above / norm
    log_term = np.log(x / 2) + _EULER
    y0 = (2 / math.pi) * (log_term * j0 - 2 * y0_sum / norm)
    y1 = (2 / math.pi) * ((log_term - 1) * j1 - j0 / x - y1_sum / norm)
    return j0, j1, y0, y1


def _hankel(x):
    """(J0, J1, Y0, Y1) by Hankel's asymptotic expansions, for x >= 25."""
    out = []
    for nu in (0, 1):
        p, q, a = np.zeros_like(x), np.zeros_like(x), np.ones_like(x)
        for k in range(2 * _HANKEL_TERMS):
            sign = -1.0 if (k // 2) % 2 else 1.0
            if k % 2 == 0:
                p = p + sign * a
            else:
                q = q + sign * a
            a = a * (4 * nu * nu - (2 * k + 1) ** 2) / ((k + 1) * 8 * x)
        phase = x - (nu / 2 + 0.25) * math.pi
        amplitude = np.sqrt(2 / (math.pi * x))
        out.append((amplitude * (p * np.cos(phase) - q * np.sin(phase)),
                    amplitude * (p * np.sin(phase) + q * np.cos(phase))))
    (j0, y0), (j1, y1) = out
    return j0, j1, y0, y1


def _bessel_jy(which):
    def impl(x):
        x64 = np.asarray(x, dtype=np.float64)
        ax = np.abs(x64)
        regimes = [(ax < _SERIES_BELOW, _series, 1.0), (ax < _HANKEL_FROM, _miller, _SERIES_BELOW),
                   (np.isfinite(ax), _hankel, _HANKEL_FROM)]
        value = np.full_like(ax, np.nan)
        chosen = np.zeros(ax.shape, bool)
        for inside, method, fallback in regimes:
            inside = inside & ~chosen
            if inside.any():
                value = np.where(inside, method(np.where(inside, ax, fallback))[which], value)
            chosen |= inside
        if which == 1:
            value = np.where(ax == 0, x64, np.sign(x64) * value)  # (odd; J1(-0) = -0)
        elif which == 0:
            value = np.where(ax == 0, 1.0, value)
        else:
            value = np.where(x64 == 0, -np.inf, np.where(x64 < 0, np.nan, value))
        return value.astype(x.dtype, copy=False)

    impl.__name__ = ("j0", "j1", "y0", "y1")[which]
    return impl


def _bessel(which):
    name = ("j0", "j1", "y0", "y1")[which]
    return unary(f"bessel_{name}", _bessel_jy(which), vjp=None, jvp=None, differentiable=False,
                 c=f"tg_bessel_jy({{0}}, {which})")


BESSEL_J0, BESSEL_J1, BESSEL_Y0, BESSEL_Y1 = (_bessel(k) for k in range(4))
